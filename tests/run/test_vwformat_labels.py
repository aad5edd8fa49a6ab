"""``vwformat.labelled_texts`` (``-p`` of ``--probabilities`` and ``--scores``): one format
per row gives each value as :func:`~streamlearn.run.vwformat.general` writes it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from streamlearn.run.vwformat import general, labelled_texts


def _slow(scores: np.ndarray, first) -> list[str]:  # noqa: ANN001
    k = scores.shape[1]
    starts = np.broadcast_to(first, scores.shape[:1]).tolist()
    return [" ".join(f"{c}:{general(v)}" for c, v in zip(range(f, f + k), row, strict=True))
            for f, row in zip(starts, scores.tolist(), strict=True)]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 5)),
              elements=st.floats(allow_nan=True, allow_infinity=True, width=32)),
       st.lists(st.sampled_from([0, 1]), min_size=6, max_size=6))  # fmt: skip
def test_each_value_as_general_writes_it(scores, firsts):
    first = np.array(firsts[: scores.shape[0]])
    assert labelled_texts(scores, first) == _slow(scores, first)
    assert labelled_texts(scores, 1) == _slow(scores, 1)


def test_known_lines():
    scores = np.array([[0.25, 1e-7, 3.0, 123456789.0], [-0.5, np.nan, -np.inf, 0.0]])
    assert labelled_texts(scores[:1], 1) == ["1:0.25 2:1e-07 3:3 4:1.23457e+08"]
    assert labelled_texts(scores[1:], 0) == ["0:-0.5 1:nan 2:-inf 3:0"]
