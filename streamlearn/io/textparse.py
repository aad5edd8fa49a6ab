"""Blocks of text lines (VW, svmlight, CSV) to batches: the block kernels and their arrays.

:func:`parse_text_block` turns one :class:`~streamlearn.io.batch.Block` into a
:class:`~streamlearn.io.batch.Batch` with one numba call (``nogil``, so parser
threads can overlap the learner): the block kernel of the format
(:func:`~streamlearn.io.vw.parse_vw_block`,
:func:`~streamlearn.io.svmlight.parse_svmlight_block`,
:func:`~streamlearn.io.csv.run_csv_kernel`) walks the block line by line and hashes
features straight into the CSR arrays, which go round between blocks (:class:`_ArraySets`).
The crosses of the rows follow, in parts of bounded memory (:func:`_crossed`).  The block
dispatcher, :func:`streamlearn.io.parse.parse_block_parts`, sends the VW, svmlight and CSV
blocks here, and the JSON translator its VW text (:mod:`streamlearn.io.vwjson`).

Numbers are converted exactly (:mod:`streamlearn.io._numbers`), or, for ``sl vw``
(``Interactions.vw_numbers``), as VW converts them (:mod:`streamlearn.io.vwfloat`;
VW has no svmlight reader, so svmlight numbers are always correctly rounded).  The rare
token that needs Python's ``float()`` (more than 19 significant digits,
subnormals, ambiguous halfway cases) makes :func:`parse_text_block` run the kernel
a second time with those values filled in; blocks without such tokens (nearly
all) take a single call.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import threading
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from streamlearn.io._scan import block_arrays, count_newlines, feature_bound
from streamlearn.io.batch import LONG_LINE, MAX_MAGNITUDE, TOO_MANY_CROSSES, Batch, Block
from streamlearn.io.crosses import CROSS_BUDGET, expand_batch
from streamlearn.io.formats import FMT_CSV, FMT_SVMLIGHT, FMT_VW
from streamlearn.io.grams import expand_grams
from streamlearn.io.interactions import Interactions, fuses, row_crosser
from streamlearn.io.reader import BLOCK_SIZE
from streamlearn.io.svmlight import parse_svmlight_block
from streamlearn.io.vw import parse_vw_block
from streamlearn.io.vwfloat import float32_of_decimal
from streamlearn.system.direct import Entries
from streamlearn.system.jit import INTERPRETED

_SLOW_CAP = 64
WORDS = not INTERPRETED and sys.byteorder == "little"
"""Whether :func:`parse_text_block` reads words by default: compiled kernels on a
little-endian machine (the word arithmetic reads the first byte as the lowest)."""
_NO_POS = np.empty(0, dtype=np.int64)
_NO_VALS = np.empty(0, dtype=np.float64)


def _unshared(arrays: tuple[np.ndarray, ...]) -> bool:
    """Whether only a pool's tuple refers to each of ``arrays`` (no batch's view of them
    is alive): a view holds its base, so CPython's count shows it."""
    # the tuple's reference, this call's argument and the loop variable
    return all(sys.getrefcount(a) <= 3 for a in arrays)


class _ArraySets:
    """Output arrays for the block kernels, each set reused once no batch refers to it.

    Fresh arrays cost a page fault per 4 KiB page touched: at 1 GB with the
    batches' arrays allocated anew each block, 75,000 faults of the run's
    110,000.  A batch's arrays are slices of its set's arrays, so a set is
    free once only this pool refers to them (CPython's reference counts).  The
    feature arrays of a pooled set have room for :func:`feature_bound`
    entries, of which only the pages a block fills are ever touched.  Beyond
    ``keep`` sets in use (batches kept alive, as a parse into memory does),
    arrays are allocated per block, and the batch gets copies of the parts
    filled (:func:`parse_text_block`).
    """

    def __init__(self, keep: int = 8) -> None:
        self.keep = keep
        self.sets: list[tuple[np.ndarray, ...]] = []
        self.lock = threading.Lock()

    def take(self, n_bytes: int, max_rows: int) -> tuple[tuple[np.ndarray, ...], bool]:
        """Arrays with ``max_rows`` rows and :func:`feature_bound` feature entries; pooled?"""
        need = feature_bound(n_bytes, max_rows)
        with self.lock:
            for i in range(len(self.sets)):
                arrays = self.sets[i]
                # referred to by the list, this variable and the call only
                if sys.getrefcount(arrays) <= 3 and _unshared(arrays):
                    if arrays[0].shape[0] < max_rows or arrays[6].shape[0] < need:
                        arrays = self._new(n_bytes, max_rows)
                        self.sets[i] = arrays
                    return arrays, True
            if len(self.sets) < self.keep:
                arrays = self._new(n_bytes, max_rows)
                self.sets.append(arrays)
                return arrays, True
        return block_arrays(max_rows, need), False

    @staticmethod
    def _new(n_bytes: int, max_rows: int) -> tuple[np.ndarray, ...]:
        # room for a full block and a quarter more rows, so that a set fits the next blocks too
        rows = max(max_rows + max_rows // 4, 1024)
        return block_arrays(rows, feature_bound(max(n_bytes, BLOCK_SIZE + BLOCK_SIZE // 16), rows))


_SETS = _ArraySets()


class _CrossBuffers:
    """Output buffers of :func:`expand_batch`, each pair reused once no batch refers to it.

    Fresh arrays for each batch of crosses cost a page fault per 4 KiB page
    touched, and the kernel's time for it (``-q tt`` on 30 MB: 1.3 s of system
    time in a 3 s run before the buffers went round).  As :class:`_ArraySets`:
    a pair is free once only this pool refers to it; beyond ``keep`` pairs in
    use, new pairs are made (and left to the garbage collector).
    """

    def __init__(self, size: int = CROSS_BUDGET, keep: int = 8) -> None:
        self.size = size
        self.keep = keep
        self.pairs: list[tuple[np.ndarray, np.ndarray]] = []
        self.lock = threading.Lock()

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            for pair in self.pairs:
                if _unshared(pair):
                    return pair
            pair = (np.empty(self.size, dtype=np.uint32), np.empty(self.size, dtype=np.float64))
            if len(self.pairs) < self.keep:
                self.pairs.append(pair)
            return pair


_BUFFERS = _CrossBuffers()
_NO_IDX = np.empty(0, dtype=np.uint32)


def _as_kernel_bytes(data: np.ndarray) -> np.ndarray:
    """uint8, C-contiguous, writable: one compiled signature for every caller."""
    if (
        data.dtype != np.uint8
        or data.ndim != 1
        or not data.flags.c_contiguous
        or not data.flags.writeable
    ):
        data = np.array(data, dtype=np.uint8, copy=True).reshape(-1)
    return data


Rest = Callable[[], Iterator[Batch]]
"""The batches of a block's remaining rows, made as they are asked for (:func:`_crossed`)."""


class _Counts(NamedTuple):
    """What a block kernel reports of its run."""

    rows: int
    features: int
    touching: int
    """Rows whose tag came from a token touching ``|`` (``Batch.n_touching_tags``)."""
    first_touching: int
    """The line of the first of them (0 when none)."""
    crossed: int
    """How many of the first rows the kernel wrote with their crosses (0: none)."""


def parse_text_block(
    block: Block,
    fmt: int,
    bits: int,
    constant: bool = True,
    inter: Interactions | None = None,
    words: bool = WORDS,
    limit: float = MAX_MAGNITUDE,
    budget: int | None = CROSS_BUDGET,
) -> tuple[Batch, Rest | None]:
    """A block of VW, svmlight or CSV lines as
    :func:`~streamlearn.io.parse.parse_block_parts` gives it (the same arguments): the
    batch of its first rows, and the function giving the rest when the crosses take more
    than ``budget`` entries.
    """
    if fmt not in (FMT_VW, FMT_SVMLIGHT, FMT_CSV):
        raise ValueError(f"unknown format code {fmt!r}")
    if fmt == FMT_CSV and (inter is None or inter.csv is None):
        raise ValueError("CSV needs its options (Interactions.csv, a CsvReader)")
    if not 1 <= bits <= 32:
        raise ValueError(f"bits must be in 1..32, got {bits}")
    data = _as_kernel_bytes(block.data)
    mask = np.uint64((1 << bits) - 1)
    newlines = block.newlines if block.newlines >= 0 else count_newlines(data)
    arrays, pooled = _SETS.take(data.shape[0], newlines + 1)
    vw_numbers = fmt == FMT_VW and inter is not None and inter.vw_numbers
    counts = _run(block, data, fmt, mask, bool(constant), float(limit), inter, words, budget,
                  arrays, vw_numbers)  # fmt: skip
    if inter is not None and inter.named is not None and not inter.cs_classes:
        from streamlearn.io.named import read_named

        read_named(data, arrays, counts.rows, inter.named, vw_numbers, float(limit))
    return _rows(block, data, fmt, arrays, pooled, counts, mask, inter, budget)


def _run(block: Block, data: np.ndarray, fmt: int, mask: np.uint64, constant: bool,
         limit: float, inter: Interactions | None, words: bool, budget: int | None,
         arrays: tuple, vw_numbers: bool) -> _Counts:  # fmt: skip
    """The format's kernel over ``data`` into ``arrays``: one call, and a second one with
    the values of the tokens that need Python's ``float()`` when there are any (the spans
    of the first :data:`_SLOW_CAP` are collected by the first call, of all by another).
    """
    if fmt == FMT_CSV:
        from streamlearn.io.csv import run_csv_kernel  # (only CSV runs import its kernel)

        rows, k = run_csv_kernel(inter.csv, data, block.source, int(block.first_line), mask,
                                 constant, limit, arrays)  # fmt: skip
        return _Counts(rows, k, 0, 0, 0)
    args = (data, int(block.first_line), mask, constant, limit)
    kernel = parse_svmlight_block
    if fmt == FMT_VW:
        # the VW kernel writes each row's crosses after it, in the room the arrays have beyond
        # the block's own features (text leaves ~4/5 of it: -q ui fits, -q tt in part); the
        # rows it leaves go through expand_batch (and so does parse_block's single batch)
        fused = budget is not None and fuses(inter)
        # (rows that are rebuilt after the kernel are grouped there, by expand_grams: the
        # affixes and spellings are made from the line's order, redefined namespaces grouped
        # by their new bytes)
        group = inter is None or not inter.regroups
        args += (*vw_options(inter, vw_numbers),
                 row_crosser(inter if fused else None, mask, budget or 0, group))  # fmt: skip
        kernel = parse_vw_block
    run = functools.partial(_kernel, kernel, args, arrays, words, block.source)
    rows, k, touching, first_touching, crossed, n_slow, spans = run(_SLOW_CAP)
    if n_slow:
        if n_slow > _SLOW_CAP:  # collect every span
            *_, spans = run(n_slow)
        spans = spans[:n_slow]
        exact = float32_of_decimal if vw_numbers else float  # VW's fallback is strtof
        vals = np.array([exact(data[s:e].tobytes()) for s, e in spans], dtype=np.float64)
        rows, k, touching, first_touching, crossed, *_ = run(
            0, np.ascontiguousarray(spans[:, 0]), vals
        )
    return _Counts(rows, k, touching, first_touching, crossed)


def _rows(block: Block, data: np.ndarray, fmt: int, arrays: tuple, pooled: bool,
          counts: _Counts, mask: np.uint64, inter: Interactions | None,
          budget: int | None) -> tuple[Batch, Rest | None]:  # fmt: skip
    """The kernel's rows in ``arrays`` as batches: n-grams regrouped, crosses appended
    (:func:`_crossed`), and a malformed row for each line the reader skipped."""
    rows, k = counts.rows, counts.features
    (
        labels, weights, bases, tag_start, tag_end, indptr, indices, values,
        status, line, line_start, err_pos, ns,
    ) = arrays  # fmt: skip
    indptr, indices, values = indptr[: rows + 1], indices[:k], values[:k]
    ns = ns[:k]
    redefine = inter.redefine if inter is not None and fmt == FMT_VW else None
    if inter is not None and (inter.affix is not None or inter.spell is not None) \
            and fmt == FMT_VW:  # fmt: skip
        from streamlearn.io.affix import AFFIX_NS, SPELLING_NS, with_affixes

        # (the kernel matches the rows with the line's namespace bytes: each gets the affixes
        # and spelling of the namespace it is redefined as, and they keep their own namespace)
        table = inter.affix if inter.affix is not None else np.zeros(256, dtype=np.uint64)
        spell = inter.spell
        if redefine is not None:
            table = table[redefine]
            spell = None if spell is None else spell[redefine]
        indptr, indices, values, ns = with_affixes(
            data, rows, line_start, status, indptr, indices, values, ns, mask, table,
            inter.hash_all, inter.hash_seed, spell,
        )  # fmt: skip
        if redefine is not None:
            redefine = redefine.copy()
            redefine[AFFIX_NS] = AFFIX_NS
            redefine[SPELLING_NS] = SPELLING_NS
        pooled = True  # (new arrays, of their own size)
    if redefine is not None:
        ns = redefine[ns]  # (VW's reader redefines a namespace as it reads its name)
    if inter is not None and inter.regroups:
        indptr, indices, values, ns = expand_grams(
            indptr, indices, values, ns, mask, inter.gram_ptr, inter.gram_masks,
            inter.gram_lengths, inter.sort, inter.limits,
        )  # fmt: skip
    if inter is not None and inter.crosses_or_filters and counts.crossed < rows:
        return _crossed(block, data, fmt, rows, arrays, indptr, indices, values, ns, mask, inter,
                        counts.touching, counts.first_touching, budget, counts.crossed,
                        pooled)  # fmt: skip
    if not pooled and not (inter is not None and inter.regroups):
        # a batch that may be kept: no room beyond its features
        indices, values = indices.copy(), values.copy()
    batch = Batch(
        labels=labels[:rows],
        weights=weights[:rows],
        bases=bases[:rows],
        tag_start=tag_start[:rows],
        tag_end=tag_end[:rows],
        indptr=indptr,
        indices=indices,
        values=values,
        status=status[:rows],
        line=line[:rows],
        block=block if data is block.data else dataclasses.replace(block, data=data),
        n_touching_tags=counts.touching,
        first_touching_tag_line=counts.first_touching,
        line_start=line_start[:rows],
        err_pos=err_pos[:rows],
        fmt=fmt,
        ns=ns,
    )
    return (_with_long_lines(batch, block.long_lines) if block.long_lines else batch), None


def _crossed(block: Block, data: np.ndarray, fmt: int, rows: int, arrays: tuple,
             indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, ns: np.ndarray,
             mask: np.uint64, inter: Interactions, touching: int, first_touching: int,
             budget: int | None, start: int = 0,
             pooled: bool = True) -> tuple[Batch, Rest | None]:  # fmt: skip
    """The parsed rows with their crosses (:func:`expand_batch`), in parts of at most
    ``budget`` entries; a row past ``inter.max_crosses`` becomes malformed.

    The first ``start`` rows have their crosses already (the parse kernel wrote them,
    :func:`~streamlearn.io.crosses.cross_row`): they are the first part as they are.
    """
    labels, weights, bases, tag_start, tag_end, _, _, _, status, line, line_start, err_pos, _ = (
        arrays
    )
    status = status[:rows]
    # entries a part may hold: the pooled buffers' size at most (None: the whole block)
    room = np.iinfo(np.int64).max if budget is None else min(budget, _BUFFERS.size)
    if data is not block.data:
        block = dataclasses.replace(block, data=data)

    def part(lo: int) -> tuple[Batch, int]:
        buf_idx, buf_val = _BUFFERS.take() if budget is not None else (_NO_IDX, _NO_VALS)
        ptr, idx, val, end = expand_batch(
            indptr, indices, values, ns, mask, inter.terms, inter.lengths, inter.drop,
            inter.drop_linear, inter.dedupe, inter.cross_mode, status, lo, room, inter.max_crosses,
            buf_idx, buf_val,
        )  # fmt: skip
        del buf_idx, buf_val  # the batch's views keep them from the pool while it lives
        crowded = np.flatnonzero(status[lo:end] == TOO_MANY_CROSSES) + lo
        labels[crowded] = np.nan  # a malformed row, as the parser leaves them
        weights[crowded] = 0.0
        return made(lo, end, ptr, idx, val), end

    def made(lo: int, end: int, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray) -> Batch:
        cut = slice(lo, end)
        batch = Batch(
            labels=labels[cut], weights=weights[cut], bases=bases[cut],
            tag_start=tag_start[cut], tag_end=tag_end[cut], indptr=ptr, indices=idx,
            values=val, status=status[cut], line=line[cut], block=block,
            n_touching_tags=touching if lo == 0 else 0,
            first_touching_tag_line=first_touching if lo == 0 else 0,
            line_start=line_start[cut], err_pos=err_pos[cut], fmt=fmt,
        )  # fmt: skip
        if block.long_lines:  # each goes with the part of the row after it (or the last part)
            after = line[lo - 1] if lo else -1
            before = line[end - 1] if end < rows else np.iinfo(np.int64).max
            mine = tuple(r for r in block.long_lines if after < r[0] < before)
            if mine:
                batch = _with_long_lines(batch, mine)
        return batch

    if start:
        nnz = int(indptr[start])
        idx, val = indices[:nnz], values[:nnz]
        if not pooled:  # a batch that may be kept: no room beyond its features
            idx, val = idx.copy(), val.copy()
        first, end = made(0, start, indptr[: start + 1], idx, val), start
    else:
        first, end = part(0)
    if end == rows:
        return first, None

    def rest(lo: int = end) -> Iterator[Batch]:
        while lo < rows:
            batch, lo = part(lo)
            yield batch

    return first, rest


def _with_long_lines(batch: Batch, long_lines: tuple) -> Batch:
    """``batch`` with a malformed row (:data:`LONG_LINE`) for each line the reader skipped.

    The reader left an empty line in each one's place, which gave no row; the
    rows go where their line numbers put them, without features, label NaN,
    weight 0 (as every malformed row).
    """
    lines = np.array([r[0] for r in long_lines], dtype=np.int64)
    at = np.searchsorted(batch.line, lines)
    n = lines.shape[0]
    ins = functools.partial(np.insert, obj=at)
    return dataclasses.replace(
        batch,
        labels=ins(batch.labels, values=np.full(n, np.nan)),
        weights=ins(batch.weights, values=0.0),
        bases=ins(batch.bases, values=0.0),
        tag_start=ins(batch.tag_start, values=0),
        tag_end=ins(batch.tag_end, values=0),
        indptr=np.insert(batch.indptr, at, batch.indptr[at]),
        status=ins(batch.status, values=LONG_LINE),
        line=ins(batch.line, values=lines),
        line_start=None if batch.line_start is None else ins(batch.line_start, values=0),
        err_pos=None if batch.err_pos is None else ins(batch.err_pos, values=-1),
    )


def vw_options(inter: Interactions | None, vw_numbers: bool) -> tuple:
    """:func:`~streamlearn.io.vw.parse_vw_block`'s options after the block's: hash every
    name, VW's numbers, labels left to a label kernel, the hash seed."""
    return (inter is not None and inter.hash_all, vw_numbers,
            inter is not None and inter.label_kind != 0,
            np.uint32(inter.hash_seed if inter is not None else 0))  # fmt: skip


def _kernel(kernel, args: tuple, arrays: tuple, words: bool, source: str, slow_cap: int,
            slow_pos: np.ndarray = _NO_POS, slow_vals: np.ndarray = _NO_VALS) -> tuple:  # fmt: skip
    """One run of a block kernel; the VW kernel's last argument, its crosser, is the
    last of ``args``.

    Returns rows, features, touching tags and the first one's line, the rows
    crossed by the kernel (0 for svmlight's), how many slow tokens there were and
    the spans of the first ``slow_cap``.
    """
    spans = np.empty((slow_cap, 2), dtype=np.int64)
    st = np.zeros(2, dtype=np.int64)  # slow tokens found, the second pass's cursor
    if kernel is parse_vw_block:
        *head, crosser = args
        rows, k, touching, first_touching, overflow, crossed = kernel(
            *head, spans, st, slow_pos, slow_vals, words, arrays, crosser
        )
    else:
        rows, k, touching, first_touching, overflow = kernel(
            *args, spans, st, slow_pos, slow_vals, words, arrays
        )
        crossed = 0
    if overflow:
        raise RuntimeError(f"{source}: more lines in a block than its count")
    return rows, k, touching, first_touching, crossed, int(st[0]), spans


class LineParser:
    """One VW text line at a time, into arrays kept between calls: the per-call path of a
    resident model (``vowpalwabbit.Workspace.learn``, the server's single lines).

    :meth:`parse` runs :func:`~streamlearn.io.vw.parse_vw_block` over the line with the
    arguments :func:`parse_text_block` would give it, and returns the count of features
    of its one row, or -1 when the line needs :func:`parse_text_block` itself: not exactly
    one row, a token for Python's ``float()``, a tag touching ``|``, crosses the kernel did
    not write, n-grams, named labels, CSV.  The row is in :attr:`arrays` (the order of
    :func:`~streamlearn.io._scan.block_arrays`) until the next call.
    """

    ROOM = 1 << 16
    """Feature entries kept (the line's features and their crosses; more: -1)."""

    def __init__(self, bits: int, constant: bool, inter: Interactions | None,
                 words: bool = WORDS, limit: float = MAX_MAGNITUDE) -> None:  # fmt: skip
        self.usable = not (inter is not None and (inter.regroups or inter.named is not None
                                                  or inter.csv is not None
                                                  or inter.affix is not None))  # fmt: skip
        mask = np.uint64((1 << bits) - 1)
        fused = fuses(inter)
        self.crosses = inter is not None and inter.crosses_or_filters
        self.head = (1, mask, bool(constant), float(limit),
                     *vw_options(inter, inter is not None and inter.vw_numbers))  # fmt: skip
        self.crosser = row_crosser(inter if fused else None, mask, CROSS_BUDGET)
        self.words = words
        self.buf = np.empty(self.ROOM // 4, dtype=np.uint8)
        self.view = memoryview(self.buf)
        self.arrays = block_arrays(2, self.ROOM)
        self.spans = np.empty((1, 2), dtype=np.int64)
        self.st = np.zeros(2, dtype=np.int64)
        self.call = Entries()  # parse_vw_block through its compiled entry (system.direct)
        labels, weights, bases, _, _, indptr, indices, values, status, *_ = self.arrays
        self.indices, self.values = indices, values
        self.row = (indptr[:2], labels[:1], weights[:1], bases[:1], status[:1])
        """The row's arrays, as a learner's kernel takes them (views kept: the same memory)."""

    def parse(self, line: bytes) -> int:
        """The features of ``line`` (one line, ending in ``\\n``), or -1 (the class's)."""
        n = len(line)
        if not self.usable or 2 * n + 64 > self.ROOM:
            return -1
        if n > self.buf.shape[0]:
            self.buf = np.empty(2 * n, dtype=np.uint8)
            self.view = memoryview(self.buf)
        self.view[:n] = line  # (a memoryview's copy: a third of numpy's cost)
        data = self.buf[:n]
        self.st[0] = 0
        args = (data, *self.head, self.spans, self.st, _NO_POS, _NO_VALS, self.words,
                self.arrays, self.crosser)  # fmt: skip
        rows, k, touching, _, overflow, crossed = self.call(parse_vw_block, *args)
        if rows != 1 or overflow or touching or self.st[0] or (self.crosses and crossed < 1):
            return -1
        return k
