"""The graph labeller of learning to search (VW's ``--search_task graph``,
``search_graph.cc``): an example is a graph, its node lines first (a class each, a
multilabel of one), then its edge lines (the nodes they join, ``1,2``: a multilabel of
more than one); each node's class is one decision asked of the search
(:class:`streamlearn.reductions.search_engine.Search`).

* **Order**: the nodes in breadth-first order from the first (the next component from its
  first unreached node), ``--search_graph_num_loops`` passes over them, the odd ones
  backwards; ``--search_graph_separate_learners``: a learner per pass.
* **Features** (VW's ``add_edge_features``): per edge touching the node, the edge's
  features moved by an offset per neighbour's current prediction (``K + 1`` for one not
  yet made; the other side's ``K + 1`` more with ``--search_graph_directed``): one copy
  when the edge has one other node, else one per prediction seen, its value the share of
  the edge's nodes that predict it; ``--search_graph_no_structure``: every edge's
  features at offset 0.
* **Loss**: per decision 0.5/loops when wrong (0.5 on the last pass), then 1 − the macro
  F1 of a confusion matrix that every run of the task adds to (VW keeps it for the whole
  run, the search's test, truth and learning runs alike).
* **Conditioning**: as VW's loop, the labels of the first lines (one per edge of the
  node), which only key the search's cache (the task asks no conditioning features).
* ``-q ::`` (the only interactions taken): the task pairs the nodes' namespaces itself, as
  VW's ``generate_interactions`` (the namespaces seen so far; edges never reach it, so
  their copies stay unpaired), every index then scaled by the feature width
  (:attr:`Graph.scaled`), and the learning examples read as VW's reused copy
  (:meth:`Graph.pairs_of`).
"""

from __future__ import annotations

import numpy as np

from streamlearn.errors import MalformedData

F32 = np.float32
U64 = np.uint64
EDGE_OFFSET = 348919043
FNV = U64(16777619)


class GraphToken:
    """One decision's example (the engine's token, duck-typed): the node's features and
    the edges' copies after them; with ``-q ::`` its pairs (:attr:`crossed`)."""

    __slots__ = ("label", "test_only", "tag", "extra_idx", "extra_val", "ns", "idx", "val",
                 "task", "node")  # fmt: skip

    def __init__(self, task, node, idx: np.ndarray, val: np.ndarray) -> None:  # noqa: ANN001
        self.task = task
        self.node = node
        self.label = node.label
        self.test_only = node.test_only
        self.tag = ""
        self.extra_idx = None
        self.extra_val = None
        self.ns = None
        self.idx = idx
        self.val = val

    def features(self) -> tuple[np.ndarray, np.ndarray]:
        return self.idx, self.val

    @property
    def crossed(self) -> tuple[np.ndarray, np.ndarray] | None:
        """VW's ``-q ::`` on the node's own features (made when the example reaches gd, the
        namespaces seen so far then paired)."""
        if not self.task.pairs:
            return None
        return self.task.pairs_of(self.node, self.task.sch.learn_tok is self)


class Graph:
    """``graph`` (see the module)."""

    name = "graph"
    multilabel = True  # (each line's label: a list of numbers, read from its text)
    pairs = False  # (-q ::: the nodes' pairs of namespaces, as VW generates them)

    def initialize(self, sch, options) -> None:  # noqa: ANN001
        self.loops = int(options.get("search_graph_num_loops", 2))
        self.structure = not options.get("search_graph_no_structure", False)
        self.separate = bool(options.get("search_graph_separate_learners", False))
        self.directed = bool(options.get("search_graph_directed", False))
        if self.loops <= 1:
            self.loops = 1
            self.separate = False
        self.k = sch.A
        self.num_n = (int(self.directed) + 1) * (self.k + 1)
        sch.say(f"K={self.k}, numN={self.num_n}")
        self.confusion = np.zeros((self.k + 1) * (self.k + 1), dtype=np.int64)
        if self.separate:
            sch.set_feature_width(self.loops)
        sch.set_options()
        self.scaled = self.pairs  # (the pairs' indices come scaled, as VW's: so do all)
        self.seen: set[int] = set()
        self.copy: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.mask = U64((1 << sch.bits) - 1)
        self.sch = sch

    def pairs_of(self, node, learning: bool) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
        """VW's ``generate_interactions`` for ``-q ::``: the namespaces (VW's 32-126) seen
        so far, each pair (a namespace with itself too) in order, the features' pairs
        ``(FNV·i) ^ j`` (``j`` from ``i`` within a namespace), values multiplied.

        ``learning``: the example the search learns from is VW's copy, one kept for the
        whole run, into which each copy writes only the node's own namespaces: the pairs
        read the others as an earlier node left them (VW's, kept)."""
        ns = np.asarray(node.ns)
        base_i = (np.asarray(node.idx, dtype=U64) * U64(self.sch.step)) & self.mask
        base_v = np.asarray(node.val, dtype=np.float32)
        own = [int(x) for x in np.unique(ns)]
        self.seen.update(x for x in own if 32 <= x <= 126)
        spaces: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if learning:
            for x in own:
                self.copy[x] = (base_i[ns == x], base_v[ns == x])
            spaces = self.copy
        else:
            spaces = {x: (base_i[ns == x], base_v[ns == x]) for x in own}
        empty = (np.zeros(0, dtype=U64), np.zeros(0, dtype=np.float32))
        order = sorted(self.seen)
        out_i: list[np.ndarray] = []
        out_v: list[np.ndarray] = []
        for a_pos, a in enumerate(order):
            ia, va = spaces.get(a, empty)
            for b in order[a_pos:]:
                ib, vb = spaces.get(b, empty)
                i = np.repeat(np.arange(ia.shape[0]), ib.shape[0])
                j = np.tile(np.arange(ib.shape[0]), ia.shape[0])
                if a == b:
                    keep = j >= i
                    i, j = i[keep], j[keep]
                out_i.append(((FNV * ia[i]) ^ ib[j]) & self.mask)
                out_v.append(va[i] * vb[j])
        if not out_i:
            return np.zeros(0, dtype=U64), np.zeros(0)
        return np.concatenate(out_i), np.concatenate(out_v).astype(np.float64)

    def setup(self, sch, tokens) -> None:  # noqa: ANN001, ARG002
        n_nodes = n_edges = 0
        for tok in tokens:
            if len(tok.multilabel) > 1:
                n_edges += 1
            else:
                if n_edges > 0:
                    raise MalformedData("--search_task graph: got a node after getting edges")
                n_nodes += 1
                if tok.multilabel and tok.multilabel[0] > self.k:
                    raise MalformedData(f"--search_task graph: a node's class "
                                        f"{tok.multilabel[0]} is above {self.k}")  # fmt: skip
        if n_nodes == 0 and n_edges > 0:
            raise MalformedData("--search_task graph: got edges without any nodes")
        self.n = n_nodes
        adj: list[list[int]] = [[] for _ in range(n_nodes)]
        for i in range(n_nodes, len(tokens)):
            for m in tokens[i].multilabel:
                if m > n_nodes:
                    raise MalformedData(f"--search_task graph: an edge points to too large "
                                        f"a node id: {m} > {n_nodes}")  # fmt: skip
            for m in tokens[i].multilabel:
                if m > 0 and (not adj[m - 1] or adj[m - 1][-1] != i):
                    adj[m - 1].append(i)
        self.adj = adj
        self.bfs = self._bfs(tokens)

    def _bfs(self, tokens) -> list[int]:  # noqa: ANN001
        n_nodes = self.n
        if n_nodes == 0:
            return []
        touched = [False] * n_nodes
        touched[0] = True
        order = [0]
        i = 0
        while len(order) < n_nodes:
            while i < len(order):
                for e in self.adj[order[i]]:
                    for m in tokens[e].multilabel:
                        if m > 0 and not touched[m - 1]:
                            order.append(m - 1)
                            touched[m - 1] = True
                i += 1
            if len(order) < n_nodes:
                first = touched.index(False)
                touched[first] = True
                order.append(first)
        return order

    def _edge_features(self, sch, node: int, tokens) -> GraphToken:  # noqa: ANN001
        """VW's ``add_edge_features``: node ``node``'s example with its edges' copies."""
        tok = tokens[node]
        add_i: list[np.ndarray] = []
        add_v: list[np.ndarray] = []
        num_n, k1 = self.num_n, self.k + 1
        for e in self.adj[node]:
            preds = np.zeros(num_n, dtype=np.float32)
            total = F32(0.0)
            last = 0
            labels = tokens[e].multilabel
            if self.structure:
                n_in_sink = True
                if self.directed:
                    for m in labels[:-1]:
                        if m == 0:
                            break
                        if m - 1 == node:
                            n_in_sink = False
                            break
                m_in_sink = False
                for j, m in enumerate(labels):
                    if m == 0:
                        m_in_sink = True
                        continue
                    if j == len(labels) - 1:
                        m_in_sink = True
                    if m - 1 == node:
                        continue
                    other = k1 if (self.directed and n_in_sink != m_in_sink) else 0
                    slot = self.pred[m - 1] - 1 + other
                    preds[slot] = F32(preds[slot] + F32(1.0))
                    total = F32(total + F32(1.0))
                    last = slot
            else:
                preds[0] = F32(1.0)
                total = F32(1.0)
            if total == F32(0.0):
                continue
            preds = (preds / total).astype(np.float32)
            idx = np.asarray(tokens[e].idx, dtype=np.uint64)
            val = np.asarray(tokens[e].val, dtype=np.float32)
            if total <= F32(1.0):
                add_i.append(idx + U64(EDGE_OFFSET * last))
                add_v.append(val)
            else:
                ks = np.flatnonzero(preds != 0.0)
                offs = np.asarray(ks, dtype=np.uint64) * U64(EDGE_OFFSET)
                add_i.append((idx[:, None] + offs[None, :]).ravel())
                add_v.append((val[:, None] * preds[ks][None, :]).astype(np.float32).ravel())
        idx, val = tok.features()
        mask = U64((1 << sch.bits) - 1)
        if self.pairs:  # (every index scaled by the feature width, as VW's)
            idx = (np.asarray(idx, dtype=U64) * U64(sch.step)) & mask
            add_i = [(a * U64(sch.step)) & mask for a in add_i]
        if not add_i:
            return GraphToken(self, tok, idx, val)
        extra = np.concatenate(add_i) & mask
        vals = np.concatenate(add_v).astype(val.dtype)
        return GraphToken(self, tok, np.concatenate([idx, extra.astype(idx.dtype)]),
                          np.concatenate([val, vals]))  # fmt: skip

    def _macro_f(self) -> float:
        k1 = self.k + 1
        cm = self.confusion
        total = F32(0.0)
        count = F32(0.0)
        for k in range(1, k1):
            true_c = F32(0.0)
            pred_c = F32(0.0)
            for j in range(1, k1):
                true_c = F32(true_c + F32(cm[k * k1 + j]))
                pred_c = F32(pred_c + F32(cm[j * k1 + k]))
            if true_c == 0:
                continue
            correct = F32(cm[k * k1 + k])
            count = F32(count + F32(1.0))
            if correct > 0:
                pre = F32(correct / pred_c)
                rec = F32(correct / true_c)
                total = F32(total + F32(F32(F32(F32(2) * pre) * rec) / F32(pre + rec)))
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(F32(total / count))

    def run(self, sch, tokens) -> None:  # noqa: ANN001
        n_nodes = self.n
        loss_val = float(F32(F32(0.5) / F32(self.loops)))
        self.pred = [self.k + 1] * n_nodes
        for loop in range(self.loops):
            last_loop = loop == self.loops - 1
            order = range(n_nodes) if loop % 2 == 0 else range(n_nodes - 1, -1, -1)
            for n_id in order:
                node = self.bfs[n_id]
                labels = tokens[node].multilabel
                k = labels[0] if labels else 0
                tok = self._edge_features(sch, node, tokens)
                tags: list[int] = []
                # (as VW's loop: the first lines' labels, one line per edge of the node)
                for i in range(len(self.adj[node])):
                    for m in tokens[i].multilabel:
                        if m == 0 or m - 1 == node:
                            continue
                        tags.append(m)
                a = sch.predict(tok, node + 1, [k] if k > 0 else [], tags, "e" * len(tags),
                                learner_id=loop if self.separate else 0)  # fmt: skip
                self.pred[node] = a
                if labels:
                    sch.loss(0.0 if labels[0] == a else (0.5 if last_loop else loss_val))
        k1 = self.k + 1
        for node in range(n_nodes):
            labels = tokens[node].multilabel
            self.confusion[(labels[0] if labels else 0) * k1 + self.pred[node]] += 1
        sch.loss(float(F32(F32(1.0) - F32(self._macro_f()))))
        if sch.producing:
            sch.out.append("".join(f"{p} " for p in self.pred))
