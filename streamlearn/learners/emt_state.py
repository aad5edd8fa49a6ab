"""What a ``--emt`` run keeps between its kernel's calls (:class:`State`): VW's eigen memory
tree (``reductions/eigen_memory_tree.cc``) walked as VW walks it, its memories' features in
one pool and the scoring, scorer learning and splitting in the kernels of
:mod:`streamlearn.learners.emt` (which say what they compute).

Per example (:meth:`State.example`): flatten it; route it from the root (``a·w <
decision``: left) to its leaf; predict the label of the best-scored memory there (0 in an
empty leaf; that memory moves to the front of the LRU bound); when it learns, the scorer
learns at the leaf, the example is stored unless a memory there has its features, the
bound (``--emt_tree N``: the N most recently used memories; 0 none) drops its least
recently used memory, and a leaf of more than ``--emt_leaf`` memories splits.  Plain
Python and numpy apart from the kernels.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from streamlearn.learners import emt as K
from streamlearn.learners.base import G_N, G_T, P_LEARN, P_PROGRESS

SCORERS = {"random": K.RANDOM, "distance": K.DISTANCE, "self_consistent_rank": K.SELF,
           "not_self_consistent_rank": K.NOT_SELF}  # fmt: skip
INITIALS = {"euclidean": K.EUCLIDEAN, "gaussian": K.GAUSSIAN, "cosine": K.COSINE,
            "none": K.NONE}  # fmt: skip
ROUTERS = {"random": K.ROUTE_RANDOM, "eigen": K.ROUTE_EIGEN}


class Node:
    """A leaf (its memories, in VW's order) or an internal node (router and children)."""

    __slots__ = ("decision", "left", "right", "wi", "wv", "mem")

    def __init__(self) -> None:
        self.decision = 0.0
        self.left: Node | None = None
        self.right: Node | None = None
        self.wi = np.zeros(0, dtype=np.int64)
        self.wv = np.zeros(0, dtype=np.float32)
        self.mem: list[int] = []


class State:
    """The tree, its memories and VW's generator."""

    def __init__(self, leaf: int, scorer: str, router: str, initial: str, bound: int,
                 seed: int) -> None:  # fmt: skip
        self.leaf = leaf
        self.scorer = SCORERS[scorer]
        self.router = ROUTERS[router]
        self.initial = INITIALS[initial]
        self.bound = bound
        self.rng = np.array([seed & (2**64 - 1)], dtype=np.uint64)
        self.root = Node()
        self.lru: OrderedDict[int, None] = OrderedDict()  # (its end: VW's front)
        self.pool_i = np.zeros(1024, dtype=np.int64)
        self.pool_v = np.zeros(1024, dtype=np.float32)
        self.used = 0
        self.m_lo = np.zeros(64, dtype=np.int64)
        self.m_hi = np.zeros(64, dtype=np.int64)
        self.m_label = np.zeros(64, dtype=np.int64)
        self.free: list[int] = list(range(63, -1, -1))
        self.live = 0
        self.oi = np.zeros(64, dtype=np.int64)
        self.ov = np.zeros(64, dtype=np.float32)
        self.scores = np.zeros(64, dtype=np.float32)
        self.errors = 0

    # -- memories -------------------------------------------------------------------
    def _room(self, nnz: int) -> None:
        if self.used + nnz > self.pool_i.shape[0]:
            if self._live_nnz() + nnz <= self.pool_i.shape[0] // 2:
                self._compact()
            else:
                size = max(2 * self.pool_i.shape[0], self.used + nnz)
                self.pool_i = np.resize(self.pool_i, size)
                self.pool_v = np.resize(self.pool_v, size)
        if not self.free:
            n = self.m_lo.shape[0]
            for name in ("m_lo", "m_hi", "m_label"):
                setattr(self, name, np.resize(getattr(self, name), 2 * n))
            self.free = list(range(2 * n - 1, n - 1, -1))
        if self.oi.shape[0] < 2 * nnz + 2:
            self.oi = np.zeros(4 * nnz + 4, dtype=np.int64)
            self.ov = np.zeros(4 * nnz + 4, dtype=np.float32)

    def _memories(self) -> list[int]:
        out: list[int] = []
        stack = [self.root]
        while stack:
            cn = stack.pop()
            if cn.left is not None:
                stack += [cn.right, cn.left]
            else:
                out += cn.mem
        return out

    def _live_nnz(self) -> int:
        return int(sum(self.m_hi[m] - self.m_lo[m] for m in self._memories()))

    def _compact(self) -> None:
        """The pool rewritten with only the stored memories' features."""
        new_i = np.zeros_like(self.pool_i)
        new_v = np.zeros_like(self.pool_v)
        at = 0
        for m in self._memories():
            lo, hi = int(self.m_lo[m]), int(self.m_hi[m])
            new_i[at : at + hi - lo] = self.pool_i[lo:hi]
            new_v[at : at + hi - lo] = self.pool_v[lo:hi]
            self.m_lo[m], self.m_hi[m] = at, at + hi - lo
            at += hi - lo
        self.pool_i, self.pool_v, self.used = new_i, new_v, at

    def _query(self, indices, values, lo: int, hi: int, label: int) -> int:  # noqa: ANN001
        self._room(hi - lo)
        q = self.free.pop()
        end = K.flatten(indices, values, lo, hi, self.pool_i, self.pool_v, self.used)
        self.m_lo[q], self.m_hi[q], self.m_label[q] = self.used, end, label
        self.used = int(end)
        return q

    def _drop(self, q: int) -> None:
        """The query not stored: its id and (at the pool's end) its features freed."""
        if self.m_hi[q] == self.used:
            self.used = int(self.m_lo[q])
        self.free.append(q)

    # -- the tree -------------------------------------------------------------------
    def _route(self, q: int) -> Node:
        cn = self.root
        while cn.left is not None:
            p = K.project(q, self.pool_i, self.pool_v, self.m_lo, self.m_hi, cn.wi, cn.wv)
            cn = cn.left if p < cn.decision else cn.right
        return cn

    def _bound(self, m: int) -> None:
        """VW's ``tree_bound``: ``m`` most recently used; the least one beyond the bound
        leaves the tree."""
        if self.bound == 0:
            return
        if m in self.lru:
            self.lru.move_to_end(m)
        else:
            self.lru[m] = None
        if len(self.lru) > self.bound:
            gone, _ = self.lru.popitem(last=False)
            cn = self._route(gone)
            if gone in cn.mem:
                cn.mem.remove(gone)
                self.free.append(gone)

    def _split(self, cn: Node) -> None:
        if len(cn.mem) <= self.leaf:
            return
        mem = np.array(cn.mem, dtype=np.int64)
        left = np.zeros(mem.shape[0], dtype=np.bool_)
        cn.wi, cn.wv, cn.decision = K.router(mem, self.router, self.pool_i, self.pool_v,
                                             self.m_lo, self.m_hi, self.rng, left)  # fmt: skip
        cn.decision = float(cn.decision)
        cn.left, cn.right = Node(), Node()
        for m, go_left in zip(cn.mem, left.tolist(), strict=True):
            (cn.left if go_left else cn.right).mem.append(m)
        cn.mem = []

    def example(self, table, gstate, params, loss_id, indices, values, lo, hi, y, a,  # noqa: ANN001, PLR0913
                learn: bool) -> int:  # fmt: skip
        """One example (``learn``: VW's ``emt_learn``, else ``emt_predict``); its class."""
        label = int(y) if y == y else 0xFFFFFFFF
        q = self._query(indices, values, lo, hi, label)
        cn = self._route(q)
        mem = np.array(cn.mem, dtype=np.int64)
        if self.scores.shape[0] < mem.shape[0]:
            self.scores = np.zeros(2 * mem.shape[0], dtype=np.float32)
        best = int(K.pick(mem, self.scorer, self.initial, q, self.pool_i, self.pool_v,
                          self.m_lo, self.m_hi, table, gstate, params, loss_id, self.rng,
                          self.oi, self.ov))  # fmt: skip
        pred = int(self.m_label[best]) if best >= 0 else 0
        if best >= 0:
            self._bound(best)
        if not learn:
            cn.mem = mem.tolist()
            self._drop(q)
            return pred
        t = float(gstate[G_T])
        self.errors += int(K.learn_leaf(mem, self.scorer, self.initial, q, label, a, t,
                                        self.pool_i, self.pool_v, self.m_lo, self.m_hi,
                                        self.m_label, table, gstate, params, loss_id, self.rng,
                                        self.oi, self.ov, self.scores))  # fmt: skip
        cn.mem = mem.tolist()
        if K.duplicate(mem, q, self.pool_i, self.pool_v, self.m_lo, self.m_hi):
            self._drop(q)
        else:
            cn.mem.append(q)
            self._bound(q)
        self._split(cn)
        gstate[G_T] = t + a
        if a != 0.0:
            gstate[G_N] += 1.0
        return pred

    def batch(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001
              weights, status, stats, rows, preds) -> None:  # fmt: skip
        """The kernel contract's ``train_batch`` (``preds``: the class in column 0)."""
        progress = float(params[P_PROGRESS])
        may_learn = params[P_LEARN] != 0.0
        for i in range(indptr.shape[0] - 1):
            y = float(labels[i])
            if status[i] != 0:
                preds[i, :] = np.nan
                continue
            lo, hi = int(indptr[i]), int(indptr[i + 1])
            a = float(weights[i])
            labeled, holdout = K.begin(stats, params, y)
            learn = bool(labeled and not holdout and may_learn)
            pred = self.example(table, gstate, params, loss_id, indices, values, lo, hi, y, a,
                                learn)  # fmt: skip
            preds[i, :] = 0.0
            preds[i, 0] = pred
            K.account(stats, rows, float(pred), y, a, float(hi - lo), bool(labeled),
                      bool(holdout), progress)  # fmt: skip
