"""What a ``--memory_tree N`` run keeps between its kernel's calls (:class:`State`): VW's
contextual memory tree (``reductions/memory_tree.cc``) walked as VW walks it, with the
scoring, learning and flattening in the kernels of :mod:`streamlearn.learners.memory_tree`
(which say what they compute), VW's generator (``merand48``, seeded by ``--random_seed``)
drawn in VW's order.

Per example (:meth:`State.example`), VW's ``predict`` then (learning) ``learn``:

* **predict**: from the root down the routers (a clipped score below 0: left) to a leaf;
  the class of the memory there most similar to the example (``normalized_linear_prod``;
  with ``--learn_at_leaf`` from the second pass on, the scorer's raw score of their pair
  from that similarity), 0 in an empty leaf.
* **learn** (first pass): the example becomes a memory; ``--online``: one query (a node
  of its path drawn; a router learns from the reward of a subtree drawn, or the scorer
  from a memory of its leaf drawn); then it is inserted (each router on its path learns
  toward the side that balances its counts, VW's ``train_node``), a leaf of
  ``--leaf_example_multiplier``·log2 N memories splits while the tree has room, and
  ``--dream_repeats`` memories drawn from the tree are taken out and inserted again.
  Later passes query memory ``iter mod count`` and dream, storing nothing.

Memories keep their features grouped by namespace, in VW's order: a pair of them
(:func:`~streamlearn.learners.memory_tree.kprod`) sorts both examples' namespaces as signed
bytes, as VW's ``qsort`` does, which changes the order of later sums.  Plain Python and
numpy apart from the kernels.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import memory_tree as K
from streamlearn.learners.base import G_N, G_T, P_LEARN, P_PROGRESS
from streamlearn.learners.emt import account, begin

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)
_A = 0xEECE66D5DEECE66D
_C = 2147483647
_M64 = (1 << 64) - 1


class Memory:
    """An example as VW's memory tree keeps it: its row grouped by namespace (``ns`` signed
    bytes), its flattened features, sums of squares, label(s) and importance weight."""

    __slots__ = ("h", "v", "ns", "fi", "fv", "sq", "norm", "label", "labels", "weight")

    def __init__(self, h: np.ndarray, v: np.ndarray, ns: np.ndarray, step: int, mask: int,
                 label: int, labels: list[int], weight: float) -> None:  # fmt: skip
        first: dict[int, int] = {}
        for c in ns.tolist():
            first.setdefault(c, len(first))
        order = np.argsort(np.array([first[c] for c in ns.tolist()], dtype=np.int64),
                           kind="stable")  # fmt: skip
        self.h = np.ascontiguousarray(h[order], dtype=np.int64)
        self.v = np.ascontiguousarray(v[order], dtype=np.float32)
        self.ns = np.ascontiguousarray(ns[order], dtype=np.int64)
        sums: dict[int, np.float32] = {}
        for c, x in zip(self.ns.tolist(), self.v.tolist(), strict=True):
            sums[c] = F32(sums.get(c, F32(0.0)) + F32(x) * F32(x))
        total = F32(0.0)
        for c in sorted(sums):  # (VW computes it first behind its qsort of the namespaces)
            total = F32(total + sums[c])
        self.norm = total
        n = self.h.shape[0]
        fi = np.empty(n, dtype=np.int64)
        fv = np.empty(n, dtype=np.float32)
        end, sq = K.flatten(self.h, self.v, step, mask, fi, fv)
        self.fi, self.fv, self.sq = fi[:end].copy(), fv[:end].copy(), F32(sq)
        self.label = label
        self.labels = labels
        self.weight = weight

    def sort_namespaces(self) -> None:
        """VW's ``qsort`` of the example's namespaces (as signed bytes)."""
        order = np.argsort(self.ns, kind="stable")
        if np.any(order != np.arange(order.shape[0])):
            self.h, self.v, self.ns = self.h[order], self.v[order], self.ns[order]


def _div(a: float, b: float) -> float:
    """C's double division (inf or nan for a zero divisor)."""
    if b == 0.0:
        return math.nan if a == 0.0 or a != a else math.copysign(math.inf, a) * math.copysign(
            1.0, b)  # fmt: skip
    return a / b


def _log(x: float) -> float:
    """C's ``log`` (-inf at 0, nan below)."""
    if x == 0.0:
        return -math.inf
    if x < 0.0 or x != x:
        return math.nan
    return math.log(x)


def _sorted_overlap(a: list[int], b: list[int]) -> int:
    """VW's ``over_lap``: sorts both lists in place (when neither is empty), counts the
    labels they share."""
    if not a or not b:
        return 0
    a.sort()
    b.sort()
    i = j = n = 0
    while i < len(a) and j < len(b):
        if a[i] < b[j]:
            i += 1
        elif a[i] > b[j]:
            j += 1
        else:
            n, i, j = n + 1, i + 1, j + 1
    return n


def _f1(a: Memory, b: Memory) -> float:
    """VW's ``f1_score_for_two_examples`` (float32)."""
    k = F32(_sorted_overlap(a.labels, b.labels))
    v1 = F32(float(k) / (1e-7 + len(a.labels) * 1.0))
    v2 = F32(float(k) / (1e-7 + len(b.labels) * 1.0))
    if k == F32(0.0):
        return 0.0
    return float(F32(2.0) * (v1 * v2 / (v1 + v2)))


class State:
    """The tree (VW's ``node`` fields as lists), its memories and VW's generator."""

    def __init__(self, max_nodes: int, max_labels: int, multiplier: int, alpha: float,
                 dreams: int, learn_at_leaf: bool, oas: bool, dream_at_update: bool,
                 online: bool, seed: int, step: int, truncate: bool) -> None:  # fmt: skip
        self.max_nodes = max_nodes
        self.max_routers = max_nodes
        self.max_labels = max_labels
        self.max_leaf = int(multiplier * (math.log(max_nodes) / math.log(2))) if max_nodes else 0
        self.alpha = float(F32(alpha))
        self.dreams = dreams
        self.learn_at_leaf = learn_at_leaf
        self.oas = oas
        self.dream_at_update = dream_at_update
        self.online = online
        self.rng = seed & _M64
        self.step = step
        self.truncate = truncate
        self.internal = [-1]
        self.depth = [0]
        self.router = [0]
        self.left = [0]
        self.right = [0]
        self.parent = [0]
        self.nl = [0.001]
        self.nr = [0.001]
        self.leaf: list[list[int]] = [[]]
        self.routers_used = 1
        self.memories: list[Memory] = []
        self.iter = 0
        self.current_pass = 0
        self.max_depth = 0
        self.test_mode = False
        self.notes: list[str] = []
        self.scalar = 0.0
        self.t = 0.0  # (the learned weight before the example: gd's plain rates)
        self.fs = np.zeros(64, dtype=np.uint64)
        self.fv = np.zeros(64, dtype=np.float64)
        self.oh = np.zeros(64, dtype=np.int64)
        self.ov = np.zeros(64, dtype=np.float32)
        self.k = None  # (table, gstate, params, loss_id) of the batch being run

    # -- VW's generator and gd --------------------------------------------------------
    def _rand(self) -> F32:
        self.rng = (self.rng * _A + _C) & _M64
        return F32((self.rng >> 25) & 0x7FFFFF) * F32(2.0**-23)

    def _room(self, n: int) -> None:
        if self.fs.shape[0] < n:
            self.fs = np.zeros(2 * n, dtype=np.uint64)
            self.fv = np.zeros(2 * n, dtype=np.float64)
            self.oh = np.zeros(2 * n, dtype=np.int64)
            self.ov = np.zeros(2 * n, dtype=np.float32)

    def _score(self, h: np.ndarray, v: np.ndarray, c: int, initial: float = 0.0) -> tuple:
        table, gstate, params, loss_id = self.k
        return K.score(table, gstate, params, loss_id, h, v, c, self.step, initial,
                       self.truncate)  # fmt: skip

    def _predict(self, ec: Memory, c: int) -> float:
        """``base.predict(ec, c)``: its clipped score (the example's last, for ``-p``)."""
        s = float(self._score(ec.h, ec.v, c)[1])
        return s

    def _learn(self, h: np.ndarray, v: np.ndarray, c: int, y: float, w: float,
               initial: float = 0.0) -> None:  # fmt: skip
        if c >= self.step:  # (VW's problem past its width: another's state, not learned)
            return
        table, gstate, params, loss_id = self.k
        self._room(h.shape[0])
        K.learn(table, gstate, params, loss_id, h, v, c, self.step, initial, y, w, self.t,
                self.truncate, self.fs, self.fv)  # fmt: skip

    def _pair(self, ec: Memory, m: Memory) -> tuple[np.ndarray, np.ndarray]:
        """VW's ``diag_kronecker_product_test``: the pair's row; both examples' namespaces
        sorted after."""
        self._room(ec.h.shape[0])
        denom = F32(np.sqrt(F32(ec.norm * m.norm)))
        n = K.kprod(ec.h, ec.v, ec.ns, m.h, m.v, m.ns, denom, self.oh, self.ov)
        h, v = self.oh[:n].copy(), self.ov[:n].copy()
        ec.sort_namespaces()
        m.sort_namespaces()
        return h, v

    def _similarity(self, a: Memory, b: Memory) -> F32:
        return F32(K.similarity(a.fi, a.fv, a.sq, b.fi, b.fv, b.sq))

    # -- the tree --------------------------------------------------------------------
    def _new_leaf(self, parent: int, depth: int) -> int:
        self.internal.append(-1)
        self.depth.append(depth)
        self.router.append(self.routers_used)
        self.routers_used += 1
        self.left.append(0)
        self.right.append(0)
        self.parent.append(parent)
        self.nl.append(0.001)
        self.nr.append(0.001)
        self.leaf.append([])
        return len(self.internal) - 1

    def _descend(self, cn: int, pred: float) -> int:
        """VW's ``insert_descent``."""
        if pred < 0:
            self.nl[cn] += 1
            return self.left[cn]
        self.nr[cn] += 1
        return self.right[cn]

    def _train_node(self, ec: Memory, cn: int) -> float:
        """VW's ``train_node``: the router learns toward the side its counts favour."""
        c = self.router[cn]
        pred = self._predict(ec, c)
        a = self.alpha
        value = F32((1.0 - a) * _log(_div(self.nl[cn], self.nr[cn] + 1e-1)) / math.log(2.0)
                    + a * pred)  # fmt: skip
        self._learn(ec.h, ec.v, c, -1.0 if value < 0 else 1.0, 1.0)
        return self._predict(ec, c)

    def _split(self, cn: int) -> None:
        self.internal[cn] = 1
        d = self.depth[cn] + 1
        left = self._new_leaf(cn, d)
        right = self._new_leaf(cn, d)
        if d > self.max_depth:
            self.max_depth = d
            self.notes.append(f"depth {d}")
        self.left[cn], self.right[cn] = left, right
        for pos in self.leaf[cn]:
            m = self.memories[pos]
            side = left if self._predict(m, self.router[cn]) < 0 else right
            self.leaf[side].append(pos)
            self._descend(side, self._train_node(m, side))
        self.leaf[cn] = []
        self.nl[cn] = max(float(len(self.leaf[left])), 0.001)
        self.nr[cn] = max(float(len(self.leaf[right])), 0.001)

    def _leaf_labels(self, cn: int) -> list[int]:
        out: list[int] = []
        for pos in self.leaf[cn]:
            for lab in self.memories[pos].labels:
                if lab not in out:
                    out.append(lab)
        return out

    def _train_oas(self, cn: int, ec: Memory) -> None:
        """VW's ``train_one_against_some_at_leaf``."""
        for lab in self._leaf_labels(cn):
            y = 1.0 if lab in ec.labels else -1.0
            self._learn(ec.h, ec.v, self.max_routers + 1 + lab, y, ec.weight)

    def _nearest(self, cn: int, ec: Memory) -> int:
        """VW's ``pick_nearest``: the memory of leaf ``cn`` scored highest (-1: none)."""
        best = F32(-FLT_MAX)
        pos = -1
        for loc in self.leaf[cn]:
            m = self.memories[loc]
            if self.learn_at_leaf and self.current_pass >= 1:
                sim = self._similarity(ec, m)
                h, v = self._pair(ec, m)
                s = F32(self._score(h, v, self.max_routers, sim)[0])
            else:
                s = self._similarity(ec, m)
            if s > best:
                best, pos = s, loc
        return pos

    def _insert(self, idx: int) -> None:
        """VW's ``insert_example``."""
        ec = self.memories[idx]
        cn = 0
        while self.internal[cn] == 1:
            cn = self._descend(cn, self._train_node(ec, cn))
        if self.oas:
            self._train_oas(cn, ec)
        if self.internal[cn] == -1:
            self.leaf[cn].append(idx)
            self._descend(cn, self._train_node(ec, cn))
            if len(self.leaf[cn]) >= self.max_leaf and len(self.internal) + 2 <= self.max_nodes:
                self._split(cn)

    def _route(self, idx: int, insertion: bool) -> list[int]:
        """VW's ``route_to_leaf`` from the root: the path."""
        ec = self.memories[idx]
        cn = 0
        path = []
        while self.internal[cn] != -1:
            path.append(cn)
            pred = self._predict(ec, self.router[cn])
            if insertion:
                cn = self._descend(cn, pred)
            else:
                cn = self.left[cn] if pred < 0 else self.right[cn]
        path.append(cn)
        if insertion:
            self.leaf[cn].append(idx)
            if len(self.leaf[cn]) >= self.max_leaf and len(self.internal) + 2 < self.max_nodes:
                self._split(cn)
        return path

    def _reward(self, cn: int, ec: Memory, weight: float) -> float:
        """VW's ``return_reward_from_node``."""
        while self.internal[cn] != -1:
            cn = self.left[cn] if self._predict(ec, self.router[cn]) < 0 else self.right[cn]
        closest = self._nearest(cn, ec)
        reward = 0.0
        if closest != -1:
            m = self.memories[closest]
            if self.oas:
                reward = _f1(ec, m)
            elif m.label == ec.label:
                reward = 1.0
        if self.learn_at_leaf and closest != -1:
            m = self.memories[closest]
            sim = self._similarity(ec, m)
            h, v = self._pair(ec, m)
            self._learn(h, v, self.max_routers, reward, weight, float(-sim))
        if self.oas:
            self._train_oas(cn, ec)
        return reward

    def _leaf_random(self, cn: int, ec: Memory, weight: float) -> None:
        """VW's ``learn_at_leaf_random``."""
        if not self.leaf[cn]:
            return
        pos = int(self._rand() * F32(len(self.leaf[cn])))
        m = self.memories[self.leaf[cn][pos]]
        reward = 1.0 if self.oas or m.label == ec.label else 0.0  # (oas: VW's unset classes)
        sim = self._similarity(ec, m)
        h, v = self._pair(ec, m)
        self._learn(h, v, self.max_routers, reward, weight, float(-sim))

    def _query(self, idx: int) -> None:
        """VW's ``single_query_and_learn``."""
        ec = self.memories[idx]
        path = self._route(idx, False)
        if len(path) <= 1:
            return
        cn = path[int(self._rand() * F32(len(path)))]
        if self.internal[cn] != -1:
            coin = 1.0 if self._rand() < F32(0.5) else -1.0
            weight = float(F32(len(path)) / (F32(len(path)) - F32(1.0)))
            a = self.alpha
            balance = (1.0 - a) * _log(_div(self.nl[cn], self.nr[cn]))
            if coin == -1.0:
                r = self._reward(self.left[cn], ec, weight)
                objective = F32(balance + a * (-r / (1.0 - 0.5)) / 2.0)
            else:
                r = self._reward(self.right[cn], ec, weight)
                objective = F32(balance + a * (r / 0.5) / 2.0)
            w = abs(objective)
            w = F32(100.0) if w >= F32(100.0) else F32(0.01) if w < F32(0.01) else w
            self._learn(ec.h, ec.v, self.router[cn], -1.0 if objective < 0 else 1.0, float(w))
        else:
            if self.learn_at_leaf:
                self._leaf_random(cn, ec, 1.0)
            if self.oas:
                self._train_oas(cn, ec)

    def _pop(self) -> int:
        """VW's ``random_sample_example_pop``."""
        cn = 0
        while self.internal[cn] == 1:
            nl, nr = self.nl[cn], self.nr[cn]
            if nl < 1:
                go_left = False
            elif nr < 1:
                go_left = True
            else:
                go_left = float(self._rand()) < _div(nl * 1.0, nr + nl)
            if go_left:
                self.nl[cn] -= 1
                cn = self.left[cn]
            else:
                self.nr[cn] -= 1
                cn = self.right[cn]
        if self.leaf[cn]:
            loc = int(self._rand() * F32(len(self.leaf[cn])))
            return self.leaf[cn].pop(loc)
        return -1

    def _dream(self) -> None:
        """VW's ``experience_replay``."""
        idx = self._pop()
        if idx >= 0:
            if self.current_pass < 1 or self.dream_at_update:
                self._insert(idx)
            else:
                self._route(idx, True)

    # -- one example -----------------------------------------------------------------
    def predict(self, ec: Memory) -> tuple[int, float]:
        """VW's ``predict``: (the class, the example's last clipped score; oas: the
        Hamming loss for the class)."""
        self.scalar = 0.0
        cn = 0
        while self.internal[cn] == 1:
            pred = self._predict(ec, self.router[cn])
            self.scalar = pred
            cn = self.left[cn] if pred < 0 else self.right[cn]
        closest = self._nearest(cn, ec)
        if not self.oas:
            return (self.memories[closest].label if closest != -1 else 0), self.scalar
        if closest != -1:
            _f1(ec, self.memories[closest])
        chosen = []
        for lab in self._leaf_labels(cn):
            s = self._predict(ec, self.max_routers + 1 + lab)
            self.scalar = s
            if s > 0:
                chosen.append(lab)
        loss = len(ec.labels) + len(chosen) - 2 * _sorted_overlap(ec.labels, chosen)
        return loss, self.scalar

    def learn(self, ec: Memory) -> None:
        """VW's ``learn`` (a model read from a file learns nothing: VW's test mode)."""
        self.iter += 1
        if self.test_mode:
            return
        if self.current_pass < 1:
            self.memories.append(ec)
            idx = len(self.memories) - 1
            if self.online:
                self._query(idx)
            self._insert(idx)
        else:
            self._query(self.iter % len(self.memories))
        for _ in range(self.dreams):
            self._dream()

    def end_pass(self) -> None:
        self.current_pass += 1
        self.notes.append(f"######### Current Pass: {self.current_pass}, with number of "
                          f"memories stored so far: {len(self.memories)}")  # fmt: skip

    def batch(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001
              weights, status, stats, rows, preds, ns) -> None:  # fmt: skip
        """The kernel contract's ``train_batch`` (``preds``: the class in column 0; with
        ``--oas`` the example's last clipped score, VW's scalar, in column 0, the Hamming
        loss in column 1; ``labels``: multilabel rows, counted as VW counts them, unlabeled)."""
        self.k = (table, gstate, params, loss_id)
        progress = float(params[P_PROGRESS])
        may_learn = params[P_LEARN] != 0.0
        mask = table.shape[0] - 1
        if ns is None:
            ns = np.full(indices.shape[0], 32, dtype=np.uint8)
        signed = ns.astype(np.int8).astype(np.int64)
        for i in range(indptr.shape[0] - 1):
            if status[i] != 0:
                preds[i, :] = np.nan
                continue
            lo, hi = int(indptr[i]), int(indptr[i + 1])
            a = float(weights[i])
            given: list[int] = []
            if self.oas:
                m = int(labels[i, 0])
                given = [int(c) for c in labels[i, 1 : 1 + m]]
                y = 1.0 if m > 0 else math.nan
            else:
                y = float(labels[i])
            labeled, holdout = begin(stats, params, y)
            label = int(y) if y == y else 0xFFFFFFFF
            ec = Memory(indices[lo:hi], values[lo:hi], signed[lo:hi], self.step, mask, label,
                        given, a)  # fmt: skip
            pred, scalar = self.predict(ec)
            if labeled and not holdout and may_learn:
                self.t = float(gstate[G_T])
                self.learn(ec)
                gstate[G_T] = self.t + a
                if a != 0.0:
                    gstate[G_N] += 1.0
            preds[i, :] = 0.0
            if self.oas:  # (VW's stats of a scalar never labeled: its reduction's labels)
                preds[i, 0] = scalar
                preds[i, 1] = pred
                K.account_unlabeled(stats, rows, float(scalar), a, float(hi - lo), progress, i)
                continue
            preds[i, 0] = pred
            account(stats, rows, float(pred), y, a, float(hi - lo), bool(labeled),
                    bool(holdout), progress)  # fmt: skip
