"""VW's legacy single-line contextual bandit models (``--cb K``/``--cb_explore K`` with
``--cb_force_legacy``, ``--eval``) both ways: sl writes VW's bytes (the options VW keeps,
cb_explore's counter, gd's state and cb_algs' weights) and reads VW's, and either program
continues or scores either's model as VW does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.marks import slow_except

ROOT = Path(__file__).parents[2]


def _logs(seed: int, n: int, k: int = 3, evaluate: bool = False) -> str:
    """Single-line cb logs over ``k`` actions (a few lines listing the actions allowed,
    some unlabeled); ``evaluate``: each line led by a policy's action."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        a = int(rng.integers(1, k + 1))
        cost = rng.choice(["0", "1", "-1", "0.466667"])
        prob = rng.choice(["0.5", "0.333333", "0.2", "1"])
        label = f"{a}:{cost}:{prob}"
        if evaluate:
            label = f"{int(rng.integers(1, k + 1))} {label}"
        elif rng.random() < 0.15:
            label = ""
        feats = " ".join(f"f{int(rng.integers(0, 12))}:{rng.choice(['1', '0.5', '2'])}"
                         for _ in range(int(rng.integers(1, 5))))  # fmt: skip
        out.append(f"{label} |u {feats} |a g{int(rng.integers(0, 4))}\n")
    return "".join(out)


def _run(cmd: list[str], args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", *cmd, *args], cwd=cwd, env=env,
                       capture_output=True, timeout=300, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr.decode()[-800:]
    return r


def _body(model: bytes) -> bytes:
    from streamlearn.io import vwmodel

    return model[vwmodel.read_header(model).end :]


PROGRAMS = {"vw": ["vowpalwabbit"], "sl": ["streamlearn", "vw"]}
LINES = [
    "--cb 3",
    "--cb 3 --cb_type dm",
    "--cb 3 --cb_type ips -q ua",
    "--cb_explore 3",
    "--cb_explore 3 --epsilon 0.3 --sgd -l 0.4",
    "--cb_explore 3 --first 4",
    "--cb_explore 3 --bag 3 --random_seed 5",
    "--cb_explore 3 --cover 2",
    "--cb_explore 3 --cover 3 --psi 0.5 --nounif --epsilon 0.2",
    "--cb 3 --eval",
]


@pytest.mark.parametrize("line", slow_except(LINES, 3, 7))
def test_models_are_vws_and_move_both_ways(tmp_path: Path, line: str) -> None:
    """The model and its readable twin byte for byte VW's; each program continues each
    program's model to the same readable model, and scores it to the same predictions."""
    pytest.importorskip("vowpalwabbit")
    evaluate = "--eval" in line
    (tmp_path / "a.txt").write_text(_logs(len(line), 60, evaluate=evaluate))
    (tmp_path / "b.txt").write_text(_logs(len(line) + 1, 40, evaluate=evaluate))
    for who, cmd in PROGRAMS.items():
        _run(cmd, ["--cb_force_legacy", *line.split(), "-d", "a.txt", "-f", f"{who}.m",
                   "--readable_model", f"{who}.r", "--quiet"], tmp_path)  # fmt: skip
    assert (tmp_path / "sl.r").read_bytes() == (tmp_path / "vw.r").read_bytes()
    assert _body((tmp_path / "sl.m").read_bytes()) == _body((tmp_path / "vw.m").read_bytes())
    continued, scored = set(), set()
    for model in PROGRAMS:
        for who, cmd in PROGRAMS.items():
            out = f"{model}.{who}"
            _run(cmd, ["-i", f"{model}.m", "-d", "b.txt", "--readable_model", f"c.{out}",
                       "--quiet"], tmp_path)  # fmt: skip
            continued.add((tmp_path / f"c.{out}").read_bytes())
            if not evaluate:  # (VW stops on --eval's lines under -t: "a test label")
                _run(cmd, ["-i", f"{model}.m", "-t", "-d", "b.txt", "-p", f"p.{out}",
                           "--quiet"], tmp_path)  # fmt: skip
                scored.add((tmp_path / f"p.{out}").read_bytes())
    assert len(continued) == 1 and len(scored) == (0 if evaluate else 1)


def test_a_legacy_model_scored_without_naming_legacy(tmp_path: Path) -> None:
    """A legacy model's options say --cb_force_legacy: `sl vw -i m --cb_explore 3 --cover
    2 -t` runs it as VW runs it (VW's suite ids 268, 270, 331), the table too."""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "a.txt").write_text(_logs(2, 50))
    _run(PROGRAMS["sl"], ["--cb_force_legacy", "--cb_explore", "3", "--cover", "2", "-d",
                          "a.txt", "-f", "m"], tmp_path)  # fmt: skip
    got = []
    for who, cmd in PROGRAMS.items():
        r = _run(cmd, ["--cb_explore", "3", "--cover", "2", "-i", "m", "-t", "-d", "a.txt",
                       "-p", f"p.{who}"], tmp_path)  # fmt: skip
        err = r.stderr.decode()
        got.append((err[err.find("average  since") :], (tmp_path / f"p.{who}").read_bytes()))
    assert got[0] == got[1]


def test_a_model_before_8_11_reads_as_legacy() -> None:
    """VW before 8.11 wrote no --cb_force_legacy into a --cb K model (``--cb 4 --cb_type dr
    --csoaa 4``, VW's suite id 272): VW 9 runs it as legacy cb, and so does sl vw (the
    csoaa it stacks is not sl's --csoaa K)."""
    from unittest import mock

    from streamlearn.vwargs import argv

    pairs = [("cb", "4"), ("cb_type", "dr"), ("csoaa", "4")]
    with mock.patch("streamlearn.run.mlmodel.kept_options", return_value=pairs):
        got = argv.model_argv("m.vw", ["-d", "x"])
    assert got == ["--cb_force_legacy", "--cb", "4", "--cb_type", "dr"]
