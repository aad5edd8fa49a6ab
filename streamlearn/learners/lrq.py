"""Low-rank quadratics (VW's ``--lrq abk``, ``--lrqdropout``): gd with factored crosses.

As VW's ``reductions/lrq.cc`` over its ``gd``: a pair ``abk`` gives every feature ``i`` of
namespace ``a`` and ``j`` of ``b`` a rank-``k`` interaction ``Σ_n l_{i,n} r_{j,n} x_i x_j``,
learned by alternating which side is held fixed, with O(k·|a|·|b|) work per example.

* **Slots.** Each feature takes ``s`` consecutive slots, ``s`` = 1 + max k rounded up to a
  power of 2 (VW's ``total_feature_width``): its linear weight at ``(h·s) mod 2^b`` and its
  latent weights ``n = 1..k`` at ``(h·s + n) mod 2^b``, VW's own slots.
* **One step of the stack.**  For each pair, in VW's order (its pairs as a sorted set), the
  left namespace is ``a`` or ``b`` by the parity of VW's example counter; for each feature
  ``i`` of the left namespace and ``n = 1..k``, the left latent weight ``l = w[i·s + n]``
  (drawn as ``merand48(index)`` on a learned example when it is still 0: away from the
  saddle point at 0) multiplies each feature ``j`` of the right namespace into a new
  feature of the right namespace, value ``scale·l·x_i·x_j`` (float32), slot ``j·s + n``.
  gd then predicts (and learns) the example with those features after the namespace's
  own, as any other feature.  A learned example (labeled, not held out, of weight > 0: VW
  only predicts one of weight 0, drawing nothing) is learned twice, the second time with
  the sides swapped; the prediction reported is the first.  Under ``--lrqdropout`` each
  (feature, n) of a learned example is kept with probability 1/2 (one draw of VW's
  generator, seeded ``random_seed | 8675309``), and an example that is not learned sees
  every latent product at half its value.
* The added features are not counted in ``current features``, and are not crossed (a run
  with --lrq takes no -q: the reduction refuses it).

**Field-aware** (VW's ``--lrqfa abck``, ``reductions/lrqfa.cc``): every two namespaces of the
list are a pair, and a feature keeps k latent weights *for each field* it meets: feature
``i`` of field ``f`` facing field ``g`` uses ``w[i·s + g·k + n]`` (``s`` = 1 + fields·k,
rounded up to a power of 2), drawn as ``merand48(index)·0.5/√k``; the left side is the
pair's second namespace on an even count; no dropout.

``pairs`` is int64[p, 5] (first namespace byte, second byte, k, and under lrqfa their field
numbers, else 0), ``conf`` int64[5] (s, VW's stride shift of a learned example's weights,
dropout, what turns the run's example count ``stats[S_N]`` into VW's example counter -- the
passes ended, each of which VW counts as one more example, less the count the run started
from -- and 1 for lrqfa), ``seed`` uint64[1] (the dropout generator, advanced), ``ns`` the
batch's namespace bytes.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    P_BINARY,
    P_LEARN,
    P_LOGISTIC_MAX,
    P_LOGISTIC_MIN,
    P_PROGRESS,
    P_QUANTILE_TAU,
    S_N,
    add_scored,
    begin_example,
    binary_loss,
    clip,
    row_span,
    write_raw,
)
from streamlearn.learners.explore import merand48, merand48_noadvance
from streamlearn.learners.losses import loss32
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64


@jit_inline
def _stale(pushed_slot, pushed_ns, m, prev_slot, prev_ns, mprev, scratch, counts):
    """lrqfa's second learn of an example, as VW's: it truncates each field's values after
    the first learn but not their indices, so the j-th product the second learn adds to a
    field takes the j-th index that field holds past its own features -- the first learn's
    j-th product's, while there are, then its own.  ``scratch``: room for 2·m + mprev."""
    for u in range(mprev):
        counts[0, prev_ns[u]] += 1
    for u in range(m):
        counts[1, pushed_ns[u]] += 1
    p1 = 0
    p2 = mprev
    for c in range(256):  # each field's entries together, in order: where they start
        counts[2, c] = p1
        counts[3, c] = p2
        p1 += counts[0, c]
        p2 += counts[1, c]
    for u in range(mprev):
        c = prev_ns[u]
        scratch[counts[2, c]] = prev_slot[u]
        counts[2, c] += 1
    for u in range(m):
        c = pushed_ns[u]
        scratch[counts[3, c]] = pushed_slot[u]
        counts[3, c] += 1
    for c in range(256):  # back to each field's start
        counts[2, c] -= counts[0, c]
        counts[3, c] -= counts[1, c]
    for u in range(m):
        c = pushed_ns[u]
        j = counts[4, c]
        counts[4, c] += 1
        if j < counts[0, c]:
            scratch[mprev + m + u] = scratch[counts[2, c] + j]
        else:
            scratch[mprev + m + u] = scratch[counts[3, c] + j - counts[0, c]]
    for u in range(m):
        pushed_slot[u] = scratch[mprev + m + u]
    for c in range(256):
        for r in range(5):
            counts[r, c] = 0


@jit_inline
def _extend(table, indptr, indices, values, ns, i, pairs, conf, seed, which, learn, scale,
            mask, slots, vals, last, stamp, pushed_slot, pushed_val, pushed_ns, prev_slot,
            prev_ns, mprev, scratch, counts):  # fmt: skip
    """Example ``i``'s features with the latent products of every pair (``which``: the
    parity that picks each pair's left side) into ``slots``/``vals``; their count, and the
    products'.  ``mprev`` >= 0: lrqfa's second learn (:func:`_stale`)."""
    lo, hi = row_span(indptr, i)
    s = U64(conf[0])
    ss = U64(conf[1])
    dropout = conf[2] != 0
    fa = conf[4] != 0
    m = 0  # latent products, in the pairs' order
    for q in range(pairs.shape[0]):
        # lrq: the pair's first namespace is the left one on an even count; lrqfa: its second
        first = (which % 2 == 0) != fa
        left = pairs[q, 0] if first else pairs[q, 1]
        right = pairs[q, 1] if first else pairs[q, 0]
        k = pairs[q, 2]
        # lrqfa: a feature's k latent weights for each field (0 for both under lrq)
        lfield = pairs[q, 3] if first else pairs[q, 4]
        rfield = pairs[q, 4] if first else pairs[q, 3]
        for t in range(lo, hi):
            if ns[t] != left:
                continue
            lfx = F32(values[t])
            lindex = U64(indices[t]) * s
            for n in range(1, k + 1):
                if dropout and learn and not merand48(seed) > F32(0.5):
                    continue
                lw_index = lindex + U64(rfield * k + n)
                lslot = lw_index & mask
                lw = F32(table[lslot, 0])
                if learn and lw == F32(0.0):
                    lw = merand48_noadvance(lw_index << ss)
                    if fa:
                        lw = lw * F32(0.5) / F32(np.sqrt(F64(k)))
                    table[lslot, 0] = lw
                c = F32(scale * lw) * lfx
                offset = U64(lfield * k + n)
                for r in range(lo, hi):
                    if ns[r] == right:
                        pushed_slot[m] = np.uint32((U64(indices[r]) * s + offset) & mask)
                        pushed_val[m] = F64(c * F32(values[r]))
                        pushed_ns[m] = right
                        m += 1
    if mprev >= 0:
        _stale(pushed_slot, pushed_ns, m, prev_slot, prev_ns, mprev, scratch, counts)
    # each namespace's own features, then its latent products (after its last feature)
    for t in range(lo, hi):
        last[ns[t]] = t
        stamp[ns[t]] = i
    out = 0
    for t in range(lo, hi):
        slots[out] = np.uint32((U64(indices[t]) * s) & mask)
        vals[out] = values[t]
        out += 1
        b = ns[t]
        if m > 0 and last[b] == t and stamp[b] == i:
            for u in range(m):
                if pushed_ns[u] == b:
                    slots[out] = pushed_slot[u]
                    vals[out] = pushed_val[u]
                    out += 1
    return out, m


@jit_inline
def _predict(table, gstate, base, slots, vals, m, l1):
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(base)
    for t in range(m):
        w = F32(table[slots[t], 0])
        if l1:
            w = gd.trunc(w, grav)
        p += w * F32(vals[t])
    return p * F32(gstate[gd.G_CONTRACTION])


@jit
def room(indptr, ns, pairs):
    """The most latent products one example of the batch makes (for the caller's buffers)."""
    most = 0
    count = np.zeros(256, dtype=np.int64)
    for i in range(indptr.shape[0] - 1):
        for t in range(indptr[i], indptr[i + 1]):
            count[ns[t]] += 1
        total = 0
        for q in range(pairs.shape[0]):
            total += pairs[q, 2] * count[pairs[q, 0]] * count[pairs[q, 1]]
        most = max(most, total)
        for t in range(indptr[i], indptr[i + 1]):
            count[ns[t]] = 0
    return most


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, ns, pairs, conf, seed, pushed):  # fmt: skip
    """gd's ``train_batch`` with the latent products (``pushed``: room for :func:`room`)."""
    rule = gd.rule_of(params)
    l1 = rule[9] > F32(0.0)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    binary = params[P_BINARY]
    mask = U64(table.shape[0] - 1)
    dropout = conf[2] != 0
    n = indptr.shape[0] - 1
    width = 0
    for i in range(n):
        width = max(width, indptr[i + 1] - indptr[i])
    slots = np.empty(width + pushed, dtype=np.uint32)
    vals = np.empty(width + pushed, dtype=np.float64)
    pushed_slot = np.empty(pushed, dtype=np.uint32)
    pushed_val = np.empty(pushed, dtype=np.float64)
    pushed_ns = np.empty(pushed, dtype=np.uint8)
    last = np.zeros(256, dtype=np.int64)
    stamp = np.full(256, -1, dtype=np.int64)
    fa = conf[4] != 0
    prev_slot = np.empty(pushed if fa else 0, dtype=np.uint32)
    prev_ns = np.empty(pushed if fa else 0, dtype=np.uint8)
    scratch = np.empty(3 * pushed if fa else 0, dtype=np.uint32)
    counts = np.zeros((5, 256), dtype=np.int64)
    for i in range(n):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        extend = labeled and not holdout and params[P_LEARN] != 0.0  # (VW's scorer widens)
        learn = extend and a != 0.0
        which = U64(np.int64(stats[S_N]) - 1 + conf[3]) if learn else U64(0)
        scale = F32(1.0) if (not dropout or learn) else F32(0.5)
        mprev = -1
        for it in range(2 if learn else 1):
            m, made = _extend(table, indptr, indices, values, ns, i, pairs, conf, seed,
                              which + U64(it), learn, scale, mask, slots, vals, last, stamp,
                              pushed_slot, pushed_val, pushed_ns, prev_slot, prev_ns, mprev,
                              scratch, counts)  # fmt: skip
            if fa and it == 0:  # (VW's lrqfa: the second learn takes these indices)
                prev_slot[:made] = pushed_slot[:made]
                prev_ns[:made] = pushed_ns[:made]
                mprev = made
            p = _predict(table, gstate, bases[i], slots, vals, m, l1)
            if it == 0:
                write_raw(preds, indptr, i, F64(p))
            p = F32(clip(gstate, params, loss_id, F64(p), y, extend))
            lv = loss32(loss_id, p, F32(y), tau, lmin, lmax) if labeled else F32(0.0)
            if it == 0:
                shown = F64(lv)
                if labeled and binary != 0.0:
                    shown = binary_loss(F64(p) if binary == 1.0 else 1.0, y, shown)
                add_scored(stats, rows, F64(p), y, a, hi - lo, labeled, holdout, shown,
                           params[P_PROGRESS])  # fmt: skip
                preds[i] = F64(p)
                if learn:
                    gstate[G_T] += a
                    gstate[G_N] += 1.0
            if not learn or not lv > F32(0.0):
                continue  # gd's zero-loss gate, on each of the two predictions
            gd.step(table, gstate, gd.G_NORM, gd.G_TOTAL, slots, vals, 0, m, p, F32(y), F32(a),
                    loss_id, rule)  # fmt: skip
            if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
                gd.rebase(table, gstate, params)
