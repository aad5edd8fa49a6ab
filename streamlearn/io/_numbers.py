"""Exact decimal-to-double conversion for the numba parsers.

:func:`scan_number` reads ``[+-]? (digits [. digits] | . digits) ([eE] [+-]? digits)?``
(or ``nan`` / ``inf`` / ``infinity``, any case) and returns the correctly
rounded double, equal to what Python's ``float()`` gives for the same text:

1. Clinger's fast path: a significand ``w <= 2**53`` and ``|e10| <= 22``; then
   ``w * 10**e10`` (or ``w / 10**-e10``) is one correctly rounded operation.
2. Otherwise the Eisel-Lemire algorithm (Lemire, "Number parsing at a gigabyte
   per second", 2021; the form here follows Go's ``strconv/eisel_lemire.go``)
   with a 128-bit table of powers of ten, for up to 19 significant digits.
3. What neither handles (more than 19 significant digits, subnormal results,
   the rare ambiguous halfway cases) comes back as ``NUM_SLOW``: the caller
   records the token's span and the Python wrapper re-parses exactly those
   tokens with ``float()``.  Nothing is ever approximated.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.system.jit import jit

NUM_OK = 0
"""A number was read; the value may still be nan/inf (callers check)."""
NUM_NONE = 1
"""No number starts here (the position is returned unchanged)."""
NUM_SLOW = 2
"""Valid syntax whose exact value must come from Python's ``float()``."""

POW10 = np.array([10.0**k for k in range(23)])  # exact doubles 1e0..1e22
_MIN_E10 = -348
_MAX_E10 = 347


def _power_table() -> np.ndarray:
    """128-bit mantissas of 10**e (rounded down), e in [-348, 347]: rows (hi, lo)."""
    rows = []
    for e in range(_MIN_E10, _MAX_E10 + 1):
        if e >= 0:
            v = 10**e
            n = v.bit_length()
            v = v >> (n - 128) if n > 128 else v << (128 - n)
        else:
            p = 10**-e
            v = (1 << (127 + p.bit_length())) // p
        rows.append((v >> 64, v & 0xFFFFFFFFFFFFFFFF))
    return np.array(rows, dtype=np.uint64)


_POW10_128 = _power_table()
_M32 = np.uint64(0xFFFFFFFF)
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U3 = np.uint64(3)
_U10 = np.uint64(10)
_S1 = np.uint64(1)
_S9 = np.uint64(9)
_S10 = np.uint64(10)
_S32 = np.uint64(32)
_S53 = np.uint64(53)
_S63 = np.uint64(63)
_X1FF = np.uint64(0x1FF)
_TWO53 = np.uint64(1 << 53)
_MASK52 = np.uint64((1 << 52) - 1)
_ALL1 = np.uint64(0xFFFFFFFFFFFFFFFF)


@jit
def _mul64(a: np.uint64, b: np.uint64) -> tuple[np.uint64, np.uint64]:
    """Full 64x64 -> 128-bit product as (hi, lo)."""
    a0 = a & _M32
    a1 = a >> _S32
    b0 = b & _M32
    b1 = b >> _S32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    p11 = a1 * b1
    mid = (p00 >> _S32) + (p01 & _M32) + (p10 & _M32)
    lo = (p00 & _M32) | ((mid & _M32) << _S32)
    hi = p11 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)
    return hi, lo


@jit
def _clz64(x: np.uint64) -> int:
    n = 0
    if x == _U0:
        return 64
    while (x >> _S63) == _U0:
        x = (x << _S1) & _ALL1
        n += 1
    return n


@jit
def eisel_lemire(w: np.uint64, e10: int) -> tuple[float, bool]:
    """``w * 10**e10`` correctly rounded, for ``0 < w < 2**64``; ``ok`` False when unsure."""
    if e10 < _MIN_E10:
        return 0.0, True
    if e10 > _MAX_E10:
        return math.inf, True
    clz = _clz64(w)
    w = (w << np.uint64(clz)) & _ALL1
    ret_exp2 = ((217706 * e10) >> 16) + 64 + 1023 - clz
    row = e10 - _MIN_E10
    x_hi, x_lo = _mul64(w, _POW10_128[row, 0])
    if (x_hi & _X1FF) == _X1FF and ((x_lo + w) & _ALL1) < w:
        y_hi, y_lo = _mul64(w, _POW10_128[row, 1])
        m_hi = x_hi
        m_lo = (x_lo + y_hi) & _ALL1
        if m_lo < x_lo:
            m_hi = (m_hi + _U1) & _ALL1
        if (m_hi & _X1FF) == _X1FF and m_lo == _ALL1 and ((y_lo + w) & _ALL1) < w:
            return 0.0, False
        x_hi = m_hi
        x_lo = m_lo
    msb = x_hi >> _S63
    mant = x_hi >> (msb + _S9)
    ret_exp2 -= 1 - int(msb)
    if x_lo == _U0 and (x_hi & _X1FF) == _U0 and (mant & _U3) == _U1:
        return 0.0, False
    mant += mant & _U1
    mant >>= _S1
    if (mant >> _S53) > _U0:
        mant >>= _S1
        ret_exp2 += 1
    if ret_exp2 > 0x7FE:  # at least 2**1024: overflows to inf whatever the rounding
        return math.inf, True
    if ret_exp2 < 1:  # subnormal: left to the exact fallback
        return 0.0, False
    return math.ldexp(float(mant), int(ret_exp2 - 1075)), True


@jit
def _lower(c: int) -> int:
    return c | 0x20


@jit
def scan_number(buf: np.ndarray, i: int, end: int) -> tuple[int, float, int]:
    """Read a decimal number at ``buf[i:end]``.

    Returns
    -------
    code : int
        ``NUM_OK``, ``NUM_NONE`` or ``NUM_SLOW``.
    value : float
        The value (``nan``/``inf`` possible) when ``code == NUM_OK``.
    j : int
        Position just after the number (``i`` when ``NUM_NONE``).  An ``e``
        not followed by digits is not part of the number.
    """
    j = i
    neg = False
    if j < end and (buf[j] == 43 or buf[j] == 45):  # + -
        neg = buf[j] == 45
        j += 1
    # nan, inf, infinity (any case), as float() and strtod accept them
    if j + 2 < end:
        c0 = _lower(buf[j])
        if c0 == 110 and _lower(buf[j + 1]) == 97 and _lower(buf[j + 2]) == 110:  # nan
            return NUM_OK, math.nan, j + 3
        if c0 == 105 and _lower(buf[j + 1]) == 110 and _lower(buf[j + 2]) == 102:  # inf
            k = j + 3
            if (
                k + 4 < end
                and _lower(buf[k]) == 105
                and _lower(buf[k + 1]) == 110
                and _lower(buf[k + 2]) == 105
                and _lower(buf[k + 3]) == 116
                and _lower(buf[k + 4]) == 121
            ):
                k += 5
            return NUM_OK, -math.inf if neg else math.inf, k
    w = _U0
    nsig = 0  # significant digits in w
    ndig = 0  # digits seen
    dropped = 0  # significant integer digits beyond 19 (each scales by 10)
    nfrac = 0  # fraction digits folded into w (incl. leading zeros)
    slow = False
    while j < end:
        d = np.int64(buf[j]) - 48
        if d < 0 or d > 9:
            break
        if nsig > 0 or d != 0:
            if nsig < 19:
                w = w * _U10 + np.uint64(d)
                nsig += 1
            else:
                dropped += 1
                slow = True
        ndig += 1
        j += 1
    if j < end and buf[j] == 46:  # .
        j += 1
        while j < end:
            d = np.int64(buf[j]) - 48
            if d < 0 or d > 9:
                break
            if nsig > 0 or d != 0:
                if nsig < 19:
                    w = w * _U10 + np.uint64(d)
                    nsig += 1
                    nfrac += 1
                else:
                    slow = True
            else:
                nfrac += 1
            ndig += 1
            j += 1
    if ndig == 0:
        return NUM_NONE, 0.0, i
    exp = 0
    if j < end and _lower(buf[j]) == 101:  # e
        k = j + 1
        eneg = False
        if k < end and (buf[k] == 43 or buf[k] == 45):
            eneg = buf[k] == 45
            k += 1
        if k < end and buf[k] >= 48 and buf[k] <= 57:
            while k < end and buf[k] >= 48 and buf[k] <= 57:
                if exp < 100000:
                    exp = exp * 10 + (np.int64(buf[k]) - 48)
                k += 1
            j = k
            if eneg:
                exp = -exp
    if slow:
        return NUM_SLOW, 0.0, j
    if w == _U0:
        return NUM_OK, -0.0 if neg else 0.0, j
    e10 = exp + dropped - nfrac
    if w > _TWO53 and e10 < 0:  # "...0" fraction digits: fewer digits may hit the fast path
        while e10 < 0 and w % _U10 == _U0:
            w //= _U10
            e10 += 1
    if w <= _TWO53 and -22 <= e10 <= 22:
        v = float(w)
        if e10 >= 0:
            v = v * POW10[e10]
        else:
            v = v / POW10[-e10]
    else:
        v, ok = eisel_lemire(w, e10)
        if not ok:
            return NUM_SLOW, 0.0, j
    return NUM_OK, -v if neg else v, j


def scan_number_py(text: bytes) -> tuple[int, float, int]:
    """Run :func:`scan_number` on a bytes object (tests and debugging)."""
    buf = np.frombuffer(text, dtype=np.uint8).copy()
    return scan_number(buf, 0, len(buf))
