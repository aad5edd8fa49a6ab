"""VW's ``--marginal`` (:mod:`streamlearn.learners.marginal`; the reduction's options in
:mod:`streamlearn.reductions.marginal`).

The kernel against a dense reference: VW's ``marginal.cc`` stated as a plain loop with dicts
(its map of marginals, its experts) over the tests' dense VW gd (``tests/reference``), on
random streams of id pairs (some of them not of value 1, some namespaces of odd length) and
ordinary features, with every option; then ``sl vw`` beside VW 9.11.9 on data of our own,
and models both ways (``--compete``'s experts read back when the command line gives it).
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.learners import gd
from streamlearn.learners.base import new_rows, new_stats
from streamlearn.learners.losses import SQUARED
from streamlearn.reductions import marginal as reduction
from streamlearn.run.runner import run_kernel
from tests import unix
from tests.reference import VWClassesGD, vw_loss_terms
from tests.unix import SL_VW, VW_MODULE

F = np.float32
ID, OTHER = ord("i"), ord("b")


@dataclass
class Rows:
    """A stream with each feature's namespace byte (the kernel reads them)."""

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    bases: np.ndarray
    status: np.ndarray
    ns: np.ndarray
    d: int

    @property
    def n(self) -> int:
        return self.labels.shape[0]

    def row(self, i: int):
        lo, hi = self.indptr[i], self.indptr[i + 1]
        return self.indices[lo:hi], self.values[lo:hi], self.ns[lo:hi]

    def slice(self, a: int, b: int) -> Rows:
        lo, hi = self.indptr[a], self.indptr[b]
        return Rows(self.indptr[a : b + 1] - lo, self.indices[lo:hi], self.values[lo:hi],
                    self.labels[a:b], self.weights[a:b], self.bases[a:b], self.status[a:b],
                    self.ns[lo:hi], self.d)  # fmt: skip


def rows(seed: int, n: int = 200, d: int = 64) -> Rows:
    """Rows of an id namespace (pairs of value 1 from a few ids; now and then a value 2 or
    an odd count) before or after ordinary features; labels in [0, 1], weights 0.5-2.
    (The pairs' second slots are ids, never weights: they may repeat.)"""
    rng = random.Random(seed)
    ptr, idx, val, ns, lab, wt = [0], [], [], [], [], []
    for _ in range(n):
        # (no slot twice in a row: the reference's gd steps a repeated slot as VW's does not)
        firsts = rng.sample(range(8), 4)
        ids = []
        for j in range(rng.randint(0, 3)):
            ids += [firsts[j], 8 + rng.randrange(6)]  # (first, second)
        if rng.random() < 0.1:
            ids.append(firsts[3])  # an odd count: the last one dropped
        idv = [2.0 if rng.random() < 0.05 else 1.0 for _ in ids]
        other = [(j, rng.choice([0.5, 1.0, -1.5])) for j in
                 rng.sample(range(16, d), rng.randint(0, 3))]  # fmt: skip
        parts = [[(j, v, ID) for j, v in zip(ids, idv, strict=True)],
                 [(j, v, OTHER) for j, v in other]]  # fmt: skip
        if rng.random() < 0.5:
            parts.reverse()
        for j, v, c in parts[0] + parts[1]:
            idx.append(j)
            val.append(v)
            ns.append(c)
        ptr.append(len(idx))
        lab.append(rng.choice([0.0, 0.25, 0.5, 1.0]))
        wt.append(rng.choice([1.0, 1.0, 0.5, 2.0]))
    return Rows(np.array(ptr, dtype=np.int64), np.array(idx, dtype=np.uint32),
                np.array(val, dtype=np.float32), np.array(lab), np.array(wt), np.zeros(n),
                np.zeros(n, dtype=np.int64), np.array(ns, dtype=np.uint8), d)  # fmt: skip


def get_loss(p, y, lo, hi):
    """VW's ``squaredloss::get_loss`` (the label range's linear continuation outside it)."""
    p, y = F(p), F(y)
    if lo <= p <= hi:
        return F((p - y) * (p - y))
    edge = F(lo) if p < lo else F(hi)
    if y == edge:
        return F(0.0)
    return F((y - edge) * (y - edge) + F(2.0) * (y - edge) * (edge - p))


def hedge(r, c):
    rp = r if r > 0 else F(0.0)
    if c == 0 or rp == 0:
        return F(0.0)
    return F(F(2.0) * rp * F(math.exp(float(rp * rp / (F(3.0) * c)))) / (F(3.0) * c))


def reference(stream: Rows, num0=0.5, den0=1.0, decay=0.0, compete=False, before=False,
              unweighted=False):  # fmt: skip
    """VW's marginal over its gd, as ``marginal.cc`` reads: (predictions, weights)."""
    g = VWClassesGD(stream.d, SQUARED, 1)
    margs: dict[int, list[float]] = {}
    experts: dict[int, list] = {}
    preds = np.empty(stream.n)

    def pairs(idx, x, ns):
        out, k = [], 0
        while k < len(idx):  # each run of the id namespace, in pairs
            if ns[k] != ID:
                k += 1
                continue
            e = k
            while e < len(idx) and ns[e] == ID:
                e += 1
            out += [(int(idx[j]), int(idx[j + 1]), x[j], x[j + 1]) for j in range(k, e - 1, 2)]
            k = e
        return out

    def replaced(idx, x, ns):
        """make_marginal: (features, [(key, marginal)])."""
        feats, made, k = [], [], 0
        plist = iter(pairs(idx, x, ns))
        while k < len(idx):
            if ns[k] != ID:
                feats.append((int(idx[k]), F(x[k])))
                k += 1
                continue
            e = k
            while e < len(idx) and ns[e] == ID:
                e += 1
            for _ in range(k, e - 1, 2):
                first, key, v1, v2 = next(plist)
                if v1 != 1 or v2 != 1:
                    continue
                if key not in margs:
                    margs[key] = [float(F(num0)), float(F(den0))]
                    if compete:
                        experts.setdefault(key, [F(0), F(0), F(1), F(0), F(0), F(1)])
                mp = F(margs[key][0] / margs[key][1])
                feats.append((first, mp))
                made.append((key, mp))
            k = e
        return feats, made

    def update(keys, y, a, alg_loss, fpred):
        w = F(1.0) if unweighted else F(a)
        for key in keys:
            m = margs.setdefault(key, [0.0, 0.0])
            if compete:
                e = experts.setdefault(key, [F(0), F(0), F(1), F(0), F(0), F(1)])
                r1 = F(alg_loss - get_loss(F(m[0] / m[1]) if m[1] else F(np.nan), y, g.lo, g.hi))
                r2 = F(alg_loss - get_loss(fpred, y, g.lo, g.hi))
                e[0], e[1] = F(e[0] + r1 * w), F(e[1] + r1 * r1 * w)
                e[2] = hedge(e[0], e[1])
                e[3], e[4] = F(e[3] + r2 * w), F(e[4] + r2 * r2 * w)
                e[5] = hedge(e[3], e[4])
            keep = float(F(1.0) - F(decay))
            m[0] = m[0] * keep + float(F(F(y) * w))
            m[1] = m[1] * keep + float(w)

    def gd_learn(feats, y, a):
        idx = np.array([j for j, _ in feats], dtype=np.int64)
        x = np.array([v for _, v in feats], dtype=np.float32)
        p = g.clip(g.score(0, 0.0, idx, x))
        g.shared["T"] += a
        g.step(0, idx, x, p, y, a)
        return p

    for i in range(stream.n):
        idx, x, ns = stream.row(i)
        y, a = stream.labels[i], stream.weights[i]
        g.widen(y)  # VW's scorer: set_minmax, before
        feats, made = replaced(idx, x, ns)
        fidx = np.array([j for j, _ in feats], dtype=np.int64)
        fx = np.array([v for _, v in feats], dtype=np.float32)
        p = F(g.clip(g.score(0, 0.0, fidx, fx)))
        final, alg = p, F(0.0)
        if compete:
            avg, nw, nfw = F(0), F(0), F(0)
            for key, mp in made:
                wq = experts[key][2]
                avg, nw, nfw = F(avg + wq * mp), F(nw + wq), F(nfw + experts[key][5])
                alg = F(alg + wq * get_loss(mp, y, g.lo, g.hi))
            if nw + nfw > 0:
                avg = F(avg + nfw * p)
            else:
                nfw, avg = F(1.0), p
            inv = F(F(1.0) / F(nw + nfw))
            avg = F(avg * inv)
            alg = F(F(alg + nfw * get_loss(p, y, g.lo, g.hi)) * inv)
            final = avg
        line_keys = [key for _, key, _, _ in pairs(idx, x, ns)]
        if before:  # VW's update reads the replaced features, in pairs
            swapped = [j for j, _ in feats if True]
            ns_out = [c for c in _namespaces(feats, idx, x, ns)]
            keys = []
            k = 0
            while k < len(swapped):
                if ns_out[k] != ID:
                    k += 1
                    continue
                e = k
                while e < len(swapped) and ns_out[e] == ID:
                    e += 1
                keys += [swapped[j + 1] for j in range(k, e - 1, 2)]
                k = e
            update(keys, y, a, alg, p)
            feats, _ = replaced(idx, x, ns)
            gd_learn(feats, y, a)
            final = p
        else:
            gd_learn(feats, y, a)
            update(line_keys, y, a, alg, p)
        preds[i] = float(final)
    return preds, g.weights()[0]


def _namespaces(feats, idx, x, ns):
    """The namespace byte of each replaced feature (the line's order: ids replaced in place)."""
    out, k = [], 0
    while k < len(idx):
        if ns[k] != ID:
            out.append(ns[k])
            k += 1
            continue
        e = k
        while e < len(idx) and ns[e] == ID:
            e += 1
        out += [ID for j in range(k, e - 1, 2) if x[j] == 1 and x[j + 1] == 1]
        k = e
    assert len(out) == len(feats)
    return out


def run(stream: Rows, words: tuple[str, ...], chunks: int = 3):
    config = TrainConfig(stack=("--marginal", "i", *words), bits=6, numbers="vw")
    spec = reduction.spec(config)
    params = config.params()
    table = spec.new_table(6)
    gstate = spec.init_gstate(params)
    stats, rows_ = new_stats(), new_rows()
    preds = np.empty(stream.n)
    cuts = np.linspace(0, stream.n, chunks + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        preds[a:b] = run_kernel(spec.train_batch, table, gstate, params, SQUARED,
                                stream.slice(a, b), stats, rows_, 0)  # fmt: skip
    w = np.empty(stream.d)
    gd.SPEC.current_weights(table, gstate, params, np.arange(stream.d, dtype=np.uint32), w)
    return preds, w


OPTIONS = [
    ((), {}),
    (("--compete",), {"compete": True}),
    (("--update_before_learn",), {"before": True}),
    (("--compete", "--update_before_learn"), {"compete": True, "before": True}),
    (("--decay", "0.1", "--unweighted_marginals"), {"decay": 0.1, "unweighted": True}),
    (("--initial_numerator", "2", "--initial_denominator", "3", "--compete"),
     {"num0": 2.0, "den0": 3.0, "compete": True}),
]  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("words", "options"), OPTIONS)
def test_the_kernel_is_vw_s_marginal_over_its_gd(seed, words, options):
    stream = rows(seed)
    want_p, want_w = reference(stream, **options)
    got_p, got_w = run(stream, words, chunks=1 + seed % 3)
    # (a few float32 ulps: the reference's gd and the kernel's round a step's last bit apart
    # now and then; sl vw and VW agree to the printed digit below)
    np.testing.assert_allclose(got_p, want_p, rtol=2e-6, atol=5e-7)
    np.testing.assert_allclose(got_w, want_w, rtol=2e-6, atol=5e-7)


assert vw_loss_terms  # (the reference's gd: tests/reference.py)


# ------------------------------------------------------------------ beside VW 9.11.9


def _data(path, n: int = 300, seed: int = 7) -> None:
    rnd = random.Random(seed)
    lines = []
    for _ in range(n):
        user, item = rnd.randrange(12), rnd.randrange(30)
        y = round(min(1.0, max(0.0, 0.1 * (user % 5) + 0.02 * (item % 7) + rnd.gauss(0, 0.1))),
                  3)  # fmt: skip
        pairs = f"u u{user} i i{item}"
        if rnd.random() < 0.05:
            pairs += " x:2 y"  # (a pair not of value 1: dropped)
        lines.append(f"{y} |f {pairs} |g a:{rnd.random():.3f} b")
    path.write_text("\n".join(lines) + "\n")




def run_module(prog: list[str], args: list[str], cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    return unix.run_module(prog, args, cwd, timeout=600)  # (a first run compiles)


@pytest.mark.parametrize("opts", [
    [], ["--compete"], ["--update_before_learn", "--compete"], ["--decay", "0.01"],
    ["--unweighted_marginals", "--initial_numerator", "1", "--initial_denominator", "2"],
    ["-c", "-k", "--passes", "3", "--holdout_off", "--compete"],
])  # fmt: skip
def test_sl_vw_gives_vw_s_numbers_and_models(tmp_path, opts):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt")
    out = {}
    for tag, prog in (("v", VW_MODULE), ("s", SL_VW)):
        r = run_module(prog, ["--marginal", "f", "-d", "d.txt", *opts, "-p", f"{tag}.p", "-f",
                        f"{tag}.m"], tmp_path)  # fmt: skip
        out[tag] = [ln for ln in r.stderr.splitlines() if ln.startswith("average loss")]
    assert out["s"] == out["v"]
    assert (tmp_path / "s.p").read_text() == (tmp_path / "v.p").read_text()
    # each scores with the other's model (--compete given again, as VW asks)
    again = [o for o in opts if o in ("--compete",)]
    for prog, model, pred in ((VW_MODULE, "s.m", "vs.p"), (SL_VW, "v.m", "sv.p")):
        run_module(prog, ["--marginal", "f", *again, "-i", model, "-t", "-d", "d.txt", "-p",
                          pred], tmp_path)  # fmt: skip
    assert (tmp_path / "vs.p").read_text() == (tmp_path / "sv.p").read_text()


def test_readable_model_is_vw_s(tmp_path):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt", n=60)
    for tag, prog in (("v", VW_MODULE), ("s", SL_VW)):
        run_module(prog, ["--marginal", "f", "-d", "d.txt", "--readable_model", f"{tag}.r",
                    "--quiet"], tmp_path)  # fmt: skip
    assert (tmp_path / "s.r").read_text() == (tmp_path / "v.r").read_text()


@pytest.mark.parametrize(("args", "said"), [
    (["--marginal", ":"], "wildcard"),
    (["--marginal", "f", "-q", "ff"], "--quadratic"),
    (["--marginal", "f", "--oaa", "2"], "--oaa"),
    (["--marginal", "f", "--invert_hash", "x"], "--invert_hash"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    _data(tmp_path / "d.txt", n=5)
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", "-d", "d.txt", *args],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2 and said in r.stderr, r.stderr
