"""VW's ``--baseline`` (:mod:`streamlearn.learners.baseline`; the reduction's options in
:mod:`streamlearn.reductions.baseline`).

The kernel against a dense reference -- ``baseline.cc`` over the tests' dense VW gd
(``tests/reference``): the whole line predicted, the constant learned alone at a multiplied
rate, the rest from the baseline's prediction -- on random streams; then ``sl vw`` beside
VW 9.11.9 on data of our own, and models both ways.
"""

from __future__ import annotations

import random
import subprocess

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.learners import gd
from streamlearn.learners.base import new_rows, new_stats
from streamlearn.learners.losses import SQUARED
from streamlearn.reductions import baseline as reduction
from streamlearn.run.runner import run_kernel
from tests import unix
from tests.reference import VWClassesGD
from tests.streams import Stream
from tests.unix import SL_VW, VW_MODULE

F = np.float32
CONSTANT = 11650396 % 64


def stream(seed: int, n: int = 150, d: int = 64, constant: bool = True) -> Stream:
    rng = random.Random(seed)
    ptr, idx, val, lab, wt = [0], [], [], [], []
    for i in range(n):
        for j in rng.sample([k for k in range(d) if k != CONSTANT], rng.randint(0, 5)):
            idx.append(j)
            val.append(float(F(rng.uniform(-2.0, 2.0))))
        if constant:
            idx.append(CONSTANT)
            val.append(1.0)
        ptr.append(len(idx))
        lab.append(np.nan if i % 17 == 5 else round(rng.uniform(-3.0, 8.0), 2))
        wt.append(0.0 if i % 13 == 6 else rng.choice([1.0, 0.5, 2.0]))
    return Stream(np.array(ptr, dtype=np.int64), np.array(idx, dtype=np.uint32),
                  np.array(val, dtype=np.float32), np.array(lab), np.array(wt),
                  np.array([0.25 if i % 5 == 0 else 0.0 for i in range(n)]),
                  np.zeros(n, dtype=np.int64), d)  # fmt: skip


def reference(s: Stream, multiplier: float = 1.0, constant: bool = True):  # noqa: ANN201
    """baseline.cc over VW's gd (squared loss): (predictions, weights)."""
    g = VWClassesGD(s.d, SQUARED, 1)
    eta = g.eta
    preds = np.empty(s.n)

    def learn(idx, x, base, y, a):  # noqa: ANN001, ANN202
        p = F(g.clip(g.score(0, base, idx, x)))
        if len(idx):
            g.step(0, idx, x, p, y, a)
        elif F(p - F(y)) != 0:  # (no feature: gd's sums take the example)
            g.models[0].W += float(F(a))
        return p

    for i in range(s.n):
        idx, x = s.row(i)
        idx = idx.astype(np.int64)
        y, a = s.labels[i], s.weights[i]
        # VW's driver predicts first (shown: the range before the label), then its scorer
        # widens the range and the reduction learns
        preds[i] = g.clip(g.score(0, s.bases[i], idx, x))
        if y == y:
            g.widen(y)
        if not (y == y and a > 0):
            continue
        g.shared["T"] += a
        cut = len(idx) - 1 if constant else len(idx)
        mult = F(multiplier) if multiplier else F(min(max(F(1e-4), F(max(abs(g.lo), abs(g.hi)))),
                                                      F(1000.0)))  # fmt: skip
        g.eta = F(eta * mult)
        pb = learn(idx[cut:], x[cut:], 0.0, y, a)
        g.eta = eta
        learn(idx[:cut], x[:cut], float(pb), y, a)
    return preds, g.weights()[0]


def run(s: Stream, words: tuple[str, ...], constant: bool = True, chunks: int = 2):  # noqa: ANN201
    config = TrainConfig(stack=("--baseline", *words), bits=6, numbers="vw", constant=constant)
    spec = reduction.spec(config)
    params = config.params()
    table = spec.new_table(6)
    gstate = spec.init_gstate(params)
    stats, rows_ = new_stats(), new_rows()
    preds = np.empty(s.n)
    cuts = np.linspace(0, s.n, chunks + 1).astype(int)
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        preds[lo:hi] = run_kernel(spec.train_batch, table, gstate, params, SQUARED,
                                  s.slice(lo, hi), stats, rows_, 0)  # fmt: skip
    w = np.empty(s.d)
    gd.SPEC.current_weights(table, gstate, params, np.arange(s.d, dtype=np.uint32), w)
    return preds, w


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("words", "multiplier", "constant"), [
    ((), 1.0, True), (("--lr_multiplier", "0"), 0.0, True), (("--lr_multiplier", "3"), 3.0, True),
    ((), 1.0, False),
])  # fmt: skip
def test_the_kernel_is_vw_s_baseline_over_its_gd(seed, words, multiplier, constant):
    s = stream(seed, constant=constant)
    want_p, want_w = reference(s, multiplier, constant)
    got_p, got_w = run(s, words, constant, chunks=1 + seed % 3)
    # (a few float32 ulps apart now and then: the reference's gd rounds a step's last bits
    # its own way; sl vw gives VW's digits below)
    np.testing.assert_allclose(got_p, want_p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ beside VW 9.11.9


def _data(path, n: int = 300, seed: int = 5, binary: bool = False) -> None:  # noqa: ANN001
    r = random.Random(seed)
    lines = []
    for i in range(n):
        x = {f"f{j}": round(r.uniform(-1, 1), 3) for j in r.sample(range(15), 4)}
        y = round(40 + 3 * x.get("f1", 0) - 2 * x.get("f2", 0) + r.gauss(0, 0.5), 3)
        if binary:
            y = 1 if y > 40 else -1
        label = "" if i % 23 == 7 else f"{y} 0" if i % 19 == 3 else f"{y}"
        lines.append(f"{label} |a " + " ".join(f"{k}:{v}" for k, v in x.items()))
    path.write_text("\n".join(lines) + "\n")


def run_module(prog: list[str], args: list[str], cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    return unix.run_module(prog, args, cwd, timeout=600)  # (a first run compiles)


@pytest.mark.parametrize("opts", [
    [], ["--lr_multiplier", "0"], ["--lr_multiplier", "0.5", "--sgd"],
    ["--loss_function", "logistic"], ["--noconstant"], ["-c", "-k", "--passes", "3"],
])  # fmt: skip
def test_sl_vw_gives_vw_s_numbers_and_models(tmp_path, opts):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt", binary="logistic" in opts)
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        r = run_module(prog, ["--baseline", "-d", "d.txt", *opts, "-p", f"{tag}.p", "-f",
                              f"{tag}.m"], tmp_path)  # fmt: skip
        out[tag] = [ln for ln in r.stderr.splitlines() if ln.startswith("average loss")]
        (tmp_path / "d.txt.cache").unlink(missing_ok=True)
    assert out["sl"] == out["vw"] and out["sl"]
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()
    four = unix.scored_both_ways("d.txt", tmp_path)
    assert len(set(four.values())) == 1, four


@pytest.mark.parametrize(("args", "said"), [
    (["--baseline", "--global_only"], "--global_only"),
    (["--baseline", "--check_enabled"], "--check_enabled"),
    (["--baseline", "-q", "aa"], "-q"),
    (["--baseline", "--oaa", "2"], "--oaa"),
    (["--baseline", "--cb_explore_adf"], "contextual bandits"),
    (["--baseline", "--lr_multiplier", "x"], "--lr_multiplier"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    _data(tmp_path / "d.txt", n=5)
    unix.refused(["-d", "d.txt", *args], tmp_path, said)
