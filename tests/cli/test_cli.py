"""The command line, driven through click's CliRunner with stdin input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from streamlearn import model as model_io
from streamlearn.cli import cli
from streamlearn.learners.base import S_LOSS, S_N, S_WLAB
from tests.marks import slow_except

DATA = "".join(f"{1 if i % 3 else -1} |a x{i % 7} y{i % 5}:0.5 |b z{i % 11}\n" for i in range(200))


def invoke(args, input=None):
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "d.vw"
    p.write_text(DATA)
    return p


@pytest.mark.parametrize("cmd", [[], ["train"], ["predict"], ["inspect"]])
def test_every_command_has_help_with_an_example(cmd):
    r = invoke([*cmd, "-h"])
    assert r.exit_code == 0
    assert "Example" in r.output and "Exit status" in r.output


def test_tiny_input_from_stdin():
    r = invoke(["train"], input="1 | a b\n")
    assert r.exit_code == 0, r.output
    assert "average loss" in r.output and "finished run" in r.output
    assert "number of examples = 1" in r.output
    assert "non-zero weights = 3" in r.output


def test_quiet_prints_nothing(data):
    r = invoke(["train", str(data), "--quiet"])
    assert r.exit_code == 0 and r.output == ""


def test_vw_style_table_lines(data):
    r = invoke(["train", str(data), "--loss", "logistic"])
    counters = [
        int(line.split()[2])
        for line in r.output.splitlines()
        if line[:1].isdigit() and len(line.split()) == 7
    ]
    assert counters == [1, 2, 4, 8, 16, 32, 64, 128]


def test_train_predict_round_trip_matches_in_memory_model(tmp_path, data):
    m = tmp_path / "m.sl"
    rep = tmp_path / "r.json"
    r = invoke(
        [
            "train",
            str(data),
            "--loss",
            "logistic",
            "--algo",
            "tg",
            "--l1",
            "0.001",
            "-f",
            str(m),
            "--report",
            str(rep),
        ]
    )
    assert r.exit_code == 0, r.output
    preds = tmp_path / "p.txt"
    r = invoke(["predict", "-i", str(m), str(data), "-p", str(preds)])
    assert r.exit_code == 0, r.output
    got = np.loadtxt(preds)
    # in-memory: the model's current weights applied by hand
    model = model_io.load(m)
    from streamlearn.io import read_batches
    from streamlearn.learners.base import predict_batch

    w = model.dense_weights()
    want = []
    for b in read_batches([str(data)], bits=model.config.bits):
        out = np.empty(b.n)
        predict_batch(w, b.indptr, b.indices, b.values, b.bases, b.status, out)
        want.append(out)
    np.testing.assert_allclose(got, np.concatenate(want), rtol=1e-8)
    report = json.loads(rep.read_text())
    assert report["examples"] == 200 and report["nonzero_weights"] == model.nnz
    assert report["curve"][0][2] == 1


def test_predictions_on_stdout_with_tags(tmp_path):
    m = tmp_path / "m.sl"
    invoke(["train", "-f", str(m), "--quiet"], input="1 'first| a\n-1 'second| b\n")
    r = invoke(["predict", "-i", str(m), "-p", "-", "--quiet"], input="'t1| a\n| b\n")
    lines = r.output.splitlines()
    assert len(lines) == 2 and lines[0].endswith(" t1") and " " not in lines[1]


def _resume_case(tmp_path, algo_args):
    day1 = "".join(DATA.splitlines(keepends=True)[:120])
    day2 = "".join(DATA.splitlines(keepends=True)[120:])
    (tmp_path / "day1.vw").write_text(day1)
    (tmp_path / "day2.vw").write_text(day2)
    a, b, c = (str(tmp_path / n) for n in ("a.sl", "b.sl", "c.sl"))
    base = ["--loss", "logistic", "-b", "10", *algo_args, "--quiet"]
    assert invoke(["train", str(tmp_path / "day1.vw"), *base, "-f", a]).exit_code == 0
    assert invoke(["train", "-i", a, str(tmp_path / "day2.vw"), "--quiet", "-f", b]).exit_code == 0
    assert (
        invoke(
            ["train", str(tmp_path / "day1.vw"), str(tmp_path / "day2.vw"), *base, "-f", c]
        ).exit_code
        == 0
    )
    return model_io.load(b), model_io.load(c)


@pytest.mark.parametrize(
    "algo_args",
    [
        ["--algo", "sgd"],
        ["--algo", "tg", "--l1", "0.01", "--period", "3", "--theta", "0.5"],
        ["--algo", "sgd", "--l1", "0.01"],
        ["--algo", "sgd", "--l1", "0.01", "--l2", "0.01"],
        ["--algo", "fobos", "--l1", "0.01"],
        ["--algo", "fobos", "--l2", "0.01"],
        ["--algo", "fobos", "--l1", "0.01", "--l2", "0.01", "--power-t", "1"],
        ["--algo", "smidas", "--l1", "0.001"],
        [],  # gd, VW's default update
        ["--l1", "1e-3", "--l2", "1e-2"],  # gd's gravity and contraction
        ["--adaptive", "--power-t", "0.3", "--initial-t", "2"],
        ["--normalized"],
        ["--algo", "ftrl"],
        ["--algo", "ftrl", "--l1", "0.5", "--l2", "0.1"],  # weights 0, z and n not
        ["--coin"],  # and its normalizer sums in gstate
        ["--pistol"],
        ["--freegrad", "--project"],  # and its global gradient norms
    ],
)
def test_resume_equals_one_run(tmp_path, algo_args):
    resumed, whole = _resume_case(tmp_path, algo_args)
    np.testing.assert_array_equal(resumed.slots, whole.slots)
    np.testing.assert_array_equal(resumed.state, whole.state)
    np.testing.assert_array_equal(resumed.weights, whole.weights)
    np.testing.assert_array_equal(resumed.gstate, whole.gstate)
    for k in (S_N, S_LOSS, S_WLAB):
        assert resumed.stats[k] == whole.stats[k]


def test_conflicting_option_on_resume_names_both_values(tmp_path, data):
    m = tmp_path / "m.sl"
    invoke(["train", str(data), "-b", "12", "-f", str(m), "--quiet"])
    r = invoke(["train", "-i", str(m), str(data), "-b", "14"])
    assert r.exit_code == 2
    assert "14" in r.output and "12" in r.output


def test_missing_input_is_exit_3(tmp_path):
    r = invoke(["train", str(tmp_path / "nope.vw")])
    assert r.exit_code == 3 and "nope.vw" in r.output


def test_bad_model_is_exit_5(tmp_path, data):
    bad = tmp_path / "bad.sl"
    bad.write_bytes(b"not a model")
    r = invoke(["predict", "-i", str(bad), str(data)])
    assert r.exit_code == 5 and "not an sl model" in r.output
    r = invoke(["train", "-i", str(bad), str(data)])
    assert r.exit_code == 5


def test_output_in_missing_directory_fails_before_training(tmp_path, data):
    r = invoke(["train", str(data), "-f", str(tmp_path / "no" / "m.sl")])
    assert r.exit_code == 2 and "does not exist" in r.output
    assert "finished run" not in r.output


def test_malformed_lines_skipped_with_file_and_line(tmp_path):
    p = tmp_path / "bad.vw"
    p.write_text("1 | a\nfoo | b\n-1 | c\n1 | d:nan\n")
    r = invoke(["train", str(p)])
    assert r.exit_code == 0
    assert f"{p}:2" in r.output and f"{p}:4" in r.output
    assert "number of examples = 2" in r.output


def test_strict_fails_and_writes_no_model(tmp_path):
    p = tmp_path / "bad.vw"
    p.write_text("1 | a\nfoo | b\n")
    m = tmp_path / "m.sl"
    r = invoke(["train", str(p), "--strict", "-f", str(m)])
    assert r.exit_code == 4 and f"{p}:2" in r.output
    assert not m.exists()


def test_divergence_is_exit_6(tmp_path):
    p = tmp_path / "big.vw"
    # (values of 1e200 are now skipped as too large: products of allowed ones overflow)
    p.write_text("".join(f"1e9 | a:1e18 b:{i}e16\n" for i in range(1, 50)))
    m = tmp_path / "m.sl"
    r = invoke(["train", str(p), "-l", "10", "-f", str(m)])
    assert r.exit_code == 6 and "learning-rate" in r.output
    assert not m.exists()


def test_svmlight_zero_one_labels_under_logistic(tmp_path):
    p = tmp_path / "d.svm"
    p.write_text("".join(f"{i % 2} 1:{i % 3} 7:1\n" for i in range(20)))
    r = invoke(["train", str(p), "--loss", "logistic"])
    assert r.exit_code == 0
    assert "label 0 read as -1" in r.output


def test_passes_from_stdin_equal_passes_over_file(tmp_path, data):
    a, b = tmp_path / "a.sl", tmp_path / "b.sl"
    args = ["--passes", "3", "--loss", "logistic", "--quiet"]
    assert invoke(["train", str(data), *args, "-f", str(a)]).exit_code == 0
    assert invoke(["train", *args, "-f", str(b)], input=DATA).exit_code == 0
    np.testing.assert_array_equal(model_io.load(a).weights, model_io.load(b).weights)


def test_persistent_cache_is_reused_and_invalidated(tmp_path, data):
    c = tmp_path / "d.cache"
    args = [str(data), "--passes", "2", "--cache", str(c), "--quiet", "-f"]
    assert invoke(["train", *args, str(tmp_path / "1.sl")]).exit_code == 0
    assert c.exists()
    assert invoke(["train", *args, str(tmp_path / "2.sl")]).exit_code == 0
    w1 = model_io.load(tmp_path / "1.sl").weights
    np.testing.assert_array_equal(w1, model_io.load(tmp_path / "2.sl").weights)
    data.write_text(DATA.replace("|b", "|c"))  # changed source: cache must not be used
    assert invoke(["train", *args, str(tmp_path / "3.sl")]).exit_code == 0
    assert not np.array_equal(w1, model_io.load(tmp_path / "3.sl").weights)


def test_inspect_shows_nnz_and_top_weights(tmp_path, data):
    m = tmp_path / "m.sl"
    invoke(["train", str(data), "-f", str(m), "--quiet"])
    r = invoke(["inspect", str(m), "--top", "3"])
    assert r.exit_code == 0 and "non-zero weights" in r.output
    info = json.loads(invoke(["inspect", str(m), "--json", "--top", "3"]).output)
    assert len(info["largest_weights"]) == 3


def test_readable_and_invert_hash_models(tmp_path):
    from streamlearn.hashing import feature_slot
    from streamlearn.io import read_batches

    src = tmp_path / "d.vw"
    src.write_text("1 |a x y:2 |b z\n-1 |a x w:abc | 7\n1 'tag| q:0 r\n")
    m, rd, ih = tmp_path / "m.sl", tmp_path / "r.txt", tmp_path / "ih.txt"
    r = invoke(
        [
            "train",
            str(src),
            "-f",
            str(m),
            "--readable-model",
            str(rd),
            "--invert-hash",
            str(ih),
            "--quiet",
        ]
    )
    assert r.exit_code == 0, r.output
    rows = [ln.split("\t") for ln in ih.read_text().splitlines() if not ln.startswith("#")]
    by_name = {n: int(row[0]) for row in rows for n in row[2].split()}
    assert by_name["a^x"] == feature_slot("a", "x", 18)
    assert by_name["a^w^abc"] == feature_slot("a", "w", 18, value="abc")
    assert by_name["7"] == feature_slot("", "7", 18)
    assert "q" not in by_name  # value 0 drops the feature
    # every named slot is a slot the parser produced
    parsed = set()
    for b in read_batches([str(src)]):
        parsed |= set(b.indices.tolist())
    assert set(by_name.values()) <= parsed
    readable = [ln.split("\t") for ln in rd.read_text().splitlines() if not ln.startswith("#")]
    assert len(readable) == model_io.load(m).nnz
    out = invoke(["inspect", str(m)]).output
    assert "a^x" in out and "Constant" in out


@pytest.mark.parametrize("algo", slow_except(
    [["--algo", "sgd"], ["--algo", "tg", "--l1", "0.01"], [],
     ["--l1", "1e-3", "--l2", "1e-3"],
     ["--adaptive", "--power-t", "0.3"],
     ["--algo", "ftrl", "--l1", "0.1"], ["--coin"], ["--pistol"],
     ["--freegrad", "--restart", "--project"]], 0, 2))  # fmt: skip
def test_tiny_inputs_run_interpreted_with_identical_results(tmp_path, data, algo):
    import os
    import subprocess
    import sys

    models = []
    for jit in ("1", "0"):
        m = tmp_path / f"m{jit}.sl"
        env = dict(os.environ, SL_JIT=jit)
        env.pop("NUMBA_DISABLE_JIT", None)
        proc = subprocess.run(
            [sys.executable, "-m", "streamlearn", "train", "--loss", "logistic", *algo, "--quiet",
             "-f", str(m)],
            input=DATA.encode(), env=env, capture_output=True,
        )
        assert proc.returncode == 0, proc.stderr
        models.append(model_io.load(m))
    np.testing.assert_array_equal(models[0].slots, models[1].slots)
    np.testing.assert_array_equal(models[0].weights, models[1].weights)
    np.testing.assert_array_equal(models[0].stats, models[1].stats)


def test_sgd_form_l2_step_beyond_one_is_warned():
    data = "1 | a b\n-1 | c\n"
    r = invoke(["train", "--algo", "sgd", "--l2", "4", "-l", "0.5"], input=data)
    assert r.exit_code == 0
    assert "every step sets all weights to 0" in r.output
    r = invoke(["train", "--algo", "sgd", "--l2", "1", "-l", "0.5"], input=data)
    assert "every step sets all weights to 0" not in r.output
    r = invoke(["train", "--algo", "fobos", "--l2", "4", "-l", "0.5"], input=data)
    assert "every step sets all weights to 0" not in r.output


def test_dash_d_reads_files_as_vw_does(tmp_path, data):
    a, b = tmp_path / "a.sl", tmp_path / "b.sl"
    assert invoke(["train", str(data), "-f", str(a), "--quiet"]).exit_code == 0
    assert invoke(["train", "-d", str(data), "-f", str(b), "--quiet"]).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    r = invoke(["predict", "-i", str(a), "-d", str(data), "-p", "-", "--quiet"])
    assert r.exit_code == 0 and len(r.output.splitlines()) == 200


def test_vw_spellings_of_long_options(tmp_path, data):
    ours = ["--loss", "logistic", "--power-t", "0.3", "--initial-t", "2", "--learning-rate", "0.2"]
    vws = ["--loss_function", "logistic", "--power_t", "0.3", "--initial_t", "2",
           "--learning_rate", "0.2"]
    a, b = tmp_path / "a.sl", tmp_path / "b.sl"
    assert invoke(["train", str(data), *ours, "-f", str(a), "--quiet"]).exit_code == 0
    assert invoke(["train", str(data), *vws, "-f", str(b), "--quiet"]).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    # a VW-spelled fixed option conflicting with the model is refused like ours
    r = invoke(["train", "-i", str(a), str(data), "--loss_function", "squared", "--quiet"])
    assert r.exit_code == 2 and "conflicts" in r.output


def test_tiny_inputs_do_not_import_numba(tmp_path):
    import os
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from streamlearn.cli import cli\n"
        "try:\n"
        "    cli(['train', '--quiet', '-f', sys.argv[1]])\n"
        "except SystemExit:\n"
        "    pass\n"
        "jit = sys.modules.get('streamlearn.system.jit')\n"
        "print(jit is not None and not jit.INTERPRETED)\n"  # (kernels compiled, or loaded)
    )
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    env.pop("SL_JIT", None)
    m = tmp_path / "m.sl"
    proc = subprocess.run([sys.executable, "-c", script, str(m)], input=b"1 |a x\n", env=env,
                          capture_output=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().strip() == "False" and model_io.load(m).nnz == 2


# ---- VW's options on sl train and sl predict ------------------------------------


def test_testonly_scores_and_leaves_the_model_as_it_was(tmp_path, data):
    m, t = tmp_path / "m.sl", tmp_path / "t.sl"
    assert invoke(["train", str(data), "-f", str(m), "--quiet"]).exit_code == 0
    rep = tmp_path / "r.json"
    r = invoke(["train", "-t", "-i", str(m), str(data), "-f", str(t), "--report", str(rep),
                "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(model_io.load(m).weights, model_io.load(t).weights)
    fresh = invoke(["train", "--testonly", str(data), "--report", str(rep), "--quiet"])
    assert fresh.exit_code == 0
    assert json.loads(rep.read_text())["nonzero_weights"] == 0  # nothing learned


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--algo", "tg", "--initial-weight", "0.1"], "apply to --algo gd only"),
        (["-C", "1", "--algo", "fobos"], "apply to --algo gd only"),
        (["--quantile-tau", "0.3"], "--loss quantile only"),
        (["--loss", "quantile", "--quantile-tau", "1.5"], "(0, 1)"),
        (["--skips", "1"], "--skips needs --ngram"),
        (["--ngram", "2", "--sort-features"], "--sort_features"),
        (["--holdout-off", "--holdout-period", "5"], "--holdout-off conflicts"),
        (["--algo", "cd", "--loss", "poisson"], "takes --loss squared, logistic or hinge"),
        (["-P", "often"], "not a number"),
    ],
)
def test_vw_options_refused_where_they_mean_nothing(data, args, says):
    r = invoke(["train", str(data), *args, "--quiet"])
    assert r.exit_code == 2, r.output
    assert says in r.output


def test_zero_labels_read_either_way(tmp_path):
    p = tmp_path / "d.vw"
    p.write_text("".join(f"{i % 2} |f a{i % 3} b\n" for i in range(40)))
    neg = invoke(["train", str(p), "--loss", "logistic"])
    assert "label 0 read as -1" in neg.output
    vw = invoke(["train", str(p), "--loss", "logistic", "--zero-label", "vw"])
    assert "read as VW reads it" in vw.output and "probability of 1/2" in vw.output
    hinge = invoke(["train", str(p), "--loss", "hinge", "--zero-label", "vw"])
    assert "a loss of 1, never learned" in hinge.output


def test_raw_predictions_examples_and_links_on_predict(tmp_path, data):
    m, p, r = tmp_path / "m.sl", tmp_path / "p.txt", tmp_path / "r.txt"
    assert invoke(["train", str(data), "--loss", "logistic", "-f", str(m),
                   "--quiet"]).exit_code == 0  # fmt: skip
    res = invoke(["predict", "-i", str(m), str(data), "-p", str(p), "-r", str(r), "--link",
                  "glf1", "--examples", "10", "--quiet"])  # fmt: skip
    assert res.exit_code == 0, res.output
    raw, linked = np.loadtxt(r, usecols=0), np.loadtxt(p, usecols=0)
    assert raw.shape == (10,)
    np.testing.assert_allclose(linked, 2 / (1 + np.exp(-raw)) - 1, rtol=1e-7)


def test_progress_on_train(data):
    r = invoke(["train", str(data), "-P", "40"])
    counters = [int(line.split()[2]) for line in r.output.splitlines()
                if line[:1].isdigit() and len(line.split()) == 7]  # fmt: skip
    assert counters == [40, 80, 120, 160, 200]


@pytest.mark.parametrize("cmd", ["train", "predict"])
def test_help_groups_the_options_by_purpose(cmd):
    """Every option sits under a heading of HELP_GROUPS (a new one joins a group there)."""
    from streamlearn.cli.options import HELP_GROUPS

    out = invoke([cmd, "-h"]).output
    headings = [ln[:-1] for ln in out.splitlines() if ln.endswith(":") and not ln.startswith(" ")]
    assert "Other options" not in headings, "an option is in no group of HELP_GROUPS"
    titles = [h for h in headings if h in HELP_GROUPS]
    assert titles == [t for t in HELP_GROUPS if t in titles]  # in HELP_GROUPS' order
    if cmd == "train":
        assert titles == list(HELP_GROUPS)
        section = out.split("\nRegularization:\n")[1].split("\n\n")[0]
        assert "--l1" in section and "--l2" in section and "  --algo" not in section
        assert "--dask" in out.split("\nScale-out:\n")[1]


def test_top_level_help_is_current():
    out = invoke(["-h"]).output
    assert "by default with VW's own update (gd" in " ".join(out.split())
    assert "_SL_COMPLETE=bash_source sl" in out
    assert "SMIDAS" in out and "(truncated gradient, FoBoS, SMIDAS)" not in " ".join(out.split())


def test_shell_completion_completes_commands_and_choices(tmp_path):
    import os
    import subprocess
    import sys

    def complete(words: str, cword: int) -> list[str]:
        env = dict(os.environ, COMP_WORDS=words, COMP_CWORD=str(cword),
                   _SL_COMPLETE="bash_complete")  # fmt: skip
        out = subprocess.run([sys.executable, "-m", "streamlearn"], env=env, capture_output=True,
                             text=True, check=True)  # fmt: skip
        return [line.split(",", 1)[1] for line in out.stdout.splitlines()]

    assert complete("sl tr", 1) == ["train"]
    assert "gd" in complete("sl train --algo ", 3)
    env = dict(os.environ, _SL_COMPLETE="bash_source")
    script = subprocess.run([sys.executable, "-m", "streamlearn"], env=env, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    assert "_sl_completion" in script and "complete " in script
