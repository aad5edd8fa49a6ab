"""Multilabel one-against-all (VW's ``--multilabel_oaa K``): K binary problems in one table.

As VW's ``reductions/multilabel_oaa.cc`` over its ``scorer`` and ``gd``:

* **Slots** as :mod:`streamlearn.learners.oaa`'s (class c of feature slot h at
  ``(h·s + c) mod 2^b``, ``s`` = K rounded up to a power of 2).
* **Labels** (float64[n, 1 + K], :mod:`streamlearn.io.multilabels`): the classes the line
  gives, 0-based, in its order.  Classes 0..K-1 are visited in turn; class c learns +1
  when it is the next class of the list (the list's cursor then moves on), -1 otherwise.
* **Each class**, in turn: the scorer widens the prediction range by the class's ±1
  (learning only), gd predicts (clipped to the range) and learns from that prediction
  (its zero-loss gate, its normalizer sums per class); the class is predicted when its
  prediction, through the link, is above 0 (0.5 with VW's logistic link,
  ``params[P_PROBS]`` 2, or with ``--probabilities``, ``params[P_PROBS]`` 1, which also
  keeps the K values and, as VW, predicts no class).
* **Loss**: the size of the symmetric difference of the predicted classes (increasing)
  and the given ones (in their order, VW's merge walk), importance 1.

``preds`` is float64[n, 1 + 2K]: column 0 the number of classes predicted, columns
1..K each class's prediction (after the link), columns K+1..2K 1 for a predicted class.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    P_LEARN,
    P_OAA,
    P_PROBS,
    P_PROGRESS,
    LearnerSpec,
    begin_example,
    row_span,
)
from streamlearn.learners.csoaa import account, score
from streamlearn.learners.losses import expf, loss32
from streamlearn.learners.oaa import (
    G_CLASS,
    class_stride,
    clipped,
    gd_gstate,
    prediction_range,
    widen,
)
from streamlearn.system.jit import jit

F32 = np.float32
F64 = np.float64


@jit
def train_gd(
    table,
    gstate,
    params,
    loss_id,
    indptr,
    indices,
    values,
    labels,
    weights,
    bases,
    status,
    stats,
    rows,
    preds,
):
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    k = int(params[P_OAA])
    step = class_stride(k)
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    link = params[P_PROBS]
    prediction_range(gstate, params, loss_id)  # (VW's range is there before a label widens it)
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i, :] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        m = int(labels[i, 0])
        labeled = m > 0
        _, holdout = begin_example(stats, params, 0.0 if labeled else np.nan)
        learning = labeled and not holdout and params[P_LEARN] != 0.0
        if learning:
            gstate[G_T] += 1.0
            gstate[G_N] += 1.0
        cursor = 0
        npred = 0
        for c in range(k):
            y = F32(-1.0)
            if learning:
                if cursor < m and int(labels[i, 1 + cursor]) == c:
                    y = F32(1.0)
                    cursor += 1
                widen(gstate, params, F64(y))
            rlo, rhi = prediction_range(gstate, params, loss_id)
            p = clipped(score(table, indices, values, lo, hi, bases[i], step, c, mask, truncate,
                               F32(gstate[gd.G_GRAVITY]), F32(gstate[gd.G_CONTRACTION])),
                        rlo, rhi)  # fmt: skip
            if learning and loss32(loss_id, p, y) > F32(0.0):
                for t in range(lo, hi):
                    slots[t] = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
                gd.step(table, gstate, G_CLASS + 2 * c, G_CLASS + 2 * c + 1, slots, values, lo,
                        hi, p, y, F32(1.0), loss_id, rule)  # fmt: skip
                if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
                    gd.rebase(table, gstate, params)
            s = p
            if link != 0.0:
                s = F32(1.0) / (F32(1.0) + expf(-p))
            member = s > F32(0.5) if link != 0.0 else s > F32(0.0)
            if link == 1.0:
                member = False  # VW's --probabilities keeps no classes
            preds[i, 1 + c] = s
            preds[i, 1 + k + c] = 1.0 if member else 0.0
            if member:
                npred += 1
        preds[i, 0] = npred
        lv = 0.0
        if labeled:  # VW's merge walk: predicted (increasing) against given (as given)
            a = 0
            g = 0
            while a < k and g < m:
                if preds[i, 1 + k + a] == 0.0:
                    a += 1
                    continue
                y = int(labels[i, 1 + g])
                if a < y:
                    a += 1
                    lv += 1.0
                elif a > y:
                    g += 1
                    lv += 1.0
                else:
                    a += 1
                    g += 1
            lv += m - g
            while a < k:
                if preds[i, 1 + k + a] != 0.0:
                    lv += 1.0
                a += 1
        account(stats, rows, F64(npred), lv, 1.0, hi - lo, labeled, holdout,
                params[P_PROGRESS], F64(i))  # (the row's example: its label and classes' text)


GD = LearnerSpec(
    name="multilabel_gd",
    ncols=4,
    fresh=(0.0, 0.0, 0.0, 0.0),
    train_batch=train_gd,
    current_weights=gd.current_weights,
    rebase=gd.rebase,
    init_gstate=gd_gstate,
    dtype=np.float32,
    stored_cols=3,
)
SPECS = (GD,)


def resolve(algo: str) -> LearnerSpec:
    """The multilabel variant over ``algo`` (gd)."""
    if algo == "gd":
        return GD
    raise ValueError(f"--multilabel_oaa runs with gd's update rules, not {algo}")
