"""VW's ``--interact ab`` over gd: namespace a's features times namespace b's, matched by name.

As VW's ``reductions/interact.cc`` (above its scorer), for each example whose namespaces a and
b both start with an anchor feature of value 1 (VW's check; otherwise the example is gd's as it
is):

* a's features become products: first the two anchors' (a's slot, value 1), then, walking both
  namespaces in order, each pair of features at the same offset from their namespace's anchor
  (``(slot − anchor's slot) mod 2^b·stride``, VW's mask of its weights: numeric names ``|a 0:1
  13:v`` hash as the namespace's hash plus the number, so the offset is the name) gives a's
  slot with value ``x_a · x_b`` (float32); a feature of either side with no partner is
  dropped.  The offsets must rise in each namespace: where one falls, VW stops (the products
  so far kept; VW says so on standard output, sl does not).
* b's features leave the example (VW drops b from its list of namespaces);
* gd then predicts and learns the example as any other, its update rule, zero-loss gate and
  state unchanged; ``current features`` and ``total feature number`` count the example as it
  was read (VW restores its count before the table is written).

Rows are in VW's order (:func:`streamlearn.io.crosses.group_row`): a namespace's features
are one run, the constant last.  An example costs O(nnz).
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import G_N, G_T, score32, write_raw
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64


@jit_inline
def _run(ns, lo, hi, c):
    """The run ``[start, end)`` of namespace byte ``c`` in ``ns[lo:hi]`` (empty: end == start)."""
    q = lo
    while q < hi and ns[q] != c:
        q += 1
    e = q
    while e < hi and ns[e] == c:
        e += 1
    return q, e


@jit_inline
def interacted(indices, values, ns, lo, hi, n1, n2, wmask, slots, vals):
    """Row ``[lo:hi]`` as VW's interact hands it to gd, written into ``slots``/``vals``:
    its length, or -1 when the row is gd's as it is (a namespace missing, or without its
    anchor of value 1)."""
    a0, a1 = _run(ns, lo, hi, n1)
    b0, b1 = _run(ns, lo, hi, n2)
    if a0 == a1 or b0 == b1:
        return -1
    if F32(values[a0]) != F32(1.0) or F32(values[b0]) != F32(1.0):
        return -1
    m = 0
    for q in range(lo, hi):
        if q == b0:  # (b leaves the example)
            continue
        if b0 < q < b1:
            continue
        if q == a0:
            slots[m] = indices[a0]
            vals[m] = F64(F32(values[a0]) * F32(values[b0]))
            m += 1
            base1 = np.uint64(indices[a0]) & wmask
            base2 = np.uint64(indices[b0]) & wmask
            prev1 = np.uint64(0)
            prev2 = np.uint64(0)
            i1 = a0 + 1
            i2 = b0 + 1
            while i1 < a1 and i2 < b1:
                cur1 = ((np.uint64(indices[i1]) & wmask) - base1) & wmask
                cur2 = ((np.uint64(indices[i2]) & wmask) - base2) & wmask
                if cur1 < prev1 or cur2 < prev2:
                    break  # (VW: "interact features are out of order", the rest skipped)
                if cur1 == cur2:
                    slots[m] = indices[i1]
                    vals[m] = F64(F32(values[i1]) * F32(values[i2]))
                    m += 1
                    i1 += 1
                    i2 += 1
                elif cur1 < cur2:
                    i1 += 1
                else:
                    i2 += 1
                prev1 = cur1
                prev2 = cur2
            continue
        if a0 < q < a1:
            continue
        slots[m] = indices[q]
        vals[m] = values[q]
        m += 1
    return m


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, ns, conf):  # fmt: skip
    """gd's ``train_batch`` over each row as :func:`interacted` makes it (``conf``: the two
    namespace bytes and VW's mask of offsets, ``2^b·stride − 1``)."""
    rule = gd.rule_of(params)
    l1 = rule[9]
    n1 = conf[0]
    n2 = conf[1]
    wmask = np.uint64(conf[2])
    n = indptr.shape[0] - 1
    width = 0
    for i in range(n):
        width = max(width, indptr[i + 1] - indptr[i])
    slots = np.empty(width, dtype=indices.dtype)
    vals = np.empty(width, dtype=np.float64)
    for i in range(n):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo = np.int64(indptr[i])
        hi = np.int64(indptr[i + 1])
        m = interacted(indices, values, ns, lo, hi, n1, n2, wmask, slots, vals)
        if m < 0:
            m = hi - lo
            for q in range(m):
                slots[q] = indices[lo + q]
                vals[q] = values[lo + q]
        y = F32(labels[i])
        a = weights[i]
        grav = F32(gstate[gd.G_GRAVITY])
        p = F32(bases[i])
        if l1 > F32(0.0):
            for k in range(m):
                p += gd.trunc(F32(table[slots[k], 0]), grav) * F32(vals[k])
        else:
            for k in range(m):
                p += F32(table[slots[k], 0]) * F32(vals[k])
        p = p * F32(gstate[gd.G_CONTRACTION])
        write_raw(preds, indptr, i, F64(p))
        # (the example counted as it was read: VW restores its count before the table)
        pc, learn, lv = score32(stats, rows, gstate, params, loss_id, F64(p), F64(y), a, hi - lo)
        p = F32(pc)
        preds[i] = F64(p)
        if not learn:
            continue
        gstate[G_T] += a
        gstate[G_N] += 1.0
        if not lv > F32(0.0):
            continue  # gd's zero-loss gate
        gd.step(table, gstate, gd.G_NORM, gd.G_TOTAL, slots, vals, 0, m, p, y, F32(a), loss_id,
                rule)  # fmt: skip
        if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
            gd.rebase(table, gstate, params)
