"""Online Newton step with Oja's sketch (VW's ``--OjaNewton``, ``reductions/oja_newton.cc``).

Luo, Agarwal, Cesa-Bianchi & Langford, *Efficient Second Order Online Learning by
Sketching* (NIPS 2016), Algorithm 1 (Sketched Online Newton) with Oja's sketch
(Algorithm 2) in the sparse form of Section 4 (Algorithms 4 and 5: the sketch kept as
``Z = A·D·Z̃``, the weights as ``w = w̄ + Z̃ᵀD·b``), as VW runs it.  ``m`` is the sketch
size (``--sketch_size``), ``α`` the identity's constant (``--alpha``, or 1/``--alpha_inverse``).

* **Slots.** Feature ``h`` owns row ``h mod 2^b`` (float32): ``w̄`` (column 0: what the
  model files keep), the sketch's row ``Z̃[1..m]`` (columns 1..m) and, under
  ``--normalize true`` (VW's default), the feature's scale ``n = 0.1 + Σ (g·x)²``
  (column m + 1); a feature's value is read as ``x/√n`` throughout.  The table is dense:
  :func:`initialize` fills every row's sketch (VW's ``initialize_Z``: Gaussian draws of
  VW's generator, ``--random_init true``, or the first m unit vectors, then Gram-Schmidt
  over the whole table, O(2^b·m²) once a run).
* **Global state** (float32, VW's): the m×m lower-triangular ``A`` and the Gram matrix
  ``K`` (``mats``), and per direction the eigenvalue estimates ``ev``, ``b``, ``D``
  (``vecs`` rows :data:`V_EV`, :data:`V_B`, :data:`V_D`); the step ``t`` and the
  examples waiting for the sketch (``conf``, ``buf_*``).  VW keeps none of it in a model:
  every run starts afresh.
* **Prediction** (float32, VW's order): ``Σ x·w̄ + Σ_i x·Z̃_i·D_i·b_i`` over the
  features, clipped to the labels' range; the example's initial value is not added.
  What VW shows (``-p``, the table) is clipped to the range before the example's label;
  what it learns from and scores the loss of, to the range widened by it.
* **Learning** a labeled example: ``g = ℓ'(p)·weight/2``; ``n += (x·g)²``; the example
  (and ``g/2``) joins the epoch's buffer; when ``--epoch_size`` examples wait, each in
  turn updates the sketch (eigenvalues with rate ``γ = min(1, c/t)``, ``c`` =
  ``--learning_rate_cnt``; ``K``; ``Z̃``; ``w̄``) and then ``A`` is re-orthonormalised
  once; last ``w̄ -= g·x/α`` and ``b`` steps along the sketch.  When ``K`` grows past
  1e7 the implicit form is made explicit (O(2^b·m²)).

The paper's notation and VW's differ: VW's ``sketch_cnt`` is the paper's ``√(η_t)·g``
factor of the sketched vector, here ``g/2`` (the half squared loss's gradient, halved).
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.base import (
    G_T,
    GSTATE_SIZE,
    P_BINARY,
    P_LEARN,
    P_LOGISTIC_MAX,
    P_LOGISTIC_MIN,
    P_PROGRESS,
    P_QUANTILE_TAU,
    LearnerSpec,
    add_scored,
    begin_example,
    binary_loss,
    clip,
    row_span,
    write_raw,
)
from streamlearn.learners.explore import lcg_step, state_float
from streamlearn.learners.initial import logf
from streamlearn.learners.losses import dloss32, loss32
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64
I64 = np.int64

C_M = 0  # the sketch size m
C_EPOCH = 1  # --epoch_size
C_ALPHA = 2  # α (float32)
C_RATE = 3  # --learning_rate_cnt (float32)
C_NORMALIZE = 4  # 1: --normalize true
C_T = 5  # VW's t: 1 + the examples the sketch has taken
C_CNT = 6  # examples waiting in the epoch's buffer
CONF_SIZE = 7

V_EV, V_B, V_D, V_ZX, V_AZX, V_DELTA, V_ZV, V_VV, V_TMP = range(9)
VECS = 9
"""Rows of ``vecs`` (float32, m + 1 columns, index 0 unused as in VW)."""

G_RNG = GSTATE_SIZE
"""VW's generator's 64-bit state in the global state (two 32-bit halves)."""
STATE_SIZE = GSTATE_SIZE + 2

PI2 = float(F32(F32(2.0) * F32(3.1415927)))
"""VW's 2π (a float32 product, used in double)."""
EXPLICIT_AT = 1e7
"""``K``'s largest entry at which the implicit sketch is made explicit."""


def get_rng(gstate: np.ndarray) -> int:
    return (int(gstate[G_RNG + 1]) << 32) | int(gstate[G_RNG])


def set_rng(gstate: np.ndarray, state: int) -> None:
    state %= 1 << 64
    gstate[G_RNG] = float(state & 0xFFFFFFFF)
    gstate[G_RNG + 1] = float(state >> 32)


def init_gstate(params: np.ndarray, seed: int = 0) -> np.ndarray:  # noqa: ARG001
    """A fresh global state with VW's generator at ``seed`` (``--random_seed``), and gd's
    l2 contraction 1 (the model files read w̄ as gd's weights)."""
    from streamlearn.learners.gd import G_CONTRACTION

    gstate = np.zeros(STATE_SIZE)
    gstate[G_CONTRACTION] = 1.0
    set_rng(gstate, seed)
    return gstate


def fresh_state(m: int) -> tuple[np.ndarray, np.ndarray]:
    """``mats`` (A and K: identities) and ``vecs`` (D: ones; the rest zeros) of a new run."""
    mats = np.zeros((2, m + 1, m + 1), dtype=F32)
    vecs = np.zeros((VECS, m + 1), dtype=F32)
    for i in range(1, m + 1):
        mats[0, i, i] = F32(1.0)
        mats[1, i, i] = F32(1.0)
    vecs[V_D, :] = F32(1.0)
    return mats, vecs


@jit
def initialize(table, m, normalize, random_init, rng):
    """VW's ``initialize_Z`` over the whole table: the scales 0.1, the sketch's rows drawn
    (``rng``: uint64[1], VW's generator, advanced) or unit, then Gram-Schmidt in double."""
    n = table.shape[0]
    if normalize:
        for r in range(n):
            table[r, m + 1] = F32(0.1)
    if not random_init:
        for i in range(1, m + 1):
            if i < n:
                table[i, i] = F32(1.0)
    else:
        s = rng[0]
        for r in range(n):
            for j in range(1, m + 1):
                while True:
                    s = lcg_step(s)
                    r1 = state_float(s)
                    s = lcg_step(s)
                    r2 = state_float(s)
                    if r1 != F32(0.0):
                        break
                mag = np.sqrt(F32(F32(-2.0) * logf(r1)))
                table[r, j] = F32(mag * F32(math.cos(PI2 * F64(r2))))
        rng[0] = s
    for j in range(1, m + 1):
        for k in range(1, j):
            acc = 0.0
            for r in range(n):
                acc += F64(table[r, j]) * F64(table[r, k])
            f = F32(acc)
            for r in range(n):
                table[r, j] -= f * table[r, k]
        acc = 0.0
        for r in range(n):
            acc += F64(table[r, j]) * F64(table[r, j])
        f = F32(math.sqrt(acc))
        for r in range(n):
            table[r, j] = fdiv(table[r, j], f)


@jit_inline
def _scaled(table, r, x, m, normalize):
    """A feature's value as the sketch reads it: ``x/√n`` under ``--normalize``."""
    if normalize:
        return fdiv(x, np.sqrt(table[r, m + 1]))
    return x


@jit_inline
def _azx(mats, vecs, m):
    """``AZx = A·Zx`` (A lower-triangular)."""
    for i in range(1, m + 1):
        vecs[V_AZX, i] = F32(0.0)
        for j in range(1, i + 1):
            vecs[V_AZX, i] += mats[0, i, j] * vecs[V_ZX, j]


@jit_inline
def _sketch_one(table, mats, vecs, m, normalize, rate, t, rows, vals, lo, hi, sc):
    """One buffered example (features ``rows/vals[lo:hi]``, factor ``sc``) into the
    sketch: VW's ``compute_Zx_and_norm``, eigenvalues, ``delta``, ``K``, ``Z̃`` and ``w̄``."""
    K = mats[1]
    norm2 = F32(0.0)
    for i in range(m + 1):
        vecs[V_ZX, i] = F32(0.0)
    for u in range(lo, hi):
        r = rows[u]
        x = _scaled(table, r, vals[u], m, normalize)
        for i in range(1, m + 1):
            vecs[V_ZX, i] += table[r, i] * x * vecs[V_D, i]
        norm2 += x * x
    _azx(mats, vecs, m)
    tf = F32(t)
    q = fdiv(rate, tf)
    gamma = q if q < F32(1.0) else F32(1.0)
    for i in range(1, m + 1):
        temp = vecs[V_AZX, i] * sc
        if t == 1:
            vecs[V_EV, i] = gamma * temp * temp
        else:
            vecs[V_EV, i] = (fdiv((F32(1.0) - gamma) * tf * vecs[V_EV, i], F32(t - 1))
                             + gamma * tf * temp * temp)  # fmt: skip
    bdelta = F32(0.0)
    for i in range(1, m + 1):
        vecs[V_DELTA, i] = gamma * vecs[V_ZX, i] * sc
        bdelta += vecs[V_DELTA, i] * vecs[V_B, i]
    temp = norm2 * sc * sc
    for i in range(1, m + 1):
        for j in range(1, m + 1):
            K[i, j] += vecs[V_DELTA, i] * vecs[V_ZX, j] * sc
            K[i, j] += vecs[V_DELTA, j] * vecs[V_ZX, i] * sc
            K[i, j] += vecs[V_DELTA, i] * vecs[V_DELTA, j] * temp
    for u in range(lo, hi):
        r = rows[u]
        x = _scaled(table, r, vals[u], m, normalize)
        s = sc * x
        for i in range(1, m + 1):
            table[r, i] += fdiv(vecs[V_DELTA, i] * s, vecs[V_D, i])
        table[r, 0] -= s * bdelta


@jit_inline
def _update_a(mats, vecs, m):
    """VW's ``update_A``: A's rows made K-orthonormal again, one after the other."""
    A = mats[0]
    K = mats[1]
    for i in range(1, m + 1):
        for j in range(1, i):
            vecs[V_ZV, j] = F32(0.0)
            for k in range(1, i + 1):
                vecs[V_ZV, j] += A[i, k] * K[k, j]
        for j in range(1, i):
            vecs[V_VV, j] = F32(0.0)
            for k in range(1, j + 1):
                vecs[V_VV, j] += A[j, k] * vecs[V_ZV, k]
        for j in range(1, i):
            for k in range(j, i):
                A[i, j] -= vecs[V_VV, k] * A[k, j]
        norm = F32(0.0)
        for j in range(1, i + 1):
            temp = F32(0.0)
            for k in range(1, i + 1):
                temp += K[j, k] * A[i, k]
            norm += A[i, j] * temp
        norm = np.sqrt(norm)
        for j in range(1, i + 1):
            A[i, j] = fdiv(A[i, j], norm)


@jit_inline
def _update_b(mats, vecs, m, alpha, g):
    A = mats[0]
    for j in range(1, m + 1):
        temp = F32(0.0)
        for i in range(j, m + 1):
            ev = vecs[V_EV, i]
            temp += fdiv(ev * vecs[V_AZX, i] * A[i, j], alpha * (alpha + ev))
        vecs[V_B, j] += temp * g


@jit
def make_explicit(table, mats, vecs, m):
    """VW's ``check``: when ``K``'s largest entry (upper triangle) reaches 1e7, ``K ← AKAᵀ``,
    ``w̄ += Z̃ᵀD·b``, ``b ← 0``, ``Z̃ ← A·D·Z̃``, ``A, D ← I`` (O(2^b·m²))."""
    A = mats[0]
    K = mats[1]
    most = 0.0
    for i in range(1, m + 1):
        for j in range(i, m + 1):
            most = max(most, F64(abs(K[i, j])))
    if most < EXPLICIT_AT:
        return
    tmp = vecs[V_TMP]
    for j in range(1, m + 1):
        tmp[:] = F32(0.0)
        for i in range(1, m + 1):
            for h in range(1, m + 1):
                tmp[i] += A[i, h] * K[h, j]
        for i in range(1, m + 1):
            K[i, j] = tmp[i]
    for i in range(1, m + 1):
        tmp[:] = F32(0.0)
        for j in range(1, m + 1):
            for h in range(1, m + 1):
                tmp[j] += K[i, h] * A[j, h]
        for j in range(1, m + 1):
            K[i, j] = tmp[j]
    for r in range(table.shape[0]):
        for j in range(1, m + 1):
            table[r, 0] += table[r, j] * vecs[V_B, j] * vecs[V_D, j]
    vecs[V_B, :] = F32(0.0)
    for r in range(table.shape[0]):
        tmp[:] = F32(0.0)
        for j in range(1, m + 1):
            for h in range(1, m + 1):
                tmp[j] += A[j, h] * vecs[V_D, h] * table[r, h]
        for j in range(1, m + 1):
            table[r, j] = tmp[j]
    for i in range(1, m + 1):
        A[i, :] = F32(0.0)
        vecs[V_D, i] = F32(1.0)
        A[i, i] = F32(1.0)


@jit_inline
def _predict(table, lo, hi, indices, values, mask, m, normalize, vecs):
    """``Σ x·w̄ + Σ_i x·Z̃_i·D_i·b_i`` in float32, in the features' order (VW's ``make_pred``)."""
    p = F32(0.0)
    for t in range(lo, hi):
        r = np.int64(U64(indices[t]) & mask)
        x = _scaled(table, r, F32(values[t]), m, normalize)
        p += table[r, 0] * x
        for i in range(1, m + 1):
            p += table[r, i] * x * vecs[V_D, i] * vecs[V_B, i]
    return p


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, ns, conf, mats, vecs, buf_rows, buf_vals, buf_at,
                buf_g):  # fmt: skip
    """Predict, account and learn each example of the batch (see the module).  The epoch's
    buffer (``buf_at[c]:buf_at[c + 1]`` of ``buf_rows``/``buf_vals`` for waiting example
    ``c``, its factor ``buf_g[c]``) has room for the batch's features (the entry sees to it)."""
    mask = U64(table.shape[0] - 1)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    binary = params[P_BINARY]
    m = np.int64(conf[C_M])
    epoch = np.int64(conf[C_EPOCH])
    alpha = F32(conf[C_ALPHA])
    rate = F32(conf[C_RATE])
    normalize = conf[C_NORMALIZE] != 0.0
    n = indptr.shape[0] - 1
    for i in range(n):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        raw = _predict(table, lo, hi, indices, values, mask, m, normalize, vecs)
        write_raw(preds, indptr, i, F64(raw))
        learn = labeled and not holdout and params[P_LEARN] != 0.0
        # VW shows (-p, the table) the score clipped to the labels seen before this one,
        # and learns and scores the loss with the range this label widened
        seen = F32(clip(gstate, params, loss_id, F64(raw), y, False))
        p = F32(clip(gstate, params, loss_id, F64(raw), y, learn))
        lv = loss32(loss_id, p, F32(y), tau, lmin, lmax) if labeled else F32(0.0)
        shown = F64(lv)
        if labeled and binary != 0.0:
            shown = binary_loss(F64(p) if binary == 1.0 else 1.0, y, shown)
        nfeat = np.int64(hi - lo)
        if ns.shape[0] > 0:  # (VW's OjaNewton counts no crosses: the parser's have byte 0)
            for t in range(lo, hi):
                nfeat -= ns[t] == 0
        add_scored(stats, rows, F64(seen), y, a, nfeat, labeled, holdout, shown,
                   params[P_PROGRESS])  # fmt: skip
        preds[i] = F64(seen)
        if labeled and not holdout:  # (VW's t: the model files add the unlabeled, held out)
            gstate[G_T] += a
        if not learn:
            continue
        g = dloss32(loss_id, p, F32(y), tau, lmin, lmax) * F32(a)
        g = g / F32(2.0)
        if normalize:
            for t in range(lo, hi):
                r = np.int64(U64(indices[t]) & mask)
                x = F32(values[t])
                table[r, m + 1] += x * x * g * g
        c = np.int64(conf[C_CNT])
        at = buf_at[c]
        for t in range(lo, hi):
            buf_rows[at] = np.int64(U64(indices[t]) & mask)
            buf_vals[at] = F32(values[t])
            at += 1
        buf_at[c + 1] = at
        buf_g[c] = g / F32(2.0)
        c += 1
        if c == epoch:
            t0 = np.int64(conf[C_T])
            for k in range(epoch):
                _sketch_one(table, mats, vecs, m, normalize, rate, t0 + k, buf_rows, buf_vals,
                            buf_at[k], buf_at[k + 1], buf_g[k])  # fmt: skip
            conf[C_T] = F64(t0 + epoch)
            _update_a(mats, vecs, m)
            c = 0
        conf[C_CNT] = F64(c)
        for j in range(m + 1):
            vecs[V_ZX, j] = F32(0.0)
        for t in range(lo, hi):
            r = np.int64(U64(indices[t]) & mask)
            x = _scaled(table, r, F32(values[t]), m, normalize)
            gx = g * x
            for j in range(1, m + 1):
                vecs[V_ZX, j] += table[r, j] * x * vecs[V_D, j]
            table[r, 0] -= fdiv(gx, alpha)
        _azx(mats, vecs, m)
        _update_b(mats, vecs, m, alpha, g)
        make_explicit(table, mats, vecs, m)


@jit
def current_weights(table, gstate, params, slots, out):
    for j in range(slots.shape[0]):
        out[j] = table[slots[j], 0]


@jit
def rebase(table, gstate, params):
    return


def spec(m: int = 10) -> LearnerSpec:
    """The table of ``--OjaNewton`` with sketch size ``m``: w̄, the sketch's row, the scale."""
    return LearnerSpec(name="OjaNewton", ncols=m + 2, fresh=(0.0,) * (m + 2),
                       train_batch=train_batch, current_weights=current_weights,
                       rebase=rebase, init_gstate=init_gstate, dtype=np.float32)  # fmt: skip


def refuse_resumed(data: bytes, pos: int, gstate: np.ndarray) -> int:  # noqa: ARG001
    """VW's model file at ``pos`` (after the header), read for ``--OjaNewton``: one saved
    without ``--predict_only_model`` is refused (ValueError), since VW reads its resume
    state into a sketch its reader leaves undefined (NaN predictions); nothing to read."""
    if pos < len(data) and data[pos] == 1:
        raise ValueError("an --OjaNewton model with resume state, which sl does not read "
                         "(VW reads it into an undefined sketch): save it with "
                         "--predict_only_model")  # fmt: skip
    return pos
