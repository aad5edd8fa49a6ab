"""Online cover exploration over cb_adf (VW's ``--cb_explore_adf --cover N``,
``cb_explore_adf_cover.cc``).

N policies share one table: policy 0 is cb_adf itself (offset 0, its ``dr`` cost regressor
at offset 1), policies 1..N-1 are csoaa_ldf regressors at offsets 2..N.  A feature of hash
h takes ``s`` slots, s = (N+1)·(2 for ``mtr``/``dr``) rounded up to a power of 2 (VW's
feature width); each offset keeps its own gd normalizer sums.

Per example, as VW (K actions, ``eps`` = ``--epsilon``, or 1 with decay when not given):

* **Cost estimates** (learning only): ``ips``: ``c/p`` on the logged line, 0 elsewhere;
  ``dr``: the offset-1 regressor's predictions x̂ (before cb_adf learns it), plus
  ``(c - x̂)/p`` on the logged line; ``mtr``: the same, but the regressor is learned
  here first (logged line, importance 1/p; x̂ its prediction before the step).
* **Policy 0**: cb_adf's ranking made before it learns; its T tied leaders get ``1/(N T)``
  each (``--first_only``: its first gets ``1/N``).  ``min_prob = eps/K``, with decay
  ``min(eps/K, eps/sqrt(counter·K))`` (``counter``: examples learned so far);
  ``norm = min_prob·K + 1/N - min_prob``.
* **Policy i** (1..N-1, in order): learning, each line's pseudo-cost is
  ``x_j - psi·min_prob/(max(P_j, min_prob)/norm)`` (P the probabilities so far); the
  policy ranks the lines (before learning), then learns every line toward its pseudo-cost;
  predicting, it only ranks.  Its leaders get ``1/N`` as policy 0's, and ``norm`` grows by
  what each addition lifts above ``min_prob``.
* **pmf**: ``enforce_minimum_probability(min_prob·K, not nounif)``; sorted by probability
  (descending), then summed score, then action.  The summed scores are VW's: the policies'
  scores summed by *rank position*, looked up by action (a quirk kept on purpose).
* **Loss**: ``cost/p · pmf(logged action)``.  ``counter`` grows after each learned example.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import G_N
from streamlearn.learners.cb_adf import DR, IPS, MTR
from streamlearn.learners.csoaa_ldf import clipped, learn_line, line_score, rank
from streamlearn.learners.explore import (
    X_COUNTER,
    X_HO_LOSS,
    X_HO_N,
    X_LOSS,
    X_N,
    enforce_minimum_probability,
    explore_loss,
    fill_tied,
)
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64


def layout(cover: int, cb_type: int) -> tuple[int, int]:
    """(width, s): the feature width cover asks for and the slots a feature takes (s: the
    width rounded up to a power of 2, as VW's ``total_feature_width``)."""
    w = cover + 1
    if cb_type in (MTR, DR):
        w *= 2
    s = 1
    while s < w:
        s *= 2
    return w, s


@jit_inline
def _before(p1, a1, p2, a2, sums):
    if p1 > p2:
        return True
    if p1 < p2:
        return False
    if sums[a1] < sums[a2]:
        return True
    if sums[a1] > sums[a2]:
        return False
    return a1 < a2


@jit_inline
def _add_leaders(sorted_acts, sorted_sc, first_only, add, min_prob, probs, norm):
    """A policy's vote: ``add`` to its leader(s); returns ``norm`` grown as VW's."""
    if first_only:
        a = sorted_acts[0]
        if probs[a] < min_prob:
            norm += max(F32(0.0), add - (min_prob - probs[a]))
        else:
            norm += add
        probs[a] += add
        return norm
    tied = fill_tied(sorted_sc)
    share = add / F32(tied)
    for j in range(tied):
        a = sorted_acts[j]
        if probs[a] < min_prob:
            norm += max(F32(0.0), share - (min_prob - probs[a]))
        else:
            norm += share
        probs[a] += share
    return norm


@jit
def train_cover(table, gstate, params, loss_id, cb_type, clip_p, cover, width, psi, epsilon,
                decay, nounif, first_only, act_ptr, indptr, indices, values, chosen, cost, prob,
                holdout, learning, counts, xstats, out_actions, out_probs):  # fmt: skip
    """Predict (cover's pmf), account and learn each example of a batch.

    ``width``: the step between a feature's slots (s; 1 for ``--cb K``'s rewritten
    indices); ``counts``: cb_adf's mtr counts (events, actions); ``xstats[X_COUNTER]``:
    cover's counter of learned examples.
    """
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
    probs = np.empty(cap, dtype=np.float32)
    xs = np.empty(cap, dtype=np.float32)
    ys = np.empty(cap, dtype=np.float32)
    cs = np.empty(cap, dtype=np.float32)
    ones = np.ones(cap, dtype=np.float32)
    add = F32(1.0) / F32(cover)
    eps = F32(epsilon)
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
            probs = np.empty(cap, dtype=np.float32)
            xs = np.empty(cap, dtype=np.float32)
            ys = np.empty(cap, dtype=np.float32)
            cs = np.empty(cap, dtype=np.float32)
            ones = np.ones(cap, dtype=np.float32)
        k = chosen[e]
        labeled = k >= 0
        c = F32(cost[e])
        p = F32(prob[e])
        learn = labeled and learning
        counted = 1.0 if labeled and not holdout[e] else 0.0
        # 1. cover's cost estimates (learning only)
        if learn:
            if cb_type == IPS:
                sp = p if p > F32(0.0) else F32(1e-3)
                for i in range(n):
                    cs[i] = c / sp if i == k else F32(0.0)
            else:
                for i in range(n):
                    r = r0 + i
                    if i == k and cb_type == MTR:
                        cs[i] = learn_line(table, gstate, params, loss_id, rule, slots, indices,
                                           values, indptr[r], indptr[r + 1], c,
                                           F64(F32(1.0) / p), width, 1, mask,
                                           truncate)  # fmt: skip
                    else:
                        cs[i] = clipped(gstate, params, loss_id,
                                        line_score(table, gstate, indices, values, indptr[r],
                                                   indptr[r + 1], width, 1, mask,
                                                   truncate))  # fmt: skip
                    if i == k:
                        cs[i] += (c - cs[i]) / p
        # 2. policy 0: cb_adf (its dr regressor first, then its ranking before it learns)
        if learn and cb_type == DR:
            for i in range(n):
                r = r0 + i
                if i == k:
                    xs[i] = learn_line(table, gstate, params, loss_id, rule, slots, indices,
                                       values, indptr[r], indptr[r + 1], c, F64(F32(1.0) / p),
                                       width, 1, mask, truncate)  # fmt: skip
                else:
                    xs[i] = clipped(gstate, params, loss_id,
                                    line_score(table, gstate, indices, values, indptr[r],
                                               indptr[r + 1], width, 1, mask,
                                               truncate))  # fmt: skip
        for i in range(n):
            r = r0 + i
            sc[i] = line_score(table, gstate, indices, values, indptr[r], indptr[r + 1], width,
                               0, mask, truncate)  # fmt: skip
        rank(sc, 0, n, order)
        for i in range(n):
            sorted_acts[i] = order[i]
            sorted_sc[i] = sc[order[i]]
        if learn:
            pc = max(p, F32(clip_p))
            if cb_type == MTR:
                counts[0] += 1.0
                counts[1] += n
                a = F32(1.0) / pc * (F32(counts[0]) / F32(counts[1]))
                r = r0 + k
                learn_line(table, gstate, params, loss_id, rule, slots, indices, values,
                           indptr[r], indptr[r + 1], c, F64(a), width, 0, mask,
                           truncate)  # fmt: skip
            else:
                for i in range(n):
                    if cb_type == IPS:
                        ys[i] = c / pc if i == k else F32(0.0)
                    else:
                        y = xs[i]
                        if i == k:
                            y += (c - y) / pc
                        ys[i] = y
                for i in range(n):
                    r = r0 + i
                    learn_line(table, gstate, params, loss_id, rule, slots, indices, values,
                               indptr[r], indptr[r + 1], ys[i], 1.0, width, 0, mask,
                               truncate)  # fmt: skip
        # 3. the pmf
        counter = np.uint64(xstats[X_COUNTER])
        min_prob = eps / F32(n)
        if decay:
            root = F32(math.sqrt(F64(counter * np.uint64(n))))
            if root > F32(0.0):  # (VW's eps/0 is inf: the min keeps eps/K)
                min_prob = min(min_prob, eps / root)
        for i in range(n):
            probs[i] = F32(0.0)
            sums[i] = sorted_sc[i]
        _add_leaders(sorted_acts[:n], sorted_sc[:n], first_only, add, min_prob, probs[:n],
                     F32(0.0))  # fmt: skip
        norm = min_prob * F32(n) + (add - min_prob)
        for pol in range(1, cover):
            off = pol + 1
            if learn:
                for j in range(n):
                    ys[j] = cs[j] - psi * min_prob / (max(probs[j], min_prob) / norm)
            for i in range(n):
                r = r0 + i
                sc[i] = line_score(table, gstate, indices, values, indptr[r], indptr[r + 1],
                                   width, off, mask, truncate)  # fmt: skip
            rank(sc, 0, n, order)
            for i in range(n):
                sorted_acts[i] = order[i]
                sorted_sc[i] = sc[order[i]]
            if learn:
                for i in range(n):
                    r = r0 + i
                    learn_line(table, gstate, params, loss_id, rule, slots, indices, values,
                               indptr[r], indptr[r + 1], ys[i], 1.0, width, off, mask,
                               truncate)  # fmt: skip
            for j in range(n):
                sums[j] += sorted_sc[j]
            norm = _add_leaders(sorted_acts[:n], sorted_sc[:n], first_only, add, min_prob,
                                probs[:n], norm)  # fmt: skip
        enforce_minimum_probability(min_prob * F32(n), not nounif, probs[:n])
        acts = out_actions[r0:r1]
        pr = out_probs[r0:r1]
        for i in range(n):
            acts[i] = i
            pr[i] = probs[i]
        for i in range(1, n):
            a = acts[i]
            q = pr[i]
            j = i - 1
            while j >= 0 and _before(q, a, pr[j], acts[j], sums):
                acts[j + 1] = acts[j]
                pr[j + 1] = pr[j]
                j -= 1
            acts[j + 1] = a
            pr[j + 1] = q
        if labeled and p > F32(0.0):
            loss = explore_loss(acts, pr, ones[:n], k, c, p)
            if holdout[e]:
                xstats[X_HO_LOSS] += F64(loss)
                xstats[X_HO_N] += 1.0
            else:
                xstats[X_LOSS] += F64(loss)
                xstats[X_N] += 1.0
        if learn:
            xstats[X_COUNTER] += 1.0
        gstate[G_N] += counted
