"""VW text parser: every construct against hand-computed (slot, value) pairs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamlearn.hashing import CONSTANT_HASH, feature_slot, hashstring_py
from streamlearn.io import REASONS, describe_errors, parse_bytes, tags
from streamlearn.io.batch import MAX_MAGNITUDE

B = 18
MASK = 2**B - 1
C = CONSTANT_HASH & MASK


def row(text: bytes, bits: int = B, constant: bool = True, limit: float = MAX_MAGNITUDE) -> dict:
    """The single row parsed from ``text`` (numbers above ``limit``: too large)."""
    b = parse_bytes(text, fmt="vw", bits=bits, constant=constant, limit=limit)
    assert b.n == 1, b
    lo, hi = b.indptr[0], b.indptr[1]
    return {
        "status": int(b.status[0]),
        "label": float(b.labels[0]),
        "weight": float(b.weights[0]),
        "base": float(b.bases[0]),
        "tag": tags(b)[0],
        "feats": list(zip(b.indices[lo:hi].tolist(), b.values[lo:hi].tolist(), strict=True)),
        "touching": b.n_touching_tags,
    }


def slot(ns: str, name: str, value: str | None = None) -> int:
    return feature_slot(ns, name, B, value)


def test_doc_examples() -> None:
    assert row(b"|house price")["feats"] == [(204953, 1.0), (C, 1.0)]
    assert row(b"|house 123")["feats"] == [(215497, 1.0), (C, 1.0)]
    assert row(b"|f 77")["feats"] == [(34952, 1.0), (C, 1.0)]
    assert row(b"| word")["feats"] == [(185504, 1.0), (C, 1.0)]


def test_every_construct_in_one_line() -> None:
    r = row(b"-1 2.5 0.5 'ex7 |house price:2 size:-1.5e-3 |f 77 a:b |ns:0.5 x x:4 |  word z:0\n")
    assert (r["status"], r["label"], r["weight"], r["base"], r["tag"]) == (0, -1, 2.5, 0.5, b"ex7")
    assert r["feats"] == [
        (slot("house", "price"), 2.0),
        (slot("house", "size"), -1.5e-3),
        (slot("f", "77"), 1.0),
        (slot("f", "a", "b"), 1.0),  # chain hash
        (slot("ns", "x"), 0.5),  # scaled
        (slot("ns", "x"), 2.0),  # duplicate kept, 4 * 0.5
        (slot("", "word"), 1.0),
        (C, 1.0),  # z:0 dropped, constant last
    ]
    assert r["touching"] == 0


@pytest.mark.parametrize(
    "text, label, weight, base, tag, touching",
    [
        (b"1 |f a", 1.0, 1.0, 0.0, b"", 0),
        (b"+1 |f a", 1.0, 1.0, 0.0, b"", 0),
        (b"-1 0 |f a", -1.0, 0.0, 0.0, b"", 0),  # weight 0 is allowed
        (b"0.5 2 -3 |f a", 0.5, 2.0, -3.0, b"", 0),
        (b"|f a", math.nan, 1.0, 0.0, b"", 0),  # prediction only
        (b"'t |f a", math.nan, 1.0, 0.0, b"t", 0),
        (b"1 2 3 't|f a", 1.0, 2.0, 3.0, b"t", 0),
        (b"1|f a", math.nan, 1.0, 0.0, b"1", 1),  # VW: a tag touching '|'
        (b"1 2|f a", 1.0, 1.0, 0.0, b"2", 1),
        (b"1 2 3 4|f a", 1.0, 2.0, 3.0, b"4", 1),
        (b"1 2 3", 1.0, 2.0, 0.0, b"3", 1),  # no '|': the last token ends the label part
        (b"1 ", 1.0, 1.0, 0.0, b"", 0),
        (b"key\t1 2 |f a", 1.0, 2.0, 0.0, b"", 0),  # up to the first tab is ignored
        (b"\t-1 |f a", -1.0, 1.0, 0.0, b"", 0),
        (b"1 |f a\r", 1.0, 1.0, 0.0, b"", 0),  # CR before LF
    ],
)
def test_label_part(text, label, weight, base, tag, touching) -> None:
    r = row(text)
    assert r["status"] == 0, REASONS.get(r["status"])
    assert (r["label"] == label) or (math.isnan(label) and math.isnan(r["label"]))
    assert (r["weight"], r["base"], r["tag"], r["touching"]) == (weight, base, tag, touching)


def test_touching_tag_counts_and_first_line() -> None:
    b = parse_bytes(b"1 |f a\n\n1|f a\n2|f b\nx|f\n", bits=B)
    assert b.n_touching_tags == 3  # x|f is an unlabeled example tagged x, too
    assert b.first_touching_tag_line == 3


@pytest.mark.parametrize(
    "text, feats",
    [
        (b"|f a:1 a:2", [("f", "a", 1.0), ("f", "a", 2.0)]),
        # VW's order: a namespace's features together, the namespaces as they first come
        (b"|f a |g b |f c", [("f", "a", 1.0), ("f", "c", 1.0), ("g", "b", 1.0)]),
        (b"|f a |g b |h c |g d |f e", [("f", "a", 1.0), ("f", "e", 1.0), ("g", "b", 1.0),
                                       ("g", "d", 1.0), ("h", "c", 1.0)]),  # fmt: skip
        (b"|f a|g b", [("f", "a", 1.0), ("g", "b", 1.0)]),  # '|' ends a name
        (b"|f a:2|g b", [("f", "a", 2.0), ("g", "b", 1.0)]),  # and a number
        (b"||f a", [("f", "a", 1.0)]),  # an empty default namespace
        (b"|f:2 a b:3", [("f", "a", 2.0), ("f", "b", 6.0)]),
        (b"|f:-1 a", [("f", "a", -1.0)]),
        (b"|f:0 a b:c", [("f", "b", "c")]),  # scale 0 drops numbers, not chain hashes
        (b"|f:2 a:b", [("f", "a", "b")]),  # chain-hashed features have value 1
        (
            b"|f a:.5 b:5. c:1E2 d:-0.25e+1",
            [("f", n, v) for n, v in zip("abcd", [0.5, 5, 100, -2.5], strict=True)],
        ),
        (b"|f a:0 b:0.0 c:-0 d:1e-400", []),  # zero (and underflow) drops the feature
        (b"|f a:http://x:8|y", [("f", "a", "http://x:8|y")]),  # strings run to whitespace
        (b"|f a:B", [("f", "a", "B")]),
        (b"|f a:b\tc", [("f", "a", "b"), ("f", "c", 1.0)]),
        (b"|f \t a \t", [("f", "a", 1.0)]),
        (b"|123 456", [("123", "456", 1.0)]),
        ("|ns é:2 \u65e5\u672c".encode(), [("ns", "é", 2.0), ("ns", "日本", 1.0)]),
        (b"|f a\x01", [("f", "a", 1.0)]),  # bytes <= 0x20 are trimmed by hashstring
        (b"|f \x0b12\x0b", [("f", "12", 1.0)]),
        (b"| 1 2:3", [("", "1", 1.0), ("", "2", 3.0)]),
    ],
)
def test_features(text: bytes, feats: list) -> None:
    r = row(text, constant=False)
    assert r["status"] == 0, REASONS.get(r["status"])
    expected = []
    for ns, name, v in feats:
        if isinstance(v, str):
            expected.append((slot(ns, name, v), 1.0))
        else:
            expected.append((slot(ns, name), float(v)))
    assert r["feats"] == expected


def test_non_utf8_names_hash_their_bytes() -> None:
    r = row(b"|f \xff\xfe:2", constant=False)
    assert r["feats"] == [(hashstring_py(b"\xff\xfe", hashstring_py("f")) & MASK, 2.0)]


@pytest.mark.parametrize(
    "text, code",
    [
        (b"x |f a", 1),
        (b"1x |f a", 1),
        (b"0x10 |f a", 1),  # no hex floats
        (b"1 w |f a", 2),
        (b"1 'quoted tag|f a", 2),  # only the last token can be the tag
        (b"1 -2 |f a", 3),
        (b"1 1 b |f a", 4),
        (b"1 2 3 4 |f a", 5),
        (b"1 2 3 4 5 |f a", 5),
        (b"|f a:1x", 6),
        (b"|f a:", 6),
        (b"|f a: b", 6),
        (b"|f a:|g b", 6),
        (b"|f a:-", 6),
        (b"|f a:.", 6),
        (b"|f a:-x", 6),
        (b"|f a:e5 b", 6),  # VW reads e5 as 0: refused rather than guessed
        (b"|f a:E", 6),
        (b"|f a:1.5.3", 6),
        (b"|f a:0x1F", 6),
        (b"|f a:1e", 6),
        (b"|f a:nan", 7),
        (b"|f a:-inf", 7),
        (b"|f a:Infinity", 7),
        (b"|f a:1e309", 7),
        (b"|f:1e200 a:1e200", 7),  # overflow after scaling
        (b"nan |f a", 7),
        (b"1 inf |f a", 7),
        (b"1 1 nan |f a", 7),
        (b"|f:nan a", 7),
        (b"|f:x a", 9),
        (b"|f: a", 9),
        (b"|f:2x a", 9),
        (b"|f a:1:2", 12),
        (b"|f a:1:b", 12),
        (b"|:3 a", 13),
        (b"|:f a", 13),
    ],
)
def test_malformed(text: bytes, code: int) -> None:
    b = parse_bytes(text + b"\n", bits=B)
    assert b.n == 1
    assert int(b.status[0]) == code, (text, REASONS.get(int(b.status[0])))
    assert b.indptr.tolist() == [0, 0]  # no features at all, not even the constant
    assert math.isnan(b.labels[0]) and b.weights[0] == 0.0


def test_malformed_line_does_not_disturb_neighbours() -> None:
    text = b"1 |f a\n-1 |f a:1:2 b\n\n-1 2 |g c:3\n"
    b = parse_bytes(text, bits=B, source="x.vw")
    assert b.status.tolist() == [0, 12, 0]
    assert b.line.tolist() == [1, 2, 4]
    assert b.indptr.tolist() == [0, 2, 2, 4]
    assert b.indices.tolist() == [slot("f", "a"), C, slot("g", "c"), C]
    assert b.values.tolist() == [1.0, 1.0, 3.0, 1.0]
    assert b.labels[2] == -1.0 and b.weights[2] == 2.0
    assert describe_errors(b) == ["x.vw:2: too many colons in a feature: -1 |f a:1:2 b"]


def test_blank_lines_and_line_numbers() -> None:
    text = b"\n  \n\t\r\n1 |f a\n\n\n|f b\r\n \n"
    b = parse_bytes(text, first_line=10)
    assert b.n == 2
    assert b.line.tolist() == [13, 16]
    assert b.line_start.tolist() == [text.index(b"1 |f a"), text.index(b"|f b")]


def test_only_bar_is_an_example_with_the_constant() -> None:
    r = row(b"|")
    assert r["status"] == 0 and r["feats"] == [(C, 1.0)]


def test_constant_off_and_bits() -> None:
    r = row(b"1 |f a b", bits=4, constant=False)
    assert r["feats"] == [(feature_slot("f", "a", 4), 1.0), (feature_slot("f", "b", 4), 1.0)]
    for bits in (1, 7, 24, 32):
        b = parse_bytes(b"1 |f a b:2 123 x:y\n", bits=bits)
        assert int(b.indices.max()) < 2**bits
        assert b.indices[-1] == CONSTANT_HASH & (2**bits - 1)


def test_bom_and_crlf() -> None:
    b = parse_bytes(b"\xef\xbb\xbf1 |f a\r\n-1 |f b\r\n")
    assert b.status.tolist() == [0, 0]
    assert b.labels.tolist() == [1.0, -1.0]
    assert b.indices.tolist() == [slot("f", "a"), C, slot("f", "b"), C]


def test_long_numbers_are_exact() -> None:
    # 17 to 25 significant digits, subnormals and near-halfway cases: equal to float()
    values = [
        "0.1234567890123456789",
        "1234567890123456789012345",
        "2.2250738585072011e-308",
        "4.9e-324",
        "9007199254740993",
        "1.00000000000000011102230246251565404236316680908203125",
        "7.2057594037927933e16",
        "-0.30000000000000004",
    ]
    text = " ".join(f"a{i}:{v}" for i, v in enumerate(values))
    r = row(f"1 |f {text}".encode(), constant=False, limit=math.inf)  # read, not bounded
    assert r["status"] == 0
    assert [v for _, v in r["feats"]] == [float(v) for v in values]


def test_many_slow_numbers_in_one_block() -> None:
    vals = [f"{i}.{'7' * 20}" for i in range(200)]  # more than the first-pass span buffer
    text = "".join(f"{i} |f a:{v}\n" for i, v in enumerate(vals)).encode()
    b = parse_bytes(text, constant=False)
    assert b.status.tolist() == [0] * 200
    assert b.values.tolist() == [float(v) for v in vals]
    assert b.labels.tolist() == list(map(float, range(200)))


def test_slow_value_on_a_line_that_turns_out_malformed() -> None:
    # the first pass sees a placeholder for the slow weight; the exact value is negative
    text = b"1 -1.00000000000000000001 |f a:0.1234567890123456789\n1 |f b:0.12345678901234567891\n"
    b = parse_bytes(text, constant=False)
    assert b.status.tolist() == [3, 0]
    assert b.values.tolist() == [0.12345678901234567891]


def test_excerpt_points_at_the_error_in_long_lines() -> None:
    feats = " ".join(f"f{i}:1" for i in range(60))
    text = f"1 |f {feats} bad:1:2 {feats}\n".encode()
    (msg,) = describe_errors(parse_bytes(text, source="long.vw"))
    assert msg.startswith("long.vw:1: too many colons in a feature: ...")
    assert "bad:1:2" in msg and len(msg.split(": ", 2)[2]) <= 60


def test_tag_bytes_and_spans() -> None:
    b = parse_bytes(b"1 'abc |f a\n2 |f b\n'x\xff |f\n")
    assert tags(b) == [b"abc", b"", b"x\xff"]
    assert np.all(b.tag_end >= b.tag_start)


def test_excerpt_without_line_offsets() -> None:
    import dataclasses

    from streamlearn.io import Block, excerpt

    b = parse_bytes(b"1 |f a\n\nx |f b\n", source="s")
    bare = dataclasses.replace(b, line_start=None, err_pos=None)
    assert excerpt(bare, 1) == "x |f b"  # found by counting newlines
    # a batch whose block no longer holds its text (e.g. replayed from a cache)
    other = dataclasses.replace(bare, block=Block(np.zeros(3, np.uint8), "s", 1))
    assert excerpt(other, 1) == "(line text not available)"


BATCH_FIELDS = ("labels", "weights", "bases", "tag_start", "tag_end", "indptr", "indices",
                "values", "status", "line", "line_start", "err_pos")  # fmt: skip


def test_batch_arrays_are_reused_only_when_no_batch_holds_them(monkeypatch, tmp_path) -> None:
    """Batches (or single arrays of them) kept alive keep their values; the rest go round."""
    from streamlearn.io import iter_blocks, parse, textparse
    from streamlearn.io.textparse import _ArraySets

    monkeypatch.setattr(textparse, "_SETS", _ArraySets(keep=4))
    rng = np.random.default_rng(5)
    lines = []
    for i in range(3000):
        feats = " ".join(f"f{j}:{rng.integers(1, 99) / 8}" for j in range(rng.integers(0, 12)))
        lines.append(f"{i % 3 - 1} {'x' * (i % 5)}|n {feats}\n".encode())
    lines[700] = b"1 |n a:zz\n"  # a malformed line: its error position is kept too
    path = tmp_path / "d.vw"
    path.write_bytes(b"".join(lines))
    kept = []
    for n, block in enumerate(iter_blocks([str(path)], block_size=2000)):
        batch = parse.parse_block(block, parse.FMT_VW, 18)
        copy = {f: getattr(batch, f).copy() for f in BATCH_FIELDS}
        if n % 5 == 0:
            kept.append((batch, copy))  # the whole batch
        elif n % 7 == 0:
            kept.append((batch.values, copy["values"]))  # one array of it
        del batch
    assert len(kept) > 8  # more than the pool keeps: the rest are fresh arrays
    for held, copy in kept:
        if isinstance(held, np.ndarray):
            np.testing.assert_array_equal(held, copy)
        else:
            for f in BATCH_FIELDS:
                np.testing.assert_array_equal(getattr(held, f), copy[f], err_msg=f)
    del kept
    sets = textparse._SETS.sets
    batch = parse.parse_block(next(iter_blocks([str(path)], block_size=2000)), parse.FMT_VW, 18)
    assert len(sets) == 4 and np.shares_memory(batch.indices, sets[0][6])  # reused


def test_pooled_arrays_grow_for_a_block_of_more_lines(monkeypatch) -> None:
    from streamlearn.io import parse, textparse
    from streamlearn.io.batch import Block
    from streamlearn.io.textparse import _ArraySets

    monkeypatch.setattr(textparse, "_SETS", _ArraySets(keep=1))
    big = b"1 |f a b c\n" * 2000
    short = b"1\n" * 600_000  # more rows than a set sized for big blocks holds
    for text in (big, short, big):
        data = np.frombuffer(text, dtype=np.uint8).copy()
        batch = parse.parse_block(Block(data, "d.vw", 1), parse.FMT_VW, 18)
        assert batch.n == text.count(b"\n")
        assert batch.indptr[-1] == batch.n * (4 if text is big else 1)
        del batch


def test_a_wrong_line_count_is_refused_not_overrun(monkeypatch) -> None:
    from streamlearn.io import parse, textparse
    from streamlearn.io.batch import Block
    from streamlearn.io.textparse import _ArraySets

    monkeypatch.setattr(textparse, "_SETS", _ArraySets(keep=0))  # arrays of the exact size
    data = np.frombuffer(b"1 |f a\n" * 10, dtype=np.uint8).copy()
    with pytest.raises(RuntimeError, match="more lines"):
        parse.parse_block(Block(data, "d.vw", 1, newlines=3), parse.FMT_VW, 18)


def test_batches_beyond_the_pool_hold_only_their_features(monkeypatch) -> None:
    """With no pooled set free, arrays are made per block and the features copied out."""
    from streamlearn.io import parse, textparse
    from streamlearn.io.batch import Block
    from streamlearn.io.textparse import _ArraySets

    data = np.frombuffer(b"1 |f a b:2\n-1 |g c\n" * 50, dtype=np.uint8).copy()
    pooled = parse.parse_block(Block(data, "d.vw", 1), parse.FMT_VW, 18)
    monkeypatch.setattr(textparse, "_SETS", _ArraySets(keep=0))
    fresh = parse.parse_block(Block(data, "d.vw", 1), parse.FMT_VW, 18)
    assert fresh.indices.base is None and fresh.values.base is None  # own, exact arrays
    for f in BATCH_FIELDS:
        np.testing.assert_array_equal(getattr(fresh, f), getattr(pooled, f), err_msg=f)


def test_anonymous_features_are_vws():
    """``|f :3``: VW's anonymous feature, the namespace's hash plus its count in the segment
    (a value of 0 counted too, not kept); ``:abc`` chains from the hash of no name."""
    from streamlearn.hashing import hashstring_py, namespace_hash

    b = parse_bytes(b"1 |f :3 a :0 :2 :abc |f :4\n", fmt="vw", bits=18, constant=False)
    assert int(b.status[0]) == 0
    nsh = namespace_hash("f")
    mask = (1 << 18) - 1
    want = [(nsh & mask, 3.0), (hashstring_py("a", nsh) & mask, 1.0),
            ((nsh + 2) & mask, 2.0), (hashstring_py("abc", nsh) & mask, 1.0),
            (nsh & mask, 4.0)]  # fmt: skip  (the count starts again in each segment)
    assert list(zip(b.indices.tolist(), b.values.tolist(), strict=True)) == want
