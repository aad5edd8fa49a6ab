"""A compiled kernel's entry for one set of argument types: calls without numba's dispatch.

Calling a numba dispatcher types every argument first: ~50 ns an array, and a tuple of
arrays in Python (the VW parse kernel's 13 output arrays and its crosser: 2.5 of the 3 µs
a one-line call of it cost).  A caller that calls a kernel again and again with arguments
of the same types (the arrays it keeps, slices of them of the same layout) can call the
compiled overload's own entry, which converts the arguments and runs the machine code.
That entry does not check their types: :func:`direct` must be given the arguments of a
call that has just run through the dispatcher (so the overload exists), and the caller
must keep every later call's arguments of those same types.
"""

from __future__ import annotations

from collections.abc import Callable

from streamlearn.system.jit_shipped import Kernel


def direct(kernel: Callable, args: tuple) -> Callable:
    """``kernel``'s compiled entry for the types of ``args``, or ``kernel`` itself (an
    interpreted kernel, a numba release without ``overloads``/``entry_point``).  A kernel
    not yet handed to numba (:mod:`streamlearn.system.jit_shipped`) gives its shipped entry."""
    if isinstance(kernel, Kernel):
        if kernel.dispatcher is None:
            return kernel.shipped(args, by_type=True) or kernel
        kernel = kernel.dispatcher
    overloads = getattr(kernel, "overloads", None)
    typeof = getattr(kernel, "typeof_pyval", None)
    if overloads is None or typeof is None:
        return kernel
    try:
        return overloads[tuple(typeof(a) for a in args)].entry_point
    except (KeyError, AttributeError, TypeError, ValueError):
        return kernel


class Entries:
    """Each kernel's compiled entry for the argument types of its first call through this
    object, which calls it: the first call goes through the dispatcher (which compiles or
    loads the overload), the later ones through :func:`direct`'s entry.  The caller keeps
    every later call's arguments of the first's types (arrays it keeps and slices of them,
    scalars of the same Python types)."""

    def __init__(self) -> None:
        self.entries: dict = {}

    def __call__(self, kernel: Callable, *args: object) -> object:
        entry = self.entries.get(kernel)
        if entry is None:
            out = kernel(*args)
            self.entries[kernel] = direct(kernel, args)
            return out
        return entry(*args)
