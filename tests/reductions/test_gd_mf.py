"""``--rank k`` (:mod:`streamlearn.reductions.gd_mf`, :mod:`streamlearn.learners.gd_mf`):
the lazy kernel against a dense reference written from VW's ``gd_mf.cc`` (every weight
drawn at the start, O(d) per step), and against VW 9.11.9 on data of our own: progress,
``-p`` and model files byte for byte, models read by the other program; ``sl train --rank``
and the refusals."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.learners import gd_mf
from streamlearn.learners.losses import c_single
from streamlearn.system.libm import powf
from tests.reductions.test_lrq import _sl, _stderr, assert_models_move_both_ways, needs_vw

F32 = np.float32
EXPF = c_single("expf")
"""The C library's expf, as VW's (rounding math.exp's double differs in ~0.1% of arguments)."""
A, C = 0xEECE66D5DEECE66D, 2147483647


def _data(path: Path, n: int, seed: int) -> None:
    """Ratings: users and items (a user sometimes missing, an item sometimes twice), now
    and then a weight, an unlabeled line or a tag."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        u = " ".join(f"{rnd.randrange(40)}" for _ in range(rnd.choice([0, 1, 1, 1, 2])))
        it = " ".join(f"{rnd.randrange(60)}:{rnd.choice(['1', '0.5'])}"
                      for _ in range(rnd.choice([1, 1, 2])))  # fmt: skip
        label = "" if rnd.random() < 0.1 else str(rnd.randint(1, 5))
        if label and rnd.random() < 0.1:
            label += f" {rnd.choice(['0.5', '2', '0'])}"
        tag = f"'r{i}" if rnd.random() < 0.1 else ""
        lines.append(f"{label} {tag}|u {u} |i {it} |x f{rnd.randrange(3)}".strip())
    path.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# the dense reference: VW's gd_mf.cc, every weight drawn before the first example


def _dense_init(bits: int, rank: int) -> np.ndarray:
    ss = (2 * rank).bit_length()
    w = np.zeros((1 << bits, 2 * rank + 1), dtype=np.float32)
    for h in range(1 << bits):
        s = h << ss
        for c in range(2 * rank + 1):
            s = (A * s + C) & (2**64 - 1)
            w[h, c] = F32(0.1) * F32(((s >> 25) & 0x7FFFFF) / 2.0**23)
            s += 1
    return w


def _dense_run(w, examples, rank, pairs, eta, power_t, l2, t0=1.0):
    """(predictions, w) after VW's gd_mf over ``examples`` ([(y, a, [(ns, slot, x)])]),
    squared loss, no clipping range kept (labels bound it as VW's)."""
    lo = hi = F32(0.0)
    t = 0.0
    preds = []
    for y, a, feats in examples:
        lin = F32(0.0)
        for _, h, x in feats:
            lin = F32(lin + F32(x) * w[h, 0])
        p = F32(F32(0.0) + lin)
        sums = []
        for pa, pb in pairs:
            left_f = [(h, x) for ns, h, x in feats if ns == pa]
            right_f = [(h, x) for ns, h, x in feats if ns == pb]
            if not left_f or not right_f:
                continue
            for k in range(1, rank + 1):
                left = F32(0.0)
                for h, x in left_f:
                    left = F32(left + F32(x) * w[h, k])
                right = F32(0.0)
                for h, x in right_f:
                    right = F32(right + F32(x) * w[h, rank + k])
                p = F32(p + left * right)
                sums.append((left, right))
        lo, hi = min(lo, F32(y)), max(hi, F32(y))
        p = min(max(p, lo), hi)
        preds.append(p)
        fa = F32(a)
        rate = powf(F32(F32(t0 + t) + fa), power_t)
        eta_t = F32(F32(F32(eta) / rate) / F32(3)) * fa
        scale = F32(eta_t)
        if float(scale) < 1e-6:
            u = F32(F32(2.0) * F32(F32(y) - p) * scale)
        else:
            u = F32(F32(F32(y) - p) * F32(F32(1.0) - EXPF(F32(-2.0) * scale)))
        rho = F32(eta_t * F32(l2))

        def move(col, step, which=None, feats=feats, rho=rho):
            for ns, h, x in feats:
                if which is None or ns == which:
                    w[h, col] = F32(w[h, col] + F32(F32(step * F32(x)) - F32(rho * w[h, col])))

        move(0, u)
        for pa, pb in pairs:
            if not any(ns == pa for ns, _, _ in feats) or not any(ns == pb for ns, _, _ in feats):
                continue
            for k in range(1, rank + 1):
                move(k, F32(u * sums[k - 1][1]), pa)
            for k in range(1, rank + 1):
                move(rank + k, F32(u * sums[k - 1][0]), pb)
        t += a
    return preds, w


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("power_t", "l2"), [(0.0, 0.0), (0.5, 1e-3), (0.3, 0.0)])
def test_lazy_kernel_equals_the_dense_algorithm(seed: int, power_t: float, l2: float) -> None:
    """Random streams: the kernel (rows drawn when first read) gives the dense reference's
    predictions and, on every row, its weights (rows never read: the initial draws)."""
    rnd = np.random.default_rng(seed)
    bits, rank = 6, int(rnd.integers(1, 4))
    pairs = [(ord("u"), ord("i"))]
    examples = []
    for _ in range(80):
        feats = [(ord("u"), int(rnd.integers(64)), float(rnd.choice([1.0, 0.5])))
                 for _ in range(int(rnd.integers(0, 3)))]  # fmt: skip
        feats += [(ord("i"), int(rnd.integers(64)), 1.0) for _ in range(int(rnd.integers(1, 3)))]
        examples.append((float(rnd.integers(1, 6)), float(rnd.choice([1.0, 1.0, 2.0])), feats))
    eta = 0.1 if power_t == 0.0 else 1.0
    want_p, want_w = _dense_run(_dense_init(bits, rank), examples, rank, pairs, eta, power_t, l2)

    config = TrainConfig(bits=bits, learning_rate=eta, power_t=power_t, l2=l2,
                         quadratic=("ui",), stack=("--rank", str(rank)), adaptive=False,
                         normalized=False, invariant=False, initial_t=1.0,
                         constant=False)  # fmt: skip
    from streamlearn.reductions import gd_mf as reduction

    spec = reduction.spec(config)
    table = spec.new_table(bits)
    gstate = spec.init_gstate(config.params())
    indptr = np.cumsum([0] + [len(f) for _, _, f in examples]).astype(np.int64)
    indices = np.array([h for _, _, f in examples for _, h, _ in f], dtype=np.uint32)
    values = np.array([x for _, _, f in examples for _, _, x in f], dtype=np.float64)
    ns = np.array([n for _, _, f in examples for n, _, _ in f], dtype=np.uint8)
    from streamlearn.learners.base import new_rows, new_stats

    n = len(examples)
    preds = np.zeros(n)
    spec.train_batch(table, gstate, config.params(), config.loss_id, indptr, indices, values,
                     np.array([y for y, _, _ in examples]), np.array([a for _, a, _ in examples]),
                     np.zeros(n), np.zeros(n, dtype=np.int32), new_stats(), new_rows(), preds,
                     ns)  # fmt: skip
    assert preds.astype(np.float32).tolist() == [float(p) for p in want_p]
    gd_mf.draw_all(table, gd_mf.stride_shift(rank))
    np.testing.assert_array_equal(table[:, : 2 * rank + 1], want_w)


def test_vw_generator_state_after_set_up() -> None:
    """The --random_seed a model keeps: VW's generator after 2^b draws (checked against
    VW 9.11.9's model files: seed 0 and 5 at 4 bits, 0 at 6, and a model of a model)."""
    assert gd_mf.random_state(0, 4) == 9179422484841000272
    assert gd_mf.random_state(5, 4) == 9015157422837364885
    assert gd_mf.random_state(0, 6) == 11342404986078326080
    assert gd_mf.random_state(gd_mf.random_state(0, 4), 4) == 11543710234158747296


CASES = [
    "--rank 3 -q ui -b 10",
    "--rank 2 -q ui -q ux -b 8",
    "--rank 1 -q uu -b 9 -l 0.5 --power_t 0.3",
    "--rank 4 -q iu --l2 1e-3 -b 10 --loss_function classic",
    "--rank 2 -q ui -b 10 --passes 3 -c -k --decay_learning_rate 0.9",
    "--rank 2 -q ui -b 10 --passes 2 -c -k --holdout_off --initial_t 4",
    "--rank 5 -b 7",
    "--rank 2 -q xu -q ui -q ix -q iu -b 10",  # VW's order: sorted, each unordered pair once
]


@needs_vw
@pytest.mark.parametrize("args", CASES)
def test_rank_is_vws_byte_for_byte(tmp_path: Path, args: str) -> None:
    """Progress, -p and the model file: VW's bytes (the model's version and checksum aside:
    sl writes 9.0.0's header)."""
    _data(tmp_path / "d.vw", 400, seed=len(args))
    outs = "-d d.vw -p {0}.p -f {0}.model"
    code = "import sys\nfrom vowpalwabbit import Workspace\nWorkspace(sys.argv[1]).finish()\n"
    import subprocess
    import sys

    vw_err = subprocess.run([sys.executable, "-c", code, f"{args} {outs.format('vw')}"],
                            cwd=tmp_path, capture_output=True, text=True).stderr  # fmt: skip
    for f in tmp_path.glob("d.vw.cache*"):
        f.unlink()
    r = _sl([*args.split(), *outs.format("sl").split()], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    assert _stderr(r.stderr, "sl.") == _stderr(vw_err, "vw.")
    sl_m, vw_m = (tmp_path / "sl.model").read_bytes(), (tmp_path / "vw.model").read_bytes()
    from streamlearn.io import vwmodel

    hs, hv = vwmodel.read_header(sl_m), vwmodel.read_header(vw_m)
    assert (hs.options, hs.min_label, hs.max_label, hs.bits) == (
        hv.options, hv.min_label, hv.max_label, hv.bits)  # fmt: skip
    assert sl_m[hs.end :] == vw_m[hv.end :]


@needs_vw
def test_models_move_both_ways(tmp_path: Path) -> None:
    """VW's model scored and continued by sl, sl's by VW: the same predictions."""
    _data(tmp_path / "d.vw", 300, seed=11)
    _data(tmp_path / "e.vw", 200, seed=12)
    assert_models_move_both_ways(tmp_path, "--rank 3 -q ui -b 10 -l 0.3")


def test_sl_train_rank_continues_exactly(tmp_path: Path) -> None:
    """``sl train --rank``: two passes in one run and one pass continued from sl's model
    give the same predictions on the second pass; ``sl predict`` scores as the model's
    learner does."""
    _data(tmp_path / "d.vw", 200, seed=2)
    base = ["--rank", "2", "-q", "ui", "-b", "9", "--holdout-off"]
    r = _sl([*base, "d.vw", "-f", "one.sl"], tmp_path, "train")
    assert r.returncode == 0, r.stderr
    r = _sl([*base, "-i", "one.sl", "d.vw", "-p", "cont.p", "-f", "two.sl"], tmp_path, "train")
    assert r.returncode == 0, r.stderr
    r = _sl([*base, "--passes", "2", "d.vw", "-f", "both.sl", "--cache", "c"], tmp_path,
            "train")  # fmt: skip
    assert r.returncode == 0, r.stderr
    for name in ("two.sl", "both.sl"):
        r = _sl(["-i", name, "d.vw", "-p", f"{name}.p"], tmp_path, "predict")
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "two.sl.p").read_bytes() == (tmp_path / "both.sl.p").read_bytes()


@needs_vw
@pytest.mark.parametrize("args", ["--rank 2 -q ui -b 8", "--rank 3 -b 7", "--rank 1 -q uu -q ix"])
def test_audit_is_vws(tmp_path: Path, args: str) -> None:
    """``--audit``: each prediction and tag, the features in the example's order with VW's
    index (hash times stride) and slot, then each pair's latent weights and products, as
    VW's gd_mf prints them before it learns (rows no example read: their initial draws)."""
    _data(tmp_path / "d.vw", 60, seed=9)
    code = "import sys\nfrom vowpalwabbit import Workspace\nWorkspace(sys.argv[1]).finish()\n"
    import subprocess
    import sys

    want = subprocess.run([sys.executable, "-c", code, f"{args} --audit -d d.vw --quiet"],
                          cwd=tmp_path, capture_output=True).stdout  # fmt: skip
    r = _sl([*args.split(), "--audit", "-d", "d.vw", "--quiet"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.encode() == want


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ("--rank 2 -q ui --adaptive", "adaptive is not implemented"),
        ("--rank 2 --cubic uix", "pairs only"),
        ("--rank 2 -q u:", "no wildcard"),
        ("--rank 2 -q ui --oaa 3", "runs alone"),
        ("--rank 2 -q ui --readable_model r.txt", "--readable_model with --rank"),
        ("--rank 0", "at least 1"),
    ],
)
def test_refused_in_one_line(tmp_path: Path, args: str, why: str) -> None:
    _data(tmp_path / "d.vw", 10, seed=1)
    r = _sl([*args.split(), "-d", "d.vw"], tmp_path)
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_vw_model_cut_short_is_refused(tmp_path: Path) -> None:
    """VW writes every row of a --rank model: a file with fewer (a disk that filled, a copy
    cut short) is refused naming the file, not read as random weights (exit 5)."""
    from streamlearn.io import vwmodel

    _data(tmp_path / "d.vw", 50, seed=4)
    r = _sl(["--rank", "2", "-q", "ui", "-b", "6", "-d", "d.vw", "-f", "m.vw"], tmp_path)
    assert r.returncode == 0, r.stderr
    data = (tmp_path / "m.vw").read_bytes()
    end = vwmodel.read_header(data).end
    (tmp_path / "cut.vw").write_bytes(data[: end + 20 * (8 + 4 * 5)])  # 20 whole rows of 64
    r = _sl(["-i", "cut.vw", "-t", "-d", "d.vw"], tmp_path)
    assert r.returncode == 5 and "cut.vw" in r.stderr and "cut short (20 of 64 rows)" in r.stderr
