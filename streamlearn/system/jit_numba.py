"""numba's side of :mod:`streamlearn.system.jit`: the disk cache's place and the quick loader.

Imported only when kernels are compiled (not for tiny inputs run as plain Python).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numba
from llvmlite import binding as ll
from llvmlite import ir
from numba import types
from numba.core import cgutils, event
from numba.core.caching import FunctionCache
from numba.core.compiler_lock import global_compiler_lock
from numba.core.runtime import _nrt_python as _nrt
from numba.core.runtime import nrtdynmod, rtsys
from numba.extending import intrinsic

from streamlearn._version import __version__
from streamlearn.system import notices
from streamlearn.system.pages import release_compiler_pages


def _cache_dir() -> str:
    # every source file of the package (this module is in streamlearn/system/): a kernel's
    # cache entry is checked against its own file only, not the helpers it inlines
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(__version__.encode())
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}".encode())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "streamlearn", h.hexdigest()[:16])


KEEP_DAYS = 30
"""Kernel caches of other sl versions unused this long are removed."""


def _prune(base: str, keep: str, now: float | None = None) -> None:
    """Remove digest directories in ``base`` other than ``keep`` untouched for KEEP_DAYS."""
    cutoff = (time.time() if now is None else now) - KEEP_DAYS * 86400
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for e in entries:
        if (
            e.path != keep
            and len(e.name) == 16
            and all(c in "0123456789abcdef" for c in e.name)
            and e.is_dir(follow_symlinks=False)
        ):
            with contextlib.suppress(OSError):
                if e.stat(follow_symlinks=False).st_mtime < cutoff:
                    shutil.rmtree(e.path, ignore_errors=True)


def _use(path: str) -> None:
    """Mark ``path`` as in use; on its first use, prune stale siblings. Never fails a run."""
    try:
        fresh = not os.path.isdir(path)
        os.makedirs(path, exist_ok=True)
        os.utime(path)
    except OSError:
        return
    if fresh:
        _prune(os.path.dirname(path), path)


if not os.environ.get("NUMBA_CACHE_DIR"):
    numba.config.CACHE_DIR = _cache_dir()
    _use(numba.config.CACHE_DIR)


_NRT_MAGIC = b"slnrt\x00\x00\x01"
NRT_SOURCE: str | None = None
"""Where this process's NRT came from: "cache", "compiled" (and cached), or None (numba's own)."""


def _nrt_path(context) -> str:  # noqa: ANN001 - numba's target context
    import llvmlite

    key = repr((numba.__version__, llvmlite.__version__, context.codegen().magic_tuple()))
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(numba.config.CACHE_DIR, f"nrt-{digest}.o")


def _read_nrt(path: str) -> tuple[bytes, bytes] | None:
    """The NRT's object code and bitcode cached at ``path``, if intact."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    head = len(_NRT_MAGIC) + 32 + 16
    if len(raw) < head or not raw.startswith(_NRT_MAGIC):
        return None
    digest, payload = raw[len(_NRT_MAGIC) : len(_NRT_MAGIC) + 32], raw[head:]
    n_obj = int.from_bytes(raw[head - 16 : head - 8], "little")
    n_bc = int.from_bytes(raw[head - 8 : head], "little")
    if n_obj + n_bc != len(payload) or hashlib.sha256(payload).digest() != digest:
        return None
    return payload[:n_obj], payload[n_obj:]


def _write_nrt(path: str, obj: bytes, bitcode: bytes) -> None:
    """Cache the NRT at ``path`` (atomically, as sl writes its outputs); never fails a run."""
    from streamlearn.errors import OutputUnwritable
    from streamlearn.system.outputs import write_bytes

    digest = hashlib.sha256(obj)
    digest.update(bitcode)
    sizes = len(obj).to_bytes(8, "little") + len(bitcode).to_bytes(8, "little")
    with contextlib.suppress(OutputUnwritable):
        write_bytes(path, [_NRT_MAGIC + digest.digest() + sizes, obj, bitcode], "numba's runtime")


def initialize_nrt(context) -> None:  # noqa: ANN001 - numba's target context
    """``rtsys.initialize``, with the NRT's machine code cached beside the kernels.

    numba compiles its runtime (reference counts, allocation helpers) in every
    process that uses it: 20-40 ms, and the compile puts 27 MB of LLVM's code
    in memory.  Loaded from object code like a cached kernel it takes 3 ms.
    The file is keyed by numba's and llvmlite's versions and the CPU (numba's
    ``magic_tuple``) and checked by its SHA-256; anything unexpected falls back
    to numba's own initialisation.
    """
    global NRT_SOURCE
    if rtsys._init:
        return
    with global_compiler_lock:
        if rtsys._init:
            return
        try:
            path = _nrt_path(context)
            cached = _read_nrt(path)
            for py_name, address in _nrt.c_helpers.items():  # as rtsys.initialize does
                ll.add_symbol(py_name if py_name.startswith("_") else "NRT_" + py_name, address)
            if cached is not None:
                library = context.codegen().unserialize_library(("nrt", "object", cached))
                NRT_SOURCE = "cache"
            else:
                module, library = nrtdynmod.create_nrt_module(context)
                library.enable_object_caching()
                library.add_ir_module(module)
                library.finalize()
                _, _, (obj, bitcode) = library.serialize_using_object_code()
                _write_nrt(path, obj, bitcode)
                NRT_SOURCE = "compiled"
        except Exception:  # noqa: BLE001 - numba's internals moved: its own way
            NRT_SOURCE = None
            rtsys.initialize(context)
            return
        rtsys._library = library
        rtsys._init = True


class _QuickLoad(FunctionCache):
    """numba's on-disk cache, minus the target refresh before a load; on a miss,
    the kernels shipped compiled (:mod:`streamlearn.system.prebuilt`)."""

    def load_overload(self, sig, target_context):
        initialize_nrt(target_context)  # the NRT allocator; idempotent
        try:
            with self._guard_against_spurious_io_errors():
                cres = self._load_overload(sig, target_context)
                if cres is None and self._enabled:
                    from streamlearn.system import prebuilt

                    cres = prebuilt.load(self, sig, target_context)
                return cres
        finally:
            release_compiler_pages()


QUICK_LOAD = all(
    hasattr(FunctionCache, name) for name in ("_load_overload", "_guard_against_spurious_io_errors")
)
"""Whether this numba has the internals :class:`_QuickLoad` relies on."""


class _CompileNotice(event.Listener):
    """A line (:func:`streamlearn.system.notices.tell`) when one of our kernels starts
    compiling: which, about how long, where it is cached.  The helpers it compiles
    on the way (nested compiles, same thread) are part of that line; a kernel known
    to compile in under a second (:func:`streamlearn.system.prebuilt.seconds`) says
    nothing."""

    def __init__(self) -> None:
        self._depth = threading.local()
        self.told = 0

    def on_start(self, ev) -> None:  # noqa: ANN001 - numba's event
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        if depth == 0:
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            name = f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', '')}"
            if name.startswith("streamlearn."):
                text = compile_notice(name.removeprefix("streamlearn."), first=not self.told)
                if text:
                    self.told += 1
                    notices.tell(text)

    def on_end(self, ev) -> None:  # noqa: ANN001 - numba's event
        self._depth.n = max(0, getattr(self._depth, "n", 1) - 1)


def compile_notice(name: str, first: bool = True) -> str | None:
    """The line that says kernel ``name`` (``io.vw.parse_vw_block``) is being compiled
    (None for one known to take under a second); the first of a run says where."""
    from streamlearn.system import prebuilt

    took = prebuilt.seconds(name)
    if took is not None and took < 1.0:
        return None
    about = f"about {round(took)} s" if took is not None else "a few seconds"
    if not first:
        return f"compiling {name} too ({about})"
    return (f"compiling {name} for this machine, once ({about}; "
            f"cached in {numba.config.CACHE_DIR})")  # fmt: skip


event.register("numba:compile", _CompileNotice())


def _quick(dispatcher):
    if QUICK_LOAD and isinstance(getattr(dispatcher, "_cache", None), FunctionCache):
        dispatcher._cache = _QuickLoad(dispatcher.py_func)
    return dispatcher


_njit = numba.njit(cache=True, nogil=True)
_njit_inline = numba.njit(cache=True, nogil=True, inline="always")


def jit(func: Callable) -> Callable:
    """Decorator for top-level kernels."""
    return _quick(_njit(func))


def jit_inline(func: Callable) -> Callable:
    """Decorator for small helpers called from kernels (losses, hashing steps)."""
    return _quick(_njit_inline(func))


_njit_noalloc = numba.njit(cache=True, nogil=True, _nrt=False)  # an option of numba >= 0.47


def jit_noalloc(func: Callable) -> Callable:
    """Decorator for kernels that allocate nothing and return no array: the hot loops.

    Compiled without numba's reference counting (``_nrt=False``).  With it,
    each array handed to an inlined helper is a new reference, counted up and
    down with an atomic instruction per call: per example in the learners'
    loops (6% of the default learner's time) and per line and feature in the
    parsers' (7%).  The caller owns every array for the whole call, so the
    counts are not needed; a kernel that allocates fails to compile.
    """
    return _quick(_njit_noalloc(func))


def _item_pointer(context, builder, signature, args):  # noqa: ANN001, ANN202
    """In an intrinsic ``f(array, i, ...)``: the address of ``array[i, ..., 0, ...]``.

    The integer arguments index the first axes, the others are 0; no
    negative-index fix-up and no bounds check (the callers check).
    """
    aryty, *index_types = signature.args
    ary = context.make_array(aryty)(context, builder, args[0])
    inds = [
        context.cast(builder, v, t, types.intp) for v, t in zip(args[1:], index_types, strict=True)
    ]
    inds += [context.get_constant(types.intp, 0)] * (aryty.ndim - len(inds))
    return cgutils.get_item_pointer2(
        context, builder, data=ary.data, shape=cgutils.unpack_tuple(builder, ary.shape),
        strides=cgutils.unpack_tuple(builder, ary.strides), layout=aryty.layout,
        inds=inds, wraparound=False, boundscheck=False,
    )  # fmt: skip


@intrinsic
def prefetch_row(typingctx, table, j):  # noqa: ANN001, ANN201 - numba's intrinsic protocol
    """Ask the CPU to bring row ``j`` of a 2-D ``table`` into the caches (no effect on values).

    LLVM's ``llvm.prefetch`` (read, high locality, data cache): a learner calls it
    for the next example's slots while it works on the current one, so that the
    table's cache misses overlap with computation instead of following it.
    """
    if not isinstance(table, types.Array) or table.ndim != 2 or not isinstance(j, types.Integer):
        return None
    sig = types.void(table, j)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        ptr = _item_pointer(context, builder, signature, args)  # &table[j, 0]
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])  # fmt: skip
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def load_u64(typingctx, buf, i):  # noqa: ANN001, ANN201 - numba's intrinsic protocol
    """The 8 bytes ``buf[i:i + 8]`` of a 1-D uint8 array as one little-endian uint64.

    One unaligned load, not bounds-checked even under ``NUMBA_BOUNDSCHECK``: callers
    test ``i + 8 <= len(buf)`` first.  The word-at-a-time parsers read 8 bytes per
    load with it (:mod:`streamlearn.io._words`).
    """
    if (
        not isinstance(buf, types.Array)
        or buf.ndim != 1
        or buf.dtype != types.uint8
        or not isinstance(i, types.Integer)
    ):
        return None
    sig = types.uint64(buf, i)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        ptr = _item_pointer(context, builder, signature, args)  # &buf[i]
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen


@intrinsic
def trailing_zeros(typingctx, x):  # noqa: ANN001, ANN201 - numba's intrinsic protocol
    """Trailing zero bits of a uint64 (64 for 0): ``tzcnt``, defined at zero."""
    if x != types.uint64:
        return None
    sig = types.uint64(x)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return sig, codegen


@intrinsic
def stack_f32(typingctx, n):  # noqa: ANN001, ANN201 - numba's intrinsic protocol
    """A float32 array of ``n`` (a literal) entries on the kernel's stack, uninitialised.

    Scratch for a ``jit_noalloc`` kernel, which cannot allocate: one ``alloca`` in
    the entry block of the function it is lowered into (so a call in a loop reuses
    the same memory), viewed as an array without a memory owner.  The array must
    not outlive the kernel's call (it is never returned or stored).
    """
    if not isinstance(n, types.IntegerLiteral) or n.literal_value <= 0:
        return None
    size = n.literal_value
    arrty = types.Array(types.float32, 1, "C")
    sig = arrty(n)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        from numba.np.arrayobj import populate_array

        f32 = context.get_value_type(types.float32)
        buf = cgutils.alloca_once(builder, ir.ArrayType(f32, size), name="stack_f32")
        data = builder.bitcast(buf, f32.as_pointer())
        ary = context.make_array(arrty)(context, builder)
        intp = context.get_value_type(types.intp)
        populate_array(ary, data=data, shape=[ir.Constant(intp, size)],
                       strides=[ir.Constant(intp, 4)], itemsize=ir.Constant(intp, 4),
                       meminfo=None)  # fmt: skip
        return ary._getvalue()

    return sig, codegen


@intrinsic
def fdiv(typingctx, a, b):  # noqa: ANN001, ANN201 - numba's intrinsic protocol
    """``a / b`` for two floats of one type, as C divides: inf or nan for a zero divisor.

    numba's ``/`` checks the divisor for zero first (to raise ZeroDivisionError), a
    branch per division that keeps a loop of divisions from running as vector
    instructions; this is the bare IEEE division.
    """
    if not isinstance(a, types.Float) or a != b:
        return None
    sig = a(a, b)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        return builder.fdiv(args[0], args[1])

    return sig, codegen
