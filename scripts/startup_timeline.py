#!/usr/bin/env python
"""Where an ``sl`` run's start-up goes: when numba's side of the kernels is imported, and
when each kernel is loaded (from the disk cache or the shipped set), by which thread and
for how long, then when the run ends.

Usage::

    python scripts/startup_timeline.py vw -d bench-data/train-300000x32.vw --quiet
    python scripts/startup_timeline.py vw --dsjson --cb_explore_adf -d ds.json --quiet

The arguments are ``sl``'s.  Times are seconds since this script started (the
interpreter's own start-up, ~0.03 s, comes before).  Uses the quick loader's hook
(:class:`streamlearn.system.jit_numba._QuickLoad`): a kernel compiled instead of loaded
shows its compile time.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time

T0 = time.perf_counter()


def main() -> None:
    from streamlearn.system import jit_numba

    numba_at = time.perf_counter() - T0
    load = jit_numba._QuickLoad.load_overload
    seen: list[tuple[float, float, str, str]] = []

    def timed(self, sig, target_context):  # noqa: ANN001, ANN202 - numba's objects
        t = time.perf_counter()
        try:
            return load(self, sig, target_context)
        finally:
            func = getattr(self, "_py_func", None)
            name = f"{func.__module__}.{func.__qualname__}" if func is not None else "?"
            seen.append((t - T0, time.perf_counter() - t, name, threading.current_thread().name))

    jit_numba._QuickLoad.load_overload = timed

    def report() -> None:
        err = sys.stderr
        print(f"{numba_at:7.3f} s  numba and sl's kernel loader imported", file=err)
        for at, took, name, thread in seen:
            print(f"{at:7.3f} s  +{took:.3f} s  {name} ({thread})", file=err)
        print(f"{time.perf_counter() - T0:7.3f} s  end", file=err)

    atexit.register(report)  # (sl ends through os._exit after the exit handlers)
    sys.argv = ["sl", *sys.argv[1:]]
    from streamlearn.cli import main as sl

    sl()


if __name__ == "__main__":
    main()
