"""Continuing models: warm starts across regularisers, per-run options, formats, report JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.io import parse_bytes
from streamlearn.learners.base import G_T
from tests.reference import dloss_np, enet_step, rate_np
from tests.unix import invoke, text_data

LOGISTIC = 1
TEXT = text_data(400, seed=3)
A, B = TEXT[: len(TEXT) // 2], TEXT[len(TEXT) // 2 :]
REGULARISERS = {"none": [], "l1": ["--l1", "1e-3"], "l2": ["--l2", "1e-2"],
                "enet": ["--l1", "1e-3", "--l2", "1e-2"]}  # fmt: skip


def _dense_continue(w0: np.ndarray, T0: float, text: str, form: str, l1: float, l2: float):
    """The paper's dense update, started from ``w0`` with the schedule at ``T0``."""
    batch = parse_bytes(text.encode())
    w, T = w0.copy(), T0
    for i in range(batch.n):
        lo, hi = batch.indptr[i], batch.indptr[i + 1]
        idx, val = batch.indices[lo:hi], batch.values[lo:hi]
        p = batch.bases[i] + float(np.dot(w[idx], val))
        y, a = batch.labels[i], batch.weights[i]
        T += a
        eta = rate_np(0.5, 0.5, 1.0, T)
        np.add.at(w, idx, -eta * a * dloss_np(LOGISTIC, p, y) * val)
        w = enet_step(form, w, eta, l1, l2)
    return w


@pytest.mark.parametrize("algo", ["sgd", "fobos"])
@pytest.mark.parametrize("before", list(REGULARISERS))
@pytest.mark.parametrize("after", list(REGULARISERS))
def test_warm_start_from_any_variant_to_any_other(tmp_path, algo, before, after):
    """``-i model --l2 ...``: the new learner starts from the model's weights, exactly."""
    if before == after:
        pytest.skip("same variant: an exact resume, tested elsewhere")
    a, b = tmp_path / "a.vw", tmp_path / "b.vw"
    a.write_text(A)
    b.write_text(B)
    m0, m1 = tmp_path / "m0.sl", tmp_path / "m1.sl"
    common = ["--loss", "logistic", "-l", "0.5", "--quiet"]  # the reference's rate
    r = invoke(["train", "--algo", algo, *common, *REGULARISERS[before], str(a), "-f", str(m0)])
    assert r.exit_code == 0, r.output
    # the new run names every regulariser, so those of the model do not carry over
    after_opts = {"l1": 0.0, "l2": 0.0}
    opts = REGULARISERS[after]
    for k in range(0, len(opts), 2):
        after_opts[opts[k][2:]] = float(opts[k + 1])
    args = ["--l1", str(after_opts["l1"]), "--l2", str(after_opts["l2"])]
    r = invoke(["train", *common, "-i", str(m0), *args, str(b), "-f", str(m1)])
    assert r.exit_code == 0, r.output
    old = model_io.load(m0)
    want = _dense_continue(old.dense_weights(), old.gstate[G_T], B, algo,
                           after_opts["l1"], after_opts["l2"])  # fmt: skip
    got = model_io.load(m1).dense_weights()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_per_run_options_are_not_inherited(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(TEXT)
    m = tmp_path / "m.sl"
    assert invoke(["train", "--passes", "3", "--holdout-period", "5", str(data), "-f", str(m),
                   "--quiet"]).exit_code == 0  # fmt: skip
    rep = tmp_path / "r.json"
    r = invoke(["train", "-i", str(m), str(data), "-f", str(m), "--report", str(rep), "--quiet"])
    assert r.exit_code == 0, r.output
    report = json.loads(rep.read_text())
    assert report["passes_run"] == 1 and report["passes"][0]["holdout_examples"] == 0
    assert report["config"]["passes"] == 1 and report["config"]["holdout_period"] is None


def test_the_model_records_its_input_format(tmp_path):
    svm = tmp_path / "d.svm"
    svm.write_text("1 1:0.5 3:1 # from a|b\n-1 2:1\n" * 20)  # a '|' in a comment
    vw = tmp_path / "d.vw"
    vw.write_text(TEXT)
    m = tmp_path / "m.sl"
    assert invoke(["train", str(svm), "-f", str(m), "--quiet"]).exit_code == 0
    assert model_io.load(m).config.format == "svmlight"
    for cmd in (["train", "-i", str(m), str(vw)], ["predict", "-i", str(m), str(vw)]):
        r = invoke(cmd)
        assert r.exit_code == 2 and "looks like vw data" in r.output and "--format vw" in r.output
    r = invoke(["predict", "-i", str(m), str(svm), "-p", "-", "--quiet"])
    assert r.exit_code == 0 and len(r.output.splitlines()) == 40
    # svmlight index i is VW's feature i in the default namespace: the same slots
    r2 = invoke(["predict", "-i", str(m), "--format", "vw", "-p", "-", "--quiet"],
                input="1 | 1:0.5 3:1\n-1 | 2:1\n" * 20)  # fmt: skip
    assert r2.exit_code == 0 and r2.output == r.output


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_reports_are_strict_json(tmp_path):
    data = tmp_path / "one.vw"
    data.write_text(" |f c\n1 |f a\n1 |f b\n")  # an unlabeled row first, then one class
    rep = tmp_path / "r.json"
    r = invoke(["train", "--loss", "logistic", str(data), "--report", str(rep), "--quiet"])
    assert r.exit_code == 0
    report = _strict_json(rep.read_text())
    assert report["best_constant"] is None
    assert any(v is None for row in report["curve"] for v in row)
    r = invoke(["predict", "-i", str(tmp_path / "nope.sl"), str(data)])
    assert r.exit_code == 5


def test_exact_holdout_ties_keep_the_first_pass(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(TEXT)
    rep = tmp_path / "r.json"
    r = invoke(["train", str(data), "--holdout-period", "1", "--passes", "3",
                "--report", str(rep), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    report = json.loads(rep.read_text())
    losses = [p["holdout_loss"] for p in report["passes"]]
    assert losses[0] == losses[1] == losses[2]  # nothing is learned: bit-identical
    assert report["best_pass"] == 1


def test_vw_counters_exclude_held_out_examples(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(TEXT)  # 400 examples, weight 1
    rep = tmp_path / "r.json"
    r = invoke(["train", str(data), "--passes", "2", "--holdout-period", "10",
                "--early-terminate", "5", "--report", str(rep), "--quiet"])  # fmt: skip
    assert r.exit_code == 0
    report = json.loads(rep.read_text())
    assert report["examples_per_pass"] == 360
    assert report["weighted_example_sum"] == 720.0  # as VW prints it
    assert report["examples"] == 800
