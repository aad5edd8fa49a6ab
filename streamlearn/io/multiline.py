"""Multiline examples (VW's ``--csoaa_ldf``, ``--cb_adf``): blocks that never split one,
batches that carry example boundaries beside their rows, and the shared line merged.

A multiline example is a run of lines ended by a blank line (or by the end of its
source, as VW ends it): an optional ``shared`` line first, then one line per action.

* :func:`example_blocks` re-cuts the reader's blocks (:func:`~streamlearn.io.reader.iter_blocks`:
  files, stdin, pipes, compressed input alike) after their last blank line, carrying the
  rest into the next block of the same source, so that no example is ever split.
* :func:`parse_examples` parses such a block (the parse kernel with the label part left
  to :mod:`streamlearn.io.labels`) into :class:`Examples`: the batch, its label entries and
  ``ex_ptr``, the rows of each example (a blank line between two rows ends an example).
  Example-level checks: a ``shared`` line that is not first (25), a shared line with no
  action line (24).
* :func:`merge_shared` makes the rows a reduction learns from: each action row's own
  features (its constant last), then the shared line's features (not its constant), VW's
  ``shared_feature_merger`` order; interactions are crossed after the merge
  (:func:`cross_merged`), so ``-q sa`` crosses shared with action namespaces.  An example
  with a malformed row is left out whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from streamlearn.io._scan import CONSTANT_NS
from streamlearn.io.batch import Batch, Block
from streamlearn.io.crosses import expand_batch
from streamlearn.io.interactions import Interactions
from streamlearn.io.labels import (
    LABEL_CB,
    NO_ACTIONS,
    ROW_SHARED,
    SHARED_ALONE,
    SHARED_NOT_FIRST,
    TWO_LABELED_LINES,
    Labels,
    read_labels,
)
from streamlearn.io.shared import merge_row, shared_example
from streamlearn.system.jit import jit, jit_inline, jit_noalloc

MAX_EXAMPLE_BYTES = 1 << 30
"""The longest multiline example read (bytes): a source without blank lines is one
example, carried from block to block until its end."""


@jit
def last_example_end(data: np.ndarray) -> int:
    """The offset just after the last blank line of ``data`` that ends in ``\\n``, or -1.

    A blank line holds only spaces, tabs and carriage returns (the lines the parse kernel
    skips).  ``data`` starts at a line boundary.
    """
    n = data.shape[0]
    t = -1
    blank = True
    for i in range(n - 1, -1, -1):
        c = data[i]
        if c == 10:
            if t >= 0 and blank:
                return t + 1
            t = i
            blank = True
        elif not (c == 32 or c == 9 or c == 13):
            blank = False
    if t >= 0 and blank:
        return t + 1
    return -1


def _cut(block: Block, end: int) -> tuple[Block, Block | None]:
    """``block`` as its first ``end`` bytes and the rest (None when empty)."""
    head = block.data[:end]
    if block.newlines >= 0:  # counted by the reader: count the (short) rest only
        rest_nl = int(np.count_nonzero(block.data[end:] == 10))
        nl = block.newlines - rest_nl
    else:
        nl = int(np.count_nonzero(head == 10))
        rest_nl = -1
    split = block.first_line + nl
    mine = tuple(r for r in block.long_lines if r[0] < split)
    rest_long = tuple(r for r in block.long_lines if r[0] >= split)
    first = dataclasses.replace(block, data=head, newlines=nl, long_lines=mine,
                                dropped=sum(r[1] for r in mine))  # fmt: skip
    if end >= block.data.shape[0]:
        return first, None
    rest = dataclasses.replace(block, data=block.data[end:], first_line=split, newlines=rest_nl,
                               long_lines=rest_long,
                               dropped=sum(r[1] for r in rest_long))  # fmt: skip
    return first, rest


def example_blocks(blocks: Iterable[Block]) -> Iterator[Block]:
    """``blocks`` re-cut so that each ends after a blank line (or at its source's end).

    The bytes after a block's last blank line wait for the next block of the same
    source; a source's last example ends at its end, blank line or not (VW).
    """
    carry: Block | None = None
    for block in blocks:
        if carry is not None:
            if carry.source == block.source and carry.first_line < block.first_line:
                if carry.data.shape[0] + block.data.shape[0] > MAX_EXAMPLE_BYTES:
                    raise ValueError(
                        f"{block.source}:{carry.first_line}: a multiline example longer than "
                        f"{MAX_EXAMPLE_BYTES} bytes (no blank line)"
                    )
                known = carry.newlines >= 0 and block.newlines >= 0
                block = dataclasses.replace(
                    block, data=np.concatenate([carry.data, block.data]),
                    first_line=carry.first_line,
                    newlines=carry.newlines + block.newlines if known else -1,
                    long_lines=carry.long_lines + block.long_lines,
                    dropped=carry.dropped + block.dropped,
                )  # fmt: skip
            else:
                yield carry
            carry = None
        end = last_example_end(block.data)
        if end < 0:
            carry = block
            continue
        first, carry = _cut(block, end)
        yield first
    if carry is not None:
        yield carry


@dataclass
class Examples:
    """Parsed multiline examples of one block.

    ``ex_ptr`` (int64[m + 1]): example ``e`` is rows ``ex_ptr[e]:ex_ptr[e + 1]`` of
    ``batch``; ``labels`` the rows' label entries (:mod:`streamlearn.io.labels`).
    """

    batch: Batch
    labels: Labels
    ex_ptr: np.ndarray

    @property
    def m(self) -> int:
        return int(self.ex_ptr.shape[0] - 1)


def example_starts(line: np.ndarray) -> np.ndarray:
    """``ex_ptr`` of rows with line numbers ``line``: a gap (a blank line) ends an example."""
    n = line.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    cuts = np.flatnonzero(np.diff(line) > 1) + 1
    return np.concatenate([[0], cuts, [n]]).astype(np.int64)


@jit
def check_examples(ex_ptr, flags, status, err_pos):  # noqa: ANN001, ANN201
    """Mark a shared line that is not its example's first (25) and a shared line alone (24)."""
    for e in range(ex_ptr.shape[0] - 1):
        lo = ex_ptr[e]
        hi = ex_ptr[e + 1]
        for r in range(lo + 1, hi):
            if flags[r] & ROW_SHARED and status[r] == 0:
                status[r] = SHARED_NOT_FIRST
                err_pos[r] = -1
        if hi - lo == 1 and flags[lo] & ROW_SHARED and status[lo] == 0:
            status[lo] = SHARED_ALONE
            err_pos[lo] = -1


def parse_examples(block: Block, bits: int, constant: bool, inter: Interactions,
                   kind: int = LABEL_CB) -> Examples:  # fmt: skip
    """Parse a block of whole multiline examples (:func:`example_blocks`).

    ``inter`` are the parse options without crosses (``label_kind`` = ``kind``); the
    crosses come after the shared line is merged (:func:`cross_merged`).
    """
    from streamlearn.io.parse import FMT_VW, parse_block

    batch = parse_block(block, FMT_VW, bits, constant, inter)
    if batch.err_pos is None:
        batch.err_pos = np.full(batch.n, -1, dtype=np.int64)
    labels = read_labels(batch, kind, inter.vw_numbers)
    ex_ptr = example_starts(batch.line)
    check_examples(ex_ptr, labels.flags, batch.status, batch.err_pos)
    return Examples(batch, labels, ex_ptr)


@jit
def merge_examples(ex_ptr, flags, status, indptr, indices, values, ns, count_only, out_ex,
                   out_row, out_ptr, out_idx, out_val, out_ns):  # fmt: skip
    """Count (``count_only``: sizes only, no entry visited) or write the merged rows (each
    action row with the shared line's features, as VW's ``shared_feature_merger`` appends
    them: :func:`streamlearn.io.shared.merge_row`); returns (examples, rows, entries)."""
    if count_only:  # the sizes only: each row's entries, plus the shared line's
        m = 0
        rows = 0
        k = 0
        for e in range(ex_ptr.shape[0] - 1):
            lo = ex_ptr[e]
            hi = ex_ptr[e + 1]
            first = _first_row(lo, hi, flags, status)
            if first < 0:
                continue
            m += 1
            extra = 0
            if first > lo:
                for t in range(indptr[lo], indptr[lo + 1]):
                    if ns[t] != CONSTANT_NS:
                        extra += 1
            k += indptr[hi] - indptr[first] + extra * (hi - first)
            rows += hi - first
        return m, rows, k
    # the shared example's arrays, made once for the widest shared line; the loop that uses
    # them counts no references (its helpers' many arrays made the merge 2x slower)
    room = 1
    for e in range(ex_ptr.shape[0] - 1):
        room = max(room, indptr[ex_ptr[e] + 1] - indptr[ex_ptr[e]] + 1)
    scratch_idx = np.empty((2, room), dtype=indices.dtype)
    scratch_val = np.empty((2, room), dtype=values.dtype)
    scratch_ns = np.empty((2, room), dtype=ns.dtype)
    marks = np.zeros((2, 257), dtype=np.int64)
    grouping = np.zeros(257, dtype=np.bool_)
    s_bits = np.zeros(4, dtype=np.uint64)
    return _merge_rows(ex_ptr, flags, status, indptr, indices, values, ns, out_ex, out_row,
                       out_ptr, out_idx, out_val, out_ns, scratch_idx, scratch_val, scratch_ns,
                       marks, grouping, s_bits)  # fmt: skip


@jit_inline
def _first_row(lo, hi, flags, status):  # noqa: ANN001, ANN202
    """Example ``lo:hi``'s first action row (after its shared line), or -1: a malformed row,
    or no action."""
    for r in range(lo, hi):
        if status[r] != 0:
            return -1
    first = lo + 1 if flags[lo] & ROW_SHARED else lo
    return first if first < hi else -1


@jit_noalloc
def _merge_rows(ex_ptr, flags, status, indptr, indices, values, ns, out_ex, out_row, out_ptr,
                out_idx, out_val, out_ns, scratch_idx, scratch_val, scratch_ns, marks, grouping,
                s_bits):  # fmt: skip
    """:func:`merge_examples`'s rows, written (``scratch_*``: the raw and the grouped shared
    example; ``marks``: the shared example's and the rows' namespace stamps)."""
    m = 0
    rows = 0
    k = 0
    out_ptr[0] = 0
    raw_idx, s_idx = scratch_idx[0], scratch_idx[1]
    raw_val, s_val = scratch_val[0], scratch_val[1]
    raw_ns, s_ns = scratch_ns[0], scratch_ns[1]
    s_has, mark = marks[0], marks[1]
    for e in range(ex_ptr.shape[0] - 1):
        lo = ex_ptr[e]
        hi = ex_ptr[e + 1]
        first = _first_row(lo, hi, flags, status)
        if first < 0:
            continue
        out_ex[m] = e
        m += 1
        s_n = 0
        for w in range(4):
            s_bits[w] = 0
        if first > lo:
            s_n = shared_example(lo, -1, -1, indptr, indices, values, ns, raw_idx, raw_val,
                                 raw_ns, s_idx, s_val, s_ns, s_has, m, s_bits,
                                 grouping)  # fmt: skip
        for r in range(first, hi):
            k = merge_row(indptr[r], indptr[r + 1], indices, values, ns, s_idx, s_val, s_ns,
                          s_n, s_has, m, s_bits, k, out_idx, out_val, out_ns, mark,
                          rows + 1)  # fmt: skip
            out_row[rows] = r
            out_ptr[rows + 1] = k
            rows += 1
    return m, rows, k


@jit
def row_labels(rows, act_ptr, lab_ptr, lab_cls, lab_cost, lab_prob, logged, status, lab_n,
               out_cls, out_cost, chosen, cost, prob, keep):  # fmt: skip
    """Each merged row's first label entry (``lab_n`` entries, class 0 and cost NaN without
    one); with ``logged`` (cb), each example's logged action: its one costed row's
    position, cost and probability.  An example with a second costed row is not kept
    (``keep``), that row marked (23: VW throws)."""
    for e in range(act_ptr.shape[0] - 1):
        seen = -1
        for i in range(act_ptr[e], act_ptr[e + 1]):
            r = rows[i]
            f = lab_ptr[r]
            lab_n[i] = lab_ptr[r + 1] - f
            if lab_n[i] == 0:
                out_cls[i] = 0
                out_cost[i] = np.nan
                continue
            out_cls[i] = lab_cls[f]
            out_cost[i] = lab_cost[f]
            if not logged or lab_cost[f] != lab_cost[f]:
                continue
            if seen < 0:
                seen = i
            elif keep[e]:
                status[r] = TWO_LABELED_LINES
                keep[e] = False
        if seen >= 0 and keep[e]:
            f = lab_ptr[rows[seen]]
            chosen[e] = seen - act_ptr[e]
            cost[e] = lab_cost[f]
            prob[e] = lab_prob[f]


@dataclass
class Merged:
    """The action rows of a block's well-formed examples, shared features merged.

    ``act_ptr`` (int64[m + 1]): example ``e``'s action rows are ``act_ptr[e]:act_ptr[e + 1]``;
    ``example`` (int64[m]): its index among :class:`Examples`' examples; ``row``
    (int64[rows]): each action row's row in the batch (labels, tags, line numbers);
    ``indptr``/``indices``/``values``/``ns``: the merged features.
    """

    act_ptr: np.ndarray
    example: np.ndarray
    row: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    ns: np.ndarray


def merge_shared(ex: Examples) -> Merged:
    """:func:`merge_examples` over ``ex``: the examples with no malformed row, shared line
    merged."""
    b = ex.batch
    ns = b.ns if b.ns is not None else np.zeros(b.indices.shape[0], dtype=np.uint8)
    e0 = np.empty(0, dtype=np.int64)
    m, rows, k = merge_examples(ex.ex_ptr, ex.labels.flags, b.status, b.indptr, b.indices,
                                b.values, ns, True, e0, e0, e0, b.indices[:0], b.values[:0],
                                ns[:0])  # fmt: skip
    out_ex = np.empty(m, dtype=np.int64)
    out_row = np.empty(rows, dtype=np.int64)
    out_ptr = np.empty(rows + 1, dtype=np.int64)
    out_idx = np.empty(k, dtype=b.indices.dtype)
    out_val = np.empty(k, dtype=np.float64)
    out_ns = np.empty(k, dtype=ns.dtype)
    merge_examples(ex.ex_ptr, ex.labels.flags, b.status, b.indptr, b.indices, b.values, ns,
                   False, out_ex, out_row, out_ptr, out_idx, out_val, out_ns)  # fmt: skip
    # each example's first action row: rows per example from the source examples
    firsts = ex.ex_ptr[out_ex] + (ex.labels.flags[ex.ex_ptr[out_ex]] & ROW_SHARED)
    lasts = ex.ex_ptr[out_ex + 1]
    act_ptr = np.concatenate([[0], np.cumsum(lasts - firsts)]).astype(np.int64)
    return Merged(act_ptr, out_ex, out_row, out_ptr, out_idx, out_val, out_ns)


def cross_merged(mg: Merged, inter: Interactions | None, bits: int) -> Merged:
    """``mg`` with the interactions of ``inter`` appended to each merged row (VW's order)."""
    if inter is None or not inter.crosses_or_filters or mg.row.shape[0] == 0:
        return mg
    mask = np.uint64((1 << bits) - 1)
    status = np.zeros(mg.row.shape[0], dtype=np.int32)
    no_idx = np.empty(0, dtype=np.uint32)
    no_val = np.empty(0, dtype=np.float64)
    ptr, idx, val, _ = expand_batch(
        mg.indptr, mg.indices, mg.values, mg.ns, mask, inter.terms, inter.lengths, inter.drop,
        inter.drop_linear, inter.dedupe, inter.cross_mode, status, 0, np.iinfo(np.int64).max,
        inter.max_crosses, no_idx, no_val,
    )  # fmt: skip
    return dataclasses.replace(mg, indptr=ptr, indices=idx, values=val)


__all__ = ["NO_ACTIONS", "Examples", "Merged", "cross_merged", "example_blocks",
           "last_example_end", "merge_shared", "parse_examples", "row_labels"]  # fmt: skip
