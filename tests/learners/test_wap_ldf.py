"""VW's ``--wap_ldf m|mc``: weighted all pairs over label-dependent features
(:mod:`streamlearn.learners.wap_ldf`; its option in :mod:`streamlearn.reductions.csoaa_ldf`).

The kernel against a dense reference: ``do_actual_learning_wap`` of ``csoaa_ldf.cc``
stated plainly -- the costs' values from a sort, each pair of lines one example of line
k1's features and line k2's negated, over the tests' dense VW gd (``tests/reference``) --
on random multiline examples under gd's update rules; then ``sl vw`` beside VW 9.11.9 on
data of our own (loss, ``-p``, passes, ``--csoaa_rank``, ``--ftrl`` with ``--probabilities``,
models both ways, the readable model) and its refusals.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from streamlearn.learners import csoaa_ldf, wap_ldf
from streamlearn.learners.base import make_params
from streamlearn.learners.losses import SQUARED
from tests.reference import VWClassesGD
from tests.unix import SL_VW, VW_MODULE, refused, run_module, scored_both_ways

F = np.float32
D = 64


def examples(seed: int, n: int = 120):  # noqa: ANN201
    """Random multiline examples: (lines of (slots, values, class, cost)) each, a few of
    them test examples (no costs), costs with ties."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        test = rng.random() < 0.05
        ex = []
        for a in range(rng.randint(1, 6)):
            m = rng.randint(1, 5)
            idx = np.array([rng.randrange(D) for _ in range(m)], dtype=np.uint32)
            val = np.array([rng.uniform(-1, 1) for _ in range(m)], dtype=np.float32)
            cost = np.nan if test else rng.choice([0.0, 1.0, 0.5, 2.0, rng.uniform(0, 3)])
            ex.append((idx, val, a + 1, cost))
        out.append(ex)
    return out


def arrays(exs):  # noqa: ANN001, ANN201
    """The kernel's inputs of ``exs``."""
    act_ptr, indptr, idx, val, cls, cost = [0], [0], [], [], [], []
    for ex in exs:
        for i, v, c, x in ex:
            idx += i.tolist()
            val += v.tolist()
            indptr.append(len(idx))
            cls.append(c)
            cost.append(x)
        act_ptr.append(len(cls))
    return (np.array(act_ptr, dtype=np.int64), np.array(indptr, dtype=np.int64),
            np.array(idx, dtype=np.uint32), np.array(val, dtype=np.float32),
            np.ones(len(cls), dtype=np.int64), np.array(cls, dtype=np.int64),
            np.array(cost))  # fmt: skip


def run(exs, chunks: int = 2, **opts):  # noqa: ANN001, ANN003, ANN201
    """The kernel over ``exs`` in ``chunks`` calls: (predicted classes, weights)."""
    params = make_params(**{"learning_rate": 0.5, "initial_t": 0.0, **opts})
    table = np.zeros((1, D, 4), dtype=np.float32)
    gstate = csoaa_ldf.init_gstate(params)
    preds = []
    cuts = np.linspace(0, len(exs), chunks + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        act_ptr, indptr, idx, val, n, cls, cost = arrays(exs[a:b])
        rows, m = cls.shape[0], b - a
        pred = np.zeros(m, dtype=np.int64)
        wap_ldf.train_examples(table, np.zeros(rows, dtype=np.int64), gstate, params, SQUARED,
                               act_ptr, indptr, idx, val, n, cls, cost,
                               np.zeros(m, dtype=np.bool_), np.zeros(6),
                               np.zeros(rows, dtype=np.float32), np.zeros(rows, dtype=np.int64),
                               pred)  # fmt: skip
        preds += pred.tolist()
    w = np.empty(D)
    csoaa_ldf.gd.current_weights(table[0], gstate, params, np.arange(D, dtype=np.uint32), w)
    return np.array(preds), w


def reference(exs, **rule):  # noqa: ANN001, ANN003, ANN201
    """VW's csoaa_ldf predicting and wap learning over its scorer and gd, dense."""
    g = VWClassesGD(D, SQUARED, 1, **rule)
    preds = []
    for ex in exs:
        scores = [F(g.score(0, 0.0, i, v)) for i, v, _, _ in ex]
        best = int(np.argmin(scores))  # (the first of the smallest)
        preds.append(ex[best][2])
        costs = [F(x) for *_, x in ex]
        if any(np.isnan(costs)):
            continue
        ordered = sorted(costs)
        value = {}
        v = F(0.0)
        for i, c in enumerate(ordered):
            if i:
                v = F(v + F(c - ordered[i - 1]) / F(i))
            value.setdefault(c, v)
        for k1 in range(len(ex)):
            for k2 in range(k1 + 1, len(ex)):
                d = abs(F(value[costs[k2]] - value[costs[k1]]))
                if d < F(1e-6):
                    continue
                idx = np.concatenate([ex[k1][0], ex[k2][0]])
                val = np.concatenate([ex[k1][1], -ex[k2][1]])
                y = -1.0 if costs[k1] < costs[k2] else 1.0
                g.widen(y)
                p = g.clip(g.score(0, 0.0, idx, val))
                g.shared["T"] = float(d)  # (csoaa_ldf's t: its statistics bypass VW's)
                g.step(0, idx, val, p, y, float(d))
    return np.array(preds), g.weights()[0]


RULES = [
    ({}, {}),
    ({"normalized": False}, {"normalized": False}),
    ({"adaptive": False, "normalized": False, "learning_rate": 2.0, "initial_t": 1.0},
     {"adaptive": False, "normalized": False, "eta0": 2.0, "t0": 1.0}),
    ({"l2": 1e-3}, {"l2": 1e-3}),
]  # fmt: skip


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("opts", "rule"), RULES)
def test_the_kernel_learns_vw_s_weighted_all_pairs(seed, opts, rule):
    exs = examples(seed)
    want_p, want_w = reference(exs, **rule)
    got_p, got_w = run(exs, chunks=1 + seed, **opts)
    np.testing.assert_array_equal(got_p, want_p)
    np.testing.assert_allclose(got_w, want_w, rtol=0, atol=3e-5 * max(np.abs(want_w).max(), 1))


def test_equal_costs_make_no_pair():
    """Lines of one cost: nothing to learn; a zero-cost line against a cost-1 line: one
    pair, importance 1."""
    i = np.array([3], dtype=np.uint32)
    v = np.array([1.0], dtype=np.float32)
    _, w = run([[(i, v, 1, 1.0), (i + 1, v, 2, 1.0)]], chunks=1)
    assert not w.any()
    _, w = run([[(i, v, 1, 0.0), (i + 1, v, 2, 1.0)]], chunks=1)
    assert w[3] < 0 < w[4]


# ---------------------------------------------------------------- beside VW 9.11.9


def text(seed: int, n: int) -> str:
    """Multiline examples of our own: a shared line now and then, two namespaces, costs."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ex = []
        if rng.random() < 0.3:
            ex.append("shared |s " + " ".join(f"u{rng.randrange(10)}:{rng.uniform(-1, 1):.3f}"
                                              for _ in range(rng.randint(1, 3))))  # fmt: skip
        for a in range(rng.randint(2, 5)):
            cost = rng.choice([0.0, 1.0, 0.5, 2.0, round(rng.uniform(0, 3), 3)])
            feats = " ".join(f"f{rng.randrange(25)}:{rng.uniform(-1, 1):.3f}"
                             for _ in range(rng.randint(1, 4)))  # fmt: skip
            ex.append(f"{a + 1}:{cost} |a {feats} |b c{a}")
        out.append("\n".join(ex))
    return "\n\n".join(out) + "\n\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory):  # noqa: ANN001, ANN201
    pytest.importorskip("vowpalwabbit")
    d = tmp_path_factory.mktemp("wap")
    (d / "a.ldf").write_text(text(1, 200))
    (d / "b.ldf").write_text(text(2, 80))
    return d


def _summary(stderr: str) -> list[str]:
    keep = ("average loss", "weighted example sum", "number of examples", "total feature",
            "passes used", "Enabled learners", "Output pred")  # fmt: skip
    return [ln for ln in stderr.splitlines() if ln.startswith(keep)] + [
        ln for ln in stderr.splitlines() if ln[:1].isdigit() and len(ln.split()) == 7]


@pytest.mark.parametrize("args", [
    ["--wap_ldf", "m"],
    ["--wap_ldf", "multiline-classifier", "--invariant"],
    ["--wap_ldf", "m", "--sgd", "--noconstant"],
    ["--wap_ldf", "mc", "--passes", "3", "-c", "-k", "--holdout_off"],
    ["--wap_ldf", "m", "--csoaa_rank"],
    ["--wap_ldf", "m", "-q", "ab"],
    ["--wap_ldf", "mc", "--ftrl", "--probabilities"],
])  # fmt: skip
def test_beside_vw(data, args):
    for f in data.glob("*.cache*"):
        f.unlink()
    vw = run_module(VW_MODULE, ["-d", "a.ldf", "-p", "vw.p", *args], data)
    sl = run_module(SL_VW, ["-d", "a.ldf", "-p", "sl.p", *args], data)
    assert _summary(sl.stderr) == _summary(vw.stderr)
    assert (data / "sl.p").read_text() == (data / "vw.p").read_text()


def test_models_both_ways_and_the_readable_model(data):
    args = ["--wap_ldf", "multiline"]
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        run_module(prog, ["-d", "a.ldf", *args, "-f", f"{name}.m", "--readable_model",
                          f"{name}.txt"], data)  # fmt: skip
    assert (data / "sl.txt").read_text() == (data / "vw.txt").read_text()
    assert "options: --wap_ldf multiline" in (data / "sl.txt").read_text()
    scored = scored_both_ways("b.ldf", data)
    assert len(set(scored.values())) == 1, scored
    for prog, name, model in ((VW_MODULE, "vw", "sl"), (SL_VW, "sl", "vw")):  # continued
        run_module(prog, ["-d", "b.ldf", "-i", f"{model}.m", "-p", f"{name}.c"], data)
    assert (data / "sl.c").read_text() == (data / "vw.c").read_text()


@pytest.mark.parametrize(("args", "said"), [
    (["--wap_ldf", "m", "--audit"], "--wap_ldf with --audit"),
    (["--wap_ldf", "s"], "--wap_ldf s: m, multiline"),
    (["--wap_ldf", "m", "--cb_adf"], "--wap_ldf with --cb_adf"),
    (["--wap_ldf", "m", "--csoaa_ldf", "mc"], "--wap_ldf with --csoaa_ldf"),
])  # fmt: skip
def test_refusals(tmp_path, args, said):
    (tmp_path / "d.ldf").write_text("1:0 | a\n2:1 | b\n\n")
    refused(["-d", "d.ldf", *args], tmp_path, said)
