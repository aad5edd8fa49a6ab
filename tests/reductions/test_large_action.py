"""``--large_action_space`` (:mod:`streamlearn.reductions.large_action`,
:mod:`streamlearn.learners.large_action`): the kernels' pieces, and VW 9.11.9's numbers on
data of our own (many actions, no action twice in an example: VW keeps whichever copy of a
repeated action its float SVD's rounding favours): ``-p`` byte for byte and the progressive
loss under epsilon-greedy, ``--squarecb``, ``--explore_eval``, crosses and ``dr``; models
read by the other program; the refusals."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.reductions.test_lrq import _sl, needs_vw


def _data(path: Path, n: int, seed: int) -> None:
    """Examples of 12 to 40 actions (a shared line; actions in namespaces A and B, distinct
    within an example), one logged action each but now and then."""
    rnd = random.Random(seed)
    lines = []
    for _ in range(n):
        k = rnd.randint(12, 40)
        lines.append(f"shared |U u{rnd.randrange(6)} v:{rnd.random():.2f} |V t{rnd.randrange(4)}")
        lab = rnd.randrange(k) if rnd.random() < 0.9 else -1
        seen = set()
        for a in range(k):
            while True:
                feats = " ".join(f"w{rnd.randrange(40)}:{rnd.randint(1, 9) / rnd.choice([1, 2, 4])}"
                                 for _ in range(rnd.randint(1, 5)))  # fmt: skip
                feats += f" |B b{rnd.randrange(8)}"
                if feats not in seen:
                    seen.add(feats)
                    break
            label = f"{a}:{rnd.choice([-1, 0, 1, 0.5])}:{rnd.choice([0.1, 0.25, 0.5])} " \
                if a == lab else ""  # fmt: skip
            lines.append(f"{label}|A {feats}")
        lines.append("")
    path.write_text("\n".join(lines) + "\n")


def _vw(args: list[str], cwd: Path) -> str:
    out = subprocess.run([sys.executable, "-m", "vowpalwabbit", *args], cwd=cwd,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return out.stderr


def _loss(text: str) -> str:
    return next(ln for ln in text.splitlines() if ln.startswith("average loss"))


def test_seed_and_parity():
    from streamlearn.learners.large_action import parity
    from streamlearn.reductions.large_action import vw_seed

    assert vw_seed(0) == 10  # (VW's first draw with --random_seed 0: 0.0000075)
    for x in (0, 1, 3, 7, 2**40 + 5, 2**64 - 1):
        assert parity(np.uint64(x)) == bin(x).count("1") % 2


def test_spanner_picks_a_basis():
    """Rows of an orthonormal basis among copies scaled down: the spanner keeps the basis."""
    from streamlearn.learners.large_action import spanner

    u = np.vstack([np.eye(3), 0.5 * np.eye(3), [[0.1, 0.1, 0.1]]])
    idx = np.zeros(3, dtype=np.int64)
    spanner(u, 3, np.ones(7), np.float32(2.0), idx)
    assert sorted(idx.tolist()) == [0, 1, 2]


OPTION_SETS = [
    ["--max_actions", "6"],
    ["--squarecb", "--max_actions", "8", "-q", "UA"],
    ["--noconstant", "-q", "AB", "--cb_type", "dr", "--max_actions", "5"],
    ["--explore_eval", "--max_actions", "5", "--random_seed", "3"],
]


@needs_vw
@pytest.mark.parametrize("opts", OPTION_SETS, ids=lambda o: " ".join(o))
def test_against_vw(tmp_path, opts):
    _data(tmp_path / "d.txt", 25, seed=len(opts))
    args = ["--cb_explore_adf", "--large_action_space", "-d", "d.txt", *opts]
    vw = _vw([*args, "-p", "v.txt"], tmp_path)
    sl = _sl([*args, "-p", "s.txt"], tmp_path)
    assert sl.returncode == 0, sl.stderr
    assert (tmp_path / "s.txt").read_text() == (tmp_path / "v.txt").read_text()
    assert _loss(sl.stderr) == _loss(vw)
    assert "cb_explore_adf_large_action_space" in sl.stderr


@needs_vw
def test_models_both_ways(tmp_path):
    _data(tmp_path / "a.txt", 15, seed=11)
    _data(tmp_path / "b.txt", 10, seed=12)
    first = ["--cb_explore_adf", "--large_action_space", "--squarecb", "--max_actions", "5",
             "--spanner_c", "1.5", "-d", "a.txt"]  # fmt: skip
    _vw([*first, "-f", "vw.model"], tmp_path)
    assert _sl([*first, "-f", "sl.model"], tmp_path).returncode == 0
    then = ["--cb_explore_adf", "-d", "b.txt"]
    _vw([*then, "-i", "vw.model", "-p", "v.txt"], tmp_path)
    _vw([*then, "-i", "sl.model", "-p", "vs.txt"], tmp_path)
    assert _sl([*then, "-i", "vw.model", "-p", "s.txt"], tmp_path).returncode == 0
    want = (tmp_path / "v.txt").read_text()
    assert (tmp_path / "s.txt").read_text() == want
    assert (tmp_path / "vs.txt").read_text() == want


@pytest.mark.parametrize("extra", [["--two_pass_svd"], ["--softmax"], ["--squarecb", "--elim"],
                                   ["-c", "--passes", "2"]])  # fmt: skip
def test_refusals(tmp_path, extra):
    (tmp_path / "d.txt").write_text("shared |U a\n0:1:0.5 |A x\n|A y\n\n")
    out = _sl(["--cb_explore_adf", "--large_action_space", "-d", "d.txt", *extra], tmp_path)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1


def test_needs_cb_explore_adf(tmp_path):
    (tmp_path / "d.txt").write_text("shared |U a\n0:1:0.5 |A x\n|A y\n\n")
    out = _sl(["--cb_adf", "--large_action_space", "-d", "d.txt"], tmp_path)
    assert out.returncode == 2
