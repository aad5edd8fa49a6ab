"""The batch learners' driver (``--algo cd`` and ``--algo scd``).

The input is read once, through the same parser, checks and cache as an
online run, into a column-major copy (:class:`Columns`); the epochs then run
over it in memory (:mod:`streamlearn.learners.cd`).  Memory is bounded by the
input's non-zeros: the estimate is kept while reading and the run refuses
(exit 8) as soon as it would pass ``--max-memory``, before converting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from streamlearn.errors import OutOfMemory
from streamlearn.io.batch import Batch
from streamlearn.learners import cd
from streamlearn.learners.base import (
    G_CLIP,
    G_LABEL_MAX,
    G_LABEL_MIN,
    G_N,
    G_T,
    new_rows,
    new_stats,
)
from streamlearn.losses import LOGISTIC, SQUARED
from streamlearn.memory import gib

BYTES_PER_NONZERO = 48
"""Peak while converting: the row-major input (12), row numbers (8), the sort
order (8), the sorted slots, rows and values (20).  The columns then keep 16."""
BYTES_PER_ROW = 64
"""Label, importance, base, prediction, feature count, row number, and slack."""


@dataclass
class Columns:
    """The input in memory: usable rows, and per active slot its (row, value) pairs."""

    slots: np.ndarray  # uint32[ncols], ascending
    colptr: np.ndarray  # int64[ncols + 1]
    rows: np.ndarray  # int64[nnz]
    vals: np.ndarray  # float64[nnz]
    labels: np.ndarray  # float64[n], NaN when unlabeled
    weights: np.ndarray  # float64[n]
    bases: np.ndarray  # float64[n]
    nfeat: np.ndarray  # float64[n], features as read (for the report)

    @property
    def nbytes(self) -> int:
        return sum(
            x.nbytes for x in (self.slots, self.colptr, self.rows, self.vals, self.labels,
                               self.weights, self.bases, self.nfeat)
        )  # fmt: skip


def to_columns(
    indptr: np.ndarray, indices: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """CSR (rows of slots) to (slots, colptr, rows, values), duplicates in a row summed.

    >>> s, c, r, v = to_columns(np.array([0, 2, 3]), np.array([5, 5, 2], np.uint32),
    ...                         np.array([1.0, 2.0, 4.0]))
    >>> s.tolist(), c.tolist(), r.tolist(), v.tolist()
    ([2, 5], [0, 1, 2], [1, 0], [4.0, 3.0])
    """
    n = indptr.shape[0] - 1
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    order = np.argsort(indices, kind="stable")  # by slot, rows ascending within a slot
    slot = indices[order]
    row = row[order]
    vals = values[order]
    del order
    if slot.size:
        new = np.empty(slot.size, dtype=bool)
        new[0] = True
        np.not_equal(slot[1:], slot[:-1], out=new[1:])
        new[1:] |= row[1:] != row[:-1]
        starts = np.flatnonzero(new)
        vals = np.add.reduceat(vals, starts)
        slot = slot[starts]
        row = row[starts]
    first = np.ones(slot.size, dtype=bool)
    first[1:] = slot[1:] != slot[:-1]
    heads = np.flatnonzero(first)
    colptr = np.append(heads, slot.size).astype(np.int64)
    return slot[heads].astype(np.uint32), colptr, row, vals


def read(
    batches: Iterable[Batch], limit: int, on_batch: Callable[[Batch], None]
) -> Columns:
    """Every usable row of ``batches`` in memory, refused past ``limit`` bytes."""
    parts: list[tuple[np.ndarray, ...]] = []
    nnz = rows = 0
    for batch in batches:
        on_batch(batch)
        ok = batch.status == 0
        lengths = np.diff(batch.indptr)
        keep = np.repeat(ok, lengths)
        parts.append((
            lengths[ok], batch.indices[keep], batch.values[keep], batch.labels[ok],
            batch.weights[ok], batch.bases[ok],
        ))  # fmt: skip
        nnz += int(keep.sum())
        rows += int(ok.sum())
        need = nnz * BYTES_PER_NONZERO + rows * BYTES_PER_ROW
        if need > limit:
            raise OutOfMemory(
                f"the input does not fit in --max-memory {gib(limit)}: {rows:,} examples and "
                f"{nnz:,} non-zeros read so far need {gib(need)}; raise --max-memory, "
                "lower -b (fewer distinct features), or use an online --algo"
            )
    if parts:
        columns = (np.concatenate(x) for x in zip(*parts, strict=True))
        lengths, indices, values, labels, weights, bases = columns
    else:
        lengths = np.zeros(0, np.int64)
        indices, values = np.zeros(0, np.uint32), np.zeros(0)
        labels = weights = bases = np.zeros(0)
    del parts
    indptr = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    slots, colptr, r, v = to_columns(indptr, indices, values)
    return Columns(slots, colptr, r, v, labels, weights, bases, lengths.astype(np.float64))


@dataclass
class Fit:
    """What an epoch loop reports back to ``sl train``."""

    epochs: list[dict]
    objective: float
    converged: bool


def fit(
    data: Columns, table: np.ndarray, gstate: np.ndarray, stats: np.ndarray, *,
    method: int, loss_id: int, l1: float, l2: float, passes: int, tol: float, seed: int,
    say: Callable[[str], None],
) -> Fit:  # fmt: skip
    """Minimise F from the weights in ``table`` (a warm start, or zeros); write them back.

    ``stats`` is reset to the figures of the final weights over the data
    (each example scored once); ``gstate`` gets the clipping range and counts.
    """
    labeled = ~np.isnan(data.labels)
    targets = np.where(labeled, data.labels, 0.0)
    a = np.where(labeled, data.weights, 0.0)  # unlabeled rows weigh nothing in F
    W = float(a.sum())
    w = table[data.slots, 0].astype(np.float64)
    table[:, 0] = 0.0  # slots the data never touch: their optimum is 0
    p = data.bases.copy()
    cd.predictions(data.colptr, data.rows, data.vals, w, p)
    ncols = data.slots.shape[0]
    epochs: list[dict] = []
    converged = False
    F = np.nan
    squared = loss_id == SQUARED
    y = targets
    if squared:  # the kernel keeps residuals p − y, and values times importance
        p -= targets
        y = np.zeros_like(targets)
        avals = data.vals if (a == 1.0).all() else data.vals * a[data.rows]
    else:
        avals = data.vals
    if W > 0 and ncols > 0:
        inv_w = 1.0 / W
        hsq = cd.column_curvature(data.colptr, data.vals, data.rows, a, inv_w)
        longest = int(np.diff(data.colptr).max()) + 1
        kinks, incs = np.empty(longest), np.empty(longest)
        rng = np.random.default_rng(seed)
        F = cd.objective(loss_id, y, a, p, w, l1, l2, inv_w)
        say(f"{'epoch':>6} {'objective':>14} {'decrease':>11} {'non-zero':>9} {'seconds':>8}")
        say(f"{0:>6} {F:>14.8g} {'':>11} {np.count_nonzero(w):>9,} {0.0:>8.2f}")
        started = time.perf_counter()
        cyclic = np.arange(ncols, dtype=np.int64)
        for e in range(1, passes + 1):
            order = cyclic if method == cd.CYCLIC else rng.integers(0, ncols, ncols)
            cd.epoch(method, loss_id, order, data.colptr, data.rows, data.vals, avals, hsq, y,
                     a, p, w, l1, l2, inv_w, kinks, incs)  # fmt: skip
            before, F = F, cd.objective(loss_id, y, a, p, w, l1, l2, inv_w)
            nnz = int(np.count_nonzero(w))
            seconds = time.perf_counter() - started
            epochs.append({"epoch": e, "objective": F, "decrease": before - F,
                           "nonzero_weights": nnz, "seconds": seconds})  # fmt: skip
            converged = before - F <= tol * max(abs(F), 1e-300)
            if e & (e - 1) == 0 or converged or e == passes:  # epochs 1, 2, 4, 8, ... and the last
                say(f"{e:>6} {F:>14.8g} {before - F:>11.3g} {nnz:>9,} {seconds:>8.2f}")
            if converged:
                break
    if squared:
        p += targets
    table[data.slots, 0] = w
    _settle_counts(data.labels[labeled], a, W, gstate, loss_id)
    stats[:] = new_stats()
    cd.account_all(stats, new_rows(), loss_id, p, data.labels, data.weights, data.nfeat)
    return Fit(epochs, float(F), converged)


def _settle_counts(
    labels: np.ndarray, a: np.ndarray, W: float, gstate: np.ndarray, loss_id: int
) -> None:
    """The clipping range an online run would end with, and the learned counts.

    ``labels``: the data's labels; ``a``: each row's importance in F (0 unlabeled), W its sum.
    """
    if gstate[G_CLIP] == 0.0:
        edge = 50.0 if loss_id == LOGISTIC else 0.0
        gstate[G_CLIP] = 1.0
        gstate[G_LABEL_MIN], gstate[G_LABEL_MAX] = -edge, edge
    if labels.size:
        gstate[G_LABEL_MIN] = min(gstate[G_LABEL_MIN], float(labels.min()))
        gstate[G_LABEL_MAX] = max(gstate[G_LABEL_MAX], float(labels.max()))
    gstate[G_T] += W
    gstate[G_N] += float(np.count_nonzero(a))
