"""Targeted streams for long gaps between touches, and the lazy/dense runs over them.

The dense reference cannot take 10^6 O(d) numpy steps per case, so these streams
use a few slots (d = 8) and rows that are mostly *empty*: an empty labeled row is
a learned step (T grows, η_t decays, the regulariser acts on every weight) with
no gradient.  :func:`tests.reference.elastic_net_runs` applies a run of such steps
weight by weight in a scalar loop -- the same steps in the same order as the
dense :func:`tests.reference.elastic_net` -- so a case costs ~0.1 s per 10^6
steps and per live weight.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from streamlearn.learners.base import S_NROWS, LearnerSpec, make_params, new_rows, new_stats
from streamlearn.run.runner import run_kernel
from tests import reference
from tests.streams import Stream

BITS = 3
D = 1 << BITS
WARMUP = 20
GAPS = (1, 10, 10**4, 10**6)


def build(rows: list[tuple[int, list[int]]], n: int, seed: int, classification: bool) -> Stream:
    """A stream of ``n`` rows, empty except ``rows``: (row number, slots) pairs."""
    rng = np.random.default_rng(seed)
    counts = np.zeros(n, dtype=np.int64)
    for r, slots in rows:
        counts[r] = len(slots)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    indices = np.concatenate([np.asarray(s, dtype=np.uint32) for _, s in sorted(rows)])
    values = rng.normal(size=indices.size) * rng.choice([0.5, 1.0, 2.0], size=indices.size)
    labels = rng.choice([-1.0, 1.0], size=n) if classification else rng.normal(size=n)
    return Stream(
        indptr, indices, values, labels, np.ones(n), np.zeros(n), np.zeros(n, np.int32), D
    )


def gap_stream(seed: int, classification: bool) -> Stream:
    """Slots reappear after exactly 1, 10, 10^4 and 10^6 steps.

    Rows 0..WARMUP-1 touch slots 0..5.  Then slot 0 comes back at every row for
    50 rows (gaps of 1), slot 1 every 10 rows for 500 rows, slot 2 after 10^4
    and 2·10^4 steps, slot 3 after 10^6 steps; slots 4 and 5 are not touched
    again until the last row, which touches slots 0..5; slots 6, 7 never appear.
    """
    last = WARMUP - 1
    rows: dict[int, list[int]] = {r: [0, 1, 2, 3, 4, 5] for r in range(WARMUP)}
    for r in range(last + 1, last + 51):
        rows.setdefault(r, []).append(0)
    for r in range(last + 10, last + 501, 10):
        rows.setdefault(r, []).append(1)
    for g in (GAPS[2], 2 * GAPS[2]):
        rows.setdefault(last + g, []).append(2)
    rows.setdefault(last + GAPS[3], []).append(3)
    n = last + GAPS[3] + 10
    rows[n - 1] = [0, 1, 2, 3, 4, 5]
    return build(sorted(rows.items()), n, seed, classification)


def sum_eta(eta0: float, power_t: float, t0: float, T0: int, steps: int) -> float:
    """Σ η over the learned steps T0+1 .. T0+steps (unit importance)."""
    T = np.arange(T0 + 1, T0 + steps + 1, dtype=float)
    return float(np.sum(eta0 * (t0 / (t0 + T)) ** power_t))


def periodic_chunks(
    seed: int, n: int, chunk: int = 10**6, period: int = 1000, classification: bool = False
) -> Iterator[Stream]:
    """``n`` rows in chunks: every ~``period`` rows (uniform in [period/2, 3period/2])
    a row touching 1–3 of the D slots, the rest empty."""
    rng = np.random.default_rng(seed)
    start = 0
    nxt = 0
    while start < n:
        m = min(chunk, n - start)
        rows = []
        while nxt < start + m:
            k = int(rng.integers(1, 4))
            rows.append((nxt - start, sorted(rng.choice(D, size=k, replace=False).tolist())))
            nxt += int(rng.integers(period // 2, period + period // 2 + 1))
        yield build(rows, m, int(rng.integers(1 << 30)), classification)
        start += m


def run_chunks(spec: LearnerSpec, params: np.ndarray, chunks, loss_id: int):
    """Lazy side over chunks, one ``train_batch`` call each.

    Returns (current weights of the D slots, predictions, gstate).
    """
    table = spec.new_table(BITS)
    gstate = spec.init_gstate(params)
    stats, rows = new_stats(), new_rows()
    preds = []
    for s in chunks:
        p = run_kernel(spec.train_batch, table, gstate, params, loss_id, s, stats, rows)
        rows[:] = 0.0
        stats[S_NROWS] = 0.0  # as the driver does after printing the lines
        preds.append(p)
    w = np.empty(D)
    spec.current_weights(table, gstate, params, np.arange(D, dtype=np.uint32), w)
    return w, np.concatenate(preds), gstate


def dense_chunks(chunks, loss_id, eta0, power_t, t0, l1, l2, form):
    return reference.elastic_net_runs(chunks, D, loss_id, eta0, power_t, t0, l1, l2, form)


def assert_matches(w, w_ref, preds, p_ref, rtol: float = 1e-10) -> None:
    """Lazy equals dense to ``rtol`` relative.

    A weight that the clip sends to 0 on one side may keep a rounding residue
    on the other, so the absolute floor is ``1e-12 · max|w_ref|`` for weights
    and ``rtol · max|p_ref|`` for predictions (sums that can cancel).
    """
    scale = float(np.max(np.abs(w_ref))) if w_ref.size else 0.0
    np.testing.assert_allclose(w, w_ref, rtol=rtol, atol=1e-12 * scale)
    ok = ~np.isnan(p_ref)
    np.testing.assert_array_equal(np.isnan(preds), ~ok)
    pscale = float(np.max(np.abs(p_ref[ok]))) if ok.any() else 0.0
    np.testing.assert_allclose(preds[ok], p_ref[ok], rtol=rtol, atol=rtol * pscale)


# (power_t, learning_rate) pairs for the long-gap cases: weights of order 1 after warm-up.
GAP_RATES = ((0.0, 0.1), (0.5, 0.3), (1.0, 1.0))
# (ℓ1, ℓ2²) strengths as multiples of 1 / Σ η over the whole gap stream:
# "mild" leaves slot 3 alive after its 10^6-step gap, "strong" clips it there.
MILD = (0.3, 1.0)
STRONG = (3.0, 10.0)


def check_gap_case(spec, form, power_t, eta0, k1, k2, loss_id, seed) -> np.ndarray:
    """Run lazy and dense over :func:`gap_stream`; assert they match; return weights.

    The last row (all slots, after gaps of 10^6 steps) is prediction-only, so its
    prediction checks the settled weights without a final gradient step that
    would amplify their rounding differences.
    """
    st = gap_stream(seed, classification=loss_id != 0)
    st.labels[-1] = np.nan
    total = sum_eta(eta0, power_t, 1.0, 0, st.n)
    l1, l2 = k1 / total, k2 / total
    params = make_params(learning_rate=eta0, power_t=power_t, l1=l1, l2=l2)
    w, preds, _ = run_chunks(spec, params, [st], loss_id)
    w_ref, p_ref, n = dense_chunks([st], loss_id, eta0, power_t, 1.0, l1, l2, form)
    assert n == st.n - 1
    assert_matches(w, w_ref, preds, p_ref)
    return w_ref


def check_gap_outcome(w_ref, k1, k2) -> None:
    """The case tested what it meant to: slots 2..5 (gaps ≥ 10^4) alive or clipped."""
    alive = np.count_nonzero(w_ref[2:6])
    if k1 == 0.0:
        assert np.count_nonzero(w_ref) == 6  # ℓ2² alone never clips
    elif (k1, k2) == STRONG:
        assert alive < 4  # at least one weight clipped to 0 during a long gap
    else:
        assert alive > 0
