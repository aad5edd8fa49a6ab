"""Random network distillation over cb_adf (VW's ``--cb_explore_adf --rnd R``,
``cb_explore_adf_rnd.cc``).

R copies of cb_adf (offsets ``(1 + i)·w``, w = 2 for ``--cb_type dr`` else 1; the policy at
offset 0) learn to predict a fixed random linear function of each action line, its
"initial prediction" ``sqrt(invlambda) · Σ x_j g_j / sqrt(2 max(1e-12, Σ x_j²))`` with
``g_j`` a Gaussian drawn from the feature's *raw* VW index (``merand48_boxmuller`` seeded
by ``h · W · stride + (1 + i) · w · stride · (1 + R)``: h the hashed slot (the constant's
unmasked hash), W the feature width, stride 4 for gd's default state).  VW's crossed
features have unmasked raw indices sl does not keep: the driver refuses interactions.  Per example:

* each copy i: the initial predictions; learning, the logged line's label becomes
  ``alpha · N(0, 1) + initial`` (the Gaussian from VW's global generator, ``--random_seed``)
  with probability 1, and the copy ranks (before it learns) and learns as cb_adf;
  a line's bonus adds ``(score - initial)²``;
* bonus = ``sqrt(Σ / R)``; the policy's ranking (before it learns: the logged label as
  given), each score lowered by ``eulergamma · (bonus - max bonus)``;
* pmf: softmax with lambda ``-1/max(1e-3, max bonus)`` of those scores, floored at
  ``--epsilon`` (default 0), in the policy's order; loss ``cost/p · pmf(logged)``.
"""

from __future__ import annotations

import math

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
    explore_loss,
    merand48,
    softmax_pmf,
)
from streamlearn.learners.losses import logf
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
EULER_GAMMA = F32(0.57721566490153286)


def layout(rnd: int, cb_type: int) -> tuple[int, int]:
    """(w, s): the offsets of one copy and the slots a feature takes (a power of 2)."""
    w = 2 if cb_type == DR else 1
    s = 1
    while s < (1 + rnd) * w:
        s *= 2
    return w, s


@jit_inline
def boxmuller(state):
    """VW's ``merand48_boxmuller``: a standard Gaussian (float32) from ``state`` (advanced)."""
    while True:
        x1 = F32(2.0) * merand48(state) - F32(1.0)
        x2 = F32(2.0) * merand48(state) - F32(1.0)
        t = x1 * x1 + x2 * x2
        if not (t >= F32(1.0) or t == F32(0.0)):
            break
    t = F32(math.sqrt((F32(-2.0) * logf(t)) / t))  # (logf: VW's std::log of a float)
    return x1 * t


CONSTANT = 11650396
"""VW's constant feature hash, which VW does not mask (sl's slot is it modulo 2^b)."""


@jit_inline
def initial_prediction(indices, values, ns, lo, hi, mult, offset, sqrt_invlambda, const_slot,
                       seed):  # fmt: skip
    """The random target of a line: raw index ``indices · mult + offset`` (the constant
    feature's: VW's unmasked hash)."""
    sq = F32(0.0)
    dot = F32(0.0)
    for t in range(lo, hi):
        h = np.uint64(indices[t])
        if ns[t] == 128 and h == np.uint64(const_slot):
            h = np.uint64(CONSTANT)
        seed[0] = h * np.uint64(mult) + np.uint64(offset)
        g = boxmuller(seed)
        x = F32(values[t])
        sq += x * x
        dot += x * g
    return sqrt_invlambda * dot / F32(math.sqrt(F32(2.0) * max(F32(1e-12), sq)))


@jit  # (called twice: not inlined, which would double the kernel's compile time)
def _learn_copy(table, gstate, params, loss_id, rule, slots, indices, values, indptr, r0, n,
                k, c, p, clip_p, cb_type, width, base, mask, truncate, counts, cidx, xs,
                ys):  # fmt: skip
    """cb_adf's learning of one labeled example at offset ``base`` (VW's per-model counts
    ``counts[2 cidx]``, ``+1`` for mtr)."""
    pc = max(p, F32(clip_p))
    if cb_type == MTR:
        counts[2 * cidx] += 1.0
        counts[2 * cidx + 1] += n
        a = F32(1.0) / pc * (F32(counts[2 * cidx]) / F32(counts[2 * cidx + 1]))
        r = r0 + k
        learn_line(table, gstate, params, loss_id, rule, slots, indices, values, indptr[r],
                   indptr[r + 1], c, F64(a), width, base, mask, truncate)  # fmt: skip
        return
    if cb_type == DR:
        for i in range(n):
            r = r0 + i
            if i == k:
                xs[i] = learn_line(table, gstate, params, loss_id, rule, slots, indices, values,
                                   indptr[r], indptr[r + 1], c, F64(F32(1.0) / p), width,
                                   base + 1, mask, truncate)  # fmt: skip
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
        learn_line(table, gstate, params, loss_id, rule, slots, indices, values, indptr[r],
                   indptr[r + 1], ys[i], 1.0, width, base, mask, truncate)  # fmt: skip


@jit
def train_rnd(table, gstate, params, loss_id, cb_type, clip_p, rnd, width, w, stride, alpha,
              invlambda, epsilon, rng, act_ptr, indptr, indices, values, ns, chosen, cost, prob,
              holdout, learning, counts, xstats, out_actions, out_probs):  # fmt: skip
    """Predict (the pmf), account and learn each example of a batch."""
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    sqrt_invlambda = F32(math.sqrt(F32(invlambda)))
    mult = np.uint64(width * stride)
    const_slot = np.uint64(CONSTANT) & mask
    seed = np.zeros(1, dtype=np.uint64)
    cap = 64
    sc = np.empty(cap, dtype=np.float32)
    order = np.empty(cap, dtype=np.int64)
    init = np.empty(cap, dtype=np.float32)
    bonus = np.empty(cap, dtype=np.float32)
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
            init = np.empty(cap, dtype=np.float32)
            bonus = np.empty(cap, dtype=np.float32)
            xs = np.empty(cap, dtype=np.float32)
            ys = np.empty(cap, dtype=np.float32)
            ones = np.ones(cap, dtype=np.float32)
        k = chosen[e]
        labeled = k >= 0
        c = F32(cost[e])
        p = F32(prob[e])
        learn = labeled and learning and p > F32(0.0)
        counted = 1.0 if labeled and not holdout[e] else 0.0
        for i in range(n):
            bonus[i] = F32(0.0)
        for cp in range(rnd):
            ident = 1 + cp
            off = np.uint64(ident * w * stride * (1 + rnd))
            for i in range(n):
                r = r0 + i
                init[i] = initial_prediction(indices, values, ns, indptr[r], indptr[r + 1], mult,
                                             off, sqrt_invlambda, const_slot, seed)  # fmt: skip
            base = ident * w
            for i in range(n):
                r = r0 + i
                sc[i] = line_score(table, gstate, indices, values, indptr[r], indptr[r + 1],
                                   width, base, mask, truncate)  # fmt: skip
            if learn:
                fake = F32(alpha) * boxmuller(rng) + init[k]
                _learn_copy(table, gstate, params, loss_id, rule, slots, indices, values, indptr,
                            r0, n, k, fake, F32(1.0), clip_p, cb_type, width, base, mask,
                            truncate, counts, ident, xs, ys)  # fmt: skip
            for i in range(n):
                d = sc[i] - init[i]
                bonus[i] += d * d
        for i in range(n):
            bonus[i] = F32(math.sqrt(bonus[i] / F32(rnd)))
        for i in range(n):
            r = r0 + i
            sc[i] = line_score(table, gstate, indices, values, indptr[r], indptr[r + 1], width,
                               0, mask, truncate)  # fmt: skip
        rank(sc, 0, n, order)
        if learn:
            _learn_copy(table, gstate, params, loss_id, rule, slots, indices, values, indptr, r0,
                        n, k, c, p, clip_p, cb_type, width, 0, mask, truncate, counts, 0, xs,
                        ys)  # fmt: skip
        top = bonus[0]
        for i in range(1, n):
            top = max(top, bonus[i])
        top = max(F32(1e-3), top)
        acts = out_actions[r0:r1]
        pr = out_probs[r0:r1]
        for i in range(n):
            a = order[i]
            acts[i] = a
            pr[i] = sc[a] - EULER_GAMMA * (bonus[a] - top)
        softmax_pmf(pr, F32(1.0) / top, epsilon)
        if labeled and p > F32(0.0):
            loss = explore_loss(acts, pr, ones[:n], k, c, p)
            if holdout[e]:
                xstats[X_HO_LOSS] += F64(loss)
                xstats[X_HO_N] += 1.0
            else:
                xstats[X_LOSS] += F64(loss)
                xstats[X_N] += 1.0
        gstate[G_N] += counted
