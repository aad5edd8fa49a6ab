"""Coin betting (Orabona & Pál 2016), VW's ``--coin``: a learner without a learning rate.

Each coordinate bets on the sign of its future negative gradients: the wealth
won so far (plus an initial endowment α) is wagered, a fraction of it given
by the sum of past negative gradients over a bound on their size.  This is
the COCOB form (Orabona & Tommasi 2017, "Training deep networks without
learning rates through coin betting", Algorithm 2, without its sigmoid) that
VW implements in ``reductions/ftrl.cc`` (``inner_coin_betting_*``), and this
module follows it operation for operation in float32.

Per slot ``j`` (six float32, 24 bytes), VW's names::

    w_j  (W_XT)  the weight VW predicts unlabeled examples with and saves
    θ_j  (W_ZT)  sum of negative gradients −Σ g_j
    G_j  (W_G2)  sum of absolute gradients Σ |g_j|
    m_j  (W_MX)  largest |x_j| seen
    W_j  (W_WE)  wealth: Σ −g_j w_j
    L_j  (W_MG)  largest |ℓ'|·a seen (at least β once set)

and ``gstate`` the normalizer sums N = Σ a Σ_j (x_j / m_j)² and A = Σ a.
A learned example (x, y, importance a)::

    for each j of x:  m = max(m_j, |x_j|)
                      b_j = (α + W_j) θ_j / (L_j m (L_j m + G_j))   (0 while L_j m = 0)
                      n += (x_j / m)²                                (m > 0)
    N += a n;  A += a;  s = (N + 1e-6) / A
    p = Σ b_j x_j / s            clipped to the prediction range (the base is not added)
    g = ℓ'(p, y) · a
    for each j of x, in order:
        m_j = max(m_j, |x_j|);  L_j = max(L_j, |g|, β) when |g| > L_j
        b = (α + W_j) θ_j / (L_j m_j (L_j m_j + G_j))                (0 while L_j m_j = 0)
        θ_j −= g x_j;  G_j += |g x_j|;  W_j −= g x_j b;  w_j = b / s

α = ``--ftrl-alpha`` (VW's default for ``--coin``: 4), β = ``--ftrl-beta``
(1).  Every other example (unlabeled, held out, weight 0) is predicted as
``base + w·x``, as VW does.  Only the slots of x change: O(nnz) per example.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.base import (
    G_N,
    G_T,
    G_USER,
    GSTATE_SIZE,
    P_FTRL_ALPHA,
    P_FTRL_BETA,
    LearnerSpec,
    begin_scored,
    end_scored,
    prefetch_example,
    row_span,
    stored_prediction,
    write_raw,
)
from streamlearn.learners.losses import dloss32
from streamlearn.system.jit import jit, jit_noalloc

F32 = np.float32
F64 = np.float64

ALPHA = 4.0
BETA = 1.0

W_XT, W_ZT, W_G2, W_MX, W_WE, W_MG = range(6)
G_NORM = G_USER  # Σ a · Σ_j (x_j / m_j)² (VW's normalized_sum_norm_x, in double)
G_TOTAL = G_USER + 1  # Σ a (VW's total_weight)


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
        scale = F32(1.0)
        if learn:
            p = F32(0.0)
            nx = F32(0.0)
            for k in range(lo, hi):
                j = indices[k]
                x = F32(values[k])
                m = F32(table[j, W_MX])
                ax = abs(x)
                if ax > m:
                    m = ax
                bet = F32(0.0)
                lm = F32(table[j, W_MG]) * m
                if lm > F32(0.0):
                    bet = ((alpha + F32(table[j, W_WE])) / (lm * (lm + F32(table[j, W_G2])))
                           ) * F32(table[j, W_ZT])  # fmt: skip
                p += bet * x
                if m > F32(0.0):
                    xn = x / m
                    nx += xn * xn
            gstate[G_NORM] += F64(F32(a)) * F64(nx)
            gstate[G_TOTAL] += F64(F32(a))
            scale = F32((gstate[G_NORM] + 1e-6) / gstate[G_TOTAL])
            p = p / scale
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
        ag = abs(g)
        for k in range(lo, hi):
            j = indices[k]
            x = F32(values[k])
            gx = g * x
            m = F32(table[j, W_MX])
            if abs(x) > m:
                m = abs(x)
                table[j, W_MX] = m
            lip = F32(table[j, W_MG])
            if ag > lip:
                lip = ag if ag > beta else beta
                table[j, W_MG] = lip
            bet = F32(0.0)
            lm = lip * m
            if lm > F32(0.0):
                bet = ((alpha + F32(table[j, W_WE])) / (lm * (lm + F32(table[j, W_G2])))
                       ) * F32(table[j, W_ZT])  # fmt: skip
            table[j, W_ZT] = F32(table[j, W_ZT]) + (-gx)
            table[j, W_G2] = F32(table[j, W_G2]) + abs(gx)
            table[j, W_WE] = F32(table[j, W_WE]) + (-gx * bet)
            table[j, W_XT] = bet / scale


@jit
def current_weights(table, gstate, params, slots, out):
    for k in range(slots.shape[0]):
        out[k] = table[slots[k], 0]


@jit
def rebase(table, gstate, params):
    pass


def init_gstate(params: np.ndarray) -> np.ndarray:
    return np.zeros(GSTATE_SIZE)


SPEC = LearnerSpec(
    name="coin",
    ncols=6,
    fresh=(0.0,) * 6,
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=init_gstate,
    dtype=np.float32,
    stored_cols=6,
)
