"""Distributionally robust contextual-bandit learning (VW's ``--cb_dro``, ``cb_dro.cc``), over
cb_adf and, under ``--cb_explore_adf``, its explorer.

Each example: cb_adf scores the actions without learning (the explorer makes its pmf:
``-p`` and the progressive loss are these); a labeled one then updates VW's chi-squared
estimator (``distributionally_robust.cc``, in doubles) with ``w = 1/p`` when the action
the policy picks (the pmf's most probable one, the first of the largest; cb_adf's top
action without an explorer) is the logged one, else 0, and ``r = −cost``, and is learned
with its weight times ``qlb = n · q(w, r) / w`` (1 when ``w`` is 0; at least 0.01), where
``q`` is the Cressie-Read lower bound's dual at the estimator's least reward: cb_adf's mtr,
ips and dm take the weight, dr and sm learn with 1 whatever it is (as VW's cb_adf).

``chi`` is float64[:data:`CHI`]: the estimator's parameters and sums (its duals are
recomputed at each bound, as VW's after every update).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.base import G_N
from streamlearn.learners.cb_adf import (
    ACTIONS,
    DR,
    EVENTS,
    HO_LOSS,
    LOSS,
    train_examples,
    train_weighted,
)
from streamlearn.learners.explore import X_COUNTER, X_TAU, explore_examples
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32

C_ALPHA, C_TAU, C_WMIN, C_WMAX, C_RMIN, C_RMAX = 0, 1, 2, 3, 4, 5
C_N, C_SUMW, C_SUMWSQ, C_SUMWR, C_SUMWSQR, C_SUMWSQRSQ, C_DELTA = 6, 7, 8, 9, 10, 11, 12
CHI = 13

_ISF = (-1.73754, -1.40684, 0.0758363, 0.00726577, 0.000468688, 0.0000214395, 1.0643e-6,
        6.43011e-8, 2.0475e-9, 1.16356, -0.575446, 0.329796, -0.136076, 0.0396764,
        -0.00763232, 0.00087113, -0.0000445128)  # fmt: skip
"""VW's fit of the chi-squared (1 dof) inverse survival function in log α and e^α."""


def onedof_isf(alpha: float) -> float:
    """VW's ``chisq_onedof_isf``: the fit at ``alpha``."""
    la, ea = math.log(alpha), math.exp(alpha)
    lp, ep, rv = la, ea, _ISF[0]
    for i in range(1, 9):
        rv += _ISF[i] * lp
        rv += _ISF[i + 8] * ep
        lp *= la
        ep *= ea
    return rv


def new_state(alpha: float, tau: float, wmax: float) -> np.ndarray:
    """A fresh estimator (VW's ``chi_squared(alpha, tau, 0, wmax)``, its rewards in [0, 1]),
    from the options as VW reads them (float32, then double)."""
    chi = np.zeros(CHI)
    chi[C_ALPHA], chi[C_TAU] = float(F32(alpha)), float(F32(tau))
    chi[C_WMIN], chi[C_WMAX] = 0.0, float(F32(wmax))
    chi[C_RMIN], chi[C_RMAX] = 0.0, 1.0
    chi[C_DELTA] = onedof_isf(chi[C_ALPHA])
    return chi


@jit_inline
def _update(chi, w, r):
    if w >= 0.0:
        tau = chi[C_TAU]
        chi[C_N] = tau * chi[C_N] + 1.0
        chi[C_SUMW] = tau * chi[C_SUMW] + w
        chi[C_SUMWSQ] = tau * chi[C_SUMWSQ] + w * w
        chi[C_SUMWR] = tau * chi[C_SUMWR] + w * r
        chi[C_SUMWSQR] = tau * chi[C_SUMWSQR] + w * w * r
        chi[C_SUMWSQRSQ] = tau * chi[C_SUMWSQRSQ] + w * w * r * r
        chi[C_RMIN] = min(chi[C_RMIN], r)
        chi[C_RMAX] = max(chi[C_RMAX], r)
        chi[C_WMIN] = min(chi[C_WMIN], w)
        chi[C_WMAX] = max(chi[C_WMAX], w)


@jit_inline
def _phi(chi):
    n = chi[C_N]
    wfake = chi[C_WMAX] if chi[C_SUMW] < n else chi[C_WMIN]
    if wfake == np.inf:
        g = 1.0 + fdiv(1.0, n)
    else:
        a = (wfake + chi[C_SUMW]) / (1.0 + n)
        b = (wfake * wfake + chi[C_SUMWSQ]) / (1.0 + n)
        g = fdiv((n + 1.0) * (a - 1.0) * (a - 1.0), b - a * a)  # (C's inf, nan: as VW)
    return (-g - chi[C_DELTA]) / (2.0 * (n + 1.0))


@jit_inline
def _close(x, y, atol):
    return abs(x - y) <= atol + 1e-5 * abs(y)


@jit_inline
def _kappa(y, z):
    """VW's test of a candidate: (admissible, κ = √(y/2z), √(2yz)), a ``y·z`` within 1e-9 of
    0 taken as 0."""
    if _close(y * z, 0.0, 1e-9):
        y = 0.0
    if not (z <= 0.0 and y * z >= 0.0):
        return False, 0.0, 0.0
    return True, np.sqrt(fdiv(y, 2.0 * z)), np.sqrt(2.0 * y * z)


@jit_inline
def _duals(chi, r, sign, phi):
    """VW's ``cressieread_duals``: (score, unbounded, kappa, gamma, beta, n) of the best
    candidate of the two fake weights (the first of the least), or VW's fallbacks."""
    n = chi[C_N]
    if n <= 0.0:
        return r, True, 0.0, 0.0, 0.0, 0.0
    best = np.inf
    found = False
    out = (0.0, True, 0.0, 0.0, 0.0, n)
    sw, swsq, swr, swsqr, swsqrsq = (chi[C_SUMW], chi[C_SUMWSQ], chi[C_SUMWR], chi[C_SUMWSQR],
                                     chi[C_SUMWSQRSQ])  # fmt: skip
    for j in range(2):
        wfake = chi[C_WMIN] if j == 0 else chi[C_WMAX]
        ok = False
        x = gamma = beta = kappa = root = 0.0
        if wfake == np.inf:
            x = sign * (r + (swr - sw * r) / n)
            y = (r * sw - swr) * (r * sw - swr) / (n * (1.0 + n)) - (
                r * r * swsq - 2.0 * r * swsqr + swsqrsq) / (1.0 + n)  # fmt: skip
            ok, kappa, root = _kappa(y, phi + 1.0 / (2.0 * n))
            gamma = -kappa * (1.0 + n) / n + sign * (r * sw - swr) / n
            beta = -sign * r
        else:
            bw = (wfake + sw) / (1.0 + n)
            bwsq = (wfake * wfake + swsq) / (1.0 + n)
            bwr = sign * (wfake * r + swr) / (1.0 + n)
            bwsqr = sign * (wfake * wfake * r + swsqr) / (1.0 + n)
            bwsqrsq = (wfake * wfake * r * r + swsqrsq) / (1.0 + n)
            if bwsq > bw * bw:
                v = bwsq - bw * bw
                x = bwr + ((1.0 - bw) * (bwsqr - bw * bwr) / v)
                y = (bwsqr - bw * bwr) * (bwsqr - bw * bwr) / v - (bwsqrsq - bwr * bwr)
                ok, kappa, root = _kappa(y, phi + 0.5 * (1.0 - bw) * (1.0 - bw) / v)
                beta = (-kappa * (1.0 - bw) - (bwsqr - bw * bwr)) / v
                gamma = -kappa - beta * bw - bwr
        if not ok:
            continue
        if _close(kappa, 0.0, 1e-8):
            cand = (sign * r, True, 0.0, 0.0, 0.0, n)
        else:
            cand = (x - root, False, kappa, gamma, beta, n)
        if not found or cand[0] < best:
            found = True
            best = cand[0]
            out = cand
    if not found:
        return chi[C_RMIN], True, 0.0, 0.0, 0.0, n
    return out


@jit_inline
def qlb_weight(chi, w, r):
    """The example's weight factor: ``n · q(w, r) / w`` at fresh duals (1 when ``w`` is 0),
    at least 0.01 (float32, as VW)."""
    _, unbounded, kappa, gamma, beta, n = _duals(chi, chi[C_RMIN], 1.0, _phi(chi))
    if not w > 0.0:
        return F32(1.0)
    q = 1.0 if unbounded else fdiv(-(gamma + (beta + r) * w), (n + 1.0) * kappa)
    return max(F32(chi[C_N] * q / w), F32(0.01))


@jit
def dro_examples(tables, sub, step, gstate, params, params_pred, loss_id, cb_type, clip_p,
                 act_ptr, indptr, indices, values, chosen, cost, prob, holdout, holdout_learns,
                 stats, dr_prev, explore, kind, epsilon, first_only, lam, gamma_scale,
                 gamma_exponent, xstats, chi, scores, order, loss_out, acts, probs):  # fmt: skip
    """The examples of a batch, one by one (see the module); ``explore``: an explorer's pmf
    (``kind``...) at ``acts``/``probs``, else cb_adf's ranking alone.  cb_adf and the
    explorer are called on the whole arrays with one example's window of ``act_ptr`` and
    its label in arrays of one, the types of the calls the drivers make: their compiled
    kernels serve these calls too."""
    ap = np.zeros(2, dtype=np.int64)
    ch = np.empty_like(chosen[:1])
    co = np.empty_like(cost[:1])
    pr = np.empty_like(prob[:1])
    ho = np.empty_like(holdout[:1])
    lo = np.empty_like(loss_out[:1])
    scratch = np.zeros(stats.shape[0])
    xs = np.zeros(xstats.shape[0])
    acts2 = np.zeros_like(acts)
    probs2 = np.zeros_like(probs)
    learning = params[10] != 0.0  # P_LEARN
    for e in range(act_ptr.shape[0] - 1):
        r0 = act_ptr[e]
        r1 = act_ptr[e + 1]
        n = r1 - r0
        ap[0], ap[1] = r0, r1
        k = chosen[e]
        ch[0], co[0], pr[0], ho[0] = k, cost[e], prob[e], holdout[e]
        # predict: cb_adf's scores with learning off (the explorer's pmf)
        train_examples(tables, sub, step, gstate, params_pred, loss_id, cb_type, clip_p, ap,
                       indptr, indices, values, ch, co, pr, ho, holdout_learns, stats, dr_prev,
                       scores, order, lo)  # fmt: skip
        loss_out[e] = lo[0]
        if explore:
            explore_examples(kind, epsilon, first_only, lam, gamma_scale, gamma_exponent, ap,
                             scores, order, ch, co, pr, ho, holdout_learns, False, xstats, acts,
                             probs)  # fmt: skip
        learn = k >= 0 and learning and (holdout_learns or not holdout[e])
        if not learn or n == 0:
            continue
        top = order[r0]
        if explore:  # the pmf's largest (probability, action): VW's max_element of a_s
            best = r0
            for i in range(r0 + 1, r1):
                if probs[i] > probs[best] or (probs[i] == probs[best] and acts[i] > acts[best]):
                    best = i
            top = acts[best]
        p = F32(prob[e])
        w = F32(1.0) / p if p > F32(0.0) else F32(0.0)
        r = -F32(cost[e])
        _update(chi, np.float64(w) if top == k else 0.0, np.float64(r))
        qlb = qlb_weight(chi, np.float64(w), np.float64(r))
        # learn with the weight (gd's t counted once: the prediction above counted it)
        if not holdout[e]:
            gstate[G_N] -= 1.0
        scratch[:] = 0.0
        scratch[EVENTS] = stats[EVENTS]
        scratch[ACTIONS] = stats[ACTIONS]
        train_weighted(tables, sub, step, gstate, params, loss_id, cb_type, clip_p, ap, indptr,
                       indices, values, ch, co, pr, ho, holdout_learns, scratch, dr_prev, scores,
                       order, lo, qlb)  # fmt: skip
        stats[EVENTS] = scratch[EVENTS]
        stats[ACTIONS] = scratch[ACTIONS]
        if cb_type == DR and not explore:
            # VW's dr loss reads the regressor's predictions of the learning call (this
            # example's), where the prediction above read the last example's
            if holdout[e]:
                stats[HO_LOSS] += lo[0] - loss_out[e]
            else:
                stats[LOSS] += lo[0] - loss_out[e]
            loss_out[e] = lo[0]
        if explore:  # the explorer learns: its counters advance (the pmf is the one above)
            xs[:] = xstats
            explore_examples(kind, epsilon, first_only, lam, gamma_scale, gamma_exponent, ap,
                             scores, order, ch, co, pr, ho, holdout_learns, True, xs, acts2,
                             probs2)  # fmt: skip
            xstats[X_TAU] = xs[X_TAU]
            xstats[X_COUNTER] = xs[X_COUNTER]
