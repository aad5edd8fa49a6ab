"""Sources to blocks of whole lines: files, stdin, gzip (by magic bytes).

:func:`iter_blocks` reads each source in order in large chunks, cuts every
chunk after its last newline and carries the rest over to the next chunk, so
a :class:`~streamlearn.io.batch.Block` always holds whole lines.  A line
longer than the block size makes the buffer grow (geometrically) until the
line fits.  Each block knows its source name and the number of its first line,
which is what error messages need.  At most one block and one partial buffer
are alive inside the reader, so memory is bounded by a few blocks whatever the
input size.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from collections.abc import Iterator, Sequence
from typing import BinaryIO

import numpy as np

from streamlearn._jit import jit
from streamlearn.io._scan import count_newlines
from streamlearn.io.batch import Block

STDIN = "<stdin>"
GZIP_MAGIC = b"\x1f\x8b"


class InputError(Exception):
    """An input source cannot be opened or read; the message names the source."""


@jit
def _last_newline(buf: np.ndarray, lo: int, hi: int) -> int:
    i = hi - 1
    while i >= lo:
        if buf[i] == 10:
            return i
        i -= 1
    return -1


class _Prefixed(io.RawIOBase):
    """A raw stream that first replays ``head`` (bytes already read to sniff magic)."""

    def __init__(self, head: bytes, rest: BinaryIO, owns: bool) -> None:
        super().__init__()
        self._head = head
        self._rest = rest
        self._owns = owns

    def close(self) -> None:
        if not self.closed and self._owns:
            self._rest.close()
        super().close()

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # noqa: ANN001 - buffer protocol
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._rest.readinto(b)


class _GzipOwning(gzip.GzipFile):
    """GzipFile that also closes the stream it reads from."""

    def close(self) -> None:
        inner = self.fileobj
        try:
            super().close()
        finally:
            if inner is not None:
                inner.close()


def _read_some(f: BinaryIO, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = f.read(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def _describe(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e) or type(e).__name__


def open_source(source: str) -> tuple[BinaryIO, str]:
    """Open ``source`` (a path or ``'-'``) for binary reading, gunzipping if needed.

    Returns
    -------
    stream, name
        A readable binary stream (closing it closes the file, never stdin) and
        the name to use in messages.

    Raises
    ------
    InputError
        When the file cannot be opened (missing, a directory, no permission).
    """
    if source == "-":
        raw: BinaryIO = sys.stdin.buffer
        name = STDIN
    else:
        name = source
        if os.path.isdir(source):
            raise InputError(f"cannot read {source}: is a directory")
        try:
            raw = open(source, "rb", buffering=0)  # noqa: SIM115 - closed by the caller
        except OSError as e:
            raise InputError(f"cannot read {source}: {_describe(e)}") from None
    try:
        head = _read_some(raw, 2)
    except OSError as e:
        raise InputError(f"cannot read {name}: {_describe(e)}") from None
    stream: BinaryIO = _Prefixed(head, raw, owns=source != "-")  # type: ignore[assignment]
    if head == GZIP_MAGIC:
        stream = _GzipOwning(fileobj=stream, mode="rb")  # type: ignore[assignment]
    return stream, name


def iter_lines_blocks(stream: BinaryIO, name: str, block_size: int) -> Iterator[Block]:
    """Blocks of whole lines from one open stream (see :func:`iter_blocks`)."""
    carry = np.empty(0, dtype=np.uint8)
    first_line = 1
    eof = False
    while not eof:
        room = max(block_size, carry.shape[0])  # grow geometrically for a long line
        buf = np.empty(carry.shape[0] + room, dtype=np.uint8)
        filled = carry.shape[0]
        buf[:filled] = carry
        view = memoryview(buf)
        try:
            while filled < buf.shape[0]:
                got = stream.readinto(view[filled:])
                if not got:
                    eof = True
                    break
                filled += got
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(f"cannot read {name}: {_describe(e)}") from None
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
            yield Block(data, name, first_line)
            first_line += count_newlines(data)


def check_sources(sources: Sequence[str]) -> None:
    """Raise :class:`InputError` naming the first source that cannot be opened.

    Regular files are opened and closed; pipes and devices (``<(zcat x.gz)``, a
    FIFO) are only checked with ``stat``/``access``, since opening one would
    consume or block on its stream.
    """
    for s in sources:
        if s == "-":
            continue
        try:
            st = os.stat(s)
        except OSError as e:
            raise InputError(f"cannot read {s}: {_describe(e)}") from None
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"cannot read {s}: is a directory")
        if not stat.S_ISREG(st.st_mode):
            if not os.access(s, os.R_OK):
                raise InputError(f"cannot read {s}: permission denied")
            continue
        try:
            with open(s, "rb"):
                pass
        except OSError as e:
            raise InputError(f"cannot read {s}: {_describe(e)}") from None


def iter_blocks(sources: Sequence[str], block_size: int = 8 << 20) -> Iterator[Block]:
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
    for source in sources:
        stream, name = open_source(source)
        try:
            yield from iter_lines_blocks(stream, name, block_size)
        finally:
            stream.close()  # never closes sys.stdin itself
