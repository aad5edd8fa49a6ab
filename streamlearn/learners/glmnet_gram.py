"""newGLMNET's inner cycles with covariance updates (:mod:`streamlearn.learners.glmnet`).

Once the cycles over the kept columns A have cost what building the Newton
model's Hessian ``Q = X_Aᵀ diag(h) X_A`` costs, they run on Q instead of the rows
(glmnet's covariance updates, Friedman, Hastie & Tibshirani 2010, section 2.2,
weighted by the Newton weights h): a coordinate step costs O(|A|).
"""

from __future__ import annotations

import numpy as np

from streamlearn.system.jit import jit, jit_inline

MAX_STEP = 10.0
"""A coordinate step of the model is clipped to ±this (liblinear's) ..."""
TINY_STEP = 1e-12
"""... and skipped below this."""


@jit
def row_major(cols, colptr, rows, vals, nrows):
    """The columns ``cols`` by rows: ``start`` per row, ``where`` (position in cols), ``value``."""
    start = np.zeros(nrows + 1, np.int64)
    for t in range(cols.shape[0]):
        c = cols[t]
        for k in range(colptr[c], colptr[c + 1]):
            start[rows[k] + 1] += 1
    for i in range(nrows):
        start[i + 1] += start[i]
    fill = start[:-1].copy()
    where = np.empty(start[nrows], np.int32)
    value = np.empty(start[nrows])
    for t in range(cols.shape[0]):  # t ascending: each row's positions come out sorted
        c = cols[t]
        for k in range(colptr[c], colptr[c + 1]):
            i = rows[k]
            q = fill[i]
            where[q] = t
            value[q] = vals[k]
            fill[i] = q + 1
    return start, where, value


@jit
def hessian(start, where, value, h, pos, k):
    """``Q = X_Aᵀ diag(h) X_A`` (k × k) from a row-major copy (:func:`row_major`) of a
    superset of A: ``pos[t]`` is the copy's column t's position in A, or −1.

    Work: Σ_i r_i (r_i + 1)/2 over the rows' non-zeros r_i in A (glmnet's
    covariance updates, Friedman et al. 2010, section 2.2, with weights h).
    """
    Q = np.zeros((k, k))
    for i in range(start.shape[0] - 1):
        hi = h[i]
        if hi == 0.0:
            continue
        lo = start[i]
        up = start[i + 1]
        for a in range(lo, up):
            t = pos[where[a]]
            if t < 0:
                continue
            x = hi * value[a]
            Q[t, t] += x * value[a]
            for b in range(a + 1, up):
                u = pos[where[b]]
                if u < 0:
                    continue
                if t < u:
                    Q[t, u] += x * value[b]
                else:
                    Q[u, t] += x * value[b]
    for t in range(k):
        for u in range(t + 1, k):
            Q[u, t] = Q[t, u]
    return Q

@jit_inline
def _xorshift(x):
    """Marsaglia's xorshift64 (13, 7, 17): the next state of a uint64."""
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    return x


@jit
def gram_qp(Q, gm, v, hd, order, m, l1, ridge, inner_tol, nrows, gmax_old, limit, seed,
            visited, spare):  # fmt: skip
    """Cycles of :func:`qp_cycle` with covariance updates (glmnet's, section 2.2), in one call.

    Local coordinates t = 0..k−1 of the columns A: ``Q = X_Aᵀ diag(h) X_A``,
    ``gm`` the model's gradient ∇L_A + (Q + ridge I)(v − w_A) and ``v`` = w_A + d,
    both updated in place (a step costs O(k), the rows are not touched);
    ``hd`` = diag(Q) + ridge.  ``order[:m]`` are the positions still in the
    cycles.  Runs the inner rule of :func:`solve` (shuffle, shrink, stop when
    ‖v‖₁ ≤ ``inner_tol``, bring the shrunk back once) for at most ``limit``
    cycles; ``visited[c]`` gets the columns of cycle c.  Returns (cycles, done).
    """
    state = np.uint64(seed) | np.uint64(1)
    k = order.shape[0]
    cycles = 0
    while cycles < limit:
        for s in range(m):  # liblinear's shuffle
            state = _xorshift(state)
            r = s + np.int64(state % np.uint64(m - s))
            tmp = order[r]
            order[r] = order[s]
            order[s] = tmp
        visited[cycles] = m
        cycles += 1
        bound = gmax_old / nrows
        kept = 0
        nshr = 0
        gmax = 0.0
        gnorm = 0.0
        for s in range(m):
            t = order[s]
            vt = v[t]
            G = gm[t]
            gp = G + l1
            gn = G - l1
            if vt == 0.0:
                if gp < 0.0:
                    viol = -gp
                elif gn > 0.0:
                    viol = gn
                elif gp > bound and gn < -bound:
                    spare[nshr] = t
                    nshr += 1
                    continue
                else:
                    viol = 0.0
            elif vt > 0.0:
                viol = abs(gp)
            else:
                viol = abs(gn)
            order[kept] = t
            kept += 1
            if viol > gmax:
                gmax = viol
            gnorm += viol
            H = hd[t]
            if gp < H * vt:
                z = -gp / H
            elif gn > H * vt:
                z = -gn / H
            else:
                z = -vt
            if abs(z) < TINY_STEP:
                continue
            z = min(max(z, -MAX_STEP), MAX_STEP)
            v[t] = vt + z
            for u in range(k):
                gm[u] += z * Q[t, u]
            gm[t] += z * ridge
        for s in range(nshr):
            order[kept + s] = spare[s]
        m = kept
        if gnorm <= inner_tol:
            if m == k:
                return cycles, True
            m = k
            gmax_old = np.inf
        else:
            gmax_old = gmax
    return cycles, False
