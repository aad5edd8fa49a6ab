"""Multiline examples: blocks never split one, boundaries, shared lines, malformed ones."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from streamlearn.io.interactions import compile_interactions
from streamlearn.io.labels import LABEL_CB, ROW_SHARED
from streamlearn.io.multiline import (
    example_blocks,
    last_example_end,
    merge_shared,
    parse_examples,
)
from streamlearn.io.reader import iter_blocks
from tests.cb_logs import adf_log

INTER = compile_interactions(vw_numbers=True)


def _inter():
    import dataclasses

    return dataclasses.replace(INTER, label_kind=LABEL_CB)


def _examples(path: str, block_size: int) -> list[tuple[int, ...]]:
    """Each example as the line numbers of its rows."""
    out = []
    for block in example_blocks(iter_blocks([path], block_size)):
        ex = parse_examples(block, 18, True, _inter())
        for e in range(ex.m):
            out.append(tuple(int(x) for x in ex.batch.line[ex.ex_ptr[e] : ex.ex_ptr[e + 1]]))
    return out


def test_last_example_end():
    def end(b: bytes) -> int:
        return last_example_end(np.frombuffer(b, dtype=np.uint8).copy())

    assert end(b"a\nb\n\nc\n") == 5
    assert end(b"a\nb\n \t\r\nc\n") == 8
    assert end(b"a\nb\nc\n") == -1
    assert end(b"\na\n") == 1
    assert end(b"a\n\n") == 3


@pytest.mark.parametrize("block_size", [1, 7, 64, 500, 1 << 20])
def test_blocks_never_split_an_example(tmp_path, block_size):
    text = adf_log(3, n=60)
    p = tmp_path / "log.dat"
    p.write_text(text)
    want = _examples(str(p), 1 << 22)
    assert len(want) == 60
    assert _examples(str(p), block_size) == want
    gz = tmp_path / "log.dat.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert _examples(str(gz), block_size) == want


def test_last_example_ends_at_eof(tmp_path):
    p = tmp_path / "a.dat"
    p.write_text("shared |s a\n0:1:0.5 |a x\n|a y\n\n|a z\n1:0:0.5 |a w")
    assert _examples(str(p), 8) == [(1, 2, 3), (5, 6)]


def test_merge_order_and_shared_checks(tmp_path):
    p = tmp_path / "a.dat"
    p.write_text("shared |s a b\n0:1:0.5 |a x\n|a y\n\nshared |s q\n\n|a z\nshared |s c\n")
    (block,) = list(iter_blocks([str(p)]))
    ex = parse_examples(block, 18, True, _inter())
    assert ex.ex_ptr.tolist() == [0, 3, 4, 6]
    assert ex.labels.flags[0] == ROW_SHARED
    assert ex.batch.status.tolist() == [0, 0, 0, 24, 0, 25]
    mg = merge_shared(ex)
    assert mg.act_ptr.tolist() == [0, 2] and mg.row.tolist() == [1, 2]
    b = ex.batch
    shared = b.indices[b.indptr[0] : b.indptr[1] - 1].tolist()  # without its constant
    own = b.indices[b.indptr[1] : b.indptr[2]].tolist()  # the action's, constant last
    assert mg.indices[mg.indptr[0] : mg.indptr[1]].tolist() == own + shared


def _merged_by_hand(ex) -> tuple[list[int], list[int], list[list[int]]]:
    """merge_shared's result written in Python: each kept example, each action row, and its
    entries (own, then the shared line's without its constant)."""
    from streamlearn.io._scan import CONSTANT_NS

    b = ex.batch
    ns = b.ns if b.ns is not None else np.zeros(b.indices.shape[0], dtype=np.uint8)
    kept, rows, entries = [], [], []
    for e in range(ex.m):
        lo, hi = int(ex.ex_ptr[e]), int(ex.ex_ptr[e + 1])
        if any(b.status[lo:hi]):
            continue
        shared = bool(ex.labels.flags[lo] & ROW_SHARED)
        first = lo + 1 if shared else lo
        if first >= hi:
            continue
        kept.append(e)
        sh = [t for t in range(b.indptr[lo], b.indptr[lo + 1]) if ns[t] != CONSTANT_NS]
        for r in range(first, hi):
            own = list(range(b.indptr[r], b.indptr[r + 1]))
            rows.append(r)
            entries.append([int(b.indices[t]) for t in own + (sh if shared else [])])
    return kept, rows, entries


@pytest.mark.parametrize("constant", [True, False])
def test_merge_sizes_match_what_is_written(tmp_path, constant):
    # the counting pass sizes the output without visiting entries: every shape of example
    # (shared or not, empty shared line, malformed rows, a shared line alone) sized exactly
    rng = np.random.default_rng(5)
    lines = []
    for _ in range(300):
        kind = rng.integers(0, 5)
        if kind == 0:
            lines.append("shared |s " + " ".join(f"f{j}" for j in range(rng.integers(0, 6))))
        elif kind == 1:
            lines.append("shared |s a b")  # (alone below when no action follows)
            lines.append("")
            continue
        for a in range(rng.integers(1, 5)):
            label = "0:1:0.5 " if a == 0 and rng.random() < 0.5 else ""
            bad = "1:x:y " if rng.random() < 0.05 else ""
            feats = " ".join(f"z{j}:{j}" for j in range(rng.integers(0, 4)))
            lines.append(f"{bad}{label}|a {feats}")
        lines.append("")
    p = tmp_path / "m.dat"
    p.write_text("\n".join(lines) + "\n")
    (block,) = list(example_blocks(iter_blocks([str(p)])))
    ex = parse_examples(block, 18, constant, _inter())
    mg = merge_shared(ex)
    kept, rows, entries = _merged_by_hand(ex)
    assert len(kept) > 50 and any(ex.batch.status)
    assert mg.example.tolist() == kept
    assert mg.row.tolist() == rows
    assert mg.indptr[-1] == mg.indices.shape[0] == sum(map(len, entries))
    got = [mg.indices[mg.indptr[i] : mg.indptr[i + 1]].tolist() for i in range(len(rows))]
    assert got == entries


@pytest.mark.parametrize("block_size", [1, 7, 64, 500, 4096])
def test_newline_counts_handed_to_the_parser_are_exact(tmp_path, block_size):
    # the parser sizes its rows by a block's count: it must be the count of its bytes
    p = tmp_path / "log.dat"
    p.write_text(adf_log(5, n=200) + "shared |s a\n|a b")  # the last example unended
    blocks = list(example_blocks(iter_blocks([str(p)], block_size)))
    counted = [b for b in blocks if b.newlines >= 0]
    assert len(counted) > len(blocks) // 2
    for b in counted:
        assert b.newlines == int(np.count_nonzero(b.data == 10))
