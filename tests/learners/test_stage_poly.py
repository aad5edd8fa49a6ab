"""VW's ``--stage_poly`` (:mod:`streamlearn.learners.stage_poly`; the reduction's options in
:mod:`streamlearn.reductions.stage_poly`).

The kernel against a dense reference: ``stagewise_poly.cc`` stated plainly -- a recursive
walk with a dict of minimum depths and a set of parents, new parents as the top of a
sorted list, over the tests' dense VW gd (``tests/reference``) -- on random streams over a
small table (children collide, parents are transplanted), with VW's driver order (predict,
then learn) and its counters; then ``sl vw`` beside VW 9.11.9 on data of our own: loss,
``-p``, passes (with a holdout, with ``--batch_sz 0``), ``-t``, and models both ways.
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
from streamlearn.reductions import stage_poly as reduction
from streamlearn.run.runner import run_kernel
from streamlearn.system.libm import powf
from tests import unix
from tests.reference import VWClassesGD
from tests.streams import Stream
from tests.unix import SL_VW, VW_MODULE

F = np.float32
BITS = 7
CONSTANT = 11650396


def stream(seed: int, n: int = 160, d: int = 1 << BITS) -> Stream:
    """Rows of 1-5 features from a few hot slots (children meet them again), random values,
    labels in [0, 1] with some unlabeled rows and some of weight 0; the constant last."""
    rng = random.Random(seed)
    ptr, idx, val, lab, wt = [0], [], [], [], []
    for _ in range(n):
        for j in rng.sample(range(24), rng.randint(1, 5)):
            idx.append(j if rng.random() < 0.8 else rng.randrange(d))
            val.append(float(F(rng.uniform(-2.0, 2.0))))
        idx.append(CONSTANT & (d - 1))
        val.append(1.0)
        ptr.append(len(idx))
        lab.append(np.nan if rng.random() < 0.05 else round(rng.random(), 3))
        wt.append(0.0 if rng.random() < 0.05 else rng.choice([1.0, 1.0, 0.5, 2.0]))
    n = len(lab)
    return Stream(np.array(ptr, dtype=np.int64), np.array(idx, dtype=np.uint32),
                  np.array(val, dtype=np.float32), np.array(lab), np.array(wt), np.zeros(n),
                  np.zeros(n, dtype=np.int64), d)  # fmt: skip


class StdHeap:
    """libstdc++'s ``push_heap``/``pop_heap`` with VW's comparison (``a > b``: the least
    salience on top), as the C++ library's source reads: which of equal saliences leaves
    is its choice, so the reference makes the same."""

    def __init__(self) -> None:
        self.a: list[tuple[F, int]] = []

    def _up(self, hole: int, top: int, v: tuple) -> None:
        a = self.a
        while hole > top and a[(hole - 1) // 2][0] > v[0]:
            a[hole] = a[(hole - 1) // 2]
            hole = (hole - 1) // 2
        a[hole] = v

    def push(self, v: tuple) -> None:
        self.a.append(v)
        self._up(len(self.a) - 1, 0, v)

    def pop(self) -> None:
        a = self.a
        v = a.pop()
        if not a:
            return
        length, hole, child = len(a), 0, 0
        while child < (length - 1) // 2:  # the hole down to a leaf, by the larger child
            child = 2 * child + 2
            if a[child][0] > a[child - 1][0]:
                child -= 1
            a[hole] = a[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            a[hole] = a[2 * child + 1]
            hole = 2 * child + 1
        self._up(hole, 0, v)


def reference(s: Stream, exponent=1.0, batch=1000, doubling=True, rule: dict | None = None,
              trace: dict | None = None):  # noqa: ANN001
    """VW's stagewise_poly over its gd (``rule``: its update rule), as ``stagewise_poly.cc``
    reads: (the predictions VW shows, the weights); ``trace`` gets the parents and depths.
    Without ``--normalized`` VW reads the salience's second factor at ``normalized_idx`` 0:
    ``|w|·w``, so only positive weights become parents."""
    rule = rule or {}
    normalized = rule.get("normalized", True)
    g = VWClassesGD(s.d, SQUARED, 1, **rule)
    mask = s.d - 1
    const = CONSTANT & mask
    depth: dict[int, int] = {}
    parents: set[int] = set()
    inputs = examples = 0
    next_batch, update, last = batch, False, None
    shown = np.empty(s.n)

    def walk(idx, x, training):  # noqa: ANN001, ANN202
        feats: list[tuple[int, F]] = []
        seen: set[int] = set()

        def visit(level, px, pw):  # noqa: ANN001, ANN202
            for j, v in zip(idx, x, strict=True):
                a = int(j) & mask
                cur = pw if a == const else a if pw == const else (a ^ (16777619 * pw)) & mask
                if training and level < depth.get(cur, 127):
                    parents.discard(cur)
                    depth[cur] = level
                if cur not in seen and min(level, 127) == depth.get(cur, 127):
                    seen.add(cur)
                    xv = F(F(v) * px)
                    feats.append((cur, xv))
                    if cur in parents:
                        visit(level + 1, xv, cur)

        visit(0, F(1.0), const)
        return feats

    def score(feats):  # noqa: ANN001, ANN202
        fi = np.array([j for j, _ in feats], dtype=np.int64)
        fx = np.array([v for _, v in feats], dtype=np.float32)
        return fi, fx, g.clip(g.score(0, 0.0, fi, fx))

    def new_parents():  # noqa: ANN202
        k = int(min(float(powf(F(F(inputs) / F(examples)), F(exponent))), s.d))
        mod = g.models[0]
        norm = mod.m if normalized else mod.v
        heap = StdHeap()
        for j in range(s.d):  # the k most salient, kept as VW keeps them (its ties too)
            sal = F(abs(mod.v[j]) * norm[j])
            if j == const or j in parents or not sal > F(1e-9):
                continue
            if len(heap.a) == k and k > 0 and heap.a[0][0] < sal:
                heap.pop()
            if len(heap.a) < k:
                heap.push((sal, j))
        parents.update(j for _, j in heap.a)

    for i in range(s.n):
        idx, x = s.row(i)
        y, a = s.labels[i], s.weights[i]
        labeled = y == y
        _, _, p = score(walk(idx, x, False))  # VW's driver: predict first, shown
        shown[i] = p
        if labeled:
            g.widen(y)  # VW's scorer: set_minmax, before learning
        if not (labeled and a > 0):
            continue
        if update:
            update = False
            new_parents()
        fi, fx, p = score(walk(idx, x, True))
        inputs += len(idx)
        examples += 1
        g.shared["T"] += a
        g.step(0, fi, fx, p, y, a)
        if i != 0 and last != i and batch and i % (next_batch if doubling else batch) == 0:
            next_batch *= 2
            update = True
        last = i
    if trace is not None:
        trace.update(parents=parents, depth=depth)
    return shown, g.weights()[0]


def run(s: Stream, words: tuple[str, ...], chunks: int = 3, **config):  # noqa: ANN003
    config = TrainConfig(stack=("--stage_poly", *words), bits=BITS, numbers="vw", **config)
    spec = reduction.spec(config)
    params = config.params()
    table = spec.new_table(BITS)
    gstate = spec.init_gstate(params)
    stats, rows_ = new_stats(), new_rows()
    preds = np.empty(s.n)
    cuts = np.linspace(0, s.n, chunks + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        preds[a:b] = run_kernel(spec.train_batch, table, gstate, params, SQUARED,
                                s.slice(a, b), stats, rows_, 0)  # fmt: skip
    w = np.empty(s.d)
    gd.SPEC.current_weights(table, gstate, params, np.arange(s.d, dtype=np.uint32), w)
    run.scratch = spec.train_batch.scratch[0].shape[0]
    return preds, w, stats


OPTIONS = [
    ((), {}),
    (("--batch_sz", "7"), {"batch": 7}),
    (("--batch_sz", "5", "--batch_sz_no_doubling"), {"batch": 5, "doubling": False}),
    (("--batch_sz", "4", "--batch_sz_no_doubling", "--sched_exponent", "0.5"),
     {"batch": 4, "doubling": False, "exponent": 0.5}),
    (("--batch_sz", "9", "--sched_exponent", "2"), {"batch": 9, "exponent": 2.0}),
]  # fmt: skip


PLAIN = {"adaptive": False, "normalized": False, "invariant": False}
SGD = {**PLAIN, "t0": 1.0, "eta0": 0.5}
"""The reference's gd of :data:`PLAIN` with the run's ``learning_rate=0.5``."""
"""gd's plain updates (VW's ``--sgd``, its t0 1): the salience ``|w|·w`` of features learned once
in one example differs (under VW's default rates it is the same for all of them, and the
reference's gd, a float32 ulp from VW's now and then, would break those ties otherwise:
the ties are VW's heap's, tested alone below and beside VW)."""


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("words", "options"), OPTIONS)
def test_the_kernel_is_vw_s_stagewise_poly_over_its_gd(seed, words, options):
    s = stream(seed)
    want_p, want_w = reference(s, **options, rule=SGD)
    got_p, got_w, _ = run(s, words, chunks=1 + seed % 3, learning_rate=0.5, **PLAIN)
    np.testing.assert_allclose(got_p, want_p, rtol=2e-6, atol=5e-7)
    np.testing.assert_allclose(got_w, want_w, rtol=2e-6, atol=5e-7)


@pytest.mark.parametrize("seed", range(3))
def test_under_vw_s_default_rates_until_the_first_new_parents(seed):
    """VW's default rates (adaptive, normalized, invariant): the same until new parents
    are chosen (then equal saliences may part by the reference's last bit)."""
    s = stream(20 + seed)
    want_p, want_w = reference(s)
    got_p, got_w, _ = run(s, (), chunks=2)
    np.testing.assert_allclose(got_p, want_p, rtol=2e-6, atol=5e-7)
    np.testing.assert_allclose(got_w, want_w, rtol=2e-6, atol=5e-7)


def test_the_walk_grows_its_scratch_when_parents_multiply():
    """Many parents on wide rows: the kernel stops at a row whose walk may outgrow its
    scratch and goes on with more, as if it had had room (one call against many)."""
    s = stream(3, n=300)
    want_p, want_w = reference(s, batch=2, doubling=False, exponent=3.0,
                               rule=SGD)
    got_p, got_w, _ = run(s, ("--batch_sz", "2", "--batch_sz_no_doubling", "--sched_exponent",
                              "3"), chunks=1, learning_rate=0.5, **PLAIN)  # fmt: skip
    assert run.scratch > 64  # (it started at 16)
    np.testing.assert_allclose(got_p, want_p, rtol=2e-6, atol=5e-7)
    np.testing.assert_allclose(got_w, want_w, rtol=2e-6, atol=5e-7)


@pytest.mark.parametrize("seed", range(20))
def test_new_parents_are_vw_s_among_equal_saliences(seed):
    """The k most salient slots, equal saliences and all, as libstdc++'s heap under VW's
    comparison keeps them (:class:`StdHeap`), against the kernel's ``update_support``."""
    from streamlearn.learners import stage_poly as sp

    rng = np.random.default_rng(seed)
    n = 64
    table = np.zeros((n, 4), dtype=np.float32)
    table[:, 0] = rng.choice([0.0, 0.5, -0.5, 0.25, 1.0, 1e-12], size=n)
    table[:, 2] = rng.choice([1.0, 2.0], size=n)
    params = TrainConfig(bits=6).params()
    gstate = sp.init_gstate(params, 6)
    parents = set(rng.choice(n, size=5, replace=False).tolist())
    for j in parents:
        gstate[sp.SP_SLOTS + j] += 256 * sp.PARENT
    k = int(rng.integers(0, 20))
    gstate[sp.SP_INPUTS], gstate[sp.SP_EXAMPLES] = k, 1
    conf = reduction.Options(1.0, 10).conf(6, 1)
    sp.update_support(table, gstate, params, conf)
    got = {j for j in range(n) if (int(gstate[sp.SP_SLOTS + j]) >> 8) & sp.PARENT} - parents
    heap = StdHeap()
    for j in range(n):
        sal = F(abs(table[j, 0]) * table[j, 2])
        if j == CONSTANT % n or j in parents or not sal > F(1e-9):
            continue
        if len(heap.a) == k and k > 0 and heap.a[0][0] < sal:
            heap.pop()
        if len(heap.a) < k:
            heap.push((sal, j))
    assert got == {j for _, j in heap.a}


def test_the_progress_counts_the_monomials():
    s = stream(5)
    _, _, stats = run(s, ("--batch_sz", "3"))
    from streamlearn.learners.base import S_FEATURES

    assert stats[S_FEATURES] > s.indices.shape[0]  # (parents' children counted too)


# ------------------------------------------------------------------ beside VW 9.11.9


def _data(path, n: int = 400, seed: int = 7) -> None:  # noqa: ANN001
    """A target with products of features (what stagewise polynomials find)."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        x = {f"f{j}": round(rnd.uniform(-1, 1), 3) for j in rnd.sample(range(12), 4)}
        y = 0.5 + 0.3 * x.get("f1", 0) * x.get("f2", 0) - 0.2 * x.get("f3", 0)
        y = round(y + rnd.gauss(0, 0.05), 4)
        feats = " ".join(f"{k}:{v}" for k, v in x.items())
        weight = " 0" if i % 37 == 5 else " 2" if i % 11 == 3 else ""
        label = "" if i % 41 == 7 else f"{y}{weight}"
        lines.append(f"{label} |a {feats} |b g{rnd.randrange(5)}")
    path.write_text("\n".join(lines) + "\n")


def run_module(prog: list[str], args: list[str], cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    return unix.run_module(prog, args, cwd, timeout=600)  # (a first run compiles)


@pytest.mark.parametrize("opts", [
    ["--batch_sz", "50"],
    ["--batch_sz", "30", "--batch_sz_no_doubling", "--sched_exponent", "0.5", "--ngram", "a2"],
    ["--batch_sz", "25", "-c", "-k", "--passes", "3"],
    ["--batch_sz", "0", "-c", "-k", "--passes", "3", "--holdout_off", "--sched_exponent", "1.5"],
    ["--batch_sz", "40", "--noconstant", "--l2", "1e-5", "-b", "10"],
    ["--batch_sz", "20", "--adaptive", "--invariant"],
])  # fmt: skip
def test_sl_vw_gives_vw_s_numbers_and_models(tmp_path, opts):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt")
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        r = run_module(prog, ["--stage_poly", "-d", "d.txt", *opts, "-p", f"{tag}.p", "-f",
                              f"{tag}.m"], tmp_path)  # fmt: skip
        out[tag] = [ln for ln in r.stderr.splitlines()
                    if ln.startswith(("average loss", "total feature"))]  # fmt: skip
        (tmp_path / f"{tag}.cache").unlink(missing_ok=True)
        (tmp_path / "d.txt.cache").unlink(missing_ok=True)
    assert out["sl"] == out["vw"] and out["sl"]
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()
    # the models: each scores with the other's as with its own
    four = unix.scored_both_ways("d.txt", tmp_path)
    assert len(set(four.values())) == 1, four


def test_a_vw_model_is_continued_as_vw_continues_it(tmp_path):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt", n=200)
    _data(tmp_path / "e.txt", n=200, seed=8)
    run_module(VW_MODULE, ["--stage_poly", "--batch_sz", "30", "-d", "d.txt", "-f", "m"],
               tmp_path)  # fmt: skip
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        args = ["--stage_poly", "--batch_sz", "20", "-i", "m", "-d", "e.txt", "-p", f"{tag}.p",
                "--readable_model", f"{tag}.r"]  # fmt: skip
        r = run_module(prog, args, tmp_path)
        out[tag] = [ln for ln in r.stderr.splitlines() if ln.startswith("average loss")]
    assert out["sl"] == out["vw"] and out["sl"]
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()
    assert (tmp_path / "sl.r").read_text() == (tmp_path / "vw.r").read_text()


@pytest.mark.parametrize(("args", "said"), [
    (["--stage_poly", "--oaa", "2"], "--oaa"),
    (["--stage_poly", "-q", "ab"], "-q"),
    (["--stage_poly", "--audit"], "--audit"),
    (["--stage_poly", "--invert_hash", "x"], "--invert_hash"),
    (["--stage_poly", "--batch_sz", "-3"], "--batch_sz"),
    (["--stage_poly", "--sched_exponent", "x"], "--sched_exponent"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    _data(tmp_path / "d.txt", n=5)
    unix.refused(["-d", "d.txt", *args], tmp_path, said)
