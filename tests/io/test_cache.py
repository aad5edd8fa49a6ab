"""``io/cache.py``: a record gives back exactly the batch written, at a few bytes a feature."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn.io import cache as batch_cache
from streamlearn.io import parse_bytes
from streamlearn.io.batch import Batch, Block

FIELDS = batch_cache._FIELDS


def _same(a: Batch, b: Batch) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x.view(np.uint8), y.view(np.uint8)), name  # bit for bit
        assert y.flags.writeable, name


def _roundtrip(tmp_path, batches: list[Batch]) -> list[Batch]:
    path = tmp_path / "c.cache"
    w = batch_cache.CacheWriter(path, {"bits": 18})
    for b in batches:
        w.add(b)
    w.close()
    return list(batch_cache.read(path))


@st.composite
def batches(draw) -> Batch:
    n = draw(st.integers(1, 30))
    lengths = draw(st.lists(st.integers(0, draw(st.sampled_from([3, 300]))), min_size=n,
                            max_size=n))  # fmt: skip
    nnz = sum(lengths)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])

    def column(dtype, size, pool):
        if draw(st.booleans()):  # all equal, or not
            return np.full(size, draw(st.sampled_from(pool)), dtype=dtype)
        return np.array(draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size)),
                        dtype=dtype)  # fmt: skip

    floats = [0.0, -0.0, 1.0, -1.0, 0.5, np.nan, 1e18, 2.5e-300]
    text = np.frombuffer(b"tagone tagtwo xyz", dtype=np.uint8).copy()
    starts = column(np.int64, n, [0, 7])
    first = draw(st.integers(1, 10**6))
    line = first + np.arange(n, dtype=np.int64)
    if draw(st.booleans()):
        line = line + np.cumsum(column(np.int64, n, [0, 1, 2]))
    return Batch(
        labels=column(np.float64, n, floats), weights=column(np.float64, n, [1.0, 0.0, 3.0]),
        bases=column(np.float64, n, [0.0, -0.0, 2.0]), tag_start=starts,
        tag_end=starts + column(np.int64, n, [0, 3]), indptr=indptr,
        indices=column(np.uint32, nnz, [0, 5, 262143]), values=column(np.float64, nnz, floats),
        status=column(np.int32, n, [0, 0, 7, 15]), line=line,
        block=Block(text, "<x>", first),
    )  # fmt: skip


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(bs=st.lists(batches(), min_size=1, max_size=3))
def test_a_record_replays_its_batch_bit_for_bit(tmp_path, bs):
    got = _roundtrip(tmp_path, bs)
    assert len(got) == len(bs)
    for a, b in zip(bs, got, strict=True):
        packed = [a.block.data[s:e].tobytes() for s, e in zip(a.tag_start, a.tag_end,
                                                               strict=True)]  # fmt: skip
        replayed = [b.block.data[s:e].tobytes() for s, e in zip(b.tag_start, b.tag_end,
                                                                strict=True)]  # fmt: skip
        assert packed == replayed
        a = Batch(**{**{k: getattr(a, k) for k in FIELDS}, "tag_start": b.tag_start,
                     "tag_end": b.tag_end, "block": a.block})  # fmt: skip
        _same(a, b)


def test_binary_features_cost_a_few_bytes(tmp_path):
    """``1 |f a b c d e f g h`` (21 bytes): 168 bytes in a record before, 37 now."""
    text = b"1 |f a b c d e f g h\n" * 20000
    b = parse_bytes(text)
    _roundtrip(tmp_path, [b])
    size = (tmp_path / "c.cache").stat().st_size
    assert size < 38 * 20000 + 2000
    assert size < 2 * len(text)


@pytest.mark.parametrize("how", [{"lengths": "<f8"}, {"lengths": "|u1"}, {"nope": 1},
                                 {"fill": "x"}])  # fmt: skip
def test_a_bad_packing_is_a_corrupt_cache(tmp_path, how):
    path = tmp_path / "c.cache"
    w = batch_cache.CacheWriter(path, {"bits": 18})
    w.add(parse_bytes(b"1 |f a\n2 |f b c\n"))
    w.close()
    raw = bytearray(path.read_bytes())
    (hlen,) = struct.unpack("<I", raw[8:12])
    pos = 12 + hlen
    size, mlen = struct.unpack("<QI", raw[pos : pos + 12])
    meta = json.loads(raw[pos + 12 : pos + 12 + mlen])
    entry = next(e for e in meta["arrays"] if e[0] == "indptr")
    entry[3] = how
    if how == {"lengths": "|u1"}:
        entry[2] = [10**6]  # more rows than the record holds
    head = json.dumps(meta).encode()
    body = raw[pos + 12 + mlen : pos + 8 + size]
    new = raw[:pos] + struct.pack("<QI", 4 + len(head) + len(body), len(head)) + head + body
    path.write_bytes(bytes(new))
    with pytest.raises(batch_cache.CacheCorrupt):
        list(batch_cache.read(path))
