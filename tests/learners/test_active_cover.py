"""VW's ``--active_cover`` (:mod:`streamlearn.learners.active_cover`; the reduction's options in
:mod:`streamlearn.reductions.active_cover`).

The kernel against a dense reference: ``active_cover.cc`` stated plainly over the tests'
dense VW gd (``tests/reference``: K models with their own normalizer sums), VW's generator
written out, VW's scorer and driver around it (predict first unless ``--binary``, the range
widened before learning, the loss a skipped example keeps from that first predict), on
random streams with unlabeled rows, importance weights and weight-0 rows, squared and
logistic loss, several covers, ``--oracular``; then ``sl vw`` beside VW 9.11.9 on data of
our own: loss, ``-p``, ``total queries``, models both ways, and one-line refusals.
"""

from __future__ import annotations

import math
import random
import subprocess

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.learners import active_cover as ac
from streamlearn.learners.base import S_LOSS, S_WLAB, new_rows, new_stats
from streamlearn.learners.bootstrap import GD
from streamlearn.learners.losses import LOGISTIC, SQUARED, logf
from streamlearn.reductions import active_cover as reduction
from streamlearn.run.runner import run_kernel
from streamlearn.system.libm import powf
from tests import unix
from tests.reference import VWClassesGD, vw_loss_terms
from tests.streams import Stream
from tests.unix import SL_VW, VW_MODULE

F = np.float32
BITS = 12
FLT_MAX = 3.4028234663852886e38


def stream(seed: int, n: int = 200, logistic: bool = False, hot: int = 24) -> Stream:
    """Rows of 1-6 features among ``hot`` slots (each copy's slot stays apart from the others'
    in a table of 2^12 with up to 64 copies), labels ±1 (``logistic``) or in [-1.5, 2], some
    unlabeled, some of weight 0 or 2."""
    rng = random.Random(seed)
    ptr, idx, val, lab, wt = [0], [], [], [], []
    for _ in range(n):
        for j in rng.sample(range(hot), rng.randint(1, 6)):
            idx.append(j)
            val.append(float(F(rng.uniform(-2.0, 2.0))))
        ptr.append(len(idx))
        y = rng.choice([-1.0, 1.0]) if logistic else round(rng.uniform(-1.5, 2.0), 3)
        lab.append(np.nan if rng.random() < 0.05 else y)
        wt.append(0.0 if rng.random() < 0.04 else rng.choice([1.0, 1.0, 1.0, 2.0]))
    n = len(lab)
    return Stream(np.array(ptr, dtype=np.int64), np.array(idx, dtype=np.uint32),
                  np.array(val, dtype=np.float32), np.array(lab), np.array(wt), np.zeros(n),
                  np.zeros(n, dtype=np.int64), hot)  # fmt: skip


class Merand48:
    """VW's generator (``merand48``): a 64-bit LCG; its float is 23 bits of the state after
    the step, as the mantissa of a number in [1, 2), less 1."""

    def __init__(self, seed: int = 0) -> None:
        self.s = seed

    def __call__(self) -> F:
        self.s = (0xEECE66D5DEECE66D * self.s + 2147483647) & ((1 << 64) - 1)
        bits = ((self.s >> 25) & 0x7FFFFF) | 0x3F800000
        return F(np.array([bits], dtype=np.uint32).view(np.float32)[0] - F(1.0))


class CoverGD(VWClassesGD):
    """The tests' dense gd with VW's rate on its default path, ``1/sqrt(G) · 1/m`` (the
    reference's power of G is an ulp away now and then, which the cover's sign tests and
    learned weights would carry on)."""

    def _rate(self, mod, j):  # noqa: ANN001, ANN202
        if not (self.adaptive and self.normalized):
            return super()._rate(mod, j)
        return F(1.0) / F(math.sqrt(mod.G[j])) * (F(1.0) / mod.m[j])


def sign(x) -> F:  # noqa: ANN001
    return F(-1.0) if x <= 0 else F(1.0)


def sensitivity(g: VWClassesGD, idx, x, p, y, a) -> F:  # noqa: ANN001
    """gd's stateless sensitivity of model 0: the rate of an update of weight 1 times how far
    one unit moves the prediction, from the sums a learn of (p, y, a) would make; VW keeps
    the normalizer μ it computes.  Plain updates: the rate at the clock ``t0 + T + 1`` times
    the example's Σ x²."""
    mod = g.models[0]
    if not g.adaptive:
        total = F(0.0)
        for xj in x:
            total = total + xj * xj
        return g.eta * g.A.pow(F(F(g.t0) + g.shared["T"] + 1.0), -g.q) * total
    gamma = F(a) * vw_loss_terms(g.A, g.loss_id, F(p), F(y))[2]
    ppu, nx = F(0.0), F(0.0)
    for j, xj in zip(idx, x, strict=True):
        x2 = max(xj * xj, F(1.084202e-19) * F(1.084202e-19))
        ax = F(math.sqrt(x2)) if x2 > xj * xj else abs(xj)
        G = mod.G[j] + gamma * x2
        m = max(mod.m[j], ax)
        nx = nx + x2 / (m * m)
        with np.errstate(divide="ignore"):  # (a prediction on its label: γ 0, a rate of inf)
            ppu = ppu + x2 * (F(1.0) / F(math.sqrt(G)) * (F(1.0) / m))
    nsnx = F(mod.S) + F(a) * nx
    tw = F(mod.W) + F(a)
    g.shared["mu"] = F(math.sqrt(tw / nsnx))
    return g.eta * (ppu * g.shared["mu"])


def reference(s: Stream, loss_id: int, cover: int = 12, c0: float = 8.0, alpha: float = 1.0,
              beta: float = float(F(math.sqrt(10.0))), oracular: bool = False,
              binary: bool = False, rule: dict | None = None):  # fmt: skip
    """``active_cover.cc`` over VW's gd (its default rates, or ``rule``: :data:`SGD`), as VW's
    driver runs it: (the predictions shown, copy 0's weights, the loss sum, the weight sum,
    the queries)."""
    k = 1 if oracular else cover + 1
    g = CoverGD(s.d, loss_id, k, **(rule or {}))
    c0, alpha, beta2 = F(c0), F(alpha), F(beta) * F(beta)
    lam_n = [F(0.0)] * (k - 1)
    lam_d = [F(0.125)] * (k - 1)
    rng = Merand48()
    t_vw = float(F(g.t0))  # (VW's clock starts at --initial_t)
    sum_loss = weighted = 0.0
    queries = 0
    shown = np.empty(s.n)

    def pred(c, idx, x):  # noqa: ANN001, ANN202
        return F(g.clip(g.score(c, 0.0, idx, x)))

    def learn(c, idx, x, y, a, before):  # noqa: ANN001, ANN202
        if a == 0:
            return  # (gd's learn of weight 0 changes nothing)
        g.shared["T"] = before + float(a)
        g.step(c, idx, x, pred(c, idx, x), y, a)

    for i in range(s.n):
        idx, x = s.row(i)
        x = x.astype(np.float32)
        y, a = s.labels[i], F(s.weights[i])
        labeled = y == y
        first = pred(0, idx, x)  # VW's driver predicts first (no --binary), then learns
        if labeled:
            g.widen(y)  # VW's scorer: the range widens with the label
        p = pred(0, idx, x)
        shown[i] = p if binary else first
        if not (labeled and a > 0):
            t_vw += float(a)
            continue
        yf = F(y)
        t = F(t_vw)
        before = g.shared["T"]
        width, pmin = F(1.0), F(1.0)
        if t >= 3:
            avg = F(sum_loss) / t
            width = F(math.sqrt(c0 * avg / t)) + max(F(2.0) * alpha, F(4.0)) * c0 * logf(t) / t
        if t > 2:
            pmin = min(F(1.0) / (F(math.sqrt(t * (F(sum_loss) / t))) + logf(t)), F(0.5))
        early = t_vw + float(a) <= 3.0
        in_dis = early or (abs(p) / sensitivity(g, idx, x, p, yf, a)) / t <= width
        if early:
            imp = F(1.0)
        elif not in_dis:
            imp = F(-1.0)
        elif oracular:
            imp = F(1.0)
        else:
            q2 = F(4.0) * pmin * pmin
            for c in range(1, k):
                q2 += F(sign(pred(c, idx, x)) != sign(p)) * (lam_n[c - 1] / lam_d[c - 1])
            prob = F(math.sqrt(q2)) / (F(1.0) + F(math.sqrt(q2)))
            imp = F(1.0) / prob if rng() <= prob else F(-1.0)
        if not in_dis:
            y_out, w_out = sign(p), a
        elif imp > 0:
            queries += 1
            y_out, w_out = yf, a * imp
        else:
            y_out, w_out = None, F(0.0)
        if y_out is not None:
            learn(0, idx, x, y_out, w_out, before)
        q2 = F(4.0) * pmin * pmin
        r = F(2.0) * width * t * alpha / c0 / beta2
        ip = max(imp, F(0.0))
        cost = r * ip * F(sign(p) != sign(yf)) if in_dis else F(0.0)
        delta = F(0.0) if in_dis else -r
        for c in range(1, k):
            if in_dis:
                prob = F(math.sqrt(q2)) / (F(1.0) + F(math.sqrt(q2)))
                delta = F(2.0) * cost - r * ip - (F(2.0) * alpha * alpha - F(1.0) / prob)
            yc = F(-1.0) * sign(delta) * sign(p)
            learn(c, idx, x, yc, a * abs(delta), before)
            d = F(sign(pred(c, idx, x)) != sign(p))
            lam_n[c - 1] = max(lam_n[c - 1] + F(2.0) * d * delta, F(0.0))
            lam_d[c - 1] += (d if in_dis else F(0.0)) / powf(q2, F(1.5))
            q2 += d * (lam_n[c - 1] / lam_d[c - 1])
        g.shared["T"] = before
        if y_out is None:  # skipped: unlabeled of weight 0 (the first predict's loss stays)
            if not binary:
                sum_loss += float(vw_loss_terms(g.A, loss_id, F(first), yf)[0] * a)
        else:
            g.shared["T"] = before + float(w_out)
            lv = vw_loss_terms(g.A, loss_id, p, y_out)[0] * w_out
            if binary:
                lv = F(0.0) if sign(p) == y_out else w_out
            sum_loss += float(lv)
            weighted += float(w_out)
        t_vw += float(w_out)
    return shown, g.weights()[0], sum_loss, weighted, queries


def run(s: Stream, words: tuple[str, ...], loss_id: int, chunks: int = 3, **config):  # noqa: ANN003
    config = TrainConfig(stack=("--active_cover", *words), bits=BITS, numbers="vw",
                         **{"initial_t": 0.0, **config})  # fmt: skip
    spec = reduction.spec(config)
    params = config.params()
    table = spec.new_table(BITS)
    gstate = spec.init_gstate(params)
    stats, rows_ = new_stats(), new_rows()
    preds = np.empty(s.n)
    cuts = np.linspace(0, s.n, chunks + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        preds[a:b] = run_kernel(spec.train_batch, table, gstate, params, loss_id,
                                s.slice(a, b), stats, rows_, 0)  # fmt: skip
    opts = reduction.read(config.stack)
    step = 1 << opts.policies.bit_length()
    w = np.empty(s.d)
    GD.current_weights(table, gstate, params, (np.arange(s.d) * step).astype(np.uint32), w)
    return preds, w, stats, ac.queries(gstate, opts.policies)


CASES = [
    ((), {}),
    (("--cover", "3", "--mellowness", "2", "--alpha", "0.5"), {"cover": 3, "c0": 2.0,
                                                              "alpha": 0.5}),
    (("--cover", "1", "--beta_scale", "2", "--mellowness", "0.3"), {"cover": 1, "beta": 2.0,
                                                                   "c0": 0.3}),
    (("--oracular",), {"oracular": True}),
    (("--cover", "0", "--alpha", "3"), {"cover": 0, "alpha": 3.0}),
]  # fmt: skip


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("words", "options"), CASES)
@pytest.mark.parametrize("logistic", [False, True])
def test_the_kernel_is_vw_s_active_cover_over_its_gd(seed, words, options, logistic):
    s = stream(seed, logistic=logistic)
    loss_id = LOGISTIC if logistic else SQUARED
    want_p, want_w, want_loss, want_wt, want_q = reference(s, loss_id, binary=logistic,
                                                           **options)  # fmt: skip
    got_p, got_w, stats, got_q = run(s, words, loss_id, chunks=1 + seed % 3, binary=logistic,
                                     loss="logistic" if logistic else "squared")  # fmt: skip
    assert got_q == want_q
    np.testing.assert_allclose(got_p, want_p, rtol=2e-6, atol=5e-7)
    # (weights of a few hundredths carry the reference's ulps: its normalizer is a power)
    np.testing.assert_allclose(got_w, want_w, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(stats[S_LOSS], want_loss, rtol=2e-6)
    np.testing.assert_allclose(stats[S_WLAB], want_wt, rtol=2e-6)


SGD = {"adaptive": False, "normalized": False, "invariant": False, "t0": 1.0, "eta0": 0.5}
"""VW's ``--sgd`` (its t0 1, from which its clock starts) in the reference's words."""


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("words", "options"), CASES[:3])
def test_over_plain_updates_the_clock_is_vw_s(seed, words, options):
    """``--sgd``: every copy's rate follows VW's clock (the weight learned before the example,
    plus the copy's own weight), and the sensitivity the clock plus 1."""
    s = stream(10 + seed)
    want_p, want_w, want_loss, want_wt, want_q = reference(s, SQUARED, rule=SGD, **options)
    got_p, got_w, stats, got_q = run(s, words, SQUARED, chunks=2, adaptive=False,
                                     normalized=False, invariant=False, learning_rate=0.5,
                                     initial_t=1.0)  # fmt: skip
    assert got_q == want_q
    np.testing.assert_allclose(got_p, want_p, rtol=2e-6, atol=5e-7)
    np.testing.assert_allclose(got_w, want_w, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(stats[S_LOSS], want_loss, rtol=2e-6)
    np.testing.assert_allclose(stats[S_WLAB], want_wt, rtol=2e-6)


# ------------------------------------------------------------------ beside VW 9.11.9


def _data(path, n: int = 400, seed: int = 7, binary: bool = False) -> None:  # noqa: ANN001
    """Two namespaces, a linear target (its sign with ``binary``), some unlabeled lines, some
    of weight 0, 2 or 0.5, a few with an initial score."""
    rnd = random.Random(seed)
    w = [rnd.gauss(0, 1) for _ in range(20)]
    lines = []
    for i in range(n):
        x = {j: round(rnd.uniform(-1, 1), 3) for j in rnd.sample(range(14), rnd.randint(1, 5))}
        z = {j: round(rnd.uniform(-1, 1), 3) for j in rnd.sample(range(14, 20), 2)}
        y = sum(w[j] * v for j, v in (*x.items(), *z.items())) + rnd.gauss(0, 0.2)
        label = f"{1 if y > 0 else -1}" if binary else f"{y:.3f}"
        tail = " 0" if i % 23 == 5 else " 2" if i % 9 == 3 else " 0.5" if i % 13 == 4 else ""
        if not binary and i % 17 == 6:
            tail = " 1 0.3"
        label = "" if i % 29 == 7 else label + tail
        fa = " ".join(f"a{j}:{v}" for j, v in x.items())
        fb = " ".join(f"b{j}:{v}" for j, v in z.items())
        lines.append(f"{label} |a {fa} |b {fb}")
    path.write_text("\n".join(lines) + "\n")


def run_module(prog: list[str], args: list[str], cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    return unix.run_module(prog, args, cwd, timeout=600)  # (a first run compiles)


SUMMARY = ("average loss", "weighted example sum", "weighted label sum", "total queries")


@pytest.mark.parametrize(("opts", "binary"), [
    ([], False),
    (["--cover", "3", "--mellowness", "2", "--alpha", "0.5"], False),
    (["--oracular", "-q", "ab"], False),
    (["--cover", "5", "--beta_scale", "2", "--l2", "1e-5", "--sgd"], False),
    (["--loss_function", "logistic", "--binary"], True),
    (["--loss_function", "logistic", "--binary", "--cover", "2", "--mellowness", "0.5",
      "--adaptive"], True),
    (["--loss_function", "logistic", "--binary", "--oracular", "-c", "-k", "--passes", "2"],
     True),
])  # fmt: skip
def test_sl_vw_gives_vw_s_numbers_and_models(tmp_path, opts, binary):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt", binary=binary)
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        r = run_module(prog, ["--active_cover", "-d", "d.txt", *opts, "-p", f"{tag}.p", "-f",
                              f"{tag}.m"], tmp_path)  # fmt: skip
        out[tag] = [ln for ln in r.stderr.splitlines() if ln.startswith(SUMMARY)]
        (tmp_path / "d.txt.cache").unlink(missing_ok=True)
    assert out["sl"] == out["vw"] and out["sl"]
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()
    # the models: each scores with the other's as with its own (copy 0)
    four = unix.scored_both_ways("d.txt", tmp_path)
    assert len(set(four.values())) == 1, four


@pytest.mark.parametrize("binary", [False, True])
def test_a_model_is_continued_as_vw_continues_it(tmp_path, binary):
    """Each program continues the other's model as VW does: VW's clock and the copies'
    weights go on, the policies' λ and the queries start over; ``--mellowness`` (kept only
    when given) may be given again."""
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt", n=250, binary=binary)
    _data(tmp_path / "e.txt", n=250, seed=8, binary=binary)
    loss = ["--loss_function", "logistic", "--binary"] if binary else []
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        run_module(prog, ["--active_cover", "--cover", "4", *loss, "-d", "d.txt", "-f",
                          f"{tag}.m"], tmp_path)  # fmt: skip
    seen = set()
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        for model in ("vw", "sl"):
            args = ["--active_cover", "--mellowness", "3", "-i", f"{model}.m", "-d", "e.txt",
                    "-p", f"{tag}{model}.p", "--readable_model", f"{tag}{model}.r"]  # fmt: skip
            r = run_module(prog, args, tmp_path)
            shown = [ln for ln in r.stderr.splitlines() if ln.startswith(SUMMARY)]
            seen.add((tuple(shown), (tmp_path / f"{tag}{model}.p").read_text(),
                      (tmp_path / f"{tag}{model}.r").read_text()))  # fmt: skip
    assert len(seen) == 1


@pytest.mark.parametrize(("args", "said"), [
    (["--active_cover", "--oaa", "2"], "--oaa"),
    (["--active_cover", "--audit"], "--audit"),
    (["--active_cover", "--invert_hash", "x"], "--invert_hash"),
    (["--active_cover", "-r", "raw"], "-r"),
    (["--active_cover", "--active", "--simulation"], "--active"),
    (["--active_cover", "--cb_explore_adf"], "--cb_explore_adf"),
    (["--active_cover", "--cover", "-2"], "--cover"),
    (["--active_cover", "--alpha", "x"], "--alpha"),
    (["--active_cover", "--ftrl"], "--ftrl"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    _data(tmp_path / "d.txt", n=5)
    unix.refused(["-d", "d.txt", *args], tmp_path, said)
