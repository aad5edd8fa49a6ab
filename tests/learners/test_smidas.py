"""Lazy SMIDAS equals Algorithm 3 of Shalev-Shwartz & Tewari (dense, numpy), step for step.

Tolerances are relative: a vector is compared element-wise with ``rtol`` and
an absolute floor of ``rtol`` times its largest element (predictions that
cancel to ~0 have no relative accuracy to speak of, in either implementation).
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from streamlearn.learners import smidas, truncated
from streamlearn.learners.base import (
    P_P,
    S_LOSS,
    S_WLAB,
    make_params,
    new_rows,
    new_stats,
)
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from streamlearn.run.runner import run_kernel
from tests import reference
from tests.marks import slow_except
from tests.streams import Stream, random_stream, run_lazy

RTOL = 1e-9


def close(actual: np.ndarray, expected: np.ndarray, rtol: float = RTOL) -> None:
    ok = ~np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(actual), ~ok)
    scale = float(np.max(np.abs(expected[ok]), initial=0.0))
    np.testing.assert_allclose(actual[ok], expected[ok], rtol=rtol, atol=rtol * scale)


def objective(stream: Stream, w: np.ndarray, loss_id: int, lam: float) -> float:
    """Average (importance-weighted) loss of ``w`` over the labeled rows + λ‖w‖₁."""
    total = wsum = 0.0
    for i in range(stream.n):
        y = stream.labels[i]
        if stream.status[i] != 0 or np.isnan(y):
            continue
        idx, val = stream.row(i)
        p = stream.bases[i] + float(np.dot(w[idx], val))
        total += stream.weights[i] * reference.loss_np(loss_id, p, y)
        wsum += stream.weights[i]
    return total / wsum + lam * float(np.abs(w).sum())


def progressive_loss(stream: Stream, preds: np.ndarray, loss_id: int) -> float:
    """Importance-weighted average loss of the predictions made before learning."""
    ok = (stream.status == 0) & ~np.isnan(stream.labels)
    pairs = zip(preds[ok], stream.labels[ok], strict=True)
    losses = [reference.loss_np(loss_id, q, y) for q, y in pairs]
    return float(np.dot(stream.weights[ok], losses) / stream.weights[ok].sum())


def compact(stream: Stream, bits: int) -> tuple[Stream, Stream]:
    """The stream spread over 2**bits slots, and the same stream on its used slots only.

    Slots never touched keep θ = 0 and add nothing to ‖θ‖_p, so the dense
    algorithm on the compact stream (with the big table's p) is the big one.
    """
    rng = np.random.default_rng(bits)
    used = np.unique(stream.indices)
    spread = np.sort(rng.choice(1 << bits, size=used.size, replace=False)).astype(np.uint32)
    big = Stream(**{**stream.__dict__, "indices": spread[np.searchsorted(used, stream.indices)]})
    big.d = 1 << bits
    small = Stream(
        **{**stream.__dict__, "indices": np.searchsorted(used, stream.indices).astype(np.uint32)}
    )
    small.d = used.size
    return big, small


def table_after(spec, params, stream, loss_id):
    """(table, gstate) after training ``stream`` in one batch."""
    table = spec.new_table(int(np.log2(stream.d)))
    gstate = spec.init_gstate(params)
    run_kernel(spec.train_batch, table, gstate, params, loss_id, stream, new_stats(), new_rows())
    return table, gstate


def weights_of(table, gstate, params):
    w = np.empty(table.shape[0])
    smidas.current_weights(table, gstate, params, np.arange(table.shape[0], dtype=np.uint32), w)
    return w


# ---- lazy equals dense ---------------------------------------------------------------


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize("power_t", [0.0, 0.5])
@pytest.mark.parametrize("p", [smidas.default_p(6), smidas.default_p(30), 3.0])
@pytest.mark.parametrize("seed", range(3))
def test_lazy_equals_dense_with_exact_norm(loss_id, power_t, p, seed):
    stream = random_stream(seed, n=400, classification=loss_id != SQUARED)
    eta0, t0, lam = 0.1, 1.0, 0.02
    params = make_params(
        learning_rate=eta0, power_t=power_t, initial_t=t0, l1=lam, p=p, norm_refresh=1
    )
    w, preds, stats = run_lazy(smidas.SPEC, params, stream, loss_id)
    w_ref, p_ref, _ = reference.smidas(stream, loss_id, eta0, power_t, t0, lam, p)
    assert 0 < np.count_nonzero(w_ref) < stream.d  # truncation did something, w is not 0
    close(w, w_ref)
    close(preds, p_ref)
    assert stats[S_LOSS] / stats[S_WLAB] == pytest.approx(
        progressive_loss(stream, p_ref, loss_id), rel=RTOL
    )


@pytest.mark.parametrize("p", [smidas.default_p(6), smidas.default_p(30)])
@pytest.mark.parametrize("seed", range(3))
def test_running_norm_is_exact_without_truncation(p, seed):
    """λ = 0: nothing is owed lazily, so the running N (never refreshed) is exact.

    Exercises the double-double sum and its guards: with p ≈ 42 the dominant
    term often crosses zero and cancels the sum.
    """
    stream = random_stream(seed, n=600, classification=True)
    params = make_params(learning_rate=0.3, power_t=0.5, l1=0.0, p=p, norm_refresh=0)
    w, preds, _ = run_lazy(smidas.SPEC, params, stream, LOGISTIC)
    w_ref, p_ref, _ = reference.smidas(stream, LOGISTIC, 0.3, 0.5, 1.0, 0.0, p)
    close(w, w_ref)
    close(preds, p_ref)


@pytest.mark.parametrize("seed", range(3))
def test_running_norm_is_exact_when_every_slot_is_touched(seed):
    """Rows touching every slot leave nothing stale: exact with λ > 0 and no refresh."""
    rng = np.random.default_rng(seed)
    n, d = 300, 16
    x = rng.choice([-1.0, 1.0], size=(n, d))
    stream = Stream(
        indptr=np.arange(n + 1, dtype=np.int64) * d,
        indices=np.tile(np.arange(d, dtype=np.uint32), n),
        values=x.ravel(),
        labels=np.sign(x[:, 0] + 0.5 * x[:, 1] + 0.1),
        weights=np.ones(n),
        bases=np.zeros(n),
        status=np.zeros(n, dtype=np.int32),
        d=d,
    )
    p = smidas.default_p(4)
    params = make_params(learning_rate=0.05, power_t=0.0, l1=0.3, p=p, norm_refresh=0)
    w, preds, _ = run_lazy(smidas.SPEC, params, stream, HINGE)
    w_ref, p_ref, _ = reference.smidas(stream, HINGE, 0.05, 0.0, 1.0, 0.3, p)
    assert 0 < np.count_nonzero(w_ref) < d
    close(w, w_ref)
    close(preds, p_ref)


def planted(stream: Stream, seed: int, classification: bool) -> Stream:
    """The stream's rows labeled by a sparse linear model (labels stay NaN where they were)."""
    rng = np.random.default_rng(seed)
    w_star = np.where(rng.random(stream.d) < 0.1, rng.normal(size=stream.d), 0.0)
    margin = np.add.reduceat(w_star[stream.indices] * stream.values, stream.indptr[:-1])
    margin += rng.normal(size=stream.n) * 0.3
    labels = np.where(margin > 0, 1.0, -1.0) if classification else margin
    labels = np.where(np.isnan(stream.labels), np.nan, labels)
    return Stream(**{**stream.__dict__, "labels": labels})


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize("power_t", [0.0, 0.5])
@pytest.mark.parametrize("labels", ["random", "planted"])
@pytest.mark.parametrize("seed", slow_except(range(3), 0))
def test_default_refresh_objective_within_one_percent(loss_id, power_t, labels, seed):
    """The running norm over-counts untouched slots; its effect on the objective is small."""
    classification = loss_id != SQUARED
    stream = random_stream(seed, n=4000, bits=8, classification=classification)
    if labels == "planted":
        stream = planted(stream, seed, classification)
    eta0 = 0.05 if classification else 0.01  # squared: larger constant rates diverge
    lam, p = 0.005, smidas.default_p(8)
    params = make_params(
        learning_rate=eta0, power_t=power_t, l1=lam, p=p,
        norm_refresh=smidas.DEFAULT_NORM_REFRESH,
    )
    assert smidas.DEFAULT_NORM_REFRESH > stream.n  # only the guards refresh here
    w, _, stats = run_lazy(smidas.SPEC, params, stream, loss_id)
    w_ref, p_ref, _ = reference.smidas(stream, loss_id, eta0, power_t, 1.0, lam, p)
    assert np.count_nonzero(w_ref) > 0
    assert objective(stream, w, loss_id, lam) == pytest.approx(
        objective(stream, w_ref, loss_id, lam), rel=0.01
    )
    assert stats[S_LOSS] / stats[S_WLAB] == pytest.approx(
        progressive_loss(stream, p_ref, loss_id), rel=0.01
    )


@pytest.mark.parametrize("norm_refresh", [0, 1, 7, smidas.DEFAULT_NORM_REFRESH])
@pytest.mark.parametrize("power_t", [0.0, 0.5])
@pytest.mark.parametrize("seed", range(3))
def test_p2_is_truncated_gradient(norm_refresh, power_t, seed):
    """p = 2: f⁻¹ is the identity, Algorithm 3 is tg with K = 1, θ = ∞, gravity λ."""
    stream = random_stream(seed, n=500)
    params = make_params(
        learning_rate=0.2, power_t=power_t, l1=0.01, period=1, theta=np.inf, p=2.0,
        norm_refresh=norm_refresh,
    )
    w, preds, _ = run_lazy(smidas.SPEC, params, stream, LOGISTIC)
    w_tg, p_tg, _ = run_lazy(truncated.SPEC, params, stream, LOGISTIC)
    assert 0 < np.count_nonzero(w_tg) < stream.d
    np.testing.assert_array_equal(w == 0, w_tg == 0)
    # refreshes reset S, so the owed truncation is summed in another order: 1 ulp per step
    close(w, w_tg, rtol=1e-12)
    close(preds, p_tg, rtol=1e-12)


# ---- numerics for every table size ------------------------------------------------------


@pytest.mark.parametrize("bits", [1, 2, 18])
def test_table_sizes(bits):
    """b = 1, 2 on their own table; b = 18 against the dense algorithm on the used slots."""
    base = random_stream(bits, n=600, bits=min(bits, 6))
    big, small = compact(base, bits) if bits > 6 else (base, base)
    p = smidas.default_p(bits)
    assert p == (2.0 if bits == 1 else 2.0 * bits * np.log(2.0))
    for refresh in (1, smidas.DEFAULT_NORM_REFRESH):
        params = make_params(learning_rate=0.1, power_t=0.5, l1=0.01, p=p, norm_refresh=refresh)
        w, preds, _ = run_lazy(smidas.SPEC, params, big, LOGISTIC)
        w_ref, p_ref, _ = reference.smidas(small, LOGISTIC, 0.1, 0.5, 1.0, 0.01, p)
        assert np.all(np.isfinite(w)) and np.count_nonzero(w) > 0
        if refresh == 1:
            used = np.unique(big.indices)
            close(w[used], w_ref)
            assert np.count_nonzero(w) == np.count_nonzero(w_ref)
            close(preds, p_ref)


@pytest.mark.parametrize("scale", [1e-150, 1e-30, 1e30, 1e150])
@pytest.mark.parametrize("loss_id", [HINGE, SQUARED])
def test_extreme_scales_b30(scale, loss_id):
    """p = 2 ln 2^30 ≈ 41.6 with θ near 1e±150: raw |θ|^p would be 0 or inf.

    A 2^30 table is 16 GiB, but slots that are never touched add nothing to
    ‖θ‖_p: a 64-slot table with b = 30's p is the same algorithm.
    """
    stream = random_stream(5, n=400, classification=loss_id != SQUARED)
    stream.bases = stream.bases * scale
    p = smidas.default_p(30)
    if loss_id == HINGE:  # ∂ℓ = −y: θ and the truncation scale with η
        eta0, lam = 0.1 * scale, 0.01
    else:  # ∂ℓ scales with the labels: θ scales, and so must λ
        stream.labels = stream.labels * scale
        eta0, lam = 0.01, 0.01 * scale
    for refresh in (1, 0):
        params = make_params(learning_rate=eta0, power_t=0.5, l1=lam, p=p, norm_refresh=refresh)
        w, preds, _ = run_lazy(smidas.SPEC, params, stream, loss_id)
        w_ref, p_ref, _ = reference.smidas(stream, loss_id, eta0, 0.5, 1.0, lam, p)
        assert np.all(np.isfinite(w)) and np.all(np.isfinite(preds[~np.isnan(p_ref)]))
        assert np.count_nonzero(w) > 0 and np.count_nonzero(w_ref) > 0
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            naive = np.sum(np.abs(w_ref) ** p)
        assert naive == 0.0 or not np.isfinite(naive)  # the raw form would have failed
        if refresh == 1:
            close(w, w_ref)
            close(preds, p_ref)


def test_cancelled_norm_is_recomputed():
    """The dominant terms leave N: what remains is below the sum's rounding, so recompute.

    θ = (1, .33, .13) gives terms 1, 1e-20, 1e-37 at p ≈ 41.6; the second row
    sets θ_0 = θ_1 = 0 exactly, and the third reads w_2, which is θ_2.
    """
    stream = Stream(
        indptr=np.array([0, 3, 5, 6], dtype=np.int64),
        indices=np.array([0, 1, 2, 0, 1, 2], dtype=np.uint32),
        values=np.array([1.0, 0.33, 0.13, 1.0, 0.33, 1.0]),
        labels=np.array([1.0, -1.0, 1.0]),
        weights=np.ones(3),
        bases=np.zeros(3),
        status=np.zeros(3, dtype=np.int32),
        d=4,
    )
    p = smidas.default_p(30)
    params = make_params(learning_rate=1.0, power_t=0.0, l1=0.0, p=p, norm_refresh=0)
    table, gstate = table_after(smidas.SPEC, params, stream, HINGE)
    w_ref, p_ref, _ = reference.smidas(stream, HINGE, 1.0, 0.0, 1.0, 0.0, p)
    assert gstate[smidas.G_GUARDED] >= 1
    _, preds, _ = run_lazy(smidas.SPEC, params, stream, HINGE, chunks=1)
    close(preds, p_ref)
    assert preds[2] == pytest.approx(0.13, rel=1e-12)
    close(weights_of(table, gstate, params), w_ref)


def test_collapse_to_zero_and_restart():
    """A λ that zeroes θ after most steps: w = 0 exactly, then back; N stays exact."""
    stream = random_stream(11, n=800, bits=6)
    p = smidas.default_p(22)
    params = make_params(learning_rate=0.1, power_t=0.0, l1=2.0, p=p, norm_refresh=0)
    table, gstate = table_after(smidas.SPEC, params, stream, HINGE)
    w_ref, _, theta_ref = reference.smidas(stream, HINGE, 0.1, 0.0, 1.0, 2.0, p)
    assert gstate[smidas.G_GUARDED] < stream.n / 50  # refreshes: when N cancels to nothing
    close(weights_of(table, gstate, params), w_ref)
    smidas.rebase(table, gstate, params)
    close(table[:, 0], theta_ref)


# ---- state: current_weights, rebase, resume ---------------------------------------------


def test_current_weights_does_not_touch_state_and_rebase_keeps_weights():
    stream = random_stream(3, n=500)
    params = make_params(learning_rate=0.1, power_t=0.5, l1=0.01, p=smidas.default_p(6))
    table, gstate = table_after(smidas.SPEC, params, stream, LOGISTIC)
    t0, g0 = table.copy(), gstate.copy()
    w = weights_of(table, gstate, params)
    np.testing.assert_array_equal(table, t0)
    np.testing.assert_array_equal(gstate, g0)
    smidas.rebase(table, gstate, params)
    assert gstate[smidas.G_S] == 0.0 and not table[:, 1].any()
    np.testing.assert_allclose(weights_of(table, gstate, params), w, rtol=1e-13, atol=0)
    assert gstate[smidas.G_NNZ] == np.count_nonzero(table[:, 0])
    # the rebuilt running norm is the exact one, and so are the terms kept per slot
    terms = (np.abs(table[:, 0]) / gstate[smidas.G_SCALE]) ** params[P_P]
    np.testing.assert_allclose(table[:, 2], terms, rtol=1e-13, atol=0)
    assert gstate[smidas.G_NHI] + gstate[smidas.G_NLO] == pytest.approx(terms.sum(), rel=1e-13)


def test_resume_from_saved_rows_is_bit_exact():
    """A model file keeps the rows with θ ≠ 0 and gstate; training on gives the same run."""
    stream = random_stream(4, n=900)
    params = make_params(
        learning_rate=0.1, power_t=0.5, l1=0.01, p=smidas.default_p(6), norm_refresh=250
    )
    full, g_full = table_after(smidas.SPEC, params, stream, LOGISTIC)
    first, g = table_after(smidas.SPEC, params, stream.slice(0, 433), LOGISTIC)
    saved = np.flatnonzero(first[:, 0])
    table = smidas.SPEC.new_table(6)
    table[saved] = first[saved]
    rest = stream.slice(433, stream.n)
    smidas.train_batch(
        table, g, params, LOGISTIC, rest.indptr, rest.indices, rest.values, rest.labels,
        rest.weights, rest.bases, rest.status, new_stats(), new_rows(), np.empty(rest.n),
    )
    np.testing.assert_array_equal(table[:, 0], full[:, 0])
    np.testing.assert_array_equal(g, g_full)


def test_p_below_two_is_refused():
    with pytest.raises(ValueError, match="p >= 2"):
        smidas.init_gstate(make_params(p=1.5))


def test_doctests():
    assert doctest.testmod(smidas).failed == 0
