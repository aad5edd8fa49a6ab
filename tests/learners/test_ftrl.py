"""FTRL-proximal equals McMahan et al.'s Algorithm 1; exact sparsity; untouched slots; models."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.learners import ftrl
from streamlearn.learners.base import make_params, new_rows, new_stats
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from streamlearn.run.runner import run_kernel
from tests import reference
from tests.learners.test_gd import close
from tests.streams import Stream, random_stream, run_lazy
from tests.unix import invoke, text_data

CASES = [  # alpha, beta, l1, l2
    (0.5, 1.0, 0.0, 0.0),
    (0.5, 1.0, 0.5, 0.0),
    (0.5, 1.0, 0.0, 1.0),
    (0.1, 0.5, 0.2, 0.3),
    (2.0, 0.0, 1.0, 0.0),
]


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize(("alpha", "beta", "l1", "l2"), CASES)
@pytest.mark.parametrize("seed", range(2))
def test_kernel_equals_algorithm_1(loss_id, alpha, beta, l1, l2, seed):
    stream = random_stream(seed, n=300, classification=loss_id != SQUARED)
    params = make_params(ftrl_alpha=alpha, ftrl_beta=beta, l1=l1, l2=l2)
    w, preds, _ = run_lazy(ftrl.SPEC, params, stream, loss_id, chunks=1 + seed)
    w_ref, p_ref, _, _ = reference.ftrl(stream, loss_id, alpha, beta, l1, l2)
    close(w, w_ref, preds, p_ref, rtol=1e-5)
    w64, p64, _, _ = reference.ftrl(stream, loss_id, alpha, beta, l1, l2, dt=np.float64)
    close(w, w64, preds, p64, rtol=1e-4)  # single precision computes the double-precision math
    np.testing.assert_array_equal(w == 0.0, w_ref == 0.0)  # the same weights are exactly 0
    if l1 > 0:
        touched = np.isin(np.arange(stream.d), stream.indices)
        assert np.count_nonzero(touched & (w == 0.0)) > 0


def test_l1_zeros_are_exact_and_their_state_is_kept():
    """|z| <= l1 gives w = 0 exactly; z and n of such slots are saved (resume is exact)."""
    from streamlearn.config import TrainConfig

    stream = random_stream(3, n=400, bits=8)
    config = TrainConfig(algo="ftrl", loss="logistic", bits=8, l1=0.5)
    params = config.params()
    table = ftrl.SPEC.new_table(8)
    gstate = ftrl.SPEC.init_gstate(params)
    run_kernel(ftrl.SPEC.train_batch, table, gstate, params, LOGISTIC, stream, new_stats(),
               new_rows())  # fmt: skip
    zero_w = (table[:, 0] == 0.0) & (table[:, 2] != 0.0)
    assert zero_w.sum() > 10 and np.all(np.abs(table[zero_w, 1]) <= np.float32(0.5))
    m = model_io.from_training(config, ftrl.SPEC, table, gstate, new_stats(), params)
    assert m.slots.size == np.count_nonzero(table[:, 2]) > m.nnz
    np.testing.assert_array_equal(m.table(ftrl.SPEC.fresh), table)


def test_weight_seen_once_then_untouched_for_a_million_examples():
    params = make_params(l1=0.1, l2=0.1)
    table = ftrl.SPEC.new_table(2)
    gstate = ftrl.SPEC.init_gstate(params)
    one = Stream(np.array([0, 1]), np.array([1], dtype=np.uint32), np.array([3.0]),
                 np.array([1.0]), np.ones(1), np.zeros(1), np.zeros(1, dtype=np.int32), 4)
    run_kernel(ftrl.SPEC.train_batch, table, gstate, params, LOGISTIC, one, new_stats(),
               new_rows())  # fmt: skip
    row = table[1].copy()
    assert row[0] != 0.0
    n = 10**6
    rng = np.random.default_rng(0)
    gap = Stream(np.arange(n + 1), np.full(n, 2, dtype=np.uint32), rng.uniform(0.5, 2.0, n),
                 rng.choice([-1.0, 1.0], n), np.ones(n), np.zeros(n), np.zeros(n, dtype=np.int32),
                 4)  # fmt: skip
    run_kernel(ftrl.SPEC.train_batch, table, gstate, params, LOGISTIC, gap, new_stats(),
               new_rows())  # fmt: skip
    np.testing.assert_array_equal(table[1], row)
    tail = Stream(np.array([0, 1]), np.array([1], dtype=np.uint32), np.array([2.0]),
                  np.array([np.nan]), np.ones(1), np.zeros(1), np.zeros(1, dtype=np.int32), 4)
    p = run_kernel(ftrl.SPEC.train_batch, table, gstate, params, LOGISTIC, tail, new_stats(),
                   new_rows())  # fmt: skip
    assert p[0] == np.float32(np.float32(row[0]) * np.float32(2.0))


def test_cli_ftrl_sparsity_predict_and_readable(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(text_data(1500))
    out = {}
    for name, args in {"dense": [], "sparse": ["--l1", "2"]}.items():
        m, rep, rd = tmp_path / f"{name}.sl", tmp_path / f"{name}.json", tmp_path / f"{name}.txt"
        r = invoke(["train", str(data), "--algo", "ftrl", "--loss", "logistic", *args, "-f", str(m),
                    "--report", str(rep), "--readable-model", str(rd), "--quiet"])  # fmt: skip
        assert r.exit_code == 0, r.output
        out[name] = json.loads(rep.read_text())
        model = model_io.load(m)
        assert model.learner == "ftrl" and out[name]["nonzero_weights"] == model.nnz
        rows = [ln for ln in rd.read_text().splitlines() if not ln.startswith("#")]
        assert len(rows) == model.nnz
        p = tmp_path / f"{name}.p"
        assert invoke(["predict", "-i", str(m), str(data), "-p", str(p), "--quiet"]).exit_code == 0
        assert np.loadtxt(p, usecols=0).shape == (1500,)
    assert out["sparse"]["nonzero_weights"] < out["dense"]["nonzero_weights"] / 3
