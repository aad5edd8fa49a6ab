"""Batch coordinate descent: cyclic (``cd``) and stochastic (``scd``).

Both minimise, over the hashed features of the whole input held in memory::

    F(w) = (1/W) Σ a_i ℓ(w·x_i + base_i, y_i) + l1 ‖w‖₁ + (l2/2) ‖w‖²,   W = Σ a_i

with sl's losses (squared = (p − y)²).  One coordinate j at a time, the
others fixed; with the predictions p_i kept current, a coordinate costs
O(non-zeros of column j).  G_j = ∂/∂w_j of the loss part, H_j a curvature:

``cd`` (the lecture notes' Algorithm 1, Dhingra et al. Algorithm 1): every
    column in turn, each epoch.
    squared:  exact minimisation, ``w_j ← S(H_j w_j − G_j, l1) / (H_j + l2)`` with
              ``H_j = (2/W) Σ a_i x_ij²`` and S the soft-thresholding operator.
    logistic: the same proximal Newton step with the exact curvature
              ``H_j = (1/W) Σ a_i σ_i (1 − σ_i) x_ij²``, then a backtracking line
              search with Tseng & Yun's Armijo rule on the one-dimensional
              objective (as glmnet-style coordinate solvers do); always a decrease.
    hinge:    exact minimisation of the piecewise-linear (plus ℓ2²) objective
              along j: its derivative is non-decreasing, the kinks are sorted
              and walked to the point where the subgradient contains 0.
``scd`` (Shalev-Shwartz & Tewari, Algorithm 2): uniformly random columns, a
    step with the curvature bound ``β (1/W) Σ a_i x_ij²`` (β = 2 for squared,
    1/4 for logistic), which majorises the loss along j, so each step
    decreases F whatever the scale of the features; hinge takes the exact
    step of ``cd``.  An epoch is as many draws as there are columns.

The data are a column-major copy of the input (:class:`Columns`): per active
column its non-zeros (row, value), duplicates within a row summed.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn._jit import jit, jit_inline
from streamlearn.learners import sgd
from streamlearn.learners.base import (
    LearnerSpec,
    account,
    begin_example,
    make_params,
    zero_gstate,
)
from streamlearn.losses import HINGE, LOGISTIC, loss

CYCLIC = 0
STOCHASTIC = 1
ARMIJO = 1e-3  # Tseng & Yun's sigma
MAX_HALVINGS = 50
ZERO_PARAMS = make_params(holdout_period=0)  # begin_example reads the holdout period only


@jit_inline
def _soft(v, t):
    if v > t:
        return v - t
    if v < -t:
        return v + t
    return 0.0


@jit_inline
def _prox_step(w, G, H, l1, l2):
    """argmin_v G (v − w) + H/2 (v − w)² + l1 |v| + l2/2 v²."""
    den = H + l2
    if den <= 0.0:
        return w
    return _soft(H * w - G, l1) / den


@jit_inline
def _along(loss_id, lo, hi, rows, vals, y, a, p, d, inv_w):
    """(1/W) Σ a_i ℓ(p_i + d x_ij, y_i) over column j's rows (the rows it moves)."""
    s = 0.0
    for k in range(lo, hi):
        i = rows[k]
        s += a[i] * loss(loss_id, p[i] + d * vals[k], y[i])
    return s * inv_w


@jit_inline
def _logistic(method, lo, hi, rows, vals, hsq_j, y, a, p, w, l1, l2, inv_w):
    G = 0.0
    H = 0.0
    for k in range(lo, hi):
        i = rows[k]
        m = y[i] * p[i]
        # σ(−m) without overflow
        if m > 0.0:
            e = math.exp(-m)
            s = e / (1.0 + e)
        else:
            s = 1.0 / (1.0 + math.exp(m))
        x = vals[k]
        G -= a[i] * y[i] * s * x
        H += a[i] * s * (1.0 - s) * x * x
    G *= inv_w
    if method == STOCHASTIC:
        return _prox_step(w, G, 0.25 * hsq_j, l1, l2)
    H *= inv_w
    v = _prox_step(w, G, H, l1, l2)
    d = v - w
    if d == 0.0:
        return w
    # Tseng & Yun: accept the largest 2^-k with F(w + αd) − F(w) ≤ σ α Δ
    delta = G * d + l1 * (abs(v) - abs(w))
    if delta >= 0.0:
        return w
    base = _along(LOGISTIC, lo, hi, rows, vals, y, a, p, 0.0, inv_w)
    f0 = base + l1 * abs(w) + 0.5 * l2 * w * w
    alpha = 1.0
    for _ in range(MAX_HALVINGS):
        u = w + alpha * d
        f = _along(LOGISTIC, lo, hi, rows, vals, y, a, p, alpha * d, inv_w)
        f += l1 * abs(u) + 0.5 * l2 * u * u
        if f - f0 <= ARMIJO * alpha * delta:
            return u
        alpha *= 0.5
    return w


@jit_inline
def _hinge(lo, hi, rows, vals, y, a, p, w, l1, l2, inv_w, kinks, incs):
    """Exact argmin over v of (1/W) Σ a_i max(0, 1 − y_i (q_i + v x_ij)) + l1|v| + l2/2 v².

    ``q_i = p_i − w x_ij``.  The derivative is non-decreasing and piecewise
    (s + l2 v): each kink of a term adds ``c_i |y_i x_ij|`` to s, the kink
    of l1|v| at 0 adds 2 l1.
    """
    m = 0
    s = -l1
    for k in range(lo, hi):
        x = vals[k]
        if x == 0.0:
            continue
        i = rows[k]
        u = y[i] * x
        c = a[i] * inv_w
        q = p[i] - w * x
        kinks[m] = (1.0 - y[i] * q) / u
        incs[m] = c * abs(u)
        m += 1
        if u > 0.0:
            s -= c * u  # active below its kink
    if l1 > 0.0:
        kinks[m] = 0.0
        incs[m] = 2.0 * l1
        m += 1
    order = np.argsort(kinks[:m])
    left = -np.inf
    for r in range(m + 1):
        right = kinks[order[r]] if r < m else np.inf
        # on (left, right) the derivative is s + l2 v
        if l2 > 0.0:
            v = -s / l2
            if left < v < right:
                return v
        elif s == 0.0 and left < right:
            # flat: every point of the interval is a minimiser; move as little as possible
            return min(max(w, left), right) if math.isfinite(left) or math.isfinite(right) else w
        if r == m:
            break
        # at the kink: the subgradient is [s + l2 b, s + inc + l2 b]
        b = right
        inc = incs[order[r]]
        if s + l2 * b <= 0.0 <= s + inc + l2 * b:
            return b
        s += inc
        left = right
    return w  # unbounded below along j (cannot happen with hinge: kept for safety)


@jit
def epoch(method, loss_id, order, colptr, rows, vals, avals, hsq, y, a, p, w, l1, l2, inv_w,
          kinks, incs):  # fmt: skip
    """Update the coordinates ``order`` (indices of active columns) in turn.

    ``p`` (predictions, base included) and ``w`` are updated in place.  For
    squared loss ``p`` holds the residuals ``p − y`` (``y`` is not read) and
    ``avals`` the values times their row's importance, so a coordinate
    gathers one array per non-zero.  Returns the largest |change| of a weight.
    """
    biggest = 0.0
    for n in range(order.shape[0]):
        c = order[n]
        lo = colptr[c]
        hi = colptr[c + 1]
        wj = w[c]
        if loss_id == HINGE:
            v = _hinge(lo, hi, rows, vals, y, a, p, wj, l1, l2, inv_w, kinks, incs)
        elif loss_id == LOGISTIC:
            v = _logistic(method, lo, hi, rows, vals, hsq[c], y, a, p, wj, l1, l2, inv_w)
        else:
            G = 0.0
            for k in range(lo, hi):
                G += p[rows[k]] * avals[k]
            v = _prox_step(wj, 2.0 * G * inv_w, 2.0 * hsq[c], l1, l2)
        d = v - wj
        if d != 0.0:
            for k in range(lo, hi):
                p[rows[k]] += d * vals[k]
            w[c] = v
            if abs(d) > biggest:
                biggest = abs(d)
    return biggest


@jit
def objective(loss_id, y, a, p, w, l1, l2, inv_w):
    """F(w) from the current predictions."""
    s = 0.0
    for i in range(y.shape[0]):
        s += a[i] * loss(loss_id, p[i], y[i])
    r1 = 0.0
    r2 = 0.0
    for c in range(w.shape[0]):
        r1 += abs(w[c])
        r2 += w[c] * w[c]
    return s * inv_w + l1 * r1 + 0.5 * l2 * r2


@jit
def column_curvature(colptr, vals, rows, a, inv_w):
    """(1/W) Σ a_i x_ij² per column."""
    out = np.zeros(colptr.shape[0] - 1)
    for c in range(out.shape[0]):
        s = 0.0
        for k in range(colptr[c], colptr[c + 1]):
            s += a[rows[k]] * vals[k] * vals[k]
        out[c] = s * inv_w
    return out


@jit
def predictions(colptr, rows, vals, w, p):
    """``p += X w`` (p holds the bases)."""
    for c in range(w.shape[0]):
        wc = w[c]
        if wc != 0.0:
            for k in range(colptr[c], colptr[c + 1]):
                p[rows[k]] += wc * vals[k]


def _spec(name: str) -> LearnerSpec:
    # a fitted model is weights alone: saving, predicting and continuing use sgd's kernels
    return LearnerSpec(
        name=name,
        ncols=1,
        fresh=(0.0,),
        train_batch=sgd.train_batch,
        current_weights=sgd.current_weights,
        rebase=sgd.rebase,
        init_gstate=zero_gstate,
    )


CD = _spec("cd")
SCD = _spec("scd")
SPECS = (CD, SCD)


@jit
def account_all(stats, rows_buf, loss_id, p, y, a, nfeat):
    """The run's figures at the final weights: each example scored once, as ``sl predict``."""
    for i in range(p.shape[0]):
        labeled, holdout = begin_example(stats, ZERO_PARAMS, y[i])
        account(stats, rows_buf, loss_id, p[i], y[i], a[i], nfeat[i], labeled, holdout)
