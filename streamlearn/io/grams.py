"""VW's n-grams and skip-grams (``--ngram``, ``--skips``) and ``--sort_features``.

Both act on each namespace's features of an example, right after the block is
parsed and before interactions are crossed (:func:`expand_grams`, one numba
call per batch, on the parser's thread), as VW's ``setup_example`` does:

* ``--sort_features``: each namespace's features sorted by slot (then value),
  and of features sharing a slot only the first kept (VW's
  ``unique_sort_features``).
* ``--feature_limit aN`` (or ``N`` for every namespace): a namespace with more than N
  features (its grams included) is sorted and deduplicated as ``--sort_features`` does
  and keeps its first N slots (VW's ``feature_limit``, applied after the grams and the
  constant; VW reads N with ``atoi``, so ``a:10`` is a limit of 0: namespace a dropped).
* ``--ngram N`` (or ``--ngram aN`` for namespace ``a`` alone) appends to each
  namespace the 2- to N-grams of its features in line order; ``--skips K``
  lets the terms of a gram skip up to K features between them.  A gram of the
  features at positions i, i + m1, i + m2, ... (VW's gram masks, generated in
  VW's order by :func:`gram_masks`) has the slot ``acc & mask`` with
  ``acc = h_i``, then ``acc = acc * 27942141 + h_(i+m)`` for each further term
  (VW's ``QUADRATIC_CONSTANT``, 64-bit arithmetic whose low 32 bits are all a
  slot uses), and the value 1, whatever the features' values.  Grams belong to
  their namespace: ``-q`` crosses them, ``--ignore`` drops them.

When either is on, a row's features come out grouped by namespace, in the
order each namespace first appears on the line, each namespace's grams after
its features and the constant last: VW's order of features, which decides how
its single-precision sums round.
"""

from __future__ import annotations

import numpy as np

from streamlearn.io._scan import CONSTANT_NS
from streamlearn.system.jit import jit

GRAM_CONSTANT = np.uint64(27942141)
"""VW's ``QUADRATIC_CONSTANT``, the multiplier that chains a gram's hashes."""
_M32 = np.uint64(0xFFFFFFFF)
MAX_GRAM = 16
"""The longest gram (``--ngram 16``)."""


def gram_masks(n: int, skips: int) -> list[tuple[int, ...]]:
    """The offsets of the terms of each (n + 1)-gram with up to ``skips`` skips, in VW's order.

    VW's ``add_grams`` recursion: the first term at offset 0, each further one
    1 + (skips taken) after the previous.

    >>> gram_masks(1, 1)
    [(0, 1), (0, 2)]
    >>> gram_masks(2, 1)
    [(0, 1, 2), (0, 1, 3), (0, 2, 3)]
    """
    out: list[tuple[int, ...]] = []

    def rec(ngram: int, skip_gram: int, mask: list[int], skipped: int) -> None:
        if ngram == 0:
            out.append(tuple(mask))
        if ngram > 0:
            mask.append(mask[-1] + 1 + skipped)
            rec(ngram - 1, skip_gram, mask, 0)
            mask.pop()
        if skip_gram > 0 and ngram > 0:
            rec(ngram, skip_gram - 1, mask, skipped + 1)

    rec(n, skips, [0], 0)
    return out


def _per_namespace(specs: tuple[str, ...], option: str) -> np.ndarray:
    """VW's ``compile_gram``: ``N`` for every namespace, ``aN`` for namespace ``a``."""
    out = np.zeros(257, dtype=np.int64)
    for spec in specs:
        s = spec.strip()
        if not s:
            raise ValueError(f"{option}: an empty value")
        if s[0].isdigit():
            if not s.isdigit():
                raise ValueError(f"{option} {spec!r}: expected N or a namespace character and N")
            out[:256] = int(s)
            continue
        b = s[0].encode("utf-8")
        if len(b) != 1 or not s[1:].isdigit():
            raise ValueError(f"{option} {spec!r}: expected N or a namespace character and N")
        out[b[0]] = int(s[1:])
    out[CONSTANT_NS] = 0  # the constant is added after the grams, in VW
    return out


def compile_grams(ngram: tuple[str, ...], skips: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """``(ptr, masks, lengths)``: the gram masks of namespace c are rows
    ``ptr[c]:ptr[c + 1]`` of ``masks`` (offsets, ``lengths`` of them each).

    >>> ptr, masks, lengths = compile_grams(("a3",), ("a1",))
    >>> [masks[r, :lengths[r]].tolist() for r in range(ptr[97], ptr[98])]
    [[0, 1], [0, 2], [0, 1, 2], [0, 1, 3], [0, 2, 3]]
    """
    if skips and not ngram:
        raise ValueError("--skips needs --ngram (VW: skip cannot be used unless ngram is > 1)")
    n = _per_namespace(ngram, "--ngram")
    k = _per_namespace(skips, "--skips")
    if n.max() > MAX_GRAM:
        raise ValueError(f"--ngram: at most {MAX_GRAM}")
    if k.max() > 64:
        raise ValueError("--skips: at most 64")
    rows: list[tuple[int, ...]] = []
    ptr = np.zeros(258, dtype=np.int64)
    cache: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    for c in range(257):
        for m in range(1, int(n[c])):
            key = (m, int(k[c]))
            if key not in cache:
                cache[key] = gram_masks(*key)
            rows.extend(cache[key])
        ptr[c + 1] = len(rows)
    masks = np.full((len(rows), MAX_GRAM), -1, dtype=np.int64)
    lengths = np.zeros(len(rows), dtype=np.int64)
    for r, mask in enumerate(rows):
        masks[r, : len(mask)] = mask
        lengths[r] = len(mask)
    return ptr, masks, lengths


NO_LIMIT = 1 << 62
"""A namespace's feature limit when none is given."""


def compile_limits(specs: tuple[str, ...]) -> np.ndarray:
    """VW's ``--feature_limit`` values: the limit of each namespace byte (257 entries).

    >>> lim = compile_limits(("a3", "b:7"))
    >>> int(lim[97]), int(lim[98]), lim[99] == NO_LIMIT
    (3, 0, True)
    >>> int(compile_limits(("5",))[32])
    5
    """
    limits = np.full(257, NO_LIMIT, dtype=np.int64)

    def atoi(text: str) -> int:  # C's: leading digits after an optional sign, else 0
        t = text.lstrip()
        sign = -1 if t[:1] == "-" else 1
        t = t[1:] if t[:1] in "+-" else t
        digits = len(t) - len(t.lstrip("0123456789"))
        n = sign * int(t[:digits]) if digits else 0
        return n if n >= 0 else n % (1 << 32)  # VW keeps them as uint32

    for spec in specs:
        if not spec:
            raise ValueError("--feature_limit: an empty value")
        if spec[0].isdigit():
            limits[:256] = atoi(spec)
        elif len(spec) == 1:
            raise ValueError(f"--feature_limit {spec}: the namespace comes before the number "
                             "(e.g. a10)")  # fmt: skip
        else:
            limits[spec.encode("latin-1")[0]] = atoi(spec[1:])
    return limits


@jit
def _sort_unique(idx: np.ndarray, val: np.ndarray, n: int) -> int:
    """Sort ``idx[:n], val[:n]`` by (slot, value); keep the first of equal slots; the count."""
    for a in range(1, n):
        i = idx[a]
        v = val[a]
        b = a - 1
        while b >= 0 and (idx[b] > i or (idx[b] == i and val[b] > v)):
            idx[b + 1] = idx[b]
            val[b + 1] = val[b]
            b -= 1
        idx[b + 1] = i
        val[b + 1] = v
    if n == 0:
        return 0
    kept = 1
    for a in range(1, n):
        if idx[a] != idx[kept - 1]:
            idx[kept] = idx[a]
            val[kept] = val[a]
            kept += 1
    return kept


@jit
def _row_room(ns, lo, hi, ptr, masks, lengths, count):
    """Features a row may have after its grams (``count``: scratch, 257 zeros)."""
    room = hi - lo
    for q in range(lo, hi):
        count[ns[q]] += 1
    for q in range(lo, hi):
        c = ns[q]
        n = count[c]
        if n < 0:
            continue
        count[c] = -1
        for r in range(ptr[c], ptr[c + 1]):
            last = masks[r, lengths[r] - 1]
            if n > last:
                room += n - last
    for q in range(lo, hi):
        count[ns[q]] = 0
    return room


@jit
def expand_grams(indptr, indices, values, ns, mask, ptr, masks, lengths, sort, limits):
    """New CSR arrays and namespace bytes: each row grouped by namespace, sorted and
    deduplicated (``sort``), with its n-grams, each namespace within its ``limits``
    (see the module's docstring)."""
    n = indptr.shape[0] - 1
    count = np.zeros(257, dtype=np.int64)
    cap = 0
    for r in range(n):
        cap += _row_room(ns, indptr[r], indptr[r + 1], ptr, masks, lengths, count)
    out_ptr = np.empty(n + 1, dtype=np.int64)
    out_idx = np.empty(cap, dtype=np.uint32)
    out_val = np.empty(cap, dtype=np.float64)
    out_ns = np.empty(cap, dtype=ns.dtype)
    done = np.zeros(257, dtype=np.bool_)
    out_ptr[0] = 0
    k = 0
    for r in range(n):
        lo = indptr[r]
        hi = indptr[r + 1]
        for q in range(lo, hi):
            c = ns[q]
            if done[c] or c == CONSTANT_NS:
                continue
            done[c] = True
            start = k
            for q2 in range(q, hi):  # the namespace's features, in line order
                if ns[q2] == c:
                    out_idx[k] = indices[q2]
                    out_val[k] = values[q2]
                    k += 1
            if sort:
                k = start + _sort_unique(out_idx[start:k], out_val[start:k], k - start)
            length = k - start
            for g in range(ptr[c], ptr[c + 1]):
                m = lengths[g]
                last = masks[g, m - 1]
                for i in range(length - last):
                    acc = np.uint64(out_idx[start + i])
                    for t in range(1, m):
                        h = np.uint64(out_idx[start + i + masks[g, t]])
                        acc = (acc * GRAM_CONSTANT + h) & _M32
                    out_idx[k] = np.uint32(acc & mask)
                    out_val[k] = 1.0
                    k += 1
            if limits[c] < k - start:  # VW's feature_limit: sorted, unique, the first n
                kept = _sort_unique(out_idx[start:k], out_val[start:k], k - start)
                k = start + min(kept, limits[c])
            for q2 in range(start, k):
                out_ns[q2] = c
        for q in range(lo, hi):  # the constant, last
            if ns[q] == CONSTANT_NS and limits[CONSTANT_NS] > 0:
                out_idx[k] = indices[q]
                out_val[k] = values[q]
                out_ns[k] = CONSTANT_NS
                k += 1
        for q in range(lo, hi):
            done[ns[q]] = False
        out_ptr[r + 1] = k
    return out_ptr, out_idx[:k], out_val[:k], out_ns[:k]
