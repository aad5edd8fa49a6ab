"""Blocks of raw lines and the parsed batches the learners consume.

A :class:`Block` is a run of complete lines from one source.  Parsing a block
gives a :class:`Batch`: CSR arrays of hashed features plus per-line labels,
importance weights, bases, tags and a status code.  Learner kernels receive the
arrays of a whole batch at once (never one example at a time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Per-line status codes written by the parsers.  0 means the line is a usable
# example; anything else means the line is skipped whole and reported as
# ``file:line: REASONS[code]: <excerpt>``.
OK = 0
REASONS: dict[int, str] = {
    1: "bad label (not a number)",
    2: "bad importance weight",
    3: "negative importance weight",
    4: "bad base value",
    5: "more than three label tokens",
    6: "bad feature value",
    7: "non-finite value (nan or inf)",
    8: "empty feature name",
    9: "bad namespace scale",
    10: "bad feature index",
    11: "bad token",
    12: "too many colons in a feature",
    13: "empty namespace name",
    14: "bad qid",
    15: "number too large (magnitude above 1e18)",
    16: "label is not a class, an integer 0..K (--oaa K)",
    17: "a class label takes an importance weight but no base (--oaa)",
    18: "line longer than --max-line-bytes",
    19: "more crosses than --max-crosses",
    # labels other than the simple one (io/labels.py) and multiline examples (io/multiline.py)
    20: "bad label (class:cost or action:cost:probability expected)",
    21: "probability not in (0, 1], or below 1e-18 (its importance weight 1/p above 1e18)",
    22: "a cost without its probability (action:cost:probability)",
    23: "a second labeled line in one example (one line may have a cost)",
    24: "a shared line without action lines",
    25: "a shared line that is not the first of its example",
    26: "an example without action lines",
    27: "a logged action outside 1..K (--cb K)",
    28: "--eval: the policy's action, then a logged action:cost:probability expected",
    # VW's CSV (io/csv.py)
    30: "CSV line with another number of cells than the header",
    31: "CSV quotes: an unescaped quote in a quoted cell, or a quote left open",
    32: "empty CSV line",
    33: "label is not one of --named_labels",
    34: "multilabel label: classes are integers c1,c2,... (--multilabel_oaa K, at most K)",
    35: "a JSON line VW cannot read",
    # --ccb_explore_adf and --slates examples (io/ccblabels.py)
    40: "bad ccb/slates label (ccb shared|action|slot [a:cost:p,...] [ids], slates ...)",
    41: "a slot's logged action is not one of the example's (or its slot's) actions",
    42: "a ccb/slates example's lines out of order (shared, then actions, then slots)",
    43: "a ccb/slates example without its shared line first",
    44: "a ccb example with more slots than actions",
    45: "a slot's probabilities do not add up to 1",
    46: "a slates action's slot is not one of the example's slots",
    47: "a slot without its action:probability in a labeled slate (a cost on the shared line)",
}
TOO_LARGE = 15
CSV_CELLS = 30
CSV_QUOTES = 31
CSV_EMPTY = 32
MAX_MAGNITUDE = 1e18
MIN_PROBABILITY = 1.0 / MAX_MAGNITUDE
"""The smallest logged probability a contextual-bandit label may hold: its importance weight
1/p is bounded as an importance weight is (a probability of 1e-45 passed (0, 1] and made an
importance weight that overflowed the learner's state)."""
"""The largest magnitude of a label, importance weight, base, namespace scale or
feature value (after its scale) that a usable example may hold.

Learners square these numbers and add them up in their state, and VW's update
(``--algo gd``) keeps that state in float32, whose squares overflow above
~1.8e19: ``1 1e39 |f a`` put inf and NaN in gd's state, which then froze the
weights it touched for good.  1e18 leaves a factor of 340 below float32's
largest square; no real label, weight or value comes near it, and a line that
does is skipped and counted as a non-finite one is.  Products of such numbers
(an importance weight of 1e15 on a value of 1e15, crosses of large values) can
still overflow: training then stops with a non-finite state and writes no
model (``run.train.check_model``, exit 6), and ``model.load`` refuses a model
file holding one (exit 5).
"""
BAD_JSON = 35
"""Status of a JSON line the translation refused (:mod:`streamlearn.io.vwjson`; the excerpt
says why)."""
LONG_LINE = 18
"""Status of a line the reader skipped for its length (:data:`Block.long_lines`)."""
TOO_MANY_CROSSES = 19
"""Status of a line whose interactions would make more crosses than one example may
(:data:`streamlearn.io.interactions.MAX_CROSSES`)."""


@dataclass(frozen=True)
class Block:
    """Complete lines read from one source.

    Attributes
    ----------
    data : numpy.ndarray
        uint8 bytes of whole lines (each ends in ``\\n`` except perhaps the
        last line of the source).
    source : str
        Name shown in messages: the path, or ``<stdin>``.
    first_line : int
        1-based line number, within ``source``, of the first line in ``data``.
    live : bool
        Handed on because a live input (pipe, FIFO, terminal) paused: the
        stages after the reader pass it on at once instead of waiting for
        more blocks.
    newlines : int
        How many ``\\n`` bytes ``data`` holds, when the reader has counted
        them; -1 when unknown (the parser then counts).
    long_lines : tuple of (int, int, bytes)
        Lines the reader skipped for their length: (line number, length in
        bytes, the line's first bytes).  ``data`` holds an empty line in place
        of each; the parser makes it a malformed row (:data:`LONG_LINE`).
    dropped : int
        Bytes of the source that the block stands for but ``data`` does not
        hold (the skipped lines'): the source's bytes are ``len(data) + dropped``.
    """

    data: np.ndarray
    source: str
    first_line: int
    live: bool = False
    newlines: int = -1
    long_lines: tuple = ()
    dropped: int = 0


@dataclass
class Batch:
    """Parsed examples of one block, in CSR form.

    Every array has one entry per non-empty line of the block (``n`` rows),
    except ``indptr`` (``n + 1``) and ``indices``/``values`` (``nnz``).

    Attributes
    ----------
    labels : float64[n]
        Label, NaN when the line has none (prediction-only example).
    weights : float64[n]
        Importance weight (default 1).
    bases : float64[n]
        Base added to the prediction (default 0).
    tag_start, tag_end : int64[n]
        Byte span of the tag in ``block.data`` (equal when there is no tag).
    indptr : int64[n + 1]
    indices : uint32[nnz]
        Hashed slots, already masked to ``2**bits``.
    values : float64[nnz]
    status : int32[n]
        0 for a usable example, else a key of :data:`REASONS`.
    line : int64[n]
        1-based line number of each row within ``block.source``.
    block : Block
        The block the rows came from (for tags and error excerpts).
    n_touching_tags : int
        OK rows whose tag came from a token touching ``|`` without a quote
        (VW reads ``1|f a`` as an unlabeled example tagged ``1``): warn once.
    first_touching_tag_line : int
        Line number of the first such row (0 when none).
    line_start : int64[n] or None
        Byte offset in ``block.data`` where each row's line starts.
    err_pos : int64[n] or None
        Byte offset in ``block.data`` of the token that made a row malformed;
        -1 for usable rows.
    fmt : int
        The format the block was parsed as (``FMT_VW`` 0, ``FMT_SVMLIGHT`` 1;
        -1 when unknown).
    ns : uint8[nnz] or None
    """

    labels: np.ndarray
    weights: np.ndarray
    bases: np.ndarray
    tag_start: np.ndarray
    tag_end: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    status: np.ndarray
    line: np.ndarray
    block: Block
    n_touching_tags: int = 0
    first_touching_tag_line: int = 0
    line_start: np.ndarray | None = None
    err_pos: np.ndarray | None = None
    fmt: int = -1
    ns: np.ndarray | None = None
    """uint8[nnz]: each feature's namespace byte (128 the constant's), when the parser kept
    them (multiline examples merge and cross their rows after the parse)."""

    @property
    def n(self) -> int:
        return int(self.labels.shape[0])

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def head(self, m: int) -> Batch:
        """The batch of the first ``m`` rows (views of this one's arrays)."""
        import dataclasses

        if m >= self.n:
            return self
        nnz = int(self.indptr[m])
        rows = {
            name: getattr(self, name)[:m]
            for name in ("labels", "weights", "bases", "tag_start", "tag_end", "status", "line")
        }
        extra = {name: getattr(self, name)[:m] for name in ("line_start", "err_pos")
                 if getattr(self, name) is not None}  # fmt: skip
        if self.ns is not None:
            extra["ns"] = self.ns[:nnz]
        return dataclasses.replace(self, indptr=self.indptr[: m + 1], indices=self.indices[:nnz],
                                   values=self.values[:nnz], **rows, **extra)  # fmt: skip
