"""sl vw --cb_explore_adf against VW 9.11.9: the same progressive loss and the same -p file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parents[2]


def _logs(seed: int, n: int, kmax: int = 8) -> str:
    """cb_adf logs: an optional shared line, 2..kmax action lines, one labeled (or none)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(2, kmax + 1))
        lines = []
        if rng.random() < 0.9:
            lines.append(
                f"shared |s u{rng.integers(0, 6)} v{rng.integers(0, 3)}:{rng.choice([0.5, 2])}"
            )
        chosen = int(rng.integers(0, k)) if rng.random() < 0.9 else -1
        for a in range(k):
            lab = ""
            if a == chosen:
                c = rng.choice([0.0, 1.0, -1.0, 0.5])
                lab = f"{a}:{c}:{rng.choice([0.1, 0.25, 0.5, 0.9, 1.0])} "
            lines.append(f"{lab}|a x{a} y{rng.integers(0, 4)} z{rng.integers(0, 9)}")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def _run(cmd: list[str], args: list[str], cwd: Path) -> tuple[str, str]:
    pred = cwd / "p.txt"
    pred.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", *cmd, *args, "-p", str(pred)], capture_output=True,
                       text=True, cwd=cwd, env=env, check=False)  # fmt: skip
    m = re.search(r"average loss = (\S+)", r.stderr)
    assert m, r.stderr[-1000:]
    for cache in cwd.glob("*.cache*"):
        cache.unlink()
    return m.group(1), re.findall(r"total feature number = \S+", r.stderr), pred.read_text()


CASES = [
    "",
    "--epsilon 0.3 --first_only",
    "--first 6 --epsilon 0.1",
    "--softmax --lambda 3 --epsilon 0.05",
    "--squarecb --gamma_scale 4",
    "--bag 3",
    "--bag 2 --greedify --random_seed 5 --cb_type dr",
    "--cb_type ips --passes 2 -c",
    "--bag 3 --passes 2 -c",
]


@pytest.mark.parametrize("flags", CASES)
def test_cb_explore_adf_equals_vw(tmp_path: Path, flags: str) -> None:
    pytest.importorskip("vowpalwabbit")
    data = tmp_path / "logs.txt"
    data.write_text(_logs(sum(map(ord, flags)) % 97, 60))
    args = ["--cb_explore_adf", *flags.split(), "-d", str(data)]
    want = _run(["vowpalwabbit"], args, tmp_path)
    got = _run(["streamlearn", "vw"], args, tmp_path)
    assert got == want


def test_dsjson_cb_explore_adf_equals_vw(tmp_path: Path) -> None:
    pytest.importorskip("vowpalwabbit")
    from tests.io.test_vwjson import _random_lines

    data = tmp_path / "d.json"
    data.write_text("\n".join(_random_lines(4, 40)) + "\n", encoding="utf-8")
    for extra in ([], ["--chain_hash", "--first", "3"], ["--bag", "2"]):
        args = ["--cb_explore_adf", "--dsjson", *extra, "-d", str(data)]
        assert _run(["streamlearn", "vw"], args, tmp_path) == _run(["vowpalwabbit"], args, tmp_path)


def _multiclass(seed: int, n: int, k: int) -> str:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(1, k + 1))
        noise = " ".join(f"n{rng.integers(0, 20)}" for _ in range(3))
        out.append(f"{y} |a f{y}_0:{rng.random():.3f} f{y}_1 {noise} |b c{rng.integers(0, 5)}")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    ("k", "flags"),
    [(4, ""), (3, "--first 10"), (5, "--bag 3 --random_seed 2"), (4, "--squarecb"),
     (3, "--softmax --lambda 4 --loss0 -1 --loss1 0"), (4, "--cb_type dr --epsilon 0.2"),
     (4, "--flip_loss_sign"), (3, "--flip_loss_sign --loss0 -1 --loss1 2 --squarecb")],
)  # fmt: skip
def test_cbify_equals_vw(tmp_path: Path, k: int, flags: str) -> None:
    pytest.importorskip("vowpalwabbit")
    data = tmp_path / "mc.txt"
    data.write_text(_multiclass(k + len(flags), 150, k))
    args = ["--cbify", str(k), *flags.split(), "-d", str(data)]
    assert _run(["streamlearn", "vw"], args, tmp_path) == _run(["vowpalwabbit"], args, tmp_path)


def test_flip_loss_sign_is_kept_with_the_model(tmp_path: Path) -> None:
    """VW keeps ``--flip_loss_sign`` with a ``--cbify`` model: continued by either, a model
    of either learns rewards."""
    pytest.importorskip("vowpalwabbit")
    data = tmp_path / "mc.txt"
    data.write_text(_multiclass(7, 120, 4))
    first = ["--cbify", "4", "--flip_loss_sign", "-d", str(data)]
    outs = set()
    for maker in (["vowpalwabbit"], ["streamlearn", "vw"]):
        _run(maker, [*first, "-f", str(tmp_path / "m")], tmp_path)
        assert b"--flip_loss_sign" in (tmp_path / "m").read_bytes()
        for user in (["vowpalwabbit"], ["streamlearn", "vw"]):
            outs.add(repr(_run(user, ["-i", str(tmp_path / "m"), "-d", str(data)], tmp_path)))
    assert len(outs) == 1


@pytest.mark.parametrize("flags", ["", "--first 10", "--squarecb", "--cb_type dr --epsilon 0.2",
                                   "--passes 3 -c -k", "--first 10 --passes 2 -c -k",
                                   "--squarecb --passes 2 -c -k"])  # fmt: skip
def test_cb_explore_k_equals_vw(tmp_path: Path, flags: str) -> None:
    """With passes, VW holds out every 10th single-line example and only predicts it (the
    held-out examples of ``--cb_explore_adf`` are learned: suite line 400 differed)."""
    pytest.importorskip("vowpalwabbit")
    rng = np.random.default_rng(len(flags))
    lines = []
    for _ in range(150):
        a, c, p = int(rng.integers(1, 4)), rng.choice([0.0, 1.0]), rng.choice([0.2, 0.5, 1.0])
        lab = f"{a}:{c}:{p}" if rng.random() < 0.9 else ""
        lines.append(f"{lab} |f x{rng.integers(0, 9)} y{rng.integers(0, 5)}:{rng.random():.2f}")
    data = tmp_path / "cb.txt"
    data.write_text("\n".join(lines) + "\n")
    args = ["--cb_explore", "3", *flags.split(), "-d", str(data)]
    assert _run(["streamlearn", "vw"], args, tmp_path) == _run(["vowpalwabbit"], args, tmp_path)
    if flags == "--passes 3 -c -k":  # and --cb K's learner alone
        args = ["--cb", "3", *flags.split(), "-d", str(data)]
        sl = _run(["streamlearn", "vw"], args, tmp_path)
        assert sl == _run(["vowpalwabbit"], args, tmp_path)


@pytest.mark.parametrize("flags", ["", "--bag 3", "--squarecb --loss0 -1 --loss1 1"])
def test_cbify_cs_equals_vw(tmp_path: Path, flags: str) -> None:
    pytest.importorskip("vowpalwabbit")
    rng = np.random.default_rng(len(flags))
    lines = []
    for _ in range(150):
        y = int(rng.integers(1, 5))
        costs = [f"{c}:{0.0 if c == y else rng.choice([0.5, 1.0, 2.0])}" for c in range(1, 5)]
        lines.append(" ".join(costs) + f" |a f{y} n{rng.integers(0, 9)} |b g{rng.integers(0, 3)}")
    data = tmp_path / "cs.txt"
    data.write_text("\n".join(lines) + "\n")
    args = ["--cbify", "4", "--cbify_cs", *flags.split(), "-d", str(data)]
    assert _run(["streamlearn", "vw"], args, tmp_path) == _run(["vowpalwabbit"], args, tmp_path)


@pytest.mark.parametrize("flags", ["", "--cb_force_legacy", "--cbify_cs", "--cbify_cs --bag 2",
                                   "--cbify_cs --cb_force_legacy"])  # fmt: skip
def test_cbify_raw_predictions_are_vws(tmp_path: Path, flags: str) -> None:
    """``-r`` of ``--cbify``: VW writes nothing for a class line, and under ``--cbify_cs``
    the classes the line lists, each scored 0 (suite line 516)."""
    pytest.importorskip("vowpalwabbit")
    data = tmp_path / "d.txt"
    if "--cbify_cs" in flags:
        data.write_text("1:0 2:1 3:1 | a\n2:1 3:0 1:1 | b c\n| d\n3:0.5 | e\n")
    else:
        data.write_text(_multiclass(3, 40, 3))
    raws = []
    for cmd in (["vowpalwabbit"], ["streamlearn", "vw"]):
        raw = tmp_path / "r.txt"
        raw.unlink(missing_ok=True)
        _run(cmd, ["--cbify", "3", *flags.split(), "-d", str(data), "-r", str(raw)], tmp_path)
        raws.append(raw.read_text())
    assert raws[0] == raws[1]
