"""Truncated gradient (Langford, Li & Zhang 2009), lazily, in O(nnz) per example.

Dense form (the paper's update (6)), for a learned example t with rate η_t::

    w ← w − η_t a_t ∂ℓ(p_t, y_t) x_t                       (gradient step)
    w_j ← T1(w_j, η_t K g, θ)   for every j, when t ≡ 0 (mod K)

    T1(v, α, θ) = max(0, v − α)  if 0 ≤ v ≤ θ
                  min(0, v + α)  if −θ ≤ v ≤ 0
                  v              otherwise

with gravity g (``--l1``), threshold θ (``--theta``) and period K
(``--period``); t counts learned examples.

Lazy form: the global sum ``S = Σ η_τ`` over truncation steps τ so far, and
per slot the value of ``S`` when the slot was last settled.  Between two
touches a weight only moves toward zero, so a slot with ``|w| ≤ θ`` owes
exactly ``K g (S − S_j)`` (clipped at zero) and a slot with ``|w| > θ`` owes
nothing.  Per slot: the weight and the snapshot ``S_j`` (16 bytes).

With ``g = 0`` this is plain SGD; with ``K = 1, θ = ∞`` it is SGD with ℓ1
clipped at zero (Lipton & Elkan eq. 4).
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.base import (
    G_N,
    G_USER,
    P_L1,
    P_PERIOD,
    P_QUANTILE_TAU,
    P_THETA,
    LearnerSpec,
    prefetch_example,
    row_span,
    score,
    zero_gstate,
)
from streamlearn.learners.losses import dloss
from streamlearn.learners.schedules import advance
from streamlearn.system.jit import jit, jit_inline, jit_noalloc

G_S = G_USER  # Σ η_τ over the truncation steps so far


@jit_inline
def _settle(w, owed, theta):
    """Weight after truncation by ``owed`` (≥ 0), exact for any number of steps."""
    if w > 0.0:
        if w <= theta:
            w -= owed
            return w if w > 0.0 else 0.0
    elif w < 0.0:
        if -w <= theta:
            w += owed
            return w if w < 0.0 else 0.0
    return w


@jit_noalloc
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    theta = params[P_THETA]
    kg = params[P_PERIOD] * params[P_L1]
    period = params[P_PERIOD]
    for i in range(indptr.shape[0] - 1):
        prefetch_example(table, indptr, indices, i + 1)
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        s = gstate[G_S]
        p = bases[i]
        for k in range(lo, hi):
            j = indices[k]
            w = table[j, 0]
            if w != 0.0 and table[j, 1] != s:
                w = _settle(w, kg * (s - table[j, 1]), theta)
                table[j, 0] = w
            table[j, 1] = s
            p += w * values[k]
        p, learn = score(stats, rows, gstate, params, loss_id, p, y, a, hi - lo)
        preds[i] = p
        if not learn:
            continue
        eta = advance(gstate, params, a)
        g = eta * a * dloss(loss_id, p, y, params[P_QUANTILE_TAU])
        if g != 0.0:
            for k in range(lo, hi):
                table[indices[k], 0] -= g * values[k]
        if kg != 0.0 and gstate[G_N] % period == 0.0:
            s += eta
            gstate[G_S] = s
            owed = kg * eta
            for k in range(lo, hi):
                j = indices[k]
                if table[j, 1] != s:
                    table[j, 0] = _settle(table[j, 0], owed, theta)
                    table[j, 1] = s


@jit
def current_weights(table, gstate, params, slots, out):
    theta = params[P_THETA]
    kg = params[P_PERIOD] * params[P_L1]
    s = gstate[G_S]
    for k in range(slots.shape[0]):
        j = slots[k]
        w = table[j, 0]
        if w != 0.0 and table[j, 1] != s:
            w = _settle(w, kg * (s - table[j, 1]), theta)
        out[k] = w


@jit
def rebase(table, gstate, params):
    theta = params[P_THETA]
    kg = params[P_PERIOD] * params[P_L1]
    s = gstate[G_S]
    for j in range(table.shape[0]):
        w = table[j, 0]
        if w != 0.0:  # a zero weight's snapshot is never read: leave its page alone
            if table[j, 1] != s:
                table[j, 0] = _settle(w, kg * (s - table[j, 1]), theta)
            table[j, 1] = 0.0
    gstate[G_S] = 0.0


SPEC = LearnerSpec(
    name="tg",
    ncols=2,
    fresh=(0.0, 0.0),
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=zero_gstate,
)
