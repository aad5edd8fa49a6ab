"""Small numba helpers shared by the VW and svmlight line parsers."""

from __future__ import annotations

import math
import mmap

import numpy as np

from streamlearn.io._numbers import NUM_OK, NUM_SLOW, POW10, scan_number
from streamlearn.system.jit import jit, jit_inline

DEFAULT_NS = 32
"""Namespace byte of a feature in the default namespace (VW's ``' '``)."""
CONSTANT_NS = 128
"""Namespace byte of the constant feature (VW's ``constant_namespace``)."""

BLANK = -1
"""Line status for a line that is not an example (empty, whitespace, comment)."""


@jit
def is_ws(c: int) -> bool:
    """Separator bytes inside a line: space, tab, carriage return."""
    return c == 32 or c == 9 or c == 13


@jit
def slow_value(
    i: int,
    j: int,
    slow_spans: np.ndarray,
    slow_pos: np.ndarray,
    slow_vals: np.ndarray,
    st: np.ndarray,
) -> float:
    """Value of the ``NUM_SLOW`` token ``buf[i:j]`` under the two-pass protocol.

    First pass (``slow_pos`` empty): the span is recorded in ``slow_spans``
    (while there is room; ``st[0]`` counts them all) and the placeholder 1.0 is
    returned.  A placeholder is finite, positive and non-zero, so it never ends
    a line early: the second pass visits a subset of the first pass's slow
    tokens.  Second pass: the exact value (from Python's ``float()``) is looked
    up by the token's start position; ``st[1]`` is a cursor over the sorted
    ``slow_pos``.  A token missing there reads as NaN, which marks the line
    malformed rather than guessing.

    Call it only on the rare slow branch: a non-inlined call with array
    arguments costs atomic reference-count updates.
    """
    if slow_pos.shape[0] > 0:
        c = st[1]
        while c < slow_pos.shape[0] and slow_pos[c] < i:
            c += 1
        st[1] = c
        if c < slow_pos.shape[0] and slow_pos[c] == i:
            return slow_vals[c]
        return math.nan
    n = st[0]
    if n < slow_spans.shape[0]:
        slow_spans[n, 0] = i
        slow_spans[n, 1] = j
    st[0] = n + 1
    return 1.0


@jit_inline
def fast_decimal(buf: np.ndarray, i: int, end: int) -> tuple[bool, float, int]:
    """The common case ``digits[.digits]`` with at most 15 digits, exactly.

    ``w < 10**15 < 2**53`` and at most 15 fraction digits, so ``w / 10**f`` is
    Clinger's fast path (correctly rounded).  Anything else (sign, exponent,
    more digits, no digits) returns ``ok=False``: use :func:`scan_number`.
    The byte after the number is not checked.
    """
    w = 0
    nd = 0
    j = i
    while j < end:
        d = np.int64(buf[j]) - 48
        if d < 0 or d > 9:
            break
        w = w * 10 + d
        nd += 1
        j += 1
    nf = 0
    if j < end and buf[j] == 46:
        j += 1
        while j < end:
            d = np.int64(buf[j]) - 48
            if d < 0 or d > 9:
                break
            w = w * 10 + d
            nf += 1
            j += 1
    if nd + nf == 0 or nd + nf > 15 or (j < end and (buf[j] | 0x20) == 101):
        return False, 0.0, i
    if nf == 0:
        return True, float(w), j
    return True, float(w) / POW10[nf], j


@jit
def count_newlines(data: np.ndarray) -> int:
    n = 0
    for i in range(data.shape[0]):
        n += data[i] == 10
    return n


@jit
def read_number(
    buf: np.ndarray,
    i: int,
    end: int,
    slow_spans: np.ndarray,
    slow_pos: np.ndarray,
    slow_vals: np.ndarray,
    st: np.ndarray,
) -> tuple[int, float, int]:
    """:func:`scan_number` with ``NUM_SLOW`` resolved by :func:`slow_value`.

    For per-line numbers (labels, weights, scales); per-feature values inline
    :func:`fast_decimal` / :func:`scan_number` / :func:`slow_value` instead.
    """
    code, v, j = scan_number(buf, i, end)
    if code == NUM_SLOW:
        v = slow_value(i, j, slow_spans, slow_pos, slow_vals, st)
        code = NUM_OK
    return code, v, j


def feature_bound(n_bytes: int, max_rows: int) -> int:
    """Features a block of ``n_bytes`` with at most ``max_rows`` rows can hold, at most.

    The kernels need room for ``(line bytes + 1) // 2 + 2`` features per line
    (a feature takes a byte and a separator; the constant and one spare), so
    the sum over a block's lines is below this.
    """
    return n_bytes // 2 + 2 * max_rows + 64


def lazy_array(n: int, dtype: type) -> np.ndarray:
    """An uninitialised array on an anonymous mapping of its own, taken 4 KiB at a time.

    numpy puts an array of 4 MB or more on transparent huge pages: a block's
    feature arrays, sized for the worst case and filled to a fifth, would then
    hold whole 2 MB pages that are mostly empty.
    """
    return np.frombuffer(mmap.mmap(-1, max(n * np.dtype(dtype).itemsize, 1)), dtype, n)


def block_arrays(max_rows: int, feature_cap: int) -> tuple[np.ndarray, ...]:
    """Uninitialised output arrays of a block kernel, in the order it takes them.

    Row arrays hold ``max_rows`` rows (``indptr`` one more); feature arrays
    ``feature_cap`` entries, which must be :func:`feature_bound` or more.
    """
    return (
        np.empty(max_rows, dtype=np.float64),  # labels
        np.empty(max_rows, dtype=np.float64),  # weights
        np.empty(max_rows, dtype=np.float64),  # bases
        np.empty(max_rows, dtype=np.int64),  # tag_start
        np.empty(max_rows, dtype=np.int64),  # tag_end
        np.empty(max_rows + 1, dtype=np.int64),  # indptr
        lazy_array(feature_cap, np.uint32),  # indices
        lazy_array(feature_cap, np.float64),  # values
        np.empty(max_rows, dtype=np.int32),  # status
        np.empty(max_rows, dtype=np.int64),  # line
        np.empty(max_rows, dtype=np.int64),  # line_start
        np.empty(max_rows, dtype=np.int64),  # err_pos
        lazy_array(feature_cap, np.uint8),  # ns: first byte of each feature's namespace
    )
