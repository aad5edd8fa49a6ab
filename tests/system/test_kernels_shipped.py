"""Every kernel a supported command line reaches is shipped compiled (issue 46).

``scripts/kernel_lines.py`` enumerates the command lines from the registries (algorithms,
losses, reductions, explorers, cb types, the legacy cb stack, formats, ``--audit``); here
they run against the shipped kernels in a fresh process with an empty numba cache, and the
first kernel that would compile instead of load fails the test with its name and line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from streamlearn.system import prebuilt
from tests.paths import ROOT, script

_SCRIPT = ROOT / "scripts" / "kernel_lines.py"


def _kernel_lines():
    return script("kernel_lines")


def test_the_lines_reach_every_name_the_registries_hold(tmp_path):
    """A new algorithm, explorer, cb type or reduction is enumerated before it ships."""
    kl = _kernel_lines()
    lines = [a[1:] if a[0] == "vw" else a for a in kl.every_line(tmp_path)]
    got, want = kl.covered(lines), kl.registry_names()
    assert {k: want[k] - got[k] for k in want} == {k: set() for k in want}


_RUNNER = """
import json, sys, threading
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import kernel_lines
from numba.core import event

class Compiling(Exception):
    pass

compiled = []

class Refuse(event.Listener):
    def on_start(self, ev):
        func = ev.data["dispatcher"].py_func
        if func.__module__.startswith("streamlearn."):
            compiled.append(f"{func.__module__}.{func.__qualname__}")
            raise Compiling(compiled[-1])

    def on_end(self, ev):
        pass

event.register("numba:compile", Refuse())
failures = []
for line in kernel_lines.every_line(Path(sys.argv[2])):
    compiled.clear()
    try:
        code = kernel_lines.run(line)
    except Exception as e:
        code = repr(e)
    if compiled or code:
        failures.append({"line": " ".join(line), "compiles": list(compiled), "exit": str(code)})
compiled.clear()
try:
    kernel_lines.api_calls(Path(sys.argv[2]))
except Exception as e:
    failures.append({"line": "api_calls", "compiles": list(compiled), "exit": repr(e)})
print(json.dumps(failures))
"""


@pytest.mark.slow
@pytest.mark.skipif(prebuilt.manifest() is None, reason="the shipped kernels do not fit here")
def test_every_enumerated_line_runs_on_the_shipped_kernels(tmp_path):
    """Nothing compiles: each line's kernels load from the shipped set (an empty cache)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), SL_JIT="1")
    for k in ("NUMBA_DISABLE_JIT", "NUMBA_BOUNDSCHECK", "SL_PREBUILT"):
        env.pop(k, None)
    work = tmp_path / "work"
    work.mkdir()
    r = subprocess.run([sys.executable, "-c", _RUNNER, str(_SCRIPT.parent), str(work)],
                       env=env, cwd=work, capture_output=True, text=True,
                       timeout=1800)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    failures = json.loads(r.stdout.strip().splitlines()[-1])
    assert failures == [], json.dumps(failures, indent=1)
