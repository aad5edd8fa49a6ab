"""Iterative parameter mixing: what averaging several learners' tables means, per learner.

Data-parallel training (:mod:`streamlearn.distributed.driver`) runs one learner per
worker on its shards; at every sync each worker's table is *settled* (every
lazy debt paid: ``spec.rebase`` brings each weight current through the last
step and resets the global sums, so a row holds its current weight and the
ledger stamps of a fresh start) and the tables are averaged, weighted by the
examples each worker learned since the last sync (McDonald, Hall & Mann 2010,
"Distributed training strategies for the structured perceptron", iterative
parameter mixing; VW's AllReduce averaging).  Every worker then continues
from the average.  Only stored rows travel (:class:`Rows`: the slots whose
weight -- or, for gd and ftrl, any accumulator -- is non-zero), never the
table.

Per learner:

``sgd``
    weights only: the weighted mean of the weights.
``tg``, ``fobos_l1``, ``fobos_l2``, ``fobos_enet``, ``sgd_elastic``
    the weighted mean of the settled weights; the ledger columns of each
    non-zero weight are the learner's ``stamp`` (what a rebase leaves), so
    they agree with the reset global sums every worker carries on with.
``gd`` (VW's adaptive, normalized, invariant update)
    the weighted mean of the settled weights (gravity and contraction folded
    in) and of the per-slot accumulators: the adaptive sum ``G_j``, the
    normalizer ``m_j`` and the last rate ``r_j``.  Each worker keeps its own
    normalizer sums and clock.
``ftrl``
    the weighted mean of ``z_j`` and ``n_j`` (FTRL's state is dual: the
    weight is a function of them), and the weight recomputed from the means
    exactly as the kernel computes it.

Refused (:func:`refusal`): ``l0`` (its heap of the K largest weights has no
mean), ``smidas`` (a dual θ mapped through the global norm ‖θ‖_p: the mean of
the workers' θ is not the dual of the mean weight), the mini-batch learners
and ``subgrad`` (gradients pending in a partial mini-batch at a sync), and
the batch learners ``cd``/``scd`` (they fit all the data in one process), and VW's
parameter-free learners ``coin``, ``pistol``, ``freegrad`` (no defined mean of their state).
One-against-all (``--oaa``) is refused by the driver.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.learners.base import (
    G_CLIP,
    G_LABEL_MAX,
    G_LABEL_MIN,
    P_FTRL_ALPHA,
    P_FTRL_BETA,
    P_L1,
    P_L2,
    LearnerSpec,
    stored_slots,
)

REFUSED = {
    "l0": "l0 keeps a heap of the K largest weights, which has no average",
    "smidas": "smidas learns a dual vector mapped through its global p-norm; "
    "the mean of the workers' duals is not the dual of the mean weights",
    "subgrad": "subgrad takes mini-batch steps, and a sync would fall inside a mini-batch",
    "minibatch": "mini-batch learners hold gradients pending until a mini-batch is full, "
    "and a sync would fall inside one",
    "cd": "cd is a batch learner: it fits all the data in memory in one process",
    "scd": "scd is a batch learner: it fits all the data in memory in one process",
    "coin": "coin bets each slot's wealth, and the mean of the workers' bets and wealth is "
    "not a bet any of them would make (VW has no such averaging either)",
    "pistol": "pistol's weights are a function of each worker's own sums and scales, whose "
    "mean is not defined by the algorithm",
    "freegrad": "freegrad's weights are a function of each worker's own sums, hints and "
    "global gradient norms, whose mean is not defined by the algorithm",
}


def refusal(algo: str, minibatch: int) -> str | None:
    """Why ``algo`` cannot be averaged across workers, or None when it can."""
    if algo in REFUSED:
        return REFUSED[algo]
    if minibatch > 1:
        return REFUSED["minibatch"]
    return None


@dataclass
class Rows:
    """The stored rows of a table: ``slots`` (uint32, sorted) and their ``state`` rows.

    What travels between the driver and the workers: O(non-zero slots), never
    O(2^b).  ``state`` keeps the table's dtype (float32 for gd and ftrl).
    """

    slots: np.ndarray
    state: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.slots.nbytes + self.state.nbytes)

    @classmethod
    def of(cls, table: np.ndarray, spec: LearnerSpec) -> Rows:
        slots = stored_slots(table, spec.stored_cols)
        return cls(slots, np.ascontiguousarray(table[slots]))

    def table(self, spec: LearnerSpec, bits: int) -> np.ndarray:
        """A fresh table of ``2**bits`` rows with these rows in place."""
        table = spec.new_table(bits)
        table[self.slots] = self.state
        return table


def average(spec: LearnerSpec, params: np.ndarray, parts: list[tuple[Rows, float]]) -> Rows:
    """The weighted mean of settled tables ``parts`` = [(rows, examples learned), ...].

    Every part must be settled (``spec.rebase`` run on its table).  A slot
    missing from a part counts as a fresh (all-zero) row there.  Parts with
    weight 0 are left out; with no weight at all, the first part is returned.

    >>> from streamlearn.learners import sgd
    >>> a = Rows(np.array([1, 2], np.uint32), np.array([[1.0], [2.0]]))
    >>> b = Rows(np.array([2, 5], np.uint32), np.array([[4.0], [3.0]]))
    >>> m = average(sgd.SPEC, np.zeros(24), [(a, 1.0), (b, 3.0)])
    >>> m.slots.tolist(), m.state[:, 0].tolist()
    ([1, 2, 5], [0.25, 3.5, 2.25])
    """
    parts = [(r, float(n)) for r, n in parts if n > 0]
    if not parts:
        raise ValueError("nothing to average")
    if len(parts) == 1:
        return parts[0][0]
    total = sum(n for _, n in parts)
    slots = np.unique(np.concatenate([r.slots for r, _ in parts]))
    acc = np.zeros((slots.shape[0], spec.ncols))
    for rows, n in parts:
        at = np.searchsorted(slots, rows.slots)
        acc[at] += (n / total) * rows.state.astype(np.float64)
    if spec.name == "ftrl":
        acc[:, 0] = ftrl_weights(acc[:, 1], acc[:, 2], params)
    elif spec.stored_cols == 1 and spec.ncols > 1:
        stamp = np.zeros(spec.ncols - 1)
        stamp[: len(spec.stamp)] = spec.stamp
        acc[:, 1:] = np.where(acc[:, :1] != 0.0, stamp, 0.0)
    state = acc.astype(spec.dtype)
    keep = (state[:, : spec.stored_cols] != 0).any(axis=1)
    return Rows(slots[keep].astype(np.uint32), np.ascontiguousarray(state[keep]))


def ftrl_weights(z: np.ndarray, n: np.ndarray, params: np.ndarray) -> np.ndarray:
    """FTRL's weight from its state, in float32 as :mod:`streamlearn.learners.ftrl` computes it."""
    f32 = np.float32
    alpha, beta = f32(params[P_FTRL_ALPHA]), f32(params[P_FTRL_BETA])
    l1, l2 = f32(params[P_L1]), f32(params[P_L2])
    z, n = z.astype(f32), n.astype(f32)
    sign = np.where(z <= 0, f32(-1.0), f32(1.0)).astype(f32)
    az = z * sign
    step = f32(1.0) / (l2 + (beta + np.sqrt(n)) / alpha)
    w = step * sign * (l1 - az)
    return np.where(az <= l1, f32(0.0), w).astype(np.float64)


def label_range(gstates: list[np.ndarray]) -> tuple[float, float] | None:
    """The union of the workers' prediction ranges (None while none has one)."""
    seen = [g for g in gstates if g[G_CLIP] != 0.0]
    if not seen:
        return None
    return min(g[G_LABEL_MIN] for g in seen), max(g[G_LABEL_MAX] for g in seen)


def share_label_range(gstates: list[np.ndarray]) -> None:
    """Give every worker the union of the prediction ranges (clipping stays global)."""
    both = label_range(gstates)
    if both is None:
        return
    for g in gstates:
        g[G_CLIP] = 1.0
        g[G_LABEL_MIN], g[G_LABEL_MAX] = both
