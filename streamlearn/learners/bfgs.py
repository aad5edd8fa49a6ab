"""L-BFGS over passes (VW's ``--bfgs``, ``reductions/bfgs.cc``: Nocedal 1980, Liu and Nocedal 1989).

A batch learner run pass by pass through the online driver: :func:`train_batch` walks the
examples of a pass, :func:`finish` (VW's ``end_pass`` and ``process_pass``) takes the step
between passes.  Per slot, as VW's stride of 4 floats plus its correction memory:

* column 0 the weight x, 1 the gradient g, 2 the direction d, 3 the preconditioner
  (the diagonal curvature Σ a f''(p) x², then its inverse), then ``2m`` floats (``m`` =
  ``--mem``): the last gradient and weight and the m pairs (y, s) of L-BFGS, rotating.

Passes, as VW's state machine:

1. the first pass computes the gradient, the loss sum and the preconditioner; at its end
   (A) the first direction is ``-H0 g`` (``bfgs_iter_start``), and the next pass computes
   the curvature along it (VW's ``first_hessian_on``);
2. a curvature pass sums ``(d·x)² f''(p) a`` with the predictions of the gradient pass
   before it (the weights have not moved since: this kernel recomputes them), and at its
   end (C) the step is ``-g·d / curvature`` and the weights move;
3. every later pass is a gradient pass; at its end (B) the Wolfe conditions are checked:
   a failed line search halves the step (B1), else (B2) the two-loop recursion gives the
   next direction and the weights move by a step of 1 (``--hessian_on``: a curvature pass
   first).  The run stops when the relative decrease falls below ``--termination``.

``--l2`` λ adds ``λ/2 |x|²`` to the loss sum and ``λ x`` to the gradient at each pass end, λ
to the curvature's diagonal and ``λ |d|²`` to the curvature.  Progressive statistics: each
example's loss at the prediction the pass made (the curvature pass: its gradient pass's).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.base import (
    GSTATE_SIZE,
    P_BFGS_HESSIAN,
    P_BFGS_MEM,
    P_BFGS_PASSES,
    P_BFGS_TERM,
    P_BINARY,
    P_L2,
    P_LEARN,
    P_PROGRESS,
    LearnerSpec,
    add_scored,
    begin_example,
    binary_loss,
    clip,
    row_span,
)
from streamlearn.learners.losses import LOGISTIC, SQUARED, dloss32, expf, loss32
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64

W_XT, W_GT, W_DIR, W_COND = 0, 1, 2, 3
MEM = 4
MAX_PRECOND_RATIO = F32(10000.0)

B_FIRST = GSTATE_SIZE  # first pass (1/0)
B_GRAD = GSTATE_SIZE + 1  # gradient pass (else curvature)
B_PRECOND = GSTATE_SIZE + 2  # preconditioner pass
B_PASS = GSTATE_SIZE + 3  # passes finished (VW's current_pass)
B_FINAL = GSTATE_SIZE + 4  # VW's final_pass
B_LASTJ = GSTATE_SIZE + 5
B_ORIGIN = GSTATE_SIZE + 6
B_LOSS = GSTATE_SIZE + 7
B_PREV = GSTATE_SIZE + 8
B_STEP = GSTATE_SIZE + 9  # float32
B_IWS = GSTATE_SIZE + 10  # importance weight sum
B_CURV = GSTATE_SIZE + 11
B_BACKSTEP = GSTATE_SIZE + 12
B_DONE = GSTATE_SIZE + 13  # 1 once no pass is left (VW's set_done)
B_RHO = GSTATE_SIZE + 14  # rho[m], then alpha[m]


@jit_inline
def second_derivative(loss_id, p, y, lo, hi):
    """VW's ``second_derivative`` in float32 (squared: 2 inside the label range, else 0)."""
    if loss_id == LOGISTIC:
        if y >= F32(1.0) or y <= F32(-1.0):
            q = F32(1.0) / (F32(1.0) + expf(y * p))
            return q * (F32(1.0) - q)
        s = (y + F32(1.0)) / F32(2.0)
        q1 = F32(1.0) / (F32(1.0) + expf(p))
        q0 = F32(1.0) / (F32(1.0) + expf(-p))
        return s * (q1 * (F32(1.0) - q1)) + (F32(1.0) - s) * (q0 * (F32(1.0) - q0))
    if loss_id == SQUARED:
        return F32(2.0) if p <= F32(hi) and p >= F32(lo) else F32(0.0)
    return F32(2.0)  # classic


@jit
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    n = indptr.shape[0] - 1
    active = gstate[B_PASS] <= gstate[B_FINAL]
    binary = params[P_BINARY]
    for i in range(n):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        extend = labeled and not holdout and params[P_LEARN] != 0.0
        p = F32(bases[i])
        for t in range(lo, hi):
            p += table[indices[t], W_XT] * F32(values[t])
        pc = F32(clip(gstate, params, loss_id, F64(p), y, extend))
        preds[i] = F64(pc)
        lv = F64(loss32(loss_id, pc, F32(y))) if labeled else 0.0
        if extend and a > 0.0 and active:
            if gstate[B_FIRST] != 0.0:
                gstate[B_IWS] += a
            a32 = F32(a)
            if gstate[B_GRAD] != 0.0:
                g = dloss32(loss_id, pc, F32(y)) * a32
                for t in range(lo, hi):
                    j = indices[t]
                    table[j, W_GT] += g * F32(values[t])
                gstate[B_LOSS] += F64(F32(lv) * a32)
            else:
                dx = F32(bases[i])
                for t in range(lo, hi):
                    dx += table[indices[t], W_DIR] * F32(values[t])
                sd = second_derivative(loss_id, pc, F32(y), gstate[14], gstate[15])
                gstate[B_CURV] += F64(dx) * F64(dx) * F64(sd) * a
            if gstate[B_PRECOND] != 0.0:
                c = second_derivative(loss_id, pc, F32(y), gstate[14], gstate[15]) * a32
                for t in range(lo, hi):
                    x = F32(values[t])
                    table[indices[t], W_COND] += c * x * x
        if labeled and binary != 0.0:  # (VW's binary, above: its 0/1 loss is the one shown)
            lv = binary_loss(pc if binary == 1.0 else 1.0, y, lv)
        add_scored(stats, rows, F64(pc), y, a, hi - lo, labeled, holdout, lv, params[P_PROGRESS])


@jit_inline
def _mi(k, ms):
    return MEM + (k % ms)


@jit
def finish(table, gstate, params):
    """VW's ``end_pass``: :func:`process_pass` while passes remain."""
    if gstate[B_PASS] < gstate[B_FINAL]:
        status = process_pass(table, gstate, params)
        if status != 0 and gstate[B_FINAL] > gstate[B_PASS]:
            gstate[B_FINAL] = gstate[B_PASS]
        else:
            table[:, W_COND] = 0.0
        if gstate[B_FINAL] == gstate[B_PASS]:
            gstate[B_DONE] = 1.0
    elif gstate[B_PASS] == gstate[B_FINAL]:
        gstate[B_PASS] += 1.0


@jit
def process_pass(table, gstate, params):  # noqa: C901 - VW's one state machine
    m = int(params[P_BFGS_MEM])
    ms = 2 * m if m > 0 else 1
    l2 = F32(params[P_L2])
    nslots = table.shape[0]
    status = 0
    # finalize_preconditioner
    max_h = F32(0.0)
    for j in range(nslots):
        c = table[j, W_COND] + l2
        if c > max_h:
            max_h = c
        if c > F32(0.0):
            c = F32(1.0) / c
        table[j, W_COND] = c
    max_pre = F32(0.0) if max_h == F32(0.0) else MAX_PRECOND_RATIO / max_h
    for j in range(nslots):
        c = table[j, W_COND]
        if math.isinf(c) or c > max_pre:
            table[j, W_COND] = max_pre
    origin = int(gstate[B_ORIGIN])
    lastj = int(gstate[B_LASTJ])
    rho = gstate[B_RHO : B_RHO + max(m, 1)]
    alpha = gstate[B_RHO + max(m, 1) : B_RHO + 2 * max(m, 1)]
    if gstate[B_FIRST] != 0.0:
        if l2 > F32(0.0):
            gstate[B_LOSS] += _add_regularization(table, l2)
        gstate[B_PREV] = gstate[B_LOSS]
        gstate[B_LOSS] = 0.0
        gstate[B_CURV] = 0.0
        # bfgs_iter_start
        origin = 0
        for j in range(nslots):
            if m > 0:
                table[j, _mi(1 + origin, ms)] = table[j, W_XT]
            table[j, _mi(origin, ms)] = table[j, W_GT]
            table[j, W_DIR] = -table[j, W_COND] * table[j, W_GT]
            table[j, W_GT] = 0.0
        lastj = 0
        gstate[B_GRAD] = 0.0  # first_hessian_on: a curvature pass next
    elif gstate[B_GRAD] != 0.0:
        if l2 > F32(0.0):
            gstate[B_LOSS] += _add_regularization(table, l2)
        step = F64(F32(gstate[B_STEP]))
        g0_d = 0.0
        for j in range(nslots):
            g0_d += F64(table[j, _mi(origin, ms)]) * table[j, W_DIR]
        wolfe1 = fdiv(gstate[B_LOSS] - gstate[B_PREV], step * g0_d)  # (C: nan when 0/0)
        new_step = 0.5 * step
        if math.isnan(F32(wolfe1)):
            gstate[B_STEP] = 0.0
            status = 2
        elif gstate[B_BACKSTEP] != 0.0 and (wolfe1 < 0.01 or gstate[B_LOSS] > gstate[B_PREV]):
            _update_weight(table, F32(-step + new_step))
            gstate[B_STEP] = F64(F32(new_step))
            table[:, W_GT] = 0.0
            gstate[B_LOSS] = 0.0
        else:
            rel = fdiv(gstate[B_PREV] - gstate[B_LOSS], gstate[B_PREV])
            if (not math.isnan(F32(rel)) and gstate[B_BACKSTEP] != 0.0
                    and abs(rel) < F64(F32(params[P_BFGS_TERM]))):  # fmt: skip
                status = 2
            gstate[B_PREV] = gstate[B_LOSS]
            gstate[B_LOSS] = 0.0
            gstate[B_CURV] = 0.0
            gstate[B_STEP] = 1.0
            ok, lastj, origin = _iter_middle(table, m, ms, rho, alpha, lastj, origin)
            if not ok:
                gstate[B_STEP] = 0.0
                status = 1
            if params[P_BFGS_HESSIAN] != 0.0:
                gstate[B_GRAD] = 0.0
            else:
                _update_weight(table, F32(gstate[B_STEP]))
    else:
        if l2 > F32(0.0):
            rd = 0.0
            for j in range(nslots):
                rd += F64(l2) * table[j, W_DIR] * table[j, W_DIR]
            gstate[B_CURV] += rd
        dd0 = 0.0
        for j in range(nslots):
            dd0 += F64(table[j, _mi(origin, ms)]) * table[j, W_DIR]
        dd = F32(dd0)
        if gstate[B_CURV] == 0.0 and dd != F32(0.0):
            gstate[B_STEP] = 0.0
            status = 1
        elif dd == F32(0.0):
            gstate[B_STEP] = 0.0
            status = 2
        else:
            gstate[B_STEP] = F64(fdiv(-dd, F32(gstate[B_CURV])))
        _update_weight(table, F32(gstate[B_STEP]))
        gstate[B_GRAD] = 1.0
    gstate[B_ORIGIN] = origin
    gstate[B_LASTJ] = lastj
    gstate[B_PASS] += 1.0
    gstate[B_FIRST] = 0.0
    gstate[B_PRECOND] = 0.0
    gstate[B_BACKSTEP] = 1.0  # VW's init_driver
    return status


@jit_inline
def _add_regularization(table, l2):
    ret = 0.0
    for j in range(table.shape[0]):
        w = table[j, W_XT]
        table[j, W_GT] += l2 * w
        ret += 0.5 * F64(l2) * F64(w) * F64(w)
    return ret


@jit_inline
def _update_weight(table, step):
    for j in range(table.shape[0]):
        table[j, W_XT] += step * table[j, W_DIR]


@jit_inline
def _iter_middle(table, m, ms, rho, alpha, lastj, origin):
    """VW's ``bfgs_iter_middle``: the next direction (conjugate gradient when m = 0, else
    the two-loop recursion), and the memory shifted."""
    nslots = table.shape[0]
    if m == 0:
        g_hy = 0.0
        g_hg = 0.0
        for j in range(nslots):
            g = table[j, _mi(origin, ms)]
            yv = table[j, W_GT] - g
            g_hy += F64(table[j, W_GT]) * table[j, W_COND] * yv
            g_hg += F64(g) * table[j, W_COND] * g
        beta = F32(fdiv(g_hy, g_hg))  # (C: nan when no gradient is left, then 0)
        if beta < F32(0.0) or math.isnan(beta):
            beta = F32(0.0)
        for j in range(nslots):
            table[j, _mi(origin, ms)] = table[j, W_GT]
            table[j, W_DIR] *= beta
            table[j, W_DIR] -= table[j, W_COND] * table[j, W_GT]
            table[j, W_GT] = 0.0
        return True, lastj, origin
    y_s = 0.0
    y_hy = 0.0
    s_q = 0.0
    for j in range(nslots):
        yv = table[j, W_GT] - table[j, _mi(origin, ms)]
        sv = table[j, W_XT] - table[j, _mi(1 + origin, ms)]
        table[j, _mi(origin, ms)] = yv
        table[j, _mi(1 + origin, ms)] = sv
        table[j, W_DIR] = table[j, W_GT]
        y_s += F64(yv) * sv
        y_hy += F64(yv) * yv * table[j, W_COND]
        s_q += F64(sv) * table[j, W_GT]
    if y_s <= 0.0 or y_hy <= 0.0:
        return False, lastj, origin
    rho[0] = 1.0 / y_s
    gamma = F32(y_s / y_hy)
    for jj in range(lastj):
        alpha[jj] = rho[jj] * s_q
        s_q = 0.0
        for j in range(nslots):
            table[j, W_DIR] -= F32(alpha[jj]) * table[j, _mi(2 * jj + origin, ms)]
            s_q += F64(table[j, _mi(2 * jj + 3 + origin, ms)]) * table[j, W_DIR]
    alpha[lastj] = rho[lastj] * s_q
    y_r = 0.0
    for j in range(nslots):
        table[j, W_DIR] -= F32(alpha[lastj]) * table[j, _mi(2 * lastj + origin, ms)]
        table[j, W_DIR] *= gamma * table[j, W_COND]
        y_r += F64(table[j, _mi(2 * lastj + origin, ms)]) * table[j, W_DIR]
    for jj in range(lastj, 0, -1):
        coef = alpha[jj] - rho[jj] * y_r
        y_r = 0.0
        for j in range(nslots):
            table[j, W_DIR] += F32(coef) * table[j, _mi(2 * jj + 1 + origin, ms)]
            y_r += F64(table[j, _mi(2 * jj - 2 + origin, ms)]) * table[j, W_DIR]
    coef = alpha[0] - rho[0] * y_r
    for j in range(nslots):
        table[j, W_DIR] = -table[j, W_DIR] - F32(coef) * table[j, _mi(1 + origin, ms)]
    lastj = lastj + 1 if lastj < m - 1 else m - 1
    origin = (origin + ms - 2) % ms
    for j in range(nslots):
        table[j, _mi(origin, ms)] = table[j, W_GT]
        table[j, _mi(1 + origin, ms)] = table[j, W_XT]
        table[j, W_GT] = 0.0
    for jj in range(lastj, 0, -1):
        rho[jj] = rho[jj - 1]
    return True, lastj, origin


@jit
def current_weights(table, gstate, params, slots, out):
    for k in range(slots.shape[0]):
        out[k] = table[slots[k], W_XT]


@jit
def rebase(table, gstate, params):
    return


def stopped(gstate: np.ndarray) -> bool:
    """No pass is left: the passes asked for are done, or it converged (VW's ``set_done``)."""
    return bool(gstate[B_DONE])


def init_gstate(params: np.ndarray) -> np.ndarray:
    m = max(int(params[P_BFGS_MEM]), 1)
    g = np.zeros(B_RHO + 2 * m)
    g[B_FIRST] = g[B_GRAD] = g[B_PRECOND] = 1.0
    g[B_FINAL] = params[P_BFGS_PASSES]
    return g


def spec(mem: int) -> LearnerSpec:
    """The table of ``--mem`` m: 4 columns and 2m (1 when m = 0) of correction memory."""
    ms = 2 * mem if mem > 0 else 1
    return LearnerSpec(
        name=f"bfgs{mem}", ncols=4 + ms, fresh=(0.0,) * (4 + ms), train_batch=train_batch,
        current_weights=current_weights, rebase=rebase, init_gstate=init_gstate,
        dtype=np.float32, stored_cols=1, finish=finish, stopped=stopped,
    )  # fmt: skip
