"""VW's ``--marginal``: pairs of id features replaced by the running mean of their labels.

As VW's ``reductions/marginal.cc`` (stacked between gd and its scorer): in each namespace
``--marginal`` names, the features come in pairs ``(first, second)`` of value 1; a pair
becomes one feature, ``first``'s slot with the value ``num / den`` of ``second``'s slot,
where ``num`` and ``den`` (doubles) start at ``--initial_numerator`` and
``--initial_denominator`` and, after each learned example, decay by ``1 - --decay`` and
add ``label·w`` and ``w`` (``w`` its importance, 1 with ``--unweighted_marginals``).  A
pair whose values are not both 1 is dropped (VW warns), as is the last feature of an odd
count.  gd predicts and learns the replaced features; VW's counts (features, the table)
are the line's.

``--compete`` (AdaNormalHedge, Luo & Schapire 2015): each id keeps two experts, the
marginal's and gd's, with regret and squared regret sums; the prediction is their
weight-averaged mean (gd's weight 1 when every weight is 0), and after learning each
expert's regret against the average loss grows.  ``--update_before_learn``: the marginals
take the example before gd learns it (gd's prediction is then the one given), as VW runs
it: its update reads the replaced features, not the line's pairs (:func:`_update`).

State, in ``gstate`` after gd's (:data:`M_BASE`), one entry per slot of the table
(:func:`state_size`): numerator and denominator (numerator :data:`NEW`: the id is new), and
with ``--compete`` the six expert floats (first :data:`NEW`: new).  VW keeps them in a map;
its model file lists the ids present (:func:`vw_section`).
"""

from __future__ import annotations

import math
import struct

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_LABEL_MAX,
    G_LABEL_MIN,
    G_N,
    G_T,
    GSTATE_SIZE,
    P_LEARN,
    P_LOGISTIC_MAX,
    P_LOGISTIC_MIN,
    P_PROGRESS,
    P_QUANTILE_TAU,
    add_scored,
    begin_example,
    clip,
)
from streamlearn.learners.losses import SQUARED, loss32
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64

M_BASE = GSTATE_SIZE
"""Where the marginals' state starts in ``gstate``."""
C_NUM0, C_DEN0, C_DECAY, C_BEFORE, C_UNWEIGHTED, C_COMPETE, C_SLOTS = range(7)
"""The kernel's options (``conf``)."""
NAN = 1.7976931348623157e308
"""An expert float that is NaN in VW (a regret against ``0/0``, the marginal of an id first
seen in an update): kept finite, as the run's checks of the state ask, and NaN in VW's
model file (:func:`vw_section`)."""
NEW = -1.7976931348623157e308
"""A numerator (or first regret) not yet made: the id is new (the largest negative double,
which no marginal reaches; finite, as the run's checks of the state ask)."""


def state_size(bits: int, compete: bool) -> int:
    """``gstate``'s size: gd's, then per slot a numerator and a denominator (and six expert
    floats with ``--compete``)."""
    return M_BASE + (8 if compete else 2) * (1 << bits)


def init_gstate(params: np.ndarray, bits: int, compete: bool) -> np.ndarray:
    gstate = np.zeros(state_size(bits, compete))
    gstate[:GSTATE_SIZE] = gd.init_gstate(params)
    n = 1 << bits
    gstate[M_BASE : M_BASE + n] = NEW  # every id new
    if compete:
        gstate[M_BASE + 2 * n :: 6] = NEW
    return gstate


@jit_inline
def _get_loss(loss_id, p, y, lo, hi, tau, lmin, lmax):
    """VW's ``get_loss`` in float32: the squared loss outside the label range [lo, hi] is
    its linear continuation, as VW's ``squaredloss``."""
    if loss_id != SQUARED or (p <= hi and p >= lo):
        return loss32(loss_id, p, y, tau, lmin, lmax)
    edge = lo if p < lo else hi
    if y == edge:
        return F32(0.0)
    d = y - edge
    return d * d + F32(2.0) * d * (edge - p)


@jit_inline
def _load(x):
    """An expert float of the state (:data:`NAN` read as NaN)."""
    return F32(np.nan) if x == NAN else F32(x)


@jit_inline
def _store(v):
    return NAN if v != v else F64(v)


@jit_inline
def _hedge(r, c):
    """VW's ``get_adanormalhedge_weights``."""
    rp = r if r > F32(0.0) else F32(0.0)
    if c == F32(0.0) or rp == F32(0.0):
        return F32(0.0)
    return F32(2.0) * rp * F32(math.exp(F64(fdiv(rp * rp, F32(3.0) * c)))) / (F32(3.0) * c)


@jit
def _replace(gstate, conf, ids, indices, values, ns, lo, hi, out_idx, out_val, out_ns, pair_key,
             pair_pred):  # fmt: skip
    """VW's ``make_marginal``: the example's features with each id pair replaced (written to
    ``out_*``; each replaced pair's key and value to ``pair_*``).  Returns the features and
    the pairs written."""
    n = np.int64(conf[C_SLOTS])
    compete = conf[C_COMPETE] != 0.0
    m = 0
    npairs = 0
    k = lo
    while k < hi:
        c = ns[k]
        if not ids[c]:
            out_idx[m] = indices[k]
            out_val[m] = values[k]
            out_ns[m] = c
            m += 1
            k += 1
            continue
        # the namespace's run: its pairs
        e = k
        while e < hi and ns[e] == c:
            e += 1
        j = k
        while j + 1 < e:
            first, second = indices[j], indices[j + 1]
            ok = F32(values[j]) == F32(1.0) and F32(values[j + 1]) == F32(1.0)
            j += 2
            if not ok:
                continue  # (VW: "Bad id features, must have value 1.")
            key = np.int64(second)
            if gstate[M_BASE + key] == NEW:  # a new id
                gstate[M_BASE + key] = conf[C_NUM0]
                gstate[M_BASE + n + key] = conf[C_DEN0]
                if compete:
                    _new_experts(gstate, n, key)
            pred = F32(fdiv(gstate[M_BASE + key], gstate[M_BASE + n + key]))
            out_idx[m] = first
            out_val[m] = pred
            out_ns[m] = c
            m += 1
            pair_key[npairs] = key
            pair_pred[npairs] = pred
            npairs += 1
        k = e
    return m, npairs


@jit
def _new_experts(gstate, n, key):
    at = M_BASE + 2 * n + 6 * key
    if gstate[at] == NEW:
        gstate[at] = 0.0
        gstate[at + 1] = 0.0
        gstate[at + 2] = 1.0
        gstate[at + 3] = 0.0
        gstate[at + 4] = 0.0
        gstate[at + 5] = 1.0


@jit
def _update(gstate, conf, ids, indices, ns, lo, hi, y, a, alg_loss, feature_pred, loss_id,
            tau, lmin, lmax):  # fmt: skip
    """VW's ``update_marginal``: every pair's (values unchecked; an id first seen here starts
    at 0/0, as VW's map does) marginal and, with ``--compete``, its experts.  The pairs are
    those of ``indices``/``ns`` in ``lo..hi``: the line's, or with ``--update_before_learn``
    the replaced features (VW's update then reads its swapped-out copy, which holds them:
    each second replaced feature's slot is a key)."""
    n = np.int64(conf[C_SLOTS])
    compete = conf[C_COMPETE] != 0.0
    w = F32(1.0) if conf[C_UNWEIGHTED] != 0.0 else F32(a)
    keep = F64(F32(1.0) - F32(conf[C_DECAY]))
    lab = F64(F32(y) * w)
    lo_l, hi_l = F32(gstate[G_LABEL_MIN]), F32(gstate[G_LABEL_MAX])
    k = lo
    while k < hi:
        c = ns[k]
        if not ids[c]:
            k += 1
            continue
        e = k
        while e < hi and ns[e] == c:
            e += 1
        j = k
        while j + 1 < e:
            key = np.int64(indices[j + 1])
            j += 2
            if gstate[M_BASE + key] == NEW:
                gstate[M_BASE + key] = 0.0
                gstate[M_BASE + n + key] = 0.0
            num = gstate[M_BASE + key]
            den = gstate[M_BASE + n + key]
            if compete:
                _new_experts(gstate, n, key)
                at = M_BASE + 2 * n + 6 * key
                y32 = F32(y)
                r1 = alg_loss - _get_loss(loss_id, F32(fdiv(num, den)), y32, lo_l, hi_l, tau,
                                          lmin, lmax)  # fmt: skip
                r2 = alg_loss - _get_loss(loss_id, feature_pred, y32, lo_l, hi_l, tau, lmin,
                                          lmax)  # fmt: skip
                e1r = _load(gstate[at]) + r1 * w
                e1c = _load(gstate[at + 1]) + r1 * r1 * w
                e2r = _load(gstate[at + 3]) + r2 * w
                e2c = _load(gstate[at + 4]) + r2 * r2 * w
                gstate[at] = _store(e1r)
                gstate[at + 1] = _store(e1c)
                gstate[at + 2] = _store(_hedge(e1r, e1c))
                gstate[at + 3] = _store(e2r)
                gstate[at + 4] = _store(e2c)
                gstate[at + 5] = _store(_hedge(e2r, e2c))
            gstate[M_BASE + key] = num * keep + lab
            gstate[M_BASE + n + key] = den * keep + F64(w)
        k = e


@jit
def _predict(table, gstate, bases, i, out_idx, out_val, m, l1):
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(bases[i])
    for k in range(m):
        w = F32(table[out_idx[k], 0])
        p += (gd.trunc(w, grav) if l1 else w) * F32(out_val[k])
    return p * F32(gstate[gd.G_CONTRACTION])


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, ns, conf, ids, out_idx, out_val, out_ns, pair_key,
                pair_pred):  # fmt: skip
    rule = gd.rule_of(params)
    l1 = rule[9] > F32(0.0)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    n = np.int64(conf[C_SLOTS])
    compete = conf[C_COMPETE] != 0.0
    before = conf[C_BEFORE] != 0.0
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = np.int64(indptr[i]), np.int64(indptr[i + 1])  # (signed: the pairs' arithmetic)
        y = labels[i]
        y32 = F32(y)
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        extend = labeled and not holdout and params[P_LEARN] != 0.0
        learn = extend and a > 0.0
        if extend:
            clip(gstate, params, loss_id, 0.0, y, True)  # VW's scorer: set_minmax first
        lo_l, hi_l = F32(gstate[G_LABEL_MIN]), F32(gstate[G_LABEL_MAX])
        m, npairs = _replace(gstate, conf, ids, indices, values, ns, lo, hi, out_idx, out_val,
                             out_ns, pair_key, pair_pred)  # fmt: skip
        raw = _predict(table, gstate, bases, i, out_idx, out_val, m, l1)
        p = F32(clip(gstate, params, loss_id, F64(raw), y, False))  # gd's
        final = p
        alg_loss = F32(0.0)
        if compete:  # make_marginal's sums, then compute_expert_loss
            avg = F32(0.0)
            net_w = F32(0.0)
            net_fw = F32(0.0)
            for q in range(npairs):
                at = M_BASE + 2 * n + 6 * pair_key[q]
                wq = _load(gstate[at + 2])
                avg += wq * F32(pair_pred[q])
                net_w += wq
                net_fw += _load(gstate[at + 5])
                if learn:
                    alg_loss += wq * _get_loss(loss_id, F32(pair_pred[q]), y32, lo_l, hi_l, tau,
                                               lmin, lmax)  # fmt: skip
            if net_w + net_fw > F32(0.0):
                avg += net_fw * p
            else:
                net_fw = F32(1.0)
                avg = p
            inv = fdiv(F32(1.0), net_w + net_fw)
            avg = avg * inv
            if learn:
                alg_loss += net_fw * _get_loss(loss_id, p, y32, lo_l, hi_l, tau, lmin, lmax)
                alg_loss = alg_loss * inv
            final = avg
        if learn:
            if before:
                _update(gstate, conf, ids, out_idx, out_ns, 0, m, y, a, alg_loss, p, loss_id,
                        tau, lmin, lmax)  # fmt: skip
                m, npairs = _replace(gstate, conf, ids, indices, values, ns, lo, hi, out_idx,
                                     out_val, out_ns, pair_key, pair_pred)  # fmt: skip
                raw2 = _predict(table, gstate, bases, i, out_idx, out_val, m, l1)
                p2 = F32(clip(gstate, params, loss_id, F64(raw2), y, False))
                _learn(table, gstate, out_idx, out_val, m, p2, y32, a, loss_id, rule, params)
                final = p  # (VW gives the prediction made before the marginals moved)
            else:
                _learn(table, gstate, out_idx, out_val, m, p, y32, a, loss_id, rule, params)
                _update(gstate, conf, ids, indices, ns, lo, hi, y, a, alg_loss, p, loss_id, tau,
                        lmin, lmax)  # fmt: skip
        lv = F64(_get_loss(loss_id, final, y32, lo_l, hi_l, tau, lmin, lmax)) if labeled else 0.0
        add_scored(stats, rows, F64(final), y, a, hi - lo, labeled, holdout, lv,
                   params[P_PROGRESS])  # fmt: skip
        preds[i] = F64(final)


@jit
def _learn(table, gstate, out_idx, out_val, m, p, y32, a, loss_id, rule, params):
    """gd's learn of the replaced features (its prediction ``p``): the counts, then the step
    when the loss is not 0."""
    gstate[G_T] += a
    gstate[G_N] += 1.0
    lv = loss32(loss_id, p, y32, rule[12], rule[13], rule[14])
    if lv > F32(0.0):
        gd.step(table, gstate, gd.G_NORM, gd.G_TOTAL, out_idx, out_val, 0, m, p, y32, F32(a),
                loss_id, rule)  # fmt: skip
        if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
            gd.rebase(table, gstate, params)


# ------------------------------------------------------------------ VW's model file


def present(gstate: np.ndarray, bits: int) -> np.ndarray:
    """The slots whose marginal exists, ascending (VW's map order)."""
    n = 1 << bits
    return np.flatnonzero(gstate[M_BASE : M_BASE + n] != NEW)


def experts_present(gstate: np.ndarray, bits: int) -> np.ndarray:
    n = 1 << bits
    if gstate.shape[0] < M_BASE + 8 * n:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(gstate[M_BASE + 2 * n :: 6][:n] != NEW)


def vw_section(gstate: np.ndarray, bits: int, compete: bool) -> bytes:
    """VW's ``save_load`` of the marginals: their count, then each id's slot, numerator and
    denominator; with ``--compete`` the experts' count and each id's six floats."""
    n = 1 << bits
    keys = present(gstate, bits)
    out = [struct.pack("<Q", keys.shape[0])]
    for k in keys.tolist():
        out.append(struct.pack("<Qdd", k, gstate[M_BASE + k], gstate[M_BASE + n + k]))
    if compete:
        ek = experts_present(gstate, bits)
        out.append(struct.pack("<Q", ek.shape[0]))
        for k in ek.tolist():
            at = M_BASE + 2 * n + 6 * k
            six = [math.nan if x == NAN else x for x in gstate[at : at + 6].tolist()]
            out.append(struct.pack("<Q6f", k, *six))
    return b"".join(out)


def section_lines(gstate: np.ndarray, bits: int, compete: bool, g) -> list[str]:  # noqa: ANN001
    """The readable model's lines of :func:`vw_section` (``g``: VW's number text): VW's, the
    experts' lines run together (VW ends each with ``:``, no newline)."""
    n = 1 << bits
    keys = present(gstate, bits)
    lines = [f"marginals size = {keys.shape[0]}\n"]
    lines += [f"{k}:{g(gstate[M_BASE + k])}:{g(gstate[M_BASE + n + k])}\n" for k in keys.tolist()]
    if compete:
        ek = experts_present(gstate, bits)
        lines.append(f"expert_state size = {ek.shape[0]}\n")
        for k in ek.tolist():
            at = M_BASE + 2 * n + 6 * k
            lines.append(f"{k}:" + "".join(f"{g(F32(math.nan if x == NAN else x))}:"
                                           for x in gstate[at : at + 6]))  # fmt: skip
    return lines


_PARTS = (("<Qdd", 24), ("<Q6f", 32))
"""VW's model section: the marginals (slot, numerator, denominator), then with ``--compete``
the experts (slot, six floats), each part a count and its entries."""


def section_end(data: bytes, pos: int, compete: bool) -> int:
    """Where :func:`vw_section` at ``data[pos:]`` ends (its counts read; ValueError when they
    run past the file)."""
    for _, size in _PARTS[: 2 if compete else 1]:
        if pos + 8 > len(data):
            raise ValueError("the model's --marginal state is cut short")
        (count,) = struct.unpack_from("<Q", data, pos)
        if count > (len(data) - pos - 8) // size:
            raise ValueError("the model's --marginal state counts more ids than it holds")
        pos += 8 + count * size
    return pos


def read_vw_section(data: bytes, pos: int, gstate: np.ndarray, bits: int, compete: bool) -> int:
    """:func:`vw_section` read into ``gstate`` from ``data[pos:]``; returns its end.  An id
    beyond the table, or a count the file cannot hold (:func:`section_end`), is refused
    (ValueError)."""
    n = 1 << bits
    end = section_end(data, pos, compete)
    for fmt, size in _PARTS[: 2 if compete else 1]:
        (count,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        for k, *state in struct.iter_unpack(fmt, data[pos : pos + count * size]):
            if k >= n:
                raise ValueError(f"the model's --marginal id {k} is beyond its 2^{bits} slots")
            if fmt == "<Qdd":
                gstate[M_BASE + k] = state[0]
                gstate[M_BASE + n + k] = state[1]
            else:
                gstate[M_BASE + 2 * n + 6 * k : M_BASE + 2 * n + 6 * k + 6] = [
                    NAN if x != x else x for x in state]  # fmt: skip
        pos += count * size
    return end
