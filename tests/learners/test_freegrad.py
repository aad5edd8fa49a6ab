"""FreeGrad (VW's --freegrad, with its options) equals its dense reference; resume; CLI."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.config import ConfigError, TrainConfig
from streamlearn.learners import freegrad
from streamlearn.learners.base import make_params
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from tests import reference
from tests.learners.test_gd import close
from tests.streams import random_stream, resume_is_exact, run_lazy
from tests.unix import invoke, text_data

OPTIONS = [  # epsilon, lipschitz, restart, project, radius
    (1.0, 0.0, False, False, None),
    (0.5, 0.0, True, False, None),
    (1.0, 1.0, False, False, None),
    (1.0, 0.0, False, True, None),
    (2.0, 0.0, True, True, 0.3),
]


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize("opts", OPTIONS)
@pytest.mark.parametrize("seed", range(3))
def test_kernel_equals_dense_freegrad(loss_id, opts, seed):
    eps, lip, restart, project, radius = opts
    if lip and loss_id == SQUARED:
        pytest.skip("a Lipschitz bound is for bounded gradients (squared loss has none)")
    stream = weighted_from_one(random_stream(seed, n=300, classification=loss_id != SQUARED))
    if lip:  # features in [-1, 1]: |ℓ'| |x| <= 1 = L for logistic and hinge loss
        np.clip(stream.values, -1.0, 1.0, out=stream.values)
    params = make_params(freegrad_epsilon=eps, freegrad_lipschitz=lip, freegrad_restart=restart,
                         freegrad_project=project, freegrad_radius=radius)  # fmt: skip
    w, preds, _ = run_lazy(freegrad.SPEC, params, stream, loss_id, chunks=1 + seed)
    kw = dict(epsilon=eps, lipschitz=lip, restart=restart, project=project, radius=radius)
    w_ref, p_ref, _ = reference.freegrad(stream, loss_id, **kw)
    # with a Lipschitz hint, a slot whose first gradient is tiny (1e-22: a margin of 50)
    # gets V ~ 1e-43 and an infinite weight, in both
    np.testing.assert_array_equal(w, np.where(np.isfinite(w_ref), w, w_ref))
    finite = np.isfinite(w_ref)
    close(np.where(finite, w, 0.0), np.where(finite, w_ref, 0.0), preds, p_ref, rtol=1e-5)
    if finite.all():
        w64, p64, _ = reference.freegrad(stream, loss_id, dt=np.float64, **kw)
        close(w, w64, preds, p64, rtol=1e-3)


def weighted_from_one(stream):
    """Importance weights of at least 1: FreeGrad adds (a - 1) g^2 to its sum of squares,
    which a weight below 1 can turn negative (VW then predicts NaN; see docs/algorithms.md)."""
    stream.weights[stream.weights < 1.0] = 3.0
    return stream


@pytest.mark.parametrize("opts", [OPTIONS[0], OPTIONS[4]])
def test_resume_is_exact(opts):
    eps, lip, restart, project, radius = opts
    stream = weighted_from_one(random_stream(9, n=400))
    config = TrainConfig(algo="freegrad", bits=6, loss="logistic", freegrad_epsilon=eps,
                         freegrad_restart=restart, freegrad_project=project,
                         freegrad_radius=radius)  # fmt: skip
    resume_is_exact(freegrad.SPEC, config.params(), stream, LOGISTIC, config)


def test_options_apply_to_freegrad_only():
    with pytest.raises(ConfigError, match="--restart applies to --algo freegrad"):
        TrainConfig(algo="gd", freegrad_restart=True)
    with pytest.raises(ConfigError, match="without --project"):
        TrainConfig(algo="freegrad", freegrad_radius=1.0)
    c = TrainConfig(algo="freegrad")
    assert (c.freegrad_epsilon, c.freegrad_lipschitz) == (1.0, 0.0)


def test_cli_freegrad_options(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(text_data(1200))
    m = tmp_path / "m.sl"
    r = invoke(["train", str(data), "--freegrad", "--restart", "--project", "--radius", "2",
                "--fepsilon", "0.5", "--flipschitz_const", "1", "-f", str(m), "--quiet"])
    assert r.exit_code == 0, r.output
    c = model_io.load(m).config
    assert (c.algo, c.freegrad_restart, c.freegrad_project, c.freegrad_radius) == (
        "freegrad", True, True, 2.0)
    assert (c.freegrad_epsilon, c.freegrad_lipschitz) == (0.5, 1.0)
    r = invoke(["train", str(data), "--restart", "--quiet"])
    assert r.exit_code == 2 and "--restart applies to --algo freegrad" in r.output
