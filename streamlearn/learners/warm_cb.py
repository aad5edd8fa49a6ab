"""``--warm_cb K``'s learning (VW's ``cb/warm_cb.cc``) over cb_explore_adf's epsilon-greedy,
cb_adf and csoaa_ldf on gd.

A line ``y |x`` (or ``c:cost ... |x`` under ``--warm_cb_cs``) is copied to K action lines;
VW's ``copy_example_to_adf`` of warm_cb rewrites each feature's index: with ``W`` the
model's total feature width (``--choices_lambda`` times cb_adf's, 2 for dr, else 1)
rounded up to a power of 2, a feature of hash ``h`` sits at ``h·W`` weights, and action
``a`` (0-based) reads slot

    (h·W·28904713 + 4832917·a) mod 2^b

(:func:`copy_actions`), to which the sublearner's offset is added.  There are
``--choices_lambda`` sublearners; VW's ``learn(ecs, i)`` shifts by ``i`` times the widths
below the learner called: lambda ``i``'s bandit policy is at offset ``i·w`` (``w`` cb_adf's
width: 2 for dr, whose cost regressor is at ``i·w + 1``), its supervised updates, which go
straight to csoaa_ldf (width 1), at offset ``i`` (so under dr they land on another
lambda's weights, as in VW).  Each offset keeps gd's per-model normalizer sums
(``G_MODEL + 2·offset`` of the global state); each lambda mtr's counts of the examples and
action lines it learned.

Candidate lambdas (:func:`lambdas`, VW's ``setup_lambdas``): with only
``--interaction_update`` all are 1, with only ``--warm_start_update`` all are 0; else the
middle one (index ``n // 2``) is 0.5 (``--lambda_scheme`` 1, 2) or ``eps/(1 + eps)`` (3, 4),
those below halve it, those above halve the distance to 1, and schemes 2 and 4 set the
ends to 0 and 1.  Lambda ``i`` weighs a warm-start example by
``(1 - λ)·(Nw + Ni)/((1 - λ)·Nw + λ·Ni + FLT_MIN)`` and a bandit round by
``λ·(Nw + Ni)/(...)`` (:func:`multiplier`, float32 as VW), ``Nw``/``Ni`` the two phases'
lengths.

Kernels: :func:`predict_at` (a sublearner's greedy pmf over the K copies),
:func:`learn_costs` (a supervised update: each action line toward its cost, csoaa_ldf's
regression), :func:`learn_bandit` (cb_adf's mtr, ips or dm update of the drawn action).
The driver (``run/warm_cb.py``) plays the phases and VW's bookkeeping.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.csoaa_ldf import clipped, learn_line, line_score, rank
from streamlearn.learners.explore import greedy_pmf
from streamlearn.system.jit import jit

F32 = np.float32
F64 = np.float64
U64 = np.uint64

MTR = 0  # (cb_adf's codes)
IPS = 1
DM = 2
DR = 3

FLT_MIN = F32(1.1754943508222875e-38)


def lambdas(n: int, scheme: int, epsilon: float, upd_ws: bool, upd_inter: bool) -> np.ndarray:
    """VW's ``setup_lambdas``: the ``n`` candidate lambdas, ascending (float32)."""
    lam = np.zeros(n, dtype=F32)
    if not upd_ws and upd_inter:
        lam[:] = F32(1.0)
        return lam
    if upd_ws and not upd_inter:
        return lam
    mid = n // 2
    if scheme in (1, 2):
        lam[mid] = F32(0.5)
    else:
        eps = F32(epsilon)
        lam[mid] = eps / (F32(1.0) + eps)
    for i in range(mid, 0, -1):
        lam[i - 1] = lam[i] / F32(2.0)
    for i in range(mid + 1, n):
        lam[i] = F32(1.0) - (F32(1.0) - lam[i - 1]) / F32(2.0)
    if scheme in (2, 4):
        lam[0] = F32(0.0)
        lam[n - 1] = F32(1.0)
    return lam


def multiplier(lam, n_ws: int, n_inter: int, warm: bool):  # noqa: ANN001, ANN201
    """VW's ``compute_weight_multiplier`` (float32) of lambda ``lam`` for a warm-start
    example (``warm``) or a bandit round."""
    lam = F32(lam)
    ws = F32(n_ws)
    inter = F32(n_inter)
    total = ws + inter
    weight = (F32(1.0) - lam) * ws + lam * inter
    share = (F32(1.0) - lam) if warm else lam
    with np.errstate(over="ignore"):  # (a phase of weight 0: VW's multiplier is inf)
        return F32(share * total / (weight + FLT_MIN))


def find_min(costs: np.ndarray) -> int:
    """VW's ``find_min``: the first index of the smallest entry below FLT_MAX (0 if none)."""
    best = F32(np.finfo(np.float32).max)
    arg = 0
    for i in range(costs.shape[0]):
        if costs[i] < best:
            best = costs[i]
            arg = i
    return arg


@jit
def copy_actions(indptr, indices, values, r, k, mult, bits, out_ptr, out_idx, out_val):
    """Row ``r``'s features copied to ``k`` action lines (CSR ``out_*``, room for
    ``k·nnz``) with warm_cb's indices (the module doc; ``mult`` is W)."""
    wmask = (U64(1) << U64(bits)) - U64(1)
    t_out = 0
    out_ptr[0] = 0
    for a in range(k):
        for t in range(indptr[r], indptr[r + 1]):
            h = U64(indices[t]) * U64(mult)
            out_idx[t_out] = (h * U64(28904713) + U64(4832917) * U64(a)) & wmask
            out_val[t_out] = values[t]
            t_out += 1
        out_ptr[a + 1] = t_out


@jit
def predict_at(table, gstate, params, indptr, indices, values, k, offset, epsilon, scores, order,
               acts, probs):  # fmt: skip
    """Sublearner ``offset``'s pmf over the ``k`` action lines: each line's score, the
    actions ranked by (score, action) (``acts``), epsilon-greedy's probabilities in that
    order (``probs``).  Nothing is learned."""
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = U64(table.shape[0] - 1)
    for i in range(k):
        scores[i] = line_score(table, gstate, indices, values, indptr[i], indptr[i + 1], 1,
                               offset, mask, truncate)  # fmt: skip
    rank(scores, 0, k, order)
    for i in range(k):
        acts[i] = order[i]
        probs[i] = F32(scores[order[i]])
    greedy_pmf(probs[:k], epsilon, False)


@jit
def learn_costs(table, gstate, params, loss_id, indptr, indices, values, k, costs, weight, offset):
    """csoaa_ldf's update of sublearner ``offset``: action line ``a`` toward ``costs[a]``
    with importance ``weight``, in order."""
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = U64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    for i in range(k):
        learn_line(table, gstate, params, loss_id, rule, slots, indices, values, indptr[i],
                   indptr[i + 1], F32(costs[i]), F64(F32(weight)), 1, offset, mask,
                   truncate)  # fmt: skip


@jit
def learn_bandit(table, gstate, params, loss_id, cb_type, clip_p, indptr, indices, values, k,
                 chosen, cost, prob, weight, offset, sums):  # fmt: skip
    """cb_adf's update of sublearner ``offset`` from action ``chosen`` (0-based) drawn with
    ``prob`` at ``cost``, the example's importance ``weight``: mtr learns that line with
    importance ``weight/max(p, clip_p)·events/actions`` (``sums``: the sublearner's counts,
    updated first); ips and dm learn every line (toward ``cost/p`` or ``cost`` on the
    chosen one, 0 elsewhere) with importance ``weight``; dr first updates its cost regressor
    at ``offset + 1`` (the chosen line toward ``cost`` with importance ``weight/p``, VW's
    ``get_cost_pred``), then every line learns toward its regressor's estimate ``x̂``, plus
    ``(cost - x̂)/max(p, clip_p)`` on the chosen one, with importance ``weight``."""
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = U64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    c = F32(cost)
    pc = max(F32(prob), F32(clip_p))
    w32 = F32(weight)
    if cb_type == MTR:
        sums[0] += 1.0
        sums[1] += k
        w = F32(w32 * (F32(1.0) / pc * (F32(sums[0]) / F32(sums[1]))))
        learn_line(table, gstate, params, loss_id, rule, slots, indices, values, indptr[chosen],
                   indptr[chosen + 1], c, F64(w), 1, offset, mask, truncate)  # fmt: skip
        return
    xs = np.zeros(k, dtype=np.float32)
    if cb_type == DR:
        # the cost regressor (offset + 1): the drawn line learns first (importance
        # weight/p), every other line predicts; VW's get_cost_pred, in line order
        for i in range(k):
            if i == chosen:
                xs[i] = learn_line(table, gstate, params, loss_id, rule, slots, indices, values,
                                   indptr[i], indptr[i + 1], c, F64(F32(w32 / F32(prob))), 1,
                                   offset + 1, mask, truncate)  # fmt: skip
            else:
                raw = line_score(table, gstate, indices, values, indptr[i], indptr[i + 1], 1,
                                 offset + 1, mask, truncate)  # fmt: skip
                xs[i] = clipped(gstate, params, loss_id, raw)
    for i in range(k):
        y = xs[i]
        if i == chosen:
            if cb_type == IPS:
                y = c / pc
            elif cb_type == DM:
                y = c
            else:
                y = y + (c - y) / pc
        learn_line(table, gstate, params, loss_id, rule, slots, indices, values, indptr[i],
                   indptr[i + 1], y, F64(w32), 1, offset, mask, truncate)  # fmt: skip
