"""VW's ``--ect K --error E`` (:mod:`streamlearn.learners.ect`; its options in
:mod:`streamlearn.reductions.classes`).

The kernel against a dense reference: ``ect.cc`` stated plainly -- its circuit built with
lists and dicts, its prediction and training walks, the scorer and gd of each binary
problem as the tests' dense VW gd (``tests/reference``), its driver order (predict, then
learn) and the importance it leaves in the example -- on random streams of several K and
E under gd's update rules; then ``sl vw`` beside VW 9.11.9 on data of our own: the
progressive loss and ``-p`` (passes, labels that are no class, weights 0), the readable
model and ``--invert_hash``, and models both ways; and the one-line refusals.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.config import ConfigError, TrainConfig
from streamlearn.learners import ect
from streamlearn.learners.base import S_LOSS, S_WEX, S_WLAB, make_params, new_rows, new_stats
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from streamlearn.run.runner import run_kernel
from tests.reference import VWClassesGD
from tests.streams import Stream, random_stream
from tests.unix import SL_VW, VW_MODULE, refused, run_module, scored_both_ways

F = np.float32


# ---------------------------------------------------------------- the dense reference


def circuit(k: int, errors: int):  # noqa: ANN201
    """VW's ``create_circuit`` with lists: (nodes as dicts, finals, last pair, height)."""
    elim = errors + 1
    nodes = [dict(t=0, win=0, lose=0, left=0, right=0, last=False) for _ in range(k)]
    finals: list[int] = []
    levels = [[list(range(k))] + [[] for _ in range(elim - 1)]]
    while any(levels[-1]):
        cur = levels[-1]
        new: list[list[int]] = [[] for _ in cur]
        for i, t in enumerate(cur):
            for j in range(len(t) // 2):
                nid = len(nodes)
                lft, rgt = t[2 * j], t[2 * j + 1]
                nodes.append(dict(t=i, win=0, lose=0, left=lft, right=rgt, last=False))
                for child in (lft, rgt):
                    nodes[child]["win" if nodes[child]["t"] == i else "lose"] = nid
                if nodes[lft]["last"]:
                    nodes[lft]["win"] = nid
                if len(t) == 2 and (i == 0 or not cur[i - 1]):
                    nodes[nid]["last"] = True
                    if i + 1 < len(cur):
                        new[i + 1].append(nid)
                    else:
                        nodes[nid]["win"] = 0
                    finals.append(nid)
                else:
                    new[i].append(nid)
                if i + 1 < len(cur):
                    new[i + 1].append(nid)
                else:
                    nodes[nid]["lose"] = 0
            if len(t) % 2 == 1:
                new[i].append(t[-1])
        levels.append(new)
    height = next(i for i in range(32) if errors >> i == 0)
    return nodes, finals, (k - 1) * elim, height


class Tournament:
    """VW's ect over its scorer and gd, dense: one :class:`VWClassesGD` model per problem."""

    def __init__(self, k: int, errors: int, d: int, loss_id: int, **rule) -> None:  # noqa: ANN003
        self.k, self.errors = k, errors
        self.nodes, self.finals, self.last_pair, self.height = circuit(k, errors)
        self.gd = VWClassesGD(d, loss_id, (k - 1) * (errors + 1) + errors, **rule)
        self.T = 0.0  # VW's t: the weights its statistics saw

    def base(self, c: int, idx, x, y=None, a: float = 0.0) -> float:  # noqa: ANN001
        """The scorer and gd on problem ``c``: learn ``y`` with importance ``a`` (the range
        widened first), or predict; the score before any step."""
        g = self.gd
        if y is not None:
            g.widen(y)
        p = g.clip(g.score(c, 0.0, idx, x))
        if y is not None and a > 0:
            g.shared["T"] = self.T + a
            g.step(c, idx, x, p, y, a)
        return p

    def predict(self, idx, x) -> int:  # noqa: ANN001
        winner = 0
        for i in range(self.height - 1, -1, -1):
            bit = winner | (1 << i)
            if bit <= self.errors and self.base(self.last_pair + bit - 1, idx, x) > 0:
                winner = bit
        nid = self.finals[winner]
        while nid >= self.k:
            n = self.nodes[nid]
            nid = n["right"] if self.base(nid - self.k, idx, x) > 0 else n["left"]
        return nid + 1

    def train(self, idx, x, label: int, a: float) -> float:  # noqa: ANN001
        """VW's ``ect_train``; the example's importance as it leaves it."""
        k, nodes = self.k, self.nodes
        if not 1 <= label <= k:
            return a
        nid = nodes[label - 1]["win"]
        left = nodes[nid]["left"] == label - 1
        won: list[bool] = []
        while nid != 0:
            y = -1.0 if left else 1.0
            self.base(nid - k, idx, x, y, a)
            p = self.base(nid - k, idx, x, y, 0.0)  # (VW learns again with weight 0)
            n = nodes[nid]
            side = "win" if p * y > 0 else "lose"
            if n["last"]:
                won.append(side == "win")
            else:
                left = nodes[n[side]]["left"] == nid
                if side == "lose" and n["lose"] == 0:
                    won.append(False)
            nid = n[side]
        for i in range(self.height):
            j = 0
            while j < len(won) // 2:  # (VW's loop: the record halves inside it)
                lw, rw = won[2 * j], won[2 * j + 1]
                if lw == rw:
                    won[j] = lw
                else:
                    a = float(1 << (self.height - i - 1))
                    prob = self.last_pair + j * (1 << (i + 1)) + (1 << i) - 1
                    won[j] = rw if self.base(prob, idx, x, -1.0 if lw else 1.0, a) > 0 else lw
                if len(won) % 2 == 1:
                    won[len(won) // 2] = won[-1]
                won = won[: (len(won) + 1) // 2]
                j += 1
        return a


def reference(s: Stream, k: int, errors: int, loss_id: int, **rule):  # noqa: ANN003, ANN201
    """(classes predicted, weights [problem, slot], Σ weight, Σ weight · 0/1 loss)."""
    m = Tournament(k, errors, s.d, loss_id, **rule)
    classes = np.full(s.n, np.nan)
    wsum = loss = 0.0
    for i in range(s.n):
        if s.status[i] != 0:
            continue
        idx, x = s.row(i)
        x = x.astype(np.float32)
        y, a = s.labels[i], s.weights[i]
        p = m.predict(idx, x)
        classes[i] = p
        if y == y:
            a = m.train(idx, x, int(y), a)
            m.T += a
            loss += a * (p != y)
        wsum += a
    return classes, m.gd.weights(), wsum, loss


def class_stream(seed: int, k: int, n: int = 250) -> Stream:
    """Labels 1..K, a few unlabeled, a few no class (0, K + 1), a few of weight 0."""
    s = random_stream(seed, n=n, bits=5)
    rng = np.random.default_rng(seed + 100)
    s.labels[:] = rng.integers(1, k + 1, size=n)
    s.labels[rng.random(n) < 0.03] = np.nan
    s.labels[rng.random(n) < 0.02] = 0.0
    s.labels[rng.random(n) < 0.02] = k + 1
    s.weights[rng.random(n) < 0.03] = 0.0
    s.bases[:] = 0.0  # (multiclass lines carry none)
    return s


def run(s: Stream, k: int, errors: int, loss_id: int, chunks: int = 2, **opts):  # noqa: ANN003, ANN201
    """The kernel over ``s`` on a table where no two features share a slot."""
    spec = ect.spec(k, errors)
    params = make_params(oaa=k, **{"learning_rate": 0.5, "initial_t": 0.0, **opts})
    stride = int(spec.train_batch.conf[ect.C_STRIDE])
    bits = int(np.log2(s.d)) + int(np.log2(stride))
    table = spec.new_table(bits)
    gstate = spec.init_gstate(params)
    stats, rows = new_stats(), new_rows()
    preds = np.empty((s.n, k + 1))
    cuts = np.linspace(0, s.n, chunks + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        preds[a:b] = run_kernel(spec.train_batch, table, gstate, params, loss_id, s.slice(a, b),
                                stats, rows, k + 1)  # fmt: skip
    w = ect.width(k, errors)
    slots = (np.arange(s.d)[None, :] * stride + np.arange(w)[:, None]).astype(np.uint32)
    out = np.empty(slots.size)
    spec.current_weights(table, gstate, params, slots.ravel(), out)
    return preds, out.reshape(w, s.d), stats


RULES = [
    ({}, {}),
    ({"adaptive": False}, {"adaptive": False}),
    ({"adaptive": False, "normalized": False, "learning_rate": 2.0, "initial_t": 1.0},
     {"adaptive": False, "normalized": False, "eta0": 2.0, "t0": 1.0}),
    ({"adaptive": False, "normalized": False, "invariant": False, "learning_rate": 0.3,
      "initial_t": 1.0},
     {"adaptive": False, "normalized": False, "invariant": False, "eta0": 0.3, "t0": 1.0}),
    ({"l1": 1e-3, "l2": 1e-3}, {"l1": 1e-3, "l2": 1e-3}),
]  # fmt: skip


@pytest.mark.parametrize(("k", "errors"), [(2, 0), (3, 1), (5, 0), (6, 2), (10, 3), (4, 6)])
@pytest.mark.parametrize(("opts", "rule"), RULES)
def test_the_kernel_is_vw_s_tournament_over_its_gd(k, errors, opts, rule):
    s = class_stream(k * 10 + errors, k)
    want_c, want_w, want_wsum, want_loss = reference(s, k, errors, SQUARED, **rule)
    preds, w, stats = run(s, k, errors, SQUARED, chunks=1 + errors % 3, **opts)
    ok = ~np.isnan(want_c)
    np.testing.assert_array_equal(preds[ok, 0], want_c[ok])
    np.testing.assert_array_equal(np.isnan(preds[:, 0]), ~ok)
    np.testing.assert_allclose(w, want_w, rtol=0, atol=3e-5 * max(np.abs(want_w).max(), 1e-9))
    assert stats[S_WEX] == want_wsum  # (the queries' importances in the statistics)
    assert stats[S_LOSS] == want_loss


@pytest.mark.parametrize("loss_id", [LOGISTIC, HINGE])
def test_other_losses(loss_id):
    s = class_stream(7, 6)
    want_c, want_w, _, _ = reference(s, 6, 2, loss_id)
    preds, w, _ = run(s, 6, 2, loss_id)
    ok = ~np.isnan(want_c)
    np.testing.assert_array_equal(preds[ok, 0], want_c[ok])
    np.testing.assert_allclose(w, want_w, rtol=0, atol=3e-5 * max(np.abs(want_w).max(), 1e-9))


def test_queries_change_the_example_s_importance():
    """With E > 0 the finals' tree asks questions with importance 2^(h-i-1), which VW then
    counts as the example's: the weighted example sum is not the lines' weights."""
    s = class_stream(3, 10, n=300)
    s.weights[:] = 1.0
    _, _, stats = run(s, 10, 3, SQUARED)
    _, _, wsum, _ = reference(s, 10, 3, SQUARED)
    assert stats[S_WEX] == wsum != np.count_nonzero(s.status == 0)


@pytest.mark.parametrize(("k", "errors"), [(2, 0), (7, 0), (10, 3), (5, 4), (16, 7), (3, 10)])
def test_the_circuit_is_vw_s(k, errors):
    nodes, finals, conf = ect.circuit(k, errors)
    want, want_finals, last_pair, height = circuit(k, errors)
    assert [list(r) for r in nodes] == [[n["win"], n["lose"], n["left"], n["right"],
                                         int(n["last"])] for n in want]  # fmt: skip
    assert finals.tolist() == want_finals
    assert conf[ect.C_LAST_PAIR] == last_pair and conf[ect.C_HEIGHT] == height
    assert conf[ect.C_STRIDE] == 1 << max(ect.width(k, errors) - 1, 0).bit_length()
    assert TrainConfig(oaa=k, ect=True, ect_errors=errors, bits=24).oaa_stride == conf[
        ect.C_STRIDE]


def test_options_are_checked():
    with pytest.raises(ConfigError):
        TrainConfig(oaa=4, ect=True, algo="ftrl")
    with pytest.raises(ConfigError):
        TrainConfig(oaa=10, ect=True, ect_errors=3, bits=5)  # (64 slots a feature)
    assert TrainConfig(oaa=10, ect=True, ect_errors=3).classes_options() == [
        ("ect", "10"), ("error", "3")]
    assert TrainConfig(oaa=10, ect=True).classes_options() == [("ect", "10")]


# ---------------------------------------------------------------- beside VW 9.11.9


def lines(seed: int, n: int, k: int) -> str:
    """Multiclass lines of our own: two namespaces, labels 1..K, some weights, a few
    unlabeled lines, labels that are no class, weights 0."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        feats = " ".join(f"w{rng.randrange(30)}:{rng.uniform(-1, 1):.4f}"
                         for _ in range(rng.randint(1, 6)))  # fmt: skip
        r = rng.random()
        label = ("" if r < 0.04 else "0" if r < 0.06 else str(k + 3) if r < 0.08 else
                 f"{rng.randint(1, k)} 0" if r < 0.1 else
                 f"{rng.randint(1, k)} {rng.choice([1, 1, 0.5, 2])}")  # fmt: skip
        out.append(f"{label} |a {feats} |b x{rng.randrange(5)}")
    return "\n".join(out) + "\n"


def _summary(stderr: str) -> list[str]:
    keep = ("average loss", "weighted example sum", "number of examples", "total feature",
            "passes used", "Enabled learners")  # fmt: skip
    return [ln for ln in stderr.splitlines() if ln.startswith(keep)] + [
        ln for ln in stderr.splitlines() if ln[:1].isdigit() and len(ln.split()) == 7]


@pytest.fixture(scope="module")
def data(tmp_path_factory):  # noqa: ANN001, ANN201
    pytest.importorskip("vowpalwabbit")
    d = tmp_path_factory.mktemp("ect")
    (d / "a.vw").write_text(lines(1, 400, 7))
    (d / "b.vw").write_text(lines(2, 150, 7))
    return d


@pytest.mark.parametrize("args", [
    ["--ect", "7"],
    ["--ect", "7", "--error", "3"],
    ["--ect", "7", "--error", "2", "--invariant", "-q", "ab"],
    ["--ect", "7", "--error", "1", "--passes", "3", "-c", "-k"],
    ["--ect", "7", "--error", "5", "--passes", "2", "-c", "-k", "--holdout_off", "--sgd"],
])  # fmt: skip
def test_beside_vw(data, args):
    for f in data.glob("*.cache*"):
        f.unlink()
    vw = run_module(VW_MODULE, ["-d", "a.vw", "-p", "vw.p", *args], data)
    sl = run_module(SL_VW, ["-d", "a.vw", "-p", "sl.p", *args], data)
    assert _summary(sl.stderr) == _summary(vw.stderr)
    assert (data / "sl.p").read_text() == (data / "vw.p").read_text()


@pytest.mark.parametrize("args", [["--ect", "7", "--error", "2"], ["--ect", "7", "--adaptive"]])
def test_models_both_ways_and_the_readable_model(data, args):
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        run_module(prog, ["-d", "a.vw", *args, "-f", f"{name}.m", "--readable_model",
                          f"{name}.txt", "--invert_hash", f"{name}.ih"], data)  # fmt: skip
    assert (data / "sl.txt").read_text() == (data / "vw.txt").read_text()
    assert (data / "sl.ih").read_text() == (data / "vw.ih").read_text()
    scored = scored_both_ways("b.vw", data)
    assert len(set(scored.values())) == 1, scored
    for prog, name, model in ((VW_MODULE, "vw", "sl"), (SL_VW, "sl", "vw")):  # continued
        run_module(prog, ["-d", "b.vw", "-i", f"{model}.m", "-p", f"{name}.c"], data)
    assert (data / "sl.c").read_text() == (data / "vw.c").read_text()


@pytest.mark.parametrize(("args", "said"), [
    (["--ect", "1"], "--ect 1 is not supported by sl"),
    (["--ect", "0"], "--ect 0"),
    (["--ect", "4", "--oaa", "4"], "--ect with --oaa"),
    (["--ect", "4", "--link", "logistic"], "--ect with --link logistic"),
    (["--ect", "4", "--probabilities", "--loss_function", "logistic"], "--probabilities"),
    (["--ect", "4", "--audit"], "--ect with --audit"),
    (["--ect", "4", "-r", "raw"], "--ect with -r"),
    (["--ect", "4", "--error", "-1"], "--error -1"),
    (["--ect", "4", "--ftrl"], "--ect runs over gd"),
])  # fmt: skip
def test_refusals(tmp_path, args, said):
    (tmp_path / "d.vw").write_text("1 | a\n2 | b\n")
    refused(["-d", "d.vw", *args], tmp_path, said)


def test_error_alone_is_ignored_as_vw_ignores_it(tmp_path):
    (tmp_path / "d.vw").write_text("1 | a\n2 | b\n")
    r = subprocess.run([sys.executable, "-m", *SL_VW, "-d", "d.vw", "--error", "3"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0 and "Enabled learners: gd, scorer-identity, count_label" in r.stderr


def test_progress_counts_the_labeled_weight():
    s = class_stream(5, 4)
    _, _, stats = run(s, 4, 1, SQUARED)
    assert stats[S_WLAB] <= stats[S_WEX] and math.isfinite(stats[S_LOSS])
