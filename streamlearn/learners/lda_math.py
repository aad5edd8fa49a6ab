"""VW's float32 special functions for LDA (``reductions/lda_core.cc``): its approximations
of log2, 2^x, exp, digamma and lgamma (scalar ``fast*`` and the ``vfast*`` of its SIMD math
mode), the accurate mode's, and ``expdigammify`` of a row and of a column of rows.

Every function rounds as VW's does: float32 operations in VW's order, no fused
multiply-add, no reassociation.  Float bits are read and written by :func:`f32_bits` and
:func:`bits_f32` (a register bitcast, which lets LLVM vectorize the approximations over
a loop) and divisions are C's (:func:`~streamlearn.system.jit.fdiv`: no zero check, which
would keep a loop of them scalar).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.system.jit import INTERPRETED, fdiv, jit_inline

F32 = np.float32
F64 = np.float64

SIMD, PRECISE, FAST = 0, 1, 2
"""``--math-mode`` values."""

THRESHOLD = F32(1.0e-10)  # VW's UNDERFLOW_THRESHOLD
_L2_SCALAR = F32(124.22544637)
_L2_SIMD = F32(124.22551499)
_L2_B = F32(1.498030302)
_L2_C = F32(1.72587999)
_L2_D = F32(0.3520887068)
_ULP23 = F32(1.0 / (1 << 23))
_LN2 = F32(0.69314718)
_P2_A = F32(121.2740838)
_P2_B = F32(27.7280233)
_P2_C = F32(4.84252568)
_P2_D = F32(1.49012907)
_TWO23 = F32(1 << 23)
_TWO31 = F32(2.0**31)
_TWO32 = F32(2.0**32)
_INV32 = F32(2.0**-32)
_TWO63 = F32(2.0**63)
_LOG2E = F32(1.442695040)
_M126 = F32(-126.0)
_ZERO = F32(0.0)
_ONE = F32(1.0)
_TWO = F32(2.0)
_THREE = F32(3.0)
_SIX = F32(6.0)
_TWELVE = F32(12.0)
_THIRTEEN = F32(13.0)
_LG_A = F32(-2.081061466)
_LG_B = F32(0.0833333)
_LG_C = F32(2.5)
_V48 = F32(-48.0)
_V157 = F32(-157.0)
_V127 = F32(-127.0)
_V30 = F32(30.0)
_MANT = np.uint32(0x007FFFFF)
_HALF_EXP = np.uint32(0x3F000000)

# ---------------------------------------------------------------------- float bits

if INTERPRETED:

    def f32_bits(x):  # noqa: ANN001, ANN201
        """The bits of float32 ``x`` as a uint32."""
        return np.float32(x).view(np.uint32)

    def bits_f32(u):  # noqa: ANN001, ANN201
        """The float32 of bits ``u`` (a uint32)."""
        return np.uint32(u).view(np.float32)

else:
    from streamlearn.system.jit import own_intrinsic

    def _bitcast(name: str, source: str, target: str):  # noqa: ANN202
        """numba's intrinsic ``name``: a value of numba type ``source`` as the ``target``
        type of the same 32 bits (a bitcast, in a register; imports numba when made)."""

        def make():  # noqa: ANN202
            from llvmlite import ir
            from numba import types
            from numba.extending import intrinsic

            src, dst = getattr(types, source), getattr(types, target)
            to = ir.IntType(32) if target == "uint32" else ir.FloatType()

            def cast(typingctx, x):  # noqa: ANN001, ANN202 - numba's intrinsic protocol
                if x != src:
                    return None

                def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
                    return builder.bitcast(args[0], to)

                return dst(x), codegen

            cast.__name__ = cast.__qualname__ = name
            return intrinsic(cast)

        return make

    # (numba imported only when a kernel is compiled: the shipped ones are made of them)
    f32_bits = own_intrinsic("f32_bits", _bitcast("f32_bits", "float32", "uint32"))
    """The bits of float32 ``x`` as a uint32."""
    bits_f32 = own_intrinsic("bits_f32", _bitcast("bits_f32", "uint32", "float32"))
    """The float32 of bits ``u`` (a uint32)."""


# ---------------------------------------------------------------------- VW's approximations


@jit_inline
def _log2(x, simd):
    """VW's ``fastlog2`` (``simd``: ``vfastlog2``'s constant)."""
    vx = f32_bits(F32(x))
    mx = bits_f32(np.uint32((vx & _MANT) | _HALF_EXP))
    y = F32(vx) * _ULP23
    c = _L2_SIMD if simd else _L2_SCALAR
    return y - c - _L2_B * mx - fdiv(_L2_C, _L2_D + mx)


@jit_inline
def _pow2(p):
    """VW's ``fastpow2`` (its SIMD twin computes the same): ``int(clipp)`` and the float to
    integer cast of the bits as x86 gives them (64-bit truncation, the low 32 bits kept),
    in float32 arithmetic and 32-bit conversions, which vectorize on any x86-64 level
    (AVX2 has no packed float to int64 conversion).  The same bits as the 64-bit casts for
    every float32 ``p`` (checked over all 2^32 of them)."""
    offset = _ONE if p < _ZERO else _ZERO
    clipp = _M126 if p < _M126 else p
    w = np.trunc(clipp) if clipp < _TWO63 else -_TWO63  # (int64(clipp), as a float)
    z = clipp - w + offset
    v = _TWO23 * (clipp + _P2_A + fdiv(_P2_B, _P2_C - z) - _P2_D * z)
    if not (-_TWO31 <= v < _TWO31):  # (v modulo 2^32, exact: then in int32's range)
        v = v - _TWO32 * np.floor(v * _INV32)
        if v >= _TWO31:
            v -= _TWO32
    i = np.int32(v) if v == v else np.int32(0)  # (NaN and ±inf: x86's 2^63, low bits 0)
    return bits_f32(np.uint32(np.int64(i) & 0xFFFFFFFF))


@jit_inline
def fast_exp(p):
    """VW's ``fastexp``."""
    return _pow2(_LOG2E * p)


@jit_inline
def digamma_fast(x):
    """VW's scalar ``fastdigamma``."""
    twopx = _TWO + x
    logterm = _LN2 * _log2(twopx, False)
    return (fdiv(-(_ONE + _TWO * x), x * (_ONE + x))
            - fdiv(_THIRTEEN + _SIX * x, _TWELVE * twopx * twopx) + logterm)  # fmt: skip


@jit_inline
def digamma_simd(x):
    """VW's ``vfastdigamma`` (one lane)."""
    twopx = _TWO + x
    logterm = _LN2 * _log2(twopx, True)
    return (fdiv(_V48 + x * (_V157 + x * (_V127 - _V30 * x)),
                 _TWELVE * x * (_ONE + x) * twopx * twopx) + logterm)  # fmt: skip


@jit_inline
def _lgamma_fast(x):
    """VW's ``fastlgamma``."""
    logterm = _LN2 * _log2(x * (_ONE + x) * (_TWO + x), False)
    xp3 = _THREE + x
    return _LG_A - x + fdiv(_LG_B, xp3) - logterm + (_LG_C + x) * (_LN2 * _log2(xp3, False))


@jit_inline
def _digamma64(x):
    """ψ(x) for x > 0 in double (recurrence to x ≥ 10, then the asymptotic series)."""
    r = 0.0
    while x < 10.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    t = f * (-1.0 / 12 + f * (1.0 / 120 + f * (-1.0 / 252 + f * (1.0 / 240 + f * (
        -1.0 / 132 + f * (691.0 / 32760 + f * (-1.0 / 12 + f * 3617.0 / 8160)))))))
    return r + math.log(x) - 0.5 / x + t


@jit_inline
def digamma(x, mode):
    """VW's ``lda::digamma`` of float32 ``x`` in math mode ``mode``."""
    if mode == PRECISE:
        return F32(_digamma64(F64(x)))
    return digamma_fast(x)


@jit_inline
def lgamma(x, mode):
    """VW's ``lda::lgamma``."""
    if mode == PRECISE:
        return F32(math.lgamma(F64(x)))
    return _lgamma_fast(x)


@jit_inline
def exponential(x, mode):
    """VW's ``lda::exponential``: ``expf`` (libm's, as VW calls it) or ``fastexp``."""
    if mode == PRECISE:
        return math.exp(x)
    return fast_exp(x)


@jit_inline
def powf(x, p, mode):
    """VW's ``lda::powf``."""
    if mode == PRECISE:
        return x**p  # (libm's powf, as VW's std::pow of two floats)
    return _pow2(p * _log2(x, False))


@jit_inline
def _fmax(a, b):
    """``std::fmax(a, b)`` (a NaN ``b`` gives ``a``)."""
    return b if b > a else a if not (b == b) or a >= b else b


# ---------------------------------------------------------------------- expdigammify


@jit_inline
def lanes(k, align):
    """VW's SIMD lanes over ``k`` floats whose first is at ``align`` modulo 4 in its
    16-byte aligned array: ``[pre, last)`` (4 a step, from the first aligned float, stopping
    4 short of the end as VW's loop); the floats outside take the scalar approximations."""
    pre = min(k, (4 - align % 4) % 4)
    last = pre + 4 * max(0, (k - pre - 1) // 4)
    return pre, last


@jit_inline
def expdigammify(g, lo, k, align, mode):
    """VW's ``expdigammify`` of ``g[lo:lo+k]`` in place: ``exp(ψ(g_i) - ψ(Σ g))``, at least
    the threshold.  ``align``: ``lo``'s place modulo 4 in VW's 16-byte aligned array (the
    SIMD lanes, :func:`lanes`), the lanes summed as SSE3's two horizontal adds (VW's builds
    have SSE3)."""
    if mode != SIMD:
        s = _ZERO
        for i in range(k):
            s += g[lo + i]
        s = digamma(s, mode)
        for i in range(k):
            g[lo + i] = _fmax(THRESHOLD, exponential(digamma(g[lo + i], mode) - s, mode))
        return
    pre, last = lanes(k, align)
    extra = _ZERO
    for i in range(pre):
        extra += g[lo + i]
    l0 = _ZERO
    l1 = _ZERO
    l2 = _ZERO
    l3 = _ZERO
    for i in range(pre, last, 4):
        l0 += g[lo + i]
        l1 += g[lo + i + 1]
        l2 += g[lo + i + 2]
        l3 += g[lo + i + 3]
    for i in range(last, k):
        extra += g[lo + i]
    extra += (l0 + l1) + (l2 + l3)
    extra = digamma_fast(extra)
    for i in range(pre):
        g[lo + i] = _fmax(THRESHOLD, fast_exp(digamma_fast(g[lo + i]) - extra))
    for i in range(pre, last):
        g[lo + i] = _fmax(THRESHOLD, fast_exp(digamma_simd(g[lo + i]) - extra))
    for i in range(last, k):
        g[lo + i] = _fmax(THRESHOLD, fast_exp(digamma_fast(g[lo + i]) - extra))


@jit_inline
def expdigammify_column(c, norm, lane, mode):
    """VW's ``expdigammify_2`` for one topic of many words at once: ``c[w] = exp(ψ(c[w]) -
    norm)``, at least the threshold (``lane``: the topic's place is one of VW's SIMD lanes,
    :func:`lanes`).  One approximation over the whole loop, which LLVM vectorizes over the
    words (indices from 0: no negative-index fix-up in the way)."""
    n = c.shape[0]
    if mode == SIMD and lane:
        for w in range(n):
            c[w] = _fmax(THRESHOLD, fast_exp(digamma_simd(c[w]) - norm))
    elif mode == PRECISE:
        for w in range(n):
            c[w] = _fmax(THRESHOLD, exponential(digamma(c[w], mode) - norm, mode))
    else:
        for w in range(n):
            c[w] = _fmax(THRESHOLD, fast_exp(digamma_fast(c[w]) - norm))
