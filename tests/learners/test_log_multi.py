"""VW's ``--log_multi K`` (:mod:`streamlearn.learners.log_multi`; its options in
:mod:`streamlearn.reductions.log_multi`): the tree's state round-trips VW's model section,
then beside VW 9.11.9 (progress, ``-p``, the readable model, models both ways, continued,
passes with a cache) and the one-line refusals."""

from __future__ import annotations

import random

import numpy as np
import pytest

from streamlearn.learners import log_multi as lm
from streamlearn.learners.base import make_params
from tests.unix import SL_VW, VW_MODULE, refused, run_module


def test_layout_and_section_round_trip():
    for k in (2, 3, 7, 10):
        g = lm.init_gstate(make_params(), k, 4)
        assert lm.k_of(g) == k
        assert lm.stride(k) == 1 << max(k - 2, 0).bit_length()
        head, nodes, cls = lm.views(g, k)
        head[lm.H_NODES], head[lm.H_USED] = 3, 1
        nodes[0, [lm.INTERNAL, lm.LEFT, lm.RIGHT, lm.NPREDS, lm.N]] = (1, 1, 2, 2, 3)
        nodes[0, lm.NORM_EH], nodes[0, lm.EH] = np.float32(0.25), 0.75
        nodes[1:3, lm.PARENT] = 0
        nodes[1, [lm.NPREDS, lm.MAX_COUNT, lm.MAX_LABEL]] = (1, 2, 2)
        cls[0, 0] = (0.5, np.float32(0.5), 1, 1, 1)
        cls[0, 1] = (0.25, np.float32(0.125), 2, 2, 2)
        cls[1, 0] = (0.0, 0.0, 0, 2, 2)
        data = b"xx" + lm.vw_section(g, k)
        back = lm.init_gstate(make_params(), k, 9)
        assert lm.read_vw_section(data, 2, back, k) == len(data)
        assert lm.section_end(data, 2, k) == len(data)
        assert np.array_equal(back, g)


def lines(seed: int, n: int, k: int) -> str:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        y = rng.randint(1, k)
        feats = " ".join(f"f{rng.randrange(30)}:{rng.random():.3f}"
                         for _ in range(rng.randint(1, 5)))  # fmt: skip
        w = " 2" if rng.random() < 0.2 else ""
        label = "" if rng.random() < 0.03 else f"{y}{w}"
        out.append(f"{label} |a {feats} g{y if rng.random() < 0.6 else rng.randint(1, k)} "
                   f"|b h{rng.randrange(4)}")
    return "\n".join(out) + "\n"


def _table(stderr: str) -> list[str]:
    keep = ("average loss", "weighted example sum", "number of examples", "total feature",
            "passes used", "Enabled learners")  # fmt: skip
    return [ln for ln in stderr.splitlines() if ln.startswith(keep) or ln[:1].isdigit()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):  # noqa: ANN001, ANN201
    pytest.importorskip("vowpalwabbit")
    d = tmp_path_factory.mktemp("log_multi")
    (d / "a.vw").write_text(lines(1, 400, 7))
    (d / "b.vw").write_text(lines(2, 120, 7))
    return d


@pytest.mark.parametrize("args", [
    ["--log_multi", "7"],
    ["--log_multi", "7", "--swap_resistance", "2"],
    ["--log_multi", "7", "--swap_resistance", "1", "--no_progress"],
    ["--log_multi", "7", "--passes", "2", "-c", "-k"],
])  # fmt: skip
def test_beside_vw(data, args):
    for f in data.glob("*.cache*"):
        f.unlink()
    outs = {}
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        r = run_module(prog, ["-d", "a.vw", "-p", f"{name}.p", "-f", f"{name}.m",
                              "--readable_model", f"{name}.txt", *args], data)  # fmt: skip
        outs[name] = (_table(r.stderr), (data / f"{name}.p").read_text(),
                      (data / f"{name}.txt").read_text())  # fmt: skip
    assert outs["sl"] == outs["vw"]
    scored = {}
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        for model in ("vw", "sl"):  # (scored, and continued)
            run_module(prog, ["-d", "b.vw", "-t", "-i", f"{model}.m", "-p", "t.p"], data)
            run_module(prog, ["-d", "b.vw", "-i", f"{model}.m", "-p", "c.p"], data)
            # (the run naming the model's --log_multi K again, as VW's suite line 546)
            run_module(prog, ["-d", "b.vw", "-t", "-i", f"{model}.m", "-p", "r.p",
                              *args[:2]], data)  # fmt: skip
            scored[name, model] = "".join((data / f).read_text() for f in ("t.p", "c.p", "r.p"))
    assert len(set(scored.values())) == 1, scored


@pytest.mark.parametrize(("args", "said"), [
    (["--log_multi", "1"], "--log_multi 1 is not supported"),
    (["--log_multi", "5000"], "--log_multi 5000 is not supported"),
    (["--log_multi", "3", "--oaa", "3"], "--log_multi with --oaa"),
    (["--log_multi", "3", "--ftrl"], "--log_multi runs over gd"),
    (["--log_multi", "3", "--probabilities"], "--log_multi with --probabilities"),
    (["--log_multi", "3", "--audit"], "--audit with --log_multi"),
    (["--log_multi", "3", "--swap_resistance", "x"], "--swap_resistance x"),
])  # fmt: skip
def test_refusals(tmp_path, args, said):
    (tmp_path / "d.vw").write_text("1 | a\n2 | b\n")
    refused(["-d", "d.vw", *args], tmp_path, said)
