#!/usr/bin/env python
"""Parse-and-hash throughput and memory of the input layer (read + parse, one core).

Generates once, cached in ``bench-data/parse/`` (git-ignored), with
``scripts/make_data.py``: ~100 MB of VW text with numeric feature names (300k
examples, ~32 features each), the same with string names, and the numeric data
as svmlight.  Then, with the numba cache warm:

* MB/s of ``iter_blocks`` + ``parse_block`` over each file (best of ``--repeat``),
  with the split between reading and parsing, per CPU-second of the parsing
  thread (the one-core figure, robust to other load) and per wall-second;
* in a fresh child process, peak RSS above the post-import baseline while
  ``read_batches`` streams the numeric file ``--gb`` times over (~1 GB), one batch
  alive at a time.

Usage::

    python scripts/bench_parse.py            # prints a markdown table
    python scripts/bench_parse.py --repeat 5 --gb 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# one core: no idle BLAS threads spinning next to the parser (numpy is imported later)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

FILES = {
    # name: (make_data arguments, format)
    "vw-numeric": (["--names", "numeric", "--format", "vw"], "vw"),
    "vw-string": (["--names", "string", "--format", "vw"], "vw"),
    "svmlight": (["--names", "numeric", "--format", "svmlight"], "svmlight"),
}


def make(path: Path, extra: list[str], examples: int) -> None:
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    cmd = [sys.executable, str(ROOT / "scripts" / "make_data.py"), "-o", str(tmp)]
    cmd += ["--examples", str(examples), "--features-per-example", "32", "--seed", "1", *extra]
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    tmp.rename(path)
    print(f"generated {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)


def throughput(path: Path, fmt: str, repeat: int, bits: int) -> dict:
    """Best-of-``repeat`` seconds for read+parse, read only and parse only.

    Each is measured as wall time and as CPU time of this thread
    (``time.thread_time``): on a shared machine the CPU time is the honest
    "one core" figure, the wall time is what a user would see right now.
    """
    from streamlearn.io import FORMATS, iter_blocks, parse_block

    code = FORMATS[fmt]
    size = path.stat().st_size
    blocks = list(iter_blocks([str(path)]))
    parse_block(blocks[0], code, bits)  # warm: load the kernels from the numba cache
    best: dict[str, float] = {}
    rows = nnz = 0

    def clock(key: str, t0: tuple[float, float]) -> None:
        wall, cpu = time.perf_counter() - t0[0], time.thread_time() - t0[1]
        best[key + " wall"] = min(best.get(key + " wall", 1e9), wall)
        best[key + " cpu"] = min(best.get(key + " cpu", 1e9), cpu)

    def now() -> tuple[float, float]:
        return time.perf_counter(), time.thread_time()

    for _ in range(repeat):
        t0 = now()
        for b in iter_blocks([str(path)]):
            batch = parse_block(b, code, bits)
        clock("read+parse", t0)
        t0 = now()
        for _ in iter_blocks([str(path)]):
            pass
        clock("read", t0)
        t0 = now()
        rows = nnz = 0
        for b in blocks:
            batch = parse_block(b, code, bits)
            rows += batch.n
            nnz += batch.nnz
        clock("parse", t0)
    del blocks
    mb = size / 1e6
    out = {"MB": mb, "rows": rows, "features/row": nnz / max(rows, 1)}
    out.update({k: mb / v for k, v in best.items()})
    return out


def _status_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process, MB.

    Not ``ru_maxrss``: Linux carries it over ``fork`` + ``exec``, so a child
    would report its parent's peak.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1e3
    raise RuntimeError(f"{field} not in /proc/self/status")


def rss_child(path: str, times: int, bits: int, workers: int) -> None:
    """Stream ``path`` ``times`` over; print baseline RSS, peak RSS and bytes (child mode)."""
    from streamlearn.io import parse_bytes, read_batches

    with open(path, "rb") as f:
        head = f.read(1 << 16)
    parse_bytes(head[: head.rfind(b"\n") + 1], bits=bits)  # load the kernels
    base = _status_mb("VmRSS")
    peak_before = _status_mb("VmHWM")
    rows = 0
    t = time.perf_counter()
    for batch in read_batches([path] * times, bits=bits, workers=workers):
        rows += batch.n
    dt = time.perf_counter() - t
    peak = _status_mb("VmHWM")
    size = os.path.getsize(path) * times / 1e6
    print(f"{base:.1f} {peak_before:.1f} {peak:.1f} {size:.1f} {rows} {dt:.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=str(ROOT / "bench-data" / "parse"))
    p.add_argument("--examples", type=int, default=300_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--bits", type=int, default=18)
    p.add_argument("--gb", type=float, default=1.0, help="size of the streamed RSS test")
    p.add_argument(
        "--rss-child", nargs=3, metavar=("PATH", "TIMES", "WORKERS"), help=argparse.SUPPRESS
    )
    a = p.parse_args(argv)
    if a.rss_child:
        rss_child(a.rss_child[0], int(a.rss_child[1]), a.bits, int(a.rss_child[2]))
        return 0

    data = Path(a.data_dir)
    paths = {}
    for name, (extra, fmt) in FILES.items():
        paths[name] = (data / f"{name}-{a.examples}.txt", fmt)
        make(paths[name][0], extra, a.examples)

    cols = ["read+parse", "read", "parse"]
    head = " | ".join(f"{c} MB/s (cpu / wall)" for c in cols)
    print(f"| input | MB | rows | features/row | {head} |")
    print("|---|---:|---:|---:|" + "---:|" * len(cols))
    for name, (path, fmt) in paths.items():
        r = throughput(path, fmt, a.repeat, a.bits)
        cells = " | ".join(f"{r[c + ' cpu']:.0f} / {r[c + ' wall']:.0f}" for c in cols)
        print(f"| {name} | {r['MB']:.0f} | {r['rows']} | {r['features/row']:.1f} | {cells} |")

    num = paths["vw-numeric"][0]
    times = max(1, round(a.gb * 1e9 / num.stat().st_size))
    print()
    for workers in (1, 2):
        cmd = [sys.executable, __file__, "--rss-child", str(num), str(times), str(workers)]
        out = subprocess.run(
            [*cmd, "--bits", str(a.bits)], check=True, capture_output=True, text=True
        ).stdout.split()
        base, peak_before, peak, size, rows, dt = map(float, out)
        print(
            f"- read_batches(workers={workers}) streamed {size / 1e3:.2f} GB ({int(rows)} rows) "
            f"in {dt:.1f} s ({size / dt:.0f} MB/s): RSS {base:.0f} MB after imports and "
            f"loading the kernels, peak {peak:.0f} MB: **{peak - base:.0f} MB above baseline**"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
