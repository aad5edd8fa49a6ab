"""VW's ``--confidence`` (:mod:`streamlearn.learners.confidence`; the reduction's options in
:mod:`streamlearn.reductions.confidence`).

The kernel against a dense reference -- ``confidence.cc`` over the tests' dense VW gd
(``tests/reference``) with gd's stateless sensitivity written from ``gd.cc``
(``get_pred_per_update``: the example's rates as a learn would make them, nothing moved) --
then ``sl vw`` beside VW 9.11.9 on data of our own: ``-p`` with its confidences (labeled,
unlabeled, weight 0 and 2.5; before and after training; three losses), ``-t`` (VW sets
nothing up), and models both ways.
"""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.learners.base import new_rows, new_stats
from streamlearn.learners.losses import SQUARED
from streamlearn.reductions import confidence as reduction
from streamlearn.run.runner import run_kernel
from tests import unix
from tests.reference import VWClassesGD
from tests.streams import Stream
from tests.unix import SL_VW, VW_MODULE

F = np.float32
X2_MIN = F(1.084202e-19) * F(1.084202e-19)


def stream(seed: int, n: int = 120, d: int = 64) -> Stream:
    rng = random.Random(seed)
    ptr, idx, val, lab, wt = [0], [], [], [], []
    for i in range(n):
        for j in rng.sample(range(d), rng.randint(1, 6)):
            idx.append(j)
            val.append(float(F(rng.uniform(-2.0, 2.0))))
        ptr.append(len(idx))
        lab.append(np.nan if i % 11 == 4 else rng.choice([-1.0, 0.5, 1.0]))
        wt.append(0.0 if i % 13 == 6 else rng.choice([1.0, 2.5]))
    return Stream(np.array(ptr, dtype=np.int64), np.array(idx, dtype=np.uint32),
                  np.array(val, dtype=np.float32), np.array(lab), np.array(wt),
                  np.zeros(n), np.zeros(n, dtype=np.int64), d)  # fmt: skip


def sensitivity(g: VWClassesGD, idx, x, p: F, y: F, a: F) -> F:  # noqa: ANN001
    """gd's stateless sensitivity under VW's default rates (adaptive, normalized, power_t
    0.5), as ``gd.cc`` computes it, from the reference's dense state."""
    mod = g.models[0]
    gamma = F(a * F(4.0) * (p - y) * (p - y))
    ppu, nx = F(0.0), F(0.0)
    for j, xj in zip(idx, x, strict=True):
        x2 = max(F(xj * xj), X2_MIN)
        big = F(mod.G[j] + gamma * x2)
        m = max(mod.m[j], abs(F(xj)))
        nx = F(nx + x2 / (m * m))
        with np.errstate(divide="ignore"):  # (an infinite gradient: a rate of 0)
            ppu = F(ppu + x2 * F(F(F(1.0) / F(np.sqrt(big))) * F(F(1.0) / m)))
    nsnx = F(F(mod.S) + a * nx)
    tw = F(F(mod.W) + a)
    mult = F(np.sqrt(F(tw / nsnx)))
    g.shared["mu"] = mult  # (VW sets its update multiplier here too)
    return F(g.eta * F(ppu * mult))


def reference(s: Stream, after: bool):  # noqa: ANN201
    """confidence.cc over VW's gd (squared loss): (predictions, confidences)."""
    g = VWClassesGD(s.d, SQUARED, 1)
    preds, confs = np.empty(s.n), np.empty(s.n)
    for i in range(s.n):
        idx, x = s.row(i)
        y, a = s.labels[i], F(s.weights[i])
        labeled = y == y
        if labeled:
            g.widen(y)  # VW's scorer, before
        p = F(g.clip(g.score(0, 0.0, idx.astype(np.int64), x)))
        ask = F(y) if labeled else (F(-1.0) if p > 0 else F(1.0))
        if not after:  # (a labeled example's prediction is not made yet: 0)
            sens = sensitivity(g, idx, x, F(0.0) if labeled else p, ask, a)
        if labeled and a > 0:
            g.shared["T"] += float(a)
            g.step(0, idx.astype(np.int64), x, p, y, a)
        if after:
            sens = (sensitivity(g, idx, x, p, F(y), a) if labeled
                    else F(g.eta * F(0.0)))  # (an infinite gradient: no rate left)  # fmt: skip
        with np.errstate(divide="ignore", invalid="ignore"):
            preds[i], confs[i] = p, F(abs(p)) / F(sens)
    return preds, confs


def run(s: Stream, after: bool, chunks: int = 2):  # noqa: ANN201
    words = ("--confidence", *(("--confidence_after_training",) if after else ()))
    config = TrainConfig(stack=words, bits=6, numbers="vw")
    spec = reduction.spec(config)
    params = config.params()
    table = spec.new_table(6)
    gstate = spec.init_gstate(params)
    stats, rows_ = new_stats(), new_rows()
    preds, confs = np.empty(s.n), np.empty(s.n)
    cuts = np.linspace(0, s.n, chunks + 1).astype(int)
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        out = run_kernel(spec.train_batch, table, gstate, params, SQUARED, s.slice(lo, hi),
                         stats, rows_, 0, bounds=True)  # fmt: skip
        preds[lo:hi], confs[lo:hi] = out[: hi - lo], out[hi - lo : 2 * (hi - lo)]
    return preds, confs


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("after", [False, True])
def test_the_kernel_is_vw_s_confidence_over_its_gd(seed, after):
    s = stream(seed)
    want_p, want_c = reference(s, after)
    got_p, got_c = run(s, after, chunks=1 + seed % 3)
    # (a few float32 ulps apart now and then: the reference's gd rounds a step's last bits
    # its own way; sl vw gives VW's digits below)
    np.testing.assert_allclose(got_p, want_p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_c, want_c, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ beside VW 9.11.9


def _data(path, n: int = 200, seed: int = 3) -> None:  # noqa: ANN001
    """Labels ±1, some unlabeled lines, some of weight 0 or 2.5 (fewer than 256 lines: VW's
    example objects are all fresh, see the kernel's module)."""
    r = random.Random(seed)
    lines = []
    for i in range(n):
        feats = " ".join(f"f{j}:{r.uniform(-1, 1):.3f}" for j in r.sample(range(20), 5))
        y = r.choice(["1", "-1"])
        y = "" if i % 17 == 3 else y + " 0" if i % 13 == 5 else y + " 2.5" if i % 7 == 2 else y
        lines.append(f"{y} |a {feats} |b t{r.randrange(4)}")
    path.write_text("\n".join(lines) + "\n")


def run_module(prog: list[str], args: list[str], cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    return unix.run_module(prog, args, cwd, timeout=600)  # (a first run compiles)


@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge"])
@pytest.mark.parametrize("after", [[], ["--confidence_after_training"]])
def test_sl_vw_gives_vw_s_confidences(tmp_path, loss, after):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt")
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        r = run_module(prog, ["--confidence", *after, "-d", "d.txt", "--loss_function", loss,
                              "-p", f"{tag}.p", "-f", f"{tag}.m"], tmp_path)  # fmt: skip
        out[tag] = [ln for ln in r.stderr.splitlines() if ln.startswith("average loss")]
    assert out["sl"] == out["vw"] and out["sl"]
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()
    # -t: VW sets no confidence up (it warns), and each scores with the other's model
    four = unix.scored_both_ways("d.txt", tmp_path)
    assert len(set(four.values())) == 1, four
    assert " " not in next(iter(four.values())).splitlines()[0].strip()


def test_confidence_after_training_alone_stacks_nothing(tmp_path):
    _data(tmp_path / "d.txt", n=20)
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", "-d", "d.txt",
                        "--confidence_after_training", "-p", "p"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "confidence" not in r.stderr
    assert len((tmp_path / "p").read_text().splitlines()[0].split()) == 1


@pytest.mark.parametrize(("args", "said"), [
    (["--confidence", "--oaa", "2"], "--oaa"),
    (["--confidence", "--audit"], "--audit"),
    (["--confidence", "--ftrl"], "--ftrl"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    _data(tmp_path / "d.txt", n=5)
    unix.refused(["-d", "d.txt", *args], tmp_path, said)
