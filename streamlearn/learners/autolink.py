"""Autolink (VW's ``--autolink d``): gd learns a polynomial link of its own prediction.

As VW's ``reductions/autolink.cc`` between its ``gd`` and the scorer:

* each example is first predicted as gd predicts it, ``p0`` (clipped to the range the
  label has widened, VW's scorer runs first); then ``d`` features are added to it, the
  powers ``p0, p0², ..., p0^d`` (float32 products), each only while it is not 0;
* gd then predicts and learns the example with those features, as any other feature
  (the adaptive and normalizer state, the zero-loss gate); the prediction written and
  scored is that second one.  The added features are not counted in ``current features``.
* **Where their weights live.** VW gives feature k the weight index ``524267083 + k``
  (``AUTOCONSTANT + (k << stride_shift)`` with the stride shift read when autolink is set
  up, before gd has set it: 0), in units of floats, where gd's slots are 4 floats
  (weight, adaptive sum, normalizer, rate): feature 0's four floats start in the last
  float of slot ``⌊i/4⌋`` and run into the next slot's first three, and feature k's
  start k floats later, overlapping feature 0's (feature 1's weight is feature 0's
  adaptive sum, and so on), masked to the table as VW's dense weights are.  The kernel
  addresses the table through an overlapping view with one row per float (row ``r`` =
  floats ``r..r+3``), so those weights are exactly VW's and a model file reads the same
  in both programs.
* **Under -t** (no learning) VW's gd keeps one float per slot (no adaptive or normalizer
  state), so the same indices name whole slots: feature k's weight is the weight of slot
  ``(524267083 + k) mod 2^b``, usually 0, and the prediction is then gd's own.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    P_AUTOLINK,
    P_BINARY,
    P_LEARN,
    P_PROGRESS,
    P_QUANTILE_TAU,
    LearnerSpec,
    add_scored,
    begin_example,
    binary_loss,
    clip,
    row_span,
)
from streamlearn.learners.gd import FLT_MAX, G_MULT, X2_MIN, X_MIN, _normalizer, _rate
from streamlearn.learners.losses import dloss32, loss32, square_grad32, unsafe_update32, update32
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64

AUTOCONSTANT = 524267083
"""VW's weight index (in floats) of the first autolink feature (its later ones: + 1 each)."""


@jit_inline
def step(table, gstate, slots, values, m, p, y, a32, loss_id, rule):
    """:func:`streamlearn.learners.gd.step` one feature at a time, as VW's loop: each
    feature's adaptive sum, normalizer (rescaling its weight) and rate are read and
    written before the next feature's, which matters here because the autolink features'
    floats overlap (gd's kernel computes the rates of a chunk of features together)."""
    (adaptive, normalized, invariant, sqrt_rate, neg_q, neg_norm_power, t0, g0, eta, l1, l2,
     reg, tau, _lmin, _lmax) = rule  # fmt: skip
    gamma = a32 * square_grad32(loss_id, p, y, tau)
    if not adaptive and not normalized:
        ppu = F32(0.0)
        for k in range(m):
            x = F32(values[k])
            ppu += x * x
    elif gamma == F32(0.0):
        ppu = F32(1.0)
    else:
        ppu = F32(0.0)
        nx = F32(0.0)
        for k in range(m):
            j = slots[k]
            x = F32(values[k])
            x2 = x * x
            if x2 < X2_MIN:
                x = X_MIN if x > F32(0.0) else -X_MIN
                x2 = X2_MIN
            G = F32(table[j, 1])
            if adaptive:
                if G == F32(0.0):
                    G = g0
                G = G + gamma * x2
                table[j, 1] = G
            mx = F32(table[j, 2])
            if normalized:
                ax = abs(x)
                if ax > mx:
                    if mx > F32(0.0):
                        w = F32(table[j, 0])
                        if sqrt_rate:
                            sc = mx / ax
                            w = w * sc if adaptive else w * (sc * sc)
                        else:
                            sc = ax / mx
                            w = w * F32((sc * sc) ** neg_norm_power)
                        table[j, 0] = w
                    mx = ax
                    table[j, 2] = mx
            r = _rate(G, mx, adaptive, normalized, sqrt_rate, neg_q, neg_norm_power)
            table[j, 3] = r
            ppu += x2 * r
            if normalized:
                nx += F32(1.0) if x2 > FLT_MAX else x2 / (mx * mx)
        if normalized:
            gstate[gd.G_NORM] += F64(a32) * F64(nx)
            gstate[gd.G_TOTAL] += F64(a32)
            gstate[G_MULT] = _normalizer(F32(gstate[gd.G_TOTAL]), F32(gstate[gd.G_NORM]),
                                         sqrt_rate, adaptive, neg_norm_power)  # fmt: skip
            ppu = ppu * F32(gstate[G_MULT])
    scale = eta * a32
    if not adaptive:
        scale = scale * F32(F32(F64(t0) + gstate[G_T]) ** neg_q)
    if invariant:
        u = update32(loss_id, p, y, scale, ppu, tau)
    else:
        u = unsafe_update32(loss_id, p, y, scale, tau)
    if reg and abs(F64(u)) > 1e-8:
        dev1 = F64(dloss32(loss_id, p, y, tau))
        if abs(dev1) > 1e-8:
            eta_bar = -F64(u) / dev1
            gstate[gd.G_CONTRACTION] *= 1.0 - F64(l2) * eta_bar
        else:
            eta_bar = 0.0
        u = u / F32(gstate[gd.G_CONTRACTION])
        gstate[gd.G_GRAVITY] += eta_bar * F64(l1)
    if u != u:
        u = F32(0.0)
    if u != F32(0.0):
        if normalized:
            u = u * F32(gstate[G_MULT])
        for k in range(m):
            j = slots[k]
            x = F32(values[k])
            if x < FLT_MAX and x > -FLT_MAX:
                if adaptive or normalized:
                    x = x * table[j, 3]
                table[j, 0] = table[j, 0] + u * x


@jit
def train_gd(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    d = int(params[P_AUTOLINK])
    binary = params[P_BINARY]
    tau = F32(params[P_QUANTILE_TAU])
    flat = table.reshape(-1)
    nflat = flat.shape[0]
    fmask = nflat - 1
    smask = table.shape[0] - 1
    testing = params[P_LEARN] == 0.0
    size = flat.itemsize
    view = np.lib.stride_tricks.as_strided(flat, shape=(nflat - 3, 4), strides=(size, size))
    n = indptr.shape[0] - 1
    width = 0
    for i in range(n):
        width = max(width, indptr[i + 1] - indptr[i])
    slots = np.empty(width + d, dtype=np.uint32)
    vals = np.empty(width + d, dtype=np.float64)
    for i in range(n):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        learn = labeled and not holdout and params[P_LEARN] != 0.0
        grav = F32(gstate[gd.G_GRAVITY])
        scale = F32(gstate[gd.G_CONTRACTION])
        # gd's own prediction, then the powers of it as features after the example's own
        p = F32(bases[i])
        m = 0
        for t in range(lo, hi):
            w = F32(table[indices[t], 0])
            if truncate:
                w = gd.trunc(w, grav)
            p += w * F32(values[t])
            slots[m] = np.uint32(4 * np.int64(indices[t]))
            vals[m] = values[t]
            m += 1
        p0 = F32(clip(gstate, params, loss_id, F64(p * scale), y, learn))
        power = p0
        for k in range(d):
            if power != F32(0.0):
                if testing:  # VW's -t: one float per slot, feature k in slot AUTOCONSTANT + k
                    r = 4 * ((AUTOCONSTANT + k) & smask)
                else:
                    r = (AUTOCONSTANT + k) & fmask
                if r < nflat - 3:  # (VW would read past the end of its weights)
                    slots[m] = np.uint32(r)
                    vals[m] = F64(power)
                    m += 1
                power = power * p0
        p = F32(bases[i])
        for t in range(m):
            w = F32(view[slots[t], 0])
            if truncate:
                w = gd.trunc(w, grav)
            p += w * F32(vals[t])
        p = F32(clip(gstate, params, loss_id, F64(p * scale), y, False))
        lv = loss32(loss_id, p, F32(y), tau) if labeled else F32(0.0)
        shown = F64(lv)
        if labeled and binary != 0.0:
            shown = binary_loss(F64(p) if binary == 1.0 else 1.0, y, shown)
        add_scored(stats, rows, F64(p), y, a, hi - lo, labeled, holdout, shown, params[P_PROGRESS])
        preds[i] = F64(p)
        if not (learn and a != 0.0):
            continue
        gstate[G_T] += a
        gstate[G_N] += 1.0
        if not lv > F32(0.0):
            continue  # gd's zero-loss gate
        step(view, gstate, slots, vals, m, p, F32(y), F32(a), loss_id, rule)
        if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
            gd.rebase(table, gstate, params)


SPEC = LearnerSpec(
    name="autolink_gd",
    ncols=4,
    fresh=(0.0, 0.0, 0.0, 0.0),
    train_batch=train_gd,
    current_weights=gd.current_weights,
    rebase=gd.rebase,
    init_gstate=gd.init_gstate,
    dtype=np.float32,
    stored_cols=3,
)
SPECS = (SPEC,)


def resolve(algo: str) -> LearnerSpec:
    """Autolink over ``algo`` (gd only)."""
    if algo == "gd":
        return SPEC
    raise ValueError(f"--autolink runs with --algo gd, not {algo}")
