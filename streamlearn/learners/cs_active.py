"""Cost-sensitive active learning (VW's ``--cs_active K``): K regressions in one table, each
label's cost asked for only when its range of plausible costs is wide and may hold the best.

As VW's ``reductions/cs_active.cc`` (Krishnamurthy, Agarwal, Huang, Daumé & Langford, *Active
learning for cost-sensitive classification*, ICML 2017) over its ``scorer`` and ``gd``, with
:mod:`streamlearn.learners.csoaa`'s slots, labels and predictions.  A labeled line (some
entry listed, with or without a cost), learned at round ``t`` (1 at a run's start)::

    eta   = c1 (cmax - cmin) / sqrt(t)                      (--range_c c1)
    delta = c0 log(K max(t - 1, 1)) (cmax - cmin)^2          (--mellowness c0)
    for each entry (class i, cost x), in the line's order:
        p_i = gd's prediction, clipped; s_i = gd's sensitivity toward 0 (stateless)
        [lo_i, hi_i] = [cmin, cmax], wide                   when t <= 1 or s_i is not finite
        hi_i = min(p_i + s_i w(cmax - p_i), cmax); lo_i = max(p_i - s_i w(p_i - cmin), cmin)
        wide_i = hi_i - lo_i > eta                          (w: VW's binary_search, delta)
    overlapped_i = lo_i <= min_j hi_j;  query = more than one overlapped
    asked_i = (query and --baseline) or (not domination and wide_i)
              or (query and overlapped_i and wide_i)

then each entry is predicted again and, under ``--simulation``, an asked entry counts a query
and (its cost known) is learned toward its cost with weight 1 (the scorer widens the range
first); without ``--simulation`` nothing is learned (VW's reduction mode learns only costs an
upper layer supplied).  The prediction is the entry of smallest unclipped score (the lowest
class on ties), its loss the predicted class's cost minus the smallest (VW's
``cs_active``'s); a line without entries scores every class and learns nothing.  A line whose
entries all lack a cost is only predicted (no query, no round).  The kernel stops at the line
where the queries reach ``--min_labels`` or ``--max_labels`` times K (``conf[C_STOPPED]``
says which: VW then saves a model and reports, or leaves its example's prediction unset).

The sensitivity is gd's (``sensitivity`` in ``gd.cc``): ``eta`` times how far a unit update of
weight 1 moves the prediction, from the rates a learn would make without changing them, with
``--adax`` the adaptive sums grow by ``x^2`` (not ``g^2 x^2``; its learning too).  Its
normalizer sums are those of the class VW's gd last latched: gd's ``current_model_state``,
which its sensitivity sets when unset and never clears (VW's clearing line follows a
``return``) and a learn clears; ``gstate[G_LATCH]`` keeps it (-1: none).

``gstate`` is csoaa's (:func:`streamlearn.learners.oaa.gd_gstate`) and, from
``conf[C_STATE]``, the run's counters (:data:`S_T` ...: VW keeps none in a model).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    GSTATE_SIZE,
    P_LEARN,
    P_OAA,
    P_PROGRESS,
    begin_example,
    row_span,
)
from streamlearn.learners.cb_regcb import binary_search
from streamlearn.learners.csoaa import FLT_MAX, account, score
from streamlearn.learners.losses import loss32, square_grad32, unsafe_update32, update32
from streamlearn.learners.oaa import (
    G_CLASS,
    class_stride,
    clipped,
    gd_gstate,
    prediction_range,
    widen,
)
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64
INF = np.inf

C_C0, C_C1, C_CMAX, C_CMIN, C_SIM, C_BASELINE, C_DOMINATION, C_MIN_LABELS, C_MAX_LABELS, \
    C_ADAX, C_STATE, C_STOPPED = range(12)  # fmt: skip
"""The kernel's options (``conf``): --mellowness, --range_c, --cost_max, --cost_min,
--simulation, --baseline, domination, --min_labels, --max_labels (each -1: none), --adax;
where the run's counters start in ``gstate``; and (out) the budget the kernel stopped at
(1: --min_labels, 2: --max_labels, -1: none)."""
CONF_SIZE = 12

S_T, S_LATCH, S_QUERIES, S_ANY, S_OUTSIDE, S_BY_QUERIES = range(6)
"""The run's counters, from ``conf[C_STATE]``: VW's round t, gd's latched class, the queries
(VW's ``total queries``), lines with a query, costs outside their range, and from
:data:`S_BY_QUERIES` the lines by queries asked (K + 1)."""


def state_size(k: int) -> int:
    return S_BY_QUERIES + k + 1


def state_at(k: int) -> int:
    """Where the run's counters start in the global state (after csoaa's)."""
    return GSTATE_SIZE + 2 * k


def gstate_size(k: int) -> int:
    return state_at(k) + state_size(k)


def init_gstate(params: np.ndarray, k: int) -> np.ndarray:
    """csoaa's global state (:func:`streamlearn.learners.oaa.gd_gstate`) and the run's
    counters."""
    gstate = np.concatenate([gd_gstate(params), np.zeros(state_size(k))])
    start(gstate, state_at(k))
    return gstate


def start(gstate: np.ndarray, at: int) -> None:
    """A run's counters at their start (VW's: t = 1, nothing latched or counted)."""
    gstate[at:] = 0.0
    gstate[at + S_T] = 1.0
    gstate[at + S_LATCH] = -1.0


@jit_inline
def _slot(index, step, c, mask):
    return (np.uint64(index) * np.uint64(step) + np.uint64(c)) & mask


@jit_inline
def sensitivity(table, gstate, indices, values, lo, hi, step, c, mask, gamma, rule, latch):
    """gd's stateless sensitivity of class ``c`` (an update of weight 1 whose adaptive sums
    grow by ``gamma x^2``), with the normalizer sums of class ``gstate[latch]`` (set to ``c``
    when none is latched)."""
    (adaptive, normalized, invariant, sqrt_rate, neg_q, neg_norm_power, t0, g0, eta, l1, l2,
     reg, tau, lmin, lmax) = rule  # fmt: skip
    if gstate[latch] < 0.0:
        gstate[latch] = F64(c)
    ppu = F32(0.0)
    nx = F32(0.0)
    for k in range(lo, hi):
        j = _slot(indices[k], step, c, mask)
        x = F32(values[k])
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
            nx += F32(1.0) if x2 > gd.FLT_MAX else fdiv(x2, m * m)
        if adaptive and normalized and sqrt_rate:
            rate = fdiv(F32(1.0), F32(math.sqrt(G))) * fdiv(F32(1.0), m)
        else:
            rate = gd._rate(G, m, adaptive, normalized, sqrt_rate, neg_q, neg_norm_power)
        ppu += x2 * rate
    if normalized:
        g = G_CLASS + 2 * int(gstate[latch])
        nsnx = F32(gstate[g]) + nx
        tw = F32(gstate[g + 1]) + F32(1.0)
        mult = gd._normalizer(tw, nsnx, sqrt_rate, adaptive, neg_norm_power)
        gstate[gd.G_MULT] = mult
        ppu = ppu * mult
    return eta * ppu


@jit_inline
def step_adax(table, gstate, g_norm, g_total, slots, values, lo, hi, p, y, loss_id, rule):
    """gd's step of weight 1 under ``--adax`` (:func:`streamlearn.learners.gd.step` with the
    adaptive sums grown by ``x^2``), adaptive rates: the same operations in one loop."""
    (adaptive, normalized, invariant, sqrt_rate, neg_q, neg_norm_power, t0, g0, eta, l1, l2,
     reg, tau, lmin, lmax) = rule  # fmt: skip
    ppu = F32(0.0)
    nx = F32(0.0)
    for k in range(lo, hi):
        j = slots[k]
        x = F32(values[k])
        x2 = x * x
        if x2 < gd.X2_MIN:
            x = gd.X_MIN if x > F32(0.0) else -gd.X_MIN
            x2 = gd.X2_MIN
        G = F32(table[j, 1])
        if G == F32(0.0):
            G = g0
        G = G + x2
        table[j, 1] = G
        m = F32(table[j, 2])
        if normalized:
            ax = abs(x)
            if ax > m:
                if m > F32(0.0):
                    w = F32(table[j, 0])
                    if sqrt_rate:
                        w = w * (m / ax)
                    else:
                        s = ax / m
                        w = w * F32((s * s) ** neg_norm_power)
                    table[j, 0] = w
                m = ax
                table[j, 2] = m
            nx += F32(1.0) if x2 > gd.FLT_MAX else fdiv(x2, m * m)
        if normalized and sqrt_rate:
            r = fdiv(F32(1.0), F32(math.sqrt(G))) * fdiv(F32(1.0), m)
        else:
            r = gd._rate(G, m, True, normalized, sqrt_rate, neg_q, neg_norm_power)
        table[j, 3] = r
        ppu += x2 * r
    if normalized:
        gstate[g_norm] += F64(nx)
        gstate[g_total] += 1.0
        gstate[gd.G_MULT] = gd._normalizer(F32(gstate[g_total]), F32(gstate[g_norm]),
                                           sqrt_rate, True, neg_norm_power)  # fmt: skip
        ppu = ppu * F32(gstate[gd.G_MULT])
    if invariant:
        u = update32(loss_id, p, y, eta, ppu, tau, lmin, lmax)
    else:
        u = unsafe_update32(loss_id, p, y, eta, tau, lmin, lmax)
    if u != u:
        u = F32(0.0)
    if u != F32(0.0):
        if normalized:
            u = u * F32(gstate[gd.G_MULT])
        for k in range(lo, hi):
            j = slots[k]
            x = F32(values[k])
            if x < gd.FLT_MAX and x > -gd.FLT_MAX:
                table[j, 0] = table[j, 0] + u * (x * table[j, 3])


@jit_inline
def cost_range(pc, sens, t, delta, eta, cmin, cmax):
    """VW's ``find_cost_range`` from the clipped prediction and the sensitivity: (lo, hi,
    wide)."""
    if t <= 1.0 or sens != sens or sens == F32(INF) or sens == F32(-INF):
        return cmin, cmax, True
    hi = min(pc + sens * binary_search(cmax - pc, delta, sens), cmax)  # (VW's tol: 1e-6)
    lo = max(pc - sens * binary_search(pc - cmin, delta, sens), cmin)
    return lo, hi, hi - lo > eta


@jit
def train_gd(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
             status, stats, rows, preds, conf, first, ranges):  # fmt: skip
    """Lines ``first..`` of a batch (see the module's docstring); returns the line a
    budget stops at (``conf[C_STOPPED]``), else the batch's length.  ``ranges``: float32[K, 3]
    scratch (each entry's lo, hi, and whether wide/overlapped)."""
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    k = int(params[P_OAA])
    step = class_stride(k)
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    at = int(conf[C_STATE])
    latch = at + S_LATCH
    c0, c1 = F32(conf[C_C0]), F32(conf[C_C1])
    cmax, cmin = F32(conf[C_CMAX]), F32(conf[C_CMIN])
    sim = conf[C_SIM] != 0.0
    prediction_range(gstate, params, loss_id)
    n = indptr.shape[0] - 1
    for i in range(first, n):
        if status[i] != 0:
            preds[i, :] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        m = int(labels[i, 0])
        labeled = False
        for j in range(m):
            if labels[i, 2 + 2 * j] != INF:
                labeled = True
        queries = gstate[at + S_QUERIES]
        if conf[C_MIN_LABELS] >= 0.0 and queries >= conf[C_MIN_LABELS] * k:
            conf[C_STOPPED] = 1.0
            return i
        if conf[C_MAX_LABELS] >= 0.0 and queries >= conf[C_MAX_LABELS] * k:
            conf[C_STOPPED] = 2.0
            return i
        _, holdout = begin_example(stats, params, 0.0 if labeled else np.nan)
        learning = labeled and not holdout and params[P_LEARN] != 0.0  # (VW predicts a
        # line whose costs are all missing: no query, no round)
        for c in range(k + 1):
            preds[i, c] = np.nan
        pred = 1
        best = FLT_MAX
        if m == 0:
            for c in range(k):
                p = score(table, indices, values, lo, hi, bases[i], step, c, mask, truncate,
                          F32(gstate[gd.G_GRAVITY]), F32(gstate[gd.G_CONTRACTION]))  # fmt: skip
                preds[i, 1 + c] = p
                if p < best:
                    best = p
                    pred = c + 1
        else:
            t = F32(gstate[at + S_T])
            eta = c1 * (cmax - cmin) / F32(math.sqrt(F64(t)))
            spread = F32(F64(cmax - cmin) ** 2)
            delta = c0 * F32(math.log(F64(F32(k) * max(t - F32(1.0), F32(1.0))))) * spread
            lowest = FLT_MAX
            for j in range(m):
                c = int(labels[i, 1 + 2 * j]) - 1
                p = score(table, indices, values, lo, hi, bases[i], step, c, mask, truncate,
                          F32(gstate[gd.G_GRAVITY]), F32(gstate[gd.G_CONTRACTION]))  # fmt: skip
                rlo, rhi = prediction_range(gstate, params, loss_id)
                pc = clipped(p, rlo, rhi)
                gamma = F32(1.0) if conf[C_ADAX] != 0.0 else square_grad32(loss_id, pc, F32(0.0))
                sens = sensitivity(table, gstate, indices, values, lo, hi, step, c, mask, gamma,
                                   rule, latch)  # fmt: skip
                a, b, wide = cost_range(pc, sens, F64(t), delta, eta, cmin, cmax)
                ranges[j, 0] = a
                ranges[j, 1] = b
                ranges[j, 2] = F32(1.0) if wide else F32(0.0)
                lowest = min(lowest, b)
            overlapped = 0
            for j in range(m):
                x = F32(labels[i, 2 + 2 * j]) if labels[i, 2 + 2 * j] != INF else FLT_MAX
                a, b = ranges[j, 0], ranges[j, 1]
                over = a <= lowest
                overlapped += 1 if over else 0
                if over:
                    ranges[j, 2] += F32(2.0)
                if x > b or x < a:  # (VW also sums distances and ranges: only its
                    gstate[at + S_OUTSIDE] += 1.0  # --min_labels report shows them)
            query = overlapped > 1
            before = gstate[at + S_QUERIES]
            for j in range(m):
                c = int(labels[i, 1 + 2 * j]) - 1
                x = labels[i, 2 + 2 * j]
                wide = ranges[j, 2] == F32(1.0) or ranges[j, 2] == F32(3.0)
                over = ranges[j, 2] >= F32(2.0)
                asked = ((query and conf[C_BASELINE] != 0.0)
                         or (conf[C_DOMINATION] == 0.0 and wide) or (query and over and wide))
                p = score(table, indices, values, lo, hi, bases[i], step, c, mask, truncate,
                          F32(gstate[gd.G_GRAVITY]), F32(gstate[gd.G_CONTRACTION]))  # fmt: skip
                if learning and sim and asked:
                    gstate[at + S_QUERIES] += 1.0
                    if x != INF:
                        _learn(table, gstate, params, loss_id, indices, values, lo, hi, slots,
                               step, c, mask, p, F32(x), rule, conf[C_ADAX] != 0.0)  # fmt: skip
                        gstate[latch] = -1.0
                preds[i, 1 + c] = p
                if p < best or (p == best and c + 1 < pred):
                    best = p
                    pred = c + 1
            asked_n = int(gstate[at + S_QUERIES] - before)
            if asked_n > 0:
                gstate[at + S_ANY] += 1.0
            if asked_n <= k:
                gstate[at + S_BY_QUERIES + asked_n] += 1.0
            if learning:  # (VW's t: every labeled line counts, learned or not)
                gstate[at + S_T] += 1.0
                gstate[G_T] += 1.0
                gstate[G_N] += 1.0
        preds[i, 0] = pred
        lv = 0.0
        if labeled:
            chosen = FLT_MAX
            low = FLT_MAX
            for j in range(m):
                x = F32(labels[i, 2 + 2 * j])
                if x == F32(np.inf):
                    x = FLT_MAX
                if int(labels[i, 1 + 2 * j]) == pred:
                    chosen = x
                if x < low:
                    low = x
            lv = F64(F32(chosen - low))
        account(stats, rows, F64(pred), lv, 1.0, hi - lo, labeled, holdout, params[P_PROGRESS],
                np.nan)  # fmt: skip
    return n


@jit_inline
def _learn(table, gstate, params, loss_id, indices, values, lo, hi, slots, step, c, mask, p, y,
           rule, adax):  # fmt: skip
    """The scorer and gd learning class ``c`` toward ``y`` with weight 1 (``p``: its raw
    score before)."""
    widen(gstate, params, F64(y))
    rlo, rhi = prediction_range(gstate, params, loss_id)
    pc = clipped(p, rlo, rhi)
    if not loss32(loss_id, pc, y) > F32(0.0):
        return
    for t in range(lo, hi):
        slots[t] = _slot(indices[t], step, c, mask)
    if adax:
        step_adax(table, gstate, G_CLASS + 2 * c, G_CLASS + 2 * c + 1, slots, values, lo, hi,
                  pc, y, loss_id, rule)  # fmt: skip
    else:
        gd.step(table, gstate, G_CLASS + 2 * c, G_CLASS + 2 * c + 1, slots, values, lo, hi, pc,
                y, F32(1.0), loss_id, rule)  # fmt: skip
    if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
        gd.rebase(table, gstate, params)
