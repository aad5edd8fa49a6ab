"""Recall tree (VW's ``--recall_tree K``, ``--max_candidates``, ``--bern_hyper``,
``--max_depth``, ``--node_only``, ``--randomized_routing``): K classes under a full binary
tree of routers, each node keeping the classes that reached it, over gd in one table.

As VW's ``reductions/recall_tree.cc`` (Daumé, Karampatziakis, Langford & Mineiro 2017,
"Logarithmic Time One-Against-Some") over its scorer and gd:

* **Tree.**  Built whole at the start: node 0 the root, every node of depth below D
  (``--max_depth``, ⌈log2 K⌉ by default) internal with two children, 2^D - 1 routers
  numbered as VW's recursion meets them (``base_router``).  Each node keeps ``n`` (the
  weight that reached it), the entropy of its classes, ``recall_lbest`` and its classes
  (label, weight), kept sorted by weight, heaviest first (a new class comes last and bubbles
  up past lighter ones only).  A node's *candidates* are its first M classes
  (``--max_candidates``, min(K, 4⌈log2 K⌉) by default); ``recall_lbest`` = max(0, f -
  √β·√(f(1 - f)/n) - β·15/(√18·n)) with f the candidates' share of ``n`` (float32, β =
  ``--bern_hyper``).
* **Problems.**  Router r is problem r, class y problem 2^D - 1 + y - 1 (VW's feature width
  2^D - 1 + K, rounded up to a power of 2 for the slots: problem ``c`` of feature slot ``h``
  at ``(h·s + c) mod 2^b``).  A class's problem sees the example's features and one feature
  of value 1 per node on the path from the node up to the root, excluded (``--node_only``:
  the node's alone, the root's too), at slot ``(868771·node mod 2^b + c) mod 2^b``: a
  namespace of VW's after the example's own, before its crosses (``ns``: where they start,
  the order of gd's sums).  Each problem keeps its own normalizer sums.
* **Prediction.**  From the root, each internal node's router scores the example (gd's raw
  score): below 0 goes left, else right; with β > 0 the walk stops at a node whose
  ``recall_lbest`` is at least its child's.  The class is the candidate of that node whose
  problem scores highest (the first on ties), 0 when it has none; its loss the 0/1 error.
* **Learning** a labeled example (class y, weight a after ``--classweight``, a0 before):
  from the root, at each internal node the router learns -1 when the left child's entropy
  grows less (n_l·(H'_l - H_l) + a0·H'_l against the right's, H' the entropy with y added
  at weight a), else +1, then scores again (clipped): that score's sign (under
  ``--randomized_routing``: -1 when a draw of VW's generator exceeds clamp(0.5 + score, 0,
  1)) picks the child; the node counts the example, and when the stopping rule holds the
  child counts it too and the walk ends at the node.  A leaf reached counts it.  When y is
  a candidate of the node where the walk ended, y's problem learns +1 and each other
  candidate's -1, with the node's path features.  A label outside 1..K is predicted and
  counted, not learned (VW's problem of it would be another's, or past its width: VW 9.11.9
  then corrupts its heap).

The tree lives in ``gstate`` after gd's sums and each problem's (:func:`layout`): a header
(:data:`H_K` ...), one row of :data:`NODE_FIELDS` per node and K rows of (label, weight) per
node (VW's model section of it: :mod:`~streamlearn.learners.recall_tree_state`).
``preds`` is float64[n, K + 1]: column 0 the class, the others 0; NaN rows for
malformed lines.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    P_LEARN,
    P_PROGRESS,
    P_T0,
    LearnerSpec,
    begin_example,
    row_span,
)
from streamlearn.learners.explore import merand48
from streamlearn.learners.losses import loss32
from streamlearn.learners.oaa import (
    G_CLASS,
    account_class,
    clipped,
    is_label,
    prediction_range,
    widen,
)
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64

(H_K, H_NODE_ONLY, H_NODES, H_MAXC, H_DEPTH, H_BERN, H_RANDOM, H_ROUTERS, H_RNG,
 H_RNG_HI) = range(10)  # fmt: skip
"""The tree's header: K, ``--node_only``, its nodes, M, D, β, ``--randomized_routing``, its
routers, VW's generator (two 32-bit halves)."""
HEADER = 10
(PARENT, RECALL, INTERNAL, DEPTH, ROUTER, LEFT, RIGHT, N, ENTROPY, PASSES, NPREDS,
 ODD) = range(12)  # fmt: skip
NODE_FIELDS = 12
"""A node's fields (VW's ``node``); ``ODD``: its entropy is not a number (1: NaN, as VW's 0/0
of a node of no weight meeting an example of weight 0 leaves it; 2, 3: ±inf), kept so
``gstate`` stays finite (``ENTROPY`` is then 0)."""
LABEL, COUNT = 0, 1
NODE_ID = 868771
"""VW's multiplier of a node's number in its feature's slot."""

MAX_DEPTH = 20
"""The deepest tree sl builds (2^21 - 1 nodes)."""
MAX_ROWS = 1 << 24
"""The most class rows (nodes × K) sl keeps (16 bytes each)."""


def routers(depth: int) -> int:
    return (1 << depth) - 1


def width(k: int, depth: int) -> int:
    """VW's feature width: the routers and the classes."""
    return routers(depth) + k


def stride(k: int, depth: int) -> int:
    """Slots per feature: the width rounded up to a power of 2."""
    return 1 << max(width(k, depth) - 1, 0).bit_length()


def default_depth(k: int) -> int:
    """VW's ⌈log2 K⌉ (in doubles, as VW)."""
    return int(math.ceil(math.log(k) / math.log(2.0))) if k > 0 else 0


def default_candidates(k: int) -> int:
    """VW's min(K, 4⌈log2 K⌉)."""
    return min(k, 4 * default_depth(k))


def layout(k: int, depth: int) -> tuple[int, int, int, int]:
    """(where the tree starts in ``gstate``, where its nodes start, its class rows, the end)."""
    t0 = G_CLASS + 2 * width(k, depth)
    n0 = t0 + HEADER
    nodes = 2 * routers(depth) + 1
    p0 = n0 + NODE_FIELDS * nodes
    return t0, n0, p0, p0 + 2 * k * nodes


def views(gstate: np.ndarray, k: int, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tree's header, nodes and class rows: views of ``gstate``."""
    t0, n0, p0, end = layout(k, depth)
    count = 2 * routers(depth) + 1
    return (gstate[t0:n0], gstate[n0:p0].reshape(count, NODE_FIELDS),
            gstate[p0:end].reshape(count, k, 2))  # fmt: skip


def _init_tree(nodes: np.ndarray, depth: int) -> None:
    """VW's ``init_tree``: children pushed two by two, routers numbered depth first."""
    nodes[:, PASSES] = 1.0
    count = 1
    used = 0

    def grow(root: int, d: int) -> None:
        nonlocal count, used
        if d <= depth:
            left, right = count, count + 1
            count += 2
            nodes[root, ROUTER] = used
            used += 1
            nodes[root, INTERNAL] = 1.0
            nodes[root, LEFT], nodes[root, RIGHT] = left, right
            for c in (left, right):
                nodes[c, PARENT] = root
                nodes[c, DEPTH] = d
            grow(left, d + 1)
            grow(right, d + 1)

    grow(0, 1)


def init_gstate(params: np.ndarray, k: int, depth: int, candidates: int, bern: float,
                node_only: bool, randomized: bool, seed: int = 0) -> np.ndarray:  # fmt: skip
    """gd's global state, each problem's sums (with ``--initial-t`` t0 > 0 problem 0's as
    VW's), the fresh tree and VW's generator at ``seed``."""
    gstate = np.zeros(layout(k, depth)[3])
    gstate[gd.G_CONTRACTION] = 1.0
    t0 = F64(np.float32(params[P_T0]))
    if t0 > 0.0:
        gstate[G_CLASS] = t0
        gstate[G_CLASS + 1] = t0
    head, nodes, _ = views(gstate, k, depth)
    head[:] = (k, node_only, nodes.shape[0], candidates, depth, F32(bern), randomized,
               routers(depth), seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)  # fmt: skip
    _init_tree(nodes, depth)
    return gstate


def get_rng(gstate: np.ndarray, k: int, depth: int) -> int:
    head = views(gstate, k, depth)[0]
    return (int(head[H_RNG_HI]) << 32) | int(head[H_RNG])


@jit_inline
def _fill(indices, values, lo, hi, c, step, mask, nodes, node, node_only, path, fs, fv, split):
    """Problem ``c``'s slots and values of the example (``fs``, ``fv``) with (``path``) its
    node features as VW adds them: a namespace after the example's, before the crosses
    (``split``: where they start); returns their count."""
    n = 0
    for t in range(lo, split if path else hi):
        fs[n] = (U64(indices[t]) * U64(step) + U64(c)) & mask
        fv[n] = values[t]
        n += 1
    if path:
        cn = node
        if node_only:
            fs[n] = (((U64(NODE_ID) * U64(cn)) & mask) + U64(c)) & mask
            fv[n] = 1.0
            n += 1
        else:
            while cn > 0:
                fs[n] = (((U64(NODE_ID) * U64(cn)) & mask) + U64(c)) & mask
                fv[n] = 1.0
                n += 1
                cn = int(nodes[cn, PARENT])
        for t in range(split, hi):
            fs[n] = (U64(indices[t]) * U64(step) + U64(c)) & mask
            fv[n] = values[t]
            n += 1
    return n


@jit_inline
def _raw(table, gstate, fs, fv, n, truncate):
    """gd's raw score (through its l1 gravity) times its l2 contraction (VW's
    ``partial_prediction``)."""
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(0.0)
    for t in range(n):
        w = F32(table[fs[t], 0])
        if truncate:
            w = gd.trunc(w, grav)
        p += w * F32(fv[t])
    return p * F32(gstate[gd.G_CONTRACTION])


@jit
def learn(table, gstate, params, loss_id, fs, fv, n, c, y, w, t, truncate):
    """VW's scorer and gd learning problem ``c`` toward ``y`` with importance ``w`` (see
    :func:`streamlearn.learners.ect._learn`; a kernel of its own, not inlined: gd's step
    once, for the tree's three calls)."""
    rule = gd.rule_of(params)
    widen(gstate, params, y)
    rlo, rhi = prediction_range(gstate, params, loss_id)
    p = clipped(_raw(table, gstate, fs, fv, n, truncate), rlo, rhi)
    if w > 0.0 and loss32(loss_id, p, F32(y)) > F32(0.0):
        gstate[G_T] = t + w
        gd.step(table, gstate, G_CLASS + 2 * c, G_CLASS + 2 * c + 1, fs, fv, 0, n, p, F32(y),
                F32(w), loss_id, rule)  # fmt: skip
        if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
            gd.rebase(table, gstate, params)


@jit_inline
def _find(cls, nodes, cn, label):
    """Where class ``label`` is among node ``cn``'s (its count when absent)."""
    m = int(nodes[cn, NPREDS])
    for q in range(m):
        if cls[cn, q, LABEL] == label:
            return q
    return m


@jit_inline
def _entropy(nodes, cn):
    odd = nodes[cn, ODD]
    if odd == 0.0:
        return F64(nodes[cn, ENTROPY])
    if odd == 1.0:
        return F64(np.nan)
    return F64(np.inf) if odd == 2.0 else F64(-np.inf)


@jit_inline
def _set_entropy(nodes, cn, h):
    if h != h:
        nodes[cn, ODD] = 1.0
    elif h == np.inf or h == -np.inf:
        nodes[cn, ODD] = 2.0 if h > 0.0 else 3.0
    else:
        nodes[cn, ODD] = 0.0
        nodes[cn, ENTROPY] = h
        return
    nodes[cn, ENTROPY] = 0.0


@jit_inline
def _plogp(c, n):
    if c == 0.0:
        return F64(0.0)
    r = fdiv(F64(c), F64(n))
    return r * math.log(r)


@jit_inline
def _updated_entropy(cls, nodes, cn, label, w):
    """VW's ``updated_entropy``: node ``cn``'s entropy with ``label`` added at weight ``w``."""
    q = _find(cls, nodes, cn, label)
    c0 = F64(0.0) if q == int(nodes[cn, NPREDS]) else F64(cls[cn, q, COUNT])
    d = F64(F32(w))
    n = F64(nodes[cn, N])
    novernp1 = fdiv(n, d + n)
    lognovernp1 = F64(0.0) if novernp1 == 0.0 else math.log(novernp1)
    rest = fdiv(n - c0, n + d)
    h = _entropy(nodes, cn)
    h += _plogp(c0, n)
    h *= novernp1
    h -= lognovernp1 * rest
    h -= _plogp(c0 + d, n + d)
    return h


@jit_inline
def _recall_lbest(head, nodes, cls, cn):
    """VW's ``compute_recall_lbest`` (float32)."""
    n = F64(nodes[cn, N])
    if n <= 0.0:
        return
    mass = F64(0.0)
    for q in range(min(int(nodes[cn, NPREDS]), int(head[H_MAXC]))):
        mass += cls[cn, q, COUNT]
    nf = F32(n)
    f = fdiv(F32(mass), nf)
    stdf = F32(math.sqrt(fdiv(f * (F32(1.0) - f), nf)))
    diamf = fdiv(F32(15.0), F32(math.sqrt(F32(18.0))) * nf)
    bern = F32(head[H_BERN])
    r = f - F32(math.sqrt(bern)) * stdf - bern * diamf
    nodes[cn, RECALL] = max(F32(0.0), r)


@jit_inline
def _insert(head, nodes, cls, cn, label, w):
    """VW's ``insert_example_at_node``."""
    q = _find(cls, nodes, cn, label)
    if q == int(nodes[cn, NPREDS]):
        cls[cn, q, LABEL] = label
        cls[cn, q, COUNT] = 0.0
        nodes[cn, NPREDS] = q + 1
    _set_entropy(nodes, cn, _updated_entropy(cls, nodes, cn, label, w))
    cls[cn, q, COUNT] += F64(F32(w))
    while q > 0 and cls[cn, q - 1, COUNT] < cls[cn, q, COUNT]:
        for f in range(2):
            x = cls[cn, q - 1, f]
            cls[cn, q - 1, f] = cls[cn, q, f]
            cls[cn, q, f] = x
        q -= 1
    nodes[cn, N] += F64(F32(w))
    _recall_lbest(head, nodes, cls, cn)


@jit_inline
def _stop(head, nodes, parent, child):
    return F32(head[H_BERN]) > F32(0.0) and F32(nodes[parent, RECALL]) >= F32(nodes[child, RECALL])


@jit_inline
def _to_prob(x):
    p = F32(0.5) * (F32(1.0) + F32(2.0) * x)
    return min(max(p, F32(0.0)), F32(1.0))


@jit
def train_gd(table, gstate, params, loss_id, indptr, indices, values, labels, weights, status,
             stats, rows, preds, ns, head, nodes, cls, keys, factors):  # fmt: skip
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    k = int(head[H_K])
    r0 = int(head[H_ROUTERS])
    maxc = int(head[H_MAXC])
    node_only = head[H_NODE_ONLY] != 0.0
    randomized = head[H_RANDOM] != 0.0
    step = 1
    while step < r0 + k:
        step *= 2
    mask = U64(table.shape[0] - 1)
    longest = 0
    for i in range(indptr.shape[0] - 1):
        longest = max(longest, indptr[i + 1] - indptr[i])
    fs = np.empty(longest + nodes.shape[0] + 1, dtype=np.uint64)
    fv = np.empty(longest + nodes.shape[0] + 1, dtype=np.float64)
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = (U64(head[H_RNG_HI]) << U64(32)) | U64(head[H_RNG])
    for i in range(indptr.shape[0] - 1):
        y = labels[i]
        if status[i] != 0 or (y == y and not is_label(y, k)):
            preds[i, :] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        split = hi  # (the crosses, namespace byte 0, after the example's own features)
        if ns.shape[0] > 0:
            for t in range(lo, hi):
                if ns[t] == 0:
                    split = t
                    break
        labeled, holdout = begin_example(stats, params, y)
        a0 = weights[i]
        a = a0
        if keys.shape[0] > 0 and labeled and not holdout:  # --classweight, when it learns
            klass = U64(np.int64(y)) & U64(0xFFFFFFFF)  # (a: VW's ec.weight, a0: the label's)
            for q in range(keys.shape[0]):
                if keys[q] == klass:
                    a = F64(F32(a0) * factors[q])
        # predict: down the routers while the stopping rule allows, then the node's candidates
        cn = 0
        while nodes[cn, INTERNAL] != 0.0:
            n = _fill(indices, values, lo, hi, int(nodes[cn, ROUTER]), step, mask, nodes, cn,
                      node_only, False, fs, fv, split)  # fmt: skip
            p = _raw(table, gstate, fs, fv, n, truncate)
            nxt = int(nodes[cn, LEFT]) if p < F32(0.0) else int(nodes[cn, RIGHT])
            if _stop(head, nodes, cn, nxt):
                break
            cn = nxt
        pred = 0
        best = F32(-3.4028234663852886e38)
        for q in range(min(int(nodes[cn, NPREDS]), maxc)):
            label = int(cls[cn, q, LABEL])
            n = _fill(indices, values, lo, hi, r0 + label - 1, step, mask, nodes, cn, node_only,
                      True, fs, fv, split)  # fmt: skip
            s = _raw(table, gstate, fs, fv, n, truncate)
            if pred == 0 or s > best:
                best = s
                pred = label
        preds[i, :] = 0.0
        preds[i, 0] = pred
        if labeled and not holdout and params[P_LEARN] != 0.0 and 1.0 <= y <= F64(k):
            t = gstate[G_T]
            label = int(y)
            cn = 0
            while nodes[cn, INTERNAL] != 0.0:
                left = int(nodes[cn, LEFT])
                right = int(nodes[cn, RIGHT])
                new_l = _updated_entropy(cls, nodes, left, label, a)
                new_r = _updated_entropy(cls, nodes, right, label, a)
                d_l = F64(nodes[left, N]) * (new_l - _entropy(nodes, left)) + F64(F32(a0)) * new_l
                d_r = F64(nodes[right, N]) * (new_r - _entropy(nodes, right)) + F64(
                    F32(a0)) * new_r  # fmt: skip
                target = -1.0 if d_l < d_r else 1.0
                c = int(nodes[cn, ROUTER])
                n = _fill(indices, values, lo, hi, c, step, mask, nodes, cn, node_only, False, fs,
                          fv, split)  # fmt: skip
                learn(table, gstate, params, loss_id, fs, fv, n, c, target, a, t, truncate)
                rlo, rhi = prediction_range(gstate, params, loss_id)
                which = clipped(_raw(table, gstate, fs, fv, n, truncate), rlo, rhi)
                if randomized:
                    which = F32(-1.0) if merand48(rng) > _to_prob(which) else F32(1.0)
                nxt = left if which < F32(0.0) else right
                stop = _stop(head, nodes, cn, nxt)
                _insert(head, nodes, cls, cn, label, a)
                if stop:
                    _insert(head, nodes, cls, nxt, label, a)
                    break
                cn = nxt
            if nodes[cn, INTERNAL] == 0.0:
                _insert(head, nodes, cls, cn, label, a)
            candidate = False
            for q in range(min(int(nodes[cn, NPREDS]), maxc)):
                if int(cls[cn, q, LABEL]) == label:
                    candidate = True
            if candidate:
                c = r0 + label - 1
                n = _fill(indices, values, lo, hi, c, step, mask, nodes, cn, node_only, True, fs,
                          fv, split)  # fmt: skip
                learn(table, gstate, params, loss_id, fs, fv, n, c, 1.0, a, t, truncate)
                for q in range(min(int(nodes[cn, NPREDS]), maxc)):
                    other = int(cls[cn, q, LABEL])
                    if other != label:
                        c = r0 + other - 1
                        n = _fill(indices, values, lo, hi, c, step, mask, nodes, cn, node_only,
                                  True, fs, fv, split)  # fmt: skip
                        learn(table, gstate, params, loss_id, fs, fv, n, c, -1.0, a, t,
                              truncate)  # fmt: skip
            gstate[G_T] = t + a
            if a != 0.0:
                gstate[G_N] += 1.0
        account_class(stats, rows, F64(pred), y, a, hi - lo, labeled, holdout, np.nan, 0.0,
                      params[P_PROGRESS])  # fmt: skip
    head[H_RNG] = F64(rng[0] & U64(0xFFFFFFFF))
    head[H_RNG_HI] = F64(rng[0] >> U64(32))


@jit
def refresh(head, nodes, cls):
    """Every node's ``recall_lbest`` (VW's, when it reads a model)."""
    for cn in range(nodes.shape[0]):
        _recall_lbest(head, nodes, cls, cn)


def shape_of(gstate: np.ndarray) -> tuple[int, int]:
    """(K, D) of a tree's ``gstate`` (its header says), so that a spec found by name (a model
    read) runs the model's tree."""
    w = 1
    while G_CLASS + 2 * w + HEADER <= gstate.shape[0]:
        t0 = G_CLASS + 2 * w
        k, d = gstate[t0 + H_K], gstate[t0 + H_DEPTH]
        if 0 <= d <= MAX_DEPTH and d == int(d) and k == w - routers(int(d)) and k >= 1:
            if layout(int(k), int(d))[3] == gstate.shape[0]:
                return int(k), int(d)
        w += 1
    raise ValueError("a --recall_tree state of no tree's size")


class Entry:
    """The kernel entry of a tree over K classes (``keys``/``factors``: ``--classweight``'s,
    applied here: the router's choice reads the label's own weight, as VW's)."""

    wants_ns = True

    def __init__(self, k: int, depth: int, candidates: int, bern: float, node_only: bool,
                 randomized: bool, seed: int = 0,
                 classweights: dict[int, float] | None = None) -> None:  # fmt: skip
        self.k, self.depth, self.candidates, self.bern = k, depth, candidates, bern
        self.node_only, self.randomized, self.seed = node_only, randomized, seed
        table = classweights or {}
        self.keys = np.array(sorted(table), dtype=np.uint64)
        self.factors = np.array([table[int(c)] for c in self.keys], dtype=np.float32)
        self.fresh = True

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204, ARG002
                 weights, bases, status, stats, rows, preds, ns):  # fmt: skip
        k, depth = self.k, self.depth
        if layout(k, depth)[3] != gstate.shape[0]:  # (a spec found by name)
            k, depth = shape_of(gstate)
        head, nodes, cls = views(gstate, k, depth)
        if self.fresh:  # VW recomputes each node's recall_lbest with a run's β when it reads
            self.fresh = False
            head[H_BERN] = F32(self.bern)
            refresh(head, nodes, cls)
        keys = self.keys if params[P_LEARN] != 0.0 else self.keys[:0]
        if ns is None:  # (svmlight: no namespaces, nothing crossed)
            ns = np.empty(0, dtype=np.uint8)
        train_gd(table, gstate, params, loss_id, indptr, indices, values, labels, weights,
                 status, stats, rows, preds, ns, head, nodes, cls, keys, self.factors)  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        return init_gstate(params, self.k, self.depth, self.candidates, self.bern,
                           self.node_only, self.randomized, self.seed)  # fmt: skip


def spec(k: int, depth: int, candidates: int, bern: float = 1.0, node_only: bool = False,
         randomized: bool = False, seed: int = 0,
         classweights: dict[int, float] | None = None) -> LearnerSpec:  # fmt: skip
    """The tree of ``k`` classes and depth ``depth``, over gd."""
    entry = Entry(k, depth, candidates, bern, node_only, randomized, seed, classweights)
    return LearnerSpec(name="recall_tree_gd", ncols=4, fresh=(0.0, 0.0, 0.0, 0.0),
                       train_batch=entry, current_weights=gd.current_weights, rebase=gd.rebase,
                       init_gstate=entry.init_gstate, dtype=np.float32, stored_cols=3)  # fmt: skip


def of_words(words: tuple[str, ...]) -> tuple[int, int, int, float, bool, bool] | None:
    """(K, D, M, β, ``--node_only``, ``--randomized_routing``) of a configuration's words
    (``TrainConfig.stack``; their checks are ``reductions/recall_tree.py``'s), or None."""
    if "--recall_tree" not in words:
        return None

    def value(name: str) -> str:
        at = words.index(name) + 1 if name in words else len(words)
        return words[at] if at < len(words) else ""

    k = int(value("--recall_tree")) if value("--recall_tree").isdigit() else 0
    depth = int(value("--max_depth")) if value("--max_depth").isdigit() else default_depth(k)
    cand = value("--max_candidates")
    try:
        bern = float(value("--bern_hyper")) if "--bern_hyper" in words else 1.0
    except ValueError:
        bern = 1.0
    return (k, depth, int(cand) if cand.isdigit() else default_candidates(k), bern,
            "--node_only" in words, "--randomized_routing" in words)  # fmt: skip


def spec_of(words: tuple[str, ...], seed: int = 0,
            classweights: dict[int, float] | None = None) -> LearnerSpec:  # fmt: skip
    """The tree ``words`` (``TrainConfig.stack``) name."""
    k, depth, cand, bern, node_only, randomized = of_words(words) or (1, 0, 0, 1.0, False, False)
    return spec(k, depth, cand, bern, node_only, randomized, seed, classweights)


SPECS = (spec(2, 1, 2),)
"""A tree as :func:`streamlearn.learners.spec_by_name` finds it (a model's table read back;
the run's own spec comes from its configuration)."""
