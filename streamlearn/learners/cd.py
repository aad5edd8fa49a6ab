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
    logistic: ``sl train`` runs newGLMNET (:mod:`streamlearn.learners.glmnet`);
              here, for ``fit(..., active_set=False)``, the same proximal Newton
              step with the exact curvature ``H_j = (1/W) Σ a_i σ_i (1 − σ_i) x_ij²``,
              then a backtracking line search with Tseng & Yun's Armijo rule on the
              one-dimensional objective; always a decrease.
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

from streamlearn.learners import sgd
from streamlearn.learners.base import (
    LearnerSpec,
    account,
    begin_example,
    make_params,
    zero_gstate,
)
from streamlearn.learners.losses import HINGE, LOGISTIC, loss
from streamlearn.system.jit import jit, jit_inline

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
    gathers one array per non-zero.  Returns the largest |change| of a weight
    and, for squared loss, the change of the loss part (1/W) Σ a_i r_i² summed
    exactly step by step (``G d + H d²/2``; 0 for the other losses): no
    re-summation over the rows, so it shows changes far below F's rounding.
    """
    biggest = 0.0
    dL = 0.0
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
            G *= 2.0 * inv_w
            v = _prox_step(wj, G, 2.0 * hsq[c], l1, l2)
            dL += (G + hsq[c] * (v - wj)) * (v - wj)
        d = v - wj
        if d != 0.0:
            for k in range(lo, hi):
                p[rows[k]] += d * vals[k]
            w[c] = v
            if abs(d) > biggest:
                biggest = abs(d)
    return biggest, dL


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
def loss_part(loss_id, y, a, p, inv_w):
    """(1/W) Σ a_i ℓ(p_i, y_i): F without the penalty (O(rows))."""
    s = 0.0
    for i in range(y.shape[0]):
        s += a[i] * loss(loss_id, p[i], y[i])
    return s * inv_w


@jit
def penalty(order, w, l1, l2):
    """l1 ‖w‖₁ + (l2/2) ‖w‖² over the columns ``order`` (the others being zero)."""
    r1 = 0.0
    r2 = 0.0
    for n in range(order.shape[0]):
        v = w[order[n]]
        r1 += abs(v)
        r2 += v * v
    return l1 * r1 + 0.5 * l2 * r2


@jit
def gradient(order, colptr, rows, avals, r, inv_w, G):
    """Squared loss: ``G_j = (2/W) Σ a_i r_i x_ij`` for the columns ``order``, r the residuals."""
    for n in range(order.shape[0]):
        c = order[n]
        s = 0.0
        for k in range(colptr[c], colptr[c + 1]):
            s += r[rows[k]] * avals[k]
        G[c] = 2.0 * s * inv_w


@jit
def duality_gap(order, G, w, loss_value, l1, l2):
    """Squared loss: F(w) − D(θ) ≥ F(w) − F*, a certificate (as scikit-learn's ``tol``).

    F = L(w) + l1 ‖w‖₁ + (l2/2) ‖w‖² with L = (1/W) Σ a_i r_i², r = Xw + base − y;
    ``G`` is ∇L at w (:func:`gradient`) on the columns ``order``, w zero elsewhere
    (the gap of the problem restricted to ``order`` when it is not every column).
    Fenchel dual at θ = s·2r (scaled so that ``s |G_j| ≤ l1`` when l2 = 0)::

        gap(s) = (1 − s)² L + s G·w + l1 ‖w‖₁ + (l2/2) ‖w‖² + Σ_j (s |G_j| − l1)₊² / (2 l2)

    zero at the optimum with s = 1; with l2 > 0 the smaller of s = 1 and the scaled s.
    Needs l1 > 0 or l2 > 0 (without a penalty the dual has no interior point).
    """
    gmax = 0.0
    gw = 0.0
    reg = 0.0
    for n in range(order.shape[0]):
        c = order[n]
        g = G[c]
        v = w[c]
        if abs(g) > gmax:
            gmax = abs(g)
        gw += g * v
        reg += l1 * abs(v) + 0.5 * l2 * v * v
    scaled = 1.0 if gmax <= l1 else l1 / gmax
    if l2 <= 0.0:
        return (1.0 - scaled) ** 2 * loss_value + scaled * gw + reg
    best = np.inf
    for s in (1.0, scaled):
        excess = 0.0
        for n in range(order.shape[0]):
            e = s * abs(G[order[n]]) - l1
            if e > 0.0:
                excess += e * e
        gap = (1.0 - s) ** 2 * loss_value + s * gw + reg + excess / (2.0 * l2)
        if gap < best:
            best = gap
    return best


@jit
def gram_cost(order, colptr, rows, nrows):
    """Σ_i (non-zeros of row i in the columns ``order``)²: the work of :func:`gram`."""
    count = np.zeros(nrows, np.int64)
    for n in range(order.shape[0]):
        c = order[n]
        for k in range(colptr[c], colptr[c + 1]):
            count[rows[k]] += 1
    s = 0
    for i in range(nrows):
        s += count[i] * count[i]
    return s


@jit
def gram(order, old, Q_old, colptr, rows, vals, a, nrows, scale):
    """``Q = scale · X_Aᵀ diag(a) X_A`` over the columns ``order`` (A), from a row-major copy.

    With ``scale = 2/W`` this is the Hessian of the squared loss part restricted to A,
    ``Q_tt = 2 hsq``.  ``old[t]`` is column ``order[t]``'s row in ``Q_old`` (the
    Hessian of an earlier active set), whose entries are copied, or −1 for a new
    column.  Work: the non-zeros of A plus, per row, (its new non-zeros) × (its
    non-zeros in A), so Σ_i r_i² / 2 when every column is new; memory |A|² plus
    16 bytes per non-zero of A.
    """
    m = order.shape[0]
    Q = np.zeros((m, m))
    for t in range(m):
        if old[t] >= 0:
            for u in range(m):
                if old[u] >= 0:
                    Q[t, u] = Q_old[old[t], old[u]]
    start = np.zeros(nrows + 1, np.int64)
    for t in range(m):
        if old[t] < 0:  # only the rows holding a new column matter
            c = order[t]
            for k in range(colptr[c], colptr[c + 1]):
                start[rows[k] + 1] = 1
    hit = start.copy()
    start[:] = 0
    for t in range(m):
        c = order[t]
        for k in range(colptr[c], colptr[c + 1]):
            if hit[rows[k] + 1]:
                start[rows[k] + 1] += 1
    for i in range(nrows):
        start[i + 1] += start[i]
    fill = start[:-1].copy()
    where = np.empty(start[nrows], np.int64)
    value = np.empty(start[nrows])
    for t in range(m):  # t ascending: each row's positions come out sorted
        c = order[t]
        for k in range(colptr[c], colptr[c + 1]):
            i = rows[k]
            if hit[i + 1]:
                q = fill[i]
                where[q] = t
                value[q] = vals[k]
                fill[i] = q + 1
    for i in range(nrows):  # the upper triangle of the pairs with a new column
        ai = a[i] * scale
        if ai == 0.0:
            continue
        lo = start[i]
        hi = start[i + 1]
        for q in range(lo, hi):
            t = where[q]
            x = ai * value[q]
            if old[t] >= 0:  # (old t, new u > t)
                for r in range(q + 1, hi):
                    u = where[r]
                    if old[u] < 0:
                        Q[t, u] += x * value[r]
            else:  # (new t, any u >= t)
                for r in range(q, hi):
                    Q[t, where[r]] += x * value[r]
    for t in range(m):
        for u in range(t + 1, m):
            if old[t] < 0 or old[u] < 0:
                Q[u, t] = Q[t, u]
    return Q


@jit
def gram_epoch(Q, g, v, l1, l2):
    """Squared loss: one cyclic sweep over A with covariance updates (glmnet's, section 2.2).

    ``v`` holds w_A and ``g`` the loss part's gradient ∇_A L, both updated in place:
    a step d on coordinate t adds ``d Q[t]`` to g, O(|A|), and the residuals are not
    touched (:func:`move` brings them current afterwards).  The steps are the exact
    coordinate minimisers of :func:`epoch`.  Returns the change of L (exact for a
    quadratic) and the largest |step|.
    """
    m = v.shape[0]
    dL = 0.0
    biggest = 0.0
    for t in range(m):
        wt = v[t]
        G = g[t]
        H = Q[t, t]
        u = _prox_step(wt, G, H, l1, l2)
        d = u - wt
        if d != 0.0:
            dL += G * d + 0.5 * H * d * d
            for s in range(m):
                g[s] += d * Q[t, s]
            v[t] = u
            if abs(d) > biggest:
                biggest = abs(d)
    return dL, biggest


@jit
def move(order, colptr, rows, vals, d, p):
    """``p += X_A d``: the predictions (residuals) after the columns ``order`` moved by d."""
    for t in range(order.shape[0]):
        dt = d[t]
        if dt != 0.0:
            c = order[t]
            for k in range(colptr[c], colptr[c + 1]):
                p[rows[k]] += dt * vals[k]


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
