"""VW's random initial weights: ``--random_weights``, ``--normal_weights``,
``--truncated_normal_weights`` (gd only, as ``--initial_weight``).

VW 9.11 (``parse_regressor.cc: initialize_regressor``) fills its weight array once,
before the first example, walking the slots in order (slot ``i`` at VW's raw index
``i << stride_shift``; the shift is 2 when gd keeps adaptive or normalized state, 0
under ``--sgd``):

* ``--random_weights``: ``merand48(state) - 0.5`` (float32), the state being VW's
  global random state seeded by ``--random_seed`` and advanced once per slot;
* ``--normal_weights``: a polar Box-Muller draw (float32) from a generator seeded with
  the slot's raw index -- each slot's value depends on its index only;
* ``--truncated_normal_weights``: the normal draws, then every value whose magnitude
  passes twice the weights' standard deviation (population, in double) replaced by
  its IEEE remainder by that bound.

``--initial_weight`` wins over all three, as in VW.  One O(2^b) pass at the start; no
cost when none is given.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.explore import F32, U64, lcg_step, state_float
from streamlearn.system.jit import INTERPRETED, jit, jit_inline

KINDS = ("zero", "random", "normal", "truncated_normal")
"""TrainConfig.initial_weights: VW's distributions of the initial weights."""


if INTERPRETED:
    import ctypes
    import ctypes.util

    _LIBM = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    _LIBM.logf.restype = ctypes.c_float
    _LIBM.logf.argtypes = [ctypes.c_float]

    def logf(x):  # noqa: ANN001, ANN201
        """C's ``logf`` (the C library's, as VW's ``logf``; not always the rounded log)."""
        return F32(_LIBM.logf(float(x)))

else:

    @jit_inline
    def logf(x):  # noqa: ANN001, ANN201
        """C's ``logf``: numba calls the C library's for a float32."""
        return math.log(F32(x))


@jit
def uniform_weights(out, seed):  # noqa: ANN001, ANN201
    """``out[i] = merand48(state) - 0.5`` for each slot in order, state seeded by ``seed``."""
    s = U64(seed)
    half = F32(0.5)
    for i in range(out.shape[0]):
        s = lcg_step(s)
        out[i] = state_float(s) - half


@jit
def normal_weights(out, shift):  # noqa: ANN001, ANN201
    """``out[i]`` = VW's ``merand48_boxmuller(i << shift)`` (float32 arithmetic)."""
    one, two, m2 = F32(1.0), F32(2.0), F32(-2.0)
    for i in range(out.shape[0]):
        s = U64(i) << U64(shift)
        while True:
            s = lcg_step(s)
            x1 = two * state_float(s) - one
            s = lcg_step(s)
            x2 = two * state_float(s) - one
            t = F32(x1 * x1 + x2 * x2)
            if t < 1.0 and t != 0.0:
                break
        r = F32(math.sqrt(F32(F32(m2 * logf(t)) / t)))
        out[i] = F32(x1 * r)


def truncate(w: np.ndarray) -> None:
    """VW's truncation: values beyond twice the (population) standard deviation, taken in
    double over every slot, become their IEEE remainder by that bound."""
    mean = float(np.sum(w, dtype=np.float64)) / w.shape[0]
    d = w.astype(np.float64) - mean
    bound = math.sqrt(float(np.dot(d, d)) / w.shape[0]) * 2.0
    far = np.flatnonzero(np.abs(w.astype(np.float64)) > bound)
    w[far] = [math.remainder(float(w[j]), bound) for j in far]


def initial_weights(kind: str, bits: int, shift: int, seed: int) -> np.ndarray:
    """VW's initial weights of ``2^bits`` slots (float32), ``kind`` one of :data:`KINDS`
    but ``zero``; ``shift`` is VW's stride shift, ``seed`` its ``--random_seed``."""
    w = np.zeros(1 << bits, dtype=np.float32)
    if kind == "random":
        uniform_weights(w, np.uint64(seed % (1 << 64)))
    else:
        normal_weights(w, np.int64(shift))
        if kind == "truncated_normal":
            truncate(w)
    return w


def random_state(kind: str, bits: int, seed: int) -> int:
    """VW's global random state once the initial weights are drawn: ``--random_weights``
    advances ``--random_seed``'s state once per slot (VW keeps the state in its models'
    options as ``--random_seed``).

    >>> random_state("normal", 18, 42), random_state("random", 0, 0) == 2147483647
    (42, True)
    """
    s = seed % (1 << 64)
    if kind != "random":
        return s
    a, c, n, mod = 0xEECE66D5DEECE66D, 2147483647, 1 << bits, (1 << 64) - 1
    while n:  # the n-step map s -> a^n s + c (a^(n-1) + ... + 1), by squaring
        if n & 1:
            s = (a * s + c) & mod
        c = (a * c + c) & mod
        a = (a * a) & mod
        n >>= 1
    return s
