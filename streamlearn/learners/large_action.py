"""VW's ``--large_action_space`` filter: a spanner of each example's actions, the explorer's
pmf over it (VW's ``cb_explore_adf_large_action_space.cc`` and its ``details/large_action``).

Per example of K > d actions (d = ``--max_actions``), in VW's order:

* **shrink factors** (``--squarecb`` only, else 1): ``sqrt(1 + d + gamma/(4d) (s_i - s_min))``
  with ``s_i`` the i-th *ranked* score but used for action i (as VW indexes them), float32;
* **AOmega** (VW's ``one_pass_svd_impl``): row a, column j (p = min(K, d + 10) columns) is
  ``Σ_f x_f · ω(f, j) · shrink_a / sqrt(p)`` over the action line's own features (the
  shared line's taken off, its crosses among its own namespaces kept), float32, where
  ``ω`` is VW's lazy sparse Rademacher value of the feature's raw index ``i`` (the slot
  times the weights' stride): 0 when ``parity(i + j)`` is even, else ``+1``/``-1`` by
  ``parity(i + j + seed)`` (:func:`aomega`);
* **SVD** of AOmega (numpy's, in float64; VW's is Eigen's float JacobiSVD), U's first d
  columns; k = how many leading singular values first pass 99% of their sum (at most d);
* **spanner** (:func:`spanner`): Awerbuch & Kleinberg's C-approximate barycentric spanner
  of U's rows with rank-one determinant updates, literally VW's (its indices array of d
  entries lives over the run, so entries past k stay from earlier examples, zeros at
  first: actions VW keeps too);
* the spanner's actions and the top-ranked one stay, in the ranking's order; the explorer
  (greedy, squarecb) makes its pmf over them; the others follow with probability 0, by
  action (VW's ``cb_actions_mask``) (:func:`las_explore_examples`).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.explore import (
    GREEDY,
    SQUARECB,
    X_COUNTER,
    X_HO_LOSS,
    X_HO_N,
    X_LOSS,
    X_N,
    explore_loss,
    greedy_pmf,
    merand48,
    squarecb_gamma,
    squarecb_pmf,
)
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
U64 = np.uint64

SLACK = 10
"""VW's ``sampling_slack``: AOmega has min(K, d + 10) columns."""


@jit_inline
def parity(x):
    """``__builtin_parity`` of a uint64."""
    x ^= x >> U64(32)
    x ^= x >> U64(16)
    x ^= x >> U64(8)
    x ^= x >> U64(4)
    x ^= x >> U64(2)
    x ^= x >> U64(1)
    return int(x & U64(1))


@jit
def aomega(indptr, indices, values, lo, hi, width, mask, stride, seed, p, scale, shrink, out):
    """AOmega's rows of action lines ``lo:hi`` (CSR, slots) into ``out`` (float32[K, p]):
    a slot's raw index is ``((slot · width) & mask) · stride`` (width: the features'
    models, 2 under dr; mask: the table's)."""
    for r in range(lo, hi):
        for j in range(p):
            dot = F32(0.0)
            col = U64(j)
            for t in range(indptr[r], indptr[r + 1]):
                i = ((U64(indices[t]) * U64(width)) & U64(mask)) * U64(stride)
                if parity(i + col) == 1:
                    v = F32(values[t])
                    if parity(i + col + U64(seed)) == 1:
                        dot = F32(dot - v)
                    else:
                        dot = F32(dot + v)
            out[r - lo, j] = F32(F32(dot * shrink[r - lo]) * scale)


@jit
def shrink_factors(sorted_scores, gamma, d, out):
    """VW's shrink factors (``--squarecb``): entry i from the i-th ranked score."""
    n = sorted_scores.shape[0]
    mn = sorted_scores[0]
    for i in range(n):
        if sorted_scores[i] < mn:
            mn = sorted_scores[i]
    g = F32(F32(gamma) / F32(F32(4.0) * F32(d)))
    for i in range(n):
        out[i] = F32(math.sqrt(F32(F32(1 + d) + F32(g * F32(sorted_scores[i] - mn)))))


def non_degenerate(s: np.ndarray) -> int:
    """How many leading singular values first pass 99% of their sum (VW's count)."""
    total = F32(np.sum(s.astype(np.float32)))
    run = F32(0.0)
    k = 0
    for v in s.astype(np.float32):
        k += 1
        run = F32(run + v)
        if run > F32(0.99) * total:
            break
    return k


TIE = 1e-9
"""Volumes this close (relative) are a tie, which the first row wins: VW's float32 SVD
breaks such ties by its rounding (the same action twice, actions alike in U's first
columns), which sl cannot reproduce; sl's answer stays the same whatever LAPACK rounds."""


@jit_inline
def _max_volume(u, phi):
    best = -1.0
    rid = 0
    for i in range(u.shape[0]):
        v = 0.0
        for j in range(u.shape[1]):
            v += u[i, j] * phi[j]
        v = abs(v)
        if v > best + TIE * abs(best):
            best = v
            rid = i
    return best, rid


@jit_inline
def _replace(u, x, xinv, rid, vol, shrink, i, logdet):
    """Row i of X becomes U's row ``rid`` (Sherman-Morrison on X's inverse), det kept 1."""
    k, d = x.shape
    den = shrink * math.exp(logdet)
    y = np.empty(d)
    for j in range(d):
        y[j] = u[rid, j] / den
    xu = np.zeros(k)
    for a in range(k):
        s = 0.0
        for j in range(d):
            s += xinv[a, j] * (y[j] - x[i, j])
        xu[a] = s
    vt = xinv[i].copy()
    f = 1.0 / (1.0 + xu[i])
    for a in range(k):
        for j in range(d):
            xinv[a, j] -= f * xu[a] * vt[j]
    for j in range(d):
        x[i, j] = y[j]
    this = (1.0 / u.shape[0]) * (math.log(vol) - logdet)
    sc = math.exp(this)
    for a in range(k):
        for j in range(d):
            xinv[a, j] *= sc
            x[a, j] /= sc
    return logdet + this


@jit
def spanner(u, k, shrink, c, idx):
    """VW's ``compute_spanner`` over U (float64[K, d]) with k rows: writes the chosen rows
    into ``idx[:k]`` (int64[d], kept over the run as VW's)."""
    d = u.shape[1]
    x = np.zeros((k, d))
    xinv = np.zeros((k, d))
    for i in range(k):
        x[i, i] = 1.0
        xinv[i, i] = 1.0
    logdet = 0.0
    vol = 0.0
    for i in range(k):
        vol, rid = _max_volume(u, xinv[i].copy())
        logdet = _replace(u, x, xinv, rid, vol, shrink[rid], i, logdet)
        idx[i] = rid
    iters = int(k * math.log(k) / np.float64(F32(math.log(F32(c)))))
    x_vol = vol
    for _ in range(iters):
        found = False
        for i in range(k):
            vol, rid = _max_volume(u, xinv[i].copy())
            if vol > F32(c) * x_vol:
                logdet = _replace(u, x, xinv, rid, vol, shrink[rid], i, logdet)
                idx[i] = rid
                x_vol = vol
                found = True
                break
        if not found:
            break


@jit
def las_explore_examples(kind, epsilon, first_only, gamma_scale, gamma_exponent, act_ptr,
                         scores, order, keep, chosen, cost, prob, holdout, holdout_learns,
                         learning, xstats, out_actions, out_probs):  # fmt: skip
    """:func:`streamlearn.learners.explore.explore_examples` (greedy, squarecb) over each
    example's kept actions (``keep``, per row, by action) in the ranking's order, then
    the others with probability 0 by action; the loss on the whole pmf."""
    ones = np.ones(64, dtype=np.float32)
    for e in range(act_ptr.shape[0] - 1):
        lo = act_ptr[e]
        hi = act_ptr[e + 1]
        n = hi - lo
        if n == 0:
            continue
        if n > ones.shape[0]:
            ones = np.ones(2 * n, dtype=np.float32)
        m = 0
        for i in range(n):
            a = order[lo + i]
            if keep[lo + a]:
                out_actions[lo + m] = a
                out_probs[lo + m] = F32(scores[lo + a])
                m += 1
        t = m
        for a in range(n):
            if not keep[lo + a]:
                out_actions[lo + t] = a
                out_probs[lo + t] = F32(0.0)
                t += 1
        p = out_probs[lo : lo + m]
        labeled = chosen[e] >= 0
        learn = labeled and learning and (holdout_learns or not holdout[e])
        if kind == GREEDY:
            greedy_pmf(p, epsilon, first_only)
        elif kind == SQUARECB:
            g = squarecb_gamma(int(xstats[X_COUNTER]), gamma_scale, gamma_exponent)
            squarecb_pmf(p, g, epsilon)
            if learn:
                xstats[X_COUNTER] += 1.0
        if labeled and prob[e] > 0.0:
            loss = explore_loss(out_actions[lo:hi], out_probs[lo:hi], ones[:n], chosen[e],
                                F32(cost[e]), F32(prob[e]))  # fmt: skip
            if holdout[e]:
                xstats[X_HO_LOSS] += np.float64(loss)
                xstats[X_HO_N] += 1.0
            else:
                xstats[X_LOSS] += np.float64(loss)
                xstats[X_N] += 1.0


@jit
def draw(rng):
    """One draw of VW's global generator (uint64[1]): ``--explore_eval``'s, a step at a time."""
    return merand48(rng)
