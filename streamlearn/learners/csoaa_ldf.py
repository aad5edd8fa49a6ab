"""Cost-sensitive one-against-all with label-dependent features (VW's ``--csoaa_ldf m|mc``).

A multiline example (its shared line merged into each action line,
:func:`streamlearn.io.multiline.merge_shared`) is a set of lines, each with its own
features and a label ``class:cost``.  As VW's ``csoaa_ldf.cc`` over its ``gd``:

* **Predict.** Each line's score is gd's raw prediction ``Σ w_j x_j`` (VW's
  ``partial_prediction``, not clipped); the predicted class is the class of the first line
  with the strictly smallest score; the ranking (``--csoaa_rank``, and what ``cb_adf``
  returns) is the lines sorted by (score, line) ascending (VW's ``action_score`` order).
* **Learn** (every line labeled with one cost each, not held out): line by line, in
  order, gd learns the regression toward the line's cost (``m``), or with ``mc`` the
  label -1 with importance ``max - min`` for a line of the smallest cost, +1 with
  importance ``cost - min`` otherwise.  Each line widens the prediction range with its
  label first (VW's ``scorer``), predicts with the weights as they are then, clipped, and
  steps when its float32 loss is > 0 (gd's zero-loss gate).
* **Loss**: the cost of the predicted class's first line (VW's ``update_stats``).

``gstate[G_N]`` is VW's ``t`` less its holdout and unlabeled weight, which gd's schedule
without adaptive rates reads: cb_adf counts its labeled examples there; csoaa_ldf's
statistics bypass VW's shared-data update, so under csoaa_ldf alone it stays 0.  VW's
csoaa_ldf has no holdout either: every example is progressive (``holdout`` is unused).

Weights: line features at slot ``idx · width + offset`` (VW's ``ft_offset``): width 1
here, 2 under ``cb_adf --cb_type dr`` whose cost regressor is offset 1; each offset has
its own gd normalizer sums (VW's ``gd_per_model_states``), at
``gstate[G_MODEL + 2·offset]`` and ``+ 1``.

The line helpers (:func:`line_score`, :func:`learn_line`, :func:`rank`) are the
building blocks of :mod:`streamlearn.learners.cb_adf`.

**Other base learners** (VW's ``--ftrl``, ``--coin``, ``--pistol`` under these
reductions; ``gstate[G_BASE]``): a line is scored as gd's, ``Σ w_j x_j`` (VW's ``predict``
of the ftrl family reads the stored weight); a line learned runs the base's own learn on
it (VW's ``learn_proximal``, ``learn_coin_betting``, ``learn_pistol``), as the single-line
kernels (:mod:`streamlearn.learners.ftrl`, ``coin``, ``pistol``) run an example: its own
prediction (coin's and pistol's from their state), clipped, then its update, with no
zero-loss gate.  Coin's normalizer sums are the learner's own, one pair whatever the
offset (VW's ``ftrl`` keeps one), at ``gstate[G_MODEL]`` and ``+ 1``.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import coin, ftrl, gd, pistol
from streamlearn.learners.base import (
    G_CLIP,
    G_LABEL_MAX,
    G_LABEL_MIN,
    G_N,
    G_T,
    G_USER,
    GSTATE_SIZE,
    P_CLIP_FIXED,
    P_CLIP_HI,
    P_CLIP_LO,
    P_FTRL_ALPHA,
    P_FTRL_BETA,
    P_L1,
    P_L2,
    P_QUANTILE_TAU,
    P_T0,
    div32,
)
from streamlearn.learners.losses import LOGISTIC, POISSON, dloss32, expf, loss32
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64

G_MODEL = GSTATE_SIZE
"""gd's normalizer sums of model (offset) o: Σ a Σ (x/m)² at ``G_MODEL + 2o``, Σ a at ``+1``."""
MODELS = 2
"""Offsets a multiline learner may use (cb_adf dr: the policy and the cost regressor)."""

G_BASE = G_USER + 9
"""The base learner the lines are learned with (one of :data:`BASES`' values; gd's slots end
before it)."""
GD, FTRL, COIN, PISTOL = 0.0, 1.0, 2.0, 3.0
BASES = {"gd": GD, "ftrl": FTRL, "coin": COIN, "pistol": PISTOL}
"""The base learners of the multiline reductions, by sl's ``algo`` name."""
COLUMNS = {"gd": 4, "ftrl": 3, "coin": 6, "pistol": 4}
"""The float32 columns of each base's table (gd's: the weight, its sums, and spare)."""


def init_gstate(params: np.ndarray, algo: str = "gd") -> np.ndarray:
    """The base learner's global state with room for :data:`MODELS` models' normalizer sums
    (gd with ``--initial-t`` t0 > 0: model 0's start at t0, as VW)."""
    gstate = np.zeros(GSTATE_SIZE + 2 * MODELS)
    gstate[gd.G_CONTRACTION] = 1.0
    gstate[G_BASE] = BASES[algo]
    t0 = F64(np.float32(params[P_T0]))
    if t0 > 0.0 and algo == "gd":
        gstate[G_MODEL] = t0
        gstate[G_MODEL + 1] = t0
    return gstate


@jit_inline
def prediction_range(gstate, params, loss_id):
    """The range predictions are clipped to (VW's ``min_label``/``max_label``)."""
    if params[P_CLIP_FIXED] != 0.0:
        return params[P_CLIP_LO], params[P_CLIP_HI]
    if gstate[G_CLIP] == 0.0:
        gstate[G_CLIP] = 1.0
        edge = 50.0 if loss_id == LOGISTIC or loss_id == POISSON else 0.0
        gstate[G_LABEL_MIN] = -edge
        gstate[G_LABEL_MAX] = edge
    return gstate[G_LABEL_MIN], gstate[G_LABEL_MAX]


@jit_inline
def widen(gstate, params, loss_id, y):
    """VW's ``set_minmax`` for a label ``y`` learned (unless the range is fixed)."""
    prediction_range(gstate, params, loss_id)
    if params[P_CLIP_FIXED] == 0.0:
        if y < gstate[G_LABEL_MIN]:
            gstate[G_LABEL_MIN] = y
        if y > gstate[G_LABEL_MAX]:
            gstate[G_LABEL_MAX] = y


@jit_inline
def clipped(gstate, params, loss_id, p):
    """VW's ``finalize_prediction``: clipped to the prediction range; NaN is 0 (VW warns)."""
    if p != p:
        return F32(0.0)
    lo, hi = prediction_range(gstate, params, loss_id)
    if p > F32(hi):
        return F32(hi)
    if p < F32(lo):
        return F32(lo)
    return p


@jit_inline
def line_score(table, gstate, indices, values, lo, hi, width, offset, mask, truncate):
    """gd's raw prediction of one line at ``offset`` (float32): VW's ``partial_prediction``."""
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(0.0)
    for t in range(lo, hi):
        j = (np.uint64(indices[t]) * np.uint64(width) + np.uint64(offset)) & mask
        w = F32(table[j, 0])
        if truncate:
            w = gd.trunc(w, grav)
        p += w * F32(values[t])
    return p * F32(gstate[gd.G_CONTRACTION])


@jit_inline
def learn_line(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, y, a, width,
               offset, mask, truncate):  # fmt: skip
    """Learn one line toward ``y`` with importance ``a`` (VW's scorer, then gd's learn).

    Returns the base's clipped prediction made before the step (what VW's learn leaves in
    ``pred.scalar``)."""
    widen(gstate, params, loss_id, F64(y))
    if gstate[G_BASE] != GD:
        return _learn_ftrl_line(table, gstate, params, loss_id, slots, indices, values, lo, hi,
                                y, a, width, offset, mask)  # fmt: skip
    raw = line_score(table, gstate, indices, values, lo, hi, width, offset, mask, truncate)
    p = clipped(gstate, params, loss_id, raw)
    if not a > 0.0:
        return p
    y32 = F32(y)
    if not loss32(loss_id, p, y32, rule[12], rule[13], rule[14]) > F32(0.0):
        return p  # gd's zero-loss gate
    for t in range(lo, hi):
        slots[t] = (np.uint64(indices[t]) * np.uint64(width) + np.uint64(offset)) & mask
    g = G_MODEL + 2 * offset
    # gd's schedule without adaptive rates: VW's t = examples learned before this one + a
    gstate[G_T] = gstate[G_N] + a
    gd.step(table, gstate, g, g + 1, slots, values, lo, hi, p, y32, F32(a), loss_id, rule)
    if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
        gd.rebase(table, gstate, params)
    return p


@jit_inline
def _learn_ftrl_line(table, gstate, params, loss_id, slots, indices, values, lo, hi, y, a, width,
                     offset, mask):  # fmt: skip
    """:func:`learn_line` of the ftrl family (``gstate[G_BASE]``): the base's prediction
    (clipped), then its update for the gradient ``a ℓ'(p, y)`` (none when ``a`` is 0)."""
    base = gstate[G_BASE]
    alpha = F32(params[P_FTRL_ALPHA])
    beta = F32(params[P_FTRL_BETA])
    for t in range(lo, hi):
        slots[t] = (np.uint64(indices[t]) * np.uint64(width) + np.uint64(offset)) & mask
    p = F32(0.0)
    scale = F32(1.0)
    if base == COIN:  # VW's coin_betting_predict: the bets of the state, normalized
        nx = F32(0.0)
        for t in range(lo, hi):
            j = slots[t]
            x = F32(values[t])
            m = F32(table[j, coin.W_MX])
            if abs(x) > m:
                m = abs(x)
            lm = F32(table[j, coin.W_MG]) * m
            if lm > F32(0.0):
                p += ((alpha + F32(table[j, coin.W_WE])) / (lm * (lm + F32(table[j, coin.W_G2])))
                      ) * F32(table[j, coin.W_ZT]) * x  # fmt: skip
            if m > F32(0.0):
                xn = x / m
                nx += xn * xn
        gstate[G_MODEL] += F64(F32(a)) * F64(nx)
        gstate[G_MODEL + 1] += F64(F32(a))
        scale = F32((gstate[G_MODEL] + 1e-6) / gstate[G_MODEL + 1])
        p = p / scale
    elif base == PISTOL:  # VW's update_state_and_predict_pistol: the weights of the state
        for t in range(lo, hi):
            j = slots[t]
            x = F32(values[t])
            m = F32(table[j, pistol.W_MX])
            if abs(x) > m:
                m = abs(x)
                table[j, pistol.W_MX] = m
            theta = F32(table[j, pistol.W_ZT])
            big_g = F32(table[j, pistol.W_G2])
            tau = div32(F32(1.0), alpha * m * (big_g + m))
            w = F32(math.sqrt(big_g)) * beta * theta * expf(theta * theta / F32(2.0) * tau) * tau
            table[j, pistol.W_XT] = w
            p += w * x
    else:  # ftrl: VW's predict, the stored weights
        for t in range(lo, hi):
            p += F32(table[slots[t], 0]) * F32(values[t])
    p = clipped(gstate, params, loss_id, p)
    if not a > 0.0:
        return p
    g = dloss32(loss_id, p, F32(y), F32(params[P_QUANTILE_TAU])) * F32(a)
    if base == FTRL:
        ftrl.step(table, slots, values, lo, hi, g, alpha, beta, F32(params[P_L1]),
                  F32(params[P_L2]))  # fmt: skip
    elif base == PISTOL:
        for t in range(lo, hi):
            j = slots[t]
            gx = g * F32(values[t])
            table[j, pistol.W_ZT] = F32(table[j, pistol.W_ZT]) + (-gx)
            table[j, pistol.W_G2] = F32(table[j, pistol.W_G2]) + abs(gx)
    else:  # coin: VW's inner_coin_betting_update_after_prediction
        ag = abs(g)
        for t in range(lo, hi):
            j = slots[t]
            x = F32(values[t])
            gx = g * x
            m = F32(table[j, coin.W_MX])
            if abs(x) > m:
                m = abs(x)
                table[j, coin.W_MX] = m
            lip = F32(table[j, coin.W_MG])
            if ag > lip:
                lip = ag if ag > beta else beta
                table[j, coin.W_MG] = lip
            bet = F32(0.0)
            lm = lip * m
            if lm > F32(0.0):
                bet = ((alpha + F32(table[j, coin.W_WE])) / (lm * (lm + F32(table[j, coin.W_G2])))
                       ) * F32(table[j, coin.W_ZT])  # fmt: skip
            table[j, coin.W_ZT] = F32(table[j, coin.W_ZT]) + (-gx)
            table[j, coin.W_G2] = F32(table[j, coin.W_G2]) + abs(gx)
            table[j, coin.W_WE] = F32(table[j, coin.W_WE]) + (-gx * bet)
            table[j, coin.W_XT] = bet / scale
    return p


@jit_inline
def rank(scores, lo, n, order):
    """``order[lo:lo+n]`` = the lines ``0..n-1`` sorted by (score, line) ascending (VW's
    ``action_score`` order; insertion sort, n is small)."""
    for i in range(n):
        order[lo + i] = i
    for i in range(1, n):
        a = order[lo + i]
        s = scores[lo + a]
        j = i - 1
        while j >= 0:
            b = order[lo + j]
            sb = scores[lo + b]
            if sb > s or (sb == s and b > a):
                order[lo + j + 1] = b
                j -= 1
            else:
                break
        order[lo + j + 1] = a


@jit
def train_examples(tables, sub, gstate, params, loss_id, classifier, act_ptr, indptr,
                   indices, values, lab_n, lab_cls, lab_cost, holdout, stats, scores, order,
                   pred):  # fmt: skip
    """``--csoaa_ldf``: predict, account and (when labeled) learn each example.

    ``act_ptr``: example ``e``'s lines are rows ``act_ptr[e]:act_ptr[e + 1]``; per row
    ``lab_n`` (its label entries), ``lab_cls``, ``lab_cost`` (NaN: a test line);
    ``holdout[e]``: held out.  ``classifier``: ``mc``.  Writes ``scores`` (raw, per row),
    ``order`` (per example, the ranking), ``pred[e]`` (the predicted class) and adds
    to ``stats`` ``[examples, labeled, loss, features, holdout examples, holdout loss]``.
    """
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = np.uint64(tables.shape[1] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    learning = params[10] != 0.0  # P_LEARN
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
        # VW's csoaa_ldf counts every example as progressive (no holdout, and gd's t stays
        # at its start: its statistics bypass VW's shared-data update)
        stats[1] += 1.0
        stats[2] += loss
        if not learning:
            continue
        lo_c = lab_cost[r0]
        hi_c = lab_cost[r0]
        for r in range(r0, r1):
            lo_c = min(lo_c, lab_cost[r])
            hi_c = max(hi_c, lab_cost[r])
        for r in range(r0, r1):
            c = F32(lab_cost[r])
            a = 1.0
            y = c
            if classifier:
                if c <= F32(lo_c):
                    y = F32(-1.0)
                    a = F64(F32(hi_c) - F32(lo_c))
                else:
                    y = F32(1.0)
                    a = F64(c - F32(lo_c))
            learn_line(tables[sub[r]], gstate, params, loss_id, rule, slots, indices, values,
                       indptr[r], indptr[r + 1], y, a, 1, 0, mask, truncate)  # fmt: skip
