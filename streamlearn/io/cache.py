"""Parsed-batch cache: later passes read arrays instead of re-parsing text.

File: ``b"SLCACHE3"``, a uint32 header length, a JSON header (what the cache
was made from: sources with sizes and modification times, bits, constant,
format, sl version), then one record per batch: a uint64 record length, a
uint32 header length, a JSON record header (array names, dtypes, shapes,
source name, the text of the batch's first malformed lines) and the arrays;
then an end record: a record length of 0 and the uint64 number of records.  A
file cut anywhere, even between two records, lacks it and is refused (a cache
cut after its header once replayed as an input without examples).
A cache whose header does not match the current run is rebuilt, never trusted.

Size.  An array whose elements are all equal (the values of binary features,
importance weights of 1, bases of 0, the statuses of a clean batch, the tags
of untagged lines) is stored as that one value; consecutive line numbers as
their first; the row offsets as row lengths in the smallest unsigned type
that holds them; the slots are always stored, so a damaged record cannot
claim more features than its bytes.  A record then costs 4 bytes per feature
(its slot), 8 more when the values are not all equal, and about 9 bytes per
row (the label, the length) -- a line ``1 |f a b c d e f g h`` of 21 bytes caches in 37 (before:
168, 8 times the text; a highly compressed stream on stdin with ``--passes``
made a temporary cache of hundreds of times its compressed size).  Crosses
(``-q``) are stored expanded: a cache grows with the features a learner
sees, not with the text.

The cache keeps the tags but not the text of the lines.  So that a run which
replays a cache built by an earlier run can still quote a malformed line as
``file:line: reason: text``, the excerpts of the first few malformed lines of
each batch are stored with it (as many as a run ever prints); :func:`excerpt`
returns them.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from streamlearn._version import __version__
from streamlearn.io import excerpt as line_excerpt
from streamlearn.io.batch import Batch, Block

MAGIC = b"SLCACHE4"  # 4: the end record
_DTYPES = {  # every array of a record, in file order
    "labels": np.float64, "weights": np.float64, "bases": np.float64,
    "tag_start": np.int64, "tag_end": np.int64, "indptr": np.int64,
    "indices": np.uint32, "values": np.float64, "status": np.int32, "line": np.int64,
    "tagbuf": np.uint8,
}  # fmt: skip
_FIELDS = tuple(name for name in _DTYPES if name != "tagbuf")
"""The :class:`Batch` arrays a record stores (``tagbuf`` holds the packed tags)."""
_OPTIONAL = {"ns": np.uint8}
"""Arrays a record stores when its writer is asked to: each feature's namespace byte, for
a learner that reads them (``--lrq``; the cache's identity says so)."""


def identity(
    sources: list[str], bits: int, constant: bool, fmt: str, namespaces: dict | None = None
) -> dict:
    """What a cache must have been built from to be reused (its batches hold the
    interactions, so those are part of it)."""
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
        "namespaces": namespaces or {},
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
    """Write batches to ``path`` (through a unique temporary file renamed by :meth:`close`).

    Two runs building the same cache at once each write their own temporary
    file; the last rename wins and both are whole.  ``max_excerpts``: how
    many malformed lines per batch keep their excerpt.
    """

    def __init__(self, path: str | os.PathLike, ident: dict, max_excerpts: int = 10,
                 keep_ns: bool = False) -> None:  # fmt: skip
        from streamlearn.system.outputs import Output

        self.path = Path(path)
        self.max_excerpts = max_excerpts
        self.out = Output(str(path), "cache", buffering=1 << 20)
        self.f = self.out  # write() converts OS errors into OutputUnwritable
        head = json.dumps(ident, sort_keys=True).encode()
        self.f.write(MAGIC + struct.pack("<I", len(head)) + head)
        self.records = 0
        self.keep_ns = keep_ns

    def add(self, batch: Batch) -> None:
        arrays = {name: np.ascontiguousarray(getattr(batch, name)) for name in _FIELDS}
        tagbuf, arrays["tag_start"], arrays["tag_end"] = _tag_bytes(batch)
        arrays["tagbuf"] = tagbuf
        if self.keep_ns:
            ns = getattr(batch, "ns", None)
            arrays["ns"] = (np.full(batch.indices.shape[0], 32, dtype=np.uint8) if ns is None
                            else np.ascontiguousarray(ns[: batch.indices.shape[0]]))  # fmt: skip
        bad = np.flatnonzero(batch.status != 0)[: self.max_excerpts]
        meta = {
            "source": batch.block.source,
            "first_line": batch.block.first_line,
            "n_touching_tags": int(batch.n_touching_tags),
            "first_touching_tag_line": int(batch.first_touching_tag_line),
            "fmt": int(batch.fmt),
            "excerpts": [[int(i), line_excerpt(batch, int(i))] for i in bad],
            "arrays": [[k, v.dtype.str, list(v.shape)] for k, v in arrays.items()],
        }
        packed = [(k, v, *_pack(k, v, batch.block.first_line)) for k, v in arrays.items()]
        meta["arrays"] = [[k, v.dtype.str, list(v.shape), how] for k, v, how, _ in packed]
        head = json.dumps(meta).encode()
        size = sum(data.nbytes for *_, data in packed if data is not None)
        self.f.write(struct.pack("<QI", 4 + len(head) + size, len(head)))
        self.f.write(head)
        for *_, data in packed:  # no joined copy of the payload
            if data is not None and data.nbytes:
                self.f.write(memoryview(data).cast("B"))
        self.records += 1

    def close(self) -> BinaryIO | None:
        """Write the end record, make the cache visible, and return it open for reading.

        The run replays the file it wrote through this descriptor, never by its
        path: another run may replace the path meanwhile (another ``-k``, other
        options), and this run must not learn that run's batches.
        """
        self.f.write(struct.pack("<QIQ", 0, 0, self.records))  # the end record
        self.out.prepare()
        if self.out.tmp is None:  # written through (a device): nothing to hold
            self.out.commit()
            return None
        held = open(self.out.tmp, "rb")  # noqa: SIM115 - the caller's
        try:
            self.out.commit()
        except BaseException:
            held.close()
            raise
        return held

    def abort(self) -> None:
        self.out.abort()


_LENGTHS = (np.uint8, np.uint16, np.uint32, np.uint64)
_RAW = ("indices", "tagbuf")
"""Stored as they are: the slots' bytes bound the features a record may claim (so a
damaged record cannot ask for more memory than its size), and the tags are bytes."""


def _pack(name: str, v: np.ndarray, first_line: int) -> tuple[dict | None, np.ndarray | None]:
    """How an array is stored: (None, the array) as it is, or a rule and what it needs.

    ``{"fill": x}``: every element is ``x`` (nothing stored); ``{"from": k}``:
    ``k, k+1, ...`` (line numbers); ``{"lengths": dtype}``: an ``indptr`` stored
    as its differences in the smallest unsigned type that holds them.
    """
    n = v.shape[0]
    if v.ndim > 1:  # --csoaa's labels: (class, cost) pairs per row
        return None, v
    if name == "indptr":
        lengths = np.diff(v)
        top = int(lengths.max()) if lengths.size else 0
        for t in _LENGTHS:
            if top <= np.iinfo(t).max:
                return {"lengths": np.dtype(t).str}, lengths.astype(t)
    if n and name not in _RAW:
        first = v[0]
        if name == "line" and int(v[-1]) - int(first) == n - 1 and np.all(np.diff(v) == 1):
            return {"from": int(first)}, None
        same = v == first if first == first else np.isnan(v)  # NaN: an unlabeled batch
        if np.all(same) and (v.dtype.kind != "f" or np.all(np.signbit(v) == np.signbit(first))):
            return {"fill": first.item()}, None
    return None, v


def _unpack(how: dict, dtype: np.dtype, count: int, buf, off: int) -> tuple[np.ndarray, int]:
    """The array :func:`_pack` stored (writable), and the offset after its bytes."""
    if "fill" in how:
        return np.full(count, how["fill"], dtype=dtype), off
    if "from" in how:
        start = int(how["from"])
        return np.arange(start, start + count, dtype=dtype), off
    if "lengths" in how:
        t = np.dtype(how["lengths"])
        if t not in [np.dtype(x) for x in _LENGTHS] or count < 1:
            raise ValueError(f"unexpected row lengths {how}")
        n = count - 1
        if off + n * t.itemsize > len(buf):
            raise ValueError("row lengths run past the record")
        lengths = np.frombuffer(buf, dtype=t, count=n, offset=off)
        out = np.zeros(count, dtype=dtype)
        np.cumsum(lengths, out=out[1:])
        return out, off + n * t.itemsize
    raise ValueError(f"unexpected packing {how}")


def open_matching(path: str | os.PathLike, ident: dict) -> BinaryIO | None:
    """The cache at ``path`` open for reading when it was built from ``ident``, else None.

    The run replays what it checked through this descriptor: a cache replaced by
    another run after the check is not read.
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 - returned to the caller
    except OSError:
        return None
    try:
        if f.read(8) == MAGIC:
            (hlen,) = struct.unpack("<I", f.read(4))
            if json.loads(f.read(hlen)) == ident:
                return f
    except (OSError, ValueError, struct.error):
        pass
    f.close()
    return None


def is_cache(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes) is the start of an sl cache."""
    return head[:7] == MAGIC[:7]


class CacheCorrupt(ValueError):
    """A cache file that cannot be what :class:`CacheWriter` wrote."""




def read(path: str | os.PathLike, held: BinaryIO | None = None) -> Iterator[Batch]:
    """Replay the batches of a cache, each checked before a kernel sees it.

    ``held``: the cache open for reading (:meth:`CacheWriter.close`,
    :func:`open_matching`), read from its start; ``path`` then only names it.
    The kernels do not bounds-check (numba), so every record is validated
    here: dtypes, lengths, CSR structure, slots below the header's ``2**bits``
    and tag spans inside the record.  Anything else raises
    :class:`CacheCorrupt` naming the record.
    """
    with contextlib.nullcontext(held) if held is not None else open(path, "rb") as f:
        f.seek(0)
        total = os.fstat(f.fileno()).st_size
        if f.read(8) != MAGIC:
            raise CacheCorrupt(f"{path} is not an sl cache")
        try:
            (hlen,) = struct.unpack("<I", f.read(4))
            d = 1 << int(json.loads(f.read(hlen))["bits"])
        except (struct.error, ValueError, KeyError, TypeError) as e:
            raise CacheCorrupt(f"{path}: unreadable header ({e})") from None
        number = 0
        while True:
            rec = f.read(12)
            if len(rec) == 12 and rec[:8] == bytes(8):  # the end record
                _end(f, rec, number, path)
                return
            if not rec:
                raise CacheCorrupt(f"{path} is cut short after record {number} (no end record)")
            number += 1
            try:
                batch = _record(f, rec, d, total)
            except (struct.error, ValueError, KeyError, TypeError) as e:
                raise CacheCorrupt(f"{path}: record {number} is corrupt ({e})") from None
            yield batch


def _end(f, rec: bytes, number: int, path: str | os.PathLike) -> None:
    """Check the end record: the records' count, then the file's end."""
    count = f.read(8)
    if rec[8:] != bytes(4) or len(count) != 8 or struct.unpack("<Q", count)[0] != number:
        raise CacheCorrupt(f"{path}: the end record is corrupt (after record {number})")
    if f.read(1):
        raise CacheCorrupt(f"{path}: bytes after the end record")


def _record(f, rec: bytes, d: int, total: int) -> CachedBatch:
    size, mlen = struct.unpack("<QI", rec)
    if size > total - f.tell() + 4 or mlen > size - 4:
        raise ValueError("truncated")
    meta = json.loads(f.read(mlen))
    buf = bytearray(size - 4 - mlen)  # writable arrays, as parsed ones; one copy
    if f.readinto(buf) != len(buf):
        raise ValueError("truncated")
    arrays, off = {}, 0
    for name, dt, shape, how in meta["arrays"]:
        dtype = np.dtype(dt)
        kinds = {**_DTYPES, **_OPTIONAL}
        if name not in kinds or dtype != kinds[name] or not (
                len(shape) == 1 or (len(shape) == 2 and name == "labels" and how is None)):
            raise ValueError(f"unexpected array {name} {dt} {shape}")
        count = int(np.prod(shape, dtype=np.int64)) if len(shape) == 2 else int(shape[0])
        if count < 0 or count > size:  # a row's length, a feature's slot: a byte at least
            raise ValueError(f"array {name} has an impossible length {count}")
        if how is not None:
            if name in _RAW:
                raise ValueError(f"array {name} cannot be packed")
            arrays[name], off = _unpack(how, dtype, count, buf, off)
            continue
        if off + count * dtype.itemsize > len(buf):
            raise ValueError(f"array {name} runs past the record")
        arrays[name] = np.frombuffer(buf, dtype=dtype, count=count, offset=off)
        if len(shape) == 2:
            arrays[name] = arrays[name].reshape(int(shape[0]), int(shape[1]))
        off += count * dtype.itemsize
    _check(arrays, d)
    block = Block(arrays.pop("tagbuf"), str(meta["source"]), int(meta["first_line"]))
    return CachedBatch(
        **{k: arrays[k] for k in _FIELDS},
        ns=arrays.get("ns"),
        block=block,
        n_touching_tags=int(meta["n_touching_tags"]),
        first_touching_tag_line=int(meta["first_touching_tag_line"]),
        fmt=int(meta.get("fmt", -1)),
        excerpts={int(i): str(text) for i, text in meta["excerpts"]},
    )


def _check(a: dict[str, np.ndarray], d: int) -> None:
    """What the kernels rely on: consistent lengths, a CSR index, slots below ``d``."""
    if set(a) - set(_OPTIONAL) != set(_DTYPES):
        raise ValueError(f"arrays {sorted(set(_DTYPES) ^ (set(a) - set(_OPTIONAL)))} missing "
                         "or extra")  # fmt: skip
    if "ns" in a and a["ns"].shape[0] != a["indices"].shape[0]:
        raise ValueError("ns does not have a byte per feature")
    n = a["labels"].shape[0]
    for name in ("weights", "bases", "tag_start", "tag_end", "status", "line"):
        if a[name].shape[0] != n:
            raise ValueError(f"{name} has {a[name].shape[0]} rows, labels {n}")
    ip, nnz = a["indptr"], a["indices"].shape[0]
    if ip.shape[0] != n + 1 or ip[0] != 0 or ip[-1] != nnz or a["values"].shape[0] != nnz:
        raise ValueError("indptr does not index the features")
    if n and np.any(ip[1:] < ip[:-1]):
        raise ValueError("indptr decreases")
    if nnz and int(a["indices"].max()) >= d:
        raise ValueError(f"a slot is beyond the table's {d}")
    ts, te = a["tag_start"], a["tag_end"]
    if n and (np.any(ts < 0) or np.any(te < ts) or np.any(te > a["tagbuf"].shape[0])):
        raise ValueError("a tag span is outside the record")
