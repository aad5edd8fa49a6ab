"""The decorators of a run that calls the shipped kernels before (or without) numba.

Unless ``SL_DIRECT_LOAD=0``, :mod:`streamlearn.system.jit` decorates each kernel with a
:class:`Kernel`: a call whose arguments are
of a shipped entry's types runs that entry, loaded without numba
(:mod:`streamlearn.system.shipped`); any other call, or anything asked of the
kernel that only numba's dispatcher has (``overloads``, ``signatures``...),
first :func:`activate`\\ s numba: numba is imported as the numba mode imports it
(:func:`import_numba`), every kernel gets its dispatcher, and each module of the
package sees the dispatchers and numba's intrinsics where it saw the kernels
and their stand-ins, so that what numba compiles from then on calls and inlines
numba's objects.  A run of shipped kernels never imports numba; a run that
needs one more kernel pays numba's import once, as before.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from types import ModuleType

from streamlearn.system import shipped
from streamlearn.system.pages import release_compiler_pages

_LOCK = threading.RLock()
_KERNELS: list[Kernel] = []
_ACTIVE: ModuleType | None = None  # jit_numba, once numba is imported


def import_numba() -> ModuleType:
    """Import numba as sl does (:mod:`streamlearn.system.jit_numba`, which it returns)."""
    import llvmlite.binding  # noqa: F401 - loads LLVM, whose initialisers touch 36 MB of it

    release_compiler_pages()  # before numba's import adds its 36 MB of objects
    # numba's import also imports two optional packages the kernels never need: pyyaml,
    # to read a .numba_config.yaml in the working directory (imported when there is one),
    # and scipy, to check its version (numba's linear algebra imports it when compiling):
    # ~15 ms of every start.  Both stay importable afterwards.
    skipped = [m for m in ("yaml", "scipy") if m not in sys.modules]
    if os.path.isfile(".numba_config.yaml") and "yaml" in skipped:
        skipped.remove("yaml")
    sys.modules.update(dict.fromkeys(skipped))  # None: an ImportError, which numba expects
    try:
        import numba  # noqa: F401
    finally:
        for m in skipped:
            if m in sys.modules and sys.modules[m] is None:
                del sys.modules[m]
    from streamlearn.system import jit_numba

    return jit_numba


class Kernel:
    """A kernel (``kind``: the decorator it was given) that runs its shipped entries
    itself and hands everything else to its numba dispatcher, made on first need."""

    def __init__(self, func: Callable, kind: str) -> None:
        self.py_func = func
        self.kind = kind
        self.entries: dict[tuple, Callable] = {}  # argument types -> shipped entry
        self.literal: dict[tuple, list] = {}  # ... -> [(entry's types and values, entry)]
        self.dispatcher: Callable | None = None
        functools.update_wrapper(self, func)
        with _LOCK:
            if _ACTIVE is not None:
                self.dispatcher = getattr(_ACTIVE, kind)(func)
            _KERNELS.append(self)

    def __call__(self, *args: object, **kwargs: object) -> object:
        if self.dispatcher is None and not kwargs:
            fn = self.shipped(args)
            if fn is not None:
                return fn(*args)
        return self.numba(args)(*args, **kwargs)

    def shipped(self, args: tuple, by_type: bool = False) -> Callable | None:
        """The shipped entry for positional ``args``, or None.  Its calls are not checked:
        the caller keeps later arguments of these types (as :mod:`~streamlearn.system.direct`
        says), and with ``by_type`` wants only an entry for their types (numba's
        dispatcher's ``overloads``), not one for some of their values."""
        codes = tuple(map(shipped.code, args))
        fn = self.entries.get(codes)
        if fn is not None or None in codes:
            return fn
        literals = self.literal.get(codes)
        if literals is not None:
            if by_type:
                return None
            for match, f in literals:
                if shipped.literal_match(match, codes, args):
                    return f
        fn, literal = shipped.LOADER.find(self.py_func, codes, args)
        if fn is not None and literal:
            self.literal.setdefault(codes, []).append((literal, fn))
            return None if by_type else fn
        if fn is not None:
            self.entries[codes] = fn
        return fn

    def numba(self, args: tuple | None = None) -> Callable:
        """numba's dispatcher of this kernel (numba imported on the first need, and why
        said on stderr with ``SL_DIRECT_DEBUG=1``)."""
        if self.dispatcher is None:
            if os.environ.get("SL_DIRECT_DEBUG") == "1":
                _debug(self, args)
            activate()
        assert self.dispatcher is not None
        return self.dispatcher

    @property
    def _numba_type_(self) -> object:
        """The kernel's numba type where numba types it (an argument or a global of numba
        code: numba's ``typeof`` asks this of objects it does not know)."""
        from numba import typeof

        return typeof(self.numba())

    def __getattr__(self, name: str) -> object:  # what only the dispatcher has
        if name not in _DISPATCHER:  # (py_func, kind, ... are the instance's own)
            raise AttributeError(name)
        return getattr(self.numba(), name)

    def __reduce__(self) -> tuple:
        return _named, (self.py_func.__module__, self.py_func.__qualname__)

    def __repr__(self) -> str:
        return f"<kernel {self.py_func.__module__}.{self.py_func.__qualname__}>"


def _debug(kernel: Kernel, args: tuple | None) -> None:
    """Why ``kernel`` asks for numba: its call's types and those of its shipped entries."""
    func = kernel.py_func
    codes = None if args is None else tuple(map(shipped.code, args))
    line = func.__code__.co_firstlineno
    known = [k["args"] for e in shipped.LOADER.kernels.values() for k in e
             if k["qualname"] == func.__qualname__ and k["line"] == line]  # fmt: skip
    print(f"sl: numba for {func.__module__}.{func.__qualname__}{codes}: shipped {known} "
          f"({shipped.LOADER.why or 'usable'})", file=sys.stderr)


_DISPATCHER = frozenset([
    "overloads", "signatures", "nopython_signatures", "typeof_pyval", "compile", "recompile",
    "get_compile_result", "get_overload", "get_call_template", "get_metadata", "inspect_types",
    "inspect_llvm", "inspect_asm", "inspect_cfg", "inspect_disasm_cfg", "targetoptions",
    "targetdescr", "typingctx", "targetctx", "stats", "enable_caching", "disable_compile",
    "parallel_diagnostics", "locals", "func_code", "is_compiling", "get_annotation_info",
])  # fmt: skip
"""numba's dispatcher's public attributes: asked of a kernel, they import numba."""


def _named(module: str, qualname: str) -> object:
    import importlib

    obj: object = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class Intrinsic:
    """Where a kernel module names one of numba's intrinsics (``fdiv``, ``load_u64``...):
    used only inside kernels, which the shipped entries already are compiled from.
    ``make``: a module's own intrinsic (:func:`own_intrinsic`), made on activation."""

    def __init__(self, name: str, make: Callable[[], object] | None = None) -> None:
        self.name = name
        self.make = make
        self.real: object = None

    def numba(self) -> object:
        """numba's intrinsic this stands for (numba the runner from here on)."""
        activate()
        return self.real

    def __call__(self, *args: object) -> object:
        return self.numba()(*args)  # type: ignore[operator]


_OWN: list[Intrinsic] = []
"""The kernel modules' own intrinsics' stand-ins (:func:`own_intrinsic`)."""


def own_intrinsic(name: str, make: Callable[[], object]) -> object:
    """A kernel module's own intrinsic: ``make()`` once numba runs the kernels, until then
    a stand-in that activation replaces with it in every module."""
    with _LOCK:
        if _ACTIVE is not None:
            return make()
        stand_in = Intrinsic(name, make)
        _OWN.append(stand_in)
        return stand_in


def jit(func: Callable) -> Kernel:
    """Decorator for top-level kernels."""
    return Kernel(func, "jit")


def jit_inline(func: Callable) -> Kernel:
    """Decorator for small helpers called from kernels (and their shipped entries from Python)."""
    return Kernel(func, "jit_inline")


def jit_noalloc(func: Callable) -> Kernel:
    """Decorator for kernels that allocate nothing."""
    return Kernel(func, "jit_noalloc")


INTRINSICS = ("fdiv", "load_u64", "prefetch_row", "stack_f32", "trailing_zeros")
NAMES = ("QUICK_LOAD", "fdiv", "jit", "jit_inline", "jit_noalloc", "load_u64", "prefetch_row",
         "stack_f32", "trailing_zeros")  # fmt: skip
"""What :mod:`streamlearn.system.jit` takes from here or from ``jit_numba``."""
fdiv, load_u64, prefetch_row, stack_f32, trailing_zeros = map(Intrinsic, INTRINSICS)
QUICK_LOAD = False  # (numba's, once imported: jit_numba.QUICK_LOAD)


def activate() -> None:
    """Import numba and make it the kernels' runner from here on (see the module's doc)."""
    global _ACTIVE
    with _LOCK:
        if _ACTIVE is not None:
            return
        jn = import_numba()
        from numba.extending import typeof_impl

        @typeof_impl.register(Kernel)
        def _typeof_kernel(val, c):  # noqa: ANN001, ANN202 - numba's typeof protocol
            return typeof_impl(val.numba(), c)

        for k in _KERNELS:
            k.dispatcher = getattr(jn, k.kind)(k.py_func)
        swap: dict[int, object] = {id(k): k.dispatcher for k in _KERNELS}
        for i in (fdiv, load_u64, prefetch_row, stack_f32, trailing_zeros, *_OWN):
            i.real = i.make() if i.make is not None else getattr(jn, i.name)
            swap[id(i)] = i.real
        for name, module in list(sys.modules.items()):
            if module is None or not (name == "streamlearn" or name.startswith("streamlearn.")):
                continue
            space = vars(module)
            for key, value in list(space.items()):
                new = swap.get(id(value))
                if new is not None:
                    space[key] = new
        jit_module = sys.modules.get("streamlearn.system.jit")
        if jit_module is not None:  # modules imported from now on get numba's decorators
            for name in NAMES:
                setattr(jit_module, name, getattr(jn, name))
        # the intrinsics made now into the typing context: a compile under way (a user's
        # @njit naming a kernel, which activated us) refreshed it before (only the typing
        # context: the target's refresh imports every lowering numba has, 0.25 s)
        from numba.core.registry import cpu_target

        cpu_target.typing_context.refresh()
        _ACTIVE = jn
