"""Stochastic variance-reduced gradient (VW's ``--svrg``, ``reductions/svrg.cc``).

Johnson & Zhang's SVRG as VW streams it, over passes grouped in stages of ``1 + s`` passes
(``--stage_size s``): the first pass of a stage sums the gradient at a *stable* point, the
next ``s`` take variance-reduced steps from it.

* **Slots.** Feature ``h`` owns row ``h mod 2^b`` (float32, VW's stride of 4): the inner
  weight (column 0: what predicts and what the model file keeps), the stable weight
  (column 1) and the stable point's summed gradient (column 2).
* **Prediction** (float32, VW's ``inline_predict``): the label's initial value plus
  ``Σ x·w_inner`` in the features' order, clipped to the labels' range (widened by each
  example learned, first: VW's ``count_label``).
* **Learning** a labeled example that is not held out, whatever its weight (VW's svrg
  reads the weight only as a factor).  In a stage's first pass, at its first such example,
  every row's stable weight is set to its inner weight and its summed gradient to 0 (VW's
  commit: O(2^b) once a stage), then each example adds ``g_s·x`` to the sums (``g_s`` =
  the loss's derivative at the stable point's clipped prediction, times the weight) and
  is counted (``n``).  In the other passes each example steps
  ``w -= η·((g_i − g_s)·x + G/n)`` with ``g_i`` the derivative at the inner prediction
  and ``G`` the row's summed gradient.  ``η`` is the learning rate as given: VW's svrg
  has no schedule and no decay.

``ns`` is each feature's namespace byte (0: a cross; empty: none crossed), for VW's count
of an example's features, which leaves crosses out under svrg.  ``conf`` is float64[4],
the run's state the entry keeps between batches (a new run starts afresh, as VW's does):
the pass, the pass of the last example learned (-1: none), ``n``, and ``s``.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.base import (
    G_T,
    GSTATE_SIZE,
    P_BINARY,
    P_LEARN,
    P_LOGISTIC_MAX,
    P_LOGISTIC_MIN,
    P_PROGRESS,
    P_QUANTILE_TAU,
    LearnerSpec,
    add_scored,
    begin_example,
    binary_loss,
    clip,
    row_span,
    write_raw,
)
from streamlearn.learners.losses import dloss32, loss32
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64

C_PASS = 0
C_PREV = 1
C_COUNT = 2
C_STAGE = 3


@jit_inline
def _dot(table, lo, hi, indices, values, mask, base, col):
    """``base + Σ x·w[col]`` over the example's features, in float32 (VW's order)."""
    p = F32(base)
    for t in range(lo, hi):
        p += F32(values[t]) * table[np.int64(U64(indices[t]) & mask), col]
    return p


@jit
def commit(table):
    """A stage's stable point: every row's inner weight, its summed gradient 0."""
    for r in range(table.shape[0]):
        table[r, 1] = table[r, 0]
        table[r, 2] = F32(0.0)


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, ns, conf, eta):  # fmt: skip
    """Predict, account and learn each example of the batch (see the module)."""
    mask = U64(table.shape[0] - 1)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    binary = params[P_BINARY]
    rate = F32(eta)
    n = indptr.shape[0] - 1
    for i in range(n):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        raw = _dot(table, lo, hi, indices, values, mask, bases[i], 0)
        write_raw(preds, indptr, i, F64(raw))
        learn = labeled and not holdout and params[P_LEARN] != 0.0
        p = F32(clip(gstate, params, loss_id, F64(raw), y, learn))
        lv = loss32(loss_id, p, F32(y), tau, lmin, lmax) if labeled else F32(0.0)
        shown = F64(lv)
        if labeled and binary != 0.0:
            shown = binary_loss(F64(p) if binary == 1.0 else 1.0, y, shown)
        nfeat = np.int64(hi - lo)
        if ns.shape[0] > 0:  # (VW's svrg counts no crosses: the parser's have byte 0)
            for t in range(lo, hi):
                nfeat -= ns[t] == 0
        add_scored(stats, rows, F64(p), y, a, nfeat, labeled, holdout, shown,
                   params[P_PROGRESS])  # fmt: skip
        preds[i] = F64(p)
        if not holdout:  # (VW's t: the weight of every example not held out)
            gstate[G_T] += a
        if not learn:
            continue
        fa = F32(a)
        fy = F32(y)
        gradient_pass = conf[C_PASS] % (conf[C_STAGE] + 1.0) == 0.0
        if gradient_pass and conf[C_PREV] != conf[C_PASS]:
            commit(table)
            conf[C_COUNT] = 0.0
        stable = _dot(table, lo, hi, indices, values, mask, bases[i], 1)
        ps = F32(clip(gstate, params, loss_id, F64(stable), y, False))
        g_stable = dloss32(loss_id, ps, fy, tau, lmin, lmax) * fa
        if gradient_pass:  # the stable point's gradient
            for t in range(lo, hi):
                r = np.int64(U64(indices[t]) & mask)
                table[r, 2] += g_stable * F32(values[t])
            conf[C_COUNT] += 1.0
        else:
            d = dloss32(loss_id, p, fy, tau, lmin, lmax) * fa - g_stable
            norm = F32(conf[C_COUNT])
            for t in range(lo, hi):
                r = np.int64(U64(indices[t]) & mask)
                table[r, 0] -= rate * (d * F32(values[t]) + fdiv(table[r, 2], norm))
        conf[C_PREV] = conf[C_PASS]


@jit
def current_weights(table, gstate, params, slots, out):
    for j in range(slots.shape[0]):
        out[j] = table[slots[j], 0]


@jit
def rebase(table, gstate, params):
    return


def init_gstate(params: np.ndarray) -> np.ndarray:  # noqa: ARG001
    return np.zeros(GSTATE_SIZE)


def spec() -> LearnerSpec:
    """The table of ``--svrg``: the inner weight, the stable one, its summed gradient."""
    return LearnerSpec(name="svrg", ncols=4, fresh=(0.0,) * 4, train_batch=train_batch,
                       current_weights=current_weights, rebase=rebase,
                       init_gstate=init_gstate, dtype=np.float32)  # fmt: skip
