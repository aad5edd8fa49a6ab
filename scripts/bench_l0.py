#!/usr/bin/env python
"""The L0 kernel's per-example cost against sgd's, at K = 10, 1,000 and 100,000.

Parses the benchmark file once into memory (``scripts/bench.py``'s
``bench-data/train-300000x32.vw``), then times each learner's kernel alone over every
batch (no parsing, no start-up), best of ``--repeat`` rounds, interleaved; prints
nanoseconds per example, the ratio to sgd, and the non-zero weights at the end.

Usage::

    python scripts/bench_l0.py [--file F] [--bits 22] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlearn.io import read_batches  # noqa: E402
from streamlearn.learners import l0, sgd  # noqa: E402
from streamlearn.learners.base import S_NROWS, make_params, new_rows, new_stats  # noqa: E402
from streamlearn.learners.losses import LOGISTIC  # noqa: E402


def run(spec, params, batches, bits) -> tuple[float, int]:
    table, gstate = spec.new_table(bits), spec.init_gstate(params)
    stats, rows = new_stats(), new_rows()
    t = time.perf_counter()
    for b in batches:
        preds = np.empty(b.n)
        spec.train_batch(table, gstate, params, LOGISTIC, b.indptr, b.indices, b.values,
                         b.labels, b.weights, b.bases, b.status, stats, rows, preds)  # fmt: skip
        stats[S_NROWS] = 0.0  # the progress rows written (the driver prints and resets them)
    return time.perf_counter() - t, int(np.count_nonzero(table[:, 0]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(ROOT / "bench-data" / "train-300000x32.vw"))
    ap.add_argument("--bits", type=int, default=22)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    batches = list(read_batches([args.file], bits=args.bits))
    n = sum(b.n for b in batches)
    nnz = sum(int(b.indptr[-1]) for b in batches)
    print(f"{args.file}: {n:,} examples, {nnz / n:.1f} features each, -b {args.bits}, "
          f"kernel time only, best of {args.repeat}\n")  # fmt: skip
    runs = {"sgd": (sgd.SPEC, make_params(learning_rate=0.5))}
    for K in (10, 1_000, 100_000):
        runs[f"l0 K={K:,}"] = (l0.SPEC, make_params(learning_rate=0.5, topk=K))
    for spec, params in runs.values():  # compile (or load) once before timing
        run(spec, params, batches[:1], args.bits)
    best: dict[str, float] = {}
    kept: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, (spec, params) in runs.items():
            t, kept[name] = run(spec, params, batches, args.bits)
            best[name] = min(best.get(name, np.inf), t)
    print(f"{'learner':<14} {'seconds':>8} {'ns/example':>11} {'vs sgd':>7} {'non-zeros':>10}")
    for name, t in best.items():
        print(f"{name:<14} {t:>8.3f} {1e9 * t / n:>11.0f} {t / best['sgd']:>7.2f} "
              f"{kept[name]:>10,}")  # fmt: skip


if __name__ == "__main__":
    main()
