"""Online boosting (VW's ``--boosting N``, ``--alg BBM|logistic|adaptive``, ``--gamma``).

As VW's ``reductions/boosting.cc`` over its ``gd`` (Beygelzimer, Kale & Luo, *Optimal and
adaptive algorithms for online boosting*, ICML 2015): N weak learners, each a gd model in
one table, feature slot ``h``'s weight for learner ``i`` at ``(h·s + i) mod 2^b`` (``s`` = N
rounded up to a power of 2, VW's feature width), each with its own normalizer sums.

As VW runs it (the reduction's learn returns no prediction, so VW predicts an example
before it learns it): the **predict call** gives the prediction written and scored -- each
learner's prediction (gd's, clipped to the label range as it stands) combined below -- and
the **learn call** then takes learner ``i`` in turn: it predicts again (within the range
the learners before it widened with the label: VW's scorer, below the boosting, widens it
when asked to learn), updates the algorithm's sums, and learns with importance ``u·w_i``
(not > 0: only predicts), its own prediction clipped to the range its call widened:

* **BBM** (online boost-by-majority): ``w_i = C(N-i-1, k)·(½+γ)^k·(½-γ)^(N-i-1-k)`` with
  ``k = ⌊(N - i - s)/2⌋``, ``s`` the sum of ``y·p_j`` of the learners before; the
  prediction is the sum of the learners' predictions.
* **logistic** (AdaBoost.OL.W): ``w_i = 1/(1 + e^s)``, ``s = Σ_j α_j y p_j``; each α_i moves
  by ``η y p_i/(1 + e^s)`` (η = 4/√t, t the examples learned this run), clipped to [-2, 2];
  the prediction is ``Σ α_i p_i``.
* **adaptive** (AdaBoost.OL, by sampling): logistic's weights and α, and a weight ``v_i``
  per learner, shrunk by e^-1 when the partial sum disagrees with the label; the
  prediction stops at the learner where the running sum of v passes a draw of VW's
  generator (one draw per call: two for a learned example, the first deciding).

Everything in float32 as VW (its ``expf``, its binomials in 64-bit integers).  The
prediction is not clipped.  The loss VW counts is its scorer's, below the boosting: the
loss of the *last* weak learner it ran with a weight > 0, times that weight (BBM's last
learner often has weight 0: then the one before), not the loss of the prediction; sl
counts the same (``--progress`` and the summary are VW's).  ``gstate`` keeps, after gd's,
each learner's normalizer sums (learner 0's are gd's own), then the N α, the N v and VW's
generator's state (the model keeps them: :func:`vw_section` in VW's files); ``conf``
int64[3] (N, the algorithm 0/1/2, the examples learned this run), ``gamma`` float64[1],
``binom`` int64[N, N] (``C(n, k)``).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    GSTATE_SIZE,
    P_LEARN,
    P_LOGISTIC_MAX,
    P_LOGISTIC_MIN,
    P_PROGRESS,
    P_QUANTILE_TAU,
    P_T0,
    add_scored,
    begin_example,
    clip,
    row_span,
)
from streamlearn.learners.explore import merand48
from streamlearn.learners.losses import SQUARED, expf, loss32
from streamlearn.learners.oaa import class_stride, clipped, prediction_range
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64

G_MODEL = GSTATE_SIZE
"""Learner i's normalizer sums (i > 0; learner 0's are gd's own, which VW's model files
keep): Σ a Σ (x/m)² at ``G_MODEL + 2i``, Σ a at ``G_MODEL + 2i + 1``; then α_i at
``G_MODEL + 2N + i`` and v_i at ``G_MODEL + 3N + i``."""

BBM, LOGISTIC_BOOST, ADAPTIVE = 0, 1, 2
ALGORITHMS = ("BBM", "logistic", "adaptive")


def binomials(n: int) -> np.ndarray:
    """``C(a, b)`` for a, b < N (VW's ``choose``, exact in 64-bit integers)."""
    out = np.zeros((max(n, 1), max(n, 1)), dtype=np.int64)
    for a in range(n):
        for b in range(a + 1):
            out[a, b] = math.comb(a, b)
    return out


def rng_slot(n: int) -> int:
    """Where VW's generator's 64-bit state is kept (two 32-bit halves) in N learners' state."""
    return G_MODEL + 4 * n


def get_rng(gstate: np.ndarray, n: int) -> int:
    g = rng_slot(n)
    return (int(gstate[g + 1]) << 32) | int(gstate[g])


def set_rng(gstate: np.ndarray, n: int, state: int) -> None:
    g = rng_slot(n)
    gstate[g] = F64(state & 0xFFFFFFFF)
    gstate[g + 1] = F64((state >> 32) & 0xFFFFFFFF)


def parse_stack(words: tuple[str, ...]) -> tuple[int, str] | None:
    """(N, the algorithm) that a configuration's reductions' words give ``--boosting`` (their
    checks are :func:`streamlearn.reductions.boosting.read`'s), or None."""
    it = iter(words)
    n, alg = None, "BBM"
    for w in it:
        if w == "--boosting":
            n = next(it, "")
        elif w == "--alg":
            alg = next(it, "BBM")
    if n is None or not n.isdigit():
        return None
    return int(n), alg


def vw_section(n: int, alg: str, gstate: np.ndarray) -> bytes:
    """The reduction's part of VW's model file (its ``save_load``, before gd's): nothing for
    BBM; N as int32 and the N α (float32) for logistic, then the N v for adaptive."""
    if alg == "BBM":
        return b""
    out = np.int32(n).tobytes() + gstate[G_MODEL + 2 * n : G_MODEL + 3 * n].astype(F32).tobytes()
    if alg == "adaptive":
        out += gstate[G_MODEL + 3 * n : G_MODEL + 4 * n].astype(F32).tobytes()
    return out


def read_vw_section(data: bytes, pos: int, n: int, alg: str, gstate: np.ndarray) -> int:
    """:func:`vw_section` read from ``data`` at ``pos`` into ``gstate``; where it ends."""
    if alg == "BBM":
        return pos
    k = 2 if alg == "adaptive" else 1
    if pos + 4 + 4 * n * k > len(data):
        raise ValueError("it ends inside its boosting state (truncated)")
    if int(np.frombuffer(data, np.int32, 1, pos)[0]) != n:
        raise ValueError(f"its boosting state is not of its --boosting {n} (corrupt)")
    vals = np.frombuffer(data, np.float32, n * k, pos + 4).astype(F64)
    gstate[G_MODEL + 2 * n : G_MODEL + 2 * n + n * k] = vals
    return pos + 4 + 4 * n * k


def section_lines(n: int, alg: str, gstate: np.ndarray, g) -> list[str]:  # noqa: ANN001
    """The readable model's lines of :func:`vw_section` (``g``: VW's float text)."""
    if alg == "BBM":
        return []
    lines = [f"boosts {n}\n"]
    lines += [f"alpha {g(F32(gstate[G_MODEL + 2 * n + i]))}\n" for i in range(n)]
    if alg == "adaptive":
        lines += [f"v {g(F32(gstate[G_MODEL + 3 * n + i]))}\n" for i in range(n)]
    return lines


def init_gstate(n: int, params: np.ndarray, seed: int = 0) -> np.ndarray:
    """gd's global state, N learners' normalizer sums (learner 0's from ``--initial_t``,
    as VW), α = 0, v = 1 and VW's generator seeded with ``--random_seed``."""
    gstate = np.zeros(G_MODEL + 4 * n + 2)
    gstate[gd.G_CONTRACTION] = 1.0
    t0 = F64(np.float32(params[P_T0]))
    if t0 > 0.0:
        gstate[gd.G_NORM] = t0
        gstate[gd.G_TOTAL] = t0
    gstate[G_MODEL + 3 * n : G_MODEL + 4 * n] = 1.0
    set_rng(gstate, n, seed & (2**64 - 1))
    return gstate


@jit_inline
def squared_vw(p, y, lo, hi):
    """VW's squared loss of a prediction that may lie outside the label range [lo, hi]:
    linear beyond it (float32, with its double-precision terms)."""
    if p <= hi and p >= lo:
        return (p - y) * (p - y)
    if p < lo:
        if y == lo:
            return F32(0.0)
        return F32(F64((y - lo) * (y - lo)) + 2.0 * F64(y - lo) * F64(lo - p))
    if y == hi:
        return F32(0.0)
    return F32(F64((hi - y) * (hi - y)) + 2.0 * F64(hi - y) * F64(p - hi))


@jit_inline
def _loss(gstate, params, loss_id, p, y, tau, lmin, lmax):
    """VW's ``get_loss`` of a weak learner's prediction (squared: with the label range)."""
    if loss_id == SQUARED:
        rlo, rhi = prediction_range(gstate, params, loss_id)
        return squared_vw(p, y, F32(rlo), F32(rhi))
    return loss32(loss_id, p, y, tau, lmin, lmax)


@jit_inline
def _score(table, gstate, indices, values, lo, hi, base, c, s, mask, slots, l1):
    """Learner ``c``'s score (unclipped, times gd's contraction) and its slots in
    ``slots[lo:hi]``."""
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(base)
    for t in range(lo, hi):
        j = (U64(indices[t]) * s + U64(c)) & mask
        slots[t] = j
        w = F32(table[j, 0])
        if l1:
            w = gd.trunc(w, grav)
        p += w * F32(values[t])
    return p * F32(gstate[gd.G_CONTRACTION])


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, conf, gamma, binom):  # fmt: skip
    rule = gd.rule_of(params)
    l1 = rule[9] > F32(0.0)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    n_learners = conf[0]
    alg = conf[1]
    s = U64(class_stride(n_learners))  # (N learners' slots: VW's feature width, as --oaa's)
    mask = U64(table.shape[0] - 1)
    a_at = G_MODEL + 2 * n_learners
    v_at = G_MODEL + 3 * n_learners
    up = F64(0.5) + F64(F32(gamma[0]))
    down = F64(0.5) - F64(F32(gamma[0]))
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    g_rng = G_MODEL + 4 * n_learners
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = (U64(gstate[g_rng + 1]) << U64(32)) | U64(gstate[g_rng])
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        y32 = F32(y)
        u = F32(weights[i])
        labeled, holdout = begin_example(stats, params, y)
        learn = labeled and not holdout and params[P_LEARN] != 0.0
        if learn:
            conf[2] += 1
        eta = F32(4.0) / F32(math.sqrt(F32(conf[2]))) if learn else F32(0.0)
        stop = merand48(rng) if alg == ADAPTIVE else F32(0.0)
        t_before = gstate[G_T]
        final = F32(0.0)
        part = F32(0.0)
        total = F32(0.0)  # Σ y·p_j (BBM), or Σ α_j y p_j
        v_sum = F32(0.0)
        v_norm = F32(0.0)
        last = F32(0.0)  # VW's ec.loss: the scorer's, of the last call with a weight
        # VW's predict call (its learn does not return a prediction, so VW predicts first):
        # the prediction written and scored, each learner clipped to the range as it stands
        rlo, rhi = prediction_range(gstate, params, loss_id)
        for c in range(n_learners):
            raw = _score(table, gstate, indices, values, lo, hi, bases[i], c, s, mask, slots, l1)
            p = clipped(raw, rlo, rhi)
            if labeled and u > F32(0.0):
                last = _loss(gstate, params, loss_id, p, y32, tau, lmin, lmax) * u
            if alg == ADAPTIVE:
                if not v_sum <= stop:
                    break  # (this learner was predicted, its loss counted, but not summed)
                v_sum += F32(gstate[v_at + c])
            final += p if alg == BBM else p * F32(gstate[a_at + c])
        if learn and alg == ADAPTIVE:
            merand48(rng)  # (the learn call's own stopping point: its prediction is not kept)
        # the learn call: each learner predicts (within the range the learners before it
        # widened with the label) and learns with its weight, predicting again in the range
        # its own call widened
        for c in range(n_learners if learn else 0):
            raw = _score(table, gstate, indices, values, lo, hi, bases[i], c, s, mask, slots, l1)
            p = F32(clip(gstate, params, loss_id, F64(raw), y, False))
            if alg == BBM:
                k = F32(math.floor(F32(F32(n_learners - c) - total) / F32(2.0)))
                rest = n_learners - (c + 1)
                cnt = 0
                if rest >= 0 and k <= rest and k >= 0:
                    cnt = binom[rest, int(k)]
                w = (F32(cnt) * F32(up ** F64(k))) * F32(down ** F64(F32(rest) - k))
                total += y32 * p
            else:
                w = F32(1.0) / (F32(1.0) + expf(total))
                z = y32 * p
                alpha = F32(gstate[a_at + c])
                total += z * alpha
                if alg == ADAPTIVE:
                    part += p * alpha
                    if y32 * part < F32(0.0):
                        gstate[v_at + c] = F32(gstate[v_at + c]) * F32(0.36788)
                    v_norm += F32(gstate[v_at + c])
                alpha = alpha + eta * z / (F32(1.0) + expf(total))
                if alpha > F32(2.0):
                    alpha = F32(2.0)
                if alpha < F32(-2.0):
                    alpha = F32(-2.0)
                gstate[a_at + c] = alpha
            wc = u * F32(w)
            pl = F32(clip(gstate, params, loss_id, F64(raw), y, True))  # the learn's own
            if not wc > F32(0.0):
                continue  # (VW's scorer predicts an example of weight 0, or NaN: 0·(0^-1))
            last = _loss(gstate, params, loss_id, pl, y32, tau, lmin, lmax) * wc
            # gd's learn of learner c with importance u·w: its t counts this weight
            gstate[G_T] = t_before + F64(wc)
            if not loss32(loss_id, pl, y32, tau, lmin, lmax) > F32(0.0):
                continue  # gd's zero-loss gate
            g_norm = gd.G_NORM if c == 0 else G_MODEL + 2 * c
            g_total = gd.G_TOTAL if c == 0 else G_MODEL + 2 * c + 1
            gd.step(table, gstate, g_norm, g_total, slots, values, lo, hi, pl, y32, wc, loss_id,
                    rule)  # fmt: skip
            if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
                gd.rebase(table, gstate, params)
        if learn and alg == ADAPTIVE and v_norm != F32(0.0):
            for c in range(n_learners):
                gstate[v_at + c] = F32(gstate[v_at + c]) / v_norm
        gstate[G_T] = t_before
        if learn and u != F32(0.0):
            gstate[G_T] = t_before + F64(u)
            gstate[G_N] += 1.0
        # VW counts the scorer's loss of the last weak learner it ran (times its weight),
        # not the loss of the prediction: per unit of the example's weight here
        lv = F64(last) / weights[i] if weights[i] != 0.0 else 0.0
        add_scored(stats, rows, F64(final), y, weights[i], hi - lo, labeled, holdout, lv,
                   params[P_PROGRESS])  # fmt: skip
        preds[i] = F64(final)
    gstate[g_rng] = F64(rng[0] & U64(0xFFFFFFFF))
    gstate[g_rng + 1] = F64(rng[0] >> U64(32))
