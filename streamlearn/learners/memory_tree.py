"""Contextual memory tree (VW's ``--memory_tree N``): the kernels of
:mod:`streamlearn.learners.memory_tree_state`, which keeps the tree and says how it is walked.

As VW's ``reductions/memory_tree.cc`` (Sun, Krishnamurthy, Langford et al. 2019, "Contextual
Memory Trees"), operation for operation in float32 over gd in one table:

* **Problems.**  Router r is problem r, the leaf scorer problem N (``--memory_tree N``),
  label l's one-against-some problem N + 1 + l (``--oas``): VW's feature width N + 1 (+
  ``--max_number_of_labels``), rounded up to a power of 2 (``step``) for the slots: problem
  ``c`` of feature slot ``h`` at ``(h·step + c) mod 2^b``.  Each problem keeps its own
  normalizer sums (``G_CLASS + 2c``, as ``--oaa``'s classes).
* **Scores** (:func:`score`): gd's raw score from an initial value (VW's
  ``simple_label_reduction_features.initial``) times its l2 contraction (VW's
  ``partial_prediction``), and that score clipped to the label range (VW's ``pred.scalar``;
  NaN: 0).  :func:`learn`: VW's scorer and gd learning one problem toward a label with an
  importance.
* **Memories** (:func:`flatten`): an example's features as VW's ``flatten_features``
  flattens them (slot ``h·step mod 2^b``, sorted by slot then value, a slot met twice
  summed in float32) and their sum of squares; :func:`similarity` is VW's
  ``normalized_linear_prod`` of two of them (``a·b / √(|a|²|b|²)``, float32).
* **Pairs** (:func:`kprod`): VW's ``diag_kronecker_product_test``: the query's namespaces in
  its order, each shared one the products of the features of equal slot met walking both
  lists in their order (``v1·v2 / √(n1·n2)``, n the examples' sums of squares), the others
  the query's own.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import G_T
from streamlearn.learners.csoaa import account as _account
from streamlearn.learners.emt import flatten as _flatten_sorted
from streamlearn.learners.emt import inner
from streamlearn.learners.losses import loss32
from streamlearn.learners.oaa import G_CLASS, clipped, prediction_range, widen
from streamlearn.system.jit import fdiv, jit

F32 = np.float32
F64 = np.float64
U64 = np.uint64
I64 = np.int64


@jit
def score(table, gstate, params, loss_id, h, v, c, step, initial, truncate):
    """Problem ``c``'s (partial, clipped) score of the row ``h``/``v`` from ``initial``."""
    mask = U64(table.shape[0] - 1)
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(initial)
    for t in range(h.shape[0]):
        j = (U64(h[t]) * U64(step) + U64(c)) & mask
        w = F32(table[j, 0])
        if truncate:
            w = gd.trunc(w, grav)
        p += w * F32(v[t])
    partial = p * F32(gstate[gd.G_CONTRACTION])
    rlo, rhi = prediction_range(gstate, params, loss_id)
    scalar = F32(0.0) if partial != partial else clipped(partial, rlo, rhi)
    return partial, scalar


@jit
def learn(table, gstate, params, loss_id, h, v, c, step, initial, y, w, t, truncate, fs, fv):
    """VW's scorer and gd: problem ``c`` of the row learns ``y`` with importance ``w``
    (``fs``/``fv``: scratch of the row's length at least; ``t``: the weight of the examples
    learned before this one, VW's ``sd->t`` less its unlabeled and held-out weight, to which
    gd's plain rates add ``w``); the clipped score before it."""
    rule = gd.rule_of(params)
    widen(gstate, params, y)
    mask = U64(table.shape[0] - 1)
    n = h.shape[0]
    for t in range(n):
        fs[t] = (U64(h[t]) * U64(step) + U64(c)) & mask
        fv[t] = v[t]
    p = score(table, gstate, params, loss_id, h, v, c, step, initial, truncate)[1]
    if w > 0.0 and loss32(loss_id, p, F32(y)) > F32(0.0):
        gstate[G_T] = t + w
        gd.step(table, gstate, G_CLASS + 2 * c, G_CLASS + 2 * c + 1, fs, fv, 0, n, p, F32(y),
                F32(w), loss_id, rule)  # fmt: skip
        if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
            gd.rebase(table, gstate, params)
    return p


@jit
def flatten(h, v, step, mask, out_i, out_v):
    """VW's ``flatten_features`` of the row into ``out_i``/``out_v``: (count, Σ v²)."""
    n = h.shape[0]
    slots = np.empty(n, dtype=np.int64)
    for t in range(n):
        slots[t] = I64((U64(h[t]) * U64(step)) & U64(mask))
    end = _flatten_sorted(slots, v, 0, n, out_i, out_v, 0)
    sq = F32(0.0)
    for t in range(end):
        sq += F32(out_v[t]) * F32(out_v[t])
    return end, sq


@jit
def similarity(ai, av, asq, bi, bv, bsq):
    """VW's ``normalized_linear_prod`` of two flattened rows (float32)."""
    norm = F32(math.sqrt(F64(F32(asq) * F32(bsq))))
    dot = F32(0.0)
    if bi.shape[0] > 0:
        dot = inner(ai, av, 0, ai.shape[0], bi, bv, 0, bi.shape[0])
    return fdiv(dot, norm)


@jit
def kprod(h1, v1, ns1, h2, v2, ns2, denom, oh, ov):
    """VW's ``diag_kronecker_product_test`` of query 1 with memory 2 into ``oh``/``ov``
    (rows grouped by namespace, ``h`` VW's slot order); its length."""
    n = 0
    i = 0
    n1 = h1.shape[0]
    n2 = h2.shape[0]
    while i < n1:
        c = ns1[i]
        j = i
        while j < n1 and ns1[j] == c:
            j += 1
        k0 = 0
        while k0 < n2 and ns2[k0] != c:
            k0 += 1
        if k0 < n2:
            k1 = k0
            while k1 < n2 and ns2[k1] == c:
                k1 += 1
            a = i
            b = k0
            while a < j and b < k1:
                if h1[a] < h2[b]:
                    a += 1
                elif h1[a] > h2[b]:
                    b += 1
                else:
                    oh[n] = h1[a]
                    ov[n] = fdiv(F32(v1[a]) * F32(v2[b]), F32(denom))
                    n += 1
                    a += 1
                    b += 1
        else:
            for a in range(i, j):
                oh[n] = h1[a]
                ov[n] = v1[a]
                n += 1
        i = j
    return n


@jit
def account_unlabeled(stats, rows, pred, a, nfeat, progress, index):
    """``--oas``'s example counted as VW counts it (a scalar never labeled); ``index``: its
    row in the batch, for the table's columns."""
    _account(stats, rows, F64(pred), 0.0, a, nfeat, False, False, progress, F64(index))
