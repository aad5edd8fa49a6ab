"""Mini-batch steps and the stochastic subgradient ℓ1 step, lazily, in O(nnz).

Dhingra, Shen & Kleene (Algorithms 3 and 4 in their mini-batch forms).  The
learned examples are taken B at a time (``--minibatch B``); every example of
a mini-batch is predicted, scored and accounted with the weights *before*
the step it contributes to, and the step t, taken when the B-th learned
example arrives (or at the end of a pass, over the examples pending then)::

    z_t = (1/b) Σ_{i in batch} a_i ∂ℓ(p_i, y_i) x_i        (b examples, importance a_i)
    η_t = learning_rate · (t0 / (t0 + T_t))^power_t       (T_t = T_0 + t: the clock counts steps)

then one of three regularisers (resolved by :func:`resolve`):

``minibatch_sgd`` (``--algo sgd``, no regulariser): ``w ← w − η_t z_t``.
``minibatch_tg`` (``--algo tg``, and ``--algo fobos``/``sgd`` with ``--l1``, which
    are truncated gradient with K = 1, θ = ∞): ``w ← w − η_t z_t``, then on every
    K-th step ``w_j ← T1(w_j, η_t K g, θ)`` for every j (FoBoS: soft-thresholding
    by η_t λ1).
``subgradient`` (``--algo subgrad``, any B including 1): the paper's stochastic
    subgradient step (eq. 14–15), no clipping, ``sgn(0) = 0``::

        w ← w − η_t (z_t + λ1 sgn(w))       (sgn of the weights before the step)

Lazily: the gradient of a pending mini-batch accumulates per slot in column
``ACC``; the slots with a pending gradient form a list threaded through column
``LINK`` (its head in ``gstate``), so the step costs O(distinct slots of the
batch).  Between touches a slot owes only its regulariser, through the
compensated global sum ``S = Σ η_τ`` (over truncation steps) and its snapshot:
truncation owes ``K g (S − S_j)``, clipped at zero.  A subgradient weight
moves toward zero by ``λ1 (S − S_j)`` as long as that does not reach zero;
once it would, the weight oscillates around zero and the exact value needs
each step's rate, so it is replayed step by step from the slot's last touch
(the rates come back from the clock: the step counter is stored per slot).
That replay is the dense algorithm's own cost for the weights it keeps
bouncing around zero -- the reason the paper finds this baseline slow and
never sparse; it is O(1) per touch on dense data, where every slot is
touched every step.

Per slot: weight, snapshot of S, step count at the last touch, pending
gradient, list link -- 40 bytes.  Nothing is pending in a saved model
(:func:`finish` runs at the end of every pass).
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.base import (
    G_N,
    G_T,
    G_USER,
    P_L1,
    P_MINIBATCH,
    P_PERIOD,
    P_QUANTILE_TAU,
    P_THETA,
    LearnerSpec,
    score,
    zero_gstate,
)
from streamlearn.learners.ledger import G_B, accumulate, reset_sums
from streamlearn.learners.losses import dloss
from streamlearn.learners.schedules import rate
from streamlearn.learners.truncated import _settle as _truncate  # T1, exact for any owed
from streamlearn.system.jit import jit, jit_inline

# table columns
W = 0
SNAP = 1  # S when the slot was last brought current
STEP = 2  # G_STEPS when the slot was last brought current (subgradient replay)
ACC = 3  # Σ a_i ∂ℓ_i x_ij over the pending mini-batch
LINK = 4  # 0: no pending gradient; else the next pending slot + 2 (END: last one)
NCOLS = 5
END = 1.0

# gstate
G_S = G_B  # Σ η over truncation steps, compensated (ledger.accumulate)
G_STEPS = G_USER + 5  # steps taken (mini-batches)
G_HEAD = G_USER + 6  # first pending slot + 2 (0: none)
G_COUNT = G_USER + 7  # learned examples in the pending mini-batch

REG_NONE = 0
REG_TRUNCATE = 1
REG_SUBGRADIENT = 2

@jit_inline
def _sign(w):
    if w > 0.0:
        return 1.0
    if w < 0.0:
        return -1.0
    return 0.0


@jit_inline
def _current(reg, gstate, params, w, snap, step):
    """A weight last brought current at (``snap``, ``step``), brought current now."""
    if w == 0.0:
        return 0.0
    s = gstate[G_S]
    if snap == s:
        return w
    l1 = params[P_L1]
    if reg == REG_TRUNCATE:
        return _truncate(w, params[P_PERIOD] * l1 * (s - snap), params[P_THETA])
    if reg == REG_SUBGRADIENT:
        owed = l1 * (s - snap)
        if abs(w) > owed:
            return w - _sign(w) * owed
        # the weight reaches zero: replay the steps since its last touch
        steps = gstate[G_STEPS]
        base = gstate[G_T] - steps  # the clock's value before step 1
        k = step + 1.0
        while k <= steps:
            w -= l1 * rate(params, base + k) * _sign(w)
            k += 1.0
        return w
    return w


@jit_inline
def _step(reg, table, gstate, params):
    """Take the pending mini-batch's step (there is at least one example pending)."""
    b = gstate[G_COUNT]
    steps = gstate[G_STEPS] + 1.0
    gstate[G_STEPS] = steps
    T = gstate[G_T] + 1.0
    gstate[G_T] = T
    eta = rate(params, T)
    l1 = params[P_L1]
    scale = eta / b
    truncating = False
    owed = 0.0
    if reg == REG_TRUNCATE:
        truncating = l1 != 0.0 and steps % params[P_PERIOD] == 0.0
        if truncating:
            owed = params[P_PERIOD] * l1 * eta
    s = gstate[G_S]
    if reg == REG_SUBGRADIENT or truncating:
        s = accumulate(gstate, eta)
    theta = params[P_THETA]
    node = gstate[G_HEAD]
    while node >= 2.0:
        j = np.int64(node) - 2
        w = table[j, W]  # current: brought current when the batch touched it, S unchanged since
        if reg == REG_SUBGRADIENT:
            w = w - scale * table[j, ACC] - eta * l1 * _sign(w)
        else:
            w = w - scale * table[j, ACC]
            if truncating:
                w = _truncate(w, owed, theta)
        table[j, W] = w
        table[j, SNAP] = s
        table[j, STEP] = steps
        table[j, ACC] = 0.0
        node = table[j, LINK]
        table[j, LINK] = 0.0
    gstate[G_HEAD] = 0.0
    gstate[G_COUNT] = 0.0


@jit_inline
def _train(
    reg, table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    size = params[P_MINIBATCH]
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo = indptr[i]
        hi = indptr[i + 1]
        y = labels[i]
        a = weights[i]
        s = gstate[G_S]
        steps = gstate[G_STEPS]
        p = bases[i]
        for k in range(lo, hi):
            j = indices[k]
            w = table[j, W]
            if w != 0.0 and table[j, SNAP] != s:
                w = _current(reg, gstate, params, w, table[j, SNAP], table[j, STEP])
                table[j, W] = w
            table[j, SNAP] = s
            table[j, STEP] = steps
            p += w * values[k]
        p, learn = score(stats, rows, gstate, params, loss_id, p, y, a, hi - lo)
        preds[i] = p
        if not learn:
            continue
        gstate[G_N] += 1.0
        g = a * dloss(loss_id, p, y, params[P_QUANTILE_TAU])
        if g != 0.0:
            for k in range(lo, hi):
                j = indices[k]
                table[j, ACC] += g * values[k]
                if table[j, LINK] == 0.0:
                    head = gstate[G_HEAD]
                    table[j, LINK] = head if head != 0.0 else END
                    gstate[G_HEAD] = j + 2.0
        gstate[G_COUNT] += 1.0
        if gstate[G_COUNT] >= size:
            _step(reg, table, gstate, params)


@jit_inline
def _weights(reg, table, gstate, params, slots, out):
    for k in range(slots.shape[0]):
        j = slots[k]
        out[k] = _current(reg, gstate, params, table[j, W], table[j, SNAP], table[j, STEP])


@jit_inline
def _rebase(reg, table, gstate, params):
    steps = gstate[G_STEPS]
    for j in range(table.shape[0]):
        w = table[j, W]
        if w != 0.0:  # a zero weight's snapshots are never read: leave its page alone
            table[j, W] = _current(reg, gstate, params, w, table[j, SNAP], table[j, STEP])
            table[j, SNAP] = 0.0
            table[j, STEP] = steps
    reset_sums(gstate)  # S (G_B) and its compensation; G_P, unused here, to 1


@jit_inline
def _finish(reg, table, gstate, params):
    if gstate[G_COUNT] > 0.0:
        _step(reg, table, gstate, params)


# ---- the three variants: the same kernels with the regulariser fixed ------------------


@jit
def train_sgd(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    _train(
        REG_NONE, table, gstate, params, loss_id, indptr, indices, values, labels, weights,
        bases, status, stats, rows, preds,
    )


@jit
def weights_sgd(table, gstate, params, slots, out):
    _weights(REG_NONE, table, gstate, params, slots, out)


@jit
def rebase_sgd(table, gstate, params):
    _rebase(REG_NONE, table, gstate, params)


@jit
def finish_sgd(table, gstate, params):
    _finish(REG_NONE, table, gstate, params)


@jit
def train_tg(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    _train(
        REG_TRUNCATE, table, gstate, params, loss_id, indptr, indices, values, labels, weights,
        bases, status, stats, rows, preds,
    )


@jit
def weights_tg(table, gstate, params, slots, out):
    _weights(REG_TRUNCATE, table, gstate, params, slots, out)


@jit
def rebase_tg(table, gstate, params):
    _rebase(REG_TRUNCATE, table, gstate, params)


@jit
def finish_tg(table, gstate, params):
    _finish(REG_TRUNCATE, table, gstate, params)


@jit
def train_subgradient(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    _train(
        REG_SUBGRADIENT, table, gstate, params, loss_id, indptr, indices, values, labels,
        weights, bases, status, stats, rows, preds,
    )


@jit
def weights_subgradient(table, gstate, params, slots, out):
    _weights(REG_SUBGRADIENT, table, gstate, params, slots, out)


@jit
def rebase_subgradient(table, gstate, params):
    _rebase(REG_SUBGRADIENT, table, gstate, params)


@jit
def finish_subgradient(table, gstate, params):
    _finish(REG_SUBGRADIENT, table, gstate, params)


def _spec(name: str, train, weights, rebase, finish) -> LearnerSpec:
    return LearnerSpec(
        name=name,
        ncols=NCOLS,
        fresh=(0.0,) * NCOLS,
        train_batch=train,
        current_weights=weights,
        rebase=rebase,
        init_gstate=zero_gstate,
        finish=finish,
    )


SGD = _spec("minibatch_sgd", train_sgd, weights_sgd, rebase_sgd, finish_sgd)
TG = _spec("minibatch_tg", train_tg, weights_tg, rebase_tg, finish_tg)
SUBGRADIENT = _spec(
    "subgradient", train_subgradient, weights_subgradient, rebase_subgradient,
    finish_subgradient,
)  # fmt: skip
SPECS = (SGD, TG, SUBGRADIENT)


def resolve(algo: str, l1: float, l2: float) -> LearnerSpec:
    """The mini-batch variant of ``algo`` (``sgd``, ``tg``, ``fobos`` or ``subgrad``)."""
    if algo == "subgrad":
        return SUBGRADIENT
    if l2 != 0.0:
        raise ValueError("--minibatch does not take --l2 (its steps are sgd, ℓ1 and subgrad)")
    if algo == "tg" or l1 != 0.0:
        return TG
    return SGD
