"""``-p`` of the exploring reductions (:func:`streamlearn.reductions.pmf.pmf_lines`):
each distinct row's text made once is the text made cell by cell (VW's ``a:p,a:p``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from streamlearn.learners.explore import prob_text
from streamlearn.reductions.pmf import pmf_lines


class _Tags:
    def __init__(self, tags: list[bytes]) -> None:
        self.tags = tags
        self.start = np.zeros(len(tags), dtype=np.int64)
        self.end = np.array([len(t) for t in tags], dtype=np.int64)

    def __getitem__(self, e: int) -> bytes:
        return self.tags[e]


def _reference(ptr, acts, probs, tags, end):  # noqa: ANN001, ANN202
    out = []
    for e in range(len(ptr) - 1):
        body = ",".join(f"{a}:{prob_text(float(p))}"
                        for a, p in zip(acts[ptr[e] : ptr[e + 1]], probs[ptr[e] : ptr[e + 1]],
                                        strict=True))  # fmt: skip
        tag = tags[e].decode()
        out.append(body + (" " + tag if tag else "") + end)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_rows_are_their_cells(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 400)) if seed > 3 else 2000  # (many rows: a few distinct)
    k = int(rng.integers(1, 12))
    sizes = np.full(m, k) if seed % 3 else rng.integers(1, 12, m)  # (one size: rows shared)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    acts = np.concatenate([rng.permutation(max(sizes))[:s] if seed % 4 > 1 else np.arange(s)
                           for s in sizes]).astype(np.int32)  # fmt: skip
    kind = seed % 4
    if kind == 0:  # epsilon-greedy's: one action high, the rest low
        best = rng.integers(0, k, m).repeat(sizes)
        probs = np.where(acts == best, 0.9125, 0.0125)
    elif kind == 1:
        probs = rng.choice([0.0125, 0.9125, 1 / 3], ptr[-1])
    elif kind == 2:
        probs = rng.random(ptr[-1])
    else:
        probs = rng.choice([0.25, np.nan, 1.0, 0.0], ptr[-1])
    probs = probs.astype(np.float32)
    tags = [b"" if rng.random() < 0.5 or seed % 2 else f"t{e}".encode() for e in range(m)]
    part = SimpleNamespace(mg=SimpleNamespace(act_ptr=ptr), tags=_Tags(tags))
    for end in ("\n\n", "\n"):
        out: list[str] = []
        pmf_lines(part, acts, probs, out, end)
        assert out == _reference(ptr, acts, probs, tags, end)
