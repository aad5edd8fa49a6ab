"""Tables as large as the options ask for, or a clear refusal (exit 8).

``-b 30`` with a learner that keeps 24 bytes per slot asks for 24 GiB.  The
table comes from ``np.zeros`` (pages are mapped only when written), so a run
that touches few slots may use far less than that; but a table larger than
the machine's physical memory can never be filled, and numpy's own failure is
an ``ArrayMemoryError`` traceback.  :func:`zeros` says how much the table needs
and what the machine has, before allocating, and turns a failed allocation
into the same message.
"""

from __future__ import annotations

import os
import resource

import numpy as np

from streamlearn.errors import OutOfMemory


def physical() -> int | None:
    """Bytes of physical memory, or None when the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def available() -> int | None:
    """Bytes the kernel says are available for new allocations (Linux), else None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def zeros(shape: tuple[int, ...], what: str, dtype=np.float64) -> np.ndarray:
    """``np.zeros(shape, dtype)``, refused with :class:`OutOfMemory` when it cannot fit.

    ``what`` describes the table for the message, e.g. ``"2^30 slots x 24 bytes"``.
    """
    need = np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64))
    total = physical()
    if total is not None and need > total:
        raise OutOfMemory(
            f"the table needs {gib(need)} ({what}), more than this machine's "
            f"{gib(total)} of memory: lower -b"
        )
    try:
        return np.zeros(shape, dtype)
    except MemoryError:
        free = available()
        has = f" ({gib(free)} available)" if free is not None else ""
        raise OutOfMemory(
            f"the table needs {gib(need)} ({what}) and could not be allocated{has}: lower -b"
        ) from None


def _mapped() -> int:
    """Bytes of address space this process has mapped already (Linux), else 0."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def refuse_above(need: int, what: str, advice: str, max_memory: int | None = None) -> None:
    """Refuse (:class:`OutOfMemory`, exit 8) a request of ``need`` bytes before anything is
    allocated: above ``max_memory`` (a run's ``--max-memory``) or, without one, above the
    memory available now (else the machine's).  ``what`` says what asks for it
    (``"--bag 100000000"``), ``advice`` what to change."""
    limit = max_memory or available() or physical()
    try:  # (a process capped below that: ulimit -v)
        cap = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (OSError, ValueError):
        cap = resource.RLIM_INFINITY
    if cap != resource.RLIM_INFINITY and not max_memory:
        left = max(0, cap - _mapped())
        limit = min(limit, left) if limit is not None else left
    if limit is None or need <= limit:
        return
    where = "--max-memory" if max_memory else "the memory available"
    raise OutOfMemory(f"{what} needs at least {gib(need)}, more than {where} ({gib(limit)}): "
                      f"{advice}")  # fmt: skip
