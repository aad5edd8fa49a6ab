"""``sl vw --bfgs`` (:mod:`streamlearn.learners.bfgs`) against VW 9.11.9 on generated data:
average loss, passes used and ``-p`` byte for byte (squared and logistic loss, --mem,
--mem 0, --l2, --hessian_on, holdout); predict-only models read by either program; and the
first two steps against a dense numpy statement of VW's update."""

from __future__ import annotations

import importlib.util
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.config import ConfigError, TrainConfig

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None
needs_vw = pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _data(path, n: int, seed: int, classes: bool = False) -> None:
    rnd = random.Random(seed)
    with open(path, "w") as fh:
        for i in range(n):
            feats = " ".join(f"f{rnd.randrange(30)}:{rnd.random():.3f}" for _ in range(4))
            if classes:
                label = "1" if rnd.random() < 0.6 else "-1"
            else:
                label = f"{rnd.random() * 2 - 0.5:.4f}"
            if rnd.random() > 0.9:
                label += " 2"
            fh.write(f"{label} 'e{i}|f {feats} k{i % 5}\n")


def _run(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


def _facts(stderr: str) -> tuple:
    loss = re.search(r"average loss = (\S+)", stderr).group(1)
    passes = re.search(r"passes used = (\S+)", stderr)
    return loss, passes.group(1) if passes else None


@needs_vw
@pytest.mark.parametrize("opts", [
    ["--passes", "6", "--holdout_off"],
    ["--passes", "8", "--mem", "3", "--l2", "0.01"],
    ["--passes", "8", "--mem", "3", "--l2", "0.01", "--holdout_off"],
    ["--passes", "6", "--hessian_on", "--holdout_off"],
    ["--passes", "6", "--mem", "0", "--holdout_off"],
    ["--passes", "10", "--loss_function", "logistic", "--holdout_off", "--classes"],
    ["--passes", "20", "--termination", "0.0001", "--l2", "0.1", "--holdout_off"],
])  # fmt: skip
def test_against_vw(tmp_path, opts):
    classes = "--classes" in opts
    opts = [o for o in opts if o != "--classes"]
    _data(tmp_path / "d.vw", 400, 1, classes)
    facts = []
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "--bfgs", "-d", "d.vw", "-c", "-k", *opts, "-p", f"{tag}.p"], tmp_path)
        assert r.returncode == 0, r.stderr
        facts.append(_facts(r.stderr))
    assert facts[0] == facts[1]
    assert (tmp_path / "v.p").read_bytes() == (tmp_path / "s.p").read_bytes()


@needs_vw
def test_predict_only_models_cross_read(tmp_path):
    _data(tmp_path / "d.vw", 300, 3)
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "--bfgs", "-d", "d.vw", "--passes", "4", "--holdout_off", "-c", "-k",
                  "-f", f"{tag}.m", "--predict_only_model"], tmp_path)  # fmt: skip
        assert r.returncode == 0, r.stderr
    outs = set()
    for tag in ("v", "s"):
        r = _run(["vowpalwabbit", "--bfgs", "-d", "d.vw", "-t", "-i", f"{tag}.m",
                  "--predict_only_model", "-p", "o.p"], tmp_path)  # fmt: skip
        assert r.returncode == 0, r.stderr
        outs.add((tmp_path / "o.p").read_bytes())
        r = _run(["streamlearn", "vw", "-d", "d.vw", "-t", "-i", f"{tag}.m", "-p", "o.p"],
                 tmp_path)  # fmt: skip
        assert r.returncode == 0, r.stderr
        outs.add((tmp_path / "o.p").read_bytes())
    assert len(outs) == 1


def test_refused_beside_other_reductions():
    for kw in ({"oaa": 3}, {"stack": ("--bootstrap", "2")}, {"stack": ("--autolink", "1")},
               {"loss": "hinge"}):
        with pytest.raises(ConfigError):
            TrainConfig(bfgs=5, **kw)


def test_first_steps_match_a_dense_statement():
    """Two passes of squared loss without --l2, stated densely: pass 1 gives the gradient
    g = Σ 2(p - y) x (p = 0) and the diagonal h = Σ 2 x²; the direction is d = -g / h
    (capped at 10^4 / max h); pass 2 sums the curvature Σ 2 (d·x)², and the step is
    -g·d / curvature."""
    from streamlearn.learners import bfgs
    from streamlearn.learners.base import new_rows, new_stats

    rng = np.random.default_rng(0)
    n, d = 50, 8
    X = rng.random((n, d))
    y = X @ rng.normal(size=d) + 0.3
    cfg = TrainConfig(bfgs=4, bits=3, passes=3, holdout_period=0, min_prediction=-1e9,
                      max_prediction=1e9)  # fmt: skip
    params = cfg.params()
    spec = bfgs.spec(4)
    table = spec.new_table(3)
    gstate = spec.init_gstate(params)
    indptr = np.arange(0, n * d + 1, d)
    indices = np.tile(np.arange(d, dtype=np.uint32), n)
    args = (indptr, indices, X.reshape(-1), y, np.ones(n), np.zeros(n),
            np.zeros(n, dtype=np.uint8))  # fmt: skip
    for _ in range(2):
        bfgs.train_batch(table, gstate, params, 0, *args, new_stats(), new_rows(), np.empty(n))
        bfgs.finish(table, gstate, params)
    X32 = X.astype(np.float32)
    g = (2 * (0 - y)[:, None] * X32).sum(0)
    h = (2 * X32 * X32).sum(0)
    direction = -g / h
    curv = (2 * (X32 @ direction) ** 2).sum()
    step = -(g @ direction) / curv
    np.testing.assert_allclose(table[:, 0], step * direction, rtol=2e-4)
