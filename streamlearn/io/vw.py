"""Numba parser for Vowpal Wabbit text format.

Grammar (DESIGN.md section 4; details and every difference from VW are in
``docs/input-formats.md``)::

    line       := [label-part] ('|' namespace)*
    label-part := the bytes before the first '|' (after the first tab, if any),
                  split on spaces: [label [importance [base]]] [tag]
    namespace  := [name [':' scale]] (whitespace feature)*
    feature    := name | name ':' number | name ':' string

:func:`parse_vw_block` parses a whole block in one call.  The hot loop calls
no out-of-line function with array arguments (numba would pay atomic
reference-count updates on each such call; the helpers are inlined): newlines,
short digit names, names starting with a non-digit and plain ``digits[.digits]``
values are read 8 bytes at a time (:mod:`streamlearn.io._words`), everything
else byte by byte, where digit names are hashed while they are scanned and
numbers take :func:`~streamlearn.io._scan.fast_decimal` first; only rare
branches (slow numbers, growing the arrays) call out.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.hashing import CONSTANT_HASH, hashstring, murmur3_32, murmur3_32_short
from streamlearn.io._numbers import NUM_NONE, NUM_OK, NUM_SLOW, POW10, scan_number
from streamlearn.io._scan import (
    CONSTANT_NS,
    DEFAULT_NS,
    fast_decimal,
    is_ws,
    slow_value,
)
from streamlearn.io._words import (
    _ASCII0,
    _U0,
    _U8,
    byte_at,
    digits_value,
    ends_name,
    find_byte,
    first_byte,
    name_end,
    non_digits,
    plain_decimal,
)
from streamlearn.io.batch import TOO_LARGE, TOO_MANY_CROSSES
from streamlearn.io.crosses import CROSS_CROWDED, cross_row, group_row
from streamlearn.io.vwfloat import vw_fast, vw_number
from streamlearn.system.jit import jit, jit_inline, jit_noalloc, load_u64

# status codes (keys of streamlearn.io.batch.REASONS)
BAD_LABEL = 1
BAD_WEIGHT = 2
NEG_WEIGHT = 3
BAD_BASE = 4
TOO_MANY_LABEL_TOKENS = 5
BAD_VALUE = 6
NON_FINITE = 7
EMPTY_NAME = 8
BAD_SCALE = 9
TOO_MANY_COLONS = 12
EMPTY_NAMESPACE = 13

_CONSTANT = np.uint64(CONSTANT_HASH)
_U10 = np.uint64(10)
_M32 = np.uint64(0xFFFFFFFF)


@jit
def _e_only(buf: np.ndarray, i: int, end: int) -> bool:
    """True for ``[eE][+-]?digits*`` up to whitespace/'|'/end: VW reads these as 0."""
    if i >= end or (buf[i] | 0x20) != 101:
        return False
    i += 1
    if i < end and (buf[i] == 43 or buf[i] == 45):
        i += 1
    while i < end and buf[i] >= 48 and buf[i] <= 57:
        i += 1
    return i >= end or is_ws(buf[i]) or buf[i] == 124


@jit_inline
def put(
    indices: np.ndarray, values: np.ndarray, ns: np.ndarray, k: int, slot: np.uint64,
    value: float, nsb: int,
) -> int:
    """Store feature ``k`` (slot, value, namespace byte); returns ``k + 1``."""
    u = np.uint64(k)  # k >= 0: no negative-index fix-up
    indices[u] = slot
    values[u] = value
    ns[u] = nsb
    return k + 1


@jit_inline
def label_tokens(buf: np.ndarray, ls: int, bar: int):
    """Split the label part ``buf[ls:bar]`` as VW does.

    The part starts after its first tab, if any; tokens are separated by
    spaces.  The last token is the tag when it starts with ``'`` (stripped) or
    ends at ``bar`` (touches the ``|``, or the end of a line without ``|``).

    Returns
    -------
    ntok, starts, ends, tag_start, tag_end, touching
        ``ntok`` label tokens (not the tag) and the spans of the first four.
    """
    p = ls
    while p < bar and buf[p] != 9:
        p += 1
    p = ls if p == bar else p + 1
    ntok = 0
    t0s = t0e = t1s = t1e = t2s = t2e = t3s = t3e = 0
    lasts = laste = 0
    while p < bar:
        if buf[p] == 32:
            p += 1
            continue
        s = p
        while p < bar and buf[p] != 32:
            p += 1
        if ntok == 0:
            t0s, t0e = s, p
        elif ntok == 1:
            t1s, t1e = s, p
        elif ntok == 2:
            t2s, t2e = s, p
        elif ntok == 3:
            t3s, t3e = s, p
        lasts, laste = s, p
        ntok += 1
    tag_s = tag_e = ls
    touching = False
    if ntok > 0:
        if buf[lasts] == 39:  # 'tag
            tag_s, tag_e = lasts + 1, laste
            ntok -= 1
        elif laste == bar:
            tag_s, tag_e = lasts, laste
            touching = True
            ntok -= 1
    return ntok, (t0s, t1s, t2s, t3s), (t0e, t1e, t2e, t3e), tag_s, tag_e, touching


@jit_noalloc
def parse_vw_block(
    data: np.ndarray,
    first_line: int,
    mask: np.uint64,
    constant: bool,
    limit: float,
    hash_all: bool,
    vw_numbers: bool,
    raw_labels: bool,
    hash_seed: np.uint32,
    slow_spans: np.ndarray,
    st: np.ndarray,
    slow_pos: np.ndarray,
    slow_vals: np.ndarray,
    words: bool,
    arrays: tuple,
    crosser: tuple,
) -> tuple[int, int, int, int, bool, int]:
    """Parse the VW lines of ``data`` into ``arrays`` (:func:`streamlearn.io.parse.parse_block`).

    ``arrays`` are the output arrays (:func:`~streamlearn.io._scan.block_arrays`)
    with a row for every line of ``data`` and :func:`~streamlearn.io._scan.feature_bound`
    feature entries; ``slow_spans`` and ``st`` the slow tokens' spans and
    counters (:func:`~streamlearn.io._scan.slow_value`).  Returns the rows and
    features written, the tags touching ``|`` and the first one's line,
    ``overflow`` (``arrays`` had no room for the block) and ``crossed``.

    ``crosser`` (:func:`~streamlearn.io.crosses.row_crosser`) holds the
    interactions the kernel writes itself, each row's crosses right after its
    own features (:func:`~streamlearn.io.crosses.cross_row`), as long as
    they leave room for the rest of the block's own features: ``crossed`` rows
    have them, the later rows do not (their crosses are the caller's to
    expand).  A row with more crosses than the cap is malformed
    (``TOO_MANY_CROSSES``, no features), as the expanding pass makes it.  Unless the
    crosser says not to, each row's own features are put in VW's order first
    (:func:`~streamlearn.io.crosses.group_row`: a namespace that comes back later in the
    line joins its first run).

    The kernel allocates nothing and returns no array (``jit_noalloc``):
    without reference counting, and without loading numba's array module
    when its cached code is loaded (25-35 ms of a run's start).

    ``limit``: a line holding a label, importance weight, base, namespace
    scale or feature value of larger magnitude is malformed (``TOO_LARGE``;
    :data:`~streamlearn.io.batch.MAX_MAGNITUDE` in a run).

    ``hash_all`` (VW's ``--hash all``) hashes every name, namespace and string
    value with murmur3, all-digit names included (no number shortcut, no trim).
    ``hash_seed`` (VW's ``--hash_seed``) seeds the namespaces' hashes; the default
    namespace's is then murmur3 of nothing with that seed (0 when it is 0), as VW's.

    ``vw_numbers`` reads every number as VW does (:func:`~streamlearn.io.vwfloat.vw_number`:
    float32 values, not always the nearest); otherwise numbers are correctly rounded.
    The grammar, and so which lines are malformed, is the same either way.

    ``raw_labels``: the label part is not read as numbers (label NaN, importance 1,
    base 0; the tag as always): a label kernel of :mod:`streamlearn.io.labels` reads it
    from the row's bytes (cost-sensitive, contextual-bandit labels ...).

    ``words`` lets the common tokens be read 8 bytes at a time
    (:mod:`streamlearn.io._words`); the result is the same either way.  Byte
    reads in the feature loop index with ``np.uint64``, which spares numba's
    negative-index check on each (every index here is non-negative).
    """
    n = data.shape[0]
    # values are read 8 bytes at a time below n_values: never with VW's numbers (a bound, not
    # a test of vw_numbers in the feature loop, which cost sl train 3% of the parse's time)
    n_values = -1 if vw_numbers else n
    (
        labels, weights, bases, tag_start, tag_end, indptr, indices, values,
        status, line, line_start, err_pos, ns,
    ) = arrays  # fmt: skip
    buf = data
    nan = math.nan
    # the default namespace's hash: 0, or VW's uniform hash of "" with --hash_seed
    default_nsh = np.uint32(0) if hash_seed == 0 else murmur3_32(buf, 0, 0, hash_seed)
    overflow = False
    row = 0
    k = 0
    pos = 0
    lineno = first_line - 1
    n_touch = 0
    first_touch = 0
    indptr[0] = 0
    crossing = crosser[4][0] > 0
    grouping = crosser[4][5] != 0  # each row in VW's order (crosses.group_row)
    crossed = 0
    while pos < n:
        l0 = ls = pos
        le = find_byte(buf, pos, n, 10, words)
        pos = le + 1
        lineno += 1
        if le - ls >= 3 and buf[ls] == 0xEF and buf[ls + 1] == 0xBB and buf[ls + 2] == 0xBF:
            ls += 3  # UTF-8 byte order mark, as VW
        vle = le
        if vw_numbers and le > ls and buf[le - 1] == 13:
            vle = le - 1  # VW's line end: one '\r' off
        while le > ls and buf[le - 1] == 13:
            le -= 1
        p = ls
        while p < le and is_ws(buf[p]):
            p += 1
        if p == le:
            continue  # blank line: not an example
        need = k + (le - ls + 1) // 2 + 2
        if row >= labels.shape[0] or need > indices.shape[0]:
            overflow = True  # the arrays were sized from a wrong line count
            break

        # ---- label part
        bar = ls
        while bar < le and buf[bar] != 124:
            bar += 1
        ntok, starts, ends, tag_s, tag_e, touching = label_tokens(buf, ls, bar)
        code = 0
        err = -1
        label = nan
        weight = 1.0
        base = 0.0
        if raw_labels:
            ntok = 0  # a label kind other than simple: io/labels.py reads the label part
        elif ntok > 3:
            code = TOO_MANY_LABEL_TOKENS
            err = starts[3]
            ntok = 0
        for t in range(ntok):
            s = starts[t]
            e = ends[t]
            if vw_numbers:
                ok = False
                c, v, j = vw_number(buf, s, e, e)
            else:
                neg = buf[s] == 45  # '-': labels are often -1
                ok, v, j = fast_decimal(buf, s + neg, e)
                if ok and neg:
                    v = -v
                if not ok:
                    c, v, j = scan_number(buf, s, e)
            if not ok:
                if c == NUM_SLOW:
                    v = slow_value(s, j, slow_spans, slow_pos, slow_vals, st)
                elif c != NUM_OK:
                    j = -1
            if j != e:
                code = BAD_LABEL if t == 0 else (BAD_WEIGHT if t == 1 else BAD_BASE)
            elif not math.isfinite(v):
                code = NON_FINITE
            elif abs(v) > limit:
                code = TOO_LARGE
            elif t == 1 and v < 0.0:
                code = NEG_WEIGHT
            if code != 0:
                err = s
                break
            if t == 0:
                label = v
            elif t == 1:
                weight = v
            else:
                base = v

        # ---- namespaces and features
        k1 = k
        p = bar
        while code == 0 and p < le:
            p += 1  # buf[p - 1] == '|'
            nsh = default_nsh
            anon = np.uint64(0)  # VW's count of the segment's anonymous ':v' features
            nsb = DEFAULT_NS
            scale = 1.0
            if p < le and not is_ws(buf[p]) and buf[p] != 124:
                if buf[p] == 58:
                    code = EMPTY_NAMESPACE
                    err = p
                    break
                s = p
                while p < le:
                    c = buf[p]
                    if c == 32 or c == 9 or c == 13 or c == 58 or c == 124:
                        break
                    p += 1
                if hash_all:
                    nsh = murmur3_32(buf, s, p, hash_seed)
                else:
                    nsh = hashstring(buf, s, p, hash_seed)
                nsb = buf[s]
                if p < le and buf[p] == 58:
                    if vw_numbers:
                        c, scale, j = vw_number(buf, p + 1, le, vle)
                    else:
                        c, scale, j = scan_number(buf, p + 1, le)
                    if c == NUM_SLOW:
                        scale = slow_value(p + 1, j, slow_spans, slow_pos, slow_vals, st)
                    elif c != NUM_OK:
                        j = p
                    if j == p or (j < le and not is_ws(buf[j]) and buf[j] != 124):
                        code = BAD_SCALE
                        err = p + 1
                        break
                    if not math.isfinite(scale):
                        code = NON_FINITE
                        err = p + 1
                        break
                    p = j
            while p < le:
                c = buf[np.uint64(p)]
                if c == 124:
                    break
                if c == 32 or c == 9 or c == 13:
                    p += 1
                    continue
                # the name runs to whitespace, ':' or '|'
                s = p
                e = -1
                h = np.uint64(0)
                anonymous = False
                if words and p + 16 <= n:
                    # a name of 1-7 digits, or one that starts with a non-digit, and its
                    # hash, 8 bytes at a time (e stays -1 for anything else)
                    w = load_u64(buf, p)
                    x = w ^ _ASCII0
                    t = first_byte(non_digits(x))
                    if t > _U0 and t < _U8 and ends_name(byte_at(w, t)) and not hash_all:
                        h = (digits_value(x, t) + np.uint64(nsh)) & _M32
                        e = p + np.int64(t)
                    elif t < _U8:
                        e = name_end(buf, p, n)
                        if e - p >= 16:
                            h = np.uint64(murmur3_32(buf, p, e, nsh))
                        elif e > 0:
                            w1 = load_u64(buf, p + 8)
                            h = np.uint64(murmur3_32_short(w, w1, e - p, nsh))
                if e > s:
                    p = e
                else:
                    # byte by byte, hashed on the way (digits accumulate; bytes <= 0x20
                    # need trimming); an empty name too
                    acc = np.uint64(0)
                    digits = True
                    low = False
                    while p < le:
                        c = buf[np.uint64(p)]
                        if c == 32 or c == 9 or c == 13 or c == 58 or c == 124:
                            break
                        if c >= 48 and c <= 57:
                            acc = acc * _U10 + np.uint64(c - 48)
                        else:
                            digits = False
                            if c <= 32:
                                low = True
                        p += 1
                    e = p
                    if s == e:
                        # VW's anonymous feature: ':v' takes the namespace's hash plus its
                        # count in the segment; ':string' chains from the hash of no name
                        anonymous = True
                    if hash_all:
                        h = np.uint64(murmur3_32(buf, s, e, nsh))
                    elif low:
                        h = np.uint64(hashstring(buf, s, e, nsh))
                    elif digits:
                        h = (acc + np.uint64(nsh)) & _M32
                    else:
                        h = np.uint64(murmur3_32(buf, s, e, nsh))
                if p >= le or buf[np.uint64(p)] != 58:
                    if scale != 0.0:
                        if abs(scale) > limit:  # the feature's value is the scale
                            code = TOO_LARGE
                            err = s
                            break
                        k1 = put(indices, values, ns, k1, h & mask, scale, nsb)
                    continue
                vs = p + 1
                ok = False
                if words and vs + 8 <= n_values:
                    # digits[.digits] then a separator, newline or '|': checked already
                    ok, sig, frac, length = plain_decimal(load_u64(buf, vs))
                    v = float(sig) / POW10[frac]
                    j = vs + np.int64(length)
                    if ok and scale == 1.0:
                        # finite, and zero only when its digits are: nothing waits on the
                        # division
                        p = j
                        if anonymous:
                            h = (np.uint64(nsh) + anon) & _M32
                            anon += np.uint64(1)
                        if sig != _U0:
                            k1 = put(indices, values, ns, k1, h & mask, v, nsb)
                        continue
                if not ok:
                    if vs >= le or is_ws(buf[np.uint64(vs)]) or buf[np.uint64(vs)] == 124:
                        code = BAD_VALUE
                        err = s
                        break
                    if vw_numbers:
                        # VW's own arithmetic inline (most values); strtof's by a call
                        ok, v, j = vw_fast(buf, vs, le, vle)
                        if not ok:
                            c, v, j = vw_number(buf, vs, le, vle)
                    else:
                        ok, v, j = fast_decimal(buf, vs, le)
                        if not ok:
                            c, v, j = scan_number(buf, vs, le)
                    if not ok:
                        if c == NUM_SLOW:
                            v = slow_value(vs, j, slow_spans, slow_pos, slow_vals, st)
                        elif c == NUM_NONE:
                            c = buf[vs]
                            if c == 43 or c == 45 or c == 46 or _e_only(buf, vs, le):
                                code = BAD_VALUE
                                err = s
                                break
                            # name:string, chain-hashed, value 1; the string runs to
                            # whitespace, ':' and '|' included (as VW)
                            q = vs
                            while q < le and not is_ws(buf[q]):
                                q += 1
                            if hash_all:
                                slot = np.uint64(murmur3_32(buf, vs, q, h)) & mask
                            else:
                                slot = np.uint64(hashstring(buf, vs, q, h)) & mask
                            k1 = put(indices, values, ns, k1, slot, 1.0, nsb)
                            p = q
                            continue
                    if j < le and not is_ws(buf[np.uint64(j)]) and buf[np.uint64(j)] != 124:
                        code = TOO_MANY_COLONS if buf[j] == 58 else BAD_VALUE
                        err = s
                        break
                v *= scale
                if vw_numbers:
                    v = np.float64(np.float32(v))  # VW's float32 product
                if not math.isfinite(v):
                    code = NON_FINITE
                    err = s
                    break
                if abs(v) > limit:
                    code = TOO_LARGE
                    err = s
                    break
                p = j
                if anonymous:  # (counted when its value is 0 too, as VW)
                    h = (np.uint64(nsh) + anon) & _M32
                    anon += np.uint64(1)
                if v != 0.0:
                    k1 = put(indices, values, ns, k1, h & mask, v, nsb)

        # ---- the row
        if code == 0 and grouping and k1 - k > 1:
            group_row(indices, values, ns, k, k1)  # (VW's order: the constant comes last)
        if code == 0 and constant:
            k1 = put(indices, values, ns, k1, _CONSTANT & mask, 1.0, CONSTANT_NS)
        if code == 0 and crossing:
            # room for the crosses, short of the bound of the later lines' own features
            room = indices.shape[0] - (n - pos) // 2 - 2 * (labels.shape[0] - row) - 64
            end = cross_row(indices, values, ns, k, k1, room, crosser)
            if end >= 0:
                k1 = end
            elif end == CROSS_CROWDED:
                code = TOO_MANY_CROSSES
            else:
                crossing = False
        status[row] = code
        line[row] = lineno
        line_start[row] = l0
        err_pos[row] = err
        crowded = code == TOO_MANY_CROSSES  # no features, as the expanding pass leaves it
        if code == 0 or crowded:
            if not crowded:
                k = k1
            labels[row] = nan if crowded else label
            weights[row] = 0.0 if crowded else weight
            bases[row] = base
            tag_start[row] = tag_s
            tag_end[row] = tag_e
            if touching:
                n_touch += 1
                if first_touch == 0:
                    first_touch = lineno
        else:
            labels[row] = nan
            weights[row] = 0.0
            bases[row] = 0.0
            tag_start[row] = tag_s  # -p keeps a skipped line's tag
            tag_end[row] = tag_e
        row += 1
        indptr[row] = k
        if crossing:
            crossed = row
    return row, k, n_touch, first_touch, overflow, crossed
