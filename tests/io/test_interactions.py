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
