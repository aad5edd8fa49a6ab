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

from streamlearn.config import TrainConfig
from streamlearn.errors import UsageError

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
    from streamlearn.reductions import single_line

    for kw in ({"oaa": 3}, {"stack": ("--bfgs", "--bootstrap", "2")},
               {"stack": ("--bfgs", "--autolink", "1")}, {"loss": "hinge"}, {"algo": "ftrl"},
               {"stack": ("--bfgs", "--conjugate_gradient")}):  # fmt: skip
        with pytest.raises(UsageError):
            config = TrainConfig(**{"stack": ("--bfgs", "--mem", "5"), **kw})
            module, _ = single_line(config)
            module.spec(config)


def test_first_steps_match_a_dense_statement():
    """Two passes of squared loss without --l2, stated densely: pass 1 gives the gradient
    g = Σ 2(p - y) x (p = 0) and the diagonal h = Σ 2 x²; the direction is d = -g / h
    (capped at 10^4 / max h); pass 2 sums the curvature Σ 2 (d·x)², and the step is
    -g·d / curvature."""
    from streamlearn.learners.base import new_rows, new_stats

    rng = np.random.default_rng(0)
    n, d = 50, 8
    X = rng.random((n, d))
    y = X @ rng.normal(size=d) + 0.3
    from streamlearn.reductions import bfgs as reduction

    cfg = TrainConfig(stack=("--bfgs", "--mem", "4"), bits=3, passes=3, holdout_period=0,
                      min_prediction=-1e9, max_prediction=1e9)  # fmt: skip
    params = cfg.params()
    spec = reduction.spec(cfg)
    assert spec.name == "bfgs4"
    table = spec.new_table(3)
    gstate = spec.init_gstate(params)
    indptr = np.arange(0, n * d + 1, d)
    indices = np.tile(np.arange(d, dtype=np.uint32), n)
    args = (indptr, indices, X.reshape(-1), y, np.ones(n), np.zeros(n),
            np.zeros(n, dtype=np.uint8))  # fmt: skip
    for _ in range(2):
        spec.train_batch(table, gstate, params, 0, *args, new_stats(), new_rows(), np.empty(n))
        spec.finish(table, gstate, params)
    X32 = X.astype(np.float32)
    g = (2 * (0 - y)[:, None] * X32).sum(0)
    h = (2 * X32 * X32).sum(0)
    direction = -g / h
    curv = (2 * (X32 @ direction) ** 2).sum()
    step = -(g @ direction) / curv
    np.testing.assert_allclose(table[:, 0], step * direction, rtol=2e-4)


def test_a_model_of_the_fields_reads_the_same(tmp_path):
    """``legacy/bfgs.sl`` was written by sl at 857a075, when --bfgs was ``TrainConfig``
    fields (``"bfgs": 4, "termination": 0.01, "hessian_on": true``, learner ``bfgs4``): 4
    passes over ``data/sample.vw``'s first 600 lines at ``-b 10``; ``bfgs.preds`` is that sl's
    ``sl predict -p`` on lines 601-800.  Today's sl reads the fields as the reduction's words
    and gives the same bytes."""
    legacy = os.path.join(ROOT, "tests", "data", "legacy")
    rows = open(os.path.join(ROOT, "data", "sample.vw"), "rb").read().splitlines(keepends=True)
    (tmp_path / "next.vw").write_bytes(b"".join(rows[600:800]))
    r = _run(["streamlearn", "predict", "-i", os.path.join(legacy, "bfgs.sl"), "next.vw", "-p",
              "p.txt", "--quiet"], tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    with open(os.path.join(legacy, "bfgs.preds"), "rb") as fh:
        assert (tmp_path / "p.txt").read_bytes() == fh.read()
    from streamlearn.api import Model

    words = Model.load(os.path.join(legacy, "bfgs.sl")).config.stack
    assert words == ("--bfgs", "--mem", "4", "--termination", "0.01", "--hessian_on")


@needs_vw
@pytest.mark.parametrize("opts", [["--conjugate_gradient", "--passes", "5", "--holdout_off"],
                                  ["--conjugate_gradient", "--passes", "4", "--binary"],
                                  ["--bfgs", "--mem", "0", "--passes", "4"],
                                  ["--bfgs", "--passes", "4", "--loss_function", "logistic",
                                   "--binary"]])  # fmt: skip
def test_conjugate_gradient_and_binary_against_vw(tmp_path, opts):
    """VW's --conjugate_gradient (L-BFGS with m = 0, the curvature always, no threshold;
    it divided by zero in the compiled kernel where C gives NaN) and --binary's 0/1 loss
    shown under L-BFGS (the logistic loss was shown), on labels -1/+1."""
    _data(tmp_path / "d.vw", 300, 4, classes="--binary" in opts)
    outs = []
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "-d", "d.vw", "-c", "-k", *opts, "-p", f"{tag}.p"], tmp_path)
        assert r.returncode == 0, r.stderr
        outs.append((_facts(r.stderr), (tmp_path / f"{tag}.p").read_bytes()))
    assert outs[0] == outs[1]


@needs_vw
def test_bfgs_over_a_gd_model_as_vw(tmp_path):
    """VW lays --bfgs over a model trained without it (its weights the start): so does sl,
    though the model fixes the reductions' words otherwise (suite id 385)."""
    _data(tmp_path / "a.vw", 200, 5)
    _data(tmp_path / "b.vw", 120, 6)
    r = _run(["vowpalwabbit", "-d", "a.vw", "-f", "gd.m", "--predict_only_model", "--quiet"],
             tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    outs = []
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "-d", "b.vw", "-i", "gd.m", "--bfgs", "--passes", "3", "-c", "-k",
                  "--predict_only_model", "-p", f"{tag}.p"], tmp_path)  # fmt: skip
        assert r.returncode == 0, r.stderr
        outs.append((_facts(r.stderr), (tmp_path / f"{tag}.p").read_bytes()))
    assert outs[0] == outs[1]
