"""VW's ``--stage_poly``: stagewise polynomial features, grown from the weights learned.

As VW's ``reductions/stagewise_poly.cc`` (between gd and its scorer): the features gd sees
are monomials of the line's, built per example by a depth-first walk.  A slot ``j`` of the
table keeps a *minimum depth* (127: never reached) and two bits, *parent* and *cycle*.
From the root (the constant's slot, value 1) each of the line's features ``a`` in order
makes the child ``c = a ^ (16777619·p)`` of the current monomial ``p`` (the slot alone
when either is the constant's; masked to the table), as VW's hash does.  When learning,
a child first reached at a depth below its minimum takes that depth (and loses its
parent bit: a transplant).  A child whose depth is its minimum and not yet met in this
example (its cycle bit) becomes a feature of value ``x_a·x_p``; if it is a parent the walk
descends into it and repeats the line's features one level deeper.  The cycle bits are
cleared after the walk.

Every ``--batch_sz`` examples (doubling each time unless ``--batch_sz_no_doubling``;
VW's example counter: the examples before this one and one for every pass ended) the
next learned example first picks the new parents: the ``n`` slots that are not parents
and not the constant's with the largest ``|w|·m`` above 1e-9 (``m`` the normalized
column, ``w`` itself without ``--normalized``, as VW reads ``normalized_idx`` 0), ``n``
= ``(inputs/examples)^sched_exponent`` (float32, libm's ``powf``) capped at the table,
chosen by libstdc++'s heap operations (:func:`_push`, :func:`_pop`: their ties are VW's).
With ``--batch_sz 0`` that happens after each pass but the last.

State, in ``gstate`` after gd's (:data:`SP_BASE`): the counters (:data:`SP_INPUTS` ...)
and per slot one entry, ``depth + 256·bits`` (:data:`SP_SLOTS`); VW keeps the slots' two
bytes in its model file (:func:`vw_section`) and none of the counters, which start over
in each run (:func:`restart`).
"""

from __future__ import annotations

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
    P_NORMALIZED,
    P_PROGRESS,
    P_QUANTILE_TAU,
    S_N,
    S_PASS_N,
    add_scored,
    begin_example,
    binary_loss,
    clip,
    write_raw,
)
from streamlearn.learners.gd_mf import powf32
from streamlearn.learners.losses import loss32
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64

PARENT = 1
CYCLE = 2
INDICATOR = 128
DEFAULT_DEPTH = 127
FRESH = DEFAULT_DEPTH + 256 * INDICATOR
"""A slot never reached: depth 127, VW's indicator bit set."""
TOLERANCE = F32(1e-9)
MIX = 16777619
"""VW's child hash multiplier (FNV's prime)."""
CONSTANT = 11650396

SP_BASE = GSTATE_SIZE
SP_INPUTS, SP_EXAMPLES, SP_NEXT, SP_UPDATE, SP_LAST, SP_PASSES, SP_ENDED, SP_PARENTS = (
    SP_BASE + k for k in range(8))
"""The counters: the line features and the examples learned (VW's ``sum_input_sparsity``,
``num_examples``), the next batch size, a support update pending, the last example counter
seen (-1: none), VW's pass number, the passes ended as the kernel saw them, the parents."""
SP_SLOTS = SP_BASE + 8
C_SLOTS, C_BATCH, C_DOUBLING, C_EXPONENT, C_PASSES, C_OFFSET, C_ENDED = range(7)
"""The kernel's options (``conf``): the table's slots, ``--batch_sz``, doubling, the
exponent (a float32), the run's passes, what turns the run's example count into VW's
counter, and the passes ended (the driver's calls)."""


def state_size(bits: int) -> int:
    return SP_SLOTS + (1 << bits)


def init_gstate(params: np.ndarray, bits: int) -> np.ndarray:
    gstate = np.zeros(state_size(bits))
    gstate[:GSTATE_SIZE] = gd.init_gstate(params)
    gstate[SP_SLOTS:] = FRESH
    return gstate


def restart(gstate: np.ndarray, batch: int) -> None:
    """The counters a run starts with (VW keeps none of them with a model)."""
    gstate[SP_INPUTS] = gstate[SP_EXAMPLES] = gstate[SP_UPDATE] = gstate[SP_ENDED] = 0.0
    gstate[SP_NEXT] = batch
    gstate[SP_LAST] = -1.0
    gstate[SP_PASSES] = 1.0
    gstate[SP_PARENTS] = float(np.count_nonzero(
        (gstate[SP_SLOTS:].astype(np.int64) >> 8) & PARENT))  # fmt: skip


@jit_inline
def _bits(gstate, j):
    return np.int64(gstate[SP_SLOTS + j]) >> 8


@jit_inline
def _set(gstate, j, depth, bits):
    gstate[SP_SLOTS + j] = F64((depth & 255) + 256 * bits)


@jit
def _synth(gstate, conf, indices, values, lo, hi, training, out_slot, out_val, st_x, st_w,
           st_k):  # fmt: skip
    """The example's monomials (VW's ``synthetic_create``) into ``out_*``; their count."""
    mask = U64(conf[C_SLOTS]) - U64(1)
    const = U64(CONSTANT) & mask
    m = 0
    top = 0
    st_x[0] = F32(1.0)
    st_w[0] = const
    st_k[0] = lo
    while top >= 0:
        k = st_k[top]
        if k == hi:
            top -= 1
            continue
        st_k[top] = k + 1
        atomic = U64(indices[k]) & mask
        pw = st_w[top]
        if atomic == const:
            cur = pw
        elif pw == const:
            cur = atomic
        else:
            cur = (atomic ^ (U64(MIX) * pw)) & mask
        j = np.int64(cur)
        e = np.int64(gstate[SP_SLOTS + j])
        depth = e & 255
        bits = e >> 8
        if training and top < depth:
            if bits & PARENT:
                bits ^= PARENT  # a transplant
                gstate[SP_PARENTS] -= 1.0
            depth = top & 255
            _set(gstate, j, depth, bits)
        if not bits & CYCLE and min(top, DEFAULT_DEPTH) == depth:
            bits ^= CYCLE
            _set(gstate, j, depth, bits)
            x = F32(values[k]) * st_x[top]
            out_slot[m] = np.uint32(cur)
            out_val[m] = F64(x)
            m += 1
            if bits & PARENT:
                top += 1
                st_x[top] = x
                st_w[top] = cur
                st_k[top] = lo
    for u in range(m):  # the cycle bits off again
        j = np.int64(out_slot[u])
        e = np.int64(gstate[SP_SLOTS + j])
        _set(gstate, j, e & 255, (e >> 8) ^ CYCLE)
    return m


@jit_inline
def _push(hw, hs, hole, top, vw, vs):
    """libstdc++'s ``__push_heap`` with VW's comparison (``a.w > b.w``: the least on top)."""
    parent = (hole - 1) // 2
    while hole > top and hw[parent] > vw:
        hw[hole] = hw[parent]
        hs[hole] = hs[parent]
        hole = parent
        parent = (hole - 1) // 2
    hw[hole] = vw
    hs[hole] = vs


@jit_inline
def _pop(hw, hs, n):
    """libstdc++'s ``pop_heap`` of the ``n`` entries: the top moves to ``n - 1``."""
    last = n - 1
    vw, vs = hw[last], hs[last]
    hw[last], hs[last] = hw[0], hs[0]
    hole = 0
    second = 0
    size = last
    while second < (size - 1) // 2:
        second = 2 * (second + 1)
        if hw[second] > hw[second - 1]:
            second -= 1
        hw[hole], hs[hole] = hw[second], hs[second]
        hole = second
    if (size & 1) == 0 and second == (size - 2) // 2:
        second = 2 * (second + 1)
        hw[hole], hs[hole] = hw[second - 1], hs[second - 1]
        hole = second - 1
    _push(hw, hs, hole, 0, vw, vs)


@jit_inline
def _wanted(gstate, conf):
    """How many new parents a support update takes at most: ``(inputs/examples)^exponent``
    in float32 (libm's ``powf``), truncated, at most the table."""
    n = np.int64(conf[C_SLOTS])
    ratio = F32(F32(gstate[SP_INPUTS]) / F32(gstate[SP_EXAMPLES]))
    want = powf32(ratio, F32(conf[C_EXPONENT]))
    if not want == want:
        return n
    return max(np.int64(min(F64(want), F64(n))), 0)


@jit
def update_support(table, gstate, params, conf):
    """VW's ``sort_data_update_support``: the new parents (see the module)."""
    n = np.int64(conf[C_SLOTS])
    k = _wanted(gstate, conf)
    hw = np.empty(k, dtype=np.float32)
    hs = np.empty(k, dtype=np.int64)
    col = 2 if params[P_NORMALIZED] != 0.0 else 0
    const = np.int64(CONSTANT & (n - 1))
    size = 0
    for j in range(n):
        if j == const or _bits(gstate, j) & PARENT:
            continue
        sal = abs(F32(table[j, 0])) * F32(table[j, col])
        if not sal > TOLERANCE:
            continue
        if size == k and k > 0 and hw[0] < sal:
            _pop(hw, hs, size)
            size -= 1
        if size < k:
            hw[size] = sal
            hs[size] = j
            size += 1
            _push(hw, hs, size - 1, 0, sal, j)
    for u in range(size):
        j = hs[u]
        e = np.int64(gstate[SP_SLOTS + j])
        _set(gstate, j, e & 255, (e >> 8) | PARENT)
    gstate[SP_PARENTS] += F64(size)


@jit_inline
def _end_passes(gstate, conf):
    """VW's ``end_pass`` for each pass the driver ended since the last call: with
    ``--batch_sz 0``, new parents after each pass but the last."""
    while gstate[SP_ENDED] < conf[C_ENDED]:
        gstate[SP_ENDED] += 1.0
        if conf[C_BATCH] == 0 and gstate[SP_PASSES] != conf[C_PASSES]:
            gstate[SP_UPDATE] = 1.0
            gstate[SP_PASSES] += 1.0


@jit_inline
def _predict(table, gstate, base, out_slot, out_val, m, l1):
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(base)
    for u in range(m):
        w = F32(table[out_slot[u], 0])
        if l1:
            w = gd.trunc(w, grav)
        p += w * F32(out_val[u])
    return p * F32(gstate[gd.G_CONTRACTION])


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, conf, start, out_slot, out_val, st_x, st_w,
                st_k):  # fmt: skip
    """gd over the monomials, from row ``start``; returns the row where it stopped: the
    number of rows, or a row whose walk may outgrow the scratch (``out_*``, ``st_*``), to
    be called again from with more (:func:`room`).

    As VW's driver runs a reduction that does not return its prediction from ``learn``:
    every example is first predicted (a walk that moves no depth, clipped to the range
    before its label), which is what ``-p`` and the progress table show; a learned one
    (labeled, weight > 0, not held out) is then walked again as learning walks, and its
    loss is that prediction's, clipped to the range with its label."""
    rule = gd.rule_of(params)
    l1 = rule[9] > F32(0.0)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    binary = params[P_BINARY]
    batch = U64(conf[C_BATCH])
    doubling = conf[C_DOUBLING] != 0.0
    n = indptr.shape[0] - 1
    _end_passes(gstate, conf)
    for i in range(start, n):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = np.int64(indptr[i]), np.int64(indptr[i + 1])
        y = labels[i]
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        extend = labeled and not holdout and params[P_LEARN] != 0.0
        learn = extend and a > 0.0
        pending = learn and gstate[SP_UPDATE] != 0.0
        more = _wanted(gstate, conf) if pending else 0
        if room(hi - lo, gstate, conf, more) > out_slot.shape[0]:
            stats[S_N] -= 1.0  # (counted again when called again from here)
            stats[S_PASS_N] -= 1.0
            return i
        m = _synth(gstate, conf, indices, values, lo, hi, False, out_slot, out_val, st_x,
                   st_w, st_k)  # fmt: skip
        raw = _predict(table, gstate, bases[i], out_slot, out_val, m, l1)
        shown_p = F32(clip(gstate, params, loss_id, F64(raw), y, False))
        p = shown_p
        if extend:  # (VW's scorer widens the range before it learns, weight 0 too)
            p = F32(clip(gstate, params, loss_id, F64(raw), y, True))
        if learn:
            if pending:  # (VW's learn, after its predict: new parents first)
                gstate[SP_UPDATE] = 0.0
                update_support(table, gstate, params, conf)
            m = _synth(gstate, conf, indices, values, lo, hi, True, out_slot, out_val, st_x,
                       st_w, st_k)  # fmt: skip
            gstate[SP_INPUTS] += F64(hi - lo)
            gstate[SP_EXAMPLES] += 1.0
            raw = _predict(table, gstate, bases[i], out_slot, out_val, m, l1)
            p = F32(clip(gstate, params, loss_id, F64(raw), y, True))
        write_raw(preds, indptr, i, F64(raw))
        lv = loss32(loss_id, p, F32(y), tau, lmin, lmax) if labeled else F32(0.0)
        shown = F64(lv)
        if labeled and binary != 0.0:
            shown = binary_loss(F64(p) if binary == 1.0 else 1.0, y, shown)
        # (a labeled held-out line counts its own features, which the run takes out of VW's
        # total feature number again: run.vwconsole.Tally)
        nfeat = hi - lo if labeled and holdout else m
        add_scored(stats, rows, F64(shown_p), y, a, nfeat, labeled, holdout, shown,
                   params[P_PROGRESS])  # fmt: skip
        preds[i] = F64(shown_p)
        if not learn:
            continue
        gstate[G_T] += a
        gstate[G_N] += 1.0
        if lv > F32(0.0):
            gd.step(table, gstate, gd.G_NORM, gd.G_TOTAL, out_slot, out_val, 0, m, p, F32(y),
                    F32(a), loss_id, rule)  # fmt: skip
            if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
                gd.rebase(table, gstate, params)
        # VW's example counter: a batch's end asks for new parents at the next learned one
        counter = U64(np.int64(stats[S_N]) - 1 + np.int64(conf[C_OFFSET]))
        if counter != U64(0) and gstate[SP_LAST] != F64(counter) and batch != U64(0):
            every = U64(gstate[SP_NEXT]) if doubling else batch
            if every != U64(0) and counter % every == U64(0):
                gstate[SP_NEXT] = F64((U64(gstate[SP_NEXT]) * U64(2)) & U64(0xFFFFFFFF))
                gstate[SP_UPDATE] = 1.0
        gstate[SP_LAST] = F64(counter)
    return n


@jit_inline
def room(width, gstate, conf, more):
    """The scratch a walk over a line of ``width`` features may need: each parent entered
    once (its cycle bit), each entered monomial meeting every feature, at most the table
    (``more``: parents a support update may add first)."""
    need = width * (np.int64(gstate[SP_PARENTS]) + more + 1)
    return min(need, np.int64(conf[C_SLOTS])) + 1


# ------------------------------------------------------------------ VW's model file


def vw_section(gstate: np.ndarray, bits: int) -> bytes:
    """VW's ``save_load``: each slot's depth byte and bits byte (no count, no text)."""
    e = gstate[SP_SLOTS : SP_SLOTS + (1 << bits)].astype(np.int64)
    out = np.empty((e.shape[0], 2), dtype=np.uint8)
    out[:, 0] = e & 255
    out[:, 1] = (e >> 8) & 255
    return out.tobytes()


def section_end(data: bytes, pos: int, bits: int) -> int:
    end = pos + 2 * (1 << bits)
    if end > len(data):
        raise ValueError("the model's --stage_poly state is cut short")
    return end


def read_vw_section(data: bytes, pos: int, gstate: np.ndarray, bits: int) -> int:
    """:func:`vw_section` read into ``gstate`` from ``data[pos:]``; returns its end."""
    end = section_end(data, pos, bits)
    pairs = np.frombuffer(data, dtype=np.uint8, count=end - pos, offset=pos).reshape(-1, 2)
    gstate[SP_SLOTS : SP_SLOTS + pairs.shape[0]] = (pairs[:, 0].astype(np.int64)
                                                    + 256 * pairs[:, 1].astype(np.int64))
    return end
