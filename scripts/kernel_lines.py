"""The command lines whose kernels ``sl`` ships compiled: every family a user can run.

Enumerated from the registries, not listed by hand where a registry exists: every learning
algorithm (:data:`streamlearn.learners.ALGORITHMS`) and loss, every multiline reduction of
:data:`streamlearn.reductions.REDUCTIONS`, every explorer (:data:`streamlearn.learners.explore.
EXPLORERS`) and ``--cb_type`` (:data:`streamlearn.learners.cb_adf.CB_TYPES`), the legacy
``--cb_force_legacy`` stack with each of its types and explorers
(:mod:`streamlearn.learners.cb_algs`), VW's single-line reductions, the input formats and the
outputs that have kernels of their own (``--audit``, ``--invert_hash``, models read back).

``scripts/build_kernels.py`` runs them when it compiles the kernels it ships;
``tests/system/test_kernels_shipped.py`` runs them against the shipped kernels and fails on
the first kernel that would compile, naming it and the line, and fails when a registry
holds a name this file does not enumerate (a new explorer, cb type, algorithm or reduction
is enumerated here before it ships).
"""

from __future__ import annotations

import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample.vw"

LOSSES = ("squared", "classic", "hinge", "logistic", "quantile", "expectile", "poisson")
"""VW's ``--loss_function`` names sl takes (``vwargs.options._loss``; aliases left out)."""

EXPLORER_ARGS = {
    "greedy": [["--epsilon", "0.1"], ["--first_only"]],
    "first": [["--first", "5"]],
    "softmax": [["--softmax", "--lambda", "3"]],
    "squarecb": [["--squarecb"], ["--squarecb", "--elim"]],
    "bag": [["--bag", "3"], ["--bag", "3", "--greedify"]],
    "cover": [["--cover", "3"], ["--cover", "3", "--cb_type", "dr"], ["--cover", "2", "--nounif"]],
    "regcb": [["--regcb"], ["--regcbopt"]],
    "synthcover": [["--synthcover"]],
    "rnd": [["--rnd", "2"]],
}
"""``--cb_explore_adf``'s explorers (each name of ``learners.explore.EXPLORERS``) and the
options that reach their kernels' other paths."""

LEGACY_EXPLORER_ARGS = {
    "": [[]],
    "greedy": [["--epsilon", "0.2"]],
    "first": [["--first", "7"]],
    "bag": [["--bag", "3"]],
    "cover": [["--cover", "3"], ["--cover", "2", "--nounif"]],
}
"""``--cb_explore K --cb_force_legacy``'s explorers (``learners.cb_algs.EXPLORERS``)."""


def write_data(t: Path) -> dict[str, str]:
    """Small inputs of every label kind into directory ``t``; their paths by name."""
    r = random.Random(7)
    cb, cs, mc, ml, cbk, reg, nl, ccb, slates = ([] for _ in range(9))
    csv, js, ds = ["_label,a,b"], [], []
    for i in range(240):
        k = r.randint(2, 5)
        c = r.randrange(k)
        cb.append(f"shared |s u{r.randrange(9)} v{r.randrange(9)}")
        cb += [(f"0:{r.randint(0, 1)}:0.5 " if j == c else "") + f"|a x{j} y{r.randrange(9)}:0.5"
               for j in range(k)] + [""]  # fmt: skip
        cs += [f"{j + 1}:{int(j != c)} |a x{j} z{r.randrange(4)}" for j in range(k)] + [""]
        y = r.randint(1, 3)
        mc.append(f"{y} |f a{y} b{r.randrange(5)}")
        ml.append(f"{y},{1 + y % 3} |f a{y} b{r.randrange(5)}")
        cbk.append(f"{1 + i % 3}:{i % 2}:0.5 |f a{i % 5} b{r.randrange(4)}")
        reg.append(f"{r.random():.2f} |f a{r.randrange(5)} b{r.randrange(4)}:0.5")
        nl.append(f"{'abc'[i % 3]} |f a{i % 5}")
        ccb += ([f"ccb shared |s u{r.randrange(9)}"] + [f"ccb action |a x{j}" for j in range(3)]
                + [f"ccb slot {r.randrange(3)}:{r.randint(0, 1)}:0.5 |z s0", "ccb slot |z s1",
                   ""])  # fmt: skip
        slates += [f"slates shared {r.randint(0, 1)} |s u{r.randrange(9)}",
                   "slates action 0 |a x1", "slates action 0 |a x2", "slates action 1 |a y1",
                   "slates action 1 |a y2", "slates slot 0:0.5 |z s0", "slates slot 1:0.5 |z s1",
                   ""]  # fmt: skip
        csv.append(f"{y},{r.randrange(5)},{y}")
        ctx = (f'"s":{{"f":"{y}","n":{r.random():.3f}}},"_multi":[{{"a":{{"x":1}}}},'
               f'{{"a":{{"y":1,"w":"v{r.randrange(3)}"}}}}]')
        js.append(f'{{"_label_cost":{y % 2},"_label_probability":0.5,"_label_Action":1,'
                  f'"_labelIndex":0,{ctx}}}')  # fmt: skip
        ds.append(f'{{"_label_cost":{-(y % 2)},"_label_probability":0.5,"_label_Action":1,'
                  f'"_labelIndex":0,"a":[1,2],"c":{{{ctx}}},"p":[0.5,0.5]}}')  # fmt: skip
    seq = []  # (learning to search: sequences of labelled tokens, a blank line after each)
    for _ in range(40):
        seq += [f"{r.randint(1, 4)} | w{r.randrange(9)} s{r.randrange(3)}"
                for _ in range(r.randint(2, 6))] + [""]  # fmt: skip
    graph = []  # (--search_task graph: a graph's nodes, then its edges, a blank line after)
    for _ in range(20):
        size = r.randint(2, 5)
        graph += [f"{r.randint(1, 3)} |n f{r.randrange(6)} |m a:{r.random():.2f}"
                  for _ in range(size)]  # fmt: skip
        graph += [f"{a},{a % size + 1} |e e{r.randrange(4)}" for a in range(1, size)] + [""]
    docs = [" ".join(["|"] + [f"{r.randrange(300)}:{r.randint(1, 4)}" for _ in range(12)])
            for _ in range(30)]  # (LDA: documents of word counts)  # fmt: skip
    ca = [f"ca {r.uniform(-1, 2):.3f}:{r.uniform(0, 3):.3f}:{r.uniform(0.2, 3):.3f} "
          f"|a x{r.randrange(9)}:{r.uniform(-1, 1):.2f} y{r.randrange(5)} |b z{r.randrange(4)}"
          for _ in range(120)]  # (--cbzo: continuous actions)  # fmt: skip
    files = {"cb": cb, "cs": cs, "mc": mc, "ml": ml, "cbk": cbk, "reg": reg, "nl": nl,
             "ccb": ccb, "slates": slates, "c.csv": csv, "j.json": js, "d.json": ds,
             "seq": seq, "docs": docs, "ca": ca, "graph": graph}  # fmt: skip
    # --interact: namespaces led by anchors of value 1, offsets out of order now and then
    files["ia"] = [f"{2 * (i % 2) - 1} |a 0:1 {1 + i % 4}:0.5 9:2 {3 if i % 7 == 0 else 12}:1 "
                   f"|b 0:1 {1 + i % 3}:2 9:1 |c w{i % 5}" for i in range(300)]
    # --experimental_igl: DSJSON records with their observations ('o')
    files["igl.json"] = [
        f'{{"_label_cost":0,"_label_probability":0.5,"_label_Action":{1 + i % 2},'
        f'"_labelIndex":{i % 2},"o":[{{"v":{{"v={r.choice(["click", "skip"])}":1}},'
        f'"_definitely_bad":{"true" if i % 7 == 0 else "false"}}}],"a":[0,1],'
        f'"c":{{"U":{{"u{r.randrange(4)}":1}},"_multi":[{{"A":{{"x":1}}}},{{"A":{{"y":1}}}}]}},'
        f'"p":[0.5,0.5]}}'
        for i in range(200)  # (over 32 KiB: not a tiny input, so its kernels compile)
    ]  # fmt: skip
    paths = {}
    for name, rows in files.items():
        (t / name).write_text("\n".join(rows) + "\n")
        paths[name] = str(t / name)
    paths["D"] = str(SAMPLE)
    return paths


def vw_lines(p: dict[str, str], t: Path) -> list[list[str]]:
    """``sl vw`` command lines (without ``vw``), over the inputs of :func:`write_data`."""
    from streamlearn.learners.cb_adf import CB_TYPES
    from streamlearn.learners.cb_algs import LEGACY_TYPES

    D, T = p["D"], str(t)
    out: list[list[str]] = []
    # single-line: losses, update rules, crosses and filters, VW's single-line reductions
    out += [["-d", p["reg"] if loss == "poisson" else D, "--loss_function", loss]
            for loss in LOSSES]  # (sample.vw's labels are -1 and 1)
    out += [["-d", D, *a] for a in (
        ["--sgd"], ["--adaptive"], ["--normalized"], ["--invariant"], ["--l1", "1e-5"],
        ["--l2", "1e-4"], ["--ftrl"], ["--pistol"], ["--coin"], ["--freegrad"],
        ["-q", "ff"], ["--cubic", "fff"], ["--interactions", "::"], ["-q", "ff", "--permutations"],
        ["--ngram", "2"], ["--ngram", "2", "--skips", "1"], ["--sort_features"],
        ["--feature_limit", "3"], ["--ignore", "f"], ["--keep", "f"], ["--ignore_linear", "f"],
        ["--random_weights"], ["--normal_weights"], ["--hash", "all"],
        ["--bootstrap", "3"], ["--bfgs", "--passes", "3", "-c", "-k", "--holdout_off"],
        ["--passes", "2", "-c", "-k"], ["--audit"], ["-q", "ff", "--audit"],
        ["--invert_hash", T + "/ih.txt"], ["--readable_model", T + "/rm.txt"],
        ["--extra_metrics", T + "/em.json"], ["-f", T + "/s.vw"],
    )]  # fmt: skip
    out += [["-d", D, "-i", T + "/s.vw", "-t"], ["-d", p["reg"], "--autolink", "2"]]
    out += [["-d", p["ia"], "--interact", "ab", "-f", T + "/ia.vw"],  # (learners/interact.py)
            ["-d", p["ia"], "-i", T + "/ia.vw", "-t"], ["-d", p["ia"], "--interact", "ba", "--l1",
                                                      "1e-6"]]  # fmt: skip
    # gd's kernel a group or an example at a time (run/vwtopk.py, run/vwreplay.py)
    out += [["-d", D, "--top", "2"], ["-d", D, "--replay_b", "5", "--replay_b_count", "2"]]
    out += [["-d", p["mc"], *a] for a in (
        ["--oaa", "3"], ["--oaa", "3", "--probabilities", "--loss_function", "logistic"],
        ["--oaa", "3", "-q", "ff"], ["--oaa", "3", "--audit"])]  # fmt: skip
    out += [["-d", p["nl"], "--named_labels", "a,b,c", "--oaa", "3"],
            ["-d", p["ml"], "--multilabel_oaa", "3"], ["-d", p["c.csv"], "--csv"]]
    (t / "cs1").write_text("".join(f"1:{i % 2} 2:1 3:0 |f a{i % 5}\n" for i in range(240)))
    out += [["-d", T + "/cs1", "--csoaa", "3"],
            ["-d", T + "/cs1", "--csoaa", "3", "--replay_c", "9"]]
    out += [["-d", T + "/cs1", *a] for a in (  # cost-sensitive active (learners/cs_active.py)
        ["--cs_active", "3", "--simulation", "--adax", "--cost_max", "2", "-f", T + "/csa.vw"],
        ["-i", T + "/csa.vw", "-t"], ["--cs_active", "3", "--simulation", "--domination", "0"],
        ["--cs_active", "3", "--passes", "2", "-c", "-k"])]  # fmt: skip
    out += [["-d", p["mc"], *a] for a in (  # the error-correcting tournament (learners/ect.py)
        ["--ect", "3", "--error", "1", "-f", T + "/ect.vw"], ["-i", T + "/ect.vw", "-t"],
        ["--ect", "3", "--passes", "2", "-c", "-k", "--invariant", "-q", "ff"])]  # fmt: skip
    out += [["-d", p["mc"], *a] for a in (  # the online tree (learners/log_multi.py)
        ["--log_multi", "3", "-f", T + "/lm.vw"], ["-i", T + "/lm.vw", "-t"],
        ["--log_multi", "3", "--passes", "2", "-c", "-k", "--swap_resistance", "1"])]
    out += [["-d", p["mc"], *a] for a in (  # subsampled classes (learners/oaa_subsample.py)
        ["--oaa", "3", "--oaa_subsample", "1", "-f", T + "/oss.vw"],
        ["-i", T + "/oss.vw", "--oaa_subsample", "1"],
        ["--oaa", "3", "--oaa_subsample", "2", "--passes", "2", "-c", "-k"])]  # fmt: skip
    out += [["-d", p["ml"], "--loss_function", "logistic", *a] for a in (  # learners/plt.py
        ["--plt", "3", "-f", T + "/plt.vw"], ["-i", T + "/plt.vw", "-t", "--top_k", "2"],
        ["--plt", "3", "--kary_tree", "3", "--passes", "2", "-c", "-k"])]  # fmt: skip
    out += [["-d", p["mc"], *a] for a in (  # the recall tree (learners/recall_tree.py)
        ["--recall_tree", "3", "-f", T + "/rt.vw"], ["-i", T + "/rt.vw", "-t"],
        ["--recall_tree", "3", "--randomized_routing", "--node_only", "--passes", "2", "-c",
         "-k"])]  # fmt: skip
    out += [["-d", p["mc"], "--emt", *a] for a in (  # the eigen memory tree (learners/emt.py)
        ["--emt_leaf", "8"], ["--emt_leaf", "5", "--emt_scorer", "not_self_consistent_rank",
                              "--emt_tree", "30", "--l1", "1e-6"],
        ["--emt_scorer", "distance", "--emt_initial", "gaussian", "--emt_router", "random",
         "--emt_leaf", "6"],
        ["--emt_scorer", "random", "--emt_leaf", "6", "--passes", "2", "-c", "-k"])]  # fmt: skip
    out += [["-d", p["mc"], "--memory_tree", *a] for a in (  # learners/memory_tree.py
        ["5"], ["4", "--learn_at_leaf", "--online", "--dream_repeats", "2"],
        ["6", "--dream_at_update", "1", "--passes", "2", "-c", "-k"])]  # fmt: skip
    out += [["-d", p["ml"], "--memory_tree", "5", "--oas", "--max_number_of_labels", "4"]]
    out += [["-d", p["cbk"], "--ot", "3", "--cb_type", c] for c in ("dr", "ips", "dm")]
    # the single-line reductions that own their options (reductions.SINGLE_LINE)
    (t / "lrq").write_text("".join(f"{1 - 2 * (i % 3 == 0)} |a u{i % 7}:0.5 v{i % 4} "
                                   f"|b m{i % 11} n{i % 5}\n" for i in range(240)))  # fmt: skip
    out += [["-d", T + "/lrq", *a] for a in (
        ["--lrq", "ab2"], ["--lrq", "ab2", "--lrqdropout", "-f", T + "/lrq.vw"],
        ["-i", T + "/lrq.vw", "-t"], ["--lrq", "aa2", "--passes", "2", "-c", "-k"],
        ["--lrq", "ab2", "--lrq", "ba1", "--l1", "1e-6"], ["--lrqfa", "ab2"],
        ["--lrqfa", "ba1", "--passes", "2", "-c", "-k", "--holdout_off"],
        ["--boosting", "3", "-f", T + "/boost.vw"], ["-i", T + "/boost.vw", "-t"],
        ["--boosting", "2", "--passes", "2", "-c", "-k"], ["--nn", "3", "-f", T + "/nn.vw"],
        ["-i", T + "/nn.vw", "-t"], ["--nn", "2", "--dropout", "--inpass"],
        ["--active", "--simulation", "-f", T + "/active.vw"],
        ["-i", T + "/active.vw", "-t", "--active", "--simulation"],
        ["--rank", "2", "-q", "ab", "-f", T + "/mf.vw"], ["-i", T + "/mf.vw", "-t"],
        ["--rank", "1", "--passes", "2", "-c", "-k"],
        ["--svrg", "--passes", "3", "-c", "-k", "-q", "ab", "-f", T + "/svrg.vw"],
        ["-i", T + "/svrg.vw", "-t"], ["--ksvm", "--reprocess", "2", "-f", T + "/ksvm.vw"],
        ["-i", T + "/ksvm.vw", "-t"], ["--ksvm", "--kernel", "rbf", "--pool_size", "3"],
        ["--ksvm", "--kernel", "poly", "--passes", "2", "-c", "-k"],
        ["--marginal", "a", "--compete", "-f", T + "/marg.vw"],
        ["-i", T + "/marg.vw", "-t", "--compete"],
        ["--marginal", "b", "--update_before_learn", "--passes", "2", "-c", "-k"],
        ["--affix", "+2a,-1"],
        ["--affix", "-2b", "-q", "ab", "--passes", "2", "-c", "-k"],
        ["--spelling", "a", "--spelling", "_"], ["--spelling", "b", "--redefine", "b:=a"],
        ["--stage_poly", "--batch_sz", "5", "-f", T + "/sp.vw"],
        ["-i", T + "/sp.vw", "-t", "--stage_poly"],
        ["--stage_poly", "--batch_sz", "0", "--passes", "3", "-c", "-k"],
        ["--OjaNewton", "--sketch_size", "3", "--epoch_size", "2", "-f", T + "/oja.vw",
         "--predict_only_model"], ["-i", T + "/oja.vw", "-t"],
        ["--OjaNewton", "--normalize", "false", "--passes", "2", "-c", "-k", "-q", "ab"],
        ["--confidence", "-p", T + "/conf.p"],
        ["--confidence", "--confidence_after_training", "--passes", "2", "-c", "-k"],
        ["--baseline", "-f", T + "/bl.vw"], ["-i", T + "/bl.vw", "-t"],
        ["--baseline", "--noconstant", "--lr_multiplier", "0", "--passes", "2", "-c", "-k"],
        ["--active_cover", "--cover", "3", "-f", T + "/ac.vw"], ["-i", T + "/ac.vw", "-t"],
        ["--active_cover", "--loss_function", "logistic", "--binary", "--oracular",
         "--passes", "2", "-c", "-k"])]  # fmt: skip
    # cost-sensitive multiline
    for kind in ("m", "mc"):
        for a in ([], ["--loss_function", "logistic"], ["--audit"],
                  ["--loss_function", "logistic", "--audit"], ["-q", "aa"]):
            out.append(["-d", p["cs"], "--csoaa_ldf", kind, *a])
    out += [["-d", p["cs"], "--wap_ldf", "m"], ["-d", p["cs"], "--wap_ldf", "mc", "-q", "aa"]]
    # contextual bandits: every cb type, every explorer, every input format, audit, models
    out += [["-d", p["cb"], "--cb_adf", "--cb_type", name] for name in CB_TYPES]
    for variants in EXPLORER_ARGS.values():
        out += [["-d", p["cb"], "--cb_explore_adf", *a] for a in variants]
    out += [["-d", p["cb"], *a] for a in (
        ["--cb_adf", "-q", "sa"], ["--cb_adf", "-q", "sa", "-c", "--passes", "2"],
        ["--cb_adf", "--audit"], ["--cb_explore_adf", "--audit"], ["--cb_explore_adf", "-q", "sa"],
        ["--cb_explore_adf", "--explore_eval"], ["--cb_explore_adf", "--cb_type", "mtr"],
        ["--cb_explore_adf", "--large_action_space", "--max_actions", "2"],
        ["--cb_explore_adf", "--large_action_space", "--max_actions", "2", "--squarecb"],
        ["--cb_explore_adf", "--large_action_space", "--max_actions", "2", "--explore_eval"],
        ["--cb_adf", "--cb_dro"], ["--cb_explore_adf", "--cb_dro", "--cb_type", "ips"],
        ["--cb_explore_adf", "--cb_dro", "--first", "2"],
        ["--cb_explore_adf", "--epsilon_decay", "--model_count", "3", "--cb_type", "ips", "-f",
         T + "/ed.vw", "--predict_only_model"], ["--explore_eval", "--epsilon_decay"],
        ["--cb_explore_adf", "-f", T + "/cb.vw"], ["--cb_explore_adf", "--invert_hash",
                                                   T + "/cbih.txt"],
    )]  # fmt: skip
    out += [["-d", p["cb"], "-i", T + "/cb.vw", "-t"]]
    out += [["-d", p["j.json"], "--json", "--cb_explore_adf"],
            ["-d", p["d.json"], "--dsjson", "--cb_explore_adf"],
            ["-d", p["d.json"], "--dsjson", "--cb_adf", "--chain_hash"]]
    out += [["-d", p["igl.json"], "--dsjson", "--cb_explore_adf", "--coin", "--experimental_igl",
             "-q", "UA", *a] for a in ([], ["-f", T + "/igl.vw"])]  # fmt: skip
    out += [["-d", p["ccb"], "--ccb_explore_adf"],
            ["-d", p["ccb"], "--ccb_explore_adf", "-q", "sa"], ["-d", p["slates"], "--slates"]]
    # learning to search: its tasks, roll-outs, models both ways
    out += [["-d", p["seq"], "--search", "4", *a] for a in (
        ["--search_task", "sequence", "-f", T + "/search.vw"], ["-i", T + "/search.vw", "-t"],
        ["--search_task", "sequence", "--search_rollout", "none", "--passes", "2", "-c", "-k"],
        ["--search_task", "sequence_ctg", "-p", T + "/ctg.p"],
        ["--search_task", "sequencespan", "--search_span_bilou", "--search_rollin", "learn"],
        ["--search_task", "multiclasstask"], ["--search_task", "argmax"])]  # fmt: skip
    out += [["-d", p["graph"], "--search", "3", "--search_task", "graph", *a]
            for a in ([], ["-q", "::"])]  # fmt: skip
    # LDA: its math modes, minibatches, passes, --audit, models both ways
    out += [["-d", p["docs"], "--lda", *a] for a in (
        ["5", "-b", "10", "-f", T + "/lda.vw"], ["5", "-b", "10", "-i", T + "/lda.vw", "-t"],
        ["3", "-b", "9", "--math-mode", "1", "--minibatch", "4"], ["6", "--math-mode", "2"],
        ["2", "-b", "8", "--passes", "2", "-c", "-k", "--audit"])]  # fmt: skip
    # --cbzo: both policies, its regularizers, crosses, passes, models both ways
    out += [["-d", p["ca"], "--cbzo", *a] for a in (
        ["--policy", "constant", "-l", "0.01", "-f", T + "/cbzo.vw"],
        ["-i", T + "/cbzo.vw", "-t", "-p", T + "/cbzo.p"],
        ["-l", "0.001", "--l1", "0.01", "--l2", "0.1", "--no_bias_regularization", "-q", "ab"],
        ["-l", "0.001", "--passes", "2", "-c", "-k"],
        ["-l", "0.001", "--invert_hash", T + "/cbzo.ih", "--readable_model", T + "/cbzo.r"])]
    # --cbify K --cbify_reg: CATS over gd and coin, each loss, -p; the tree under cb_explore;
    # cb_explore over csoaa
    out += [["-d", p["reg"], "--cbify", "8", "--cbify_reg", "--min_value", "-1", "--max_value",
             "3", *a] for a in (
        [], ["--coin", "--bandwidth", "0.7", "--loss_option", "1", "-p", T + "/cats.p"],
        ["--loss_option", "2", "--loss_report", "1"], ["--cb_discrete", "--cats_tree", "8"],
        ["--cb_discrete"], ["--cb_discrete", "--coin"])]  # fmt: skip
    out += [["-d", p["ca"], a, "4", "--min_value", "-1", "--max_value", "2", "--coin"]
            for a in ("--cats", "--cats_pdf")]  # (--cats, --cats_pdf on ca labels)
    # --cb K: reduced to cb_adf, or VW's legacy stack (its own kernels)
    out += [["-d", p["cbk"], "--cb", "3"], ["-d", p["cbk"], "--cb_explore", "3"],
            ["-d", p["mc"], "--cbify", "3"], ["-d", p["mc"], "--cbify", "3", "--cover", "2"]]
    for cb_type in LEGACY_TYPES:
        out.append(["-d", p["cbk"], "--cb", "3", "--cb_force_legacy", "--cb_type", cb_type])
    out += [["-d", p["cbk"], "--cb", "3", "--cb_force_legacy", *a] for a in (
        ["--cb_type", "mtr"], ["-q", "ff"], ["--passes", "3", "-c", "--holdout_off"])]
    for variants in LEGACY_EXPLORER_ARGS.values():
        for a in variants:
            out.append(["-d", p["cbk"], "--cb_explore", "3", "--cb_force_legacy", *a])
            out.append(["-d", p["mc"], "--cbify", "3", "--cb_force_legacy", *a])
    out += [["-d", p["mc"], "--cbify", "3", "--cb_force_legacy", "--cb_type", "ips"],
            ["-d", T + "/cs1", "--cbify", "3", "--cbify_cs", "--cb_force_legacy"]]
    # --warm_cb K: its phases over each cb type, sim-bandit, corruption, cost-sensitive input
    out += [["-d", p["mc"], "--warm_cb", "3", "--cb_explore_adf", "--warm_start", "5",
             "--choices_lambda", "4", "--warm_start_update", "--interaction_update", *a]
            for a in ([], ["--cb_type", "ips"], ["--cb_type", "dm"],
                      ["--cb_type", "dr", "--sim_bandit"],
                      ["--corrupt_prob_warm_start", "0.5", "-p", T + "/wcb.p"])]  # fmt: skip
    out.append(["-d", T + "/cs1", "--warm_cb", "3", "--warm_cb_cs", "--cb_explore_adf",
                "--warm_start", "2", "--warm_start_update", "--interaction_update"])
    return out


def train_lines(p: dict[str, str], t: Path) -> list[list[str]]:
    """sl's own command lines: every algorithm, mini-batches, bandits, prediction."""
    from streamlearn.learners import ALGORITHMS, MINIBATCH_ALGORITHMS

    D, T = p["D"], str(t)
    l1 = {"tg": "1e-5", "fobos": "1e-5", "smidas": "1e-5", "subgrad": "1e-5", "cd": "1e-3",
          "scd": "1e-3", "ftrl": "3"}  # fmt: skip
    out = []
    for algo in ALGORITHMS:
        extra = ["--top-k", "100"] if algo == "l0" else []
        out.append(["train", D, "--algo", algo, *(["--l1", l1[algo]] if algo in l1 else []),
                    *extra])  # fmt: skip
    out += [["train", D, "--algo", a, "--minibatch", "8"] for a in MINIBATCH_ALGORITHMS]
    out += [["train", D, "--loss", "logistic", "-f", T + "/m.sl"],
            ["predict", "-i", T + "/m.sl", D, "-p", T + "/p.txt", "--link", "logistic"],
            ["train", "--cb-adf", "--explore", "epsilon", p["cb"], "-f", T + "/b.sl"],
            ["predict", "-i", T + "/b.sl", p["cb"], "-p", T + "/b.p"],
            ["train", "--lrq", "ab2", T + "/lrq", "-f", T + "/lrq.sl"],
            ["predict", "-i", T + "/lrq.sl", T + "/lrq"],
            ["train", "--boosting", "3", "--boost-alg", "logistic", T + "/lrq"],
            ["train", "--boosting", "3", "--boost-alg", "adaptive", T + "/lrq"],
            ["train", "--nn", "3", T + "/lrq"],
            ["train", "--rank", "2", "-q", "ab", T + "/lrq", "-f", T + "/mf.sl"],
            ["predict", "-i", T + "/mf.sl", T + "/lrq"],
            ["train", "--svrg", "--passes", "2", "--cache", T + "/svrg.c", T + "/lrq", "-f",
             T + "/svrg.sl"], ["predict", "-i", T + "/svrg.sl", T + "/lrq"],
            ["train", "--active", "--active-mellowness", "0.1", T + "/lrq"],
            ["train", "--ksvm", "--ksvm-kernel", "rbf", T + "/lrq", "-f", T + "/ksvm.sl"],
            ["predict", "-i", T + "/ksvm.sl", T + "/lrq"]]
    return out


def registry_names() -> dict[str, set[str]]:
    """The names the registries hold, which :func:`vw_lines` and :func:`train_lines` must
    each reach (``tests/system/test_kernels_shipped.py`` compares)."""
    from streamlearn.learners import ALGORITHMS
    from streamlearn.learners.cb_adf import CB_TYPES
    from streamlearn.learners.cb_algs import EXPLORERS as LEGACY
    from streamlearn.learners.cb_algs import LEGACY_TYPES
    from streamlearn.learners.explore import EXPLORERS
    from streamlearn.reductions import REDUCTIONS, SINGLE_LINE

    return {"algorithms": set(ALGORITHMS), "cb_types": set(CB_TYPES),
            "explorers": set(EXPLORERS), "legacy_explorers": set(LEGACY),
            "legacy_types": set(LEGACY_TYPES), "reductions": set(REDUCTIONS),
            "single_line": set(SINGLE_LINE)}  # fmt: skip


REDUCTION_OPTIONS = {"csoaa_ldf": "--csoaa_ldf", "cb_adf": "--cb_adf", "cb": "--cb",
                     "cbify": "--cbify", "ccb": "--ccb_explore_adf", "slates": "--slates",
                     "search": "--search", "lda": "--lda", "cbzo": "--cbzo",
                     "cats": "--cbify_reg", "warm_cb": "--warm_cb"}
"""The option that runs each multiline reduction of the registry."""


def covered(lines: list[list[str]]) -> dict[str, set[str]]:
    """What ``lines`` reach, in :func:`registry_names`' terms."""
    words = [set(a) for a in lines]
    legacy = [w for w in words if "--cb_force_legacy" in w]

    def values(flag: str, legacy_stack: bool) -> set[str]:
        """The values ``flag`` takes in the lines of the legacy stack, or in the others."""
        return {a[a.index(flag) + 1] for a in lines
                if flag in a and ("--cb_force_legacy" in a) == legacy_stack}  # fmt: skip

    return {
        "algorithms": values("--algo", False),
        "cb_types": values("--cb_type", False),
        "explorers": {n for n, vs in EXPLORER_ARGS.items()
                      if any(set(v) <= w and "--cb_explore_adf" in w for v in vs for w in words)},
        "legacy_explorers": {n for n, vs in LEGACY_EXPLORER_ARGS.items()
                             if any(set(v) <= w for v in vs for w in legacy)},
        "legacy_types": values("--cb_type", True),
        "reductions": {name for name, flag in REDUCTION_OPTIONS.items()
                       if any(flag in w for w in words)},
        "single_line": {name for name in registry_names()["single_line"]
                        if any(f"--{name}" in w for w in words)},
    }


def every_line(t: Path) -> list[list[str]]:
    """Every ``sl`` command line of this file, with its inputs written into ``t``."""
    p = write_data(t)
    return [["vw", *a] for a in vw_lines(p, t)] + train_lines(p, t)


def run(args: list[str], quiet: bool = True) -> int:
    """Run one ``sl`` command line in this process (its outputs in the files it names, its
    predictions and progress discarded); its exit status."""
    import contextlib
    import io

    from streamlearn.cli import cli

    extra = ["--quiet"] if quiet and args[0] == "vw" else []
    sink = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # (--audit writes bytes)
    with contextlib.redirect_stdout(sink):
        try:
            code = cli.main([*args, *extra], prog_name="sl", standalone_mode=False)
        except SystemExit as e:
            code = e.code
    return code if isinstance(code, int) else 0  # (a command may return its summary)


def api_calls(t: Path) -> None:
    """The Python drop-in's one-example paths (``streamlearn.vowpalwabbit``, ``Model``'s one
    line), whose kernels are entered directly (:mod:`streamlearn.system.direct`)."""
    from streamlearn import Model
    from streamlearn import vowpalwabbit as vw

    ws = vw.Workspace("--quiet")
    for i in range(3):
        ws.learn(f"{i % 2} |f a{i} b")
        ws.predict(f"|f a{i}")
    ws.finish()
    ws = vw.Workspace("--cb_explore_adf --quiet -q UA --epsilon 0.2")
    for i in range(3):
        ex = ["shared |U u" + str(i), "|A x", "0:1:0.5 |A y" if i % 2 else "|A y"]
        ws.predict(ex)
        ws.learn(ex)
    ws.finish()
    for args in ("--cb_explore_adf --epsilon 0.2 --quiet", "--cb_adf --quiet"):  # (an example
        ws = vw.Workspace(args)  # in one kernel call: reductions/cb_example_kernel.py)
        for i in range(3):
            ex = ["shared |U u" + str(i), "|A x", "0:1:0.5 |A y" if i % 2 else "|A y"]
            ws.predict(ex)
            ws.learn(ex)
        ws.finish()
    for args in ("--cb_explore 3 --quiet", "--cb 3 --quiet"):  # (a line in one kernel call)
        ws = vw.Workspace(args)
        for i in range(3):
            ws.predict(f"|f a{i} b")
            ws.learn(f"{i % 3 + 1}:1:0.5 |f a{i} b")
        ws.finish()
    m = Model(loss="logistic").fit(lines=["1 |a x y", "-1 |a z"])
    m.partial_fit(lines=["1 |a x"])
    m.predict(lines=["|a x"])
