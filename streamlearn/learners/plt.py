"""Probabilistic label trees (VW's ``--plt K``, ``--kary_tree``, ``--threshold``,
``--top_k``, ``--probabilities``): K labels as the leaves of a k-ary tree of logistic
problems over gd, in one table.

As VW's ``reductions/plt.cc`` (Jasinska-Kobus et al. 2020, "Probabilistic label trees for
extreme multi-label classification") over its scorer (identity link) and gd:

* **Tree.**  ``t`` nodes (VW's formula, :func:`tree_size`), the first ``ti`` internal:
  node n's children are ``kary·n + 1 .. kary·n + kary``; leaf ``ti + l`` is label ``l``.
  Node n is problem n: feature slot h's weight at ``(h·s + n) mod 2^b``, ``s`` = t
  rounded up to a power of 2.  Each node keeps its own normalizer sums (gd's per-model
  state) and its own clock ``nodes_time`` (gd's ``t`` under ``--sgd``).
* **Learning** a labeled example (its classes, 0-based): the positive nodes are each
  class's leaf (below ``t``) and its ancestors; the negative nodes the children of the
  internal positive nodes that are not positive.  Each positive node learns +1, then each
  negative node -1 (importance 1), in the order VW's ``std::unordered_set`` lists them
  (libstdc++'s: a linked list of buckets ``n mod B``, B grown along 13, 29, 59, ... and
  kept across examples, as VW clears and reuses the sets: :mod:`.plt_std`); gd's clock
  is the node's (its ``nodes_time`` + 1 less the unlabeled and held-out weight seen).
  The example's loss is the sum of the nodes' logistic losses (of their clipped scores,
  before each step).  VW predicts before it learns: the sets are filled twice, as VW's.
* **Prediction.**  A node's conditional probability is ``σ(raw score)`` (unclipped, in
  float32), a leaf's the product down its path.  ``--top_k k``: the k leaves of highest
  probability, best first, by VW's ``std::push_heap``/``pop_heap`` (:mod:`.plt_std`);
  else the leaves above ``--threshold`` in VW's depth-first order.
  Under ``-t`` (or held out) a labeled example's loss is the same sum without learning;
  VW's precision/recall at k, or Hamming loss and micro precision/recall, are kept in
  the run's part of ``gstate`` (:func:`summary_lines`).

The global state (:func:`layout`): gd's, each node's normalizer sums (``G_CLASS``), the
tree's header (:data:`H_K` ...), ``nodes_time`` (kept with a model, VW's section), and the
run's part (the counts VW prints at the end, its sets' bucket counts; reset when a run
starts).  ``preds`` is float64[n, 1 + 2W] (W: :func:`width`): column 0 the number of
labels predicted, then the labels in VW's order, then their probabilities.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    GSTATE_SIZE,
    P_ADAPTIVE,
    P_LEARN,
    P_NORMALIZED,
    P_PROGRESS,
    P_T0,
    S_N,
    LearnerSpec,
    begin_example,
    row_span,
)
from streamlearn.learners.csoaa import account
from streamlearn.learners.ect import _score
from streamlearn.learners.log_multi import _raw
from streamlearn.learners.losses import expf, loss32
from streamlearn.learners.oaa import G_CLASS, prediction_range, widen
from streamlearn.learners.plt_std import (
    EMPTY,
    MAX_BUCKETS,
    clear,
    heap_pop,
    heap_push,
    insert,
    listed,
)
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64

VW_VERSION = "9.11.9"
"""The version sl's VW model files of a tree name (VW refuses a tree of a model before 9.7)."""

MAX_NODES = 20000
"""The most tree nodes sl's tree takes (VW's sets then stay within libstdc++'s first
bucket counts, :data:`~streamlearn.learners.plt_std.BUCKETS`)."""

H_K, H_KARY, H_T, H_TI = range(4)
HEADER = 4
(R_HU, R_TESTING, R_TP, R_FP, R_FN, R_EC, R_TOPK, R_POS_B, R_POS_NEXT, R_NEG_B,
 R_NEG_NEXT) = range(11)  # fmt: skip
"""The run's part: unlabeled and held-out weight (gd's clock leaves it out), whether the
run only predicts, VW's counts (tp, fp, fn, examples), ``--top_k``, the sets' bucket
counts and next resize; then p@i and r@i (K each)."""
RUN = 11


def tree_size(k: int, kary: int) -> tuple[int, int]:
    """VW's count of the tree's nodes and of its internal nodes, for K labels."""
    a = math.pow(kary, math.floor(math.log(k) / math.log(kary)))
    b = k - a
    c = math.ceil(b / (kary - 1.0))
    d = (kary * a - 1.0) / (kary - 1.0)
    e = k - (a - c)
    t = int(e + d)
    return t, t - k


def width(k: int, kary: int) -> int:
    """The most labels one prediction lists: every leaf position under the internal nodes
    (more than K when the tree's last internal node has children beyond it, which VW
    predicts as labels K and up)."""
    _, ti = tree_size(k, kary)
    return (kary - 1) * ti + 1


def stride(k: int, kary: int) -> int:
    """Slots per feature: the tree's nodes rounded up to a power of 2 (VW's feature width)."""
    t, _ = tree_size(k, kary)
    return 1 << max(t - 1, 0).bit_length()


def layout(k: int, kary: int) -> tuple[int, int, int, int, int]:
    """(the tree's header, its ``nodes_time``, the run's part, its p@i, the end) in
    ``gstate``."""
    t, _ = tree_size(k, kary)
    h0 = GSTATE_SIZE + 2 * t
    n0 = h0 + HEADER
    r0 = n0 + t
    a0 = r0 + RUN
    return h0, n0, r0, a0, a0 + 2 * k


def init_gstate(params: np.ndarray, k: int, kary: int) -> np.ndarray:
    """gd's global state, each node's sums (with ``--initial_t`` t0 > 0 node 0's as VW's),
    the tree's header and its clocks at ``--initial_t``."""
    h0, n0, r0, _, end = layout(k, kary)
    t, ti = tree_size(k, kary)
    gstate = np.zeros(end)
    gstate[gd.G_CONTRACTION] = 1.0
    t0 = F64(F32(params[P_T0]))
    if params[P_ADAPTIVE] == 0.0 and params[P_NORMALIZED] == 0.0 and t0 == 1.0:
        # (VW fills the clocks and node 0's sums before gd's set-up makes t0 1 for its plain
        # rules: 0 unless given; sl's configuration holds that 1 as if given, so an
        # --initial_t 1 given is read as none here)
        t0 = 0.0
    if t0 > 0.0:
        gstate[G_CLASS] = t0
        gstate[G_CLASS + 1] = t0
    gstate[h0:n0] = (k, kary, t, ti)
    gstate[n0:r0] = t0
    return gstate


@jit
def _nodes_to_update(labels, i, ti, t, kary, pst, pkeys, pnxt, pbk, pin, nst, nkeys, nnxt,
                     nbk, nin, porder):  # fmt: skip
    """VW's ``get_nodes_to_update``: the positive and negative sets of row ``i``."""
    clear(pst, pkeys, pbk, pin)
    clear(nst, nkeys, nbk, nin)
    m = int(labels[i, 0])
    if m > 0:
        for j in range(m):
            tn = int(labels[i, 1 + j]) + ti
            if tn < t:
                insert(pst, pkeys, pnxt, pbk, pin, tn)
                while tn > 0:
                    tn = int(math.floor(F32(tn - 1) / F32(kary)))
                    insert(pst, pkeys, pnxt, pbk, pin, tn)
        npos = listed(pst, pkeys, pnxt, porder)
        for q in range(npos):
            n = porder[q]
            if n < ti:
                for c in range(kary * n + 1, kary * n + kary + 1):
                    if c < t and not pin[c]:
                        insert(nst, nkeys, nnxt, nbk, nin, c)
    else:
        insert(nst, nkeys, nnxt, nbk, nin, 0)


@jit_inline
def _learn(table, gstate, params, loss_id, indices, values, lo, hi, n, y, t, step, mask,
           truncate, rule, slots, sums):  # fmt: skip
    """VW's scorer and gd learning node ``n`` toward ``y`` (importance 1): the range widened
    to ``y``, the score clipped to it, gd's step from it when its loss > 0 (gd's clock at
    ``t`` + 1, the normalizer sums at ``sums``); returns that score (before the step)."""
    widen(gstate, params, y)
    rlo, rhi = prediction_range(gstate, params, loss_id)
    p = _score(table, gstate, indices, values, lo, hi, n, step, mask, 0.0, truncate, rlo, rhi)
    # (VW's plain rate at a clock of 0 or less, unlabeled examples outnumbering the node's
    # updates: t^-q infinite or NaN, its update NaN, replaced by 0: nothing moves)
    stalled = not rule[0] and F32(F64(rule[6]) + t + 1.0) <= F32(0.0)
    if loss32(loss_id, p, F32(y)) > F32(0.0) and not stalled:
        gstate[G_T] = t + 1.0
        for j in range(lo, hi):
            slots[j] = (np.uint64(indices[j]) * np.uint64(step) + np.uint64(n)) & mask
        gd.step(table, gstate, sums, sums + 1, slots, values, lo, hi, p, F32(y), F32(1.0),
                loss_id, rule)  # fmt: skip
        if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
            gd.rebase(table, gstate, params)
    return p


@jit_inline
def _both(pst, pkeys, pnxt, nst, nkeys, nnxt, order, ys):
    """The positive nodes then the negative ones, in their sets' order, with their labels
    (+1, -1); their number."""
    npos = listed(pst, pkeys, pnxt, order)
    for q in range(npos):
        ys[q] = 1.0
    p = nst[0]
    m = npos
    while p != -1:
        order[m] = nkeys[p]
        ys[m] = -1.0
        m += 1
        p = nnxt[p]
    return m


@jit_inline
def _probs(table, gstate, indices, values, lo, hi, first, count, pn, step, mask, truncate,
           out):  # fmt: skip
    """``pn`` times each node's σ(raw score), nodes ``first .. first + count - 1``."""
    for j in range(count):
        raw = _raw(table, gstate, indices, values, lo, hi, first + j, step, mask, truncate)
        out[j] = pn * (F32(1.0) / (F32(1.0) + expf(-raw)))


@jit
def train_gd(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
             status, stats, rows, preds, head, times, run, p_at, r_at, threshold, top_k,
             width):  # fmt: skip
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    t0 = F64(rule[6])
    k = int(head[H_K])
    kary = int(head[H_KARY])
    t = int(head[H_T])
    ti = int(head[H_TI])
    step = 1
    while step < t:
        step *= 2
    mask = np.uint64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    if stats[S_N] == 0.0:  # a run starts: VW's counts and sets are new
        run[:] = 0.0
        p_at[:] = 0.0
        r_at[:] = 0.0
        run[R_POS_B] = 1.0
        run[R_NEG_B] = 1.0
    run[R_TOPK] = top_k
    learn_on = params[P_LEARN] != 0.0
    run[R_TESTING] = 0.0 if learn_on else 1.0
    pst = np.empty(4, dtype=np.int64)
    nst = np.empty(4, dtype=np.int64)
    pst[0], pst[1], pst[2], pst[3] = -1, 0, int(run[R_POS_B]), int(run[R_POS_NEXT])
    nst[0], nst[1], nst[2], nst[3] = -1, 0, int(run[R_NEG_B]), int(run[R_NEG_NEXT])
    pkeys = np.zeros(t + 1, dtype=np.int64)
    pnxt = np.zeros(t + 1, dtype=np.int64)
    nkeys = np.zeros(t + 1, dtype=np.int64)
    nnxt = np.zeros(t + 1, dtype=np.int64)
    pbk = np.full(MAX_BUCKETS, EMPTY, dtype=np.int64)
    nbk = np.full(MAX_BUCKETS, EMPTY, dtype=np.int64)
    pin = np.zeros(t + 1, dtype=np.bool_)
    nin = np.zeros(t + 1, dtype=np.bool_)
    order = np.zeros(2 * t + 2, dtype=np.int64)
    ys = np.zeros(2 * t + 2)
    qn = np.zeros(2 * (t + kary) + 2, dtype=np.int64)
    qp = np.zeros(2 * (t + kary) + 2, dtype=np.float32)
    kids = np.zeros(kary, dtype=np.float32)
    truth = np.zeros(k, dtype=np.bool_)
    thr = F32(threshold)
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i, :] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        m = int(labels[i, 0])
        labeled = m > 0
        _, holdout = begin_example(stats, params, 0.0 if labeled else np.nan)
        learning = labeled and not holdout and learn_on
        # VW's predict (before it learns): the loss of a labeled example without learning
        lv = F32(0.0)
        if labeled:
            _nodes_to_update(labels, i, ti, t, kary, pst, pkeys, pnxt, pbk, pin, nst, nkeys,
                             nnxt, nbk, nin, order)  # fmt: skip
            if not learning:
                rlo, rhi = prediction_range(gstate, params, loss_id)
                for q in range(_both(pst, pkeys, pnxt, nst, nkeys, nnxt, order, ys)):
                    p = _score(table, gstate, indices, values, lo, hi, order[q], step, mask,
                               0.0, truncate, rlo, rhi)  # fmt: skip
                    lv += loss32(loss_id, p, F32(ys[q]))
        ntrue = 0
        for j in range(m):
            c = int(labels[i, 1 + j])
            if c < k and not truth[c]:
                truth[c] = True
                ntrue += 1
        npred = 0
        preds[i, :] = 0.0
        _probs(table, gstate, indices, values, lo, hi, 0, 1, F32(1.0), step, mask, truncate,
               kids)  # fmt: skip
        size = 0
        if top_k == 0:
            if kids[0] > thr:
                qn[0] = 0
                qp[0] = kids[0]
                size = 1
        else:
            size = heap_push(qn, qp, 0, 0, kids[0])
        while size > 0:
            if top_k == 0:  # (depth first, as VW's vector used as a stack)
                size -= 1
                n = qn[size]
                pn = qp[size]
            else:
                n, pn, size = heap_pop(qn, qp, size)
                if n >= ti:
                    preds[i, 1 + npred] = n - ti
                    preds[i, 1 + width + npred] = pn
                    npred += 1
                    if npred >= top_k:
                        break
                    continue
            first = kary * n + 1
            _probs(table, gstate, indices, values, lo, hi, first, kary, pn, step, mask,
                   truncate, kids)  # fmt: skip
            for j in range(kary):
                c = first + j
                pc = kids[j]
                if top_k != 0:
                    size = heap_push(qn, qp, size, c, pc)
                elif pc > thr:
                    if c < ti:
                        qn[size] = c
                        qp[size] = pc
                        size += 1
                    else:
                        preds[i, 1 + npred] = c - ti
                        preds[i, 1 + width + npred] = pc
                        npred += 1
        if ntrue > 0 and top_k == 0:
            tp = 0
            for q in range(npred):
                c = int(preds[i, 1 + q])
                if c < k and truth[c]:
                    tp += 1
            run[R_TP] += tp
            run[R_FP] += npred - tp
            run[R_FN] += ntrue - tp
        elif ntrue > 0:
            tp_at = F32(0.0)
            for q in range(top_k):
                c = int(preds[i, 1 + q]) if q < npred else -1
                if 0 <= c < k and truth[c]:
                    tp_at += F32(1.0)
                p_at[q] = F32(F32(p_at[q]) + tp_at / F32(q + 1))
                r_at[q] = F32(F32(r_at[q]) + tp_at / F32(ntrue))
        for j in range(m):
            c = int(labels[i, 1 + j])
            if c < k:
                truth[c] = False
        run[R_EC] += 1.0
        preds[i, 0] = npred
        if learning:
            _nodes_to_update(labels, i, ti, t, kary, pst, pkeys, pnxt, pbk, pin, nst, nkeys,
                             nnxt, nbk, nin, order)  # fmt: skip
            before = gstate[G_T]
            lv = F32(0.0)
            for q in range(_both(pst, pkeys, pnxt, nst, nkeys, nnxt, order, ys)):
                n = order[q]
                clock = times[n]
                times[n] = F32(F32(clock) + F32(1.0))
                p = _learn(table, gstate, params, loss_id, indices, values, lo, hi, n, ys[q],
                           clock - run[R_HU] - t0, step, mask, truncate, rule, slots,
                           G_CLASS + 2 * n)  # fmt: skip
                lv += loss32(loss_id, p, F32(ys[q]))
            gstate[G_T] = before + 1.0
            gstate[G_N] += 1.0
        elif not labeled or holdout:
            run[R_HU] += 1.0  # (VW's clock leaves out the unlabeled and held-out weight)
        # (the row's example: its label and classes' text)
        account(stats, rows, F64(npred), F64(lv), 1.0, hi - lo, labeled, holdout,
                params[P_PROGRESS], F64(i))  # fmt: skip
    run[R_POS_B] = pst[2]
    run[R_POS_NEXT] = pst[3]
    run[R_NEG_B] = nst[2]
    run[R_NEG_NEXT] = nst[3]


def views(gstate: np.ndarray, k: int, kary: int) -> tuple[np.ndarray, ...]:
    """The tree's header, clocks, run's part, p@i and r@i: views of ``gstate``."""
    h0, n0, r0, a0, end = layout(k, kary)
    return gstate[h0:n0], gstate[n0:r0], gstate[r0:a0], gstate[a0 : a0 + k], gstate[a0 + k : end]


class Entry:
    """The kernel entry of a tree over K labels (``kary``-ary), predicting the labels above
    ``threshold`` or the ``top_k`` best."""

    wants_ns = False

    def __init__(self, k: int, kary: int = 2, threshold: float = 0.5, top_k: int = 0) -> None:
        self.k, self.kary, self.threshold, self.top_k = k, kary, threshold, top_k
        self.width = width(k, kary)

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        head, times, run, p_at, r_at = views(gstate, self.k, self.kary)
        train_gd(table, gstate, params, loss_id, indptr, indices, values, labels, weights,
                 bases, status, stats, rows, preds, head, times, run, p_at, r_at,
                 float(F32(self.threshold)), self.top_k, self.width)  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        return init_gstate(params, self.k, self.kary)


def spec(k: int, kary: int = 2, threshold: float = 0.5, top_k: int = 0) -> LearnerSpec:
    """The tree of ``k`` labels, ``kary``-ary, over gd."""
    entry = Entry(k, kary, threshold, top_k)
    return LearnerSpec(name="plt_gd", ncols=4, fresh=(0.0, 0.0, 0.0, 0.0),
                       train_batch=entry, current_weights=gd.current_weights, rebase=gd.rebase,
                       init_gstate=entry.init_gstate, dtype=np.float32, stored_cols=3)  # fmt: skip


def spec_of(k: int, words: tuple[str, ...]) -> LearnerSpec:
    """The tree of ``k`` labels its reduction's words (``TrainConfig.stack``) say (checked by
    ``reductions/plt.py``; here the last value of each is taken)."""

    def last(flag: str, default: str) -> str:
        if flag not in words:
            return default
        at = len(words) - words[::-1].index(flag)
        return words[at] if at < len(words) else default

    threshold = float(F32(float(last("--threshold", "0.5"))))
    return spec(k, int(last("--kary_tree", "2")), threshold, int(last("--top_k", "0")))


SPECS = (spec(2),)
"""A tree as :func:`streamlearn.learners.spec_by_name` finds it (a model's table read back;
the run's own spec comes from its configuration)."""


def summary_lines(gstate: np.ndarray, k: int, kary: int, threshold: float) -> list[str]:
    """VW's lines after its summary when the run only predicted (``finish``): p@i and r@i
    under ``--top_k``, else the Hamming loss and micro precision and recall."""
    _, _, run, p_at, r_at = views(gstate, k, kary)
    ec = run[R_EC]
    if run[R_TESTING] == 0.0 or ec <= 0:
        return []
    top_k = int(run[R_TOPK])
    out = []
    if top_k > 0:
        for i in range(top_k):
            out.append(f"p@{i + 1} = {float(F32(F32(p_at[i]) / F32(ec))):.6f}")
            out.append(f"r@{i + 1} = {float(F32(F32(r_at[i]) / F32(ec))):.6f}")
    elif F32(threshold) > 0:
        tp, fp, fn = run[R_TP], run[R_FP], run[R_FN]
        out.append(f"hamming loss = {_ratio(fp + fn, ec)}")
        out.append(f"micro-precision = {_ratio(tp, tp + fp)}")
        out.append(f"micro-recall = {_ratio(tp, tp + fn)}")
    return out


def _ratio(a: float, b: float) -> str:
    if b == 0:
        return "-nan" if a == 0 else "inf"
    return f"{a / b:.6f}"


# ---------------------------------------------------------------- VW's model file


def vw_section(gstate: np.ndarray, k: int, kary: int) -> bytes:
    """VW's ``save_load_tree``: ``nodes_time`` (its size, then each float)."""
    _, times, _, _, _ = views(gstate, k, kary)
    return struct.pack("<I", times.shape[0]) + times.astype("<f4").tobytes()


def section_end(data: bytes, pos: int, k: int, kary: int) -> int:
    """Where the tree's section of VW's model file at ``pos`` ends."""
    t, _ = tree_size(k, kary)
    if pos + 4 > len(data):
        raise ValueError("the model's --plt section is cut short")
    (n,) = struct.unpack_from("<I", data, pos)
    if n != t:
        raise ValueError(f"the model's --plt section has {n} nodes, its tree {t}")
    if pos + 4 + 4 * n > len(data):
        raise ValueError("the model's --plt section is cut short")
    return pos + 4 + 4 * n


def read_vw_section(data: bytes, pos: int, gstate: np.ndarray, k: int, kary: int) -> int:
    """The tree's clocks of VW's model file at ``pos`` into ``gstate``; returns its end."""
    end = section_end(data, pos, k, kary)
    _, times, _, _, _ = views(gstate, k, kary)
    times[:] = np.frombuffer(data, dtype="<f4", count=times.shape[0], offset=pos + 4)
    return end


def section_lines(gstate: np.ndarray, k: int, kary: int, g) -> list[str]:  # noqa: ANN001
    """The readable model's lines of :func:`vw_section` (``g``: VW's float text)."""
    _, times, _, _, _ = views(gstate, k, kary)
    out = [f"nodes_time.size() = {times.shape[0]}\n"]
    out += [f"nodes_time[{i}] = {g(F32(v))}\n" for i, v in enumerate(times.tolist())]
    return out
