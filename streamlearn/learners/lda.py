"""Latent Dirichlet allocation by online variational Bayes (VW's ``--lda K``,
``reductions/lda_core.cc``; Hoffman, Blei & Bach, "Online Learning for Latent Dirichlet
Allocation", NIPS 2010, Algorithm 2).

A document is a line's features: word ``w`` (its slot) with count ``x``.  Row ``w`` of the
table holds, in VW's layout (``s`` = 2K + 1 rounded up to a power of 2 floats a row):

* columns ``0..K-1``: ``λ_w`` less ``ρ`` (the topics' variational parameters of the word,
  VW's ``weights[w]``), decayed lazily;
* column ``K``: the minibatch count ``t`` at the row's last touch (the decay it owes);
* columns ``K+1..2K``: ``exp(E[log β_w])`` of the current minibatch (VW's ``u_for_w``).

Per minibatch of ``B`` documents (:func:`learn_batch`, VW's ``learn_batch``):

1. ``t += 1``; ``η_t = l·t^(-p)`` (VW's rate and power); ``η = η_t·D/B``; the decay level
   ``Σ log(1 - η_t)`` gets one more term;
2. each word of the minibatch (once, in slot order) settles its decay
   ``min(1, exp(level_{t-1} - level_{t_w}))``, and its ``u = expdigamma(λ + ρ) / exp(ψ(Σ_w λ
   + Wρ))`` (W = 2^b the words);
3. each document's ``γ`` (E step, eq. 6-7): ``γ = 1``, then ``v = exp(E[log θ])``,
   ``γ_k = α + v_k Σ_w x_w u_wk / (u_w·v)`` until the mean change per unit of ``γ`` is at
   most ``ε``; its score ``-Σ x_w log(1/(u_w·v)) + KL(θ)`` over its length is its loss;
4. (M step, eq. 8-9, unless the rate is 0) each word's ``λ ← (1 - η_t) λ + η Σ_d x_wd
   u_wk v_dk / (u_w·v_d)``, and the topic totals ``Σ_w λ`` likewise.

**VW's numbers**: float32 throughout in VW's order of operations; its three math modes
(``--math-mode``): 0, VW's SIMD approximations of digamma and exp (4 lanes where VW's
arrays are 16-byte aligned, the scalar approximations elsewhere, :func:`expdigammify`),
1, accurate (digamma and lgamma in double rounded to float32, as boost promotes them),
2, the scalar approximations everywhere; the minibatch's words sorted as libstdc++'s
``std::sort`` orders equal slots (:func:`sort_slots`), which fixes the order of the sums.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64

SIMD, PRECISE, FAST = 0, 1, 2
"""``--math-mode`` values."""

THRESHOLD = F32(1.0e-10)  # VW's UNDERFLOW_THRESHOLD
_L2_SCALAR = F32(124.22544637)
_L2_SIMD = F32(124.22551499)
_L2_B = F32(1.498030302)
_L2_C = F32(1.72587999)
_L2_D = F32(0.3520887068)
_ULP23 = F32(1.0 / (1 << 23))
_LN2 = F32(0.69314718)
_P2_A = F32(121.2740838)
_P2_B = F32(27.7280233)
_P2_C = F32(4.84252568)
_P2_D = F32(1.49012907)
_TWO23 = F32(1 << 23)
_LOG2E = F32(1.442695040)
_M126 = F32(-126.0)
_ZERO = F32(0.0)
_ONE = F32(1.0)
_TWO = F32(2.0)
_THREE = F32(3.0)
_SIX = F32(6.0)
_TWELVE = F32(12.0)
_THIRTEEN = F32(13.0)
_LG_A = F32(-2.081061466)
_LG_B = F32(0.0833333)
_LG_C = F32(2.5)
_V48 = F32(-48.0)
_V157 = F32(-157.0)
_V127 = F32(-127.0)
_V30 = F32(30.0)


# ---------------------------------------------------------------------- VW's approximations


@jit_inline
def _log2(x, simd, fb, ib):
    """VW's ``fastlog2`` (``simd``: ``vfastlog2``'s constant); ``fb``/``ib``: one float32
    and its bits (views of one buffer)."""
    fb[0] = x
    vx = ib[0]
    ib[0] = (vx & np.uint32(0x007FFFFF)) | np.uint32(0x3F000000)
    mx = fb[0]
    y = F32(vx) * _ULP23
    c = _L2_SIMD if simd else _L2_SCALAR
    return y - c - _L2_B * mx - _L2_C / (_L2_D + mx)


@jit_inline
def _pow2(p, fb, ib):
    """VW's ``fastpow2`` (its SIMD twin computes the same)."""
    offset = _ONE if p < _ZERO else _ZERO
    clipp = _M126 if p < _M126 else p
    w = int(clipp)
    z = clipp - F32(w) + offset
    v = _TWO23 * (clipp + _P2_A + _P2_B / (_P2_C - z) - _P2_D * z)
    ib[0] = np.uint32(np.int64(v) & 0xFFFFFFFF)
    return fb[0]


@jit_inline
def _exp(p, fb, ib):
    return _pow2(_LOG2E * p, fb, ib)


@jit_inline
def _digamma_fast(x, fb, ib):
    """VW's scalar ``fastdigamma``."""
    twopx = _TWO + x
    logterm = _LN2 * _log2(twopx, False, fb, ib)
    return (-(_ONE + _TWO * x) / (x * (_ONE + x))
            - (_THIRTEEN + _SIX * x) / (_TWELVE * twopx * twopx) + logterm)  # fmt: skip


@jit_inline
def _digamma_simd(x, fb, ib):
    """VW's ``vfastdigamma`` (one lane)."""
    twopx = _TWO + x
    logterm = _LN2 * _log2(twopx, True, fb, ib)
    return ((_V48 + x * (_V157 + x * (_V127 - _V30 * x)))
            / (_TWELVE * x * (_ONE + x) * twopx * twopx) + logterm)  # fmt: skip


@jit_inline
def _lgamma_fast(x, fb, ib):
    """VW's ``fastlgamma``."""
    logterm = _LN2 * _log2(x * (_ONE + x) * (_TWO + x), False, fb, ib)
    xp3 = _THREE + x
    return _LG_A - x + _LG_B / xp3 - logterm + (_LG_C + x) * (_LN2 * _log2(xp3, False, fb, ib))


@jit_inline
def _digamma64(x):
    """ψ(x) for x > 0 in double (recurrence to x ≥ 10, then the asymptotic series)."""
    r = 0.0
    while x < 10.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    t = f * (-1.0 / 12 + f * (1.0 / 120 + f * (-1.0 / 252 + f * (1.0 / 240 + f * (
        -1.0 / 132 + f * (691.0 / 32760 + f * (-1.0 / 12 + f * 3617.0 / 8160)))))))
    return r + math.log(x) - 0.5 / x + t


@jit_inline
def digamma(x, mode, fb, ib):
    """VW's ``lda::digamma`` of float32 ``x`` in math mode ``mode``."""
    if mode == PRECISE:
        return F32(_digamma64(F64(x)))
    return _digamma_fast(x, fb, ib)


@jit_inline
def lgamma(x, mode, fb, ib):
    """VW's ``lda::lgamma``."""
    if mode == PRECISE:
        return F32(math.lgamma(F64(x)))
    return _lgamma_fast(x, fb, ib)


@jit_inline
def exponential(x, mode, fb, ib):
    """VW's ``lda::exponential``: ``expf`` (libm's, as VW calls it) or ``fastexp``."""
    if mode == PRECISE:
        return math.exp(x)
    return _exp(x, fb, ib)


@jit_inline
def powf(x, p, mode, fb, ib):
    """VW's ``lda::powf``."""
    if mode == PRECISE:
        return x**p  # (libm's powf, as VW's std::pow of two floats)
    return _pow2(p * _log2(x, False, fb, ib), fb, ib)


@jit_inline
def _fmax(a, b):
    """``std::fmax(a, b)`` (a NaN ``b`` gives ``a``)."""
    return b if b > a else a if not (b == b) or a >= b else b


@jit_inline
def _fmin1(x):
    """``std::fmin(1.0f, x)`` (a NaN ``x``, as ``-inf - -inf`` of a rate of 1, gives 1)."""
    return x if x < _ONE else _ONE


@jit_inline
def expdigammify(g, lo, k, align, mode, fb, ib):
    """VW's ``expdigammify`` of ``g[lo:lo+k]`` in place: ``exp(ψ(g_i) - ψ(Σ g))``, at least
    the threshold.  ``align``: ``lo``'s place modulo 4 in VW's 16-byte aligned array (the
    SIMD lanes start at the first aligned element and stop 4 short of the end, as VW's
    loop), the lanes summed as SSE3's two horizontal adds (VW's builds have SSE3)."""
    if mode != SIMD:
        s = _ZERO
        for i in range(k):
            s += g[lo + i]
        s = digamma(s, mode, fb, ib)
        for i in range(k):
            g[lo + i] = _fmax(THRESHOLD, exponential(digamma(g[lo + i], mode, fb, ib) - s,
                                                     mode, fb, ib))  # fmt: skip
        return
    pre = min(k, (4 - align % 4) % 4)
    extra = _ZERO
    l0 = _ZERO
    l1 = _ZERO
    l2 = _ZERO
    l3 = _ZERO
    i = 0
    while i < pre:
        extra += g[lo + i]
        g[lo + i] = _digamma_fast(g[lo + i], fb, ib)
        i += 1
    while i + 4 < k:
        l0 += g[lo + i]
        l1 += g[lo + i + 1]
        l2 += g[lo + i + 2]
        l3 += g[lo + i + 3]
        for j in range(4):
            g[lo + i + j] = _digamma_simd(g[lo + i + j], fb, ib)
        i += 4
    while i < k:
        extra += g[lo + i]
        g[lo + i] = _digamma_fast(g[lo + i], fb, ib)
        i += 1
    extra += (l0 + l1) + (l2 + l3)
    extra = _digamma_fast(extra, fb, ib)
    for i in range(k):
        g[lo + i] = _fmax(THRESHOLD, _exp(g[lo + i] - extra, fb, ib))


@jit_inline
def expdigammify_2(g, lo, norm, k, align, mode, fb, ib):
    """VW's ``expdigammify_2``: ``g[lo+i] = exp(ψ(g[lo+i]) - norm[i])``, at least the
    threshold (``align`` as :func:`expdigammify`)."""
    if mode != SIMD:
        for i in range(k):
            g[lo + i] = _fmax(THRESHOLD, exponential(digamma(g[lo + i], mode, fb, ib) - norm[i],
                                                     mode, fb, ib))  # fmt: skip
        return
    pre = min(k, (4 - align % 4) % 4)
    i = 0
    while i < pre:
        g[lo + i] = _fmax(THRESHOLD, _exp(_digamma_fast(g[lo + i], fb, ib) - norm[i], fb, ib))
        i += 1
    while i + 4 < k:
        for j in range(4):
            g[lo + i + j] = _fmax(THRESHOLD, _exp(_digamma_simd(g[lo + i + j], fb, ib)
                                                  - norm[i + j], fb, ib))  # fmt: skip
        i += 4
    while i < k:
        g[lo + i] = _fmax(THRESHOLD, _exp(_digamma_fast(g[lo + i], fb, ib) - norm[i], fb, ib))
        i += 1


# ---------------------------------------------------------------------- libstdc++'s std::sort


@jit_inline
def _less(key, order, a, b):
    return key[order[a]] < key[order[b]]


@jit_inline
def _swap(order, a, b):
    t = order[a]
    order[a] = order[b]
    order[b] = t


@jit_inline
def _adjust_heap(key, order, first, hole, n, value):
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if key[order[first + child]] < key[order[first + child - 1]]:
            child -= 1
        order[first + hole] = order[first + child]
        hole = child
    if (n & 1) == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        order[first + hole] = order[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and key[order[first + parent]] < key[value]:
        order[first + hole] = order[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    order[first + hole] = value


@jit_inline
def _heap_sort(key, order, first, last):
    n = last - first
    if n >= 2:
        parent = (n - 2) // 2
        while True:
            _adjust_heap(key, order, first, parent, n, order[first + parent])
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        value = order[last]
        order[last] = order[first]
        _adjust_heap(key, order, first, 0, last - first, value)


@jit
def sort_slots(key, order, stack):
    """Sort ``order`` (positions into ``key``) by ``key`` as libstdc++'s ``std::sort``
    (introsort: median-of-three pivots, heap sort past 2·log2(n) levels, a final insertion
    sort), so that equal keys end in VW's order; ``stack``: int64 scratch of 3·(2·64 + 2)."""
    n = order.shape[0]
    if n < 2:
        return
    depth = 0
    m = n
    while m > 1:
        m >>= 1
        depth += 1
    _introsort(key, order, 0, n, 2 * depth, stack)
    if n > 16:  # __final_insertion_sort
        _insertion(key, order, 0, 16)
        for i in range(16, n):
            _linear_insert(key, order, i)
    else:
        _insertion(key, order, 0, n)


@jit_inline
def _partition(key, order, first, last):
    mid = first + (last - first) // 2
    a, b, c = first + 1, mid, last - 1
    if _less(key, order, a, b):
        if _less(key, order, b, c):
            _swap(order, first, b)
        elif _less(key, order, a, c):
            _swap(order, first, c)
        else:
            _swap(order, first, a)
    elif _less(key, order, a, c):
        _swap(order, first, a)
    elif _less(key, order, b, c):
        _swap(order, first, c)
    else:
        _swap(order, first, b)
    lo, hi = first + 1, last
    while True:
        while _less(key, order, lo, first):
            lo += 1
        hi -= 1
        while _less(key, order, first, hi):
            hi -= 1
        if not lo < hi:
            return lo
        _swap(order, lo, hi)
        lo += 1


@jit_inline
def _introsort(key, order, first, last, limit, stack):
    """``__introsort_loop(first, last, limit)``: its recursion kept on ``stack``."""
    stack[0] = first
    stack[1] = last
    stack[2] = limit
    sp = 1
    while sp > 0:
        sp -= 1
        f = stack[3 * sp]
        la = stack[3 * sp + 1]
        lim = stack[3 * sp + 2]
        # one turn of a call's loop: partition; the call on the right part runs before
        # the loop goes on with the left part at the same (decremented) limit
        if la - f <= 16:
            continue
        if lim == 0:
            _heap_sort(key, order, f, la)
            continue
        cut = _partition(key, order, f, la)
        stack[3 * sp] = f  # (the loop's continuation: [f, cut) at lim - 1)
        stack[3 * sp + 1] = cut
        stack[3 * sp + 2] = lim - 1
        sp += 1
        stack[3 * sp] = cut  # (the call, made before the loop goes on: on top)
        stack[3 * sp + 1] = la
        stack[3 * sp + 2] = lim - 1
        sp += 1


@jit_inline
def _insertion(key, order, first, last):
    for i in range(first + 1, last):
        if key[order[i]] < key[order[first]]:
            v = order[i]
            for j in range(i, first, -1):
                order[j] = order[j - 1]
            order[first] = v
        else:
            _linear_insert(key, order, i)


@jit_inline
def _linear_insert(key, order, last):
    v = order[last]
    nxt = last - 1
    while key[v] < key[order[nxt]]:
        order[last] = order[nxt]
        last = nxt
        nxt -= 1
    order[last] = v


# ---------------------------------------------------------------------- one minibatch

C_ALPHA, C_RHO, C_D, C_EPSILON, C_RATE, C_POWER_T, C_MODE, C_WORDS = range(8)
"""``conf``: the run's constants (float64)."""
S_T, S_DECAYS, S_ETA, S_MINUSETA = range(4)
"""``state``: the minibatches counted (VW's ``example_t``), the decay levels kept, and the
current minibatch's rates."""
STATE_SIZE = 4


@jit_inline
def _theta_kl(g, el, k, alpha, mode, fb, ib):
    """VW's ``theta_kl``: E_q[log p(θ)] - E_q[log q(θ)] of γ = ``g``."""
    gsum = _ZERO
    for j in range(k):
        el[j] = digamma(g[j], mode, fb, ib)
        gsum += g[j]
    dsum = digamma(gsum, mode, fb, ib)
    gsum = lgamma(gsum, mode, fb, ib)
    kl = -(F32(k) * lgamma(alpha, mode, fb, ib))
    kl += lgamma(alpha * F32(k), mode, fb, ib) - gsum
    for j in range(k):
        el[j] -= dsum
        kl += (alpha - g[j]) * el[j]
        kl += lgamma(g[j], mode, fb, ib)
    return kl


@jit_inline
def _dot(row, k, v, lo):
    s = _ZERO
    for j in range(k):
        s += row[k + 1 + j] * v[lo + j]
    return s


@jit
def begin_batch(table, k, conf, state, decay, total, digammas, indptr, slots, xs, order,
                doc, stack, v, gammas, scores, lengths, scratch, fb, ib):  # fmt: skip
    """VW's ``learn_batch`` up to its update (steps 1-3 of the module's docstring) for the
    documents ``indptr``/``slots``/``xs``: each document's γ (``gammas``), score per unit
    of length (``scores``) and integer length (``lengths``); ``order`` the entries sorted
    by slot, ``doc`` each entry's document.  False for a minibatch of no word (VW's fast
    path: nothing changes)."""
    nnz = indptr[indptr.shape[0] - 1]
    if nnz == 0:
        return False
    d = 0
    for e in range(nnz):
        while indptr[d + 1] <= e:
            d += 1
        doc[e] = d
    mode = int(conf[C_MODE])
    alpha = F32(conf[C_ALPHA])
    rho = F32(conf[C_RHO])
    state[S_T] += 1.0
    t = state[S_T]
    for i in range(nnz):
        order[i] = i
    sort_slots(slots, order, stack)
    b = indptr.shape[0] - 1
    eta = F32(conf[C_RATE]) * powf(F32(t), -F32(conf[C_POWER_T]), mode, fb, ib)
    minuseta = _ONE - eta
    eta *= F32(conf[C_D]) / F32(b)
    nd = int(state[S_DECAYS])
    decay[nd] = decay[nd - 1] + math.log(minuseta)
    nd += 1
    state[S_DECAYS] = nd
    state[S_ETA] = eta
    state[S_MINUSETA] = minuseta
    additional = F32(conf[C_WORDS]) * rho
    for j in range(k):
        digammas[j] = digamma(total[j] + additional, mode, fb, ib)
    last = -1
    for p in range(nnz):
        s = slots[order[p]]
        if s == last:
            continue
        last = s
        row = table[s]
        idx = int(-1.0 - t + F64(row[k]))
        dc = decay[nd - 2] - decay[nd + idx]
        dec = _fmin1(math.exp(dc))
        row[k] = F32(t)
        for j in range(k):
            row[j] *= dec
            row[k + 1 + j] = row[j] + rho
        expdigammify_2(row, k + 1, digammas, k, k + 1, mode, fb, ib)
    ng = scratch[0]
    og = scratch[1]
    el = scratch[2]
    eps = F32(conf[C_EPSILON])
    for d in range(b):
        lo = d * k
        for j in range(k):
            ng[j] = _ONE
            og[j] = _ZERO
        score = _ZERO
        dl = _ZERO
        while True:
            for j in range(k):
                v[lo + j] = ng[j]
            expdigammify(v, lo, k, lo, mode, fb, ib)
            for j in range(k):
                og[j] = ng[j]
                ng[j] = _ZERO
            score = _ZERO
            dl = _ZERO
            for e in range(indptr[d], indptr[d + 1]):
                row = table[slots[e]]
                x = xs[e]
                c_w = _ONE / _dot(row, k, v, lo)
                xc = c_w * x
                score += -x * math.log(c_w)
                for j in range(k):
                    ng[j] += xc * row[k + 1 + j]
                dl += x
            for j in range(k):
                ng[j] = ng[j] * v[lo + j] + alpha
            diff = _ZERO
            norm = _ZERO
            for j in range(k):
                diff += abs(og[j] - ng[j])
            for j in range(k):
                norm += ng[j]
            if not diff / norm > eps:
                break
        n_int = 0
        for e in range(indptr[d], indptr[d + 1]):
            n_int += int(xs[e])
        lengths[d] = n_int
        for j in range(k):
            gammas[d, j] = ng[j]
        score += _theta_kl(ng, el, k, alpha, mode, fb, ib)
        # (a document of no word: VW's 0/0, never counted; its γ is α)
        scores[d] = score / dl if dl != _ZERO else _ZERO
    return True


@jit
def end_batch(table, k, state, total, indptr, slots, xs, order, doc, v, scratch):
    """VW's update of ``learn_batch`` (step 4), after :func:`begin_batch`: the words'
    ``λ`` and the topic totals; nothing when the rate is 0 (``-t``)."""
    eta = F32(state[S_ETA])
    if eta == _ZERO:
        return
    minuseta = F32(state[S_MINUSETA])
    nnz = indptr[indptr.shape[0] - 1]
    new = scratch[0]
    for j in range(k):
        new[j] = _ZERO
    p = 0
    while p < nnz:
        s = slots[order[p]]
        q = p + 1
        while q < nnz and slots[order[q]] == s:
            q += 1
        row = table[s]
        for j in range(k):
            row[j] = minuseta * row[j]
        for r in range(p, q):
            e = order[r]
            lo = doc[e] * k
            c_w = eta * (_ONE / _dot(row, k, v, lo)) * xs[e]
            for j in range(k):
                nv = row[k + 1 + j] * v[lo + j] * c_w
                new[j] += nv
                row[j] += nv
        p = q
    for j in range(k):
        total[j] *= minuseta
        total[j] += new[j]


@jit
def learn_block(table, k, conf, state, decay, total, digammas, indptr, slots, xs, order, doc,
                stack, v, gammas, scores, lengths, done, scratch, fb, ib, batch):  # fmt: skip
    """:func:`begin_batch` and :func:`end_batch` over each run of ``batch`` documents of a
    block (its rows ``indptr``; ``gammas``, ``scores``, ``lengths`` per row; ``done`` per
    minibatch: whether it had a word).  The caller grows ``decay`` beforehand."""
    n = indptr.shape[0] - 1
    for m in range(n // batch):
        r0 = m * batch
        a = indptr[r0]
        ptr = indptr[r0 : r0 + batch + 1] - a
        e0 = indptr[r0 + batch]
        s = slots[a:e0]
        x = xs[a:e0]
        o = order[: e0 - a]
        dd = doc[: e0 - a]
        ok = begin_batch(table, k, conf, state, decay, total, digammas, ptr, s, x, o, dd,
                         stack, v, gammas[r0 : r0 + batch], scores[r0 : r0 + batch],
                         lengths[r0 : r0 + batch], scratch, fb, ib)  # fmt: skip
        done[m] = ok
        if ok:
            end_batch(table, k, state, total, ptr, s, x, o, dd, v, scratch)


# ---------------------------------------------------------------------- the table


def stride_shift(k: int) -> int:
    """VW's stride shift of ``--lda K``: ``ceil(log2(2K + 1))``."""
    return (2 * k).bit_length()


def fresh_table(bits: int, k: int, lda_d: float, initial_t: float = 0.0) -> np.ndarray:
    """VW's table at set-up (``save_load``'s initializer): each row's λ drawn as
    ``(1 - log(merand48 + 1e-6))·D/K/2^b·200`` from a chain seeded by the row's first index
    (each draw advances it, then one more), its time ``initial_t``, its ``u`` 0."""
    from streamlearn.learners.explore import _A, _C, _MANTISSA, _SHIFT, _ULP

    rows = 1 << bits
    ss = stride_shift(k)
    table = np.zeros((rows, 1 << ss), dtype=F32)
    scale = F32(F32(F32(lda_d) / F32(k)) / F32(rows)) * F32(200.0)
    s = np.arange(rows, dtype=U64) << U64(ss)
    with np.errstate(over="ignore"):
        for j in range(k):
            s = s * U64(_A) + U64(_C)
            r = ((s >> U64(_SHIFT)) & U64(_MANTISSA)).astype(F32) * F32(_ULP)
            table[:, j] = (-np.log(r.astype(F64) + 1e-6) + 1.0).astype(F32) * scale
            s = s + U64(1)
    table[:, k] = F32(initial_t)
    return table


def totals(table: np.ndarray, k: int) -> np.ndarray:
    """VW's first ``total_lambda``: each topic's λ summed over the rows in order (float32)."""
    out = np.zeros(k, dtype=F32)
    for j in range(k):
        out[j] = np.add.accumulate(table[:, j], dtype=F32)[-1]
    return out


@jit
def settle(table, k, t, decay, nd):
    """VW's ``end_examples``: every row's λ decayed by what it owes since its last touch."""
    last = decay[nd - 1]
    for r in range(table.shape[0]):
        row = table[r]
        dec = _fmin1(math.exp(last - decay[nd + int(-1.0 - t + F64(row[k]))]))
        for j in range(k):
            row[j] *= dec
