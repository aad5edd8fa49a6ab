"""The one-example parser (``io/oneexample.py``) gives the part the block path gives.

For random multiline examples (a shared line or not, labels of the reduction's kind or
malformed ones, tags, values, crosses, each way of counting features), the part of
:class:`ExampleParser` equals, array for array, the part of
``parse_examples`` → ``merge_shared`` → ``cross_merged`` → ``adf_part`` over the same
lines ending in a blank line; where it declines (``None``), the block path has a reason
(a malformed line) or a case the parser leaves to it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn.io.batch import Block
from streamlearn.io.examples import (
    FEATURES_ACTIONS,
    FEATURES_LINES,
    FEATURES_MERGED,
    adf_part,
    parse_options,
)
from streamlearn.io.interactions import compile_interactions
from streamlearn.io.labels import LABEL_CB, LABEL_CS
from streamlearn.io.multiline import cross_merged, merge_shared, parse_examples
from streamlearn.io.oneexample import ExampleParser
from tests.marks import slow_except

BITS = 18

names = st.sampled_from(["a", "b", "x1", "price", "7", "u_v"])
values = st.sampled_from(["", ":0.5", ":2", ":-1.25", ":1e-3", ":0"])
feature = st.builds(lambda n, v: n + v, names, values)
spaces = st.sampled_from(["s", "a", "t", "u"])
namespace = st.builds(lambda s, fs: f"|{s} " + " ".join(fs), spaces, st.lists(feature, max_size=4))


def cb_label(draw, k: int) -> str:
    kind = draw(st.sampled_from(["none", "full", "full", "cost", "bad"]))
    return {"none": "", "full": f"{k}:{draw(st.sampled_from(['0', '1', '-0.5']))}:0.25",
            "cost": f"{k}:1", "bad": "x:y:z"}[kind]  # fmt: skip


def cs_label(draw, k: int) -> str:
    kind = draw(st.sampled_from(["none", "cost", "cost", "bare", "bad"]))
    return {"none": "", "cost": f"{k + 1}:{draw(st.sampled_from(['0', '1', '2.5']))}",
            "bare": f"{k + 1}", "bad": "1:x"}[kind]  # fmt: skip


@st.composite
def example(draw, kind: int) -> bytes:
    lines = []
    if draw(st.booleans()):
        tag = draw(st.sampled_from(["", "tag1 ", "'t ", "touching"]))  # (a tag touching |)
        lines.append(f"shared {tag}" + " ".join(draw(st.lists(namespace, min_size=1, max_size=3))))
    for k in range(draw(st.integers(1, 6))):
        lab = cb_label(draw, k) if kind == LABEL_CB else cs_label(draw, k)
        lines.append(lab + " " + " ".join(draw(st.lists(namespace, min_size=1, max_size=3))))
    return "".join(ln + "\n" for ln in lines).encode()


def block_part(data: bytes, full, kind: int, cb: bool, features: str):  # noqa: ANN001, ANN201
    block = Block(np.frombuffer(bytearray(data + b"\n"), dtype=np.uint8), "<t>", 1, live=True)
    ex = parse_examples(block, BITS, True, parse_options(full, kind), kind)
    mg = cross_merged(merge_shared(ex), full, BITS)
    return adf_part(ex, mg, cb, features)


def same(a, b) -> None:  # noqa: ANN001 - parts
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if dataclasses.is_dataclass(x):
            if hasattr(x, "data") and f.name in ("tags",):
                assert [x[e] for e in range(x.start.shape[0])] == \
                    [y[e] for e in range(y.start.shape[0])]  # fmt: skip
                continue
            same(x, y)
        elif isinstance(x, np.ndarray):
            if f.name == "data":  # (the parser's buffer holds the lines, the block a blank one)
                assert x.tobytes() == y.tobytes()[: x.shape[0]]
                continue
            assert x.dtype == y.dtype and x.shape == y.shape, f.name
            np.testing.assert_array_equal(x, y, err_msg=f.name)
        elif f.name != "name":  # (the source's name: a block's path, no file for one example)
            assert x == y, f.name


CASES = [(LABEL_CB, True, FEATURES_MERGED, ()), (LABEL_CB, True, FEATURES_LINES, ("sa",)),
         (LABEL_CB, True, FEATURES_ACTIONS, ()), (LABEL_CS, False, FEATURES_MERGED, ("sa",)),
         (LABEL_CB, True, FEATURES_MERGED, ("sa", "at"))]  # fmt: skip


@pytest.mark.parametrize(("kind", "cb", "features", "quadratic"),
                         slow_except(CASES, 3, 4, unpack=True))  # (the others: -m slow)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.data_too_large])
@given(data=st.data())
def test_part_is_the_block_paths(kind: int, cb: bool, features: str, quadratic: tuple,
                                 data: st.DataObject) -> None:  # fmt: skip
    full = compile_interactions(quadratic=quadratic, vw_numbers=True)
    parser = ExampleParser(BITS, True, parse_options(full, kind), kind, full, cb, features)
    for _ in range(3):  # (the arrays kept between calls: later calls as the first)
        text = data.draw(example(kind))
        want = block_part(text, full, kind, cb, features)
        got = parser.part(text, 1)
        if got is None:  # declined: a malformed line, no example, or a tag touching |
            assert want.bad or want.mg.act_ptr.shape[0] == 1 or b"touching|" in text
            continue
        assert not want.bad
        same(got, want)


def test_declines_what_it_leaves_to_the_block_path() -> None:
    full = compile_interactions(vw_numbers=True)
    p = ExampleParser(BITS, True, parse_options(full, LABEL_CB), LABEL_CB, full, True)
    assert p.part(b"shared |s a\n|a b\n", 1) is not None
    assert p.part(b"", 1) is None
    assert p.part(b"shared |s a\n", 1) is None  # a shared line alone
    assert p.part(b"0:1:0.5 |a b\n1:0:0.5 |a c\n", 1) is None  # two labeled lines
    assert p.part(b"|a b\n" * ExampleParser.ROWS, 1) is None  # more lines than kept rows
    assert p.part(b"|a " + b"x " * ExampleParser.ROOM + b"\n", 1) is None
    exact = compile_interactions()  # (sl's numbers: a rare one is Python's float())
    q = ExampleParser(BITS, True, parse_options(exact, LABEL_CB), LABEL_CB, exact, True)
    assert q.part(b"|a b:1.00000000000000000000000001\n", 1) is None
    got = p.part(b"shared |s a\n|a b\n", 1)  # (and after declining, a good one again)
    assert got is not None and got.mg.act_ptr.tolist() == [0, 1]
