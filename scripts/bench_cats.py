#!/usr/bin/env python
"""``sl vw --cats K`` (or ``--cats_pdf K``) against VW on a generated file of >= 100 MB.

The data (written once into ``bench-data/``, git-ignored; the same seed gives the same
bytes): logged continuous actions in ``[0, 100]``, one per line, as VW's ``ca`` label
``action:cost:pdf_value`` followed by 10 features ``f{j}:{x}`` of 1000 names, ``x`` on a
0.01 grid in ``[0, 1)``.  The best action of a line is ``100 · mean(x)`` shifted by the
parity of its first feature's name; the cost of the logged action is its distance to it
over the range, the density that of a logging policy which is uniform (1/100) except
near the best action.

Each round runs, in turn, ``sl vw ARGS -d FILE --quiet`` and ``python -m vowpalwabbit
ARGS -d FILE --quiet`` as whole processes (start-up included), then prints best and
median wall times and their ratio.  A check run of each (not timed) compares the
``average loss`` of the summaries (and with ``-p`` the predictions, byte for byte):
the script fails if they differ.

Usage::

    python scripts/bench_cats.py                         # --cats 32, 3 rounds
    python scripts/bench_cats.py --pdf --rounds 5        # --cats_pdf 32
    python scripts/bench_cats.py --predictions           # each run writes -p too
    python scripts/bench_cats.py --args "--cats 64 --bandwidth 2 --epsilon 0.1 \\
        --min_value 0 --max_value 100"
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SEED = 20261201
LINES = 900_000  # ~114 MB
FEATURES = 10
NAMES = 1000


def generate(path: Path, lines: int = LINES, seed: int = SEED) -> None:
    """Write the benchmark's ``ca`` file (vectorised; ~10 s for 900,000 lines)."""
    rng = np.random.default_rng(seed)
    names = rng.integers(0, NAMES, size=(lines, FEATURES))
    cents = rng.integers(0, 100, size=(lines, FEATURES))
    best = np.clip(cents.mean(axis=1) + np.where(names[:, 0] % 2 == 0, -15.0, 15.0), 0, 100)
    explore = rng.random(lines) < 0.5
    action = np.where(explore, rng.uniform(0, 100, lines),
                      np.clip(best + rng.normal(0, 5, lines), 0, 100))  # fmt: skip
    action = np.round(action, 3)
    cost = np.round(np.abs(action - best) / 100.0, 4)
    near = np.abs(action - best) < 10.0
    pdf = np.round(np.where(near, 0.5 / 100 + 0.5 / 20, 0.5 / 100), 5)
    feats = np.char.add(np.char.add("f", names.astype(str)), ":")
    values = np.char.zfill(cents.astype(str), 2)
    words = np.char.add(np.char.add(feats, "0."), values)
    heads = [f"ca {a:.3f}:{c:.4f}:{p:.5f} |" for a, c, p in
             zip(action.tolist(), cost.tolist(), pdf.tolist(), strict=True)]  # fmt: skip
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        step = 100_000
        for s in range(0, lines, step):
            rows = words[s : s + step].tolist()
            f.write("".join(f"{h} {' '.join(w)}\n" for h, w in zip(heads[s : s + step], rows,
                                                                  strict=True)))  # fmt: skip
    os.replace(tmp, path)


def _loss(stderr: str) -> str:
    for line in stderr.splitlines():
        if line.startswith("average loss"):
            return line
    raise SystemExit("no 'average loss' line:\n" + stderr[-2000:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="the data (default: bench-data/cats-<lines>.vw, made once)")
    ap.add_argument("--lines", type=int, default=LINES)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pdf", action="store_true", help="--cats_pdf instead of --cats")
    ap.add_argument("--predictions", action="store_true", help="each run writes -p")
    ap.add_argument("--args", help="the options of both (default: --cats 32 --bandwidth 5 "
                                   "--min_value 0 --max_value 100)")  # fmt: skip
    args = ap.parse_args()
    path = Path(args.file) if args.file else ROOT / "bench-data" / f"cats-{args.lines}.vw"
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        t = time.perf_counter()
        generate(path, args.lines)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - t:.1f} s")  # fmt: skip
    size = path.stat().st_size
    words = shlex.split(args.args) if args.args else \
        ["--cats_pdf" if args.pdf else "--cats", "32", "--bandwidth", "5", "--min_value", "0",
         "--max_value", "100"]  # fmt: skip
    out = tempfile.mkdtemp(prefix="bench-cats-")
    cmds = {}
    for name, prog in (("sl", ["-m", "streamlearn", "vw"]), ("vw", ["-m", "vowpalwabbit"])):
        pred = ["-p", os.path.join(out, f"{name}.p")] if args.predictions else []
        cmds[name] = [sys.executable, *prog, *words, "-d", str(path), *pred]
    # the check (and the page cache, the kernels' cache): equal losses, equal predictions
    losses = {}
    for name, cmd in cmds.items():
        r = subprocess.run(cmd, capture_output=True, text=True, cwd="/")
        if r.returncode:
            raise SystemExit(f"{name} failed:\n{r.stderr[-2000:]}")
        losses[name] = _loss(r.stderr)
    same = losses["sl"] == losses["vw"]
    if args.predictions:
        same = same and Path(out, "sl.p").read_bytes() == Path(out, "vw.p").read_bytes()
    print(f"{path} ({size / 1e6:.0f} MB), {' '.join(words)}"
          f"{' -p' if args.predictions else ''}")  # fmt: skip
    print(f"  sl: {losses['sl']}\n  vw: {losses['vw']}"
          f"{'  (and the same -p)' if args.predictions and same else ''}")  # fmt: skip
    if not same:
        raise SystemExit("sl and VW differ")
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(args.rounds):
        for name, cmd in cmds.items():
            t = time.perf_counter()
            subprocess.run([*cmd, "--quiet"], check=True, cwd="/", stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t)
    for name, ts in times.items():
        every = ", ".join(f"{t:.2f}" for t in ts)
        print(f"  {name}  best {min(ts):.2f} s  median {statistics.median(ts):.2f} s  ({every})")
    print(f"  sl/vw  best {min(times['sl']) / min(times['vw']):.2f}  median "
          f"{statistics.median(times['sl']) / statistics.median(times['vw']):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
