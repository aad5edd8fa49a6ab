"""Label kernels beyond the simple label (io/labels.py): cb and cost-sensitive label parts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.io.labels import (
    BAD_COST_LABEL,
    BAD_PROBABILITY,
    COST_WITHOUT_PROBABILITY,
    LABEL_CB,
    LABEL_CS,
    ROW_SHARED,
    read_labels,
)
from streamlearn.io.parse import parse_bytes


def _read(text: bytes, kind: str, numbers: str = "vw"):
    b = parse_bytes(text, labels=kind, numbers=numbers)
    return b, read_labels(b, LABEL_CB if kind == "cb" else LABEL_CS, numbers == "vw")


def test_cb_entries_and_shared():
    b, lab = _read(b"shared |s a\n0:1.5:0.25 |a x\n|a y\n2 3 |a z\n", "cb")
    assert b.status.tolist() == [0, 0, 0, 0]
    assert lab.flags.tolist() == [ROW_SHARED, 0, 0, 0]
    assert lab.ptr.tolist() == [0, 0, 1, 1, 3]
    assert lab.cls.tolist() == [0, 2, 3]
    assert lab.cost[0] == 1.5 and np.isnan(lab.cost[1:]).all()
    assert lab.prob[0] == 0.25
    # the features are read as ever: the label part never reaches the feature loop
    assert b.indptr.tolist() == [0, 2, 4, 6, 8]


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"0:1:0 |a x", BAD_PROBABILITY),
        (b"0:1:1.5 |a x", BAD_PROBABILITY),
        (b"0:1:nan |a x", BAD_PROBABILITY),
        (b"0:1:-0.5 |a x", BAD_PROBABILITY),
        (b"0:1 |a x", COST_WITHOUT_PROBABILITY),
        (b"0:x:0.5 |a x", BAD_COST_LABEL),
        (b"0:nan:0.5 |a x", BAD_COST_LABEL),
        (b"0:1:0.5:2 |a x", BAD_COST_LABEL),
        (b"1 shared |a x", BAD_COST_LABEL),
        (b"shared 1:2:0.5 |a x", BAD_COST_LABEL),
        (b":1:0.5 |a x", BAD_COST_LABEL),
    ],
)
def test_cb_malformed(line, code):
    b, lab = _read(line + b"\n|a y\n", "cb")
    assert b.status.tolist() == [code, 0]
    assert b.err_pos[0] >= 0
    assert lab.ptr.tolist() == [0, 0, 0]


def test_cs_entries_and_tags():
    b, lab = _read(b"1:0.5 2:1 3:-2 'tag |x a\n3 |y\nshared |s\nab:2 |z\n", "cs")
    assert b.status.tolist() == [0, 0, 0, 0]
    assert lab.ptr.tolist() == [0, 3, 4, 4, 5]
    assert lab.cls.tolist()[:4] == [1, 2, 3, 3]
    assert lab.cost.tolist()[:3] == [0.5, 1.0, -2.0] and np.isnan(lab.cost[3])
    assert lab.flags.tolist() == [0, 0, ROW_SHARED, 0]
    data = b.block.data.tobytes()
    assert data[b.tag_start[0] : b.tag_end[0]] == b"tag"


def test_simple_labels_unchanged():
    b = parse_bytes(b"1 2 0.5 |f a\n")
    assert b.labels.tolist() == [1.0] and b.weights.tolist() == [2.0] and b.bases.tolist() == [0.5]


_label_bytes = st.lists(
    st.sampled_from(
        [
            b"0",
            b"1",
            b":",
            b".",
            b"5",
            b"-",
            b"e",
            b"nan",
            b"shared",
            b" ",
            b"'",
            b"\t",
            b"x",
            b"inf",
            b"\xff",
            b"2",
            b"|",
        ]
    ),  # fmt: skip
    max_size=12,
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_label_bytes, min_size=1, max_size=4), kind=st.sampled_from(["cb", "cs"]))
def test_malformed_label_parts_never_crash(parts, kind):
    text = b"".join(p + b" |a x\n" for p in parts)
    b, lab = _read(text, kind)
    assert lab.ptr.shape[0] == b.n + 1
    assert (np.diff(lab.ptr) >= 0).all()
    ok = lab.prob[~np.isnan(lab.prob)]
    assert ((ok >= 0) & (ok <= 1)).all()
    for i in range(b.n):
        if b.status[i] != 0:
            assert lab.ptr[i] == lab.ptr[i + 1]
