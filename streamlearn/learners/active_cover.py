"""Active learning with a cover of policies over gd (VW's ``--active_cover``).

As VW's ``reductions/active_cover.cc`` (Huang, Agarwal, Hsu, Langford & Schapire, *Efficient
and parsimonious agnostic active learning*, NIPS 2015), below VW's scorer: ``K = cover + 1``
copies of gd in one table, laid out as :mod:`streamlearn.learners.bootstrap`'s (copy ``c`` of
slot ``h`` at ``(h·s + c) mod 2^b``, ``s`` = K rounded up to a power of 2, each copy with its
own normalizer sums).  Copy 0 is the learner whose prediction ``p`` is shown and scored;
copies 1..cover are the cover.  With ``t`` VW's clock (the weight of every example before
this one, ``sd->t``) and ``L`` the progressive loss's sum (``sd->sum_loss``), in float32:

* **Disagreement.** ``A = sqrt(c0 L/t / t) + max(2α, 4) c0 log t / t`` (1 while ``t < 3``);
  the example is *in disagreement* when ``t + a <= 3`` or ``|p| / s / t <= A``, ``s`` gd's
  stateless sensitivity of copy 0 for the example's label and weight ``a`` (:func:`_sensitivity`).
* **Query.** ``pmin = min(1 / (sqrt(t · L/t) + log t), 1/2)`` (1 while ``t <= 2``).  Out
  of disagreement: not queried, and copy 0 learns ``sign(p)`` with weight ``a``.  In it:
  queried with probability ``P = sqrt(q2) / (1 + sqrt(q2))``, ``q2 = 4 pmin² + Σ_i
  [sign p_i ≠ sign p] λn_i/λd_i`` over the cover's predictions ``p_i`` (a draw of VW's
  generator ``<= P``; always while ``t + a <= 3``, and with ``--oracular``): copy 0 learns
  the label with weight ``a/P``; otherwise the example becomes unlabeled, of weight 0.
  ``sign(x)`` is VW's: -1 for ``x <= 0``, else +1.
* **Cover.** ``r = 2 A t α / c0 / β²``; in disagreement ``cost = r · max(imp, 0) · [sign p
  ≠ sign y]`` and, per policy i in order, ``cost_delta = 2 cost − r max(imp, 0) − (2α² −
  1/P_i)`` with ``P_i`` the running ``q2``'s probability; out of it ``cost_delta = −r``.
  Policy i learns label ``−sign(cost_delta) sign(p)`` with weight ``a |cost_delta|`` (no
  step at weight 0, as VW's gd does nothing then), predicts again (``p_i``), and
  ``λn_i = max(λn_i + 2 [sign p_i ≠ sign p] cost_delta, 0)``, ``λd_i += [sign p_i ≠
  sign p and in disagreement] / q2^1.5``, ``q2 += [sign p_i ≠ sign p] λn_i/λd_i``
  (``λn`` from 0, ``λd`` from 1/8 in each run: VW keeps neither in a model).

What is scored is VW's scorer's view of the example active_cover leaves: ``p`` with the
label and weight copy 0 learned (``sign(p)`` and ``a`` out of disagreement, ``y`` and
``a/P`` when queried), an unlabeled example of weight 0 when skipped; ``t`` then grows by
that weight.  Held-out, unlabeled, weight-0 and ``-t`` examples are only predicted (copy 0).
VW's driver predicts first when the reduction on top does not return its prediction from
``learn`` (all but ``--binary``): that prediction, clipped to the range before the label
widens it, is what ``-p`` and the table show, and its loss (of the example's own label and
weight) stays in the loss's sum of a skipped example.

Global state, after gd's: the K copies' normalizer sums (``G_COPY + 2c``, ``+ 2c + 1``,
bootstrap's places, which VW's model file keeps for copy 0), VW's generator (two 32-bit
halves), the run's queries (VW's ``total queries``), VW's clock ``t`` and whether it is set
(:func:`start_clock`), then ``λn`` and ``λd`` of each policy.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    GSTATE_SIZE,
    P_BINARY,
    P_LEARN,
    P_PROGRESS,
    P_T0,
    S_LOSS,
    S_SINCE_LOSS,
    add_scored,
    begin_example,
    binary_loss,
    clip,
    row_span,
)
from streamlearn.learners.explore import merand48
from streamlearn.learners.gd_mf import powf32
from streamlearn.learners.losses import logf, loss32, square_grad32
from streamlearn.learners.oaa import class_stride
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64

G_COPY = GSTATE_SIZE
"""Copy c's normalizer sums at ``G_COPY + 2c`` and ``G_COPY + 2c + 1`` (as bootstrap's)."""
C_COVER, C_C0, C_ALPHA, C_BETA2, C_ORACULAR = range(5)
"""The kernel's options (``conf``): the policies in the cover, ``--mellowness`` (c0),
``--alpha``, ``--beta_scale`` squared (float32, as VW squares it), ``--oracular``."""


def rng_slot(k: int) -> int:
    """Where VW's generator's state is in the global state of K copies (bootstrap's place)."""
    return G_COPY + 2 * k


def state_size(cover: int) -> int:
    """The global state's size for ``cover`` policies (K = cover + 1 copies)."""
    return rng_slot(cover + 1) + 5 + 2 * cover


def init_gstate(params: np.ndarray, cover: int, seed: int) -> np.ndarray:
    """A fresh state: gd's, the copies' sums (copy 0's from ``--initial_t`` t0 > 0, as VW's
    model 0), VW's generator at ``seed``, no clock yet, the policies' λ."""
    k = cover + 1
    gstate = np.zeros(state_size(cover))
    gstate[:GSTATE_SIZE] = gd.init_gstate(params)
    gstate[gd.G_NORM] = gstate[gd.G_TOTAL] = 0.0
    t0 = F64(F32(params[P_T0]))
    if t0 > 0.0:
        gstate[G_COPY] = gstate[G_COPY + 1] = t0
    g = rng_slot(k)
    gstate[g] = F64(seed & 0xFFFFFFFF)
    gstate[g + 1] = F64((seed >> 32) & 0xFFFFFFFF)
    restart(gstate, cover)
    return gstate


def get_rng(gstate: np.ndarray, cover: int) -> int:
    """VW's generator's 64-bit state (kept in VW's model as ``--random_seed``)."""
    g = rng_slot(cover + 1)
    return (int(gstate[g + 1]) << 32) | int(gstate[g])


def queries(gstate: np.ndarray, cover: int) -> int:
    """The examples this run queried (VW's ``total queries``)."""
    return int(gstate[rng_slot(cover + 1) + 2])


def restart(gstate: np.ndarray, cover: int) -> None:
    """A run's start (VW keeps neither the λ nor the queries in a model): no queries, each
    policy's ``λn`` 0 and ``λd`` 1/8."""
    g = rng_slot(cover + 1)
    gstate[g + 2] = 0.0
    lam = g + 5
    gstate[lam : lam + cover] = 0.0
    gstate[lam + cover : lam + 2 * cover] = 0.125


def start_clock(gstate: np.ndarray, cover: int, params: np.ndarray) -> None:
    """VW's clock ``t`` (the weight of every example seen) when the state has none yet (a
    fresh one, or VW's model, which keeps ``t`` as gd's learned weight from ``--initial_t``):
    ``t0`` plus gd's learned weight."""
    g = rng_slot(cover + 1)
    if gstate[g + 4] == 0.0:
        gstate[g + 3] = F64(F32(params[P_T0])) + gstate[G_T]
        gstate[g + 4] = 1.0


@jit_inline
def sign(x):
    """VW's ``VW::math::sign``: -1 for x <= 0, +1 otherwise (NaN too)."""
    return F32(-1.0) if x <= F32(0.0) else F32(1.0)


@jit_inline
def _sqrtf(x):
    return F32(math.sqrt(F64(x)))


@jit_inline
def threshold(sum_loss, t, c0, alpha):
    """VW's ``get_threshold``: the disagreement region's width, in float32."""
    if t < F32(3.0):
        return F32(1.0)
    avg = fdiv(sum_loss, t)
    return _sqrtf(fdiv(c0 * avg, t)) + fdiv(max(F32(2.0) * alpha, F32(4.0)) * c0 * logf(t), t)


@jit_inline
def pmin_of(sum_loss, t):
    """VW's ``get_pmin``: the smallest query probability's base, in float32."""
    if t <= F32(2.0):
        return F32(1.0)
    avg = fdiv(sum_loss, t)
    return min(fdiv(F32(1.0), _sqrtf(t * avg) + logf(t)), F32(0.5))


@jit_inline
def _copy_slots(indices, slots, lo, hi, step, c, mask):
    for k in range(lo, hi):
        slots[k] = (U64(indices[k]) * U64(step) + U64(c)) & mask


@jit
def _loss(loss_id, p, y, tau, lmin, lmax):
    """gd's float32 loss, called (not inlined: the kernel scores in three places)."""
    return loss32(loss_id, p, y, tau, lmin, lmax)


@jit
def _sensitivity(table, gstate, slots, values, lo, hi, p, y, a, loss_id, rule):
    """Copy 0's stateless sensitivity (VW's gd ``sensitivity``; its slots in ``slots``): the
    rate of an update of weight 1 times how far one unit moves ``p``, from the sums a learn of
    (p, y, a) would make, changing nothing but gd's last normalizer (as VW's).  As
    :func:`streamlearn.learners.active.sensitivity_of`, over copy 0's sums, with C's divisions
    (a zero adaptive sum: a rate of inf, as VW's, when ``p`` is the label)."""
    (adaptive, normalized, invariant, sqrt_rate, neg_q, neg_norm_power, t0, g0, eta, l1, l2,
     reg, tau, lmin, lmax) = rule  # fmt: skip
    scale = eta
    if not adaptive:
        scale = scale * F32(F32(F64(t0) + gstate[G_T] + 1.0) ** neg_q)
    if not adaptive and not normalized:
        total = F32(0.0)
        for k in range(lo, hi):
            x = F32(values[k])
            total += x * x
        return scale * total
    gamma = a * square_grad32(loss_id, p, y, tau, lmin, lmax)
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
        rate = F32(1.0)
        if adaptive:
            rate = fdiv(F32(1.0), F32(math.sqrt(G))) if sqrt_rate else F32(G**neg_q)
        if normalized:
            if sqrt_rate:
                inv = fdiv(F32(1.0), m)
                rate = rate * inv if adaptive else rate * (inv * inv)
            else:
                rate = rate * F32((m * m) ** neg_norm_power)
        ppu += x2 * rate
    if normalized:
        nsnx = F32(gstate[G_COPY]) + a * nx
        tw = F32(gstate[G_COPY + 1]) + a
        if sqrt_rate:  # (gd's normalizer, VW's average_update)
            mult = fdiv(tw, nsnx)
            if adaptive:
                mult = F32(math.sqrt(mult))
        else:
            mult = F32(fdiv(nsnx, tw) ** neg_norm_power)
        gstate[gd.G_MULT] = mult
        ppu = ppu * mult
    return scale * ppu


@jit_inline
def _raw(table, gstate, slots, values, lo, hi, base, truncate):
    """A copy's score (its slots in ``slots``), not clipped."""
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(base)
    for k in range(lo, hi):
        w = F32(table[slots[k], 0])
        if truncate:
            w = gd.trunc(w, grav)
        p += w * F32(values[k])
    return p * F32(gstate[gd.G_CONTRACTION])


@jit
def _predict(table, gstate, params, loss_id, slots, values, lo, hi, base, truncate):
    """A copy's prediction, clipped to the range as gd's."""
    raw = _raw(table, gstate, slots, values, lo, hi, base, truncate)
    return F32(clip(gstate, params, loss_id, F64(raw), 0.0, False))


@jit
def _learn(table, gstate, params, loss_id, slots, values, lo, hi, base, truncate, c, y, a,
           learned, rule):  # fmt: skip
    """Copy c learns label ``y`` with weight ``a`` as gd's learn does (predict, the zero-loss
    gate, a step with its own sums); ``learned``: gd's learned weight before the example
    (its rate's clock, without adaptive rates, is that plus ``a``)."""
    if a == F32(0.0):
        return
    p = _predict(table, gstate, params, loss_id, slots, values, lo, hi, base, truncate)
    if not _loss(loss_id, p, y, rule[12], rule[13], rule[14]) > F32(0.0):
        return
    gstate[G_T] = learned + F64(a)
    gd.step(table, gstate, G_COPY + 2 * c, G_COPY + 2 * c + 1, slots, values, lo, hi, p, y, a,
            loss_id, rule)  # fmt: skip
    if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
        gd.rebase(table, gstate, params)


@jit
def learn_example(table, gstate, params, loss_id, indices, values, slots, lo, hi, base, p, y, a,
                  sum_loss, conf, rng, rule):  # fmt: skip
    """active_cover's learn of one example (label ``y``, weight ``a > 0``) whose copy 0 predicts
    ``p``, ``sum_loss`` the progressive loss's sum: the query, copy 0's learn and the cover's,
    each policy's λ.  Returns the label and weight it leaves on the example (NaN, 0: skipped)."""
    truncate = rule[9] > F32(0.0)
    cover = int(conf[C_COVER])
    c0, alpha, beta2 = F32(conf[C_C0]), F32(conf[C_ALPHA]), F32(conf[C_BETA2])
    k = cover + 1
    step = class_stride(k)
    mask = U64(table.shape[0] - 1)
    g_rng = G_COPY + 2 * k
    g_queries, g_clock, g_lam = g_rng + 2, g_rng + 3, g_rng + 5
    g_lamd = g_lam + cover
    clock = gstate[g_clock]
    t = F32(clock)
    learned = gstate[G_T]
    width = threshold(sum_loss, t, c0, alpha)
    early = clock + F64(a) <= 3.0
    in_dis = True
    if not early:
        _copy_slots(indices, slots, lo, hi, step, 0, mask)
        sens = _sensitivity(table, gstate, slots, values, lo, hi, p, y, a, loss_id, rule)
        in_dis = fdiv(fdiv(abs(p), sens), t) <= width
    pmin = pmin_of(sum_loss, t)
    importance = F32(1.0)
    if early:
        importance = F32(1.0)
    elif not in_dis:
        importance = F32(-1.0)
    elif conf[C_ORACULAR] == 0.0:
        q2 = F32(4.0) * pmin * pmin
        for c in range(1, k):
            _copy_slots(indices, slots, lo, hi, step, c, mask)
            pc = _predict(table, gstate, params, loss_id, slots, values, lo, hi, base, truncate)
            differs = F32(1.0) if sign(pc) != sign(p) else F32(0.0)
            q2 += differs * fdiv(F32(gstate[g_lam + c - 1]), F32(gstate[g_lamd + c - 1]))
        root = _sqrtf(q2)
        prob = fdiv(root, F32(1.0) + root)
        if prob != prob:
            prob = F32(1.0)
        importance = fdiv(F32(1.0), prob) if merand48(rng) <= prob else F32(-1.0)
    # copy 0 learns what active_cover leaves on the example
    y_out = y
    w_out = a
    if not in_dis:
        y_out = sign(p)
    elif importance > F32(0.0):
        gstate[g_queries] += 1.0
        w_out = a * importance
    else:
        y_out = F32(np.nan)
        w_out = F32(0.0)
    if w_out > F32(0.0):
        _copy_slots(indices, slots, lo, hi, step, 0, mask)
        _learn(table, gstate, params, loss_id, slots, values, lo, hi, base, truncate, 0, y_out,
               w_out, learned, rule)  # fmt: skip
    # the cover learns its costs
    imp = max(importance, F32(0.0))
    q2 = F32(4.0) * pmin * pmin
    r = fdiv(fdiv(F32(2.0) * width * t * alpha, c0), beta2)
    cost = F32(0.0)
    delta = F32(0.0)
    if in_dis:
        cost = r * imp * (F32(1.0) if sign(p) != sign(y) else F32(0.0))
    else:
        delta = -r
    for c in range(1, k):
        if in_dis:
            root = _sqrtf(q2)
            prob = fdiv(root, F32(1.0) + root)
            s = F32(2.0) * alpha * alpha - fdiv(F32(1.0), prob)
            delta = F32(2.0) * cost - r * imp - s
        yc = F32(-1.0) * sign(delta) * sign(p)
        _copy_slots(indices, slots, lo, hi, step, c, mask)
        _learn(table, gstate, params, loss_id, slots, values, lo, hi, base, truncate, c, yc,
               a * abs(delta), learned, rule)  # fmt: skip
        pc = _predict(table, gstate, params, loss_id, slots, values, lo, hi, base, truncate)
        differs = F32(1.0) if sign(pc) != sign(p) else F32(0.0)
        ln = F32(gstate[g_lam + c - 1]) + F32(2.0) * differs * delta
        ln = ln if ln > F32(0.0) else F32(0.0)  # (fmax: a NaN gives 0)
        gstate[g_lam + c - 1] = ln
        ld = F32(gstate[g_lamd + c - 1])
        ld += fdiv(differs if in_dis else F32(0.0), powf32(q2, F32(1.5)))
        gstate[g_lamd + c - 1] = ld
        q2 += differs * fdiv(ln, ld)
    gstate[G_T] = learned
    if w_out > F32(0.0):
        gstate[G_T] = learned + F64(w_out)
        gstate[G_N] += 1.0
    gstate[g_clock] = clock + F64(w_out)
    return y_out, w_out


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, conf):  # fmt: skip
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    tau, lmin, lmax = rule[12], rule[13], rule[14]
    binary = params[P_BINARY]
    learning = params[P_LEARN] != 0.0
    k = int(conf[C_COVER]) + 1
    step = class_stride(k)
    mask = U64(table.shape[0] - 1)
    g_rng = G_COPY + 2 * k
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = (U64(gstate[g_rng + 1]) << U64(32)) | U64(gstate[g_rng])
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        y32 = F32(y)
        a = F32(weights[i])
        labeled, holdout = begin_example(stats, params, y)
        extend = labeled and not holdout and learning
        _copy_slots(indices, slots, lo, hi, step, 0, mask)
        raw = F64(_raw(table, gstate, slots, values, lo, hi, bases[i], truncate))
        # VW's driver predicts first (the range before the label: what is shown) unless
        # --binary returns the prediction from its learn; its scorer widens the range first
        shown_p = F32(clip(gstate, params, loss_id, raw, y, False))
        p = F32(clip(gstate, params, loss_id, raw, y, extend))
        if binary != 0.0:
            shown_p = p
        preds[i] = F64(shown_p)
        y_out, w_out, counted, lv, shown_y = y32, a, labeled, F64(0.0), y
        if extend and a > F32(0.0):
            y_out, w_out = learn_example(table, gstate, params, loss_id, indices, values, slots,
                                         lo, hi, bases[i], p, y32, a, F32(stats[S_LOSS]), conf,
                                         rng, rule)  # fmt: skip
            counted = w_out > F32(0.0)
            shown_y = F64(y_out)
            if not counted and binary == 0.0:  # skipped: VW's first predict's loss stays
                left = F64(_loss(loss_id, shown_p, y32, tau, lmin, lmax) * a)
                stats[S_LOSS] += left
                stats[S_SINCE_LOSS] += left
        else:  # predicted only (VW's scorer does not learn it): VW's clock counts it
            gstate[g_rng + 3] += F64(a)
        if counted:
            lv = F64(_loss(loss_id, p, y_out, tau, lmin, lmax))
            if w_out != F32(0.0):  # (VW's loss times the weight, in float32)
                lv = F64(F32(lv) * w_out) / F64(w_out)
            if binary != 0.0:
                lv = binary_loss(F64(p) if binary == 1.0 else 1.0, F64(y_out), lv)
        add_scored(stats, rows, F64(shown_p), shown_y, F64(w_out), hi - lo, counted,
                   holdout and counted, lv, params[P_PROGRESS])  # fmt: skip
    gstate[g_rng] = F64(rng[0] & U64(0xFFFFFFFF))
    gstate[g_rng + 1] = F64(rng[0] >> U64(32))
