"""One-against-all learning a few negative classes per example: VW's ``--oaa K
--oaa_subsample N`` (``oaa.cc``'s ``learn_randomized``) over gd.

The table, slots, scores and gd's per-class sums are :mod:`streamlearn.learners.oaa`'s; what
differs is which classes a labeled example teaches, and how VW counts it:

* **The order.**  Before the first example VW shuffles the classes 0..K-1 with its global
  generator (``--random_seed``): for i = 0..K-1, ``j = i + ⌊draw·(K − i)⌋`` (float32) and
  classes i and j swap.  A cursor into this circular order starts at 0 and is kept for the
  run (a model keeps the generator after the draws, as ``--random_seed``, not the order:
  VW shuffles again at each set-up).
* **The prediction.**  VW's ``learn_randomized`` returns no prediction, so VW predicts
  first: every class scored and clipped to the range before the example, the first
  largest is the class shown (``-p``, the table), numbered as the labels were before it.
* **Learning** a labeled example of importance a (not held out, not ``-t``): the label's
  class learns +1 with a; then, from the cursor, the next N classes of the order learn −1
  with ``a·K/N`` (float32), the class ``(label + K − 1) mod K`` skipped (VW's skip: the
  label's class when labels are 1..K, the class before it when they are 0..K-1, whose own
  class may then learn −1 after its +1); the cursor stays after the last class taken.  Each
  class learns as VW's gd learns: its label widens the range, the class is predicted again
  from the weights as they are then (a class learned twice, l2's contraction), clipped, and
  updated from that, at VW's rate for t = its t less the unlabeled weight plus the weight
  handed to it (every example here is unlabeled to VW: the t of the schedule does not grow).
* **The counts.**  VW counts every labeled example as unlabeled (its ``update_stats`` for
  subsampling): the progressive loss shows ``n.a.``, the 0/1 loss of the class shown goes
  into the sum all the same (a model's ``sum_loss``), held-out examples are not the
  holdout's.  Unlabeled examples are predicted as ``--oaa K`` predicts them and learn
  nothing (VW learns a class index past K from them); so does a label outside the classes.
"""

from __future__ import annotations

import math

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
    S_LOSS,
    S_SINCE_LOSS,
    begin_example,
    row_span,
)
from streamlearn.learners.explore import merand48
from streamlearn.learners.losses import loss32
from streamlearn.learners.oaa import (
    G_CLASS,
    account_class,
    best_class,
    class_stride,
    clipped,
    decided,
    is_label,
    label_class,
    predict_example,
    prediction_range,
    widen,
)
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64

# ``state``: the cursor, whether the order is made, VW's generator
S_CURSOR, S_MADE, S_RNG = 0, 1, 2


@jit
def shuffle(order, state, gstate, tail):
    """VW's order of the classes (the module's docstring), drawn from VW's generator: the
    last two entries of ``gstate`` when ``tail`` (32-bit halves,
    :func:`streamlearn.learners.stacked.with_generator`: a model keeps it as
    ``--random_seed``), else ``state[S_RNG]``."""
    k = order.shape[0]
    n = gstate.shape[0]
    rng = np.empty(1, dtype=np.uint64)
    if tail:
        rng[0] = (np.uint64(gstate[n - 1]) << np.uint64(32)) | np.uint64(gstate[n - 2])
    else:
        rng[0] = state[S_RNG]
    for i in range(k):
        order[i] = i
    for i in range(k):
        j = int(merand48(rng) * F32(k - i)) + i
        t = order[i]
        order[i] = order[j]
        order[j] = t
    state[S_RNG] = rng[0]
    state[S_MADE] = 1
    if tail:
        gstate[n - 2] = F64(rng[0] & np.uint64(0xFFFFFFFF))
        gstate[n - 1] = F64(rng[0] >> np.uint64(32))


@jit_inline
def _score(table, indices, values, lo, hi, c, step, mask, truncate, gravity, slots, base):
    """Class ``c``'s raw score of row ``lo:hi`` (gd's truncated weights; not yet times the
    contraction), its slots left in ``slots[lo:hi]``."""
    sc = F32(base)
    for t in range(lo, hi):
        slots[t] = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
        w = F32(table[slots[t], 0])
        if truncate:
            w = gd.trunc(w, gravity)
        sc += w * F32(values[t])
    return sc


@jit
def train_gd(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
             status, stats, rows, preds, order, state, n_sub, tail):  # fmt: skip
    """Learn a batch as ``--oaa K --oaa_subsample n_sub`` (the module's docstring);
    ``order`` (int64[K]) and ``state`` (uint64[3]) are the run's, kept between batches;
    ``tail``: ``gstate`` ends with VW's generator (:func:`shuffle`)."""
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    k = int(params[P_OAA])
    step = class_stride(k)
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    scores = np.empty(k, dtype=np.float32)
    learned = np.empty(n_sub + 1, dtype=np.int64)
    if state[S_MADE] == 0:
        shuffle(order, state, gstate, tail)
    ratio = F32(k) / F32(n_sub)
    params[P_INDEXING_AT] = 0.0
    for i in range(indptr.shape[0] - 1):
        y = labels[i]
        if status[i] != 0 or (y == y and not is_label(y, k)):
            preds[i, :] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        a = weights[i]
        indexing = params[P_INDEXING]
        gravity = F32(gstate[gd.G_GRAVITY])
        scale = F32(gstate[gd.G_CONTRACTION])
        if y != y:  # (unlabeled: as --oaa K predicts it; VW would learn a class past K)
            predict_example(table, gstate, params, loss_id, indices, values, lo, hi, bases[i],
                            y, a, k, indexing, step, mask, gravity, scale, truncate, scores,
                            stats, rows, preds[i])  # fmt: skip
            continue
        # a labeled example, learned unless held out or scoring (-t); counted as VW's
        # subsampling counts every example, unlabeled, its 0/1 loss summed all the same
        _, held = begin_example(stats, params, y)
        learn = params[P_LEARN] != 0.0 and not held
        after = decided(indexing, y, k, True) if learn else indexing
        cy, moved = label_class(y, k, after)
        if moved:  # (VW learns a class past K from it; sl does not)
            learn = False
        if learn and after != indexing:
            params[P_INDEXING] = after
            params[P_INDEXING_AT] = F64(i + 1)
        # VW predicts first, every class (its learn does not return a prediction)
        rlo, rhi = prediction_range(gstate, params, loss_id)
        for c in range(k):
            sc = _score(table, indices, values, lo, hi, c, step, mask, truncate, gravity, slots,
                        bases[i])  # fmt: skip
            scores[c] = clipped(sc * scale, rlo, rhi)
            preds[i, 1 + c] = scores[c]
        best = best_class(scores, k)
        pred = F64(best) if indexing == 0.0 else F64(best + 1)
        preds[i, 0] = pred
        if pred != y:  # (VW's resume state's sum_loss)
            stats[S_LOSS] += a
            stats[S_SINCE_LOSS] += a
        account_class(stats, rows, pred, y, a, hi - lo, False, False, math.nan, 0.0,
                      params[P_PROGRESS])  # fmt: skip
        if not learn:
            continue
        # the classes learned: the label's, then n_sub of the order from the cursor
        learned[0] = cy
        skip = (int(y) + k - 1) % k
        p = np.int64(state[S_CURSOR])
        count = 0
        while count < n_sub:
            c = order[p]
            p = (p + np.int64(1)) % np.int64(k)
            if c == skip:
                continue
            count += 1
            learned[count] = c
        state[S_CURSOR] = np.uint64(p)
        t_before = gstate[G_T]
        if a != 0.0:
            gstate[G_N] += 1.0
        a32 = F32(a)
        for m in range(n_sub + 1):
            # each class learned as VW's gd learns it: the label widens the range, the
            # class is predicted again from the weights as they are now (a class learned
            # twice, l2's contraction), clipped, and updated from that prediction
            c = learned[m]
            yc = F32(1.0) if m == 0 else F32(-1.0)
            widen(gstate, params, yc)
            if a == 0.0:
                continue
            am = a32 if m == 0 else a32 * ratio
            rlo, rhi = prediction_range(gstate, params, loss_id)
            gravity = F32(gstate[gd.G_GRAVITY])
            scale = F32(gstate[gd.G_CONTRACTION])
            sc = _score(table, indices, values, lo, hi, c, step, mask, truncate, gravity, slots,
                        bases[i])  # fmt: skip
            pc = clipped(sc * scale, rlo, rhi)
            if not loss32(loss_id, pc, yc) > F32(0.0):
                continue  # gd's zero-loss gate, per class
            # (VW's rate decays with its t less the unlabeled weight, which counts every
            # subsampled example, plus the weight its learner is handed: the negatives'
            # scaled one)
            gstate[G_T] = t_before + F64(am)
            gd.step(table, gstate, G_CLASS + 2 * c, G_CLASS + 2 * c + 1, slots, values, lo, hi,
                    pc, yc, am, loss_id, rule)  # fmt: skip
            if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
                gd.rebase(table, gstate, params)
        gstate[G_T] = t_before  # (an unlabeled example's weight is not the rate's: VW's t)
