"""The batch learners' driver (``--algo cd`` and ``--algo scd``).

The input is read once, through the same parser, checks and cache as an
online run, into a column-major copy (:class:`Columns`); the epochs then run
over it in memory (:mod:`streamlearn.learners.cd`; ``cd`` with logistic loss:
:mod:`streamlearn.learners.glmnet`).  Memory is bounded by the
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
from streamlearn.learners.losses import LOGISTIC, SQUARED, WIDE_RANGE
from streamlearn.system.memory import gib

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
    unmet: str = ""
    """The stopping rule, as a note says it when ``converged`` is False (then "--tol x")."""


def fit(
    data: Columns, table: np.ndarray, gstate: np.ndarray, stats: np.ndarray, *,
    method: int, loss_id: int, l1: float, l2: float, passes: int, tol: float, seed: int,
    say: Callable[[str], None], active_set: bool = True,
) -> Fit:  # fmt: skip
    """Minimise F from the weights in ``table`` (a warm start, or zeros); write them back.

    ``stats`` is reset to the figures of the final weights over the data
    (each example scored once); ``gstate`` gets the clipping range and counts.
    ``active_set=False`` makes ``cd`` sweep every column every epoch and stop
    on the decrease (its first version, kept for comparisons); ``scd`` never
    uses an active set.
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
    converged = False
    F = np.nan
    log = _Log(say)
    squared = loss_id == SQUARED
    y = targets
    if squared:  # the kernel keeps residuals p − y, and values times importance
        p -= targets
        y = np.zeros_like(targets)
        avals = data.vals if (a == 1.0).all() else data.vals * a[data.rows]
    else:
        avals = data.vals
    newton = method == cd.CYCLIC and active_set and loss_id == LOGISTIC
    if method == cd.CYCLIC and active_set and squared and (l1 > 0 or l2 > 0):
        unmet = "the duality gap still above"
    elif newton:
        unmet = "the minimum-norm subgradient still above"
    else:
        unmet = "the objective still falling by more than"
    if W > 0 and ncols > 0:
        inv_w = 1.0 / W
        hsq = np.zeros(0) if newton else cd.column_curvature(data.colptr, data.vals, data.rows,
                                                             a, inv_w)  # fmt: skip
        longest = int(np.diff(data.colptr).max()) + 1
        prob = _Problem(method, loss_id, data.colptr, data.rows, data.vals, avals, hsq, y, a,
                        p, w, l1, l2, inv_w, np.empty(longest), np.empty(longest))  # fmt: skip
        F = cd.objective(loss_id, y, a, p, w, l1, l2, inv_w)
        log.start(F, int(np.count_nonzero(w)))
        if newton:
            F, converged = _newton(prob, data.bases, F, passes, tol, seed, log)
        elif method == cd.CYCLIC and active_set:
            F, converged = _active_set(prob, F, passes, tol, log)
        else:
            F, converged = _every_column(prob, F, passes, tol, seed, log)
    if squared:
        p += targets
    table[data.slots, 0] = w
    _settle_counts(data.labels[labeled], a, W, gstate, loss_id)
    stats[:] = new_stats()
    cd.account_all(stats, new_rows(), loss_id, p, data.labels, data.weights, data.nfeat)
    return Fit(log.epochs, float(F), converged, unmet)


@dataclass
class _Problem:
    """The arrays a sweep works on (``p`` and ``w`` change in place)."""

    method: int
    loss_id: int
    colptr: np.ndarray
    rows: np.ndarray
    vals: np.ndarray
    avals: np.ndarray
    hsq: np.ndarray
    y: np.ndarray
    a: np.ndarray
    p: np.ndarray
    w: np.ndarray
    l1: float
    l2: float
    inv_w: float
    kinks: np.ndarray
    incs: np.ndarray

    def sweep(self, order: np.ndarray) -> tuple[float, float]:
        """One sweep over ``order``: the largest step, and (squared loss) the change of L."""
        return cd.epoch(self.method, self.loss_id, order, self.colptr, self.rows, self.vals,
                 self.avals, self.hsq, self.y, self.a, self.p, self.w, self.l1, self.l2,
                 self.inv_w, self.kinks, self.incs)  # fmt: skip

    def objective(self, support: np.ndarray) -> float:
        """F, the weights outside ``support`` being zero."""
        return cd.loss_part(self.loss_id, self.y, self.a, self.p, self.inv_w) + cd.penalty(
            support, self.w, self.l1, self.l2
        )

    def gap(self, order: np.ndarray, G: np.ndarray) -> float:
        """Squared loss: the duality gap (of the problem restricted to ``order``)."""
        cd.gradient(order, self.colptr, self.rows, self.avals, self.p, self.inv_w, G)
        L = cd.loss_part(self.loss_id, self.y, self.a, self.p, self.inv_w)
        return cd.duality_gap(order, G, self.w, L, self.l1, self.l2)


class _Log:
    """The epochs' records, and the progress table (epochs 1, 2, 4, ..., full sweeps, the last)."""

    def __init__(self, say: Callable[[str], None]):
        self.say = say
        self.epochs: list[dict] = []
        self.started = time.perf_counter()

    def start(self, F: float, nnz: int) -> None:
        self.say(f"{'epoch':>6} {'objective':>14} {'decrease':>11} {'non-zero':>9} "
                 f"{'columns':>9} {'gap|kkt':>9} {'seconds':>8}")  # fmt: skip
        self.say(f"{0:>6} {F:>14.8g} {'':>11} {nnz:>9,} {'':>9} {'':>9} {0.0:>8.2f}")
        self.started = time.perf_counter()

    def add(self, F: float, before: float, nnz: int, columns: int, full: bool,
            gap: float | None = None) -> dict:  # fmt: skip
        e = len(self.epochs) + 1
        rec = {"epoch": e, "objective": F, "decrease": before - F,
               "nonzero_weights": nnz, "columns": columns,
               "sweep": "full" if full else "active",
               "seconds": time.perf_counter() - self.started}  # fmt: skip
        if gap is not None:
            rec["gap"] = gap
        self.epochs.append(rec)
        return rec

    def show(self, rec: dict) -> None:
        stop = rec.get("gap", rec.get("kkt"))
        gap = f"{stop:>9.2g}" if stop is not None else f"{'':>9}"
        self.say(f"{rec['epoch']:>6} {rec['objective']:>14.8g} {rec['decrease']:>11.3g} "
                 f"{rec['nonzero_weights']:>9,} {rec['columns']:>9,} {gap} "
                 f"{rec['seconds']:>8.2f}")  # fmt: skip


def _every_column(
    prob: _Problem, F: float, passes: int, tol: float, seed: int, log: _Log
) -> tuple[float, bool]:
    """Every column each epoch (``scd``: as many uniform draws); stop on the decrease."""
    ncols = prob.w.shape[0]
    rng = np.random.default_rng(seed)
    cyclic = np.arange(ncols, dtype=np.int64)
    converged = False
    for e in range(1, passes + 1):
        order = cyclic if prob.method == cd.CYCLIC else rng.integers(0, ncols, ncols)
        prob.sweep(order)
        before, F = F, prob.objective(cyclic)
        rec = log.add(F, before, int(np.count_nonzero(prob.w)), ncols, True)
        converged = before - F <= tol * max(abs(F), 1e-300)
        if e & (e - 1) == 0 or converged or e == passes:
            log.show(rec)
        if converged:
            break
    return F, converged


GRAM_COLUMNS = 2048
"""Covariance updates for at most this many active columns (a 32 MiB Hessian) ..."""
GRAM_WORK = 64
"""... and when building it costs at most this many sweeps over the active columns."""
FLOOR = 1e-15
"""A sweep lowering F by less than this (relative) has hit the rounding floor."""
STALL = 16
"""Covariance sweeps at the floor whose restricted gap finds no new low before they stop."""
INEXACT = 0.1
"""Residual sweeps: each restricted problem is solved to this fraction of the last full gap."""
COVERING = 0.5
"""Residual sweeps: an active set with more than this share of the non-zeros sweeps them all."""
MAX_BACKOFF = 8
"""Residual sweeps: at most this many sweeps between two checks of the restricted gap."""


def _newton(
    prob: _Problem, base: np.ndarray, F: float, passes: int, tol: float, seed: int, log: _Log
) -> tuple[float, bool]:
    """``cd`` with logistic loss: newGLMNET (:mod:`streamlearn.learners.glmnet`).

    Each gradient pass ("full", with the stopping rule's ``kkt``: ‖v‖₁ relative
    to its value at w = 0) and each inner cycle over the quadratic model's
    columns ("active") is an epoch; an inner cycle's objective is F at the
    current weights, the last of each Newton iteration's after its line search.
    """
    from streamlearn.learners import glmnet

    last = [F, False]

    def sweep(value: float, nnz: int, columns: int, full: bool, kkt: float) -> None:
        rec = log.add(value, last[0], nnz, columns, full)
        if full:
            rec["kkt"] = kkt
        last[0] = value
        e = rec["epoch"]
        last[1] = full or e & (e - 1) == 0
        if last[1]:
            log.show(rec)

    F, converged = glmnet.solve(
        prob.colptr, prob.rows, prob.vals, prob.y, prob.a * prob.inv_w, base, prob.p, prob.w,
        l1=prob.l1, l2=prob.l2, tol=tol, passes=passes, seed=seed, sweep=sweep,
    )  # fmt: skip
    if log.epochs and not last[1]:
        log.show(log.epochs[-1])
    return F, converged


def _active_set(
    prob: _Problem, F: float, passes: int, tol: float, log: _Log
) -> tuple[float, bool]:
    """``cd`` with an active set (glmnet: Friedman, Hastie & Tibshirani 2010, section 2.6).

    A full sweep, then sweeps over the active columns only until they settle,
    then a full sweep again, and so on; every sweep is an epoch.

    Squared loss with l1 or l2 > 0: the full sweep is a KKT check that moves
    nothing: it computes every column's gradient and stops the run when the
    duality gap is at most ``tol`` × F (a certificate, F − F* ≤ gap: scikit-learn's
    rule); otherwise the active set is the non-zero weights and the zero ones
    whose gradient exceeds l1, and the active sweeps run until the gap of the
    problem restricted to them is at most ``tol`` × F / 2.  They use covariance
    updates when the active set is small (:func:`_gram_sweeps`); otherwise they
    keep the residuals (:func:`_active_sweeps`), solve a restricted problem only
    to a tenth of the last full gap (:data:`INEXACT`) when that gap was well above
    the previous restricted one (columns were missing from the active set, more
    may be), and when the active columns hold most
    of the non-zeros (:data:`COVERING`) sweep every column instead, as
    scikit-learn does.  A full sweep that finds
    neither F nor the gap lower than the previous one ends the run (the rounding
    floor: the gap can stay far above F − F*, see docs/algorithms.md).

    Hinge (logistic loss runs :func:`_newton` instead): the full sweep updates
    every column and the run stops when it lowers F by at most ``tol`` × F; the
    active set is the non-zero weights, and the active sweeps end when one lowers
    F by at most ``tol`` × F.
    """
    ncols = prob.w.shape[0]
    every = np.arange(ncols, dtype=np.int64)
    use_gap = prob.loss_id == SQUARED and (prob.l1 > 0 or prob.l2 > 0)
    G = np.zeros(ncols)
    last_F = last_gap = np.inf
    inner_gap = 0.0  # the first active set, from the start point, is the likeliest to miss
    hessian = _Hessian(prob)
    e = 0
    while e < passes:
        e += 1
        before = F
        if use_gap:
            gap = prob.gap(every, G)
            F = prob.objective(every)
            done = gap <= tol * abs(F) or (F >= last_F and gap >= last_gap)
            active = np.flatnonzero((prob.w != 0.0) | (np.abs(G) > prob.l1))
        else:
            gap = np.inf
            prob.sweep(every)
            F = prob.objective(every)
            done = before - F <= tol * max(abs(F), 1e-300) or F >= last_F
            active = np.flatnonzero(prob.w)
        log.show(log.add(F, before, int(np.count_nonzero(prob.w)), ncols, True,
                         gap if use_gap else None))  # fmt: skip
        if done or active.size == 0:
            return F, True
        last_F, last_gap = F, gap
        covariance = hessian.of(active) if use_gap else None
        if covariance is not None:  # a sweep costs ~|A|²: solve the restricted problem well
            e, F, inner_gap = _gram_sweeps(prob, *covariance, G, F, e, passes,
                                           0.5 * tol * abs(F), log)  # fmt: skip
            continue
        target = np.inf
        if use_gap:
            nnz_a = int((prob.colptr[active + 1] - prob.colptr[active]).sum())
            if nnz_a > COVERING * prob.rows.shape[0]:
                # restricting saves little, and each new violator would restart a long
                # solve: sweep every column, checking the (full) gap as it goes
                active, target = every, tol * abs(F)
            elif gap > 2 * inner_gap:  # columns outside A were missing: new ones may be too
                target = max(0.5 * tol * abs(F), INEXACT * gap)
            else:
                target = 0.5 * tol * abs(F)
        e, F, inner_gap = _active_sweeps(prob, active, G, F, e, passes, tol, target, log,
                                         use_gap)  # fmt: skip
    return F, False


class _Hessian:
    """The squared loss's Hessian over the active set, kept from one active set to the next."""

    def __init__(self, prob: _Problem):
        self.prob = prob
        self.columns = np.zeros(0, np.int64)
        self.Q = np.zeros((0, 0))

    def of(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(A, Q): the columns ``active``, most non-zeros first, and the Hessian over them,
        or None when covariance updates do not pay.

        Most non-zeros first: the pairs of frequent columns, most of the work of
        building Q, then fall in one corner of it, which stays in cache.
        """
        prob = self.prob
        n = prob.p.shape[0]
        if active.size > GRAM_COLUMNS:
            return None
        lengths = prob.colptr[active + 1] - prob.colptr[active]
        nnz = int(lengths.sum())
        if active.size * active.size > nnz:  # a covariance sweep would cost more than a plain one
            return None
        if cd.gram_cost(active, prob.colptr, prob.rows, n) / 2 > GRAM_WORK * nnz:
            return None
        active = active[np.argsort(-lengths, kind="stable")]
        old = np.full(active.size, -1, np.int64)  # row in the last Q, or new
        if self.columns.size:
            sorter = np.argsort(self.columns)
            known = self.columns[sorter]
            at = np.minimum(np.searchsorted(known, active), known.size - 1)
            hit = known[at] == active
            old[hit] = sorter[at[hit]]
        self.Q = cd.gram(active, old, self.Q, prob.colptr, prob.rows, prob.vals, prob.a, n,
                         2.0 * prob.inv_w)  # fmt: skip
        self.columns = active
        return active, self.Q


def _active_sweeps(
    prob: _Problem, active: np.ndarray, G: np.ndarray, F: float, e: int, passes: int,
    tol: float, target: float, log: _Log, use_gap: bool,
) -> tuple[int, float, float]:  # fmt: skip
    """Sweeps over ``active``, the residuals kept current (O(non-zeros of A) each).

    Without the gap: until a sweep lowers F by at most ``tol`` × F.  With it
    (squared loss), F follows the exact steps (``L`` summed step by step) and
    the restricted gap, a pass over A, is checked once a sweep lowers F by at
    most ``target`` (necessary, as F − F* ≤ gap, not sufficient), at growing
    intervals (up to :data:`MAX_BACKOFF` sweeps) while it fails; the sweeps end
    when it is at most ``target``, when nothing moves, or at the rounding floor.
    """
    next_check, backoff = e + 1, 1
    L = F - cd.penalty(active, prob.w, prob.l1, prob.l2)
    lowest, since = np.inf, 0
    while e < passes:
        e += 1
        before = F
        biggest, dL = prob.sweep(active)
        if use_gap:
            L += dL
            F = L + cd.penalty(active, prob.w, prob.l1, prob.l2)
        else:
            F = prob.objective(active)
        rec = log.add(F, before, int(np.count_nonzero(prob.w)), int(active.size),
                      active.size == prob.w.size)  # fmt: skip
        if use_gap:
            settled = before - F <= target or biggest == 0.0
        else:
            settled = before - F <= tol * max(abs(F), 1e-300) or biggest == 0.0
        floor = before - F <= FLOOR * abs(F)
        if use_gap and settled and biggest != 0.0 and (e >= next_check or floor):
            gap = rec["gap"] = prob.gap(active, G)
            lowest, since = (gap, 0) if gap < lowest else (lowest, since + 1)
            settled = gap <= target or (floor and since >= 2)
            backoff = min(2 * backoff, MAX_BACKOFF)
            next_check = e + backoff
        elif use_gap:
            settled = biggest == 0.0
        if e & (e - 1) == 0 or e == passes:
            log.show(rec)
        if settled:
            break
    return e, F, lowest


def _gram_sweeps(
    prob: _Problem, active: np.ndarray, Q: np.ndarray, G: np.ndarray, F: float, e: int,
    passes: int, target: float, log: _Log,
) -> tuple[int, float, float]:  # fmt: skip
    """Squared loss: sweeps over ``active`` with covariance updates, O(|A|) per coordinate.

    ``Q`` is the Hessian over the active columns and ``G`` holds every column's
    gradient at the current weights (the full sweep's).  The residuals are
    brought current once, after the last sweep.  The sweeps end when the
    restricted gap is at most ``target``, when nothing moves, or at the
    rounding floor: F lowered by less than :data:`FLOOR` and the gap without a
    new low in :data:`STALL` sweeps.
    """
    g = G[active]
    v = prob.w[active]
    v0 = v.copy()
    here = np.arange(active.size, dtype=np.int64)
    L = F - cd.penalty(here, v, prob.l1, prob.l2)
    lowest, since, gap = np.inf, 0, np.inf
    while e < passes:
        e += 1
        before = F
        dL, biggest = cd.gram_epoch(Q, g, v, prob.l1, prob.l2)
        L += dL
        F = L + cd.penalty(here, v, prob.l1, prob.l2)
        gap = cd.duality_gap(here, g, v, L, prob.l1, prob.l2)
        rec = log.add(F, before, int(np.count_nonzero(v)), int(active.size), False, gap)
        if e & (e - 1) == 0 or e == passes:
            log.show(rec)
        lowest, since = (gap, 0) if gap < lowest else (lowest, since + 1)
        floor = before - F <= FLOOR * abs(F) and since >= STALL
        if gap <= target or biggest == 0.0 or floor:
            break
    prob.w[active] = v
    cd.move(active, prob.colptr, prob.rows, prob.vals, v - v0, prob.p)
    return e, F, gap


def _settle_counts(
    labels: np.ndarray, a: np.ndarray, W: float, gstate: np.ndarray, loss_id: int
) -> None:
    """The clipping range an online run would end with, and the learned counts.

    ``labels``: the data's labels; ``a``: each row's importance in F (0 unlabeled), W its sum.
    """
    if gstate[G_CLIP] == 0.0:
        edge = 50.0 if loss_id in WIDE_RANGE else 0.0
        gstate[G_CLIP] = 1.0
        gstate[G_LABEL_MIN], gstate[G_LABEL_MAX] = -edge, edge
    if labels.size:
        gstate[G_LABEL_MIN] = min(gstate[G_LABEL_MIN], float(labels.min()))
        gstate[G_LABEL_MAX] = max(gstate[G_LABEL_MAX], float(labels.max()))
    gstate[G_T] += W
    gstate[G_N] += float(np.count_nonzero(a))
