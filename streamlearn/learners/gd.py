"""VW's default update: adaptive, normalized, importance-invariant gradient descent.

What ``vw`` runs when no update rule is named (``reductions/gd.cc``), and each
of its subsets (``--adaptive``, ``--normalized``, ``--invariant``).  Per slot
``j`` the table keeps, in float32 as VW, the weight ``w_j``, the adaptive sum
``G_j`` (initial value ``t0`` = ``--initial-t``, stored as 0 until the slot is
first touched), the largest ``|x_j|`` seen, ``m_j``, and the slot's last rate
``r_j`` (16 bytes, one aligned row as VW's stride of 4 floats).  ``gstate``
keeps the normalizer sums, the l1 gravity and l2 contraction, and the label
range.

For a learned example (x, y, importance a) with clipped prediction p whose
single-precision loss is > 0 (VW's zero-loss gate), with ``q = power_t``::

    γ = a · ℓ'(p, y)²
    for each feature j of x, in order:
        G_j += γ x_j²                                    (adaptive)
        if |x_j| > m_j:                                  (normalized)
            w_j *= (m_j / |x_j|)^(2(1 − q))  if m_j > 0  (w/o adaptive: ^2)
            m_j = |x_j|
        N += x_j² / m_j²
        r_j = G_j^(−q) · m_j^(−2(1 − q))                 (w/o adaptive: m_j^(−2))
    S += a N;  W += a;  μ = (S / W)^(q − 1)              (normalized; w/o adaptive: W / S)
    s = η · a                      (without adaptive: · (t0 + T)^(−q))
    π = μ Σ_j x_j² r_j             (how far one unit of update moves p)
    u = invariant ? update(p, y, s, π) : −s ℓ'(p, y)
    w_j += μ u r_j x_j             for each j of x

(``losses.update32`` is the closed-form importance-invariant step.)  Only
the slots of x change, so an example costs O(nnz) with no timestamps.

``--l1``/``--l2`` act as in VW: the step's implicit rate ``η̄ = −u / ℓ'``
adds ``η̄ λ1`` to a global gravity ``g`` and multiplies a global contraction
``c`` by ``1 − η̄ λ2``; the update is divided by ``c``, and a weight reads as
``c · sign(w)·max(0, |w| − g)`` (predictions, saving).  When ``c < 1e-9`` or
``g > 1e3`` every weight is settled and the two reset (:func:`rebase`, VW's
``sync_weights``, O(d) and rare).  Saved models hold the settled weights.

Everything is computed in float32, operation for operation as VW does, so
that sl and VW give the same progressive loss (``scripts/vw_parity.py``).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.base import (
    G_N,
    G_T,
    G_USER,
    GSTATE_SIZE,
    P_ADAPTIVE,
    P_ETA0,
    P_INVARIANT,
    P_L1,
    P_L2,
    P_LOGISTIC_MAX,
    P_LOGISTIC_MIN,
    P_NORMALIZED,
    P_POWER_T,
    P_QUANTILE_TAU,
    P_T0,
    LearnerSpec,
    prefetch_example,
    row_span,
    score32,
    write_raw,
)
from streamlearn.learners.losses import dloss32, square_grad32, unsafe_update32, update32
from streamlearn.system.jit import fdiv, jit, jit_inline, jit_noalloc, stack_f32

F32 = np.float32
F64 = np.float64  # (numba's float() keeps a float32 a float32)

G_NORM = G_USER  # Σ a · Σ_j (x_j / m_j)² over learned examples (VW's normalized_sum_norm_x)
G_TOTAL = G_USER + 1  # Σ a over the same examples (VW's total_weight)
G_GRAVITY = G_USER + 2  # accumulated l1: a weight reads as c · sign(w) max(0, |w| − g)
G_CONTRACTION = G_USER + 3  # accumulated l2 factor c
G_MULT = G_USER + 4  # the last normalizer μ (VW reuses it when an example's γ is 0)
G_SYNCS = G_USER + 5  # how many times gravity and contraction were settled (diagnostic)

X_MIN = F32(1.084202e-19)  # |x| below this counts as this much (VW)
X2_MIN = X_MIN * X_MIN
FLT_MAX = F32(3.4028234663852886e38)
CHUNK = 64
"""Features of an example whose rates :func:`step` computes at once (on its stack)."""


@jit_inline
def trunc(w, g):
    """``sign(w) max(0, |w| − g)`` in float32, as VW's ``trunc_weight``."""
    if g < abs(w):
        return w - (F32(-1.0) if w <= F32(0.0) else F32(1.0)) * g
    return F32(0.0)


@jit_inline
def _rate(G, m, adaptive, normalized, sqrt_rate, neg_q, neg_norm_power):
    """r_j = G_j^(−q) · (normalizer of m_j), VW's ``compute_rate_decay``."""
    r = F32(1.0)
    if adaptive:
        if sqrt_rate:
            r = F32(1.0) / F32(math.sqrt(G))
        else:
            r = F32(G**neg_q)
    if normalized:
        if sqrt_rate:
            inv = F32(1.0) / m
            r = r * inv if adaptive else r * (inv * inv)
        else:
            r = r * F32((m * m) ** neg_norm_power)
    return r


@jit_inline
def _normalizer(total, norm, sqrt_rate, adaptive, neg_norm_power):
    """μ from the running sums (VW's ``average_update``)."""
    if sqrt_rate:
        avg = total / norm
        return F32(math.sqrt(avg)) if adaptive else avg
    return F32((norm / total) ** neg_norm_power)


@jit_inline
def rule_of(params):
    """gd's update rule and constants from ``params``, resolved once per batch for :func:`step`."""
    adaptive = params[P_ADAPTIVE] != 0.0
    normalized = params[P_NORMALIZED] != 0.0
    invariant = params[P_INVARIANT] != 0.0
    q = F32(params[P_POWER_T])
    sqrt_rate = q == F32(0.5)
    neg_q = -q
    # VW fixes this exponent before it reads the update rule, so it is q − 1 even
    # without adaptive rates; only the power_t = 0.5 path uses 1/m² there
    neg_norm_power = q - F32(1.0)
    t0 = F32(params[P_T0])
    g0 = t0 if adaptive else F32(0.0)  # a fresh slot's G (stored as 0)
    eta = F32(params[P_ETA0])
    if not adaptive and not normalized:
        eta = eta * F32(t0**q)  # VW: eta *= powf(t0, power_t), then · (t0 + T)^−q
    tau = F32(params[P_QUANTILE_TAU])
    l1 = F32(params[P_L1])
    l2 = F32(params[P_L2])
    reg = l1 > F32(0.0) or l2 > F32(0.0)
    lmin = F32(params[P_LOGISTIC_MIN])
    lmax = F32(params[P_LOGISTIC_MAX])
    return (adaptive, normalized, invariant, sqrt_rate, neg_q, neg_norm_power, t0, g0, eta, l1,
            l2, reg, tau, lmin, lmax)  # fmt: skip


@jit_inline
def step(table, gstate, g_norm, g_total, slots, values, lo, hi, p, y, a32, loss_id, rule):
    """Learn one example whose (clipped) prediction ``p`` has a loss > 0: steps (2) and (3).

    The example's features are ``slots[k]``, ``values[k]`` for ``k`` in ``lo..hi``;
    ``gstate[g_norm]`` and ``gstate[g_total]`` are the normalizer sums of its model (one
    per class under one-against-all, :mod:`streamlearn.learners.oaa`, as VW's
    ``gd_per_model_states``); ``rule`` is :func:`rule_of`'s.  The caller settles
    gravity and contraction when they leave their range (:func:`rebase`).
    """
    (adaptive, normalized, invariant, sqrt_rate, neg_q, neg_norm_power, t0, g0, eta, l1, l2,
     reg, tau, lmin, lmax) = rule  # fmt: skip
    # (2) the adaptive and normalizer state, and π = how far a unit update moves p
    gamma = a32 * square_grad32(loss_id, p, y, tau, lmin, lmax)
    if not adaptive and not normalized:
        ppu = F32(0.0)
        for k in range(lo, hi):
            x = F32(values[k])
            ppu += x * x
    elif gamma == F32(0.0):  # VW returns 1 and reuses the last normalizer and rates
        ppu = F32(1.0)
    else:
        ppu = F32(0.0)
        nx = F32(0.0)
        # in chunks of CHUNK features, three loops: (a) each visit's G_j and m_j, in order
        # (a slot met twice sees its first visit's update); (b) the rates and x²/m², which
        # depend on nothing else, so that the square roots and divisions (half of the
        # learner's time one at a time) run 8 to an instruction; (c) the sums, in order,
        # and each slot's last rate.  The same operations as one loop, in the same order.
        s_g = stack_f32(CHUNK)  # G_j of each visit, then its rate
        s_m = stack_f32(CHUNK)  # m_j of each visit, then x²/m²
        s_x2 = stack_f32(CHUNK)
        for c0 in range(lo, hi, CHUNK):
            c1 = min(c0 + CHUNK, hi)
            for k in range(c0, c1):
                j = slots[k]
                x = F32(values[k])
                x2 = x * x
                if x2 < X2_MIN:
                    x = X_MIN if x > F32(0.0) else -X_MIN
                    x2 = X2_MIN
                G = F32(table[j, 1])
                if adaptive:
                    if G == F32(0.0):
                        G = g0
                    G = G + gamma * x2
                    table[j, 1] = G
                m = F32(table[j, 2])
                if normalized:
                    ax = abs(x)
                    if ax > m:
                        if m > F32(0.0):
                            w = F32(table[j, 0])
                            if sqrt_rate:
                                s = m / ax
                                w = w * s if adaptive else w * (s * s)
                            else:
                                s = ax / m
                                w = w * F32((s * s) ** neg_norm_power)
                            table[j, 0] = w
                        m = ax
                        table[j, 2] = m
                s_g[k - c0] = G
                s_m[k - c0] = m
                s_x2[k - c0] = x2
            n = c1 - c0
            if adaptive and normalized and sqrt_rate:  # VW's default: vectorised
                for q in range(n):
                    m = s_m[q]
                    x2 = s_x2[q]
                    s_g[q] = fdiv(F32(1.0), F32(math.sqrt(s_g[q]))) * fdiv(F32(1.0), m)
                    nx2 = fdiv(x2, m * m)
                    s_m[q] = F32(1.0) if x2 > FLT_MAX else nx2
            else:
                for q in range(n):
                    m = s_m[q]
                    x2 = s_x2[q]
                    s_g[q] = _rate(s_g[q], m, adaptive, normalized, sqrt_rate, neg_q,
                                   neg_norm_power)  # fmt: skip
                    if normalized:
                        nx2 = x2 / (m * m)
                        s_m[q] = F32(1.0) if x2 > FLT_MAX else nx2
            for k in range(c0, c1):
                r = s_g[k - c0]
                table[slots[k], 3] = r  # the update uses the slot's last rate (VW's spare)
                ppu += s_x2[k - c0] * r
                if normalized:
                    nx += s_m[k - c0]
        if normalized:
            gstate[g_norm] += F64(a32) * F64(nx)
            gstate[g_total] += F64(a32)
            gstate[G_MULT] = _normalizer(
                F32(gstate[g_total]), F32(gstate[g_norm]), sqrt_rate, adaptive, neg_norm_power
            )
            ppu = ppu * F32(gstate[G_MULT])
    # (3) the update
    scale = eta * a32
    if not adaptive:
        scale = scale * F32(F32(F64(t0) + gstate[G_T]) ** neg_q)
    if invariant:
        u = update32(loss_id, p, y, scale, ppu, tau, lmin, lmax)
    else:
        u = unsafe_update32(loss_id, p, y, scale, tau, lmin, lmax)
    if reg and abs(F64(u)) > 1e-8:
        dev1 = F64(dloss32(loss_id, p, y, tau, lmin, lmax))
        if abs(dev1) > 1e-8:
            eta_bar = -F64(u) / dev1
            gstate[G_CONTRACTION] *= 1.0 - F64(l2) * eta_bar
        else:
            eta_bar = 0.0
        u = u / F32(gstate[G_CONTRACTION])
        gstate[G_GRAVITY] += eta_bar * F64(l1)
    if u != u:
        u = F32(0.0)
    if u != F32(0.0):
        if normalized:
            u = u * F32(gstate[G_MULT])
        for k in range(lo, hi):
            j = slots[k]
            x = F32(values[k])
            if x < FLT_MAX and x > -FLT_MAX:
                if adaptive or normalized:
                    x = x * table[j, 3]
                table[j, 0] = table[j, 0] + u * x


@jit_noalloc
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    rule = rule_of(params)
    l1 = rule[9]
    for i in range(indptr.shape[0] - 1):
        prefetch_example(table, indptr, indices, i + 1)
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = F32(labels[i])
        a = weights[i]
        # (1) predict: c · (base + Σ trunc(w_j, g) x_j), then clip
        grav = F32(gstate[G_GRAVITY])
        p = F32(bases[i])
        if l1 > F32(0.0):
            for k in range(lo, hi):
                p += trunc(F32(table[indices[k], 0]), grav) * F32(values[k])
        else:
            for k in range(lo, hi):
                p += F32(table[indices[k], 0]) * F32(values[k])
        p = p * F32(gstate[G_CONTRACTION])
        write_raw(preds, indptr, i, F64(p))
        pc, learn, lv = score32(stats, rows, gstate, params, loss_id, F64(p), F64(y), a, hi - lo)
        p = F32(pc)
        preds[i] = F64(p)
        if not learn:
            continue
        gstate[G_T] += a
        gstate[G_N] += 1.0
        a32 = F32(a)
        if not lv > F32(0.0):
            continue  # the zero-loss gate: nothing moves, not even the normalizer
        step(table, gstate, G_NORM, G_TOTAL, indices, values, lo, hi, p, y, a32, loss_id, rule)
        if gstate[G_CONTRACTION] < 1e-9 or gstate[G_GRAVITY] > 1e3:
            rebase(table, gstate, params)


@jit
def current_weights(table, gstate, params, slots, out):
    g = F32(gstate[G_GRAVITY])
    c = F32(gstate[G_CONTRACTION])
    for k in range(slots.shape[0]):
        out[k] = trunc(F32(table[slots[k], 0]), g) * c


@jit
def rebase(table, gstate, params):
    """Settle gravity and contraction into every weight (VW's ``sync_weights``)."""
    g = F32(gstate[G_GRAVITY])
    c = F32(gstate[G_CONTRACTION])
    if g == F32(0.0) and c == F32(1.0):
        return
    for j in range(table.shape[0]):
        w = table[j, 0]
        if w != 0.0:
            table[j, 0] = trunc(F32(w), g) * c
    gstate[G_GRAVITY] = 0.0
    gstate[G_CONTRACTION] = 1.0
    gstate[G_SYNCS] += 1.0


def init_gstate(params: np.ndarray) -> np.ndarray:
    """No gravity, contraction 1; with ``--initial-t`` t0 > 0 the normalizer
    starts as if t0 examples of norm 1 had been seen (as VW)."""
    gstate = np.zeros(GSTATE_SIZE)
    gstate[G_CONTRACTION] = 1.0
    t0 = F64(np.float32(params[P_T0]))
    if t0 > 0.0:
        gstate[G_NORM] = t0
        gstate[G_TOTAL] = t0
    return gstate


SPEC = LearnerSpec(
    name="gd",
    ncols=4,
    fresh=(0.0, 0.0, 0.0, 0.0),
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=init_gstate,
    dtype=np.float32,
    stored_cols=3,
)
