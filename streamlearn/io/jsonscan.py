"""JSON's tokens as the compiled JSON reader (:mod:`streamlearn.io.jsonfast`) scans them.

Kernels over a line's bytes (``buf[p:end]``), each returning where a token ends, or -1 where
the bytes are not strict JSON this reader takes (an escape, a control byte, nesting past
:data:`MAX_DEPTH`): the line then goes to the Python reader, which gives its text or VW's
reason.  :func:`number_token` says how a number is written in VW text (module docstring of
:mod:`~streamlearn.io.jsonfast`).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.io._numbers import NUM_OK, scan_number
from streamlearn.io._scan import fast_decimal
from streamlearn.io.vwfloat import strtof_of, vw_fast, vw_number
from streamlearn.system.jit import jit_inline, jit_noalloc

MAX_DEPTH = 48
"""Nesting beyond it: the Python reader's (which refuses past 100)."""




@jit_inline
def skip_ws(buf: np.ndarray, p: int, end: int) -> int:
    """The first position at or after ``p`` that is not JSON whitespace."""
    while p < end:
        c = buf[p]
        if c != 32 and c != 9 and c != 10 and c != 13:
            break
        p += 1
    return p


@jit_inline
def string_end(buf: np.ndarray, p: int, end: int) -> int:
    """``buf[p]`` is a string's opening quote: its closing quote's position, or -1 (an
    escape or a control byte: the Python reader's)."""
    q = p + 1
    while q < end:
        c = buf[q]
        if c == 34:
            return q
        if c == 92 or c < 32:
            return -1
        q += 1
    return -1


@jit_inline
def number_end(buf: np.ndarray, p: int, end: int) -> int:
    """The end of a JSON number (strict grammar) at ``p``, or -1."""
    q = p
    if q < end and buf[q] == 45:
        q += 1
    if q >= end:
        return -1
    if buf[q] == 48:
        q += 1
    elif 49 <= buf[q] <= 57:
        while q < end and 48 <= buf[q] <= 57:
            q += 1
    else:
        return -1
    if q < end and buf[q] == 46:
        q += 1
        k = q
        while q < end and 48 <= buf[q] <= 57:
            q += 1
        if q == k:
            return -1
    if q < end and (buf[q] == 101 or buf[q] == 69):
        q += 1
        if q < end and (buf[q] == 43 or buf[q] == 45):
            q += 1
        k = q
        while q < end and 48 <= buf[q] <= 57:
            q += 1
        if q == k:
            return -1
    return q


@jit_inline
def literal(buf: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """``true`` (1), ``false`` (0), ``null`` (2) at ``p``: ``(kind, end)``, or ``(-1, -1)``."""
    if p + 4 <= end and buf[p] == 116 and buf[p + 1] == 114 and buf[p + 2] == 117 \
            and buf[p + 3] == 101:  # fmt: skip
        return 1, p + 4
    if p + 4 <= end and buf[p] == 110 and buf[p + 1] == 117 and buf[p + 2] == 108 \
            and buf[p + 3] == 108:  # fmt: skip
        return 2, p + 4
    if p + 5 <= end and buf[p] == 102 and buf[p + 1] == 97 and buf[p + 2] == 108 \
            and buf[p + 3] == 115 and buf[p + 4] == 101:  # fmt: skip
        return 0, p + 5
    return -1, -1


@jit_inline
def key_end(buf: np.ndarray, p: int, end: int) -> int:
    """A key and its ``:`` at ``p``: the position after the ``:``, or -1."""
    if p >= end or buf[p] != 34:
        return -1
    q = string_end(buf, p, end)
    if q < 0:
        return -1
    q = skip_ws(buf, q + 1, end)
    if q >= end or buf[q] != 58:
        return -1
    return q + 1


@jit_noalloc
def skip_value(buf: np.ndarray, p: int, end: int) -> int:
    """The end of the JSON value at ``p`` (read, not kept), or -1 where it is not strict
    JSON the kernel reads (an escape, nesting past :data:`MAX_DEPTH`)."""
    depth = 0
    objects = 0  # bit k: the container at depth k + 1 is an object
    expect_value = True
    while True:
        p = skip_ws(buf, p, end)
        if p >= end:
            return -1
        c = buf[p]
        if expect_value:
            if c == 123 or c == 91:  # { [
                depth += 1
                if depth > MAX_DEPTH:
                    return -1
                objects = (objects << 1) | (1 if c == 123 else 0)
                p = skip_ws(buf, p + 1, end)
                if p < end and buf[p] == (125 if c == 123 else 93):  # {} []
                    depth -= 1
                    objects >>= 1
                    p += 1
                    expect_value = False
                    if depth == 0:
                        return p
                elif c == 123:
                    p = key_end(buf, p, end)
                    if p < 0:
                        return -1
                continue
            if c == 34:
                q = string_end(buf, p, end)
                if q < 0:
                    return -1
                p = q + 1
            elif c == 45 or 48 <= c <= 57:
                p = number_end(buf, p, end)
                if p < 0:
                    return -1
            else:
                kind, p = literal(buf, p, end)
                if kind < 0:
                    return -1
            expect_value = False
            if depth == 0:
                return p
            continue
        # after a value inside an object or an array: ',' or the container's end
        in_object = (objects & 1) == 1
        if c == 44:
            p = skip_ws(buf, p + 1, end)
            if in_object:
                p = key_end(buf, p, end)
                if p < 0:
                    return -1
            expect_value = True
            continue
        if c == (125 if in_object else 93):
            depth -= 1
            objects >>= 1
            p += 1
            if depth == 0:
                return p
            continue
        return -1


@jit_inline
def same(buf: np.ndarray, s: int, e: int, word: np.ndarray) -> bool:
    if e - s != word.shape[0]:
        return False
    for q in range(e - s):
        if buf[s + q] != word[q]:
            return False
    return True


@jit_inline
def same_lower(buf: np.ndarray, s: int, e: int, word: np.ndarray) -> bool:
    if e - s != word.shape[0]:
        return False
    for q in range(e - s):
        c = buf[s + q]
        if 65 <= c <= 90:
            c = c + 32
        if c != word[q]:
            return False
    return True


@jit_inline
def name_ok(buf: np.ndarray, s: int, e: int) -> bool:
    """Whether ``buf[s:e]`` stands in VW text as it is (``jsonreader.expressible``)."""
    return e > s and key_part_ok(buf, s, e)


@jit_inline
def number_token(buf: np.ndarray, s: int, e: int, text: bool) -> tuple[int, float]:
    """How the JSON number ``buf[s:e]`` is written: 0 as it is, 1 with ``e+0`` appended, -1
    not here (module docstring); and VW's float32 of it.  Without ``text`` (the number is not
    written: :mod:`streamlearn.io.jsondirect`), 0 for every number the reader can give VW's
    float32 of, the nearest to the token's double."""
    neg = buf[s] == 45
    ok, d, j = fast_decimal(buf, s + 1 if neg else s, e)  # (most tokens: short decimals)
    if ok and j == e:
        if neg:
            d = -d
    else:
        code, d, j = scan_number(buf, s, e)
        if code != NUM_OK or j != e:
            return -1, 0.0
    f = np.float64(np.float32(d))
    if not math.isfinite(f):
        return -1, 0.0
    if not text:
        return 0, f
    ok, v, j = vw_fast(buf, s, e, e)
    if ok and j == e and v == f:
        return 0, f
    if not ok:
        c2, v, j2 = vw_number(buf, s, e, e)
        if c2 == NUM_OK and j2 == e and v == f:
            return 0, f
    for q in range(s, e):
        if buf[q] == 101 or buf[q] == 69:
            return -1, 0.0
    t, exact = strtof_of(d)
    if exact and t == f:
        return 1, f
    return -1, 0.0


@jit_inline
def key_part_ok(buf: np.ndarray, s: int, e: int) -> bool:
    """A string feature's key holds no byte VW text cannot (it may be empty)."""
    for q in range(s, e):
        c = buf[q]
        if c <= 32 or c == 58 or c == 124:
            return False
    return True
