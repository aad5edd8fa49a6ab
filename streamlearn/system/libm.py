"""C's float32 functions as VW calls them, for sl's Python side.

VW computes its rates with ``powf`` (``eta · t0^p``, search's ``β(1 - β)^i``); sl's kernels
compiled by numba call the same libm function, but numpy's float32 power is its own SIMD
code on some CPUs (AVX-512: up to an ulp apart from libm on ~20% of arguments), so the
Python side asks libm itself (:func:`powf`), through ``ctypes``; where no C math library
can be loaded, the power in double rounded to float32 (correct rounding, which libm's
``powf`` misses on ~0.07% of arguments).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np

_POWF = None


def _load():  # noqa: ANN202
    global _POWF
    name = ctypes.util.find_library("m")
    try:
        lib = ctypes.CDLL(name) if name else ctypes.CDLL(None)
        fn = lib.powf
    except (OSError, AttributeError):
        _POWF = False
        return _POWF
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float, ctypes.c_float]
    _POWF = fn
    return _POWF


def powf(x: float, p: float) -> np.float32:
    """``powf(x, p)`` of two float32 values, as C's math library computes it.

    >>> float(powf(np.float32(4.0), np.float32(0.5)))
    2.0
    """
    fn = _POWF if _POWF is not None else _load()
    if fn is False:
        return np.float32(math.pow(float(np.float32(x)), float(np.float32(p))))
    return np.float32(fn(float(np.float32(x)), float(np.float32(p))))
