"""Exploration from cost confidence ranges over cb_adf (``mtr``): VW's ``--regcb``,
``--regcb --regcbopt`` (``cb_explore_adf_regcb.cc``) and ``--squarecb --elim``
(``cb_explore_adf_squarecb.cc``), with ``confidence_sequence_utility.cc``'s ranges.

Per example (K actions, ``counter`` the examples learned so far, costs in
[``cmin``, ``cmax``] = ``--cb_min_cost``/``--cb_max_cost``, ``--cbify``'s loss0/loss1):

* cb_adf ranks the actions (raw scores ``s_a``, before it learns);
* ``delta = c0 · log(K·counter) · (cmax - cmin)²`` (c0 = ``--mellowness``; -inf at first,
  which makes every range a point);
* each action's range: with ``sens`` gd's *sensitivity* of the action's line toward the
  label ``cmin - 1`` (how far one unit of importance moves its prediction; stateless, as
  VW's ``get_pred_per_update``), ``w`` the largest importance with
  ``w·(f² - (f - sens·w)²) <= delta`` (f = ``s_a - cmin + 1``; VW's 20-step bisection),
  ``min_a = clamp(s_a - sens·w, cmin, cmax)``; ``max_a`` the same toward ``cmax + 1``.
  A score outside [cmin, cmax] or a non-finite ``sens`` gives the bound itself;
* **regcb**: the actions with ``min_a <= min_b max_b`` share the mass equally;
  **regcbopt**: 1 on the first action of smallest ``min_a`` (and, without
  ``--first_only``, every action with that ``min_a``), 0 elsewhere (not normalised, as VW);
  **squarecb --elim**: the surviving actions get squarecb's ``1/(n + gamma (s_a - s_min))``
  (n: VW's count, which grows only when a new minimum is met), the rest on the best,
  eliminated ones 0;
* the pmf keeps cb_adf's order; the loss is ``cost/p · pmf(logged action)``;
* learning: cb_adf (mtr) learns the logged action with probability 1 unless it is the
  last action line (VW sets 1 on every label but the last's), then ``counter`` grows.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import G_N
from streamlearn.learners.csoaa_ldf import G_MODEL, learn_line, line_score, rank
from streamlearn.learners.explore import (
    X_COUNTER,
    X_HO_LOSS,
    X_HO_N,
    X_LOSS,
    X_N,
    explore_loss,
    squarecb_gamma,
)
from streamlearn.learners.losses import square_grad32
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64

REGCB = 0
REGCBOPT = 1
ELIM = 2  # --squarecb --elim
VARIANTS = {"regcb": REGCB, "regcbopt": REGCBOPT, "elim": ELIM}
FLT_MAX = F32(3.4028234663852886e38)


@jit_inline
def sensitivity(table, gstate, rule, loss_id, indices, values, lo, hi, width, offset, mask,
                truncate, pred, label, plain):  # fmt: skip
    """gd's sensitivity of one line (importance 1) toward ``label`` from prediction
    ``pred``: VW's stateless ``get_pred_per_update`` times the rate, nothing changed.
    ``plain``: without adaptive and normalized rates, as VW's gd is under ``-t`` (it turns
    them off when it does not learn), with the run's own eta."""
    (adaptive, normalized, invariant, sqrt_rate, neg_q, neg_norm_power, t0, g0, eta, l1, l2,
     reg, tau, _lmin, _lmax) = rule  # fmt: skip
    if plain or (not adaptive and not normalized):
        sq = F32(0.0)
        for t in range(lo, hi):
            x2 = F32(values[t]) * F32(values[t])
            sq += gd.X2_MIN if x2 < gd.X2_MIN else x2
        scale = eta * F32(F32(F64(t0) + gstate[G_N] + 1.0) ** neg_q)
        return scale * sq
    gamma = square_grad32(loss_id, pred, label, tau)
    ppu = F32(0.0)
    nx = F32(0.0)
    for t in range(lo, hi):
        j = (np.uint64(indices[t]) * np.uint64(width) + np.uint64(offset)) & mask
        x = F32(values[t])
        x2 = x * x
        if x2 < gd.X2_MIN:
            x = gd.X_MIN if x > F32(0.0) else -gd.X_MIN
            x2 = gd.X2_MIN
        G = F32(table[j, 1])
        if adaptive:
            if G == F32(0.0):
                G = g0
            G = G + gamma * x2
        m = F32(table[j, 2])
        if normalized:
            ax = abs(x)
            if ax > m:
                m = ax
            nx2 = fdiv(x2, m * m)
            nx += F32(1.0) if x2 > FLT_MAX else nx2
        if adaptive and normalized and sqrt_rate:
            r = fdiv(F32(1.0), F32(math.sqrt(G))) * fdiv(F32(1.0), m)
        else:
            r = gd._rate(G, m, adaptive, normalized, sqrt_rate, neg_q, neg_norm_power)
        ppu += x2 * r
    if normalized:
        g = G_MODEL + 2 * offset
        nsnx = F32(gstate[g]) + nx
        tw = F32(gstate[g + 1]) + F32(1.0)
        ppu = ppu * gd._normalizer(tw, nsnx, sqrt_rate, adaptive, neg_norm_power)
    scale = eta
    if not adaptive:
        scale = scale * F32(F32(F64(t0) + gstate[G_N] + 1.0) ** neg_q)
    return scale * ppu


@jit_inline
def binary_search(fhat, delta, sens):
    """VW's ``binary_search``: the importance w with ``w (f² - (f - sens w)²) = delta``."""
    maxw = min(fdiv(fhat, sens), FLT_MAX)
    if maxw * fhat * fhat <= delta:
        return maxw
    lo = F32(0.0)
    hi = maxw
    for _ in range(20):
        w = (hi + lo) / F32(2.0)
        d = fhat - sens * w
        v = w * (fhat * fhat - d * d) - delta
        if v > F32(0.0):
            hi = w
        else:
            lo = w
        if abs(v) <= F32(1e-6) or hi - lo <= F32(1e-6):
            break
    return lo


@jit_inline
def _finite(x):
    return x == x and x < np.inf and x > -np.inf


@jit
def train_regcb(table, gstate, params, loss_id, clip_p, variant, c0, cmin, cmax, gamma_scale,
                gamma_exponent, first_only, width, act_ptr, indptr, indices, values, chosen, cost,
                prob, holdout, learning, counts, xstats, out_actions, out_probs):  # fmt: skip
    """Predict (the pmf), account and learn (cb_adf mtr) each example of a batch."""
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    cap = 64
    sc = np.empty(cap, dtype=np.float32)
    order = np.empty(cap, dtype=np.int64)
    lo_c = np.empty(cap, dtype=np.float32)
    hi_c = np.empty(cap, dtype=np.float32)
    ones = np.ones(cap, dtype=np.float32)
    cmin = F32(cmin)
    cmax = F32(cmax)
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
            lo_c = np.empty(cap, dtype=np.float32)
            hi_c = np.empty(cap, dtype=np.float32)
            ones = np.ones(cap, dtype=np.float32)
        k = chosen[e]
        labeled = k >= 0
        c = F32(cost[e])
        p = F32(prob[e])
        learn = labeled and learning
        counted = 1.0 if labeled and not holdout[e] else 0.0
        for i in range(n):
            r = r0 + i
            sc[i] = line_score(table, gstate, indices, values, indptr[r], indptr[r + 1], width,
                               0, mask, truncate)  # fmt: skip
        rank(sc, 0, n, order)
        counter = int(xstats[X_COUNTER])
        rng = cmax - cmin
        delta = F32(c0) * F32(math.log(F32(n * counter))) * F32(F64(rng) ** 2.0)
        min_only = variant == REGCBOPT
        for a in range(n):
            r = r0 + a
            s = sc[a]
            sens = sensitivity(table, gstate, rule, loss_id, indices, values, indptr[r],
                               indptr[r + 1], width, 0, mask, truncate, s,
                               cmin - F32(1.0), not learning)  # fmt: skip
            if s < cmin or not _finite(sens):
                lo_c[a] = cmin
            else:
                w = binary_search(s - cmin + F32(1.0), delta, sens)
                v = max(s - sens * w, cmin)
                lo_c[a] = cmax if v > cmax else v
            if not min_only:
                sens = sensitivity(table, gstate, rule, loss_id, indices, values, indptr[r],
                                   indptr[r + 1], width, 0, mask, truncate, s,
                                   cmax + F32(1.0), not learning)  # fmt: skip
                if s > cmax or not _finite(sens):
                    hi_c[a] = cmax
                else:
                    w = binary_search(cmax + F32(1.0) - s, delta, sens)
                    v = min(s + sens * w, cmax)
                    hi_c[a] = cmin if v < cmin else v
        acts = out_actions[r0:r1]
        pr = out_probs[r0:r1]
        for i in range(n):
            acts[i] = order[i]
            pr[i] = sc[order[i]]
        if variant == REGCBOPT:
            best = FLT_MAX
            a_opt = 0
            for a in range(n):
                if lo_c[a] < best:
                    best = lo_c[a]
                    a_opt = a
            for i in range(n):
                a = acts[i]
                pr[i] = F32(1.0) if a == a_opt or (not first_only and lo_c[a] == best) else F32(0.0)
        else:
            min_max = FLT_MAX
            for a in range(n):
                if hi_c[a] < min_max:
                    min_max = hi_c[a]
            if variant == REGCB:
                alive = 0
                for i in range(n):
                    if lo_c[acts[i]] <= min_max:
                        alive += 1
                for i in range(n):
                    if lo_c[acts[i]] <= min_max:
                        pr[i] = F32(1.0) / F32(alive)
                    else:
                        pr[i] = F32(0.0)
            else:
                gamma = squarecb_gamma(counter, gamma_scale, gamma_exponent)
                i_min = 0
                alive = 0
                s_min = FLT_MAX
                for i in range(n):
                    if pr[i] < s_min and lo_c[acts[i]] <= min_max:
                        i_min = i
                        s_min = pr[i]
                        alive += 1  # (VW counts new minima, not survivors)
                total = F32(0.0)
                for i in range(n):
                    if lo_c[acts[i]] > min_max:
                        pr[i] = F32(0.0)
                    elif i != i_min:
                        pa = F32(1.0) / (F32(alive) + gamma * (pr[i] - s_min))
                        pr[i] = pa
                        total += pa
                pr[i_min] = F32(1.0) - total
        if labeled and p > F32(0.0):
            loss = explore_loss(acts, pr, ones[:n], k, c, p)
            if holdout[e]:
                xstats[X_HO_LOSS] += F64(loss)
                xstats[X_HO_N] += 1.0
            else:
                xstats[X_LOSS] += F64(loss)
                xstats[X_N] += 1.0
        if learn:
            # VW learns without importance weights: probability 1 but on the last line
            pl = p if k == n - 1 else F32(1.0)
            pc = max(pl, F32(clip_p))
            counts[0] += 1.0
            counts[1] += n
            a = F32(1.0) / pc * (F32(counts[0]) / F32(counts[1]))
            r = r0 + k
            learn_line(table, gstate, params, loss_id, rule, slots, indices, values, indptr[r],
                       indptr[r + 1], c, F64(a), width, 0, mask, truncate)  # fmt: skip
            xstats[X_COUNTER] += 1.0
        gstate[G_N] += counted
