"""Blocks to batches: the parser of each format, format detection, the batch stream.

:func:`parse_block` turns one :class:`~streamlearn.io.batch.Block` into a
:class:`~streamlearn.io.batch.Batch`; :func:`parse_block_parts`, the dispatcher, picks
the parser by format: the block kernels for VW, svmlight and CSV text
(:mod:`streamlearn.io.textparse`), the JSON translator for JSON and DSJSON lines
(:mod:`streamlearn.io.vwjson`, whose VW text the kernels then parse).
:func:`read_batches` reads sources into batches, on parser threads if asked, detecting
the format from the first line (:func:`detect_format`); :func:`describe_errors` says
why rows are malformed.
"""

from __future__ import annotations

import dataclasses
import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from streamlearn.io.batch import LONG_LINE, MAX_MAGNITUDE, REASONS, Batch, Block
from streamlearn.io.crosses import CROSS_BUDGET
from streamlearn.io.flatbuffer import FlatText
from streamlearn.io.formats import FMT_DSJSON, FMT_JSON, FMT_SVMLIGHT, FMT_VW, FORMATS
from streamlearn.io.interactions import Interactions, compile_interactions
from streamlearn.io.reader import BLOCK_SIZE, MAX_LINE_BYTES, iter_blocks
from streamlearn.io.textparse import WORDS, Rest, parse_text_block
from streamlearn.system.text import shown_bytes


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
    return parse_text_block(block, fmt, bits, constant, inter, words, limit, budget)


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
    flatbuffer: FlatText | None = None,
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
    flatbuffer : FlatText or None
        The sources are VW's flatbuffer files, read as VW text
        (:mod:`streamlearn.io.flatbuffer`).

    Raises
    ------
    InputError
        A source cannot be read (raised before any batch for a missing file).
    """
    if flatbuffer is not None:
        code: int | None = FMT_VW
    elif fmt != "auto":
        code = _format_code(fmt)
    else:
        code = None
    if not 1 <= bits <= 32:
        raise ValueError(f"bits must be in 1..32, got {bits}")
    if workers <= 1:
        yield from parse_blocks(iter_blocks(sources, block_size, max_line, flatbuffer), code,
                                bits, constant, inter)  # fmt: skip
        return
    pending: deque[Future] = deque()
    with ThreadPoolExecutor(workers, thread_name_prefix="sl-parse") as pool:
        try:
            for block in iter_blocks(sources, block_size, max_line, flatbuffer):
                if code is None:
                    code = detect_block(block)
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
            code = detect_block(block)
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


def detect_block(block: Block) -> int | None:
    """The format of the first non-empty line of ``block`` (:func:`detect_format`); None
    when it holds only blank lines."""
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
