"""One-against-all multiclass (VW's ``--oaa K``): K binary sub-problems in one table.

As VW's ``reductions/oaa.cc`` over its ``gd`` or ``ftrl``:

* **Slots.** Each feature takes ``s`` consecutive slots, ``s`` = K rounded up to a power
  of 2 (VW's ``total_feature_width``): the weight of feature slot ``h`` for class ``c``
  (0-based) is at ``(h·s + c) mod 2^b``, VW's own slots, so readable models line up.
  Classes never share a slot; features collide ``s`` times more often than in a binary
  model of the same ``-b``.
* **Prediction.** The K scores ``base + Σ_j w_{j,c} x_j`` (gd: times its l2 contraction,
  through its l1 gravity), each clipped to the prediction range as it stands *before*
  the example (VW predicts before its labels widen the range); the class is the first
  with the largest score.  Its progressive loss is the 0/1 error, weighted by the
  importance.  With ``--probabilities`` (``params[P_PROBS]``) each score goes through
  the logistic function and the K values are normalised to sum 1, in float32 as VW,
  and the multiclass log loss ``−log p_y`` (weighted) is accounted too.
* **Labels** are classes 0..K-1 or 1..K (``params[P_INDEXING]``, VW's ``--indexing``); a
  larger integer is no class (``sl vw`` passes it on as VW reads it).
  By default (2) neither is known: labels read as 1..K until a learned label 0 or K
  decides (:func:`decided`, VW's rule, kept in ``params`` for the rest of the run and
  not in the model); the kernel writes the decision and its row to ``params``.  Once
  decided, a label K with 0..K-1 or 0 with 1..K is no class: every class learns −1 from
  it, as VW does (counted in ``stats[S_CLASS_MOVED]``), and its 0/1 loss is 1.
* **Learning** a labeled example (importance a > 0): the label's class c learns the
  binary label +1, every other class −1, with the importance a, in class order.  The
  label widens the range first (VW's scorer).  gd learns from the score it predicted
  (VW's ``update``), with its normalizer sums per class (VW's ``gd_per_model_states``;
  with ``--initial-t`` > 0 only class 0's start at t0, as VW) and its zero-loss gate per
  class; ftrl re-predicts the class clipped to the widened range (VW's ``ftrl`` has no
  separate update) and takes its step.  The schedule counts the example once.

``preds`` is float64[n, K + 1]: column 0 the predicted class (numbered as the labels),
columns 1..K the clipped scores, or the probabilities with ``P_PROBS``; NaN rows for
malformed lines.  A labeled row whose label is not 0..K (the driver marks those malformed
first, :func:`streamlearn.io.classes.check_classes`) is skipped here too: an index is
never formed from it.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import ftrl, gd
from streamlearn.learners.base import (
    G_CLIP,
    G_LABEL_MAX,
    G_LABEL_MIN,
    G_N,
    G_T,
    GSTATE_SIZE,
    INDEXING_AUTO,
    P_CLIP_FIXED,
    P_CLIP_HI,
    P_CLIP_LO,
    P_FTRL_ALPHA,
    P_FTRL_BETA,
    P_INDEXING,
    P_INDEXING_AT,
    P_L1,
    P_L2,
    P_LEARN,
    P_OAA,
    P_PROBS,
    P_PROGRESS,
    P_T0,
    S_CLASS_MOVED,
    S_CORRECT_W,
    S_FEATURES,
    S_HO_CORRECT_W,
    S_HO_LOSS,
    S_HO_MC_LOGLOSS,
    S_HO_N,
    S_HO_W,
    S_LOSS,
    S_MC_LOGLOSS,
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
from streamlearn.learners.losses import LOGISTIC, dloss32, expf, logf, loss32
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64

G_CLASS = GSTATE_SIZE
"""gd: class c's normalizer sums: Σ a Σ (x/m)² at ``G_CLASS + 2c``, Σ a at ``G_CLASS + 2c + 1``."""


def stride(k: int) -> int:
    """Slots per feature for K classes: K rounded up to a power of 2 (VW's feature width)."""
    return 1 << max(k - 1, 0).bit_length()


@jit_inline
def class_stride(k):
    s = 1
    while s < k:
        s *= 2
    return s


@jit_inline
def is_label(y, k):
    """``y`` is a label a class kernel takes: an integral float >= 0.  Classes are 0..K-1 or
    1..K, as ``P_INDEXING`` says (VW reads either until a label 0 or K decides,
    :func:`decided`); a label beyond them is no class (VW's reading, ``sl vw``: every class
    learns -1 from it; ``sl train`` marks such a row malformed before, ``io/classes.py``)."""
    return y >= 0.0 and y == math.floor(y)


@jit_inline
def decided(indexing, y, k, learned):
    """VW's rule: a *learned* label 0 makes the labels 0..K-1, a label K 1..K, for the rest
    of the run; until then (``indexing`` 2) they are read as 1..K."""
    if learned and indexing == INDEXING_AUTO:
        if y == 0.0:
            return 0.0
        if y == k:
            return 1.0
    return indexing


@jit_inline
def label_class(y, k, indexing):
    """The class (0-based) a learned label ``y`` trains, and whether it is outside the
    classes: K with labels 0..K-1, 0 with labels 1..K train no class (-1: every class
    learns -1, as VW, which warns and compares the label as given)."""
    if indexing == 0.0:
        if y >= k:
            return -1, True
        return int(y), False
    if (indexing == 1.0 and y < 1.0) or y > k:
        return -1, True
    return int(y) - 1, False


@jit_inline
def probability_class(y, k, indexing):
    """The class whose probability is the label's (VW's ``(label - 1) % K`` in uint32 with
    labels 1..K: a label 0 read so wraps to class (2^32 - 1) mod K)."""
    if indexing == 0.0:
        return int(y) % k
    if y >= 1.0:
        return (int(y) - 1) % k
    return 4294967295 % k


@jit_inline
def prediction_range(gstate, params, loss_id):
    """The range scores are clipped to, as :func:`~streamlearn.learners.base.clip` keeps it."""
    if params[P_CLIP_FIXED] != 0.0:
        return params[P_CLIP_LO], params[P_CLIP_HI]
    if gstate[G_CLIP] == 0.0:
        gstate[G_CLIP] = 1.0
        edge = 50.0 if loss_id == LOGISTIC else 0.0
        gstate[G_LABEL_MIN] = -edge
        gstate[G_LABEL_MAX] = edge
    return gstate[G_LABEL_MIN], gstate[G_LABEL_MAX]


@jit_inline
def widen(gstate, params, y):
    """VW's ``set_minmax`` for a binary label ``y`` (unless the range is fixed)."""
    if params[P_CLIP_FIXED] == 0.0:
        if y < gstate[G_LABEL_MIN]:
            gstate[G_LABEL_MIN] = y
        if y > gstate[G_LABEL_MAX]:
            gstate[G_LABEL_MAX] = y


@jit_inline
def clipped(p, lo, hi):
    if p > hi:
        return F32(hi)
    if p < lo:
        return F32(lo)
    return p


@jit_inline
def best_class(scores, k):
    """The first class with the largest score (0-based), VW's ``argmax``."""
    best = 0
    for c in range(1, k):
        if scores[c] > scores[best]:
            best = c
    return best


@jit_inline
def probabilities(scores, k, out):
    """VW's ``--probabilities``: logistic of each score, normalised to sum 1 (float32)."""
    total = F32(0.0)
    for c in range(k):
        e = F32(1.0) / (F32(1.0) + expf(-scores[c]))
        out[c] = e
        total += e
    inv = F32(1.0) / total
    for c in range(k):
        out[c] = F32(out[c]) * inv


@jit_inline
def account_class(stats, rows, pred, y, a, nfeat, labeled, holdout, prob, mll, progress,
                  unlabeled_wrong=False):
    """Add one scored multiclass example: 0/1 loss (weighted), accuracy, log loss, table rows
    (:func:`~streamlearn.learners.base.table_row`, on ``-P``'s schedule as every learner).
    ``unlabeled_wrong``: an unlabeled example's weight is a loss in the sum (VW's
    ``update_stats_oaa`` of ``--probabilities`` and ``--scores``: no label is not the class
    predicted), not in the labeled weight."""
    stats[S_FEATURES] += nfeat
    stats[S_WEX] += a
    if labeled:
        wrong = 1.0 if pred != y else 0.0
        if holdout:
            stats[S_HO_LOSS] += a * wrong
            stats[S_HO_W] += a
            stats[S_HO_N] += 1.0
            stats[S_HO_MC_LOGLOSS] += mll
            if wrong == 0.0:
                stats[S_HO_CORRECT_W] += a
        else:
            stats[S_LOSS] += a * wrong
            stats[S_WLAB] += a
            stats[S_SINCE_LOSS] += a * wrong
            stats[S_SINCE_W] += a
            stats[S_MC_LOGLOSS] += mll
            if wrong == 0.0:
                stats[S_CORRECT_W] += a
    else:
        stats[S_UNLABELED] += 1.0
        if unlabeled_wrong:
            stats[S_LOSS] += a
            stats[S_SINCE_LOSS] += a
    table_row(stats, rows, y, pred, nfeat, progress, prob, a, labeled and holdout)


@jit_inline
def predict_example(table, gstate, params, loss_id, indices, values, lo, hi, base, y, a, k,
                    indexing, step, mask, gravity, scale, truncate, scores, stats, rows,
                    out):  # fmt: skip
    """Score an example's K classes, write its predictions, account it.

    Returns ``(learn, extend, indexing)``: ``learn`` and ``extend`` as
    :func:`~streamlearn.learners.base.score` decides them, ``indexing`` as the example
    leaves it (:func:`decided`); ``scores`` holds the K clipped scores (float32).  The
    class written and accounted is numbered as ``indexing`` was before the example (VW's
    prediction, made before it learns), or with ``--probabilities`` or ``--scores`` as
    after it (VW accounts those after learning).  ``params[P_PROBS]``: 1 probabilities, 3
    VW's ``--scores``, 4 VW's ``--probabilities`` (``sl vw``, the drop-in); under 3 and 4
    an unlabeled example's weight is a loss too, as VW's ``update_stats_oaa`` counts it.
    """
    labeled, holdout = begin_example(stats, params, y)
    rlo, rhi = prediction_range(gstate, params, loss_id)
    for c in range(k):
        p = F32(base)
        for t in range(lo, hi):
            j = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
            w = F32(table[j, 0])
            if truncate:
                w = gd.trunc(w, gravity)
            p += w * F32(values[t])
        scores[c] = clipped(p * scale, rlo, rhi)
    extend = labeled and not holdout and params[P_LEARN] != 0.0
    after = decided(indexing, y, k, extend)
    mode = params[P_PROBS]
    probs = mode == 1.0 or mode == 4.0
    late = probs or mode == 3.0  # (--scores: VW's accounting of --probabilities)
    best = best_class(scores, k)
    pred = F64(best) if (after if late else indexing) == 0.0 else F64(best + 1)
    out[0] = pred
    prob = np.nan
    mll = 0.0
    if probs:
        probabilities(scores, k, out[1:])
        prob = out[1 + best]
        if labeled:
            py = F32(out[1 + probability_class(y, k, after)])
            mll = F64(-logf(py) * F32(a)) if py > F32(0.0) else 999.0
    else:
        for c in range(k):
            out[1 + c] = scores[c]
    account_class(stats, rows, pred, y, a, hi - lo, labeled, holdout, prob, mll,
                  params[P_PROGRESS], mode >= 3.0)
    return extend and a != 0.0, extend, after


@jit_inline
def learned_class(params, stats, indexing, after, i, y, k):
    """Record a decision of :func:`decided` at row ``i`` (in ``params``, as VW's runtime
    state); the class the label trains (:func:`label_class`), counting moved labels."""
    if after != indexing:
        params[P_INDEXING] = after
        params[P_INDEXING_AT] = F64(i + 1)
    cy, moved = label_class(y, k, after)
    if moved:
        stats[S_CLASS_MOVED] += 1.0
    return cy


@jit
def train_gd(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    k = int(params[P_OAA])
    step = class_stride(k)
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    scores = np.empty(k, dtype=np.float32)
    params[P_INDEXING_AT] = 0.0
    for i in range(indptr.shape[0] - 1):
        y = labels[i]
        if status[i] != 0 or (y == y and not is_label(y, k)):
            preds[i, :] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        a = weights[i]
        indexing = params[P_INDEXING]
        learn, extend, after = predict_example(
            table, gstate, params, loss_id, indices, values, lo, hi, bases[i], y, a, k,
            indexing, step, mask, F32(gstate[gd.G_GRAVITY]), F32(gstate[gd.G_CONTRACTION]),
            truncate, scores, stats, rows, preds[i],
        )  # fmt: skip
        if not extend:
            continue
        cy = learned_class(params, stats, indexing, after, i, y, k)
        for c in range(k):
            widen(gstate, params, 1.0 if c == cy else -1.0)
        if not learn:
            continue
        gstate[G_T] += a
        gstate[G_N] += 1.0
        a32 = F32(a)
        for c in range(k):
            yc = F32(1.0) if c == cy else F32(-1.0)
            p = scores[c]
            if not loss32(loss_id, p, yc) > F32(0.0):
                continue  # gd's zero-loss gate, per class
            for t in range(lo, hi):
                slots[t] = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
            gd.step(table, gstate, G_CLASS + 2 * c, G_CLASS + 2 * c + 1, slots, values, lo, hi, p,
                    yc, a32, loss_id, rule)  # fmt: skip
            if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
                gd.rebase(table, gstate, params)


@jit
def train_ftrl(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    alpha = F32(params[P_FTRL_ALPHA])
    beta = F32(params[P_FTRL_BETA])
    l1 = F32(params[P_L1])
    l2 = F32(params[P_L2])
    k = int(params[P_OAA])
    step = class_stride(k)
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    scores = np.empty(k, dtype=np.float32)
    raw = np.empty(k, dtype=np.float32)
    params[P_INDEXING_AT] = 0.0
    for i in range(indptr.shape[0] - 1):
        y = labels[i]
        if status[i] != 0 or (y == y and not is_label(y, k)):
            preds[i, :] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        a = weights[i]
        indexing = params[P_INDEXING]
        learn, extend, after = predict_example(
            table, gstate, params, loss_id, indices, values, lo, hi, bases[i], y, a, k,
            indexing, step, mask, F32(0.0), F32(1.0), False, scores, stats, rows, preds[i],
        )  # fmt: skip
        if not extend:
            continue
        cy = learned_class(params, stats, indexing, after, i, y, k)
        if learn:
            # VW's ftrl learns by predicting again, within the range its label has widened
            for c in range(k):
                p = F32(bases[i])
                for t in range(lo, hi):
                    j = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
                    p += F32(table[j, 0]) * F32(values[t])
                raw[c] = p
            gstate[G_T] += a
            gstate[G_N] += 1.0
        for c in range(k):
            yc = 1.0 if c == cy else -1.0
            widen(gstate, params, yc)
            if not learn:
                continue
            rlo, rhi = prediction_range(gstate, params, loss_id)
            p = clipped(raw[c], rlo, rhi)
            g = dloss32(loss_id, p, F32(yc)) * F32(a)
            for t in range(lo, hi):
                slots[t] = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
            ftrl.step(table, slots, values, lo, hi, g, alpha, beta, l1, l2)


def gd_gstate(params: np.ndarray) -> np.ndarray:
    """gd's global state and K classes' normalizer sums; with ``--initial-t`` t0 > 0
    class 0's start as if t0 examples of norm 1 had been seen (VW sets only model 0's)."""
    k = int(params[P_OAA])
    gstate = np.zeros(GSTATE_SIZE + 2 * k)
    gstate[gd.G_CONTRACTION] = 1.0
    t0 = F64(np.float32(params[P_T0]))
    if t0 > 0.0:
        gstate[G_CLASS] = t0
        gstate[G_CLASS + 1] = t0
    return gstate


def ftrl_gstate(params: np.ndarray) -> np.ndarray:
    return np.zeros(GSTATE_SIZE)


GD = LearnerSpec(
    name="oaa_gd",
    ncols=4,
    fresh=(0.0, 0.0, 0.0, 0.0),
    train_batch=train_gd,
    current_weights=gd.current_weights,
    rebase=gd.rebase,
    init_gstate=gd_gstate,
    dtype=np.float32,
    stored_cols=3,
)
FTRL = LearnerSpec(
    name="oaa_ftrl",
    ncols=3,
    fresh=(0.0, 0.0, 0.0),
    train_batch=train_ftrl,
    current_weights=ftrl.current_weights,
    rebase=ftrl.rebase,
    init_gstate=ftrl_gstate,
    dtype=np.float32,
    stored_cols=3,
)
SPECS = (GD, FTRL)


def resolve(algo: str) -> LearnerSpec:
    """The one-against-all variant over ``algo`` (gd or ftrl)."""
    if algo == "gd":
        return GD
    if algo == "ftrl":
        return FTRL
    raise ValueError(f"--oaa runs with --algo gd or ftrl, not {algo}")
