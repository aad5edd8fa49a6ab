"""Parsed-batch cache: later passes read arrays instead of re-parsing text.

File: ``b"SLCACHE2"``, a uint32 header length, a JSON header (what the cache
was made from: sources with sizes and modification times, bits, constant,
format, sl version), then one record per batch: a uint64 record length, a
uint32 header length, a JSON record header (array names, dtypes, shapes,
source name, the text of the batch's first malformed lines) and the arrays.
A cache whose header does not match the current run is rebuilt, never trusted.

The cache keeps the tags but not the text of the lines.  So that a run which
replays a cache built by an earlier run can still quote a malformed line as
``file:line: reason: text``, the excerpts of the first few malformed lines of
each batch are stored with it (as many as a run ever prints); :func:`excerpt`
returns them.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from streamlearn import __version__
from streamlearn.io import excerpt as line_excerpt
from streamlearn.io.batch import Batch, Block

MAGIC = b"SLCACHE2"
_FIELDS = (
    "labels",
    "weights",
    "bases",
    "tag_start",
    "tag_end",
    "indptr",
    "indices",
    "values",
    "status",
    "line",
)


def identity(sources: list[str], bits: int, constant: bool, fmt: str) -> dict:
    """What a cache must have been built from to be reused."""
    srcs = []
    for s in sources:
        if s == "-":
            srcs.append({"path": "-"})
        else:
            st = os.stat(s)
            srcs.append(
                {"path": os.path.abspath(s), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
            )
    return {
        "sources": srcs,
        "bits": bits,
        "constant": constant,
        "format": fmt,
        "sl_version": __version__,
    }


@dataclass
class CachedBatch(Batch):
    """A batch replayed from the cache.

    ``block.data`` holds only the tags; ``excerpts`` maps a malformed row to
    the excerpt of its line made when the cache was written.
    """

    excerpts: dict[int, str] = field(default_factory=dict)


def excerpt(batch: Batch, i: int) -> str:
    """The excerpt of row ``i``'s line, for a parsed or a cached batch."""
    if isinstance(batch, CachedBatch):
        return batch.excerpts.get(i, "(line text not kept in the cache)")
    return line_excerpt(batch, i)


def _tag_bytes(batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tags of a batch packed back to back: (bytes, starts, ends)."""
    starts, ends = batch.tag_start, batch.tag_end
    lens = (ends - starts).astype(np.int64)
    new_ends = np.cumsum(lens)
    new_starts = new_ends - lens
    total = int(new_ends[-1]) if lens.size else 0
    if total == 0:
        return np.zeros(0, dtype=np.uint8), new_starts, new_ends
    # byte k of the packed buffer comes from starts[row] + (k - new_starts[row])
    offset = np.repeat(starts.astype(np.int64) - new_starts, lens)
    return batch.block.data[np.arange(total) + offset], new_starts, new_ends


class CacheWriter:
    """Write batches to ``path`` (through a temporary file renamed by :meth:`close`).

    ``max_excerpts``: how many malformed lines per batch keep their excerpt.
    """

    def __init__(self, path: str | os.PathLike, ident: dict, max_excerpts: int = 10) -> None:
        self.path = Path(path)
        self.max_excerpts = max_excerpts
        self.tmp = self.path.with_name(f".{self.path.name}.partial")
        self.f = open(self.tmp, "wb")  # noqa: SIM115 - closed in close()/abort()
        head = json.dumps(ident, sort_keys=True).encode()
        self.f.write(MAGIC + struct.pack("<I", len(head)) + head)

    def add(self, batch: Batch) -> None:
        arrays = {name: np.ascontiguousarray(getattr(batch, name)) for name in _FIELDS}
        tagbuf, arrays["tag_start"], arrays["tag_end"] = _tag_bytes(batch)
        arrays["tagbuf"] = tagbuf
        bad = np.flatnonzero(batch.status != 0)[: self.max_excerpts]
        meta = {
            "source": batch.block.source,
            "first_line": batch.block.first_line,
            "n_touching_tags": int(batch.n_touching_tags),
            "first_touching_tag_line": int(batch.first_touching_tag_line),
            "excerpts": [[int(i), line_excerpt(batch, int(i))] for i in bad],
            "arrays": [[k, v.dtype.str, list(v.shape)] for k, v in arrays.items()],
        }
        head = json.dumps(meta).encode()
        size = sum(v.nbytes for v in arrays.values())
        self.f.write(struct.pack("<QI", 4 + len(head) + size, len(head)))
        self.f.write(head)
        for v in arrays.values():  # no joined copy of the payload
            self.f.write(memoryview(v).cast("B"))

    def close(self) -> None:
        self.f.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.f.close()
        self.tmp.unlink(missing_ok=True)


def matches(path: str | os.PathLike, ident: dict) -> bool:
    try:
        with open(path, "rb") as f:
            if f.read(8) != MAGIC:
                return False
            (hlen,) = struct.unpack("<I", f.read(4))
            return json.loads(f.read(hlen)) == ident
    except (OSError, ValueError, struct.error):
        return False


def read(path: str | os.PathLike) -> Iterator[Batch]:
    with open(path, "rb") as f:
        if f.read(8) != MAGIC:
            raise ValueError(f"{path} is not an sl cache")
        (hlen,) = struct.unpack("<I", f.read(4))
        f.read(hlen)
        while True:
            rec = f.read(12)
            if not rec:
                return
            size, mlen = struct.unpack("<QI", rec)
            meta = json.loads(f.read(mlen))
            buf = bytearray(size - 4 - mlen)  # writable arrays, as parsed ones; one copy
            if f.readinto(buf) != len(buf):
                raise ValueError(f"{path} is truncated")
            arrays, off = {}, 0
            for name, dt, shape in meta["arrays"]:
                dtype = np.dtype(dt)
                count = int(np.prod(shape, dtype=np.int64))
                arrays[name] = np.frombuffer(buf, dtype=dtype, count=count, offset=off).reshape(
                    shape
                )
                off += count * dtype.itemsize
            block = Block(arrays.pop("tagbuf"), meta["source"], meta["first_line"])
            yield CachedBatch(
                **{k: arrays[k] for k in _FIELDS},
                block=block,
                n_touching_tags=meta["n_touching_tags"],
                first_touching_tag_line=meta["first_touching_tag_line"],
                excerpts={i: text for i, text in meta["excerpts"]},
            )
