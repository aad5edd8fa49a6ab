#!/usr/bin/env python
"""What a grid over one parse costs: 1, 6 and 24 configurations on the benchmark file.

Issue 13's yardstick: 6 configurations cost at most 2.5x the wall time of one.
Runs ``sl train FILE --loss logistic`` with a list of ``--l1`` values (truncated
gradient, and the default learner gd) for each grid size, round-robin, and
prints best and median wall time and the ratio to one configuration.  The file
is the one ``scripts/bench.py`` generates (``bench-data/train-300000x32.vw``).

Usage::

    python scripts/bench_grid.py                 # 3 repeats
    python scripts/bench_grid.py --repeat 5 --sizes 1 2 6 12 24
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import MEDIANS as medians  # noqa: E402
from bench import ROOT, interleaved, make, sl_cmd  # noqa: E402

LEARNERS = {
    "tg": ["--algo", "tg"],
    "gd (default)": [],
}


def values(n: int) -> str:
    """n values of --l1: 0 and a log-spaced ladder from 1e-7."""
    ladder = [0.0] + [10 ** (-7 + 4 * i / max(n - 2, 1)) for i in range(n - 1)]
    return ",".join(f"{v:.3g}" for v in ladder[:n])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 6, 24])
    ap.add_argument("--examples", type=int, default=300_000)
    args = ap.parse_args()
    train = ROOT / "bench-data" / f"train-{args.examples}x32.vw"
    make(train, args.examples, 32, 1)
    size = train.stat().st_size / 1e6
    for name, flags in LEARNERS.items():
        cmds = {
            n: sl_cmd("train", str(train), "--loss", "logistic", *flags, "--l1", values(n),
                      "--quiet")  # fmt: skip
            for n in args.sizes
        }
        interleaved(1, {k: v for k, v in cmds.items() if k == args.sizes[0]})  # warm the cache
        timed = interleaved(args.repeat, {str(n): c for n, c in cmds.items()})
        one = timed[str(args.sizes[0])][0]
        print(f"\n{name}: {train.name} ({size:.0f} MB), best / median of {args.repeat}")
        print(f"{'configurations':>14} {'best s':>8} {'median s':>9} {'x one':>6} "
              f"{'s per extra':>12}")  # fmt: skip
        for n in args.sizes:
            t = timed[str(n)][0]
            extra = (t - one) / (n - 1) if n > 1 else float("nan")
            print(f"{n:>14} {t:>8.2f} {medians[str(n)]:>9.2f} {t / one:>6.2f} {extra:>12.3f}")


if __name__ == "__main__":
    main()
