"""Sources to blocks of whole lines: files, stdin, pipes, FIFOs, gzip/bzip2/xz.

Sources are opened by :mod:`streamlearn.system.sources` (kinds, compression, stdin).

:func:`iter_blocks` reads each source in order in large chunks, cuts every
chunk after its last newline and carries the rest over to the next chunk, so
a :class:`~streamlearn.io.batch.Block` always holds whole lines.  A line
longer than the block size makes the buffer grow (geometrically) until the
line fits.  Each block knows its source name and the number of its first line,
which is what error messages need.  At most one block and one partial buffer
are alive inside the reader, so memory is bounded by a few blocks whatever the
input size.

A pipe, FIFO or terminal is read as it arrives: a complete line does not wait
for a block to fill for longer than :data:`LIVE_DELAY`.
"""

from __future__ import annotations

import sys
import time
import zlib
from collections.abc import Iterator, Sequence

import numpy as np

from streamlearn.io._scan import count_newlines
from streamlearn.io.batch import Block
from streamlearn.system.jit import jit
from streamlearn.system.sources import (
    STDIN,
    Source,
    SourceError,
    check_sources,
    describe,
    open_source,
)

__all__ = ["STDIN", "InputError", "iter_blocks", "iter_lines_blocks", "open_source"]

BLOCK_SIZE = 2 << 20
"""Bytes read per block.  Measured (issue 15, 1 GB, 2 cores): blocks of 1–2 MiB parse
at ~348 MB/s per core against 234 MB/s for 8 MiB (a block and its batch stay in the
caches); end to end at ``-b 22``, 2 MiB took 3.15–3.46 s against 3.36–4.05 s for 1 MiB
(a thousand blocks' Python glue per GB, under the GIL) and 3.12–3.39 s for 4 MiB, with
a peak RSS of 212 MB against 190 MB (1 MiB), 260 MB (4 MiB) and 330 MB (8 MiB)."""

LIVE_DELAY = 0.05
"""Seconds a complete line read from a pipe, FIFO or terminal may wait for more
input before it is handed on in a block of its own (``tail -f log | sl predict``)."""


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


def iter_lines_blocks(source: Source, block_size: int) -> Iterator[Block]:
    """Blocks of whole lines from one open source (see :func:`iter_blocks`).

    A block is handed on when it is full, at the end of the input, or -- for
    a live source (pipe, FIFO, terminal) -- when a complete line has waited
    :data:`LIVE_DELAY` seconds without the block filling; such a block is
    marked ``live`` so that the parser stage does not hold it back either.
    """
    name = source.name
    carry = np.empty(0, dtype=np.uint8)
    first_line = 1
    eof = False
    buffers = _Buffers(block_size + (block_size >> 4))  # room for a carried partial line
    while not eof:
        room = max(block_size, carry.shape[0])  # grow geometrically for a long line
        buf = buffers.take(carry.shape[0] + room)
        filled = carry.shape[0]
        buf[:filled] = carry
        view = memoryview(buf)
        due = None  # when the first complete line read into this block must go
        paused = False
        try:
            while filled < buf.shape[0]:
                if due is not None and not source.more_within(due - time.monotonic()):
                    paused = True
                    break
                got = source.readinto(view[filled:])
                if not got:
                    eof = True
                    break
                if source.live and due is None and _last_newline(buf, filled, filled + got) >= 0:
                    due = time.monotonic() + LIVE_DELAY
                filled += got
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(f"cannot read {name}: {describe(e)}") from None
        if eof:
            cut = filled
        else:
            # carry holds no newline, so only the new bytes need searching
            nl = _last_newline(buf, carry.shape[0], filled)
            if nl < 0:
                carry = buf[:filled]
                continue
            cut = nl + 1
        carry = buf[cut:filled].copy()
        if cut > 0:
            data = buf[:cut]
            newlines = count_newlines(data)
            yield Block(data, name, first_line, live=paused, newlines=newlines)
            first_line += newlines


def iter_blocks(sources: Sequence[str], block_size: int = BLOCK_SIZE) -> Iterator[Block]:
    """Blocks of whole lines from ``sources`` in order.

    Parameters
    ----------
    sources : sequence of str
        Paths, or ``'-'`` for stdin; an empty sequence means stdin.  Gzip input
        is recognised by its magic bytes, whatever the name.
    block_size : int
        Bytes read per block (a block holds up to this much plus a carried
        partial line; a longer line makes it grow).

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
    sources = list(sources) or ["-"]
    check_sources(sources)
    for path in sources:
        source = open_source(path)
        try:
            yield from iter_lines_blocks(source, block_size)
        finally:
            source.close()  # never closes stdin itself
