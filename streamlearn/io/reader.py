"""Sources to blocks of whole lines: files, stdin, pipes, FIFOs, gzip/bzip2/xz.

Sources are opened by :mod:`streamlearn.system.sources` (kinds, compression, stdin).

:func:`iter_blocks` reads each source in order in large chunks, cuts every
chunk after its last newline and carries the rest over to the next chunk, so
a :class:`~streamlearn.io.batch.Block` always holds whole lines.  A line
longer than the block size makes the buffer grow (geometrically) until the
line fits, up to :data:`MAX_LINE_BYTES` (``--max-line-bytes``): a longer line
is skipped -- its bytes are read and dropped up to its newline, an empty line
stands in its place and the block records it (``Block.long_lines``), so that
the parser reports it as a malformed line with its number.  Each block knows
its source name and the number of its first line, which is what error
messages need.  At most one block and one partial buffer are alive inside the
reader, so memory is bounded by a few blocks plus about the line cap whatever
the input holds (``sl train /dev/zero`` reads forever in constant memory, and
stops at a signal).

A pipe, FIFO or terminal is read as it arrives: once a block holds a complete
line, it is handed on as soon as no more input is waiting (no fixed delay), so
a request/answer pipe (``tail -f log | sl predict -i m -p -``) is answered line
by line, while a fast producer, whose next bytes are already waiting, still
fills large blocks.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Iterator, Sequence

import numpy as np

from streamlearn.io._scan import count_newlines
from streamlearn.io.batch import Block
from streamlearn.io.flatbuffer import FlatText, flatbuffer_blocks
from streamlearn.system.jit import jit
from streamlearn.system.sources import (
    STDIN,
    Source,
    SourceError,
    check_sources,
    describe,
    open_source,
)

__all__ = ["MAX_LINE_BYTES", "STDIN", "InputError", "iter_blocks", "iter_lines_blocks",
           "open_source"]  # fmt: skip

BLOCK_SIZE = 2 << 20
"""Bytes read per block.  Measured (issue 15, 1 GB, 2 cores): blocks of 1–2 MiB parse
at ~348 MB/s per core against 234 MB/s for 8 MiB (a block and its batch stay in the
caches); end to end at ``-b 22``, 2 MiB took 3.15–3.46 s against 3.36–4.05 s for 1 MiB
(a thousand blocks' Python glue per GB, under the GIL) and 3.12–3.39 s for 4 MiB, with
a peak RSS of 212 MB against 190 MB (1 MiB), 260 MB (4 MiB) and 330 MB (8 MiB)."""

MAX_LINE_BYTES = 64 << 20
"""The longest line read (``--max-line-bytes``); a longer one is skipped and reported.

64 MiB is thousands of times the longest example of real data sets (rcv1,
criteo and other VW inputs: a few KiB a line; a whole book as one bag of words:
a few MiB), above the 50 MB lines that were checked to train, and it bounds what
one line can make the reader hold: about twice the cap (the buffer and the line
carried into it) instead of the line's length -- a 1 GiB line in a 156 KB xz
took 2.28 GB, /dev/zero grew without end."""
LONG_HEAD = 60
"""Bytes of a skipped long line kept for its message."""

InputError = SourceError
"""An input source cannot be opened or read; the message names the source."""


@jit
def _last_newline(buf: np.ndarray, lo: int, hi: int) -> int:
    i = hi - 1
    while i >= lo:
        if buf[i] == 10:
            return i
        i -= 1
    return -1


class _Buffers:
    """Block buffers, each reused once nothing holds a block cut from it any more.

    A fresh buffer costs a page fault per 4 KiB page (half the reader's time:
    1 GB read into fresh buffers takes 0.32 s of system time); a block's batch
    is learned a few blocks later, so a handful of buffers go round.  A buffer
    is free when only this pool refers to it (CPython's reference count: a
    block's array is a view whose base is the buffer).
    """

    def __init__(self, size: int, keep: int = 8) -> None:
        self.size = size
        self.keep = keep
        self.pool: list[np.ndarray] = []

    def take(self, n: int) -> np.ndarray:
        """An uninitialised uint8 array of ``n`` bytes."""
        if n <= self.size:
            for buf in self.pool:
                if sys.getrefcount(buf) <= 3:  # the list, the loop variable, the call
                    return buf[:n]
            if len(self.pool) < self.keep:
                buf = np.empty(self.size, dtype=np.uint8)
                self.pool.append(buf)
                return buf[:n]
        return np.empty(n, dtype=np.uint8)


def drop_long_lines(data: np.ndarray, first_line: int, limit: int) -> tuple[np.ndarray, tuple]:
    """``data`` (whole lines) with every line longer than ``limit`` bytes emptied.

    Returns the new bytes (``data`` itself when no line is too long) and the
    :data:`Block.long_lines <streamlearn.io.batch.Block>` records.  Only called
    when ``data`` is longer than ``limit``: with the default cap, on a block
    that a long carried line made larger than the cap.
    """
    nl = np.flatnonzero(data == 10)
    starts = np.concatenate(([0], nl + 1))
    ends = np.concatenate((nl, [data.shape[0]]))
    long = np.flatnonzero(ends - starts > limit)
    if not long.size:
        return data, ()
    records, keep, at = [], [], 0
    for k in long.tolist():
        lo, hi = int(starts[k]), int(ends[k])
        records.append((first_line + k, hi - lo, data[lo : min(hi, lo + LONG_HEAD)].tobytes()))
        keep.append(data[at:lo])
        at = hi  # the newline stays: line numbers do not move
    keep.append(data[at:])
    return np.concatenate(keep), tuple(records)


def _skip_line(source: Source, scratch: np.ndarray) -> tuple[np.ndarray | None, int]:
    """Read and drop the rest of a line; the bytes after its newline (None: input ended).

    Returns those bytes and how many bytes were dropped.  Reads into
    ``scratch``, so memory does not grow however long the line is; Python
    runs between reads, so a signal stops it (``sl train /dev/zero``).
    """
    view = memoryview(scratch)
    dropped = 0
    while True:
        got = source.readinto(view)
        if not got:
            return None, dropped
        hits = np.flatnonzero(scratch[:got] == 10)
        if hits.size:
            nl = int(hits[0])
            return scratch[nl + 1 : got].copy(), dropped + nl
        dropped += got


def iter_lines_blocks(
    source: Source, block_size: int, max_line: int = MAX_LINE_BYTES
) -> Iterator[Block]:
    """Blocks of whole lines from one open source (see :func:`iter_blocks`).

    A block is handed on when it is full, at the end of the input, or -- for
    a live source (pipe, FIFO, terminal) -- when it holds a complete line and
    no more input is waiting (a poll that does not wait: measured on a live
    pipe, an answer 0.2-0.4 ms after its line instead of the 50 ms a fixed
    wait cost); such a block is marked ``live`` so that the parser stage does
    not hold it back either.
    A line longer than ``max_line`` bytes is skipped (see the module's docstring).
    """
    name = source.name
    carry = np.empty(0, dtype=np.uint8)
    clean = True  # carry is one partial line (no newline in it)
    first_line = 1
    eof = False
    buffers = _Buffers(block_size + (block_size >> 4))  # room for a carried partial line
    while not eof:
        if clean and carry.shape[0] > max_line:  # a line longer than the cap: skip it
            head, seen = carry[:LONG_HEAD].tobytes(), carry.shape[0]
            carry = np.empty(0, dtype=np.uint8)
            try:
                rest, more = _skip_line(source, buffers.take(block_size))
            except (OSError, EOFError, zlib.error) as e:
                raise InputError(f"cannot read {name}: {describe(e)}") from None
            length = seen + more
            # an empty line stands for the line and its newline (at the end: the line)
            yield Block(np.full(1, 10, dtype=np.uint8), name, first_line, newlines=1,
                        long_lines=((first_line, length, head),),
                        dropped=length if rest is not None else length - 1)  # fmt: skip
            if rest is None:
                return
            first_line += 1
            carry, clean = rest, False
            continue
        # grow geometrically for a long line, but never past the cap
        room = max(block_size, min(carry.shape[0], max_line + 1 - carry.shape[0]))
        buf = buffers.take(carry.shape[0] + room)
        filled = carry.shape[0]
        buf[:filled] = carry
        view = memoryview(buf)
        whole = False  # a live source: this block holds a complete line
        paused = False
        try:
            while filled < buf.shape[0]:
                if whole and not source.more_within(0.0):
                    paused = True
                    break
                got = source.readinto(view[filled:])
                if not got:
                    eof = True
                    break
                if source.live and not whole and _last_newline(buf, filled, filled + got) >= 0:
                    whole = True
                filled += got
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(f"cannot read {name}: {describe(e)}") from None
        if eof:
            cut = filled
        else:
            # a clean carry holds no newline, so only the new bytes need searching
            nl = _last_newline(buf, carry.shape[0] if clean else 0, filled)
            if nl < 0:
                carry, clean = buf[:filled], True
                continue
            cut = nl + 1
        carry, clean = buf[cut:filled].copy(), True
        if cut > 0:
            data = buf[:cut]
            long_lines: tuple = ()
            dropped = 0
            if cut > max_line:
                data, long_lines = drop_long_lines(data, first_line, max_line)
                dropped = cut - data.shape[0]
            newlines = count_newlines(data)
            yield Block(data, name, first_line, live=paused, newlines=newlines,
                        long_lines=long_lines, dropped=dropped)  # fmt: skip
            first_line += newlines


def iter_blocks(
    sources: Sequence[str], block_size: int = BLOCK_SIZE, max_line: int = MAX_LINE_BYTES,
    flatbuffer: FlatText | None = None,
) -> Iterator[Block]:
    """Blocks of whole lines from ``sources`` in order.

    Parameters
    ----------
    sources : sequence of str
        Paths, or ``'-'`` for stdin; an empty sequence means stdin.  Gzip input
        is recognised by its magic bytes, whatever the name.
    block_size : int
        Bytes read per block (a block holds up to this much plus a carried
        partial line; a longer line makes it grow).
    max_line : int
        The longest line read, in bytes: a longer line is skipped, and its
        block records it (:data:`MAX_LINE_BYTES`).
    flatbuffer : FlatText or None
        Read the sources as VW's flatbuffer files (``--flatbuffer``): the blocks hold the
        VW text of their examples (:mod:`streamlearn.io.flatbuffer`; ``max_line`` also
        bounds each flatbuffer object).

    Yields
    ------
    Block
        Whole lines (the last line of a source may lack its ``\\n``), with the
        source name (``<stdin>`` for stdin) and the number of the first line.

    Raises
    ------
    InputError
        A source is missing or unreadable (all paths are checked before the
        first block), or a read fails (e.g. a truncated gzip stream).
    """
    if block_size < 1:
        raise ValueError(f"block_size must be positive, got {block_size}")
    if max_line < 1:
        raise ValueError(f"max_line must be positive, got {max_line}")
    sources = list(sources) or ["-"]
    check_sources(sources)
    for path in sources:
        source = open_source(path)
        try:
            if flatbuffer is not None:
                yield from flatbuffer_blocks(source, block_size, max_line, flatbuffer)
            else:
                yield from iter_lines_blocks(source, block_size, max_line)
        finally:
            source.close()  # never closes stdin itself
