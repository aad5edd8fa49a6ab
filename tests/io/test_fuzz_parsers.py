"""Fuzzing the parsers: random bytes and mutated valid lines against a reference.

Every generated block (many lines per block, so each hypothesis example costs
one kernel call) is checked three ways:

* invariants: no crash, slots below ``2**bits``, finite values, known status
  codes, right line numbers, constant last in every usable row;
* a plain-Python reference parser written from ``docs/input-formats.md``
  (regular expressions, ``float()``, ``mmh3``): same rows, statuses, labels,
  weights, bases, tags, slots and values, bit for bit; with ``numbers="vw"``
  (``sl vw``), the values VW 9 reads (:func:`~streamlearn.io.vwfloat.vw_parse_float`,
  itself checked against VW in ``test_vw_numbers.py``), the grammar unchanged;
* neighbour independence: every line parsed alone gives the same row as in the
  block, so garbage never leaks into a valid line.

The regression corpus in ``tests/corpus/`` pins hand-checked outcomes of
tricky lines.  ``test_kernels_under_boundscheck`` reruns the corpus and
random garbage with ``NUMBA_BOUNDSCHECK=1`` in a fresh numba cache.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn.hashing import CONSTANT_HASH, hashstring_py
from streamlearn.io import REASONS, parse_bytes, tags
from streamlearn.io._numbers import NUM_OK, NUM_SLOW, scan_number
from streamlearn.io.batch import MAX_MAGNITUDE  # numbers the learners can square
from streamlearn.io.vwfloat import vw_parse_float

CORPUS = Path(__file__).parent / "corpus"
FUZZ = settings(
    max_examples=400,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ---------------------------------------------------------------------------
# reference parsers (plain Python, written from docs/input-formats.md)

_NUM = rb"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|(?i:infinity|inf|nan))"
NUM_FULL = re.compile(_NUM + rb"\Z")
NUM_PREFIX = re.compile(_NUM)
WS = b" \t\r"


def _float(tok: bytes) -> float | None:
    return float(tok) if NUM_FULL.match(tok) else None


def _row(status, label=math.nan, weight=0.0, base=0.0, tag=b"", feats=(), touching=False):
    return {
        "status": status,
        "label": label,
        "weight": weight,
        "base": base,
        "tag": tag,
        "feats": list(feats),
        "touching": touching,
    }


def ref_vw(line: bytes, bits: int, constant: bool, numbers: str = "exact"):
    mask = (1 << bits) - 1
    if line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    vline = line[:-1] if line.endswith(b"\r") else line  # VW's reader drops one '\r'
    line = line.rstrip(b"\r")
    vw = numbers == "vw"

    def number(tok: bytes, j: int) -> float:
        """The value of ``tok``, which ends at ``j`` (VW: its own or strtof's)."""
        if not vw:
            return float(tok)
        return vw_parse_float(tok, j == len(vline) or (j < len(line) and line[j] in b" \t"))

    if not line.strip(WS):
        return None
    bar = line.find(b"|")
    bar = len(line) if bar < 0 else bar
    lp = line[:bar]
    if b"\t" in lp:
        lp = lp[lp.index(b"\t") + 1 :]
    toks = [t for t in lp.split(b" ") if t]
    tag, touching = b"", False
    if toks and toks[-1].startswith(b"'"):
        tag = toks.pop()[1:]
    elif toks and not lp.endswith(b" "):
        tag, touching = toks.pop(), True
    if len(toks) > 3:
        return _row(5)
    nums = [1.0, 1.0, 0.0]
    nums[0] = math.nan
    for i, t in enumerate(toks):
        v = _float(t)
        if v is not None and vw:
            v = vw_parse_float(t)  # a label token ends where VW's does
        if v is None:
            return _row((1, 2, 4)[i])
        if not math.isfinite(v):
            return _row(7)
        if abs(v) > MAX_MAGNITUDE:
            return _row(15)
        if i == 1 and v < 0:
            return _row(3)
        nums[i] = v
    feats = []
    p = bar
    n = len(line)
    while p < n:
        p += 1  # past '|'
        nsh, scale, nsb = 0, 1.0, 32
        anon = 0  # VW's anonymous ':v' features of this segment
        m = re.compile(rb"[^ \t\r:|]*").match(line, p)
        if m.end() > p:
            nsh, nsb = hashstring_py(m.group(), 0), line[p]
            p = m.end()
            if p < n and line[p : p + 1] == b":":
                m = NUM_PREFIX.match(line, p + 1)
                if not m or (m.end() < n and line[m.end()] not in b" \t\r|"):
                    return _row(9)
                scale = number(m.group(), m.end())
                if not math.isfinite(scale):
                    return _row(7)
                p = m.end()
        elif p < n and line[p : p + 1] == b":":
            return _row(13)
        while p < n and line[p : p + 1] != b"|":
            if line[p] in WS:
                p += 1
                continue
            m = re.compile(rb"[^ \t\r:|]*").match(line, p)
            name = m.group()
            p = m.end()
            h = hashstring_py(name, nsh)  # (no name: the namespace's hash itself)
            if p >= n or line[p : p + 1] != b":":
                if scale != 0:
                    if abs(scale) > MAX_MAGNITUDE:
                        return _row(15)
                    feats.append((h & mask, scale, nsb))
                continue
            vs = p + 1
            if vs >= n or line[vs] in b" \t\r|":
                return _row(6)
            m = NUM_PREFIX.match(line, vs)
            if m is None:
                if line[vs] in b"+-." or re.compile(rb"[eE][+-]?\d*(?=[ \t\r|]|\Z)").match(
                    line, vs
                ):
                    return _row(6)
                m = re.compile(rb"[^ \t\r]*").match(line, vs)
                feats.append((hashstring_py(m.group(), h) & mask, 1.0, nsb))
                p = m.end()
                continue
            j = m.end()
            if j < n and line[j] not in b" \t\r|":
                return _row(12 if line[j : j + 1] == b":" else 6)
            v = number(m.group(), j) * scale
            if vw:
                v = float(np.float32(v))  # VW's float32 product
            if not math.isfinite(v):
                return _row(7)
            if abs(v) > MAX_MAGNITUDE:
                return _row(15)
            if not name:  # VW: the namespace's hash plus the anonymous features before it
                h = (nsh + anon) & 0xFFFFFFFF
                anon += 1
            if v != 0:
                feats.append((h & mask, v, nsb))
            p = j
    # VW's order: each namespace's features together, the namespaces as they first come
    order = list(dict.fromkeys(nsb for *_, nsb in feats))
    feats = [(h, v) for c in order for h, v, nsb in feats if nsb == c]
    if constant:
        feats.append((CONSTANT_HASH & mask, 1.0))
    return _row(0, nums[0], nums[1], nums[2], tag, feats, touching)


def ref_svmlight(line: bytes, bits: int, constant: bool):
    mask = (1 << bits) - 1
    if line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    line = line.split(b"#", 1)[0]
    toks = line.replace(b"\t", b" ").replace(b"\r", b" ").split(b" ")
    toks = [t for t in toks if t]
    if not toks:
        return None
    label = _float(toks[0])
    if label is None:
        return _row(1)
    if not math.isfinite(label):
        return _row(7)
    if abs(label) > MAX_MAGNITUDE:
        return _row(15)
    feats = []
    for t in toks[1:]:
        if t.startswith(b"qid:"):
            if not re.fullmatch(rb"\d+", t[4:]):
                return _row(14)
            continue
        if b":" not in t:
            return _row(11)
        idx, val = t.split(b":", 1)
        if not re.fullmatch(rb"\d+", idx):
            return _row(10)
        m = NUM_PREFIX.match(val)
        if m is None:
            return _row(6)
        if m.end() < len(val):
            return _row(12 if val[m.end() : m.end() + 1] == b":" else 6)
        v = float(val)
        if not math.isfinite(v):
            return _row(7)
        if abs(v) > MAX_MAGNITUDE:
            return _row(15)
        if v != 0:
            feats.append((int(idx) % 2**64 & mask, v))
    if constant:
        feats.append((CONSTANT_HASH & mask, 1.0))
    return _row(0, label, 1.0, 0.0, b"", feats)


REFERENCE = {"vw": ref_vw, "svmlight": ref_svmlight}

# ---------------------------------------------------------------------------
# comparing a parsed block with the reference


def rows_of(batch) -> list[dict]:
    out = []
    t = tags(batch)
    for i in range(batch.n):
        lo, hi = batch.indptr[i], batch.indptr[i + 1]
        feats = list(zip(batch.indices[lo:hi].tolist(), batch.values[lo:hi].tolist(), strict=True))
        ok = batch.status[i] == 0
        out.append(
            _row(
                int(batch.status[i]),
                float(batch.labels[i]),
                float(batch.weights[i]),
                float(batch.bases[i]),
                t[i] if ok else b"",
                feats,
            )
        )
    return out


def _same(a: dict, b: dict) -> bool:
    def eq(x, y):
        return (x == y) or (isinstance(x, float) and math.isnan(x) and math.isnan(y))

    if a["status"] != b["status"]:
        return False
    if a["status"] != 0:
        return True
    keys = ("label", "weight", "base", "tag", "feats")
    return all(eq(a[k], b[k]) for k in keys) and all(
        struct.pack("<d", x[1]) == struct.pack("<d", y[1])  # -0.0 vs 0.0, bit for bit
        for x, y in zip(a["feats"], b["feats"], strict=True)
    )


def check_block(lines: list[bytes], fmt: str, bits: int, constant: bool, eol: bytes = b"\n",
                numbers: str = "exact"):  # fmt: skip
    text = eol.join(lines)
    batch = parse_bytes(text, fmt=fmt, bits=bits, constant=constant, first_line=5,
                        numbers=numbers)  # fmt: skip
    # invariants
    assert batch.indptr[0] == 0 and np.all(np.diff(batch.indptr) >= 0)
    assert batch.indptr[-1] == batch.indices.shape[0] == batch.values.shape[0]
    assert np.all(batch.indices < 2**bits) if bits < 32 else True
    assert np.all(np.isfinite(batch.values)) and np.all(batch.values != 0)
    assert set(batch.status.tolist()) <= {0} | set(REASONS)
    bad = batch.status != 0
    assert np.all(np.diff(batch.indptr)[bad] == 0)
    assert np.all(np.isnan(batch.labels[bad])) and np.all(batch.weights[bad] == 0)
    assert np.all(np.isfinite(batch.weights[~bad])) and np.all(batch.weights[~bad] >= 0)
    assert np.all(np.diff(batch.line) > 0)
    if constant:
        ends = batch.indptr[1:][~bad] - 1
        assert np.all(batch.indices[ends] == CONSTANT_HASH & (2**bits - 1))
    # against the reference, line by line, and each line alone
    expected = []
    ref = REFERENCE[fmt]
    physical = text.split(b"\n")
    for number, ln in enumerate(physical, start=5):
        r = ref(ln, bits, constant, numbers) if fmt == "vw" else ref(ln, bits, constant)
        if r is not None:
            expected.append((number, r))
    got = rows_of(batch)
    assert batch.line.tolist() == [n for n, _ in expected]
    for (number, want), have in zip(expected, got, strict=True):
        assert _same(have, want), (number, physical[number - 5], have, want)
        alone = rows_of(parse_bytes(physical[number - 5], fmt=fmt, bits=bits, constant=constant,
                                    numbers=numbers))  # fmt: skip
        assert len(alone) == 1 and _same(alone[0], have), (physical[number - 5], alone, have)
    if fmt == "vw":
        assert batch.n_touching_tags == sum(r["touching"] for _, r in expected if r["status"] == 0)
    return batch


# ---------------------------------------------------------------------------
# strategies

GRAMMAR_BYTES = b" \t|:'-+.0123456789eEnaifINFxyz_\r#\x00\x01\x0b\xff\xc3\xa9q"
names = st.text(alphabet="abcxyz019_\u00e9\u65e5", min_size=1, max_size=6).map(str.encode)
numbers = st.one_of(
    st.integers(-(10**6), 10**6).map(lambda i: str(i).encode()),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(lambda f: repr(f).encode()),
    st.floats(-1e3, 1e3).map(lambda f: b"%.3f" % f),
    st.sampled_from([b"0", b"-0", b"1e-400", b"1e400", b".5", b"5.", b"+1", b"1E2", b"nan"]),
    # what VW reads its own way: one float off, int8 exponents, strtof after '+'
    st.sampled_from([b"0.125", b"0.001", b"1e200", b"1e-200", b"0e100", b"1e-40", b"+0.5",
                     b"1e+2", b"16777217", b"3.9656971e-02", b"-7.25e-3", b"1e39"]),
    st.text(alphabet="0123456789", min_size=18, max_size=26).map(lambda s: ("0." + s).encode()),
)


@st.composite
def vw_lines(draw) -> bytes:
    parts = []
    k = draw(st.integers(0, 4))
    parts += [draw(numbers) for _ in range(k)]
    if draw(st.booleans()):
        parts.append(b"'" + draw(names))
    label = b" ".join(parts)
    if draw(st.integers(0, 5)) == 0:
        label = draw(names) + b"\t" + label
    out = [label + (b" " if draw(st.booleans()) else b"")]
    for _ in range(draw(st.integers(0, 3))):
        ns = b"|"
        if draw(st.booleans()):
            ns += draw(names)
            if draw(st.integers(0, 3)) == 0:
                ns += b":" + draw(numbers)
        feats = []
        for _ in range(draw(st.integers(0, 5))):
            f = draw(names)
            kind = draw(st.integers(0, 3))
            if kind == 1:
                f += b":" + draw(numbers)
            elif kind == 2:
                f += b":" + draw(names)
            feats.append(f)
        out.append(ns + b" " + b" ".join(feats))
    return b" ".join(out) if draw(st.booleans()) else b"".join(out)


@st.composite
def svm_lines(draw) -> bytes:
    toks = [draw(numbers)]
    if draw(st.integers(0, 4)) == 0:
        toks.append(b"qid:%d" % draw(st.integers(0, 99)))
    for _ in range(draw(st.integers(0, 6))):
        toks.append(b"%d:" % draw(st.integers(0, 2**70)) + draw(numbers))
    line = b" ".join(toks)
    if draw(st.integers(0, 5)) == 0:
        line += b" # " + draw(names)
    return line


@st.composite
def mutated(draw, lines) -> bytes:
    line = bytearray(draw(lines))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.integers(0, 2))
        pos = draw(st.integers(0, len(line)))
        b = draw(st.sampled_from(list(GRAMMAR_BYTES)))
        if op == 0:
            line.insert(pos, b)
        elif op == 1 and pos < len(line):
            del line[pos]
        elif pos < len(line):
            line[pos] = b
    return bytes(line).replace(b"\n", b" ")


garbage = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"\r"))
grammar_garbage = st.lists(st.sampled_from(list(GRAMMAR_BYTES)), max_size=30).map(bytes)


def blocks(lines):
    return st.lists(lines, min_size=1, max_size=60)


bits_st = st.sampled_from([1, 5, 18, 32])


@FUZZ
@given(blocks(st.one_of(mutated(vw_lines()), garbage, grammar_garbage)), bits_st, st.booleans())
def test_vw_fuzz(lines, bits, constant) -> None:
    check_block(lines, "vw", bits, constant)


@FUZZ
@given(blocks(vw_lines()), bits_st)
def test_vw_valid_lines(lines, bits) -> None:
    check_block(lines, "vw", bits, True, eol=b"\r\n")


@FUZZ
@given(blocks(st.one_of(mutated(vw_lines()), garbage, grammar_garbage)), bits_st, st.booleans())
def test_vw_fuzz_vw_numbers(lines, bits, constant) -> None:
    check_block(lines, "vw", bits, constant, numbers="vw")


@pytest.mark.slow  # (9 s: the quick set fuzzes VW's numbers in test_vw_fuzz_vw_numbers)
@FUZZ
@given(blocks(vw_lines()), bits_st, st.sampled_from([b"\n", b"\r\n", b"\r\r\n"]))
def test_vw_valid_lines_vw_numbers(lines, bits, eol) -> None:
    check_block(lines, "vw", bits, True, eol=eol, numbers="vw")


@FUZZ
@given(blocks(st.one_of(mutated(svm_lines()), garbage, grammar_garbage)), bits_st, st.booleans())
def test_svmlight_fuzz(lines, bits, constant) -> None:
    check_block(lines, "svmlight", bits, constant)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(st.binary(max_size=3000), st.sampled_from(["vw", "svmlight"]))
def test_random_bytes_never_crash(data, fmt) -> None:
    b = parse_bytes(data, fmt=fmt, bits=18)
    assert b.n <= data.count(b"\n") + 1
    assert np.all(np.isfinite(b.values))
    assert set(b.status.tolist()) <= {0} | set(REASONS)


def test_valid_line_unaffected_by_garbage_neighbours() -> None:
    rng = random.Random(3)
    good = b"1 2 'tag |f a:0.5 b c:d |g:2 e:3"
    want = rows_of(parse_bytes(good))[0]
    for _ in range(200):
        noise = [
            bytes(rng.choice(GRAMMAR_BYTES) for _ in range(rng.randint(0, 30))) for _ in range(6)
        ]
        lines = noise[:3] + [good] + noise[3:]
        b = parse_bytes(b"\n".join(lines))
        i = b.line.tolist().index(4)
        assert _same(rows_of(b)[i], want) and b.line_start[i] == sum(len(x) + 1 for x in noise[:3])


# ---------------------------------------------------------------------------
# numbers: exactly float(), on many random decimal strings in one kernel call


@numba.njit  # not cached: numba would not notice a change in scan_number's file
def _scan_all(buf, starts, ends, out, codes):
    for t in range(starts.shape[0]):
        c, v, j = scan_number(buf, starts[t], ends[t])
        out[t] = v
        codes[t] = c if j == ends[t] else -1


def _decimal_strings(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        kind = rng.random()
        if kind < 0.3:
            x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
            if not math.isfinite(x):
                continue
            s = repr(x) if rng.random() < 0.5 else f"{x:.17g}"
        elif kind < 0.6:
            s = str(rng.randrange(10 ** rng.randint(1, 19)))
            p = rng.randint(0, len(s))
            s = s[:p] + "." + s[p:]
            if rng.random() < 0.7:
                s += "e" + str(rng.randint(-340, 310))
        elif kind < 0.8:
            s = f"{rng.uniform(-1e6, 1e6):.{rng.randint(1, 17)}g}"
        else:  # near halfway points between adjacent doubles
            x = rng.uniform(1, 2) * 2.0 ** rng.randint(-1000, 1000)
            s = f"{x + math.ulp(x) / 2:.25e}"
        out.append(s.encode())
    return out


def test_scan_number_equals_float_on_random_strings() -> None:
    toks = _decimal_strings(60000, seed=11)
    data = b" ".join(toks)
    lens = np.array([len(t) for t in toks])
    starts = np.concatenate([[0], np.cumsum(lens + 1)[:-1]]).astype(np.int64)
    ends = starts + lens
    out = np.zeros(len(toks))
    codes = np.zeros(len(toks), dtype=np.int64)
    _scan_all(np.frombuffer(data, dtype=np.uint8).copy(), starts, ends, out, codes)
    assert np.all((codes == NUM_OK) | (codes == NUM_SLOW))
    fast = codes == NUM_OK
    want = np.array([float(t) for t in toks])
    assert np.array_equal(out[fast].view(np.int64), want[fast].view(np.int64))
    # the Python fallback stays rare for <= 19 significant digits and normal results
    mant = [re.sub(rb"[eE].*|[-+.]", b"", t).lstrip(b"0") for t in toks]
    common = np.array([len(m) <= 19 for m in mant]) & (np.abs(want) >= 2.2250738585072014e-308)
    assert fast[common].mean() > 0.999
    assert not fast[np.array([len(m) > 19 for m in mant])].any()


# ---------------------------------------------------------------------------
# regression corpus


def _corpus_cases():
    for path in sorted(CORPUS.glob("*.jsonl")):
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if text.strip() and not text.startswith("//"):
                yield pytest.param(json.loads(text), id=f"{path.stem}:{number}")


@pytest.mark.parametrize("case", list(_corpus_cases()))
def test_corpus(case: dict) -> None:
    line = codecs.escape_decode(case["line"].encode("utf-8"))[0]
    fmt = case.get("fmt", "vw")
    b = parse_bytes(line + b"\n", fmt=fmt, bits=18, constant=False)
    if case["status"] is None:
        assert b.n == 0
        return
    assert b.n == 1
    assert int(b.status[0]) == case["status"], REASONS.get(int(b.status[0]))
    if case["status"] != 0:
        return
    from streamlearn.hashing import feature_slot

    want = []
    for f in case.get("feats", []):
        ns, name, value = f[0], f[1], f[2]
        if isinstance(value, str):
            want.append((feature_slot(ns, name, 18, value), 1.0))
        else:
            want.append((feature_slot(ns, name, 18), float(value)))
    lo, hi = b.indptr[0], b.indptr[1]
    assert list(zip(b.indices[lo:hi].tolist(), b.values[lo:hi].tolist(), strict=True)) == want
    for key in ("label", "weight", "base"):
        if key in case:
            got = float(getattr(b, key + "s" if key != "weight" else "weights")[0])
            exp = math.nan if case[key] is None else float(case[key])
            assert got == exp or (math.isnan(got) and math.isnan(exp)), key
    if "tag" in case:
        assert tags(b)[0] == codecs.escape_decode(case["tag"].encode("utf-8"))[0]
    if "touching" in case:
        assert b.n_touching_tags == case["touching"]
    # the reference parser agrees with every corpus outcome
    ref = REFERENCE[fmt](line, 18, False)
    assert ref is not None and _same(rows_of(b)[0], ref)


# ---------------------------------------------------------------------------
# the kernels under NUMBA_BOUNDSCHECK=1 (fresh cache: cached code has no checks)

_BOUNDSCHECK_SCRIPT = r"""
import random, sys
import numba, numpy as np

@numba.njit
def _oob(a):
    return a[5]

try:
    _oob(np.zeros(1))
    sys.exit("NUMBA_BOUNDSCHECK is not in effect")
except IndexError:
    pass
sys.path.insert(0, sys.argv[1])
from test_fuzz_parsers import GRAMMAR_BYTES, _corpus_cases
from streamlearn.io import parse_bytes
import codecs
lines = [codecs.escape_decode(c.values[0]["line"].encode())[0] for c in _corpus_cases()]
rng = random.Random(5)
for _ in range(300):
    lines.append(bytes(rng.choice(GRAMMAR_BYTES) for _ in range(rng.randint(0, 40))))
    lines.append(bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))))
text = b"\n".join(lines)
for fmt in ("vw", "svmlight"):
    for cut in range(0, len(text), 97):  # blocks ending anywhere, with or without a newline
        parse_bytes(text[cut : cut + 500], fmt=fmt)
        parse_bytes(text[cut : cut + 3], fmt=fmt)
        parse_bytes(text[cut : cut + 500], fmt=fmt, numbers="vw")
        parse_bytes(text[cut : cut + 3], fmt=fmt, numbers="vw")
print("ok")
"""


@pytest.mark.slow
def test_kernels_under_boundscheck(tmp_path) -> None:
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, "-c", _BOUNDSCHECK_SCRIPT, str(Path(__file__).parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")
