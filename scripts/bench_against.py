#!/usr/bin/env python
"""``sl train`` from this checkout against another checkout and ``vw``, in rotation.

On a noisy machine two programs timed a minute apart can differ by 40%; run
in rotation, round after round, they meet the same noise.  Each round runs,
in turn, sl from ``--other`` (a checkout, e.g. ``git worktree add /tmp/old REV``;
skipped when not given), sl from this checkout and ``python -m vowpalwabbit``
(skipped when not installed), all on the same file with the default learner
(``--sgd`` for both with ``--sgd``), and prints best and median wall times,
the ratios to VW and each program's largest peak RSS (its ``ru_maxrss``;
``--save`` has each write its model, as a real run would).

With ``--vw-args=ARGS`` each round runs ``sl vw ARGS -d FILE`` and ``vw ARGS -d FILE``
instead (a VW user's command line: the contextual bandit reductions, ``-p``, ...).

Usage::

    git worktree add /tmp/old 024e847
    python scripts/bench_against.py bench-data/train-300000x32-x10.vw --other /tmp/old
    python scripts/bench_against.py FILE --sgd --rounds 3
    python scripts/bench_against.py cb200k.txt --vw-args="--cb_explore_adf -p P" --rounds 7
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--other", help="another checkout's root (its streamlearn/ is run)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bits", type=int, default=22)
    ap.add_argument("--sgd", action="store_true", help="sl --algo sgd against vw --sgd")
    ap.add_argument("--save", action="store_true", help="each run writes its model (-f)")
    ap.add_argument("--vw-args", metavar="ARGS",
                    help="run sl vw ARGS -d FILE against vw ARGS -d FILE (-b: ARGS's)")
    args = ap.parse_args()
    out = tempfile.mkdtemp(prefix="bench-against-")

    path = str(Path(args.file).resolve())
    sl = [sys.executable, "-m", "streamlearn", "train", path, "--quiet", "-b", str(args.bits),
          "--loss", "logistic", *(["--algo", "sgd"] if args.sgd else []),
          *(["-f", os.path.join(out, "sl.model")] if args.save else [])]  # fmt: skip
    vw = [sys.executable, "-m", "vowpalwabbit", "-d", path, "--quiet", "-b", str(args.bits),
          "--loss_function", "logistic", *(["--sgd"] if args.sgd else []),
          *(["-f", os.path.join(out, "vw.model")] if args.save else [])]  # fmt: skip
    if args.vw_args is not None:
        words = shlex.split(args.vw_args)
        save = ["-f", os.path.join(out, "model")] if args.save else []
        sl = [sys.executable, "-m", "streamlearn", "vw", *words, "-d", path, "--quiet", *save]
        vw = [sys.executable, "-m", "vowpalwabbit", *words, "-d", path, "--quiet", *save]
    runs: dict[str, tuple[list[str], dict]] = {}
    for name, root in (("other", args.other), ("this", str(ROOT))):
        if root:
            # an installed package has its bytecode; compile it as an install would
            compileall.compile_dir(str(Path(root) / "streamlearn"), quiet=1)
            runs[name] = (sl, dict(os.environ, PYTHONPATH=root))
    if importlib.util.find_spec("vowpalwabbit") is not None:
        runs["vw"] = (vw, dict(os.environ))
    for cmd, env in runs.values():  # warm the page cache and the kernels' cache
        subprocess.run(cmd, env=env, check=True, cwd="/", capture_output=True)

    times: dict[str, list[float]] = {k: [] for k in runs}
    peaks: dict[str, int] = dict.fromkeys(runs, 0)
    for _ in range(args.rounds):
        for name, (cmd, env) in runs.items():
            t = time.perf_counter()
            child = subprocess.Popen(cmd, env=env, cwd="/", stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            times[name].append(time.perf_counter() - t)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"{name} failed: {' '.join(cmd)}")
            peaks[name] = max(peaks[name], usage.ru_maxrss)  # KiB on Linux
    shutil.rmtree(out, ignore_errors=True)
    what = f"vw {args.vw_args}" if args.vw_args is not None else \
        "--sgd" if args.sgd else "default"  # fmt: skip
    print(f"{path}, {args.rounds} rounds in rotation ({what})")
    for name, ts in times.items():
        every = ", ".join(f"{t:.2f}" for t in ts)
        print(f"  {name:6s} best {min(ts):.2f} s  median {statistics.median(ts):.2f} s  "
              f"peak RSS {peaks[name] / 1024:.0f} MB  ({every})")  # fmt: skip
    if "vw" in times:
        for name in ("other", "this"):
            if name in times:
                print(f"  {name}/vw best {min(times[name]) / min(times['vw']):.2f}  median "
                      f"{statistics.median(times[name]) / statistics.median(times['vw']):.2f}")


if __name__ == "__main__":
    main()
