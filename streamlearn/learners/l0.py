"""L0-constrained SGD: a gradient step, then keep the K largest weights (Dhingra et al., Alg. 5).

Dense form, for a learned example t with importance a_t and rate η_t::

    w ← H_K(w − η_t a_t ∂ℓ(p_t, y_t) x_t)

where ``H_K`` keeps the K entries of largest ``|w_j|`` (ties to the smaller slot) and
sets every other entry to 0.  The constant's slot is an ordinary slot.

Lazy form: after H_K at most K weights are non-zero, and a step changes only the
example's slots, so the weights H_K may keep are the live ones (at most K) and the
example's.  The live slots sit in an indexed binary min-heap ordered by
``(|w_j|, -j)``, its root the weight H_K drops first.  Each live slot of the example is
re-keyed as soon as its weight moves (removed if it reached 0: every other key is
current while one is sifted), then its new non-zero slots are pushed and the root
popped (its weight set to 0) while more than K are live; a new slot below a full heap's
root is dropped without entering.  O(nnz log K) per example, never O(2^b), and never
more than K non-zero weights after an example.

State: per slot the weight and its heap position + 1 (0: not live), 16 bytes; the
heap (its size, then K + 1 slots) follows the common global state, so a saved model
resumes it exactly.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.base import (
    GSTATE_SIZE,
    P_QUANTILE_TAU,
    P_TOPK,
    LearnerSpec,
    row_span,
    score,
)
from streamlearn.learners.losses import dloss
from streamlearn.learners.schedules import advance
from streamlearn.learners.sgd import current_weights, rebase  # the weight is column 0
from streamlearn.system.jit import jit_inline, jit_noalloc

H_SIZE = GSTATE_SIZE
"""gstate[H_SIZE]: the number of live slots; gstate[H_SIZE + 1 + i]: heap entry i."""
H0 = GSTATE_SIZE + 1


@jit_inline
def _before(table, a, b):
    """Whether slot ``a`` goes before slot ``b``: smaller |w|, or equal and larger slot."""
    wa = abs(table[a, 0])
    wb = abs(table[b, 0])
    return wa < wb or (wa == wb and a > b)


@jit_inline
def _put(table, gstate, i, j):
    gstate[H0 + i] = j
    table[j, 1] = i + 1


@jit_inline
def _up(table, gstate, i):
    j = np.int64(gstate[H0 + i])
    while i > 0:
        parent = (i - 1) // 2
        q = np.int64(gstate[H0 + parent])
        if not _before(table, j, q):
            break
        _put(table, gstate, i, q)
        i = parent
    _put(table, gstate, i, j)


@jit_inline
def _down(table, gstate, i):
    n = np.int64(gstate[H_SIZE])
    j = np.int64(gstate[H0 + i])
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        cj = np.int64(gstate[H0 + c])
        if c + 1 < n:
            rj = np.int64(gstate[H0 + c + 1])
            if _before(table, rj, cj):
                c += 1
                cj = rj
        if not _before(table, cj, j):
            break
        _put(table, gstate, i, cj)
        i = c
    _put(table, gstate, i, j)


@jit_inline
def _remove(table, gstate, i):
    """Take heap entry ``i`` out (its slot's position is cleared; its weight is kept)."""
    n = np.int64(gstate[H_SIZE]) - 1
    j = np.int64(gstate[H0 + i])
    table[j, 1] = 0.0
    gstate[H_SIZE] = n
    if i != n:
        last = np.int64(gstate[H0 + n])
        _put(table, gstate, i, last)
        _up(table, gstate, i)
        _down(table, gstate, np.int64(table[last, 1]) - 1)


@jit_noalloc
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    K = np.int64(params[P_TOPK])
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        p = bases[i]
        for k in range(lo, hi):
            p += table[indices[k], 0] * values[k]
        p, learn = score(stats, rows, gstate, params, loss_id, p, y, a, hi - lo)
        preds[i] = p
        if not learn:
            continue
        g = advance(gstate, params, a) * a * dloss(loss_id, p, y, params[P_QUANTILE_TAU])
        if g == 0.0:
            continue
        # the step; a live slot is re-keyed (or leaves the heap at 0) as soon as its weight
        # moves, so that every other key in the heap is current while it is sifted
        for k in range(lo, hi):
            j = indices[k]
            table[j, 0] -= g * values[k]
            pos = np.int64(table[j, 1]) - 1
            if pos >= 0:
                if table[j, 0] == 0.0:
                    _remove(table, gstate, pos)
                else:
                    _up(table, gstate, pos)
                    _down(table, gstate, np.int64(table[j, 1]) - 1)
        # its new non-zero slots, then H_K: drop the root while more than K are live
        for k in range(lo, hi):
            j = indices[k]
            if table[j, 1] == 0.0 and table[j, 0] != 0.0:
                n = np.int64(gstate[H_SIZE])
                if n == K and _before(table, j, np.int64(gstate[H0])):
                    table[j, 0] = 0.0  # below a full heap's root: it would be popped at once
                    continue
                gstate[H_SIZE] = n + 1
                _put(table, gstate, n, j)
                _up(table, gstate, n)
                if n + 1 > K:
                    root = np.int64(gstate[H0])
                    _remove(table, gstate, 0)
                    table[root, 0] = 0.0


def init_gstate(params: np.ndarray) -> np.ndarray:
    """The common global state, then an empty heap of K + 1 entries."""
    return np.zeros(H0 + int(params[P_TOPK]) + 1)


def check_state(slots: np.ndarray, state: np.ndarray, gstate: np.ndarray, top_k: int,
                bits: int) -> None:  # fmt: skip
    """Raise ValueError unless a saved heap is one :func:`train_batch` can continue.

    The kernel indexes the table with the heap's entries and the heap with the
    table's positions (numba does not check bounds), so a model read from a file
    must hold a heap of at most K distinct stored slots, each slot's position
    pointing back at its entry, and no other position.
    """
    k = min(top_k, 1 << bits)
    if gstate.shape[0] != H0 + k + 1:
        raise ValueError(f"the l0 heap has {gstate.shape[0] - H0} entries, --top-k {k} needs "
                         f"{k + 1}")  # fmt: skip
    n = gstate[H_SIZE]
    if not (0 <= n <= k and n == int(n)):
        raise ValueError("the l0 heap's size is out of range")
    n = int(n)
    heap = gstate[H0 : H0 + n]
    pos = state[:, 1] if state.shape[1] > 1 else np.zeros(0)
    if state.shape[1] != 2 or not np.all((pos >= 0) & (pos <= n) & (pos == np.floor(pos))):
        raise ValueError("the l0 heap positions are out of range")
    at = np.searchsorted(slots, heap)
    inside = at < slots.shape[0]
    if not (np.all(heap == np.floor(heap)) and np.all(inside)
            and np.array_equal(slots[at[inside]], heap[inside])):  # fmt: skip
        raise ValueError("the l0 heap holds slots the model does not store")
    if not (np.array_equal(pos[at], np.arange(1, n + 1))
            and np.count_nonzero(pos) == n):  # fmt: skip
        raise ValueError("the l0 heap and its positions disagree")


SPEC = LearnerSpec(
    name="l0",
    ncols=2,
    fresh=(0.0, 0.0),
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=init_gstate,
)
