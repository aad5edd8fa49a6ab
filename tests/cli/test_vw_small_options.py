"""Small VW options of ``sl vw`` next to VW 9.11.9 itself: ``--extra_metrics``,
the random initial weights, ``--permutations``, ``--logistic_min/max``, expectile
loss, ``--affix``.  Each compares the progressive loss (as VW prints it, 6 decimals),
the ``-p`` file and, where names change, the audit lines."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.unix import SL_VW, VW_MODULE, invoke, invoke_in, run_module


def vw(args: list[str], cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    pytest.importorskip("vowpalwabbit")
    return subprocess.run([sys.executable, "-m", "vowpalwabbit", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def loss(stderr: str) -> str:
    m = re.search(r"^average loss = (\S+)", stderr, re.M)
    assert m, stderr
    return m.group(1)


def both(args: list[str], tmp_path, files: tuple[str, ...] = ()) -> tuple[str, str]:  # noqa: ANN001
    """Run VW and sl vw on ARGS in tmp_path (``{out}`` in an argument becomes ``vw`` or
    ``sl``); assert each named output (``{out}``-templated) is the same; the two losses."""
    r = vw([a.format(out="vw") for a in args], tmp_path)
    assert r.returncode == 0, r.stderr
    s = invoke_in(tmp_path, ["vw", *[a.format(out="sl") for a in args]])
    assert s.exit_code == 0, s.output
    for f in files:
        a = (tmp_path / f.format(out="vw")).read_text()
        b = (tmp_path / f.format(out="sl")).read_text()
        assert a == b, (f, a[:500], b[:500])
    return loss(r.stderr), loss(s.output)


@pytest.fixture
def small(tmp_path):
    rng = np.random.default_rng(3)
    lines = []
    for i in range(60):
        a = " ".join(f"x{j}:{v:.3f}" for j, v in zip(rng.integers(0, 40, 4), rng.random(4),
                                                        strict=True))  # fmt: skip
        b = " ".join(f"y{j}" for j in rng.integers(0, 9, 2))
        label = f"{rng.random():.3f}" if i % 7 else ""
        lines.append(f"{label} |a {a} |b {b} |c z{i % 5}:0.5")
    (tmp_path / "d.vw").write_text("\n".join(lines) + "\n")
    return tmp_path


# --- --extra_metrics ---------------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["-t"], ["-c", "-k", "--passes", "3"], ["--oaa", "3"]])
def test_extra_metrics_counts_calls_as_vw(small, extra):
    if "--oaa" in extra:
        text = (small / "d.vw").read_text().splitlines()
        (small / "d.vw").write_text("\n".join(f"{1 + i % 3} {ln.partition(' ')[2] or ln}"
                                              for i, ln in enumerate(text)) + "\n")  # fmt: skip
    both(["-d", "d.vw", "--extra_metrics", "{out}.json", *extra], small)
    mine = json.loads((small / "sl.json").read_text())
    theirs = json.loads((small / "vw.json").read_text())
    assert mine["extra_metrics"] == theirs["extra_metrics"]
    # the keys sl writes come in VW's order
    assert (small / "sl.json").read_text()[1:-1] in (small / "vw.json").read_text()


def test_extra_metrics_never_replaces_an_input(small):
    r = invoke(["vw", "-d", str(small / "d.vw"), "--extra_metrics", str(small / "d.vw")])
    assert r.exit_code != 0
    assert (small / "d.vw").read_text().startswith(("0", "|", " "))


# --- --random_weights, --normal_weights, --truncated_normal_weights ----------------


@pytest.mark.parametrize("kind", ["--random_weights", "--normal_weights",
                                  "--truncated_normal_weights"])  # fmt: skip
@pytest.mark.parametrize("extra", [["--random_seed", "42"], ["--sgd", "-b", "10"],
                                   ["--oaa", "3", "-b", "12"]])  # fmt: skip
def test_random_initial_weights_are_vws(small, kind, extra):
    if "--oaa" in extra:
        text = (small / "d.vw").read_text().splitlines()
        (small / "d.vw").write_text("\n".join(f"{1 + i % 3} {ln.partition(' ')[2] or ln}"
                                              for i, ln in enumerate(text)) + "\n")  # fmt: skip
    a, b = both(["-d", "d.vw", kind, *extra, "-p", "{out}.p", "--readable_model", "{out}.txt"],
                small, files=("{out}.p", "{out}.txt"))  # fmt: skip
    assert a == b


def test_initial_weights_of_each_kind():
    from streamlearn.learners.initial import initial_weights

    u = initial_weights("random", 12, 0, 42)
    assert u.dtype == np.float32 and (np.abs(u) <= 0.5).all() and len(np.unique(u)) > 4000
    n = initial_weights("normal", 12, 2, 0)
    assert abs(float(n.mean())) < 0.1 and 0.9 < float(n.std()) < 1.1
    t = initial_weights("truncated_normal", 12, 2, 0)
    bound = 2 * float(n.astype(np.float64).std())
    assert (np.abs(t) <= bound + 1e-6).all()
    assert (t[np.abs(n) <= bound] == n[np.abs(n) <= bound]).all()


def test_random_weights_are_refused_for_multiline(small):
    (small / "cb.txt").write_text("shared | s\n0:1:0.5 | a\n | b\n\n")
    r = invoke(["vw", "-d", str(small / "cb.txt"), "--cb_explore_adf", "--random_weights"])
    assert r.exit_code == 2 and "not with multiline" in r.output


# --- --permutations ------------------------------------------------------------------


@pytest.mark.parametrize("cross", [["-q", "aa"], ["--cubic", "aab"], ["--cubic", "aba"],
                                   ["--interactions", "aaaa", "-b", "20"], ["-q", "::"],
                                   ["--cubic", ":::"], ["-q", "aa", "--sgd"],
                                   ["-q", "::", "--leave_duplicate_interactions"]])  # fmt: skip
def test_permutations_cross_every_tuple_as_vw(small, cross):
    a, b = both(["-d", "d.vw", "--permutations", *cross, "-p", "{out}.p"], small,
                files=("{out}.p",))  # fmt: skip
    assert a == b


def test_permutations_audit_names_are_vws(small):
    (small / "a.vw").write_text("1 |a x:2 y |b z\n0 |a y w:0.5 |b q\n")
    args = ["-d", "a.vw", "-q", "aa", "--cubic", "aab", "--permutations", "--audit"]
    r = vw(args, small)
    import os

    here = os.getcwd()
    os.chdir(small)
    try:
        s = invoke(["vw", *args, "--quiet"])
    finally:
        os.chdir(here)
    theirs = [ln for ln in r.stdout.splitlines() if not ln.startswith("[warning]")]
    assert "a^x*a^y" in r.stdout and "a^y*a^x" in r.stdout
    assert s.output.splitlines()[: len(theirs)] == theirs


# --- --loss_function expectile --------------------------------------------------------


@pytest.mark.parametrize("extra", [["--expectile_q", "0.5"], ["--expectile_q", "0.25", "-b", "7"],
                                   ["--expectile_q", "0.1", "--sgd"],
                                   ["--expectile_q", "0.3", "--adaptive"],
                                   ["--expectile_q", "0.3", "--normalized"]])  # fmt: skip
def test_expectile_loss_is_vws(small, extra):
    a, b = both(["-d", "d.vw", "--loss_function", "expectile", *extra, "-p", "{out}.p"], small,
                files=("{out}.p",))  # fmt: skip
    assert a == b


def test_expectile_loss_values():
    from streamlearn.learners.losses import EXPECTILE, dloss, dloss32, loss, loss32

    assert loss(EXPECTILE, 1.0, 0.0, 0.25) == 0.25 and loss(EXPECTILE, 0.0, 1.0, 0.25) == 0.75
    assert dloss(EXPECTILE, 1.0, 0.0, 0.25) == 0.5
    assert float(loss32(EXPECTILE, np.float32(1.0), np.float32(0.0), 0.25)) == 0.25
    assert float(dloss32(EXPECTILE, np.float32(0.0), np.float32(1.0), 0.25)) == -1.5


@pytest.mark.parametrize("argv", [["--expectile_q", "0.7"], ["--expectile_q", "0"]])
def test_expectile_q_out_of_range_is_refused(small, argv):
    r = invoke(["vw", "-d", str(small / "d.vw"), "--loss_function", "expectile", *argv])
    assert r.exit_code == 2 and "expectile_q" in r.output


# --- --logistic_min, --logistic_max ---------------------------------------------------


@pytest.mark.parametrize("extra", [["--logistic_min", "0", "--logistic_max", "1"],
                                   ["--logistic_min", "0", "--logistic_max", "1", "--sgd"],
                                   ["--logistic_min", "-2", "--logistic_max", "3"]])  # fmt: skip
def test_logistic_label_range_is_vws(small, extra):
    text = (small / "d.vw").read_text().splitlines()
    (small / "d.vw").write_text("\n".join(f"{i % 2} {ln.partition(' ')[2] or ln}"
                                          for i, ln in enumerate(text)) + "\n")  # fmt: skip
    a, b = both(["-d", "d.vw", "--loss_function", "logistic", *extra, "-p", "{out}.p"], small,
                files=("{out}.p",))  # fmt: skip
    assert a == b


@pytest.mark.parametrize("extra", [["--logistic_min", "-1", "--logistic_max", "2"],
                                   ["--logistic_min", "0", "--logistic_max", "1"]])  # fmt: skip
def test_logistic_label_range_over_cb_costs_is_vws(tmp_path, extra):
    rng = np.random.default_rng(5)
    blocks = []
    for e in range(40):
        k = int(rng.integers(0, 3))
        lines = [f"shared |s u{e % 4}"]
        for a in range(3):
            label = f"{a}:{rng.choice([0.0, 0.5, 1.0, 2.0])}:0.5 " if a == k else ""
            lines.append(f"{label}|a x{a} y{(a + e) % 5}")
        blocks.append("\n".join(lines))
    (tmp_path / "cb.txt").write_text("\n\n".join(blocks) + "\n\n")
    a, b = both(["-d", "cb.txt", "--cb_explore_adf", "--loss_function", "logistic", *extra,
                 "-p", "{out}.p"], tmp_path, files=("{out}.p",))  # fmt: skip
    assert a == b


# --- --feature_limit ----------------------------------------------------------------


@pytest.mark.parametrize("limit", [["--feature_limit", "a2"], ["--feature_limit", "a:2"],
                                   ["--feature_limit", "1"],
                                   ["--feature_limit", "a3", "--feature_limit", "b0"],
                                   ["--feature_limit", "a2", "-q", "ab"],
                                   ["--feature_limit", "a3", "--ngram", "a2"],
                                   ["--feature_limit", "a1", "--sort_features"]])  # fmt: skip
def test_feature_limit_is_vws(small, limit):
    a, b = both(["-d", "d.vw", *limit, "-p", "{out}.p"], small, files=("{out}.p",))
    assert a == b


def test_feature_limit_values_read_as_vw():
    from streamlearn.io.grams import NO_LIMIT, compile_limits

    lim = compile_limits(("a3", "b:7", "c-1"))
    assert (int(lim[97]), int(lim[98]), int(lim[99])) == (3, 0, (1 << 32) - 1)
    assert lim[100] == NO_LIMIT and lim[256] == NO_LIMIT
    with pytest.raises(ValueError):
        compile_limits(("a",))


# --- --oaa K's label -1 ------------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--probabilities", "--loss_function", "logistic"]],
                         ids=["oaa", "probabilities"])  # fmt: skip
def test_oaa_reads_a_label_minus_one_as_no_label_as_vw(tmp_path, extra):
    """VW's multiclass reader takes -1 as no label (its unsigned reading wraps it to the
    unlabeled marker): the line is predicted, not learned; so does ``sl vw``: the same
    predictions (and probabilities).  The loss too, but under ``--probabilities``, where VW
    counts such a line's 0/1 loss against the class 4294967295 (docs/input-formats.md)."""
    rng = np.random.default_rng(5)
    (tmp_path / "mc.vw").write_text("".join(
        f"{rng.choice([-1, 1, 2, 3])} |f a{rng.integers(6)} b{rng.integers(4)}\n"
        for _ in range(300)))  # fmt: skip
    vl, sl = both(["--oaa", "3", "-d", "mc.vw", "-p", "{out}.p", *extra], tmp_path,
                  files=("{out}.p",))  # fmt: skip
    assert vl == sl or extra


# --- the model written after passes with a holdout ------------------------------------


@pytest.mark.parametrize(("passes", "stop"), [("3", None), ("4", None), ("6", None),
                                              ("5", "2")])  # fmt: skip
def test_the_model_after_passes_is_vws(small, passes, stop):
    """VW writes the last pass's model, unless early termination fired (``--early_terminate``
    passes without a better holdout loss, the last pass included): then the best pass's,
    which it wrote when that pass was the best.  ``sl vw -f`` and ``--readable_model`` keep
    the same one (``sl train`` keeps the best pass's, its own rule)."""
    text = (small / "d.vw").read_text()
    (small / "d.vw").write_text(text * 8)  # (enough held-out examples to compare passes)
    args = ["-d", "d.vw", "-c", "-k", "--passes", passes, "--readable_model", "{out}.txt",
            *(["--early_terminate", stop] if stop else [])]  # fmt: skip
    both(args, small)
    vw_t, sl_t = ((small / f"{o}.txt").read_text() for o in ("vw", "sl"))
    t_of = [re.search(r"^t (\S+)$", x, re.M).group(1) for x in (vw_t, sl_t)]
    assert t_of[0] == t_of[1]
    weights = [re.findall(r"^\d+:.*$", x, re.M) for x in (vw_t, sl_t)]
    assert weights[0] == weights[1]


@pytest.mark.parametrize("extra", [[], ["--indexing", "0"], ["--indexing", "1"],
                                   ["--probabilities", "--loss_function", "logistic"]])  # fmt: skip
def test_an_oaa_label_above_k_is_no_class_as_vw_learns_it(small, extra):
    """VW learns a label above K as no class (every class -1), predicts and counts it."""
    text = (small / "d.vw").read_text().splitlines()
    (small / "d.vw").write_text("\n".join(f"{1 + i % 5} {ln.partition(' ')[2] or ln}"
                                          for i, ln in enumerate(text)) + "\n")  # fmt: skip
    a, b = both(["-d", "d.vw", "--oaa", "3", "-p", "{out}.p", *extra], small, ("{out}.p",))
    assert a == b


def test_total_features_leave_out_labeled_held_out_examples_only(small):
    """VW's ``total feature number`` leaves out the held-out examples that have a label; an
    unlabeled one is counted as any other example (VW's ``shared_data::update``)."""
    text = (small / "d.vw").read_text()
    (small / "d.vw").write_text(text * 8)
    args = ["-d", "d.vw", "-c", "-k", "--passes", "3"]
    r = vw(args, small)
    for f in small.glob("d.vw.cache*"):
        f.unlink()
    import os

    here = os.getcwd()
    os.chdir(small)
    try:
        s = invoke(["vw", *args])
    finally:
        os.chdir(here)
    want = re.search(r"^total feature number = (\d+)", r.stderr, re.M).group(1)
    got = re.search(r"^total feature number = (\d+)", s.output, re.M).group(1)
    assert got == want


# --- --dont_output_best_constant, --confidence_after_training alone ---------------------


def _summary(text: str) -> list[str]:
    return text[text.index("finished run"):].splitlines()


def test_dont_output_best_constant_drops_its_lines_as_vw(small):
    r = vw(["-d", "d.vw", "--dont_output_best_constant"], small)
    assert r.returncode == 0, r.stderr
    import os

    here = os.getcwd()
    os.chdir(small)
    try:
        s = invoke(["vw", "-d", "d.vw", "--dont_output_best_constant"])
        plain = invoke(["vw", "-d", "d.vw"])
    finally:
        os.chdir(here)
    assert _summary(s.output) == _summary(r.stderr)
    assert not any("best constant" in line for line in _summary(s.output))
    assert any("best constant" in line for line in _summary(plain.output))


def test_confidence_after_training_alone_changes_nothing_as_vw(small):
    a = both(["-d", "d.vw", "-p", "{out}.p"], small, ("{out}.p",))
    b = both(["-d", "d.vw", "-p", "{out}.p", "--confidence_after_training"], small, ("{out}.p",))
    assert a == b  # (--confidence itself: tests/learners/test_confidence.py)


# --- --l1_state, --l2_state ------------------------------------------------------------------


@pytest.mark.parametrize("extra", [["--l1", "1e-4", "--l1_state", "0.002"],
                                   ["--l2", "1e-4", "--l2_state", "0.95"],
                                   ["--l1", "1e-4", "--l1_state", "0.002", "--l2_state", "0.95"],
                                   ["--l1_state", "0.3", "--l2_state", "0.5"]])  # fmt: skip
def test_l1_l2_state_start_a_run_as_vw(small, extra):
    """gd's gravity and contraction a fresh run starts from (read as 32-bit floats, as VW's
    gd reads them: with a double, the fifth digit moved on some lines), then a model of each
    program continued with them given again (VW: a value that is not the default wins)."""
    both(["-d", "d.vw", *extra, "-p", "{out}.p", "-f", "{out}.m", "--readable_model",
          "{out}.txt"], small, ("{out}.p",))  # fmt: skip
    a = (small / "vw.txt").read_text().splitlines()[2:]
    b = (small / "sl.txt").read_text().splitlines()[2:]
    assert a == b
    for m in ("vw.m", "sl.m"):
        both(["-d", "d.vw", "-i", m, *extra, "-p", "{out}2.p"], small, ("{out}2.p",))


def test_l1_state_overrides_a_model_s_unless_default(small):
    import os

    here = os.getcwd()
    os.chdir(small)
    try:
        for args in (["--no_stdin", "-f", "a.m"],
                     ["--no_stdin", "-i", "a.m", "--l1_state", "5.34", "--l2_state", "0.003",
                      "-f", "b.m"],
                     ["--no_stdin", "-i", "b.m", "--l1_state", "0", "--readable_model", "c.txt"],
                     ["--no_stdin", "-i", "b.m", "--l1_state", "89.4", "--readable_model",
                      "d.txt"]):  # fmt: skip
            r = invoke(["vw", *args, "--quiet"])
            assert r.exit_code == 0, r.output
    finally:
        os.chdir(here)
    c = (small / "c.txt").read_text()
    d = (small / "d.txt").read_text()
    assert "l1_state 5.34\nl2_state 0.003\n" in c  # (0 is the default: the model's stays)
    assert "l1_state 89.4\nl2_state 0.003\n" in d


def test_l1_state_is_gd_s(small):
    r = invoke(["vw", "-d", str(small / "d.vw"), "--ftrl", "--l1_state", "1"])
    assert r.exit_code != 0 and "gd's state" in r.output


# --- generate_interactions in VW's header ------------------------------------------------


@pytest.mark.parametrize("args", [["-q", "::"], ["--cubic", "a::", "--oaa", "3"],
                                  ["--nn", "2", "--interactions", ":::"], ["-q", "ab"],
                                  ["--cb_explore_adf", "-q", "::"]])  # fmt: skip
def test_wildcards_stack_vws_generate_interactions(small, args):
    """VW names ``generate_interactions`` above its base learner when an interaction has a
    wildcard, single-line and multiline alike."""
    pytest.importorskip("vowpalwabbit")
    if "--cb_explore_adf" in args:
        (small / "x.vw").write_text("shared |s a\n0:1:0.5 |a b\n|b c\n\n|a d\n0:0.5:0.2 |b e\n\n")
    else:
        (small / "x.vw").write_text("1 |a x |b y\n2 |a z:2\n3 |b w\n")
    lines = []
    for prog in (VW_MODULE, SL_VW):
        r = run_module(prog, ["-d", "x.vw", *args], small)
        lines.append([ln for ln in r.stderr.splitlines() if ln.startswith("Enabled")])
    assert lines[1] == lines[0]
    assert ("generate_interactions" in lines[1][0]) == any(":" in a for a in args)


def test_audit_of_passes_read_from_a_cache_is_vws(small):
    """A pass read from the cache has no text: its features are shown by their slots (the
    constant by its name), as VW's; before, sl stopped with a traceback."""
    pytest.importorskip("vowpalwabbit")
    (small / "x.vw").write_text("".join(f"{i % 2} |a x{i % 3} y:{i % 4 + 1} |b z{i % 5}\n"
                                        for i in range(12)))  # fmt: skip
    args = ["-d", "x.vw", "--passes", "2", "-c", "-k", "--holdout_off", "--audit"]
    outs = [run_module(prog, args, small) for prog in (VW_MODULE, SL_VW)]
    assert outs[1].returncode == 0, outs[1].stderr
    assert outs[1].stdout == outs[0].stdout
