"""Importance-weighted active learning over gd (VW's ``--active --simulation``,
``--mellowness c0``).

As VW's ``reductions/active.cc`` (Beygelzimer, Hsu, Langford & Zhang, *Agnostic active
learning without constraints*, NIPS 2010), below VW's scorer: each labeled example that
would be learned is first predicted (gd's, clipped to the label range its scorer has just
widened); its *confidence* is ``|p| / s``, ``s`` gd's sensitivity (how far a unit update of
weight 1 moves the prediction: gd's rates for this example without changing them, VW's
"stateless" pass, which still leaves its normalizer multiplier as the last one made), and
the example is queried with probability ``b`` (VW's ``get_active_coin_bias`` of the
examples' weight so far, the progressive loss and ``confidence / count``; ``b = 1`` until
the weight passes 1), a draw of VW's generator deciding.  A queried example is learned with
its importance times ``1/b``; the others become unlabeled examples of weight 0 (VW's table
says ``unknown``).  Held-out examples are only predicted.  ``gstate`` keeps VW's generator
after gd's state (two 32-bit halves; VW keeps it in a model as ``--random_seed``).
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
    S_LOSS,
    S_WEX,
    add_scored,
    begin_example,
    clip,
    row_span,
)
from streamlearn.learners.explore import merand48
from streamlearn.learners.losses import loss32, square_grad32
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64

G_RNG = GSTATE_SIZE
"""VW's generator's 64-bit state (two 32-bit halves) after gd's global state."""
G_QUERIES = GSTATE_SIZE + 2
"""The examples queried (VW's ``total queries``: the run's, the entry resets it)."""


def init_gstate(params: np.ndarray, seed: int = 0) -> np.ndarray:
    """gd's global state and VW's generator seeded with ``--random_seed``."""
    gstate = np.zeros(G_QUERIES + 1)
    gstate[:GSTATE_SIZE] = gd.init_gstate(params)
    gstate[G_RNG] = F64(seed & 0xFFFFFFFF)
    gstate[G_RNG + 1] = F64((seed >> 32) & 0xFFFFFFFF)
    return gstate


def get_rng(gstate: np.ndarray) -> int:
    return (int(gstate[G_RNG + 1]) << 32) | int(gstate[G_RNG])


@jit_inline
def _logf(x):
    return F32(math.log(F64(x)))


@jit_inline
def _sqrtf(x):
    return F32(math.sqrt(F64(x)))


@jit_inline
def coin_bias(count, avg_loss, diff, c0):
    """VW's ``get_active_coin_bias`` in float32: the probability of querying."""
    mellow = c0 * (_logf(count + F32(1.0)) + F32(0.0001)) / (count + F32(0.0001))
    root = _sqrtf(mellow)
    avg = min(max(avg_loss, F32(0.0)), F32(1.0))
    spread = min(F32(1.0), _sqrtf(avg + diff))
    if diff <= root * spread + mellow:
        return F32(1.0)
    s = (root + _sqrtf(mellow + F32(4.0) * diff * mellow)) / F32(2.0) * diff
    return s * s


@jit_inline
def sensitivity(table, gstate, indices, values, lo, hi, p, y, a, loss_id, rule):
    """gd's sensitivity, VW's ``sensitivity``: the scale of an update of weight 1 times the
    prediction's change per unit update, from the example's rates as a learn would make them
    (copies: no weight, sum or rate moves; the normalizer multiplier is set, as VW's is)."""
    gamma = a * square_grad32(loss_id, p, y, rule[12], rule[13], rule[14])
    return sensitivity_of(table, gstate, indices, values, lo, hi, gamma, a, rule)


@jit_inline
def sensitivity_of(table, gstate, indices, values, lo, hi, gamma, a, rule):
    """:func:`sensitivity` of an update's squared gradient ``gamma`` (its weight ``a`` in)."""
    (adaptive, normalized, invariant, sqrt_rate, neg_q, neg_norm_power, t0, g0, eta, l1, l2,
     reg, tau, lmin, lmax) = rule  # fmt: skip
    scale = eta
    if not adaptive:
        scale = scale * F32(F32(F64(t0) + gstate[G_T] + 1.0) ** neg_q)
    if not adaptive and not normalized:
        total = F32(0.0)
        for k in range(lo, hi):
            x = F32(values[k])
            total += x * x
        return scale * total
    ppu = F32(0.0)
    nx = F32(0.0)
    for k in range(lo, hi):
        j = indices[k]
        x = F32(values[k])
        x2 = x * x
        if x2 < gd.X2_MIN:
            x = gd.X_MIN if x > F32(0.0) else -gd.X_MIN
            x2 = gd.X2_MIN
        G = F32(table[j, 1])
        if adaptive:
            if G == F32(0.0):
                G = g0
            G = G + gamma * x2
        m = F32(table[j, 2])
        if normalized:
            ax = abs(x)
            if ax > m:
                m = ax
            nx += F32(1.0) if x2 > gd.FLT_MAX else fdiv(x2, m * m)
        if adaptive and normalized and sqrt_rate:  # (gd's default path: C's divisions)
            rate = fdiv(F32(1.0), F32(math.sqrt(G))) * fdiv(F32(1.0), m)
        else:
            rate = gd._rate(G, m, adaptive, normalized, sqrt_rate, neg_q, neg_norm_power)
        ppu += x2 * rate
    if normalized:
        nsnx = F32(gstate[gd.G_NORM]) + a * nx
        tw = F32(gstate[gd.G_TOTAL]) + a
        mult = gd._normalizer(tw, nsnx, sqrt_rate, adaptive, neg_norm_power)
        gstate[gd.G_MULT] = mult
        ppu = ppu * mult
    return scale * ppu


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, c0):  # fmt: skip
    rule = gd.rule_of(params)
    l1 = rule[9] > F32(0.0)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    mellowness = F32(c0[0])
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = (U64(gstate[G_RNG + 1]) << U64(32)) | U64(gstate[G_RNG])
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        y32 = F32(y)
        u = F32(weights[i])
        labeled, holdout = begin_example(stats, params, y)
        extend = labeled and not holdout and params[P_LEARN] != 0.0
        grav = F32(gstate[gd.G_GRAVITY])
        raw = F32(bases[i])
        for k in range(lo, hi):
            w = F32(table[indices[k], 0])
            raw += (gd.trunc(w, grav) if l1 else w) * F32(values[k])
        raw = raw * F32(gstate[gd.G_CONTRACTION])
        # (VW's scorer, above, widens the range with the label before it asks to learn)
        p = F32(clip(gstate, params, loss_id, F64(raw), y, extend))
        if not (extend and u > F32(0.0)):  # predicted only
            lv = F64(loss32(loss_id, p, y32, tau, lmin, lmax)) if labeled else 0.0
            add_scored(stats, rows, F64(p), y, weights[i], hi - lo, labeled, holdout, lv,
                       params[P_PROGRESS])  # fmt: skip
            preds[i] = F64(p)
            continue
        count = F32(F64(rule[6]) + stats[S_WEX])  # (VW's t: from --initial_t, every weight)
        sens = sensitivity(table, gstate, indices, values, lo, hi, p, y32, u, loss_id, rule)
        confidence = fdiv(abs(p), sens)  # (VW's: inf or nan when the sensitivity is 0)
        bias = F32(1.0)
        if count > F32(1.0):
            bias = coin_bias(count, fdiv(F32(stats[S_LOSS]), count), fdiv(confidence, count),
                             mellowness)  # fmt: skip
        if not merand48(rng) < bias:  # not queried: an unlabeled example of weight 0
            add_scored(stats, rows, F64(p), np.nan, 0.0, hi - lo, False, False, 0.0,
                       params[P_PROGRESS])  # fmt: skip
            preds[i] = F64(p)
            continue
        u2 = u * fdiv(F32(1.0), bias)
        gstate[G_QUERIES] += 1.0
        gstate[G_T] += F64(u2)
        gstate[G_N] += 1.0
        lv = loss32(loss_id, p, y32, tau, lmin, lmax)
        if lv > F32(0.0):
            gd.step(table, gstate, gd.G_NORM, gd.G_TOTAL, indices, values, lo, hi, p, y32, u2,
                    loss_id, rule)  # fmt: skip
            if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
                gd.rebase(table, gstate, params)
        # VW's loss of the example: its scorer's, times the weight, in float32
        shown = F64(lv * u2) / F64(u2) if u2 != F32(0.0) else 0.0
        add_scored(stats, rows, F64(p), y, F64(u2), hi - lo, True, False, shown,
                   params[P_PROGRESS])  # fmt: skip
        preds[i] = F64(p)
    gstate[G_RNG] = F64(rng[0] & U64(0xFFFFFFFF))
    gstate[G_RNG + 1] = F64(rng[0] >> U64(32))
