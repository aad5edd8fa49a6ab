"""VW's legacy contextual bandits on single lines (``--cb K --cb_force_legacy``, ``--eval``,
``--cb_explore K --cb_force_legacy``): ``reductions/cb/cb_algs.cc`` over ``csoaa`` over gd,
with ``cb_explore.cc``'s epsilon-greedy, ``--first`` and ``--bag`` on top.

A line ``a:c:p | x`` (or several entries: the actions allowed, ``1:1 2:2:0.5 3:3``) is
turned into a cost-sensitive example over K classes (VW's ``gen_cs_example``) and
csoaa learns it: one regression per class, ``(h·s + o) mod 2^b`` with ``s`` the feature
width rounded up to a power of 2 and ``o`` the class's offset, as :mod:`.csoaa`'s.  The
logged action is the first entry with a cost and a probability > 0 (VW's
``get_observed_cost_cb``); a line without one is a test example (only predicted).  The
classes are 1..K when the line has no entry or one with a cost, else the entries' actions
in their order.

* ``ips``: class a costs ``c / p`` for the logged action, 0 for the others.
* ``dm``: no csoaa: a regressor per action (offset a-1) predicts each cost (clipped); the
  logged action's learns toward c with importance 1/p; the prediction is the cheapest
  (the first on ties; the lowest action among listed ones).
* ``dr`` (default): the regressors at offsets K + a - 1 (width 2K) predict x̂_a, the
  logged action's learning first (its x̂ is the prediction before the step); class a
  costs x̂_a, plus ``(c - x̂_a)/p`` for the logged action.  A line without entries is
  predicted with every cost unknown.

csoaa scores each class (gd's raw prediction, VW's ``partial_prediction``), learning it
toward its cost with importance 1 when the example learns; the prediction is the class
with the smallest score (the lowest on ties).  The loss is VW's ``get_cost_estimate``:
``c/p`` when the prediction is the logged action (ips), plus ``x̂`` of the predicted action
under dm and dr (``x̂ + (c - x̂)/p`` when it is the logged one).

``--eval``: each line names a policy's action before the logged entries
(``2 1:1:0.5 | x``): nothing but dr's regressors learns, the prediction is the policy's
action and the loss its estimate as above.

Explorers (``cb_explore.cc``; cb_type dr, offsets per bag ``i · 2K``): ``greedy``
(``ε/K`` everywhere, ``1 - ε`` more on the prediction made while learning), ``first``
(uniform while ``tau`` > 0, counting down on every example, then all on the prediction;
an example learns only when its first entry's probability is < 1), ``bag`` (B copies at
offsets ``i · 2K``, each learning a Poisson(1) number of times drawn from VW's global
generator, ``1/B`` to each copy's prediction), ``cover`` (:func:`_cover_once`: N
policies' predictions, a minimum probability, pseudo-cost learning).  VW predicts before
it learns (the pmf is the prediction's; ``--first`` counts down and ``--bag`` draws in
both calls), except under ``--cbify`` which predicts itself (``predict_first`` False).
Their loss is ``c/p`` times the pmf's probability of the logged action (``cover``: dr's
estimate of every action, weighed by the pmf).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import G_N, GSTATE_SIZE, P_LEARN, P_T0
from streamlearn.learners.cb_adf import DM, DR, FEATURES, HO_LOSS, HO_N, IPS, LOSS, N_EX, N_LAB
from streamlearn.learners.csoaa_ldf import G_MODEL, clipped, learn_line, line_score
from streamlearn.learners.explore import enforce_minimum_probability, poisson_draw
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
FLT_MAX = F32(3.4028234663852886e38)

NONE = 0
GREEDY = 1
FIRST = 2
BAG = 3
COVER = 4
EXPLORERS = {"": NONE, "greedy": GREEDY, "first": FIRST, "bag": BAG, "cover": COVER}

LEGACY_TYPES = ("ips", "dm", "dr")


def width(cb_type: int, k: int, bags: int = 1) -> int:
    """Offsets per feature: K classes (ips, dm), 2K (dr's regressors), times the bags."""
    return (2 * k if cb_type == DR else k) * max(1, bags)


def stride(w: int) -> int:
    """``w`` rounded up to a power of 2 (VW's ``total_feature_width``)."""
    return 1 << max(w - 1, 0).bit_length()


def init_gstate(params: np.ndarray, models: int) -> np.ndarray:
    """gd's global state with the normalizer sums of ``models`` offsets (model 0's start at
    ``--initial_t`` t0 > 0, as VW's)."""
    gstate = np.zeros(GSTATE_SIZE + 2 * models)
    gstate[gd.G_CONTRACTION] = 1.0
    t0 = F64(np.float32(params[P_T0]))
    if t0 > 0.0:
        gstate[G_MODEL] = t0
        gstate[G_MODEL + 1] = t0
    return gstate


@jit_inline
def _cost_pred(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, step, off,
               mask, truncate, learn, cost, prob):  # fmt: skip
    """VW's ``get_cost_pred``: the regressor at ``off`` predicts (clipped), or learns toward
    ``cost`` with importance ``1/prob`` and returns its prediction before the step."""
    if learn:
        return learn_line(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                          F64(cost), F64(F32(1.0) / prob), step, off, mask, truncate)  # fmt: skip
    raw = line_score(table, gstate, indices, values, lo, hi, step, off, mask, truncate)
    return clipped(gstate, params, loss_id, raw)


@jit
def _cb_example(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, step, mask,
                truncate, cb_type, k, base, learn, ka, kc, kp, acts, n_act, no_entry, use_cs,
                cs_x, ps_x, pp):  # fmt: skip
    """One example through cb_algs (and csoaa when ``use_cs``) at offset ``base``.

    ``acts[:n_act]`` are the classes (1-based), ``(ka, kc, kp)`` the logged action (0: none).
    Fills ``ps_x`` (dm and dr: each class's regressor prediction) and ``pp`` (each class's
    csoaa score); returns the predicted class."""
    for i in range(n_act):
        a = acts[i]
        x = F32(0.0)
        if cb_type == IPS:
            if a == ka:
                x = kc / kp
        elif cb_type == DR and no_entry:
            x = FLT_MAX
        else:
            off = base + a - 1 + (k if cb_type == DR else 0)
            x = _cost_pred(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                           step, off, mask, truncate, learn and a == ka, kc, kp)  # fmt: skip
            ps_x[i] = x
            if cb_type == DR and a == ka:
                x += (kc - x) / kp
        cs_x[i] = x
    if not use_cs:  # dm: the cheapest prediction
        best = FLT_MAX
        pred = 1
        for i in range(n_act):
            x = ps_x[i]
            if x < best or (x == best and not no_entry and acts[i] < pred):
                best = x
                pred = acts[i]
        return pred
    best = FLT_MAX
    pred = 1
    for i in range(n_act):
        a = acts[i]
        off = base + a - 1
        raw = line_score(table, gstate, indices, values, lo, hi, step, off, mask, truncate)
        if learn and cs_x[i] != FLT_MAX:
            learn_line(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                       F64(cs_x[i]), 1.0, step, off, mask, truncate)  # fmt: skip
        pp[i] = raw
        if raw < best or (raw == best and a < pred):
            best = raw
            pred = a
    return pred


@jit
def _explore_once(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, step, mask,
                  truncate, cb_type, k, explore, epsilon, bags, per_bag, xstate, rng, learn,
                  first_p, ka, kc, kp, acts, n_act, no_entry, cs_x, ps_x, pp, pmf):  # fmt: skip
    """One call of VW's cb_explore (predict, or learn): the pmf in ``pmf``; returns the
    prediction of cb_algs (the last bag's under ``--bag``)."""
    for j in range(k):
        pmf[j] = 0.0
    if explore == BAG:
        share = F32(1.0) / F32(bags)
        p = 1
        for b in range(bags):
            count = poisson_draw(rng)
            p = _cb_example(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                            step, mask, truncate, cb_type, k, b * per_bag, learn and count > 0,
                            ka, kc, kp, acts, n_act, no_entry, True, cs_x, ps_x, pp)  # fmt: skip
            pmf[p - 1] += share
            if learn:
                for _ in range(1, count):
                    _cb_example(table, gstate, params, loss_id, rule, slots, indices, values, lo,
                                hi, step, mask, truncate, cb_type, k, b * per_bag, True, ka, kc,
                                kp, acts, n_act, no_entry, True, cs_x, ps_x, pp)  # fmt: skip
        return p
    if explore == FIRST and learn and not F32(first_p) < F32(1.0):
        learn = False
    p = _cb_example(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, step,
                    mask, truncate, cb_type, k, 0, learn, ka, kc, kp, acts, n_act, no_entry,
                    cb_type != DM, cs_x, ps_x, pp)  # fmt: skip
    if explore == GREEDY:
        for j in range(k):
            pmf[j] = epsilon / F32(k)
        pmf[p - 1] += F32(1.0) - epsilon
    elif xstate[0] > 0.0:  # --first
        for j in range(k):
            pmf[j] = F32(1.0) / F32(k)
        xstate[0] -= 1.0
    else:
        pmf[p - 1] = 1.0
    return p


@jit
def _cover_once(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, step, mask,
                truncate, k, cover, psi, nounif, epsilon, decay, xstate, learn, ka, kc, kp, acts,
                n_act, no_entry, cs_x, ps_x, pp, pmf, preds, spent, ys):  # fmt: skip
    """One call of VW's cb_explore ``--cover N`` (``predict_or_learn_cover``): policy 0 is
    cb_algs's csoaa (offset 0), policies 1..N-1 csoaa's at offsets ``(i + 1)·K``; each adds
    ``1/N`` to the class it predicts, then the minimum probability is enforced.  Learning
    (``xstate[0]`` VW's counter): cb_algs learns (dr), the regressors predict each action's
    dr cost again, and policies 1..N-1 learn the pseudo-costs that push toward actions the
    cover has given little probability.  Fills ``pmf`` and, when learning, ``ps_x`` (the
    regressors' predictions the loss reads); returns the first policy's class."""
    min_prob = F32(epsilon) / F32(k)
    if decay:
        sq = F32(math.sqrt(F64(xstate[0] * k)))
        if sq > F32(0.0):  # (VW's eps/0 is inf: the min keeps eps/K; numba would raise)
            min_prob = min(min_prob, F32(epsilon) / sq)
    add = F32(1.0) / F32(cover)
    for j in range(k):
        pmf[j] = 0.0
    for i in range(cover):
        off = 0 if i == 0 else (i + 1) * k
        best = FLT_MAX
        pr = 1
        for c in range(1, k + 1):
            raw = line_score(table, gstate, indices, values, lo, hi, step, off + c - 1, mask,
                             truncate)  # fmt: skip
            if raw < best or (raw == best and c < pr):
                best = raw
                pr = c
        pmf[pr - 1] += add
        preds[i] = pr
    enforce_minimum_probability(min_prob * F32(k), not nounif, pmf)
    p0 = preds[0]
    if not learn:
        return p0
    xstate[0] += 1.0
    _cb_example(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, step, mask,
                truncate, DR, k, 0, True, ka, kc, kp, acts, n_act, no_entry, True, cs_x, ps_x,
                pp)  # fmt: skip
    norm = min_prob * F32(k)
    for i in range(n_act):  # gen_cs_example<false> (dr), after cb_algs learned
        a = acts[i]
        raw = line_score(table, gstate, indices, values, lo, hi, step, k + a - 1, mask, truncate)
        x = clipped(gstate, params, loss_id, raw)
        ps_x[i] = x
        if a == ka:
            x += (kc - x) / kp
        cs_x[i] = x
    for j in range(k):
        spent[j] = 0.0
    for i in range(cover):
        pr = preds[i] - 1
        for j in range(k):
            ys[j] = cs_x[j] - F32(psi) * min_prob / (max(spent[j], min_prob) / norm) + F32(1.0)
        if i != 0:
            off = (i + 1) * k
            for c in range(k):
                learn_line(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                           F64(ys[c]), 1.0, step, off + c, mask, truncate)  # fmt: skip
        if spent[pr] < min_prob:
            norm += max(F32(0.0), add - (min_prob - spent[pr]))
        else:
            norm += add
        spent[pr] += add
    return p0


@jit
def train_examples(table, gstate, params, loss_id, cb_type, k, explore, epsilon, bags, xstate,
                   rng, predict_first, indptr, indices, values, lab_ptr, lab_cls, lab_cost,
                   lab_prob, policy, holdout, stats, pred, raw, pmf, loss_out, cover):  # fmt: skip
    """Score, account and learn the single-line examples of a batch (rows of the CSR arrays).

    Parameters
    ----------
    cb_type : int
        :data:`~streamlearn.learners.cb_adf.IPS`, ``DM`` or ``DR``.
    explore, epsilon, bags : int, float32, int
        The explorer (:data:`NONE`, :data:`GREEDY`, :data:`FIRST`, :data:`BAG`), greedy's ε,
        the number of bags.
    xstate : float64[1]
        ``first``'s tau (counted down).
    rng : uint64[1]
        VW's global generator (``--bag``'s Poisson draws).
    predict_first : bool
        An explorer's learned example is predicted first (VW's ``workspace::learn``: that
        pmf is the example's; False under ``--cbify``, which predicts itself).
    cover : float64[4]
        ``--cover``: N, psi, nounif, and 1 when epsilon decays.
    lab_ptr, lab_cls, lab_cost, lab_prob
        Row ``e``'s label entries ``lab_ptr[e]:lab_ptr[e+1]`` (cost NaN: none given).
    policy : int64[m]
        ``--eval``: the policy's action of each row (0: not evaluating).
    holdout : bool[m]
        Held-out rows: predicted, counted apart.
    pred : int64[m]
        Out: the predicted class (1-based); ``--eval``: the policy's action.
    raw : float32[entries]
        Out: per label entry, csoaa's score of the class in the same position (VW's ``-r``).
    pmf : float32[m, K]
        Out: the explorer's pmf.
    loss_out : float64[m]
        Out: each row's loss (NaN: unlabeled).
    """
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    learning = params[P_LEARN] != 0.0
    w = 2 * k if cb_type == DR else k
    if explore == BAG:
        w *= max(1, bags)
    elif explore == COVER:
        w = 2 * k * (int(cover[0]) + 1)
    step = 1
    while step < w:
        step *= 2
    per_bag = 2 * k if cb_type == DR else k
    acts = np.empty(k + 1, dtype=np.int64)
    cs_x = np.empty(k + 1, dtype=np.float32)
    ps_x = np.empty(k + 1, dtype=np.float32)
    pp = np.empty(k + 1, dtype=np.float32)
    scratch = np.zeros(k, dtype=np.float32)
    n_cover = int(cover[0])
    preds = np.zeros(max(1, n_cover), dtype=np.int64)
    spent = np.zeros(k, dtype=np.float32)
    ys = np.zeros(k, dtype=np.float32)
    for e in range(indptr.shape[0] - 1):
        lo = indptr[e]
        hi = indptr[e + 1]
        q0 = lab_ptr[e]
        n_ent = lab_ptr[e + 1] - q0
        ka = 0
        kc = FLT_MAX
        kp = F32(-1.0)
        for q in range(q0, q0 + n_ent):
            if lab_cost[q] == lab_cost[q] and lab_prob[q] > 0.0:
                ka = lab_cls[q]
                kc = F32(lab_cost[q])
                kp = F32(lab_prob[q])
                break
        labeled = ka > 0
        learn = labeled and learning and not holdout[e]
        no_entry = n_ent == 0
        full = no_entry or (n_ent == 1 and lab_cost[q0] == lab_cost[q0])
        n_act = k if full else n_ent
        if n_act > acts.shape[0]:
            acts = np.empty(n_act, dtype=np.int64)
            cs_x = np.empty(n_act, dtype=np.float32)
            ps_x = np.empty(n_act, dtype=np.float32)
            pp = np.empty(n_act, dtype=np.float32)
        for i in range(n_act):
            acts[i] = i + 1 if full else lab_cls[q0 + i]
            ps_x[i] = np.nan
            pp[i] = 0.0
        stats[N_EX] += 1.0
        stats[FEATURES] += hi - lo
        evaluating = policy[e] > 0
        use_cs = cb_type != DM and not evaluating
        if explore == NONE:
            p = _cb_example(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                            step, mask, truncate, cb_type, k, 0, learn, ka, kc, kp, acts, n_act,
                            no_entry, use_cs, cs_x, ps_x, pp)  # fmt: skip
        elif explore == COVER:
            # (VW's predict before learning makes the same pmf: nothing changes in between)
            p = _cover_once(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                            step, mask, truncate, k, n_cover, cover[1], cover[2] != 0.0, epsilon,
                            cover[3] != 0.0, xstate, learn, ka, kc, kp, acts, n_act, no_entry,
                            cs_x, ps_x, pp, pmf[e], preds, spent, ys)  # fmt: skip
        else:
            # VW predicts, keeps that pmf, then learns (cb_explore's learn does not return
            # its prediction): --first counts both calls down, --bag draws for both
            first_p = lab_prob[q0] if n_ent > 0 else 1.0
            if predict_first or not learn:
                p = _explore_once(table, gstate, params, loss_id, rule, slots, indices, values,
                                  lo, hi, step, mask, truncate, cb_type, k, explore, epsilon, bags,
                                  per_bag, xstate, rng, False, first_p, ka, kc, kp, acts, n_act,
                                  no_entry, cs_x, ps_x, pp, pmf[e])  # fmt: skip
            if learn:
                out = scratch if predict_first else pmf[e]
                q = _explore_once(table, gstate, params, loss_id, rule, slots, indices, values,
                                  lo, hi, step, mask, truncate, cb_type, k, explore, epsilon, bags,
                                  per_bag, xstate, rng, True, first_p, ka, kc, kp, acts, n_act,
                                  no_entry, cs_x, ps_x, pp, out)  # fmt: skip
                if not predict_first:
                    p = q
        if evaluating:
            p = policy[e]
        pred[e] = p
        for i in range(n_ent):
            raw[q0 + i] = pp[i] if i < n_act and use_cs else F32(0.0)
        loss = np.nan
        if labeled:
            if explore == COVER:  # dr's estimate of each action, weighed by the pmf
                total = F32(0.0)
                for j in range(k):
                    est = kc / kp if j + 1 == ka else F32(0.0)
                    for i in range(n_act):
                        if acts[i] == j + 1 and ps_x[i] == ps_x[i]:
                            x = ps_x[i]
                            est = (kc - x) / kp + x if j + 1 == ka else x
                            break
                    total += est * pmf[e, j]
                loss = F64(total)
            elif explore != NONE:
                loss = F64(kc / kp * pmf[e, ka - 1])
            else:
                x = F32(0.0)
                have = False
                if cb_type != IPS:
                    for i in range(n_act):
                        if acts[i] == p and ps_x[i] == ps_x[i]:
                            x = ps_x[i]
                            have = True
                            break
                if p == ka:
                    loss = F64((kc - x) / kp + x)
                else:
                    loss = F64(x) if have else 0.0
            if holdout[e]:
                stats[HO_N] += 1.0
                stats[HO_LOSS] += loss
            else:
                stats[N_LAB] += 1.0
                stats[LOSS] += loss
        loss_out[e] = loss
        if learn:
            gstate[G_N] += 1.0
