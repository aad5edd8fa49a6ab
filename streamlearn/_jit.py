"""The one place that fixes numba's options for the whole project.

Every kernel is a top-level function decorated with :func:`jit` (cached on
disk, GIL released so the parser and the learner can overlap on two threads).
Helpers called from kernels use :func:`jit_inline`.  Kernels stay valid plain
Python, so ``NUMBA_DISABLE_JIT=1`` runs them in the interpreter for debugging.

Cache location: numba checks a cached kernel only against its own source
file, not against the helpers it inlines from other modules, so an edited
``losses.py`` would leave stale kernels in ``__pycache__``.  Unless
``NUMBA_CACHE_DIR`` is set, the cache therefore lives in
``$XDG_CACHE_HOME/streamlearn/<digest>``, where the digest covers the
version, size and modification time of every source file of the package:
any edit or upgrade starts a fresh cache (and nothing is written into
site-packages).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba

from streamlearn import __version__


def _cache_dir() -> str:
    root = Path(__file__).resolve().parent
    h = hashlib.sha256(__version__.encode())
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}".encode())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "streamlearn", h.hexdigest()[:16])


if not os.environ.get("NUMBA_CACHE_DIR"):
    numba.config.CACHE_DIR = _cache_dir()

jit = numba.njit(cache=True, nogil=True)
"""Decorator for top-level kernels."""

jit_inline = numba.njit(cache=True, nogil=True, inline="always")
"""Decorator for small helpers called from kernels (losses, hashing steps)."""
