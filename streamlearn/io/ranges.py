"""Shards of the input: whole files, and plain files cut into byte ranges at newlines.

The distributed driver (:mod:`streamlearn.distributed.driver`) splits its inputs into
:class:`Shard` objects, and each worker reads its shards with
:func:`open_shard`, which gives a source for
:func:`~streamlearn.io.reader.iter_lines_blocks`, so shards are parsed by the
same reader and parser as whole files.

Rules of a byte range ``[start, end)`` of a plain file:

* a line belongs to the shard in which it *starts*: a shard starting mid-line
  skips to the byte after the next newline, and a shard reads on past
  ``end`` to the end of the line that starts before ``end``; so cuts anywhere
  give every line to exactly one shard, and nothing has to be scanned to cut;
* line numbers count from the shard's first line (``Block.first_line`` is 1
  there); :func:`lines_before` gives how many lines come before it, counted
  only when a message needs a file line number (a malformed line), since
  counting reads the whole prefix of the file.

Compressed files (gzip, bzip2, xz, recognised by magic bytes) cannot be cut:
they are one shard each.  A worker resuming a shard mid-way (a sync inside a
pass) seeks a plain file, and skips the decompressed bytes of a compressed
one.

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "a.vw")
>>> _ = open(p, "wb").write(b"1 |f a\\n-1 |f b\\n1 |f c\\n")
>>> [s.start for s in cut(p, 3)], [s.end for s in cut(p, 3)]
([0, 7, 14], [7, 14, 22])
>>> b"".join(read_all(s) for s in cut(p, 5)) == open(p, "rb").read()
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from streamlearn.system.sources import SNIFF_BYTES, compression, open_source

_SCAN = 1 << 20


@dataclass(frozen=True)
class Shard:
    """A piece of the input a worker reads: a whole file, or a byte range of a plain one.

    Attributes
    ----------
    path : str
        The file, by the path every worker opens.
    start, end : int
        Byte range ``[start, end)`` of a plain file; ``(0, size)`` for a whole
        file (``end`` is only a size hint for a compressed one).
    whole : bool
        The shard is the whole file (its line numbers are the file's).
    """

    path: str
    start: int
    end: int
    whole: bool = True

    @property
    def size(self) -> int:
        return self.end - self.start

    def describe(self) -> str:
        return self.path if self.whole else f"{self.path}[{self.start}:{self.end}]"


def is_compressed(path: str) -> bool:
    """True when ``path`` starts with the magic bytes of a compressed stream."""
    with open(path, "rb") as f:
        return compression(f.read(SNIFF_BYTES)) is not None


def cut(path: str, pieces: int) -> list[Shard]:
    """``path`` as ``pieces`` byte ranges of (nearly) equal size; one shard when compressed.

    The cuts are plain byte offsets: :func:`open_shard` moves them to line
    starts when reading, so nothing is read here but the magic bytes.
    """
    size = os.path.getsize(path)
    if pieces <= 1 or size == 0 or is_compressed(path):
        return [Shard(path, 0, size, True)]
    pieces = min(pieces, size)
    bounds = [size * k // pieces for k in range(pieces + 1)]
    return [Shard(path, bounds[k], bounds[k + 1], False) for k in range(pieces)]


def cut_examples(path: str, pieces: int) -> list[Shard]:
    """``path`` as up to ``pieces`` byte ranges that each hold whole multiline examples.

    As :func:`cut`, but each cut is moved on to the end of the first blank line at or
    after it (a line of only spaces, tabs or a carriage return: where VW ends an example),
    so no example is split; a cut that finds none before the end of the file is dropped.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "a.vw")
    >>> data = b"shared |s a\\n0:1:0.5 |x b\\n|x c\\n\\n|x d\\n0:0:1 |x e\\n\\n"
    >>> _ = open(p, "wb").write(data)
    >>> [(s.start, s.end) for s in cut_examples(p, 4)]
    [(0, 31), (31, 48)]
    """
    import re

    shards = cut(path, pieces)
    if len(shards) == 1:
        return shards
    size = os.path.getsize(path)
    blank = re.compile(rb"\n[ \t\r]*\n")
    bounds = [0]
    with open(path, "rb") as f:
        for shard in shards[1:]:
            at = max(shard.start, bounds[-1])
            f.seek(max(0, at - 1))
            pos = max(0, at - 1)
            tail = b""
            end = size
            while True:
                chunk = f.read(_SCAN)
                if not chunk:
                    break
                buf = tail + chunk
                m = blank.search(buf)
                if m is not None:
                    end = pos - len(tail) + m.end()
                    break
                tail = buf[-256:]  # (a blank line of spaces longer than this: no cut)
                pos += len(chunk)
            if end >= size:
                break
            if end > bounds[-1]:
                bounds.append(end)
    bounds.append(size)
    return [Shard(path, a, b, False) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def owned_start(f, start: int) -> int:
    """The offset of the first line that starts at or after ``start`` in open file ``f``."""
    if start <= 0:
        return 0
    f.seek(start - 1)
    pos = start - 1
    while True:
        chunk = f.read(_SCAN)
        if not chunk:
            return pos
        i = chunk.find(b"\n")
        if i >= 0:
            return pos + i + 1
        pos += len(chunk)


def lines_before(path: str, offset: int) -> int:
    """Number of newlines in the first ``offset`` bytes of ``path`` (a plain file)."""
    from streamlearn.io._scan import count_newlines

    n = 0
    with open(path, "rb") as f:
        left = offset
        while left > 0:
            chunk = f.read(min(left, 8 * _SCAN))
            if not chunk:
                break
            n += count_newlines(np.frombuffer(chunk, dtype=np.uint8))
            left -= len(chunk)
    return n


class RangeSource:
    """The lines that start in ``[begin, end)`` of a plain file, as a reader source.

    ``begin`` must be a line start (see :func:`owned_start`).  Reading stops
    at ``end`` when a line ends there, else at the end of the line that
    straddles it (or at the end of the file).  :attr:`position` is the offset
    of the next byte to read.
    """

    live = False
    compression = None

    def __init__(self, path: str, begin: int, end: int) -> None:
        self.name = path
        self._f = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
        self._f.seek(begin)
        self.position = begin
        self._end = end
        self._done = begin >= end
        self._last = 10

    def readinto(self, view: memoryview) -> int:
        if self._done or len(view) == 0:
            return 0
        if self.position < self._end:
            want = min(len(view), self._end - self.position)
            got = self._f.readinto(view[:want])
        else:  # past end: only the rest of the line that started before it
            if self._last == 10:
                self._done = True
                return 0
            got = self._f.readinto(view)
            if got:
                nl = bytes(view[:got]).find(b"\n")
                if nl >= 0:
                    got = nl + 1
                    self._f.seek(self.position + got)
                    self._done = True
        if not got:
            self._done = True
            return 0
        self.position += got
        self._last = view[got - 1]
        return got

    def more_within(self, seconds: float) -> bool:
        return True

    def close(self) -> None:
        self._f.close()


class _Skipped:
    """A whole (possibly compressed) source whose first ``skip`` bytes were read and dropped."""

    live = False

    def __init__(self, path: str, skip: int) -> None:
        self._src = open_source(path)
        self.name = self._src.name
        self.compression = self._src.compression
        buf = bytearray(min(skip, 8 * _SCAN) or 1)
        while skip > 0:
            got = self._src.readinto(memoryview(buf)[: min(skip, len(buf))])
            if not got:
                break
            skip -= got

    def readinto(self, view: memoryview) -> int:
        return self._src.readinto(view)

    def more_within(self, seconds: float) -> bool:
        return True

    def close(self) -> None:
        self._src.close()


def open_shard(shard: Shard, offset: int | None = None):
    """A source of ``shard``'s lines, from its first line or from ``offset``.

    ``offset`` (a line start returned by an earlier read of the same shard):
    for a plain file, the file offset; for a whole compressed file, the
    offset in the decompressed stream.  Returns ``(source, begin)`` where
    ``begin`` is the offset of the first byte the source gives.
    """
    if shard.whole and (offset or 0) == 0:
        return open_source(shard.path), 0
    if shard.whole and is_compressed(shard.path):
        return _Skipped(shard.path, offset), offset
    if offset is None:
        with open(shard.path, "rb") as f:
            offset = owned_start(f, shard.start)
    end = shard.end if not shard.whole else os.path.getsize(shard.path)
    return RangeSource(shard.path, offset, end), offset


def read_all(shard: Shard) -> bytes:
    """Every byte of ``shard``'s lines (tests and doctests)."""
    src, _ = open_shard(shard)
    out = bytearray()
    buf = bytearray(1 << 16)
    try:
        while got := src.readinto(memoryview(buf)):
            out += buf[:got]
    finally:
        src.close()
    return bytes(out)
