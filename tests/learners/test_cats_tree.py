"""VW's CATS tree and its continuous-action stack (:mod:`streamlearn.learners.cats_tree`;
the options in :mod:`streamlearn.reductions.cats`, the loops in ``run/cats.py`` and
``run/cats_pdf.py``).

The kernels against a dense reference written from VW's ``cats_tree.cc``,
``pmf_to_pdf.cc`` and ``explore::sample_pdf`` (plain Python: a dict of node costs per
level, the leaves' costs spelled out, a base learner called back), on random streams with
every tree bandwidth the set-up can give; then ``sl vw`` beside VW 9.11.9 on data of our
own: ``--cbify K --cbify_reg`` (each loss, ``--loss_report``, gd and coin, the discrete
variants), ``--cats`` and ``--cats_pdf`` (loss, ``-p``, readable models), VW scoring sl's
models as its own, and one-line refusals.
"""

from __future__ import annotations

import pathlib
import random
import subprocess

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.learners import cats_tree as ct
from streamlearn.learners import cb_algs, gd
from streamlearn.learners.csoaa_ldf import clipped, learn_line, line_score
from tests import unix
from tests.unix import SL_VW, VW_MODULE

F = np.float32
BITS = 10


# --------------------------------------------------------------------- the reference


class RefTree:
    """``min_depth_binary_tree`` and ``cats_tree::learn``/``predict`` as VW's source states
    them, over a base learner given as callbacks: ``score(node)`` (the clipped prediction)
    and ``learn(node, label, weight)``."""

    def __init__(self, k: int, h: int) -> None:
        self.k = k
        self.nodes = [dict(id=0, left=0, right=0, parent=0, lo=False, ro=False, leaf=True)]
        self.depth = 0
        depth_const = 1
        for i in range(k - 1):
            self.nodes[i].update(left=2 * i + 1, right=2 * i + 2, leaf=False)
            if 2 * i + 1 >= depth_const:
                self.depth += 1
                depth_const = (1 << (self.depth + 1)) - 1
            for c in (2 * i + 1, 2 * i + 2):
                ro = bool(h) and c == (k // h) // 2 - 1
                lo = bool(h) and c == k // h - 2
                self.nodes.append(dict(id=c, left=0, right=0, parent=i, lo=lo, ro=ro, leaf=True))
        self.internal = len(self.nodes) - k
        self.counts = [0] * len(self.nodes)

    def predict(self, score) -> int:  # noqa: ANN001
        v = self.nodes[0]
        while not v["leaf"]:
            if v["ro"]:
                v = self.nodes[v["right"]]
            elif v["lo"]:
                v = self.nodes[v["left"]]
            else:
                v = self.nodes[v["right"] if score(v["id"]) > 0 else v["left"]]
        return v["id"] - self.internal + 1

    def learn(self, first: int, last: int, cost: float, prob: float, score, learn,  # noqa: ANN001
              draw: float) -> None:  # fmt: skip
        n = len(self.nodes)
        star = F(F(cost) / F(prob))
        a = [min(first + self.internal - 1, n - 1), star]
        b = [min(last + self.internal - 1, n - 1), star]

        def cost_of(w: int) -> F:
            if w < a[0]:
                return F(0)
            if w == a[0]:
                return a[1]
            if w < b[0]:
                return star
            return b[1] if w == b[0] else F(0)

        for _ in range(self.depth):
            todo = [tuple(a)]
            if self.nodes[a[0]]["parent"] != self.nodes[b[0]]["parent"]:
                todo.append(tuple(b))
            parent_costs = [a[1], b[1]]
            for i, (v, cv) in enumerate(todo):
                par = self.nodes[self.nodes[v]["parent"]]
                new = cv
                if not (par["ro"] or par["lo"]):
                    w = par["right"] if v == par["left"] else par["left"]
                    cw = cost_of(w)
                    if cv != cw:
                        y = -1.0 if (v if cv < cw else w) == par["left"] else 1.0
                        weight = F(abs(F(cv - cw)))
                        skip = False
                        if weight < F(1e-5):
                            weight, skip = (F(1e-5), False) if draw < weight else (weight, True)
                        if not skip:
                            learn(par["id"], y, float(weight))
                            self.counts[par["id"]] += 1
                            went = 1.0 if score(par["id"]) > 0 else -1.0
                            new = min(cv, cw) if went == y else max(cv, cw)
                parent_costs[i] = new
            a = [self.nodes[a[0]]["parent"], parent_costs[0]]
            b = [self.nodes[b[0]]["parent"], parent_costs[1]]


def ref_pmf_to_pdf(action: int, k: int, lo: F, hi: F, bw: F) -> tuple[list, list]:
    """``pmf_to_pdf_reduction::transform_prediction`` for one action of score 1, with its
    loops over the (one) left and right limits written out."""
    unit = F(F(hi - lo) / F(k))
    centre = F(F(lo + F(F(action) * unit)) + F(unit / F(2)))
    b = F(unit / F(2)) if bw == 0 else bw
    lims: list = [] if F(centre - b) == lo else [lo]
    left, right = F(centre - b), F(centre + b)
    if centre >= b:
        val = max(left, lo)
        if not lims or lims[-1] != val:
            lims.append(val)
    lims.append(min(right, hi))
    if lims[-1] != hi:
        lims.append(hi)
    probs, used = [], False
    for i in range(len(lims) - 1):
        p = F(0)
        if not used and ((F(centre - lo) < b and lims[i] == lo) or lims[i] == left):
            p = F(F(1) / F(min(hi, right) - max(lo, left)))
            used = True
        probs.append(p)
    return lims, probs


# ------------------------------------------------------------------ kernels vs reference


def _stream(seed: int, n: int = 120) -> tuple:
    rng = random.Random(seed)
    ptr, idx, val = [0], [], []
    for _ in range(n):
        for j in rng.sample(range(30), rng.randint(1, 4)):
            idx.append(j)
            val.append(float(F(rng.uniform(-1.5, 1.5))))
        idx.append(7)
        val.append(1.0)
        ptr.append(len(idx))
    return np.array(ptr, dtype=np.int64), np.array(idx, dtype=np.uint32), np.array(val)


@pytest.mark.parametrize(("k", "h", "algo"), [(8, 0, "gd"), (16, 2, "gd"), (4, 1, "coin"),
                                               (13, 0, "pistol"), (2, 0, "coin")])  # fmt: skip
def test_the_tree_learns_as_vw_s_source_says(k, h, algo):
    """:func:`compare` as plain Python (``NUMBA_DISABLE_JIT=1``, the kernels' own code: a
    compile of the tree's kernels with every base learner inlined takes minutes on a busy
    machine; the compiled kernels run beside VW below and in ``scripts/kernel_lines.py``)."""
    import os
    import sys

    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    code = f"from tests.learners.test_cats_tree import compare; compare({k}, {h}, {algo!r})"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600, cwd=pathlib.Path(__file__).parents[2])  # fmt: skip
    assert r.returncode == 0, r.stderr


def compare(k: int, h: int, algo: str) -> None:
    """The kernels and :class:`RefTree` over the same random stream, each on a table of its
    own with the same base learner: the same actions, tables and counts of learns."""
    from streamlearn.learners.csoaa_ldf import BASES, COLUMNS, G_BASE, G_MODEL

    cfg = TrainConfig(bits=BITS, algo=algo)
    params = cfg.params()
    rule = gd.rule_of(params)
    internal = max(1, k - 1)
    width = 1 << max(internal - 1, 0).bit_length()
    nodes, depth = ct.build_tree(k, h)
    ref = RefTree(k, h)
    assert depth == ref.depth
    tables, gstates = [], []
    for _ in range(2):
        tables.append(np.zeros((1 << BITS, COLUMNS[algo]), dtype=np.float32))
        g = cb_algs.init_gstate(params, width)
        g[G_BASE] = BASES[algo]
        if algo != "gd":
            g[G_MODEL] = g[G_MODEL + 1] = 0.0
        gstates.append(g)
    ptr, idx, val = _stream(k * 7 + h)
    slots = np.zeros(idx.shape[0], dtype=np.uint32)
    counts = np.zeros(nodes.shape[0], dtype=np.int64)
    mask = np.uint64((1 << BITS) - 1)
    rng = random.Random(k)
    for e in range(ptr.shape[0] - 1):
        lo, hi = int(ptr[e]), int(ptr[e + 1])
        tab, gs = tables[1], gstates[1]

        def score(node, lo=lo, hi=hi, tab=tab, gs=gs):  # noqa: ANN001, ANN202
            raw = line_score(tab, gs, idx, val, lo, hi, width, node, mask, False)
            return clipped(gs, params, cfg.loss_id, raw)

        def learn(node, y, w, lo=lo, hi=hi, tab=tab, gs=gs):  # noqa: ANN001, ANN202
            learn_line(tab, gs, params, cfg.loss_id, rule, slots, idx, val, lo, hi, y, w,
                       width, node, mask, False)  # fmt: skip

        got = ct.tree_predict(tables[0], gstates[0], params, cfg.loss_id, idx, val, lo, hi,
                              width, False, nodes)  # fmt: skip
        assert got == ref.predict(score)
        first = rng.randint(1, k)
        last = min(k, first + rng.choice([0, 0, 1, 2]))
        cost = F(rng.choice([0.0, 1.0, rng.random(), 2e-6]))
        prob = F(rng.uniform(0.2, 1.0))
        ct.tree_learn(tables[0], gstates[0], params, cfg.loss_id, rule, slots, idx, val, lo, hi,
                      width, False, nodes, depth, counts, first, last, cost, prob,
                      ct.SMALL_DRAW)  # fmt: skip
        ref.learn(first, last, cost, prob, score, learn, ct.SMALL_DRAW)
        assert np.array_equal(tables[0], tables[1])
    assert counts.tolist() == ref.counts
    assert sum(ref.counts) > 0


@pytest.mark.parametrize("seed", [1, 2])
def test_pdfs_are_vw_s(seed):
    rng = random.Random(seed)
    lims = np.zeros(8, dtype=np.float32)
    probs = np.zeros(8, dtype=np.float32)
    for _ in range(300):
        k = rng.randint(1, 12)
        lo = F(rng.choice([0.0, -3.0, 185.0]))
        hi = F(lo + F(rng.choice([1.0, 2.0, 23774.0])))
        bw = F(rng.choice([0.0, rng.uniform(0, 1.5) * float(hi - lo) / k, float(hi - lo) * 2]))
        a = rng.randrange(k)
        m = ct.pmf_to_pdf(a, k, lo, hi, bw, lims, probs)
        want_l, want_p = ref_pmf_to_pdf(a, k, lo, hi, bw)
        assert lims[: m + 1].tolist() == [float(x) for x in want_l]
        assert probs[:m].tolist() == [float(x) for x in want_p]


def test_the_small_draw_is_vw_s_hash_of_its_seed():
    from streamlearn.hashing import murmur3_32
    from streamlearn.learners.explore import APP_SEED

    h = int(murmur3_32(np.frombuffer(np.uint64(APP_SEED).tobytes(), dtype=np.uint8), 0, 8,
                       APP_SEED))  # fmt: skip
    s = (h * 0xEECE66D5DEECE66D + 2147483647) & (2**64 - 1)
    assert ct.SMALL_DRAW == F(F((s >> 25) & 0x7FFFFF) * F(2.0**-23) * F(1e-5))


# ---------------------------------------------------------------------- beside VW


def _reg(path, n: int = 150, seed: int = 3) -> None:  # noqa: ANN001
    rnd = random.Random(seed)
    lines = []
    for _ in range(n):
        f = {f"f{j}": round(rnd.uniform(-1, 1), 3) for j in rnd.sample(range(6), 3)}
        y = round(2.0 + 1.5 * f.get("f1", 0) - f.get("f2", 0) + rnd.gauss(0, 0.2), 3)
        lines.append(f"{y} |a {' '.join(f'{k}:{v}' for k, v in f.items())} |b g{rnd.randrange(4)}")
    path.write_text("\n".join(lines) + "\n")


def _ca(path, n: int = 150, seed: int = 5) -> None:  # noqa: ANN001
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        a = round(rnd.uniform(0, 10), 3)
        x = round(rnd.uniform(-1, 1), 3)
        cost = round(abs(a - 5 - 3 * x) / 10, 4)
        label = "" if i % 29 == 4 else f"ca {a}:{cost}:{round(rnd.uniform(0.05, 0.3), 4)} "
        lines.append(f"{label}|a x:{x} w{rnd.randrange(5)}")
    path.write_text("\n".join(lines) + "\n")


def _lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines()
            if ln.startswith(("average loss", "total feature", "best constant", "weighted",
                              "Learn() count"))]  # fmt: skip


def _run(prog, args, cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    return unix.run_module(prog, args, cwd, timeout=600)


@pytest.mark.parametrize("opts", [
    ["--cbify", "8", "--min_value", "0", "--max_value", "5"],
    ["--cbify", "16", "--min_value", "-1", "--max_value", "6", "--coin", "--bandwidth", "0.9",
     "--loss_option", "1", "--loss_report", "1", "--epsilon", "0.2", "--random_seed", "7"],
    ["--cbify", "8", "--min_value", "0", "--max_value", "5", "--loss_option", "2",
     "--loss_01_ratio", "0.2", "--bandwidth", "1"],
    ["--cbify", "32", "--min_value", "0", "--max_value", "5", "--cb_discrete", "--cats_tree",
     "32", "--coin", "--loss_option", "1"],
    ["--cbify", "6", "--min_value", "0", "--max_value", "5", "--cb_discrete"],
    ["--cbify", "12", "--min_value", "0", "--max_value", "5", "--cb_discrete", "--coin",
     "--loss_option", "1", "--cb_type", "ips"],
])  # fmt: skip
def test_cbify_reg_gives_vw_s_numbers(tmp_path, opts):
    pytest.importorskip("vowpalwabbit")
    _reg(tmp_path / "d.txt")
    out = {}
    p = ["-p", "{}.p"]
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        args = ["--cbify_reg", "-d", "d.txt", *opts, *(a.format(tag) for a in p)]
        r = _run(prog, args, tmp_path)
        out[tag] = (_lines(r.stderr), r.stdout)
    assert out["sl"] == out["vw"] and out["sl"][0]
    if p:
        assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()


@pytest.mark.parametrize("opts", [
    ["--cats", "8", "--min_value", "0", "--max_value", "10", "--coin", "--bandwidth", "1.5"],
    ["--cats", "4", "--min_value", "0", "--max_value", "10", "--epsilon", "0.3"],
    ["--cats_pdf", "8", "--min_value", "0", "--max_value", "10", "--bandwidth", "2", "--coin"],
])  # fmt: skip
def test_cats_gives_vw_s_numbers_and_models(tmp_path, opts):
    pytest.importorskip("vowpalwabbit")
    _ca(tmp_path / "d.txt")
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        for only in ([], ["--predict_only_model"]):
            m = f"{tag}{len(only)}"
            r = _run(prog, ["-d", "d.txt", *opts, "-p", f"{m}.p", "-f", f"{m}.m",
                            "--readable_model", f"{m}.r", *only], tmp_path)  # fmt: skip
            out[m] = (_lines(r.stderr), r.stdout)
            if tag == "sl":
                for ext in ("p", "r"):
                    assert (tmp_path / f"{m}.{ext}").read_text() == \
                        (tmp_path / f"vw{len(only)}.{ext}").read_text()  # fmt: skip
                assert out[m] == out[f"vw{len(only)}"] and out[m][0]
    # VW scores with sl's models as with its own
    for n in ("0", "1"):
        got = {}
        for tag in ("vw", "sl"):
            _run(VW_MODULE, ["-d", "d.txt", "-t", "-i", f"{tag}{n}.m", "-p", f"t{tag}.p"],
                 tmp_path)  # fmt: skip
            got[tag] = (tmp_path / f"t{tag}.p").read_text()
        assert got["sl"] == got["vw"] and got["sl"]


@pytest.mark.parametrize(("args", "said"), [
    (["--cbify", "4", "--cbify_reg"], "Min and max"),
    (["--cats", "4", "--min_value", "0"], "Min and max"),
    (["--cats", "4", "--min_value", "0", "--max_value", "1", "-q", "ab"], "-q"),
    (["--cbify", "4", "--cbify_reg", "--min_value", "0", "--max_value", "1", "-i", "m"],
     "-i"),  # (--cats's and --cats_pdf's models are read: test_cats_block.py)
    (["--cats", "4", "--cats_pdf", "4", "--min_value", "0", "--max_value", "1"], "--cats_pdf"),
    (["--cbify", "4", "--cbify_reg", "--min_value", "0", "--max_value", "1", "-f", "m"], "-f"),
    (["--cbify", "4", "--cbify_reg", "--cb_discrete", "--cats_tree", "5", "--min_value", "0",
      "--max_value", "1"], "--cats_tree"),
    (["--cbify", "4", "--cbify_reg", "--loss_option", "3", "--min_value", "0",
      "--max_value", "1"], "--loss_option"),
    (["--cats_tree", "4"], "--cats_tree"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    _reg(tmp_path / "d.txt", n=5)
    unix.refused(["-d", "d.txt", *args], tmp_path, said)
