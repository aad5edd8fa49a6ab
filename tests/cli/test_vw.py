"""``sl vw``: VW's command lines, pasted whole (streamlearn/cli/vw.py).

The translation of VW's argv, the refusal of options sl does not have (one line,
exit 2), and what each option does end to end.  ``tests/test_vw_parity.py``
runs the same lines through vw itself.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.errors import VWUsage
from streamlearn.learners.base import S_N, S_SHOWN_N
from streamlearn.vwargs import NOT_SUPPORTED, OPTIONS, OTHER_VW_OPTIONS, parse_argv
from tests.paths import ROOT, TESTS
from tests.unix import invoke, sl, text_data


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "d.vw"
    p.write_text(text_data(1200))
    return p


def report(args, tmp_path, ok=True):
    rep = tmp_path / "r.json"
    r = invoke(["vw", *args, "--report", str(rep), "--quiet"])
    if ok:
        assert r.exit_code == 0, r.output
        return json.loads(rep.read_text())
    return r


def test_vws_grammar():
    t = parse_argv(["train.vw", "-b18", "--passes=3", "-q", "ab", "--quadratic", "cd", "-c",
                    "--loss_function", "logistic", "-d", "more.vw", "-p", "stdout",
                    "-k"])  # fmt: skip
    assert t.data == ["train.vw"]  # (a bare data file wins over -d, as VW reads them)
    assert parse_argv(["-d", "a.vw", "-d", "b.vw", "-c"]).data == ["a.vw", "b.vw"]
    many = parse_argv(["a.vw", "b.vw"])
    assert many.data == ["a.vw"] and "only the first one will be read" in many.notes[0]
    assert t.learn["bits"] == 18 and t.learn["passes"] == 3
    assert t.learn["quadratic"] == ("ab", "cd") and t.learn["loss"] == "logistic"
    assert t.cache and t.inputs["rebuild_cache"] and t.predictions == "-"
    assert parse_argv(["--min_prediction", "-1"]).learn["min_prediction"] == -1.0
    assert parse_argv(["--data=x.vw", "--bit-precision", "12"]).learn["bits"] == 12


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--ring_size", "5"], "--ring_size is not supported by sl"),
        (["--dictionary", "a:d.txt"], "--dictionary is not supported"),
        (["--experimental_full_name_interactions", "ab"], "is not supported by sl"),
        (["--new_mf", "2"], "--new_mf is not supported by sl (nearest in sl: none"),
        (["--no_such_thing"], "--no_such_thing is not an option of vw"),
        (["-Z"], "-Z is not an option of sl vw"),
        (["--passes"], "--passes needs a value"),
        (["--passes", "x"], "an integer is expected"),
        (["--binary=1"], "--binary takes no value"),
        (["--link", "probit"], "--link 'probit'"),
        (["--cache_file", "a", "--cache_file", "b"], "one cache"),
    ],
)
def test_what_sl_does_not_take_is_one_line_and_exit_2(tmp_path, data, argv, says):
    r = invoke(["vw", "-d", str(data), *argv])
    assert r.exit_code == 2, r.output
    assert says in r.output
    assert r.output.count("\n") == 1 and r.output.startswith("Error: sl vw: ")


def test_the_option_table_names_every_supported_option_once():
    assert not set(OPTIONS) & set(NOT_SUPPORTED)
    assert not (set(OPTIONS) | set(NOT_SUPPORTED)) & OTHER_VW_OPTIONS
    shorts = [o.short for o in OPTIONS.values() if o.short]
    assert len(shorts) == len(set(shorts))


def _vw_help_options() -> list[str]:
    text = (TESTS / "data" / "vw-9.11.9-options.txt").read_text()
    return [ln for ln in text.splitlines() if ln.startswith("--")]


def test_every_option_of_vws_help_is_known_and_documented():
    """Each long option VW 9.11.9's help lists is one sl vw takes or refuses by name (one
    line, exit 2: never "not an option of vw"), and docs/vw-compat.md names it."""
    names = _vw_help_options()
    assert len(names) > 400
    known = set(OPTIONS) | set(NOT_SUPPORTED) | OTHER_VW_OPTIONS
    assert [n for n in names if n[2:].replace("-", "_") not in known] == []
    doc = (ROOT / "docs" / "vw-compat.md").read_text()
    assert [n for n in names if not re.search(re.escape(n) + r"(?![\w-])", doc)] == []


def test_the_option_list_is_vws_help():
    pytest.importorskip("vowpalwabbit")
    r = subprocess.run([sys.executable, "-m", "vowpalwabbit", "--help"], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    live = sorted(set(re.findall(r"--[A-Za-z0-9_][A-Za-z0-9_-]*", r.stdout + r.stderr)))
    assert live == sorted(_vw_help_options())


def test_vws_parameter_free_learners_and_one_against_all():
    """--oaa, --probabilities, --coin, --pistol, --freegrad and its options were sl train's
    only: a pasted 'vw --oaa 10 ...' line was refused as "not an option of vw"."""
    t = parse_argv(["--oaa", "4", "--probabilities", "--loss_function", "logistic"])
    assert t.learn["oaa"] == 4 and t.probabilities
    t = parse_argv(["--freegrad", "--restart", "--project", "--radius", "0.5", "--fepsilon",
                    "2", "--flipschitz_const", "1"])  # fmt: skip
    assert t.learn == {"algo": "freegrad", "freegrad_restart": True, "freegrad_project": True,
                       "freegrad_radius": 0.5, "freegrad_epsilon": 2.0,
                       "freegrad_lipschitz": 1.0}  # fmt: skip
    assert parse_argv(["--coin"]).learn["algo"] == "coin"
    assert parse_argv(["--pistol"]).learn["algo"] == "pistol"
    with pytest.raises(VWUsage, match="--pistol conflicts with --coin"):
        parse_argv(["--coin", "--pistol"])


@pytest.mark.parametrize(
    ("argv", "says"),
    [(["--coin", "--sgd"], "--coin conflicts with --sgd"),
     (["--ftrl", "--freegrad"], "--freegrad conflicts with --ftrl"),
     (["--probabilities"], "--probabilities applies to --oaa K")],
)  # fmt: skip
def test_learner_options_that_conflict_are_one_line_and_exit_2(tmp_path, data, argv, says):
    r = invoke(["vw", "-d", str(data), *argv])
    assert r.exit_code == 2, r.output
    assert says in r.output and r.output.count("\n") == 1


def test_a_pasted_oaa_line_trains_as_sl_train_does(tmp_path):
    rows = [f"{1 + k % 3} |f a{k % 7} b{k % 5}" for k in range(300)]
    (tmp_path / "m.vw").write_text("\n".join(rows) + "\n")
    a = report(["-d", str(tmp_path / "m.vw"), "--oaa", "3", "--probabilities", "--loss_function",
                "logistic", "-p", str(tmp_path / "a.txt")], tmp_path)  # fmt: skip
    r = invoke(["train", str(tmp_path / "m.vw"), "--oaa", "3", "--probabilities", "--loss",
                "logistic", "-p", str(tmp_path / "b.txt"), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert a["config"]["oaa"] == 3
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text()
    assert (tmp_path / "a.txt").read_text().startswith("1:0.333333 2:0.333333 3:0.333333")


def test_a_pasted_line_trains_as_sl_train_does(tmp_path, data):
    m1, m2 = tmp_path / "a.sl", tmp_path / "b.sl"
    a = report(["-d", str(data), "--loss_function", "logistic", "-f", str(m1), "-b", "16"],
               tmp_path)  # fmt: skip
    # sl vw reads decimals as VW does; sl train does so when asked (--numbers vw)
    r = invoke(["train", str(data), "--loss", "logistic", "-f", str(m2), "-b", "16",
                "--numbers", "vw", "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert a["config"]["bits"] == 16 and a["config"]["numbers"] == "vw"
    np.testing.assert_array_equal(model_io.load(m1).weights, model_io.load(m2).weights)


def test_testonly_scores_without_learning_and_counts_this_run(tmp_path, data):
    m, p = tmp_path / "m.sl", tmp_path / "p.txt"
    report(["-d", str(data), "-f", str(m)], tmp_path)
    before = model_io.load(m)
    got = report(["-t", "-i", str(m), "-d", str(data), "-p", str(p), "-f", str(m)], tmp_path)
    after = model_io.load(m)
    np.testing.assert_array_equal(before.weights, after.weights)
    assert got["examples"] == 1200  # this run's, as VW without --preserve_performance_counters
    # the model keeps the lifetime totals, the table's count of shown examples among them
    assert after.stats[S_N] == after.stats[S_SHOWN_N] == 2400
    preds = np.loadtxt(p, usecols=0)
    r = invoke(["predict", "-i", str(m), str(data), "-p", str(tmp_path / "q.txt"), "--quiet"])
    assert r.exit_code == 0, r.output
    # one score: sl vw writes it as VW does (six decimals), sl predict with 9 digits
    np.testing.assert_allclose(preds, np.loadtxt(tmp_path / "q.txt", usecols=0), rtol=0,
                               atol=5e-7 + 1e-12)  # fmt: skip
    kept = report(["-i", str(m), "-d", str(data), "-t", "--preserve_performance_counters"],
                  tmp_path)  # fmt: skip
    assert kept["examples"] == 2400 + 1200  # the model's totals, and this run's


def test_learning_rate_zero_only_tests(tmp_path, data):
    m = tmp_path / "m.sl"
    report(["-d", str(data), "-f", str(m)], tmp_path)
    got = report(["-i", str(m), "-d", str(data), "-l", "0"], tmp_path)
    assert got["config"]["test_only"] is True


def test_cache_lives_beside_vws_and_never_replaces_it(tmp_path, data):
    theirs = tmp_path / "d.vw.cache"
    theirs.write_bytes(b"VW's cache, which sl cannot read")
    a = report(["-d", str(data), "-c", "--passes", "3", "--holdout_off"], tmp_path)
    assert theirs.read_bytes() == b"VW's cache, which sl cannot read"
    ours = tmp_path / "d.vw.cache.sl"
    assert ours.exists()
    b = report(["-d", str(data), "-c", "--passes", "3", "--holdout_off"], tmp_path)
    c = report(["-d", str(data), "-c", "-k", "--passes", "3", "--holdout_off"], tmp_path)
    assert a["average_loss"] == b["average_loss"] == c["average_loss"]
    named = report(["-d", str(data), "--cache_file", str(tmp_path / "x.cache"), "--passes",
                    "2"], tmp_path)  # fmt: skip
    # --cache_file X names X (issue 37: it was X.sl); VW's own cache at X is refused
    assert (tmp_path / "x.cache").read_bytes().startswith(b"SLCACHE")
    assert not (tmp_path / "x.cache.sl").exists() and named["passes_run"] == 2


def test_predictions_raw_predictions_binary_and_links(tmp_path, data):
    p, r = tmp_path / "p.txt", tmp_path / "r.txt"
    report(["-d", str(data), "--loss_function", "logistic", "--binary", "-p", str(p), "-r",
            str(r)], tmp_path)  # fmt: skip
    signs, raw = np.loadtxt(p, usecols=0), np.loadtxt(r, usecols=0)
    assert set(signs.tolist()) <= {-1.0, 1.0}
    np.testing.assert_array_equal(signs, np.where(raw > 0, 1.0, -1.0))
    for link, f in (("logistic", lambda x: 1 / (1 + np.exp(-x))),
                    ("glf1", lambda x: 2 / (1 + np.exp(-x)) - 1), ("poisson", np.exp)):  # fmt: skip
        report(["-d", str(data), "--loss_function", "logistic", "--link", link, "-p", str(p),
                "-r", str(r)], tmp_path)  # fmt: skip
        # VW's six decimals on both sides (the link in float32)
        np.testing.assert_allclose(np.loadtxt(p, usecols=0), f(np.loadtxt(r, usecols=0)),
                                   rtol=2e-6, atol=1e-6)  # fmt: skip


def test_binary_reports_the_zero_one_loss(tmp_path, data):
    got = report(["-d", str(data), "--loss_function", "logistic", "--binary"], tmp_path)
    assert got["average_loss"] == pytest.approx(1.0 - got["accuracy"])


def test_progress_every_n_and_times_f(tmp_path, data):
    got = report(["-d", str(data), "-P", "250"], tmp_path)
    assert [int(row[2]) for row in got["curve"]] == [250, 500, 750, 1000]
    got = report(["-d", str(data), "-P", "3.0"], tmp_path)
    assert [int(row[2]) for row in got["curve"]] == [1, 3, 9, 27, 81, 243, 729]


def test_accepted_differences_say_so(tmp_path, data):
    r = invoke(["vw", "-d", str(data), "--audit", "--predict_only_model"])
    assert r.exit_code == 0, r.output
    # --audit prints VW's audit lines now: each prediction, then its features
    lines = r.output.splitlines()
    assert "sl vw: --audit" not in r.output
    assert any(ln.startswith("\t") and ":116060:1:" in ln for ln in lines)  # the constant
    # --predict_only_model is VW's now: -f writes the weights only (tests/test_vw_model.py),
    # the readable models no resume state
    assert "--predict_only_model" not in r.output


def test_help_and_version():
    r = invoke(["vw", "--help"])
    assert r.exit_code == 0 and "Example" in r.output and "Exit status" in r.output
    r = invoke(["vw", "-h"])
    assert r.exit_code == 0 and "docs/vw-compat.md" in r.output
    assert invoke(["vw", "--version"]).output.startswith("sl ")


def test_a_vw_line_from_stdin_as_a_process(tmp_path):
    """Data on stdin, predictions on stdout (VW's ``-p stdout``), nothing else there."""
    r = sl(["vw", "--loss_function", "logistic", "-p", "stdout", "--quiet"], tmp_path,
           input=text_data(50).encode())  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert len(lines) == 50 and lines[0].split()[1] == "r0"


def test_the_summary_reads_as_vws_with_a_holdout(tmp_path, data):
    """With a holdout VW's "average loss" is the best pass's holdout loss, marked h (as
    `grep 'average loss'` over VW's output reads it); sl vw prints it so, and, as VW,
    no progressive loss (it is in --report); sl train keeps its own words."""
    r = invoke(["vw", "-d", str(data), "-c", "--passes", "3", "--report",
                str(tmp_path / "r.json")])  # fmt: skip
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "r.json").read_text())
    lines = r.output.splitlines()
    assert f"average loss = {rep['best_holdout_loss']:.6f} h" in lines
    assert not any(ln.startswith("progressive loss") for ln in lines)  # VW's lines only
    assert not any(ln.startswith("holdout loss = ") for ln in lines)
    one = invoke(["vw", "-d", str(data), "--holdout_after", "1000"])
    assert any(ln.endswith(" h") and ln.startswith("average loss = ")
               for ln in one.output.splitlines())  # fmt: skip
    plain = invoke(["vw", "-d", str(data)])
    assert not any(ln.startswith("progressive loss") for ln in plain.output.splitlines())
    train = invoke(["train", str(data), "--passes", "3"])
    assert f"average loss = {rep['average_loss']:.6f}" in train.output.splitlines()
    assert any(ln.startswith("holdout loss = ") for ln in train.output.splitlines())


def test_save_per_pass_is_vws(tmp_path, data):
    assert parse_argv(["-d", "x.vw", "--save_per_pass", "-f", "m"]).outputs["save_per_pass"]
    r = invoke(["vw", "-d", str(data), "-c", "--passes", "2", "-f", str(tmp_path / "m.vw"),
                "--save_per_pass", "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert (tmp_path / "m.vw.1").exists() and (tmp_path / "m.vw.2").exists()


# ---- production flags (issue 37) ------------------------------------------------------


def test_no_stdin_reads_no_examples_and_writes_from_the_model(tmp_path, data):
    """``vw --no_stdin -i m --readable_model r``: a model's outputs without any data (stdin
    is not read, even when it holds lines)."""
    m = tmp_path / "m.sl"
    assert invoke(["vw", "-d", str(data), "-f", str(m), "--quiet"]).exit_code == 0
    r = tmp_path / "r.txt"
    out = invoke(["vw", "--no_stdin", "-i", str(m), "--readable_model", str(r), "--quiet"],
                 input="1 |a never read\n")  # fmt: skip
    assert out.exit_code == 0, out.output
    assert r.stat().st_size > 0
    assert parse_argv(["--no_stdin", "-d", "x.vw"]).data == ["x.vw"]


def test_id_is_kept_in_the_model_and_carried_on(tmp_path, data):
    m, m2 = tmp_path / "m.sl", tmp_path / "m2.sl"
    assert invoke(["vw", "-d", str(data), "--id", "ranker-7", "-f", str(m), "--quiet"]
                  ).exit_code == 0  # fmt: skip
    assert model_io.load(m).config.model_id == "ranker-7"
    assert invoke(["vw", "-d", str(data), "-i", str(m), "-f", str(m2), "--quiet"]).exit_code == 0
    assert model_io.load(m2).config.model_id == "ranker-7"
    assert invoke(["vw", "-d", str(data), "-i", str(m), "--id", "ranker-8", "-f", str(m2),
                   "--quiet"]).exit_code == 0  # fmt: skip
    assert model_io.load(m2).config.model_id == "ranker-8"
    assert "model_id=ranker-8" in invoke(["inspect", str(m2)]).output


def test_noop_predicts_zero_and_learns_nothing(tmp_path, data):
    p = tmp_path / "p.txt"
    got = report(["-d", str(data), "--noop", "-p", str(p)], tmp_path)
    assert all(line.split()[0] == "0" for line in p.read_text().splitlines())
    assert got["config"]["test_only"] is True
    r = invoke(["vw", "-d", str(data), "--noop", "-i", str(p)])
    assert r.exit_code == 2 and "use -t" in r.output


def test_driver_output_off_and_limit_output(tmp_path, data):
    r = invoke(["vw", "-d", str(data), "--driver_output_off"])
    assert r.exit_code == 0 and r.output == ""
    r = invoke(["vw", "-d", str(data), "--limit_output", "3", "--quiet"])
    assert r.exit_code == 0


def test_interactions_of_five_and_more_namespaces(tmp_path):
    """VW takes interactions of any arity; sl up to 16 namespaces (2..4 before)."""
    rng = np.random.default_rng(5)
    lines = []
    for _ in range(1500):  # > 32 KiB: the compiled kernels
        ns = " ".join(f"|{c} f{rng.integers(0, 5)}:{rng.random():.3f}" for c in "abcdefg")
        lines.append(f"{1 if rng.random() < 0.5 else -1} {ns}")
    src = tmp_path / "d.vw"
    src.write_text("\n".join(lines) + "\n")
    for spec in ("abcde", "abcdefg", "aabbc"):
        got = report(["-d", str(src), "--interactions", spec], tmp_path)
        assert got["examples"] == 1500
    pytest.importorskip("vowpalwabbit")
    import subprocess
    import sys

    for spec in ("abcde", "abcdefg"):
        vw = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(src),
                             "--interactions", spec], capture_output=True, text=True)  # fmt: skip
        want = float(next(ln for ln in vw.stderr.splitlines()
                          if ln.startswith("average loss")).split("=")[1])  # fmt: skip
        got = report(["-d", str(src), "--interactions", spec], tmp_path)["average_loss"]
        assert abs(got - want) <= 1e-6 * max(1.0, abs(want)), (spec, got, want)


@pytest.mark.parametrize("argv", [
    ["--classweight", "1:2,0:3.1,-1:5"],
    ["--oaa", "3", "--classweight", "2:0,3:0.1", "--classweight", "1:10"],
])  # fmt: skip
def test_classweight_weighs_learned_examples_as_vw(tmp_path, argv):
    """VW's --classweight: a learned example's importance weight times its class's
    multiplier (the label truncated, -1 included); the summary's weights follow."""
    rng = np.random.default_rng(3)
    oaa = "--oaa" in argv
    lines = []
    for i in range(400):
        label = int(rng.integers(1, 4)) if oaa else int(rng.choice([-1, 1]))
        lines.append(f"{label} |a f{i % 11}:{rng.random():.4f} g{i % 7}")
    src = tmp_path / "d.vw"
    src.write_text("\n".join(lines) + "\n")
    plain = report(["-d", str(src), *argv[:2 if oaa else 0]], tmp_path)
    got = report(["-d", str(src), *argv], tmp_path)
    assert got["weighted_example_sum"] != plain["weighted_example_sum"]
    t = report(["-d", str(src), *argv, "-t"], tmp_path)  # VW weighs what it learns only
    assert t["weighted_example_sum"] == 400
    r = invoke(["vw", "-d", str(src), "--classweight", "a:2"])
    assert r.exit_code == 2 and "CLASS:WEIGHT" in r.output
    pytest.importorskip("vowpalwabbit")
    import subprocess
    import sys

    vw = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(src), *argv],
                        capture_output=True, text=True)  # fmt: skip
    figures = dict(ln.split(" = ") for ln in vw.stderr.splitlines() if " = " in ln)
    assert abs(got["average_loss"] - float(figures["average loss"])) <= 1e-6
    assert abs(got["weighted_example_sum"] - float(figures["weighted example sum"])) <= 1e-4


def test_hash_seed_moves_the_namespaced_slots_as_vw(tmp_path):
    """VW's --hash_seed seeds the namespaces' hashes (the default namespace's becomes
    murmur3 of "" with the seed): every slot moves, the model keeps the seed, and a
    continued model refuses another one."""
    rng = np.random.default_rng(11)
    lines = [f"{1 if rng.random() < 0.5 else -1} |a x{i % 13}:{rng.random():.3f} |b y{i % 5} "
             f"| w{i % 7}" for i in range(1500)]  # fmt: skip
    src = tmp_path / "d.vw"
    src.write_text("\n".join(lines) + "\n")
    m = tmp_path / "m.sl"
    plain = report(["-d", str(src)], tmp_path)
    seeded = report(["-d", str(src), "--hash_seed", "7", "-q", "ab", "-f", str(m)], tmp_path)
    assert seeded["average_loss"] != plain["average_loss"]
    r = invoke(["vw", "-d", str(src), "-i", str(m), "--hash_seed", "8"])
    assert r.exit_code == 2 and "hash" in r.output
    again = report(["-d", str(src), "-i", str(m), "-t"], tmp_path)  # the model's seed
    assert again["average_loss"] < seeded["average_loss"]
    pytest.importorskip("vowpalwabbit")
    import subprocess
    import sys

    for argv in (["--hash_seed", "7", "-q", "ab"], ["--hash_seed", "123", "--hash", "all"]):
        vw = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(src), *argv,
                             "--invert_hash", str(tmp_path / "vw.ih"), "--quiet"],
                            capture_output=True, text=True)  # fmt: skip
        vw = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(src), *argv],
                            capture_output=True, text=True)  # fmt: skip
        want = float(next(ln for ln in vw.stderr.splitlines()
                          if ln.startswith("average loss")).split("=")[1])  # fmt: skip
        got = report(["-d", str(src), *argv, "--invert_hash", str(tmp_path / "sl.ih")],
                     tmp_path)  # fmt: skip
        assert abs(got["average_loss"] - want) <= 1e-6, argv
        assert (tmp_path / "sl.ih").read_bytes() == (tmp_path / "vw.ih").read_bytes()


def test_table_lines_with_importance_weights_land_on_vws_examples(tmp_path):
    """VW sets the next line at the weight of this one times 2 (or -P's factor), not at
    the previous point doubled: with weights other than 1 the rows differ otherwise."""
    rng = np.random.default_rng(1)
    lines = [f"{rng.choice([-1, 1])} {rng.choice([0.3, 1.7, 0.05, 2.5]):g} |a x{i % 17}:"
             f"{rng.random():.3f} y{i % 5}" for i in range(3000)]  # fmt: skip
    src = tmp_path / "w.vw"
    src.write_text("\n".join(lines) + "\n")
    pytest.importorskip("vowpalwabbit")
    import subprocess
    import sys

    for extra in ([], ["-P", "1.5"], ["-P", "100"]):
        vw = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(src), *extra],
                            capture_output=True, text=True)  # fmt: skip
        ours = invoke(["vw", "-d", str(src), *extra])
        assert ours.exit_code == 0

        def table(text):  # where the lines land: the example counter and weight
            return [ln.split()[2:4] for ln in text.splitlines() if ln[:1].isdigit()]

        assert table(ours.output) == table(vw.stderr), extra


def test_an_explorer_without_an_exploring_reduction_is_ignored_as_vw() -> None:
    """VW warns that --first depends on --cb_explore(_adf) and runs --cb K without it; sl used
    to explore (its -p held pmfs where VW's held actions)."""
    from streamlearn.vwargs import resolve

    t = parse_argv(["--cb", "3", "--first", "10"])
    resolve(t)
    assert "explore" not in t.multiline
    assert any("--first" in n for n in t.notes)
    t = parse_argv(["--cb_explore", "3", "--first", "10"])
    resolve(t)
    assert t.multiline["explore"] == "first" and not t.notes


def test_vw_s_allreduce_line_is_refused_with_the_line_to_run(tmp_path) -> None:
    """VW's cluster options: one line naming the ``sl train --dask`` command (issue 47)."""
    from tests.unix import refused

    refused(["-d", "part0.vw", "--span_server", "h1", "--total", "2", "--node", "0",
             "--unique_id", "7", "-f", "m.vw", "-b", "20", "-c", "-k"], tmp_path,
            "sl train --dask tcp://h1:8786 part0.vw -f m.vw -b 20 (the other nodes' files")


@pytest.mark.parametrize("args", [["--normalized", "--power_t", "0.3"], ["--sgd", "-l", "2"],
                                  ["--adaptive", "--invariant", "-l", "0.3"]])
def test_a_weights_only_readable_model_keeps_no_update_rule(tmp_path, args) -> None:
    """VW keeps gd's update rule and rates with its resume state only: a --predict_only_model
    run's --readable_model and --invert_hash headers say none of them, as VW's."""
    pytest.importorskip("vowpalwabbit")
    from tests.unix import SL_VW, VW_MODULE, run_module

    (tmp_path / "d.vw").write_text(text_data(60))
    for prog, n in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        run_module(prog, ["-d", "d.vw", *args, "--readable_model", f"{n}.r", "--invert_hash",
                          f"{n}.i", "--predict_only_model", "--quiet"], tmp_path)  # fmt: skip
    for out in ("r", "i"):
        assert (tmp_path / f"sl.{out}").read_text() == (tmp_path / f"vw.{out}").read_text()
