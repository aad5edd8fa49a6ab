"""Cost-sensitive one-against-all (VW's ``--csoaa K``): K regressions in one table.

As VW's ``reductions/csoaa.cc`` over its ``scorer`` and ``gd``:

* **Slots** as :mod:`streamlearn.learners.oaa`'s: class c (0-based) of feature slot h at
  ``(h·s + c) mod 2^b``, ``s`` = K rounded up to a power of 2.
* **Labels** (``labels`` float64[n, 1 + 2K], :mod:`streamlearn.io.cslabels`): the
  entries ``(class, cost)`` the line lists, in its order; a cost ``inf`` is a class
  listed without one.  Classes number 1..K, or 0..K-1 (``--indexing``, or VW's rule:
  the first class 0 seen makes them 0-based, the first class K 1-based).
* **A labeled example** (some entry has a cost): each listed class, in the line's order,
  is scored (``base + Σ w x``, VW's ``partial_prediction``, not clipped) and learned
  toward its cost with importance 1 (0 for a class without a cost: scored only): the
  scorer widens the prediction range by the cost first, gd learns from the clipped score
  (its zero-loss gate, its normalizer sums per class).  The prediction is the listed
  class with the smallest unclipped score (the lowest class on ties).  Its loss is the
  predicted class's cost minus the smallest cost (VW's ``cost_sensitive.cc``), weighted
  by the importance of the last entry learned, as VW's (1, or 0 when the last entry
  has no cost).
* **A test example** (no entry has a cost): the listed classes are scored the same way
  without learning; with no entry at all, every class is scored (not clipped: VW's
  csoaa asks its multipredict not to finalize) and the first smallest is the prediction.

``preds`` is float64[n, K + 1]: column 0 the predicted class, columns 1..K each class's
score as above (NaN for a class not scored).
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    P_INDEXING,
    P_INDEXING_AT,
    P_LEARN,
    P_OAA,
    P_PROGRESS,
    S_CORRECT_W,
    S_FEATURES,
    S_HO_LOSS,
    S_HO_N,
    S_HO_W,
    S_LOSS,
    S_SINCE_LOSS,
    S_SINCE_W,
    S_UNLABELED,
    S_WEX,
    S_WLAB,
    LearnerSpec,
    begin_example,
    row_span,
    table_row,
)
from streamlearn.learners.losses import loss32
from streamlearn.learners.oaa import (
    G_CLASS,
    class_stride,
    clipped,
    gd_gstate,
    prediction_range,
    widen,
)
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
INF = np.inf
FLT_MAX = F32(3.4028234663852886e38)


@jit_inline
def score(table, indices, values, lo, hi, base, step, c, mask, truncate, gravity, scale):
    p = F32(base)
    for t in range(lo, hi):
        j = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
        w = F32(table[j, 0])
        if truncate:
            w = gd.trunc(w, gravity)
        p += w * F32(values[t])
    return p * scale


@jit_inline
def account(stats, rows, pred, lv, a, nfeat, labeled, holdout, progress, prob):
    """An example's loss ``lv`` and prediction counted, and its table line when one is due
    (``prob``: the line's last column, :func:`~streamlearn.learners.base.table_row`'s)."""
    stats[S_FEATURES] += nfeat
    stats[S_WEX] += a
    if labeled:
        if holdout:
            stats[S_HO_LOSS] += a * lv
            stats[S_HO_W] += a
            stats[S_HO_N] += 1.0
        else:
            stats[S_LOSS] += a * lv
            stats[S_WLAB] += a
            stats[S_SINCE_LOSS] += a * lv
            stats[S_SINCE_W] += a
            if lv == 0.0:
                stats[S_CORRECT_W] += a
    else:
        stats[S_UNLABELED] += 1.0
    table_row(stats, rows, 0.0 if labeled else np.nan, pred, nfeat, progress, prob, a,
              labeled and holdout)  # fmt: skip


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
    params[P_INDEXING_AT] = 0.0
    prediction_range(gstate, params, loss_id)  # (VW's range is there before a cost widens it)
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i, :] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        m = int(labels[i, 0])
        # VW's indexing: decided by the first class 0 or K listed, before anything else
        indexing = params[P_INDEXING]
        for j in range(m):
            c = labels[i, 1 + 2 * j]
            if indexing == 2.0 and c == 0.0:
                indexing = 0.0
            elif indexing == 2.0 and c == k:
                indexing = 1.0
        if indexing != params[P_INDEXING]:
            params[P_INDEXING] = indexing
            params[P_INDEXING_AT] = F64(i + 1)
        first = 0 if indexing == 0.0 else 1
        labeled = False
        for j in range(m):
            if labels[i, 2 + 2 * j] != INF:
                labeled = True
        _, holdout = begin_example(stats, params, 0.0 if labeled else np.nan)
        learning = labeled and not holdout and params[P_LEARN] != 0.0
        grav = F32(gstate[gd.G_GRAVITY])
        scale = F32(gstate[gd.G_CONTRACTION])
        for c in range(k + 1):
            preds[i, c] = np.nan
        pred = first
        best = F32(np.inf)
        a_last = 1.0
        if m == 0:  # no label: every class (VW's multipredict, which csoaa asks not to
            # finalize: the scores are not clipped to the range)
            for c in range(k):
                p = score(table, indices, values, lo, hi, bases[i], step, c, mask, truncate,
                           grav, scale)  # fmt: skip
                preds[i, 1 + c] = p
                if c == 0 or p < best:
                    best = p
                    pred = c + first
        else:
            learned_any = False
            for j in range(m):
                cl = int(labels[i, 1 + 2 * j])
                x = labels[i, 2 + 2 * j]
                c = cl if indexing == 0.0 else cl - 1
                if c < 0 or c >= k:  # VW moves it (warning): K -> 0 with 0..K-1, 0 -> K with 1..K
                    c = 0 if indexing == 0.0 else k - 1
                    cl = c + first
                    labels[i, 1 + 2 * j] = cl  # (in the label, as VW's)
                aj = 0.0 if x == INF else 1.0
                if learning:
                    a_last = aj  # VW's csoaa sets the weight for each class it learns
                if learning and x != INF:
                    widen(gstate, params, x)
                p = score(table, indices, values, lo, hi, bases[i], step, c, mask, truncate,
                           F32(gstate[gd.G_GRAVITY]), F32(gstate[gd.G_CONTRACTION]))  # fmt: skip
                preds[i, 1 + c] = p
                if p < best or (p == best and cl < pred):
                    best = p
                    pred = cl
                if not learning or aj == 0.0:
                    continue
                if not learned_any:
                    learned_any = True
                    gstate[G_T] += 1.0
                    gstate[G_N] += 1.0
                rlo, rhi = prediction_range(gstate, params, loss_id)
                pc = clipped(p, rlo, rhi)
                y = F32(x)
                if not loss32(loss_id, pc, y) > F32(0.0):
                    continue
                for t in range(lo, hi):
                    slots[t] = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
                gd.step(table, gstate, G_CLASS + 2 * c, G_CLASS + 2 * c + 1, slots, values, lo,
                        hi, pc, y, F32(1.0), loss_id, rule)  # fmt: skip
                if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
                    gd.rebase(table, gstate, params)
        preds[i, 0] = pred
        lv = 0.0
        if labeled:
            chosen = FLT_MAX
            low = FLT_MAX
            for j in range(m):
                x = F32(labels[i, 2 + 2 * j])
                if x == F32(np.inf):
                    x = FLT_MAX
                if int(labels[i, 1 + 2 * j]) == pred:
                    chosen = x
                if x < low:
                    low = x
            lv = F64(F32(chosen - low))
        account(stats, rows, F64(pred), lv, a_last, hi - lo, labeled, holdout,
                params[P_PROGRESS], np.nan)  # fmt: skip


GD = LearnerSpec(
    name="csoaa_gd",
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
    """The cost-sensitive variant over ``algo`` (gd)."""
    if algo == "gd":
        return GD
    raise ValueError(f"--csoaa runs with gd's update rules, not {algo}")
