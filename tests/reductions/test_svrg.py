"""``--svrg`` (:mod:`streamlearn.reductions.svrg`, :mod:`streamlearn.learners.svrg`): the
kernel against a dense reference written from VW's ``svrg.cc`` (every weight vector whole,
O(d) per step), and against VW 9.11.9 on data of our own: progress, ``-p`` and model files
byte for byte, models read by the other program; ``sl train --svrg`` and the refusals."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from tests.reductions.test_lrq import _sl, needs_vw

F32 = np.float32


def _data(path: Path, n: int, seed: int) -> None:
    """Regression lines in three namespaces (a value, a weight, a tag, an unlabeled line now
    and then; b sometimes missing)."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        a = " ".join(f"u{rnd.randrange(30)}:{rnd.choice(['1', '0.5', '2', '-0.25'])}"
                     for _ in range(rnd.randint(1, 3)))  # fmt: skip
        b = " ".join(f"m{rnd.randrange(40)}" for _ in range(rnd.randint(0, 3)))
        label = "" if rnd.random() < 0.08 else f"{rnd.uniform(-1, 2):.3f}"
        if label and rnd.random() < 0.1:
            label += f" {rnd.choice(['0.5', '2', '0'])}"
        tag = f"'t{i}" if rnd.random() < 0.2 else ""
        lines.append(f"{label} {tag}|a {a} |b {b} |c z{rnd.randrange(5)}".strip())
    path.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# the dense reference: VW's svrg.cc over whole weight vectors


def _dense_run(examples, d, passes, stage, eta):
    """Predictions of every pass and the inner weights after VW's svrg over ``examples``
    ([(y, a, [(slot, x)])]) repeated ``passes`` times, squared loss, labels bounding the
    predictions (VW's count_label and finalize_prediction)."""
    inner, stable, grad = (np.zeros(d, dtype=F32) for _ in range(3))
    lo = hi = F32(0.0)
    count = 0
    preds = []

    def dot(w, feats):
        p = F32(0.0)
        for h, x in feats:
            p = F32(p + F32(F32(x) * w[h]))
        return p

    for npass in range(passes):
        first = True
        for y, a, feats in examples:
            lo, hi = min(lo, F32(y)), max(hi, F32(y))
            p = min(max(dot(inner, feats), lo), hi)
            preds.append(p)
            if npass % (stage + 1) == 0:
                if first:  # O(d): the stage's stable point
                    stable[:] = inner
                    grad[:] = 0.0
                    count = 0
                ps = min(max(dot(stable, feats), lo), hi)
                g = F32(F32(F32(2.0) * F32(ps - F32(y))) * F32(a))
                for h, x in feats:
                    grad[h] = F32(grad[h] + F32(g * F32(x)))
                count += 1
            else:
                ps = min(max(dot(stable, feats), lo), hi)
                gi = F32(F32(F32(2.0) * F32(p - F32(y))) * F32(a))
                gs = F32(F32(F32(2.0) * F32(ps - F32(y))) * F32(a))
                for h, x in feats:
                    step = F32(F32(F32(gi - gs) * F32(x)) + F32(grad[h] / F32(count)))
                    inner[h] = F32(inner[h] - F32(F32(eta) * step))
            first = False
    return preds, inner


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("stage", "eta"), [(1, 0.1), (2, 0.05), (3, 0.3)])
def test_kernel_equals_the_dense_algorithm(seed: int, stage: int, eta: float) -> None:
    """Random streams over several stages: the kernel (batches of a pass, the entry's pass
    count) gives the dense reference's predictions and inner weights, bit for bit."""
    from streamlearn.learners.base import S_PASS_N, new_rows, new_stats
    from streamlearn.reductions import svrg as reduction

    rnd = np.random.default_rng(seed)
    bits = 6
    examples = []
    for _ in range(60):
        feats = [(int(rnd.integers(64)), float(rnd.choice([1.0, 0.5, -2.0])))
                 for _ in range(int(rnd.integers(1, 5)))]  # fmt: skip
        examples.append((float(rnd.uniform(-1, 3)), float(rnd.choice([1.0, 1.0, 2.0])), feats))
    passes = 2 * (stage + 1) + 1
    want_p, want_w = _dense_run(examples, 1 << bits, passes, stage, eta)

    config = TrainConfig(bits=bits, learning_rate=eta, stack=("--svrg", "--stage_size",
                         str(stage)), adaptive=False, normalized=False, invariant=False,
                         constant=False)  # fmt: skip
    spec = reduction.spec(config)
    params = config.params()
    table = spec.new_table(bits)
    gstate = spec.init_gstate(params)
    stats, rows = new_stats(), new_rows()
    got: list[float] = []
    for _ in range(passes):
        stats[S_PASS_N] = 0.0  # (as the drivers begin a pass)
        for part in (examples[:25], examples[25:]):  # (a pass in two batches)
            indptr = np.cumsum([0] + [len(f) for _, _, f in part]).astype(np.int64)
            indices = np.array([h for _, _, f in part for h, _ in f], dtype=np.uint32)
            values = np.array([x for _, _, f in part for _, x in f], dtype=np.float64)
            n = len(part)
            preds = np.zeros(n)
            spec.train_batch(table, gstate, params, config.loss_id, indptr, indices, values,
                             np.array([y for y, _, _ in part]), np.array([a for _, a, _ in part]),
                             np.zeros(n), np.zeros(n, dtype=np.int32), stats, rows,
                             preds, None)  # fmt: skip
            got += preds.astype(np.float32).tolist()
    assert got == [float(p) for p in want_p]
    np.testing.assert_array_equal(table[:, 0], want_w)


_PASS0 = """import sys
from vowpalwabbit import Workspace
vw = Workspace(sys.argv[1])
with open(sys.argv[2]) as f, open(sys.argv[3], "w") as out:
    for line in f:
        ex = vw.parse(line)
        vw.learn(ex)
        out.write(f"{ex.get_simplelabel_prediction()}\\n")
        vw.finish_example(ex)
vw.finish()
"""
"""VW's Python package one line at a time: no parser thread, so no pass ends (VW's parser
thread counts a pass done as soon as it reads the end of the input, ahead of the learner,
and svrg reads that count: VW's threaded runs race; its binary's ``--onethread`` does not,
and VW's suite lines 643 and 644, run that way, are sl's bytes: tests/data/vwsuite-match.txt)."""


@needs_vw
@pytest.mark.parametrize("args", ["--svrg -b 10", "--svrg --save_resume --loss_function "
                                  "logistic -q ab", "--svrg --noconstant --stage_size 3"])
def test_one_pass_and_its_model_are_vws(tmp_path: Path, args: str) -> None:
    """A first pass (the stable point's gradient, summed): VW's predictions and VW's model
    file byte for byte (its header's version and checksum aside)."""
    _data(tmp_path / "d.vw", 300, seed=len(args))
    subprocess.run([sys.executable, "-c", _PASS0, f"{args} -f vw.model", "d.vw", "vw.p"],
                   cwd=tmp_path, check=True, capture_output=True)  # fmt: skip
    r = _sl([*args.split(), "-d", "d.vw", "-f", "sl.model", "-r", "sl.p"], tmp_path)
    assert r.returncode == 0, r.stderr
    vw_p = [float(x) for x in (tmp_path / "vw.p").read_text().split()]
    sl_p = [float(ln.split()[0]) for ln in (tmp_path / "sl.p").read_text().splitlines()]
    assert sl_p == vw_p
    sl_m, vw_m = (tmp_path / "sl.model").read_bytes(), (tmp_path / "vw.model").read_bytes()
    from streamlearn.io import vwmodel

    hs, hv = vwmodel.read_header(sl_m), vwmodel.read_header(vw_m)
    assert (sorted(hs.options.split()), hs.bits) == (sorted(hv.options.split()), hv.bits)
    bs, bv = vwmodel.read_body(sl_m, hs, 1), vwmodel.read_body(vw_m, hv, 1)
    np.testing.assert_array_equal(bs.slots, bv.slots)
    assert bs.values.tobytes() == bv.values.tobytes()
    if bv.resume is not None:  # (VW's harness here ends no pass, and sl does not keep where
        # the next progress line was due: VW's --quiet never advances it)
        for key in ("current_pass", "dump_interval"):
            bs.resume.pop(key), bv.resume.pop(key)
        assert bs.resume == bv.resume


@needs_vw
def test_models_move_both_ways(tmp_path: Path) -> None:
    """sl's model of several stages scored by VW as by sl (``-t``: no pass is counted), and
    VW's read by sl."""
    _data(tmp_path / "d.vw", 300, seed=11)
    _data(tmp_path / "e.vw", 200, seed=12)
    args = ["--svrg", "-b", "10", "-l", "0.3", "--passes", "5", "-c", "-k", "--holdout_off"]
    r = _sl([*args, "-d", "d.vw", "-f", "sl.model"], tmp_path)
    assert r.returncode == 0, r.stderr
    subprocess.run([sys.executable, "-m", "vowpalwabbit", "-i", "sl.model", "-t", "-d", "e.vw",
                    "-p", "vw_of_sl.p", "--quiet"], cwd=tmp_path, check=True)  # fmt: skip
    r = _sl(["-i", "sl.model", "-t", "-d", "e.vw", "-p", "sl.p"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw_of_sl.p").read_bytes()
    assert any(float(x) != 0.0 for x in (tmp_path / "sl.p").read_text().split())
    subprocess.run([sys.executable, "-m", "vowpalwabbit", "-i", "sl.model", "-d", "e.vw",
                    "-f", "vw2.model", "--quiet"], cwd=tmp_path, check=True)  # fmt: skip
    subprocess.run([sys.executable, "-m", "vowpalwabbit", "-i", "vw2.model", "-t", "-d", "d.vw",
                    "-p", "vw2.p", "--quiet"], cwd=tmp_path, check=True)  # fmt: skip
    if "nan" in (tmp_path / "vw2.p").read_text():
        # VW's parser thread races svrg's pass count (docs/vw-compat.md); on a loaded machine
        # VW itself once wrote a model of NaNs here, which sl refuses to read (exit 5)
        pytest.skip("VW's own svrg model is not finite (its threads raced)")
    r = _sl(["-i", "vw2.model", "-t", "-d", "d.vw", "-p", "sl2.p"], tmp_path)
    if r.returncode == 5 and "non-finite numbers in its per-slot state" in r.stderr:
        # (the same race, its NaNs in the slots' state only: VW's -t predictions stay
        # finite, sl refuses the model as it refuses any non-finite one; seen once in a
        # loaded full run, session 35)
        pytest.skip("VW's own svrg model holds NaNs (its threads raced)")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl2.p").read_bytes() == (tmp_path / "vw2.p").read_bytes()


def test_sl_train_svrg_is_sl_vws(tmp_path: Path) -> None:
    """``sl train --svrg --svrg-stage-size 2`` is the same learner as ``sl vw --svrg
    --stage_size 2`` (VW's rate 0.5 by default; read as VW reads numbers, the same weights),
    and its model scores with ``sl predict`` as sl vw's."""
    _data(tmp_path / "d.vw", 200, seed=2)
    r = _sl(["--svrg", "--stage_size", "2", "--passes", "3", "--holdout_off", "-c", "-k",
             "-b", "10", "-d", "d.vw", "-f", "v.model"], tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = _sl(["--svrg", "--svrg-stage-size", "2", "--passes", "3", "--holdout-off", "-b", "10",
             "--cache", "c", "--numbers", "vw", "d.vw", "-f", "t.sl"], tmp_path,
            "train")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "svrg pass 2: taking steps" in r.stderr
    for name in ("v.model", "t.sl"):
        r = _sl(["-i", name, "d.vw", "-p", f"{name}.p"], tmp_path, "predict")
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "t.sl.p").read_text() == (tmp_path / "v.model.p").read_text()
    assert "0.851228714" in (tmp_path / "t.sl.p").read_text()  # (it learned)


def test_holdout_as_vws_svrg(tmp_path: Path) -> None:
    """With passes and a holdout, VW's svrg never ends a run early and keeps the last pass's
    model (its holdout summary and early termination are gd's, not set up under svrg), and its
    summary's loss is gd's best holdout loss, which stays 0: ``0.000000 h``."""
    _data(tmp_path / "d.vw", 300, seed=3)
    r = _sl(["--svrg", "--passes", "6", "-c", "-k", "-l", "0.01", "-d", "d.vw", "-f", "m.vw"],
            tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "passes used = 6" in r.stderr and "average loss = 0.000000 h" in r.stderr
    assert "svrg pass 5: taking steps" in r.stderr


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ("--svrg --adaptive", "--adaptive is gd's update rule"),
        ("--svrg --l2 0.1", "no regularizer"),
        ("--svrg --oaa 3", "runs alone"),
        ("--svrg --readable_model r.txt", "--readable_model with --svrg"),
        ("--svrg --stage_size 0", "at least 1"),
        ("--stage_size 2", "an option of --svrg"),
    ],
)
def test_refused_in_one_line(tmp_path: Path, args: str, why: str) -> None:
    _data(tmp_path / "d.vw", 10, seed=1)
    r = _sl([*args.split(), "-d", "d.vw"], tmp_path)
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
