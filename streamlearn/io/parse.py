"""Blocks to batches: the block kernel, format detection and the batch stream.

:func:`parse_block` turns one :class:`~streamlearn.io.batch.Block` into a
:class:`~streamlearn.io.batch.Batch` with one numba call (``nogil``, so parser
threads can overlap the learner): the block kernel of the format
(:func:`~streamlearn.io.vw.parse_vw_block`,
:func:`~streamlearn.io.svmlight.parse_svmlight_block`) walks the block line by
line and hashes features straight into the CSR arrays.

Numbers are converted exactly (:mod:`streamlearn.io._numbers`), or, for ``sl vw``
(``Interactions.vw_numbers``), as VW converts them (:mod:`streamlearn.io.vwfloat`;
VW has no svmlight reader, so svmlight numbers are always correctly rounded).  The rare
token that needs Python's ``float()`` (more than 19 significant digits,
subnormals, ambiguous halfway cases) makes :func:`parse_block` run the kernel
a second time with those values filled in; blocks without such tokens (nearly
all) take a single call.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from streamlearn.io._scan import block_arrays, count_newlines, feature_bound
from streamlearn.io.batch import (
    LONG_LINE,
    MAX_MAGNITUDE,
    REASONS,
    TOO_MANY_CROSSES,
    Batch,
    Block,
)
from streamlearn.io.grams import expand_grams
from streamlearn.io.interactions import (
    CROSS_BUDGET,
    Interactions,
    compile_interactions,
    expand_batch,
    fuses,
    row_crosser,
)
from streamlearn.io.reader import BLOCK_SIZE, MAX_LINE_BYTES, iter_blocks
from streamlearn.io.svmlight import parse_svmlight_block
from streamlearn.io.vw import parse_vw_block
from streamlearn.io.vwfloat import float32_of_decimal
from streamlearn.system.jit import INTERPRETED
from streamlearn.system.text import shown_bytes

FMT_VW = 0
FMT_SVMLIGHT = 1
FMT_CSV = 2
FMT_JSON = 3
FMT_DSJSON = 4
FORMATS = {"vw": FMT_VW, "svmlight": FMT_SVMLIGHT, "csv": FMT_CSV, "json": FMT_JSON,
           "dsjson": FMT_DSJSON}
"""Input formats by name; JSON lines are translated into VW text (:mod:`streamlearn.io.vwjson`)."""

_SLOW_CAP = 64
WORDS = not INTERPRETED and sys.byteorder == "little"
"""Whether :func:`parse_block` reads words by default: compiled kernels on a
little-endian machine (the word arithmetic reads the first byte as the lowest)."""
_NO_POS = np.empty(0, dtype=np.int64)
_NO_VALS = np.empty(0, dtype=np.float64)


def _unshared(arrays: tuple[np.ndarray, ...]) -> bool:
    """Whether only a pool's tuple refers to each of ``arrays`` (no batch's view of them
    is alive): a view holds its base, so CPython's count shows it."""
    # the tuple's reference, this call's argument and the loop variable
    return all(sys.getrefcount(a) <= 3 for a in arrays)


class _ArraySets:
    """Output arrays for the block kernels, each set reused once no batch refers to it.

    Fresh arrays cost a page fault per 4 KiB page touched: at 1 GB with the
    batches' arrays allocated anew each block, 75,000 faults of the run's
    110,000.  A batch's arrays are slices of its set's arrays, so a set is
    free once only this pool refers to them (CPython's reference counts).  The
    feature arrays of a pooled set have room for :func:`feature_bound`
    entries, of which only the pages a block fills are ever touched.  Beyond
    ``keep`` sets in use (batches kept alive, as a parse into memory does),
    arrays are allocated per block, and the batch gets copies of the parts
    filled (:func:`parse_block`).
    """

    def __init__(self, keep: int = 8) -> None:
        self.keep = keep
        self.sets: list[tuple[np.ndarray, ...]] = []
        self.lock = threading.Lock()

    def take(self, n_bytes: int, max_rows: int) -> tuple[tuple[np.ndarray, ...], bool]:
        """Arrays with ``max_rows`` rows and :func:`feature_bound` feature entries; pooled?"""
        need = feature_bound(n_bytes, max_rows)
        with self.lock:
            for i in range(len(self.sets)):
                arrays = self.sets[i]
                # referred to by the list, this variable and the call only
                if sys.getrefcount(arrays) <= 3 and _unshared(arrays):
                    if arrays[0].shape[0] < max_rows or arrays[6].shape[0] < need:
                        arrays = self._new(n_bytes, max_rows)
                        self.sets[i] = arrays
                    return arrays, True
            if len(self.sets) < self.keep:
                arrays = self._new(n_bytes, max_rows)
                self.sets.append(arrays)
                return arrays, True
        return block_arrays(max_rows, need), False

    @staticmethod
    def _new(n_bytes: int, max_rows: int) -> tuple[np.ndarray, ...]:
        # room for a full block and a quarter more rows, so that a set fits the next blocks too
        rows = max(max_rows + max_rows // 4, 1024)
        return block_arrays(rows, feature_bound(max(n_bytes, BLOCK_SIZE + BLOCK_SIZE // 16), rows))


_SETS = _ArraySets()


class _CrossBuffers:
    """Output buffers of :func:`expand_batch`, each pair reused once no batch refers to it.

    Fresh arrays for each batch of crosses cost a page fault per 4 KiB page
    touched, and the kernel's time for it (``-q tt`` on 30 MB: 1.3 s of system
    time in a 3 s run before the buffers went round).  As :class:`_ArraySets`:
    a pair is free once only this pool refers to it; beyond ``keep`` pairs in
    use, new pairs are made (and left to the garbage collector).
    """

    def __init__(self, size: int = CROSS_BUDGET, keep: int = 8) -> None:
        self.size = size
        self.keep = keep
        self.pairs: list[tuple[np.ndarray, np.ndarray]] = []
        self.lock = threading.Lock()

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            for pair in self.pairs:
                if _unshared(pair):
                    return pair
            pair = (np.empty(self.size, dtype=np.uint32), np.empty(self.size, dtype=np.float64))
            if len(self.pairs) < self.keep:
                self.pairs.append(pair)
            return pair


_BUFFERS = _CrossBuffers()
_NO_IDX = np.empty(0, dtype=np.uint32)


def _as_kernel_bytes(data: np.ndarray) -> np.ndarray:
    """uint8, C-contiguous, writable: one compiled signature for every caller."""
    if (
        data.dtype != np.uint8
        or data.ndim != 1
        or not data.flags.c_contiguous
        or not data.flags.writeable
    ):
        data = np.array(data, dtype=np.uint8, copy=True).reshape(-1)
    return data


def parse_block(
    block: Block,
    fmt: int,
    bits: int,
    constant: bool = True,
    inter: Interactions | None = None,
    words: bool = WORDS,
    limit: float = MAX_MAGNITUDE,
) -> Batch:
    """Parse a block of whole lines into a batch of hashed sparse examples.

    Parameters
    ----------
    block : Block
        Lines to parse.
    fmt : int
        ``FMT_VW`` or ``FMT_SVMLIGHT``.
    bits : int
        Table size exponent (1 to 32): slots are masked to ``2**bits``.
    constant : bool
        Append the constant feature (slot ``11650396 mod 2**bits``, value 1)
        last to every usable row, labeled or not.
    inter : Interactions or None
        Crosses to append to every row and namespaces to drop
        (:mod:`streamlearn.io.interactions`), applied on the parser's thread.
    words : bool
        Read the common tokens 8 bytes at a time (:mod:`streamlearn.io._words`);
        the batch is the same either way.  Off when the kernels run as plain
        Python, where the word arithmetic would only be slower.
    limit : float
        A line holding a number of larger magnitude (label, importance weight,
        base, scale, value) is malformed: "number too large"
        (:data:`~streamlearn.io.batch.MAX_MAGNITUDE`, what the learners' state
        can square; ``math.inf`` reads every finite number).

    Returns
    -------
    Batch
        One row per non-blank line.  Malformed lines have ``status != 0``, no
        features, label NaN and weight 0.

    Examples
    --------
    >>> from streamlearn.io import parse_bytes
    >>> b = parse_bytes(b"1 |house price\\n\\n|f 77\\n", bits=18)
    >>> b.indices.tolist(), b.line.tolist(), b.labels.tolist()[0]
    ([204953, 116060, 34952, 116060], [1, 3], 1.0)
    """
    batch, _ = parse_block_parts(block, fmt, bits, constant, inter, words, limit, budget=None)
    return batch


Rest = Callable[[], Iterator[Batch]]


def parse_block_parts(
    block: Block,
    fmt: int,
    bits: int,
    constant: bool = True,
    inter: Interactions | None = None,
    words: bool = WORDS,
    limit: float = MAX_MAGNITUDE,
    budget: int | None = CROSS_BUDGET,
) -> tuple[Batch, Rest | None]:
    """:func:`parse_block`, with crosses in batches of bounded memory.

    Returns the batch of the block's first rows and, when the crosses of its
    lines take more than ``budget`` entries (``None``: no bound), a function
    whose iterator gives the batches of the rest, made as they are asked for
    (so only one part's crosses are in memory at a time); the rows of all the
    parts, in order, are :func:`parse_block`'s.
    """
    if fmt in (FMT_JSON, FMT_DSJSON):
        from streamlearn.io.vwjson import parse_json_block

        return parse_json_block(block, fmt == FMT_DSJSON, bits, constant, inter, words, limit,
                                budget)  # fmt: skip
    if fmt not in (FMT_VW, FMT_SVMLIGHT, FMT_CSV):
        raise ValueError(f"unknown format code {fmt!r}")
    if fmt == FMT_CSV and (inter is None or inter.csv is None):
        raise ValueError("CSV needs its options (Interactions.csv, a CsvReader)")
    if not 1 <= bits <= 32:
        raise ValueError(f"bits must be in 1..32, got {bits}")
    data = _as_kernel_bytes(block.data)
    mask = np.uint64((1 << bits) - 1)
    kernel = parse_vw_block if fmt == FMT_VW else parse_svmlight_block
    newlines = block.newlines if block.newlines >= 0 else count_newlines(data)
    # the VW kernel writes each row's crosses after it, in the room the arrays have beyond
    # the block's own features (text leaves ~4/5 of it: -q ui fits, -q tt in part); the
    # rows it leaves go through expand_batch (and so does parse_block's single batch)
    fused = fmt == FMT_VW and budget is not None and fuses(inter)
    arrays, pooled = _SETS.take(data.shape[0], newlines + 1)
    args = (data, int(block.first_line), mask, bool(constant), float(limit))
    vw_numbers = fmt == FMT_VW and inter is not None and inter.vw_numbers
    if fmt == FMT_VW:
        raw_labels = inter is not None and inter.label_kind != 0
        args += (inter is not None and inter.hash_all, vw_numbers, raw_labels,
                 np.uint32(inter.hash_seed if inter is not None else 0),
                 row_crosser(inter if fused else None, mask, budget or 0))  # fmt: skip
    if fmt == FMT_CSV:
        from streamlearn.io.csv import run_csv_kernel  # (only CSV runs import its kernel)

        rows, k = run_csv_kernel(inter.csv, data, block.source, int(block.first_line), mask,
                                 bool(constant), float(limit), arrays)  # fmt: skip
        touching = first_touching = crossed = n_slow = 0
    else:
        run = functools.partial(_kernel, kernel, args, arrays, words, block.source)
        rows, k, touching, first_touching, crossed, n_slow, spans = run(_SLOW_CAP)
    if n_slow:
        if n_slow > _SLOW_CAP:  # collect every span
            *_, spans = run(n_slow)
        spans = spans[:n_slow]
        exact = float32_of_decimal if vw_numbers else float  # VW's fallback is strtof
        vals = np.array([exact(data[s:e].tobytes()) for s, e in spans], dtype=np.float64)
        rows, k, touching, first_touching, crossed, *_ = run(
            0, np.ascontiguousarray(spans[:, 0]), vals
        )
    if inter is not None and inter.named is not None and not inter.cs_classes:
        from streamlearn.io.named import read_named

        read_named(data, arrays, rows, inter.named, vw_numbers, float(limit))
    (
        labels, weights, bases, tag_start, tag_end, indptr, indices, values,
        status, line, line_start, err_pos, ns,
    ) = arrays  # fmt: skip
    indptr, indices, values = indptr[: rows + 1], indices[:k], values[:k]
    ns = ns[:k]
    if inter is not None and inter.regroups:
        indptr, indices, values, ns = expand_grams(
            indptr, indices, values, ns, mask, inter.gram_ptr, inter.gram_masks,
            inter.gram_lengths, inter.sort, inter.limits,
        )  # fmt: skip
    if inter is not None and inter.crosses_or_filters and crossed < rows:
        return _crossed(block, data, fmt, rows, arrays, indptr, indices, values, ns, mask, inter,
                        touching, first_touching, budget, crossed, pooled)  # fmt: skip
    if not pooled and not (inter is not None and inter.regroups):
        # a batch that may be kept: no room beyond its features
        indices, values = indices.copy(), values.copy()
    batch = Batch(
        labels=labels[:rows],
        weights=weights[:rows],
        bases=bases[:rows],
        tag_start=tag_start[:rows],
        tag_end=tag_end[:rows],
        indptr=indptr,
        indices=indices,
        values=values,
        status=status[:rows],
        line=line[:rows],
        block=block if data is block.data else dataclasses.replace(block, data=data),
        n_touching_tags=touching,
        first_touching_tag_line=first_touching,
        line_start=line_start[:rows],
        err_pos=err_pos[:rows],
        fmt=fmt,
        ns=ns,
    )
    return (_with_long_lines(batch, block.long_lines) if block.long_lines else batch), None


def _crossed(block: Block, data: np.ndarray, fmt: int, rows: int, arrays: tuple,
             indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, ns: np.ndarray,
             mask: np.uint64, inter: Interactions, touching: int, first_touching: int,
             budget: int | None, start: int = 0,
             pooled: bool = True) -> tuple[Batch, Rest | None]:  # fmt: skip
    """The parsed rows with their crosses (:func:`expand_batch`), in parts of at most
    ``budget`` entries; a row past ``inter.max_crosses`` becomes malformed.

    The first ``start`` rows have their crosses already (the parse kernel wrote them,
    :func:`~streamlearn.io.interactions.cross_row`): they are the first part as they are.
    """
    labels, weights, bases, tag_start, tag_end, _, _, _, status, line, line_start, err_pos, _ = (
        arrays
    )
    status = status[:rows]
    # entries a part may hold: the pooled buffers' size at most (None: the whole block)
    room = np.iinfo(np.int64).max if budget is None else min(budget, _BUFFERS.size)
    if data is not block.data:
        block = dataclasses.replace(block, data=data)

    def part(lo: int) -> tuple[Batch, int]:
        buf_idx, buf_val = _BUFFERS.take() if budget is not None else (_NO_IDX, _NO_VALS)
        ptr, idx, val, end = expand_batch(
            indptr, indices, values, ns, mask, inter.terms, inter.lengths, inter.drop,
            inter.drop_linear, inter.dedupe, inter.cross_mode, status, lo, room, inter.max_crosses,
            buf_idx, buf_val,
        )  # fmt: skip
        del buf_idx, buf_val  # the batch's views keep them from the pool while it lives
        crowded = np.flatnonzero(status[lo:end] == TOO_MANY_CROSSES) + lo
        labels[crowded] = np.nan  # a malformed row, as the parser leaves them
        weights[crowded] = 0.0
        return made(lo, end, ptr, idx, val), end

    def made(lo: int, end: int, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray) -> Batch:
        cut = slice(lo, end)
        batch = Batch(
            labels=labels[cut], weights=weights[cut], bases=bases[cut],
            tag_start=tag_start[cut], tag_end=tag_end[cut], indptr=ptr, indices=idx,
            values=val, status=status[cut], line=line[cut], block=block,
            n_touching_tags=touching if lo == 0 else 0,
            first_touching_tag_line=first_touching if lo == 0 else 0,
            line_start=line_start[cut], err_pos=err_pos[cut], fmt=fmt,
        )  # fmt: skip
        if block.long_lines:  # each goes with the part of the row after it (or the last part)
            after = line[lo - 1] if lo else -1
            before = line[end - 1] if end < rows else np.iinfo(np.int64).max
            mine = tuple(r for r in block.long_lines if after < r[0] < before)
            if mine:
                batch = _with_long_lines(batch, mine)
        return batch

    if start:
        nnz = int(indptr[start])
        idx, val = indices[:nnz], values[:nnz]
        if not pooled:  # a batch that may be kept: no room beyond its features
            idx, val = idx.copy(), val.copy()
        first, end = made(0, start, indptr[: start + 1], idx, val), start
    else:
        first, end = part(0)
    if end == rows:
        return first, None

    def rest(lo: int = end) -> Iterator[Batch]:
        while lo < rows:
            batch, lo = part(lo)
            yield batch

    return first, rest


def _with_long_lines(batch: Batch, long_lines: tuple) -> Batch:
    """``batch`` with a malformed row (:data:`LONG_LINE`) for each line the reader skipped.

    The reader left an empty line in each one's place, which gave no row; the
    rows go where their line numbers put them, without features, label NaN,
    weight 0 (as every malformed row).
    """
    lines = np.array([r[0] for r in long_lines], dtype=np.int64)
    at = np.searchsorted(batch.line, lines)
    n = lines.shape[0]
    ins = functools.partial(np.insert, obj=at)
    return dataclasses.replace(
        batch,
        labels=ins(batch.labels, values=np.full(n, np.nan)),
        weights=ins(batch.weights, values=0.0),
        bases=ins(batch.bases, values=0.0),
        tag_start=ins(batch.tag_start, values=0),
        tag_end=ins(batch.tag_end, values=0),
        indptr=np.insert(batch.indptr, at, batch.indptr[at]),
        status=ins(batch.status, values=LONG_LINE),
        line=ins(batch.line, values=lines),
        line_start=None if batch.line_start is None else ins(batch.line_start, values=0),
        err_pos=None if batch.err_pos is None else ins(batch.err_pos, values=-1),
    )


def _kernel(kernel, args: tuple, arrays: tuple, words: bool, source: str, slow_cap: int,
            slow_pos: np.ndarray = _NO_POS, slow_vals: np.ndarray = _NO_VALS) -> tuple:  # fmt: skip
    """One run of a block kernel; the VW kernel's last argument, its crosser, is the
    last of ``args``.

    Returns rows, features, touching tags and the first one's line, the rows
    crossed by the kernel (0 for svmlight's), how many slow tokens there were and
    the spans of the first ``slow_cap``.
    """
    spans = np.empty((slow_cap, 2), dtype=np.int64)
    st = np.zeros(2, dtype=np.int64)  # slow tokens found, the second pass's cursor
    if kernel is parse_vw_block:
        *head, crosser = args
        rows, k, touching, first_touching, overflow, crossed = kernel(
            *head, spans, st, slow_pos, slow_vals, words, arrays, crosser
        )
    else:
        rows, k, touching, first_touching, overflow = kernel(
            *args, spans, st, slow_pos, slow_vals, words, arrays
        )
        crossed = 0
    if overflow:
        raise RuntimeError(f"{source}: more lines in a block than its count")
    return rows, k, touching, first_touching, crossed, int(st[0]), spans


def parse_bytes(
    data: bytes,
    fmt: str = "vw",
    bits: int = 18,
    constant: bool = True,
    source: str = "<bytes>",
    first_line: int = 1,
    limit: float = MAX_MAGNITUDE,
    numbers: str = "exact",
    labels: str = "simple",
) -> Batch:
    """Parse a bytes object of whole lines (tests, small inputs); ``limit`` as
    :func:`parse_block`'s; ``numbers="vw"`` reads VW text's numbers as VW does
    (``TrainConfig.numbers``); ``labels`` other than ``"simple"`` (``"cs"``, ``"cb"``) leaves
    the label part to :func:`streamlearn.io.labels.read_labels`.

    >>> parse_bytes(b"3 1:0.5 7:2\\n", fmt="svmlight", constant=False).indices.tolist()
    [1, 7]
    >>> parse_bytes(b"|f a:0.125\\n", constant=False, numbers="vw").values.tolist()
    [0.1249999925494194]
    """
    if numbers not in ("exact", "vw"):
        raise ValueError(f"numbers must be 'exact' or 'vw', not {numbers!r}")
    buf = np.frombuffer(data, dtype=np.uint8).copy()
    inter = compile_interactions(vw_numbers=True) if numbers == "vw" else None
    if labels != "simple":  # the label part is io/labels.py's (read_labels)
        from streamlearn.io.labels import KINDS

        inter = dataclasses.replace(inter or compile_interactions(), label_kind=KINDS[labels])
    return parse_block(Block(buf, source, first_line), _format_code(fmt), bits, constant, inter,
                       limit=limit)  # fmt: skip


# ---------------------------------------------------------------------------
# format detection

_SVM_TOKEN = re.compile(rb"(?:\d+|qid):\S+")
_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?i:nan|inf|infinity)")
_NON_WS = re.compile(rb"[^ \t\r\n]")


def detect_format(first_nonempty_line: bytes) -> int:
    """Guess the format of a file from its first non-empty line.

    svmlight when the line has no ``|``, starts with a number (the label) and
    every further token looks like ``index:value`` or ``qid:n`` (a ``#``
    comment aside); VW otherwise.  A line that is only a ``#`` comment is
    svmlight (VW has no comments).

    >>> detect_format(b"1 3:0.5 10:1 # x") == FMT_SVMLIGHT
    True
    >>> detect_format(b"1 |f 3:0.5") == FMT_VW
    True
    >>> detect_format(b"1 3:0.5 # from a|b") == FMT_SVMLIGHT
    True
    """
    line = first_nonempty_line
    if line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    if line.lstrip().startswith(b"#"):
        return FMT_SVMLIGHT
    line = line.split(b"#", 1)[0]  # a svmlight comment may hold anything, '|' too
    if b"|" in line:
        return FMT_VW
    tokens = line.split()
    if not tokens or not _NUMBER.fullmatch(tokens[0]):
        return FMT_VW
    if all(_SVM_TOKEN.fullmatch(t) for t in tokens[1:]):
        return FMT_SVMLIGHT
    return FMT_VW


def _first_nonempty_line(data: np.ndarray) -> bytes | None:
    raw = data.tobytes() if data.shape[0] <= 1 << 16 else data[: 1 << 16].tobytes()
    m = _NON_WS.search(raw)
    while m is None and len(raw) < data.shape[0]:  # a long run of blank lines
        raw = data.tobytes()
        m = _NON_WS.search(raw)
    if m is None:
        return None
    start = raw.rfind(b"\n", 0, m.start()) + 1
    end = raw.find(b"\n", m.start())
    if end < 0:
        if len(raw) < data.shape[0]:
            raw = data.tobytes()
            end = raw.find(b"\n", m.start())
        end = len(raw) if end < 0 else end
    return raw[start:end]


def _format_code(fmt: str | int) -> int:
    if isinstance(fmt, int) and fmt in FORMATS.values():
        return fmt
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: expected 'auto', 'vw' or 'svmlight'")
    return FORMATS[fmt]


def read_batches(
    sources: Sequence[str],
    fmt: str = "auto",
    bits: int = 18,
    constant: bool = True,
    block_size: int = BLOCK_SIZE,
    workers: int = 1,
    inter: Interactions | None = None,
    max_line: int = MAX_LINE_BYTES,
) -> Iterator[Batch]:
    """Parse ``sources`` into batches, one per block (blocks with no example are skipped).

    Parameters
    ----------
    sources : sequence of str
        Paths or ``'-'`` (stdin); empty means stdin.  See :func:`iter_blocks`.
    fmt : {'auto', 'vw', 'svmlight'}
        ``'auto'`` applies :func:`detect_format` to the first non-empty line of
        the stream and keeps that format for every source.
    bits, constant
        See :func:`parse_block`.
    block_size : int
        Bytes per block read.
    inter : Interactions or None
        See :func:`parse_block`.
    max_line : int
        The longest line read; a longer one is a malformed row (see
        :func:`~streamlearn.io.reader.iter_blocks`).
    workers : int
        Blocks parsed at once on threads (the kernel releases the GIL); batches
        still come out in input order, and at most ``workers + 1`` blocks are in
        flight.

    Raises
    ------
    InputError
        A source cannot be read (raised before any batch for a missing file).
    """
    if fmt != "auto":
        code: int | None = _format_code(fmt)
    else:
        code = None
    if not 1 <= bits <= 32:
        raise ValueError(f"bits must be in 1..32, got {bits}")
    if workers <= 1:
        yield from parse_blocks(iter_blocks(sources, block_size, max_line), code, bits, constant,
                                inter)  # fmt: skip
        return
    pending: deque[Future] = deque()
    with ThreadPoolExecutor(workers, thread_name_prefix="sl-parse") as pool:
        try:
            for block in iter_blocks(sources, block_size, max_line):
                if code is None:
                    code = _detect(block)
                    if code is None:
                        if block.long_lines:  # its long lines are reported all the same
                            pending.append(pool.submit(lambda b=block: (_undecided(b, bits), None)))
                        continue
                pending.append(pool.submit(parse_block_parts, block, code, bits, constant, inter))
                # a block from a paused live input goes on at once, with those before it
                while len(pending) > (0 if block.live else workers):
                    yield from _whole(pending.popleft().result())
            while pending:
                yield from _whole(pending.popleft().result())
        finally:
            for f in pending:
                f.cancel()


def parse_blocks(blocks: Iterable[Block], code: int | None, bits: int, constant: bool = True,
                 inter: Interactions | None = None) -> Iterator[Batch]:  # fmt: skip
    """Parse ``blocks`` one after the other (:func:`parse_block`), skipping empty batches.

    ``code`` is the format's code, or None to detect it from the first non-empty
    line (then kept for every block), as :func:`read_batches` does with one worker.
    """
    for block in blocks:
        if code is None:
            code = _detect(block)
            if code is None:  # only blank lines so far: nothing to parse
                if block.long_lines:  # but long lines to report
                    yield _undecided(block, bits)
                continue
        yield from _whole(parse_block_parts(block, code, bits, constant, inter))


def _whole(parts: tuple[Batch, Rest | None]) -> Iterator[Batch]:
    """The non-empty batches of a parsed block (:func:`parse_block_parts`), in order."""
    first, rest = parts
    if first.n:
        yield first
    if rest is not None:
        for batch in rest():
            if batch.n:
                yield batch


def _undecided(block: Block, bits: int) -> Batch:
    """The rows of a block of blank and skipped long lines, before the format is known.

    Its only rows are the long lines' (malformed in any format); ``fmt`` stays
    unknown (-1), so that the format is decided by the first line read.
    """
    return dataclasses.replace(parse_block(block, FMT_VW, bits, False), fmt=-1)


def _detect(block: Block) -> int | None:
    first = _first_nonempty_line(block.data)
    return None if first is None else detect_format(first)


# ---------------------------------------------------------------------------
# messages

_EXCERPT = 60


def _line_bounds(batch: Batch, i: int) -> tuple[int, int] | None:
    data = batch.block.data
    if batch.line_start is not None:
        start = int(batch.line_start[i])
    else:  # e.g. a batch rebuilt without line offsets: count newlines
        nl = np.flatnonzero(data == 10)
        target = int(batch.line[i]) - batch.block.first_line
        if not 0 <= target <= nl.shape[0]:
            return None  # block.data is not the batch's text
        start = 0 if target == 0 else int(nl[target - 1]) + 1
    end = start
    rest = data[start:]
    hits = np.flatnonzero(rest[: 1 << 16] == 10)
    if hits.size:
        end = start + int(hits[0])
    else:
        more = np.flatnonzero(rest == 10)
        end = start + int(more[0]) if more.size else data.shape[0]
    return start, end


def excerpt(batch: Batch, i: int, width: int = _EXCERPT) -> str:
    """Up to ``width`` bytes of row ``i``'s line, around the error when known.

    Shown with :func:`~streamlearn.system.text.shown_bytes`: a line holding
    terminal escapes (``ESC]0;...``) or bytes that are not UTF-8 is shown
    escaped (``\\x1b]0;...``, ``\\xff``), never obeyed by the terminal.
    """
    if batch.status[i] == LONG_LINE:
        for line, length, head in batch.block.long_lines:
            if line == batch.line[i]:
                return f"{shown_bytes(head[: width - 3])}... ({length:,} bytes)"
        return "(a long line)"
    bounds = _line_bounds(batch, i)
    if bounds is None:
        return "(line text not available)"
    start, end = bounds
    raw = batch.block.data[start:end].tobytes().rstrip(b"\r")
    if len(raw) <= width:
        return shown_bytes(raw)
    at = -1
    if batch.err_pos is not None and batch.err_pos[i] >= 0:
        at = int(batch.err_pos[i]) - start
    if at < width - 20:
        return shown_bytes(raw[: width - 3]) + "..."
    lo = at - 20
    hi = min(len(raw), lo + width - 6)
    tail = "..." if hi < len(raw) else ""
    return "..." + shown_bytes(raw[lo:hi]) + tail


def describe_errors(batch: Batch, limit: int = 10) -> list[str]:
    """``file:line: reason: excerpt`` for the first ``limit`` malformed rows.

    >>> from streamlearn.io import parse_bytes
    >>> describe_errors(parse_bytes(b"1 |f a\\nx |f a:1:2\\n", source="d.vw"))
    ['d.vw:2: bad label (not a number): x |f a:1:2']
    """
    out = []
    for i in np.flatnonzero(batch.status != 0)[: max(limit, 0)]:
        code = int(batch.status[i])
        reason = REASONS.get(code, f"error {code}")
        out.append(f"{batch.block.source}:{int(batch.line[i])}: {reason}: {excerpt(batch, i)}")
    return out
