"""The shipped kernels called without importing numba: start-up in a tenth of a second.

A run that loads its kernels through numba pays ~0.3 s before its first
example: numba's import (its typing and lowering registries, ~500 modules) and
each kernel rebuilt from its cache entry (bitcode parsed, environments
unpickled).  The compiled code needs none of it: it is object code calling a
few C helpers.  This module calls the kernels of :mod:`~streamlearn.system.prebuilt`
as numba would load them, with llvmlite alone: numba's three C extensions
(``_helperlib``, ``_dynfunc``, ``_nrt_python``) loaded from their files (not
through ``numba/__init__.py``), their symbols registered as numba registers
them, numba's runtime (``nrt.o.z``, compiled for the CPU level with the
kernels) and each kernel's object code (read from its numba cache entry
without unpickling it, checked by its SHA-256) added to one MCJIT engine,
each environment pointed at its module's globals, and the entry made a
Python function by ``_dynfunc.make_function``, as numba makes it.

``scripts/build_kernels.py`` writes ``direct.json`` beside the manifest: for
each entry its arguments' types coded as :func:`code` codes a value, its
symbols, its object code's SHA-256.  A call is served here only when numba
itself would have loaded that same shipped entry for it:

* nothing configures numba (no ``NUMBA_*`` variable but ``NUMBA_CACHE_DIR``,
  no ``.numba_config.yaml``), so its settings are its defaults, which the
  build recorded (:data:`DEFAULTS`); ``SL_PREBUILT`` is not ``0``;
* the manifest's Python, numba, llvmlite and target triple are this
  process's, and the CPU has every feature of the level
  (:func:`streamlearn.system.prebuilt.usable`'s conditions, without numba);
* the kernel's module and every module it imports are the files the
  kernels were built from, and its bytecode is the entry's
  (:func:`streamlearn.system.prebuilt.lookup`'s key);
* the arguments are positional and of the entry's types, as numba's
  ``typeof`` types them (arrays of a plain dtype by dtype, dimensions,
  layout and writability; Python and numpy scalars; tuples of those).

Anything else is numba's: :mod:`streamlearn.system.jit_direct` imports it
and hands the kernel to its dispatcher.  An exception raised inside a kernel
imports numba to build it (numba's helpers unpickle its arguments), as it
would in a numba run.
"""

from __future__ import annotations

import builtins
import ctypes
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

from streamlearn.system import prebuilt
from streamlearn.system.pages import release_compiler_pages

FORMAT = 1
INDEX = "direct.json"
"""Beside each Python's manifest: what this module needs of each entry."""
NRT = "nrt.o.z"
"""numba's runtime (reference counts, allocation) as object code for the CPU level."""

DEFAULTS = {"boundscheck": False, "opt": "_OptLevel(3)", "svml": False, "debuginfo": False,
            "loop_vectorize": True, "slp_vectorize": False, "avx": True}  # fmt: skip
"""numba's code-generation settings (``prebuilt.environment()``) when nothing sets them, on
a CPU of the level: the manifest's must be these (``tests/system/test_shipped.py`` checks
this numba's defaults are)."""

_AVX_OFF = {"corei7-avx", "core-avx-i", "sandybridge", "ivybridge", "nocona"}
"""CPUs numba compiles without AVX by default (its ``config.avx_default``)."""

_DTYPES = frozenset(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                     "uint64", "float32", "float64"])  # fmt: skip
_SCALARS = {getattr(np, n if n != "bool" else "bool_"): n for n in _DTYPES}
_DTYPE_NAMES = {np.dtype(n): n for n in _DTYPES}  # (native byte order only; ``.name`` is slow)
_C, _F, _WRITEABLE = 0x1, 0x2, 0x400  # numpy's NPY_ARRAY_* flag bits (``ndarray.flags.num``)
_ARRAYS = (np.ndarray, np.memmap)


def code(value: object) -> object:
    """``value``'s numba type, coded as ``scripts/build_kernels.py`` codes an entry's
    argument types; None for a value this module does not type (numba then does)."""
    t = type(value)
    if t in _ARRAYS:
        name = _DTYPE_NAMES.get(value.dtype)  # type: ignore[attr-defined]
        if name is None:
            return None
        f = value.flags.num  # type: ignore[attr-defined]
        layout = "C" if f & _C else "F" if f & _F else "A"
        return (name, value.ndim, layout, not f & _WRITEABLE)  # type: ignore[attr-defined]
    if t is int:  # numba: int64 unless it needs 64 bits unsigned
        n = value.bit_length()  # type: ignore[attr-defined]
        return "int64" if n < 64 else "uint64" if n == 64 and value >= 0 else None  # type: ignore[operator]
    if t is float:
        return "float64"
    if t is bool:
        return "bool"
    if t is tuple:
        inner = tuple(map(code, value))  # type: ignore[call-overload]
        return None if None in inner else ("tuple", *inner)
    return _SCALARS.get(t)


WRAPPER = "_ZN7cpython"
ENV = "_ZN08NumbaEnv"
"""The prefixes numba names a kernel's Python entry and its environments with (the entry's
environment and the entry share the rest: ``symbol`` in ``direct.json``)."""


def environments(obj: bytes) -> list[str]:
    """The names of the environments in object code ``obj`` (its symbol names)."""
    names, i, prefix = [], obj.find(ENV.encode()), ENV.encode()
    while i >= 0:
        end = obj.find(b"\0", i)
        if end < 0:
            break
        names.append(obj[i:end].decode("ascii", "replace"))
        i = obj.find(prefix, end)
    return sorted(set(names))


def _frozen(c: object) -> object:
    """A JSON-read argument code as :func:`code` returns it (tuples, not lists)."""
    return tuple(_frozen(x) for x in c) if isinstance(c, list) else c


def object_code(raw: bytes) -> bytes | None:
    """The object code in numba's cache entry ``raw``, read from the pickle's bytes without
    unpickling it: the first bytes object that is an ELF file (the library's object code
    comes first in the entry).  The caller checks it against the SHA-256 the build recorded."""
    i = raw.find(b"\x7fELF")
    while i >= 0:
        if i >= 5 and raw[i - 5] == 0x42:  # BINBYTES, 4-byte length
            n = int.from_bytes(raw[i - 4 : i], "little")
        elif i >= 9 and raw[i - 9] == 0x8E:  # BINBYTES8
            n = int.from_bytes(raw[i - 8 : i], "little")
        elif i >= 2 and raw[i - 2] == 0x43:  # SHORT_BINBYTES
            n = raw[i - 1]
        else:
            n = 0
        if n and i + n <= len(raw):
            return raw[i : i + n]
        i = raw.find(b"\x7fELF", i + 1)
    return None


def _extension(name: str, *parts: str) -> ModuleType:
    """numba's C extension ``name`` loaded from its file, without ``numba/__init__.py``
    (numba's own import later finds the same loaded library)."""
    base = _numba_dir()
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = base.joinpath(*parts[:-1], parts[-1] + suffix)
        if path.is_file():
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise ImportError(f"{name}: not found beside llvmlite")


def unusable(manifest: dict, index: dict, raw_manifest: bytes) -> str | None:
    """Why the shipped kernels cannot be called here without numba, or None."""
    import llvmlite
    from llvmlite import binding as ll

    if os.environ.get("SL_PREBUILT", "1").strip() == "0":
        return "SL_PREBUILT=0"
    off = ("", "0")
    configured = [k for k in os.environ if k.startswith("NUMBA_") and k != "NUMBA_CACHE_DIR"
                  and not (k == "NUMBA_DISABLE_JIT" and os.environ[k].strip() in off)]  # fmt: skip
    if configured:
        return f"{configured[0]} is set"
    if os.path.isfile(".numba_config.yaml"):
        return "a .numba_config.yaml is here"
    if index.get("format") != FORMAT or index.get("defaults") != DEFAULTS:
        return "direct.json is of another format"
    if index.get("manifest") != hashlib.sha256(raw_manifest).hexdigest():
        return "direct.json was written for another manifest"
    env = manifest.get("environment", {})
    here = {
        "python": prebuilt.PYTHON,
        "numba": _numba_version(),
        "llvmlite": llvmlite.__version__,
        "triple": ll.get_process_triple(),
        **DEFAULTS,
    }
    for key, value in env.items():
        if here.get(key) != value:
            return f"{key} is {here.get(key)!r} here, {value!r} in the build"
    if set(env) != set(here) or manifest.get("cpu") != prebuilt.CPU:
        return "the manifest records another build"
    missing = prebuilt.missing_features()
    if missing:
        return f"this CPU lacks {', '.join(missing)}"
    if ll.get_host_cpu_name() in _AVX_OFF or not _os_avx():
        return "numba would compile without AVX here"
    svml = getattr(ll, "has_svml", False)
    if svml() if callable(svml) else svml:
        return "llvmlite has SVML (numba decides whether to use it)"
    return None


def _numba_version() -> str:
    """numba's version, read without importing it: from the file its build wrote
    (``numba/_version.py``, a JSON text), else from its distribution's metadata (13 ms)."""
    try:
        text = (_numba_dir() / "_version.py").read_text(encoding="utf-8")
        found = re.search(r'^ "version": "([^"]+)"$', text, re.M)
        if found:
            return found.group(1)
    except (OSError, ImportError):
        pass
    import importlib.metadata

    return importlib.metadata.version("numba")


def _numba_dir() -> Path:
    """numba's package directory (beside llvmlite's), found without importing numba."""
    spec = importlib.util.find_spec("llvmlite")
    if spec is None or spec.origin is None:
        raise ImportError("llvmlite is not installed")
    return Path(spec.origin).parent.parent / "numba"


def _os_avx() -> bool:
    """Whether Linux reports AVX (numba's ``_os_supports_avx``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                head, _, body = line.partition(":")
                if head.strip() == "flags":
                    return "avx" in body.split()
    except OSError:
        return True
    return False


class _Loader:
    """The shipped kernels of this Python, set up on first use (one per process)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.why: str | None = None  # why not usable (once known)
        self.ready = False
        self.kernels: dict[tuple[str, str, int], list[dict]] = {}
        self.fresh: dict[str, bool] = {}
        self.keep: list[object] = []  # environments: their pointers live in the object code

    def _setup(self) -> bool:
        if self.ready or self.why is not None:
            return self.ready
        try:
            raw_manifest = (prebuilt.DIR / prebuilt.MANIFEST).read_bytes()
            manifest = json.loads(raw_manifest)
            index = json.loads((prebuilt.DIR / INDEX).read_bytes())
            self.why = unusable(manifest, index, raw_manifest)
            if self.why is not None:
                return False
            nrt = zlib.decompress((prebuilt.DIR / NRT).read_bytes())
            if hashlib.sha256(nrt).hexdigest() != index["nrt"]:
                self.why = "nrt.o.z is not the one direct.json names"
                return False
            self._engine(index["math"], nrt)
        except (OSError, ValueError, KeyError, TypeError, ImportError, RuntimeError) as e:
            self.why = f"cannot be set up ({e})"
            return False
        self.modules = manifest["modules"]
        for k in index["kernels"]:
            k["args"] = tuple(_frozen(a) for a in k["args"])
            self.kernels.setdefault((k["module"], k["qualname"], k["line"]), []).append(k)
        self.ready = True
        return True

    def _engine(self, math: list[str], nrt: bytes) -> None:
        from llvmlite import binding as ll

        helper = _extension("numba._helperlib", "_helperlib")
        self.dynfunc = _extension("numba._dynfunc", "_dynfunc")
        runtime = _extension("numba.core.runtime._nrt_python", "core", "runtime", "_nrt_python")
        ll.initialize_native_target()
        ll.initialize_native_asmprinter()
        # the symbols numba's target installs (core/base.py, core/externals.py, the NRT's)
        ll.add_symbol("_Py_NoneStruct", id(None))
        for helpers in (helper.c_helpers, self.dynfunc.c_helpers):
            for name, address in helpers.items():
                ll.add_symbol("numba_" + name, address)
        for obj in vars(builtins).values():
            if isinstance(obj, type) and issubclass(obj, BaseException):
                ll.add_symbol(f"PyExc_{obj.__name__}", id(obj))
        for name in math:
            ll.add_symbol(name, helper.c_helpers[name])
        for name, address in runtime.c_helpers.items():
            ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
        target = ll.Target.from_triple(ll.get_process_triple())
        machine = target.create_target_machine(
            cpu=ll.get_host_cpu_name(), features=ll.get_host_cpu_features().flatten(), opt=3,
            reloc="static", codemodel="jitdefault", jit=True)  # fmt: skip
        self.engine = ll.create_mcjit_compiler(ll.parse_assembly(""), machine)
        self.ll = ll
        self._add(nrt)

    def _add(self, obj: bytes) -> None:
        self.engine.add_object_file(self.ll.ObjectFileRef.from_data(obj))
        self.engine.finalize_object()
        release_compiler_pages()  # (LLVM's pages the load touched: as numba's quick loader)

    def _is_fresh(self, module: str) -> bool:
        ok = self.fresh.get(module)
        if ok is None:
            ok = self.fresh[module] = prebuilt.unchanged(self.modules.get(module) or {})
        return ok

    def find(self, func: Callable, codes: tuple, args: tuple) -> tuple[Callable | None, tuple]:
        """``func``'s shipped entry for ``args`` (of types ``codes``), loaded, or None; and
        the entry's argument types when some are their values (numba's literal types)."""
        with self.lock:
            if not self._setup():
                return None, ()
            co = func.__code__  # type: ignore[attr-defined]
            try:
                module = Path(co.co_filename).resolve().relative_to(prebuilt.PACKAGE).as_posix()
            except ValueError:
                return None, ()
            key = (module, func.__qualname__, co.co_firstlineno)
            entries = self.kernels.get(key)
            if not entries or func.__closure__ is not None or not self._is_fresh(module):  # type: ignore[attr-defined]
                return None, ()
            h = (hashlib.sha256(co.co_code).hexdigest(), _EMPTY)
            entries = [k for k in entries if tuple(k["code"]) == h]
            for k in entries:
                if k["args"] == codes:
                    return k.get("loaded") or self._load(func, k), ()
            # numba types an argument by its value only when typing it by its type failed
            # (the kernel asked for it): then no entry has these types, as here
            for k in entries:
                if literal_match(k["args"], codes, args):
                    return k.get("loaded") or self._load(func, k), k["args"]
            return None, ()

    def _load(self, func: Callable, k: dict) -> Callable | None:
        try:
            raw = zlib.decompress((prebuilt.DIR / k["file"]).read_bytes())
        except (OSError, zlib.error):
            return None
        obj = object_code(raw)
        if obj is None or hashlib.sha256(obj).hexdigest() != k["sha256"]:
            return None
        self._add(obj)
        module = sys.modules[func.__module__]
        own = self.dynfunc.Environment(vars(module))
        # the environments of the code it inlined from elsewhere: only object mode reads an
        # environment's globals, and none of these has constants (the build checked)
        other = self.dynfunc.Environment({"__name__": "streamlearn.system.shipped"})
        self.keep += [own, other]
        consts = k.get("consts") or {}
        for name in environments(obj):
            address = self.engine.get_global_value_address(name)
            if not address:
                continue
            env = own if name == ENV + k["symbol"] else other
            if name in consts:  # (numpy dtypes: of the arrays the kernel returns)
                if env is other:
                    env = self.dynfunc.Environment({"__name__": "streamlearn.system.shipped"})
                    self.keep.append(env)
                env.consts[:] = [np.dtype(c) for c in consts[name]]
            ctypes.c_void_p.from_address(address).value = id(env)
        address = self.engine.get_function_address(WRAPPER + k["symbol"])
        if not address:
            return None
        name = func.__qualname__.rsplit(".", 1)[-1]
        fn = self.dynfunc.make_function(module, name, func.__doc__ or "", address, own,
                                        (self.engine,))  # fmt: skip
        k["loaded"] = fn
        return fn


def literal_match(entry: tuple, codes: tuple, args: tuple) -> bool:
    """Whether an entry's argument types ``entry``, some typed by value (``("lit", type,
    value)``), are those of ``args`` (of types ``codes``): a Python int or bool equal to the
    value where the entry has one."""
    if len(entry) != len(codes):
        return False
    lit = False
    for e, c, a in zip(entry, codes, args, strict=True):
        if e == c:
            continue
        if not (isinstance(e, tuple) and e[0] == "lit" and e[1] == c):
            return False
        if type(a) is not type(e[2]) or a != e[2]:
            return False
        lit = True
    return lit


_EMPTY = hashlib.sha256(b"").hexdigest()  # a top-level function's closure, as numba hashes it
LOADER = _Loader()
