#!/usr/bin/env python
"""Sparsity against accuracy: one learner over a grid of ``--l1``, on the benchmark files.

For each ``--l1`` value, ``sl train`` on the training file (one pass, logistic loss)
saves a model, and ``sl predict`` scores the test file; the table gives the non-zero
weights, the progressive loss, the holdout loss and accuracy, and the ratio of
non-zeros to the unregularised run's.  The files are ``scripts/bench.py``'s
(``bench-data/train-300000x32.vw``, ``test-30000x32.vw``; run it once first).

Usage::

    python scripts/sparsity.py --algo ftrl                   # l1 grid for ftrl
    python scripts/sparsity.py --algo tg --l1 0 1e-5 1e-4    # any learner, any grid
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRIDS = {
    "ftrl": [0, 0.1, 0.3, 1, 2, 3, 5, 10],
    "gd": [0, 1e-8, 1e-7, 3e-7, 1e-6, 3e-6, 1e-5],
    "tg": [0, 1e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3],
}


def sl(*args: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as rep:
        cmd = [sys.executable, "-m", "streamlearn", *args, "--report", rep.name, "--quiet"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr}")
        return json.loads(Path(rep.name).read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algo", default="ftrl")
    ap.add_argument("--l1", type=float, nargs="*", help="the grid (default: per learner)")
    ap.add_argument("--train", default=str(ROOT / "bench-data/train-300000x32.vw"))
    ap.add_argument("--test", default=str(ROOT / "bench-data/test-30000x32.vw"))
    ap.add_argument("--bits", type=int, default=22)
    ap.add_argument("extra", nargs="*", help="more sl train options, after --")
    args = ap.parse_args()
    grid = args.l1 if args.l1 else GRIDS.get(args.algo, GRIDS["tg"])
    print(f"sl train {args.train} --algo {args.algo} --loss logistic -b {args.bits} "
          f"--l1 L {' '.join(args.extra)}; sl predict on {args.test}\n")  # fmt: skip
    print("| `--l1` | non-zero weights | × fewer | progressive loss | holdout loss | "
          "holdout accuracy |\n|---:|---:|---:|---:|---:|---:|")  # fmt: skip
    dense = None
    with tempfile.TemporaryDirectory() as tmp:
        model = str(Path(tmp) / "m.sl")
        for l1 in grid:
            train = sl("train", args.train, "--algo", args.algo, "--loss", "logistic", "-b",
                       str(args.bits), "--l1", repr(l1), *args.extra, "-f", model)  # fmt: skip
            test = sl("predict", "-i", model, args.test)
            nnz = train["nonzero_weights"]
            dense = dense or nnz
            loss, hold, acc = train["average_loss"], test["average_loss"], test["accuracy"]
            print(f"| {l1:g} | {nnz:,} | {dense / max(nnz, 1):.1f} | {loss:.4f} | {hold:.4f} "
                  f"| {acc:.4f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
