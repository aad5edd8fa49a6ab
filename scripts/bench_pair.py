"""One command line run by ``sl vw`` and by ``vw`` (the ``vowpalwabbit`` package's command
line) on the same file, whole process each, best of ``repeat`` interleaved pairs: the
times, their ratio and whether the average losses agree (``bench_search.py``,
``bench_lda.py``)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def run(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    loss = next((ln for ln in r.stderr.splitlines() if ln.startswith("average loss")), "?")
    return time.perf_counter() - t, loss


def compare(data: Path, extra: list[str], repeat: int) -> None:
    """Print the pair's figures for ``data`` and VW options ``extra``."""
    sl = [sys.executable, "-m", "streamlearn", "vw", "-d", str(data), *extra]
    vw = [sys.executable, "-m", "vowpalwabbit", "-d", str(data), *extra]
    best_sl = best_vw = float("inf")
    loss_sl = loss_vw = "?"
    for _ in range(repeat):
        t_sl, loss_sl = run(sl)
        t_vw, loss_vw = run(vw)
        best_sl, best_vw = min(best_sl, t_sl), min(best_vw, t_vw)
    size = data.stat().st_size / 1e6
    print(f"{data.name} ({size:.1f} MB), {' '.join(extra)}")
    print(f"sl vw {best_sl:.2f} s   vw {best_vw:.2f} s   sl/vw {best_sl / best_vw:.2f}")
    print(f"sl: {loss_sl}   vw: {loss_vw}   {'equal' if loss_sl == loss_vw else 'DIFFERENT'}")


def main(doc: str, write, stem: str, default_args: str) -> None:  # noqa: ANN001
    """A benchmark script's command line: ``--mb`` MB of data written once by ``write(path,
    mb)`` into ``bench-data/STEM-<mb>mb.vw`` (or ``--data``), then :func:`compare` with
    ``--args`` (``default_args``), best of ``--repeat``."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--data", type=Path)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--args", default=default_args)
    a = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    data = a.data or root / "bench-data" / f"{stem}-{a.mb:g}mb.vw"
    if not data.exists():
        data.parent.mkdir(parents=True, exist_ok=True)
        write(data, a.mb)
    compare(data, a.args.split(), a.repeat)
