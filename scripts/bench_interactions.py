#!/usr/bin/env python
"""Interactions: sl against VW, in the same run, with the same options.

Two shapes of generated data (once, in ``bench-data/``):

* ``--shape ui`` (default): a user x item click log: each line has a ``|u``
  namespace (a user id and 4 attributes) and an ``|i`` namespace (an item id
  and 7 attributes), so ``-q ui`` adds 40 crosses to 13 features.  Times
  ``sl train --algo sgd -q ui`` against ``vw --sgd -q ui``, and both without
  ``-q``.
* ``--shape text`` (issue 27): text-like lines ``|t <5-40 Zipf words> |u user
  |i item`` with string names, 1.5 M lines (~280 MB): the default learners,
  logistic, ``-b 22``, plain and ``-q ui`` (one cross per line) over the
  file, and ``-q tt`` (~250 crosses per line) over its first 150 k lines.

Whole processes, interleaved (best and median of ``--repeat``); the
progressive losses must agree.

Usage::

    python scripts/bench_interactions.py               # 200k lines (~70 MB)
    python scripts/bench_interactions.py --lines 20000 --repeat 3
    python scripts/bench_interactions.py --shape text --repeat 3
"""

from __future__ import annotations

import argparse
import compileall
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


def make_text(path: Path, lines: int, seed: int = 11) -> None:
    """``label |t <5-40 Zipf words> |u user |i item``: string names throughout."""
    rng = np.random.default_rng(seed)
    vocab = 200_000
    word_w = rng.normal(size=vocab) * 0.3
    item_w = rng.normal(size=20_000)
    chunk = 50_000
    with open(path, "w") as f:
        for start in range(0, lines, chunk):
            m = min(chunk, lines - start)
            lengths = rng.integers(5, 41, m)
            words = (rng.zipf(1.15, lengths.sum()) - 1) % vocab
            users = rng.integers(0, 100_000, m)
            items = rng.integers(0, 20_000, m)
            ends = np.cumsum(lengths)
            out = []
            for n in range(m):
                ws = words[ends[n] - lengths[n] : ends[n]]
                z = word_w[ws].sum() + item_w[items[n]] + 0.5 * rng.normal() - 0.3
                text = " ".join(f"word{w}" for w in ws)
                out.append(f"{1 if z > 0 else -1} |t {text} |u u{users[n]} |i i{items[n]}\n")
            f.write("".join(out))


def head(src: Path, dst: Path, lines: int) -> None:
    with open(src) as f, open(dst, "w") as g:
        for n, line in enumerate(f):
            if n == lines:
                break
            g.write(line)


def run(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, r.stderr


def loss(stderr: str) -> float:
    return float(re.search(r"average loss = ([0-9.e+-]+)", stderr).group(1))


def timed(cmds: dict[str, list[str]], repeat: int) -> tuple[dict, dict]:
    """Best-of and losses of each command, interleaved ``repeat`` times."""
    times: dict[str, list[float]] = {k: [] for k in cmds}
    losses = {}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            t, err = run(cmd)
            times[name].append(t)
            losses[name] = loss(err)
    return times, losses


def text(args: argparse.Namespace) -> None:
    lines = args.lines or 1_500_000
    data = ROOT / "bench-data" / f"text-{lines}.vw"
    small = ROOT / "bench-data" / f"text-{lines // 10}.vw"
    data.parent.mkdir(exist_ok=True)
    if not data.exists():
        make_text(data, lines)
    if not small.exists():
        head(data, small, lines // 10)
    common = ["-b", "22"]
    cmds: dict[str, list[str]] = {}
    for name, path, q in (("plain", data, []), ("-q ui", data, ["-q", "ui"]),
                          ("-q tt (1/10 of the lines)", small, ["-q", "tt"])):  # fmt: skip
        cmds[f"sl {name}"] = [sys.executable, "-m", "streamlearn", "train", str(path), "--loss",
                              "logistic", *common, *q]  # fmt: skip
        cmds[f"vw {name}"] = [sys.executable, "-m", "vowpalwabbit", "-d", str(path),
                              "--loss_function", "logistic", *common, *q]  # fmt: skip
    for cmd in cmds.values():
        if cmd[2] == "streamlearn":
            run(cmd)  # warm the kernel cache
    times, losses = timed(cmds, args.repeat)
    print(f"data: {data.name} ({data.stat().st_size / 1e6:.0f} MB, {lines} lines), "
          f"{small.name} ({small.stat().st_size / 1e6:.0f} MB); -b 22, logistic, "
          f"best of {args.repeat} (median)")  # fmt: skip
    print("| run | sl | VW | sl/VW | progressive loss sl / VW |\n|---|---:|---:|---:|---|")
    for name in ("plain", "-q ui", "-q tt (1/10 of the lines)"):
        a, b = times[f"sl {name}"], times[f"vw {name}"]
        print(f"| {name} | {min(a):.2f} s ({statistics.median(a):.2f}) | {min(b):.2f} s "
              f"({statistics.median(b):.2f}) | {min(a) / min(b):.2f} | "
              f"{losses[f'sl {name}']:.6f} / {losses[f'vw {name}']:.6f} |")  # fmt: skip
    p, q = min(times["sl plain"]), min(times["sl -q ui"])
    print(f"sl -q ui over sl plain: {q / p:.2f} ({q - p:+.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=("ui", "text"), default="ui")
    ap.add_argument("--lines", type=int, default=None,
                    help="lines generated (ui: 200k, text: 1.5M)")  # fmt: skip
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    # as scripts/bench.py: an installed package has its bytecode; a checkout run with
    # PYTHONDONTWRITEBYTECODE=1 (as on our VMs) compiles 47 modules in every timed process
    compileall.compile_dir(str(ROOT / "streamlearn"), quiet=1)
    if args.shape == "text":
        text(args)
        return
    args.lines = args.lines or 200_000
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
    times, losses = timed(cmds, args.repeat)
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
