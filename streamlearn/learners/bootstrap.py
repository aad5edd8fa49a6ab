"""Online bootstrap (VW's ``--bootstrap K``, ``--bs_type mean|vote``): K copies of gd in one table.

As VW's ``reductions/bs.cc`` over its ``gd``:

* **Slots.** Copy ``c`` (0-based) of feature slot ``h`` is at ``(h·s + c) mod 2^b``, ``s`` =
  K rounded up to a power of 2, as :mod:`streamlearn.learners.oaa` lays out its classes
  (VW's feature width); each copy keeps its own normalizer sums (VW's per-model states).
* **Resampling.** Every example, learned or not, draws K Poisson(1) counts from VW's global
  generator (:func:`~streamlearn.learners.explore.poisson_draw`, seeded with ``--random_seed``,
  default 0, carried across passes); copy ``c`` learns the example with importance
  ``a · count_c`` (float32), and not at all when the count is 0.
* **Prediction.** Each copy predicts as gd does (clipped to the range its label has widened)
  and learns from that prediction (gd's zero-loss gate per copy).  ``mean``: the float32 of
  the copies' sum (in float64) divided by K, its loss the loss of that mean (``--binary``:
  the 0/1 loss of its sign); ``vote``: the copies' predictions rounded to integers
  (``floor(p + 0.5)``) and VW's majority vote (:func:`vote`), its loss 0 when it equals the
  label, else 1 (VW adds 1, times the importance, for an unlabeled example too: to the loss's
  sum, not to the labeled weight it is divided by).
* **Output.** ``preds`` holds the combined prediction of each row; when it has room for
  3n entries, the smallest and largest copy's prediction follow at ``n + i`` and
  ``2n + i`` (VW's ``-p`` of a bootstrap model: ``prediction [tag] low high``).

Global state: gd's, then the K copies' normalizer sums (``G_COPY + 2c``, ``G_COPY + 2c + 1``),
then the generator's 64-bit state as two 32-bit halves (``G_RNG``, ``G_RNG + 1``).
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
    P_BOOTSTRAP,
    P_BS_VOTE,
    P_LEARN,
    P_PROGRESS,
    P_QUANTILE_TAU,
    P_SEED,
    P_T0,
    S_LOSS,
    S_SINCE_LOSS,
    LearnerSpec,
    add_scored,
    begin_example,
    binary_loss,
    clip,
    row_span,
)
from streamlearn.learners.explore import poisson_draw
from streamlearn.learners.losses import loss32
from streamlearn.learners.oaa import class_stride
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64

G_COPY = GSTATE_SIZE
"""Copy c's normalizer sums: Σ a Σ (x/m)² at ``G_COPY + 2c``, Σ a at ``G_COPY + 2c + 1``."""


def rng_slot(k: int) -> int:
    """Where the generator's state starts in the global state of K copies."""
    return G_COPY + 2 * k


def get_rng(gstate: np.ndarray, k: int) -> int:
    """The generator's 64-bit state kept in the global state of K copies."""
    g = rng_slot(k)
    return (int(gstate[g + 1]) << 32) | int(gstate[g])


def set_rng(gstate: np.ndarray, k: int, state: int) -> None:
    """Set the generator's state (VW's ``--random_seed``, or the state a VW model kept)."""
    g = rng_slot(k)
    gstate[g] = F64(state & 0xFFFFFFFF)
    gstate[g + 1] = F64((state >> 32) & 0xFFFFFFFF)


@jit_inline
def vote(ints, k):
    """VW's ``bs_predict_vote`` over the K rounded predictions ``ints`` (sorted in place when
    more than two distinct votes leave no majority): a Boyer-Moore majority pass; with more
    than two distinct values and no strict majority, the most frequent value (the smallest on
    a tie, as VW's scan of the sorted votes keeps the first longest run; VW leaves out the last
    run, and so does this)."""
    counter = 0
    current = 1
    init = 1
    multi = False
    for i in range(k):
        v = ints[i]
        if not multi:
            if i == 0:
                init = v
                current = v
            elif init != current and v != current and v != init:
                multi = True
        if counter == 0:
            counter = 1
            current = v
        elif v == current:
            counter += 1
        else:
            counter -= 1
    majority = False
    if counter > 0 and multi:
        counter = 0
        for i in range(k):
            if ints[i] == current:
                counter += 1
        if counter * 2 > k:
            majority = True
    if multi and not majority:
        ints[:k].sort()
        tmp = ints[0]
        counter = 1
        run = 1
        for i in range(1, k):
            if tmp == ints[i]:
                run += 1
            else:
                if run > counter:
                    current = tmp
                    counter = run
                tmp = ints[i]
                run = 1
    return current


@jit
def train_gd(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds,
):
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    k = int(params[P_BOOTSTRAP])
    voting = params[P_BS_VOTE] != 0.0
    binary = params[P_BINARY]
    tau = F32(params[P_QUANTILE_TAU])
    step = class_stride(k)
    mask = np.uint64(table.shape[0] - 1)
    n = indptr.shape[0] - 1
    bounds = preds.shape[0] >= 3 * n
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    ints = np.empty(k, dtype=np.int64)
    g_rng = G_COPY + 2 * k
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = (U64(gstate[g_rng + 1]) << U64(32)) | U64(gstate[g_rng])
    for i in range(n):
        if status[i] != 0:
            preds[i] = np.nan
            if bounds:
                preds[n + i] = np.nan
                preds[2 * n + i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        learn = labeled and not holdout and params[P_LEARN] != 0.0
        if learn and a != 0.0:
            gstate[G_T] += a
            gstate[G_N] += 1.0
        total = 0.0
        low = np.inf
        high = -np.inf
        grav = F32(gstate[gd.G_GRAVITY])
        for c in range(k):
            ac = F32(a) * F32(poisson_draw(rng))
            scale = F32(gstate[gd.G_CONTRACTION])
            p = F32(bases[i])
            for t in range(lo, hi):
                j = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
                w = F32(table[j, 0])
                if truncate:
                    w = gd.trunc(w, grav)
                p += w * F32(values[t])
            p = F32(clip(gstate, params, loss_id, F64(p * scale), y, learn))
            total += F64(p)
            low = min(low, F64(p))
            high = max(high, F64(p))
            ints[c] = int(math.floor(F64(p) + 0.5))
            if not (learn and ac > F32(0.0)):
                continue
            if not loss32(loss_id, p, F32(y), tau) > F32(0.0):
                continue  # gd's zero-loss gate, per copy
            for t in range(lo, hi):
                slots[t] = (np.uint64(indices[t]) * np.uint64(step) + np.uint64(c)) & mask
            gd.step(table, gstate, G_COPY + 2 * c, G_COPY + 2 * c + 1, slots, values, lo, hi, p,
                    F32(y), ac, loss_id, rule)  # fmt: skip
            if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
                gd.rebase(table, gstate, params)
                grav = F32(gstate[gd.G_GRAVITY])
        if voting:
            pred = F64(vote(ints, k))
            lv = 0.0 if pred == y else 1.0
            if not labeled:  # VW counts an unlabeled example's vote as wrong, in the sum only
                stats[S_LOSS] += a
                stats[S_SINCE_LOSS] += a
        else:
            pred = F64(F32(total) / F32(k))
            lv = F64(loss32(loss_id, F32(pred), F32(y), tau)) if labeled else 0.0
            if labeled and binary != 0.0:
                lv = binary_loss(pred if binary == 1.0 else 1.0, y, lv)
        preds[i] = pred
        if bounds:
            preds[n + i] = low
            preds[2 * n + i] = high
        add_scored(stats, rows, pred, y, a, hi - lo, labeled, holdout, lv, params[P_PROGRESS])
    gstate[g_rng] = F64(rng[0] & U64(0xFFFFFFFF))
    gstate[g_rng + 1] = F64(rng[0] >> U64(32))


def gd_gstate(params: np.ndarray) -> np.ndarray:
    """gd's global state, the K copies' normalizer sums (with ``--initial-t`` t0 > 0 copy 0's
    start at t0, as VW's model 0) and the generator seeded with ``--random_seed``."""
    k = int(params[P_BOOTSTRAP])
    gstate = np.zeros(rng_slot(k) + 2)
    gstate[gd.G_CONTRACTION] = 1.0
    t0 = F64(np.float32(params[P_T0]))
    if t0 > 0.0:
        gstate[G_COPY] = t0
        gstate[G_COPY + 1] = t0
    set_rng(gstate, k, int(params[P_SEED]))
    return gstate


GD = LearnerSpec(
    name="bootstrap_gd",
    ncols=4,
    fresh=(0.0, 0.0, 0.0, 0.0),
    train_batch=train_gd,
    current_weights=gd.current_weights,
    rebase=gd.rebase,
    init_gstate=gd_gstate,
    dtype=np.float32,
    stored_cols=3,
)
SPECS = (GD,)


def resolve(algo: str) -> LearnerSpec:
    """The bootstrap over ``algo`` (gd only)."""
    if algo == "gd":
        return GD
    raise ValueError(f"--bootstrap runs with --algo gd, not {algo}")
