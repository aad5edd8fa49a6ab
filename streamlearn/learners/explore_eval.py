"""Offline evaluation of an exploration policy by rejection sampling (VW's ``--explore_eval``,
``reductions/explore_eval.cc``), over cb_adf and an explorer (:mod:`~streamlearn.learners.explore`).

Each example of a log (the logged action ``k``, its cost ``c`` and probability ``p``):

* **Predict.** cb_adf scores the actions without learning; the explorer makes its pmf
  (VW's ``a_s``), which ``-p`` prints and whose loss ``c/p · pmf(k)`` is the progressive
  loss, as ``--cb_explore_adf``'s.
* **Accept.** For a labeled example: ``threshold = pmf(k) / p`` (float32); without
  ``--multiplier`` or ``--target_rate`` the multiplier is the smallest ``1/threshold``
  seen so far (it starts at 1), so every accepted threshold is at most 1; the threshold
  is multiplied by it; a rate tracker (``--target_rate r``: ``r · t / Σ thresholds``
  before this one, 1 while the sum is 0) multiplies it again under ``--target_rate``.
  One draw of VW's global generator (``--random_seed``) below the threshold accepts.
* **Learn** (accepted): cb_adf and the explorer learn the example with its probability
  replaced by ``pmf(k)`` (the explorer's counters advance then only) and its weight
  multiplied by a threshold above 1 (``--multiplier``, ``--target_rate``), under every
  ``--cb_type`` (``train_weighted``'s ``weight``).

``ee`` holds VW's closing counts: examples, updates, their weight, violations (a
threshold above 1), the multiplier, the rate tracker's sum, count and latest rate.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.base import G_N
from streamlearn.learners.cb_adf import ACTIONS, EVENTS, train_examples, train_weighted
from streamlearn.learners.explore import SQUARECB, X_COUNTER, X_TAU, explore_examples, merand48
from streamlearn.system.jit import jit

F32 = np.float32

E_EXAMPLES = 0  # labeled examples seen (VW's example_counter)
E_UPDATES = 1  # accepted
E_WEIGHT = 2  # their weight (VW's weighted_update_count)
E_VIOLATIONS = 3
E_MULTIPLIER = 4
E_SUM_P = 5  # the rate tracker's sum of thresholds
E_T = 6  # its count
E_RATE = 7  # its latest rate
EE = 8


def new_state(multiplier: float | None) -> np.ndarray:
    """The counts of a fresh run (``multiplier``: ``--multiplier``, None: adaptive)."""
    ee = np.zeros(EE)
    ee[E_MULTIPLIER] = 1.0 if multiplier is None else multiplier
    ee[E_RATE] = 1.0
    return ee


@jit
def explore_eval_examples(tables, sub, step, gstate, params, params_pred, loss_id, cb_type,
                          clip_p, act_ptr, indptr, indices, values, chosen, cost, prob, stats,
                          dr_prev, kind, epsilon, first_only, lam, gamma_scale, gamma_exponent,
                          xstats, fixed, target_on, target_rate, ee, rng, scores, order, acts,
                          probs):  # fmt: skip
    """The examples of a batch, one by one (see the module): ``stats`` and ``xstats`` as
    :func:`~streamlearn.learners.cb_adf.train_examples` and
    :func:`~streamlearn.learners.explore.explore_examples` keep them; ``acts``/``probs``
    each example's pmf at its rows.  Returns the examples done."""
    ap = np.zeros(2, dtype=np.int64)
    no_ho = np.zeros(1, dtype=np.bool_)
    pr = np.zeros(1)
    loss_out = np.zeros(1)
    scratch = np.zeros(stats.shape[0])
    xs = np.zeros(xstats.shape[0])
    acts2 = np.zeros_like(acts)
    probs2 = np.zeros_like(probs)
    learning = params[10] != 0.0  # P_LEARN
    m = act_ptr.shape[0] - 1
    for e in range(m):
        r0 = act_ptr[e]
        r1 = act_ptr[e + 1]
        n = r1 - r0
        ap[1] = n
        k = chosen[e]
        ch = chosen[e : e + 1]
        co = cost[e : e + 1]
        # predict: cb_adf's scores with learning off, then the explorer's pmf
        train_examples(tables, sub[r0:r1], step, gstate, params_pred, loss_id, cb_type, clip_p,
                       ap, indptr[r0 : r1 + 1], indices, values, ch, co, prob[e : e + 1], no_ho,
                       True, stats, dr_prev, scores[r0:r1], order[r0:r1], loss_out)  # fmt: skip
        explore_examples(kind, epsilon, first_only, lam, gamma_scale, gamma_exponent, ap,
                         scores[r0:r1], order[r0:r1], ch, co, prob[e : e + 1], no_ho, True, False,
                         xstats, acts[r0:r1], probs[r0:r1])  # fmt: skip
        if k < 0 or not learning or not prob[e] > 0.0:
            continue  # (VW's probability 0 is no label: its loss above is none either)
        ee[E_EXAMPLES] += 1.0
        found = False
        pk = F32(0.0)
        for i in range(n):
            if acts[r0 + i] == k:
                pk = F32(probs[r0 + i])
                found = True
        threshold = F32(pk / F32(prob[e]))
        mult = F32(ee[E_MULTIPLIER])
        if not fixed and not target_on and found and threshold > F32(0.0):
            mult = min(mult, F32(1.0) / threshold)  # (VW's 1/0 is inf: no change)
            ee[E_MULTIPLIER] = mult
        threshold = F32(threshold * mult)
        sum_p = F32(ee[E_SUM_P])
        rate = F32(1.0)
        if sum_p > F32(0.0):
            rate = F32(F32(target_rate) * F32(ee[E_T])) / sum_p
        ee[E_SUM_P] = F32(sum_p + threshold)
        ee[E_T] += 1.0
        ee[E_RATE] = rate
        if not found:
            continue
        if threshold > 1.0 + 1e-6:
            ee[E_VIOLATIONS] += 1.0
        if target_on:
            threshold = F32(threshold * rate)
        if merand48(rng) < threshold:
            weight = F32(1.0)
            if threshold > F32(1.0):
                weight = threshold
            ee[E_UPDATES] += 1.0
            ee[E_WEIGHT] = F32(F32(ee[E_WEIGHT]) + weight)
            # learn with pmf(k) as the logged probability (gd's t counted once: the
            # prediction above counted the example)
            pr[0] = pk
            if kind == SQUARECB and k != n - 1:
                pr[0] = 1.0  # (as sl vw's --squarecb: VW learns it without importance)
            gstate[G_N] -= 1.0
            scratch[:] = 0.0
            scratch[EVENTS] = stats[EVENTS]
            scratch[ACTIONS] = stats[ACTIONS]
            train_weighted(tables, sub[r0:r1], step, gstate, params, loss_id, cb_type, clip_p,
                           ap, indptr[r0 : r1 + 1], indices, values, ch, co, pr, no_ho, True,
                           scratch, dr_prev, scores[r0:r1], order[r0:r1], loss_out,
                           weight)  # fmt: skip
            stats[EVENTS] = scratch[EVENTS]
            stats[ACTIONS] = scratch[ACTIONS]
            # the explorer learns: its counters advance (the pmf is the one above)
            xs[:] = xstats
            explore_examples(kind, epsilon, first_only, lam, gamma_scale, gamma_exponent, ap,
                             scores[r0:r1], order[r0:r1], ch, co, pr, no_ho, True, True, xs,
                             acts2[r0:r1], probs2[r0:r1])  # fmt: skip
            xstats[X_TAU] = xs[X_TAU]
            xstats[X_COUNTER] = xs[X_COUNTER]
    return m
