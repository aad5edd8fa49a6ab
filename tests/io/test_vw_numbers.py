"""``sl vw``'s decimals (:mod:`streamlearn.io.vwfloat`): VW 9's ``parse_float``, checked
against VW itself (its Python package's parser, on a dense table of tokens in every place
a number goes) and against a plain statement of it written from VW's source (random
tokens, in one kernel call and through hypothesis)."""

from __future__ import annotations

import importlib.util
import math
import os
import random
import struct
import subprocess
import sys
from decimal import Decimal

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn.io import parse_bytes
from streamlearn.io._numbers import NUM_OK, NUM_SLOW
from streamlearn.io.vwfloat import VW_POW10, float32_of_decimal, vw_number, vw_parse_float

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None
needs_vw = pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed")
F32 = np.float32

TOKENS = [
    # plain decimals: most land one float off the nearest
    "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "0.125", "0.25", "0.375",
    "1.79", "3.14159", "2.718281828", "0.001", "0.0001", "123.456", "0.333333", "0.04",
    "3.9656971e-02", "1.0290844e-01", "7.25e-3", "-0.3", "-1", "1", "0", "-0", "0.0", "100",
    "000.000", "65536.5", "-12.75",
    # the integer part: acc * 10 + the character code - 48, each rounded to float32
    "16777217", "16777219", "123456789", "9999999999", "33554435.5", "4294967297",
    "12345678901234567890123",
    # exponents: VW's float32 table, the int8 cast of (exponent - fraction digits)
    "1e5", "1E5", "1e-5", "2.5E-3", "1e38", "3.4e38", "1e-37", "1e-38", "1e-40", "1e-45",
    "1e39", "1e200", "1e-200", "0e100", "5e-324", "0.5e-36", "1.5e10",
    # what VW hands to strtof: a '+', 'e+'; and '.5', '5.'
    "+0.5", "+1", "+0.1", "1e+2", "1.5e+3", "0.1e+0", ".5", "-.5", "5.", "-5.",
    # many digits: the 35-digit cap on the fraction, strtof's exact rounding
    "0.1234567890123456789012345678901234567890123", "1.00000005960464477539062500001",
    "+1.000000059604644776", "+1.000000059604644775", "0.30000001192092895507812500001",
]  # fmt: skip
"""Numbers for the table; each is read as a feature value (followed by the end of the
line, a space, a tab or a '|'), a namespace scale, a label, an importance weight and a
base."""


@pytest.fixture(scope="module")
def vw():
    """VW's own parser (None when the package is not installed)."""
    if not HAVE_VW:
        yield None
        return
    from vowpalwabbit import Workspace

    ws = Workspace("--quiet --noconstant -b 30")
    yield ws
    ws.finish()


@pytest.fixture(scope="module")
def vw_box(vw):
    """``[vw]``: hypothesis would take a Workspace first argument for its test's ``self``."""
    return [vw]


def _vw_values(ws, line: str) -> tuple[list[float], tuple[float, float, float]]:
    """VW's feature values (namespace after namespace) and label, weight, base for ``line``."""
    import pylibvw

    ex = ws.example(line)
    values = []
    for k in range(ex.num_namespaces()):
        o = pylibvw.example.namespace(ex, k)
        n = pylibvw.example.num_features_in(ex, o)
        values += [pylibvw.example.feature_weight(ex, o, j) for j in range(n)]
    label = (ex.get_simplelabel_label(), ex.get_simplelabel_weight(),
             ex.get_simplelabel_initial())  # fmt: skip
    return values, label


def _sl(line: str):
    return parse_bytes(line.encode() + b"\n", bits=30, constant=False, limit=math.inf,
                       numbers="vw")  # fmt: skip


def _same(a: float, b: float) -> bool:
    return struct.pack("<d", a) == struct.pack("<d", b)


def _check_value(ws, line: str, tok: str) -> None:
    theirs, _ = _vw_values(ws, line)
    b = _sl(line)
    if b.status[0] != 0:
        # sl skips what VW warns about or keeps as infinite: NaN (VW: replaced by 0), inf
        assert b.status[0] == 7, (line, int(b.status[0]))
        read = (vw_parse_float(tok), vw_parse_float(tok, at_end=False), *theirs)
        assert not all(map(math.isfinite, read)), (line, theirs)
        return
    ours = b.values[b.indptr[0] : b.indptr[1]].tolist()
    assert len(ours) == len(theirs) and all(map(_same, ours, theirs)), (line, ours, theirs)


@needs_vw
@pytest.mark.parametrize("tok", TOKENS)
def test_feature_values_and_scales_are_vws(vw, tok) -> None:
    for after in ("", " ", "\t", "|g b"):
        _check_value(vw, f"|f a:{tok}{after}", tok)
        _check_value(vw, f"|f a:{tok} b:{tok}{after}", tok)
    _check_value(vw, f"|f:{tok} a", tok)  # a namespace scale, then a value times it
    _check_value(vw, f"|f:{tok} a:3 b:0.1", tok)
    _check_value(vw, f"|f:2.5 a:{tok}", tok)


@needs_vw
@pytest.mark.parametrize("tok", TOKENS)
def test_labels_weights_and_bases_are_vws(vw, tok) -> None:
    for k, line in enumerate((f"{tok} |f a", f"1 {tok} |f a", f"1 1 {tok} |f a",
                              f"{tok} {tok} {tok} 'tag|f a")):  # fmt: skip
        _, theirs = _vw_values(vw, line)
        b = _sl(line)
        if b.status[0] != 0:
            # non-finite (VW reads NaN as 0 with a warning) or a negative weight
            assert b.status[0] in (3, 7), (line, int(b.status[0]))
            continue
        ours = (b.labels[0], b.weights[0], b.bases[0])
        slots = (0,) if k == 0 else (1,) if k == 1 else (2,) if k == 2 else (0, 1, 2)
        for s in slots:
            assert _same(float(ours[s]), theirs[s]), (line, ours, theirs)


def test_vws_table_of_powers() -> None:
    """10**k by repeated float32 products, 10**-k by repeated float32 divisions."""
    assert VW_POW10.dtype == np.float32 and VW_POW10.shape == (76,)
    assert VW_POW10[37] == 1 and VW_POW10[38] == 10 and VW_POW10[36] == F32(0.1)
    assert VW_POW10[34] == F32(F32(F32(0.1) / F32(10)) / F32(10))  # 1e-3: not float32(1e-3)
    assert VW_POW10[34] != F32(1e-3)


def test_known_values() -> None:
    assert vw_parse_float("0.125") == 0.1249999925494194  # one float below 0.125
    assert vw_parse_float("0.125", at_end=False) == 0.125  # strtof
    assert vw_parse_float("+0.125") == 0.125
    assert vw_parse_float("1e200") == 0.0  # int8(200) = -56: 10**-56 is 0
    assert vw_parse_float("1e300") == math.inf  # int8(300) = 44 > 38
    assert vw_parse_float("16777217") == 16777216.0
    b = parse_bytes(b"0.125 0.125 0.125 |f a:0.125 b:0.125|g c:0.125\n", numbers="vw",
                    constant=False)  # fmt: skip
    assert b.labels[0] == b.weights[0] == b.bases[0] == 0.1249999925494194
    assert b.values.tolist() == [0.1249999925494194, 0.125, 0.1249999925494194]  # '|': strtof
    exact = parse_bytes(b"0.125 |f a:0.125\n", constant=False)
    assert exact.labels[0] == 0.125 and exact.values.tolist() == [0.125]


def test_line_ends_as_vws_reader() -> None:
    """VW's reader drops the newline and one '\\r': a value before a second '\\r' is strtof's."""
    lines = b"|f a:0.001\n|f a:0.001\r\n|f a:0.001\r\r\n|f a:0.001"
    b = parse_bytes(lines, numbers="vw", constant=False)
    fast, slow = vw_parse_float("0.001"), vw_parse_float("0.001", at_end=False)
    assert fast != slow
    assert b.values.tolist() == [fast, fast, slow, fast]


def test_svmlight_numbers_stay_correctly_rounded() -> None:
    """VW has no svmlight reader: nothing to imitate there."""
    b = parse_bytes(b"0.125 1:0.125\n", fmt="svmlight", numbers="vw", constant=False)
    assert b.labels[0] == 0.125 and b.values.tolist() == [0.125]


def test_fallbacks_round_exactly() -> None:
    """strtof's value, where the double nearest the decimal sits on a float32 midpoint
    (so float32(double) would round it the wrong way) and past 19 digits (Python's turn)."""
    mid = 1 + 2.0**-24
    assert float("1.000000059604644776") == mid == float("1.000000059604644775")
    assert float32_of_decimal("1.000000059604644776") == 1 + 2.0**-23
    assert float32_of_decimal("1.000000059604644775") == 1.0
    for tok, want in (("+1.000000059604644776", 1 + 2.0**-23), ("+1.000000059604644775", 1.0),
                      ("+1.00000005960464477539062500001", 1 + 2.0**-23)):  # fmt: skip
        b = parse_bytes(f"|f a:{tok}\n".encode(), numbers="vw", constant=False)
        assert b.values.tolist() == [want], tok
    top = 2**128 - 2**103  # halfway from the largest float32 to 2**128: even is 2**128, inf
    assert float32_of_decimal(str(top)) == math.inf
    assert float32_of_decimal(str(top - 1)) == float(np.finfo(np.float32).max)
    assert float32_of_decimal("3.4028235677973366e38") == float(np.finfo(np.float32).max)
    low = Decimal(2.0**-150)  # halfway from 0 to the least float32: even is 0
    assert float32_of_decimal(str(low)) == 0.0
    assert float32_of_decimal(str(low).replace("E-46", "1E-46")) == 2.0**-149  # a bit above
    assert math.copysign(1, float32_of_decimal("-0")) == -1


# ---------------------------------------------------------------------------
# the kernel against the plain statement: random tokens, one kernel call


@numba.njit  # not cached: numba would not notice a change in vwfloat's file
def _read_all(buf, starts, ends, vends, out, codes):
    for t in range(starts.shape[0]):
        c, v, j = vw_number(buf, starts[t], ends[t], vends[t])
        out[t] = v
        codes[t] = c if j == ends[t] else -1


def _tokens(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        kind = rng.random()
        if kind < 0.25:  # what people write: a few decimals
            s = f"{rng.uniform(-1e4, 1e4):.{rng.randint(0, 9)}f}"
        elif kind < 0.45:  # what programs write: %g, repr, float32's shortest
            x = rng.uniform(-1, 1) * 10.0 ** rng.randint(-12, 12)
            s = rng.choice([f"{x:.{rng.randint(1, 9)}g}", f"{x:.7e}", repr(x),
                            np.format_float_positional(F32(x), unique=True)])  # fmt: skip
        elif kind < 0.85:  # digit strings anywhere, exponents of every size
            s = rng.choice(["", "-", "+"]) + "".join(
                rng.choice("0123456789") for _ in range(rng.randint(0, 30))
            )
            if rng.random() < 0.7:
                s += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 40)))
            if rng.random() < 0.4:
                s += rng.choice("eE") + rng.choice(["", "-", "+"]) + str(rng.randint(0, 400))
            if not any(c.isdigit() for c in s.split("e")[0].split("E")[0]):
                continue
        else:  # near float32 midpoints
            f = F32(rng.uniform(1, 2) * 2.0 ** rng.randint(-140, 120))
            s = f"{float(f) + float(np.spacing(f)) / 2:.{rng.randint(9, 25)}e}"
        out.append(s)
    return out


@pytest.mark.slow
def test_kernel_equals_the_statement_on_random_tokens() -> None:
    toks = _tokens(40000, seed=7)
    data = " ".join(toks).encode()
    lens = np.array([len(t) for t in toks])
    starts = np.concatenate([[0], np.cumsum(lens + 1)[:-1]]).astype(np.int64)
    ends = starts + lens
    buf = np.frombuffer(data + b"|", dtype=np.uint8).copy()
    for at_end in (True, False):
        vends = ends.copy() if at_end else np.full_like(ends, -1)
        if not at_end:  # a '|' after each number: strtof, as VW
            buf = np.frombuffer(b"|".join(t.encode() for t in toks) + b"|", np.uint8).copy()
        out = np.zeros(len(toks))
        codes = np.zeros(len(toks), dtype=np.int64)
        _read_all(buf, starts, ends, vends, out, codes)
        assert np.all((codes == NUM_OK) | (codes == NUM_SLOW))
        want = np.array([vw_parse_float(t, at_end) for t in toks])
        ok = codes == NUM_OK
        same = (out.view(np.int64) == want.view(np.int64)) | (np.isnan(out) & np.isnan(want))
        bad = [(toks[i], out[i], want[i]) for i in np.flatnonzero(ok & ~same)[:5]]
        assert not bad, bad
        slow = [toks[i] for i in np.flatnonzero(~ok)]
        if at_end:  # only strtof's tokens may need Python (past 19 digits, mostly)
            assert all(t.startswith("+") or "e+" in t.lower() for t in slow), slow[:5]
        for t in slow[:200]:  # parse_bytes resolves them exactly
            b = parse_bytes(f"|f a:{t}|".encode(), limit=math.inf, numbers="vw", constant=False)
            v = vw_parse_float(t, at_end=False)
            assert b.values.tolist() == ([v] if v else []) or (b.status[0] == 7
                                                               and not math.isfinite(v)), t


# ---------------------------------------------------------------------------
# hypothesis: whole lines, against the statement (and VW, when installed)

digits = st.text(alphabet="0123456789", max_size=30)
tokens = st.builds(
    lambda sign, whole, frac, exp: sign + whole + frac + exp,
    st.sampled_from(["", "-", "+"]),
    digits,
    st.one_of(st.just(""), digits.map(lambda d: "." + d)),
    st.one_of(st.just(""), st.builds(lambda e, s, d: e + s + str(d), st.sampled_from("eE"),
                                     st.sampled_from(["", "-", "+"]),
                                     st.integers(0, 400))),  # fmt: skip
).filter(lambda t: any(c.isdigit() for c in t.lower().split("e")[0]))
AFTER = ["", " ", "\t", "|g b"]


@settings(max_examples=300, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(st.lists(st.tuples(tokens, st.sampled_from(AFTER)), min_size=1, max_size=20))
def test_lines_read_as_the_statement_says(vw_box, cases) -> None:
    lines = [f"{tok} |f a:{tok}{after}" for tok, after in cases]
    b = parse_bytes("\n".join(lines).encode(), bits=30, constant=False, limit=math.inf,
                    numbers="vw")  # fmt: skip
    assert b.n == len(lines)
    ws = vw_box[0]
    for i, (tok, after) in enumerate(cases):
        label = vw_parse_float(tok)
        value = vw_parse_float(tok, at_end=after != "|g b")
        if not (math.isfinite(label) and math.isfinite(value)):
            assert b.status[i] == 7, lines[i]
            continue
        assert b.status[i] == 0, lines[i]
        assert _same(float(b.labels[i]), label), (lines[i], b.labels[i], label)
        got = b.values[b.indptr[i] : b.indptr[i + 1]].tolist()
        if ws is not None:
            theirs, (vw_label, _, _) = _vw_values(ws, lines[i])
            assert _same(vw_label, label) and got == theirs, (lines[i], got, theirs)
        if after == "|g b":
            assert got.pop() == 1.0
        assert got == ([value] if value != 0 else []), (lines[i], got, value)


def test_plain_python_kernel_agrees() -> None:
    """``NUMBA_DISABLE_JIT=1`` (tiny inputs, debugging) reads the same floats."""
    text = "\n".join(f"{t} |f a:{t} b:{t}|g c:{t}" for t in TOKENS).encode()
    script = (
        "import sys, math; from streamlearn.io import parse_bytes\n"
        "b = parse_bytes(sys.stdin.buffer.read(), bits=30, limit=math.inf, numbers='vw')\n"
        "print(repr((b.status.tolist(), b.labels.tolist(), b.values.tolist())))\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    r = subprocess.run([sys.executable, "-c", script], input=text, env=env, capture_output=True,
                       check=True)  # fmt: skip
    b = parse_bytes(text, bits=30, limit=math.inf, numbers="vw")
    assert r.stdout.decode().strip() == repr((b.status.tolist(), b.labels.tolist(),
                                              b.values.tolist()))  # fmt: skip
