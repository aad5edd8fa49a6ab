#!/usr/bin/env python
"""Cold start: the first run of each learner and format with an empty kernel cache.

For each command, whole-process wall time of

* ``compiled``: an empty ``NUMBA_CACHE_DIR`` and ``SL_PREBUILT=0``, so every kernel
  the run needs is compiled (what every first run did before the kernels were shipped);
* ``shipped``: an empty ``NUMBA_CACHE_DIR``, the kernels shipped in
  ``streamlearn/system/prebuilt/`` (what a fresh clone does now);
* ``warm``: the same command again in the cache the ``compiled`` run filled
  (kernels compiled for this CPU, loaded by the quick loader).

``shipped`` and ``warm`` are the best of ``--repeat`` runs; ``compiled`` of
``--repeat-compiled`` (it takes 5-30 s a run).  Prints a Markdown table for
docs/benchmarks.md, with the load average before and after::

    python scripts/bench_cold_start.py --repeat 5 --repeat-compiled 2
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
D = str(ROOT / "data" / "sample.vw")

# (what, arguments): {D} data/sample.vw (8,000 lines), {S} the same as svmlight, {Z} gzipped
CASES = [
    ("README's first command: gd, VW text", ["train", "--loss", "logistic", "{D}", "-f",
                                             "m.sl"]),  # fmt: skip
    ("gd, svmlight", ["train", "{S}"]),
    ("gd, gzip from a pipe", ["train", "-"]),
    ("gd, -q ff", ["train", "-q", "ff", "{D}"]),
    ("predict", ["predict", "-i", "m.sl", "{D}", "-p", "p.txt"]),
    ("ftrl", ["train", "--ftrl", "--l1", "3", "{D}"]),
    ("sgd", ["train", "--sgd", "{D}"]),
    ("tg", ["train", "--algo", "tg", "--l1", "1e-4", "{D}"]),
    ("fobos, elastic net", ["train", "--algo", "fobos", "--l1", "1e-5", "--l2", "1e-4", "{D}"]),
    ("smidas", ["train", "--algo", "smidas", "--l1", "1e-5", "{D}"]),
    ("l0", ["train", "--algo", "l0", "--top-k", "100", "{D}"]),
    ("subgrad", ["train", "--algo", "subgrad", "--l1", "1e-5", "{D}"]),
    ("cd", ["train", "--algo", "cd", "--l1", "1e-3", "{D}"]),
    ("scd", ["train", "--algo", "scd", "--l1", "1e-3", "{D}"]),
]


def _run(args: list[str], cwd: Path, cache: Path, stdin: bytes | None, **env: str) -> float:
    e = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **env)
    for k in ("NUMBA_DISABLE_JIT", "SL_JIT", "SL_PREBUILT"):
        if k not in env:
            e.pop(k, None)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "streamlearn", *args, "--quiet"], cwd=cwd, env=e,
                   input=stdin, check=True, capture_output=True)  # fmt: skip
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--repeat-compiled", type=int, default=1)
    ap.add_argument("--only", help="run the cases whose name contains this")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sl-cold-") as tmp:
        work = Path(tmp)
        svm = work / "sample.svm"
        with open(D) as f, open(svm, "w") as g:
            for line in f:
                label, _, feats = line.partition("|f")
                g.write(label.strip() + " " + " ".join(
                    t if ":" in t else t + ":1" for t in feats.split()) + "\n")  # fmt: skip
        gz = gzip.compress(Path(D).read_bytes())
        _run(["train", "--loss", "logistic", D, "-f", "m.sl"], work, work / "c0", None)
        print(f"load average before: {os.getloadavg()[0]:.2f}", file=sys.stderr)
        rows = []
        for n, (what, args) in enumerate(CASES):
            if a.only and a.only not in what:
                continue
            args = [x.format(D=D, S=str(svm)) for x in args]
            stdin = gz if args[-1] == "-" else None
            compiled, shipped, warm = [], [], []
            for r in range(a.repeat_compiled):
                cache = work / f"compiled-{n}-{r}"
                compiled.append(_run(args, work, cache, stdin, SL_PREBUILT="0"))
            for r in range(a.repeat):
                shipped.append(_run(args, work, work / f"shipped-{n}-{r}", stdin))
                warm.append(_run(args, work, work / f"compiled-{n}-0", stdin, SL_PREBUILT="0"))
            rows.append((what, min(compiled), min(shipped), min(warm)))
            print(f"{what}: {rows[-1][1:]}", file=sys.stderr, flush=True)
        print(f"load average after: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    print("| first run of | compiled (before) | shipped kernels (now) | warm cache |")
    print("|---|---:|---:|---:|")
    for what, c, s, w in rows:
        print(f"| {what} | {c:.1f} s | {s:.2f} s | {w:.2f} s |")


if __name__ == "__main__":
    main()
