"""The scaled p-norm sum of SMIDAS: state layout, numerics and exact refresh.

:mod:`streamlearn.learners.smidas` keeps ``N = Σ_j (|θ_j| / M)^p`` up to date
in O(nnz) per example; this module holds what that takes besides the training
loop: where the sum lives in ``gstate``, the few inlined steps that move a
slot's term in and out of it (2Sum with a carried error bound), the guards
that say when the running sum can no longer be trusted, and the O(d) exact
recomputation (:func:`refresh`) used at flushes, every ``--norm-refresh``
examples and when a guard fires.  The numerics are explained in the
docstring of :mod:`streamlearn.learners.smidas`.
"""

from __future__ import annotations

import math

from streamlearn.learners.base import G_N, G_USER, P_L1, P_P
from streamlearn.system.jit import jit, jit_inline

G_S = G_USER  # Σ η_τ over the learned steps since the last flush (λ η_τ truncated at τ)
G_SCALE = G_USER + 1  # M: the terms of N are (|θ_j| / M)^p
G_NHI = G_USER + 2  # N = Σ_j c_j over the terms kept in column 2 ...
G_NLO = G_USER + 3  # ... is G_NHI + G_NLO (the sum's rounding errors, carried)
G_NERR = G_USER + 4  # bound on |N − Σ_j ρ_j^p|: rounding plus the terms left out
G_NNZ = G_USER + 5  # number of slots whose stored θ_j is non-zero
G_LAST = G_USER + 6  # G_N at the last exact refresh
G_REFRESHES = G_USER + 7  # exact refreshes so far (scheduled, guarded and flushes)
G_GUARDED = G_USER + 8  # ... of which forced by a guard

_BIG = 2.0**512  # N above this: rescale (a term may overflow soon)
_TINY = 2.0**-600  # N below this with θ ≠ 0: rescale (terms underflow)
_TRUST = 2.0**-20  # N's error bound above this fraction of N: recompute
_EPS = 2.0**-53  # unit roundoff
AMORTIZE = 16.0  # ... but at most once per d / (AMORTIZE nnz(x)) examples
FLUSH = -1000.0  # log2 of the smallest term a refresh computes (smaller ones: bounded)
NEGLECT = -60.0  # train_batch skips the power of a slot whose w_j < 2^NEGLECT ‖θ‖_p
_REFRESH_LO = 2.0**-100  # a refresh keeps M when N lands in [_REFRESH_LO, _REFRESH_HI]
_REFRESH_HI = 2.0**100


@jit_inline
def shrink(th, owed):
    """θ_j after truncation by ``owed`` ≥ 0 (any number of steps at once)."""
    if th > 0.0:
        th -= owed
        return th if th > 0.0 else 0.0
    th += owed
    return th if th < 0.0 else 0.0


@jit_inline
def acc(s, comp, err, x):
    """N + x: 2Sum keeps the rounding error of ``s + x`` in ``comp`` (N = s + comp).

    Only ``s`` is on the dependency chain.  ``err`` grows by a bound on the
    rounding of ``comp`` itself.
    """
    t = s + x
    bp = t - s
    comp += (s - (t - bp)) + (x - bp)
    return t, comp, err + abs(comp) * _EPS


@jit_inline
def leave(n_hi, n_lo, err, c):
    """Take a slot's stored term ``c`` out of N (c < 0: it was left out, −c bounded it)."""
    if c > 0.0:
        return acc(n_hi, n_lo, err, -c)
    return n_hi, n_lo, max(err + c, 0.0)


@jit_inline
def enter(th, inv_m, pm1, rcut, bound, n_hi, n_lo, err):
    """Put θ_j ≠ 0 into N; return (ρ^(p−1), stored term, N, err).

    ρ = |θ_j| / M.  One power gives ρ^(p−1) (the weight) and ρ^p (the term).
    Below ``rcut`` the power is skipped: the term is left out of N, stored as
    −``bound`` (a bound on it) and added to ``err``.
    """
    r = abs(th) * inv_m
    if r < rcut:
        return 0.0, -bound, n_hi, n_lo, err + bound
    q = math.exp2(pm1 * math.log2(r))
    c = q * r
    n_hi, n_lo, err = acc(n_hi, n_lo, err, c)
    return q, c, n_hi, n_lo, err


@jit_inline
def load_sum(gstate):
    """The running sum's state: (M, 1/M, N's two parts, its error bound, nnz)."""
    m = gstate[G_SCALE]
    return m, 1.0 / m, gstate[G_NHI], gstate[G_NLO], gstate[G_NERR], gstate[G_NNZ]


@jit_inline
def save_sum(gstate, n_hi, n_lo, err, nnz):
    """Store N, its bound and nnz; with no θ_j left, N is exactly 0. Returns what was stored."""
    if nnz == 0.0:
        n_hi = 0.0
        n_lo = 0.0
        err = 0.0
    gstate[G_NHI] = n_hi
    gstate[G_NLO] = n_lo
    gstate[G_NERR] = err
    gstate[G_NNZ] = nnz
    return n_hi, n_lo, err


@jit_inline
def needs_refresh(n, err, nnz, gap):
    """True when N must be recomputed: out of range, or (after a ``gap``) not trusted."""
    if nnz <= 0.0:
        return False
    return not (_TINY <= n <= _BIG) or (gap and err > _TRUST * n)


@jit
def refresh(table, gstate, params, reset):
    """Settle every slot through the last step and recompute N exactly (O(d)).

    Keeps M when N lands well inside its range, else takes M = max_j |θ_j|
    (a second pass).  ``reset`` also sets ``S`` and the snapshots back to 0.
    """
    lam = params[P_L1]
    p = params[P_P]
    pm1 = p - 1.0
    rmin = 2.0 ** (FLUSH / p)
    tiny = 2.0**FLUSH
    s = gstate[G_S]
    m = gstate[G_SCALE]
    for attempt in range(2):
        inv_m = 1.0 / m
        n_hi = 0.0
        n_lo = 0.0
        err = 0.0
        mx = 0.0
        nnz = 0
        for j in range(table.shape[0]):
            th = table[j, 0]
            if th != 0.0:
                if attempt == 0:
                    owed = lam * (s - table[j, 1])
                    if owed > 0.0:
                        th = shrink(th, owed)
                        table[j, 0] = th
                        table[j, 1] = s
                c = 0.0
                if th != 0.0:
                    nnz += 1
                    mx = max(mx, abs(th))
                    _, c, n_hi, n_lo, err = enter(th, inv_m, pm1, rmin, tiny, n_hi, n_lo, err)
                table[j, 2] = c
            if reset and attempt == 0 and table[j, 1] != 0.0:
                table[j, 1] = 0.0
        if nnz == 0 or _REFRESH_LO <= n_hi + n_lo <= _REFRESH_HI:
            break
        m = mx  # out of range for the old scale: once more with M = max |θ_j|
    if reset:
        gstate[G_S] = 0.0
    gstate[G_SCALE] = m
    gstate[G_NHI] = n_hi
    gstate[G_NLO] = n_lo
    gstate[G_NERR] = err
    gstate[G_NNZ] = nnz
    gstate[G_LAST] = gstate[G_N]
    gstate[G_REFRESHES] += 1.0


@jit
def refresh_row(table, gstate, params, reset, indices, lo, hi, qs, ths):
    """Guarded refresh in the middle of a row, then the row's settled θ and ρ^(p−1) anew."""
    gstate[G_GUARDED] += 1.0
    refresh(table, gstate, params, reset)
    inv_m = 1.0 / gstate[G_SCALE]
    for k in range(lo, hi):
        j = indices[k]
        th = table[j, 0]
        c = table[j, 2]
        q = c / (abs(th) * inv_m) if c > 0.0 else 0.0
        qs[k - lo] = q if th > 0.0 else -q
        ths[k - lo] = th
