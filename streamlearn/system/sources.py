"""What an input is before a byte of it is parsed: its kind, its compression, stdin.

No numba here: the CLI uses this module to decide, before numba is imported,
whether an input is tiny (see ``streamlearn.cli.options._tiny_mode``), and the reader uses it to
open every source.  The rules that keep shell inputs whole:

* Only a regular file may be opened, read and closed to look at it: a pipe,
  a FIFO, ``/dev/stdin`` or a process substitution (``<(zcat x.gz)``) is read
  once, by the reader, and every byte read to sniff it is given back.
* Standard input is read through its file descriptor, unbuffered, so a line
  that has arrived can be handed on at once (``tail -f log | sl predict``);
  bytes peeked before the reader starts (:func:`peek_stdin`) are replayed first.
* Compression is recognised by magic bytes, never by name: gzip, bzip2 and xz
  are read with the standard library; zstd, lz4, compress (.Z) and zip are
  refused with a message saying how to decompress them.  Corrupt or truncated
  compressed data is an error (exit 3), never a silently shorter input: xz is
  read as ``xz -dc`` reads it (:class:`_Xz`), so bytes after the last xz stream
  that are not another xz stream fail the run.
"""

from __future__ import annotations

import io
import os
import re
import select
import stat
import sys
from typing import BinaryIO

STDIN = "<stdin>"
STDIN_PATHS = ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")

READABLE = {
    b"\x1f\x8b": "gzip",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bzip2",  # + a digit and a block or end-of-stream magic: see compression()
}
UNSUPPORTED = {
    b"\x28\xb5\x2f\xfd": ("zstd", "zstd -dc"),
    b"\x04\x22\x4d\x18": ("lz4", "lz4 -dc"),
    b"\x1f\x9d": ("compress (.Z)", "uncompress -c"),
    b"PK\x03\x04": ("a zip archive", "unzip -p"),
}
_BZIP2_NEXT = (b"1AY&SY", b"\x17\x72\x45\x38\x50\x90")  # first block, or an empty stream
NOT_DATA = {
    b"SLMODEL\0": "an sl model (a model is given with -i)",
    b"SLCACHE": "an sl cache of parsed examples (sl reads its cache itself: --cache)",
}
"""Files sl writes that are not examples: given as data, they are refused by name."""
SNIFF_BYTES = 24
"""Bytes that decide the compression (BZh, a level digit and a 6-byte block magic), or
that a source is not data (an sl or VW model or cache: a length, then VW's version)."""

STDIN_CLOSED = False
"""Set by the CLI when file descriptor 0 was closed at start-up (``sl train <&-``)."""

_stdin_head = b""


class SourceError(Exception):
    """A source cannot be opened or read; the message names it."""


class SameStream(SourceError):
    """A stream (stdin, a pipe, a FIFO) is named twice: a usage error."""


def describe(e: BaseException) -> str:
    """The OS's reason for an error, without Python's decoration."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror[0].lower() + e.strerror[1:]
    return str(e) or type(e).__name__


def is_stdin(source: str) -> bool:
    return source == "-"


def is_regular(source: str) -> bool:
    """True for a path to a regular file (a symlink to one counts); False for stdin."""
    if is_stdin(source):
        return False
    try:
        return stat.S_ISREG(os.stat(source).st_mode)
    except OSError:
        return False


def stdin_fd() -> int | None:
    """Standard input's file descriptor, or None when it has none (tests, CliRunner)."""
    try:
        return sys.stdin.fileno() if sys.stdin is not None else None
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def stdin_is_regular() -> bool:
    fd = stdin_fd()
    if fd is None:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def same_stream(source: str) -> tuple[int, int] | None:
    """(device, inode) of what ``source`` reads: its file, or stdin's for ``-``."""
    try:
        if is_stdin(source):
            fd = stdin_fd()
            if fd is None:
                return None
            st = os.fstat(fd)
        else:
            st = os.stat(source)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def compression(head: bytes) -> str | None:
    """The compression that ``head`` (the first bytes of a source) starts, or None.

    Raises :class:`SourceError` for a known format this program cannot read.

    >>> compression(b"\\x1f\\x8b\\x08\\x00"), compression(b"1 |f a\\n")
    ('gzip', None)
    """
    for magic, (name, tool) in UNSUPPORTED.items():
        if head.startswith(magic):
            raise SourceError(
                f"unsupported compression: {name} (decompress it first, e.g. "
                f"`{tool} FILE | sl ...`; gzip, bzip2 and xz are read directly)"
            )
    what = not_data(head)
    if what is not None:
        raise SourceError(f"not examples: it is {what}")
    for magic, name in READABLE.items():
        if head.startswith(magic):
            if name == "bzip2" and not (
                head[3:4].isdigit() and head[3:4] != b"0" and head[4:10] in _BZIP2_NEXT
            ):
                continue
            return name
    return None


def not_data(head: bytes) -> str | None:
    """What a source whose first bytes are ``head`` is, when it is a model or a cache
    rather than examples (sl's, or Vowpal Wabbit's), else None.

    VW's files start with the length of VW's version and the version: a uint32
    length in a model, a uint64 in a cache, whose version is followed by ``c``.

    >>> not_data(b"\x07\x00\x00\x00" + b"9.11.9\x00m"), not_data(b"1 |f a")
    ('a Vowpal Wabbit model (VW 9.11.9; a model is given with -i)', None)
    """
    for magic, what in NOT_DATA.items():
        if head.startswith(magic):
            return what
    for width, kind in ((8, "cache"), (4, "model")):
        n = int.from_bytes(head[:width], "little")
        version = head[width : width + n]
        if 4 <= n <= 16 and len(version) == n and version.endswith(b"\0") \
                and re.fullmatch(rb"\d+\.\d+\.\d+\0", version):  # fmt: skip
            shown = version[:-1].decode()
            if kind == "cache":
                return (f"a Vowpal Wabbit cache (VW {shown}): sl reads VW's text; give the "
                        "data the cache was made from")  # fmt: skip
            return f"a Vowpal Wabbit model (VW {shown}; a model is given with -i)"
    return None


def _maybe_vw(head: bytes) -> bool:
    """True while ``head`` may still be the start of a VW model or cache (see :func:`not_data`):
    a small length whose other bytes are zero."""
    return 0 < len(head) and 4 <= head[0] <= 16 and not any(head[1:4])


def decided(head: bytes) -> bool:
    """True when ``head`` is long enough to tell its compression (or its absence), or
    that it is not data."""
    if len(head) >= SNIFF_BYTES:
        return True
    for magic in (*READABLE, *UNSUPPORTED, *NOT_DATA):
        if magic.startswith(head) or head.startswith(magic):
            return False
    return not _maybe_vw(head)


def wait_readable(fd: int, timeout: float) -> bool:
    """True when ``fd`` has data (or end of file) to read within ``timeout`` seconds."""
    try:
        ready, _, _ = select.select([fd], [], [], max(timeout, 0.0))
    except (OSError, ValueError):
        return True  # not selectable: a read will tell
    return bool(ready)


def peek_stdin(limit: int, idle: float = 0.05) -> tuple[bytes, bool]:
    """Read up to ``limit + 1`` bytes of stdin ahead; they are replayed by :func:`open_stdin`.

    Returns (bytes read, whether stdin ended within them).  Stops early,
    without waiting, when no byte arrives for ``idle`` seconds: a live stream
    is never held up by the peek.
    """
    global _stdin_head
    fd = stdin_fd()
    if fd is None or STDIN_CLOSED:
        return b"", False
    head = _stdin_head
    eof = False
    while len(head) <= limit:
        if not wait_readable(fd, idle):
            break
        try:
            chunk = os.read(fd, limit + 1 - len(head))
        except OSError:
            break  # the reader will report it
        if not chunk:
            eof = True
            break
        head += chunk
    _stdin_head = head
    return head, eof


class _Replayed(io.RawIOBase):
    """A raw stream that first gives back ``head`` (bytes already read), then ``rest``."""

    def __init__(self, head: bytes, rest: BinaryIO, fd: int | None, owns: bool) -> None:
        super().__init__()
        self._head = head
        self._rest = rest
        self._fd = fd
        self._owns = owns

    def close(self) -> None:
        if not self.closed and self._owns:
            self._rest.close()
        super().close()

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        if self._fd is None:
            raise io.UnsupportedOperation("no file descriptor")
        return self._fd

    def give_back(self, data: bytes) -> None:
        """Replay ``data`` before anything else (bytes read to sniff the source)."""
        self._head = data + self._head

    def buffered(self) -> bool:
        """True while replayed bytes are left (the descriptor may be idle meanwhile)."""
        return bool(self._head)

    def readinto(self, b) -> int:  # noqa: ANN001 - buffer protocol
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        if hasattr(self._rest, "readinto1"):
            return self._rest.readinto1(b)
        return self._rest.readinto(b)


XZ_MAGIC = b"\xfd7zXZ\x00"
_XZ_CHUNK = 1 << 16


class _Xz(io.RawIOBase):
    """Decompressed bytes of xz data, read as ``xz -dc`` reads them.

    Concatenated streams and the null-byte stream padding between and after
    them (a multiple of four bytes) are read; anything else after a stream
    ends is an error, where :class:`lzma.LZMAFile` would stop there silently
    (a ``.xz`` with plain text appended would train on half the input and
    exit 0).  Corrupt data raises :class:`OSError`, a truncated stream
    :class:`EOFError`, as the gzip reader does.
    """

    def __init__(self, raw: BinaryIO) -> None:
        import lzma

        super().__init__()
        self._lzma = lzma
        self._raw = raw
        self._dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        self._dec_fresh = True
        self._buf = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def _more(self) -> bytes:
        return self._raw.read(_XZ_CHUNK) or b""

    def _next_stream(self) -> bool:
        """After a stream: skip its padding; True when another stream follows."""
        pad = 0
        while True:
            stripped = self._buf.lstrip(b"\0")
            pad += len(self._buf) - len(stripped)
            self._buf = stripped
            while self._buf and len(self._buf) < len(XZ_MAGIC):
                more = self._more()
                if not more:
                    break
                self._buf += more
            if self._buf:
                break
            more = self._more()
            if not more:
                if pad % 4:
                    raise OSError("corrupt xz data: stream padding is not a multiple of 4 bytes")
                return False
            self._buf = more
        if not self._buf.startswith(XZ_MAGIC[: len(self._buf)]) or len(self._buf) < 6:
            raise OSError("data after the end of the xz stream is not xz (xz -dc fails too)")
        if pad % 4:
            raise OSError("corrupt xz data: stream padding is not a multiple of 4 bytes")
        self._dec = self._lzma.LZMADecompressor(format=self._lzma.FORMAT_XZ)
        return True

    def readinto(self, b) -> int:  # noqa: ANN001 - buffer protocol
        n = len(b)
        while not self._done and n:
            if self._dec.eof:
                self._buf = self._dec.unused_data + self._buf
                if not self._next_stream():
                    self._done = True
                    break
            if self._dec.needs_input:
                if not self._buf:
                    self._buf = self._more()
                    if not self._buf:
                        raise EOFError(
                            "compressed file ended before the end-of-stream marker was reached"
                        )
                data, self._buf = self._buf, b""
            else:
                data = b""
            try:
                out = self._dec.decompress(data, max_length=n)
            except self._lzma.LZMAError as e:
                raise OSError(f"corrupt xz data ({str(e).lower() or 'lzma error'})") from None
            if out:
                b[: len(out)] = out
                return len(out)
        return 0


class Source:
    """One opened input: a stream of (decompressed) bytes and what the reader needs to know.

    Attributes
    ----------
    name : str
        For messages: the path, or ``<stdin>``.
    live : bool
        Not a regular file (a pipe, FIFO, terminal, socket): lines are handed
        on when input pauses rather than when a block fills.
    fd : int or None
        The descriptor to poll for more input (None when it cannot be polled).
    compression : str or None
    """

    def __init__(self, raw: _Replayed, name: str, live: bool, kind: str | None) -> None:
        self.raw = raw
        self.name = name
        self.live = live
        self.compression = kind
        try:
            self.fd: int | None = raw.fileno()
        except (OSError, io.UnsupportedOperation):
            self.fd = None
        self.stream: BinaryIO = raw  # type: ignore[assignment]
        if kind == "gzip":
            import gzip

            self.stream = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        elif kind == "bzip2":
            import bz2

            self.stream = bz2.BZ2File(raw, mode="rb")  # type: ignore[assignment]
        elif kind == "xz":
            self.stream = io.BufferedReader(_Xz(raw), _XZ_CHUNK)  # type: ignore[assignment]

    def readinto(self, view: memoryview) -> int:
        """Read some bytes into ``view``: at most one read of the underlying source."""
        if self.compression is None:
            return self.raw.readinto(view)
        data = self.stream.read1(len(view))
        view[: len(data)] = data
        return len(data)

    def more_within(self, seconds: float) -> bool:
        """True when more input can be read without waiting longer than ``seconds``."""
        if self.fd is None or self.raw.buffered():
            return True
        return wait_readable(self.fd, seconds)

    def close(self) -> None:
        try:
            if self.stream is not self.raw:
                self.stream.close()
        finally:
            self.raw.close()


def _read_head(raw: _Replayed, name: str) -> bytes:
    """The first bytes of a source, read until they decide the compression or input ends."""
    head = b""
    buf = bytearray(SNIFF_BYTES)
    while not decided(head):
        try:
            got = raw.readinto(memoryview(buf)[: SNIFF_BYTES - len(head)])
        except OSError as e:
            raise SourceError(f"cannot read {name}: {describe(e)}") from None
        if not got:
            break
        head += bytes(buf[:got])
    return head


def open_source(source: str) -> Source:
    """Open ``source`` (a path, or ``'-'`` for stdin) for reading, decompressing if needed.

    Every byte read to recognise the compression is given back to the reader.
    Closing the :class:`Source` closes the file, never stdin.
    """
    if is_stdin(source):
        name = STDIN
        if STDIN_CLOSED or sys.stdin is None:
            raise SourceError("cannot read <stdin>: standard input is closed")
        fd = stdin_fd()
        if fd is not None:
            rest: BinaryIO = io.FileIO(fd, "rb", closefd=False)  # type: ignore[assignment]
            live = not stdin_is_regular()
        else:  # a stdin without a descriptor (tests): read what it gives
            rest = sys.stdin.buffer
            live = False
        global _stdin_head
        raw = _Replayed(_stdin_head, rest, fd, owns=False)
        _stdin_head = b""
    else:
        name = source
        try:
            if stat.S_ISDIR(os.stat(source).st_mode):
                raise SourceError(f"cannot read {source}: is a directory")
            f = io.FileIO(source, "rb")
        except OSError as e:
            raise SourceError(f"cannot read {source}: {describe(e)}") from None
        live = not stat.S_ISREG(os.fstat(f.fileno()).st_mode)
        raw = _Replayed(b"", f, f.fileno(), owns=True)
    try:
        head = _read_head(raw, name)
        kind = compression(head)
    except SourceError as e:
        raw.close()
        if str(e).startswith(f"cannot read {name}"):
            raise
        raise SourceError(f"{name}: {e}") from None
    raw.give_back(head)
    return Source(raw, name, live, kind)


def check_sources(sources: list[str]) -> None:
    """Fail before any work when an input cannot be read, or stdin is named twice.

    Regular files are opened and closed; pipes, FIFOs and devices are only
    checked with ``stat``/``access``, since opening one would consume or block
    on its stream.  A stream (stdin, a pipe, a FIFO) named twice would give
    its lines to the first mention only, so it is refused.
    """
    seen: dict[tuple[int, int], str] = {}
    for s in sources:
        if is_stdin(s):
            if STDIN_CLOSED or sys.stdin is None:
                raise SourceError("cannot read <stdin>: standard input is closed")
        else:
            try:
                st = os.stat(s)
            except OSError as e:
                raise SourceError(f"cannot read {s}: {describe(e)}") from None
            if stat.S_ISDIR(st.st_mode):
                raise SourceError(f"cannot read {s}: is a directory")
            if stat.S_ISREG(st.st_mode):
                try:
                    with open(s, "rb") as f:
                        head = f.read(SNIFF_BYTES)
                except OSError as e:
                    raise SourceError(f"cannot read {s}: {describe(e)}") from None
                try:
                    compression(head)
                except SourceError as e:
                    raise SourceError(f"{s}: {e}") from None
                continue
            if not os.access(s, os.R_OK):
                raise SourceError(f"cannot read {s}: permission denied")
        if is_stdin(s) and "-" in seen.values():
            raise SameStream("standard input (-) is named twice: it can be read only once")
        key = same_stream(s)
        if key is not None:
            shown = "-" if is_stdin(s) else s
            if key in seen:
                raise SameStream(
                    f"{shown} and {seen[key]} are the same stream: it can be read only once"
                )
            seen[key] = shown
        elif is_stdin(s):
            seen[("stdin", 0)] = "-"
