"""N-grams, skip-grams and --sort_features (streamlearn/io/grams.py), and --hash all.

The kernel is checked against a plain-Python reference written from VW's
``kskip_ngram_transformer.cc`` and ``unique_sort.cc`` (the slots from the
features' names); ``tests/test_vw_parity.py`` checks the progressive loss
against vw itself.
"""

from __future__ import annotations

import itertools

import mmh3
import numpy as np
import pytest

from streamlearn.hashing import CONSTANT_HASH, feature_slot
from streamlearn.io.batch import Block
from streamlearn.io.grams import compile_grams, gram_masks
from streamlearn.io.interactions import compile_interactions
from streamlearn.io.parse import FMT_VW, parse_block
from tests.unix import invoke

BITS = 18
MASK = (1 << BITS) - 1
C = 27942141


def lines(n: int, seed: int) -> list[str]:
    """Lines with repeated namespaces, duplicates and values (VW's grams ignore values)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        parts = ["1"]
        for ns in ("a", "b", "a", ""):
            k = int(rng.integers(0, 5))
            feats = " ".join(f"{ns or 'd'}{int(rng.integers(0, 6))}:{rng.integers(1, 4)}"
                             for _ in range(k))  # fmt: skip
            parts.append(f"|{ns} {feats}")
        out.append(" ".join(parts))
    return out


def groups(line: str) -> list[tuple[str, list[tuple[int, float]]]]:
    """(namespace byte, [(slot, value)]) in order of first appearance, as VW groups them."""
    out: dict[str, list[tuple[int, float]]] = {}
    for seg in line.split("|")[1:]:
        head, _, rest = seg.partition(" ")
        for tok in rest.split():
            f, _, v = tok.partition(":")
            out.setdefault(head[:1] or " ", []).append((feature_slot(head, f, BITS),
                                                        float(v or 1)))  # fmt: skip
    return list(out.items())


def reference(line: str, n: dict[str, int], skips: dict[str, int], sort: bool) -> list:
    """VW's features of one line: each namespace's features (sorted and unique with
    ``sort``), then its grams; the constant last."""
    out = []
    for ns, feats in groups(line):
        if sort:
            feats = sorted(feats)
            feats = [f for i, f in enumerate(feats) if i == 0 or f[0] != feats[i - 1][0]]
        out += feats
        for m in range(1, n.get(ns, 0)):
            for mask in gram_masks(m, skips.get(ns, 0)):
                for i in range(len(feats) - mask[-1]):
                    acc = feats[i][0]
                    for off in mask[1:]:
                        acc = (acc * C + feats[i + off][0]) & 0xFFFFFFFFFFFFFFFF
                    out.append((acc & MASK, 1.0))
    return out + [(CONSTANT_HASH & MASK, 1.0)]


def parsed(text: list[str], **kw) -> list[list[tuple[int, float]]]:
    data = np.frombuffer(("\n".join(text) + "\n").encode(), dtype=np.uint8).copy()
    b = parse_block(Block(data, "t", 1), FMT_VW, BITS, True, compile_interactions(**kw))
    return [list(zip(b.indices[b.indptr[i]:b.indptr[i + 1]].tolist(),
                     b.values[b.indptr[i]:b.indptr[i + 1]].tolist(), strict=True))
            for i in range(b.n)]  # fmt: skip


def test_gram_masks_follow_vws_recursion():
    assert gram_masks(1, 0) == [(0, 1)]
    assert gram_masks(1, 2) == [(0, 1), (0, 2), (0, 3)]
    assert gram_masks(2, 0) == [(0, 1, 2)]
    assert gram_masks(2, 1) == [(0, 1, 2), (0, 1, 3), (0, 2, 3)]
    ptr, _, lengths = compile_grams(("3",), ())
    assert lengths[ptr[97]:ptr[98]].tolist() == [2, 3]  # bigrams, then trigrams
    assert ptr[129] == ptr[128]  # never the constant


@pytest.mark.parametrize(
    ("ngram", "skips"),
    [(("2",), ()), (("3",), ()), (("2",), ("1",)), (("3",), ("2",)), (("a2",), ()),
     (("a3", "b2"), ("a1",)), (("4",), ("b1",))],
)  # fmt: skip
@pytest.mark.parametrize("seed", range(4))
def test_grams_equal_a_reference_of_vws_transformer(ngram, skips, seed):
    text = lines(30, seed)
    n, k = {}, {}
    for spec, into in ((ngram, n), (skips, k)):
        for s in spec:
            if s[0].isdigit():
                into.update({c: int(s) for c in "ab "})
            else:
                into[s[0]] = int(s[1:])
    got = parsed(text, ngram=ngram, skips=skips)
    for line, row in zip(text, got, strict=True):
        assert row == reference(line, n, k, sort=False), line


@pytest.mark.parametrize("seed", range(4))
def test_sort_features_sorts_and_keeps_the_first_of_each_slot(seed):
    text = lines(30, seed)
    for line, row in zip(text, parsed(text, sort_features=True), strict=True):
        assert row == reference(line, {}, {}, sort=True), line


def test_grams_are_crossed_and_dropped_with_their_namespace():
    text = ["1 |a x y z |b u v"]
    grams = parsed(text, ngram=("a2",))[0]
    assert len(grams) == 3 + 2 + 2 + 1
    crossed = parsed(text, ngram=("a2",), quadratic=("ab",))[0]
    assert len(crossed) == len(grams) + 5 * 2  # a's 3 features and 2 grams, times b's 2
    dropped = parsed(text, ngram=("a2",), ignore=("a",))[0]
    assert [s for s, _ in dropped] == [s for s, _ in grams[5:]]


@pytest.mark.parametrize(
    "kw",
    [{"ngram": ("x",)}, {"ngram": ("2a",)}, {"skips": ("1",)}, {"ngram": ("99",)},
     {"ngram": ("2",), "sort_features": True}],
)  # fmt: skip
def test_bad_gram_options_are_refused(kw):
    with pytest.raises(ValueError):
        compile_interactions(**kw)


def test_hash_all_hashes_digit_names_namespaces_and_strings():
    """VW's ``--hash all``: murmur3 of every name (no number shortcut, no trim)."""
    text = ["1 |f 123 abc k:v |0 7"]
    got = parsed(text, hash_all=True)[0]
    f = mmh3.hash(b"f", 0, signed=False)
    zero = mmh3.hash(b"0", 0, signed=False)
    want = [mmh3.hash(b"123", f, signed=False), mmh3.hash(b"abc", f, signed=False),
            mmh3.hash(b"v", mmh3.hash(b"k", f, signed=False), signed=False),
            mmh3.hash(b"7", zero, signed=False), CONSTANT_HASH]  # fmt: skip
    assert [s for s, _ in got] == [w & MASK for w in want]
    # and without: digit names are their number plus the namespace's hash
    assert parsed(text)[0][0][0] == feature_slot("f", "123", BITS)


def test_hash_all_is_refused_on_svmlight(tmp_path):
    p = tmp_path / "d.svm"
    p.write_text("1 1:0.5 3:1\n-1 2:1\n")
    r = invoke(["train", str(p), "--hash", "all", "--quiet"])
    assert r.exit_code == 2 and "VW text only" in r.output


def test_invert_hash_names_slots_under_hash_all(tmp_path):
    p = tmp_path / "d.vw"
    p.write_text("".join(f"{i % 2} |f {i % 5} w{i % 3}\n" for i in range(40)))
    out = tmp_path / "inv.txt"
    r = invoke(["train", str(p), "--hash", "all", "--invert-hash", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    named = {}
    for row in out.read_text().splitlines()[2:]:
        slot, _, names = row.split("\t")
        for name in names.split():
            named[name] = int(slot)
    f = mmh3.hash(b"f", 0, signed=False)
    for name in ("3", "w1"):
        assert named[f"f^{name}"] == mmh3.hash(name.encode(), f, signed=False) & MASK


def test_duplicate_interactions_kept_on_request():
    text = ["1 |a x y |b u"]
    once = parsed(text, quadratic=("ab", "ba"))[0]
    twice = parsed(text, quadratic=("ab", "ba"), leave_duplicate_interactions=True)[0]
    assert len(twice) - len(once) == 2
    # '::' crosses every ordered pair when duplicates are left
    wild = parsed(text, quadratic=("::",))[0]
    all_pairs = parsed(text, quadratic=("::",), leave_duplicate_interactions=True)[0]
    assert len(all_pairs) > len(wild)
    assert list(itertools.islice(all_pairs, 4)) == list(itertools.islice(wild, 4))


def test_grams_of_string_valued_features_are_named_by_their_names(tmp_path) -> None:
    """VW's audit names an n-gram by its terms' names: ``s^a^b`` for ``a:x0 b``, not
    ``s^a^x0^b`` (the feature itself stays ``s^a^x0``)."""
    pytest.importorskip("vowpalwabbit")
    from tests.unix import SL_VW, VW_MODULE, run_module

    (tmp_path / "g.vw").write_text("1 |s a:x0 b c:y1 d\n-1 | e:z f g:w h:k\n")
    args = ["-d", "g.vw", "--ngram", "3", "--skips", "1", "--audit", "--quiet"]
    shown = [run_module(prog, args, tmp_path).stdout for prog in (VW_MODULE, SL_VW)]
    assert "s^a^b:" in shown[1] and "s^a^x0:" in shown[1]
    assert shown[1] == shown[0]
