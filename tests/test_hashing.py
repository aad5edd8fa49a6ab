"""VW hashing: numba murmur3 against mmh3, hashstring rule, hand-checked slots."""

from __future__ import annotations

import random

import mmh3
import numpy as np
import pytest

from streamlearn.hashing import (
    CONSTANT_HASH,
    feature_slot,
    hashstring,
    hashstring_py,
    murmur3_32,
    murmur3_32_short,
    namespace_hash,
)

SEEDS = [0, 1, 97562527, 0x7FFFFFFF, 0xFFFFFFFF]


def _random_strings(n: int, rng: random.Random) -> list[bytes]:
    out = []
    alphabet = "abcXYZ019 _:|\t-.é€𝄞\x00\x7f"
    for i in range(n):
        length = rng.randint(0, 100)
        if i % 2:
            s = "".join(chr(rng.randint(32, 126)) for _ in range(length))
        else:
            s = "".join(rng.choice(alphabet) for _ in range(length))
        out.append(s.encode("utf-8"))
    return out


def _buf(b: bytes) -> np.ndarray:
    return np.frombuffer(b, dtype=np.uint8).copy()


@pytest.mark.parametrize("seed", SEEDS)
def test_murmur_matches_mmh3(seed: int) -> None:
    rng = random.Random(seed)
    strings = _random_strings(400, rng)
    # every string at an offset inside one shared buffer, as the parsers hash them
    blob = b"#".join(strings)
    buf = _buf(blob)
    pos = 0
    for s in strings:
        got = int(murmur3_32(buf, pos, pos + len(s), seed))
        assert got == mmh3.hash(s, seed, signed=False), (s, seed)
        pos += len(s) + 1


@pytest.mark.parametrize("seed", SEEDS)
def test_murmur_short_matches_mmh3(seed: int) -> None:
    """Keys of 0-15 bytes taken from two words, whatever the bytes after them."""
    rng = random.Random(seed)
    for _ in range(2000):
        n = rng.randint(0, 15)
        words = bytes(rng.randrange(256) for _ in range(16))
        w0 = np.uint64(int.from_bytes(words[:8], "little"))
        w1 = np.uint64(int.from_bytes(words[8:], "little"))
        got = int(murmur3_32_short(w0, w1, n, seed))
        assert got == mmh3.hash(words[:n], seed, signed=False), (words[:n], seed)


@pytest.mark.parametrize("length", range(0, 9))
def test_murmur_tail_lengths(length: int) -> None:
    s = bytes(range(200, 200 + length))
    assert int(murmur3_32(_buf(s), 0, length, 42)) == mmh3.hash(s, 42, signed=False)


@pytest.mark.parametrize(
    "text, seed, expected",
    [
        (b"123", 0, 123),
        (b"123", 5, 128),
        (b"  007\t", 0, 7),  # trimmed, leading zeros
        (b"4294967296", 0, 0),  # 2**32 wraps
        (b"4294967297", 10, 11),
        (b"18446744073709551616", 0, 0),  # 2**64 wraps in the decimal rule
        (b"99", 0xFFFFFFFF, 98),  # value + seed mod 2**32
        (b"", 0, 0),  # empty after trimming: the seed itself (as VW)
        (b" \x01 ", 77, 77),
        (b"-1", 0, mmh3.hash(b"-1", 0, signed=False)),  # not all digits
        (b"1.5", 0, mmh3.hash(b"1.5", 0, signed=False)),
        (b" a b ", 3, mmh3.hash(b"a b", 3, signed=False)),  # inner bytes kept
        (b"\xc3\xa9", 0, mmh3.hash("é".encode(), 0, signed=False)),  # UTF-8 not trimmed
    ],
)
def test_hashstring_rule(text: bytes, seed: int, expected: int) -> None:
    assert int(hashstring(_buf(text), 0, len(text), seed)) == expected
    assert hashstring_py(text, seed) == expected


def test_hashstring_numba_equals_python_on_random_strings() -> None:
    rng = random.Random(7)
    strings = _random_strings(300, rng) + [str(rng.randrange(10**25)).encode() for _ in range(50)]
    for s in strings:
        for seed in (0, 12345, 0xFFFFFFFF):
            assert int(hashstring(_buf(s), 0, len(s), seed)) == hashstring_py(s, seed)


def test_hand_checked_slots_at_18_bits() -> None:
    assert feature_slot("house", "price", 18) == 204953
    assert feature_slot("house", "123", 18) == 215497
    assert feature_slot("f", "77", 18) == 34952
    assert feature_slot("", "word", 18) == 185504
    assert feature_slot(" ", "word", 18) == 185504
    assert CONSTANT_HASH & (2**18 - 1) == 116060


def test_namespace_and_chain_hash() -> None:
    assert namespace_hash("") == namespace_hash(" ") == 0
    assert namespace_hash("123") == 123  # namespaces follow the digit rule too
    ns = hashstring_py("f")
    assert feature_slot("f", "a", 32, "b") == hashstring_py("b", hashstring_py("a", ns))
    assert feature_slot("f", "a", 32) == hashstring_py("a", ns)


def test_feature_slot_rejects_bad_bits() -> None:
    with pytest.raises(ValueError):
        feature_slot("f", "a", 0)
    with pytest.raises(ValueError):
        feature_slot("f", "a", 33)
