"""Mini-batch steps and the stochastic subgradient step equal Dhingra et al.'s dense forms."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.learners import minibatch, resolve, sgd, truncated
from streamlearn.learners.base import G_N, G_T, make_params
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from tests import gaps, reference
from tests.streams import random_stream, run_lazy
from tests.unix import invoke, text_data

LOSSES = [SQUARED, LOGISTIC, HINGE]


def _params(power_t, B, g=0.0, theta=np.inf, K=1, eta0=0.1, t0=1.0):
    return make_params(
        learning_rate=eta0, power_t=power_t, initial_t=t0, l1=g, theta=theta, period=K,
        minibatch=B,
    )  # fmt: skip


@pytest.mark.parametrize("loss_id", LOSSES)
@pytest.mark.parametrize("B", [2, 5, 32])
@pytest.mark.parametrize("power_t", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("seed", range(3))
def test_minibatch_sgd_equals_dense(loss_id, B, power_t, seed):
    stream = random_stream(seed, n=300, classification=loss_id != SQUARED)
    w, preds, _ = run_lazy(minibatch.SGD, _params(power_t, B), stream, loss_id, chunks=4)
    w_ref, p_ref = reference.minibatch(stream, loss_id, 0.1, power_t, 1.0, B)
    gaps.assert_matches(w, w_ref, preds, p_ref, rtol=1e-12)


@pytest.mark.parametrize("loss_id", LOSSES)
@pytest.mark.parametrize(("B", "K", "theta"), [(2, 1, np.inf), (5, 1, np.inf), (4, 3, 0.05),
                                               (16, 2, np.inf)])  # fmt: skip
@pytest.mark.parametrize("power_t", [0.0, 0.5])
@pytest.mark.parametrize("seed", range(3))
def test_minibatch_truncation_equals_dense(loss_id, B, K, theta, power_t, seed):
    stream = random_stream(seed, n=400, classification=loss_id != SQUARED)
    g = 0.05
    params = _params(power_t, B, g, theta, K)
    w, preds, _ = run_lazy(minibatch.TG, params, stream, loss_id, chunks=5)
    w_ref, p_ref = reference.minibatch(
        stream, loss_id, 0.1, power_t, 1.0, B, "truncate", g, theta, K
    )
    assert np.count_nonzero(w_ref) < np.unique(stream.indices).size  # truncation did something
    gaps.assert_matches(w, w_ref, preds, p_ref, rtol=1e-12)


@pytest.mark.parametrize("loss_id", LOSSES)
@pytest.mark.parametrize("B", [1, 3, 20])
@pytest.mark.parametrize(("power_t", "g"), [(0.0, 0.01), (0.5, 0.05), (1.0, 0.2), (0.5, 0.0)])
@pytest.mark.parametrize("seed", range(3))
def test_subgradient_equals_dense(loss_id, B, power_t, g, seed):
    stream = random_stream(seed, n=400, classification=loss_id != SQUARED)
    params = _params(power_t, B, g)
    w, preds, _ = run_lazy(minibatch.SUBGRADIENT, params, stream, loss_id, chunks=5)
    w_ref, p_ref = reference.minibatch(stream, loss_id, 0.1, power_t, 1.0, B, "subgrad", g)
    # weights bouncing around zero are replayed step by step: same arithmetic as the
    # dense loop except the sum owed before a weight reaches zero (one subtraction)
    gaps.assert_matches(w, w_ref, preds, p_ref, rtol=1e-10)


def test_subgradient_is_not_sparse():
    """The paper's finding: the subgradient step leaves weights near zero, not at zero."""
    stream = random_stream(1, n=2000, classification=True)
    params = _params(0.5, 1, 0.05)
    w, _, _ = run_lazy(minibatch.SUBGRADIENT, params, stream, LOGISTIC)
    w_tg, _, _ = run_lazy(truncated.SPEC, params, stream, LOGISTIC)
    touched = np.unique(stream.indices)
    assert np.count_nonzero(w[touched]) == touched.size
    assert np.count_nonzero(w_tg[touched]) < touched.size


@pytest.mark.parametrize("seed", range(3))
def test_batch_of_one_is_the_per_example_learner(seed):
    """B = 1 with unit importance is plain SGD and truncated gradient, to rounding."""
    stream = random_stream(seed, n=300, importance=False)
    for spec, lazy, g in [(minibatch.SGD, sgd.SPEC, 0.0), (minibatch.TG, truncated.SPEC, 0.03)]:
        params = _params(0.5, 1, g)
        w, p, _ = run_lazy(spec, params, stream, LOGISTIC)
        w1, p1, _ = run_lazy(lazy, params, stream, LOGISTIC)
        gaps.assert_matches(w, w1, p, p1, rtol=1e-12)


def test_every_example_is_scored_before_its_step():
    """One mini-batch over the whole stream: every prediction is made with w = 0."""
    stream = random_stream(4, n=64, classification=False)
    _, preds, _ = run_lazy(minibatch.SGD, _params(0.0, 1000), stream, SQUARED, chunks=4)
    ok = stream.status == 0
    expect = reference.Clip(SQUARED).run(stream.bases[ok], stream.labels[ok])
    np.testing.assert_array_equal(preds[ok], expect)
    assert np.isnan(preds[~ok]).all()


def test_resolve():
    assert resolve("sgd", 0.0, 0.0, 4) is minibatch.SGD
    assert resolve("sgd", 0.1, 0.0, 4) is minibatch.TG
    assert resolve("fobos", 0.1, 0.0, 4) is minibatch.TG
    assert resolve("tg", 0.1, 0.0, 4) is minibatch.TG
    assert resolve("subgrad", 0.1, 0.0, 1) is minibatch.SUBGRADIENT
    assert resolve("sgd", 0.0, 0.0, 1) is sgd.SPEC
    with pytest.raises(ValueError, match="--minibatch applies"):
        resolve("gd", 0.0, 0.0, 4)
    with pytest.raises(ValueError, match="--l2"):
        resolve("fobos", 0.1, 0.1, 4)


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "d.vw"
    p.write_text(text_data(1500))
    return p


@pytest.mark.parametrize(
    "algo",
    [["--algo", "sgd", "-l", "0.5", "--minibatch", "4"],
     ["--algo", "fobos", "--l1", "1e-3", "--minibatch", "4"],
     ["--algo", "tg", "--l1", "1e-3", "--period", "3", "--minibatch", "4"],
     ["--algo", "subgrad", "--l1", "1e-3", "--minibatch", "4"],
     ["--algo", "subgrad", "--l1", "1e-3"]],
)  # fmt: skip
def test_cli_model_and_exact_resume(tmp_path, data, algo):
    """A run split at a mini-batch boundary and continued equals one run, bit for bit."""
    m, m1, m2, rep = (tmp_path / n for n in ("m.sl", "m1.sl", "m2.sl", "r.json"))
    lines = data.read_text().splitlines(keepends=True)
    half, rest = tmp_path / "half.vw", tmp_path / "rest.vw"
    half.write_text("".join(lines[:700]))
    rest.write_text("".join(lines[700:]))
    both = [*algo, "--loss", "logistic", "--quiet"]
    r = invoke(["train", str(data), *both, "-f", str(m), "--report", str(rep)])
    assert r.exit_code == 0, r.output
    report = json.loads(rep.read_text())
    assert report["learner"] == resolve(algo[1], 1e-3 if "--l1" in algo else 0.0, 0.0,
                                        int(algo[-1]) if "--minibatch" in algo else 1).name
    assert invoke(["train", str(half), *both, "-f", str(m1)]).exit_code == 0
    r = invoke(["train", "-i", str(m1), str(rest), "--quiet", "-f", str(m2)])
    assert r.exit_code == 0, r.output
    a, b = model_io.load(m), model_io.load(m2)
    np.testing.assert_array_equal(a.slots, b.slots)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.gstate, b.gstate)
    assert not a.state[:, minibatch.ACC:].any()  # nothing pending in a saved model
    p = tmp_path / "p.txt"
    assert invoke(["predict", "-i", str(m), str(data), "-p", str(p), "--quiet"]).exit_code == 0
    assert invoke(["inspect", str(m)]).exit_code == 0


def test_pass_end_takes_the_partial_step(tmp_path, data):
    """1,500 examples in batches of 1,000: two steps per pass, the second over 500."""
    rep = tmp_path / "r.json"
    m = str(tmp_path / "m.sl")
    args = ["--algo", "sgd", "--minibatch", "1000", "--passes", "2", "--holdout-period", "0"]
    r = invoke(["train", str(data), *args, "--quiet", "-f", m, "--report", str(rep)])
    assert r.exit_code == 0, r.output
    g = model_io.load(tmp_path / "m.sl").gstate
    assert (g[G_T], g[G_N]) == (4.0, 3000.0)


@pytest.mark.parametrize(
    "args",
    [["--minibatch", "0"], ["--minibatch", "2"], ["--algo", "ftrl", "--minibatch", "2"],
     ["--algo", "fobos", "--l2", "0.1", "--minibatch", "2"], ["--algo", "subgrad", "--l2", "1"]],
)  # fmt: skip
def test_option_errors(data, args):
    r = invoke(["train", str(data), *args, "--quiet"])
    assert r.exit_code == 2, r.output
