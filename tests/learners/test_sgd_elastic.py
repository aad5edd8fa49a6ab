"""Lazy SGD elastic net (Lipton & Elkan eq. 9) equals the dense update, step for step."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.learners import ledger, resolve, sgd_elastic, spec_by_name, truncated
from streamlearn.learners.base import S_LOSS, S_WLAB, make_params, new_rows, new_stats
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from streamlearn.run.runner import run_kernel
from tests import gaps, reference
from tests.marks import slow_except
from tests.streams import random_stream, run_lazy

SPEC = sgd_elastic.SPEC
LOSSES = [SQUARED, LOGISTIC, HINGE]
ETA0 = {SQUARED: 0.01, LOGISTIC: 0.1, HINGE: 0.1}  # squared diverges at larger constant rates
# (ℓ1, ℓ2²): elastic net, ℓ1 alone, ℓ2² alone
STRENGTHS = [(0.02, 0.3), (0.02, 0.0), (0.0, 0.3)]


@pytest.mark.parametrize("loss_id", LOSSES)
@pytest.mark.parametrize(("l1", "l2"), STRENGTHS)
@pytest.mark.parametrize("power_t", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("seed", range(4))
def test_lazy_equals_dense(loss_id, l1, l2, power_t, seed):
    stream = random_stream(seed, n=400, classification=loss_id != SQUARED)
    eta0 = ETA0[loss_id]
    params = make_params(learning_rate=eta0, power_t=power_t, l1=l1, l2=l2)
    w, preds, stats = run_lazy(SPEC, params, stream, loss_id)
    w_ref, p_ref = reference.elastic_net(stream, loss_id, eta0, power_t, 1.0, l1, l2, "sgd")
    if l1:
        assert np.count_nonzero(w_ref) < np.count_nonzero(np.bincount(stream.indices))
    gaps.assert_matches(w, w_ref, preds, p_ref)
    ok = (stream.status == 0) & ~np.isnan(stream.labels)
    pairs = zip(p_ref[ok], stream.labels[ok], strict=True)
    losses = [reference.loss_np(loss_id, p, y) for p, y in pairs]
    expect = np.dot(stream.weights[ok], losses) / stream.weights[ok].sum()
    assert stats[S_LOSS] / stats[S_WLAB] == pytest.approx(expect, rel=1e-10)


@pytest.mark.parametrize(("power_t", "eta0"), gaps.GAP_RATES)
@pytest.mark.parametrize(
    ("k1", "k2"),
    slow_except([gaps.MILD, gaps.STRONG, (gaps.MILD[0], 0.0), (0.0, gaps.MILD[1])], 0, 1,
                unpack=True),
)
def test_long_gaps(power_t, eta0, k1, k2):
    """Slots come back after 1, 10, 10^4 and 10^6 steps (see tests.gaps.gap_stream)."""
    w = gaps.check_gap_case(SPEC, "sgd", power_t, eta0, k1, k2, SQUARED, seed=int(10 * power_t))
    gaps.check_gap_outcome(w, k1, k2)


def test_rebases_1e6():
    """η λ2 = 10^-3 per step: P falls below 1e-100 about every 2.3·10^5 steps."""
    eta0, l1, l2 = 0.1, 1e-3, 1e-2
    chunks = lambda: gaps.periodic_chunks(5, 10**6, chunk=250_000, period=100)  # noqa: E731
    params = make_params(learning_rate=eta0, power_t=0.0, l1=l1, l2=l2)
    w, preds, gstate = gaps.run_chunks(SPEC, params, chunks(), SQUARED)
    w_ref, p_ref, _ = gaps.dense_chunks(chunks(), SQUARED, eta0, 0.0, 1.0, l1, l2, "sgd")
    assert gstate[ledger.G_REBASES] >= 4
    assert np.count_nonzero(w_ref) >= 4
    gaps.assert_matches(w, w_ref, preds, p_ref)


@pytest.mark.slow
def test_rebases_1e7():
    """10^7 steps, one feature row every ~1000; several rebases; finite and exact."""
    eta0, l1, l2 = 0.05, 2e-4, 2e-3
    chunks = lambda: gaps.periodic_chunks(6, 10**7, period=1000)  # noqa: E731
    params = make_params(learning_rate=eta0, power_t=0.0, l1=l1, l2=l2)
    w, preds, gstate = gaps.run_chunks(SPEC, params, chunks(), SQUARED)
    assert np.isfinite(gstate).all() and np.isfinite(w).all()
    w_ref, p_ref, n = gaps.dense_chunks(chunks(), SQUARED, eta0, 0.0, 1.0, l1, l2, "sgd")
    assert n == 10**7 and gstate[ledger.G_REBASES] >= 3
    gaps.assert_matches(w, w_ref, preds, p_ref)


@pytest.mark.parametrize("loss_id", LOSSES)
@pytest.mark.parametrize("power_t", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("seed", range(3))
def test_l1_only_equals_truncated_gradient(loss_id, power_t, seed):
    """``--algo sgd --l1 x --l2 0`` runs tg with K = 1, θ = ∞: same numbers as l2 = 0 here."""
    assert resolve("sgd", 0.05, 0.0) is truncated.SPEC
    stream = random_stream(seed, n=500, classification=loss_id != SQUARED)
    params = make_params(learning_rate=ETA0[loss_id], power_t=power_t, l1=0.05, l2=0.0)
    w_tg, p_tg, _ = run_lazy(truncated.SPEC, params, stream, loss_id)
    w_en, p_en, _ = run_lazy(SPEC, params, stream, loss_id)
    assert np.count_nonzero(w_tg) < stream.d
    # tg keeps a plain running sum, ours is compensated: equal to 1e-12 of the scale
    np.testing.assert_allclose(w_en, w_tg, rtol=1e-12, atol=1e-12 * np.abs(w_tg).max())
    np.testing.assert_allclose(p_en, p_tg, rtol=1e-12, atol=1e-12 * np.nanmax(np.abs(p_tg)))


@pytest.mark.parametrize("power_t", [0.0, 1.0])
def test_step_beyond_one_wipes_every_weight(power_t):
    """η λ2 ≥ 1 makes 1 − η λ2 ≤ 0: eq. 9 sends every weight to 0 (early steps only at 1/t)."""
    stream = random_stream(3, n=300)
    eta0, l1, l2 = 0.5, 0.01, 6.0
    params = make_params(learning_rate=eta0, power_t=power_t, l1=l1, l2=l2)
    w, preds, _ = run_lazy(SPEC, params, stream, LOGISTIC)
    w_ref, p_ref = reference.elastic_net(stream, LOGISTIC, eta0, power_t, 1.0, l1, l2, "sgd")
    gaps.assert_matches(w, w_ref, preds, p_ref)
    assert (np.count_nonzero(w_ref) == 0) == (power_t == 0.0)


def test_rebase_and_current_weights_change_nothing():
    stream = random_stream(11, n=600)
    params = make_params(learning_rate=0.1, power_t=0.5, l1=0.01, l2=0.3)
    w_ref, p_ref, _ = run_lazy(SPEC, params, stream, LOGISTIC, chunks=1)
    table = SPEC.new_table(6)
    gstate = SPEC.init_gstate(params)
    stats, rows, preds = new_stats(), new_rows(), np.empty(stream.n)
    slots = np.arange(stream.d, dtype=np.uint32)
    for a, b in [(0, 200), (200, 201), (201, 600)]:
        s = stream.slice(a, b)
        preds[a:b] = run_kernel(SPEC.train_batch, table, gstate, params, LOGISTIC, s, stats, rows)
        before = table.copy()
        w1 = np.empty(stream.d)
        SPEC.current_weights(table, gstate, params, slots, w1)
        np.testing.assert_array_equal(table, before)
        SPEC.rebase(table, gstate, params)
        assert gstate[ledger.G_P] == 1.0 and gstate[ledger.G_B] == 0.0
        np.testing.assert_array_equal(table[:, 0], w1)
    w = np.empty(stream.d)
    SPEC.current_weights(table, gstate, params, slots, w)
    np.testing.assert_allclose(w, w_ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(preds, p_ref, rtol=1e-12, atol=1e-15)


def test_paper_eq10_as_printed_is_not_eq9():
    """Compose n steps of eq. 9 by iteration; our B = Σ η/P(τ) matches, the printed
    B = Σ η/P(τ−1) matches max(0, (1 − η λ2)(|w| − η λ1)) instead."""
    etas = 0.3 / np.sqrt(1.0 + np.arange(50))
    l1, l2, w0 = 0.01, 0.5, 2.0
    a = 1.0 - etas * l2
    P = np.cumprod(a)
    P_prev = np.concatenate([[1.0], P[:-1]])
    ours = w0 * P[-1] - l1 * P[-1] * np.sum(etas / P)
    printed = w0 * P[-1] - l1 * P[-1] * np.sum(etas / P_prev)
    eq9, other = w0, w0
    for eta, f in zip(etas, a, strict=True):
        eq9 = max(0.0, f * eq9 - eta * l1)
        other = max(0.0, f * (other - eta * l1))
    assert ours == pytest.approx(eq9, rel=1e-13)
    assert printed == pytest.approx(other, rel=1e-13)
    assert abs(printed - eq9) > 1e-6  # Σ η² λ1 λ2 ≈ 2e-5 here


def test_registry():
    assert resolve("sgd", 0.1, 0.2) is SPEC and resolve("sgd", 0.0, 0.2) is SPEC
    assert spec_by_name("sgd_elastic") is SPEC
    assert SPEC.ncols == 3 and SPEC.fresh == (0.0, 0.0, 0.0)
    table = SPEC.new_table(4)
    assert table.shape == (16, 3) and table.dtype == np.float64
