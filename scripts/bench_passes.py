#!/usr/bin/env python
"""Memory and time of ``cat FILE | sl train --passes 5 --cache ...`` over ~1 GB.

Issue 6 asks that five passes over a 1 GB input read from stdin run in bounded
memory: the table plus the parse and cache buffers, whatever the input size.
This script generates the input once, into ``bench-data/passes/`` (git-ignored),
with ``scripts/make_data.py --names string`` (3,000,000 examples, ~32 features
each, ~1.1 GB; string names are murmur-hashed all over the table as real
features are, whereas numeric names hash to a run of consecutive slots and
would leave most pages of a large table untouched, hence not resident), then
for each ``-b`` runs, as a child process::

    cat FILE | sl train --passes 5 --early-terminate 5 -b B --loss logistic \\
        --cache CACHE -f MODEL --report REPORT

and measures the child's peak RSS (``ru_maxrss`` from ``wait4``), its RSS
sampled every 20 ms from ``/proc/PID/status`` split by pass (the stderr line
``pass k: ...`` marks the end of pass k), wall time, per-pass seconds from the
report and the cache size.  The fixed part is the peak RSS of the same command
over the first 2,000 lines at ``-b 18`` (Python, numpy, numba, the kernels
loaded from a cache warmed by one unmeasured run; a 2 MB table).  Every run
has ``SL_JIT=1``, which only skips the CLI's peek at stdin for tiny inputs
(both inputs are far above its 32 KiB, so the kernels are compiled anyway).
The same tiny run at each ``-b`` is shown too: numpy backs large arrays with
2 MB huge pages, so a few thousand hashed features already make the whole
table resident.  ``ru_maxrss`` is safe here: Linux carries a parent's peak
into a forked child, but this parent stays small.  The caches and models are
written to temporary directories beside the data and removed after each run.

Usage::

    python scripts/bench_passes.py                  # -b 18, 22, 26; prints markdown
    python scripts/bench_passes.py --bits 22 --keep # and keep the 1.1 GB data file
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MB = 1e6


def make(path: Path, examples: int, names: str) -> None:
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    cmd = [sys.executable, str(ROOT / "scripts" / "make_data.py"), "-o", str(tmp),
           "--examples", str(examples), "--features-per-example", "32", "--seed", "1",
           "--names", names]
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    tmp.rename(path)
    print(f"generated {path} ({path.stat().st_size / MB:.0f} MB) in "
          f"{time.perf_counter() - t:.0f} s", file=sys.stderr)


def status_kb(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run(data: Path, bits: int, work: Path, passes: int) -> dict:
    """One ``cat data | sl train ...`` run: peak RSS, RSS per pass, times, cache size."""
    cache, model, report = work / "c.cache", work / "m.sl", work / "r.json"
    cmd = [sys.executable, "-m", "streamlearn", "train", "--passes", str(passes),
           "--early-terminate", str(passes), "-b", str(bits), "--loss", "logistic",
           "--cache", str(cache), "-f", str(model), "--report", str(report)]
    env = dict(os.environ, SL_JIT="1")
    t0 = time.perf_counter()
    cat = subprocess.Popen(["cat", str(data)], stdout=subprocess.PIPE)
    sl = subprocess.Popen(cmd, stdin=cat.stdout, stderr=subprocess.PIPE, text=True, env=env)
    cat.stdout.close()
    ends: list[float] = []  # when each "pass k:" line arrived
    samples: list[tuple[float, int]] = []
    log: list[str] = []

    def read_stderr() -> None:
        for line in sl.stderr:
            log.append(line)
            if line.startswith("pass "):
                ends.append(time.perf_counter())

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            kb = status_kb(sl.pid, "VmRSS")
            if kb is not None:
                samples.append((time.perf_counter(), kb))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(sl.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    reader.join()
    sl.returncode = os.waitstatus_to_exitcode(status)
    cat.wait()
    if sl.returncode != 0:
        raise SystemExit(f"sl train failed ({sl.returncode}):\n{''.join(log[-20:])}")
    rep = json.loads(report.read_text())
    phases = []  # peak sampled RSS in pass 1, ..., pass n, then after the last pass
    lo = t0
    for hi in [*ends, float("inf")]:
        inside = [kb * 1e3 / MB for t, kb in samples if lo <= t < hi]
        phases.append(max(inside) if inside else None)  # None: shorter than a sample
        lo = hi
    return {
        "peak": usage.ru_maxrss * 1e3 / MB,
        "phases": phases,
        "wall": wall,
        "pass_seconds": [p["seconds"] for p in rep["passes"]],
        "holdout": [p["holdout_loss"] for p in rep["passes"]],
        "examples": rep["examples_per_pass"],
        "nnz": rep["nonzero_weights"],
        "cache": cache.stat().st_size / MB,
        "model": model.stat().st_size / MB,
    }


def tiny_peak(small: Path, bits: int, passes: int) -> float:
    with tempfile.TemporaryDirectory(dir=small.parent) as work:
        return run(small, bits, Path(work), passes)["peak"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=str(ROOT / "bench-data" / "passes"))
    p.add_argument("--examples", type=int, default=3_000_000)
    p.add_argument("--bits", type=int, nargs="+", default=[18, 22, 26])
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--names", choices=["string", "numeric"], default="string")
    p.add_argument("--keep", action="store_true", help="keep the data file")
    a = p.parse_args(argv)
    data = Path(a.data_dir) / f"vw-{a.names}-{a.examples}.vw"
    make(data, a.examples, a.names)
    small = data.with_name("head-2000.vw")
    with open(data, "rb") as src, open(small, "wb") as dst:
        dst.writelines(line for _, line in zip(range(2000), src, strict=False))
    tiny_peak(small, 18, a.passes)  # warm the numba cache: nothing compiles below
    fixed = tiny_peak(small, 18, a.passes) - (8 << 18) / MB
    print(f"cat {data.name} | sl train --passes {a.passes} --early-terminate {a.passes} "
          f"-b B --loss logistic --cache C -f M --report R   ({data.stat().st_size / MB:.0f} MB)"
          f"\n\nfixed part: {fixed:.0f} MB (peak RSS over 2,000 lines at -b 18, less its table)\n")
    print("| -b | table | RSS, 2,000 lines | peak RSS | peak − fixed − table | nnz | "
          "pass 1 s | passes 2+ s (each) | wall s | cache |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    runs = {}
    for bits in a.bits:
        base = tiny_peak(small, bits, a.passes)
        with tempfile.TemporaryDirectory(dir=data.parent) as work:
            r = runs[bits] = run(data, bits, Path(work), a.passes)
        table = (8 << bits) / MB  # plain SGD: one float64 per slot
        later = ", ".join(f"{s:.2f}" for s in r["pass_seconds"][1:])
        print(f"| {bits} | {table:.0f} MB | {base:.0f} MB | {r['peak']:.0f} MB | "
              f"**{r['peak'] - fixed - table:.0f} MB** | {r['nnz']:,} | "
              f"{r['pass_seconds'][0]:.2f} | {later} | {r['wall']:.1f} | "
              f"{r['cache'] / 1e3:.2f} GB |", flush=True)
    print_phases(runs, a.passes)
    small.unlink()
    if not a.keep:
        data.unlink()
    return 0


def print_phases(runs: dict, passes: int) -> None:
    print("\nSampled RSS (MB, peak of 20 ms samples) by phase:\n")
    names = [f"pass {k}" for k in range(1, passes + 1)] + ["after (save)"]
    print("| -b | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for bits, r in runs.items():
        cells = ["—" if x is None else f"{x:.0f}" for x in r["phases"]]
        print(f"| {bits} | " + " | ".join(cells) + " |")
    print("\nExamples per pass and holdout loss of passes 1..n (the runs learned):\n")
    for bits, r in runs.items():
        losses = ", ".join(f"{x:.6f}" for x in r["holdout"])
        print(f"- `-b {bits}`: {r['examples']:,} examples per pass; {losses}")


if __name__ == "__main__":
    sys.exit(main())
