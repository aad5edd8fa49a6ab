"""The compiled JSON path (``io/jsonfast.py``) gives the examples the Python reader gives.

The Python reader (:func:`streamlearn.io.vwjson.read_record`, checked against VW's
``--audit`` in ``test_vwjson.py``) is the reference: for random contextual-bandit records,
and for those records with bytes changed at random, both translations are parsed and their
rows, features, values, labels, line numbers and refusals compared.  The kernel may leave a
line to the Python reader (SLOW), never read it differently.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from streamlearn.io import jsonfast
from streamlearn.io.batch import Block
from streamlearn.io.interactions import compile_interactions
from streamlearn.io.jsonfast import KERNEL_LINE
from streamlearn.io.labels import LABEL_CB
from streamlearn.io.multiline import parse_examples
from streamlearn.io.vwjson import JsonOptions, _translate, translate

DS = JsonOptions(dsjson=True)
JS = JsonOptions()
INTER = dataclasses.replace(compile_interactions(vw_numbers=True), label_kind=LABEL_CB)

# the first 20 the kernel writes; then some it leaves to Python (an exponent whose value VW's
# arithmetic reads differently, beyond a float32, beyond 19 digits)
NUMBERS = ["0", "-0", "1", "1.0", "-1", "0.5", "0.125", "0.83", "-1.2", "0.1", "2.24", "7",
           "123456789", "16777217", "0.8250000000000001", "1e5", "1e+2", "3.4028235e38",
           "1e-46", "0.3333333333333333", "1E-3", "-2.5e-7", "1e39", "12345678901234567890123",
           "0.000001", "100.25", "-0.0", "5e-324", "9.999999e37"]  # fmt: skip
KEYS = ["a", "b", "id", "z0", "x_1", "k", "12", "é", "ns:1", "b b", "", "_k", "p|q", "Ab"]
NAMESPACES = ["u", "user", "G", "s", "13", "shared", "a", "Zz", "éns", "a b", "", "_n"]
STRINGS = ["v", "v w", "1", "a:b", "x|y", "7.5", "", "café", "t\\tab", 'q\\"', "\\u00e9"]


def _ws(rng: np.random.Generator) -> str:
    return str(rng.choice(["", "", "", " ", "  ", "\t", " \r"]))


def _value(rng: np.random.Generator, depth: int) -> str:
    r = rng.random()
    if r < 0.45:
        return str(rng.choice(NUMBERS[:20] if rng.random() < 0.97 else NUMBERS))
    if r < 0.75:
        return '"' + str(rng.choice(STRINGS[:-2] if rng.random() < 0.98 else STRINGS)) + '"'
    if r < 0.88:
        return str(rng.choice(["true", "false", "null"]))
    if r < 0.89:
        return "[1, 2]"
    return _object(rng, depth + 1) if depth < 3 else "1"


def _key(rng: np.random.Generator, pool: list[str]) -> str:
    return '"' + str(rng.choice(pool[:8] if rng.random() < 0.97 else pool)) + '"'


def _object(rng: np.random.Generator, depth: int) -> str:
    members = []
    for _ in range(int(rng.integers(0, 4))):
        if depth < 3 and rng.random() < 0.25:
            k = _key(rng, NAMESPACES)
            members.append(f"{k}{_ws(rng)}:{_ws(rng)}{_object(rng, depth + 1)}")
        else:
            members.append(f"{_key(rng, KEYS)}:{_ws(rng)}{_value(rng, depth)}")
    return "{" + _ws(rng) + ("," + _ws(rng)).join(members) + _ws(rng) + "}"


def _label_members(rng: np.random.Generator, k: int) -> list[str]:
    out = []
    chosen = int(rng.integers(0, k))
    names = [("_label_cost", rng.choice(["0", "1", "-1", "0.5", "1e-3", "2.7"])),
             ("_label_probability", rng.choice(["0.25", "0.5", "1", "0.025", "0.82500000001"])),
             ("_label_Action", str(chosen + 1)),
             ("_labelIndex", str(chosen))]  # fmt: skip
    for name, v in names:
        if rng.random() < 0.9:
            if rng.random() < 0.03:
                name = name.upper() if rng.random() < 0.5 else name.replace("_label", "_Label")
            if rng.random() < 0.02:
                v = str(rng.choice(["null", '"NaN"', "-1", "1.5", "true", "99"]))
            out.append(f'"{name}":{_ws(rng)}{v}')
    return out


def _record(rng: np.random.Generator, dsjson: bool) -> str:
    k = int(rng.integers(1, 5))
    actions = []
    for _ in range(k):
        actions.append("null" if rng.random() < 0.05 else _object(rng, 1))
    context = []
    for _ in range(int(rng.integers(0, 3))):
        context.append(f"{_key(rng, NAMESPACES)}:{_object(rng, 1)}")
    if rng.random() < 0.3:
        context.append(f"{_key(rng, KEYS)}:{_value(rng, 1)}")
    context.append('"_multi":[' + ",".join(actions) + "]")
    if rng.random() < 0.2:
        context.append(f"{_key(rng, KEYS)}:{_value(rng, 1)}")  # after the actions
    labels = _label_members(rng, k)
    if not dsjson:
        members = context + labels
        rng.shuffle(members)
        return "{" + ",".join(members) + "}"
    members = labels + [
        '"a":' + str(rng.choice(["[1,2]", "[]", "3", "[2, 1, 3]"]) if rng.random() < 0.03
                     else "[" + ",".join(str(i + 1) for i in range(k)) + "]"),
        '"c":{' + ",".join(context) + "}",
        '"p":[' + ",".join(["0.5"] * k) + "]",
        '"EventId":"e1"', '"VWState":{"m":"x/y"}', '"Timestamp":"2026-11-29T04:00:00Z"',
    ]  # fmt: skip
    if rng.random() < 0.03:
        members.append(str(rng.choice(['"pdrop":0.5', '"_skipLearn":true', '"_original":[1]'])))
    order = rng.permutation(len(members)) if rng.random() < 0.2 else range(len(members))
    return "{" + _ws(rng) + ",".join(members[i] for i in order) + _ws(rng) + "}"


def _mutate(rng: np.random.Generator, line: bytes) -> bytes:
    b = bytearray(line)
    for _ in range(int(rng.integers(1, 3))):
        if not b:
            break
        i = int(rng.integers(0, len(b)))
        op = rng.random()
        ch = bytes(rng.choice(list(b'{}[]":,. 0123456789e-+\\abtnul\x0b\x00\xff')))
        if op < 0.4:
            b[i : i + 1] = ch
        elif op < 0.7:
            b[i:i] = ch
        else:
            del b[i]
    return bytes(b)


def _python(data: bytes, opts: JsonOptions):  # noqa: ANN202
    return _translate(opts, range(1, data.count(b"\n") + 2), data.split(b"\n"))


def _parsed(text: bytes) -> dict:
    buf = np.frombuffer(text, dtype=np.uint8).copy()
    ex = parse_examples(Block(buf, "t", 1, newlines=text.count(b"\n")), 18, True, INTER)
    b, lab = ex.batch, ex.labels
    return {"indptr": b.indptr, "indices": b.indices, "values": b.values, "ns": b.ns,
            "status": b.status, "line": b.line, "ex_ptr": ex.ex_ptr, "flags": lab.flags,
            "ptr": lab.ptr, "cls": lab.cls, "cost": lab.cost, "prob": lab.prob}  # fmt: skip


def _same(data: bytes, opts: JsonOptions) -> np.ndarray:
    """Both translations of ``data`` give the same examples; the kernel's line codes."""
    fast = translate(data, 1, opts)
    slow = _python(data, opts)
    assert fast.errors == slow.errors
    np.testing.assert_array_equal(fast.lines, slow.lines)
    np.testing.assert_array_equal(fast.weights, slow.weights)
    a, b = _parsed(fast.data), _parsed(slow.data)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    seg = np.empty((data.count(b"\n") + 1, 4), dtype=np.int64)
    out = np.empty(2 * len(data) + 64 * seg.shape[0] + 64, dtype=np.uint8)
    n = jsonfast.translate_block(np.frombuffer(data, dtype=np.uint8), opts.dsjson, out, seg)
    return seg[:n, 0]


@pytest.mark.parametrize("dsjson", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_random_records_read_as_the_python_reader_reads_them(seed: int, dsjson: bool) -> None:
    rng = np.random.default_rng(seed)
    lines = [_record(rng, dsjson) for _ in range(300)]
    data = ("\n".join(lines) + "\n").encode()
    codes = _same(data, DS if dsjson else JS)
    # the kernel takes most of them (each record is one line, plus the last empty one)
    assert np.count_nonzero(codes == jsonfast.FAST) > 0.2 * len(lines)
    assert np.count_nonzero(codes == jsonfast.SLOW) > 0.1 * len(lines)


@pytest.mark.parametrize("dsjson", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_damaged_records_are_refused_or_read_as_the_python_reader(seed: int, dsjson: bool) -> None:
    rng = np.random.default_rng(100 + seed)
    lines = [_mutate(rng, _record(rng, dsjson).encode()) for _ in range(300)]
    data = b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n"
    _same(data, DS if dsjson else JS)


def test_every_number_as_vw_keeps_it() -> None:
    """Each spelling of a feature value and a label: the same float32 as the Python
    reader's text (the kernel writes the token, with ``e+0`` where VW's arithmetic differs)."""
    for num in NUMBERS:
        line = (f'{{"_label_cost":{num},"_label_probability":0.5,"_labelIndex":0,"a":[1],'
                f'"c":{{"s":{{"x":{num}}},"_multi":[{{"a":{{"y":{num}}}}}]}}}}\n')  # fmt: skip
        _same(line.encode(), DS)


def test_what_the_kernel_leaves_to_python() -> None:
    base = ('{"_label_cost":1,"_label_probability":0.5,"_labelIndex":0,"a":[1],'
            '"c":{"s":{"x":1},"_multi":[{"a":{"y":2}}]}}')  # fmt: skip
    cases = {
        base: jsonfast.FAST,
        "": jsonfast.SKIP,
        "not json": jsonfast.SKIP,
        base.replace('"x":1', '"x":"a\\tb"'): jsonfast.SLOW,  # an escape
        base.replace('"x":1', '"x":[1,2]'): jsonfast.SLOW,  # an array of features
        base.replace('"x":1', '"_text":"a b"'): jsonfast.SLOW,
        base.replace('"x":1', '"b c":1'): jsonfast.SLOW,  # a name text cannot hold
        base.replace('"a":[1]', '"a":[1],"pdrop":0.1'): jsonfast.SLOW,
        base.replace('"a":[1]', '"a":[]'): jsonfast.SLOW,  # (no action taken: VW reads on)
        base.replace('"_labelIndex":0', '"_labelIndex":3'): jsonfast.SLOW,  # past the actions
        base.replace('"x":1', '"x":1e39'): jsonfast.SLOW,  # beyond a float32
        base + "x": jsonfast.SLOW,
        base.replace('"a":[1]', '"a":[1],"p":[0.5:0.5]'): jsonfast.SLOW,  # not JSON
        base.replace('"a":[1]', '"a":[1],"V":{"m":1,}'): jsonfast.SLOW,
        base.replace('"a":[1]', '"a":[1],"V":{"m":[1,{"q":[]}]}'): jsonfast.FAST,
    }
    data = "\n".join(cases).encode()
    codes = _same(data, DS)
    assert codes.tolist() == list(cases.values())


def test_vw_s_own_records() -> None:
    """The doctest's record: the kernel's text is the Python reader's."""
    line = (b'{"_label_cost":-1,"_label_probability":0.5,"_labelIndex":1,'
            b'"a":[2,1],"c":{"shared":{"f":"1"},"_multi":[{"action":{"f":"1"}},'
            b'{"action":{"f":"2"}}]},"p":[0.5,0.5]}\n')  # fmt: skip
    assert translate(line, 1, DS).data == b"shared |shared f1\n|action f1\n0:-1:0.5 |action f2\n\n"
    assert _same(line, DS).tolist() == [jsonfast.FAST, jsonfast.SKIP]


def test_many_actions_and_a_line_past_the_kernel_s_length() -> None:
    many = ('{"_label_cost":1,"_label_probability":0.5,"_labelIndex":999,"a":[1],'
            '"c":{"_multi":[' + ",".join(["{}"] * 1000) + "]}}")  # fmt: skip
    feats = ",".join(f'"f{i}":{i % 7}' for i in range(200_000))
    long = ('{"_label_cost":1,"_label_probability":0.5,"_labelIndex":0,"a":[1],'
            '"c":{"s":{' + feats + '},"_multi":[{"a":{"y":2}}]}}')  # fmt: skip
    assert len(long) > jsonfast.FAST_LINE
    codes = _same(f"{many}\n{long}\n".encode(), DS)
    assert codes.tolist() == [jsonfast.FAST, jsonfast.SLOW, jsonfast.SKIP]
    # lines past KERNEL_LINE among short ones: read in Python, in their places
    short = _record(np.random.default_rng(1), True)
    mid = long[: KERNEL_LINE + 500].rsplit(",", 1)[0] + '},"_multi":[{"a":{"y":2}}]}}'
    _same(f"{short}\n{mid}\n{short}\n\n{short}\n{mid}\n".encode(), DS)
