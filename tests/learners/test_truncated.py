"""Lazy truncated gradient equals the paper's dense update, step for step."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.learners import sgd, truncated
from streamlearn.learners.base import S_LOSS, S_WLAB, make_params
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from tests import gaps, reference
from tests.streams import random_stream, run_lazy

CASES = [
    # (K, theta, power_t)
    (1, np.inf, 0.0),
    (1, np.inf, 0.5),
    (10, np.inf, 0.5),
    (10, 0.05, 1.0),
    (1, 0.05, 0.0),
    (10, 0.05, 0.5),
]


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize(("K", "theta", "power_t"), CASES)
@pytest.mark.parametrize("seed", range(4))
def test_lazy_equals_dense(loss_id, K, theta, power_t, seed):
    stream = random_stream(seed, n=400, classification=loss_id != SQUARED)
    eta0, t0, g = 0.1, 1.0, 0.02
    params = make_params(
        learning_rate=eta0, power_t=power_t, initial_t=t0, l1=g, theta=theta, period=K
    )
    w, preds, stats = run_lazy(truncated.SPEC, params, stream, loss_id)
    w_ref, p_ref = reference.truncated_gradient(stream, loss_id, eta0, power_t, t0, g, theta, K)
    assert np.count_nonzero(w_ref) < stream.d  # truncation did something
    # squared loss at a constant rate of 0.1 oscillates (weights up to ~20): rounding
    # differences grow to ~1e-13 absolute, so the floor is relative to the largest weight
    gaps.assert_matches(w, w_ref, preds, p_ref, rtol=1e-12)
    # progressive loss = mean of per-example losses of the predictions made before learning
    ok = (stream.status == 0) & ~np.isnan(stream.labels)
    losses = [
        reference.loss_np(loss_id, p, y) for p, y in zip(p_ref[ok], stream.labels[ok], strict=True)
    ]
    expect = np.dot(stream.weights[ok], losses) / stream.weights[ok].sum()
    assert stats[S_LOSS] / stats[S_WLAB] == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("power_t", [0.0, 0.5])
def test_sgd_equals_tg_without_gravity(seed, power_t):
    stream = random_stream(seed, n=300)
    params = make_params(learning_rate=0.2, power_t=power_t, l1=0.0)
    w_tg, p_tg, _ = run_lazy(truncated.SPEC, params, stream, LOGISTIC)
    w_sgd, p_sgd, _ = run_lazy(sgd.SPEC, params, stream, LOGISTIC)
    np.testing.assert_array_equal(w_tg, w_sgd)
    np.testing.assert_array_equal(p_tg, p_sgd)


def test_gravity_sparsifies():
    stream = random_stream(7, n=2000, bits=8)
    dens = []
    for g in [0.0, 0.01, 0.05, 0.2]:
        params = make_params(learning_rate=0.1, power_t=0.5, l1=g)
        w, _, _ = run_lazy(truncated.SPEC, params, stream, LOGISTIC)
        dens.append(np.count_nonzero(w))
    assert dens == sorted(dens, reverse=True) and dens[-1] < dens[0] / 2
