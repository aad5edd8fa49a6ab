"""VW's ``--cbzo``: a continuous-action contextual bandit learned by zeroth-order
optimization, as VW's ``reductions/cbzo.cc`` states it (its estimate of the gradient from
one logged action and its cost is VW's own; the source is the reference, read for its
float32 order of operations).

The policy maps an example to an *action centroid* ``c``: the constant's weight
(``--policy constant``) or the dot product of the weights with the example's features,
crosses included, summed in float32 in the example's order (``--policy linear``).  The
prediction is VW's label range widened to take ``c`` (unless ``--min_prediction`` or
``--max_prediction`` fix an end), ``c`` clamped to it, and a density of two spikes at
``c - radius`` and ``c + radius`` (written by :mod:`streamlearn.run.cbzo`).

A learned example (action ``a``, cost ``y``) is first predicted, then moves each weight of
its features (the constant's alone under the constant policy) by the two-point gradient
estimate ``g = y / (a - c)`` (the unclamped ``c``; ``|a - c|`` below 1e-6 raised to 1e-6,
and no update at all when ``a == c``, as VW 9.11.9)::

    w <- w - eta * (g * x + l1 * sign(w) + l2 * w)

in VW's float32 order: ``(g·x) + (l1·sign(w) + l2·w)``, then times ``-eta``, then added to
``w`` (the constant policy: ``(g + l1·sign(w)) + l2·w``); ``sign(0)`` is +1, and
``--no_bias_regularization`` leaves the constant feature's ``l1`` and ``l2`` terms out.
Each feature is read and written in turn, so a feature met twice in one example is moved
twice, the second time from its new weight.  No learning-rate schedule: ``eta`` is ``-l``.

The table is one float32 per slot (VW's stride 1); the label range is two numbers of
``state`` (:data:`S_MIN`, :data:`S_MAX`).
"""

from __future__ import annotations

import numpy as np

from streamlearn.system.jit import jit, jit_inline

F32 = np.float32

CONSTANT_POLICY = 0
LINEAR_POLICY = 1
POLICIES = {"constant": CONSTANT_POLICY, "linear": LINEAR_POLICY}

C_POLICY, C_ETA, C_L1, C_L2, C_NO_BIAS, C_MIN_FIXED, C_MAX_FIXED, C_CONST_SLOT = range(8)
CONF_SIZE = 8
"""The kernel's options (:func:`conf`)."""

S_MIN, S_MAX = 0, 1
STATE_SIZE = 2

MIN_DENOM = F32(1e-6)
"""VW's smallest ``|a - c|`` in the gradient estimate."""
CONSTANT_HASH = 11650396


def conf(policy: str, eta: float, l1: float, l2: float, no_bias: bool, min_fixed: bool,
         max_fixed: bool, bits: int) -> np.ndarray:  # fmt: skip
    """The kernel's options: the policy, the rate and regularizers (float32 values, as VW
    holds them), which ends of the label range are fixed, the constant's slot."""
    out = np.zeros(CONF_SIZE)
    out[C_POLICY] = POLICIES[policy]
    out[C_ETA], out[C_L1], out[C_L2] = (float(F32(v)) for v in (eta, l1, l2))
    out[C_NO_BIAS], out[C_MIN_FIXED], out[C_MAX_FIXED] = no_bias, min_fixed, max_fixed
    out[C_CONST_SLOT] = CONSTANT_HASH & ((1 << bits) - 1)
    return out


@jit_inline
def _centroid(table, policy, cslot, indices, values, lo, hi):
    """The action centroid of the entries ``lo:hi`` (float32)."""
    if policy == CONSTANT_POLICY:
        return table[cslot]
    d = F32(0.0)
    for k in range(lo, hi):
        d = F32(d + F32(F32(values[k]) * table[indices[k]]))
    return d


@jit_inline
def _regularizers(fw, l1, l2, free):
    """The ``l1`` and ``l2`` terms of a weight ``fw`` (none for the constant under
    ``--no_bias_regularization``: ``free``)."""
    if free:
        return F32(0.0), F32(0.0)
    return (l1 if fw >= F32(0.0) else -l1), F32(l2 * fw)


@jit_inline
def _estimate(a, y, c):
    """VW's gradient estimate ``y / (a - c)`` (float32), and False when ``a == c`` (no
    update)."""
    denom = F32(F32(a) - c)
    if denom > F32(0.0) and denom < MIN_DENOM:
        denom = MIN_DENOM
    elif denom < F32(0.0) and denom > -MIN_DENOM:
        denom = -MIN_DENOM
    elif denom == F32(0.0):
        return F32(0.0), False
    return F32(F32(y) / denom), True


@jit
def train_examples(table, conf, state, indptr, indices, values, rows, const_at, action, cost,
                   learn, centroid):  # fmt: skip
    """Predict each of the batch's ``rows`` in turn (its clamped centroid into ``centroid``,
    the label range in ``state`` widened first) and learn it when ``learn`` says so (its
    ``action`` and ``cost``), with the weights its predecessors left.  Per batch row:
    ``const_at``, the entry of the constant feature (-1: none), for
    ``--no_bias_regularization``; ``action``, ``cost``.  Per entry of ``rows``: ``learn``,
    ``centroid``."""
    policy = int(conf[C_POLICY])
    eta = F32(conf[C_ETA])
    l1 = F32(conf[C_L1])
    l2 = F32(conf[C_L2])
    no_bias = conf[C_NO_BIAS] != 0.0
    min_fixed = conf[C_MIN_FIXED] != 0.0
    max_fixed = conf[C_MAX_FIXED] != 0.0
    cslot = int(conf[C_CONST_SLOT])
    lo_label = F32(state[S_MIN])
    hi_label = F32(state[S_MAX])
    for e in range(rows.shape[0]):
        r = rows[e]
        lo, hi = indptr[r], indptr[r + 1]
        c = _centroid(table, policy, cslot, indices, values, lo, hi)
        if not min_fixed:  # (std::min(c, lo): lo unless c is below it)
            lo_label = lo_label if lo_label < c else c
        if not max_fixed:
            hi_label = hi_label if c < hi_label else c
        shown = c
        if shown < lo_label:
            shown = lo_label
        elif hi_label < shown:
            shown = hi_label
        centroid[e] = shown
        if not learn[e]:
            continue
        g, ok = _estimate(action[r], cost[r], c)
        if not ok:
            continue
        if policy == CONSTANT_POLICY:
            fw = table[cslot]
            r1, r2 = _regularizers(fw, l1, l2, no_bias)
            table[cslot] = F32(fw + F32(-eta * F32(F32(g + r1) + r2)))
            continue
        mult = -eta
        for k in range(lo, hi):
            slot = indices[k]
            fw = table[slot]
            r1, r2 = _regularizers(fw, l1, l2, no_bias and k - lo == const_at[r])
            step = F32(F32(g * F32(values[k])) + F32(r1 + r2))
            table[slot] = F32(fw + F32(mult * step))
    state[S_MIN] = lo_label
    state[S_MAX] = hi_label


def density(centroid: np.ndarray, radius: float) -> tuple[np.ndarray, ...]:
    """VW's two spikes at ``c - radius`` and ``c + radius`` (float32): for each, the float
    below and above it (±1e-5 around 0) and the density ``0.5 / (right - left)`` (a
    double, rounded to float32): (left1, right1, pdf1, left2, right2, pdf2)."""
    c = centroid.astype(F32)
    r = F32(radius)
    out: list[np.ndarray] = []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for x in (c - r, c + r):
            zero = x == F32(0.0)
            left = np.where(zero, F32(-1e-5), np.nextafter(x, F32(-np.inf)))
            right = np.where(zero, F32(1e-5), np.nextafter(x, F32(np.inf)))
            width = (right - left).astype(F32)
            out += [left, right, (0.5 / width.astype(np.float64)).astype(F32)]
    return tuple(out)
