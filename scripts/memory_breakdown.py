#!/usr/bin/env python
"""Where a run's resident memory goes: ``/proc/PID/smaps`` sampled, split by kind.

Runs a command (``sl ...`` or anything else), reads its ``smaps`` every few
milliseconds and prints, for the sample with the most resident memory (and,
with ``--timeline``, for samples through the run), the resident MB of:

- ``table``: anonymous mappings of at least ``--table-mb`` (the learner's table);
- ``llvm``: LLVM's shared library (``libllvmlite.so``);
- ``anon``: the other anonymous memory (Python's and numba's objects, LLVM's
  heap, the blocks in flight);
- ``heap``: the ``brk`` heap;
- ``batches``: the batches' feature arrays (``/dev/zero`` mappings, see
  ``streamlearn.io._scan.lazy_array``);
- ``libs``: other shared libraries (libpython, numpy, libstdc++, ...).

Then the child's own peak (``ru_maxrss``), which sampling can miss by a few MB.
Linux only.

Usage::

    python scripts/memory_breakdown.py -- sl train bench-data/train-300000x32-strings-x10.vw \\
        --quiet -b 22 --loss logistic -f /tmp/m.sl
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import time

KINDS = ("table", "llvm", "anon", "heap", "batches", "libs", "stack")
_HEADER = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+ *(.*)$")


def sample(pid: int, table_kb: int) -> collections.Counter | None:
    """Resident KiB of process ``pid`` by kind, or None once it has gone."""
    try:
        with open(f"/proc/{pid}/smaps") as f:
            text = f.read()
    except OSError:
        return None
    kinds: collections.Counter = collections.Counter()
    kind = "anon"
    for line in text.splitlines():
        head = _HEADER.match(line)
        if head:
            lo, hi, path = int(head[1], 16), int(head[2], 16), head[3]
            if "libllvmlite" in path or "libLLVM" in path:
                kind = "llvm"
            elif path.startswith("/dev/zero"):
                kind = "batches"
            elif path == "[heap]":
                kind = "heap"
            elif path.startswith("[stack"):
                kind = "stack"
            elif path.startswith("/"):
                kind = "libs"
            else:
                kind = "table" if (hi - lo) >> 10 >= table_kb else "anon"
        elif line.startswith("Rss:"):
            kinds[kind] += int(line.split()[1])
    return kinds


def row(t: float, kinds: collections.Counter) -> str:
    total = sum(kinds.values())
    return f"{t:6.2f} {total / 1024:7.1f} " + " ".join(f"{kinds[k] / 1024:7.1f}" for k in KINDS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=float, default=0.005, help="seconds between samples")
    ap.add_argument("--table-mb", type=float, default=48, help="smallest mapping counted as table")
    ap.add_argument("--timeline", type=int, default=0, help="also print this many samples")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command")

    start = time.perf_counter()
    child = subprocess.Popen(command)
    samples = []
    while True:
        kinds = sample(child.pid, int(args.table_mb * 1024))
        done, status, usage = os.wait4(child.pid, os.WNOHANG)
        if kinds is not None and not done:
            samples.append((time.perf_counter() - start, kinds))
        if done:
            break
        time.sleep(args.every)
    if not samples:
        sys.exit("no samples: the command ended at once")
    print("     s   total " + " ".join(f"{k:>7}" for k in KINDS) + "   (MB resident)")
    if args.timeline:
        step = max(1, len(samples) // args.timeline)
        for t, kinds in samples[::step]:
            print(row(t, kinds))
    t, kinds = max(samples, key=lambda s: sum(s[1].values()))
    print(row(t, kinds) + "   <- largest sample")
    code = os.waitstatus_to_exitcode(status)
    print(f"peak RSS (ru_maxrss) {usage.ru_maxrss / 1024:.1f} MB, exit {code}")


if __name__ == "__main__":
    main()
