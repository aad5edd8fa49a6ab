"""Coin betting (VW's --coin) equals its dense reference; resume; unlabeled rows; CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.config import TrainConfig
from streamlearn.learners import coin
from streamlearn.learners.base import make_params
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from tests import reference
from tests.learners.test_gd import close
from tests.streams import random_stream, resume_is_exact, run_lazy
from tests.unix import invoke, text_data


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize(("alpha", "beta"), [(4.0, 1.0), (1.0, 0.5), (10.0, 2.0)])
@pytest.mark.parametrize("seed", range(3))
def test_kernel_equals_dense_coin_betting(loss_id, alpha, beta, seed):
    stream = random_stream(seed, n=300, classification=loss_id != SQUARED)
    params = make_params(ftrl_alpha=alpha, ftrl_beta=beta)
    w, preds, _ = run_lazy(coin.SPEC, params, stream, loss_id, chunks=1 + seed)
    w_ref, p_ref, _ = reference.coin(stream, loss_id, alpha, beta)
    close(w, w_ref, preds, p_ref, rtol=1e-5)
    w64, p64, _ = reference.coin(stream, loss_id, alpha, beta, dt=np.float64)
    close(w, w64, preds, p64, rtol=1e-3)  # single precision computes the double-precision math


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC])
def test_resume_is_exact(loss_id):
    stream = random_stream(7, n=400, classification=loss_id == LOGISTIC)
    config = TrainConfig(algo="coin", bits=6, loss="logistic" if loss_id else "squared")
    resume_is_exact(coin.SPEC, config.params(), stream, loss_id, config)


def test_defaults_are_vws():
    c = TrainConfig(algo="coin")
    assert (c.ftrl_alpha, c.ftrl_beta) == (4.0, 1.0)


def test_cli_coin_trains_saves_predicts(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(text_data(1200))
    m, rep = tmp_path / "m.sl", tmp_path / "r.json"
    r = invoke(["train", str(data), "--coin", "--loss", "logistic", "-f", str(m),
                "--report", str(rep)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "coin" in r.output and "ftrl_alpha = 4" in r.output
    model = model_io.load(m)
    assert model.learner == "coin" and model.state.shape[1] == 6
    report = json.loads(rep.read_text())
    assert report["learner"] == "coin" and 0 < report["average_loss"] < 1.0
    p = tmp_path / "p.txt"
    assert invoke(["predict", "-i", str(m), str(data), "-p", str(p), "--quiet"]).exit_code == 0
    # sl predict scores with the stored weights, as VW's -t
    assert np.loadtxt(p, usecols=0).shape == (1200,)
    assert invoke(["train", str(data), "--algo", "coin", "--l1", "1e-3"]).exit_code == 2
    r = invoke(["train", str(data), "--coin", "--sgd"])
    assert r.exit_code == 2 and "conflicts" in r.output
