"""SMIDAS (Shalev-Shwartz & Tewari 2009, Algorithm 3), lazily, in O(nnz) per example.

Dense form.  The state is the dual vector θ; the weights are the p-norm link
(the paper's eq. 12)::

    w_j = f⁻¹_j(θ) = sign(θ_j) |θ_j|^(p−1) / ‖θ‖_p^(p−2)        (w = 0 while θ = 0)

and a learned example t with importance a_t and rate η_t (the shared schedule,
:func:`streamlearn.schedules.rate`) takes Algorithm 3's two steps::

    θ ← θ − η_t a_t ∂ℓ(p_t, y_t) x_t                           (mirror gradient step)
    θ_j ← sign(θ_j) max(0, |θ_j| − η_t λ)   for every j         (truncation)

with λ = ``--l1`` and p = ``--p``, by default 2 ln d for d = 2^b slots
(:func:`default_p`).  With p = 2 the link is the identity and this is
truncated gradient with K = 1, θ = ∞ (:mod:`streamlearn.learners.truncated`).

Lazy form.  Between two touches θ_j only shrinks toward zero, so, as for
truncated gradient, the global sum ``S = Σ η_τ`` and a per-slot snapshot
``S_j`` settle exactly what a slot owes: ``λ (S − S_j)``, clipped at zero.
What is not local is the norm ‖θ‖_p that every weight depends on.  The
section 3.1 implementation keeps ``α1 = Σ_j |θ_j|^p`` as a running scalar,
updated for the touched slots only (remove a slot's old term, add its new
one).  A slot that is not touched keeps the term of the θ_j it had when last
settled, so between exact refreshes the running sum over-counts the
truncation that untouched slots have not yet received: this is the one
approximation of the lazy form (measured in ``docs/algorithms-smidas.md``).
It is recomputed exactly, in O(d), by :func:`rebase` (at flushes), every
``--norm-refresh`` learned examples (1 = every step, which reproduces the dense
algorithm to rounding), and whenever a guard below fires.

Numerics.  With p ≈ 2 ln 2^30 ≈ 42 raw powers of |θ_j| overflow and
underflow, so the sum is kept in a scaled form::

    N = Σ_j (|θ_j| / M)^p          ‖θ‖_p = M N^(1/p)
    w_j = sign(θ_j) M ρ_j^(p−1) N^(−(p−2)/p),   ρ_j = |θ_j| / M

where M (``G_SCALE``) is the largest |θ_j| at the last exact refresh.  N is
a double-double (hi, lo) sum, and a term is always recomputed from θ_j and
M, so removing a term removes exactly what was added; M changes only at an
exact refresh.  An exact refresh is forced when N leaves [2^-600, 2^512]
while some θ_j ≠ 0 (rescale), or falls below 2^-80 of its largest value
since the last refresh (the removed terms cancelled the sum: its remaining
digits are rounding).  Terms below 2^-1000 count as zero.  So N is never
negative, NaN or infinite, and w is never silently zero while θ is not.

Per slot (16 bytes): θ_j (column 0, the primary state) and the snapshot
``S_j`` (column 1).  Global: the sums below, from ``G_USER`` on.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn._jit import jit, jit_inline
from streamlearn.learners.base import (
    G_N,
    G_T,
    G_USER,
    GSTATE_SIZE,
    P_L1,
    P_LEARN,
    P_NORM_REFRESH,
    P_P,
    LearnerSpec,
    account,
    begin_example,
)
from streamlearn.losses import dloss
from streamlearn.schedules import rate

G_S = G_USER  # Σ η_τ over the learned steps since the last refresh (λ η_τ truncated at τ)
G_SCALE = G_USER + 1  # M: terms of the norm are (|θ_j| / M)^p
G_NHI = G_USER + 2  # N = Σ_j (|θ_j| / M)^p over θ_j as last settled, double-double: high
G_NLO = G_USER + 3  # ... and low part
G_PEAK = G_USER + 4  # largest G_NHI since the last refresh (cancellation guard)
G_NNZ = G_USER + 5  # number of slots whose stored θ_j is non-zero
G_LAST = G_USER + 6  # G_N at the last exact refresh
G_REFRESHES = G_USER + 7  # exact refreshes so far (scheduled, guarded and flushes)
G_GUARDED = G_USER + 8  # ... of which forced by a guard

DEFAULT_NORM_REFRESH = 100_000
"""Learned examples between exact norm refreshes (``--norm-refresh``).

A refresh costs one pass over the table (about 10 ms at b = 22); the lazy
norm's error grows slowly with the interval.  Measured in
``docs/algorithms-smidas.md``.
"""

_BIG = 2.0**512  # N above this: rescale (a term may overflow soon)
_TINY = 2.0**-600  # N below this with θ ≠ 0: rescale (terms underflow)
_DROP = 2.0**-80  # N below this fraction of its peak: cancellation, recompute
_FLUSH = -1000.0  # log2 of the smallest term kept (smaller ones count as 0)


def default_p(bits: int) -> float:
    """The paper's p = 2 ln d for a table of d = 2**bits slots, at least 2.

    Below b = 2 (d < e) 2 ln d is under 2, where the p-norm link is no longer
    the mirror map of a strongly convex potential; p = 2 (truncated gradient)
    is used instead.

    >>> round(default_p(18), 4)
    24.953
    >>> default_p(1)
    2.0
    """
    return max(2.0, 2.0 * bits * math.log(2.0))


def init_gstate(params: np.ndarray) -> np.ndarray:
    """Global state of a fresh run: θ = 0, N = 0, M = 1."""
    p = float(params[P_P])
    if not p >= 2.0 or not math.isfinite(p):
        raise ValueError(f"smidas needs p >= 2 (got {p}); the default is 2 ln 2^bits")
    gstate = np.zeros(GSTATE_SIZE)
    gstate[G_SCALE] = 1.0
    return gstate


# ---- helpers ----------------------------------------------------------------


@jit_inline
def _shrink(th, owed):
    """θ_j after truncation by ``owed`` ≥ 0 (any number of steps at once)."""
    if th > 0.0:
        th -= owed
        return th if th > 0.0 else 0.0
    th += owed
    return th if th < 0.0 else 0.0


@jit_inline
def _term(th, m, p, rmin):
    """The norm term (|θ_j| / M)^p; 0 below 2^-1000 (``rmin`` = 2^(-1000/p))."""
    r = abs(th) / m
    if r < rmin:
        return 0.0
    return r**p


@jit_inline
def _weight(th, c, m, b):
    """w_j = sign(θ_j) M ρ^(p−1) N^(−(p−2)/p), from the term c = ρ^p and b = N^(−(p−2)/p)."""
    if c == 0.0:
        return 0.0
    w = m * ((c / (abs(th) / m)) * b)
    return w if th > 0.0 else -w


@jit_inline
def _dd_add(hi, lo, x):
    """(hi, lo) + x in double-double arithmetic (two-sum, then renormalise)."""
    s = hi + x
    bp = s - hi
    e = (hi - (s - bp)) + (x - bp)
    lo = lo + e
    hi = s + lo
    return hi, lo - (hi - s)


@jit_inline
def _needs_refresh(nhi, peak, nnz):
    """True when N must be recomputed exactly (out of range, or cancelled)."""
    if nnz <= 0.0:
        return False
    return not (_TINY <= nhi <= _BIG) or nhi < peak * _DROP


# ---- kernels ------------------------------------------------------------------


@jit
def _norm_sum(table, gstate, lam, m, p):
    """Σ_j (|θ_j settled| / m)^p, double-double, without changing the table."""
    s = gstate[G_S]
    rmin = 2.0 ** (_FLUSH / p)
    hi = 0.0
    lo = 0.0
    for j in range(table.shape[0]):
        th = table[j, 0]
        if th != 0.0:
            owed = lam * (s - table[j, 1])
            if owed > 0.0:
                th = _shrink(th, owed)
            if th != 0.0:
                hi, lo = _dd_add(hi, lo, _term(th, m, p, rmin))
    return hi, lo


@jit
def rebase(table, gstate, params):
    """Settle every slot through the last step and recompute N exactly (O(d)).

    Resets ``S`` and the snapshots to 0 and chooses M = max_j |θ_j|.
    """
    lam = params[P_L1]
    s = gstate[G_S]
    mx = 0.0
    nnz = 0
    for j in range(table.shape[0]):
        th = table[j, 0]
        if th != 0.0:
            owed = lam * (s - table[j, 1])
            if owed > 0.0:
                th = _shrink(th, owed)
                table[j, 0] = th
            if th != 0.0:
                nnz += 1
                if abs(th) > mx:
                    mx = abs(th)
        if table[j, 1] != 0.0:
            table[j, 1] = 0.0
    gstate[G_S] = 0.0
    hi = 0.0
    lo = 0.0
    if nnz > 0:
        gstate[G_SCALE] = mx
        hi, lo = _norm_sum(table, gstate, lam, mx, params[P_P])
    gstate[G_NHI] = hi
    gstate[G_NLO] = lo
    gstate[G_PEAK] = hi
    gstate[G_NNZ] = nnz
    gstate[G_LAST] = gstate[G_N]
    gstate[G_REFRESHES] += 1.0


@jit
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    lam = params[P_L1]
    p = params[P_P]
    every = params[P_NORM_REFRESH]
    learn = params[P_LEARN] != 0.0
    rmin = 2.0 ** (_FLUSH / p)
    expo = -(p - 2.0) / p
    longest = 0
    for i in range(indptr.shape[0] - 1):
        longest = max(longest, indptr[i + 1] - indptr[i])
    cs = np.empty(longest)  # norm terms of the row's slots once settled
    ths = np.empty(longest)  # their θ once settled
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo = indptr[i]
        hi = indptr[i + 1]
        y = labels[i]
        a = weights[i]
        s = gstate[G_S]
        m = gstate[G_SCALE]
        nhi = gstate[G_NHI]
        nlo = gstate[G_NLO]
        nnz = gstate[G_NNZ]
        # (1) bring the row's slots current, moving their terms of N along
        for k in range(lo, hi):
            j = indices[k]
            th = table[j, 0]
            c = 0.0
            if th != 0.0:
                owed = lam * (s - table[j, 1])
                if owed > 0.0:
                    nhi, nlo = _dd_add(nhi, nlo, -_term(th, m, p, rmin))
                    th = _shrink(th, owed)
                    table[j, 0] = th
                    if th == 0.0:
                        nnz -= 1.0
                    else:
                        c = _term(th, m, p, rmin)
                        nhi, nlo = _dd_add(nhi, nlo, c)
                else:
                    c = _term(th, m, p, rmin)
            table[j, 1] = s
            cs[k - lo] = c
            ths[k - lo] = th
        if nnz == 0.0:
            nhi = 0.0
            nlo = 0.0
            gstate[G_PEAK] = 0.0
        gstate[G_NHI] = nhi
        gstate[G_NLO] = nlo
        gstate[G_NNZ] = nnz
        if _needs_refresh(nhi, gstate[G_PEAK], nnz):
            gstate[G_GUARDED] += 1.0
            _refresh_row(table, gstate, params, indices, lo, hi, cs, ths, rmin)
            s = 0.0
            m = gstate[G_SCALE]
            nhi = gstate[G_NHI]
            nlo = gstate[G_NLO]
            nnz = gstate[G_NNZ]
        # (2) predict with w = f⁻¹(θ) and score before learning
        n_sum = nhi + nlo
        b = n_sum**expo if n_sum > 0.0 else 0.0
        pr = bases[i]
        for k in range(lo, hi):
            pr += _weight(ths[k - lo], cs[k - lo], m, b) * values[k]
        preds[i] = pr
        labeled, holdout = begin_example(stats, params, y)
        account(stats, rows, loss_id, pr, y, a, hi - lo, labeled, holdout)
        if not labeled or holdout or not learn or a == 0.0:
            continue
        T = gstate[G_T] + a
        gstate[G_T] = T
        gstate[G_N] += 1.0
        eta = rate(params, T)
        g = eta * a * dloss(loss_id, pr, y)
        owed = eta * lam
        if g != 0.0 or owed != 0.0:
            if s + eta == s:  # S has outgrown η: the snapshots could not tell steps apart
                gstate[G_GUARDED] += 1.0
                _refresh_row(table, gstate, params, indices, lo, hi, cs, ths, rmin)
                s = 0.0
                m = gstate[G_SCALE]
                nhi = gstate[G_NHI]
                nlo = gstate[G_NLO]
                nnz = gstate[G_NNZ]
            # (3) mirror gradient step on θ, (4) this step's truncation on the touched slots
            s += eta
            gstate[G_S] = s
            if g != 0.0:
                for k in range(lo, hi):
                    table[indices[k], 0] -= g * values[k]
            if nnz == 0.0:
                # θ was 0 everywhere: take the scale from the new θ, at no cost
                mx = 0.0
                for k in range(lo, hi):
                    v = abs(_shrink(table[indices[k], 0], owed))
                    if v > mx:
                        mx = v
                if mx > 0.0:
                    m = mx
                    gstate[G_SCALE] = m
            for k in range(lo, hi):
                j = indices[k]
                if table[j, 1] != s:  # first occurrence of the slot in this row
                    th = _shrink(table[j, 0], owed)
                    table[j, 0] = th
                    table[j, 1] = s
                    nhi, nlo = _dd_add(nhi, nlo, _term(th, m, p, rmin))
                    nhi, nlo = _dd_add(nhi, nlo, -cs[k - lo])
                    if th != 0.0:
                        nnz += 1.0
                    if ths[k - lo] != 0.0:
                        nnz -= 1.0
            if nnz == 0.0:
                nhi = 0.0
                nlo = 0.0
                gstate[G_PEAK] = 0.0
            gstate[G_NHI] = nhi
            gstate[G_NLO] = nlo
            gstate[G_NNZ] = nnz
            if _needs_refresh(nhi, gstate[G_PEAK], nnz):
                gstate[G_GUARDED] += 1.0
                rebase(table, gstate, params)
                continue
        if every > 0.0 and gstate[G_N] - gstate[G_LAST] >= every:
            rebase(table, gstate, params)
        elif gstate[G_NHI] > gstate[G_PEAK]:
            gstate[G_PEAK] = gstate[G_NHI]


@jit
def _refresh_row(table, gstate, params, indices, lo, hi, cs, ths, rmin):
    """Exact refresh in the middle of a row: :func:`rebase`, then the row's terms anew."""
    rebase(table, gstate, params)
    m = gstate[G_SCALE]
    p = params[P_P]
    for k in range(lo, hi):
        th = table[indices[k], 0]
        ths[k - lo] = th
        cs[k - lo] = _term(th, m, p, rmin) if th != 0.0 else 0.0


@jit
def current_weights(table, gstate, params, slots, out):
    """w = f⁻¹(θ) through the last step with the exact norm (O(d)), state unchanged."""
    lam = params[P_L1]
    p = params[P_P]
    s = gstate[G_S]
    mx = 0.0
    for j in range(table.shape[0]):
        th = table[j, 0]
        if th != 0.0:
            owed = lam * (s - table[j, 1])
            if owed > 0.0:
                th = _shrink(th, owed)
            if abs(th) > mx:
                mx = abs(th)
    norm = 0.0
    if mx > 0.0:
        hi, lo = _norm_sum(table, gstate, lam, mx, p)
        norm = mx * (hi + lo) ** (1.0 / p)
    for k in range(slots.shape[0]):
        j = slots[k]
        th = table[j, 0]
        if th != 0.0:
            owed = lam * (s - table[j, 1])
            if owed > 0.0:
                th = _shrink(th, owed)
        if th == 0.0:
            out[k] = 0.0
        else:
            w = norm * (abs(th) / norm) ** (p - 1.0)
            out[k] = w if th > 0.0 else -w


SPEC = LearnerSpec(
    name="smidas",
    ncols=2,
    fresh=(0.0, 0.0),
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=init_gstate,
)
