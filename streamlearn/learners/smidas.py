"""SMIDAS (Shalev-Shwartz & Tewari 2009, Algorithm 3), lazily, in O(nnz) per example.

Dense form.  The state is the dual vector θ; the weights are the p-norm link
(the paper's eq. 12)::

    w_j = f⁻¹_j(θ) = sign(θ_j) |θ_j|^(p−1) / ‖θ‖_p^(p−2)        (w = 0 while θ = 0)

and a learned example t with importance a_t and rate η_t (the shared schedule,
:func:`streamlearn.learners.schedules.rate`) takes Algorithm 3's two steps::

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
approximation of the lazy form (measured in ``docs/algorithms.md``).
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

from streamlearn.learners.base import (
    G_N,
    GSTATE_SIZE,
    P_L1,
    P_NORM_REFRESH,
    P_P,
    P_QUANTILE_TAU,
    LearnerSpec,
    score,
)
from streamlearn.learners.losses import dloss
from streamlearn.learners.pnorm import (  # noqa: F401  (the G_* layout is part of this module's API)
    AMORTIZE,
    FLUSH,
    G_GUARDED,
    G_LAST,
    G_NERR,
    G_NHI,
    G_NLO,
    G_NNZ,
    G_REFRESHES,
    G_S,
    G_SCALE,
    NEGLECT,
    acc,
    enter,
    leave,
    load_sum,
    needs_refresh,
    refresh,
    refresh_row,
    save_sum,
    shrink,
)
from streamlearn.learners.schedules import advance
from streamlearn.system.jit import jit

DEFAULT_NORM_REFRESH = 1_000_000
"""Learned examples between exact norm refreshes (``--norm-refresh``).

Measured (``scripts/reproduce_smidas.py refresh``, docs/algorithms.md):
on stationary hashed data the lazy norm's effect on the objective is 1e-7 to
1e-4 relative whatever the interval (the slots that dominate ‖θ‖_p are the
frequent ones, always current); after an abrupt drift the stale terms of
features that stopped appearing keep N too large until the next refresh (up
to 1.4% on the objective).  A refresh is one pass over the table, ~17 ms at
b = 22: every 10^6 examples it costs under 2% of the learning time there.
"""


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


# ---- kernels ------------------------------------------------------------------


@jit
def rebase(table, gstate, params):
    """Flush: settle every slot, recompute N exactly, reset ``S`` and the snapshots (O(d))."""
    refresh(table, gstate, params, True)


@jit
def train_batch(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    lam = params[P_L1]
    p = params[P_P]
    pm1 = p - 1.0
    every = params[P_NORM_REFRESH]
    rmin = 2.0 ** (FLUSH / p)
    tiny = 2.0**FLUSH
    # skip slots with ρ_j < cut N^(1/p): then w_j < 2^-60 ‖θ‖_p and c_j < cut_p N
    cut = 2.0 ** (NEGLECT / pm1)
    cut_p = 2.0 ** (NEGLECT * p / pm1)
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
        m, inv_m, n_hi, n_lo, err, nnz = load_sum(gstate)
        n_sum = n_hi + n_lo
        rcut = max(rmin, cut * n_sum**inv_p)
        bound = max(tiny, cut_p * n_sum)
        # an O(d) refresh for precision alone waits until it costs O(1) row visits per example
        gap = gstate[G_N] - gstate[G_LAST] >= table.shape[0] / (AMORTIZE * max(hi - lo, 1))
        # (1) bring the row's slots current, moving their terms of N along
        for k in range(lo, hi):
            j = indices[k]
            th = table[j, 0]
            q = 0.0
            if th != 0.0:
                c = table[j, 2]
                owed = lam * (s - table[j, 1])
                if owed > 0.0 or c < 0.0:
                    n_hi, n_lo, err = leave(n_hi, n_lo, err, c)
                    th = shrink(th, owed)
                    table[j, 0] = th
                    table[j, 1] = s
                    c = 0.0
                    if th == 0.0:
                        nnz -= 1.0
                    else:
                        q, c, n_hi, n_lo, err = enter(
                            th, inv_m, pm1, rcut, bound, n_hi, n_lo, err
                        )
                    table[j, 2] = c
                else:
                    q = c / (abs(th) * inv_m)
                if th < 0.0:
                    q = -q
            qs[k - lo] = q
            ths[k - lo] = th
        n_hi, n_lo, err = save_sum(gstate, n_hi, n_lo, err, nnz)
        if needs_refresh(n_hi + n_lo, err, nnz, gap):
            refresh_row(table, gstate, params, False, indices, lo, hi, qs, ths)
            m, inv_m, n_hi, n_lo, err, nnz = load_sum(gstate)
        # (2) predict with w_j = sign(θ_j) M ρ_j^(p−1) N^(−(p−2)/p), score before learning
        n_sum = n_hi + n_lo
        mb = m * n_sum**expo if n_sum > 0.0 else 0.0
        pr = 0.0
        for k in range(lo, hi):
            pr += qs[k - lo] * values[k]
        pr = bases[i] + mb * pr
        pr, learn = score(stats, rows, gstate, params, loss_id, pr, y, a, hi - lo)
        preds[i] = pr
        if not learn:
            continue
        eta = advance(gstate, params, a)
        g = eta * a * dloss(loss_id, pr, y, params[P_QUANTILE_TAU])
        owed = eta * lam
        if g != 0.0 or owed != 0.0:
            s = gstate[G_S]
            if s + eta == s:  # S has outgrown η: snapshots could no longer tell steps apart
                refresh_row(table, gstate, params, True, indices, lo, hi, qs, ths)
                s = 0.0
                m, inv_m, n_hi, n_lo, err, nnz = load_sum(gstate)
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
                    mx = max(mx, abs(shrink(table[indices[k], 0], owed)))
                if mx > 0.0:
                    m = mx
                    inv_m = 1.0 / m
                    gstate[G_SCALE] = m
            for k in range(lo, hi):
                j = indices[k]
                if table[j, 1] != s:  # first occurrence of the slot in this row
                    th = shrink(table[j, 0], owed)
                    table[j, 0] = th
                    table[j, 1] = s
                    n_hi, n_lo, err = leave(n_hi, n_lo, err, table[j, 2])
                    c = 0.0
                    if th != 0.0:
                        _, c, n_hi, n_lo, err = enter(
                            th, inv_m, pm1, rcut, bound, n_hi, n_lo, err
                        )
                        nnz += 1.0
                    table[j, 2] = c
                    if ths[k - lo] != 0.0:
                        nnz -= 1.0
            n_hi, n_lo, err = save_sum(gstate, n_hi, n_lo, err, nnz)
            if needs_refresh(n_hi + n_lo, err, nnz, gap):
                gstate[G_GUARDED] += 1.0
                refresh(table, gstate, params, False)
                continue
        if every > 0.0 and gstate[G_N] - gstate[G_LAST] >= every:
            refresh(table, gstate, params, False)


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
                th = shrink(th, owed)
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
                    th = shrink(th, owed)
                n_hi, n_lo, err = acc(n_hi, n_lo, err, (abs(th) / mx) ** p)
        norm = mx * (n_hi + n_lo) ** (1.0 / p)
    for k in range(slots.shape[0]):
        j = slots[k]
        th = table[j, 0]
        if th != 0.0:
            owed = lam * (s - table[j, 1])
            if owed > 0.0:
                th = shrink(th, owed)
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
