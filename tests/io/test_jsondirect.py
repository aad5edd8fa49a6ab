"""JSON records read straight into rows (``io/jsondirect.py``) are the text path's examples.

The reference is the path every other JSON line takes: the kernel's VW text
(:func:`streamlearn.io.vwjson.json_block`), parsed
(:func:`~streamlearn.io.multiline.parse_examples`) and given the JSON lines' numbers
(:func:`~streamlearn.io.vwjson.restore_examples`); that text is itself held to the Python
reader's by ``test_jsonfast.py``.  On random records, every row array, label entry and
example boundary of the two must be equal, or the block must be left to the text path
(None).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from streamlearn.io import jsonfast
from streamlearn.io.batch import Block
from streamlearn.io.interactions import compile_interactions
from streamlearn.io.jsondirect import read_examples, usable
from streamlearn.io.labels import LABEL_CB
from streamlearn.io.multiline import parse_examples
from streamlearn.io.vwjson import json_block, restore_examples
from tests.io.test_jsonfast import NUMBERS, _mutate, _record

INTER = dataclasses.replace(compile_interactions(vw_numbers=True), label_kind=LABEL_CB)


def _block(data: bytes, first_line: int = 1) -> Block:
    buf = np.frombuffer(data, dtype=np.uint8).copy()
    return Block(buf, "t.json", first_line, newlines=data.count(b"\n"))


def _text_path(block: Block, dsjson: bool, bits: int, constant: bool, inter):  # noqa: ANN001, ANN202
    text, tr = json_block(block, dsjson, inter)
    return restore_examples(parse_examples(text, bits, constant, inter, LABEL_CB), tr)


def _equal(a, b) -> None:  # noqa: ANN001 - two io.multiline.Examples
    x, y = a.batch, b.batch
    for name in ("labels", "weights", "bases", "indptr", "indices", "values", "status", "line",
                 "err_pos", "ns"):  # fmt: skip
        np.testing.assert_array_equal(getattr(x, name), getattr(y, name), err_msg=name)
    np.testing.assert_array_equal(x.tag_end - x.tag_start, y.tag_end - y.tag_start)
    for name in ("ptr", "cls", "cost", "prob", "flags"):
        np.testing.assert_array_equal(getattr(a.labels, name), getattr(b.labels, name),
                                      err_msg=name)  # fmt: skip
    np.testing.assert_array_equal(a.ex_ptr, b.ex_ptr)


def _fast_lines(rng: np.random.Generator, dsjson: bool, n: int) -> list[bytes]:
    """``n`` random records the kernel reads (not left to Python) into usable rows."""
    out: list[bytes] = []
    while len(out) < n:
        line = _record(rng, dsjson).encode()
        if _codes(line, dsjson)[0] != jsonfast.FAST:
            continue
        if (_text_path(_block(line), dsjson, 18, True, INTER).batch.status == 0).all():
            out.append(line)
    return out


def _codes(line: bytes, dsjson: bool = True) -> list[int]:
    seg = np.empty((line.count(b"\n") + 1, 4), dtype=np.int64)
    text = np.empty(4 * len(line) + 256, dtype=np.uint8)
    n = jsonfast.translate_block(np.frombuffer(line, dtype=np.uint8), dsjson, text, seg)
    return seg[:n, 0].tolist()


@pytest.mark.parametrize("dsjson", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_random_records_are_the_text_path_s_examples(seed: int, dsjson: bool) -> None:
    rng = np.random.default_rng(seed)
    lines = _fast_lines(rng, dsjson, 200)
    if dsjson:  # lines that are no record: skipped by both
        lines[5:5] = [b"", b"  ", b"not a record"]
    data = b"\n".join(lines) + b"\n"
    bits = int(rng.choice([1, 4, 18, 24, 32]))
    constant = bool(seed % 3)
    inter = INTER if seed % 2 else dataclasses.replace(INTER, hash_seed=int(rng.integers(1, 2**32)))
    block = _block(data, first_line=int(rng.integers(1, 1000)))
    got = read_examples(block, dsjson, bits, constant, inter)
    assert got is not None
    assert got.m == 200
    _equal(got, _text_path(block, dsjson, bits, constant, inter))


@pytest.mark.parametrize("seed", range(4))
def test_a_block_with_a_line_for_python_is_the_text_path_s(seed: int) -> None:
    rng = np.random.default_rng(50 + seed)
    lines = _fast_lines(rng, True, 50)
    lines[int(rng.integers(0, 50))] = b'{"_label_cost":1,"a":[1],"c":{"x":"a\\tb","_multi":[{}]}}'
    assert read_examples(_block(b"\n".join(lines)), True, 18, True, INTER) is None


@pytest.mark.parametrize("seed", range(4))
def test_damaged_records_read_here_are_the_text_path_s(seed: int) -> None:
    """Bytes changed at random: the blocks still read here (no line the kernel leaves to
    Python) give the text path's examples."""
    rng = np.random.default_rng(200 + seed)
    read = 0
    for _ in range(60):
        lines = [_mutate(rng, line) if rng.random() < 0.3 else line
                 for line in _fast_lines(rng, True, 4)]  # fmt: skip
        data = b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n"
        block = _block(data)
        got = read_examples(block, True, 18, True, INTER)
        if got is not None:
            read += 1
            _equal(got, _text_path(block, True, 18, True, INTER))
    assert read > 10


def test_every_number_and_label_as_the_text_path() -> None:
    """Each spelling of a feature value, a cost and a probability; values past the run's
    limit and labels the label reader refuses go to the text path (which says why)."""
    read = 0
    for num in NUMBERS:
        for prob in ("0.5", num):
            line = (f'{{"_label_cost":{num},"_label_probability":{prob},"_labelIndex":0,'
                    f'"a":[1],"c":{{"s":{{"x":{num},"y":"{num}"}},"_multi":[{{"a":{{"y":{num}}}}}'
                    f',{{"b":{{"{num}":true}}}}]}}}}\n').encode()  # fmt: skip
            block = _block(line)
            got = read_examples(block, True, 18, True, INTER)
            want = _text_path(block, True, 18, True, INTER)
            if got is None:
                assert (want.batch.status != 0).any() or jsonfast.SLOW in _codes(line) \
                    or abs(float(num)) > 1e18, (num, prob)  # fmt: skip
            else:
                read += 1
                _equal(got, want)
    # (numbers VW's text arithmetic reads differently, left to Python by the text path's
    # kernel, are read here: 1E-3, -2.5e-7)
    assert read >= 30


def test_rows_past_the_first_estimate() -> None:
    """Records of many empty actions: more rows than the first arrays hold."""
    many = ('{"_label_cost":1,"_label_probability":0.5,"_labelIndex":3,"a":[1],'
            '"c":{"_multi":[' + ",".join(["{}"] * 500) + "]}}")  # fmt: skip
    data = ("\n".join([many] * 20) + "\n").encode()
    block = _block(data)
    got = read_examples(block, True, 18, True, INTER)
    assert got is not None and got.batch.n == 20 * 501
    _equal(got, _text_path(block, True, 18, True, INTER))


def test_options_that_change_rows_take_the_text_path() -> None:
    full = compile_interactions(vw_numbers=True, ngram=("a2",))
    assert usable(INTER, LABEL_CB)
    assert not usable(dataclasses.replace(full, label_kind=LABEL_CB), LABEL_CB)
    assert not usable(dataclasses.replace(INTER, hash_all=True), LABEL_CB)
    assert not usable(dataclasses.replace(INTER, chain_hash=True), LABEL_CB)
    assert not usable(dataclasses.replace(INTER, vw_numbers=False), LABEL_CB)
    assert not usable(INTER, 1)
    line = _fast_lines(np.random.default_rng(3), True, 1)[0]
    block = dataclasses.replace(_block(line), long_lines=((2, 10**8, b"{"),))
    assert read_examples(block, True, 18, True, INTER) is None


def test_a_line_past_the_kernel_s_length_takes_the_text_path() -> None:
    """The kernel's scratch is sized by the longest line: a block with a line longer than
    the text path's kernel takes (``KERNEL_LINE``) is read there."""
    from streamlearn.io.jsonfast import KERNEL_LINE

    feats = ",".join(f'"f{i}":{i % 7}' for i in range(KERNEL_LINE // 7))
    long = ('{"_label_cost":1,"_label_probability":0.5,"_labelIndex":0,"a":[1],'
            '"c":{"s":{' + feats + '},"_multi":[{"a":{"y":2}}]}}')  # fmt: skip
    assert KERNEL_LINE < len(long) < jsonfast.FAST_LINE
    assert jsonfast.FAST in _codes(long.encode())
    assert read_examples(_block(long.encode() + b"\n"), True, 18, True, INTER) is None
    short = long[: KERNEL_LINE - 500].rsplit(",", 1)[0] + '},"_multi":[{"a":{"y":2}}]}}'
    block = _block(short.encode() + b"\n")
    got = read_examples(block, True, 18, True, INTER)
    assert got is not None
    _equal(got, _text_path(block, True, 18, True, INTER))
