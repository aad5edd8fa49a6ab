"""VW's ``--confidence`` (with ``--confidence_after_training``): gd's predictions with a
confidence, ``|p| / s``, ``s`` gd's sensitivity (:func:`streamlearn.learners.active.sensitivity`:
how far a unit update of the example would move its prediction).

As VW's ``reductions/confidence.cc`` (between gd and its scorer): a labeled example learned
asks gd's sensitivity before it learns (``--confidence_after_training``: after), with the
prediction VW's example holds at that moment -- before learning, none yet (VW's driver does
not predict first under a learner that returns its prediction from ``learn``; an example
fresh from VW's pool holds 0); after, the one just made.  An example only predicted
(unlabeled, weight 0, held out, ``-t``) asks it with the opposite of its prediction's sign as
its label (``+1`` for ``p <= 0``).  The learning is gd's; the kernel writes each row's
prediction, then its confidence (``preds``: 3n values, the third n unused).
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.active import sensitivity, sensitivity_of
from streamlearn.learners.base import (
    G_N,
    G_T,
    P_BINARY,
    P_LEARN,
    P_LOGISTIC_MAX,
    P_LOGISTIC_MIN,
    P_PROGRESS,
    P_QUANTILE_TAU,
    add_scored,
    begin_example,
    binary_loss,
    clip,
    row_span,
    write_raw,
)
from streamlearn.learners.losses import LOGISTIC, loss32, square_grad32
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64


@jit_inline
def _none_gamma(loss_id, p, rule):
    """VW's squared gradient of a prediction against the label "none" (FLT_MAX): infinite
    but under the quantile loss -- VW's logistic loss mixes FLT_MAX's standardized label,
    which sl's logistic loss, reading labels beyond 1 as 1, does not."""
    if loss_id == LOGISTIC:
        return F32(np.inf)
    return square_grad32(loss_id, p, F32(3.4028234663852886e38), rule[12], rule[13], rule[14])


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, after):  # fmt: skip
    """gd's ``train_batch`` with each row's confidence at ``preds[n + i]`` (``after``: VW's
    ``--confidence_after_training``)."""
    rule = gd.rule_of(params)
    l1 = rule[9] > F32(0.0)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    binary = params[P_BINARY]
    n = indptr.shape[0] - 1
    for i in range(n):
        preds[2 * n + i] = 0.0
        if status[i] != 0:
            preds[i] = np.nan
            preds[n + i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        y32 = F32(y)
        a = F32(weights[i])
        labeled, holdout = begin_example(stats, params, y)
        extend = labeled and not holdout and params[P_LEARN] != 0.0
        learn = extend and a > F32(0.0)
        grav = F32(gstate[gd.G_GRAVITY])
        raw = F32(bases[i])
        for k in range(lo, hi):
            w = F32(table[indices[k], 0])
            raw += (gd.trunc(w, grav) if l1 else w) * F32(values[k])
        raw = raw * F32(gstate[gd.G_CONTRACTION])
        write_raw(preds, indptr, i, F64(raw))
        p = F32(clip(gstate, params, loss_id, F64(raw), y, extend))
        sens = F32(0.0)
        # the label the sensitivity reads, and the prediction VW's example holds then
        ask = y32 if labeled else (F32(-1.0) if p > F32(0.0) else F32(1.0))
        if not after:
            sens = sensitivity(table, gstate, indices, values, lo, hi,
                               F32(0.0) if labeled else p, ask, a, loss_id, rule)  # fmt: skip
        lv = loss32(loss_id, p, y32, tau, lmin, lmax) if labeled else F32(0.0)
        if learn:
            gstate[G_T] += F64(a)
            gstate[G_N] += 1.0
            if lv > F32(0.0):
                gd.step(table, gstate, gd.G_NORM, gd.G_TOTAL, indices, values, lo, hi, p, y32, a,
                        loss_id, rule)  # fmt: skip
                if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
                    gd.rebase(table, gstate, params)
        if after and labeled:
            sens = sensitivity(table, gstate, indices, values, lo, hi, p, y32, a, loss_id, rule)
        elif after:  # (the label is VW's "none" again, FLT_MAX: its gradient overflows)
            sens = sensitivity_of(table, gstate, indices, values, lo, hi, _none_gamma(
                loss_id, p, rule) * a, a, rule)  # fmt: skip
        shown = F64(lv)
        if labeled and binary != 0.0:
            shown = binary_loss(F64(p) if binary == 1.0 else 1.0, y, shown)
        add_scored(stats, rows, F64(p), y, F64(a), hi - lo, labeled, holdout, shown,
                   params[P_PROGRESS])  # fmt: skip
        preds[i] = F64(p)
        preds[n + i] = F64(fdiv(abs(p), sens))  # (C's: inf or nan for a sensitivity of 0)
