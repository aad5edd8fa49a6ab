"""The quick cache loader in ``streamlearn.system.jit``.

Kernels loaded from numba's disk cache skip numba's target refresh (0.25 s
per process).  These tests pin that the loader is active with the installed
numba, and that a kernel loaded from cache in a fresh process computes
exactly what the freshly compiled one did.  After a load the loader drops
LLVM's clean pages from the resident set; the kernels, and numba compiling
afterwards, must not notice.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from streamlearn.learners import truncated
from streamlearn.system import jit_numba as _jit_numba
from streamlearn.system import pages as _pages
from streamlearn.system.jit_shipped import Kernel
from tests.paths import ROOT

# A fresh process: train plain SGD on a small random stream through the
# kernel, print a digest of the weights and whether the kernel came from cache.
SCRIPT = r"""
import hashlib, json, numba, numpy as np
from streamlearn.system import jit_numba as _jit_numba
from streamlearn.learners import truncated
from streamlearn.learners.base import make_params
from tests.streams import random_stream, run_lazy

params = make_params(learning_rate=0.1, power_t=0.5, initial_t=1.0, l1=0.02, theta=0.05, period=3)
w, preds, stats = run_lazy(truncated.SPEC, params, random_stream(5, n=400), 1)
kernel = truncated.train_batch
st = kernel.stats

def llvm_resident_mb():
    try:
        text = open("/proc/self/smaps").read()
    except OSError:
        return None
    total, ours = 0, False
    for line in text.splitlines():
        head = line.split(None, 5)
        if head and "-" in head[0] and ":" not in head[0]:
            ours = len(head) == 6 and "libllvmlite" in head[5]
        elif ours and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total / 1024

resident = llvm_resident_mb()
w2, _, _ = run_lazy(truncated.SPEC, params, random_stream(5, n=400), 1)
# LLVM compiles again after the release, and links the NRT (allocation)
compiled_after = int(numba.njit(lambda n: np.arange(n).sum())(6))
print(json.dumps({
    "llvm_mb": resident,
    "again": hashlib.sha256(w2.tobytes()).hexdigest() == hashlib.sha256(w.tobytes()).hexdigest(),
    "compiled_after": compiled_after,
    "nrt": _jit_numba.NRT_SOURCE,
    "digest": hashlib.sha256(w.tobytes() + preds.tobytes() + stats.tobytes()).hexdigest(),
    "hits": sum(st.cache_hits.values()),
    "misses": sum(st.cache_misses.values()),
    "quick": type(kernel._cache).__name__,
}))
"""


def test_quick_loader_is_installed():
    assert _jit_numba.QUICK_LOAD, "numba internals changed: kernels load through the slow path"
    kernel = truncated.train_batch
    dispatcher = kernel.numba() if isinstance(kernel, Kernel) else kernel  # (numba's, made)
    assert type(dispatcher._cache) is _jit_numba._QuickLoad


def _run(cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, SL_PREBUILT="0")  # numba's cache alone
    env.pop("NUMBA_DISABLE_JIT", None)
    root = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_cached_kernel_equals_compiled(tmp_path):
    first = _run(str(tmp_path))
    second = _run(str(tmp_path))
    assert first["misses"] >= 1 and first["hits"] == 0
    assert second["hits"] >= 1 and second["misses"] == 0
    assert second["quick"] == "_QuickLoad"
    assert first["digest"] == second["digest"]
    assert second["again"] and second["compiled_after"] == 15
    assert (first["nrt"], second["nrt"]) == ("compiled", "cache")
    if second["llvm_mb"] is not None:  # Linux: LLVM's pages left the resident set
        assert second["llvm_mb"] < 16, second["llvm_mb"]


SMAPS = """\
7f0000000000-7f0000001000 r--p 00000000 08:01 42 /venv/llvmlite/binding/libllvmlite.so
Size:                  4 kB
Rss:                   4 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd mr mw me
7f0000001000-7f0000005000 r-xp 00001000 08:01 42 /venv/llvmlite/binding/libllvmlite.so
Size:                 16 kB
Rss:                   8 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
7f0000005000-7f0000006000 r--p 00005000 08:01 42 /venv/llvmlite/binding/libllvmlite.so
Rss:                   4 kB
Private_Dirty:         4 kB
Anonymous:             4 kB
7f0000006000-7f0000007000 rw-p 00006000 08:01 42 /venv/llvmlite/binding/libllvmlite.so
Rss:                   4 kB
Anonymous:             0 kB
7f0000007000-7f0000009000 rw-p 00000000 00:00 0
Rss:                   8 kB
7f0000009000-7f000000a000 r-xp 00000000 08:01 43 /usr/lib/libc.so.6
Anonymous:             0 kB
7f000000a000-7f000000c000 r--p 00000000 08:01 44 /opt/lib/libLLVM-17.so
Rss:                   8 kB
Shared_Dirty:          0 kB
Anonymous:             0 kB
"""


def test_only_clean_read_only_llvm_mappings_are_dropped():
    # Dropping a page that differs from the file (relocated RELRO data,
    # writable data) would lose it: only clean, read-only LLVM mappings qualify.
    assert _pages.clean_library_ranges(SMAPS) == [
        (0x7F0000000000, 0x1000),
        (0x7F0000001000, 0x4000),
        (0x7F000000A000, 0x2000),
    ]
    assert _pages.clean_library_ranges(SMAPS, ("libc.so",)) == [(0x7F0000009000, 0x1000)]
    assert _pages.clean_library_ranges("") == []


@pytest.mark.slow
def test_a_damaged_nrt_cache_is_compiled_again(tmp_path):
    first = _run(str(tmp_path))
    (path,) = tmp_path.glob("nrt-*.o")
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    second = _run(str(tmp_path))
    assert second["nrt"] == "compiled" and second["digest"] == first["digest"]
    assert second["compiled_after"] == 15
    assert _jit_numba._read_nrt(str(path)) is not None  # written again, whole


def test_nrt_cache_file_round_trip(tmp_path):
    path = str(tmp_path / "nrt.o")
    _jit_numba._write_nrt(path, b"object code", b"bitcode")
    assert _jit_numba._read_nrt(path) == (b"object code", b"bitcode")
    raw = open(path, "rb").read()
    for cut in (0, 5, len(raw) - 1):
        with open(path, "wb") as f:
            f.write(raw[:cut])
        assert _jit_numba._read_nrt(path) is None
    assert _jit_numba._read_nrt(str(tmp_path / "missing.o")) is None


def test_stale_kernel_caches_are_pruned(tmp_path):
    now = 1_000_000_000.0
    old, recent, keep = (tmp_path / n for n in ("0123456789abcdef", "fedcba9876543210", "aaaa"))
    other = tmp_path / "not-a-digest"
    for d, age_days in ((old, 31), (recent, 29), (other, 400)):
        d.mkdir()
        (d / "k.nbi").write_bytes(b"x")
        os.utime(d, (now - age_days * 86400, now - age_days * 86400))
    _jit_numba._prune(str(tmp_path), str(keep), now=now)
    assert not old.exists()
    assert recent.exists() and other.exists()


def test_a_cache_in_use_is_touched_and_kept(tmp_path):
    d = tmp_path / "0123456789abcdef"
    d.mkdir()
    os.utime(d, (0.0, 0.0))
    _jit_numba._use(str(d))
    assert d.stat().st_mtime > 1e9  # touched now: a later prune keeps it


def test_an_edit_to_any_module_of_the_package_moves_the_cache(monkeypatch):
    """A kernel's cache entry is checked against its own file only: the cache's digest
    must cover the helpers it inlines (losses.py for every learner), not only system/."""
    import streamlearn

    before = _jit_numba._cache_dir()
    losses = os.path.join(os.path.dirname(streamlearn.__file__), "learners", "losses.py")
    st = os.stat(losses)
    real_stat = os.stat

    class Moved:
        def __init__(self, s):
            self._s = s
            self.st_size = s.st_size
            self.st_mtime_ns = s.st_mtime_ns + 1

    def fake_stat(path, *args, **kwargs):
        s = real_stat(path, *args, **kwargs)
        same = s.st_ino == st.st_ino and s.st_dev == st.st_dev
        return Moved(s) if same else s

    monkeypatch.setattr(os, "stat", fake_stat)
    assert _jit_numba._cache_dir() != before


_IMPORTS = """
import importlib.util, sys
from streamlearn.system import jit
assert not jit.INTERPRETED
print("yaml" in sys.modules, "scipy" in sys.modules)
# each that is installed is importable afterwards, and works
if importlib.util.find_spec("scipy"):
    import scipy
    assert scipy.__version__
if importlib.util.find_spec("yaml"):
    import yaml
    assert yaml.safe_load("a: 1") == {"a": 1}
"""


def test_numba_is_imported_without_yaml_and_scipy(tmp_path):
    # numba imports both when it is imported, if they are installed (the dev set-up has
    # them; the README's may not, and then the second case below reads no config either)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SL_DIRECT_LOAD": "0"}  # (numba's import)
    env.pop("NUMBA_DISABLE_JIT", None)
    run = [sys.executable, "-c", _IMPORTS]
    out = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path, env=env, check=True)
    assert out.stdout.split() == ["False", "False"]
    # a .numba_config.yaml in the working directory is read, with pyyaml, as numba reads it
    (tmp_path / ".numba_config.yaml").write_text("opt: 3\n")
    out = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path, env=env, check=True)
    has_yaml = importlib.util.find_spec("yaml") is not None
    assert out.stdout.split() == [str(has_yaml), "False"]
