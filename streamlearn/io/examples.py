"""Multiline examples made ready for a reduction: :class:`Part`, one block's examples.

The layer between the parser and the reductions (``--csoaa_ldf``, ``--cb_adf``,
``--cb_explore_adf``, ``--cb K``, ``--cbify_ldf``).  A block of whole examples
(:func:`~streamlearn.io.multiline.example_blocks`) is parsed with its label part left to
the label kernel (:func:`~streamlearn.io.multiline.parse_examples`), its shared line merged
into each action line (:func:`~streamlearn.io.multiline.merge_shared`); :func:`adf_part`
then reads each merged row's label and each example's logged action, and :func:`crossed`
appends the interactions.  (``--cb K``'s single lines become K action lines each in its
reduction: :func:`streamlearn.reductions.cb_adf.cb_part`.)

A :class:`Part` is what a reduction's step takes: the merged rows (CSR), per example its
logged action, cost and probability, per row its cost-sensitive label, the examples' tags
and line numbers, VW's feature counts, the malformed lines' messages, and where each row
came from (:class:`Source`, for ``--audit``).  Nothing here knows which reduction runs:
the caller says what it needs (``cb`` labels or cost-sensitive ones, how VW counts the
features).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from streamlearn.io.labels import ROW_SHARED
from streamlearn.io.multiline import Merged, cross_merged, row_labels


@dataclass
class Tags:
    """Each example's tag: a span of its block's bytes."""

    data: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __getitem__(self, e: int) -> bytes:
        return self.data[self.start[e] : self.end[e]].tobytes()


@dataclass
class Source:
    """Where a part's rows come from: the block's bytes, its first line number, and per
    row its line number and tag span (``--audit`` reads them)."""

    data: np.ndarray
    first_line: int
    row_line: np.ndarray
    tag_start: np.ndarray
    tag_end: np.ndarray
    head_line: np.ndarray  # per example: its first line (the shared one, if any)
    name: str = ""  # the source's name in messages (its path, <stdin>)


@dataclass
class Part:
    """One batch of multiline examples ready for a reduction (kept for later passes)."""

    mg: Merged
    chosen: np.ndarray
    cost: np.ndarray
    prob: np.ndarray
    lab_n: np.ndarray
    lab_cls: np.ndarray
    lab_cost: np.ndarray
    tags: Tags
    ex_lines: np.ndarray
    bad: list
    sub: np.ndarray | None = None  # each action line's weight window (--cb K), else 0
    feat_row: np.ndarray | None = None  # VW's "current features" of each example
    feat_total: np.ndarray | None = None  # what VW's total feature number adds for it
    legacy: object = None  # --cb_force_legacy: the label entries (run/cblegacy.py: Entries)
    src: Source | None = None  # the rows' text and tags (--audit reads them)


FEATURES_MERGED = "merged"
"""VW's total feature number: each example's merged rows (crosses included)."""
FEATURES_LINES = "lines"
"""cb_adf's update_statistics: each line once, the shared line with its constant."""
FEATURES_ACTIONS = "actions"
"""explore_eval's: the action lines' own features only."""


def parse_options(full, kind: int):  # noqa: ANN001, ANN201 - io.interactions.Interactions
    """The parse options of multiline input: ``full``'s without crosses or namespace
    filters (they come after the shared line is merged), the label part left to
    the label reader of ``kind``."""
    return dataclasses.replace(
        full, terms=full.terms[:0], lengths=full.lengths[:0], drop=np.zeros_like(full.drop),
        drop_linear=np.zeros_like(full.drop_linear), label_kind=kind,
    )  # fmt: skip


def errors_of(batch) -> list[str]:  # noqa: ANN001 - io.batch.Batch
    """The messages of ``batch``'s malformed lines (all of them)."""
    from streamlearn.io.parse import describe_errors

    return describe_errors(batch, limit=1 << 30) if (batch.status != 0).any() else []


def adf_part(ex, mg: Merged, cb: bool, features: str = FEATURES_MERGED) -> Part:  # noqa: ANN001
    """The :class:`Part` of parsed examples ``ex`` (:class:`~streamlearn.io.multiline.Examples`)
    and their merged rows ``mg``: with ``cb``, each example's logged action (VW throws on
    an example with two; sl skips it with its reason), else cost-sensitive rows;
    ``features``: how VW counts the example's features (:data:`FEATURES_MERGED`, ...)."""
    b = ex.batch
    lab = ex.labels
    rows = mg.row
    lab_n = np.empty(rows.shape[0], dtype=np.int64)
    lab_cls = np.empty(rows.shape[0], dtype=np.int64)
    lab_cost = np.empty(rows.shape[0])
    m = mg.act_ptr.shape[0] - 1
    chosen = np.full(m, -1, dtype=np.int64)
    cost = np.zeros(m)
    prob = np.ones(m)
    keep = np.ones(m, dtype=bool)
    row_labels(rows, mg.act_ptr, lab.ptr, lab.cls, lab.cost, lab.prob, cb, b.status, lab_n,
               lab_cls, lab_cost, chosen, cost, prob, keep)  # fmt: skip
    bad = errors_of(b)
    if not keep.all():
        mg, chosen, cost, prob, lab_n, lab_cls, lab_cost = drop(
            mg, keep, chosen, cost, prob, lab_n, lab_cls, lab_cost)  # fmt: skip
    data = b.block.data
    first_rows = mg.row[mg.act_ptr[:-1]] if mg.row.shape[0] else np.zeros(0, dtype=np.int64)
    shared_rows = ex.ex_ptr[mg.example] if hasattr(ex, "ex_ptr") else first_rows
    tags = Tags(data, b.tag_start[shared_rows], b.tag_end[shared_rows])
    feat_row = example_nnz(mg)
    feat_total = feat_row
    if features != FEATURES_MERGED:
        row_nnz = np.diff(b.indptr)
        own = example_sums(row_nnz[mg.row], mg.act_ptr)
        head = ex.ex_ptr[mg.example]
        has_shared = (ex.labels.flags[head] & ROW_SHARED) != 0
        feat_total = (own if features == FEATURES_ACTIONS
                      else own + np.where(has_shared, row_nnz[head], 0))  # fmt: skip
    src = Source(data, b.block.first_line, b.line[mg.row], b.tag_start[mg.row], b.tag_end[mg.row],
                 b.line[shared_rows], getattr(b.block, "source", ""))  # fmt: skip
    return Part(mg, chosen, cost, prob, lab_n, lab_cls, lab_cost, tags, b.line[shared_rows], bad,
                None, feat_row, feat_total, src=src)  # fmt: skip


def crossed(part: Part, full, bits: int) -> None:  # noqa: ANN001 - io.interactions.Interactions
    """``part.mg`` with its interactions; VW's feature counts take the crossed features."""
    before = part.mg
    part.mg = cross_merged(part.mg, full, bits)
    if part.mg is before or part.feat_row is None:
        return
    extra = example_nnz(part.mg) - example_nnz(before)
    same = part.feat_total is part.feat_row
    part.feat_row = part.feat_row + extra
    part.feat_total = part.feat_row if same else part.feat_total + extra


def example_sums(per_row: np.ndarray, act_ptr: np.ndarray) -> np.ndarray:
    """Each example's sum of ``per_row`` over its action rows."""
    c = np.concatenate([[0], np.cumsum(per_row, dtype=np.int64)])
    return c[act_ptr[1:]] - c[act_ptr[:-1]]


def example_nnz(mg: Merged) -> np.ndarray:
    """Each example's entries over its merged action rows."""
    return mg.indptr[mg.act_ptr[1:]] - mg.indptr[mg.act_ptr[:-1]]


def drop(mg: Merged, keep, chosen, cost, prob, lab_n, lab_cls, lab_cost):  # noqa: ANN001, ANN201
    """The examples of ``keep`` only."""
    sizes = np.diff(mg.act_ptr)
    row_keep = np.repeat(keep, sizes)
    nnz = np.diff(mg.indptr)
    ent_keep = np.repeat(row_keep, nnz)
    new = dataclasses.replace(
        mg, act_ptr=np.concatenate([[0], np.cumsum(sizes[keep])]).astype(np.int64),
        example=mg.example[keep], row=mg.row[row_keep],
        indptr=np.concatenate([[0], np.cumsum(nnz[row_keep])]).astype(np.int64),
        indices=mg.indices[ent_keep], values=mg.values[ent_keep],
    )  # fmt: skip
    return (new, chosen[keep], cost[keep], prob[keep], lab_n[row_keep], lab_cls[row_keep],
            lab_cost[row_keep])  # fmt: skip
