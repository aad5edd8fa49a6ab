#!/usr/bin/env python
"""The VW parse kernel's CPU time on one file: this checkout against another, in rotation.

Each round runs, in fresh processes, the other checkout (``--other``), this one, and
this one reading numbers as VW does (``sl vw``'s ``numbers="vw"``): every block of the
file parsed by :func:`~streamlearn.io.parse.parse_block` three times, the best
thread-CPU time kept (the parsing thread's own seconds, steadier than wall time on a
shared machine).  Prints each program's best and median over the rounds.

Usage::

    git worktree add /tmp/old f5df3c2
    python scripts/bench_parse_against.py bench-data/train-300000x32.vw --other /tmp/old
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, time
from streamlearn.io.parse import FMT_VW, parse_block
from streamlearn.io.reader import iter_blocks
inter = None
if sys.argv[2] == "vw":
    from streamlearn.io.interactions import compile_interactions
    inter = compile_interactions(vw_numbers=True)
blocks = list(iter_blocks([sys.argv[1]]))
parse_block(blocks[0], FMT_VW, 18, True, inter)  # the kernel loaded
best = 1e9
for _ in range(3):
    t = time.thread_time()
    for b in blocks:
        parse_block(b, FMT_VW, 18, True, inter)
    best = min(best, time.thread_time() - t)
print(best)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--other", help="another checkout's root")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    runs = {}
    if args.other:
        runs["other"] = (args.other, "exact")
    runs["this"] = (str(ROOT), "exact")
    runs["this, numbers=vw"] = (str(ROOT), "vw")
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, (root, numbers) in runs.items():
            out = subprocess.run([sys.executable, "-c", CHILD, args.file, numbers], check=True,
                                 capture_output=True, text=True,
                                 env=dict(os.environ, PYTHONPATH=root)).stdout  # fmt: skip
            times[name].append(float(out.split()[-1]))
    mb = os.path.getsize(args.file) / 1e6
    print(f"{args.file}: {mb:.0f} MB, parse CPU seconds, best of 3 per run, "
          f"{args.rounds} rounds in rotation")  # fmt: skip
    for name, ts in times.items():
        every = ", ".join(f"{t:.3f}" for t in ts)
        print(f"  {name:17s} best {min(ts):.3f} s ({mb / min(ts):.0f} MB/s)  median "
              f"{statistics.median(ts):.3f} s  ({every})")  # fmt: skip


if __name__ == "__main__":
    main()
