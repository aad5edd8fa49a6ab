#!/usr/bin/env python
"""Where an ``sl`` run's start-up goes: when the kernels' loader is imported, and when each
kernel is loaded, by which thread and for how long, then when the run ends.  By default
as ``sl`` runs, the shipped kernels called without numba (:mod:`streamlearn.system.shipped`);
with ``SL_DIRECT_LOAD=0`` through numba (from the disk cache or the shipped set).

Usage::

    python scripts/startup_timeline.py vw -d bench-data/train-300000x32.vw --quiet
    python scripts/startup_timeline.py vw --dsjson --cb_explore_adf -d ds.json --quiet

The arguments are ``sl``'s.  Times are seconds since this script started (the
interpreter's own start-up, ~0.03 s, comes before).  Through numba, the quick loader's
hook (:class:`streamlearn.system.jit_numba._QuickLoad`): a kernel compiled instead of
loaded shows its compile time.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time

T0 = time.perf_counter()


def main() -> None:
    seen: list[tuple[float, float, str, str]] = []

    def timed(cls: type, method: str, name_of) -> None:  # noqa: ANN001
        original = getattr(cls, method)

        def hooked(self, *args):  # noqa: ANN001, ANN002, ANN202
            t = time.perf_counter()
            try:
                return original(self, *args)
            finally:
                seen.append((t - T0, time.perf_counter() - t, name_of(self, *args),
                             threading.current_thread().name))  # fmt: skip

        setattr(cls, method, hooked)

    def qualname(func) -> str:  # noqa: ANN001
        return f"{func.__module__}.{func.__qualname__}" if func is not None else "?"

    if os.environ.get("SL_DIRECT_LOAD", "1").strip() != "0":  # (sl's default)
        os.environ["SL_DIRECT_LOAD"] = "1"
        from streamlearn.system import shipped

        what = "sl's loader of the shipped kernels imported (not numba)"
        timed(shipped._Loader, "_engine", lambda self, *a: "(LLVM, numba's C helpers, NRT set up)")
        timed(shipped._Loader, "_load", lambda self, func, k: qualname(func))
    else:
        from streamlearn.system import jit_numba

        what = "numba and sl's kernel loader imported"
        timed(jit_numba._QuickLoad, "load_overload",
              lambda self, sig, ctx: qualname(getattr(self, "_py_func", None)))  # fmt: skip
    loader_at = time.perf_counter() - T0

    def report() -> None:
        err = sys.stderr
        print(f"{loader_at:7.3f} s  {what}", file=err)
        for at, took, name, thread in seen:
            print(f"{at:7.3f} s  +{took:.3f} s  {name} ({thread})", file=err)
        print(f"{time.perf_counter() - T0:7.3f} s  end", file=err)

    atexit.register(report)  # (sl ends through os._exit after the exit handlers)
    sys.argv = ["sl", *sys.argv[1:]]
    from streamlearn.cli import main as sl

    sl()


if __name__ == "__main__":
    main()
