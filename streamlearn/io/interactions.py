"""VW's feature interactions (``-q``, ``--cubic``, ``--interactions``) and namespace filters.

Interactions are generated right after a block is parsed, on the parser
thread, by one numba call per batch (:func:`expand_batch`): each example's
row gets the crossed features appended after its own, so every learner sees
them as ordinary features (learned, regularised and stored like any other),
and a learner that reads a row twice reads the crosses generated once.  An
example with namespaces of sizes n1, n2 costs O(n1 n2) for ``-q``.

VW's rules, checked against ``vw --audit`` (VW 9.11):

* A namespace is named by the first byte of its name (``|user`` and
  ``|used`` are both ``u``, in the order their features appear); the default
  namespace is ``' '``; the constant is never crossed.  ``:`` is a wildcard
  for every namespace of the example.
* The slot of a cross of features with (masked) hashes h1, h2, ... is
  ``acc & mask`` with ``acc = h1`` then ``acc = (FNV_PRIME * acc) ^ h_next``
  for each further term (VW's 64-bit arithmetic, FNV_PRIME = 16777619; the
  low 32 bits, all a slot uses, are computed exactly mod 2^32); its value is
  the product of the values.
* The list of interactions is sorted (shorter first, then bytewise, ``:``
  as its byte), interactions equal up to order are dropped (the first kept:
  ``-q ab -q ba`` is ``-q ab``), and one that holds a repeated and a
  different namespace is sorted (``--cubic bab`` is ``abb``, ``--cubic a::``
  is ``::a``).  A repeated namespace crosses *combinations*: in ``-q aa`` the
  pairs (i, j) with j >= i, each feature with itself included.
* ``:`` is a wildcard, expanded for each example over its namespaces in
  byte order: two wildcards as all pairs (i <= j), any other number as VW's
  combinations with repetition; the list is then sorted and deduplicated
  again, as above.
* ``--ignore A`` drops namespace A's features everywhere, ``--keep A`` keeps
  only the namespaces named (the constant stays), ``--ignore_linear A`` drops
  A's own features but keeps them in interactions.
* ``--leave_duplicate_interactions`` keeps interactions equal up to order
  (the list is still sorted, and ``::`` then crosses every ordered pair).

N-grams and ``--sort_features`` (:mod:`streamlearn.io.grams`) are compiled
here too and applied first, so that the crosses see the grams.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from streamlearn.io._scan import CONSTANT_NS
from streamlearn.io.grams import compile_grams
from streamlearn.system.jit import jit

FNV_PRIME = np.uint64(16777619)
_M32 = np.uint64(0xFFFFFFFF)
WILDCARD = 58
"""``:``, VW's wildcard, with its own byte: VW sorts interactions with it as a
character (``--cubic a::`` becomes ``::a`` before it is expanded)."""
MAX_TERMS = 4


@dataclass(frozen=True)
class Interactions:
    """What to cross and what to drop, resolved once for a run (kernel arrays).

    ``terms[i, :lengths[i]]`` are the namespace bytes of interaction i (58, the
    byte of ``:``, is the wildcard); ``drop[c]`` removes namespace c everywhere,
    ``drop_linear[c]`` only from the example's own features.  ``dedupe``:
    interactions equal up to order are dropped (VW's default).  ``gram_ptr``,
    ``gram_masks``, ``gram_lengths``: the n-grams of each namespace
    (:func:`~streamlearn.io.grams.compile_grams`); ``sort``: ``--sort_features``.
    """

    terms: np.ndarray
    lengths: np.ndarray
    drop: np.ndarray
    drop_linear: np.ndarray
    dedupe: bool = True
    gram_ptr: np.ndarray = field(default_factory=lambda: np.zeros(258, dtype=np.int64))
    gram_masks: np.ndarray = field(default_factory=lambda: np.zeros((0, 16), dtype=np.int64))
    gram_lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    sort: bool = False
    hash_all: bool = False
    """VW's ``--hash all``: the parser hashes all-digit names too (not an interaction, but
    a parsing option that travels with the others)."""
    f32: bool = False
    """Crosses' values as float32 products (for the learners that compute in float32)."""

    @property
    def active(self) -> bool:
        """Anything to do to a parsed batch."""
        return self.crosses_or_filters or self.regroups

    @property
    def crosses_or_filters(self) -> bool:
        return self.lengths.shape[0] > 0 or bool(self.drop.any() or self.drop_linear.any())

    @property
    def regroups(self) -> bool:
        """N-grams or sorted features: rows are rebuilt namespace by namespace."""
        return self.sort or self.gram_lengths.shape[0] > 0


def _bytes(spec: str, option: str) -> list[int]:
    out = []
    for ch in spec:
        if ch == ":":
            out.append(WILDCARD)
            continue
        b = ch.encode("utf-8")
        if len(b) != 1:
            raise ValueError(f"{option} {spec!r}: namespaces are named by one ASCII character")
        out.append(b[0])
    return out


def compile_interactions(
    quadratic: tuple[str, ...] = (),
    cubic: tuple[str, ...] = (),
    interactions: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    ignore_linear: tuple[str, ...] = (),
    keep: tuple[str, ...] = (),
    ngram: tuple[str, ...] = (),
    skips: tuple[str, ...] = (),
    sort_features: bool = False,
    leave_duplicate_interactions: bool = False,
    hash_all: bool = False,
    f32: bool = False,
) -> Interactions:
    """Resolve the options into :class:`Interactions` (ValueError for a bad spec).

    >>> spec = compile_interactions(quadratic=("ba", "ab"), cubic=("bab", "cba"))
    >>> spec.terms.tolist(), spec.lengths.tolist()
    ([[97, 98, -1, -1], [97, 98, 98, -1], [99, 98, 97, -1]], [2, 3, 3])
    """
    rows = []
    for specs, size, option in ((quadratic, 2, "--quadratic"), (cubic, 3, "--cubic")):
        for spec in specs:
            t = _bytes(spec, option)
            if len(t) != size:
                raise ValueError(f"{option} {spec!r}: expected {size} namespace characters")
            rows.append(t)
    for spec in interactions:
        t = _bytes(spec, "--interactions")
        if not 2 <= len(t) <= MAX_TERMS:
            raise ValueError(
                f"--interactions {spec!r}: 2 to {MAX_TERMS} namespace characters expected"
            )
        rows.append(t)
    # VW: the list sorted (shorter first, then bytewise, ':' as its byte), duplicates
    # equal up to order dropped (the first kept), and an interaction with a repeated
    # and a different namespace ('aab', 'bab') sorted so its repeats are adjacent
    key = rows
    order = sorted(range(len(rows)), key=lambda i: (len(key[i]), key[i]))
    kept: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    for i in order:
        k = tuple(sorted(key[i]))
        if k in seen and not leave_duplicate_interactions:
            continue
        seen.add(k)
        t = rows[i]
        if _left_sorted(np.array(t, dtype=np.int64), len(t), np.empty(MAX_TERMS, np.int64)):
            t = sorted(t)
        kept.append(t)
    rows = kept
    terms = np.full((len(rows), MAX_TERMS), -1, dtype=np.int64)
    for i, t in enumerate(rows):
        terms[i, : len(t)] = t
    drop = np.zeros(257, dtype=np.bool_)
    drop_linear = np.zeros(257, dtype=np.bool_)
    for spec in ignore:
        for c in _bytes(spec, "--ignore"):
            drop[c] = True
    for spec in ignore_linear:
        for c in _bytes(spec, "--ignore_linear"):
            drop_linear[c] = True
    if keep:
        kept = {c for spec in keep for c in _bytes(spec, "--keep")}
        drop[:256] = True
        for c in kept:
            drop[c] = False
    drop[CONSTANT_NS] = False
    if ngram and sort_features:
        raise ValueError("--ngram does not go with --sort_features (as in VW)")
    gram_ptr, gram_masks, gram_lengths = compile_grams(tuple(ngram), tuple(skips))
    return Interactions(terms, np.array([len(t) for t in rows], dtype=np.int64), drop, drop_linear,
                        not leave_duplicate_interactions, gram_ptr, gram_masks, gram_lengths,
                        bool(sort_features), bool(hash_all), bool(f32))  # fmt: skip


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
def _left_sorted(t: np.ndarray, m: int, key: np.ndarray) -> bool:
    """VW's ``must_be_left_sorted``: ``t[:m]`` holds a repeated namespace and a different
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
def _before(x: np.ndarray, mx: int, y: np.ndarray, my: int) -> bool:
    """VW's order of interactions: shorter first, then bytewise."""
    if mx != my:
        return mx < my
    for a in range(mx):
        if x[a] != y[a]:
            return x[a] < y[a]
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
    """Rows :func:`_example_terms` may fill for an example with ``npresent`` namespaces."""
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
def _example_terms(terms, lengths, present, npresent, out, out_len, dedupe=True):
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
    key = np.empty(MAX_TERMS, dtype=np.int64)
    other = np.empty(MAX_TERMS, dtype=np.int64)
    idx = np.zeros(MAX_TERMS + 1, dtype=np.int64)
    vals = np.empty(MAX_TERMS, dtype=np.int64)
    sp = np.empty(npresent, dtype=np.int64)
    sp[:] = present[:npresent]
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
    # sort the list (insertion sort: short lists), then drop duplicates keeping the first
    for r in range(1, n):
        mr = out_len[r]
        for a in range(MAX_TERMS):
            key[a] = out[r, a]
        q = r - 1
        while q >= 0 and _before(key, mr, out[q], out_len[q]):
            for a in range(MAX_TERMS):
                out[q + 1, a] = out[q, a]
            out_len[q + 1] = out_len[q]
            q -= 1
        for a in range(MAX_TERMS):
            out[q + 1, a] = key[a]
        out_len[q + 1] = mr
    kept = 0
    for r in range(n):
        m = out_len[r]
        dup = False
        for q in range(kept if dedupe else 0):
            if out_len[q] == m and _same_set(out[q], out[r], m, key, other):
                dup = True
                break
        if dup:
            continue
        for a in range(m):
            out[kept, a] = out[r, a]
        out_len[kept] = m
        if _left_sorted(out[kept], m, key):
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


@jit
def _same_set(x: np.ndarray, y: np.ndarray, m: int, kx, ky) -> bool:
    for a in range(m):
        kx[a] = x[a]
        ky[a] = y[a]
    _sort_small(kx, m)
    _sort_small(ky, m)
    for a in range(m):
        if kx[a] != ky[a]:
            return False
    return True


@jit
def expand_batch(indptr, indices, values, ns, mask, terms, lengths, drop, drop_linear,
                 dedupe=True, f32=False):  # fmt: skip
    """New CSR arrays: each row's own features (filtered), then its crosses.

    ``mask`` is ``2**bits - 1`` (uint64).  Rows keep their order; the feature
    order within a row is: the example's features in line order (the constant
    last), then the interactions in VW's order.  With ``f32`` a cross's value
    is the product of the values rounded to float32, in float32, term by term:
    what VW's single-precision learners multiply (the float32 learners then
    see VW's very values).
    """
    n = indptr.shape[0] - 1
    cap = indices.shape[0] + 16
    out_ptr = np.empty(n + 1, dtype=np.int64)
    out_idx = np.empty(cap, dtype=np.uint32)
    out_val = np.empty(cap, dtype=np.float64)
    out_ptr[0] = 0
    k = 0
    seen = np.zeros(257, dtype=np.bool_)
    present = np.empty(256, dtype=np.int64)
    # without '::' every example has the compiled list itself; with it, room for
    # every template and all pairs of up to 256 namespaces
    wild = False
    for i in range(terms.shape[0]):
        for a in range(lengths[i]):
            if terms[i, a] == WILDCARD:
                wild = True
    ex_terms = terms
    ex_len = lengths
    if wild:
        ex_terms = np.empty((terms.shape[0] * 64, MAX_TERMS), dtype=np.int64)
        ex_len = np.empty(ex_terms.shape[0], dtype=np.int64)
    pos = np.empty((MAX_TERMS, indices.shape[0] + 1), dtype=np.int64)
    cnt = np.zeros(MAX_TERMS, dtype=np.int64)
    at = np.zeros(MAX_TERMS, dtype=np.int64)
    acc = np.zeros(MAX_TERMS, dtype=np.uint64)
    val = np.zeros(MAX_TERMS, dtype=np.float64)
    for r in range(n):
        lo = indptr[r]
        hi = indptr[r + 1]
        # the example's own features, and which namespaces it has
        npresent = 0
        for q in range(lo, hi):
            c = ns[q]
            if drop[c]:
                continue
            if not drop_linear[c]:
                if k >= out_idx.shape[0]:
                    out_idx, out_val = _grow(out_idx, out_val, k, k + 1)
                out_idx[k] = indices[q]
                out_val[k] = values[q]
                k += 1
            if c != CONSTANT_NS and not seen[c]:
                seen[c] = True
                present[npresent] = c
                npresent += 1
        for a in range(npresent):
            seen[present[a]] = False
        if terms.shape[0] == 0:
            out_ptr[r + 1] = k
            continue
        nt = terms.shape[0]
        if wild:
            room = terms_room(terms, lengths, npresent)
            if room > ex_terms.shape[0]:
                ex_terms = np.empty((room, MAX_TERMS), dtype=np.int64)
                ex_len = np.empty(room, dtype=np.int64)
            nt = _example_terms(terms, lengths, present, npresent, ex_terms, ex_len, dedupe)
        for t in range(nt):
            m = ex_len[t]
            empty = False
            for a in range(m):
                c = ex_terms[t, a]
                cnt[a] = 0
                if not drop[c]:
                    for q in range(lo, hi):
                        if ns[q] == c:
                            pos[a, cnt[a]] = q
                            cnt[a] += 1
                if cnt[a] == 0:
                    empty = True
            if empty:
                continue
            if m == 2:  # the common case, as two plain loops
                same = ex_terms[t, 1] == ex_terms[t, 0]
                need = k + cnt[0] * cnt[1]
                if need > out_idx.shape[0]:
                    out_idx, out_val = _grow(out_idx, out_val, k, need)
                for a in range(cnt[0]):
                    q0 = pos[0, a]
                    h0 = (FNV_PRIME * np.uint64(indices[q0])) & _M32
                    v0 = values[q0]
                    for b in range(a if same else 0, cnt[1]):
                        q1 = pos[1, b]
                        out_idx[k] = (h0 ^ np.uint64(indices[q1])) & mask
                        if f32:
                            out_val[k] = np.float64(np.float32(v0) * np.float32(values[q1]))
                        else:
                            out_val[k] = v0 * values[q1]
                        k += 1
                continue
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
                q = pos[lvl, at[lvl]]
                if lvl == 0:
                    acc[0] = np.uint64(indices[q])
                    val[0] = values[q]
                else:
                    # only the low 32 bits reach a slot (bits <= 32), and they depend only
                    # on the low 32 bits of each step: no 64-bit overflow to wrap
                    acc[lvl] = ((FNV_PRIME * acc[lvl - 1]) & _M32) ^ np.uint64(indices[q])
                    if f32:
                        val[lvl] = np.float64(np.float32(val[lvl - 1]) * np.float32(values[q]))
                    else:
                        val[lvl] = val[lvl - 1] * values[q]
                if lvl == m - 1:
                    if k >= out_idx.shape[0]:
                        out_idx, out_val = _grow(out_idx, out_val, k, k + 1)
                    out_idx[k] = acc[lvl] & mask
                    out_val[k] = val[lvl]
                    k += 1
                    at[lvl] += 1
                else:
                    nxt = lvl + 1
                    at[nxt] = at[lvl] if ex_terms[t, nxt] == ex_terms[t, lvl] else 0
                    lvl = nxt
        out_ptr[r + 1] = k
    return out_ptr, out_idx[:k], out_val[:k]


@jit
def _grow(idx, val, k, need):
    cap = max(need, 2 * idx.shape[0])
    new_i = np.empty(cap, dtype=np.uint32)
    new_v = np.empty(cap, dtype=np.float64)
    new_i[:k] = idx[:k]
    new_v[:k] = val[:k]
    return new_i, new_v
