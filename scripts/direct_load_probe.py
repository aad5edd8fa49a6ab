#!/usr/bin/env python
"""How soon a process can call a shipped kernel without importing numba (issue 46's start-up).

A probe, not a loader sl uses: it takes one kernel of the shipped set
(``io._scan.count_newlines``, a uint8 buffer in, an int64 out), unpacks its
object code from numba's cache entry (in a child that imports numba), then in a
fresh child loads that object code with llvmlite alone -- numba's three C
helper extensions (``_helperlib``, ``_dynfunc``, ``_nrt_python``) loaded from
their files, not through ``numba/__init__.py`` -- and calls it; and beside it
the time a child takes to the same call through sl's normal path (numba
imported, the kernel loaded from the shipped set).  Each child is timed from
its own start (after the interpreter's) to the kernel's first answer.

Usage::

    python scripts/direct_load_probe.py [--rounds 7]

What a loader built on this would need besides (measured on the shipped set:
299 kernels for Python 3.11): the object code and the wrapper's and
environments' symbol names written by ``scripts/build_kernels.py`` in a form
read without numba (10 kernels have constants in their environments, all numpy
dtypes; none has ``reload_init``); the NRT's memory system set up before a
kernel that allocates; the argument types computed without ``numba.typeof`` and
compared with the manifest's signatures (numba itself on any mismatch); an
exception raised in a kernel imports numba then (``numba_unpickle``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXTRACT = r"""
import json, pickle, sys, zlib
import numba  # (numba's cache format)
from streamlearn.system import prebuilt
m = json.loads((prebuilt.DIR / prebuilt.MANIFEST).read_text())
entry = next(k for k in m["kernels"] if k["base"].startswith("_scan.count_newlines-"))
payload = pickle.loads(zlib.decompress((prebuilt.DIR / entry["file"]).read_bytes()))
library, fndesc, env = payload[0], payload[1], payload[2]
open(sys.argv[1] + ".o", "wb").write(library[2][0])
json.dump({"wrapper": fndesc.llvm_cpython_wrapper_name, "module": fndesc.modname,
           "name": fndesc.qualname,
           "envs": [env.env_name, *(e.env_name for e in payload[8])]},
          open(sys.argv[1] + ".json", "w"))
"""

DIRECT = r"""
import time
t0 = time.perf_counter()
import ctypes, importlib.machinery, importlib.util, json, os, sys
import numpy as np
import llvmlite.binding as ll
base = os.path.join(os.path.dirname(importlib.util.find_spec("llvmlite").origin), "..", "numba")
def ext(name, *parts):
    path = os.path.join(base, *parts) + importlib.machinery.EXTENSION_SUFFIXES[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
helper = ext("numba._helperlib", "_helperlib")
dynfunc = ext("numba._dynfunc", "_dynfunc")
nrt = ext("numba.core.runtime._nrt_python", "core", "runtime", "_nrt_python")
ll.initialize_native_target()
ll.initialize_native_asmprinter()
for k, v in helper.c_helpers.items():
    ll.add_symbol(k if k.startswith("numba_") else "numba_" + k, v)
for k, v in nrt.c_helpers.items():
    ll.add_symbol(k if k.startswith("_") else "NRT_" + k, v)
tm = ll.Target.from_triple(ll.get_process_triple()).create_target_machine(
    cpu=ll.get_host_cpu_name(), features=ll.get_host_cpu_features().flatten(), opt=3,
    reloc="static", codemodel="jitdefault")
engine = ll.create_mcjit_compiler(ll.parse_assembly(""), tm)
meta = json.load(open(sys.argv[1] + ".json"))
engine.add_object_file(ll.ObjectFileRef.from_data(open(sys.argv[1] + ".o", "rb").read()))
engine.finalize_object()
env = dynfunc.Environment({"__name__": meta["module"]})
for name in meta["envs"]:
    address = engine.get_global_value_address(name)
    if address:
        ctypes.c_void_p.from_address(address).value = id(env)
fn = dynfunc.make_function(sys.modules[__name__], meta["name"], "", engine.get_function_address(
    meta["wrapper"]), env, (engine,))
n = fn(np.frombuffer(b"a\nb\n" * 1000, dtype=np.uint8))
print(time.perf_counter() - t0, n, "numba" in sys.modules)
"""

NORMAL = r"""
import time
t0 = time.perf_counter()
import sys
import numpy as np
from streamlearn.io._scan import count_newlines
n = count_newlines(np.frombuffer(b"a\nb\n" * 1000, dtype=np.uint8))
print(time.perf_counter() - t0, n, "numba" in sys.modules)
"""


def _run(code: str, *args: str) -> tuple[float, int, bool]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_DISABLE_JIT", "SL_JIT")}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=True, cwd=ROOT, env=env).stdout.split()  # fmt: skip
    return float(out[0]), int(out[1]), out[2] == "True"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stem = os.path.join(tmp, "kernel")
        subprocess.run([sys.executable, "-c", EXTRACT, stem], check=True, cwd=ROOT)
        _run(NORMAL)  # (the user's kernel cache filled once)
        direct, normal = [], []
        for _ in range(a.rounds):
            t, n, imported = _run(DIRECT, stem)
            assert n == 2000 and not imported, (n, imported)
            direct.append(t)
            t, n, imported = _run(NORMAL)
            assert n == 2000 and imported
            normal.append(t)
    print(f"to count_newlines' first answer, {a.rounds} rounds in rotation (median, best):")
    print(f"  llvmlite alone, numba not imported  {statistics.median(direct):.3f} s  "
          f"{min(direct):.3f} s")
    print(f"  sl's path (numba, shipped kernel)   {statistics.median(normal):.3f} s  "
          f"{min(normal):.3f} s")
    saved = statistics.median(normal) - statistics.median(direct)
    print(f"  saved                               {saved:.3f} s")


if __name__ == "__main__":
    main()
