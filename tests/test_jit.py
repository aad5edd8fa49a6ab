"""The quick cache loader in ``streamlearn._jit``.

Kernels loaded from numba's disk cache skip numba's target refresh (0.25 s
per process).  These tests pin that the loader is active with the installed
numba, and that a kernel loaded from cache in a fresh process computes
exactly what the freshly compiled one did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from streamlearn import _jit, _jit_numba
from streamlearn.learners import truncated

# A fresh process: train plain SGD on a small random stream through the
# kernel, print a digest of the weights and whether the kernel came from cache.
SCRIPT = r"""
import hashlib, json
from streamlearn.learners import truncated
from streamlearn.learners.base import make_params
from tests.streams import random_stream, run_lazy

params = make_params(learning_rate=0.1, power_t=0.5, initial_t=1.0, l1=0.02, theta=0.05, period=3)
w, preds, stats = run_lazy(truncated.SPEC, params, random_stream(5, n=400), 1)
kernel = truncated.train_batch
st = kernel.stats
print(json.dumps({
    "digest": hashlib.sha256(w.tobytes() + preds.tobytes() + stats.tobytes()).hexdigest(),
    "hits": sum(st.cache_hits.values()),
    "misses": sum(st.cache_misses.values()),
    "quick": type(kernel._cache).__name__,
}))
"""


def test_quick_loader_is_installed():
    assert _jit.QUICK_LOAD, "numba internals changed: kernels load through the slow path"
    assert type(truncated.train_batch._cache) is _jit._QuickLoad


def _run(cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    env.pop("NUMBA_DISABLE_JIT", None)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, cwd=root,
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cached_kernel_equals_compiled(tmp_path):
    first = _run(str(tmp_path))
    second = _run(str(tmp_path))
    assert first["misses"] >= 1 and first["hits"] == 0
    assert second["hits"] >= 1 and second["misses"] == 0
    assert second["quick"] == "_QuickLoad"
    assert first["digest"] == second["digest"]


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
