#!/usr/bin/env python
"""Throughput of ``sl train --dask`` against one process, and the cost of a sync.

Runs, on the benchmark file (``bench-data/train-300000x32.vw``, made by
``scripts/bench.py``'s generator when missing), each command ``--repeats``
times round-robin and prints best and median wall time:

* ``sl train FILE``                          (one process: parser threads + learner)
* ``sl train --dask local:1 FILE``           (one worker process, nothing averaged)
* ``sl train --dask local:2 FILE``           (two worker processes, the file cut in two)
* ``sl train --dask local:2 FILE --sync-every N`` for a few N

and, from each ``--report``, the time inside the run (without starting the
cluster), the longest task, the time waiting for tasks beyond the longest
one (scheduling and moving rows), the driver's averaging time and the bytes
moved per sync.  Then projects 8 to 64 workers (see docs/distributed.md).

Usage::

    python scripts/bench_dask.py --repeats 3 > bench-dask.txt
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data" / "train-300000x32.vw"


def run(args: list[str], report: str) -> tuple[float, dict]:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "streamlearn", "train", *args, "--quiet",
                    "--report", report, "-f", report + ".sl"], check=True)  # fmt: skip
    wall = time.perf_counter() - t0
    with open(report) as f:
        return wall, json.load(f)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--sync-every", default="50000,10000,2000")
    a = p.parse_args(argv)
    if not os.path.exists(a.data):
        sys.path.insert(0, str(ROOT / "scripts"))
        from bench import make

        make(Path(a.data), 300_000, 32, 1)
    f = a.data
    configs = {
        "one process": [f],
        "dask local:1": ["--dask", "local:1", f],
        "dask local:2": ["--dask", "local:2", f],
    }
    for n in a.sync_every.split(","):
        configs[f"dask local:2 --sync-every {n}"] = ["--dask", "local:2", f, "--sync-every", n]
    runs: dict[str, list] = {k: [] for k in configs}
    with tempfile.TemporaryDirectory() as d:
        run(configs["one process"], os.path.join(d, "warm.json"))  # compile the kernels once
        for _ in range(a.repeats):
            for name, args in configs.items():
                runs[name].append(run(args, os.path.join(d, "r.json")))
    examples = runs["one process"][0][1]["examples"]
    print(f"{examples:,} examples ({os.path.getsize(f) / 1e6:.0f} MB), {a.repeats} repeats, "
          f"{os.cpu_count()} cores (shared machine)\n")  # fmt: skip
    head = (f"{'run':<34} {'wall best':>9} {'median':>8} {'ex/s best':>10} {'in run':>7} "
            f"{'task':>6} {'wait-task':>9} {'mix':>6} {'syncs':>5} {'MB/sync':>8}")  # fmt: skip
    print(head)
    per_sync = []
    for name, rs in runs.items():
        walls = [w for w, _ in rs]
        best_wall, best = min(rs, key=lambda r: r[0])
        line = (f"{name:<34} {min(walls):>9.2f} {statistics.median(walls):>8.2f} "
                f"{examples / min(walls):>10,.0f} {best['seconds']:>7.2f}")  # fmt: skip
        d = best.get("distributed")
        if d:
            task = sum(s["task_seconds"] for s in d["sync_log"])
            wait = d["wait_seconds"] - task
            mb = (d["sync_bytes_up"] + d["sync_bytes_down"]) / d["syncs"] / 1e6
            mix = d["mix_seconds"]
            line += f" {task:>6.2f} {wait:>9.2f} {mix:>6.2f} {d['syncs']:>5} {mb:>8.1f}"
            if d["ranks"] > 1:
                per_sync.append((d["syncs"], wait / d["syncs"], d["mix_seconds"] / d["syncs"], mb))
        print(line)
    if per_sync:
        syncs, over, mix, mb = max(per_sync)
        print(f"\nper sync (2 ranks, {syncs} syncs): {over * 1e3:.1f} ms waiting beyond the "
              f"tasks, {mix * 1e3:.1f} ms averaging on the driver, {mb:.1f} MB moved")  # fmt: skip
        work = min(r[1]["distributed"]["workers"][0]["seconds"] for r in runs["dask local:1"])
        print(f"one rank's task (parse + learn the whole file in one worker): {work:.2f} s")
        project(work, mb / 4, mix / 2, examples)  # per rank: half of the up+down of 2 ranks
    return 0


def project(work: float, mb_rank: float, mix_rank: float, examples: int) -> None:
    """T(W) = work / W + syncs x (fixed + W x (rows both ways / bandwidth + averaging))."""
    print("\nprojection, one pass, star through the driver (rows of every rank up, the mean "
          "down to each):")
    print(f"{'workers':>7} {'bandwidth':>10} {'syncs':>6} {'compute s':>9} {'sync s':>7} "
          f"{'ex/s':>11}")  # fmt: skip
    for gbit in (1, 10):
        for w in (8, 16, 32, 64):
            for syncs in (1, 10):
                per = 0.02 + w * (2 * mb_rank * 8 / (gbit * 1e3) + mix_rank)
                t = work / w + syncs * per
                print(f"{w:>7} {gbit:>7} Gb {syncs:>6} {work / w:>9.3f} {syncs * per:>7.3f} "
                      f"{examples / t:>11,.0f}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
