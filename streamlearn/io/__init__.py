"""Streaming input: sources to blocks of lines to batches of hashed examples.

The pipeline (DESIGN.md section 1)::

    iter_blocks(sources)  ->  Block  ->  parse_block(block, fmt, bits)  ->  Batch

:func:`read_batches` chains the two and detects the format.  Formats and
their differences from VW are described in ``docs/input-formats.md``; VW's CSV
(``--csv``) is :mod:`streamlearn.io.csv`.  Labels other than VW's simple one are
read after the parse (:mod:`streamlearn.io.labels`, the hook): names
(:mod:`streamlearn.io.named`), cost-sensitive rows (:mod:`streamlearn.io.cslabels`),
multilabel rows (:mod:`streamlearn.io.multilabels`).
"""

from __future__ import annotations

from streamlearn.io.batch import OK, REASONS, Batch, Block
from streamlearn.io.parse import (
    FMT_SVMLIGHT,
    FMT_VW,
    FORMATS,
    describe_errors,
    detect_format,
    excerpt,
    parse_block,
    parse_bytes,
    read_batches,
)
from streamlearn.io.reader import InputError, iter_blocks

__all__ = [
    "FMT_SVMLIGHT",
    "FMT_VW",
    "FORMATS",
    "OK",
    "REASONS",
    "Batch",
    "Block",
    "InputError",
    "describe_errors",
    "detect_format",
    "excerpt",
    "iter_blocks",
    "parse_block",
    "parse_bytes",
    "read_batches",
    "tags",
]


def tags(batch: Batch) -> list[bytes]:
    """The tag of every row as bytes (``b''`` when the row has none)."""
    data = batch.block.data
    return [
        data[a:b].tobytes()
        for a, b in zip(batch.tag_start.tolist(), batch.tag_end.tolist(), strict=True)
    ]
