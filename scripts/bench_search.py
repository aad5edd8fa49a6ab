#!/usr/bin/env python
"""Learning to search beside VW: ``sl vw --search K --search_task sequence`` against
``vw`` (the ``vowpalwabbit`` package's command line) on the same sequence file, whole
process each, best of ``--repeat`` interleaved pairs; the ratio and whether their
average losses agree.

The file (``--mb`` MB of sentences, written once into ``bench-data/`` unless ``--data``
is given): tokens of ten tags over a vocabulary of 5,000 words, each tag following from
its word six times in ten, sentences of 5 to 25 tokens, a blank line after each::

    python scripts/bench_search.py --mb 100            # the docs' figure
    python scripts/bench_search.py --mb 1 --repeat 3   # a quick look
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write(path: Path, mb: float, seed: int = 0) -> None:
    r = random.Random(seed)
    want = int(mb * 1e6)
    size = 0
    with open(path, "w") as f:
        while size < want:
            lines = []
            for _ in range(r.randint(5, 25)):
                y = r.randint(1, 10)
                tag = y if r.random() < 0.6 else r.randint(1, 10)
                lines.append(f"{y} | w{r.randrange(5000)} p{tag} s{r.randrange(50)} "
                             f"c{r.randrange(20)}\n")  # fmt: skip
            lines.append("\n")
            text = "".join(lines)
            f.write(text)
            size += len(text)


def run(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    loss = next((ln for ln in r.stderr.splitlines() if ln.startswith("average loss")), "?")
    return time.perf_counter() - t, loss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--data", type=Path)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--args", default="--search 10 --search_task sequence")
    a = ap.parse_args()
    data = a.data or ROOT / "bench-data" / f"search-{a.mb:g}mb.vw"
    if not data.exists():
        data.parent.mkdir(parents=True, exist_ok=True)
        write(data, a.mb)
    extra = a.args.split()
    sl = [sys.executable, "-m", "streamlearn", "vw", "-d", str(data), *extra]
    vw = [sys.executable, "-m", "vowpalwabbit", "-d", str(data), *extra]
    best_sl = best_vw = float("inf")
    for _ in range(a.repeat):
        t_sl, loss_sl = run(sl)
        t_vw, loss_vw = run(vw)
        best_sl, best_vw = min(best_sl, t_sl), min(best_vw, t_vw)
    size = data.stat().st_size / 1e6
    print(f"{data.name} ({size:.1f} MB), {' '.join(extra)}")
    print(f"sl vw {best_sl:.2f} s   vw {best_vw:.2f} s   sl/vw {best_sl / best_vw:.2f}")
    print(f"sl: {loss_sl}   vw: {loss_vw}   {'equal' if loss_sl == loss_vw else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
