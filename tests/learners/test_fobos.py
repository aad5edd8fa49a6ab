"""Lazy FoBoS (ℓ1, ℓ2², elastic net; Lipton & Elkan eqs. 4, 15, 16) equals the dense update."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.learners import fobos, ledger, resolve, sgd, spec_by_name, truncated
from streamlearn.learners.base import S_HO_N, S_LOSS, S_WLAB, make_params
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from tests import gaps, reference
from tests.marks import slow_except
from tests.streams import random_stream, run_lazy

LOSSES = [SQUARED, LOGISTIC, HINGE]
ETA0 = {SQUARED: 0.01, LOGISTIC: 0.1, HINGE: 0.1}  # squared diverges at larger constant rates
STRENGTHS = [(0.02, 0.3), (0.02, 0.0), (0.0, 0.3)]  # enet, ℓ1, ℓ2²


@pytest.mark.parametrize("loss_id", LOSSES)
@pytest.mark.parametrize(("l1", "l2"), STRENGTHS)
@pytest.mark.parametrize("power_t", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("seed", range(4))
def test_lazy_equals_dense(loss_id, l1, l2, power_t, seed):
    stream = random_stream(seed + 100, n=400, classification=loss_id != SQUARED)
    eta0 = ETA0[loss_id]
    spec = fobos.resolve(l1, l2)
    params = make_params(learning_rate=eta0, power_t=power_t, l1=l1, l2=l2)
    w, preds, stats = run_lazy(spec, params, stream, loss_id)
    w_ref, p_ref = reference.elastic_net(stream, loss_id, eta0, power_t, 1.0, l1, l2, "fobos")
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
    spec = fobos.resolve(k1, k2)
    seed = 7 + int(10 * power_t)
    w = gaps.check_gap_case(spec, "fobos", power_t, eta0, k1, k2, LOGISTIC, seed)
    gaps.check_gap_outcome(w, k1, k2)


@pytest.mark.parametrize(("l1", "l2"), slow_except([(1e-3, 1e-2), (0.0, 1e-2)], 0, unpack=True))
def test_rebases_1e6(l1, l2):
    """η λ2 ≈ 10^-3 per step: P′ falls below 1e-100 about every 2.3·10^5 steps."""
    eta0 = 0.1
    spec = fobos.resolve(l1, l2)
    chunks = lambda: gaps.periodic_chunks(8, 10**6, chunk=250_000, period=100)  # noqa: E731
    params = make_params(learning_rate=eta0, power_t=0.0, l1=l1, l2=l2)
    w, preds, gstate = gaps.run_chunks(spec, params, chunks(), SQUARED)
    w_ref, p_ref, _ = gaps.dense_chunks(chunks(), SQUARED, eta0, 0.0, 1.0, l1, l2, "fobos")
    assert gstate[ledger.G_REBASES] >= 4
    assert np.count_nonzero(w_ref) >= 4
    gaps.assert_matches(w, w_ref, preds, p_ref)


@pytest.mark.slow
def test_rebases_1e7():
    """10^7 steps at η = 0.5/√(1+T), a feature row every ~1000: several rebases, exact."""
    eta0, l1, l2 = 0.5, 1e-5, 0.3
    chunks = lambda: gaps.periodic_chunks(9, 10**7, period=1000)  # noqa: E731
    params = make_params(learning_rate=eta0, power_t=0.5, l1=l1, l2=l2)
    w, preds, gstate = gaps.run_chunks(fobos.ENET, params, chunks(), SQUARED)
    assert np.isfinite(gstate).all() and np.isfinite(w).all()
    w_ref, p_ref, n = gaps.dense_chunks(chunks(), SQUARED, eta0, 0.5, 1.0, l1, l2, "fobos")
    assert n == 10**7 and gstate[ledger.G_REBASES] >= 3
    assert np.count_nonzero(w_ref) >= 4
    gaps.assert_matches(w, w_ref, preds, p_ref)


@pytest.mark.parametrize("loss_id", LOSSES)
@pytest.mark.parametrize("power_t", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("seed", range(2))
def test_l1_equals_truncated_gradient(loss_id, power_t, seed):
    """FoBoS ℓ1 is soft thresholding, i.e. truncated gradient with K = 1, θ = ∞."""
    stream = random_stream(seed, n=500, classification=loss_id != SQUARED)
    params = make_params(learning_rate=ETA0[loss_id], power_t=power_t, l1=0.05)
    w_tg, p_tg, _ = run_lazy(truncated.SPEC, params, stream, loss_id)
    w_fb, p_fb, _ = run_lazy(fobos.L1, params, stream, loss_id)
    assert np.count_nonzero(w_tg) < stream.d
    # tg keeps a plain running sum, ours is compensated: equal to 1e-12 of the scale
    np.testing.assert_allclose(w_fb, w_tg, rtol=1e-12, atol=1e-12 * np.abs(w_tg).max())
    np.testing.assert_allclose(p_fb, p_tg, rtol=1e-12, atol=1e-12 * np.nanmax(np.abs(p_tg)))


@pytest.mark.parametrize("spec", fobos.SPECS, ids=lambda s: s.name)
def test_holdout_and_predict_only_rows_do_not_learn(spec):
    """Held-out rows and ``learn = 0`` predict with current weights and leave them alone."""
    stream = random_stream(4, n=400)
    params = make_params(learning_rate=0.1, power_t=0.5, l1=0.01, l2=0.2, holdout_period=5)
    w, preds, stats = run_lazy(spec, params, stream, LOGISTIC)
    held = stream.slice(0, stream.n)
    usable = np.flatnonzero(held.status == 0)
    held.labels = held.labels.copy()
    held.labels[usable[4::5]] = np.nan  # the same rows, unlabeled instead of held out
    w_u, p_u, _ = run_lazy(spec, make_params(learning_rate=0.1, power_t=0.5, l1=0.01, l2=0.2),
                           held, LOGISTIC)
    assert stats[S_HO_N] == np.count_nonzero(~np.isnan(stream.labels[usable[4::5]]))
    np.testing.assert_array_equal(w, w_u)
    np.testing.assert_array_equal(preds, p_u)
    frozen = make_params(learning_rate=0.1, l1=0.01, l2=0.2, learn=False)
    w0, _, _ = run_lazy(spec, frozen, stream, LOGISTIC)
    assert not w0.any()


def test_resolve_and_names():
    assert fobos.resolve(0.1, 0.0) is fobos.L1
    assert fobos.resolve(0.0, 0.1) is fobos.L2
    assert fobos.resolve(0.1, 0.1) is fobos.ENET
    assert fobos.resolve(0.0, 0.0) is sgd.SPEC
    assert resolve("fobos", 0.1, 0.1) is fobos.ENET
    for spec in fobos.SPECS:
        assert spec_by_name(spec.name) is spec
        assert spec.ncols * 8 <= 24 and spec.fresh[0] == 0.0
        assert spec.new_table(3).shape == (8, spec.ncols)
    assert (fobos.L1.ncols, fobos.L2.ncols, fobos.ENET.ncols) == (2, 2, 3)
    with pytest.raises(ValueError):
        fobos.resolve(-1.0, 0.0)
