"""Plain stochastic gradient descent (Vowpal Wabbit's ``--sgd``).

Dense form, for a learned example t with importance a_t and rate η_t::

    w ← w − η_t a_t ∂ℓ(p_t, y_t) x_t

Nothing is owed between touches, so the table holds only the weights
(8 bytes per slot).  With ``--l1`` and/or ``--l2`` the ``sgd`` algorithm
resolves to the regularised variants (see :func:`streamlearn.learners.resolve`).
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.base import (
    P_QUANTILE_TAU,
    LearnerSpec,
    prefetch_example,
    row_span,
    score,
    zero_gstate,
)
from streamlearn.learners.losses import dloss
from streamlearn.learners.schedules import advance
from streamlearn.system.jit import jit, jit_noalloc


@jit_noalloc
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    for i in range(indptr.shape[0] - 1):
        prefetch_example(table, indptr, indices, i + 1)
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        p = bases[i]
        for k in range(lo, hi):
            p += table[indices[k], 0] * values[k]
        p, learn = score(stats, rows, gstate, params, loss_id, p, y, a, hi - lo)
        preds[i] = p
        if not learn:
            continue
        g = advance(gstate, params, a) * a * dloss(loss_id, p, y, params[P_QUANTILE_TAU])
        if g != 0.0:
            for k in range(lo, hi):
                table[indices[k], 0] -= g * values[k]


@jit
def current_weights(table, gstate, params, slots, out):
    for k in range(slots.shape[0]):
        out[k] = table[slots[k], 0]


@jit
def rebase(table, gstate, params):
    pass


SPEC = LearnerSpec(
    name="sgd",
    ncols=1,
    fresh=(0.0,),
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=zero_gstate,
)
