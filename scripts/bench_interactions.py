#!/usr/bin/env python
"""``-q`` on a two-namespace file: sl against VW, in the same run, with the same options.

Generates (once, in ``bench-data/``) a user x item click log: each line has a
``|u`` namespace (a user id and 4 attributes) and an ``|i`` namespace (an item
id and 7 attributes), so ``-q ui`` adds 40 crosses to 13 features.  Then times
whole processes, interleaved (best and median of ``--repeat``):
``sl train --algo sgd -q ui`` against ``vw --sgd -q ui``, and both without
``-q``, and checks that the progressive losses agree.

Usage::

    python scripts/bench_interactions.py               # 200k lines (~70 MB)
    python scripts/bench_interactions.py --lines 20000 --repeat 3
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def make(path: Path, lines: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    users = rng.integers(0, 50_000, lines)
    items = rng.integers(0, 5_000, lines)
    bias = rng.normal(size=5_000)
    with open(path, "w") as f:
        for n in range(lines):
            u, i = users[n], items[n]
            y = 1 if bias[i] + 0.3 * ((u * 7 + i) % 5 - 2) + rng.normal() > 0 else -1
            ua = " ".join(f"a{(u * k) % 97}:{(u % 13) / 13:.3f}" for k in range(1, 5))
            ia = " ".join(f"c{(i * k) % 89}:{(i % 11) / 11:.3f}" for k in range(1, 8))
            f.write(f"{y} |u id{u} {ua} |i id{i} {ia}\n")


def run(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, r.stderr


def loss(stderr: str) -> float:
    return float(re.search(r"average loss = ([0-9.e+-]+)", stderr).group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    data = ROOT / "bench-data" / f"ui-{args.lines}.vw"
    data.parent.mkdir(exist_ok=True)
    if not data.exists():
        make(data, args.lines)
    common = ["-b", "22", "-l", "0.1"]
    sl = [sys.executable, "-m", "streamlearn", "train", str(data), "--algo", "sgd", "--loss",
          "logistic", *common]  # fmt: skip
    vw = [sys.executable, "-m", "vowpalwabbit", "-d", str(data), "--sgd", "--loss_function",
          "logistic", *common]  # fmt: skip
    cmds = {"sl -q ui": [*sl, "-q", "ui"], "vw -q ui": [*vw, "-q", "ui"], "sl": sl, "vw": vw}
    run(cmds["sl -q ui"])  # warm the kernel cache
    times: dict[str, list[float]] = {k: [] for k in cmds}
    losses = {}
    for _ in range(args.repeat):
        for name, cmd in cmds.items():
            t, err = run(cmd)
            times[name].append(t)
            losses[name] = loss(err)
    mb = data.stat().st_size / 1e6
    print(f"data: {data.name} ({mb:.1f} MB, {args.lines} lines); options {' '.join(common)}")
    for name, ts in times.items():
        print(f"  {name:<9} best {min(ts):6.3f} s  median {statistics.median(ts):6.3f} s"
              f"  progressive loss {losses[name]:.6f}")  # fmt: skip
    for q in ("", " -q ui"):
        a, b = times["sl" + q], times["vw" + q]
        print(f"  sl/vw{q or ' (no crosses)'}: best {min(a) / min(b):.2f}, "
              f"median {statistics.median(a) / statistics.median(b):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
