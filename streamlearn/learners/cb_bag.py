"""Bagging exploration over cb_adf (VW's ``--cb_explore_adf --bag B``, ``cb_explore_adf_bag.cc``).

B copies of the cb_adf policy share one table: copy b's weight of feature slot h is at
``h · s + b · w + o``, w = 2 for ``--cb_type dr`` (its cost regressor at o = 1) and 1
otherwise, s = B·w rounded up to a power of 2 (VW's feature width); each offset keeps its
own gd normalizer sums, as VW's per-model states.

* **Predict** (every example, before any learning): each copy ranks the actions as cb_adf
  does; the copies vote for their leaders (``1/T`` to each of T tied leaders, or 1 to the
  first with ``--first_only``) and sum their scores; the pmf is the votes normalised
  (:func:`~streamlearn.learners.explore.bag_finish`), floored at ``epsilon / K``, sorted
  by probability, summed score, action.
* **Learn** (labeled; held-out examples too, as VW learns multiline ones): copy b learns
  the example n_b times, n_b a Poisson(1) draw from VW's global generator
  (``--random_seed``) in copy order, except copy 0 under ``--greedify`` (once, no draw);
  each time is cb_adf's learning at the copy's offset (mtr: the copy's own example and
  action counts grow each time, as VW's per-model ``event_sum``/``action_sum``).
* **Loss**: VW's ``cost/p · pmf(logged action)``.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import G_N
from streamlearn.learners.cb_adf import DM, DR, IPS, MTR
from streamlearn.learners.csoaa_ldf import clipped, learn_line, line_score, rank
from streamlearn.learners.explore import (
    X_HO_LOSS,
    X_HO_N,
    X_LOSS,
    X_N,
    bag_add,
    bag_finish,
    explore_loss,
    poisson_draw,
)
from streamlearn.system.jit import jit

F32 = np.float32
F64 = np.float64

# counts[2b], counts[2b + 1]: copy b's mtr counts (VW's per-model event_sum, action_sum)
C_EVENTS = 0
C_ACTIONS = 1


def layout(bags: int, cb_type: int) -> tuple[int, int]:
    """(w, s): the offsets of one copy and the slots a feature takes."""
    w = 2 if cb_type == DR else 1
    s = 1
    while s < bags * w:
        s *= 2
    return w, s


@jit
def train_bag(table, gstate, params, loss_id, cb_type, clip_p, bags, width, w, epsilon,
              first_only, greedify, rng, act_ptr, indptr, indices, values, chosen, cost, prob,
              holdout, learning, counts, xstats, out_actions, out_probs):  # fmt: skip
    """Predict (the bag's pmf), account and learn each example of a batch."""
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    cap = 64
    sc = np.empty(cap, dtype=np.float32)
    order = np.empty(cap, dtype=np.int64)
    sorted_acts = np.empty(cap, dtype=np.int64)
    sorted_sc = np.empty(cap, dtype=np.float32)
    sums = np.empty(cap, dtype=np.float32)
    top = np.empty(cap, dtype=np.float32)
    xs = np.empty(cap, dtype=np.float32)
    ys = np.empty(cap, dtype=np.float32)
    ones = np.ones(cap, dtype=np.float32)
    for e in range(act_ptr.shape[0] - 1):
        r0 = act_ptr[e]
        r1 = act_ptr[e + 1]
        n = r1 - r0
        if n == 0:
            continue
        if n > cap:
            cap = 2 * n
            sc = np.empty(cap, dtype=np.float32)
            order = np.empty(cap, dtype=np.int64)
            sorted_acts = np.empty(cap, dtype=np.int64)
            sorted_sc = np.empty(cap, dtype=np.float32)
            sums = np.empty(cap, dtype=np.float32)
            top = np.empty(cap, dtype=np.float32)
            xs = np.empty(cap, dtype=np.float32)
            ys = np.empty(cap, dtype=np.float32)
            ones = np.ones(cap, dtype=np.float32)
        for i in range(n):
            sums[i] = F32(0.0)
            top[i] = F32(0.0)
        # predict: every copy ranks the actions
        for b in range(bags):
            for i in range(n):
                r = r0 + i
                sc[i] = line_score(table, gstate, indices, values, indptr[r], indptr[r + 1],
                                   width, b * w, mask, truncate)  # fmt: skip
            rank(sc, 0, n, order)
            for i in range(n):
                sorted_acts[i] = order[i]
                sorted_sc[i] = sc[order[i]]
            bag_add(sorted_acts[:n], sorted_sc[:n], first_only, sums[:n], top[:n])
        acts = out_actions[r0:r1]
        probs = out_probs[r0:r1]
        bag_finish(top[:n], sums[:n], epsilon, acts, probs)
        k = chosen[e]
        labeled = k >= 0
        c = F32(cost[e])
        p = F32(prob[e])
        if labeled and p > F32(0.0):
            loss = explore_loss(acts, probs, ones[:n], k, c, p)
            if holdout[e]:
                xstats[X_HO_LOSS] += F64(loss)
                xstats[X_HO_N] += 1.0
            else:
                xstats[X_LOSS] += F64(loss)
                xstats[X_N] += 1.0
        # VW learns held-out multiline examples too (not counted in gd's t)
        counted = 1.0 if labeled and not holdout[e] else 0.0
        if not (labeled and learning):
            gstate[G_N] += counted
            continue
        pc = max(p, F32(clip_p))
        for b in range(bags):
            times = 1 if (greedify and b == 0) else poisson_draw(rng)
            base = b * w
            for _ in range(times):
                if cb_type == MTR:
                    # VW's event and action counts are per model (offset)
                    counts[2 * b + C_EVENTS] += 1.0
                    counts[2 * b + C_ACTIONS] += n
                    ratio = F32(counts[2 * b + C_EVENTS]) / F32(counts[2 * b + C_ACTIONS])
                    a = F32(1.0) / pc * ratio
                    r = r0 + k
                    learn_line(table, gstate, params, loss_id, rule, slots, indices, values,
                               indptr[r], indptr[r + 1], c, F64(a), width, base, mask,
                               truncate)  # fmt: skip
                    continue
                if cb_type == DR:
                    for i in range(n):
                        r = r0 + i
                        if i == k:
                            xs[i] = learn_line(table, gstate, params, loss_id, rule, slots,
                                               indices, values, indptr[r], indptr[r + 1], c,
                                               F64(F32(1.0) / p), width, base + 1, mask,
                                               truncate)  # fmt: skip
                        else:
                            xs[i] = clipped(gstate, params, loss_id,
                                            line_score(table, gstate, indices, values, indptr[r],
                                                       indptr[r + 1], width, base + 1, mask,
                                                       truncate))  # fmt: skip
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
                for i in range(n):
                    r = r0 + i
                    learn_line(table, gstate, params, loss_id, rule, slots, indices, values,
                               indptr[r], indptr[r + 1], ys[i], 1.0, width, base, mask,
                               truncate)  # fmt: skip
        gstate[G_N] += counted
