"""Streaming input: sources to blocks of lines to batches of hashed examples.

The pipeline (DESIGN.md section 1)::

    iter_blocks(sources)  ->  Block  ->  parse_block(block, fmt, bits)  ->  Batch

:func:`read_batches` chains the two and detects the format.  Formats and
their differences from VW are described in ``docs/input-formats.md``; VW's CSV
(``--csv``) is :mod:`streamlearn.io.csv`.  Labels other than VW's simple one are
read after the parse (:mod:`streamlearn.io.labels`, the hook): names
(:mod:`streamlearn.io.named`), cost-sensitive rows (:mod:`streamlearn.io.cslabels`),
multilabel rows (:mod:`streamlearn.io.multilabels`).

:mod:`streamlearn.io.parse` picks the parser of a block's format
(:mod:`streamlearn.io.formats`): VW text, svmlight and CSV (:mod:`streamlearn.io.textparse`
over the kernels of :mod:`streamlearn.io.vw`, :mod:`streamlearn.io.svmlight`,
:mod:`streamlearn.io.csv`), VW's JSON and DSJSON translated to VW text first
(:mod:`streamlearn.io.vwjson`: the common lines by a kernel, :mod:`streamlearn.io.jsonfast`
over :mod:`streamlearn.io.jsonscan`'s tokens; the others in Python,
:mod:`streamlearn.io.jsonreader`, :mod:`streamlearn.io.jsondecode`,
:mod:`streamlearn.io.dsjson`).  VW's interactions and namespace filters: compiled from the
options by :mod:`streamlearn.io.interactions`, crossed by :mod:`streamlearn.io.crosses`'
kernels.

Multiline examples (the contextual bandits, ``--csoaa_ldf``): blocks that never split an
example, the shared line merged (:mod:`streamlearn.io.multiline`; in the order VW's
``shared_feature_merger`` appends it, and CCB's slot rows: :mod:`streamlearn.io.shared`),
made into the ``Part`` a reduction learns from (:mod:`streamlearn.io.examples`); their cache
(:mod:`streamlearn.io.example_cache`).  VW's model files: :mod:`streamlearn.io.vwmodel`,
:mod:`streamlearn.io.vwmodel_cb`; sl's parsed cache: :mod:`streamlearn.io.cache`.
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
