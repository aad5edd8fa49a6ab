"""Logarithmic-time online multiclass tree (VW's ``--log_multi K``, ``--swap_resistance S``):
K classes as a tree of binary problems over gd, grown while it learns, in one table.

As VW's ``reductions/log_multi.cc`` (Choromanska & Langford 2015, "Logarithmic Time Online
Multiclass prediction") over its scorer and gd, with VW's loss forced to quantile (τ = 0.5):

* **Tree.**  Node 0 is the root; a node is a leaf (its most frequent class, ``max_count``
  and ``max_count_label``, 1 at first) or internal (its problem ``base_predictor``, its two
  children, the running margin ``Eh``, ``n`` and ``norm_Eh = Eh/n``).  Each node keeps, per
  class that reached it (sorted by class): ``Ehk``, ``nk``, ``norm_Ehk``, and its count.
  ``min_count`` is a leaf's examples, an internal node's smallest below it.
* **Prediction.**  From the root, each internal node's problem scores the example (gd's,
  clipped to the label range): below 0 goes left, else right; the leaf's class is the
  prediction (its progressive loss the 0/1 error, weighted).
* **Learning** a labeled example (class y): from the root, each node met counts y; a leaf
  that has seen two classes or more splits when a problem is left (K - 1 at most), or
  else when its ``min_count - max_count`` (uint32, wrapping as VW's) passes ``S·(root's
  min_count + 1)``: then the leaf with the fewest examples (down the smaller side) and its
  parent are recycled as the new children, its sibling taking the parent's place and the
  splitting leaf the parent's problem.  At an internal node the problem learns -1 when
  ``norm_Eh > norm_Ehk`` of y, else +1, with the example's importance, then scores the
  example again: that raw score (times gd's contraction) goes into ``Eh`` and ``Ehk``,
  and the clipped one decides the side to go on.  The leaf reached counts one more
  example (``min_count``, carried up while it changes the minimum).  A swap can recycle
  the splitting leaf itself and make a cycle (VW then loops forever, e.g. with
  ``--swap_resistance 0``): sl stops a walk after 2K nodes instead.
* **Slots.**  Problem ``c`` of feature slot ``h`` is at ``(h·s + c) mod 2^b`` with ``s`` =
  K - 1 rounded up to a power of 2; each problem keeps its own normalizer sums.

The tree lives in ``gstate`` after gd's sums (:func:`layout`): a header (:data:`H_K` ...),
one row of :data:`NODE_FIELDS` per node (2K - 1 at most) and K rows of
:data:`PRED_FIELDS` per node.  ``preds`` is float64[n, K + 1]: column 0 the class, the
others 0; NaN rows for malformed lines.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    GSTATE_SIZE,
    P_LEARN,
    P_PROGRESS,
    P_QUANTILE_TAU,
    P_T0,
    LearnerSpec,
    begin_example,
    row_span,
)
from streamlearn.learners.ect import _learn
from streamlearn.learners.losses import QUANTILE
from streamlearn.learners.oaa import G_CLASS, account_class, clipped, is_label, prediction_range
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
U32 = 0xFFFFFFFF

H_K, H_NODES, H_USED, H_PROGRESS, H_SWAP, H_SWAPS = range(6)
"""The tree's header: K, its nodes, the problems used, VW's ``progress`` flag (kept in its
model), the swap resistance, the swaps made."""
HEADER = 6
(PARENT, MIN_COUNT, INTERNAL, BASE_PRED, LEFT, RIGHT, NORM_EH, EH, N, MAX_COUNT, MAX_LABEL,
 NPREDS) = range(12)  # fmt: skip
NODE_FIELDS = 12
EHK, NORM_EHK, NK, LABEL, COUNT = range(5)
PRED_FIELDS = 5

MAX_CLASSES = 1024
"""The most classes sl's tree takes (its per-node class rows take 40·K·(2K - 1) bytes)."""


def stride(k: int) -> int:
    """Slots per feature: K - 1 rounded up to a power of 2 (VW's feature width)."""
    return 1 << max(k - 2, 0).bit_length()


def layout(k: int) -> tuple[int, int, int, int]:
    """(where the tree starts in ``gstate``, where its nodes start, its class rows, the end)."""
    t0 = GSTATE_SIZE + 2 * max(k - 1, 1)
    n0 = t0 + HEADER
    p0 = n0 + NODE_FIELDS * (2 * k - 1)
    return t0, n0, p0, p0 + PRED_FIELDS * k * (2 * k - 1)


def views(gstate: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tree's header, nodes and class rows: views of ``gstate``."""
    t0, n0, p0, end = layout(k)
    return (gstate[t0:n0], gstate[n0:p0].reshape(2 * k - 1, NODE_FIELDS),
            gstate[p0:end].reshape(2 * k - 1, k, PRED_FIELDS))  # fmt: skip


def init_gstate(params: np.ndarray, k: int, swap: int, progress: bool = True) -> np.ndarray:
    """gd's global state, each problem's sums (with ``--initial-t`` t0 > 0 problem 0's as
    VW's), and a tree of one leaf (``progress``: VW's flag, off under ``--no_progress``)."""
    gstate = np.zeros(layout(k)[3])
    gstate[gd.G_CONTRACTION] = 1.0
    t0 = F64(np.float32(params[P_T0]))
    if t0 > 0.0:
        gstate[G_CLASS] = t0
        gstate[G_CLASS + 1] = t0
    head, nodes, _ = views(gstate, k)
    head[H_K] = k
    head[H_NODES] = 1
    head[H_PROGRESS] = 1 if progress else 0
    head[H_SWAP] = swap
    nodes[0, MAX_LABEL] = 1
    return gstate


@jit_inline
def _raw(table, gstate, indices, values, lo, hi, c, step, mask, truncate):
    """Problem ``c``'s raw score (gd's, through its l1 gravity) times its l2 contraction."""
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(0.0)
    for t in range(lo, hi):
        j = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
        w = F32(table[j, 0])
        if truncate:
            w = gd.trunc(w, grav)
        p += w * F32(values[t])
    return p * F32(gstate[gd.G_CONTRACTION])


@jit_inline
def _init_leaf(nodes, i):
    nodes[i, INTERNAL] = 0.0
    nodes[i, NPREDS] = 0.0
    nodes[i, BASE_PRED] = 0.0
    nodes[i, NORM_EH] = 0.0
    nodes[i, EH] = 0.0
    nodes[i, N] = 0.0
    nodes[i, MAX_COUNT] = 0.0
    nodes[i, MAX_LABEL] = 1.0
    nodes[i, LEFT] = 0.0
    nodes[i, RIGHT] = 0.0


@jit_inline
def _new_node(head, nodes):
    i = int(head[H_NODES])
    head[H_NODES] += 1.0
    nodes[i, PARENT] = 0.0
    nodes[i, MIN_COUNT] = 0.0
    _init_leaf(nodes, i)
    return i


@jit_inline
def _update_min_count(nodes, node):
    """VW's ``update_min_count``: the new minimum carried up while it changes a parent's."""
    steps = 0
    while node != 0 and steps < nodes.shape[0]:  # (a cycle: VW loops forever)
        steps += 1
        prev = node
        node = int(nodes[node, PARENT])
        if nodes[node, MIN_COUNT] == nodes[prev, MIN_COUNT]:
            break
        nodes[node, MIN_COUNT] = min(nodes[int(nodes[node, LEFT]), MIN_COUNT],
                                     nodes[int(nodes[node, RIGHT]), MIN_COUNT])  # fmt: skip


@jit_inline
def _children(head, nodes, preds, cur, label):
    """VW's ``children``: count ``label`` at node ``cur`` (returns its row there), split a
    leaf when it should; returns (whether ``cur`` is internal, the row)."""
    n = int(nodes[cur, NPREDS])
    at = 0
    while at < n and preds[cur, at, LABEL] < label:
        at += 1
    if at == n or preds[cur, at, LABEL] != label:
        for j in range(n, at, -1):
            preds[cur, j, :] = preds[cur, j - 1, :]
        preds[cur, at, :] = 0.0
        preds[cur, at, LABEL] = label
        nodes[cur, NPREDS] = n + 1
    preds[cur, at, COUNT] += 1.0
    if preds[cur, at, COUNT] > nodes[cur, MAX_COUNT]:
        nodes[cur, MAX_COUNT] = preds[cur, at, COUNT]
        nodes[cur, MAX_LABEL] = preds[cur, at, LABEL]
    if nodes[cur, INTERNAL] != 0.0:
        return True, at
    room = head[H_USED] < head[H_K] - 1.0
    gap = (int(nodes[cur, MIN_COUNT]) - int(nodes[cur, MAX_COUNT])) & U32
    resist = (int(head[H_SWAP]) * (int(nodes[0, MIN_COUNT]) + 1)) & U32
    if nodes[cur, NPREDS] > 1.0 and (room or gap > resist):
        if room:
            left = _new_node(head, nodes)
            right = _new_node(head, nodes)
            nodes[cur, BASE_PRED] = head[H_USED]
            head[H_USED] += 1.0
        else:
            child = 0
            steps = 0
            while nodes[child, INTERNAL] != 0.0 and steps < nodes.shape[0]:
                steps += 1
                lc = int(nodes[child, LEFT])
                rc = int(nodes[child, RIGHT])
                child = lc if nodes[lc, MIN_COUNT] < nodes[rc, MIN_COUNT] else rc
            parent = int(nodes[child, PARENT])
            grand = int(nodes[parent, PARENT])
            head[H_SWAPS] += 1.0
            other = int(nodes[parent, LEFT]) if child == int(nodes[parent, RIGHT]) else int(
                nodes[parent, RIGHT])  # fmt: skip
            if parent == int(nodes[grand, LEFT]):
                nodes[grand, LEFT] = other
            else:
                nodes[grand, RIGHT] = other
            nodes[other, PARENT] = grand
            _update_min_count(nodes, other)
            _init_leaf(nodes, child)
            left = child
            nodes[cur, BASE_PRED] = nodes[parent, BASE_PRED]
            _init_leaf(nodes, parent)
            right = parent
        nodes[cur, LEFT] = left
        nodes[left, PARENT] = cur
        nodes[cur, RIGHT] = right
        nodes[right, PARENT] = cur
        nodes[left, MIN_COUNT] = nodes[cur, MIN_COUNT] // 2
        nodes[right, MIN_COUNT] = nodes[cur, MIN_COUNT] - nodes[left, MIN_COUNT]
        _update_min_count(nodes, left)
        nodes[left, MAX_LABEL] = nodes[cur, MAX_LABEL]
        nodes[right, MAX_LABEL] = nodes[cur, MAX_LABEL]
        nodes[cur, INTERNAL] = 1.0
    return nodes[cur, INTERNAL] != 0.0, at


@jit
def train_gd(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
             status, stats, rows, preds, head, nodes, cls):  # fmt: skip
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    k = int(head[H_K])
    step = 1
    while step < k - 1:
        step *= 2
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    for i in range(indptr.shape[0] - 1):
        y = labels[i]
        if status[i] != 0 or (y == y and not is_label(y, k)):
            preds[i, :] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        rlo, rhi = prediction_range(gstate, params, loss_id)
        cn = 0
        depth = 0
        while nodes[cn, INTERNAL] != 0.0 and depth < 2 * k:  # (a cycle: VW loops forever)
            depth += 1
            c = int(nodes[cn, BASE_PRED])
            p = clipped(_raw(table, gstate, indices, values, lo, hi, c, step, mask, truncate),
                        rlo, rhi)  # fmt: skip
            cn = int(nodes[cn, LEFT]) if p < F32(0.0) else int(nodes[cn, RIGHT])
        pred = nodes[cn, MAX_LABEL]
        preds[i, :] = 0.0
        preds[i, 0] = pred
        if labeled and not holdout and params[P_LEARN] != 0.0 and 1.0 <= y <= F64(k):
            t = gstate[G_T]
            cn = 0
            depth = 0
            while True:
                internal, at = _children(head, nodes, cls, cn, y)
                depth += 1
                if not internal or depth > 2 * k:  # (a cycle: VW loops forever)
                    break
                c = int(nodes[cn, BASE_PRED])
                target = -1.0 if F32(nodes[cn, NORM_EH]) > F32(cls[cn, at, NORM_EHK]) else 1.0
                _learn(table, gstate, params, loss_id, indices, values, lo, hi, c, target, a, t,
                       step, mask, 0.0, truncate, rule, slots)  # fmt: skip
                raw = _raw(table, gstate, indices, values, lo, hi, c, step, mask, truncate)
                rlo, rhi = prediction_range(gstate, params, loss_id)
                p = clipped(raw, rlo, rhi)
                nodes[cn, EH] += F64(raw)
                cls[cn, at, EHK] += F64(raw)
                nodes[cn, N] += 1.0
                cls[cn, at, NK] += 1.0
                nodes[cn, NORM_EH] = F32(F32(nodes[cn, EH]) / F32(nodes[cn, N]))
                cls[cn, at, NORM_EHK] = F32(F32(cls[cn, at, EHK]) / F32(cls[cn, at, NK]))
                cn = int(nodes[cn, LEFT]) if p < F32(0.0) else int(nodes[cn, RIGHT])
            nodes[cn, MIN_COUNT] = F64((int(nodes[cn, MIN_COUNT]) + 1) & U32)
            _update_min_count(nodes, cn)
            gstate[G_T] = t + a
            if a != 0.0:
                gstate[G_N] += 1.0
        account_class(stats, rows, pred, y, a, hi - lo, labeled, holdout, np.nan, 0.0,
                      params[P_PROGRESS])  # fmt: skip


def k_of(gstate: np.ndarray) -> int:
    """The classes of a tree's ``gstate`` (its size says: :func:`layout`), so that a spec
    found by name (a model read) runs the model's tree."""
    for k in range(2, MAX_CLASSES + 1):
        if layout(k)[3] == gstate.shape[0]:
            return k
    raise ValueError("a --log_multi state of no tree's size")


class Entry:
    """The kernel entry of a tree over K classes (VW's loss: quantile, τ = 0.5)."""

    wants_ns = False

    def __init__(self, k: int, swap: int, progress: bool = True) -> None:
        self.k, self.swap, self.progress = k, swap, progress

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204, ARG002
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        p = params.copy()
        p[P_QUANTILE_TAU] = 0.5
        head, nodes, cls = views(gstate, k_of(gstate))
        train_gd(table, gstate, p, QUANTILE, indptr, indices, values, labels, weights, bases,
                 status, stats, rows, preds, head, nodes, cls)  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        return init_gstate(params, self.k, self.swap, self.progress)


def spec(k: int, swap: int = 4, progress: bool = True) -> LearnerSpec:
    """The tree of ``k`` classes with swap resistance ``swap``, over gd."""
    entry = Entry(k, swap, progress)
    return LearnerSpec(name="log_multi_gd", ncols=4, fresh=(0.0, 0.0, 0.0, 0.0),
                       train_batch=entry, current_weights=gd.current_weights, rebase=gd.rebase,
                       init_gstate=entry.init_gstate, dtype=np.float32, stored_cols=3)  # fmt: skip


SPECS = (spec(2),)
"""A tree as :func:`streamlearn.learners.spec_by_name` finds it (a model's table read back;
the run's own spec comes from its configuration)."""


def _walk(data: bytes, pos: int, k: int, into: np.ndarray | None) -> int:
    """VW's ``save_load_tree`` read from ``data[pos:]`` (into ``gstate`` when given, as VW
    reads it: an internal node's count and class are a fresh leaf's, 0 and 1); its end."""
    import struct

    def take(fmt: str) -> tuple:
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise ValueError("the model's --log_multi tree is cut short")
        out = struct.unpack_from(fmt, data, pos)
        pos += size
        return out

    _, count, _, used, progress, swap = take("<IIQQ?I")
    if not 1 <= count <= 2 * k - 1 or used > k - 1:
        raise ValueError(f"the model's --log_multi tree has {count} nodes ({used} problems): "
                         f"more than {k} classes have")  # fmt: skip
    head = nodes = cls = None
    if into is not None:
        head, nodes, cls = views(into, k)
        head[:] = (k, count, used, progress, swap, 0)
    for j in range(count):
        parent, npreds, min_count, internal = take("<III?")
        if npreds > k or parent >= count:
            raise ValueError("the model's --log_multi tree is not one sl reads (a node with "
                             "more classes than K, or a parent outside it)")  # fmt: skip
        row = [parent, min_count, internal, 0, 0, 0, 0.0, 0.0, 0, 0, 1, npreds]
        if internal:
            bp, left, right, norm_eh, eh, n = take("<IIIfdI")
            if max(left, right) >= count or bp >= max(k - 1, 1):
                raise ValueError("the model's --log_multi tree points outside itself")
            row[BASE_PRED:N + 1] = [bp, left, right, norm_eh, eh, n]
        else:
            row[MAX_COUNT], row[MAX_LABEL] = take("<II")
        if nodes is not None:
            nodes[j, :] = row
        for q in range(npreds):
            ehk, norm_ehk, nk, label, label_count = take("<dfIII")
            if cls is not None:
                cls[j, q, :] = (ehk, norm_ehk, nk, label, label_count)
    return pos


def section_end(data: bytes, pos: int, k: int) -> int:
    """Where the tree of VW's model file at ``pos`` ends."""
    return _walk(data, pos, k, None)


def read_vw_section(data: bytes, pos: int, gstate: np.ndarray, k: int) -> int:
    """The tree of VW's model file at ``pos`` read into ``gstate``; returns its end."""
    return _walk(data, pos, k, gstate)


def vw_section(gstate: np.ndarray, k: int) -> bytes:
    """VW's ``save_load_tree``: the header (K - 1 where VW writes ``k``: it writes 4 bytes of
    its problems' count), then each node and its classes' rows."""
    import struct

    head, nodes, cls = views(gstate, k)
    count = int(head[H_NODES])
    out = [struct.pack("<IIQQ?I", k - 1, count, k - 1, int(head[H_USED]),
                       bool(head[H_PROGRESS]), int(head[H_SWAP]))]  # fmt: skip
    for j in range(count):
        r = nodes[j]
        internal = r[INTERNAL] != 0.0
        out.append(struct.pack("<III?", int(r[PARENT]), int(r[NPREDS]), int(r[MIN_COUNT]),
                               internal))  # fmt: skip
        if internal:
            out.append(struct.pack("<IIIfdI", int(r[BASE_PRED]), int(r[LEFT]), int(r[RIGHT]),
                                   r[NORM_EH], r[EH], int(r[N])))  # fmt: skip
        else:
            out.append(struct.pack("<II", int(r[MAX_COUNT]), int(r[MAX_LABEL])))
        for q in range(int(r[NPREDS])):
            c = cls[j, q]
            out.append(struct.pack("<dfIII", c[EHK], c[NORM_EHK], int(c[NK]), int(c[LABEL]),
                                   int(c[COUNT])))  # fmt: skip
    return b"".join(out)


def section_lines(gstate: np.ndarray, k: int, g) -> list[str]:  # noqa: ANN001
    """The readable model's lines of :func:`vw_section` (``g``: VW's float text)."""
    head, nodes, cls = views(gstate, k)
    count = int(head[H_NODES])
    text = [f"k = {k}nodes = {count} max predictors = {k - 1} predictors_used = "
            f"{int(head[H_USED])} progress = {int(head[H_PROGRESS])} swap_resist = "
            f"{int(head[H_SWAP])}\n"]
    for j in range(count):
        r = nodes[j]
        line = (f" parent = {int(r[PARENT])} preds = {int(r[NPREDS])} min_count = "
                f"{int(r[MIN_COUNT])} internal = {int(r[INTERNAL] != 0.0)}")
        if r[INTERNAL] != 0.0:
            line += (f" base_predictor = {int(r[BASE_PRED])} left = {int(r[LEFT])} right = "
                     f"{int(r[RIGHT])} norm_Eh = {g(F32(r[NORM_EH]))} Eh = {g(r[EH])} n = "
                     f"{int(r[N])}\n")
        else:
            line += f" max_count = {int(r[MAX_COUNT])} max_count_label = {int(r[MAX_LABEL])}\n"
        text.append(line)
        for q in range(int(r[NPREDS])):
            c = cls[j, q]
            text.append(f"  Ehk = {g(c[EHK])} norm_Ehk = {g(F32(c[NORM_EHK]))} nk = "
                        f"{int(c[NK])} label = {int(c[LABEL])} label_count = {int(c[COUNT])}\n")
    return text
