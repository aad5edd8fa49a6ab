"""Vowpal Wabbit's decimal reader, for ``sl vw`` (``TrainConfig.numbers == "vw"``).

VW 9 reads every number of a text line (label, importance weight, base,
namespace scale, feature value) with its own ``parse_float``
(``vw/core/parse_primitives.h``), which is not correctly rounded.  What it does,
read from its source (VW 9.11) and checked against ``vowpalwabbit``'s own parser
(``tests/io/test_vw_numbers.py``):

* an optional ``-`` (a ``+`` is not taken: see the fallback), then the integer
  digits, accumulated in a *float*: ``acc = acc * 10 + c - '0'`` with ``c`` the
  character's code, three float32 operations (multiply, add the code, subtract
  48), each rounded;
* after a ``.``, the fraction digits: ``acc = acc * 10 + digit`` (two float32
  operations); digits after the 35th are skipped;
* after ``e`` or ``E``, an optional ``-`` (not ``+``) and the exponent's digits
  (an ``int``);
* if the next byte is a space, a tab, a newline or the end (of the token for
  labels; of the line, after VW drops one ``\\r``, for scales and feature
  values), the value is ``acc * pow10[e]`` in float32, negated for ``-``, where
  ``e = int8(exponent - fraction digits)`` (the C cast keeps the low 8 bits:
  ``1e200`` has ``e = -56``) and ``pow10`` is VW's table: ``10**k`` by repeated
  float32 multiplication for k = 0..38, ``10**-k`` by repeated float32 division
  for k = 1..37, ``inf`` above 38 and 0 below -37.  So ``0.125`` is
  ``125 * 0.001f`` = 0.12499999255 (one float below 0.125), ``1e5`` is exact;
* anything else (a ``+``, ``e+5``, a value touching ``|`` or a second ``\\r``,
  ``inf``, ``nan``) goes to C's ``strtof``: the correctly rounded float32.

:func:`vw_number` is that reader for the parse kernel; its results are float32
values held in float64.  Which tokens are numbers is sl's grammar in both modes
(:func:`~streamlearn.io._numbers.scan_number`; a line VW would warn about stays
malformed), only the values differ.  :func:`vw_parse_float` states the same
reader in plain Python and numpy (tests and ``scripts/vw_parity.py``), and
:func:`float32_of_decimal` is the exact ``strtof`` the parse wrapper uses for
the rare fallback tokens the kernel leaves to Python (``NUM_SLOW``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from streamlearn.io._numbers import NUM_OK, NUM_SLOW, scan_number
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64


def _vw_pow10() -> np.ndarray:
    """VW's ``fast_pow10`` table, index ``e + 37`` for ``e`` in -37..38 (float32)."""
    pos = [F32(1.0)]
    for _ in range(38):
        pos.append(F32(pos[-1] * F32(10.0)))
    neg = [F32(1.0)]
    for _ in range(37):
        neg.append(F32(neg[-1] / F32(10.0)))
    return np.array(neg[:0:-1] + pos, dtype=np.float32)


VW_POW10 = _vw_pow10()
"""``VW_POW10[e + 37]`` is VW's float32 ``10**e``, ``e`` in -37..38."""
_MID_ZERO = 2.0**-150  # halfway between 0 and the least float32


@jit_inline
def _vw_scale(e8: int) -> np.float32:
    """VW's ``fast_pow10(int8_t(e))`` from the low 8 bits of ``e``."""
    e = e8 - 256 if e8 >= 128 else e8
    if e > 38:
        return F32(math.inf)
    if e < -37:
        return F32(0.0)
    return VW_POW10[e + 37]


@jit_inline
def vw_fast(buf: np.ndarray, i: int, end: int, vend: int) -> tuple[bool, float, int]:
    """VW's own arithmetic on ``buf[i:end]``: ``ok, value, end of the number``.

    ``ok`` is False when VW would hand the token to ``strtof`` (no terminator
    after it: a space, tab, newline or ``vend``, VW's end of the line or token),
    and for what sl's grammar does not take as VW reads it (no digit at all, an
    ``e`` without digits): :func:`vw_number` decides those.
    """
    p = i
    neg = False
    if p < end and buf[p] == 45:  # '-' (VW does not take '+' here)
        neg = True
        p += 1
    acc = F32(0.0)
    nd = 0
    while p < end:
        c = np.int64(buf[p])
        if c < 48 or c > 57:
            break
        acc = F32(F32(acc * F32(10.0)) + F32(c)) - F32(48.0)  # acc * 10 + *p - '0'
        nd += 1
        p += 1
    nf = 0
    if p < end and buf[p] == 46:  # '.'
        p += 1
        while p < end:
            d = np.int64(buf[p]) - 48
            if d < 0 or d > 9:
                break
            if nf < 35:
                acc = F32(acc * F32(10.0)) + F32(d)
                nf += 1
            nd += 1
            p += 1
    e8 = 0  # the exponent's low 8 bits: all the int8 cast keeps
    if p < end and (buf[p] | 0x20) == 101:  # e, E
        p += 1
        eneg = False
        if p < end and buf[p] == 45:
            eneg = True
            p += 1
        k = p
        while p < end:
            d = np.int64(buf[p]) - 48
            if d < 0 or d > 9:
                break
            e8 = (e8 * 10 + d) & 0xFF
            p += 1
        if p == k:
            return False, 0.0, i
        if eneg:
            e8 = (256 - e8) & 0xFF
    if nd == 0:
        return False, 0.0, i
    if p != vend and not (p < end and (buf[p] == 32 or buf[p] == 9 or buf[p] == 10)):
        return False, 0.0, i
    v = acc * _vw_scale((e8 - nf) & 0xFF)
    if neg:
        v = -v
    return True, F64(v), p


@jit
def strtof_of(v: float) -> tuple[float, bool]:
    """The float32 ``strtof`` gives for a decimal whose correctly rounded double is ``v``.

    ``float32(v)`` is it unless ``v`` lies exactly halfway between two float32
    (then the decimal itself decides): ``ok`` False, for the exact fallback.
    """
    f = F64(F32(v))
    if f == v or not math.isfinite(v):
        return f, True
    a = abs(v)
    fa = abs(f)
    if fa == 0.0:
        return f, a != _MID_ZERO
    if math.isinf(fa):  # beyond the largest float32 by half an ulp or more
        return f, a != 2.0**128 - 2.0**103
    m, ex = math.frexp(fa)
    up = math.ldexp(1.0, max(ex - 24, -149))  # the float32 ulp above fa
    if a > fa:
        mid = fa + up * 0.5
    else:
        down = up * 0.5 if m == 0.5 and ex - 25 >= -149 else up
        mid = fa - down * 0.5
    return f, a != mid


@jit
def vw_number(buf: np.ndarray, i: int, end: int, vend: int) -> tuple[int, float, int]:
    """A number at ``buf[i:end]`` as VW reads it: ``code, value, end``, as
    :func:`~streamlearn.io._numbers.scan_number` returns them.

    ``vend`` is where VW's line (or token) ends: the number is VW's own
    arithmetic when it ends there or at a space, tab or newline
    (:func:`vw_fast`), else ``strtof``'s correctly rounded float32.  ``NUM_SLOW``:
    a fallback token whose value needs :func:`float32_of_decimal`.
    """
    ok, v, j = vw_fast(buf, i, end, vend)
    if ok:
        return NUM_OK, v, j
    code, v, j = scan_number(buf, i, end)
    if code == NUM_OK:
        v, exact = strtof_of(v)
        if not exact:
            code = NUM_SLOW
    return code, v, j


# ---------------------------------------------------------------------------
# plain Python


def float32_of_decimal(text: str | bytes) -> float:
    """The correctly rounded float32 of a decimal (C's ``strtof``), exactly, as a float.

    >>> float32_of_decimal("0.1") == float(np.float32(0.1))
    True
    """
    if isinstance(text, bytes):
        text = text.decode("ascii")
    t = text.strip().lower()
    body = t.lstrip("+-")
    if body in ("inf", "infinity"):
        return -math.inf if t.startswith("-") else math.inf
    if body == "nan":
        return math.nan
    x = Fraction(t)
    neg = x < 0 or (x == 0 and t.startswith("-"))
    a = abs(x)
    if a == 0:
        return -0.0 if neg else 0.0
    e = a.numerator.bit_length() - a.denominator.bit_length()  # 2**e <= a < 2**(e + 2)
    if a < Fraction(2) ** e:
        e -= 1
    elif a >= Fraction(2) ** (e + 1):
        e += 1
    q = Fraction(2) ** (max(e, -126) - 23)  # the float32 ulp at a
    m = round(a / q)  # half to even
    v = m * q
    r = math.inf if v >= 2**128 else float(v)
    return -r if neg else r


def vw_parse_float(token: str | bytes, at_end: bool = True) -> float:
    """The float32 VW 9's ``parse_float`` gives for ``token`` (a float).

    ``token`` is one number, without what follows it; ``at_end`` says the byte
    after it is a space, tab, newline or VW's end of the line (the fast path's
    terminators), False when it is ``|``, ``\\r`` or ``:``.  Tokens that are no
    number to C's ``strtof`` either raise ValueError.
    """
    if isinstance(token, bytes):
        token = token.decode("ascii")
    with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN, as in C
        return _vw_parse_float(token, at_end)


def _vw_parse_float(token: str, at_end: bool) -> float:
    i, n, neg = 0, len(token), False
    if token.startswith("-"):
        neg, i = True, 1
    acc = F32(0.0)
    digits = 0
    while i < n and "0" <= token[i] <= "9":
        acc = F32(F32(F32(acc * F32(10.0)) + F32(ord(token[i]))) - F32(48.0))
        i += 1
        digits += 1
    dec = 0
    if i < n and token[i] == ".":
        i += 1
        while i < n and "0" <= token[i] <= "9":
            if dec < 35:
                acc = F32(F32(acc * F32(10.0)) + F32(ord(token[i]) - 48))
                dec += 1
            i += 1
            digits += 1
    exp = 0
    if i < n and token[i] in "eE":
        i += 1
        sign = 1
        if i < n and token[i] == "-":
            sign, i = -1, i + 1
        while i < n and "0" <= token[i] <= "9":
            exp = exp * 10 + ord(token[i]) - 48
            i += 1
        exp *= sign
    if i == n and at_end:  # VW's "easy case"
        e = (exp - dec) & 0xFF
        e = e - 256 if e >= 128 else e
        scale = F32(math.inf) if e > 38 else F32(0.0) if e < -37 else VW_POW10[e + 37]
        v = F32(acc * scale)
        return float(-v if neg else v)
    return float32_of_decimal(token)  # strtof
