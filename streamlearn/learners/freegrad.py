"""FreeGrad (Mhammedi & Koolen 2020, "Lipschitz and comparator-norm adaptivity in online
learning", eq. 9 and Algorithm 2, per coordinate), VW's ``--freegrad``.

As VW implements it in ``reductions/freegrad.cc``, operation for operation in
float32, with its options: ``--fepsilon`` ε (initial wealth, 1),
``--flipschitz-const`` L (a known bound on the gradients, 0 = none), the
FreeRange ``--restart``\\s, and ``--project`` onto a ball of ``--radius``
(adaptive when not given: ε √S, Cutkosky 2020's constraint reduction, Alg. 1).

Per slot ``j`` (six float32, 24 bytes), VW's names::

    w_j  (W)      the weight of the slot's last step (saved; predicts unlabeled examples)
    G_j  (G_SUM)  sum of (clipped) gradients
    V_j  (V_SUM)  sum of squared gradients
    h1_j (H1)     first non-zero |gradient| (or L), the scale hint
    h_j  (HT)     largest |gradient| seen
    S_j  (S)      Σ |clipped g| / h, for the restarts

and ``gstate`` the global Σ a·‖clipped g‖/max‖clipped g‖ (starts at 1) and the
largest ‖clipped g‖.  The weight of a slot (eq. 9), 0 until h1_j > 0::

    w_j = −G ε (2V + h|G|) h1² / (2 (V + h|G|)² √V) · exp(G² / (2V + 2h|G|))

A learned example (x, y, importance a): p = Σ w_j x_j over its features
(scaled onto the ball when projecting; the base is not added), clipped; then
with g = ℓ'(p, y) (the importance enters below, not in g) each feature's
g x_j is tilted (projection), clipped to h_j, and added to G_j, V_j, S_j as
``freegrad.cc`` does (``a − 1`` further unclipped copies).  Every other
example (unlabeled, held out, weight 0) is predicted as ``base + w·x``, as
VW does.  Only the slots of x change: O(nnz) per example.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.base import (
    G_N,
    G_T,
    G_USER,
    GSTATE_SIZE,
    P_FREEGRAD_EPSILON,
    P_FREEGRAD_LIPSCHITZ,
    P_FREEGRAD_PROJECT,
    P_FREEGRAD_RADIUS,
    P_FREEGRAD_RESTART,
    LearnerSpec,
    begin_scored,
    div32,
    end_scored,
    prefetch_example,
    row_span,
    stored_prediction,
    write_raw,
)
from streamlearn.learners.losses import dloss32, expf
from streamlearn.system.jit import jit, jit_inline, jit_noalloc

F32 = np.float32
F64 = np.float64

W, G_SUM, V_SUM, H1, HT, S = range(6)
G_TOTAL = G_USER  # Σ a of learned examples (VW keeps it; nothing reads it)
G_GRAD_NORMS = G_USER + 1  # Σ a ‖clipped g‖ / max ‖clipped g‖, from 1 (float32 in VW)
G_MAX_NORM = G_USER + 2  # the largest ‖clipped g‖ of an example (float32 in VW)


@jit_inline
def weight(table, j, eps):
    """Eq. 9 from the slot's sums: the weight it bets, 0 until a gradient was seen."""
    h1 = F32(table[j, H1])
    if not h1 > F32(0.0):
        return F32(0.0)
    ht = F32(table[j, HT])
    G = F32(table[j, G_SUM])
    aG = abs(G)
    V = F32(table[j, V_SUM])
    num = -G * eps * (F32(2.0) * V + ht * aG) * (h1 * h1)
    d = V + ht * aG
    den = F32(2.0) * (d * d) * F32(math.sqrt(V))
    e = expf(div32(aG * aG, F32(2.0) * V + F32(2.0) * ht * aG))
    return div32(num, den) * e


@jit_noalloc
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    eps = F32(params[P_FREEGRAD_EPSILON])
    lipschitz = F32(params[P_FREEGRAD_LIPSCHITZ])
    restart = params[P_FREEGRAD_RESTART] != 0.0
    project = params[P_FREEGRAD_PROJECT] != 0.0
    fixed_radius = params[P_FREEGRAD_RADIUS] > 0.0  # 0: adaptive
    for i in range(indptr.shape[0] - 1):
        prefetch_example(table, indptr, indices, i + 1)
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        labeled, holdout, extend, learn = begin_scored(stats, params, y, a)
        norm_w = F32(0.0)
        radius = F32(0.0)
        if learn:
            gstate[G_TOTAL] += a
            p = F32(0.0)
            sq = F32(0.0)
            for k in range(lo, hi):
                w = weight(table, indices[k], eps)
                sq += w * w
                p += w * F32(values[k])
            norm_w = F32(math.sqrt(sq))
            if project:
                if fixed_radius:
                    radius = F32(params[P_FREEGRAD_RADIUS])
                else:
                    radius = eps * F32(math.sqrt(F32(gstate[G_GRAD_NORMS])))
                if norm_w > radius:
                    p *= div32(radius, norm_w)
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
        a32 = F32(a)
        extra = a32 - F32(1.0)  # the importance: a − 1 further copies, unclipped
        g = dloss32(loss_id, p, F32(y))
        g_dot_w = F32(0.0)
        for k in range(lo, hi):
            g_dot_w += (g * F32(values[k])) * weight(table, indices[k], eps)
        sq_clipped = F32(0.0)
        for k in range(lo, hi):
            j = indices[k]
            gx = g * F32(values[k])
            tilde = gx
            h1 = F32(table[j, H1])
            ht = F32(table[j, HT])
            if h1 > F32(0.0):
                table[j, W] = weight(table, j, eps)
            if project and norm_w > radius and g_dot_w < F32(0.0):
                tilde = gx - div32(g_dot_w * F32(table[j, W]), norm_w * norm_w)
            if tilde == F32(0.0):
                continue
            clipped = tilde
            at = abs(tilde)
            if h1 == F32(0.0):
                hint = at if lipschitz == F32(0.0) else lipschitz
                table[j, H1] = hint
                table[j, HT] = hint
                table[j, V_SUM] = F32(table[j, V_SUM]) + a32 * (at * at)
            elif at > ht:
                clipped *= div32(ht, at)
                table[j, HT] = at
            sq_clipped += clipped * clipped
            ratio = div32(F32(table[j, HT]), F32(table[j, H1]))
            if restart and ratio > F32(table[j, S]) + F32(2.0):
                table[j, H1] = table[j, HT]
                table[j, G_SUM] = clipped + extra * tilde
                table[j, V_SUM] = clipped * clipped + extra * (tilde * tilde)
            else:
                table[j, G_SUM] = F32(table[j, G_SUM]) + (clipped + extra * tilde)
                table[j, V_SUM] = F32(table[j, V_SUM]) + (clipped * clipped
                                                          + extra * (tilde * tilde))  # fmt: skip
            if ht > F32(0.0):
                step = div32(abs(clipped), ht) + div32(extra * at, F32(table[j, HT]))
                table[j, S] = F32(table[j, S]) + step
        norm = F32(math.sqrt(sq_clipped))
        top = F32(gstate[G_MAX_NORM])
        if norm > top:
            top = norm
            gstate[G_MAX_NORM] = F64(top)
        if top > F32(0.0):
            gstate[G_GRAD_NORMS] = F64(F32(gstate[G_GRAD_NORMS]) + div32(a32 * norm, top))


@jit
def current_weights(table, gstate, params, slots, out):
    for k in range(slots.shape[0]):
        out[k] = table[slots[k], 0]


@jit
def rebase(table, gstate, params):
    pass


def init_gstate(params: np.ndarray) -> np.ndarray:
    gstate = np.zeros(GSTATE_SIZE)
    gstate[G_GRAD_NORMS] = 1.0
    return gstate


SPEC = LearnerSpec(
    name="freegrad",
    ncols=6,
    fresh=(0.0,) * 6,
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=init_gstate,
    dtype=np.float32,
    stored_cols=6,
)
