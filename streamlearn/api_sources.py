"""What :class:`~streamlearn.api.Model` learns from and scores besides files: text lines
and matrices, turned into the parsers' batches (:class:`~streamlearn.io.batch.Batch`).

* :func:`paths_of` tells paths (read as ``sl train FILE ...`` reads them) from
  the rest; :func:`source_of` makes the batch source of the rest, checked first
  with the command line's messages (``ValueError``);
* :class:`LineSource`: an iterable of text lines (or an open file), cut into
  blocks (:func:`line_blocks`) and parsed as a file's lines are;
* :class:`MatrixSource`: a ``scipy.sparse`` matrix or a 2-D numpy array with
  its labels, column ``j`` being svmlight feature ``j`` of the default namespace.

Nothing here learns; :mod:`streamlearn.api` runs the learners over these batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import numpy as np

from streamlearn.config import TrainConfig
from streamlearn.hashing import CONSTANT_HASH
from streamlearn.io._scan import CONSTANT_NS, DEFAULT_NS
from streamlearn.io.batch import MAX_MAGNITUDE, Batch, Block
from streamlearn.io.reader import BLOCK_SIZE

BLOCK_BYTES = BLOCK_SIZE
"""Text lines are parsed in blocks of about this many bytes, as files are."""
MATRIX_ROWS = 65536
"""Rows of a matrix per batch."""


def paths_of(data, lines) -> list[str] | None:  # noqa: ANN001
    """``data`` as a list of paths when it is a path or a list of them, else None."""
    if isinstance(data, str | os.PathLike):
        return [os.fspath(data)]
    if isinstance(data, list | tuple) and data and all(isinstance(p, str | os.PathLike)
                                                      for p in data):  # fmt: skip
        return [os.fspath(p) for p in data]
    if data is None and lines is None:
        raise ValueError("nothing to learn from: pass paths, a matrix and its labels, or lines=")
    return None


def source_of(data, lines, y, weights, base, config: TrainConfig, labeled: bool = True,
              fmt: str = "auto"):  # noqa: ANN001, ANN202  # fmt: skip
    """The batch source of lines or of a matrix (see :class:`LineSource`, :class:`MatrixSource`);
    lines are parsed as ``fmt`` (``auto``: detected)."""
    if data is not None and lines is not None:
        raise ValueError("pass data or lines=, not both")
    if data is not None and (hasattr(data, "tocsr") or isinstance(data, np.ndarray)):
        if labeled and y is None:
            raise ValueError("a matrix needs its labels: fit(X, y)")
        if labeled and config.oaa:
            _check_classes(y, config.oaa, config.indexing)
        return MatrixSource(data, y, weights, base, config.bits, config.constant,
                            labeled=labeled)  # fmt: skip
    if y is not None or weights is not None or base is not None:
        raise ValueError("y, sample_weight and base go with a matrix; lines carry their own")
    if data is not None and not hasattr(data, "readline"):
        raise ValueError(
            f"cannot learn from a {type(data).__name__}: pass paths, a matrix, an open file, "
            "or lines= (an iterable of text lines)"
        )
    return LineSource(data if data is not None else lines, config.replace(format=fmt))


def _check_classes(y, k: int, indexing: int | None) -> None:  # noqa: ANN001
    """A multiclass model's labels: classes 1..K, or 0..K-1 with ``indexing=0`` (NaN:
    unlabeled), else ValueError.  A matrix's labels are read as given (VW's rule for
    lines, which decides at the first label 0 or K, is for lines)."""
    a = np.asarray(y, dtype=np.float64).reshape(-1)
    first = 0 if indexing == 0 else 1
    with np.errstate(invalid="ignore"):
        bad = ~(np.isnan(a) | ((a >= first) & (a < first + k) & (a == np.floor(a))))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        hint = ""
        if first == 1 and a[i] == 0 and not (a[~np.isnan(a)] == k).any():
            hint = f" (labels 0..{k - 1}: Model(oaa={k}, indexing=0))"
        raise ValueError(f"y[{i}] = {a[i]:g} is not a class {first}..{first + k - 1} of "
                         f"Model(oaa={k}): the labels of a multiclass model are the integers "
                         f"{first} to {first + k - 1}{hint}")  # fmt: skip


class LineSource:
    """Batches of an iterable of text lines, parsed as a file's lines are.

    The lines are parsed once; a run of several passes replays the parsed
    batches (the iterable may be a one-shot generator).
    """

    name = "<lines>"

    def __init__(self, lines: Iterable[str | bytes], config: TrainConfig) -> None:
        self.lines = lines
        self.config = config
        self._parsed: list[Batch] | None = None

    def batches(self) -> Iterator[Batch]:
        if self._parsed is not None:
            yield from self._parsed
            return
        from streamlearn.io.parse import FORMATS, parse_blocks

        kept: list[Batch] = []
        c = self.config
        for batch in parse_blocks(line_blocks(self.lines, self.name), FORMATS.get(c.format),
                                  c.bits, c.constant, c.namespaces()):  # fmt: skip
            kept.append(batch)
            yield batch
        self._parsed = kept

    def close(self) -> None:
        self._parsed = None


def one_line(lines: object) -> bytes | None:
    """``lines`` as one VW text line ending in ``\\n`` when it is one (a str, or a list
    of one str, without a newline inside), for the one-line paths; else None."""
    if type(lines) is list and len(lines) == 1:  # noqa: E721
        lines = lines[0]
    if type(lines) is not str:  # noqa: E721
        return None
    b = lines.encode("utf-8")
    if not b.endswith(b"\n"):
        b += b"\n"
    return b if b.find(b"\n") == len(b) - 1 else None


def line_blocks(lines: Iterable[str | bytes] | str | bytes, name: str) -> Iterator[Block]:
    """Blocks of ``lines``: an iterable of str or bytes lines (each may hold several,
    separated by newlines), or one str or bytes: a text of lines (``"1 |f a\n-1 |f b"``
    is two lines, never one example per character)."""
    if isinstance(lines, str | bytes | bytearray | memoryview):
        lines = [lines]
    if type(lines) is list and len(lines) == 1 and type(lines[0]) is str:  # noqa: E721
        # one line, as a server or a learn_one passes it: the block at once (~1 µs less)
        b = lines[0].encode("utf-8")
        if not b.endswith(b"\n"):
            b += b"\n"
        yield Block(_writable([b]), name, 1, newlines=b.count(b"\n"))
        return
    first, size, chunk = 1, 0, []
    for i, line in enumerate(lines):
        if isinstance(line, str):
            b = line.encode("utf-8")
        elif isinstance(line, bytes | bytearray | memoryview):
            b = bytes(line)
        else:
            raise TypeError(f"lines= item {i} is of type {type(line).__name__}: each line is "
                            "a str or bytes")  # fmt: skip
        if not b.endswith(b"\n"):
            b += b"\n"
        chunk.append(b)
        size += len(b)
        if size >= BLOCK_BYTES:
            yield Block(_writable(chunk), name, first)
            first += len(chunk)
            size, chunk = 0, []
    if chunk:
        yield Block(_writable(chunk), name, first)


def _writable(chunk: list[bytes]) -> np.ndarray:
    """The lines' bytes as the parser takes them (writable: no second copy per block)."""
    return np.frombuffer(bytearray(b"".join(chunk)), dtype=np.uint8)


class MatrixSource:
    """Batches of a matrix's rows: column ``j`` is svmlight feature ``j`` (slot ``j mod 2^b``),
    explicit zeros dropped, the constant appended, as the svmlight parser does.

    ``X`` is a ``scipy.sparse`` matrix (any format) or a 2-D numpy array, which
    needs no scipy.  Labels, importance weights (``sample_weight``) and bases
    must be finite, and weights >= 0, as the parsers require of a line
    (``non-finite value``, ``negative importance weight``): the first bad row
    is named.  Without labels (scoring) ``y`` is not read.
    """

    name = "<matrix>"

    def __init__(self, X, y, weights, base, bits: int, constant: bool,
                 labeled: bool = True) -> None:  # noqa: ANN001  # fmt: skip
        self.indptr, self.indices, self.data, n = _csr_rows(X)
        self.y = _column(y, n, "y", np.nan)
        self.w = _column(weights, n, "sample_weight", 1.0)
        self.base = _column(base, n, "base", 0.0)
        columns = [("sample_weight", self.w), ("base", self.base)]
        for what, v in [("y", self.y)] * labeled + columns:
            _refuse(what, ~np.isfinite(v), v, "is not finite (the parsers refuse a line with "
                    "a nan or inf: 'non-finite value')")  # fmt: skip
        _refuse("sample_weight", self.w < 0, self.w, "is negative (the parsers refuse a line "
                "with a negative importance weight)")  # fmt: skip
        bad = ~np.isfinite(self.data)
        if bad.any():
            row = int(np.searchsorted(self.indptr, np.flatnonzero(bad)[0], side="right")) - 1
            raise ValueError(f"X holds NaN or infinite values (first in row {row})")
        for what, v in (("sample_weight", self.w), ("X", self.data), ("y", self.y),
                        ("base", self.base)):  # fmt: skip
            if np.any(np.abs(v) > MAX_MAGNITUDE):
                raise ValueError(
                    f"{what} holds a value of magnitude above "
                    f"{f'{MAX_MAGNITUDE:.0e}'.replace('e+', 'e')}, which the "
                    "learners' float32 state cannot square (a line of text holding one is "
                    "skipped: 'number too large')"
                )
        self.mask = (1 << bits) - 1
        self.constant = constant

    def batches(self) -> Iterator[Batch]:
        from streamlearn.io.parse import FMT_SVMLIGHT

        n = len(self.indptr) - 1
        empty = np.empty(0, dtype=np.uint8)
        for lo in range(0, n, MATRIX_ROWS):
            hi = min(n, lo + MATRIX_ROWS)
            part_ptr = self.indptr[lo : hi + 1] - self.indptr[lo]
            cols = self.indices[self.indptr[lo] : self.indptr[hi]]
            vals = self.data[self.indptr[lo] : self.indptr[hi]]
            nnz = np.diff(part_ptr)
            counts = nnz + (1 if self.constant else 0)
            indptr = np.zeros(hi - lo + 1, dtype=np.int64)
            np.cumsum(counts, out=indptr[1:])
            indices = np.empty(indptr[-1], dtype=np.uint32)
            values = np.ones(indptr[-1], dtype=np.float64)
            row_of = np.repeat(np.arange(hi - lo), nnz)
            pos = indptr[:-1][row_of] + (np.arange(len(cols)) - part_ptr[row_of])
            indices[pos] = (cols & self.mask).astype(np.uint32)
            values[pos] = vals
            ns = np.full(indptr[-1], DEFAULT_NS, dtype=np.uint8)  # (svmlight's namespace)
            if self.constant:
                indices[indptr[1:] - 1] = CONSTANT_HASH & self.mask
                ns[indptr[1:] - 1] = CONSTANT_NS
            rows = hi - lo
            yield Batch(
                labels=self.y[lo:hi].copy(), weights=self.w[lo:hi].copy(),
                bases=self.base[lo:hi].copy(), tag_start=np.zeros(rows, dtype=np.int64),
                tag_end=np.zeros(rows, dtype=np.int64), indptr=indptr, indices=indices,
                values=values, status=np.zeros(rows, dtype=np.int32),
                line=np.arange(lo + 1, hi + 1, dtype=np.int64),
                block=Block(empty, self.name, lo + 1), fmt=FMT_SVMLIGHT, ns=ns,
            )  # fmt: skip

    def close(self) -> None:
        pass


def _csr_rows(X) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:  # noqa: ANN001
    """``X``'s rows as CSR arrays (indptr, column indices, values; explicit zeros and
    duplicates summed away) and the number of rows.  A dense array needs only numpy."""
    if hasattr(X, "tocsr"):  # scipy.sparse: a copy, so the caller's matrix is untouched
        A = X.tocsr().astype(np.float64, copy=True)
        A.sum_duplicates()
        A.eliminate_zeros()
        return (A.indptr.astype(np.int64), A.indices.astype(np.int64),
                np.asarray(A.data, dtype=np.float64), A.shape[0])  # fmt: skip
    try:
        a = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"X must be a numeric matrix: {e}") from None
    if a.ndim != 2:
        raise ValueError(f"X must be 2-D (one row per example), not of shape {a.shape}")
    rows, cols = np.nonzero(a)  # row-major: CSR order; NaN is non-zero, refused later
    indptr = np.zeros(a.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=a.shape[0]), out=indptr[1:])
    return indptr, cols.astype(np.int64), a[rows, cols], a.shape[0]


def _refuse(what: str, bad: np.ndarray, values: np.ndarray, why: str) -> None:
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{what} of row {i} ({float(values[i])!r}) {why}")


def _column(v, n: int, what: str, default: float) -> np.ndarray:  # noqa: ANN001
    if v is None:
        return np.full(n, default)
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    if a.shape[0] != n:
        raise ValueError(f"{what} has {a.shape[0]} values for {n} rows")
    return a
