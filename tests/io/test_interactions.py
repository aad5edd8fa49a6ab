"""Interactions and namespace filters: VW's slots, values and progressive loss."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.hashing import CONSTANT_HASH, feature_slot
from streamlearn.io.batch import Block
from streamlearn.io.interactions import compile_interactions
from streamlearn.io.parse import FMT_VW, parse_block
from tests.unix import invoke

BITS = 18
MASK = (1 << BITS) - 1
FNV = 16777619


def random_lines(n: int, seed: int) -> list[str]:
    """Lines with several namespaces (two sharing a first letter), scales, defaults."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        parts = [f"{1 if rng.random() < 0.5 else -1} 't{i}"]
        for ns in ("a", "ab", "b:0.5", "c", ""):
            k = int(rng.integers(0, 4))
            feats = " ".join(f"{ns[:1] or 'd'}{int(rng.integers(0, 20))}:{rng.random():.3f}"
                             for _ in range(k))  # fmt: skip
            parts.append(f"|{ns} {feats}")
        out.append(" ".join(parts))
    return out


def reference(line: str, terms: list[str], constant: bool = True) -> list[tuple[int, float]]:
    """VW's features of one line, from its names: own features, then the crosses."""
    groups: dict[str, list[tuple[int, float]]] = {}
    order: list[tuple[int, float]] = []
    for seg in line.split("|")[1:]:
        head, _, rest = seg.partition(" ")
        name, _, scale = head.partition(":")
        s = float(scale) if scale else 1.0
        for tok in rest.split():
            f, _, v = tok.partition(":")
            val = (float(v) if v else 1.0) * s
            if val == 0:
                continue
            slot = feature_slot(name, f, BITS)
            order.append((slot, val))
            groups.setdefault(name[:1] or " ", []).append((slot, val))
    if constant:
        order.append((CONSTANT_HASH & MASK, 1.0))
    out = list(order)
    for term in terms:
        lists = [groups.get(c, []) for c in term]
        for combo in itertools.product(*[range(len(lst)) for lst in lists]):
            # combinations where a term repeats the previous one: index >= previous
            if any(term[a] == term[a - 1] and combo[a] < combo[a - 1] for a in range(1, len(term))):
                continue
            acc, val = lists[0][combo[0]][0], lists[0][combo[0]][1]
            for a in range(1, len(term)):
                acc = ((FNV * acc) ^ lists[a][combo[a]][0]) & 0xFFFFFFFFFFFFFFFF
                val *= lists[a][combo[a]][1]
            out.append((acc & MASK, val))
    return out


@pytest.mark.parametrize("terms", [["aa"], ["ab"], ["ba", "c "], ["abc"], ["aab"], ["abcd"]])
@pytest.mark.parametrize("seed", range(5))
def test_interaction_slots_equal_a_reference_of_vws_arithmetic(terms, seed):
    lines = random_lines(40, seed)
    quad = tuple(t for t in terms if len(t) == 2)
    cub = tuple(t for t in terms if len(t) == 3)
    more = tuple(t for t in terms if len(t) == 4)
    inter = compile_interactions(quadratic=quad, cubic=cub, interactions=more)
    data = np.frombuffer(("\n".join(lines) + "\n").encode(), dtype=np.uint8).copy()
    batch = parse_block(Block(data, "r.vw", 1), FMT_VW, BITS, False, inter)
    for i, line in enumerate(lines):
        lo, hi = batch.indptr[i], batch.indptr[i + 1]
        got = sorted(zip(batch.indices[lo:hi].tolist(), batch.values[lo:hi].tolist(),
                         strict=True))  # fmt: skip
        want = sorted(reference(line, terms, constant=False))
        assert [s for s, _ in got] == [s for s, _ in want]
        np.testing.assert_allclose([v for _, v in got], [v for _, v in want], rtol=1e-12)


def test_vw_rules_for_the_list_of_interactions():
    spec = compile_interactions(quadratic=("ba", "ab", "bb"), cubic=("bab", "cba"))
    assert [bytes(t[:n].tolist()).decode() for t, n in zip(spec.terms, spec.lengths,
            strict=True)] == ["ab", "bb", "abb", "cba"]  # fmt: skip
    with pytest.raises(ValueError, match="expected 2"):
        compile_interactions(quadratic=("abc",))
    with pytest.raises(ValueError, match="expected 3"):
        compile_interactions(cubic=("ab",))


def test_ignore_keep_and_ignore_linear():
    line = b"1 |a x:2 y |b z:3 |c w\n"

    def feats(**kw):
        batch = parse_block(Block(np.frombuffer(line, dtype=np.uint8).copy(), "x", 1), FMT_VW,
                            BITS, True, compile_interactions(**kw))  # fmt: skip
        return batch.indices.tolist()

    ax, ay, bz, cw = (feature_slot(ns, f, BITS) for ns, f in ("ax", "ay", "bz", "cw"))
    const = CONSTANT_HASH & MASK
    ab = [((FNV * h) ^ bz) & MASK for h in (ax, ay)]
    assert feats() == [ax, ay, bz, cw, const]
    assert feats(ignore=("a",)) == [bz, cw, const]
    assert feats(keep=("b",)) == [bz, const]  # the constant is kept
    assert feats(quadratic=("ab",), ignore=("a",)) == [bz, cw, const]
    assert feats(quadratic=("ab",), ignore_linear=("a",)) == [bz, cw, const, *ab]


def test_q_is_quadratic_and_quiet_is_spelled_out(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x |b y\n-1 |a z |b y\n")
    r = invoke(["train", str(data), "-q", "ab", "--quiet", "--report", str(tmp_path / "r.json")])
    assert r.exit_code == 0 and r.output == ""
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["total_features"] == 2 * 4  # a, b, the constant, a x b
    assert report["config"]["quadratic"] == ["ab"]
    r = invoke(["train", str(data), "-q", "abc"])
    assert r.exit_code == 2 and "expected 2 namespace characters" in r.output


def test_a_model_keeps_its_interactions(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x |b y\n-1 |a z |b y\n" * 10)
    m = tmp_path / "m.sl"
    assert invoke(["train", str(data), "-q", "ab", "-f", str(m), "--quiet"]).exit_code == 0
    r = invoke(["train", str(data), "-i", str(m), "-q", "ba", "--quiet"])
    assert r.exit_code == 2 and "quadratic" in r.output
    p1 = invoke(["predict", "-i", str(m), str(data), "-p", "-", "--quiet"]).output
    r = invoke(["train", str(data), "-f", str(tmp_path / "plain.sl"), "--quiet"])
    p2 = invoke(["predict", "-i", str(tmp_path / "plain.sl"), str(data), "-p", "-", "--quiet"])
    assert p1 != p2.output  # the crosses are used when scoring


HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None


def _vw_loss(args: list[str], path) -> float:
    r = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(path), *args],
                       capture_output=True, text=True, check=True)  # fmt: skip
    return float(re.search(r"average loss = ([0-9.e+-]+)", r.stderr).group(1))


@pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed (pip install '.[bench]')")
@pytest.mark.parametrize(
    "opts",
    [
        ["-q", "ab"], ["-q", "aa"], ["-q", "::"], ["-q", "ab", "-q", "ba", "-q", "cc"],
        ["--cubic", "abc"], ["--cubic", "bab"], ["--interactions", "abcd"],
        ["-q", "ab", "--ignore", "c"], ["-q", "ab", "--keep", "a", "--keep", "b"],
        ["-q", "ab", "--ignore_linear", "a"],
        ["-q", "a:"], ["-q", ":a"], ["-q", ":a", "-q", "ba"], ["--cubic", ":::"],
        ["--cubic", "a::"], ["--cubic", "::b"], ["--cubic", ":a:"], ["--interactions", "::::"],
        ["--interactions", "a:b:"], ["-q", "::", "--cubic", "c::"],
    ],
)  # fmt: skip
def test_progressive_loss_equals_vw_sgd(tmp_path, opts):
    lines = random_lines(400, 11)
    path = tmp_path / "d.vw"
    path.write_text("\n".join(lines) + "\n")
    rep = tmp_path / "r.json"
    common = ["-l", "0.05", "--power_t", "0.5"]
    r = invoke(["train", "--algo", "sgd", "--loss", "logistic", *common, *opts, str(path),
                "--report", str(rep), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    ours = json.loads(rep.read_text())["average_loss"]
    theirs = _vw_loss(["--sgd", "--loss_function", "logistic", *common, *opts], path)
    assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-6)


@pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed (pip install '.[bench]')")
def test_invert_hash_names_crosses_as_vw(tmp_path):
    path = tmp_path / "d.vw"
    path.write_text("\n".join(random_lines(60, 5)) + "\n")
    opts = ["-q", "ab", "-q", "a ", "--cubic", "abc"]
    ours = tmp_path / "ours.txt"
    r = invoke(["train", "--algo", "sgd", "--loss", "logistic", "-l", "0.05", *opts, str(path),
                "--invert-hash", str(ours), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    got = set()
    for row in ours.read_text().splitlines()[2:]:
        slot, _, names = row.split("\t")
        got.update((n, int(slot)) for n in names.split())
    theirs = tmp_path / "vw.txt"
    subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(path), "--sgd",
                    "--loss_function", "logistic", "-l", "0.05", *opts, "--invert_hash",
                    str(theirs), "--quiet"], check=True)  # fmt: skip
    want = set()
    for row in theirs.read_text().splitlines():
        m = re.fullmatch(r"(.+):(\d+):(\S+)", row)
        if m and "*" in m.group(1):
            want.add((m.group(1), int(m.group(2))))
    crosses = {x for x in got if "*" in x[0]}
    assert crosses == want and len(want) > 100


@pytest.mark.parametrize("algo", [["--algo", "sgd"], ["--algo", "tg", "--l1", "1e-4"],
                                  ["--algo", "fobos", "--l1", "1e-4", "--l2", "1e-3"]])  # fmt: skip
def test_crosses_replayed_from_the_cache_equal_a_fresh_parse(tmp_path, algo):
    path = tmp_path / "d.vw"
    path.write_text("\n".join(random_lines(300, 2)) + "\n")
    crosses = ["-q", "ab", "--cubic", "abc"]
    plain = ["train", *algo, "--loss", "logistic", "--passes", "3", "--holdout-period", "5",
             str(path), "--quiet"]  # fmt: skip
    args = [*plain, *crosses]
    m1, m2 = tmp_path / "cached.sl", tmp_path / "parsed.sl"
    assert invoke([*args, "--cache", str(tmp_path / "c"), "-f", str(m1)]).exit_code == 0
    assert invoke([*args, "-f", str(m2)]).exit_code == 0  # re-reads the file each pass
    from streamlearn import model as model_io

    a, b = model_io.load(m1), model_io.load(m2)
    assert np.array_equal(a.slots, b.slots) and np.array_equal(a.weights, b.weights)
    # a cache built without the crosses is not reused with them
    r = invoke([*plain, "--cache", str(tmp_path / "c"), "-f", str(m2)])
    assert r.exit_code == 0
    assert not np.array_equal(model_io.load(m2).weights, a.weights)


def _vwexample_terms(templates: list[list[int]], present: list[int], dedupe: bool) -> list:
    """VW's list of one example's interactions, straight from its rules (plain Python):
    wildcards expanded over the example's namespaces (byte order; '::' as the pairs
    i <= j, or every ordered pair without dedupe; others as combinations with
    repetition), the list sorted (shorter first, bytewise), duplicates equal up to
    order dropped (the first kept), a term with a repeated and a different namespace
    sorted."""
    sp = sorted(present)
    out: list[list[int]] = []
    for t in templates:
        wild = [a for a, c in enumerate(t) if c == 58]
        if not wild:
            out.append(list(t))
            continue
        if len(wild) == 2 and not dedupe:
            fills = list(itertools.product(sp, repeat=2))
        elif len(wild) == 2:
            fills = [(x, y) for i, x in enumerate(sp) for y in sp[i:]]
        else:  # VW's odometer: index tuples that never increase, first index fastest
            fills = [tuple(reversed(c)) for c in itertools.combinations_with_replacement(sp,
                                                                                     len(wild))]
            fills.sort(key=lambda f: tuple(sp.index(x) for x in reversed(f)))
        for f in fills:
            row = list(t)
            for a, v in zip(wild, f, strict=True):
                row[a] = v
            out.append(row)
    out.sort(key=lambda r: (len(r), r))
    kept, seen = [], set()
    for r in out:
        key = tuple(sorted(r))
        if dedupe and key in seen:
            continue
        seen.add(key)
        repeated = len(set(r)) < len(r)
        kept.append(sorted(r) if repeated and len(set(r)) > 1 else r)
    return kept


@pytest.mark.parametrize("seed", range(30))
def test_example_terms_equal_vws_rules(seed):
    """The kernel's term list (sorted by key, deduplicated by canonical form) is the one
    VW's rules give, for random templates with and without wildcards."""
    from streamlearn.io.crosses import example_terms, terms_room
    from streamlearn.io.interactions import MAX_TERMS

    rng = np.random.default_rng(seed)
    alphabet = [97, 98, 99, 100, 32, 58, 58]
    templates = [[int(rng.choice(alphabet)) for _ in range(int(rng.integers(2, 5)))]
                 for _ in range(int(rng.integers(1, 6)))]  # fmt: skip
    present = sorted({int(c) for c in rng.choice([97, 98, 99, 100, 32, 120], rng.integers(0, 6))})
    terms = np.full((len(templates), MAX_TERMS), -1, dtype=np.int64)
    for i, t in enumerate(templates):
        terms[i, : len(t)] = t
    lengths = np.array([len(t) for t in templates], dtype=np.int64)
    for dedupe in (True, False):
        room = max(terms_room(terms, lengths, len(present)), 1)
        out = np.empty((room, MAX_TERMS), dtype=np.int64)
        out_len = np.empty(room, dtype=np.int64)
        n = example_terms(terms, lengths, np.array(present + [0], dtype=np.int64),
                           len(present), out, out_len, dedupe)  # fmt: skip
        got = [out[r, : out_len[r]].tolist() for r in range(n)]
        assert got == _vwexample_terms(templates, present, dedupe), (templates, present)


def _concat(parts: list) -> tuple:
    rows = [np.concatenate([getattr(b, f) for b in parts]) for f in
            ("labels", "weights", "status", "line")]  # fmt: skip
    feats = [np.concatenate([b.indices[b.indptr[i]: b.indptr[i + 1]] for b in parts
                             for i in range(b.n)])]  # fmt: skip
    lengths = np.concatenate([np.diff(b.indptr) for b in parts])
    return (*rows, *feats, lengths)


@pytest.mark.parametrize("budget", [1, 7, 60, 1000])
def test_crosses_in_parts_of_bounded_memory_equal_the_whole_block(budget):
    """A block whose crosses pass the budget comes as several batches, each within it (but
    for a single row over it), whose rows are the whole block's, long and malformed
    lines in their places."""
    from streamlearn.io.parse import parse_block_parts

    lines = random_lines(30, 4)
    lines[3] = "1 |a x:nan"  # malformed
    lines[17] = ""  # blank
    lines[8] = ""  # where the reader left out a long line (line 9)
    text = ("\n".join(lines) + "\n").encode()
    data = np.frombuffer(text, dtype=np.uint8).copy()
    inter = compile_interactions(quadratic=("ab", "aa"), cubic=("abc",))
    block = Block(data, "p.vw", 1, long_lines=((9, 10_000, b"1 |a long"), (31, 10, b"x")))
    whole = parse_block(block, FMT_VW, BITS, True, inter)
    first, rest = parse_block_parts(block, FMT_VW, BITS, True, inter, budget=budget)
    parts = [first, *(rest() if rest is not None else [])]
    assert (len(parts) > 1) == (budget < whole.nnz)
    for b in parts:
        assert np.count_nonzero(np.diff(b.indptr)) == 1 or b.nnz <= budget
    for x, y in zip(_concat(parts), _concat([whole]), strict=True):
        np.testing.assert_array_equal(x, y)
    assert {7, 18} <= set(whole.status.tolist())  # non-finite value, long line


def test_a_line_with_too_many_crosses_is_malformed_and_the_others_learn():
    line = b"1 |a " + b" ".join(b"f%d" % i for i in range(50)) + b"\n"
    data = np.frombuffer(b"-1 |a x y\n" + line + b"1 |a z\n", dtype=np.uint8).copy()
    inter = compile_interactions(cubic=("aaa",), max_crosses=22_100 - 1)  # C(52, 3) = 22100
    batch = parse_block(Block(data, "c.vw", 1), FMT_VW, BITS, True, inter)
    assert batch.status.tolist() == [0, 19, 0]
    assert np.isnan(batch.labels[1]) and batch.weights[1] == 0
    assert np.diff(batch.indptr).tolist() == [3 + 4, 0, 2 + 1]  # own + constant + crosses
    inter = compile_interactions(cubic=("aaa",), max_crosses=22_100)
    assert parse_block(Block(data, "c.vw", 1), FMT_VW, BITS, True, inter).status[1] == 0
    wild = compile_interactions(interactions=("::::",), max_crosses=100)  # C(7, 4) = 35 fits
    many = b"1 " + b" ".join(b"|%c x" % c for c in b"abcdefghij") + b"\n"  # C(13, 4) = 715
    few = b"1 " + b" ".join(b"|%c x" % c for c in b"abcd") + b"\n"
    data = np.frombuffer(many + few, dtype=np.uint8).copy()
    assert parse_block(Block(data, "w.vw", 1), FMT_VW, BITS, True, wild).status.tolist() == [19, 0]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS, as Linux applies it")
def test_hostile_crosses_run_in_bounded_memory_and_linear_time(tmp_path):
    """--cubic fff on one 1,000-feature line (167 M crosses: 3.2 GB before) is skipped as
    malformed under a 1.5 GB address-space limit; --interactions :::: on one line of 40
    one-feature namespaces (123,410 crosses; over a minute before) learns."""
    wide = tmp_path / "wide.vw"
    wide.write_text("1 |f " + " ".join(f"w{i}" for i in range(1000)) + "\n-1 |f a b\n")
    many = tmp_path / "many.vw"
    names = [chr(c) for c in range(ord("A"), ord("Z") + 1)] + [chr(c) for c in range(97, 111)]
    many.write_text("1 " + " ".join(f"|{n} x" for n in names) + "\n")
    limit = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000,) * 2);"
             "from streamlearn.cli import main; sys.argv[0] = 'sl'; main()")  # fmt: skip
    for path, opts, code in ((wide, ["--cubic", "fff"], 0), (many, ["--interactions", "::::"], 0)):
        r = subprocess.run([sys.executable, "-c", limit, "train", str(path), *opts, "-b", "20",
                            "-f", str(tmp_path / "m.sl")], capture_output=True, text=True,
                           timeout=600)  # fmt: skip
        assert r.returncode == code, r.stderr[-2000:]
        assert "Traceback" not in r.stderr
    assert "more crosses than --max-crosses" in subprocess.run(
        [sys.executable, "-c", limit, "train", str(wide), "--cubic", "fff", "-b", "20"],
        capture_output=True, text=True, timeout=600).stderr  # fmt: skip


def _fusable_lines(rng: np.random.Generator, n: int) -> list[str]:
    """Lines whose namespaces mostly come in one run each; a few repeat one (the parse
    kernel then leaves the crosses to expand_batch), are malformed or blank."""
    out = []
    for _ in range(n):
        u = rng.random()
        if u < 0.03:
            out.append("1 |a x:nan")
            continue
        if u < 0.05:
            out.append("")
            continue
        parts = [str(rng.choice([-1, 1]))]
        for ns in rng.permutation(["a", "b", "c", "u", "a2:0.5"])[: rng.integers(0, 5)]:
            feats = " ".join(f"w{rng.integers(0, 30)}" + (f":{rng.normal():.3f}" if rng.random()
                             < 0.3 else "") for _ in range(rng.integers(0, 7)))  # fmt: skip
            parts.append(f"|{ns} {feats}")
        if u > 0.95:
            parts.append("|b again")  # a second run of b
        out.append(" ".join(parts))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_crosses_the_parse_kernel_writes_equal_the_expanding_pass(seed, monkeypatch):
    """Where it can (no wildcard, filter or n-gram), the VW parse kernel writes each row's
    crosses right after it (crosses.cross_row) instead of expand_batch copying every
    row: the same rows, slots, values, statuses and labels, with the kernel stopping at a
    repeated namespace or when room runs short, and a row over --max-crosses malformed."""
    import streamlearn.io.parse as parse_mod
    import streamlearn.io.textparse as textparse

    rng = np.random.default_rng(seed)
    lines = _fusable_lines(rng, int(rng.integers(1, 400)))
    if len(lines) > 1:
        lines[1] = ""  # where the reader left out a long line (line 2)
    data = np.frombuffer(("\n".join(lines) + "\n").encode(), dtype=np.uint8).copy()
    block = Block(data, "f.vw", 1, long_lines=((2, 10_000, b"1 |a long"),))
    expanded = []
    real = textparse.expand_batch

    def spy(indptr, *args):
        expanded.append(indptr.shape[0] - 1 - args[13])  # rows from lo on
        return real(indptr, *args)

    monkeypatch.setattr(textparse, "expand_batch", spy)
    for quad, cubic, f32, cap in [(("ab",), (), False, 1 << 25), (("ab", "aa", "cu"), (), True, 40),
                                  (("bc",), ("abc", "aab"), False, 1 << 25),
                                  (("aa", "bb", "cc", "ab", "ac", "bc"), ("aaa", "bbb"), False,
                                   1 << 25)]:  # fmt: skip
        inter = compile_interactions(quadratic=quad, cubic=cubic, f32=f32, max_crosses=cap)
        whole = parse_block(block, FMT_VW, BITS, True, inter)
        expanded.clear()
        first, rest = parse_mod.parse_block_parts(block, FMT_VW, BITS, True, inter)
        parts = [first, *(rest() if rest is not None else [])]
        if lines and "again" not in lines[0] and "nan" not in lines[0]:
            assert not expanded or expanded[0] < whole.n  # the kernel crossed some rows
        for x, y in zip(_concat(parts), _concat([whole]), strict=True):
            np.testing.assert_array_equal(x, y)
        values = np.concatenate([b.values[: b.nnz] for b in parts])
        np.testing.assert_array_equal(values, whole.values[: whole.nnz])
        for name in ("bases", "tag_start", "tag_end", "err_pos", "line_start"):
            np.testing.assert_array_equal(np.concatenate([getattr(b, name) for b in parts]),
                                          getattr(whole, name))  # fmt: skip
        assert sum(b.n_touching_tags for b in parts) == whole.n_touching_tags
