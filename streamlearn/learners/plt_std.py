"""libstdc++'s containers as VW's ``--plt`` uses them (:mod:`streamlearn.learners.plt`):
``std::unordered_set<uint32_t>`` (its iteration order: a singly linked list of prime-count
buckets, grown along 13, 29, 59, ... and kept when the set is cleared) and
``std::push_heap``/``std::pop_heap`` on a vector, written from libstdc++'s ``hashtable.h``,
``hashtable_c++0x.cc`` and ``stl_heap.h``.  A set is its state ``st`` (head, size, bucket
count, next resize), its nodes' keys and links, its buckets (:data:`EMPTY`, :data:`BEFORE`
or the node before the bucket's first) and a membership array.
"""

from __future__ import annotations

import numpy as np

from streamlearn.system.jit import jit_inline

BUCKETS = np.array([2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71,
                    73, 79, 83, 89, 97, 103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193,
                    199, 211, 227, 241, 257, 277, 293, 313, 337, 359, 383, 409, 439, 467, 503,
                    541, 577, 619, 661, 709, 761, 823, 887, 953, 1031, 1109, 1193, 1289, 1381,
                    1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549, 2753, 2971, 3209, 3469,
                    3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783,
                    9497, 10273, 11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183,
                    20753, 22447, 24281, 26267, 28411, 30727, 33223, 35933, 38873, 42043,
                    45481], dtype=np.int64)  # fmt: skip
"""libstdc++'s ``__prime_list`` (its bucket counts), as far as :data:`MAX_NODES` needs."""
FAST = np.array([2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13], dtype=np.int64)
"""libstdc++'s ``__fast_bkt``."""
MAX_BUCKETS = 45481
EMPTY = -2
BEFORE = -3  # a bucket whose first node follows the list's head (``_M_before_begin``)


# ---------------------------------------------------------------- libstdc++'s sets


@jit_inline
def _next_bkt(n, st):
    """``_Prime_rehash_policy::_M_next_bkt``: the bucket count for ``n`` (its next resize
    in ``st[3]``)."""
    if n < 14:
        st[3] = FAST[n]
        return FAST[n]
    at = 6
    last = BUCKETS.shape[0] - 1
    while at < last and BUCKETS[at] < n:
        at += 1
    st[3] = BUCKETS[at]
    return BUCKETS[at]


@jit_inline
def _nxt(st, nxt, p):
    return st[0] if p == BEFORE else nxt[p]


@jit_inline
def _set_nxt(st, nxt, p, v):
    if p == BEFORE:
        st[0] = v
    else:
        nxt[p] = v


@jit_inline
def _rehash(st, keys, nxt, buckets, nb):
    """``_M_rehash_aux`` (unique keys): the list relinked into ``nb`` buckets."""
    for b in range(nb):
        buckets[b] = EMPTY
    p = st[0]
    st[0] = -1
    bbegin = 0
    while p != -1:
        nx = nxt[p]
        b = keys[p] % nb
        if buckets[b] == EMPTY:
            nxt[p] = st[0]
            st[0] = p
            buckets[b] = BEFORE
            if nxt[p] != -1:
                buckets[bbegin] = p
            bbegin = b
        else:
            prev = buckets[b]
            nxt[p] = _nxt(st, nxt, prev)
            _set_nxt(st, nxt, prev, p)
        p = nx
    st[2] = nb


@jit_inline
def insert(st, keys, nxt, buckets, inset, key):
    """``std::unordered_set<uint32_t>::insert`` (libstdc++): ``st`` is (head, size,
    buckets, next resize)."""
    if inset[key]:
        return
    n = st[1]
    if n + 1 > st[3]:
        least = max(n + 1, 0 if st[3] != 0 else 11)
        if least >= st[2]:
            _rehash(st, keys, nxt, buckets, _next_bkt(max(least + 1, st[2] * 2), st))
        else:
            st[3] = st[2]
    keys[n] = key
    inset[key] = True
    b = key % st[2]
    if buckets[b] != EMPTY:
        prev = buckets[b]
        nxt[n] = _nxt(st, nxt, prev)
        _set_nxt(st, nxt, prev, n)
    else:
        nxt[n] = st[0]
        st[0] = n
        if nxt[n] != -1:
            buckets[keys[nxt[n]] % st[2]] = n
        buckets[b] = BEFORE
    st[1] = n + 1


@jit_inline
def clear(st, keys, buckets, inset):
    for p in range(st[1]):
        inset[keys[p]] = False
    for b in range(st[2]):
        buckets[b] = EMPTY
    st[0] = -1
    st[1] = 0


@jit_inline
def listed(st, keys, nxt, out):
    """The set's keys in its iteration order, into ``out``; their number."""
    p = st[0]
    m = 0
    while p != -1:
        out[m] = keys[p]
        m += 1
        p = nxt[p]
    return m


# ---------------------------------------------------------------- std::push_heap, pop_heap


@jit_inline
def heap_push(hn, hp, size, n, p):
    """``std::push_heap`` of (n, p) onto the heap of ``size`` (a max-heap on p)."""
    hole = size
    parent = (hole - 1) // 2
    while hole > 0 and hp[parent] < p:
        hn[hole] = hn[parent]
        hp[hole] = hp[parent]
        hole = parent
        parent = (hole - 1) // 2
    hn[hole] = n
    hp[hole] = p
    return size + 1


@jit_inline
def heap_pop(hn, hp, size):
    """``std::pop_heap`` then ``pop_back``: the top (n, p) and the new size."""
    top_n = hn[0]
    top_p = hp[0]
    last = size - 1
    if size > 1:
        vn = hn[last]
        vp = hp[last]
        hn[last] = hn[0]
        hp[last] = hp[0]
        length = last
        hole = 0
        second = 0
        while second < (length - 1) // 2:
            second = 2 * (second + 1)
            if hp[second] < hp[second - 1]:
                second -= 1
            hn[hole] = hn[second]
            hp[hole] = hp[second]
            hole = second
        if (length & 1) == 0 and second == (length - 2) // 2:
            second = 2 * (second + 1)
            hn[hole] = hn[second - 1]
            hp[hole] = hp[second - 1]
            hole = second - 1
        parent = (hole - 1) // 2
        while hole > 0 and hp[parent] < vp:
            hn[hole] = hn[parent]
            hp[hole] = hp[parent]
            hole = parent
            parent = (hole - 1) // 2
        hn[hole] = vn
        hp[hole] = vp
    return top_n, top_p, last
