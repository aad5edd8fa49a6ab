"""Word-at-a-time scanning for the line parsers: 8 bytes per step (SWAR).

A byte loop pays a branch per byte and mispredicts where each token ends;
these helpers classify the 8 bytes of a little-endian word at once with
integer arithmetic (Lamport's and Mycroft's bit tricks, as in Lemire's
"Number parsing at a gigabyte per second") and find a token's end with one
``tzcnt``.  They are only a faster route to what the byte loops compute:
the parsers take them for the common shapes (a name of 1-7 digits, a name
without digits first, a plain ``digits[.digits]`` value) and fall back to
the byte loops for everything else, so no result depends on the route
(``tests/test_words.py`` compares the two on generated blocks).

Flag words carry ``0x80`` in each byte that matches.  Where a test can flag
a byte above a true match (the borrow in ``x - 0x01..``), only the lowest
flag is exact, which is the only one :func:`first_byte` reads.

Callers load words with :func:`~streamlearn.system.jit.load_u64` only where
``i + 8 <= len(buf)``.
"""

from __future__ import annotations

import numpy as np

from streamlearn.io._numbers import POW10
from streamlearn.io._scan import fast_decimal
from streamlearn.system.jit import jit_inline, load_u64, trailing_zeros

_ONES = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_ASCII0 = np.uint64(0x3030303030303030)
_ADD76 = np.uint64(0x7676767676767676)
_BELOW33 = np.uint64(0x2121212121212121)
_COLONS = np.uint64(0x3A3A3A3A3A3A3A3A)
_BARS = np.uint64(0x7C7C7C7C7C7C7C7C)
_MUL1 = np.uint64(100 + (1000000 << 32))
_MUL2 = np.uint64(1 + (10000 << 32))
_PAIRS = np.uint64(0x000000FF000000FF)
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U3 = np.uint64(3)
_U7 = np.uint64(7)
_U8 = np.uint64(8)
_U10 = np.uint64(10)
_U16 = np.uint64(16)
_U32 = np.uint64(32)
_U63 = np.uint64(63)
_U80 = np.uint64(0x80)
_UFF = np.uint64(0xFF)
_DOT = np.uint64(46)
_BAR = np.uint64(124)
_SEPARATORS = np.uint64((1 << 9) | (1 << 13) | (1 << 32))
"""Bits of tab, carriage return and space: the separators inside a line."""
_VALUE_ENDS = _SEPARATORS | np.uint64(1 << 10)
"""Bytes below 64 that may follow a number: a separator or the newline ('|' too)."""
_NAME_ENDS = _VALUE_ENDS | np.uint64(1 << 58)
"""Bytes below 64 that may follow a feature name: also ':' ('|' too)."""


@jit_inline
def first_byte(flags: np.uint64) -> np.uint64:
    """Index (0-7) of the lowest byte flagged in ``flags``; 8 when none is."""
    return trailing_zeros(flags) >> _U3


@jit_inline
def byte_at(w: np.uint64, k: np.uint64) -> np.uint64:
    """Byte ``k`` (0-7) of the word ``w``: the byte at ``i + k`` when ``w`` was loaded at ``i``."""
    return (w >> ((k & _U7) << _U3)) & _UFF


@jit_inline
def _in_set(c: np.uint64, low_bits: np.uint64) -> bool:
    """``c`` is '|' or a byte below 64 whose bit is set in ``low_bits``."""
    return c == _BAR or (c < 64 and ((low_bits >> (c & _U63)) & _U1) == _U1)


@jit_inline
def ends_name(c: np.uint64) -> bool:
    """``c`` ends a feature name: a separator, the newline, ':' or '|'."""
    return _in_set(c, _NAME_ENDS)


@jit_inline
def ends_value(c: np.uint64) -> bool:
    """``c`` may follow a feature's value: a separator, the newline or '|'."""
    return _in_set(c, _VALUE_ENDS)


@jit_inline
def non_digits(x: np.uint64) -> np.uint64:
    """Flags the bytes of ``x = word ^ 0x30..30`` that were not ASCII digits (exact in every byte).

    A digit becomes 0-9 under the xor.  ``(x & 0x7f) + 0x76`` reaches bit 7
    exactly when the low seven bits are 10 or more, without a carry into the
    next byte; bytes with bit 7 already set are not digits either.
    """
    return (((x & _LOW7) + _ADD76) | x) & _HIGH


@jit_inline
def digits_value(x: np.uint64, k: np.uint64) -> np.uint64:
    """Decimal value of the first ``k`` (1-8) bytes of ``x = word ^ 0x30..30``, all digits.

    Shifting the digits to the top of the word pads them with leading zeros;
    three multiplications then combine pairs, quads and the two halves.
    """
    v = x << ((_U8 - k) << _U3)
    v = v * _U10 + (v >> _U8)
    return (((v & _PAIRS) * _MUL1) + (((v >> _U16) & _PAIRS) * _MUL2)) >> _U32


@jit_inline
def delimiters(w: np.uint64) -> np.uint64:
    """Flags bytes of ``w`` below 33 (separators, newline, control bytes), ':' and '|'."""
    low = (w - _BELOW33) & ~w
    colon = w ^ _COLONS
    colon = (colon - _ONES) & ~colon
    bar = w ^ _BARS
    bar = (bar - _ONES) & ~bar
    return (low | colon | bar) & _HIGH


@jit_inline
def find_byte(buf: np.ndarray, i: int, n: int, byte: int, words: bool) -> int:
    """Position of the first ``byte`` in ``buf[i:n]``, or ``n`` (8 bytes a step if ``words``)."""
    pattern = _ONES * np.uint64(byte)
    while words and i + 8 <= n:
        z = load_u64(buf, i) ^ pattern
        z = (z - _ONES) & ~z & _HIGH
        if z != _U0:
            return i + np.int64(first_byte(z))
        i += 8
    while i < n and buf[np.uint64(i)] != byte:
        i += 1
    return i


@jit_inline
def name_end(buf: np.ndarray, i: int, n: int) -> int:
    """End of the feature name that starts at ``i``, or -1 when the byte loop must decide.

    The name runs to the first separator, newline, ':' or '|'; -1 when that
    is another byte below 33 (which VW's hash trims), when the name is empty
    or when no delimiter lies in whole words before ``n``.  The first two
    words are read together, so that a name's length (most are under 16
    bytes) costs no branch.
    """
    e = -1
    j = i
    if i + 16 <= n:
        f0 = first_byte(delimiters(load_u64(buf, i)))
        f1 = first_byte(delimiters(load_u64(buf, i + 8)))
        if f0 < _U8 or f1 < _U8:
            e = i + np.int64(f0 if f0 < _U8 else _U8 + f1)
        j = i + 16
    while e < 0 and j + 8 <= n:
        f = first_byte(delimiters(load_u64(buf, j)))
        if f < _U8:
            e = j + np.int64(f)
        j += 8
    if e <= i or not ends_name(np.uint64(buf[np.uint64(e)])):
        return -1
    return e


@jit_inline
def plain_decimal(w: np.uint64) -> tuple[bool, np.uint64, np.uint64, np.uint64]:
    """A value ``digits``, ``digits.digits``, ``digits.`` or ``.digits`` at the start of ``w``.

    Returns ``ok, significand, fraction digits, length``: ``ok`` when the
    word holds such a number (1-7 digits) followed by a separator, newline
    or '|', so that the value is ``significand / 10**fraction_digits``, the
    very division :func:`~streamlearn.io._scan.fast_decimal` makes.  Anything
    else (signs, exponents, more digits, another byte after the number) is
    left to the byte loop.
    """
    x = w ^ _ASCII0
    flags = non_digits(x)
    a = first_byte(flags) & _U7
    dot = byte_at(w, a) == _DOT
    frac = _U0
    if dot:
        low = (_U1 << (a << _U3)) - _U1
        x = (x & low) | ((x >> _U8) & ~low)  # the dot taken out
        flags ^= _U80 << (a << _U3)
    b = first_byte(flags)
    if dot:
        frac = b - a - _U1
    k = b - np.uint64(dot)
    ok = b < _U8 and k > _U0 and ends_value(byte_at(w, b))
    return ok, digits_value(x, k | np.uint64(k == _U0)), frac, b


@jit_inline
def quick_value(buf: np.ndarray, i: int, end: int, words: bool) -> tuple[bool, float, int]:
    """A feature's value at ``buf[i:end]`` by the quick routes: ``ok, value, end of it``.

    With ``words``, :func:`plain_decimal` on one word first (when 8 bytes are
    there to load), then :func:`~streamlearn.io._scan.fast_decimal`; ``ok``
    False leaves the token to :func:`~streamlearn.io._numbers.scan_number`.
    """
    if words and i + 8 <= buf.shape[0]:
        ok, sig, frac, length = plain_decimal(load_u64(buf, i))
        if ok:
            return True, float(sig) / POW10[frac], i + np.int64(length)
    return fast_decimal(buf, i, end)
