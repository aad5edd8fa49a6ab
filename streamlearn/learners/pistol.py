"""PiSTOL (Orabona 2014, "Simultaneous model selection and optimization through
parameter-free stochastic learning", Algorithm 1, per coordinate), VW's ``--pistol``.

As VW implements it in ``reductions/ftrl.cc`` (``inner_update_pistol_*``),
operation for operation in float32.  Per slot ``j`` (four float32, 16 bytes),
VW's names::

    w_j  (W_XT)  the weight of the slot's last prediction (saved; predicts unlabeled examples)
    θ_j  (W_ZT)  sum of negative gradients −Σ g_j
    G_j  (W_G2)  sum of absolute gradients Σ |g_j|
    m_j  (W_MX)  largest |x_j| seen

A learned example (x, y, importance a)::

    for each j of x, in order:
        m_j = max(m_j, |x_j|)
        τ = 1 / (α m_j (G_j + m_j))
        w_j = √G_j β θ_j exp(θ_j² / 2 · τ) τ
        p += w_j x_j
    p clipped to the prediction range (the base is not added)
    g = ℓ'(p, y) · a
    for each j of x, in order:  θ_j −= g x_j;  G_j += |g x_j|

α = ``--ftrl-alpha`` (VW's default for ``--pistol``: 1), β = ``--ftrl-beta``
(0.5).  Every other example (unlabeled, held out, weight 0) is predicted as
``base + w·x``, as VW does.  Only the slots of x change: O(nnz) per example.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.base import (
    G_N,
    G_T,
    P_FTRL_ALPHA,
    P_FTRL_BETA,
    LearnerSpec,
    begin_scored,
    div32,
    end_scored,
    prefetch_example,
    row_span,
    stored_prediction,
    write_raw,
    zero_gstate,
)
from streamlearn.learners.losses import dloss32, expf
from streamlearn.system.jit import jit, jit_noalloc

F32 = np.float32
F64 = np.float64

ALPHA = 1.0
BETA = 0.5

W_XT, W_ZT, W_G2, W_MX = range(4)


@jit_noalloc
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    alpha = F32(params[P_FTRL_ALPHA])
    beta = F32(params[P_FTRL_BETA])
    for i in range(indptr.shape[0] - 1):
        prefetch_example(table, indptr, indices, i + 1)
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        labeled, holdout, extend, learn = begin_scored(stats, params, y, a)
        if learn:
            p = F32(0.0)
            for k in range(lo, hi):
                j = indices[k]
                x = F32(values[k])
                m = F32(table[j, W_MX])
                if abs(x) > m:
                    m = abs(x)
                    table[j, W_MX] = m
                theta = F32(table[j, W_ZT])
                G = F32(table[j, W_G2])
                tau = div32(F32(1.0), alpha * m * (G + m))
                w = F32(math.sqrt(G)) * beta * theta * expf(theta * theta / F32(2.0) * tau) * tau
                table[j, W_XT] = w
                p += w * x
        else:
            p = stored_prediction(table, indices, values, lo, hi, bases[i])
        write_raw(preds, indptr, i, F64(p))
        p = end_scored(stats, rows, gstate, params, loss_id, p, y, a, hi - lo, labeled, holdout,
                       extend)  # fmt: skip
        preds[i] = F64(p)
        if not learn:
            continue
        gstate[G_T] += a
        gstate[G_N] += 1.0
        g = dloss32(loss_id, p, F32(y)) * F32(a)
        for k in range(lo, hi):
            j = indices[k]
            gx = g * F32(values[k])
            table[j, W_ZT] = F32(table[j, W_ZT]) + (-gx)
            table[j, W_G2] = F32(table[j, W_G2]) + abs(gx)


@jit
def current_weights(table, gstate, params, slots, out):
    for k in range(slots.shape[0]):
        out[k] = table[slots[k], 0]


@jit
def rebase(table, gstate, params):
    pass


SPEC = LearnerSpec(
    name="pistol",
    ncols=4,
    fresh=(0.0,) * 4,
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=zero_gstate,
    dtype=np.float32,
    stored_cols=4,
)
