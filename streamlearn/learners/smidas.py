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

    N = Σ_j c_j,  c_j = ρ_j^p,  ρ_j = |θ_j| / M          ‖θ‖_p = M N^(1/p)
    w_j = sign(θ_j) M ρ_j^(p−1) N^(−(p−2)/p)

M (``G_SCALE``) changes only at an exact refresh (kept if N lands in
[2^-100, 2^100], else set to max_j |θ_j|).  Each slot keeps its term c_j, so
a term leaves N exactly as it entered; N is summed with 2Sum (``G_NHI`` +
``G_NLO``).  One power ρ^(p−1) per settled slot gives both its weight and its
term.  A slot whose weight is below 2^-60 ‖θ‖_p skips the power: its term is
left out of N and its bound stored instead (as −bound in column 2).
``G_NERR`` bounds |N − Σ_j ρ_j^p| (the sum's rounding plus the bounds of the
terms left out).  An exact refresh is forced when N leaves [2^-600, 2^512]
while some θ_j ≠ 0 (rescale; also catches a sum cancelled to nothing), or
when G_NERR exceeds 2^-20 N, at most once per d / (16 nnz(x)) examples so
that it costs O(1) row visits per example.  Terms below 2^-1000 count as 0.
So N is never negative, NaN or infinite, and w is never silently zero while
θ is not.

Per slot (24 bytes): θ_j (column 0, the primary state), the snapshot ``S_j``
(column 1) and the term c_j (column 2).  Global: the sums below, from
``G_USER`` on.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn._jit import jit, jit_inline
from streamlearn.learners.base import (
    G_N,
    G_USER,
    GSTATE_SIZE,
    P_L1,
    P_NORM_REFRESH,
    P_P,
    LearnerSpec,
    score,
)
from streamlearn.losses import dloss
from streamlearn.schedules import advance

G_S = G_USER  # Σ η_τ over the learned steps since the last flush (λ η_τ truncated at τ)
G_SCALE = G_USER + 1  # M: the terms of N are (|θ_j| / M)^p
G_NHI = G_USER + 2  # N = Σ_j c_j over the terms kept in column 2 ...
G_NLO = G_USER + 3  # ... is G_NHI + G_NLO (the sum's rounding errors, carried)
G_NERR = G_USER + 4  # bound on |N − Σ_j ρ_j^p|: rounding plus the terms left out
G_NNZ = G_USER + 5  # number of slots whose stored θ_j is non-zero
G_LAST = G_USER + 6  # G_N at the last exact refresh
G_REFRESHES = G_USER + 7  # exact refreshes so far (scheduled, guarded and flushes)
G_GUARDED = G_USER + 8  # ... of which forced by a guard

DEFAULT_NORM_REFRESH = 1_000_000
"""Learned examples between exact norm refreshes (``--norm-refresh``).

Measured (``scripts/reproduce_smidas.py refresh``, docs/algorithms-smidas.md):
on stationary hashed data the lazy norm's effect on the objective is 1e-7 to
1e-4 relative whatever the interval (the slots that dominate ‖θ‖_p are the
frequent ones, always current); after an abrupt drift the stale terms of
features that stopped appearing keep N too large until the next refresh (up
to 1.4% on the objective).  A refresh is one pass over the table, ~17 ms at
b = 22: every 10^6 examples it costs under 2% of the learning time there.
"""

_BIG = 2.0**512  # N above this: rescale (a term may overflow soon)
_TINY = 2.0**-600  # N below this with θ ≠ 0: rescale (terms underflow)
_TRUST = 2.0**-20  # N's error bound above this fraction of N: recompute
_EPS = 2.0**-53  # unit roundoff
_AMORTIZE = 16.0  # ... but at most once per d / (_AMORTIZE nnz(x)) examples
_FLUSH = -1000.0  # log2 of the smallest term a refresh computes (smaller ones: bounded)
_NEGLECT = -60.0  # train_batch skips the power of a slot whose w_j < 2^_NEGLECT ‖θ‖_p
_REFRESH_LO = 2.0**-100  # a refresh keeps M when N lands in [_REFRESH_LO, _REFRESH_HI]
_REFRESH_HI = 2.0**100


def default_p(bits: int) -> float:
    """The paper's p = 2 ln d for a table of d = 2**bits slots, at least 2.

    Below b = 2 (d < e) 2 ln d is under 2, where the p-norm link is no longer
    the mirror map of a strongly convex potential; p = 2 (truncated gradient)
    is used instead.

    >>> round(default_p(18), 4)
    24.9533
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
def _acc(s, comp, err, x):
    """N + x: 2Sum keeps the rounding error of ``s + x`` in ``comp`` (N = s + comp).

    Only ``s`` is on the dependency chain.  ``err`` grows by a bound on the
    rounding of ``comp`` itself.
    """
    t = s + x
    bp = t - s
    comp += (s - (t - bp)) + (x - bp)
    return t, comp, err + abs(comp) * _EPS


@jit_inline
def _leave(n_hi, n_lo, err, c):
    """Take a slot's stored term ``c`` out of N (c < 0: it was left out, −c bounded it)."""
    if c > 0.0:
        return _acc(n_hi, n_lo, err, -c)
    return n_hi, n_lo, max(err + c, 0.0)


@jit_inline
def _enter(th, inv_m, pm1, rcut, bound, n_hi, n_lo, err):
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
    n_hi, n_lo, err = _acc(n_hi, n_lo, err, c)
    return q, c, n_hi, n_lo, err


@jit_inline
def _needs_refresh(n, err, nnz, gap):
    """True when N must be recomputed: out of range, or (after a ``gap``) not trusted."""
    if nnz <= 0.0:
        return False
    return not (_TINY <= n <= _BIG) or (gap and err > _TRUST * n)


# ---- kernels ------------------------------------------------------------------


@jit
def _refresh(table, gstate, params, reset):
    """Settle every slot through the last step and recompute N exactly (O(d)).

    Keeps M when N lands well inside its range, else takes M = max_j |θ_j|
    (a second pass).  ``reset`` also sets ``S`` and the snapshots back to 0.
    """
    lam = params[P_L1]
    p = params[P_P]
    pm1 = p - 1.0
    rmin = 2.0 ** (_FLUSH / p)
    tiny = 2.0**_FLUSH
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
                        th = _shrink(th, owed)
                        table[j, 0] = th
                        table[j, 1] = s
                c = 0.0
                if th != 0.0:
                    nnz += 1
                    mx = max(mx, abs(th))
                    _, c, n_hi, n_lo, err = _enter(th, inv_m, pm1, rmin, tiny, n_hi, n_lo, err)
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
def rebase(table, gstate, params):
    """Flush: settle every slot, recompute N exactly, reset ``S`` and the snapshots (O(d))."""
    _refresh(table, gstate, params, True)


@jit
def _refresh_row(table, gstate, params, reset, indices, lo, hi, qs, ths):
    """Guarded refresh in the middle of a row, then the row's settled θ and ρ^(p−1) anew."""
    gstate[G_GUARDED] += 1.0
    _refresh(table, gstate, params, reset)
    inv_m = 1.0 / gstate[G_SCALE]
    for k in range(lo, hi):
        j = indices[k]
        th = table[j, 0]
        c = table[j, 2]
        q = c / (abs(th) * inv_m) if c > 0.0 else 0.0
        qs[k - lo] = q if th > 0.0 else -q
        ths[k - lo] = th


@jit
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    lam = params[P_L1]
    p = params[P_P]
    pm1 = p - 1.0
    every = params[P_NORM_REFRESH]
    rmin = 2.0 ** (_FLUSH / p)
    tiny = 2.0**_FLUSH
    # skip slots with ρ_j < cut N^(1/p): then w_j < 2^-60 ‖θ‖_p and c_j < cut_p N
    cut = 2.0 ** (_NEGLECT / pm1)
    cut_p = 2.0 ** (_NEGLECT * p / pm1)
    inv_p = 1.0 / p
    expo = -(p - 2.0) / p
    longest = 0
    for i in range(indptr.shape[0] - 1):
        longest = max(longest, indptr[i + 1] - indptr[i])
    qs = np.empty(longest)  # sign(θ_j) ρ_j^(p−1) of the row's slots once settled
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
        inv_m = 1.0 / m
        n_hi = gstate[G_NHI]
        n_lo = gstate[G_NLO]
        err = gstate[G_NERR]
        nnz = gstate[G_NNZ]
        n_sum = n_hi + n_lo
        rcut = max(rmin, cut * n_sum**inv_p)
        bound = max(tiny, cut_p * n_sum)
        # an O(d) refresh for precision alone waits until it costs O(1) row visits per example
        gap = gstate[G_N] - gstate[G_LAST] >= table.shape[0] / (_AMORTIZE * max(hi - lo, 1))
        # (1) bring the row's slots current, moving their terms of N along
        for k in range(lo, hi):
            j = indices[k]
            th = table[j, 0]
            q = 0.0
            if th != 0.0:
                c = table[j, 2]
                owed = lam * (s - table[j, 1])
                if owed > 0.0 or c < 0.0:
                    n_hi, n_lo, err = _leave(n_hi, n_lo, err, c)
                    th = _shrink(th, owed)
                    table[j, 0] = th
                    table[j, 1] = s
                    c = 0.0
                    if th == 0.0:
                        nnz -= 1.0
                    else:
                        q, c, n_hi, n_lo, err = _enter(
                            th, inv_m, pm1, rcut, bound, n_hi, n_lo, err
                        )
                    table[j, 2] = c
                else:
                    q = c / (abs(th) * inv_m)
                if th < 0.0:
                    q = -q
            qs[k - lo] = q
            ths[k - lo] = th
        if nnz == 0.0:
            n_hi = 0.0
            n_lo = 0.0
            err = 0.0
        gstate[G_NHI] = n_hi
        gstate[G_NLO] = n_lo
        gstate[G_NERR] = err
        gstate[G_NNZ] = nnz
        if _needs_refresh(n_hi + n_lo, err, nnz, gap):
            _refresh_row(table, gstate, params, False, indices, lo, hi, qs, ths)
            m = gstate[G_SCALE]
            inv_m = 1.0 / m
            n_hi = gstate[G_NHI]
            n_lo = gstate[G_NLO]
            err = gstate[G_NERR]
            nnz = gstate[G_NNZ]
        # (2) predict with w_j = sign(θ_j) M ρ_j^(p−1) N^(−(p−2)/p), score before learning
        n_sum = n_hi + n_lo
        mb = m * n_sum**expo if n_sum > 0.0 else 0.0
        pr = 0.0
        for k in range(lo, hi):
            pr += qs[k - lo] * values[k]
        pr = bases[i] + mb * pr
        preds[i] = pr
        if not score(stats, rows, params, loss_id, pr, y, a, hi - lo):
            continue
        eta = advance(gstate, params, a)
        g = eta * a * dloss(loss_id, pr, y)
        owed = eta * lam
        if g != 0.0 or owed != 0.0:
            s = gstate[G_S]
            if s + eta == s:  # S has outgrown η: snapshots could no longer tell steps apart
                _refresh_row(table, gstate, params, True, indices, lo, hi, qs, ths)
                s = 0.0
                m = gstate[G_SCALE]
                inv_m = 1.0 / m
                n_hi = gstate[G_NHI]
                n_lo = gstate[G_NLO]
                err = gstate[G_NERR]
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
                    mx = max(mx, abs(_shrink(table[indices[k], 0], owed)))
                if mx > 0.0:
                    m = mx
                    inv_m = 1.0 / m
                    gstate[G_SCALE] = m
            for k in range(lo, hi):
                j = indices[k]
                if table[j, 1] != s:  # first occurrence of the slot in this row
                    th = _shrink(table[j, 0], owed)
                    table[j, 0] = th
                    table[j, 1] = s
                    n_hi, n_lo, err = _leave(n_hi, n_lo, err, table[j, 2])
                    c = 0.0
                    if th != 0.0:
                        _, c, n_hi, n_lo, err = _enter(
                            th, inv_m, pm1, rcut, bound, n_hi, n_lo, err
                        )
                        nnz += 1.0
                    table[j, 2] = c
                    if ths[k - lo] != 0.0:
                        nnz -= 1.0
            if nnz == 0.0:
                n_hi = 0.0
                n_lo = 0.0
                err = 0.0
            gstate[G_NHI] = n_hi
            gstate[G_NLO] = n_lo
            gstate[G_NERR] = err
            gstate[G_NNZ] = nnz
            if _needs_refresh(n_hi + n_lo, err, nnz, gap):
                gstate[G_GUARDED] += 1.0
                _refresh(table, gstate, params, False)
                continue
        if every > 0.0 and gstate[G_N] - gstate[G_LAST] >= every:
            _refresh(table, gstate, params, False)


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
            mx = max(mx, abs(th))
    norm = 0.0
    if mx > 0.0:
        n_hi = 0.0
        n_lo = 0.0
        err = 0.0
        for j in range(table.shape[0]):
            th = table[j, 0]
            if th != 0.0:
                owed = lam * (s - table[j, 1])
                if owed > 0.0:
                    th = _shrink(th, owed)
                n_hi, n_lo, err = _acc(n_hi, n_lo, err, (abs(th) / mx) ** p)
        norm = mx * (n_hi + n_lo) ** (1.0 / p)
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
    ncols=3,
    fresh=(0.0, 0.0, 0.0),
    train_batch=train_batch,
    current_weights=current_weights,
    rebase=rebase,
    init_gstate=init_gstate,
)
