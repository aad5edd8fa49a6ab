"""Numba parser for svmlight / libsvm format.

Grammar::

    line  := label (whitespace token)* ['#' comment]
    token := index ':' number | 'qid:' digits

The label is a number (``+1``, ``-1``, ``0``, ``1`` or any real).  Indices
are numeric feature names in VW's default namespace, so by the all-digits rule
of ``hashstring`` the slot of index ``i`` is ``i mod 2**bits`` (its decimal
value wrapping at ``2**64``).  ``qid:n`` is checked and ignored.  A value of 0
drops the feature, as in VW text.  A line that is empty or only a comment is
not an example.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.hashing import CONSTANT_HASH
from streamlearn.io._numbers import NUM_OK, NUM_SLOW, scan_number
from streamlearn.io._scan import (
    CONSTANT_NS,
    DEFAULT_NS,
    is_ws,
    slow_value,
)
from streamlearn.io._words import (
    _ASCII0,
    _U0,
    _U8,
    byte_at,
    digits_value,
    find_byte,
    first_byte,
    non_digits,
    quick_value,
)
from streamlearn.io.batch import TOO_LARGE
from streamlearn.system.jit import jit, jit_noalloc, load_u64

BAD_LABEL = 1
BAD_VALUE = 6
NON_FINITE = 7
BAD_INDEX = 10
BAD_TOKEN = 11
TOO_MANY_COLONS = 12
BAD_QID = 14

_CONSTANT = np.uint64(CONSTANT_HASH)
_U10 = np.uint64(10)


@jit
def _is_qid(buf: np.ndarray, p: int, end: int) -> bool:
    return (
        p + 4 <= end
        and buf[p] == 113
        and buf[p + 1] == 105
        and buf[p + 2] == 100
        and buf[p + 3] == 58
    )


@jit_noalloc
def parse_svmlight_block(
    data: np.ndarray,
    first_line: int,
    mask: np.uint64,
    constant: bool,
    limit: float,
    slow_spans: np.ndarray,
    st: np.ndarray,
    slow_pos: np.ndarray,
    slow_vals: np.ndarray,
    words: bool,
    arrays: tuple,
) -> tuple[int, int, int, int, bool]:
    """Parse every svmlight line of ``data``; see :func:`streamlearn.io.parse.parse_block`.

    Arguments (``limit`` bounds labels and values) and result as for
    :func:`streamlearn.io.vw.parse_vw_block`
    (no tags here: 0, 0).  ``words`` lets newlines, comments, indices and
    plain values be found 8 bytes at a time (:mod:`streamlearn.io._words`);
    the result is the same.
    """
    n = data.shape[0]
    (
        labels, weights, bases, tag_start, tag_end, indptr, indices, values,
        status, line, line_start, err_pos, ns,
    ) = arrays  # fmt: skip
    buf = data
    nan = math.nan
    overflow = False
    row = 0
    k = 0
    pos = 0
    lineno = first_line - 1
    indptr[0] = 0
    while pos < n:
        l0 = ls = pos
        le = find_byte(buf, pos, n, 10, words)
        pos = le + 1
        lineno += 1
        if le - ls >= 3 and buf[ls] == 0xEF and buf[ls + 1] == 0xBB and buf[ls + 2] == 0xBF:
            ls += 3
        end = find_byte(buf, ls, le, 35, words)  # '#' starts a comment
        p = ls
        while p < end and is_ws(buf[p]):
            p += 1
        if p == end:
            continue  # blank or comment-only line: not an example
        need = k + (end - ls + 1) // 2 + 2
        if row >= labels.shape[0] or need > indices.shape[0]:
            overflow = True  # the arrays were sized from a wrong line count
            break

        code = 0
        err = -1
        s = p
        c, label, j = scan_number(buf, p, end)
        if c == NUM_SLOW:
            label = slow_value(p, j, slow_spans, slow_pos, slow_vals, st)
        elif c != NUM_OK:
            j = p
        if j == p or (j < end and not is_ws(buf[j])):
            code = BAD_LABEL
            err = s
        if code == 0 and not math.isfinite(label):
            code = NON_FINITE
            err = s
        if code == 0 and abs(label) > limit:
            code = TOO_LARGE
            err = s
        p = j
        k1 = k
        while code == 0:
            while p < end and is_ws(buf[p]):
                p += 1
            if p >= end:
                break
            s = p
            if _is_qid(buf, p, end):
                q = p + 4
                while q < end and buf[q] >= 48 and buf[q] <= 57:
                    q += 1
                if q == p + 4 or (q < end and not is_ws(buf[q])):
                    code = BAD_QID
                    err = s
                    break
                p = q
                continue
            acc = np.uint64(0)
            q = p
            if words and p + 8 <= n:
                w = load_u64(buf, p)
                x = w ^ _ASCII0
                t = first_byte(non_digits(x))
                if t > _U0 and t < _U8 and byte_at(w, t) == 58:
                    acc = digits_value(x, t)
                    q = p + np.int64(t)
            while q < end:
                c = buf[q]
                if c < 48 or c > 57:
                    break
                acc = acc * _U10 + np.uint64(c - 48)
                q += 1
            if q == p or q >= end or buf[q] != 58:
                r = q
                while r < end and not is_ws(buf[r]) and buf[r] != 58:
                    r += 1
                code = BAD_INDEX if (r < end and buf[r] == 58) else BAD_TOKEN
                err = s
                break
            vs = q + 1
            ok, v, j = quick_value(buf, vs, end, words)
            if not ok:
                c, v, j = scan_number(buf, vs, end)
                if c == NUM_SLOW:
                    v = slow_value(vs, j, slow_spans, slow_pos, slow_vals, st)
                elif c != NUM_OK:
                    code = BAD_VALUE
                    err = s
                    break
            if j < end and not is_ws(buf[j]):
                code = TOO_MANY_COLONS if buf[j] == 58 else BAD_VALUE
                err = s
                break
            if not math.isfinite(v):
                code = NON_FINITE
                err = s
                break
            if abs(v) > limit:
                code = TOO_LARGE
                err = s
                break
            if v != 0.0:
                indices[k1] = acc & mask
                values[k1] = v
                ns[k1] = DEFAULT_NS
                k1 += 1
            p = j

        status[row] = code
        line[row] = lineno
        line_start[row] = l0
        err_pos[row] = err
        tag_start[row] = l0
        tag_end[row] = l0
        if code == 0:
            if constant:
                indices[k1] = _CONSTANT & mask
                values[k1] = 1.0
                ns[k1] = CONSTANT_NS
                k1 += 1
            k = k1
            labels[row] = label
            weights[row] = 1.0
        else:
            labels[row] = nan
            weights[row] = 0.0
        bases[row] = 0.0
        row += 1
        indptr[row] = k
    return row, k, 0, 0, overflow
