"""Weighted all pairs over label-dependent features (VW's ``--wap_ldf m|mc``).

VW's ``csoaa_ldf.cc`` with ``is_wap``: a multiline example (its shared line merged into
each action line, :func:`streamlearn.io.multiline.merge_shared`) is predicted exactly as
under ``--csoaa_ldf`` (:mod:`streamlearn.learners.csoaa_ldf`: each line's raw gd score,
the class of the first line of strictly smallest score, the ranking by (score, line)); only
the learning differs (VW's ``do_actual_learning_wap``):

* **Values.**  Each line's cost ``c`` gets a value ``v``: with the costs sorted ascending,
  ``c_(0) <= c_(1) <= ...``, ``v_(0) = 0`` and ``v_(i) = v_(i-1) + (c_(i) - c_(i-1)) / i``
  (float32, VW's ``compute_wap_values``); lines of equal cost have equal values.
* **Pairs.**  For lines ``k1 < k2`` (in the example's order) whose values differ by
  ``d = |v_k2 - v_k1| >= 1e-6``, gd learns one example: line k1's features followed by line
  k2's negated (VW pushes them onto k1 in a namespace of their own, crosses included),
  label -1 when ``c_k1 < c_k2`` else +1, importance ``d`` (the example's own weight is
  not used).  The scorer widens the prediction range with the label and clips, as for
  csoaa_ldf's lines (:func:`streamlearn.learners.csoaa_ldf.learn_line`).  ``m`` and ``mc``
  learn alike.
* **Loss**: the cost of the predicted class's first line (VW's ``update_stats``).

The state is csoaa_ldf's (:func:`streamlearn.learners.csoaa_ldf.init_gstate`): gd's table
at width 1, offset 0, its normalizer sums at ``csoaa_ldf.G_MODEL``.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.csoaa_ldf import learn_line, line_score, rank
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64

NO_CLASS = 4294967295
"""VW's class index ``(uint32_t)-1``: a line VW's pairs leave out."""


@jit_inline
def values_of(lab_cost, r0, n, vals):
    """The wap values of the lines ``r0:r0+n`` into ``vals[2n:3n]`` (``vals[:2n]``:
    scratch, the sorted costs then the sorted values)."""
    for i in range(n):  # the costs sorted (an insertion sort: n is small)
        vals[i] = F32(lab_cost[r0 + i])
    for i in range(1, n):
        c = vals[i]
        j = i - 1
        while j >= 0 and vals[j] > c:
            vals[j + 1] = vals[j]
            j -= 1
        vals[j + 1] = c
    vals[n] = F32(0.0)
    for i in range(1, n):
        vals[n + i] = vals[n + i - 1] + (vals[i] - vals[i - 1]) / F32(i)
    for i in range(n):  # a line's value: its cost's first place's (ties: equal values)
        c = F32(lab_cost[r0 + i])
        j = 0
        while vals[j] != c:
            j += 1
        vals[2 * n + i] = vals[n + j]


@jit_inline
def learn_pairs(table, gstate, params, loss_id, rule, slots, indices, values, indptr, r0, r1,
                lab_cls, lab_cost, mask, truncate, vals, pair_idx, pair_val):  # fmt: skip
    """Learn the pairs of the lines ``r0:r1`` (see the module): ``vals`` (float32, three per
    line), ``pair_idx``, ``pair_val`` (room for two lines' features) are scratch."""
    n = r1 - r0
    values_of(lab_cost, r0, n, vals)
    for k1 in range(n):
        if lab_cls[r0 + k1] == NO_CLASS:
            continue
        lo1, hi1 = indptr[r0 + k1], indptr[r0 + k1 + 1]
        m = hi1 - lo1
        for t in range(lo1, hi1):
            pair_idx[t - lo1] = indices[t]
            pair_val[t - lo1] = values[t]
        for k2 in range(k1 + 1, n):
            if lab_cls[r0 + k2] == NO_CLASS:
                continue
            d = abs(vals[2 * n + k2] - vals[2 * n + k1])
            if d < F32(1e-6):
                continue
            lo2, hi2 = indptr[r0 + k2], indptr[r0 + k2 + 1]
            for t in range(lo2, hi2):
                pair_idx[m + t - lo2] = indices[t]
                pair_val[m + t - lo2] = -F64(F32(values[t]))
            y = F32(-1.0) if F32(lab_cost[r0 + k1]) < F32(lab_cost[r0 + k2]) else F32(1.0)
            learn_line(table, gstate, params, loss_id, rule, slots, pair_idx, pair_val, 0,
                       m + hi2 - lo2, y, F64(d), 1, 0, mask, truncate)  # fmt: skip


@jit
def train_examples(tables, sub, gstate, params, loss_id, act_ptr, indptr, indices, values,
                   lab_n, lab_cls, lab_cost, holdout, stats, scores, order, pred):  # fmt: skip
    """``--wap_ldf``: predict, account and (when labeled) learn each example.

    The arguments are :func:`streamlearn.learners.csoaa_ldf.train_examples`' (without its
    ``classifier``): ``act_ptr``: example ``e``'s lines are rows ``act_ptr[e]:act_ptr[e +
    1]``; per row ``lab_n`` (its label entries), ``lab_cls``, ``lab_cost`` (NaN: a test
    line); ``holdout`` is unused (VW's csoaa_ldf has none).  Writes ``scores`` (raw, per
    row), ``order`` (per example, the ranking), ``pred[e]`` (the predicted class) and adds
    to ``stats`` ``[examples, labeled, loss, features, holdout examples, holdout loss]``.
    """
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = np.uint64(tables.shape[1] - 1)
    learning = params[10] != 0.0  # P_LEARN
    wide = 0
    lines = 0
    for e in range(act_ptr.shape[0] - 1):
        lines = max(lines, act_ptr[e + 1] - act_ptr[e])
        for r in range(act_ptr[e], act_ptr[e + 1]):
            wide = max(wide, indptr[r + 1] - indptr[r])
    vals = np.empty(3 * lines, dtype=np.float32)
    pair_idx = np.empty(2 * wide, dtype=indices.dtype)
    pair_val = np.empty(2 * wide, dtype=np.float64)
    slots = np.empty(2 * wide, dtype=np.uint32)
    for e in range(act_ptr.shape[0] - 1):
        r0 = act_ptr[e]
        r1 = act_ptr[e + 1]
        n = r1 - r0
        # VW's test_ldf_sequence: every line one cost, all labeled or all test
        test = lab_n[r0] != 1 or lab_cost[r0] != lab_cost[r0]
        for r in range(r0, r1):
            if lab_n[r] != 1 or (lab_cost[r] != lab_cost[r]) != (lab_cost[r0] != lab_cost[r0]):
                test = True
        best = F32(3.4028234663852886e38)
        bi = 0
        for r in range(r0, r1):
            s = line_score(tables[sub[r]], gstate, indices, values, indptr[r], indptr[r + 1], 1,
                           0, mask, truncate)  # fmt: skip
            scores[r] = s
            if s < best:
                best = s
                bi = r - r0
        rank(scores, r0, n, order)
        pc = lab_cls[r0 + bi] if lab_n[r0 + bi] > 0 else 0
        pred[e] = pc
        stats[0] += 1.0
        stats[3] += indptr[r1] - indptr[r0]
        if test:
            continue
        loss = 0.0
        for r in range(r0, r1):
            if lab_cls[r] == pc:
                loss = lab_cost[r]
                break
        stats[1] += 1.0
        stats[2] += loss
        if learning:
            learn_pairs(tables[sub[r0]], gstate, params, loss_id, rule, slots, indices, values,
                        indptr, r0, r1, lab_cls, lab_cost, mask, truncate, vals, pair_idx,
                        pair_val)  # fmt: skip
