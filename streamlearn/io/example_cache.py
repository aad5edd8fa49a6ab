"""sl's cache of multiline (and ``--cb K``) input: the input's bytes, gzipped.

VW's ``-c``/``--cache_file`` under a multiline reduction: the first pass copies the bytes
it reads into ``PATH.sl-tmp`` (:func:`tee`), :meth:`Cache.seal` renames it to ``PATH``
once they are all read, and later passes (and later runs) read the cache instead of the
data.  Nothing parsed is kept: multiline examples are parsed again from the cache's bytes,
so memory does not grow with the examples.  A run that fails first leaves no cache.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile

CACHE_NAME = b"sl-multiline-cache"
"""The name in the gzip header of sl's cache of multiline (and ``--cb K``) input."""


def tee(blocks, out):  # noqa: ANN001, ANN201 - io.batch.Block iterator, a binary file
    """``blocks``, their bytes also written to ``out`` (each source's last example ended)."""
    prev = None
    for b in blocks:
        if prev is not None and b.source != prev:
            out.write(b"\n\n")
        out.write(b.data.tobytes())
        prev = b.source
        yield b
    if prev is not None:
        out.write(b"\n\n")


def is_cache(path: str) -> bool:
    """Whether ``path`` is sl's cache of multiline input (a gzip file named
    :data:`CACHE_NAME` in its header): VW's ``-c``/``--cache_file`` reads it instead of
    the data, as VW reads its own cache."""
    try:
        with open(path, "rb") as f:
            head = f.read(10 + len(CACHE_NAME) + 1)
    except OSError:
        return False
    return head[:2] == b"\x1f\x8b" and bool(head[3] & 8) and head[10:-1] == CACHE_NAME


class Cache:
    """The cache a run writes (``-c``): the input's bytes gzipped into ``PATH.sl-tmp``,
    renamed to ``PATH`` once the first pass has read all of them (:meth:`seal`); later
    passes read it back.  A run that fails first leaves no cache (the temporary file is
    removed: :meth:`drop`)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.raw = None
        self.tee = None
        self.sealed: list[str] | None = None
        self.held: int | None = None
        if path is not None:
            # a name of this run's own: two runs naming one cache never write one file
            fd, self.tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".",
                                            prefix=os.path.basename(path) + ".",
                                            suffix=".sl-tmp")  # fmt: skip
            self.raw = os.fdopen(fd, "wb")  # noqa: SIM115 - closed by seal/drop
            # level 1: level 9 (gzip's default) took 12 s of a 65 MB input's 14 s run
            self.tee = gzip.GzipFile(filename=CACHE_NAME.decode(), mode="wb", fileobj=self.raw,
                                     compresslevel=1, mtime=0)  # fmt: skip

    def seal(self) -> list[str] | None:
        """Close and commit the cache; the sources later passes read (None: no cache)."""
        if self.tee is not None:
            self.tee.close()
            self.raw.close()
            self.tee = None
            # later passes read this run's file through a descriptor held from before the
            # rename: another run replacing PATH meanwhile cannot feed them its bytes
            # (as run/passes.py holds single-line caches)
            self.held = os.open(self.tmp, os.O_RDONLY)
            os.replace(self.tmp, self.path)
            self.sealed = [f"/dev/fd/{self.held}"]
        return self.sealed

    def drop(self) -> None:
        """Close and remove the cache being written (a run that failed)."""
        if self.tee is not None:
            try:
                self.tee.close()
                self.raw.close()
            finally:
                self.tee = None
                with contextlib.suppress(OSError):
                    os.unlink(self.tmp)

    def release(self) -> None:
        """Close the descriptor later passes read the sealed cache through."""
        if self.held is not None:
            os.close(self.held)
            self.held = None
