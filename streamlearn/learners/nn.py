"""A one-hidden-layer network over gd (VW's ``--nn k``, ``--inpass``, ``--dropout``).

As VW's ``reductions/nn.cc`` over its ``gd``: k hidden units, each a gd model over the
example's features (unit ``i``'s weight for feature slot ``h`` at row ``h·s + i``, ``s`` =
k + 1 rounded up to a power of 2, VW's feature width), and an output layer, gd's model ``k``,
over the units' activations ``σ(h_i)`` (VW's ``fasttanh``) and a constant.  Per example, as
VW calls its gd (each call clipping its prediction to the range VW sets for it):

1. each unit's bias (a lone constant feature at VW's index ``CONSTANT``, not a feature
   slot: row ``CONSTANT/S + i``, ``S`` VW's floats per weight) is predicted in [-3, 3]; a
   bias of exactly 0 learns once toward a draw of VW's generator minus ½ (squared loss);
2. each unit predicts ``h_i`` in [-3, 3] (the example's initial value included);
3. each output weight (row ``NN_CONSTANT + k + i``: VW's output features are not feature
   slots either) is read in [-1, 1]; a weight of exactly 0 takes one squared-loss step
   toward (draw − ½)/√k;
4. the output layer predicts from ``σ(h_i)`` and the constant 1 (row ``NN_CONSTANT + 2k``)
   in the label range, and learns the label with the run's loss; that prediction is the
   example's;
5. learning, each unit whose target moved takes one squared-loss step toward
   ``h_i − ½ w_i ℓ'(p) (1 − σ²)`` (clipped to [-3, 3]), ``w_i`` its output weight read
   again in [-3, 3].

``--dropout``: while learning, each unit is dropped by a draw of its own generator (VW's
``xsubi``) and the others count twice; the example is then learned again with the other
half (VW's "converse"), and the first half's prediction is the example's.  ``--inpass``:
the output layer is the example's own features at model k, plus the activations (no
constant).  The steps happen whether or not the example is learned (VW initialises in its
predict too).  ``gstate`` keeps, after gd's, the normalizer sums of models 1..k (model 0's
are gd's own, which VW's model files keep), then VW's generator and the dropout
generator (two 32-bit halves each); ``conf`` int64[4]: k, s, log2 S, flags (1: dropout,
2: inpass).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    GSTATE_SIZE,
    P_BINARY,
    P_LEARN,
    P_LOGISTIC_MAX,
    P_LOGISTIC_MIN,
    P_PROGRESS,
    P_QUANTILE_TAU,
    P_T0,
    add_scored,
    begin_example,
    binary_loss,
    row_span,
)
from streamlearn.learners.explore import merand48
from streamlearn.learners.losses import SQUARED, dloss32, loss32
from streamlearn.learners.oaa import prediction_range, widen
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64

G_MODEL = GSTATE_SIZE
"""Model c's normalizer sums (c = 1..k): Σ a Σ (x/m)² at ``G_MODEL + 2c``, Σ a at
``G_MODEL + 2c + 1``; VW's generator at ``G_MODEL + 2(k + 1)`` and the dropout generator
two slots after it (each as two 32-bit halves)."""

NN_CONSTANT = 533357803
"""VW's index of the output layer's first feature (times its floats per weight)."""
CONSTANT = 11650396
"""VW's constant feature's index, which the hidden biases use as it is."""
HIDDEN = F32(3.0)
DROPOUT = 1
INPASS = 2
NO_CONSTANT = 4
"""``--noconstant``: the hidden biases have no feature (VW's ``hiddenbias`` example is empty:
it predicts 0, so each unit draws and learns nothing, every example)."""


def gstate_size(k: int) -> int:
    return G_MODEL + 2 * (k + 1) + 4


def init_gstate(k: int, params: np.ndarray, seed: int = 0) -> np.ndarray:
    """gd's global state, the other models' sums, VW's generator and the dropout one both
    seeded with ``--random_seed`` (VW's ``xsubi`` is its generator's state at set-up)."""
    gstate = np.zeros(gstate_size(k))
    gstate[gd.G_CONTRACTION] = 1.0
    t0 = F64(np.float32(params[P_T0]))
    if t0 > 0.0:
        gstate[gd.G_NORM] = t0
        gstate[gd.G_TOTAL] = t0
    for at in (G_MODEL + 2 * (k + 1), G_MODEL + 2 * (k + 1) + 2):
        gstate[at] = F64(seed & 0xFFFFFFFF)
        gstate[at + 1] = F64((seed >> 32) & 0xFFFFFFFF)
    return gstate


@jit_inline
def fasttanh(p, bits, as_float):
    """VW's ``fasttanh``: ``-1 + 2/(1 + fastexp(-2p))``, its ``fastpow2`` bit for bit
    (``bits``/``as_float``: one uint32 and its float32 view, the type pun)."""
    q = F32(1.442695040) * (F32(-2.0) * p)
    offset = F32(1.0) if q < F32(0.0) else F32(0.0)
    clipp = F32(-126.0) if q < F32(-126.0) else q
    w = np.int32(clipp)
    z = clipp - F32(w) + offset
    v = ((clipp + F32(121.2740575)) + F32(27.7280233) / (F32(4.84252568) - z)) - F32(1.49012907) * z
    bits[0] = np.uint32(F32(8388608.0) * v)
    return F32(-1.0) + F32(2.0) / (F32(1.0) + as_float[0])


@jit_inline
def _finalize(p, lo, hi):
    """VW's ``finalize_prediction``: NaN is 0, else clipped to [lo, hi]."""
    if p != p:
        return F32(0.0)
    if p > hi:
        return F32(hi)
    if p < lo:
        return F32(lo)
    return p


@jit_inline
def _dot(table, gstate, slots, values, lo, hi, base, l1):
    """gd's raw prediction over ``slots[lo:hi]`` (times its contraction)."""
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(base)
    for t in range(lo, hi):
        w = F32(table[slots[t], 0])
        if l1:
            w = gd.trunc(w, grav)
        p += w * F32(values[t])
    return p * F32(gstate[gd.G_CONTRACTION])


@jit_inline
def _sums(c):
    """Model c's normalizer sums in gstate (model 0: gd's own)."""
    if c == 0:
        return gd.G_NORM, gd.G_TOTAL
    return G_MODEL + 2 * c, G_MODEL + 2 * c + 1


@jit_inline
def _step(table, gstate, params, c, slots, values, lo, hi, p, y, a, loss_id, rule, t_before):
    """gd's update of model c (its prediction ``p``, label ``y``, importance ``a``): VW's
    ``update`` after its zero-loss gate (the caller's), with VW's t for this call."""
    g_norm, g_total = _sums(c)
    gstate[G_T] = t_before + F64(a)
    gd.step(table, gstate, g_norm, g_total, slots, values, lo, hi, p, y, a, loss_id, rule)
    if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
        gd.rebase(table, gstate, params)


@jit_inline
def _rotate_last_first(slots, vals, n):
    """The last of ``n`` features (the output layer's constant) first."""
    ls, lv = slots[n - 1], vals[n - 1]
    for t in range(n - 1, 0, -1):
        slots[t] = slots[t - 1]
        vals[t] = vals[t - 1]
    slots[0] = ls
    vals[0] = lv


@jit_inline
def _squared_gate(p, y):
    return (p - y) * (p - y) > F32(0.0)


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, conf):  # fmt: skip
    rule = gd.rule_of(params)
    l1 = rule[9] > F32(0.0)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    k = conf[0]
    s = U64(conf[1])
    shift = conf[2]
    dropout = (conf[3] & DROPOUT) != 0
    inpass = (conf[3] & INPASS) != 0
    nb = 0 if (conf[3] & NO_CONSTANT) != 0 else 1  # the hidden biases' features
    plain = not rule[0] and not rule[1]  # (neither adaptive nor normalized: VW's Σ x²)
    mask = U64(table.shape[0] - 1)
    width = 0
    for i in range(indptr.shape[0] - 1):
        width = max(width, indptr[i + 1] - indptr[i])
    n_out = width + k + 1  # the output layer's features (inpass: the example's too)
    slots = np.empty(max(width, 1), dtype=np.uint32)
    out_slots = np.empty(n_out, dtype=np.uint32)
    out_vals = np.empty(n_out, dtype=np.float64)
    one_slot = np.empty(1, dtype=np.uint32)
    one_val = np.ones(1, dtype=np.float64)
    hidden = np.empty(k, dtype=np.float32)
    sig = np.empty(k, dtype=np.float32)  # each unit's activation in the output layer
    dropped = np.zeros(k, dtype=np.bool_)
    bits = np.empty(1, dtype=np.uint32)
    as_float = bits.view(np.float32)
    g_rng = G_MODEL + 2 * (k + 1)
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = (U64(gstate[g_rng + 1]) << U64(32)) | U64(gstate[g_rng])
    xsubi = np.empty(1, dtype=np.uint64)
    xsubi[0] = (U64(gstate[g_rng + 3]) << U64(32)) | U64(gstate[g_rng + 2])
    hb_base = (U64(CONSTANT) >> U64(shift))
    out_base = U64(NN_CONSTANT) + U64(k)
    sqrtk = F32(math.sqrt(F32(k)))
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        y32 = F32(y)
        u = F32(weights[i])
        labeled, holdout = begin_example(stats, params, y)
        extend = labeled and not holdout and params[P_LEARN] != 0.0
        learn = extend and u > F32(0.0)
        prediction_range(gstate, params, loss_id)  # (a fresh range made before it widens)
        if extend:
            widen(gstate, params, y)  # VW's scorer, above the network, widens first
        t_before = gstate[G_T]
        do_drop = dropout and learn
        scale = F32(2.0) if do_drop else F32(1.0)
        # 1. the hidden biases (VW: multipredict of a lone constant, then a saddle's escape)
        for c in range(k):
            one_slot[0] = (hb_base + U64(c)) & mask
            hb = _finalize(_dot(table, gstate, one_slot, one_val, 0, nb, 0.0, l1), -HIDDEN, HIDDEN)
            if hb == F32(0.0):
                target = F32(F64(merand48(rng)) - 0.5)
                p = _finalize(_dot(table, gstate, one_slot, one_val, 0, nb, 0.0, l1), -HIDDEN,
                              HIDDEN)  # fmt: skip
                if _squared_gate(p, target):
                    _step(table, gstate, params, c, one_slot, one_val, 0, nb, p, target,
                          F32(1.0), SQUARED, rule, t_before)  # fmt: skip
        # 2. the hidden units
        for c in range(k):
            for t in range(lo, hi):
                slots[t - lo] = (U64(indices[t]) * s + U64(c)) & mask
            hidden[c] = _finalize(_dot(table, gstate, slots, values[lo:hi], 0, hi - lo, bases[i],
                                       l1), -HIDDEN, HIDDEN)  # fmt: skip
        for c in range(k):
            dropped[c] = do_drop and merand48(xsubi) < F32(0.5)
        final = F32(0.0)
        first = True
        while True:  # (dropout: again with the other half, VW's "converse")
            # 3. the output weights (a weight of 0 escapes the saddle)
            for c in range(k):
                sig[c] = F32(0.0) if dropped[c] else scale * fasttanh(hidden[c], bits, as_float)
                one_slot[0] = (out_base + U64(c)) & mask
                wf = _finalize(_dot(table, gstate, one_slot, one_val, 0, 1, 0.0, l1), F32(-1.0),
                               F32(1.0))  # fmt: skip
                if wf == F32(0.0):
                    target = F32(F64(merand48(rng)) - 0.5) / sqrtk
                    if _squared_gate(wf, target):
                        _step(table, gstate, params, k, one_slot, one_val, 0, 1, wf, target,
                              F32(1.0), SQUARED, rule, t_before)  # fmt: skip
            # 4. the output layer: (inpass: the example's own features at model k, then) the
            # activations, and (not inpass) the constant 1
            n = 0
            if inpass:
                for t in range(lo, hi):
                    out_slots[n] = (U64(indices[t]) * s + U64(k)) & mask
                    out_vals[n] = values[t]
                    n += 1
            for c in range(k):
                out_slots[n] = (out_base + U64(c)) & mask
                out_vals[n] = F64(sig[c])
                n += 1
            if not inpass:
                out_slots[n] = (out_base + U64(k)) & mask
                out_vals[n] = 1.0
                n += 1
            rlo, rhi = prediction_range(gstate, params, loss_id)
            raw = _dot(table, gstate, out_slots, out_vals, 0, n, bases[i], l1)
            p = _finalize(raw, F32(rlo), F32(rhi))
            if learn and loss32(loss_id, p, y32, tau, lmin, lmax) > F32(0.0):
                if plain and not inpass:  # VW's Σ x² of the layer: 1, then each σ² in turn
                    _rotate_last_first(out_slots, out_vals, n)
                _step(table, gstate, params, k, out_slots, out_vals, 0, n, p, y32, u, loss_id,
                      rule, t_before)  # fmt: skip
            pred = p
            # 5. back to the hidden units
            if learn:
                grad = dloss32(loss_id, pred, y32, tau, lmin, lmax)
                if abs(grad) > F32(0.0):
                    for c in range(k):
                        if dropped[c]:
                            continue
                        sh = sig[c] / scale
                        sprime = scale * (F32(1.0) - sh * sh)
                        one_slot[0] = (out_base + U64(c)) & mask
                        nu = _finalize(_dot(table, gstate, one_slot, one_val, 0, 1, 0.0, l1),
                                       -HIDDEN, HIDDEN)  # fmt: skip
                        gradhw = F32(0.5) * nu * grad * sprime
                        target = _finalize(hidden[c] - gradhw, -HIDDEN, HIDDEN)
                        if target != hidden[c] and _squared_gate(hidden[c], target):
                            for t in range(lo, hi):
                                slots[t - lo] = (U64(indices[t]) * s + U64(c)) & mask
                            _step(table, gstate, params, c, slots, values[lo:hi], 0, hi - lo,
                                  hidden[c], target, u, SQUARED, rule, t_before)  # fmt: skip
            if first:
                final = pred
            if not (do_drop and first):
                break
            first = False
            for c in range(k):
                dropped[c] = not dropped[c]
        gstate[G_T] = t_before
        if learn:
            gstate[G_T] = t_before + F64(u)
            gstate[G_N] += 1.0
        lv = F64(loss32(loss_id, final, y32, tau, lmin, lmax)) if labeled else 0.0
        if labeled and params[P_BINARY] != 0.0:  # (VW's --binary table: 0/1 loss)
            lv = binary_loss(F64(final) if params[P_BINARY] == 1.0 else 1.0, y, lv)
        add_scored(stats, rows, F64(final), y, weights[i], hi - lo, labeled, holdout, lv,
                   params[P_PROGRESS])  # fmt: skip
        preds[i] = F64(final)
    gstate[g_rng] = F64(rng[0] & U64(0xFFFFFFFF))
    gstate[g_rng + 1] = F64(rng[0] >> U64(32))
    gstate[g_rng + 2] = F64(xsubi[0] & U64(0xFFFFFFFF))
    gstate[g_rng + 3] = F64(xsubi[0] >> U64(32))


def parse_stack(words: tuple[str, ...]) -> tuple[int, int] | None:
    """(k, flags) that a configuration's reductions' words give ``--nn`` (their checks are
    :func:`streamlearn.reductions.nn.read`'s), or None."""
    k = None
    flags = 0
    meanfield = False
    it = iter(words)
    for w in it:
        if w == "--nn":
            k = next(it, "")
        elif w == "--dropout":
            flags |= DROPOUT
        elif w == "--inpass":
            flags |= INPASS
        elif w == "--meanfield":
            meanfield = True
    if k is None or not k.isdigit():
        return None
    if meanfield:
        flags &= ~DROPOUT
    return int(k), flags


def rng_slot(k: int) -> int:
    """Where VW's generator's 64-bit state is kept (two 32-bit halves)."""
    return G_MODEL + 2 * (k + 1)


def get_rng(gstate: np.ndarray, k: int) -> int:
    g = rng_slot(k)
    return (int(gstate[g + 1]) << 32) | int(gstate[g])
