#!/usr/bin/env python
"""Input kinds and live-stream latency: what the Unix-citizen guarantees cost.

* Whole-process time of ``sl train`` over the same file read as a file, from a
  pipe on stdin, through ``<(cat FILE)`` and through a named FIFO (interleaved,
  best and median of ``--repeat``); the models must be identical.
* Latency of ``sl predict -p -`` on a live stream: a line is written to its
  stdin while the process idles, and the time until its prediction comes back
  is measured (median and worst of ``--lines``).

Usage::

    python scripts/bench_inputs.py                       # bench-data/train-300000x32.vw
    python scripts/bench_inputs.py --file data/sample.vw --repeat 3
"""

from __future__ import annotations

import argparse
import hashlib
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SL = [sys.executable, "-m", "streamlearn"]


def timed(cmd: str, cwd: Path) -> float:
    t = time.perf_counter()
    subprocess.run(["bash", "-c", cmd], cwd=cwd, check=True)
    return time.perf_counter() - t


def input_kinds(file: Path, repeat: int, tmp: Path) -> None:
    sl = " ".join(SL)
    opts = "train --algo sgd --loss logistic -b 22 --quiet"
    fifo = tmp / "in.fifo"
    cmds = {
        "file": f"{sl} {opts} {file} -f file.sl",
        "stdin pipe": f"cat {file} | {sl} {opts} -f pipe.sl",
        "<(cat FILE)": f"{sl} {opts} <(cat {file}) -f subst.sl",
        "named FIFO": f"rm -f {fifo}; mkfifo {fifo}; (cat {file} > {fifo} &); "
        f"{sl} {opts} {fifo} -f fifo.sl",
    }
    timed(cmds["file"], tmp)  # warm the kernel cache
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            times[name].append(timed(cmd, tmp))
    digests = {
        hashlib.sha256((tmp / f).read_bytes()).hexdigest()
        for f in ("file.sl", "pipe.sl", "subst.sl", "fifo.sl")
    }
    mb = file.stat().st_size / 1e6
    print(f"input kinds: {file.name} ({mb:.1f} MB), best / median of {repeat}, interleaved")
    base = min(times["file"])
    for name, ts in times.items():
        print(f"  {name:<12} {min(ts):6.3f} s / {statistics.median(ts):6.3f} s"
              f"   x{min(ts) / base:.2f} of file")  # fmt: skip
    print(f"  models identical: {len(digests) == 1}")


def live_latency(lines: int, tmp: Path) -> None:
    model = tmp / "live.sl"
    subprocess.run([*SL, "train", "--quiet", str(ROOT / "data" / "sample.vw"), "-f", str(model)],
                   check=True)  # fmt: skip
    proc = subprocess.Popen(
        [*SL, "predict", "-i", str(model), "-p", "-", "--quiet"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    out = proc.stdout.fileno()

    def answer(timeout: float) -> bool:
        ready, _, _ = select.select([out], [], [], timeout)
        if ready:
            os.read(out, 1 << 16)
        return bool(ready)

    proc.stdin.write(b"1 |f warm\n")
    proc.stdin.flush()
    answer(60)  # start-up
    lat = []
    for i in range(lines):
        time.sleep(0.2)  # the stream is idle between lines
        t = time.perf_counter()
        proc.stdin.write(f"1 |f a{i} b{i}\n".encode())
        proc.stdin.flush()
        if not answer(10):
            sys.exit("no prediction within 10 s")
        lat.append(time.perf_counter() - t)
    proc.stdin.close()
    proc.wait(30)
    print(f"live stream: line -> prediction over {lines} lines: "
          f"median {1000 * statistics.median(lat):.0f} ms, worst {1000 * max(lat):.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=Path, default=ROOT / "bench-data" / "train-300000x32.vw")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--lines", type=int, default=20)
    args = ap.parse_args()
    if not args.file.exists():
        sys.exit(f"{args.file} is missing: run scripts/bench.py once to make it, or pass --file")
    with tempfile.TemporaryDirectory(prefix="sl-bench-inputs-") as d:
        input_kinds(args.file.resolve(), args.repeat, Path(d))
        live_latency(args.lines, Path(d))


if __name__ == "__main__":
    main()
