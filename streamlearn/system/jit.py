"""The one place that fixes numba's options for the whole project.

Every kernel is a top-level function decorated with :func:`jit` (cached on
disk, GIL released so the parser and the learner can overlap on two threads).
Helpers called from kernels use :func:`jit_inline`, and hot loops that
allocate nothing :func:`jit_noalloc` (no reference counting).  Kernels stay
valid plain Python, so ``NUMBA_DISABLE_JIT=1`` runs them in the interpreter
for debugging, and for tiny inputs (the CLI sets it): then numba is not
imported at all and the decorators return the functions themselves.  The
numba half (the cache's place, the quick loader below) is
:mod:`streamlearn.system.jit_numba`.

The kernels shipped compiled run without importing numba (unless
``SL_DIRECT_LOAD=0``: :mod:`streamlearn.system.jit_shipped` and
:mod:`streamlearn.system.shipped`): numba is imported only when a call needs a
kernel that is not shipped for its types, or anything else of numba's.  This
module only chooses among the three and makes no code: a kernel's freshness is
counted against :mod:`~streamlearn.system.jit_numba`, whose options and
intrinsics its machine code is made of (``scripts/build_kernels.py``).

Cache location: numba checks a cached kernel only against its own source
file, not against the helpers it inlines from other modules, so an edited
``losses.py`` would leave stale kernels in ``__pycache__``.  Unless
``NUMBA_CACHE_DIR`` is set, the cache therefore lives in
``$XDG_CACHE_HOME/streamlearn/<digest>``, where the digest covers the
version, size and modification time of every source file of the package:
any edit or upgrade starts a fresh cache (and nothing is written into
site-packages).  Each run touches its cache directory; the first run of a
new digest removes sibling digests untouched for :data:`KEEP_DAYS` days, so
upgrades (and, for us, edits) do not pile up old kernels.

Start-up: numba's cache loader first *refreshes* the CPU target, importing
and registering every lowering numba has (arrays, linalg, random, typed
containers, ...): 0.25 s per process, cached kernel or not, and the largest
fixed cost of a run.  A cached kernel is self-contained object code that
needs only the symbols the target installs when it is created plus the NRT
allocator, so :class:`_QuickLoad` initialises just the NRT before loading,
itself loaded from object code cached beside the kernels
(:func:`~streamlearn.system.jit_numba.initialize_nrt`: 3 ms instead of a 20-40 ms
compile).  On import and after each load, LLVM's clean pages leave the
resident set (:mod:`streamlearn.system.pages`: 60-70 MB of the 178 MB
library, which the loaded kernels never run).  A miss still compiles through
numba's normal path, which refreshes the target itself.  Only our own
dispatchers get the quick loader, and if a numba release changes the
internals it relies on, kernels fall back to numba's loader
(``tests/test_jit.py`` says so).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

INTERPRETED = os.environ.get("NUMBA_DISABLE_JIT", "0").strip() not in ("", "0")
"""Kernels run as plain Python (``NUMBA_DISABLE_JIT=1``, set by the CLI for tiny
inputs): numba is then not even imported, which saves ~0.15 s of start-up."""

DIRECT = not INTERPRETED and os.environ.get("SL_DIRECT_LOAD", "1").strip() != "0"
"""Kernels run their shipped entries without numba until a call needs numba
(:mod:`streamlearn.system.jit_shipped`; ``SL_DIRECT_LOAD=0`` turns it off)."""

if INTERPRETED:
    import math
    import types
    import warnings

    # integers wrap and floats overflow silently in compiled code: so here too, in every
    # thread (numpy's error state is per thread; a 21-digit label leaked its
    # RuntimeWarning under --quiet before being refused)
    warnings.filterwarnings("ignore", r"(overflow|underflow|invalid value) encountered",
                            RuntimeWarning, r"streamlearn\.")  # fmt: skip

    def _ieee(f: Callable, domain: Callable[[float], float] | None = None) -> Callable:
        """``math.f`` as compiled code computes it: inf or NaN where Python raises."""

        def g(*args):  # noqa: ANN002, ANN202
            try:
                return f(*args)
            except OverflowError:
                return math.copysign(math.inf, args[0]) if f is math.ldexp else math.inf
            except ValueError:
                return domain(args[0]) if domain is not None else math.nan

        g.__name__ = f.__name__
        return g

    def _log_domain(x: float) -> float:
        return -math.inf if x == 0.0 else math.nan

    _MATH = types.SimpleNamespace(**{k: getattr(math, k) for k in dir(math) if k[0] != "_"})
    for _name in ("exp", "exp2", "expm1", "ldexp", "pow", "cosh", "sinh"):
        setattr(_MATH, _name, _ieee(getattr(math, _name)))
    for _name in ("log", "log2", "log10"):
        setattr(_MATH, _name, _ieee(getattr(math, _name), _log_domain))
    _MATH.log1p = _ieee(math.log1p, lambda x: -math.inf if x == -1.0 else math.nan)
    _MATH.sqrt = _ieee(math.sqrt)
    np.seterr(all="ignore")  # compiled kernels give inf and NaN without a word

    def _as_compiled(func: Callable) -> Callable:
        """``func``'s module sees :data:`_MATH` as ``math``: the same numbers as compiled."""
        if func.__globals__.get("math") is math:
            func.__globals__["math"] = _MATH
        return func

    def jit(func: Callable) -> Callable:
        """Decorator for top-level kernels (here: the function itself, with IEEE ``math``)."""
        return _as_compiled(func)

    def jit_inline(func: Callable) -> Callable:
        """Decorator for small helpers called from kernels (here: the function itself)."""
        return _as_compiled(func)

    def jit_noalloc(func: Callable) -> Callable:
        """Decorator for kernels that allocate nothing (here: the function itself)."""
        return _as_compiled(func)

    def prefetch_row(table, j) -> None:  # noqa: ANN001
        """A hint to the CPU's caches when compiled; nothing to do here."""

    def load_u64(buf, i):  # noqa: ANN001, ANN201
        """The 8 bytes ``buf[i:i + 8]`` as one little-endian uint64."""
        return np.uint64(int.from_bytes(bytes(buf[i : i + 8]), "little"))

    def fdiv(a, b):  # noqa: ANN001, ANN201
        """``a / b`` as C divides (inf or nan for a zero divisor), in the operands' type."""
        return a / b

    def stack_f32(n):  # noqa: ANN001, ANN201
        """Scratch of ``n`` float32 (compiled: on the kernel's stack)."""
        return np.empty(n, dtype=np.float32)

    def trailing_zeros(x):  # noqa: ANN001, ANN201
        """Trailing zero bits of a uint64 (64 for 0)."""
        x = int(x)
        return np.uint64((x & -x).bit_length() - 1 if x else 64)

    QUICK_LOAD = False

else:
    # the shipped kernels' stand-ins (numba imported when a call needs it), or numba's own
    from streamlearn.system import jit_shipped as _shipped

    _decorators = _shipped if DIRECT else _shipped.import_numba()
    (QUICK_LOAD, fdiv, jit, jit_inline, jit_noalloc, load_u64, prefetch_row, stack_f32,
     trailing_zeros) = (getattr(_decorators, name) for name in _shipped.NAMES)  # fmt: skip

    def own_intrinsic(name: str, make: Callable[[], object]) -> object:
        """A kernel module's own numba intrinsic, ``make()`` (which imports numba): made
        now when numba runs the kernels, else a stand-in that numba's replaces in every
        module once a call makes numba the runner (the shipped entries are compiled from
        it already: ``learners/lda_math.py``'s bit casts)."""
        return _shipped.own_intrinsic(name, make) if DIRECT else make()
