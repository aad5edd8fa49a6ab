"""``--epsilon_decay`` (:mod:`streamlearn.reductions.epsilon_decay`,
:mod:`streamlearn.learners.epsilon_decay`, :mod:`streamlearn.learners.conf_seq`) against VW
9.11.9 on bandit logs of our own: the progress table, ``-p`` and standard output byte for
byte (models moved up and dropped, ``--explore_eval`` above it), the ``--predict_only_model``
spin-off model byte for byte and read by the other program, and the refusals."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reductions.test_lrq import ROOT, needs_vw


def _log(path: Path, n: int, seed: int, unlabeled: float = 0.0) -> None:
    """Examples of 2-4 actions with a shared line, one logged action each (its cost -1 or
    0, its probability), now and then none."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        na = rnd.randint(2, 4)
        u = rnd.random()
        lines = [f"shared |s u{rnd.randint(0, 5)} t{rnd.randint(0, 3)}:{rnd.random():.3f}"]
        lab = rnd.randrange(na)
        best = (int(u * 6) + i % 2) % na
        for a in range(na):
            feats = " ".join(f"f{rnd.randint(0, 20)}:{rnd.random():.3f}" for _ in range(4))
            line = f"|a a{a} {feats}"
            if a == lab and rnd.random() >= unlabeled:
                c = -1 if (a == best and rnd.random() < 0.8) or rnd.random() < 0.2 else 0
                line = f"{a}:{c}:{round(rnd.uniform(0.2, 1.0), 3)} " + line
            lines.append(line)
        out.append("\n".join(lines) + "\n")
    path.write_text("\n".join(out))


def _drift(path: Path, n: int, seed: int, switch: int) -> None:
    """Two actions whose best one swaps after ``switch`` examples: a fresh challenger
    overtakes the champion (VW promotes it)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        u = rnd.randrange(2)
        best = u if i < switch else 1 - u
        a = rnd.randrange(2)
        c = -1 if (a == best) == (rnd.random() < 0.9) else 0
        lines = [f"shared |s u{u}"]
        for j in range(2):
            line = f"|a a{j} x{j}_{u}"
            lines.append(f"{j}:{c}:0.500 " + line if j == a else line)
        out.append("\n".join(lines) + "\n")
    path.write_text("\n".join(out))


def _run(prog: list[str], args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_DISABLE_JIT": "1"}
    return subprocess.run([sys.executable, "-m", *prog, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip


VW = ["vowpalwabbit"]
SL = ["streamlearn", "vw"]


def _both(tmp_path: Path, args: list[str]) -> None:
    """VW's and sl's stderr (its file names aside), -p and stdout, the same."""
    out = {}
    for name, prog in (("vw", VW), ("sl", SL)):
        r = _run(prog, [*args, "-p", f"{name}.p"], tmp_path)
        assert r.returncode == 0, r.stderr
        err = [ln for ln in r.stderr.splitlines()
               if not ln.startswith(("predictions =", "compiling"))]  # fmt: skip
        out[name] = (err, (tmp_path / f"{name}.p").read_text(), r.stdout)
    assert out["sl"][0] == out["vw"][0]
    assert out["sl"][1] == out["vw"][1]
    assert out["sl"][2] == out["vw"][2]


CASES = [
    ("log", 1, "--cb_explore_adf --epsilon_decay --model_count 2 --min_scope 5"),
    ("log", 2, "--cb_explore_adf --epsilon_decay --model_count 3 --min_scope 5 --reward_as_cost"),
    ("log", 3, "--cb_explore_adf --epsilon_decay --model_count 4 --min_scope 5 --cb_type ips"),
    ("log", 4, "--cb_explore_adf --epsilon_decay --model_count 3 --min_scope 5 --constant_epsilon"
               " --epsilon 0.1"),
    ("log", 5, "--cb_explore_adf --epsilon_decay --model_count 2 --min_scope 5 -t"),
    ("log", 6, "--explore_eval --epsilon_decay --model_count 4 --min_scope 5"),
    ("log", 7, "--explore_eval --epsilon_decay --model_count 2 --min_scope 5 --multiplier 2"),
    ("drift", 3, "--cb_explore_adf --epsilon_decay --model_count 4 --min_scope 10 -l 0.1"),
    ("drift", 4, "--cb_explore_adf --epsilon_decay --model_count 4 --min_scope 10 -l 0.1 "
                 "--opt_func brentq --challenger_epsilon --shift_model_bounds 1"),
    ("drift", 4, "--cb_explore_adf --epsilon_decay --model_count 3 --min_scope 10 -l 0.1 "
                 "--epsilon_decay_significance_level 0.3 --min_champ_examples 20 --first_only"),
]  # fmt: skip


@needs_vw
@pytest.mark.parametrize(("kind", "seed", "line"), CASES)
def test_vw_numbers(tmp_path: Path, kind: str, seed: int, line: str) -> None:
    if kind == "log":
        _log(tmp_path / "d.txt", 150, seed, unlabeled=0.15)
    else:
        _drift(tmp_path / "d.txt", 500, seed, 250)
    _both(tmp_path, ["-d", "d.txt", *line.split()])


@needs_vw
def test_rewards_outside_0_1_are_clamped_with_vw_warning(tmp_path: Path) -> None:
    (tmp_path / "d.txt").write_text("shared |s a\n0:2:0.5 |a x\n|a y\n\nshared |s b\n|a x\n"
                                    "1:-1.5:0.5 |a y\n\n")  # fmt: skip
    _both(tmp_path, ["-d", "d.txt", "--cb_explore_adf", "--epsilon_decay"])


@needs_vw
@pytest.mark.parametrize("count", [2, 4])
def test_spin_off_model_both_ways(tmp_path: Path, count: int) -> None:
    """``--predict_only_model``: the champion alone, VW's bytes (its version string aside:
    sl writes 9.0.0), and each program's model scores alike in the other."""
    _drift(tmp_path / "d.txt", 300, 3, 150)
    line = ["-d", "d.txt", "--cb_explore_adf", "--epsilon_decay", "--model_count", str(count),
            "--min_scope", "10", "-b", "12", "--predict_only_model"]  # fmt: skip
    for name, prog in (("vw", VW), ("sl", SL)):
        r = _run(prog, [*line, "-f", f"{name}.m"], tmp_path)
        assert r.returncode == 0, r.stderr
    vw, sl = (tmp_path / "vw.m").read_bytes(), (tmp_path / "sl.m").read_bytes()
    assert vw[4:10] == b"9.11.9" and sl[4:9] == b"9.0.0"
    assert vw[10:] == sl[9:]
    bits = str(12 - (count - 1).bit_length())
    preds = set()
    for model in ("vw.m", "sl.m"):
        for prog in (VW, SL):
            r = _run(prog, ["-d", "d.txt", "--cb_explore_adf", "-i", model, "-b", bits, "-t",
                            "-p", "x.p"], tmp_path)  # fmt: skip
            assert r.returncode == 0, r.stderr
            preds.add((tmp_path / "x.p").read_text())
    assert len(preds) == 1


@pytest.mark.parametrize("extra", [
    ["-f", "m.vw"],
    ["--cb_type", "dr"],
    ["--bag", "3"],
    ["--epsilon_decay_audit", "a.txt"],
    ["--readable_model", "r.txt"],
])  # fmt: skip
def test_refused_in_one_line(tmp_path: Path, extra: list[str]) -> None:
    _log(tmp_path / "d.txt", 5, 1)
    r = _run(SL, ["-d", "d.txt", "--cb_explore_adf", "--epsilon_decay", *extra], tmp_path)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "epsilon_decay" in r.stderr
    assert not (tmp_path / "m.vw").exists()


def test_decayed_epsilon_and_fresh_bounds() -> None:
    from streamlearn.learners.conf_seq import ConfSeq
    from streamlearn.reductions.epsilon_decay import decayed

    assert decayed(1.0, 0) == 1.0
    assert float(decayed(1.0, 7)) == pytest.approx(0.5, rel=1e-6)
    c = ConfSeq()
    assert (c.lower_bound(), c.upper_bound()) == (0.0, 1.0)
    for _ in range(200):
        c.update(1.0, 1.0)
    assert 0.9 < c.lower_bound() <= c.upper_bound() == 1.0
