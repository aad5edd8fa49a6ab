"""VW's ``--recall_tree K`` (:mod:`streamlearn.learners.recall_tree`; its options in
:mod:`streamlearn.reductions.recall_tree`): the tree's layout and VW's model section round
trip, then beside VW 9.11.9 on data of our own (progress, ``-p``, the readable model, the
model file, models both ways, scored and continued) and the one-line refusals."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from streamlearn.learners import recall_tree as rt
from streamlearn.learners import recall_tree_state as rts
from streamlearn.learners.base import make_params
from tests.unix import SL_VW, VW_MODULE, refused, run_module


def test_layout_and_section_round_trip():
    for k, depth in ((1, 0), (2, 1), (7, 3), (20, 5), (10, 2)):
        g = rt.init_gstate(make_params(), k, depth, rt.default_candidates(k), 1.0, False, False)
        assert rt.shape_of(g) == (k, depth)
        head, nodes, cls = rt.views(g, k, depth)
        assert nodes.shape[0] == 2 ** (depth + 1) - 1
        assert int(nodes[:, rt.INTERNAL].sum()) == rt.routers(depth) == head[rt.H_ROUTERS]
        # VW's init_tree: children two by two, routers numbered depth first
        if depth >= 2:
            assert list(nodes[0, [rt.LEFT, rt.RIGHT, rt.ROUTER]]) == [1, 2, 0]
            assert list(nodes[1, [rt.LEFT, rt.RIGHT, rt.ROUTER]]) == [3, 4, 1]
        nodes[0, [rt.N, rt.NPREDS]] = (3.0, min(k, 2))
        rt._set_entropy(nodes, 0, float("nan"))
        nodes[0, rt.RECALL] = np.float32(0.25)
        cls[0, 0] = (k, 2.0)
        if k > 1:
            cls[0, 1] = (1, 1.0)
        data = b"xx" + rts.vw_section(g, k, depth)
        back = rt.init_gstate(make_params(), k, depth, 1, 1.0, True, False)
        assert rts.read_vw_section(data, 2, back, k, depth) == len(data)
        assert rts.section_end(data, 2, k, depth) == len(data)
        assert np.array_equal(back, g)
        assert np.all(np.isfinite(back))  # (a NaN entropy is kept as a flag)
        assert rts.vw_section(back, k, depth) == data[2:]
        assert "entropy = -nan\n" in rts.section_lines(back, k, depth)
    with pytest.raises(ValueError, match="not the one its options name"):
        rts.read_vw_section(struct.pack("<I?QQQ", 3, False, 7, 3, 2), 0, back, k, depth)


def lines(seed: int, n: int, k: int) -> str:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        y = rng.randint(1, k)
        feats = " ".join(f"f{rng.randrange(30)}:{rng.random():.3f}"
                         for _ in range(rng.randint(1, 4)))  # fmt: skip
        w = " 2" if rng.random() < 0.15 else ""
        label = "" if rng.random() < 0.03 else f"{y}{w}"
        out.append(
            f"{label} |a {feats} g{y if rng.random() < 0.7 else rng.randint(1, k)} "
            f"|b h{rng.randrange(4)}"
        )
    return "\n".join(out) + "\n"


def _table(stderr: str) -> list[str]:
    skip = ("compiling", "[info]", "final_regressor", "predictions =", "creating cache_file")
    return [ln for ln in stderr.splitlines() if not ln.startswith(skip)]


def _body(model: bytes) -> bytes:
    """A model file past its version string, its resume counters' ``dump_interval`` (sl
    writes the table's next line there, VW its own: left out) aside."""
    n = struct.unpack_from("<I", model)[0]
    return model[4 + n :]


@pytest.fixture(scope="module")
def data(tmp_path_factory):  # noqa: ANN001, ANN201
    pytest.importorskip("vowpalwabbit")
    d = tmp_path_factory.mktemp("recall_tree")
    for name, seed, n, k in (("a7", 1, 250, 7), ("b7", 2, 80, 7), ("a20", 3, 250, 20),
                             ("b20", 4, 80, 20), ("a50", 5, 200, 50)):  # fmt: skip
        (d / f"{name}.vw").write_text(lines(seed, n, k))
    return d


@pytest.mark.parametrize("args", [
    ["-d", "a7.vw", "--recall_tree", "7"],
    ["-d", "a20.vw", "--recall_tree", "20", "--max_candidates", "3", "--bern_hyper", "0"],
    ["-d", "a50.vw", "--recall_tree", "50", "--max_depth", "3", "--node_only"],
    ["-d", "a7.vw", "--recall_tree", "7", "--max_depth", "1", "--loss_function", "logistic"],
    ["-d", "a20.vw", "--recall_tree", "20", "--randomized_routing", "--random_seed", "3",
     "--bern_hyper", "0.3"],
    ["-d", "a7.vw", "--recall_tree", "7", "--classweight", "2:0,3:2.5", "--l2", "1e-4"],
    ["-d", "a20.vw", "--recall_tree", "20", "--passes", "2", "-c", "-k", "--holdout_off"],
    ["-d", "a20.vw", "--recall_tree", "20", "-q", "ab", "--node_only"],
])  # fmt: skip
def test_beside_vw(data, args):
    for f in data.glob("*.cache*"):
        f.unlink()
    outs = {}
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        r = run_module(prog, [*args, "-p", f"{name}.p", "-f", f"{name}.m",
                              "--readable_model", f"{name}.txt"], data)  # fmt: skip
        text = [ln for ln in (data / f"{name}.txt").read_text().splitlines()
                if not ln.startswith("Checksum")]  # fmt: skip
        outs[name] = (_table(r.stderr), (data / f"{name}.p").read_text(), text)
    assert outs["sl"] == outs["vw"]
    a, b = _body((data / "vw.m").read_bytes()), _body((data / "sl.m").read_bytes())
    assert len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) <= 6


@pytest.mark.parametrize(("train", "test", "args"), [
    ("a20.vw", "b20.vw", ["--recall_tree", "20"]),
    ("a7.vw", "b7.vw", ["--recall_tree", "7", "--max_candidates", "4", "--node_only",
                        "--randomized_routing"]),
])  # fmt: skip
def test_models_both_ways(data, train, test, args):
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        run_module(prog, ["-d", train, "-f", f"{name}.m", *args], data)
    got = {}
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        for model in ("vw", "sl"):  # (scored, and continued)
            t = run_module(prog, ["-d", test, "-t", "-i", f"{model}.m", "-p", "t.p"], data)
            c = run_module(prog, ["-d", test, "-i", f"{model}.m", "-p", "c.p",
                                  "--readable_model", "c.txt"], data)  # fmt: skip
            text = [ln for ln in (data / "c.txt").read_text().splitlines()
                    if not ln.startswith("Checksum")]  # fmt: skip
            got[name, model] = ((data / "t.p").read_text(), (data / "c.p").read_text(), text,
                                _table(t.stderr), _table(c.stderr))  # fmt: skip
    assert len(set(map(repr, got.values()))) == 1, got.keys()


@pytest.mark.parametrize(("args", "said"), [
    (["--recall_tree", "0"], "--recall_tree"),
    (["--recall_tree", "3", "--oaa", "3"], "--recall_tree with --oaa"),
    (["--recall_tree", "3", "--log_multi", "3"], "--log_multi with --recall_tree"),
    (["--recall_tree", "3", "--ftrl"], "--recall_tree runs over gd"),
    (["--recall_tree", "3", "--probabilities"], "--recall_tree with --probabilities"),
    (["--recall_tree", "3", "--audit"], "--audit with --recall_tree"),
    (["--recall_tree", "3", "--max_depth", "30"], "--max_depth 30 is not supported"),
    (["--recall_tree", "3", "--max_candidates", "x"], "--max_candidates x"),
    (["--recall_tree", "3", "-q", "::"], "interactions of ':'"),
])  # fmt: skip
def test_refusals(tmp_path, args, said):
    (tmp_path / "d.vw").write_text("1 | a\n2 | b\n")
    refused(["-d", "d.vw", *args], tmp_path, said)


def test_a_run_s_bern_hyper_over_a_model(data):
    """VW keeps no ``--bern_hyper`` with a model: a run's own applies to the model it reads
    (0: every walk down to a leaf)."""
    run_module(VW_MODULE, ["-d", "a20.vw", "--recall_tree", "20", "-f", "bh.m"], data)
    for b in ("0", "0.2"):
        got = []
        for prog in (VW_MODULE, SL_VW):
            r = run_module(prog, ["-d", "b20.vw", "-t", "-i", "bh.m", "--bern_hyper", b, "-p",
                                  "bh.p"], data)  # fmt: skip
            got.append(((data / "bh.p").read_text(), _table(r.stderr)))
        assert got[0] == got[1]
