"""The offset tree (VW's ``--ot K``): K actions of a contextual bandit as a binary tree of
two-action bandits, each VW's legacy ``--cb_explore 2`` (epsilon-greedy over ``--cb 2`` over
``csoaa 2`` over gd), in one table.

As VW's ``reductions/offset_tree.cc`` (Beygelzimer & Langford 2009, "The Offset Tree for
Learning with Partial Labels"), over :mod:`streamlearn.learners.cb_algs`' problems:

* **Tree** (:func:`tree`, VW's ``min_depth_binary_tree``).  The actions are the leaves
  0..K-1; each round pairs the nodes left from the previous one two by two into a new node
  (an odd one out waits for the next round), until one is left, the root.  Internal node
  ``n`` (K..2K-2) is problem ``n - K``: its two-action bandit sits at offset
  ``(n - K)·m`` of each feature's slots, ``m`` the width of one problem (4 under
  ``--cb_type dr``: csoaa's 2 classes and dr's 2 regressors; 2 under ips and dm), the
  feature's slots ``(K - 1)·m`` rounded up to a power of 2 (VW's feature width).
* **Prediction** (the pmf over the K actions).  Each problem predicts with no label (VW
  clears it): cb_algs' class (csoaa's lowest score, dm: the lowest regressor's; the first
  on ties), made a pmf by epsilon-greedy (``ε/2`` each, ``1 - ε`` more on the class, in
  float32).  From the root down, each node's two probabilities multiply into its
  children's; a leaf's is its action's.
* **Learning** a line ``a:c:p`` with importance ``w`` = 1: from leaf ``a`` up to the root,
  each parent learns its problem with the logged action made 1 (the child was its left) or
  2, cost ``c``, probability ``p`` and importance ``w`` (cb_algs' learn: dr's regressor of
  that action toward ``c`` with importance ``w/p``, then csoaa's classes toward their cost
  estimates with importance ``w``), then predicts it again (with the label: the same
  class rule), and ``w`` is multiplied by that pmf's probability of the action taken.
* **Loss** (VW's cb_explore): ``c/p`` times the pmf's probability of the logged action.
* **Rates.** gd's clock ``gstate[G_N]`` counts the examples learned (one each, as VW's
  statistics count a cb example); each step reads it plus its call's importance.

A line is one label entry with a cost and a probability > 0 (learned) or none (only
predicted); others are refused when the block is read (``run/cblegacy.py``).
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import G_N, G_T, P_LEARN
from streamlearn.learners.cb_adf import DM, DR, FEATURES, HO_LOSS, HO_N, IPS, LOSS, N_EX, N_LAB
from streamlearn.learners.csoaa_ldf import G_MODEL, clipped, line_score, widen
from streamlearn.learners.losses import loss32
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
FLT_MAX = F32(3.4028234663852886e38)

PARENT, LEFT, RIGHT = range(3)
"""The tree's columns, one row per node (leaves first): its parent (the root's is itself),
its two children (leaves: 0)."""


def tree(k: int) -> np.ndarray:
    """VW's ``min_depth_binary_tree`` of ``k`` leaves: int64[2k - 1, 3] (:data:`PARENT` ...)."""
    nodes = [[0, 0, 0] for _ in range(k)]
    level = list(range(k))
    while len(level) > 1:
        new = []
        for j in range(len(level) // 2):
            a, b = level[2 * j], level[2 * j + 1]
            me = len(nodes)
            nodes[a][PARENT] = nodes[b][PARENT] = me
            nodes.append([0, a, b])
            new.append(me)
        if len(level) % 2 == 1:
            new.append(level[-1])
        level = new
    nodes[-1][PARENT] = level[0]
    return np.array(nodes, dtype=np.int64)


def per_node(cb_type: int) -> int:
    """The slots one node's two-action bandit takes (VW's width below ``ot``)."""
    return 4 if cb_type == DR else 2


def stride(k: int, cb_type: int) -> int:
    """The slots of a feature: ``(k - 1)·per_node`` rounded up to a power of 2."""
    return 1 << max((k - 1) * per_node(cb_type) - 1, 0).bit_length()


@jit_inline
def _greedy(p, epsilon, pair):
    """Epsilon-greedy over two actions with ``p`` (1 or 2) the greedy one (float32)."""
    pair[0] = epsilon / F32(2.0)
    pair[1] = epsilon / F32(2.0)
    pair[p - 1] += F32(1.0) - epsilon


@jit
def learn_gd(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, y, a, width,
             offset, mask, truncate):  # fmt: skip
    """:func:`~streamlearn.learners.csoaa_ldf.learn_line` over gd alone (compiled once here,
    not inlined at each call: VW's scorer and gd learning one line at ``offset`` toward
    ``y`` with importance ``a``); returns the clipped prediction before the step."""
    widen(gstate, params, loss_id, F64(y))
    p = clipped(gstate, params, loss_id,
                line_score(table, gstate, indices, values, lo, hi, width, offset, mask, truncate))
    if not a > 0.0:
        return p
    y32 = F32(y)
    if not loss32(loss_id, p, y32, rule[12], rule[13], rule[14]) > F32(0.0):
        return p  # gd's zero-loss gate
    for t in range(lo, hi):
        slots[t] = (np.uint64(indices[t]) * np.uint64(width) + np.uint64(offset)) & mask
    g = G_MODEL + 2 * offset
    gstate[G_T] = gstate[G_N] + a  # (VW's t: examples learned before this one, plus a)
    gd.step(table, gstate, g, g + 1, slots, values, lo, hi, p, y32, F32(a), loss_id, rule)
    if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
        gd.rebase(table, gstate, params)
    return p


@jit_inline
def _regress(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, step, off,
             mask, truncate, learn, cost, imp):  # fmt: skip
    """VW's ``get_cost_pred``: the regressor at ``off`` predicts (clipped), or learns toward
    ``cost`` with importance ``imp`` and returns its prediction before the step."""
    if learn:
        return learn_gd(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                        F64(cost), F64(imp), step, off, mask, truncate)  # fmt: skip
    raw = line_score(table, gstate, indices, values, lo, hi, step, off, mask, truncate)
    return clipped(gstate, params, loss_id, raw)


@jit
def node_call(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, step, mask,
              truncate, cb_type, base, learn, ka, kc, kp, w):  # fmt: skip
    """One problem's cb_algs over two actions at offset ``base``: the class it predicts (1 or
    2).  ``ka`` 0: no label (every cost unknown); else the logged action ``ka`` with cost
    ``kc`` and probability ``kp``; ``learn``: its regressions learn (the regressor with
    importance ``w/kp``, csoaa's classes with importance 1)."""
    x1 = F32(0.0)
    x2 = F32(0.0)
    for a in range(1, 3):
        x = F32(0.0)
        if cb_type == IPS:
            if a == ka:
                x = kc / kp
        elif cb_type == DR and ka == 0:
            x = FLT_MAX
        else:
            off = base + a - 1 + (2 if cb_type == DR else 0)
            x = _regress(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                         step, off, mask, truncate, learn and a == ka, kc, w / kp)  # fmt: skip
            if cb_type == DR and a == ka:
                x += (kc - x) / kp
        if a == 1:
            x1 = x
        else:
            x2 = x
    if cb_type == DM:  # the cheapest regressor's action (the first on ties)
        return 2 if x2 < x1 else 1
    best = FLT_MAX
    pred = 1
    for a in range(1, 3):
        off = base + a - 1
        raw = line_score(table, gstate, indices, values, lo, hi, step, off, mask, truncate)
        cost = x1 if a == 1 else x2
        if learn and cost != FLT_MAX:
            learn_gd(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                     F64(cost), 1.0, step, off, mask, truncate)  # fmt: skip
        if raw < best:
            best = raw
            pred = a
    return pred


@jit
def train_examples(table, gstate, params, loss_id, cb_type, k, epsilon, nodes, indptr, indices,
                   values, lab_ptr, lab_cls, lab_cost, lab_prob, holdout, stats, pmf,
                   loss_out):  # fmt: skip
    """Score, account and learn the lines of a batch (rows of the CSR arrays).

    Parameters
    ----------
    cb_type : int
        :data:`~streamlearn.learners.cb_adf.IPS`, ``DM`` or ``DR``.
    k, epsilon : int, float32
        The actions; each problem's ε.
    nodes : int64[2k - 1, 3]
        The tree (:func:`tree`).
    lab_ptr, lab_cls, lab_cost, lab_prob
        Row ``e``'s label entries ``lab_ptr[e]:lab_ptr[e+1]``: none, or one with a cost.
    holdout : bool[m]
        Held-out rows: predicted, counted apart.
    pmf : float32[m, K]
        Out: the pmf over the actions.
    loss_out : float64[m]
        Out: each row's loss (NaN: unlabeled).
    """
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    learning = params[P_LEARN] != 0.0
    m = 4 if cb_type == DR else 2  # (per_node)
    step = 1
    while step < (k - 1) * m:
        step *= 2
    inner = k - 1
    buf = np.zeros((max(inner, 1), 2), dtype=np.float32)
    pair = np.zeros(2, dtype=np.float32)
    for e in range(indptr.shape[0] - 1):
        lo = indptr[e]
        hi = indptr[e + 1]
        q0 = lab_ptr[e]
        ka = 0
        kc = FLT_MAX
        kp = F32(-1.0)
        if lab_ptr[e + 1] > q0 and lab_cost[q0] == lab_cost[q0] and lab_prob[q0] > 0.0:
            ka = lab_cls[q0]
            kc = F32(lab_cost[q0])
            kp = F32(lab_prob[q0])
        stats[N_EX] += 1.0
        stats[FEATURES] += hi - lo
        # the pmf: every problem predicts with no label, then the products from the root down
        for i in range(inner):
            p = node_call(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                          step, mask, truncate, cb_type, i * m, False, 0, FLT_MAX, F32(-1.0),
                          F32(1.0))  # fmt: skip
            _greedy(p, epsilon, pair)
            buf[i, 0] = pair[0]
            buf[i, 1] = pair[1]
        if k == 1:
            pmf[e, 0] = 1.0
        for n in range(2 * k - 2, k - 1, -1):
            i = n - k
            for side in range(2):
                child = nodes[n, LEFT + side]
                q = buf[i, side]
                if child < k:
                    pmf[e, child] = q
                else:
                    buf[child - k, 0] *= q
                    buf[child - k, 1] *= q
        labeled = ka > 0
        learn = labeled and learning and not holdout[e]
        if learn:
            w = F32(1.0)
            node = ka - 1
            while True:
                prev = node
                node = nodes[node, PARENT]
                local = 1 if nodes[node, LEFT] == prev else 2
                base = (node - k) * m
                node_call(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                          step, mask, truncate, cb_type, base, True, local, kc, kp, w)  # fmt: skip
                p = node_call(table, gstate, params, loss_id, rule, slots, indices, values, lo,
                              hi, step, mask, truncate, cb_type, base, False, local, kc, kp,
                              w)  # fmt: skip
                _greedy(p, epsilon, pair)
                if cb_type != DM:
                    w = F32(1.0)  # (VW's csoaa leaves each class's weight, 1, in the example)
                w *= pair[local - 1]
                if nodes[node, PARENT] == node:
                    break
        loss = np.nan
        if labeled:
            loss = F64(kc / kp * pmf[e, ka - 1])
            if holdout[e]:
                stats[HO_N] += 1.0
                stats[HO_LOSS] += loss
            else:
                stats[N_LAB] += 1.0
                stats[LOSS] += loss
        loss_out[e] = loss
        if learn:
            gstate[G_N] += 1.0
