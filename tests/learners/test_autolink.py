"""``sl vw --autolink d`` (:mod:`streamlearn.learners.autolink`) against VW 9.11.9: average
loss and ``-p`` byte for byte on generated data (importance weights, unlabeled lines,
passes), models read by the other program; the autolink features' overlapping floats."""

from __future__ import annotations

import importlib.util
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.errors import UsageError

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None
needs_vw = pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _data(path, n: int, seed: int) -> None:
    """Labels in [0.3, 0.7], small values: VW's autolink diverges (NaN normalizer) on wider
    ones, and sl refuses to save a non-finite state."""
    rnd = random.Random(seed)
    with open(path, "w") as fh:
        for i in range(n):
            feats = " ".join(f"f{rnd.randrange(30)}:{0.5 * rnd.random():.3f}" for _ in range(4))
            x = rnd.random()
            if x < 0.1:
                label = ""
            else:
                label = f"{0.3 + 0.4 * rnd.random():.4f}"
            if label and x > 0.85:
                label += f" {rnd.choice([0.5, 2])}"
            fh.write(f"{label} 'e{i}|f {feats} k{i % 5}\n")


def _run(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


def _loss(stderr: str) -> str:
    return re.search(r"average loss = (\S+)", stderr).group(1)


def _both(tmp_path, args: list[str]) -> None:
    losses = []
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, *args, "-p", f"{tag}.p", "-f", f"{tag}.m"], tmp_path)
        assert r.returncode == 0, r.stderr
        losses.append(_loss(r.stderr))
    assert losses[0] == losses[1]
    assert (tmp_path / "v.p").read_bytes() == (tmp_path / "s.p").read_bytes()


@needs_vw
@pytest.mark.parametrize("opts", [["--autolink", "1"], ["--autolink", "2"],
                                  ["--autolink", "5", "--noconstant"],
                                  ["--autolink", "3", "--l2", "1e-5"]])  # fmt: skip
def test_against_vw(tmp_path, opts):
    _data(tmp_path / "d.vw", 400, 1)
    _both(tmp_path, ["-d", "d.vw", *opts])


@needs_vw
def test_passes_against_vw(tmp_path):
    _data(tmp_path / "d.vw", 300, 2)
    _both(tmp_path, ["-d", "d.vw", "--autolink", "2", "-c", "-k", "--passes", "3"])


@needs_vw
def test_models_cross_read(tmp_path):
    _data(tmp_path / "a.vw", 200, 4)
    _data(tmp_path / "b.vw", 200, 5)
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "-d", "a.vw", "--autolink", "2", "-f", f"{tag}.m"], tmp_path)
        assert r.returncode == 0, r.stderr
    outs = set()
    for prog in ("vowpalwabbit", "streamlearn"):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        for tag in ("v", "s"):
            for test in ([], ["-t"]):
                r = _run([*head, "-d", "b.vw", "-i", f"{tag}.m", "-p", "o.p", *test], tmp_path)
                assert r.returncode == 0, r.stderr
                outs.add((tuple(test), (tmp_path / "o.p").read_bytes(), _loss(r.stderr)))
    assert len(outs) == 2  # one result with learning, one without


def test_refused_beside_other_reductions(tmp_path):
    from streamlearn.reductions import single_line

    for kw in ({"oaa": 3}, {"stack": ("--autolink", "2", "--bootstrap", "2")}, {"algo": "ftrl"},
               {"adaptive": False},
               {"stack": ("--autolink", "2", "--lrq", "ab2")}):  # fmt: skip
        with pytest.raises(UsageError):
            config = TrainConfig(**{"stack": ("--autolink", "2"), **kw})
            module, _ = single_line(config)
            module.spec(config)
    for kw in ({"oaa": 3}, {"algo": "ftrl"}, {"adaptive": False}):  # (sl vw: one line, exit 2)
        _data(tmp_path / "d.vw", 5, 1)
        r = _run(["streamlearn", "vw", "-d", "d.vw", "--autolink", "2", *_vw_words(kw)],
                 tmp_path)  # fmt: skip
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr


def _vw_words(kw: dict) -> list[str]:
    return {"oaa": ["--oaa", "3"], "algo": ["--ftrl"], "adaptive": ["--normalized"]}[next(iter(kw))]


LEGACY = Path(ROOT) / "tests" / "data" / "legacy"


def test_a_model_of_the_field_reads_and_continues_the_same(tmp_path):
    """``legacy/autolink.sl`` was written by sl at 6fc0264, when --autolink was a
    ``TrainConfig`` field (``"autolink": 2``, learner ``autolink_gd``); its ``.preds`` are that
    sl's ``sl predict -p`` on ``autolink.vw`` and ``.cont.preds`` the same after ``sl train -i``
    on it.  Today's sl reads it as ``stack = ("--autolink", "2")`` and gives the same bytes."""
    data, model = LEGACY / "autolink.vw", tmp_path / "m.sl"
    r = _run(["streamlearn", "predict", "-i", str(LEGACY / "autolink.sl"), str(data), "-p",
              "p.txt", "--quiet"], tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.txt").read_bytes() == (LEGACY / "autolink.preds").read_bytes()
    r = _run(["streamlearn", "train", "-i", str(LEGACY / "autolink.sl"), str(data), "-f",
              str(model), "--quiet"], tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = _run(["streamlearn", "predict", "-i", str(model), str(data), "-p", "p.txt", "--quiet"],
             tmp_path)  # fmt: skip
    assert (tmp_path / "p.txt").read_bytes() == (LEGACY / "autolink.cont.preds").read_bytes()
    from streamlearn.api import Model

    assert Model.load(model).config.stack == ("--autolink", "2")


@pytest.mark.slow
def test_overlapping_floats():
    """Feature k's weight is the float ``(524267083 + k) mod 4·2^b`` of the table, its
    adaptive sum the next one (feature k+1's weight)."""
    from streamlearn.learners import autolink
    from streamlearn.learners.base import P_AUTOLINK, new_rows, new_stats

    bits = 4
    cfg = TrainConfig(stack=("--autolink", "2"), bits=bits)
    params = cfg.params()
    params[P_AUTOLINK] = 2  # (the reduction's entry fills it: reductions/autolink.py)
    table = np.zeros((1 << bits, 4), dtype=np.float32)
    gstate = autolink.SPEC.init_gstate(params)
    indptr = np.array([0, 1, 2, 3])
    indices = np.array([1, 1, 1], dtype=np.uint32)
    values = np.ones(3)
    labels = np.array([1.0, 1.0, 1.0])
    ones = np.ones(3)
    autolink.train_gd(table, gstate, params, 0, indptr, indices, values, labels, ones,
                      np.zeros(3), np.zeros(3, dtype=np.uint8), new_stats(), new_rows(),
                      np.empty(3))  # fmt: skip
    flat = table.reshape(-1)
    at = autolink.AUTOCONSTANT & (flat.size - 1)
    assert flat[at] != 0.0 and flat[at + 1] != 0.0  # weight of feature 0, its adaptive sum
