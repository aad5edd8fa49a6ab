"""Contextual bandits with action-dependent features (VW's ``--cb_adf``, ``--cb_type``).

An example is a set of action lines (the shared line merged into each,
:func:`streamlearn.io.multiline.merge_shared`); at most one line carries the logged
``cost`` and ``probability`` of the action taken.  As VW's ``cb_adf.cc`` over
``csoaa_ldf`` (:mod:`streamlearn.learners.csoaa_ldf`) over ``gd``:

* **Scores.** Each action's score is gd's raw prediction of its line, a cost estimate;
  the ranking ``order`` is the actions sorted by (score, action) ascending, and its first
  is the action chosen (VW's ``a_s``).  This ranking, made *before* the example is
  learned, is what an explorer turns into a pmf (:func:`train_examples` writes it).
* **Learning** a labeled example (cost c and probability p on action k, ``clip_p`` VW's
  ``--clip_p``):

  - ``mtr`` (default): only line k learns, toward c, with importance
    ``1/max(p, clip_p) · events/actions`` (VW's running counts of examples learned and
    of their action lines);
  - ``ips``: every line learns, line k toward ``c / max(p, clip_p)``, the others toward 0;
  - ``dm``: every line learns, line k toward c, the others toward 0;
  - ``dr``: a second regressor (offset 1 of 2 slots per feature) predicts each line's
    cost x̂_a, line k's learning toward c with importance 1/p first (x̂_k is its
    prediction before that step); then every line learns (offset 0) toward x̂_a, plus
    ``(c - x̂_k)/max(p, clip_p)`` for line k.
  - ``sm``: VW's ``learn_sm`` (:func:`_learn_sm`).

* **Explorers** plug in after :func:`train_examples`: it returns nothing, but leaves per
  example the actions ranked before learning (``order``) and their scores (``scores``),
  which an explorer turns into a pmf; ``params[P_LEARN] = 0`` makes it score only.
* **Loss** of the top action a*: ``c/p`` when a* = k, else 0 (``dr``: ``x̂_{a*}`` plus
  ``(c - x̂_k)/p`` when a* = k), VW's ``get_cost_estimate``.  Unlabeled and held-out
  examples are only scored; held-out examples are learned too (VW learns every multiline
  example; its holdout only counts them apart).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import G_N
from streamlearn.learners.csoaa_ldf import clipped, learn_line, line_score, rank
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64

MTR = 0
IPS = 1
DM = 2
DR = 3
SM = 4
CB_TYPES = {"mtr": MTR, "ips": IPS, "dm": DM, "dr": DR, "sm": SM}

# stats slots (float64): what VW's shared data counts
N_EX = 0  # examples scored
N_LAB = 1  # labeled examples (progressive)
LOSS = 2  # Σ loss (progressive)
FEATURES = 3
HO_N = 4
HO_LOSS = 5
EVENTS = 6  # mtr: examples learned (VW's event_sum)
ACTIONS = 7  # mtr: their action lines (VW's action_sum)
STATS = 8


@jit
def train_examples(tables, sub, step, gstate, params, loss_id, cb_type, clip_p, act_ptr, indptr,
                   indices, values, chosen, cost, prob, holdout, holdout_learns, stats, dr_prev,
                   scores, order, loss_out):  # fmt: skip
    """:func:`train_weighted` with every example's weight 1 (VW's default)."""
    train_weighted(tables, sub, step, gstate, params, loss_id, cb_type, clip_p, act_ptr, indptr,
                   indices, values, chosen, cost, prob, holdout, holdout_learns, stats, dr_prev,
                   scores, order, loss_out, F32(1.0))  # fmt: skip


@jit
def train_weighted(tables, sub, step, gstate, params, loss_id, cb_type, clip_p, act_ptr, indptr,
                   indices, values, chosen, cost, prob, holdout, holdout_learns, stats, dr_prev,
                   scores, order, loss_out, weight):  # fmt: skip
    """Score, account and learn the examples of a batch; the entry point explorers use.

    Parameters
    ----------
    tables, sub, step
        The weights: line ``r``'s feature ``idx`` at offset ``o`` is row
        ``(idx · step + o) mod N`` of ``tables[sub[r]]`` (:func:`tables_of`: one table,
        ``sub`` 0 and ``step`` the feature width, 2 for ``dr``; ``--cb K`` passes VW's
        shifted windows, :mod:`streamlearn.learners.cb_to_adf`).
    act_ptr : int64[m + 1]
        Example ``e``'s action lines are rows ``act_ptr[e]:act_ptr[e + 1]`` of the CSR
        arrays ``indptr``, ``indices``, ``values`` (shared features merged, crosses made).
    chosen, cost, prob : per example
        The logged action (0-based line, -1: unlabeled), its cost and probability.
    holdout : bool[m]
        Held-out examples (scored and accounted apart).
    holdout_learns : bool
        Whether held-out examples are learned all the same: VW learns held-out multiline
        examples (``--cb_adf``) but only predicts held-out single-line ones (``--cb K``,
        ``--cb_explore K``, whose examples VW turns into multiline ones after its holdout).
    stats : float64[:data:`STATS`]
        Running counts (see the module's slots), updated.
    dr_prev : float64[K + 1]
        ``dr``: the last learned example's regressor predictions (``dr_prev[0]`` their
        number), which VW's loss of a held-out ``dr`` example reads.
    scores : float32/float64[rows]
        Out: each line's score (gd's raw prediction, before the example is learned).
    order : int64[rows]
        Out: per example, its actions (0-based) sorted by (score, action) ascending,
        at ``order[act_ptr[e]:act_ptr[e + 1]]``: VW's ``a_s``; ``order[act_ptr[e]]`` is
        the predicted action.
    loss_out : float64[m]
        Out: each example's loss (NaN: unlabeled).
    weight : float32
        The examples' weight, as VW's ``ec.weight`` (``--cb_dro``'s bound scales it,
        ``--explore_eval`` learns an example with a threshold above 1 so): it multiplies
        mtr's importance and sm's softmax importances, divided by the logged probability it
        is dr's regressor's importance, and it is the importance of ips's, dm's and dr's
        lines.
    """
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = np.uint64(tables.shape[1] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    learning = params[10] != 0.0  # P_LEARN
    width = step
    xs = np.empty(64, dtype=np.float32)
    ys = np.empty(64, dtype=np.float32)
    for e in range(act_ptr.shape[0] - 1):
        r0 = act_ptr[e]
        r1 = act_ptr[e + 1]
        n = r1 - r0
        if n > xs.shape[0]:
            xs = np.empty(2 * n, dtype=np.float32)
            ys = np.empty(2 * n, dtype=np.float32)
        k = chosen[e]
        c = F32(cost[e])
        p = F32(prob[e])
        labeled = k >= 0
        # VW learns held-out multiline examples too (only single-line ones are predicted):
        # they count apart, and not in gd's t
        learn = labeled and learning and (holdout_learns or not holdout[e])
        counted = 1.0 if labeled and not holdout[e] else 0.0
        stats[N_EX] += 1.0
        stats[FEATURES] += indptr[r1] - indptr[r0]
        if learn and cb_type == DR:
            # the cost regressor (offset 1): line k learns first, every line predicts
            for i in range(n):
                r = r0 + i
                tab = tables[sub[r]]
                if i == k:
                    xs[i] = learn_line(tab, gstate, params, loss_id, rule, slots, indices,
                                       values, indptr[r], indptr[r + 1], c, F64(weight / p),
                                       width, 1, mask, truncate)  # fmt: skip
                else:
                    raw = line_score(tab, gstate, indices, values, indptr[r], indptr[r + 1],
                                     width, 1, mask, truncate)  # fmt: skip
                    xs[i] = clipped(gstate, params, loss_id, raw)
            dr_prev[0] = n
            for i in range(n):
                dr_prev[1 + i] = xs[i]
        # the policy's scores (offset 0), before it learns
        for i in range(n):
            r = r0 + i
            scores[r] = line_score(tables[sub[r]], gstate, indices, values, indptr[r],
                                   indptr[r + 1], width, 0, mask, truncate)  # fmt: skip
        rank(scores, r0, n, order)
        top = order[r0]
        loss = np.nan
        if labeled:
            if cb_type == DR and dr_prev[0] > top:
                x = F32(dr_prev[1 + top])
                loss = F64(x)
                if top == k:
                    loss = F64((c - x) / p + x)
            elif top == k:
                loss = F64(c / p)
            else:
                loss = 0.0
            if holdout[e]:
                stats[HO_N] += 1.0
                stats[HO_LOSS] += loss
            else:
                stats[N_LAB] += 1.0
                stats[LOSS] += loss
        loss_out[e] = loss
        if not learn:
            gstate[G_N] += counted
            continue
        pc = max(p, F32(clip_p))
        if cb_type == MTR:
            stats[EVENTS] += 1.0
            stats[ACTIONS] += n
            w = F32(weight * (F32(1.0) / pc * (F32(stats[EVENTS]) / F32(stats[ACTIONS]))))
            r = r0 + k
            learn_line(tables[sub[r]], gstate, params, loss_id, rule, slots, indices, values,
                       indptr[r], indptr[r + 1], c, F64(w), width, 0, mask, truncate)  # fmt: skip
            gstate[G_N] += counted
            continue
        if cb_type == SM:
            _learn_sm(tables, sub, gstate, params, loss_id, rule, slots, indices, values, indptr,
                      r0, n, k, c, p, weight, scores, order, ys, xs, width, mask,
                      truncate)  # fmt: skip
            gstate[G_N] += counted
            continue
        for i in range(n):
            if cb_type == IPS:
                ys[i] = c / pc if i == k else F32(0.0)
            elif cb_type == DM:
                ys[i] = c if i == k else F32(0.0)
            else:
                y = xs[i]
                if i == k:
                    y += (c - y) / pc
                ys[i] = y
        a = F64(weight)
        for i in range(n):
            r = r0 + i
            learn_line(tables[sub[r]], gstate, params, loss_id, rule, slots, indices, values,
                       indptr[r], indptr[r + 1], ys[i], a, width, 0, mask, truncate)  # fmt: skip
        gstate[G_N] += counted  # VW's t, after the example (csoaa_ldf.learn_line)


@jit_inline
def _learn_sm(tables, sub, gstate, params, loss_id, rule, slots, indices, values, indptr, r0, n,
              k, c, p, weight, scores, order, ys, ws, width, mask, truncate):  # fmt: skip
    """VW's ``learn_sm``: regression toward the ranked scores nudged by ±1, importance from a
    softmax of them (times the example's ``weight``: VW's ``ec.weight *=``).  As VW, the j-th
    *ranked* action's target is given to line j."""
    sign = F32(1.0)
    ew = c / p
    if c < F32(0.0):
        sign = F32(-1.0)
        ew = -ew
    lo = scores[r0 + order[r0]]  # the smallest score (softmax with lambda -1)
    norm = F32(0.0)
    for j in range(n):
        a = order[r0 + j]
        s = F32(scores[r0 + a])
        x = s + sign if a == k else s - sign
        x = min(max(x, F32(-100.0)), F32(100.0))
        ys[j] = x
        e = F32(math.exp(F32(F32(-1.0) * (s - F32(lo)))))
        ws[j] = e
        norm += e
    for j in range(n):
        ws[j] = ws[j] / norm
        if order[r0 + j] == k:
            ew = ew * ws[j]
    wl = np.empty(n, dtype=np.float32)
    for j in range(n):
        a = order[r0 + j]
        w = F32(weight * (ew * (F32(1.0) - ws[j]) if a == k else ew * ws[j]))
        wl[a] = F32(0.0) if w <= F32(1e-15) else w
    for i in range(n):
        r = r0 + i
        a = F64(wl[i])
        learn_line(tables[sub[r]], gstate, params, loss_id, rule, slots, indices, values,
                   indptr[r], indptr[r + 1], ys[i], a, width, 0, mask, truncate)  # fmt: skip


def tables_of(table: np.ndarray) -> np.ndarray:
    """``table`` as the one window :func:`train_examples` reads (shape (1, N, cols))."""
    return table.reshape((1, *table.shape))
