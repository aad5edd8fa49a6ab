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
