"""One worker's share of a sync interval: read shards, learn, settle, hand back the rows.

:func:`run_segment` is the task :mod:`streamlearn.distributed.driver` sends to a
Dask worker.  It is a pure function of its inputs (the rows every worker
starts from, this worker's clock and counters, where to start reading): a
task that Dask runs again on another worker after its first worker died
computes the same result, and the driver uses one result per task, so no
shard is lost or counted twice.  It reads with the ordinary reader
(:func:`~streamlearn.io.reader.iter_lines_blocks` over
:func:`~streamlearn.io.ranges.open_shard`), parses with the ordinary parser on
threads (as ``sl train`` does: parsing block k+1 while the kernel learns
block k) and learns with the learner's ordinary kernel.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from streamlearn.config import TrainConfig
from streamlearn.distributed.mixing import Rows
from streamlearn.errors import Diverged, InputUnreadable, MalformedData
from streamlearn.io.batch import REASONS, Batch
from streamlearn.io.parse import FORMATS, excerpt, parse_block
from streamlearn.io.ranges import Shard, lines_before, open_shard, owned_start
from streamlearn.io.reader import MAX_LINE_BYTES, iter_lines_blocks
from streamlearn.learners import resolve
from streamlearn.learners.base import G_N, S_NROWS, new_rows
from streamlearn.learners.losses import CLASSIFICATION
from streamlearn.run.runner import SHOWN_ERRORS, run_kernel
from streamlearn.system.sources import SourceError, describe

TEST_DELAY = "SL_DASK_TEST_DELAY"
"""Environment variable (seconds): sleep this long after each block (tests kill a worker
mid-segment with it; never set in normal use)."""


@dataclass(frozen=True)
class Job:
    """What every task of a run shares: options, the format read, how to read."""

    config: TrainConfig
    fmt: str
    block_size: int
    strict: bool
    parse_workers: int = 2
    max_line: int = MAX_LINE_BYTES


@dataclass(frozen=True)
class Position:
    """Where a worker goes on reading: shard index in its list, offset, line number there.

    ``offset`` None: the shard's first line.  ``line``: the number of that
    line counted from the shard's first line (1).
    """

    shard: int = 0
    offset: int | None = None
    line: int = 1


@dataclass
class Segment:
    """The input of one task."""

    job: Job
    rank: int
    shards: list[tuple[int, Shard]]
    """(shard id, shard): the worker's shards in reading order."""
    start: Position
    budget: int | None
    """Usable examples to read before stopping (None: to the end of the shards)."""
    settle: bool
    """Bring every weight current and reset the global sums at the end (several workers)."""
    gstate: np.ndarray
    stats: np.ndarray
    first_pass: bool = True
    """Count and report malformed lines (on the first pass only, as ``sl train``)."""


@dataclass
class Piece:
    """The part of one shard a task read: offsets ``[begin, end)``, and what was in it."""

    shard: int
    begin: int
    end: int
    complete: bool = False
    examples: int = 0
    lines: int = 0


@dataclass
class SegmentResult:
    rank: int
    rows: Rows
    gstate: np.ndarray
    stats: np.ndarray
    learned: float
    """Examples learned in the segment (the weight of this worker in the average)."""
    pieces: list[Piece]
    next: Position | None
    """Where to go on in the next segment of this pass; None when the shards are done."""
    table_rows: np.ndarray
    """The progressive-table rows the kernel wrote (k x ROW_WIDTH)."""
    skipped: int = 0
    reasons: Counter = field(default_factory=Counter)
    first_errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    worker: str = ""
    seconds: float = 0.0


class _Lines:
    """File line numbers of rows of cut shards, counted only when a message needs one."""

    def __init__(self) -> None:
        self._before: dict[int, int] = {}

    def where(self, sid: int, shard: Shard, rel: int) -> str:
        if shard.whole:
            return f"{shard.path}:{rel}"
        if sid not in self._before:
            with open(shard.path, "rb") as f:
                begin = owned_start(f, shard.start)
            self._before[sid] = lines_before(shard.path, begin)
        return f"{shard.path}:{self._before[sid] + rel}"


def _blocks(seg: Segment):
    """(index, offset, block) per block of whole lines; (index, offset, None) at a shard end."""
    for k in range(seg.start.shard, len(seg.shards)):
        _, shard = seg.shards[k]
        first = seg.start if k == seg.start.shard else Position(k)
        src, pos = open_shard(shard, first.offset)
        try:
            for block in iter_lines_blocks(src, seg.job.block_size, seg.job.max_line):
                if first.line != 1:
                    block = dataclasses.replace(block, first_line=block.first_line + first.line - 1)
                yield k, pos, block
                pos += block.data.shape[0] + block.dropped
        finally:
            src.close()
        yield k, pos, None


def _parsed(seg: Segment, pool: ThreadPoolExecutor):
    """:func:`_blocks` with each block parsed on ``pool``, in order, a few blocks ahead."""
    c = seg.job.config
    code, inter = FORMATS[seg.job.fmt], c.namespaces()
    ahead: deque = deque()
    for k, pos, block in _blocks(seg):
        fut = None if block is None else pool.submit(parse_block, block, code, c.bits, c.constant,
                                                     inter)  # fmt: skip
        ahead.append((k, pos, block, fut))
        while len(ahead) > seg.job.parse_workers:
            k0, p0, b0, f0 = ahead.popleft()
            yield k0, p0, b0, None if f0 is None else f0.result()
    while ahead:
        k0, p0, b0, f0 = ahead.popleft()
        yield k0, p0, b0, None if f0 is None else f0.result()


def _head(batch: Batch, r: int) -> Batch:
    """The first ``r`` rows of ``batch``."""
    nnz = int(batch.indptr[r])
    cut = {name: getattr(batch, name)[:r] for name in
           ("labels", "weights", "bases", "tag_start", "tag_end", "status", "line")}  # fmt: skip
    if batch.line_start is not None:
        cut["line_start"] = batch.line_start[:r]
    if batch.err_pos is not None:
        cut["err_pos"] = batch.err_pos[:r]
    return dataclasses.replace(batch, indptr=batch.indptr[: r + 1], indices=batch.indices[:nnz],
                               values=batch.values[:nnz], **cut)  # fmt: skip


def _input_errors(task):  # noqa: ANN001, ANN202 - a decorator
    """A task's unreadable input as :class:`InputUnreadable` (exit 3, as locally), which
    Dask hands to the driver; the driver takes any ``OSError`` for a lost cluster."""

    @functools.wraps(task)
    def run(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            return task(*args, **kwargs)
        except SourceError as e:
            raise InputUnreadable(str(e)) from None
        except OSError as e:
            raise InputUnreadable(f"a worker cannot read its input: {describe(e)}") from None

    return run


@_input_errors
def run_segment(seg: Segment, base: Rows) -> SegmentResult:
    """Learn ``seg``'s examples from the table ``base``; the rows and counters after.

    Deterministic: the same inputs give the same result on any worker.  An input
    it cannot read is :class:`InputUnreadable` (a truncated gzip: exit 3, as locally).
    """
    started = time.perf_counter()
    delay = float(os.environ.get(TEST_DELAY, "0") or 0)
    c = seg.job.config
    spec = resolve(c.algo, c.l1, c.l2, c.minibatch)
    params = c.params()
    table = base.table(spec, c.bits)
    gstate, stats = seg.gstate.copy(), seg.stats.copy()
    learned0 = gstate[G_N]
    rows = new_rows()
    out = SegmentResult(seg.rank, base, gstate, stats, 0.0, [], None, np.zeros((0, rows.shape[1])))
    dumped = []
    lines = _Lines()
    # labels 0 read as -1 (sl's reading; with zero_label "vw" they are kept, as VW keeps them)
    classification = c.loss_id in CLASSIFICATION and c.zero_label == "negative"
    left = seg.budget
    pieces: dict[int, Piece] = {}
    stop: Position | None = None
    with ThreadPoolExecutor(seg.job.parse_workers, thread_name_prefix="sl-parse") as pool:
        stream = _parsed(seg, pool)
        try:
            for k, pos, block, batch in stream:
                sid, shard = seg.shards[k]
                piece = pieces.setdefault(k, Piece(sid, pos, pos))
                if block is None:
                    piece.end, piece.complete = pos, True
                    continue
                end = pos + block.data.shape[0] + block.dropped
                ok = batch.status == 0
                if left is not None and int(ok.sum()) >= left:
                    r = int(np.flatnonzero(ok)[left - 1]) + 1 if left > 0 else 0
                    if r < batch.n:
                        line = int(batch.line[r])
                        skipped = sum(n for at, n, _ in block.long_lines if at < line)
                        stop = Position(k, pos + int(batch.line_start[r]) + skipped, line)
                        end = stop.offset
                        batch = _head(batch, r)
                        ok = ok[:r]
                piece.end = end
                piece.lines += batch.n
                piece.examples += int(ok.sum())
                if left is not None:
                    left -= int(ok.sum())
                _check(batch, shard, sid, seg, classification, out, lines)
                preds = run_kernel(spec.train_batch, table, gstate, params, c.loss_id, batch,
                                   stats, rows)  # fmt: skip
                n = int(stats[S_NROWS])
                if n:
                    dumped.append(rows[:n].copy())
                    stats[S_NROWS] = 0.0
                bad = ok & ~np.isfinite(preds)
                if bad.any():
                    i = int(np.flatnonzero(bad)[0])
                    raise Diverged(f"{lines.where(sid, shard, int(batch.line[i]))}: prediction is "
                                   "not finite; the weights diverged: lower --learning-rate, or "
                                   "scale the feature values")  # fmt: skip
                if delay:
                    time.sleep(delay)
                if stop is not None:
                    break
                if left is not None and left <= 0:
                    stop = _after(seg, k, end, block)
                    break
        finally:
            stream.close()
    if stop is None or stop.shard >= len(seg.shards):
        stop = None
    if seg.settle:
        spec.rebase(table, gstate, params)
    out.rows = Rows.of(table, spec)
    out.learned = float(gstate[G_N] - learned0)
    out.pieces = sorted(pieces.values(), key=lambda p: (p.shard, p.begin))
    out.next = stop
    if dumped:
        out.table_rows = np.concatenate(dumped)
    out.worker = _worker_address()
    out.seconds = time.perf_counter() - started
    return out


def _after(seg: Segment, k: int, end: int, block) -> Position:
    """The position just after ``block`` (the budget ran out at its last row)."""
    from streamlearn.io._scan import count_newlines

    return Position(k, end, block.first_line + count_newlines(block.data))


def _check(batch: Batch, shard: Shard, sid: int, seg: Segment, classification: bool,
           out: SegmentResult, lines: _Lines) -> None:  # fmt: skip
    """Malformed lines (with the file's line numbers), label conventions: as ``sl train``."""
    strict, config = seg.job.strict, seg.job.config
    bad = np.flatnonzero(batch.status != 0) if seg.first_pass else ()
    for i in bad:
        reason = REASONS.get(int(batch.status[i]), f"error {int(batch.status[i])}")
        out.skipped += 1
        out.reasons[reason] += 1
        if len(out.first_errors) < SHOWN_ERRORS or strict:
            msg = f"{lines.where(sid, shard, int(batch.line[i]))}: {reason}: {excerpt(batch, i)}"
            if strict:
                raise MalformedData(msg + " (--strict: no model written)")
            out.first_errors.append(msg)
    if batch.n_touching_tags:
        _warn(out, "a label touching '|' (e.g. '1|f a') is read as a tag, as VW does: that "
                   "example has no label; put a space before '|' to make it a label")  # fmt: skip
    if classification:
        labels = batch.labels
        zero = labels == 0.0
        if zero.any():
            labels[zero] = -1.0
            _warn(out, f"{config.loss} loss needs labels -1/+1: label 0 read as -1")
        odd = (labels != 1.0) & (labels != -1.0) & ~np.isnan(labels)
        if odd.any():
            v = labels[np.flatnonzero(odd)[0]]
            _warn(out, f"label {v:g} is not -1 or +1 as {config.loss} loss expects")


def _warn(out: SegmentResult, text: str) -> None:
    if text not in out.warnings:
        out.warnings.append(text)


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return "local"
