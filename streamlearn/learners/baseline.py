"""VW's ``--baseline`` (with ``--lr_multiplier``): an additive baseline learned from the
constant feature, and the residual from the other features, by gd.

As VW's ``reductions/baseline.cc`` (between gd and its scorer): each example is predicted
whole -- shown clipped to the range before its label (VW's driver predicts first under a
reduction that does not return its prediction from ``learn``), scored clipped to the range
its label widens; a learned one then gives its constant feature to
an example of its own, which gd learns with the rate times the multiplier (``--lr_multiplier``,
default 1; 0: the larger label magnitude seen, between 0.0001 and 1000; none under the
logistic loss) from no initial score, and gd learns the line without its constant feature
from that example's (clipped) prediction as its initial score.  Two gd steps share gd's
state (the normalizer sums take both); VW's clock counts the example once.

``conf`` (float64): the line ends with the constant feature (not ``--noconstant``), the
multiplier, whether the rate is scaled (not the logistic loss).
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_LABEL_MAX,
    G_LABEL_MIN,
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
from streamlearn.learners.losses import loss32, square_grad32
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
C_CONSTANT, C_MULTIPLIER, C_SCALED = range(3)
MAX_MULTIPLIER = F32(1000.0)


@jit_inline
def _score(table, gstate, indices, values, lo, hi, base, l1):
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(base)
    for k in range(lo, hi):
        w = F32(table[indices[k], 0])
        p += (gd.trunc(w, grav) if l1 else w) * F32(values[k])
    return p * F32(gstate[gd.G_CONTRACTION])


@jit_inline
def _learn(table, gstate, params, loss_id, indices, values, lo, hi, base, y, a, rule, l1):
    """gd's learn of features ``lo..hi`` from the initial score ``base``: its clipped
    prediction, then the step when the loss is not 0."""
    p = F32(clip(gstate, params, loss_id, F64(_score(table, gstate, indices, values, lo, hi,
                                                       base, l1)), F64(y), False))  # fmt: skip
    if loss32(loss_id, p, y, rule[12], rule[13], rule[14]) > F32(0.0):
        gd.step(table, gstate, gd.G_NORM, gd.G_TOTAL, indices, values, lo, hi, p, y, a, loss_id,
                rule)  # fmt: skip
        if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
            gd.rebase(table, gstate, params)
    return p


@jit_inline
def _nothing(gstate, params, loss_id, base, y, a, rule):
    """gd's learn of an example with no feature: its prediction ``base`` (clipped), and with
    ``--normalized`` the normalizer's total weight (its sum of x² stays; VW's multiplier
    is then infinite until the next step sets it, which sl's steps do before reading it)."""
    p = F32(clip(gstate, params, loss_id, F64(base), F64(y), False))
    gamma = a * square_grad32(loss_id, p, y, rule[12], rule[13], rule[14])
    if rule[1] and gamma != F32(0.0) and loss32(loss_id, p, y, rule[12], rule[13],
                                                rule[14]) > F32(0.0):  # fmt: skip
        gstate[gd.G_TOTAL] += F64(a)
    return p


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, conf):  # fmt: skip
    rule = gd.rule_of(params)
    l1 = rule[9] > F32(0.0)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    binary = params[P_BINARY]
    constant = conf[C_CONSTANT] != 0.0
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        y32 = F32(y)
        a = F32(weights[i])
        labeled, holdout = begin_example(stats, params, y)
        extend = labeled and not holdout and params[P_LEARN] != 0.0
        raw = _score(table, gstate, indices, values, lo, hi, bases[i], l1)
        write_raw(preds, indptr, i, F64(raw))
        # VW's driver predicts first (the range before the label: what is shown), then learns
        # (its scorer widens the range first: the prediction the loss is of)
        shown_p = F32(clip(gstate, params, loss_id, F64(raw), y, False))
        p = F32(clip(gstate, params, loss_id, F64(raw), y, extend))
        lv = loss32(loss_id, p, y32, tau, lmin, lmax) if labeled else F32(0.0)
        shown = F64(lv)
        if labeled and binary != 0.0:
            shown = binary_loss(F64(shown_p) if binary == 1.0 else 1.0, y, shown)
        add_scored(stats, rows, F64(shown_p), y, F64(a), hi - lo, labeled, holdout, shown,
                   params[P_PROGRESS])  # fmt: skip
        preds[i] = F64(shown_p)
        if not (extend and a > F32(0.0)):
            continue
        gstate[G_T] += F64(a)
        gstate[G_N] += 1.0
        mid = hi - 1 if constant and hi > lo else hi  # (the constant: the line's last feature)
        # the baseline: the constant alone, from no initial score, at a multiplied rate
        mult = F32(conf[C_MULTIPLIER])
        if mult == F32(0.0):
            top = max(abs(F32(gstate[G_LABEL_MIN])), abs(F32(gstate[G_LABEL_MAX])))
            mult = min(max(F32(0.0001), top), MAX_MULTIPLIER)
        eta = rule[8] * mult if conf[C_SCALED] != 0.0 else rule[8]
        scaled = (rule[0], rule[1], rule[2], rule[3], rule[4], rule[5], rule[6], rule[7], eta,
                  rule[9], rule[10], rule[11], rule[12], rule[13], rule[14])  # fmt: skip
        if mid < hi:
            pb = _learn(table, gstate, params, loss_id, indices, values, mid, hi, F32(0.0), y32,
                        a, scaled, l1)  # fmt: skip
        else:  # (--noconstant: VW's gd learns an example of no feature: its sums take it)
            pb = _nothing(gstate, params, loss_id, F32(0.0), y32, a, rule)
        # the residual: the rest of the line, from the baseline's prediction
        if lo < mid:
            _learn(table, gstate, params, loss_id, indices, values, lo, mid, pb, y32, a, rule,
                   l1)  # fmt: skip
        else:
            _nothing(gstate, params, loss_id, pb, y32, a, rule)
