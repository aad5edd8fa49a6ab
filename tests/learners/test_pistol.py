"""PiSTOL (VW's --pistol) equals its dense reference; resume; CLI."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.config import TrainConfig
from streamlearn.learners import pistol
from streamlearn.learners.base import make_params
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from tests import reference
from tests.learners.test_gd import close
from tests.streams import random_stream, resume_is_exact, run_lazy
from tests.unix import invoke, text_data


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize(("alpha", "beta"), [(1.0, 0.5), (0.5, 0.1), (2.0, 1.0)])
@pytest.mark.parametrize("seed", range(3))
def test_kernel_equals_dense_pistol(loss_id, alpha, beta, seed):
    stream = random_stream(seed, n=300, classification=loss_id != SQUARED)
    params = make_params(ftrl_alpha=alpha, ftrl_beta=beta)
    w, preds, _ = run_lazy(pistol.SPEC, params, stream, loss_id, chunks=1 + seed)
    w_ref, p_ref, _ = reference.pistol(stream, loss_id, alpha, beta)
    close(w, w_ref, preds, p_ref, rtol=1e-5)
    w64, p64, _ = reference.pistol(stream, loss_id, alpha, beta, dt=np.float64)
    close(w, w64, preds, p64, rtol=1e-3)


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC])
def test_resume_is_exact(loss_id):
    stream = random_stream(8, n=400, classification=loss_id == LOGISTIC)
    config = TrainConfig(algo="pistol", bits=6, loss="logistic" if loss_id else "squared")
    resume_is_exact(pistol.SPEC, config.params(), stream, loss_id, config)


def test_defaults_are_vws():
    c = TrainConfig(algo="pistol")
    assert (c.ftrl_alpha, c.ftrl_beta) == (1.0, 0.5)


def test_cli_pistol(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(text_data(1200))
    m = tmp_path / "m.sl"
    r = invoke(["train", str(data), "--pistol", "--ftrl_alpha", "0.5", "-f", str(m)])
    assert r.exit_code == 0, r.output
    model = model_io.load(m)
    assert model.learner == "pistol" and model.config.ftrl_alpha == 0.5
    assert model.config.ftrl_beta == 0.5
    assert invoke(["predict", "-i", str(m), str(data), "--quiet"]).exit_code == 0
