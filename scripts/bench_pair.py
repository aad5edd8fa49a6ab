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
