#!/usr/bin/env python
"""Where a training run's time goes, and what this machine can do at most (issue 15).

On the benchmark file (``bench-data/train-300000x32.vw``, made by ``scripts/bench.py``),
each stage alone, timed as CPU seconds of the thread doing it (``time.thread_time``:
the one-core figure, robust to other load), best of ``--repeat``:

* **scan**: read the file in blocks and count its newlines (a do-nothing pass);
* **parse**: ``parse_block`` over blocks already in memory (hashing included), each
  batch dropped at once (kept, 300 MB of fresh pages would be timed as well);
* **learn**: each learner's kernel over batches already parsed (default gd, sgd, ftrl);

then the bound these give a two-core run (parsing on both cores, learning on one:
``max(learn, (parse + learn) / 2)``), beside the wall time of ``sl train`` itself.

Usage::

    python scripts/bench_ceilings.py             # -b 18, logistic loss
    python scripts/bench_ceilings.py --bits 26 --repeat 5
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LEARNERS = {"gd (default)": {}, "sgd": {"algo": "sgd"}, "ftrl": {"algo": "ftrl"}}


def best_cpu(fn, repeat: int) -> float:
    """The smallest CPU time of this thread over ``repeat`` calls of ``fn``."""
    best = float("inf")
    for _ in range(repeat):
        t = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", default=str(ROOT / "bench-data" / "train-300000x32.vw"))
    ap.add_argument("--bits", type=int, default=18)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from streamlearn.config import TrainConfig
    from streamlearn.io import FORMATS, iter_blocks, parse_block
    from streamlearn.io._scan import count_newlines
    from streamlearn.learners.base import new_rows, new_stats
    from streamlearn.run.runner import run_kernel
    from streamlearn.run.train import Learner

    path = args.file
    mb = Path(path).stat().st_size / 1e6
    code = FORMATS["vw"]
    blocks = list(iter_blocks([path]))
    parse_block(blocks[0], code, args.bits)  # load the kernels
    count_newlines(blocks[0].data)

    def scan() -> None:
        for b in iter_blocks([path]):
            count_newlines(b.data)

    def parse() -> None:  # each batch dropped at once, as a run frees it once learned
        for b in blocks:
            parse_block(b, code, args.bits)

    rows = []
    t_scan = best_cpu(scan, args.repeat)
    # a long run's allocator reuses the memory of batches already learned; a fresh
    # process maps new pages for each batch instead (page faults, ~50% more time):
    # free a whole set of batches first, so that the timing is the long run's
    batches = [parse_block(b, code, args.bits) for b in blocks]
    del batches
    t_parse = best_cpu(parse, args.repeat)
    batches = [parse_block(b, code, args.bits) for b in blocks]
    n = sum(b.n for b in batches)
    nnz = sum(b.nnz for b in batches)
    for b in batches:
        b.labels[b.labels == 0.0] = -1.0
    rows.append(("scan (read + count newlines)", t_scan))
    rows.append(("parse + hash", t_parse))
    learn = {}
    for name, opts in LEARNERS.items():
        config = TrainConfig(bits=args.bits, loss="logistic", **opts)

        def fit(config: TrainConfig = config) -> None:
            learner = Learner.fresh(config)
            params, stats, out = config.params(), new_stats(), new_rows()
            for b in batches:
                run_kernel(learner.spec.train_batch, learner.table, learner.gstate, params,
                           config.loss_id, b, stats, out)  # fmt: skip
                stats[11] = 0.0  # S_NROWS: the table's rows are not printed here

        fit()  # load the kernel
        learn[name] = best_cpu(fit, args.repeat)
        rows.append((f"learn: {name}", learn[name]))
    print(f"{path}: {mb:.0f} MB, {n:,} examples, {nnz / n:.1f} features each, -b {args.bits}")
    print(f"CPU seconds of one thread, best of {args.repeat}\n")
    print("| stage | CPU s | MB/s | examples/s |")
    print("|---|---:|---:|---:|")
    for name, t in rows:
        print(f"| {name} | {t:.3f} | {mb / t:,.0f} | {n / t:,.0f} |")
    print("\n| learner | two-core bound s | sl train wall s (best) | wall / bound |")
    print("|---|---:|---:|---:|")
    for name, opts in LEARNERS.items():
        bound = max(learn[name], (t_parse + learn[name]) / 2)
        flags = ["--algo", opts["algo"]] if opts else []
        cmd = [sys.executable, "-m", "streamlearn", "train", path, "--loss", "logistic",
               "-b", str(args.bits), "--quiet", *flags]  # fmt: skip
        walls = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            subprocess.run(cmd, check=True)
            walls.append(time.perf_counter() - t)
        wall = min(walls)
        print(f"| {name} | {bound:.3f} | {wall:.3f} | {wall / bound:.2f} |")


if __name__ == "__main__":
    main()
