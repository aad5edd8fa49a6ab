"""``sl vw -r``: each score before clipping and the link (VW's partial prediction), byte for
byte as VW 9.11.9 writes it, beside ``-p``, on generated data whose scores leave the label
range; and a plain run's kernel leaves the room after its predictions alone."""

from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys

import pytest

from streamlearn.config import TrainConfig
from streamlearn.io import parse_bytes
from streamlearn.learners import resolve
from streamlearn.learners.base import new_rows, new_stats
from streamlearn.run.runner import run_kernel

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None
needs_vw = pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_kernel_writes_raw_only_when_asked():
    cfg = TrainConfig(
        numbers="vw", adaptive=False, normalized=False, invariant=False, learning_rate=1.0
    )
    spec = resolve(cfg.algo)
    batch = parse_bytes(b"1 |f a\n1 |f a\n-1 |f b\n1 |f a b\n", numbers="vw")
    outs = []
    for raw in (False, True):
        params = cfg.params()
        table = spec.new_table(cfg.bits)
        preds = run_kernel(spec.train_batch, table, spec.init_gstate(params), params,
                           cfg.loss_id, batch, new_stats(), new_rows(), 0, raw)  # fmt: skip
        outs.append(preds)
    plain, both = outs
    assert plain.shape == (4,) and both.shape == (8,)
    assert both[:4].tolist() == plain.tolist()
    # plain sgd's steps carry scores beyond the labels seen: -p clips them, -r does not
    assert both[:4].tolist() == [0.0, 1.0, 1.0, -1.0]
    assert both[4:].tolist() == pytest.approx([0.0, 2.828427, 1.414214, -1.171573], abs=1e-6)


def _data(path, n: int, seed: int, classes: bool = False) -> None:
    rnd = random.Random(seed)
    with open(path, "w") as fh:
        for i in range(n):
            x = [rnd.random() * 4 for _ in range(3)]
            y = 1 if x[0] + rnd.random() > 2.5 else (2 if classes else -1)
            fh.write(f"{y} 'r{i}|f a:{x[0]:.3f} b:{x[1]:.3f} |g c:{x[2]:.3f}\n")


def _run(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


@needs_vw
@pytest.mark.parametrize("opts", [
    [],
    ["--loss_function", "logistic"],
    ["--oaa", "2"],
    ["-c", "-k", "--passes", "3", "--holdout_off", "-l", "5"],
    ["--ftrl"],
    ["--sgd", "-l", "2"],
    ["-q", "fg", "--audit"],
])  # fmt: skip
def test_raw_against_vw(tmp_path, opts):
    _data(tmp_path / "d.txt", 400, seed=len(opts), classes="--oaa" in opts)
    for prog, tag in (("vowpalwabbit", "v"), ("streamlearn", "s")):
        head = [prog] if prog == "vowpalwabbit" else [prog, "vw"]
        r = _run([*head, "-d", "d.txt", *opts, "-p", f"{tag}.p", "-r", f"{tag}.r"], tmp_path)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "s.r").read_bytes() == (tmp_path / "v.r").read_bytes()
    assert (tmp_path / "s.p").read_bytes() == (tmp_path / "v.p").read_bytes()
    if opts == []:  # some scores do leave the range [-1, 1], or the test shows nothing
        raw = [float(line.split()[0]) for line in (tmp_path / "s.r").read_text().splitlines()]
        assert max(abs(v) for v in raw) > 1.0
