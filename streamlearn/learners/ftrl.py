"""FTRL-proximal (McMahan et al. 2013, Algorithm 1), VW's ``--ftrl``.

Per slot: the weight ``w_j``, the dual sum ``z_j`` and the sum of squared
gradients ``n_j`` (24 bytes).  For a learned example (x, y, importance a) with
clipped prediction ``p = w·x + base``, ``g = a ℓ'(p, y)``, and for each
feature j of x, in order::

    g_j = g x_j
    σ_j = (√(n_j + g_j²) − √n_j) / α
    z_j += g_j − σ_j w_j
    n_j += g_j²
    w_j = 0                                               if |z_j| ≤ λ1
          −(z_j − sign(z_j) λ1) / ((β + √n_j)/α + λ2)     otherwise

with α = ``--ftrl-alpha`` (0.5), β = ``--ftrl-beta`` (1), λ1 = ``--l1``,
λ2 = ``--l2`` (the paper's per-coordinate rate η_j = α / (β + √n_j), eq. for
w in Algorithm 1).  Untouched slots do not change, so an example costs
O(nnz) with no timestamps, and with λ1 > 0 most weights are exactly 0.  A
slot whose weight is 0 may still hold z and n, so model files keep every
row with a non-zero column.

Computed in float32 in VW's order of operations (``reductions/ftrl.cc``), so
that ``sl train --algo ftrl`` and ``vw --ftrl`` give the same progressive loss.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.base import (
    G_N,
    G_T,
    P_FTRL_ALPHA,
    P_FTRL_BETA,
    P_L1,
    P_L2,
    P_QUANTILE_TAU,
    LearnerSpec,
    prefetch_example,
    row_span,
    score32,
    write_raw,
    zero_gstate,
)
from streamlearn.learners.losses import dloss32
from streamlearn.system.jit import fdiv, jit, jit_inline, jit_noalloc

F32 = np.float32
F64 = np.float64  # (numba's float() keeps a float32 a float32)


@jit_inline
def step(table, slots, values, lo, hi, g, alpha, beta, l1, l2):
    """Algorithm 1's update of the slots ``slots[lo:hi]`` for the gradient ``g = a ℓ'(p, y)``
    (one call per learned example; one per class under one-against-all)."""
    for k in range(lo, hi):
        j = slots[k]
        gj = g * F32(values[k])
        w = F32(table[j, 0])
        z = F32(table[j, 1])
        n = F32(table[j, 2])
        n_new = n + gj * gj
        sq_new = F32(math.sqrt(n_new))
        # (IEEE divisions: a gradient whose square underflows, with --ftrl-beta 0 and no
        # l2, divides by 0 and ends as a non-finite weight the driver reports, as VW's)
        sigma = fdiv(sq_new - F32(math.sqrt(n)), alpha)
        z = z + (gj - sigma * w)
        sign = F32(-1.0) if z <= F32(0.0) else F32(1.0)
        az = z * sign
        if az <= l1:
            w = F32(0.0)
        else:
            rate = fdiv(F32(1.0), l2 + fdiv(beta + sq_new, alpha))
            w = rate * sign * (l1 - az)
        table[j, 0] = w
        table[j, 1] = z
        table[j, 2] = n_new


@jit_noalloc
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    alpha = F32(params[P_FTRL_ALPHA])
    beta = F32(params[P_FTRL_BETA])
    l1 = F32(params[P_L1])
    l2 = F32(params[P_L2])
    for i in range(indptr.shape[0] - 1):
        prefetch_example(table, indptr, indices, i + 1)
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = F32(labels[i])
        a = weights[i]
        p = F32(bases[i])
        for k in range(lo, hi):
            p += F32(table[indices[k], 0]) * F32(values[k])
        write_raw(preds, indptr, i, F64(p))
        pc, learn, _ = score32(stats, rows, gstate, params, loss_id, F64(p), F64(y), a, hi - lo)
        p = F32(pc)
        preds[i] = F64(p)
        if not learn:
            continue
        gstate[G_T] += a
        gstate[G_N] += 1.0
        g = dloss32(loss_id, p, y, F32(params[P_QUANTILE_TAU])) * F32(a)
        step(table, indices, values, lo, hi, g, alpha, beta, l1, l2)


@jit
def current_weights(table, gstate, params, slots, out):
    for k in range(slots.shape[0]):
        out[k] = table[slots[k], 0]


@jit
def rebase(table, gstate, params):
    pass


SPEC = LearnerSpec(
    name="ftrl",
    ncols=3,
    fresh=(0.0, 0.0, 0.0),
    dtype=np.float32,
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=zero_gstate,
    stored_cols=3,
)
