"""Parsed-batch cache: later passes read arrays instead of re-parsing text.

File: ``b"SLCACHE1"``, a uint32 header length, a JSON header (what the cache
was made from: sources with sizes and modification times, bits, constant,
format, sl version), then one record per batch: a uint64 record length, a
uint32 header length, a JSON record header (array names, dtypes, shapes,
source name) and the arrays.  A cache whose header does not match the current
run is rebuilt, never trusted.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from streamlearn import __version__
from streamlearn.io.batch import Batch, Block

MAGIC = b"SLCACHE1"
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


class CacheWriter:
    def __init__(self, path: str | os.PathLike, ident: dict) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.partial")
        self.f = open(self.tmp, "wb")  # noqa: SIM115 - closed in close()/abort()
        head = json.dumps(ident, sort_keys=True).encode()
        self.f.write(MAGIC + struct.pack("<I", len(head)) + head)

    def add(self, batch: Batch) -> None:
        arrays = {name: getattr(batch, name) for name in _FIELDS}
        tags = batch.block.data  # keep only tag bytes: rebuild spans into a compact buffer
        spans = [bytes(tags[a:b]) for a, b in zip(batch.tag_start, batch.tag_end, strict=True)]
        tagbuf = np.frombuffer(b"".join(spans), dtype=np.uint8)
        lens = np.fromiter((len(s) for s in spans), dtype=np.int64, count=len(spans))
        ends = np.cumsum(lens)
        arrays["tag_start"] = ends - lens
        arrays["tag_end"] = ends
        arrays["tagbuf"] = tagbuf
        meta = {
            "source": batch.block.source,
            "first_line": batch.block.first_line,
            "arrays": [[k, v.dtype.str, list(v.shape)] for k, v in arrays.items()],
        }
        head = json.dumps(meta).encode()
        payload = b"".join(np.ascontiguousarray(v).tobytes() for v in arrays.values())
        self.f.write(struct.pack("<QI", 4 + len(head) + len(payload), len(head)))
        self.f.write(head)
        self.f.write(payload)

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
            buf = bytearray(f.read(size - 4 - mlen))  # writable arrays, as parsed ones
            arrays, off = {}, 0
            for name, dt, shape in meta["arrays"]:
                dtype = np.dtype(dt)
                count = int(np.prod(shape, dtype=np.int64))
                arrays[name] = np.frombuffer(buf, dtype=dtype, count=count, offset=off).reshape(
                    shape
                )
                off += count * dtype.itemsize
            block = Block(arrays.pop("tagbuf"), meta["source"], meta["first_line"])
            yield Batch(**{k: arrays[k] for k in _FIELDS}, block=block)
