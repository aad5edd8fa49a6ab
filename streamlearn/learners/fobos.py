"""FoBoS with ℓ1, ℓ2² or elastic net, lazily in O(nnz) per example.

Forward-backward splitting (Duchi & Singer 2009) as made lazy by Lipton &
Elkan (2015, §6).  Objective ``ℓ(w) + λ1 ‖w‖₁ + (λ2 / 2) ‖w‖₂²`` (``--l1``,
``--l2``).  Dense form, for a learned example t with importance a_t and rate η_t::

    w ← w − η_t a_t ∂ℓ(p_t, y_t) x_t                          (forward: gradient step)
    w_j ← argmin_v ½ (v − w_j)² + η_t λ1 |v| + η_t (λ2/2) v²  for every j  (backward, eq. 3)
        = sgn(w_j) max(0, |w_j| − η_t λ1) / (1 + η_t λ2)

i.e. soft-threshold first, then shrink.  Three variants, resolved from the
options by :func:`resolve` (each a :class:`LearnerSpec` with its own name):

``fobos_l1`` (λ2 = 0): ``w_j ← sgn(w_j) max(0, |w_j| − η_t λ1)``.  Lazy form
    (eq. 4): ``|w| ← max(0, |w| − λ1 (S(t) − S(s)))`` with ``S(t) = Σ_{τ≤t} η_τ``.
    Per slot: weight, snapshot S(s) -- 16 bytes.  The truncated-gradient
    kernel with K = 1, θ = ∞, to 1e-12 (S is a compensated sum here).
``fobos_l2`` (λ1 = 0): ``w_j ← w_j / (1 + η_t λ2)``.  Lazy form (eq. 15):
    ``w ← w P′(t)/P′(s)`` with ``P′(t) = Π_{τ≤t} 1/(1 + η_τ λ2)``.  Per slot:
    weight, snapshot P′(s) -- 16 bytes.  Rebased when P′ < ``ledger.P_MIN``.
``fobos_enet`` (both): lazy form (eq. 16, with B′ summing η_τ / P′(τ−1), the
    correction of DESIGN.md)::

        |w| ← max(0, |w| P′(t)/P′(s) − λ1 P′(t) (B′(t) − B′(s)))

    Per slot: weight, snapshots P′(s), B′(s) -- 24 bytes
    (:mod:`streamlearn.learners.ledger`).

With λ1 = λ2 = 0, FoBoS is plain SGD and :func:`resolve` returns its spec.

>>> resolve(0.1, 0.0).name, resolve(0.0, 0.1).name, resolve(0.1, 0.1).name
('fobos_l1', 'fobos_l2', 'fobos_enet')
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import ledger, sgd
from streamlearn.learners.base import (
    P_L1,
    P_L2,
    P_QUANTILE_TAU,
    LearnerSpec,
    prefetch_example,
    row_span,
    score,
    zero_gstate,
)
from streamlearn.learners.ledger import G_B, G_P, MARK, P_MIN, accumulate, reset_sums, settle
from streamlearn.learners.losses import dloss
from streamlearn.learners.schedules import advance
from streamlearn.system.jit import jit, jit_noalloc

G_S = G_B  # fobos_l1: S(t) = Σ η_τ, compensated (grows only linearly: no rebase needed)

# ---- elastic net: the shared ledger kernels in the FoBoS form ----------------


@jit_noalloc
def train_enet(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    ledger.train_enet(
        ledger.FORM_FOBOS, table, gstate, params, loss_id, indptr, indices, values, labels,
        weights, bases, status, stats, rows, preds,
    )


@jit
def current_enet(table, gstate, params, slots, out):
    ledger.current_enet(table, gstate, params, slots, out)


@jit
def rebase_enet(table, gstate, params):
    ledger.rebase_enet(table, gstate, params)


# ---- ℓ1 alone: soft thresholding, ledger S ----------------------------------


@jit_noalloc
def train_l1(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    l1 = params[P_L1]
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
            ss = table[j, 1]
            if w != 0.0 and ss != MARK and ss != s:
                w = settle(w, 1.0, l1 * (s - ss))
                table[j, 0] = w
            table[j, 1] = MARK
            p += w * values[k]
        p, learn = score(stats, rows, gstate, params, loss_id, p, y, a, hi - lo)
        preds[i] = p
        if not learn:
            for k in range(lo, hi):
                table[indices[k], 1] = s
            continue
        eta = advance(gstate, params, a)
        g = eta * a * dloss(loss_id, p, y, params[P_QUANTILE_TAU])
        if g != 0.0:
            for k in range(lo, hi):
                table[indices[k], 0] -= g * values[k]
        s = accumulate(gstate, eta)
        owed = l1 * eta
        for k in range(lo, hi):
            j = indices[k]
            if table[j, 1] == MARK:
                w = table[j, 0]
                if w != 0.0:
                    table[j, 0] = settle(w, 1.0, owed)
                table[j, 1] = s


@jit
def current_l1(table, gstate, params, slots, out):
    l1 = params[P_L1]
    s = gstate[G_S]
    for k in range(slots.shape[0]):
        j = slots[k]
        w = table[j, 0]
        if w != 0.0 and table[j, 1] != s:
            w = settle(w, 1.0, l1 * (s - table[j, 1]))
        out[k] = w


@jit
def rebase_l1(table, gstate, params):
    l1 = params[P_L1]
    s = gstate[G_S]
    for j in range(table.shape[0]):
        w = table[j, 0]
        if w != 0.0:  # a zero weight's snapshot is never read: leave its page alone
            if table[j, 1] != s:
                table[j, 0] = settle(w, 1.0, l1 * (s - table[j, 1]))
            table[j, 1] = 0.0
    reset_sums(gstate)


# ---- ℓ2² alone: multiplicative shrink, ledger P′ ------------------------------


@jit_noalloc
def train_l2(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    l2 = params[P_L2]
    for i in range(indptr.shape[0] - 1):
        prefetch_example(table, indptr, indices, i + 1)
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        P = gstate[G_P]
        p = bases[i]
        for k in range(lo, hi):
            j = indices[k]
            w = table[j, 0]
            ps = table[j, 1]
            if w != 0.0 and ps != MARK and ps != P:
                w = w * (P / ps)
                table[j, 0] = w
            table[j, 1] = MARK
            p += w * values[k]
        p, learn = score(stats, rows, gstate, params, loss_id, p, y, a, hi - lo)
        preds[i] = p
        if not learn:
            for k in range(lo, hi):
                table[indices[k], 1] = P
            continue
        eta = advance(gstate, params, a)
        g = eta * a * dloss(loss_id, p, y, params[P_QUANTILE_TAU])
        if g != 0.0:
            for k in range(lo, hi):
                table[indices[k], 0] -= g * values[k]
        q = 1.0 + eta * l2
        P = P / q
        for k in range(lo, hi):
            j = indices[k]
            if table[j, 1] == MARK:
                table[j, 0] = table[j, 0] / q
                table[j, 1] = P
        gstate[G_P] = P
        if P < P_MIN:
            rebase_l2(table, gstate, params)


@jit
def current_l2(table, gstate, params, slots, out):
    P = gstate[G_P]
    for k in range(slots.shape[0]):
        j = slots[k]
        w = table[j, 0]
        if w != 0.0 and table[j, 1] != P:
            w = w * (P / table[j, 1])
        out[k] = w


@jit
def rebase_l2(table, gstate, params):
    P = gstate[G_P]
    for j in range(table.shape[0]):
        w = table[j, 0]
        if w != 0.0:  # a zero weight's snapshot is never read: leave its page alone
            if table[j, 1] != P:
                table[j, 0] = w * (P / table[j, 1])
            table[j, 1] = 1.0
    reset_sums(gstate)


L1 = LearnerSpec(
    name="fobos_l1",
    ncols=2,
    fresh=(0.0, 0.0),
    train_batch=train_l1,
    current_weights=current_l1,
    rebase=rebase_l1,
    init_gstate=zero_gstate,
)
L2 = LearnerSpec(
    name="fobos_l2",
    ncols=2,
    fresh=(0.0, 0.0),
    train_batch=train_l2,
    current_weights=current_l2,
    rebase=rebase_l2,
    init_gstate=ledger.init_gstate,
    stamp=(1.0,),  # P = 1 right after init_gstate or rebase
)
ENET = LearnerSpec(
    name="fobos_enet",
    ncols=3,
    fresh=(0.0, 0.0, 0.0),
    train_batch=train_enet,
    current_weights=current_enet,
    rebase=rebase_enet,
    init_gstate=ledger.init_gstate,
    stamp=(1.0, 0.0),  # P = 1 (and B = 0) right after init_gstate or rebase
)
SPECS = (L1, L2, ENET)


def resolve(l1: float, l2: float) -> LearnerSpec:
    """The FoBoS variant for these strengths (plain SGD when both are 0)."""
    if l1 < 0.0 or l2 < 0.0:
        raise ValueError("--l1 and --l2 must be >= 0")
    if l2 == 0.0:
        return L1 if l1 != 0.0 else sgd.SPEC
    return ENET if l1 != 0.0 else L2
