"""The one place that fixes numba's options for the whole project.

Every kernel is a top-level function decorated with :func:`jit` (cached on
disk, GIL released so the parser and the learner can overlap on two threads).
Helpers called from kernels use :func:`jit_inline`.  Kernels stay valid plain
Python, so ``NUMBA_DISABLE_JIT=1`` runs them in the interpreter for debugging.
"""

from __future__ import annotations

import numba

jit = numba.njit(cache=True, nogil=True)
"""Decorator for top-level kernels."""

jit_inline = numba.njit(cache=True, nogil=True, inline="always")
"""Decorator for small helpers called from kernels (losses, hashing steps)."""
