"""LLVM's clean pages out of the resident set, once the kernels are loaded (Linux).

``libllvmlite.so`` (LLVM, linked statically: 178 MB on disk) has 60-70 MB of
its pages mapped in a process that has loaded its kernels: LLVM's static
initialisers touch 36 MB of it when the library is loaded, numba's target and
the cache loader more, and the loaded kernels never run LLVM.  Those pages are
clean copies of the file, so ``madvise(MADV_DONTNEED)`` drops them from the
resident set; they stay in the page cache, and the next load or compile faults
back the few it uses.  :mod:`streamlearn.system.jit` releases them once LLVM is
loaded (before numba's import adds its objects), and the quick loader after
each kernel it loads.  No numba here: this module is imported before it.
"""

from __future__ import annotations

import mmap
import os
import re

_LLVM_LIBRARIES = ("libllvmlite", "libLLVM")


_MAPPING = re.compile(
    r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+ *([^\n]*)\n?((?:[A-Za-z_]+:[^\n]*\n?)*)", re.M
)
_CHANGED = re.compile(r"^(?:Anonymous|Private_Dirty|Shared_Dirty|Swap): +([0-9]+)", re.M)


def clean_library_ranges(
    smaps: str, names: tuple[str, ...] = _LLVM_LIBRARIES
) -> list[tuple[int, int]]:
    """``(start, length)`` of the mappings in ``smaps`` that are safe to drop.

    A mapping qualifies when its file's name contains one of ``names``, it is
    not writable, and none of its pages differs from the file (no anonymous,
    dirty or swapped pages): dropping such pages loses nothing, the next
    access reads them back from the page cache.
    """
    ranges = []
    for m in _MAPPING.finditer(smaps):
        lo, hi, perms, path, fields = m.groups()
        if (
            "w" not in perms
            and any(n in os.path.basename(path) for n in names)
            and not any(int(kb) for kb in _CHANGED.findall(fields))
        ):
            ranges.append((int(lo, 16), int(hi, 16) - int(lo, 16)))
    return ranges


_released_ranges: list[tuple[int, int]] | None = None


def release_compiler_pages() -> int:
    """Drop LLVM's clean pages from the resident set; bytes released (0 off Linux).

    The mappings are found once: reading ``/proc/self/smaps`` takes ~5 ms, and
    read-only mappings stay clean.
    """
    global _released_ranges
    try:
        if _released_ranges is None:
            with open("/proc/self/smaps") as f:
                _released_ranges = clean_library_ranges(f.read())
        if not _released_ranges:
            return 0
        import ctypes

        madvise = ctypes.CDLL(None, use_errno=True).madvise
        madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        return sum(n for start, n in _released_ranges if madvise(start, n, mmap.MADV_DONTNEED) == 0)
    except (OSError, AttributeError, ValueError):
        _released_ranges = []
        return 0
