"""The kernels that cross features (:mod:`streamlearn.io.interactions` says VW's rules).

Two ways, one arithmetic: :func:`cross_row`, inlined in the VW parse kernel, appends a
row's crosses right after its own features while the block's arrays have room (no
wildcards, filters or n-grams: :func:`fuses`); :func:`expand_batch`, one numba call per
parsed batch, copies each row into new arrays and appends its crosses (every case).
:func:`example_terms` lists one example's interactions once its wildcards are expanded
over the namespaces it has (VW's rules for ``:``).  The constants are the kernels'
bounds; :mod:`~streamlearn.io.interactions` compiles the options into the arrays they read.
"""

from __future__ import annotations

import numpy as np

from streamlearn.io.batch import TOO_MANY_CROSSES
from streamlearn.system.jit import jit, jit_inline, jit_noalloc, load_u64

FNV_PRIME = np.uint64(16777619)
_M32 = np.uint64(0xFFFFFFFF)
_EVERY_BYTE = np.uint64(0x0101010101010101)
WILDCARD = 58
"""``:``, VW's wildcard, with its own byte: VW sorts interactions with it as a
character (``--cubic a::`` becomes ``::a`` before it is expanded)."""
MAX_TERMS = 16
CCB_SLOT_NS = 139
"""VW's namespace of a CCB slot's default-namespace features (``CCB_SLOT_NAMESPACE``)."""
CCB_ID_NS = 140
"""VW's namespace of a CCB slot's index feature (``CCB_ID_NAMESPACE``)."""
CROSS_BUDGET = 1 << 20
"""Entries (features and crosses, 12 bytes each) of one parsed batch before it is
cut in two: 12.6 MB.  A block of lines with many crosses each is learned as several
batches, so a batch's memory stays bounded whatever the crosses per line (and
batches of this size still take the learner milliseconds each: the batch's
Python around them is noise)."""
_UNBOUNDED = (1 << 63) - 1
"""No bound (int64's largest).  Not ``np.iinfo(np.int64).max`` in a kernel: numba's
``iinfo`` lives in ``numba.np.arraymath``, whose import at the kernel's load imports
``scipy.linalg`` where SciPy is installed (0.25 s of a run's start-up)."""


@jit
def _sort_small(t: np.ndarray, m: int) -> None:
    for a in range(1, m):
        v = t[a]
        b = a - 1
        while b >= 0 and t[b] > v:
            t[b + 1] = t[b]
            b -= 1
        t[b + 1] = v


@jit
def left_sorted(t: np.ndarray, m: int, key: np.ndarray) -> bool:
    """VW's ``must_beleft_sorted``: ``t[:m]`` holds a repeated namespace and a different
    one (``key`` is scratch)."""
    for a in range(m):
        key[a] = t[a]
    _sort_small(key, m)
    pair = False
    different = False
    for a in range(m - 1):
        if key[a] == key[a + 1]:
            if different:
                return True
            pair = True
        else:
            if pair:
                return True
            different = True
    return False


@jit
def _combinations(n: int, k: int) -> int:
    """Multisets of size ``k`` from ``n`` namespaces (VW's combinations with repetition)."""
    if n == 0:
        return 0
    c = 1
    for a in range(k):
        c = c * (n + a) // (a + 1)
    return c


@jit
def terms_room(terms, lengths, npresent: int) -> int:
    """Rows :func:`example_terms` may fill for an example with ``npresent`` namespaces."""
    room = 0
    for i in range(terms.shape[0]):
        nw = 0
        for a in range(lengths[i]):
            if terms[i, a] == WILDCARD:
                nw += 1
        if nw == 2:  # as many as the ordered pairs (every one without dedupe)
            room += npresent * npresent
        else:
            room += 1 if nw == 0 else _combinations(npresent, nw)
    return room


@jit
def example_terms(terms, lengths, present, npresent, out, out_len, dedupe=True):
    """The interactions of one example, as VW compiles them.

    Each wildcard template is expanded over the example's namespaces (in byte
    order): two wildcards as the pairs (i <= j), any other number as VW's
    combinations with repetition (index tuples that never increase), the
    fixed namespaces kept in their places.  Then the whole list is sorted
    (shorter first, bytewise), duplicates equal up to order are dropped (the
    first kept), and an interaction with a repeated and a different namespace
    is sorted.  Returns how many rows of ``out`` hold the result.

    Without ``dedupe`` (``--leave_duplicate_interactions``) nothing is dropped
    and two wildcards cross every ordered pair (VW's
    ``expand_quadratics_wildcard_interactions``).
    """
    n = 0
    idx = np.zeros(MAX_TERMS + 1, dtype=np.int64)
    vals = np.empty(MAX_TERMS, dtype=np.int64)
    sp = np.empty(npresent, dtype=np.int64)
    for a in range(npresent):  # a loop: slice assignment loads numba's string code with the kernel
        sp[a] = present[a]
    _sort_small(sp, npresent)
    for i in range(terms.shape[0]):
        m = lengths[i]
        nw = 0
        for a in range(m):
            if terms[i, a] == WILDCARD:
                nw += 1
        if nw == 0:
            for a in range(m):
                out[n, a] = terms[i, a]
            out_len[n] = m
            n += 1
            continue
        if npresent == 0:
            continue
        if nw == 2:
            for a in range(npresent):
                for b in range(0 if not dedupe else a, npresent):
                    vals[0] = sp[a]
                    vals[1] = sp[b]
                    n = _fill(out, out_len, n, terms, i, m, vals)
            continue
        for a in range(nw + 1):
            idx[a] = 0
        last = npresent - 1
        while True:
            for a in range(nw):
                if idx[a] > last:
                    idx[a + 1] += 1
                    for b in range(a, -1, -1):
                        idx[b] = idx[a + 1]
            if idx[nw] > 0:
                break
            for a in range(nw):
                vals[a] = sp[idx[a]]
            n = _fill(out, out_len, n, terms, i, m, vals)
            idx[0] += 1
    return _sorted_unique(out, out_len, n, dedupe)


@jit
def _row_less(a: np.ndarray, la: int, b: np.ndarray, lb: int) -> bool:
    """VW's order of two interactions (rows of namespace bytes): shorter first, then
    bytewise."""
    if la != lb:
        return la < lb
    for k in range(la):
        if a[k] != b[k]:
            return a[k] < b[k]
    return False


@jit
def _argsort_rows(rows: np.ndarray, lens: np.ndarray, n: int) -> np.ndarray:
    """A stable order of ``rows[:n]`` by :func:`_row_less` (a bottom-up merge sort: any
    number of terms, O(n log n))."""
    order = np.arange(n)
    tmp = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _row_less(rows[order[j]], lens[order[j]], rows[order[i]], lens[order[i]]):
                    tmp[k] = order[j]
                    j += 1
                else:
                    tmp[k] = order[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = order[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = order[j]
                j += 1
                k += 1
        order, tmp = tmp, order
        width *= 2
    return order


@jit
def _sorted_unique(out, out_len, n, dedupe):
    """Sort ``out[:n]`` in VW's order (stable), drop rows equal up to order to an earlier
    one (with ``dedupe``), sort the rows holding a repeated and a different namespace;
    O(n log n).  Returns the rows kept."""
    order = _argsort_rows(out, out_len, n)
    rows = out[:n].copy()
    lens = out_len[:n].copy()
    scratch = np.empty(MAX_TERMS, dtype=np.int64)
    keep = np.ones(n, dtype=np.bool_)
    if dedupe:  # the canonical (sorted) form of each row, in sorted-list order
        canon = np.empty((n, MAX_TERMS), dtype=np.int64)
        canon_len = np.empty(n, dtype=np.int64)
        for j in range(n):
            r = order[j]
            for a in range(MAX_TERMS):
                canon[j, a] = rows[r, a]
            canon_len[j] = lens[r]
            _sort_small(canon[j], lens[r])
        by_canon = _argsort_rows(canon, canon_len, n)  # stable: a group's first comes first
        for j in range(1, n):
            a, b = by_canon[j], by_canon[j - 1]
            if not _row_less(canon[b], canon_len[b], canon[a], canon_len[a]):
                keep[a] = False
    kept = 0
    for j in range(n):
        if not keep[j]:
            continue
        r = order[j]
        m = lens[r]
        for a in range(MAX_TERMS):
            out[kept, a] = rows[r, a]
        out_len[kept] = m
        if left_sorted(out[kept], m, scratch):
            _sort_small(out[kept], m)
        kept += 1
    return kept


@jit
def _fill(out, out_len, n, terms, i, m, vals) -> int:
    """Row ``n`` of ``out``: template ``i`` with its wildcards replaced by ``vals`` in order."""
    w = 0
    for a in range(m):
        if terms[i, a] == WILDCARD:
            out[n, a] = vals[w]
            w += 1
        else:
            out[n, a] = terms[i, a]
    out_len[n] = m
    return n + 1


@jit_inline
def _term_count(bucket_cnt, terms, t: int, m: int, mode: int) -> float:
    """How many crosses term ``t`` of ``m`` namespaces makes for an example whose namespace
    c has ``bucket_cnt[c]`` features: a run of L equal namespaces with n features
    crosses their multisets, C(n + L - 1, L), or with permutations (``mode & 2``) their
    tuples, n^L.  A float: it can pass int64 (the caller compares it with a cap first)."""
    if (m == 2 and terms[t, 0] != terms[t, 1]) or mode & 2:  # n1 n2 ...
        total = 1.0
        for a in range(m):
            total *= bucket_cnt[terms[t, a]]
        return total
    total = 1.0
    a = 0
    while a < m:
        c = terms[t, a]
        run = 1
        while a + run < m and terms[t, a + run] == c:
            run += 1
        n = bucket_cnt[c]
        if n == 0:
            return 0.0
        x = 1.0
        for j in range(run):
            x = x * (n + j) / (j + 1)
        total *= x
        a += run
    return total


@jit_inline
def _run_end(ns, q, hi):
    """The end of the run of features of namespace ``ns[q]`` that starts at ``q`` (before
    ``hi``), compared 8 namespace bytes at a time."""
    c = ns[q]
    q += 1
    word = np.uint64(c) * _EVERY_BYTE
    while q + 8 <= hi and load_u64(ns, q) == word:
        q += 8
    while q < hi and ns[q] == c:
        q += 1
    return q


@jit_inline
def _runs(indptr, ns, r, drop, used, counts, runs):
    """Row ``r``'s runs of features of one namespace, for the namespaces ``used`` by the
    interactions (dropped ones never): run ``a`` is namespace ``runs[0, a]``, entries
    ``runs[1, a]..runs[2, a]``.  Counts each namespace's features (``counts[0]``) and
    lists the namespaces with counts (``counts[2]``) and those of them a wildcard
    stands for (``counts[3]``: VW's ``is_interaction_ns``, ``' '`` to ``'~'`` and the
    CCB slot's 139; not the constant, nor the CCB slot index's 140).  Returns
    ``(nruns, nnamed, npresent)``; the caller zeroes the counts.  A line's namespaces
    come in runs (``|u ... |i ...``), so the scan compares neighbours and looks a
    namespace up only where a run starts."""
    nruns = 0
    nnamed = 0
    npresent = 0
    q = indptr[r]
    hi = indptr[r + 1]
    while q < hi:
        c = ns[q]
        start = q
        q = _run_end(ns, q, hi)
        if not used[c] or drop[c]:
            continue
        if counts[0, c] == 0:
            counts[2, nnamed] = c
            nnamed += 1
            if (c >= 32 and c <= 126) or c == CCB_SLOT_NS:  # VW's is_interaction_ns
                counts[3, npresent] = c
                npresent += 1
        counts[0, c] += q - start
        runs[0, nruns] = c
        runs[1, nruns] = start
        runs[2, nruns] = q
        nruns += 1
    return nruns, nnamed, npresent


def used_namespaces(terms: np.ndarray, lengths: np.ndarray, wild: bool) -> np.ndarray:
    """The namespaces the interactions read: every one with a wildcard, else those named."""
    used = np.zeros(257, dtype=np.bool_)
    if wild:
        used[:] = True
    for i in range(terms.shape[0]):
        used[terms[i, : lengths[i]]] = True
    return used


def has_wildcard(terms: np.ndarray, lengths: np.ndarray) -> bool:
    """Whether an interaction has a wildcard."""
    return bool(((terms == WILDCARD) & (np.arange(terms.shape[1]) < lengths[:, None])).any())


def has_filters(drop: np.ndarray, drop_linear: np.ndarray) -> bool:
    """Whether any namespace is dropped (``--ignore``, ``--keep``, ``--ignore_linear``)."""
    return bool(drop.any() or drop_linear.any())


def expand_batch(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, ns: np.ndarray,
                 mask: np.uint64, terms: np.ndarray, lengths: np.ndarray, drop: np.ndarray,
                 drop_linear: np.ndarray, dedupe: bool, f32: int, status: np.ndarray, lo: int,
                 budget: int, max_crosses: int, buf_idx: np.ndarray, buf_val: np.ndarray,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:  # fmt: skip
    """CSR arrays for rows ``lo, lo + 1, ...``: each row's own features (filtered),
    then its crosses; returns ``(indptr, indices, values, end)``, rows ``lo..end-1``.

    ``indices`` and ``values`` are the first entries of ``buf_idx`` and
    ``buf_val`` (uint32, float64) when they have room (pass buffers of at least
    ``budget`` entries, which a caller can reuse once the batch is gone), else
    new arrays.

    ``mask`` is ``2**bits - 1`` (uint64).  Rows keep their order; the feature
    order within a row is: the example's features in line order (the constant
    last), then the interactions in VW's order.  ``f32`` is a cross mode
    (:attr:`Interactions.cross_mode`: bit 2 for --permutations); with bit 1 a cross's value
    is the product of the values rounded to float32, in float32, term by term:
    what VW's single-precision learners multiply (the float32 learners then
    see VW's very values).

    Memory is bounded: a row that would make more than ``max_crosses`` crosses
    (or whose wildcards expand to more interactions than that) gets no features
    and ``status`` :data:`TOO_MANY_CROSSES` (the caller makes it a malformed
    row), and the rows stop before the one that would take the output past
    ``budget`` entries (never before row ``lo``'s), so the arrays hold at most
    ``max(budget, own features + max_crosses)`` entries; the caller calls again
    from ``end``.  Time is linear in the features and crosses written: each row
    is counted from its namespaces' runs, then written, in one pass over the
    rows when the buffers have room; else a first pass counts them all and the
    second writes into arrays of that size (arrays that never move: a loop that
    may reallocate its output runs ~10x slower under numba, whose array loads it
    can no longer hoist).

    The passes are kernels over arrays made here: without wildcards
    (:func:`_plain_rows`) they allocate nothing, so loading them does not load
    numba's array module (60 ms of a crossed run's start-up; a cached kernel's
    load imports the modules its compiled helpers came from).
    """
    n = indptr.shape[0] - 1
    wild = has_wildcard(terms, lengths)
    used = used_namespaces(terms, lengths, wild)
    widest = max(1, int(np.diff(indptr[lo:]).max())) if n > lo else 1
    scratch = (
        np.zeros((4, 257), dtype=np.int64),  # counts
        np.empty((3, widest), dtype=np.int64),  # runs
        np.empty(widest, dtype=np.uint64),  # the row's features, bucketed by namespace
        np.empty(widest, dtype=np.float64),
        np.zeros((3, MAX_TERMS), dtype=np.int64),  # odometer
        np.zeros(MAX_TERMS, dtype=np.uint64),
        np.zeros(MAX_TERMS, dtype=np.float64),
    )
    filters = has_filters(drop, drop_linear)
    ptr = np.empty(n - lo + 1, dtype=np.int64)
    ptr[0] = 0

    def rows(write: bool, out_idx: np.ndarray, out_val: np.ndarray) -> tuple[int, int]:
        cap = out_idx.shape[0] if write else _UNBOUNDED
        limits = np.array([lo, budget, cap, max_crosses, int(mask), write, f32, filters],
                          dtype=np.int64)  # fmt: skip
        pass_ = _wild_rows if wild else _plain_rows
        return pass_(indptr, indices, values, ns, terms, lengths, dedupe, drop, drop_linear, used,
                     status, limits, scratch, ptr, out_idx, out_val)  # fmt: skip

    if budget <= buf_idx.shape[0]:
        end, k = rows(True, buf_idx, buf_val)
        if k >= 0:
            return ptr[: end - lo + 1], buf_idx[:k], buf_val[:k], end
    # row lo's entries pass the buffers, or none given: size new arrays by a first pass
    end, total = rows(False, buf_idx[:0], buf_val[:0])
    out_idx = np.empty(total, dtype=np.uint32)
    out_val = np.empty(total, dtype=np.float64)
    end, _ = rows(True, out_idx, out_val)
    return ptr[: end - lo + 1], out_idx, out_val, end


@jit
def _wild_rows(indptr, indices, values, ns, terms, lengths, dedupe, drop, drop_linear, used,
               status, limits, scratch, ptr, out_idx, out_val):  # fmt: skip
    """A pass of :func:`expand_batch` over rows ``lo, lo + 1, ...`` (``limits``: ``lo``,
    budget, room, max crosses, mask, write, f32, filters) when the interactions have
    wildcards, whose interactions depend on each row's namespaces: listed row by row.
    Returns ``(end, k)``: the end row and the entries, written into ``out_idx`` and
    ``out_val`` if asked (then ``k`` is -1 if row ``lo`` alone passes them), else only
    counted; ``ptr[1:]`` gets the rows' ends."""
    counts, runs = scratch[0], scratch[1]
    lo, max_crosses = limits[0], limits[3]
    n = indptr.shape[0] - 1
    ex_terms = np.empty((1, MAX_TERMS), dtype=np.int64)
    ex_len = np.empty(1, dtype=np.int64)
    k = 0
    for r in range(lo, n):
        nruns, nnamed, npresent = _runs(indptr, ns, r, drop, used, counts, runs)
        need = terms_room(terms, lengths, npresent)
        nt = -1  # more interactions than crosses allowed
        if need <= max_crosses:
            if need > ex_terms.shape[0]:
                ex_terms = np.empty((need, MAX_TERMS), dtype=np.int64)
                ex_len = np.empty(need, dtype=np.int64)
            nt = example_terms(terms, lengths, counts[3], npresent, ex_terms, ex_len, dedupe)
        k = _place(r, k, nruns, nnamed, indptr, indices, values, ns, ex_terms, ex_len, nt, drop,
                   drop_linear, status, limits, scratch, out_idx, out_val)  # fmt: skip
        if k < 0:
            return r, (-1 if r == lo else -k - 1)
        ptr[r - lo + 1] = k
    return n, k


@jit_noalloc
def _plain_rows(indptr, indices, values, ns, terms, lengths, dedupe, drop, drop_linear, used,
                status, limits, scratch, ptr, out_idx, out_val):  # fmt: skip
    """:func:`_wild_rows` without wildcards, with no reference counting (``jit_noalloc``):
    the rows' loop calls a handful of helpers per row, each with a dozen arrays, whose
    counted references cost as much as the copying for short lines."""
    counts, runs = scratch[0], scratch[1]
    lo = limits[0]
    nt = terms.shape[0]
    n = indptr.shape[0] - 1
    k = 0
    for r in range(lo, n):
        nruns, nnamed, npresent = 0, 0, 0
        if nt > 0:
            nruns, nnamed, npresent = _runs(indptr, ns, r, drop, used, counts, runs)
        k = _place(r, k, nruns, nnamed, indptr, indices, values, ns, terms, lengths, nt, drop,
                   drop_linear, status, limits, scratch, out_idx, out_val)  # fmt: skip
        if k < 0:
            k = -k - 1
            return r, (-1 if r == lo else k)
        ptr[r - lo + 1] = k
    return n, k


@jit_inline
def _place(r, k, nruns, nnamed, indptr, indices, values, ns, ex_terms, ex_len, nt, drop,
           drop_linear, status, limits, scratch, out_idx, out_val):  # fmt: skip
    """Row ``r``, its runs listed (:func:`_runs`) and its ``nt`` interactions in
    ``ex_terms`` (-1: too many), at entry ``k``: counted, and written if asked and it fits
    (``limits`` of :func:`_wild_rows`).  Returns the next k, or ``-k - 1`` to stop before the
    row (past the budget, or row ``lo`` past the output's room).  Zeroes the counts."""
    counts, runs, bidx, bval, odometer, acc, val = scratch
    lo, budget, cap, max_crosses = limits[0], limits[1], limits[2], limits[3]
    mask = np.uint64(limits[4])
    write = limits[5] != 0
    mode = limits[6]
    filters = limits[7] != 0
    rlo = indptr[r]
    rhi = indptr[r + 1]
    own = rhi - rlo
    if filters:
        for q in range(rlo, rhi):
            c = ns[q]
            if drop[c] or drop_linear[c]:
                own -= 1
    crosses = np.inf if nt < 0 else 0.0
    for t in range(nt):
        crosses += _term_count(counts[0], ex_terms, t, ex_len[t], mode)
    out = k
    if crosses > max_crosses:
        status[r] = TOO_MANY_CROSSES
    elif k + own + crosses > budget and r > lo:
        out = -k - 1
    elif k + own + crosses > cap:  # row lo alone
        out = -k - 1
    elif write:
        out = _copy_own(indices, values, ns, rlo, rhi, drop, drop_linear, filters, out_idx,
                        out_val, k)  # fmt: skip
        if nnamed == nruns:  # one run a namespace: crossed where they are
            for a in range(nruns):
                counts[1, runs[0, a]] = runs[1, a]
            for t in range(nt):
                out = _cross(ex_terms, ex_len[t], t, counts, indices, values, mask, mode,
                             odometer, acc, val, out_idx, out_val, out)  # fmt: skip
        elif nnamed:
            _gather(indices, values, counts, runs, nnamed, nruns, bidx, bval)
            for t in range(nt):
                out = _cross(ex_terms, ex_len[t], t, counts, bidx, bval, mask, mode, odometer,
                             acc, val, out_idx, out_val, out)  # fmt: skip
    else:
        out = k + own + np.int64(crosses)
    named = counts[2]
    for a in range(nnamed):
        counts[0, named[a]] = 0
    return out


@jit_inline
def _copy_own(indices, values, ns, rlo, rhi, drop, drop_linear, filters, out_idx, out_val, k):
    """Row ``rlo..rhi``'s own features (those not dropped) at ``out_*[k:]``; the next k."""
    if filters:
        for q in range(rlo, rhi):
            c = ns[q]
            if not drop[c] and not drop_linear[c]:
                out_idx[k] = indices[q]
                out_val[k] = values[q]
                k += 1
        return k
    # unsigned positions: no negative-index wrap to check, so the copy vectorises
    at = np.uint64(k)
    for q in range(np.uint64(rlo), np.uint64(rhi)):
        out_idx[at] = indices[q]
        out_val[at] = values[q]
        at += np.uint64(1)
    return k + (rhi - rlo)


@jit_inline
def _gather(indices, values, counts, runs, nnamed, nruns, bidx, bval):
    """The runs' features into ``bidx``/``bval`` by namespace, each in line order: namespace
    c's ``counts[0, c]`` from ``counts[1, c]`` on, in the order of ``counts[2]``."""
    start = 0
    for a in range(nnamed):
        c = counts[2, a]
        counts[1, c] = start
        start += counts[0, c]
    for a in range(nruns):
        c = runs[0, a]
        at = counts[1, c]
        for q in range(runs[1, a], runs[2, a]):
            bidx[at] = indices[q]
            bval[at] = values[q]
            at += 1
        counts[1, c] = at
    for a in range(nnamed):  # back to each bucket's start
        c = counts[2, a]
        counts[1, c] -= counts[0, c]


@jit_inline
def _cross(ex_terms, m, t, counts, bidx, bval, mask, mode, odometer, acc, val, out_idx, out_val,
           k):  # fmt: skip
    """Interaction ``t`` (``m`` namespaces) of a row whose namespace c has ``counts[0, c]``
    features from ``bidx[counts[1, c]]``/``bval[counts[1, c]]`` on, in VW's order, at
    ``out_*[k:]``; the next k.  ``mode``: 1 float32 products, 2 permutations (a
    namespace crossed with itself makes every tuple, not only the combinations)."""
    f32 = (mode & 1) != 0
    combine = (mode & 2) == 0
    at, base, cnt = odometer[0], odometer[1], odometer[2]
    for a in range(m):
        c = ex_terms[t, a]
        cnt[a] = counts[0, c]
        base[a] = counts[1, c]
        if cnt[a] == 0:
            return k
    if m == 2:  # the common case, as two plain loops
        same = combine and ex_terms[t, 1] == ex_terms[t, 0]
        b0 = base[0]
        b1 = base[1]
        n1 = cnt[1]
        for a in range(cnt[0]):
            h0 = (FNV_PRIME * bidx[b0 + a]) & _M32
            v0 = bval[b0 + a]
            first = a if same else 0
            # unsigned positions: no negative-index fix-up, so the loops run as vectors
            src = np.uint64(b1 + first)
            dst = np.uint64(k)
            n = np.uint64(n1 - first)
            if f32:
                v032 = np.float32(v0)
                for q in range(n):
                    out_idx[dst + q] = (h0 ^ bidx[src + q]) & mask
                    out_val[dst + q] = np.float64(v032 * np.float32(bval[src + q]))
            else:
                for q in range(n):
                    out_idx[dst + q] = (h0 ^ bidx[src + q]) & mask
                    out_val[dst + q] = v0 * bval[src + q]
            k += n1 - first
        return k
    # odometer over the m terms; a term equal to the previous one starts
    # at the previous one's position (combinations, as VW)
    lvl = 0
    at[0] = 0
    while lvl >= 0:
        if at[lvl] >= cnt[lvl]:
            lvl -= 1
            if lvl >= 0:
                at[lvl] += 1
            continue
        q = base[lvl] + at[lvl]
        if lvl == 0:
            acc[0] = bidx[q]
            val[0] = bval[q]
        else:
            # only the low 32 bits reach a slot (bits <= 32), and they depend only
            # on the low 32 bits of each step: no 64-bit overflow to wrap
            acc[lvl] = ((FNV_PRIME * acc[lvl - 1]) & _M32) ^ bidx[q]
            if f32:
                val[lvl] = np.float64(np.float32(val[lvl - 1]) * np.float32(bval[q]))
            else:
                val[lvl] = val[lvl - 1] * bval[q]
        if lvl == m - 1:
            out_idx[k] = acc[lvl] & mask
            out_val[k] = val[lvl]
            k += 1
            at[lvl] += 1
        else:
            nxt = lvl + 1
            at[nxt] = at[lvl] if combine and ex_terms[t, nxt] == ex_terms[t, lvl] else 0
            lvl = nxt
    return k


# ---------------------------------------------------------------------------
# crosses written by the VW parse kernel, right after each row's own features

CROSS_NONE = -1
""":func:`cross_row`: the row's crosses were not written (a crossed namespace in two runs,
or no room): it and the block's later rows are crossed by :func:`expand_batch`."""
CROSS_CROWDED = -2
""":func:`cross_row`: the row would make more crosses than the cap (a malformed row)."""


@jit_inline
def cross_row(indices, values, ns, lo, hi, room, crosser):
    """Append the crosses of the row whose own features are ``indices``/``values``/``ns``
    ``[lo:hi]`` at ``hi``, as :func:`expand_batch` does, when they end at ``room`` and
    within the crosser's budget.  Returns the row's new end, :data:`CROSS_NONE` (nothing
    written: a crossed namespace in two runs of the row, or no room) or
    :data:`CROSS_CROWDED` (more crosses than the cap).

    ``crosser`` is :func:`row_crosser`'s tuple; its counts are left zeroed.  Each crossed
    namespace's features are one run of the row, so the crosses are taken where they
    are, as :func:`_place` does for such rows.
    """
    terms, lengths, used, counts, limits, odometer, acc, val = crosser
    nt = limits[0]
    q = lo
    nnamed = 0
    out = hi
    while q < hi:
        c = ns[q]
        start = q
        q = _run_end(ns, q, hi)
        if not used[c]:
            continue
        if counts[0, c] != 0:  # a second run of a crossed namespace
            out = CROSS_NONE
            break
        counts[0, c] = q - start
        counts[1, c] = start
        counts[2, nnamed] = c
        nnamed += 1
    if out >= 0:
        mode = limits[2]
        crosses = 0.0
        for t in range(nt):
            crosses += _term_count(counts[0], terms, t, lengths[t], mode)
        if crosses > limits[3]:
            out = CROSS_CROWDED
        elif hi + crosses > min(room, limits[4]):
            out = CROSS_NONE
        else:
            mask = np.uint64(limits[1])
            for t in range(nt):
                out = _cross(terms, lengths[t], t, counts, indices, values, mask, mode, odometer,
                             acc, val, indices, values, out)  # fmt: skip
    for a in range(nnamed):
        counts[0, counts[2, a]] = 0
    return out


# ---------------------------------------------------------------------------
# VW's order of a row's own features


@jit_inline
def group_row(indices, values, ns, lo, hi):
    """Put the row ``[lo:hi]``'s features in VW's order: each namespace's features together,
    in the line's order, the namespaces in the order they first appear.  VW's reader
    appends each feature to its namespace's list and lists a namespace when it first comes,
    so ``|a x |b y |a z`` is ``x z y`` to every learner (and to the sums they make in
    float32).  A row whose namespaces each come in one run (nearly every row) is left as
    it is after one look at each run; in the others, each later run is turned into place
    (:func:`rotate`: nothing allocated).  Returns whether the row was scattered."""
    b0 = np.uint64(0)
    b1 = np.uint64(0)
    b2 = np.uint64(0)
    b3 = np.uint64(0)
    q = lo
    scattered = False
    while q < hi:
        c = np.int64(ns[q])
        bit = np.uint64(1) << np.uint64(c & 63)
        w = c >> 6
        if w == 0:
            scattered = (b0 & bit) != 0
            b0 |= bit
        elif w == 1:
            scattered = (b1 & bit) != 0
            b1 |= bit
        elif w == 2:
            scattered = (b2 & bit) != 0
            b2 |= bit
        else:
            scattered = (b3 & bit) != 0
            b3 |= bit
        if scattered:
            break
        q = _run_end(ns, q, hi)
    if not scattered:
        return False
    q = lo
    while q < hi:
        c = ns[q]
        e = _run_end(ns, q, hi)
        r = e
        while r < hi:
            r2 = _run_end(ns, r, hi)
            if ns[r] == c:  # bring [r, r2) to e, the runs between after it
                rotate(indices, e, r2, r2 - r)
                rotate(values, e, r2, r2 - r)
                rotate(ns, e, r2, r2 - r)
                e += r2 - r
            r = r2
        q = e
    return True


@jit_inline
def rotate(a, lo, hi, m):
    """``a[lo:hi]`` turned in place so that its last ``m`` entries come first (three
    reversals; :mod:`streamlearn.io.affix` turns its made features into place with it too)."""
    reverse(a, lo, hi)
    reverse(a, lo, lo + m)
    reverse(a, lo + m, hi)


@jit_inline
def reverse(a, lo, hi):
    """``a[lo:hi]`` reversed in place."""
    hi -= 1
    while lo < hi:
        t = a[lo]
        a[lo] = a[hi]
        a[hi] = t
        lo += 1
        hi -= 1
