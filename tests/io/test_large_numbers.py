"""Numbers too large for the learners' state: the line is malformed (reason 15).

The bound is :data:`streamlearn.io.batch.MAX_MAGNITUDE` (1e18): a label,
importance weight, base, or feature value after its namespace scale (a bare
feature's value is the scale) of larger magnitude.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.io import REASONS, parse_bytes
from streamlearn.io.batch import MAX_MAGNITUDE, TOO_LARGE

FINITE = st.floats(allow_nan=False, allow_infinity=False)
BIG = st.floats(min_value=1.0000001e18, max_value=1.7e308)


def _status(line: str, fmt: str = "vw") -> int:
    b = parse_bytes(line.encode() + b"\n", fmt=fmt, constant=False)
    assert b.n == 1
    return int(b.status[0])


def test_the_reason_reads_well():
    assert REASONS[TOO_LARGE] == "number too large (magnitude above 1e18)"
    assert MAX_MAGNITUDE == 1e18


@settings(max_examples=300, deadline=None)
@given(v=FINITE)
def test_every_position_is_bounded(v):
    big = abs(v) > MAX_MAGNITUDE
    want = TOO_LARGE if big else 0
    assert _status(f"{v!r} |f a") == want  # label
    assert _status(f"1 {abs(v)!r} |f a") == want  # importance weight
    assert _status(f"1 1 {v!r} |f a") == want  # base
    assert _status(f"1 |f a:{v!r}") == want  # value
    if v != 0.0:
        assert _status(f"1 |f:{v!r} a") == want  # a bare feature's value is the scale
    assert _status(f"{v!r} 3:1", "svmlight") == want
    assert _status(f"1 3:{v!r}", "svmlight") == want


@settings(max_examples=200, deadline=None)
@given(scale=st.floats(min_value=1e-3, max_value=1e30), value=st.floats(min_value=1e-3,
                                                                        max_value=1e30))
def test_a_value_is_bounded_after_its_scale(scale, value):
    product = scale * value
    if not math.isfinite(product):
        return
    want = TOO_LARGE if abs(product) > MAX_MAGNITUDE else 0
    assert _status(f"1 |f:{scale!r} a:{value!r}") == want


@given(v=BIG)
def test_any_limit_can_be_lifted(v):
    b = parse_bytes(f"1 {v!r} |f a:{v!r}\n".encode(), limit=math.inf, constant=False)
    assert b.status.tolist() == [0] and b.values.tolist() == [v] and b.weights.tolist() == [v]


def test_the_issue_s_lines():
    for line in ("1 1e39 |f a", "1 1e38 |f a", "1 |f a:1e20", "1e19 |f a", "1 |f:1e20 a"):
        assert _status(line) == TOO_LARGE, line
    for line in ("1 1e18 |f a", "1 |f a:-1e18", "1 |f:1e20 a:1e-5", "1 |f:0 a:1e300"):
        assert _status(line) != TOO_LARGE, line
