"""Drop numba's on-disk cache of the parser kernels when any parser source changed.

numba invalidates a cached function only when *its own* source file changes;
a kernel whose callees live in other files (the block kernels call hashing,
number and scanning helpers) would keep running stale machine code after an
edit or a ``git pull`` that touches only a callee.  This guard hashes the
sources of every module the kernels are built from and, when the digest
differs from the one recorded at the last purge, removes those modules' cache
files (``<module>.<function>-<line>.py3x.nbi/.nbc`` in ``__pycache__``) before
anything is compiled or loaded.  Failures (read-only trees, races with another
process) are ignored: the worst case is a recompilation.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_IO = Path(__file__).resolve().parent
_SOURCES = [
    _IO.parent / "_jit.py",
    _IO.parent / "hashing.py",
    _IO / "_numbers.py",
    _IO / "_scan.py",
    _IO / "vw.py",
    _IO / "svmlight.py",
    _IO / "reader.py",
]
_STAMP = _IO / "__pycache__" / "kernels.sha1"


def _digest() -> str:
    h = hashlib.sha1()
    for path in _SOURCES:
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"missing:" + path.name.encode())
    return h.hexdigest()


def purge_stale_kernels() -> bool:
    """Remove cached parser kernels if their sources changed; True when purged."""
    if os.environ.get("NUMBA_CACHE_DIR"):  # a custom cache location: not ours to manage
        return False
    digest = _digest()
    try:
        if _STAMP.read_text() == digest:
            return False
    except OSError:
        pass
    for path in _SOURCES:
        cache_dir = path.parent / "__pycache__"
        stem = path.stem + "."
        try:
            names = os.listdir(cache_dir)
        except OSError:
            continue
        for name in names:
            if name.startswith(stem) and name.endswith((".nbi", ".nbc")):
                try:
                    os.remove(cache_dir / name)
                except OSError:
                    pass
    try:
        _STAMP.parent.mkdir(exist_ok=True)
        tmp = _STAMP.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(digest)
        os.replace(tmp, _STAMP)
    except OSError:
        pass
    return True


purge_stale_kernels()
