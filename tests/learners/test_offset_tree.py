"""VW's ``--ot K`` (:mod:`streamlearn.learners.offset_tree`; its options in
:mod:`streamlearn.reductions.offset_tree`, its driver the legacy cb one): the tree and the
pmf's products against a plain reading of VW's ``offset_tree.cc``, then beside VW 9.11.9
(progress, ``-p``, models both ways, continued), and the one-line refusals."""

from __future__ import annotations

import random

import numpy as np
import pytest

from streamlearn.learners import offset_tree as ot
from tests.unix import SL_VW, VW_MODULE, refused, run_module


def vw_tree(k: int) -> list[tuple[int, int, int]]:
    """VW's ``min_depth_binary_tree``, read straight: (parent, left, right) per node."""
    nodes = [[i, 0, 0, 0] for i in range(k)]  # id, left, right, parent
    tour = list(range(k))
    while len(tour) > 1:
        nxt = []
        nid = len(nodes)
        for j in range(len(tour) // 2):
            left, right = tour[2 * j], tour[2 * j + 1]
            nxt.append(nid)
            nodes[left][3] = nid
            nodes[right][3] = nid
            nodes.append([nid, left, right, 0])
            nid += 1
        if len(tour) % 2:
            nxt.append(tour[-1])
        tour = nxt
    nodes[-1][3] = tour[0]
    return [(p, a, b) for _, a, b, p in nodes]


def vw_pmf(k: int, pairs: list[tuple[float, float]]) -> list[float]:
    """VW's ``offset_tree::predict``: each internal node's pair multiplied down (float32)."""
    f = np.float32
    nodes = vw_tree(k)
    buf = [[f(a), f(b)] for a, b in pairs]
    scores = [f(0.0)] * k
    for n in range(len(nodes) - 1, k - 1, -1):
        _, left, right = nodes[n]
        for side, child in ((0, left), (1, right)):
            q = buf[n - k][side]
            if child < k:
                scores[child] = q
            else:
                buf[child - k][0] *= q
                buf[child - k][1] *= q
    return scores


@pytest.mark.parametrize("k", [2, 3, 4, 5, 7, 8, 13])
def test_the_tree_is_vw_s(k):
    assert [tuple(r) for r in ot.tree(k).tolist()] == vw_tree(k)
    assert ot.stride(k, 3) == 1 << max(4 * (k - 1) - 1, 0).bit_length()


@pytest.mark.parametrize("k", [2, 3, 5, 9])
def test_the_pmf_multiplies_down_as_vw_s(k):
    rng = random.Random(k)
    pairs = [(rng.random(), rng.random()) for _ in range(k - 1)]
    nodes = ot.tree(k)
    buf = np.array(pairs, dtype=np.float32)
    pmf = np.zeros(k, dtype=np.float32)
    for n in range(2 * k - 2, k - 1, -1):  # (the kernel's loop, as it reads its tree)
        for side in range(2):
            child = nodes[n, ot.LEFT + side]
            if child < k:
                pmf[child] = buf[n - k, side]
            else:
                buf[child - k] *= buf[n - k, side]
    assert pmf.tolist() == [float(x) for x in vw_pmf(k, pairs)]


def lines(seed: int, n: int, k: int) -> str:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        feats = " ".join(f"f{rng.randrange(25)}:{rng.uniform(-1, 1):.3f}"
                         for _ in range(rng.randint(1, 5)))  # fmt: skip
        label = "" if rng.random() < 0.05 else (
            f"{rng.randint(1, k)}:{rng.choice([-1, 0, 0.5, 1])}:{rng.choice([0.2, 0.5, 0.9])}")
        out.append(f"{label} |x {feats} |y g{rng.randrange(4)}")
    return "\n".join(out) + "\n"


def _table(stderr: str) -> list[str]:
    keep = ("average loss", "weighted example sum", "number of examples", "total feature",
            "Enabled learners", "cb_type")  # fmt: skip
    return [ln for ln in stderr.splitlines() if ln.startswith(keep) or ln[:1] in "-0123456789"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):  # noqa: ANN001, ANN201
    pytest.importorskip("vowpalwabbit")
    d = tmp_path_factory.mktemp("ot")
    (d / "a.vw").write_text(lines(1, 300, 5))
    (d / "b.vw").write_text(lines(2, 100, 5))
    return d


@pytest.mark.parametrize("args", [
    ["--ot", "5"],
    ["--ot", "5", "--cb_type", "ips", "--epsilon", "0.2"],
    ["--ot", "5", "--cb_type", "dm"],
])  # fmt: skip
def test_beside_vw(data, args):
    vw = run_module(VW_MODULE, ["-d", "a.vw", "-p", "vw.p", "-f", "vw.m", *args], data)
    sl = run_module(SL_VW, ["-d", "a.vw", "-p", "sl.p", "-f", "sl.m", *args], data)
    assert _table(sl.stderr) == _table(vw.stderr)
    assert (data / "sl.p").read_text() == (data / "vw.p").read_text()
    out = {}
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        for model in ("vw", "sl"):  # (scored, and continued)
            run_module(prog, ["-d", "b.vw", "-t", "-i", f"{model}.m", "-p", "t.p"], data)
            run_module(prog, ["-d", "b.vw", "-i", f"{model}.m", "-p", "c.p"], data)
            out[name, model] = (data / "t.p").read_text() + (data / "c.p").read_text()
    assert len(set(out.values())) == 1, out


@pytest.mark.parametrize(("args", "said"), [
    (["--ot", "1"], "--ot 1 is not supported"),
    (["--ot", "3", "--cb_explore", "3"], "--ot with --cb/--cb_explore 3"),
    (["--ot", "3", "--first", "2"], "--ot with --first"),
    (["--ot", "3", "--cb_adf"], "--ot with another multiline reduction"),
    (["--ot", "3", "--oaa", "3"], "--ot with --oaa"),
    (["--ot", "3", "-r", "raw"], "--ot with -r"),
    (["--ot", "3", "--ftrl"], "--ot runs over gd"),
])  # fmt: skip
def test_refusals(tmp_path, args, said):
    (tmp_path / "d.vw").write_text("1:1:0.5 | a\n2:0:0.5 | b\n")
    refused(["-d", "d.vw", *args], tmp_path, said)
