"""sl vw's stderr for multiline reductions byte for byte as VW 9.11.9's: header, progress
rows (``0:1:0.5`` labels, ``action:score``/``action:probability`` predictions, VW's
feature counts) and summary, for --cb_adf, --cb_explore_adf, --csoaa_ldf and --cb K."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parents[2]


def _adf(seed: int, n: int, cs: bool = False) -> str:
    """Multiline examples: a shared line (mostly), 2..6 actions, one labeled (cb) or all (cs)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(2, 7))
        lines = []
        if rng.random() < 0.85:
            lines.append(
                f"shared |s u{rng.integers(0, 6)} v:{rng.choice([0, 0.5, 2])} w{rng.integers(9)}"
            )
        chosen = int(rng.integers(0, k)) if rng.random() < 0.9 else -1
        for a in range(k):
            if cs:
                # (every line costed: VW takes a line without a cost as FLT_MAX)
                lab = f"{a + 1}:{rng.choice([0.0, 1.0, 0.25])} "
            elif a == chosen:
                lab = f"{a}:{rng.choice([0.0, 1.0, -1.0, 0.5])}:{rng.choice([0.1, 0.25, 0.9, 1])} "
            else:
                lab = ""
            lines.append(f"{lab}|a x{a} y{rng.integers(0, 4)} z:{rng.choice([0, 1.5, -3])}")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def _cb(seed: int, n: int, k: int) -> str:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        lab = ""
        if rng.random() < 0.9:
            lab = f"{rng.integers(1, k + 1)}:{rng.choice([0, 1, 2.5])}:{rng.choice([0.2, 0.5, 1])} "
        out.append(f"{lab}| a{rng.integers(5)} b{rng.integers(3)}:{rng.choice([0, 2])} |x c\n")
    return "".join(out)


def _stderr(cmd: list[str], args: list[str], cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", *cmd, *args], capture_output=True, text=True,
                       cwd=cwd, env=env, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    # sl's first run on a machine says which kernels it compiles: not VW's lines
    return "".join(ln for ln in r.stderr.splitlines(True) if not ln.startswith("compiling "))


CASES = [
    ("adf", "--cb_adf"),
    ("adf", "--cb_adf --cb_type dr --rank_all"),
    ("adf", "--cb_adf --cb_type ips --passes 3 -c -k --cache_file c.cache"),
    ("adf", "--cb_explore_adf"),
    ("adf", "--cb_adf -q sa"),
    ("adf", "--cb_explore_adf --interactions ssa -q aa"),
    ("adf", "--cb_explore_adf --softmax --lambda 2"),
    ("adf", "--cb_explore_adf --bag 3"),
    ("adf", "--cb_explore_adf --squarecb --passes 2 -c -k --cache_file c.cache --holdout_off"),
    ("cs", "--csoaa_ldf m"),
    ("cs", "--csoaa_ldf m -q sa"),
    ("cs", "--csoaa_ldf mc --csoaa_rank"),
    ("cb", "--cb 4"),
    ("cb", "--cb_explore 4 --epsilon 0.2"),
]


@pytest.mark.parametrize(("kind", "args"), CASES)
def test_stderr_as_vw(tmp_path: Path, kind: str, args: str) -> None:
    pytest.importorskip("vowpalwabbit")
    n = 700
    text = _cb(3, n, 4) if kind == "cb" else _adf(7, n, cs=kind == "cs")
    (tmp_path / "d.txt").write_text(text)
    argv = [*args.split(), "-d", "d.txt", "-p", "p.txt"]
    vw = _stderr(["vowpalwabbit"], argv, tmp_path)
    for c in tmp_path.glob("c.cache*"):
        c.unlink()
    sl = _stderr(["streamlearn", "vw"], argv, tmp_path)
    assert "average  since" in vw
    assert sl == vw


def test_later_passes_read_the_cache(tmp_path: Path) -> None:
    """--passes 3 -c: passes 2 and 3 read the cache back (nothing kept in memory), and
    learn as the passes that replay the batches in memory (no cache) and as a rerun on
    the cache."""
    (tmp_path / "d.txt").write_text(_adf(11, 400))
    base = ["--cb_adf", "--passes", "3", "-d", "d.txt", "--holdout_off"]
    _stderr(["streamlearn", "vw"], [*base, "-p", "mem.txt"], tmp_path)
    a = _stderr(["streamlearn", "vw"], [*base, "-c", "--cache_file", "c.cache", "-p", "a.txt"],
                tmp_path)  # fmt: skip
    assert (tmp_path / "c.cache").exists() and not list(tmp_path.glob("c.cache*.sl-tmp"))
    b = _stderr(["streamlearn", "vw"], [*base, "-c", "--cache_file", "c.cache", "-p", "b.txt"],
                tmp_path)  # fmt: skip
    mem = (tmp_path / "mem.txt").read_text()
    assert (tmp_path / "a.txt").read_text() == mem == (tmp_path / "b.txt").read_text()
    assert a.split("finished run")[1] == b.split("finished run")[1]
