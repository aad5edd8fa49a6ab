"""Eigen memory tree (VW's ``--emt``): the kernels of :mod:`streamlearn.learners.emt_state`,
which keeps the tree and says how it is walked.

As VW's ``reductions/eigen_memory_tree.cc`` (Rucker et al. 2022, "Eigen Memory Trees"),
operation for operation in float32, with VW's generator (``merand48``, seeded by
``--random_seed``) drawn in VW's order:

* **Memories.**  An example's features flattened as VW's ``flatten_features``: its slots
  sorted by (slot, value), a slot met twice summed (float32, in that order).  Every memory
  is a span ``pool_i[m_lo[m]:m_hi[m]]``, ``pool_v[...]`` of one pool (the query too, before
  it is stored).
* **Scorers** (:data:`RANDOM`, :data:`DISTANCE`, :data:`SELF`, :data:`NOT_SELF`): a draw; a
  distance (:func:`initial`: euclidean ``|a - b|``, gaussian ``1 - exp(-|a - b|)``, cosine
  ``1 - a·b/(|a||b|)``, none 0); or gd's prediction, clipped to VW's label range (0..3 at
  first), over the features of the pair (``|a - b|`` as VW writes it, :func:`pair_sub`,
  or ``a·b`` coordinatewise, :func:`pair_mul`) with the distance as its initial value.  A
  leaf's memories are shuffled (VW's ``emt_shuffle``) before each scoring pass.
* **Scorer learning** (:func:`learn_leaf`): the best-scored memory against the best other
  (fewest label errors, then score), each learning 0 or 1 through gd (the order drawn).
* **Router** (:func:`router`): random unit weights over the leaf's slots, then (eigen) 40
  epochs of Oja's rule over the centred memories (Balsubramani, Dasgupta & Freund 2013),
  normalised every 4 steps; the split is the median projection.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import G_T, P_L1, begin_example
from streamlearn.learners.explore import expf, merand48
from streamlearn.learners.losses import loss32
from streamlearn.learners.oaa import account_class, clipped, prediction_range, widen
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64
I64 = np.int64
FLT_MAX = F32(3.4028234663852886e38)

RANDOM, DISTANCE, SELF, NOT_SELF = 1, 2, 3, 4
"""VW's scorer types (its ``emt_scorer_type``)."""
EUCLIDEAN, GAUSSIAN, COSINE, NONE = 1, 2, 3, 4
"""VW's initial types (``emt_initial_type``)."""
ROUTE_RANDOM, ROUTE_EIGEN = 1, 2
"""VW's router types (``emt_router_type``)."""
EPOCHS = 40


@jit
def flatten(indices, values, lo, hi, out_i, out_v, at):
    """Row ``lo..hi`` flattened into ``out_i``/``out_v`` from ``at``: its end."""
    n = hi - lo
    order = np.argsort(indices[lo:hi], kind="mergesort")
    k = 0
    while k < n:  # (runs of one slot: by value, as VW sorts)
        e = k + 1
        while e < n and indices[lo + order[e]] == indices[lo + order[k]]:
            e += 1
        for a in range(k + 1, e):
            b = a
            while b > k and F32(values[lo + order[b]]) < F32(values[lo + order[b - 1]]):
                t = order[b]
                order[b] = order[b - 1]
                order[b - 1] = t
                b -= 1
        s = F32(values[lo + order[k]])
        for a in range(k + 1, e):
            s = s + F32(values[lo + order[a]])
        out_i[at] = I64(indices[lo + order[k]])
        out_v[at] = s
        at += 1
        k = e
    return at


@jit_inline
def inner(ai, av, alo, ahi, bi, bv, blo, bhi):
    """VW's ``emt_inner``: Σ a_j b_j over the common slots, in slot order (float32)."""
    s = F32(0.0)
    p = alo
    q = blo
    while p < ahi and q < bhi:
        if ai[p] < bi[q]:
            p += 1
        elif bi[q] < ai[p]:
            q += 1
        else:
            s = s + F32(av[p]) * F32(bv[q])
            p += 1
            q += 1
    return s


@jit_inline
def norm(av, alo, ahi):
    s = F32(0.0)
    for p in range(alo, ahi):
        s = s + F32(av[p]) * F32(av[p])
    return F32(math.sqrt(s))


@jit_inline
def dist(ai, av, alo, ahi, bi, bv, blo, bhi):
    """``emt_norm(emt_sub(a, b))``."""
    s = F32(0.0)
    p = alo
    q = blo
    while p < ahi or q < bhi:
        if q >= bhi or (p < ahi and ai[p] < bi[q]):
            d = F32(av[p])
            p += 1
        elif p >= ahi or bi[q] < ai[p]:
            d = -F32(bv[q])
            q += 1
        else:
            d = F32(av[p]) - F32(bv[q])
            p += 1
            q += 1
        s = s + d * d
    return F32(math.sqrt(s))


@jit_inline
def initial(kind, ai, av, alo, ahi, bi, bv, blo, bhi):
    """VW's ``emt_initial`` of memories a and b."""
    if kind == GAUSSIAN:
        return F32(1.0) - F32(expf(-dist(ai, av, alo, ahi, bi, bv, blo, bhi)))
    if kind == COSINE:
        den = norm(av, alo, ahi) * norm(bv, blo, bhi)
        if den != F32(0.0):
            return F32(1.0) - fdiv(inner(ai, av, alo, ahi, bi, bv, blo, bhi), den)
        return F32(1.0) - F32(expf(-dist(ai, av, alo, ahi, bi, bv, blo, bhi)))
    if kind == EUCLIDEAN:
        return dist(ai, av, alo, ahi, bi, bv, blo, bhi)
    return F32(0.0)


@jit_inline
def same(ai, av, alo, ahi, bi, bv, blo, bhi):
    """The two memories' features are equal (VW's ``full == full``)."""
    if ahi - alo != bhi - blo:
        return False
    for k in range(ahi - alo):
        if ai[alo + k] != bi[blo + k] or F32(av[alo + k]) != F32(bv[blo + k]):
            return False
    return True


@jit_inline
def pair_sub(ai, av, alo, ahi, bi, bv, blo, bhi, oi, ov):
    """VW's ``scorer_features_sub`` (its signs as written: a slot of one memory only keeps
    its value until the other runs out, then its absolute value); returns (n, Σx²)."""
    n = 0
    sq = F32(0.0)
    p = alo
    q = blo
    while p < ahi and q < bhi:
        if ai[p] < bi[q]:
            x = F32(av[p])
            if x != F32(0.0):
                oi[n] = ai[p]
                ov[n] = x
                n += 1
                sq = sq + x * x
            p += 1
        elif bi[q] < ai[p]:
            x = F32(bv[q])
            if x != F32(0.0):
                oi[n] = bi[q]
                ov[n] = x
                n += 1
                sq = sq + x * x
            q += 1
        else:
            if F32(av[p]) != F32(bv[q]):
                x = abs(F32(av[p]) - F32(bv[q]))
                oi[n] = ai[p]
                ov[n] = x
                n += 1
                sq = sq + x * x
            p += 1
            q += 1
    while p < ahi:
        if F32(av[p]) != F32(0.0):
            x = abs(F32(av[p]))
            oi[n] = ai[p]
            ov[n] = x
            n += 1
            sq = sq + x * x
        p += 1
    while q < bhi:
        if F32(bv[q]) != F32(0.0):
            x = abs(F32(bv[q]))
            oi[n] = bi[q]
            ov[n] = x
            n += 1
            sq = sq + x * x
        q += 1
    return n, sq


@jit_inline
def pair_mul(ai, av, alo, ahi, bi, bv, blo, bhi, oi, ov):
    """VW's ``scorer_features_mul``: a_j b_j over the common slots; returns (n, Σx²)."""
    n = 0
    sq = F32(0.0)
    p = alo
    q = blo
    while p < ahi and q < bhi:
        if ai[p] < bi[q]:
            p += 1
        elif bi[q] < ai[p]:
            q += 1
        else:
            x = F32(av[p]) * F32(bv[q])
            oi[n] = ai[p]
            ov[n] = x
            n += 1
            sq = sq + x * x
            p += 1
            q += 1
    return n, sq


@jit_inline
def gd_predict(table, gstate, params, loss_id, oi, ov, n, base, truncate):
    """gd's prediction over ``oi``/``ov`` from ``base`` (VW's initial), clipped."""
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(base)
    for k in range(n):
        w = F32(table[oi[k], 0])
        if truncate:
            w = gd.trunc(w, grav)
        p = p + w * F32(ov[k])
    rlo, rhi = prediction_range(gstate, params, loss_id)
    return clipped(p * F32(gstate[gd.G_CONTRACTION]), rlo, rhi)


@jit_inline
def shuffle(mem, n, rng):
    """VW's ``emt_shuffle`` of ``mem[:n]`` (its swaps with ``j``, not ``i + j``)."""
    if n < 2:
        return
    for i in range(n - 1):
        j = int(F64(merand48(rng)) * 0.999 * F64(n - i))
        t = mem[i]
        mem[i] = mem[j]
        mem[j] = t


@jit_inline
def _score(scorer, init, q, m, pool_i, pool_v, m_lo, m_hi, table, gstate, params, loss_id,
           rng, oi, ov, truncate):  # fmt: skip
    """VW's ``scorer_predict`` of query memory ``q`` against memory ``m``."""
    if scorer == RANDOM:
        return merand48(rng)
    alo, ahi, blo, bhi = m_lo[q], m_hi[q], m_lo[m], m_hi[m]
    if scorer == DISTANCE:
        return initial(init, pool_i, pool_v, alo, ahi, pool_i, pool_v, blo, bhi)
    if same(pool_i, pool_v, alo, ahi, pool_i, pool_v, blo, bhi):
        return -FLT_MAX
    if scorer == SELF:
        n, _ = pair_sub(pool_i, pool_v, alo, ahi, pool_i, pool_v, blo, bhi, oi, ov)
    else:
        n, _ = pair_mul(pool_i, pool_v, alo, ahi, pool_i, pool_v, blo, bhi, oi, ov)
    base = initial(init, pool_i, pool_v, alo, ahi, pool_i, pool_v, blo, bhi)
    return gd_predict(table, gstate, params, loss_id, oi, ov, n, base, truncate)


@jit
def pick(mem, scorer, init, q, pool_i, pool_v, m_lo, m_hi, table, gstate, params, loss_id,
         rng, oi, ov):  # fmt: skip
    """VW's ``node_pick``: the leaf's memories ``mem`` shuffled (in place) and scored
    against the query ``q``; the position of the best (-1: an empty leaf)."""
    n = mem.shape[0]
    if n == 0:
        return -1
    truncate = F32(params[P_L1]) > F32(0.0)
    first = mem[0]  # (VW's best before the shuffle: kept when no score is below FLT_MAX)
    shuffle(mem, n, rng)
    best_score = FLT_MAX
    best = first
    for k in range(n):
        s = _score(scorer, init, q, mem[k], pool_i, pool_v, m_lo, m_hi, table, gstate, params,
                   loss_id, rng, oi, ov, truncate)  # fmt: skip
        if s < best_score:
            best_score = s
            best = mem[k]
    return best


@jit
def learn_pair(scorer, init, q, m, y, w, t, pool_i, pool_v, m_lo, m_hi, table, gstate, params,
               loss_id, oi, ov):  # fmt: skip
    """VW's ``scorer_example`` of (q, m) learning label ``y`` with importance ``w`` through
    the scorer and gd (gd's clock at ``t`` + ``w``), unless its features are all 0."""
    alo, ahi, blo, bhi = m_lo[q], m_hi[q], m_lo[m], m_hi[m]
    if scorer == SELF:
        n, sq = pair_sub(pool_i, pool_v, alo, ahi, pool_i, pool_v, blo, bhi, oi, ov)
    else:
        n, sq = pair_mul(pool_i, pool_v, alo, ahi, pool_i, pool_v, blo, bhi, oi, ov)
    if sq == F32(0.0):
        return
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    base = initial(init, pool_i, pool_v, alo, ahi, pool_i, pool_v, blo, bhi)
    widen(gstate, params, y)
    p = gd_predict(table, gstate, params, loss_id, oi, ov, n, base, truncate)
    y32 = F32(y)
    if w > F32(0.0) and loss32(loss_id, p, y32) > F32(0.0):
        gstate[G_T] = t + F64(w)
        gd.step(table, gstate, gd.G_NORM, gd.G_TOTAL, oi, ov, 0, n, p, y32, w, loss_id, rule)
        if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
            gd.rebase(table, gstate, params)


@jit
def learn_leaf(mem, scorer, init, q, label, weight, t, pool_i, pool_v, m_lo, m_hi, m_label,
               table, gstate, params, loss_id, rng, oi, ov, scores):  # fmt: skip
    """VW's ``scorer_learn`` of query ``q`` (class ``label``, importance ``weight``) at a
    leaf of memories ``mem`` (shuffled in place); returns 1 when VW's trace says ERROR."""
    if scorer == RANDOM or scorer == DISTANCE:
        return 0
    w = F32(weight)
    n = mem.shape[0]
    if w == F32(0.0) or n < 2:
        return 0
    truncate = F32(params[P_L1]) > F32(0.0)
    shuffle(mem, n, rng)
    for k in range(n):
        scores[k] = _score(scorer, init, q, mem[k], pool_i, pool_v, m_lo, m_hi, table, gstate,
                           params, loss_id, rng, oi, ov, truncate)  # fmt: skip
    p_score = FLT_MAX
    p_err = FLT_MAX
    pref = -1
    for k in range(n):
        if scores[k] < p_score:
            p_score = scores[k]
            pref = k
            p_err = F32(0.0) if m_label[mem[k]] == label else F32(1.0)
    a_score = FLT_MAX
    a_err = FLT_MAX
    alt = -1
    for k in range(n):
        if k == pref:
            continue
        err = F32(0.0) if m_label[mem[k]] == label else F32(1.0)
        if err < a_err or (err == a_err and scores[k] < a_score):
            a_score = scores[k]
            alt = k
            a_err = err
    w = w * abs(p_err - a_err)
    if alt < 0 or pref < 0:
        return 1
    if w != F32(0.0):
        yp = 1.0 if p_err > a_err else 0.0
        ya = 1.0 if a_err > p_err else 0.0
        m1, y1, m2, y2 = mem[pref], yp, mem[alt], ya
        if not F64(merand48(rng)) < 0.5:
            m1, y1, m2, y2 = mem[alt], ya, mem[pref], yp
        learn_pair(scorer, init, q, m1, y1, w, t, pool_i, pool_v, m_lo, m_hi, table, gstate,
                   params, loss_id, oi, ov)  # fmt: skip
        learn_pair(scorer, init, q, m2, y2, w, t, pool_i, pool_v, m_lo, m_hi, table, gstate,
                   params, loss_id, oi, ov)  # fmt: skip
    return 0


@jit
def duplicate(mem, q, pool_i, pool_v, m_lo, m_hi):
    """Whether a memory of ``mem`` has query ``q``'s features (VW's ``node_insert``)."""
    for k in range(mem.shape[0]):
        m = mem[k]
        if same(pool_i, pool_v, m_lo[q], m_hi[q], pool_i, pool_v, m_lo[m], m_hi[m]):
            return True
    return False


@jit
def project(q, pool_i, pool_v, m_lo, m_hi, wi, wv):
    """``emt_inner`` of memory ``q`` and a router's weights."""
    return inner(pool_i, pool_v, m_lo[q], m_hi[q], wi, wv, 0, wi.shape[0])


@jit_inline
def _normalize(v, n):
    s = fdiv(F32(1.0), norm(v, 0, n))
    for k in range(n):
        v[k] = v[k] * s


@jit
def router(mem, kind, pool_i, pool_v, m_lo, m_hi, rng, left):
    """VW's ``node_split`` of a leaf of memories ``mem``: the router's slots and weights
    (random, or eigen: Oja's rule), its median projection, and each memory's side
    (``left[k]``)."""
    n = mem.shape[0]
    total = 0
    for k in range(n):
        total += m_hi[mem[k]] - m_lo[mem[k]]
    every = np.empty(total, dtype=np.int64)
    at = 0
    for k in range(n):
        for p in range(m_lo[mem[k]], m_hi[mem[k]]):
            every[at] = pool_i[p]
            at += 1
    wi = np.unique(every)
    nw = wi.shape[0]
    wv = np.empty(nw, dtype=np.float32)
    for k in range(nw):
        wv[k] = merand48(rng)
    _normalize(wv, nw)
    if kind == ROUTE_EIGEN:
        sums = np.zeros(nw, dtype=np.float32)
        for k in range(n):
            for p in range(m_lo[mem[k]], m_hi[mem[k]]):
                c = np.searchsorted(wi, pool_i[p])
                sums[c] = sums[c] + F32(pool_v[p])
        means = np.empty(nw, dtype=np.float32)
        size = F32(n)
        for c in range(nw):
            means[c] = sums[c] / size
        centred = np.empty((n, nw), dtype=np.float32)
        for k in range(n):
            for c in range(nw):
                centred[k, c] = -means[c]
            for p in range(m_lo[mem[k]], m_hi[mem[k]]):
                c = np.searchsorted(wi, pool_i[p])
                centred[k, c] = F32(pool_v[p]) - means[c]
        order = np.arange(n)
        j = 0
        for _ in range(EPOCHS):
            step = 1
            shuffle(order, n, rng)
            for r in range(n):
                row = centred[order[r]]
                j += 1
                s = F32(0.0)
                for c in range(nw):
                    s = s + row[c] * wv[c]
                s = s / F32(step)
                for c in range(nw):
                    wv[c] = wv[c] + s * row[c]
                if j % 4 == 0:
                    _normalize(wv, nw)
                step += 1
        _normalize(wv, nw)
    projs = np.empty(n, dtype=np.float32)
    for k in range(n):
        projs[k] = inner(pool_i, pool_v, m_lo[mem[k]], m_hi[mem[k]], wi, wv, 0, nw)
    ranked = np.sort(projs)
    if n % 2 == 0:
        decision = F32(ranked[n // 2] + ranked[n // 2 - 1]) / F32(2.0)
    else:
        decision = ranked[n // 2]
    for k in range(n):
        left[k] = projs[k] < decision
    return wi, wv, F64(decision)


@jit
def begin(stats, params, y):
    """An example counted: (labeled, holdout)."""
    return begin_example(stats, params, y)


@jit
def account(stats, rows, pred, y, a, nfeat, labeled, holdout, progress):
    """An example's 0/1 loss and table line (``--oaa``'s accounting)."""
    account_class(stats, rows, pred, y, a, nfeat, labeled, holdout, np.nan, 0.0, progress)
