"""``--boosting N`` (:mod:`streamlearn.reductions.boosting`, :mod:`streamlearn.learners.boosting`)
against VW 9.11.9 on data of our own: ``-p`` and stderr byte for byte for the three
algorithms (labels ±1 and labels that widen the range example after example), readable
and binary models both ways; ``sl train``'s; the refusals."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest

from streamlearn.errors import UsageError
from streamlearn.learners import boosting as kernel
from streamlearn.reductions import boosting
from tests.marks import slow_except
from tests.reductions.test_lrq import _data, _sl, _stderr, _vw, assert_refused

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None
needs_vw = pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed")


def _rising(path: Path, n: int, seed: int) -> None:
    """Real labels that mostly rise (each widens VW's label range: its scorer clips a weak
    learner's prediction to the range as the example found it, its learn to the widened)."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        y = 0.5 + i / n + rnd.uniform(-0.05, 0.05)
        w = rnd.choice(["", "", " 2", " 0.5", " 0"])
        feats = " ".join(f"t{rnd.randrange(12)}:{rnd.uniform(-1, 1):.4f}" for _ in range(4))
        lines.append(f"{y:.5f}{w} |f {feats} k{rnd.randrange(3)}")
    path.write_text("\n".join(lines) + "\n")


CASES = [
    ("d", "--boosting 3"),
    ("d", "--boosting 5 --gamma 0.3 --loss_function logistic"),
    ("d", "--boosting 4 --holdout_off --passes 3 -c -k"),
    ("d", "--boosting 3 --gamma 0.5"),  # BBM's weights 0·0^-1: NaN, learned as not at all
    ("r", "--boosting 3"),
    ("r", "--boosting 6 --gamma 0.2"),
    ("r", "--boosting 2 --sgd -l 0.3"),
]


@needs_vw
@pytest.mark.parametrize(("data", "args"), CASES)
def test_bbm_is_vws_byte_for_byte(tmp_path: Path, data: str, args: str) -> None:
    import subprocess
    import sys

    if data == "d":
        _data(tmp_path / "d.vw", 500, seed=len(args))
    else:
        _rising(tmp_path / "d.vw", 400, seed=len(args))
    outs = "-d d.vw -p {0}.p -f {0}.model --readable_model {0}.txt"
    code = "import sys\nfrom vowpalwabbit import Workspace\nWorkspace(sys.argv[1]).finish()\n"
    vw = subprocess.run([sys.executable, "-c", code, f"{args} {outs.format('vw')}"],
                        cwd=tmp_path, capture_output=True, text=True, check=True)  # fmt: skip
    for f in tmp_path.glob("d.vw.cache*"):
        f.unlink()
    r = _sl([*args.split(), *outs.format("sl").split()], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    assert (tmp_path / "sl.txt").read_text() == (tmp_path / "vw.txt").read_text()
    assert _stderr(r.stderr, "sl.") == _stderr(vw.stderr, "vw.")


ALGORITHMS = [
    ("d", "--boosting 5 --alg logistic"),
    ("d", "--boosting 5 --alg adaptive"),
    ("d", "--boosting 3 --alg adaptive --random_seed 11 --loss_function logistic"),
    ("r", "--boosting 5 --alg logistic"),
    ("r", "--boosting 4 --alg adaptive"),
    ("r", "--boosting 3 --alg logistic --holdout_off --passes 2 -c -k"),
]


@needs_vw
@pytest.mark.parametrize(("data", "args"), ALGORITHMS)
def test_logistic_and_adaptive_predict_and_count_as_vw(tmp_path: Path, data: str,
                                                       args: str) -> None:  # fmt: skip
    """AdaBoost.OL.W and AdaBoost.OL: ``-p`` and stderr byte for byte (VW predicts an
    example before it learns it, a draw of its generator each time under adaptive)."""
    import subprocess
    import sys

    if data == "d":
        _data(tmp_path / "d.vw", 500, seed=len(args))
    else:
        _rising(tmp_path / "d.vw", 400, seed=len(args))
    code = "import sys\nfrom vowpalwabbit import Workspace\nWorkspace(sys.argv[1]).finish()\n"
    vw = subprocess.run([sys.executable, "-c", code, f"{args} -d d.vw -p vw.p"], cwd=tmp_path,
                        capture_output=True, text=True, check=True)  # fmt: skip
    for f in tmp_path.glob("d.vw.cache*"):
        f.unlink()
    r = _sl([*args.split(), "-d", "d.vw", "-p", "sl.p"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    assert _stderr(r.stderr, "sl.") == _stderr(vw.stderr, "vw.")


@needs_vw
@pytest.mark.parametrize("alg", ["BBM", "logistic", "adaptive"])
def test_models_move_both_ways_and_continue(tmp_path: Path, alg: str) -> None:
    """Each algorithm's VW model file both ways (logistic's α and adaptive's α, v and
    generator state between the header and gd's weights, as VW's save_load writes them)."""
    _rising(tmp_path / "d.vw", 300, seed=1)
    _rising(tmp_path / "e.vw", 200, seed=2)
    _vw(f"--boosting 3 --alg {alg} -d d.vw -f vw.model --readable_model vw.txt", tmp_path)
    r = _sl(["--boosting", "3", "--alg", alg, "-d", "d.vw", "-f", "sl.model",
             "--readable_model", "sl.txt"], tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.txt").read_text() == (tmp_path / "vw.txt").read_text()
    _vw("-i vw.model -t -d e.vw -p vw_t.p", tmp_path)
    _vw("-i sl.model -t -d e.vw -p vw_of_sl.p", tmp_path)
    assert _sl(["-i", "vw.model", "-t", "-d", "e.vw", "-p", "sl_of_vw.p"], tmp_path).returncode == 0
    want = (tmp_path / "vw_t.p").read_bytes()
    assert (tmp_path / "vw_of_sl.p").read_bytes() == want
    assert (tmp_path / "sl_of_vw.p").read_bytes() == want
    _vw("-i vw.model -d e.vw -p vw_c.p", tmp_path)
    r = _sl(["-i", "vw.model", "-d", "e.vw", "-p", "sl_c.p"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl_c.p").read_bytes() == (tmp_path / "vw_c.p").read_bytes()


@pytest.mark.parametrize("alg", slow_except(["BBM", "logistic", "adaptive"], 1))
def test_sl_train_runs_each_algorithm_and_keeps_its_state(tmp_path: Path, alg: str) -> None:
    """``sl train --boosting`` with each algorithm: a model written, continued (α and v kept
    in its state) and scored."""
    rng = np.random.default_rng(0)
    lines = []
    for _ in range(3000):
        x = rng.normal(size=3)
        y = 1 if x[0] * x[1] > 0 else -1
        lines.append(f"{y} |f a:{x[0]:.4f} b:{x[1]:.4f} c:{x[2]:.4f}")
    (tmp_path / "x.vw").write_text("\n".join(lines) + "\n")
    r = _sl(["--boosting", "4", "--boost-alg", alg, "x.vw", "-f", "m.sl", "--quiet"], tmp_path,
            "train")  # fmt: skip
    assert r.returncode == 0, r.stderr
    again = _sl(["-i", "m.sl", "x.vw", "--quiet", "-f", "m2.sl"], tmp_path, "train")
    assert again.returncode == 0, again.stderr
    scored = _sl(["-i", "m2.sl", "x.vw", "-p", "p.txt"], tmp_path, "predict")
    assert scored.returncode == 0, scored.stderr
    assert len((tmp_path / "p.txt").read_text().splitlines()) == 3000


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ("--boosting 3 --oaa 3", "--oaa"),
        ("--boosting 3 --l1 1e-4", "--l1 or --l2"),
        ("--boosting 3 --lrq ab2", "--lrq"),
        ("--boosting 3 --link logistic", "each weak"),
        ("--boosting 0", "1 to 1024"),
        ("--boosting 3 --audit", "--audit"),
    ],
)
def test_what_sl_does_not_run_is_refused_in_one_line(tmp_path: Path, args: str,
                                                     why: str) -> None:  # fmt: skip
    assert_refused(tmp_path, args, why)


def test_options_and_vws_binomials() -> None:
    assert boosting.read(("--boosting", "5", "--alg", "adaptive", "--gamma", "0.2")) == \
        boosting.Options(5, "adaptive", 0.2)  # fmt: skip
    assert boosting.read(("--lrq", "ab2")) is None
    with pytest.raises(UsageError, match="BBM, logistic or adaptive"):
        boosting.read(("--boosting", "2", "--alg", "ada"))
    c = kernel.binomials(6)
    assert c[5, 2] == 10 and c[4, 0] == 1 and c[3, 4] == 0
    from streamlearn.learners.oaa import stride  # (N learners' slots, as --oaa's K classes)

    assert stride(5) == 8 and stride(4) == 4 and stride(1) == 1


def test_squared_loss_beyond_the_label_range_is_vws() -> None:
    f32 = np.float32
    assert kernel.squared_vw(f32(0.5), f32(0.2), f32(0.0), f32(1.0)) == f32(0.09)
    # beyond the range: linear, 0 at the edge's own label
    assert kernel.squared_vw(f32(3.0), f32(1.0), f32(0.0), f32(1.0)) == f32(0.0)
    assert kernel.squared_vw(f32(3.0), f32(0.5), f32(0.0), f32(1.0)) == f32(0.25 + 2 * 0.5 * 2)
    assert kernel.squared_vw(f32(-2.0), f32(0.5), f32(0.0), f32(1.0)) == f32(0.25 + 2 * 0.5 * 2)


def test_a_models_learner_count_is_bounded_before_anything_is_sized(tmp_path: Path) -> None:
    """A VW model whose options ask for 4e9 weak learners is refused (exit 8: more memory
    than there is) before its state is allocated (a model's options are data: they never
    choose an unbounded size)."""
    from streamlearn.io import vwmodel

    _data(tmp_path / "d.vw", 50, seed=2)
    assert _sl(["--boosting", "3", "-d", "d.vw", "-f", "m.vw", "--quiet"], tmp_path).returncode == 0
    data = (tmp_path / "m.vw").read_bytes()
    h = vwmodel.read_header(data)
    rest = data[h.end:]
    h.options = " --boosting 4000000000"
    (tmp_path / "evil.vw").write_bytes(vwmodel.encode_header(h) + rest)
    r = _sl(["-i", "evil.vw", "-t", "-d", "d.vw", "--quiet"], tmp_path)
    assert r.returncode == 8, r.stderr
    assert "--boosting 4000000000 needs at least" in r.stderr
