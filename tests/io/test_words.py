"""Word-at-a-time scanning (``streamlearn.io._words``) against the byte loops.

The helpers are checked on their own against plain Python, and the parsers
are run both ways (``words=True``/``False``) on blocks built to hit every
edge of the word paths: digit names of 1-10 digits, names that start with a
digit and go on with letters, control bytes, values with and without a dot,
signs, exponents, 8 digits, a '|' or ':' right after a value, and tokens in
the last 16 bytes of a block, where the word paths must not read.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn.io import Block, parse_block
from streamlearn.io._scan import fast_decimal
from streamlearn.io._words import (
    _ASCII0,
    delimiters,
    digits_value,
    find_byte,
    first_byte,
    name_end,
    non_digits,
    plain_decimal,
)
from streamlearn.io.parse import FMT_SVMLIGHT, FMT_VW

WORDS = settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def word(data: bytes) -> np.uint64:
    return np.uint64(int.from_bytes(data[:8].ljust(8, b"\0"), "little"))


def buf(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8).copy()


# ---------------------------------------------------------------------------
# the helpers


def test_non_digits_is_exact_in_every_byte() -> None:
    for c in range(256):
        for pos in range(8):
            data = bytearray(b"00000000")
            data[pos] = c
            flags = int(non_digits(word(bytes(data)) ^ _ASCII0))
            want = 0 if 48 <= c <= 57 else 0x80 << (8 * pos)
            assert flags == want, (c, pos)


@given(st.binary(min_size=8, max_size=8))
@WORDS
def test_first_delimiter_is_the_first_byte_below_33_or_colon_or_bar(data: bytes) -> None:
    want = next((i for i, c in enumerate(data) if c < 33 or c in b":|"), 8)
    assert int(first_byte(np.uint64(delimiters(word(data))))) == want


@given(st.text("0123456789", min_size=1, max_size=8), st.binary(max_size=7))
@WORDS
def test_digits_value(digits: str, tail: bytes) -> None:
    x = word(digits.encode() + tail) ^ _ASCII0
    assert int(digits_value(x, np.uint64(len(digits)))) == int(digits)


@given(st.binary(max_size=40), st.integers(0, 255), st.booleans())
@WORDS
def test_find_byte(data: bytes, byte: int, words: bool) -> None:
    for i in range(0, len(data) + 1, 3):
        want = data.find(bytes([byte]), i)
        got = find_byte(buf(data), i, len(data), byte, words)
        assert got == (len(data) if want < 0 else want)


NUMBERS = st.one_of(
    st.from_regex(r"\A[0-9]{0,9}(\.[0-9]{0,9})?\Z"),
    st.sampled_from(["5", "5.", ".5", ".", "0", "0.0", "00012", "1e5", "1.5e", "+1", "-2", "nan"]),
)
ENDS = st.sampled_from([" ", "\t", "\r", "\n", "|", ":", "a", "e", "#", "\x01", "", "        "])


@given(NUMBERS, ENDS, st.binary(max_size=8))
@WORDS
def test_plain_decimal_agrees_with_fast_decimal(number: str, end: str, tail: bytes) -> None:
    data = (number + end).encode() + tail
    ok, sig, frac, length = plain_decimal(word(data))
    if not ok:
        return
    assert len(data) >= 8 or data[int(length)] in b" \t\r\n|"
    b = buf(data.ljust(8, b" "))
    fok, value, j = fast_decimal(b, 0, len(b))
    assert fok and j == int(length)
    got = float(sig) / 10.0 ** int(frac)
    assert got == value and np.signbit(got) == np.signbit(value)


@given(st.binary(max_size=24))
@WORDS
def test_name_end(data: bytes) -> None:
    b = buf(data)
    e = name_end(b, 0, len(b))
    ends = [i for i, c in enumerate(data) if c < 33 or c in b":|"]
    if e < 0:
        return  # left to the byte loop
    assert ends and e == ends[0] > 0 and data[e] in b" \t\r\n:|"
    assert e + 8 <= len(data) or e < len(data) - len(data) % 8


# ---------------------------------------------------------------------------
# the parsers both ways

digit_names = st.integers(0, 10**10).map(str) | st.sampled_from(["0", "007", "12345678", "1234567"])
text_names = st.from_regex(r"\A[a-zA-Z0-9_\-\.\x01\x7f\xc3\xa9]{1,20}\Z")
names = st.one_of(digit_names, text_names, st.sampled_from(["1a", "9:", "a|b", "x\x01y"]))
values = st.one_of(NUMBERS, st.sampled_from(["1.5:2", "3|", "4a", "abc", "1e-3", "0.00000001"]))


@st.composite
def vw_features(draw) -> str:
    name = draw(names)
    if draw(st.booleans()):
        return name
    return f"{name}:{draw(values)}"


@st.composite
def vw_line(draw) -> str:
    label = draw(st.sampled_from(["", "1 ", "-1 ", "0.5 2 ", "-0 ", "+3 ", "-x "]))
    parts = [label]
    for _ in range(draw(st.integers(1, 3))):
        ns = draw(st.sampled_from(["|", "|f ", "|ns:2 ", "|a:0 ", "| "]))
        sep = draw(st.sampled_from([" ", "  ", "\t", " \r "]))
        parts.append(ns + sep.join(draw(st.lists(vw_features(), max_size=12))))
    return "".join(parts) + draw(st.sampled_from(["", "\r", " "]))


@st.composite
def svm_line(draw) -> str:
    feats = [
        f"{draw(digit_names)}:{draw(values)}" if draw(st.integers(0, 9)) else draw(names)
        for _ in range(draw(st.integers(0, 12)))
    ]
    comment = draw(st.sampled_from(["", " # c 1:2", "#x"]))
    return draw(st.sampled_from(["1 ", "-1 ", "0.5 ", "qid "])) + " ".join(feats) + comment


def same_both_ways(lines: list[str], fmt: int) -> None:
    data = buf(("\n".join(lines)).encode("utf-8", "surrogateescape"))
    block = Block(data, "<words>", 1)
    a = parse_block(block, fmt, 18, words=True)
    b = parse_block(block, fmt, 18, words=False)
    for field in ("labels", "weights", "bases", "indptr", "indices", "values", "status", "line",
                  "err_pos", "tag_start", "tag_end"):  # fmt: skip
        x, y = getattr(a, field), getattr(b, field)
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), field
        if x.dtype.kind == "f":
            assert np.array_equal(np.signbit(x), np.signbit(y)), field


@pytest.mark.slow
@given(st.lists(vw_line(), min_size=1, max_size=30))
@WORDS
def test_vw_words_equal_bytes(lines: list[str]) -> None:
    same_both_ways(lines, FMT_VW)


@pytest.mark.slow
@given(st.lists(svm_line(), min_size=1, max_size=30))
@WORDS
def test_svmlight_words_equal_bytes(lines: list[str]) -> None:
    same_both_ways(lines, FMT_SVMLIGHT)


def test_benchmark_shaped_lines_both_ways() -> None:
    """Lines shaped like the benchmark file's, far from the block's end."""
    line = "-1 |f 10110:1.74 961440:0.83 825203 abcdefghij:2 x:.5 12:3.\n"
    data = buf((line * 50).encode())
    a = parse_block(Block(data, "<w>", 1), FMT_VW, 18, words=True)
    b = parse_block(Block(data, "<w>", 1), FMT_VW, 18, words=False)
    assert np.array_equal(a.indices, b.indices) and np.array_equal(a.values, b.values)
    assert a.values[:6].tolist() == [1.74, 0.83, 1.0, 2.0, 0.5, 3.0]
