"""Lazy elastic net: global running sums and per-slot snapshots (Lipton & Elkan 2015).

Shared by :mod:`streamlearn.learners.sgd_elastic` (SGD form) and
:mod:`streamlearn.learners.fobos` (FoBoS form).  Both regularisers act on one
weight, at learned step t with rate η_t, as a map of its magnitude that keeps
its sign and clips at zero::

    |w| ← max(0, a_t |w| − λ1 c_t)                                  (R)

    SGD form   (paper eq. 9):    a_t = 1 − η_t λ2,      c_t = η_t
    FoBoS form (paper §6.2):     a_t = 1 / (1 + η_t λ2), c_t = a_t η_t

With a_t > 0 and c_t ≥ 0 each map is monotone and zero stays zero, so the
steps s+1, …, t compose exactly into one map of the same shape::

    |w_t| = max(0, |w_s| P(t)/P(s) − λ1 P(t) (B(t) − B(s)))         (L)

    P(t) = Π_{τ≤t} a_τ                 (eq. 6 / eq. 15)
    B(t) = Σ_{τ≤t} c_τ / P(τ)          SGD: Σ η_τ / P(τ);  FoBoS: Σ η_τ / P′(τ−1)

The FoBoS sum is the paper's B′ of eq. 16 with the correction of DESIGN.md
(divide by P′, not P).  For the SGD form the paper's eqs. 10 and 14 print
``B(t) = Σ η_τ / P(τ−1)``, which composes ``max(0, a_t (|w| − η_t λ1))``, not
eq. 9; we implement eq. 9 exactly, hence ``η_τ / P(τ)`` (see docs/algorithms.md).

Per slot (table columns): 0 the weight as of its last touch, 1 the snapshot
``P(s)``, 2 the snapshot ``B(s)`` -- 24 bytes.  The sums live in ``gstate``
(``G_P``, ``G_B``) and are reset to (1, 0) by :func:`rebase` whenever P falls
below ``P_MIN``: B ≤ Σ η / P_MIN stays far inside the float64 range too.  No
array grows with the number of examples.  B is a compensated running sum
(:func:`accumulate`), so ``B(t) − B(s)`` stays exact to ~eps·B over 10^7 steps.

Column 1 holds ``MARK`` (−1, never a valid P) between the moment a touched
slot is brought current and the moment this step's regulariser is applied
to it, so a slot repeated in one example is regularised exactly once.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.base import (
    G_USER,
    GSTATE_SIZE,
    P_L1,
    P_L2,
    P_QUANTILE_TAU,
    prefetch_example,
    score,
)
from streamlearn.learners.losses import dloss
from streamlearn.learners.schedules import advance
from streamlearn.system.jit import jit, jit_inline

G_P = G_USER  # P(t): product of the step factors a_τ since the last rebase
G_B = G_USER + 1  # B(t): Σ c_τ / P(τ) since the last rebase
G_REBASES = G_USER + 2  # number of rebases so far (diagnostic)
G_BSUM = G_USER + 3  # B as a Neumaier pair (sum, compensation): G_B is their rounded sum
G_BCOMP = G_USER + 4

P_MIN = 1e-100
"""Rebase when P falls below this (every ~230 / (η λ2) steps at a constant rate)."""

MARK = -1.0
FORM_SGD = 0
FORM_FOBOS = 1


def init_gstate(params: np.ndarray) -> np.ndarray:
    """Global state of a fresh run: P = 1, B = 0."""
    gstate = np.zeros(GSTATE_SIZE)
    gstate[G_P] = 1.0
    return gstate


@jit_inline
def accumulate(gstate, inc):
    """``B += inc`` with Neumaier compensation; returns (and stores in G_B) the new B.

    A plain running sum of 10^6 equal increments drifts by up to ~10^6 ulp (the
    bits of ``inc`` below ulp(B) are dropped the same way every step); the
    compensated one is within 1 ulp, so ``B(t) − B(s)`` is exact to ~eps·B.
    """
    s = gstate[G_BSUM]
    t = s + inc
    if abs(s) >= abs(inc):
        gstate[G_BCOMP] += (s - t) + inc
    else:
        gstate[G_BCOMP] += (inc - t) + s
    gstate[G_BSUM] = t
    b = t + gstate[G_BCOMP]
    gstate[G_B] = b
    return b


@jit_inline
def reset_sums(gstate):
    """P = 1, B = 0 (after every slot has been brought current)."""
    gstate[G_P] = 1.0
    gstate[G_B] = 0.0
    gstate[G_BSUM] = 0.0
    gstate[G_BCOMP] = 0.0
    gstate[G_REBASES] += 1.0


@jit_inline
def settle(w, ratio, owed):
    """``sgn(w) max(0, |w| ratio − owed)``: the map (L) applied to one weight."""
    if w > 0.0:
        x = w * ratio - owed
        return x if x > 0.0 else 0.0
    x = w * ratio + owed
    return x if x < 0.0 else 0.0


@jit_inline
def one_step(form, w, eta, l1, l2):
    """One step of (R), written as the dense references write it."""
    if form == FORM_SGD:
        return settle(w, 1.0 - eta * l2, eta * l1)
    return settle(w, 1.0, eta * l1) / (1.0 + eta * l2)


@jit
def train_enet(
    form, table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
    status, stats, rows, preds,
):
    """The kernel contract's ``train_batch`` for either form (``FORM_SGD``/``FORM_FOBOS``)."""
    l1 = params[P_L1]
    l2 = params[P_L2]
    for i in range(indptr.shape[0] - 1):
        prefetch_example(table, indptr, indices, i + 1)
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo = indptr[i]
        hi = indptr[i + 1]
        y = labels[i]
        a = weights[i]
        P = gstate[G_P]
        B = gstate[G_B]
        p = bases[i]
        for k in range(lo, hi):  # bring current through step t − 1, mark
            j = indices[k]
            w = table[j, 0]
            ps = table[j, 1]
            if w != 0.0 and ps != MARK and (ps != P or table[j, 2] != B):
                w = settle(w, P / ps, l1 * P * (B - table[j, 2]))
                table[j, 0] = w
            table[j, 1] = MARK
            p += w * values[k]
        p, learn = score(stats, rows, gstate, params, loss_id, p, y, a, hi - lo)
        preds[i] = p
        if not learn:
            for k in range(lo, hi):
                j = indices[k]
                table[j, 1] = P
                table[j, 2] = B
            continue
        eta = advance(gstate, params, a)
        g = eta * a * dloss(loss_id, p, y, params[P_QUANTILE_TAU])
        if g != 0.0:
            for k in range(lo, hi):
                table[indices[k], 0] -= g * values[k]
        if form == FORM_SGD:
            f = 1.0 - eta * l2
            if f <= 0.0:  # eq. 9 sends every weight to 0
                wipe(table, gstate)
                continue
            P = P * f
            B = accumulate(gstate, eta / P)
        else:
            B = accumulate(gstate, eta / P)
            P = P / (1.0 + eta * l2)
        for k in range(lo, hi):  # this step's regulariser on the touched slots, stamp
            j = indices[k]
            if table[j, 1] == MARK:
                w = table[j, 0]
                if w != 0.0:
                    table[j, 0] = one_step(form, w, eta, l1, l2)
                table[j, 1] = P
                table[j, 2] = B
        gstate[G_P] = P
        if P < P_MIN:
            rebase_enet(table, gstate, params)


@jit
def current_enet(table, gstate, params, slots, out):
    l1 = params[P_L1]
    P = gstate[G_P]
    B = gstate[G_B]
    for k in range(slots.shape[0]):
        j = slots[k]
        w = table[j, 0]
        if w != 0.0 and (table[j, 1] != P or table[j, 2] != B):
            w = settle(w, P / table[j, 1], l1 * P * (B - table[j, 2]))
        out[k] = w


@jit
def rebase_enet(table, gstate, params):
    l1 = params[P_L1]
    P = gstate[G_P]
    B = gstate[G_B]
    for j in range(table.shape[0]):
        w = table[j, 0]
        if w != 0.0:  # a zero weight's snapshots are never read: leave its page alone
            if table[j, 1] != P or table[j, 2] != B:
                table[j, 0] = settle(w, P / table[j, 1], l1 * P * (B - table[j, 2]))
            table[j, 1] = 1.0
            table[j, 2] = 0.0
    reset_sums(gstate)


@jit
def wipe(table, gstate):
    """Every weight to 0 (an SGD step with η λ2 ≥ 1), sums reset: O(d), degenerate runs only."""
    for j in range(table.shape[0]):
        if table[j, 0] != 0.0:
            table[j, 0] = 0.0
    reset_sums(gstate)
