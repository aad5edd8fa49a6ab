"""sl vw --cb K --cb_force_legacy, --eval, --cb_explore K --cb_force_legacy against VW 9.11.9:
the same progressive loss, the same -p and -r files; malformed labels skipped with a reason."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parents[2]


def _log(seed: int, k: int, n: int = 150, evaluate: bool = False, subsets: bool = True) -> str:
    """Single-line cb logs: ``a:c:p`` (70%), allowed subsets with one logged entry
    (``1:1 2:0.5:0.25 3:2``, 15%), unlabeled lines, tags, a second namespace."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a = int(rng.integers(1, k + 1))
        c = rng.choice([0.0, 1.0, 0.5, 2.0, -1.0])
        p = rng.choice([0.2, 0.25, 0.5, 0.9, 1.0])
        u = rng.random()
        if evaluate:
            lab = f"{int(rng.integers(1, k + 1))} {a}:{c}:{p}"
        elif u < 0.7:
            lab = f"{a}:{c}:{p}"
        elif u < 0.85 and k > 1 and subsets:
            acts = sorted(rng.choice(np.arange(1, k + 1), size=int(rng.integers(2, k + 1)),
                                     replace=False).tolist())  # fmt: skip
            logged = acts[int(rng.integers(0, len(acts)))]
            lab = " ".join(f"{b}:{c}:{p}" if b == logged else f"{b}:{rng.choice([0, 1, 2])}"
                           for b in acts)  # fmt: skip
        else:
            lab = ""
        tag = f" 't{i}" if rng.random() < 0.2 else ""
        g = f" |g y{rng.integers(0, 3)}:{rng.choice([0.5, 2])}" if rng.random() < 0.5 else ""
        feats = " ".join(f"x{rng.integers(0, 30)}" for _ in range(int(rng.integers(1, 5))))
        out.append(f"{lab}{tag} |f {feats}{g}")
    return "\n".join(out) + "\n"


def _run(cmd: list[str], args: list[str], cwd: Path) -> tuple[str, str, str, str]:
    pred, raw = cwd / "p.txt", cwd / "r.txt"
    pred.unlink(missing_ok=True)
    raw.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", *cmd, *args, "-p", str(pred), "-r", str(raw)],
                       capture_output=True, text=True, cwd=cwd, env=env, check=False)  # fmt: skip
    m = re.search(r"average loss = (\S+)", r.stderr)
    assert m, r.stderr[-1000:]
    for cache in cwd.glob("*.cache*"):
        cache.unlink()
    return m.group(1), pred.read_text(), raw.read_text() if raw.exists() else "", r.stderr


CASES = [
    ("--cb 3 --cb_force_legacy", False),
    ("--cb 3 --cb_force_legacy --cb_type ips", False),
    ("--cb 3 --cb_force_legacy --cb_type dm", False),
    ("--cb 4 --cb_force_legacy --cb_type dr -l 0.3", False),
    ("--cb 3 --cb_force_legacy -q fg", False),
    ("--cb 3 --cb_force_legacy --passes 3 -c --holdout_off", False),
    ("--cb 3 --eval", True),
    ("--cb 3 --eval --cb_type ips", True),
    ("--cb_explore 3 --cb_force_legacy", False),
    ("--cb_explore 3 --cb_force_legacy --epsilon 0.3 --cb_type ips", False),
    ("--cb_explore 3 --cb_force_legacy --first 7", False),
    ("--cb_explore 3 --cb_force_legacy --bag 3", False),
    ("--cb_explore 2 --cb_force_legacy --bag 2 --random_seed 4", False),
    ("--cb_explore 3 --cb_force_legacy --cover 3", False),
    ("--cb_explore 3 --cb_force_legacy --cover 2 --epsilon 0.2 --psi 0.5", False),
    ("--cb_explore 2 --cb_force_legacy --cover 4 --nounif", False),
]


@pytest.mark.parametrize(("args", "evaluate"), CASES)
def test_legacy_matches_vw(tmp_path: Path, args: str, evaluate: bool) -> None:
    pytest.importorskip("vowpalwabbit")
    k = int(args.split()[1])
    # (VW's --cover reads K costs past the end of an allowed subset's: no subsets there)
    text = _log(zlib.crc32(args.encode()) % 1000, k, evaluate=evaluate,
                subsets="--cover" not in args)  # fmt: skip
    (tmp_path / "d.txt").write_text(text)
    argv = ["-d", "d.txt", *args.split()]
    sl = _run(["streamlearn", "vw"], argv, tmp_path)
    vw = _run(["vowpalwabbit"], argv, tmp_path)
    assert sl[0] == vw[0], (sl[3][-1500:], vw[3][-1500:])
    assert sl[1] == vw[1]
    if "--cb_explore" not in args:
        assert sl[2] == vw[2]


def _multiclass(seed: int, k: int, n: int = 120, cs: bool = False) -> str:
    """Multiclass (or ``--cbify_cs`` cost-sensitive) lines for ``--cbify K``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(1, k + 1))
        lab = (" ".join(f"{c}:{rng.choice([0, 0.5, 1])}" for c in range(1, k + 1)) if cs
               else str(y))  # fmt: skip
        if rng.random() < 0.1:
            lab = ""
        feats = " ".join(f"x{rng.integers(0, 20)}" for _ in range(int(rng.integers(1, 5))))
        out.append(f"{lab} |f {feats} c{y}")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    "args",
    [
        "--cbify 4 --cb_force_legacy",
        "--cbify 4 --cb_force_legacy --epsilon 0.2 --cb_type ips",
        "--cbify 3 --cb_force_legacy --first 6",
        "--cbify 3 --cb_force_legacy --bag 4",
        "--cbify 3 --cb_force_legacy --cbify_cs",
        "--cbify 3 --cb_force_legacy --cover 3",
        "--cbify 3 --cb_force_legacy --loss0 -1 --loss1 2",
    ],
)
def test_cbify_legacy_matches_vw(tmp_path: Path, args: str) -> None:
    pytest.importorskip("vowpalwabbit")
    k = int(args.split()[1])
    text = _multiclass(zlib.crc32(args.encode()) % 1000, k, cs="--cbify_cs" in args)
    (tmp_path / "d.txt").write_text(text)
    argv = ["-d", "d.txt", *args.split()]
    sl = _run(["streamlearn", "vw"], argv, tmp_path)
    vw = _run(["vowpalwabbit"], argv, tmp_path)
    assert sl[0] == vw[0], (sl[3][-1500:], vw[3][-1500:])
    assert sl[1] == vw[1]


def test_table_matches_vw(tmp_path: Path) -> None:
    """The progress table's rows (label, prediction, features) as VW prints them."""
    pytest.importorskip("vowpalwabbit")
    for args in ("--cb 3 --cb_force_legacy", "--cb_explore 3 --cb_force_legacy"):
        (tmp_path / "d.txt").write_text(_log(5, 3))
        argv = ["-d", "d.txt", *args.split()]
        sl, vw = _run(["streamlearn", "vw"], argv, tmp_path), _run(["vowpalwabbit"], argv, tmp_path)

        def rows(err: str) -> list[str]:
            return [ln for ln in err.splitlines() if re.match(r"^[\d.]+ +[\d.]+ +\d+ ", ln)]

        assert rows(sl[3]) == rows(vw[3])
        assert rows(sl[3])


def _sl(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "streamlearn", "vw", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, check=False)  # fmt: skip


@pytest.mark.slow
def test_malformed_labels_skipped(tmp_path: Path) -> None:
    (tmp_path / "d.txt").write_text("1:1:0.5 |f a\n4:1:0.5 |f b\n2:0:0.5 |f c\nshared |f d\n")
    r = _sl(["-d", "d.txt", "--cb", "3", "--cb_force_legacy"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "d.txt:2" in r.stderr and "outside 1..K" in r.stderr
    assert "d.txt:4" in r.stderr
    assert "number of examples = 2" in r.stderr
    r = _sl(["-d", "d.txt", "--cb", "3", "--cb_force_legacy", "--strict_parse"], tmp_path)
    assert r.returncode == 4


@pytest.mark.slow
def test_eval_needs_the_policy_action(tmp_path: Path) -> None:
    (tmp_path / "d.txt").write_text("2 1:1:0.5 |f a\n1:1:0.5 |f b\n2 |f c\n1 2:1:0.5 |f d\n")
    r = _sl(["-d", "d.txt", "--cb", "2", "--eval", "-p", "p.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "d.txt:2" in r.stderr and "d.txt:3" in r.stderr and "--eval" in r.stderr
    assert (tmp_path / "p.txt").read_text() == "2\n1\n"


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--cb", "2", "--eval", "--cb_type", "dm"], "biased"),
        (["--cb_explore", "2", "--cb_force_legacy", "--softmax"], "not supported"),
    ],
)
def test_refused(tmp_path: Path, args: list[str], text: str) -> None:
    (tmp_path / "d.txt").write_text("1:1:0.5 |f a\n")
    r = _sl(["-d", "d.txt", *args], tmp_path)
    assert r.returncode == 2, r.stderr
    assert text in r.stderr


@pytest.mark.slow
def test_mtr_becomes_dr(tmp_path: Path) -> None:
    (tmp_path / "d.txt").write_text("1:1:0.5 |f a\n2:0:0.5 |f b\n")
    r = _sl(["-d", "d.txt", "--cb", "2", "--cb_force_legacy", "--cb_type", "mtr"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resetting to dr" in r.stderr and "cb_type = dr" in r.stderr


@pytest.mark.parametrize(
    "args",
    ["--cb_explore 3 --bag 3", "--cb_explore 2 --bag 2 --cb_type dr --random_seed 3", "--cb 3"],
)
def test_adf_bag_and_tags_match_vw(tmp_path: Path, args: str) -> None:
    """``--cb_explore K --bag B`` (VW 9: on cb_explore_adf, the copies' width times B) and
    ``--cb K``'s tags in ``-p`` (VW's copies keep the line's tag)."""
    pytest.importorskip("vowpalwabbit")
    k = int(args.split()[1])
    (tmp_path / "d.txt").write_text(_log(zlib.crc32(args.encode()) % 1000, k, subsets=False))
    argv = ["-d", "d.txt", *args.split()]
    sl = _run(["streamlearn", "vw"], argv, tmp_path)
    vw = _run(["vowpalwabbit"], argv, tmp_path)
    assert sl[0] == vw[0], (sl[3][-1500:], vw[3][-1500:])
    assert sl[1] == vw[1]
    assert " t" in sl[1]  # some lines are tagged
