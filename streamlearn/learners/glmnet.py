"""ℓ1-regularised logistic regression by newGLMNET: ``sl train --algo cd --loss logistic``.

Yuan, Ho & Lin (2012), "An improved GLMNET for L1-regularized logistic
regression", JMLR 13, Algorithm 3 (liblinear's ``solve_l1r_lr``), on sl's
objective::

    F(w) = L(w) + l1 ‖w‖₁,   L(w) = Σ_i c_i ℓ(z_i, y_i) + (l2/2) ‖w‖²,
    c_i = a_i / W,  z_i = w·x_i + base_i,  ℓ(z, y) = log(1 + e^(−y z))

(liblinear's ``‖w‖₁ + C Σ log(1 + e^(−y w·x))`` with ``C = 1/(l1 m)`` is F/l1:
the same minimiser).  One Newton iteration:

1. **Gradient and curvature** (a full sweep, O(nnz)): per row ``g_i = c_i ℓ'(z_i)``
   and ``h_i = c_i ℓ''(z_i)``, per column ``∇_j L = Σ_i g_i x_ij + l2 w_j`` and
   ``H_jj = Σ_i h_i x_ij² + l2 + ν``.  The minimum-norm subgradient of F,
   ``v_j = |∇_j L + l1 sign w_j|`` (w_j ≠ 0) or ``max(|∇_j L| − l1, 0)`` (w_j = 0),
   gives the stopping rule ``‖v‖₁ ≤ tol · ‖v(0)‖₁``, ``v(0)`` the value at w = 0
   (or at the start of the run, if larger), and *outer shrinking*: a zero weight
   with ``|∇_j L| < l1 − M/m`` (M the largest v_j of the previous iteration, m the
   rows) sits this iteration out.
2. **The quadratic model** ``q(d) = ∇L·d + ½ dᵀ(Xᵀ diag(h) X + (l2 + ν) I) d + l1‖w + d‖₁``
   minimised over the remaining columns by cyclic coordinate descent in a random
   order (:func:`qp_cycle`), keeping ``Xd`` current: O(non-zeros of the active
   columns) per cycle.  *Inner shrinking* does the same as the outer one within
   the cycles; the cycles stop when their own ‖v‖₁ is at most ``inner_eps``
   times the first iteration's ‖v‖₁ (shrunk columns are then brought back once),
   and ``inner_eps`` (1 at first) is quartered whenever one cycle sufficed; at
   most 1,000 cycles.  Once the cycles have cost what the model's Hessian over
   the kept columns costs to build, they switch to covariance updates
   (:mod:`streamlearn.learners.glmnet_gram`), O(kept columns) a step, and then
   solve the model to :data:`GRAM_TOL` of F's ‖v‖₁ (fewer Newton iterations).
3. **Line search** (:func:`line_search`): the largest ``λ = 2^−k`` with
   ``F(w + λd) − F(w) ≤ σ λ Δ``, ``Δ = ∇L·d + l1 (‖w + d‖₁ − ‖w‖₁)`` (Armijo on
   the composite objective, σ = 0.01, the paper's eq. 20 with γ = 0), the loss
   change summed per row as ``log1p(expm1(t) σ(−y z))`` so that it stays exact
   at the rounding floor.

Constants are liblinear's: ν = 10⁻¹² (times l1, F's scale), a coordinate step
clipped to ±10 and skipped below 10⁻¹², at most 20 halvings.  The row
predictions ``z`` are kept current (``z += λ Xd``) and recomputed exactly at the
end.  Kernels take the column-major data of :class:`streamlearn.run.fit.Columns`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from streamlearn.learners import cd
from streamlearn.learners.glmnet_gram import MAX_STEP, TINY_STEP, gram_qp, hessian, row_major
from streamlearn.learners.losses import LOGISTIC, loss
from streamlearn.system.jit import jit, jit_inline

SIGMA = 0.01
"""Armijo's constant (liblinear's ``sigma``)."""
MAX_LINESEARCH = 20
NU = 1e-12
"""Added to every H_jj (relative to l1), so that a column whose rows are all
classified with certainty still has a curvature."""


@jit
def row_terms(y, c, p, g, h):
    """Per row ``g_i = c_i ℓ'(p_i)`` and ``h_i = c_i ℓ''(p_i)``; returns Σ c_i ℓ(p_i)."""
    total = 0.0
    for i in range(p.shape[0]):
        ci = c[i]
        if ci == 0.0:
            g[i] = 0.0
            h[i] = 0.0
            continue
        m = y[i] * p[i]
        if m > 0.0:
            e = math.exp(-m)
            s = e / (1.0 + e)  # σ(−m)
            total += ci * math.log1p(e)
        else:
            e = math.exp(m)
            s = 1.0 / (1.0 + e)
            total += ci * (math.log1p(e) - m)
        g[i] = -ci * y[i] * s
        h[i] = ci * e / ((1.0 + e) * (1.0 + e))
    return total


@jit
def outer(colptr, rows, vals, g, h, w, l1, l2, nu, bound, grad, hdiag, index):
    """∇L of every column, and H_jj of the columns kept for this iteration, ``index[:k]``.

    ``bound`` is M/m (outer shrinking; ∞ keeps every column).  Returns k, the
    largest v_j and ‖v‖₁ (v the minimum-norm subgradient, zero on shrunk columns).
    """
    k = 0
    gmax = 0.0
    gnorm = 0.0
    for j in range(w.shape[0]):
        lo = colptr[j]
        hi = colptr[j + 1]
        G = 0.0
        for t in range(lo, hi):
            G += vals[t] * g[rows[t]]
        wj = w[j]
        G += l2 * wj
        grad[j] = G
        gp = G + l1
        gn = G - l1
        if wj == 0.0:
            if gp < 0.0:
                v = -gp
            elif gn > 0.0:
                v = gn
            elif gp > bound and gn < -bound:
                continue
            else:
                v = 0.0
        elif wj > 0.0:
            v = abs(gp)
        else:
            v = abs(gn)
        index[k] = j
        k += 1
        if v > gmax:
            gmax = v
        gnorm += v
        H = nu + l2  # the curvature only where the model needs it: one gather less elsewhere
        for t in range(lo, hi):
            x = vals[t]
            H += x * x * h[rows[t]]
        hdiag[j] = H
    return k, gmax, gnorm


@jit
def qp_cycle(index, m, colptr, rows, vals, h, grad, hdiag, w, wpd, q, l1, ridge, bound,
             spare):  # fmt: skip
    """One coordinate-descent cycle of the quadratic model over ``index[:m]``, in that order.

    ``wpd`` = w + d and ``q`` = X d are updated in place; ``ridge`` = l2 + ν.
    Columns shrunk in this cycle (zero, |model gradient| below l1 − ``bound``) move
    to ``index[m':m]``, the others keep their order in ``index[:m']``.
    Returns m', the largest v_j and ‖v‖₁ of the model's subgradient (before each step).
    """
    kept = 0
    nshr = 0
    gmax = 0.0
    gnorm = 0.0
    for s in range(m):
        j = index[s]
        lo = colptr[j]
        hi = colptr[j + 1]
        wj = wpd[j]
        G = grad[j] + (wj - w[j]) * ridge
        for t in range(lo, hi):
            i = rows[t]
            G += vals[t] * h[i] * q[i]
        gp = G + l1
        gn = G - l1
        if wj == 0.0:
            if gp < 0.0:
                v = -gp
            elif gn > 0.0:
                v = gn
            elif gp > bound and gn < -bound:
                spare[nshr] = j
                nshr += 1
                continue
            else:
                v = 0.0
        elif wj > 0.0:
            v = abs(gp)
        else:
            v = abs(gn)
        index[kept] = j
        kept += 1
        if v > gmax:
            gmax = v
        gnorm += v
        H = hdiag[j]
        if gp < H * wj:
            z = -gp / H
        elif gn > H * wj:
            z = -gn / H
        else:
            z = -wj
        if abs(z) < TINY_STEP:
            continue
        z = min(max(z, -MAX_STEP), MAX_STEP)
        wpd[j] = wj + z
        for t in range(lo, hi):
            q[rows[t]] += z * vals[t]
    for s in range(nshr):
        index[kept + s] = spare[s]
    return kept, gmax, gnorm



@jit_inline
def _change(p, d, y):
    """ℓ(p + d, y) − ℓ(p, y) without cancellation: log1p(expm1(−y d) σ(−y p))."""
    m = y * p
    t = -y * d
    if m >= 0.0 and t <= 30.0:
        e = math.exp(-m)
        return math.log1p(math.expm1(t) * (e / (1.0 + e)))
    return loss(LOGISTIC, p + d, y) - loss(LOGISTIC, p, y)


@jit
def line_search(index, k, w, wpd, grad, q, y, c, p, l1, l2, sigma, max_steps):
    """Armijo on F along d = wpd − w over the columns ``index[:k]``.

    Returns (λ, F(w + λd) − F(w), Δ); λ = 0 when d is not a descent direction
    (Δ ≥ 0: nothing moved) or no halving satisfied the rule.
    """
    delta = 0.0
    for t in range(k):
        j = index[t]
        delta += grad[j] * (wpd[j] - w[j]) + l1 * (abs(wpd[j]) - abs(w[j]))
    if not delta < 0.0:
        return 0.0, 0.0, delta
    lam = 1.0
    for _ in range(max_steps):
        dpen = 0.0
        for t in range(k):
            j = index[t]
            wj = w[j]
            u = wpd[j] if lam == 1.0 else wj + lam * (wpd[j] - wj)
            dpen += l1 * (abs(u) - abs(wj)) + 0.5 * l2 * (u - wj) * (u + wj)
        dL = 0.0
        for i in range(p.shape[0]):
            if c[i] != 0.0 and q[i] != 0.0:
                dL += c[i] * _change(p[i], lam * q[i], y[i])
        if dL + dpen <= sigma * lam * delta:
            return lam, dL + dpen, delta
        lam *= 0.5
    return 0.0, 0.0, delta


@jit
def take_step(index, k, w, wpd, lam, q, p):
    """w ← w + λ(wpd − w) over ``index[:k]`` (exactly wpd when λ = 1), p ← p + λ q."""
    for t in range(k):
        j = index[t]
        w[j] = wpd[j] if lam == 1.0 else w[j] + lam * (wpd[j] - w[j])
    for i in range(p.shape[0]):
        p[i] += lam * q[i]


@jit
def l1_norm(w):
    s = 0.0
    for j in range(w.shape[0]):
        s += abs(w[j])
    return s


Sweep = Callable[[float, int, int, bool, float], None]
"""``sweep(F, nonzero, columns, full, kkt)``: called after each sweep (kkt: NaN on inner ones)."""


def subgradient_at_zero(colptr, rows, vals, y, c, base, l1, ncols) -> float:
    """‖v‖₁ at w = 0 (predictions = the bases): the scale of the stopping rule."""
    n = base.shape[0]
    g, h = np.empty(n), np.empty(n)
    row_terms(y, c, base, g, h)
    zero = np.zeros(ncols)
    _, _, gnorm = outer(colptr, rows, vals, g, h, zero, l1, 0.0, 0.0, np.inf,
                        np.empty(ncols), np.empty(ncols), np.empty(ncols, np.int64))  # fmt: skip
    return float(gnorm)


def solve(
    colptr: np.ndarray, rows: np.ndarray, vals: np.ndarray, y: np.ndarray, c: np.ndarray,
    base: np.ndarray, p: np.ndarray, w: np.ndarray, *, l1: float, l2: float, tol: float,
    passes: int, seed: int, sweep: Sweep,
) -> tuple[float, bool]:  # fmt: skip
    """newGLMNET from ``w`` (p = base + Xw); ``w`` and ``p`` end at the solution.

    ``c`` = a/W (0 for unlabeled rows).  Every gradient pass and every inner
    cycle is a sweep, at most ``passes`` of them.  Returns F and whether the
    stopping rule was met (or the rounding floor reached: a Newton direction
    that no halving makes decrease F, or that moves nothing when the inner
    cycles were asked for more than the outer rule).
    """
    ncols = w.shape[0]
    work = _Work(colptr, rows, vals, y, c, p, w, l1, l2, seed)
    ref = subgradient_at_zero(colptr, rows, vals, y, c, base, l1, ncols) if w.any() else 0.0
    first = -1.0
    gmax_old = np.inf
    inner_eps = 1.0
    e = 0
    F = np.nan  # F at the start, then followed through the line searches' exact changes
    while True:
        L = row_terms(y, c, p, work.g, work.h)
        k, gmax, gnorm = outer(colptr, rows, vals, work.g, work.h, w, l1, l2, work.nu,
                               gmax_old / p.shape[0], work.grad, work.hdiag,
                               work.index)  # fmt: skip
        if e == 0:
            F = L + 0.5 * l2 * float(w @ w) + l1 * l1_norm(w)
        e += 1
        if first < 0:
            first = gnorm
            ref = max(ref, gnorm)
        active = work.index[:k]  # every non-zero weight is there
        sweep(F, int(np.count_nonzero(w[active])), ncols, True, gnorm / ref if ref > 0 else 0.0)
        if gnorm <= tol * ref or e >= passes:
            return _exact(colptr, rows, vals, y, c, base, p, w, l1, l2), gnorm <= tol * ref
        inner = inner_eps * first
        visited = work.quadratic(k, inner, min(passes - e, MAX_CYCLES),
                                 min(inner, GRAM_TOL * gnorm))  # fmt: skip
        e += len(visited)
        nnz = int(np.count_nonzero(w[active]))
        for cols in visited[:-1]:
            sweep(F, nnz, cols, False, np.nan)
        lam, dF, delta = line_search(work.index, k, w, work.wpd, work.grad, work.q, y, c, p, l1,
                                     l2, SIGMA, MAX_LINESEARCH)  # fmt: skip
        if lam > 0.0:
            take_step(work.index, k, w, work.wpd, lam, work.q, p)
            F += dF
        sweep(F, int(np.count_nonzero(w[active])), visited[-1], False, np.nan)
        if e >= passes:
            return _exact(colptr, rows, vals, y, c, base, p, w, l1, l2), False
        if lam == 0.0 and not (delta == 0.0 and len(visited) == 1 and inner > tol * ref):
            # the rounding floor (unless nothing moved only because the cycles stopped early)
            return _exact(colptr, rows, vals, y, c, base, p, w, l1, l2), True
        if len(visited) == 1:
            inner_eps *= 0.25
        gmax_old = gmax


MAX_CYCLES = 1000
"""Inner cycles per Newton iteration at most (liblinear's ``max_iter``)."""
GRAM_COLUMNS = 2048
"""Covariance cycles for at most this many columns (a 32 MiB Hessian)."""
GRAM_PAYBACK = 2
"""Switch to covariance cycles once the residual cycles' gathers (2 per non-zero each)
have cost what building the Hessian does (ski rental: at most twice the better choice)."""
GRAM_TOL = 1e-3
"""Covariance cycles cost O(k) a step: they solve the model to this fraction of F's
‖v‖₁ (or tighter, liblinear's rule), for fewer Newton iterations."""


class _Work:
    """The arrays of one solve, and the inner cycles of a Newton iteration."""

    def __init__(self, colptr, rows, vals, y, c, p, w, l1, l2, seed):
        n, ncols = p.shape[0], w.shape[0]
        self.colptr, self.rows, self.vals, self.w = colptr, rows, vals, w
        self.l1, self.l2 = l1, l2
        self.nu = NU * l1 if l1 > 0 else NU
        self.g, self.h, self.q = np.empty(n), np.empty(n), np.zeros(n)
        self.grad, self.hdiag = np.empty(ncols), np.empty(ncols)
        self.index, self.spare = np.empty(ncols, np.int64), np.empty(ncols, np.int64)
        self.wpd = w.copy()
        self.rng = np.random.default_rng(seed)
        self._copy_cols = np.zeros(0, np.int64)
        self._copy: tuple[np.ndarray, np.ndarray, np.ndarray] = ()
        self._pos = np.zeros(0, np.int64)

    def quadratic(self, k: int, inner_tol: float, limit: int, gram_tol: float) -> list[int]:
        """Minimise the quadratic model over ``index[:k]`` into ``wpd`` (``q`` = X(wpd − w)).

        Cycles keep ``q`` current (O(non-zeros) each) until what they have cost
        reaches what building the Hessian of the columns would, then switch to
        covariance updates (:func:`gram_qp`) when those are cheaper per cycle:
        at most twice the cheaper of the two.  Returns the columns each cycle visited.
        """
        index, w, wpd, q = self.index, self.w, self.wpd, self.q
        active = index[:k]
        wpd[active] = w[active]
        q[:] = 0.0
        n = q.shape[0]
        ridge = self.l2 + self.nu
        lengths = self.colptr[active + 1] - self.colptr[active]
        nnz = int(lengths.sum())
        gram_ok = k <= GRAM_COLUMNS and k * k <= nnz
        build = -1
        m, gmax_old = k, np.inf
        visited: list[int] = []
        while len(visited) < limit:
            if gram_ok and visited:
                if build < 0:
                    build = cd.gram_cost(active, self.colptr, self.rows, n) // 2 + nnz
                if build <= GRAM_PAYBACK * nnz * len(visited):
                    return visited + self._gram(k, m, gmax_old, gram_tol,
                                                limit - len(visited))  # fmt: skip
            self.rng.shuffle(index[:m])
            visited.append(m)
            m, gmax, gnorm = qp_cycle(index, m, self.colptr, self.rows, self.vals, self.h,
                                      self.grad, self.hdiag, w, wpd, q, self.l1, ridge,
                                      gmax_old / n, self.spare)  # fmt: skip
            if gnorm <= inner_tol:
                if m == k:
                    break
                m, gmax_old = k, np.inf  # the shrunk columns come back for another cycle
            else:
                gmax_old = gmax
        return visited

    def _rows_of(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A row-major copy holding ``cols`` (kept: the next active sets are mostly the same
        columns), and ``_pos``: each of its columns' position in ``cols`` (−1: not there)."""
        if self._copy_cols.size:
            at = np.minimum(np.searchsorted(self._copy_cols, cols), self._copy_cols.size - 1)
            inside = bool((self._copy_cols[at] == cols).all())
        else:
            inside = False
        if not inside:
            union = np.union1d(self._copy_cols, cols)
            grown = int((self.colptr[union + 1] - self.colptr[union]).sum())
            mine = int((self.colptr[cols + 1] - self.colptr[cols]).sum())
            self._copy_cols = union if grown <= 2 * mine else np.sort(cols)
            self._copy = row_major(self._copy_cols, self.colptr, self.rows, self.vals,
                                   self.q.shape[0])  # fmt: skip
            at = np.searchsorted(self._copy_cols, cols)
        self._pos = np.full(self._copy_cols.size, -1, np.int64)
        self._pos[at] = np.arange(cols.size)
        return self._copy

    def _gram(self, k: int, m: int, gmax_old: float, inner_tol: float, limit: int) -> list[int]:
        """The rest of :meth:`quadratic` with covariance updates over ``index[:k]``."""
        cols = self.index[:k].copy()  # Q's order; index[:m] the cycles' columns
        n = self.q.shape[0]
        ridge = self.l2 + self.nu
        Q = hessian(*self._rows_of(cols), self.h, self._pos, k)
        v = self.wpd[cols]
        v0 = v.copy()
        d = v - self.w[cols]
        gm = self.grad[cols] + Q @ d + ridge * d
        order = np.arange(k, dtype=np.int64)
        visited = np.zeros(limit, np.int64)
        cycles, _ = gram_qp(Q, gm, v, self.hdiag[cols], order, m, self.l1, ridge, inner_tol, n,
                            gmax_old, limit, int(self.rng.integers(1 << 62)), visited,
                            np.empty(k, np.int64))  # fmt: skip
        self.wpd[cols] = v
        cd.move(cols, self.colptr, self.rows, self.vals, v - v0, self.q)
        self.index[:k] = cols
        return visited[:cycles].tolist()


def _exact(colptr, rows, vals, y, c, base, p, w, l1, l2) -> float:
    """Recompute p = base + Xw from scratch (no drift from the updates); return F."""
    p[:] = base
    cd.predictions(colptr, rows, vals, w, p)
    g, h = np.empty(p.shape[0]), np.empty(p.shape[0])
    return float(row_terms(y, c, p, g, h) + 0.5 * l2 * float(w @ w) + l1 * l1_norm(w))

