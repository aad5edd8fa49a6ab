"""Latent Dirichlet allocation by online variational Bayes (VW's ``--lda K``,
``reductions/lda_core.cc``; Hoffman, Blei & Bach, "Online Learning for Latent Dirichlet
Allocation", NIPS 2010, Algorithm 2).

A document is a line's features: word ``w`` (its slot) with count ``x``.  Row ``w`` of the
table (:func:`fresh_table`: K + 1 floats rounded up to 16 a row) holds:

* columns ``0..K-1``: ``λ_w`` less ``ρ`` (the topics' variational parameters of the word,
  VW's ``weights[w]``), decayed lazily;
* column ``K``: the minibatch count ``t`` at the row's last touch (the decay it owes).

VW's rows also hold ``exp(E[log β_w])`` of the current minibatch (its ``u_for_w``, columns
``K+1..2K`` of a row of 2K + 1 floats rounded up to a power of 2); here the minibatch's
``u`` live in the kernels' scratch (:func:`work`).

Per minibatch of ``B`` documents (:func:`begin_batch`, :func:`end_batch`, VW's
``learn_batch``):

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
(``--math-mode``, :mod:`streamlearn.learners.lda_math`): 0, VW's SIMD approximations of
digamma and exp (4 lanes where VW's arrays are 16-byte aligned, the scalar approximations
elsewhere), 1, accurate (digamma and lgamma in double rounded to float32, as boost promotes
them), 2, the scalar approximations everywhere; the minibatch's words sorted as
libstdc++'s ``std::sort`` orders equal slots (:func:`sort_slots`), which fixes the order of
the sums.

**Speed** (the same floats, computed in another order of *independent* operations):

* the minibatch's words' ``u`` are kept beside the table (:func:`work`), a column per topic
  while ``expdigammify_2`` runs (one approximation over all the words, which LLVM
  vectorizes: 60% of the kernel's time before), a row per word for the M step, and a row
  per topic of each document's entries for its E step; the table's rows hold λ and the
  time only, 64-byte aligned (one cache line up to 15 topics);
* the E step computes a document's ``u·v`` for all its words side by side (each in VW's
  order), sums ``γ``'s four topics a pass over the words in registers (each in VW's word
  order), and takes the score's ``log`` on its last pass only (VW recomputes the score
  on every pass and keeps the last); the M step reuses that last pass's ``1/(u·v)``,
  which VW recomputes from the same floats;
* a minibatch whose slots already rise (a document written in word order) is not sorted:
  std::sort's order of distinct keys is theirs; the sort compares keys kept beside the
  positions it moves (the same comparisons and moves as libstdc++'s);
* divisions are C's (:func:`~streamlearn.system.jit.fdiv`: no zero check), float bits move
  in registers (:func:`~streamlearn.learners.lda_math.f32_bits`), loops index from 0 (no
  negative-index fix-up): what kept LLVM from vectorizing.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.lda_math import (
    FAST,  # noqa: F401 - the math modes, re-exported
    PRECISE,  # noqa: F401
    SIMD,  # noqa: F401
    digamma,
    expdigammify,
    expdigammify_column,
    lanes,
    lgamma,
    powf,
)
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64
_ZERO = F32(0.0)
_ONE = F32(1.0)


# ---------------------------------------------------------------------- libstdc++'s std::sort
# (each comparison and move of libstdc++'s, on the positions ``order`` and beside them their
# keys ``sk``: the keys compared in place, not looked up through the positions)


@jit_inline
def _swap(order, sk, a, b):
    t = order[a]
    order[a] = order[b]
    order[b] = t
    u = sk[a]
    sk[a] = sk[b]
    sk[b] = u


@jit_inline
def _move(order, sk, to, frm):
    order[to] = order[frm]
    sk[to] = sk[frm]


@jit_inline
def _adjust_heap(order, sk, first, hole, n, value, vkey):
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if sk[first + child] < sk[first + child - 1]:
            child -= 1
        _move(order, sk, first + hole, first + child)
        hole = child
    if (n & 1) == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        _move(order, sk, first + hole, first + child - 1)
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and sk[first + parent] < vkey:
        _move(order, sk, first + hole, first + parent)
        hole = parent
        parent = (hole - 1) // 2
    order[first + hole] = value
    sk[first + hole] = vkey


@jit_inline
def _heap_sort(order, sk, first, last):
    n = last - first
    if n >= 2:
        parent = (n - 2) // 2
        while True:
            _adjust_heap(order, sk, first, parent, n, order[first + parent], sk[first + parent])
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        value = order[last]
        vkey = sk[last]
        _move(order, sk, last, first)
        _adjust_heap(order, sk, first, 0, last - first, value, vkey)


@jit
def sort_slots(key, order, stack, sk):
    """Sort ``order`` (positions into ``key``) by ``key`` as libstdc++'s ``std::sort``
    (introsort: median-of-three pivots, heap sort past 2·log2(n) levels, a final insertion
    sort), so that equal keys end in VW's order; ``stack``: int64 scratch of
    :data:`STACK`, ``sk``: of ``len(order)`` (the keys beside the positions)."""
    n = order.shape[0]
    if n < 2:
        return
    for i in range(n):
        sk[i] = key[order[i]]
    depth = 0
    m = n
    while m > 1:
        m >>= 1
        depth += 1
    _introsort(order, sk, 0, n, 2 * depth, stack)
    if n > 16:  # __final_insertion_sort
        _insertion(order, sk, 0, 16)
        for i in range(16, n):
            _linear_insert(order, sk, i)
    else:
        _insertion(order, sk, 0, n)


@jit_inline
def _partition(order, sk, first, last):
    mid = first + (last - first) // 2
    a, b, c = first + 1, mid, last - 1
    if sk[a] < sk[b]:
        if sk[b] < sk[c]:
            _swap(order, sk, first, b)
        elif sk[a] < sk[c]:
            _swap(order, sk, first, c)
        else:
            _swap(order, sk, first, a)
    elif sk[a] < sk[c]:
        _swap(order, sk, first, a)
    elif sk[b] < sk[c]:
        _swap(order, sk, first, c)
    else:
        _swap(order, sk, first, b)
    lo, hi = first + 1, last
    while True:
        while sk[lo] < sk[first]:
            lo += 1
        hi -= 1
        while sk[first] < sk[hi]:
            hi -= 1
        if not lo < hi:
            return lo
        _swap(order, sk, lo, hi)
        lo += 1


@jit_inline
def _introsort(order, sk, first, last, limit, stack):
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
            _heap_sort(order, sk, f, la)
            continue
        cut = _partition(order, sk, f, la)
        stack[3 * sp] = f  # (the loop's continuation: [f, cut) at lim - 1)
        stack[3 * sp + 1] = cut
        stack[3 * sp + 2] = lim - 1
        sp += 1
        stack[3 * sp] = cut  # (the call, made before the loop goes on: on top)
        stack[3 * sp + 1] = la
        stack[3 * sp + 2] = lim - 1
        sp += 1


@jit_inline
def _insertion(order, sk, first, last):
    for i in range(first + 1, last):
        if sk[i] < sk[first]:
            v = order[i]
            vk = sk[i]
            for j in range(i, first, -1):
                _move(order, sk, j, j - 1)
            order[first] = v
            sk[first] = vk
        else:
            _linear_insert(order, sk, i)


@jit_inline
def _linear_insert(order, sk, last):
    v = order[last]
    vk = sk[last]
    nxt = last - 1
    while vk < sk[nxt]:
        _move(order, sk, last, nxt)
        last = nxt
        nxt -= 1
    order[last] = v
    sk[last] = vk


# ---------------------------------------------------------------------- one minibatch

C_ALPHA, C_RHO, C_D, C_EPSILON, C_RATE, C_POWER_T, C_MODE, C_WORDS = range(8)
"""``conf``: the run's constants (float64)."""
S_T, S_DECAYS, S_ETA, S_MINUSETA = range(4)
"""``state``: the minibatches counted (VW's ``example_t``), the decay levels kept, and the
current minibatch's rates."""
STATE_SIZE = 4
STACK = 3 * (2 * 64 + 2)
"""The sort's stack (int64)."""


@jit_inline
def _sizes(k, nnz, width):
    """(ints, floats) of scratch for a minibatch of ``nnz`` entries whose longest document
    has ``width`` (:func:`work`)."""
    return 5 * nnz + STACK, (2 * k + 1) * nnz + 4 * k + (k + 2) * width


def work(k: int, nnz: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Scratch of :func:`begin_batch` and :func:`end_batch` for minibatches of at most
    ``nnz`` entries and documents of at most ``width`` (as :func:`_sizes`)."""
    return (np.zeros(5 * nnz + STACK, dtype=np.int64),
            np.zeros((2 * k + 1) * nnz + 4 * k + (k + 2) * width, dtype=F32))  # fmt: skip


@jit_inline
def _theta_kl(g, el, k, alpha, mode):
    """VW's ``theta_kl``: E_q[log p(θ)] - E_q[log q(θ)] of γ = ``g``."""
    gsum = _ZERO
    for j in range(k):
        el[j] = digamma(g[j], mode)
        gsum += g[j]
    dsum = digamma(gsum, mode)
    gsum = lgamma(gsum, mode)
    kl = -(F32(k) * lgamma(alpha, mode))
    kl += lgamma(alpha * F32(k), mode) - gsum
    for j in range(k):
        el[j] -= dsum
        kl += (alpha - g[j]) * el[j]
        kl += lgamma(g[j], mode)
    return kl


@jit_inline
def _fmin1(x):
    """``std::fmin(1.0f, x)`` (a NaN ``x``, as ``-inf - -inf`` of a rate of 1, gives 1)."""
    return x if x < _ONE else _ONE


@jit_inline
def _weigh(ng, xcs, ud, n, k):
    """``ng[j] = Σ_p xcs[p]·ud[j·n + p]``, each sum in VW's order (p rising) from 0: four
    topics a pass over the words, their sums in registers."""
    j = 0
    while j + 4 <= k:
        u0 = ud[j * n : (j + 1) * n]
        u1 = ud[(j + 1) * n : (j + 2) * n]
        u2 = ud[(j + 2) * n : (j + 3) * n]
        u3 = ud[(j + 3) * n : (j + 4) * n]
        a0 = _ZERO
        a1 = _ZERO
        a2 = _ZERO
        a3 = _ZERO
        for p in range(n):
            x = xcs[p]
            a0 += x * u0[p]
            a1 += x * u1[p]
            a2 += x * u2[p]
            a3 += x * u3[p]
        ng[j] = a0
        ng[j + 1] = a1
        ng[j + 2] = a2
        ng[j + 3] = a3
        j += 4
    while j < k:
        uj = ud[j * n : (j + 1) * n]
        a = _ZERO
        for p in range(n):
            a += xcs[p] * uj[p]
        ng[j] = a
        j += 1


@jit
def begin_batch(table, k, conf, state, decay, total, indptr, slots, xs, v, gammas, scores,
                lengths, iwork, fwork):  # fmt: skip
    """VW's ``learn_batch`` up to its update (steps 1-3 of the module's docstring) for the
    documents ``indptr``/``slots``/``xs``: each document's γ (``gammas``), score per unit
    of length (``scores``) and integer length (``lengths``); ``iwork``, ``fwork``: scratch
    (:func:`work`), which keeps for :func:`end_batch` the entries sorted by slot, each
    entry's document and its ``1/(u·v)``.  False for a minibatch of no word (VW's fast
    path: nothing changes)."""
    b = indptr.shape[0] - 1
    nnz = indptr[b]
    if nnz == 0:
        return False
    width = 0
    for d in range(b):
        width = max(width, indptr[d + 1] - indptr[d])
    order = iwork[:nnz]
    doc = iwork[nnz : 2 * nnz]
    wid = iwork[2 * nnz : 3 * nnz]
    words = iwork[3 * nnz : 4 * nnz]
    sk = iwork[4 * nnz : 5 * nnz]
    stack = iwork[5 * nnz : 5 * nnz + STACK]
    cw = fwork[:nnz]
    f = (k + 1) * nnz
    ut = fwork[nnz:f]
    ur = fwork[f : f + k * nnz].reshape((nnz, k))
    f += k * nnz
    digammas = fwork[f : f + k]
    ng = fwork[f + k : f + 2 * k]
    og = fwork[f + 2 * k : f + 3 * k]
    el = fwork[f + 3 * k : f + 4 * k]
    f += 4 * k
    ud = fwork[f : f + k * width]
    dots = fwork[f + k * width : f + (k + 1) * width]
    xcs = fwork[f + (k + 1) * width : f + (k + 2) * width]
    mode = int(conf[C_MODE])
    alpha = F32(conf[C_ALPHA])
    rho = F32(conf[C_RHO])
    state[S_T] += 1.0
    t = state[S_T]
    rising = True  # (slots already in strictly rising order: std::sort's order is theirs)
    for i in range(nnz):
        order[i] = i
        if i > 0 and slots[i] <= slots[i - 1]:
            rising = False
    if not rising:
        sort_slots(slots, order, stack, sk)
    d = 0
    for e in range(nnz):
        while indptr[d + 1] <= e:
            d += 1
        doc[e] = d
    eta = F32(conf[C_RATE]) * powf(F32(t), -F32(conf[C_POWER_T]), mode)
    minuseta = _ONE - eta
    eta *= fdiv(F32(conf[C_D]), F32(b))
    nd = int(state[S_DECAYS])
    decay[nd] = decay[nd - 1] + math.log(minuseta)
    nd += 1
    state[S_DECAYS] = nd
    state[S_ETA] = eta
    state[S_MINUSETA] = minuseta
    additional = F32(conf[C_WORDS]) * rho
    for j in range(k):
        digammas[j] = digamma(total[j] + additional, mode)
    # the minibatch's words (slot order), each entry's word
    nw = 0
    last = -1
    for p in range(nnz):
        e = order[p]
        s = slots[e]
        if s != last:
            last = s
            words[nw] = s
            nw += 1
        wid[e] = nw - 1
    # each word's owed decay settled, its u = λ + ρ into a column per topic (ut[j·nw + w])
    for w in range(nw):
        row = table[words[w]]
        idx = int(-1.0 - t + F64(row[k]))
        dc = decay[nd - 2] - decay[nd + idx]
        dec = _fmin1(math.exp(dc))
        row[k] = F32(t)
        for j in range(k):
            row[j] *= dec
            ut[j * nw + w] = row[j] + rho
    pre, lst = lanes(k, k + 1)
    for j in range(k):
        expdigammify_column(ut[j * nw : (j + 1) * nw], digammas[j], pre <= j < lst, mode)
    for j in range(k):  # (u a row per word again: the E and M steps' layout)
        tj = ut[j * nw : (j + 1) * nw]
        for w in range(nw):
            ur[w, j] = tj[w]
    eps = F32(conf[C_EPSILON])
    for d in range(b):
        e0 = indptr[d]
        n = indptr[d + 1] - e0
        lo = d * k
        dw = wid[e0 : e0 + n]
        for j in range(k):  # the document's u, a row per topic (ud[j·n + p])
            uj = ud[j * n : (j + 1) * n]
            tj = ut[j * nw : (j + 1) * nw]
            for p in range(n):
                uj[p] = tj[dw[p]]
        dcw = cw[e0 : e0 + n]
        dxs = xs[e0 : e0 + n]
        dl = _ZERO
        for p in range(n):
            dl += dxs[p]
        for j in range(k):
            ng[j] = _ONE
            og[j] = _ZERO
        while True:
            for j in range(k):
                v[lo + j] = ng[j]
            expdigammify(v, lo, k, lo, mode)
            for j in range(k):
                og[j] = ng[j]
                ng[j] = _ZERO
            for p in range(n):  # each u·v in VW's order, the words side by side
                dots[p] = _ZERO
            for j in range(k):
                vj = v[lo + j]
                uj = ud[j * n : (j + 1) * n]
                for p in range(n):
                    dots[p] += uj[p] * vj
            for p in range(n):
                c = fdiv(_ONE, dots[p])
                dcw[p] = c
                xcs[p] = c * dxs[p]
            _weigh(ng, xcs, ud, n, k)
            for j in range(k):
                ng[j] = ng[j] * v[lo + j] + alpha
            diff = _ZERO
            norm = _ZERO
            for j in range(k):
                diff += abs(og[j] - ng[j])
            for j in range(k):
                norm += ng[j]
            if not fdiv(diff, norm) > eps:
                break
        # (the score of the last pass only: VW's, which recomputes it every pass)
        score = _ZERO
        n_int = 0
        for p in range(n):
            x = xs[e0 + p]
            score += -x * math.log(cw[e0 + p])
            n_int += int(x)
        lengths[d] = n_int
        for j in range(k):
            gammas[d, j] = ng[j]
        score += _theta_kl(ng, el, k, alpha, mode)
        # (a document of no word: VW's 0/0, never counted; its γ is α)
        scores[d] = fdiv(score, dl) if dl != _ZERO else _ZERO
    return True


@jit
def end_batch(table, k, state, total, indptr, slots, xs, v, iwork, fwork):
    """VW's update of ``learn_batch`` (step 4), after :func:`begin_batch` (its scratch
    ``iwork``, ``fwork``): the words' ``λ`` and the topic totals; nothing when the rate is
    0 (``-t``)."""
    eta = F32(state[S_ETA])
    if eta == _ZERO:
        return
    minuseta = F32(state[S_MINUSETA])
    nnz = indptr[indptr.shape[0] - 1]
    order = iwork[:nnz]
    doc = iwork[nnz : 2 * nnz]
    wid = iwork[2 * nnz : 3 * nnz]
    cw = fwork[:nnz]
    f = (k + 1) * nnz
    ur = fwork[f : f + k * nnz].reshape((nnz, k))
    f += k * nnz
    new = fwork[f : f + k]
    for j in range(k):
        new[j] = _ZERO
    p = 0
    while p < nnz:
        s = slots[order[p]]
        q = p + 1
        while q < nnz and slots[order[q]] == s:
            q += 1
        row = table[s]
        u = ur[wid[order[p]]]
        if q == p + 1:  # (one entry: its decay and its update in one pass, each λ rounded
            e = order[p]  # as VW's two passes round it)
            vd = v[doc[e] * k : (doc[e] + 1) * k]
            c_w = eta * cw[e] * xs[e]
            for j in range(k):
                nv = u[j] * vd[j] * c_w
                new[j] += nv
                row[j] = minuseta * row[j] + nv
            p = q
            continue
        for j in range(k):
            row[j] = minuseta * row[j]
        for r in range(p, q):
            e = order[r]
            vd = v[doc[e] * k : (doc[e] + 1) * k]
            c_w = eta * cw[e] * xs[e]  # (cw: 1/(u·v) of the E step's last pass, VW's find_cw)
            for j in range(k):
                nv = u[j] * vd[j] * c_w
                new[j] += nv
                row[j] += nv
        p = q
    for j in range(k):
        total[j] *= minuseta
        total[j] += new[j]


@jit
def learn_block(table, k, conf, state, decay, total, indptr, slots, xs, v, gammas, scores,
                lengths, done, batch):  # fmt: skip
    """:func:`begin_batch` and :func:`end_batch` over each run of ``batch`` documents of a
    block (its rows ``indptr``; ``gammas``, ``scores``, ``lengths`` per row; ``done`` per
    minibatch: whether it had a word).  The caller grows ``decay`` beforehand."""
    n = indptr.shape[0] - 1
    nb = n // batch
    most = 0
    width = 0
    for m in range(nb):
        most = max(most, indptr[(m + 1) * batch] - indptr[m * batch])
    for r in range(nb * batch):
        width = max(width, indptr[r + 1] - indptr[r])
    ni, nf = _sizes(k, most, width)
    iwork = np.empty(ni, dtype=np.int64)
    fwork = np.empty(nf, dtype=np.float32)
    ptr = np.empty(batch + 1, dtype=np.int64)
    for m in range(nb):
        r0 = m * batch
        a = indptr[r0]
        e1 = indptr[r0 + batch]
        for i in range(batch + 1):
            ptr[i] = indptr[r0 + i] - a
        s = slots[a:e1]
        x = xs[a:e1]
        ok = begin_batch(table, k, conf, state, decay, total, ptr, s, x, v,
                         gammas[r0 : r0 + batch], scores[r0 : r0 + batch],
                         lengths[r0 : r0 + batch], iwork, fwork)  # fmt: skip
        done[m] = ok
        if ok:
            end_batch(table, k, state, total, ptr, s, x, v, iwork, fwork)


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
    table = _aligned_table(rows, k)
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


def _aligned_table(rows: int, k: int) -> np.ndarray:
    """Zeros for ``rows`` rows of ``k`` λ and a time, each row a whole number of 64-byte
    cache lines from a 64-byte boundary (one line up to 15 topics: VW's rows also hold the
    minibatch's ``u``, which the kernels keep beside the table)."""
    width = (k + 1 + 15) // 16 * 16
    flat = np.zeros(rows * width + 16, dtype=F32)
    skip = (-flat.ctypes.data % 64) // 4
    return flat[skip : skip + rows * width].reshape(rows, width)


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
