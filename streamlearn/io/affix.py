"""VW's ``--affix``: each feature's prefixes and suffixes as features of their own.

``--affix +2a,-3b,+1`` makes, for every named feature of namespace ``a``, a feature from
its first 2 bytes, for ``b`` its last 3, for the default namespace its first byte (a name
no longer than the length is taken whole).  VW's text parser (``parse_example_text.cc``)
adds them as it reads each feature with a non-zero value; here the parse kernel's rows
get them after it (:func:`with_affixes`, called by :mod:`streamlearn.io.textparse`), so
the parser's hot loop is untouched.  As VW:

* the affix of a feature of namespace hash ``h`` hashes as a name in that namespace
  (``hashstring``, or murmur3 with ``--hash all``), times ``AFFIX_CONSTANT + code *
  QUADRATIC_CONSTANT`` (``code``: the affix's 4 bits, length << 1 | prefix), unmasked
  until the table's mask; its value is the feature's (after the namespace's scale); a
  ``name:string`` feature's affixes are of its name, with value 1;
* the affixes of one namespace are made from the last one given to the first;
* they are features of namespace 132 (VW's ``AFFIX_NAMESPACE``), which comes in the
  example's order where VW's parser puts it: before the namespace whose feature made the
  first affix (VW appends a namespace after its features, the affix namespace at its first
  feature).

The kernel walks each usable row's line again (namespaces, names, values' spans) and
matches its features with the row's: a token whose value (or namespace scale) is written as
zero made none, the others are the row's features in order (checked by their hashes), and
the row's value is the one the parser read.  Only VW text has affixes (the option is refused
with other formats).
"""

from __future__ import annotations

import numpy as np

from streamlearn.hashing import hashstring, murmur3_32
from streamlearn.io.crosses import rotate
from streamlearn.system.jit import jit

AFFIX_NS = 132
"""The namespace byte of the affixes (VW's ``AFFIX_NAMESPACE``)."""
SPELLING_NS = 133
"""The namespace byte of the spelling features (VW's ``SPELLING_NAMESPACE``)."""
AFFIX_CONSTANT = 13903957
QUADRATIC_CONSTANT = 27942141
_M32 = np.uint64(0xFFFFFFFF)


def affix_features(name: bytes, seed: int, codes: int, nsb: int, hash_all: bool, mask: int,
                   value: float) -> list[tuple[int, str, int, float]]:  # fmt: skip
    """(slot, VW's audit name, namespace byte, value) of the affixes of feature ``name`` of a
    namespace of hash ``seed`` and affix ``codes``: in Python, for names (``--audit``,
    ``--invert_hash``) and as the tests' reference."""
    import mmh3

    from streamlearn.hashing import hashstring_py

    out = []
    while codes:
        code = codes & 15
        prefix = code & 1
        length = (code >> 1) & 7
        part = name
        if len(name) > length:
            part = name[:length] if prefix else name[len(name) - length:]
        h = mmh3.hash(part, seed & 0xFFFFFFFF, signed=False) if hash_all else \
            hashstring_py(part, seed)  # fmt: skip
        h = (h * (AFFIX_CONSTANT + code * QUADRATIC_CONSTANT)) & 0xFFFFFFFFFFFFFFFF
        shown = (chr(nsb) if nsb != 32 else "") + ("+" if prefix else "-") + str(length) + "="
        out.append((h & mask, "affix^" + shown + part.decode("utf-8", "surrogateescape"),
                    AFFIX_NS, value))  # fmt: skip
        codes >>= 4
    return out


def spelling_feature(name: bytes, seed: int, nsb: int, mask: int,
                     value: float) -> tuple[int, str, int, float]:  # fmt: skip
    """(slot, VW's audit name, namespace byte, value) of the spelling feature of ``name``, a
    feature of a namespace of hash ``seed`` and byte ``nsb``: in Python, for ``--audit`` and
    as the tests' reference (the kernel's is :func:`_spelling`)."""
    from streamlearn.hashing import hashstring_py

    shape = bytes(48 if 48 <= c <= 57 else 97 if 97 <= c <= 122 else 65 if 65 <= c <= 90
                  else 46 if c == 46 else 35 for c in name)  # fmt: skip
    shown = (chr(nsb) + "_" if nsb != 32 else "") + shape.decode()
    return (hashstring_py(shape, seed) & mask, "spelling^" + shown, SPELLING_NS, value)


def affix_table(spec: str) -> np.ndarray:
    """VW's ``--affix`` argument as its per-namespace codes (uint64[256]: 4 bits per affix,
    the first given in the highest bits).  Raises ValueError with VW's reasons."""
    table = np.zeros(256, dtype=np.uint64)
    for token in spec.split(","):
        if not token:
            continue
        q = token
        prefix = 1
        if q[0] == "+":
            q = q[1:]
        elif q[0] == "-":
            prefix = 0
            q = q[1:]
        if not q or not "1" <= q[0] <= "7":
            raise ValueError(f"malformed affix argument (length must be 1..7): {token}")
        ns = 32
        if len(q) > 1:
            b = q[1].encode("utf-8")
            if len(b) != 1 or b[0] in (32, 9, 10, 13, 58, 124) or b[0] < 32:
                raise ValueError(f"malformed affix argument (invalid namespace): {token}")
            if len(q) > 2:
                raise ValueError(f"malformed affix argument (too long): {token}")
            ns = b[0]
        code = (int(q[0]) << 1) | prefix
        table[ns] = np.uint64(((int(table[ns]) << 4) | code) & 0xFFFFFFFFFFFFFFFF)
    return table


@jit
def _hash(buf, s, e, seed, hash_all):  # noqa: ANN001, ANN202
    if hash_all:
        return np.uint64(murmur3_32(buf, s, e, seed))
    return np.uint64(hashstring(buf, s, e, seed))


@jit
def _zero(buf, s, e):  # noqa: ANN001, ANN202
    """Whether the number ``buf[s:e]`` is written as a zero (``0``, ``-0.00``, ``0e5``): a
    feature VW's parser does not keep.  Not a number: False."""
    p = s
    if p < e and (buf[p] == 43 or buf[p] == 45):
        p += 1
    digits = False
    while p < e and ((buf[p] >= 48 and buf[p] <= 57) or buf[p] == 46):
        if buf[p] >= 49 and buf[p] <= 57:
            return False
        digits = digits or buf[p] == 48
        p += 1
    return digits and (p == e or buf[p] == 101 or buf[p] == 69)


@jit
def _affixes(buf, s, e, nsh, codes, hash_all, mask, value, at, indices, values, ns):  # noqa: ANN001, ANN202
    """The affixes of name ``buf[s:e]``, written from ``at``; their count."""
    m = 0
    while codes > np.uint64(0):
        code = codes & np.uint64(15)
        prefix = (code & np.uint64(1)) == np.uint64(1)
        length = np.int64((code >> np.uint64(1)) & np.uint64(7))
        a, b = s, e
        if e - s > length:
            if prefix:
                b = s + length
            else:
                a = e - length
        h = _hash(buf, a, b, nsh, hash_all)
        h = h * (np.uint64(AFFIX_CONSTANT) + code * np.uint64(QUADRATIC_CONSTANT))
        indices[at + m] = h & mask
        values[at + m] = value
        ns[at + m] = AFFIX_NS
        m += 1
        codes = codes >> np.uint64(4)
    return m


@jit
def _row(buf, ls, ptr0, ptr1, in_idx, in_val, in_ns, mask, table, spell, hash_all, default_nsh,
         hash_seed, at, indices, values, ns, scratch):  # fmt: skip  # noqa: ANN001, ANN202
    """The affixes and spelling features of the line at ``ls``, written from ``at`` in the
    order they are made: their count and the row positions the affixes and the spelling
    features go before (-1: none)."""
    le = ls
    while le < buf.shape[0] and buf[le] != 10:
        le += 1
    p = ls
    if le - ls >= 3 and buf[ls] == 0xEF and buf[ls + 1] == 0xBB and buf[ls + 2] == 0xBF:
        p += 3
    while p < le and buf[p] != 124:
        p += 1
    cur = ptr0
    made = 0
    ins = -1  # the row position of the segment that made the first affix
    ins_s = -1  # ... the first spelling feature
    while p < le:
        p += 1  # buf[p - 1] == '|'
        nsh = default_nsh
        nsb = 32
        scale_zero = False
        if p < le and buf[p] != 32 and buf[p] != 9 and buf[p] != 13 and buf[p] != 124:
            s = p
            while p < le and buf[p] not in (32, 9, 13, 58, 124):
                p += 1
            nsh = _hash(buf, s, p, hash_seed, hash_all)
            nsb = buf[s]
            if p < le and buf[p] == 58:  # the scale: the row's values have it
                s = p + 1
                while p < le and buf[p] != 32 and buf[p] != 9 and buf[p] != 13 and buf[p] != 124:
                    p += 1
                scale_zero = _zero(buf, s, p)
        codes = table[nsb]
        spelled = spell[nsb] != 0
        seg = cur  # the row's first feature of this segment
        anon = np.uint64(0)
        while p < le and buf[p] != 124:
            c = buf[p]
            if c == 32 or c == 9 or c == 13:
                p += 1
                continue
            s = p
            while p < le and buf[p] not in (32, 9, 13, 58, 124):
                p += 1
            e = p
            colon = p < le and buf[p] == 58
            vs = p + 1
            q = vs  # a number ends at whitespace or '|', a string at whitespace only
            qs = vs
            if colon:
                while q < le and buf[q] != 32 and buf[q] != 9 and buf[q] != 13 and buf[q] != 124:
                    q += 1
                qs = q
                while qs < le and buf[qs] != 32 and buf[qs] != 9 and buf[qs] != 13:
                    qs += 1
            # a value written as zero (or a zero scale) makes no feature, whatever its hash
            # (``0042:0`` and ``42`` hash alike)
            zero = _zero(buf, vs, q) if colon else scale_zero
            here = cur < ptr1 and in_ns[cur] == nsb and not zero
            kept = False
            value = 1.0
            if e > s:
                h = _hash(buf, s, e, nsh, hash_all)
                if here and in_idx[cur] == h & mask:
                    kept = True
                    p = q if colon else p
                elif colon and here and in_idx[cur] == _hash(buf, vs, qs, h, hash_all) & mask:
                    kept = True
                    p = qs
                else:
                    p = q if colon else p
                if kept:
                    value = in_val[cur]
                    cur += 1
                    if codes != np.uint64(0):
                        if ins < 0:
                            ins = seg
                        made += _affixes(buf, s, e, nsh, codes, hash_all, mask, value,
                                         at + made, indices, values, ns)  # fmt: skip
                    if spelled:
                        if ins_s < 0:
                            ins_s = seg
                        _spelling(buf, s, e, nsh, mask, value, at + made, indices, values, ns,
                                  scratch)  # fmt: skip
                        made += 1
            else:  # an anonymous ':v' (the namespace's hash plus its count) or ':string'
                if here and in_idx[cur] == ((nsh + anon) & _M32) & mask:
                    kept = True
                    anon += np.uint64(1)
                    p = q
                elif colon and here and in_idx[cur] == _hash(buf, vs, qs, nsh, hash_all) & mask:
                    kept = True
                    p = qs
                else:
                    anon += np.uint64(1)
                    p = q
                if kept:
                    value = in_val[cur]
                    cur += 1
                    if spelled:  # (VW spells the empty name too)
                        if ins_s < 0:
                            ins_s = seg
                        _spelling(buf, s, s, nsh, mask, value, at + made, indices, values, ns,
                                  scratch)  # fmt: skip
                        made += 1
    return made, ins, ins_s


@jit
def _spelling(buf, s, e, nsh, mask, value, at, indices, values, ns, scratch):  # noqa: ANN001, ANN202
    """VW's spelling feature of name ``buf[s:e]`` at ``at``: its bytes as ``0`` (a digit),
    ``a``, ``A``, ``.`` or ``#`` (anything else), hashed by ``hashstring`` with the
    namespace's hash whatever ``--hash`` says, valued as the feature."""
    for i in range(s, e):
        c = buf[i]
        if c >= 48 and c <= 57:
            d = 48
        elif c >= 97 and c <= 122:
            d = 97
        elif c >= 65 and c <= 90:
            d = 65
        elif c == 46:
            d = 46
        else:
            d = 35
        scratch[i - s] = d
    indices[at] = np.uint64(hashstring(scratch, 0, e - s, nsh)) & mask
    values[at] = value
    ns[at] = SPELLING_NS


@jit
def _partition(idx, val, ns, lo, hi, later):  # noqa: ANN001, ANN202
    """``[lo:hi]`` stably with the entries of namespace ``later`` last: where they start."""
    n = hi - lo
    t_idx = idx[lo:hi].copy()
    t_val = val[lo:hi].copy()
    t_ns = ns[lo:hi].copy()
    k = lo
    for j in range(n):
        if t_ns[j] != later:
            idx[k] = t_idx[j]
            val[k] = t_val[j]
            ns[k] = t_ns[j]
            k += 1
    start = k
    for j in range(n):
        if t_ns[j] == later:
            idx[k] = t_idx[j]
            val[k] = t_val[j]
            ns[k] = t_ns[j]
            k += 1
    return start


@jit
def _fill(data, rows, line_start, status, indptr, indices, values, ns, mask, table, spell,
          hash_all, default_nsh, hash_seed, out_ptr, out_idx, out_val, out_ns):  # fmt: skip  # noqa: ANN001, ANN202
    """Each row's features, then its affixes after them, turned into place (one walk of the
    line; ``out_*`` have room for every feature's affixes)."""
    out_ptr[0] = 0
    scratch = np.empty(data.shape[0] + 1, dtype=np.uint8)  # (a name's spelling)
    for r in range(rows):
        lo, hi = indptr[r], indptr[r + 1]
        base = out_ptr[r]
        n = hi - lo
        for j in range(n):
            out_idx[base + j] = indices[lo + j]
            out_val[base + j] = values[lo + j]
            out_ns[base + j] = ns[lo + j]
        m = 0
        if status[r] == 0 and n > 0:
            m, ia, isp = _row(data, line_start[r], lo, hi, indices, values, ns, mask, table,
                              spell, hash_all, default_nsh, hash_seed, base + n, out_idx,
                              out_val, out_ns, scratch)  # fmt: skip
            if m > 0:
                first = ia if isp < 0 or (0 <= ia < isp) else isp
                at = base + (first - lo)
                rotate(out_idx, at, base + n + m, m)
                rotate(out_val, at, base + n + m, m)
                rotate(out_ns, at, base + n + m, m)
                if ia >= 0 and isp >= 0 and ia != isp:
                    # the later namespace's features go before the segment that made its
                    # first: the rows are grouped by first appearance after this
                    later = SPELLING_NS if ia < isp else AFFIX_NS
                    k = _partition(out_idx, out_val, out_ns, at, at + m, later)
                    gap = (isp if ia < isp else ia) - first  # the row's features between
                    rotate(out_idx, k, at + m + gap, gap)
                    rotate(out_val, k, at + m + gap, gap)
                    rotate(out_ns, k, at + m + gap, gap)
        out_ptr[r + 1] = base + n + m


def with_affixes(data: np.ndarray, rows: int, line_start: np.ndarray, status: np.ndarray,
                 indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, ns: np.ndarray,
                 mask: np.uint64, table: np.ndarray, hash_all: bool, hash_seed: int,
                 spell: np.ndarray | None = None) -> tuple[np.ndarray, ...]:  # fmt: skip
    """The parse kernel's first ``rows`` rows (CSR ``indptr``, ``indices``, ``values``,
    ``ns``) with VW's affixes of the namespaces of ``table`` (:func:`affix_table`) and its
    spelling features of those of ``spell`` (uint8[256], non-zero: spelled)."""
    if spell is None:
        spell = np.zeros(256, dtype=np.uint8)
    starts = np.ascontiguousarray(line_start[:rows], dtype=np.int64)
    seed = np.uint64(hash_seed)
    default_nsh = np.uint64(0) if hash_seed == 0 else np.uint64(murmur3_32(data, 0, 0, seed))
    nnz = int(indptr[rows])
    # each namespace's affixes per feature: its codes, the table's non-zero 4-bit nibbles
    per = sum(((table >> np.uint64(4 * k)) & np.uint64(15)) != 0 for k in range(16)) + (spell != 0)
    room = nnz + int(per[ns[:nnz]].sum())  # (at most: anonymous features make no affix)
    out_ptr = np.zeros(rows + 1, dtype=indptr.dtype)
    out_idx = np.empty(room, dtype=indices.dtype)
    out_val = np.empty(room, dtype=values.dtype)
    out_ns = np.empty(room, dtype=ns.dtype)
    _fill(data, rows, starts, status, indptr, indices, values, ns, mask, table, spell,
          bool(hash_all), default_nsh, seed, out_ptr, out_idx, out_val, out_ns)  # fmt: skip
    end = int(out_ptr[rows])
    return out_ptr, out_idx[:end], out_val[:end], out_ns[:end]
