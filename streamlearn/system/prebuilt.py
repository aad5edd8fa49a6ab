"""Kernels shipped compiled: a first run that loads instead of compiling.

numba compiles each kernel the first time a process needs it: the VW parser
and the default learner alone take ~20 s (numba's type inference and
lowering of the inlined parser, more than LLVM), so a new user's first
``sl train`` used to wait ~25 s.  ``scripts/build_kernels.py`` compiles the
kernels the command line uses for a portable CPU level (``x86-64-v3``:
AVX2, BMI2, FMA -- every x86-64 CPU since 2013-2015; measured as fast as
code for this CPU on the parser and the learners, where the baseline
``x86-64`` cost 10-13% on parsing) and stores them here, one directory per
Python version the package claims (``streamlearn/system/prebuilt/py311/``,
``py312/``, ``py313/``: numba's cache entries are per interpreter): each a
``manifest.json`` plus numba's own cache entries, zlib-compressed.  A process
looks only in its own Python's directory (:data:`DIR`).

A kernel missing from the user's cache (:mod:`streamlearn.system.jit_numba`)
is looked up here before it is compiled.  An entry is used only when
everything it was built from is unchanged:

* the same Python (minor version, ABI flags), numba and llvmlite versions,
  target triple and the numba settings that change code generation
  (``NUMBA_BOUNDSCHECK``, ``NUMBA_OPT``, SVML, debug info, vectorizers);
  ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` unset;
* a CPU with every feature of the level;
* the same source: the SHA-256 of the kernel's module and of every module
  it imports at module level, transitively (numba checks only the kernel's
  own file, but inlines helpers from others), and the same bytecode and
  signature (numba's own index key).

Anything else (another platform or version, an edited learner) compiles as
before, with a line on stderr saying so.  ``SL_PREBUILT=0`` turns the
shipped kernels off.  Object code loaded here is numba's own cache format
(pickled by numba), shipped with the package like its source.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import zlib
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
"""The ``streamlearn`` package directory: manifest paths are relative to it."""
BASE = Path(__file__).resolve().parent / "prebuilt"
"""Where the shipped kernels are: one subdirectory per Python version (:func:`tag`)."""


def tag(version: tuple[int, ...] = tuple(sys.version_info[:2])) -> str:
    """The subdirectory of :data:`BASE` for Python ``version`` (``(3, 12)`` -> ``py312``)."""
    return f"py{version[0]}{version[1]}"


DIR = BASE / tag()
"""This Python's shipped kernels: its ``manifest.json``; the files it names are relative to it."""
MANIFEST = "manifest.json"
FORMAT = 1

CPU = "x86-64-v3"
"""The CPU level the kernels are compiled for."""
CPU_FEATURES = (
    "cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3",  # x86-64-v2
    "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave",  # v3
)  # fmt: skip
"""LLVM's names of the features :data:`CPU` assumes (the x86-64 psABI's level 3)."""


PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
"""This interpreter as a manifest records it (``environment()["python"]``)."""


def environment() -> dict:
    """What compiled code depends on besides the source: compared with the manifest's."""
    import llvmlite
    import numba
    from llvmlite import binding as ll

    c = numba.config
    return {
        "python": PYTHON,
        "numba": numba.__version__,
        "llvmlite": llvmlite.__version__,
        "triple": ll.get_process_triple(),
        "boundscheck": bool(c.BOUNDSCHECK),
        "opt": str(c.OPT),
        "svml": bool(c.USING_SVML),
        "debuginfo": bool(c.DEBUGINFO_DEFAULT),
        "loop_vectorize": bool(c.LOOP_VECTORIZE),
        "slp_vectorize": bool(c.SLP_VECTORIZE),
        "avx": bool(c.ENABLE_AVX),
    }


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@cache
def _read() -> dict | None:
    try:
        with open(DIR / MANIFEST, encoding="utf-8") as f:
            m = json.load(f)
    except (OSError, ValueError):
        return None
    return m if isinstance(m, dict) and m.get("format") == FORMAT else None


@cache
def manifest() -> dict | None:
    """The shipped manifest, or None when there is none or it cannot be used here."""
    if os.environ.get("SL_PREBUILT", "1").strip() == "0":
        return None
    m = _read()
    if m is None or usable(m) is not None:
        return None
    m = dict(m)
    m["index"] = {(k["module"], k["base"], k["sig"], tuple(k["code"])): k for k in m["kernels"]}
    return m


def usable(m: dict) -> str | None:
    """Why the kernels of manifest ``m`` cannot run here, or None when they can."""
    import numba

    target = (numba.config.CPU_NAME, numba.config.CPU_FEATURES)
    if target not in ((None, None), (CPU, "")):  # (the build's own: scripts/build_kernels.py)
        return "NUMBA_CPU_NAME or NUMBA_CPU_FEATURES is set"
    here = environment()
    for key, value in m.get("environment", {}).items():
        if here.get(key) != value:
            return f"{key} is {here.get(key)!r} here, {value!r} in the build"
    if m.get("cpu") != CPU:
        return f"built for {m.get('cpu')!r}"
    missing = missing_features()
    if missing:
        return f"this CPU lacks {', '.join(missing)}"
    return None


def missing_features() -> list[str]:
    """The features of :data:`CPU` this CPU lacks (LLVM's names; llvmlite only)."""
    from llvmlite import binding as ll

    features = ll.get_host_cpu_features()
    return [f for f in CPU_FEATURES if not features.get(f, False)]


@cache
def _digest_of(path: str) -> str:
    return file_digest(PACKAGE / path)


def unchanged(deps: dict[str, str]) -> bool:
    """Whether the files ``deps`` names (paths relative to the package) have the SHA-256
    it records (each file read once a process)."""
    try:
        return bool(deps) and all(_digest_of(p) == h for p, h in deps.items())
    except OSError:
        return False


@cache
def fresh(module: str) -> bool:
    """Whether ``module`` (a path relative to the package) and everything it
    imports are the files the shipped kernels were built from."""
    m = manifest()
    return unchanged(m["modules"].get(module) or {}) if m else False


def lookup(cache_obj, sig) -> dict | None:  # noqa: ANN001 - numba's FunctionCache
    """The manifest's entry for ``sig`` of the kernel behind ``cache_obj``, if fresh."""
    m = manifest()
    if m is None:
        return None
    try:
        module = Path(cache_obj._impl.locator._py_file).resolve().relative_to(PACKAGE).as_posix()
    except (AttributeError, ValueError):
        return None
    if not fresh(module):
        return None
    code = cache_obj._index_key(sig, _Magic())[2]
    return m["index"].get((module, cache_obj._impl.filename_base, str(sig), tuple(code)))


def load(cache_obj, sig, target_context):  # noqa: ANN001, ANN201 - numba's objects
    """The shipped compile result for ``sig``, or None (then numba compiles)."""
    try:
        entry = lookup(cache_obj, sig)
        if entry is None:
            return None
        raw = zlib.decompress((DIR / entry["file"]).read_bytes())
        if hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            return None
        return cache_obj._impl.rebuild(target_context, pickle.loads(raw))  # numba's format
    except Exception:  # noqa: BLE001 - a shipped kernel never fails a run: compile instead
        return None


def seconds(qualname: str) -> float | None:
    """How long ``qualname`` (``io.vw.parse_vw_block``) took to compile when the
    kernels were built, if it was measured."""
    m = _read()
    value = m.get("compile_seconds", {}).get(qualname) if m else None
    return float(value) if isinstance(value, int | float) else None


class _Magic:
    """A stand-in codegen for numba's index key, whose CPU part :func:`lookup` ignores."""

    @staticmethod
    def magic_tuple() -> tuple:
        return ()
