"""Kernel SVM, VW's ``--ksvm`` (``reductions/kernel_svm.cc``): LaSVM over a growing set of
support vectors, online.

The model is not a weight table but the support vectors themselves: each one a learned
example (its features flattened, sorted and merged, its label and importance weight), with
its dual coefficient ``alpha`` and its gradient ``delta``, in the model's order.  An
example's score is ``Σ_k K(x, sv_k)·alpha_k / λ`` (float32, in the model's order; 0 with no
support vector); the loss is the hinge.  Learning (VW's ``learn``/``train``) puts the example
in a pool; a full pool (``--pool_size``, 1 unless given) adds each of its examples as a
support vector and runs LaSVM's *process* step on it (:func:`update`), then ``--reprocess``
steps, each on a random support vector (a draw < 0.5) or on the most violating one
(:func:`suboptimality`, brought to the front of the model first).  A coefficient that falls
to |alpha| <= 1e-6 removes its support vector.

Kept from VW, bit for bit, because its numbers follow from them:

* **The kernel rows.** Each stored example keeps the kernel values against the support
  vectors by *position* (VW's ``krow``), computed as far as the model reached when last
  asked, and shifted as VW shifts them: when a support vector is removed or brought to the
  front, only the support vectors' rows move, not those of examples still waiting in the
  pool, which then read values of other positions (with ``--pool_size`` > 1).
* **The front.** VW brings the most violating vector to position 0, then updates the vector
  now at its old position.
* **The counters** VW prints at the end (kernel evaluations: the row's length before each
  extension; cache queries: the model's size when a row was complete) and the loss sum.
* **The generator**: VW's global ``merand48`` state, from ``--random_seed`` (a model file
  keeps it as its seed).

Kernels (float32 as VW): linear ``x·z``; ``rbf`` ``exp(-(|x|² + |z|² - 2 x·z)·bandwidth)``;
``poly`` ``(1 + x·z)^degree`` (in double, then float32).  ``x·z`` merges the two sorted
feature lists in order.

State (:class:`State`; the entry keeps it between batches, the model files keep the support
vectors): ``ints`` int64[NI] (counts), ``kp`` float64[NK] (options), ``rng`` uint64[1], per
stored example ``slot_i`` int64[S, NSI] and ``slot_f`` float64[S, 4], the features of every
stored example ``f_idx`` uint64 / ``f_val`` float32, the kernel rows ``krow`` float32[R, S]
(a row taken from the free rows ``rfree`` the first time an example needs one: scoring
against a model takes one row, learning one per stored example), the model ``sv`` int64[S]
(slot of each position), ``alpha``/``delta`` float32[S], the ``pool`` int64[pool_size], the
free slots ``free`` int64[S] (a stack), and ``events`` float64[E, 6] (VW's trace line every
1000 examples: written here, printed by the entry).  :func:`train_batch` stops before an
example that could overflow an array and says where (the entry grows them and calls again).
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.base import (
    GSTATE_SIZE,
    P_LEARN,
    P_PROGRESS,
    LearnerSpec,
    add_scored,
    begin_example,
    clip,
    row_span,
    write_raw,
)
from streamlearn.learners.explore import merand48
from streamlearn.learners.losses import HINGE, expf, loss32
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32
F64 = np.float64
I64 = np.int64
U64 = np.uint64

# ints
N_SUPPORT = 0
POOL_POS = 1
FEAT_END = 2  # features stored so far (f_idx/f_val in use up to here, freed ones included)
N_FREE = 3
EVALS = 4  # VW's num_kernel_evals
CACHE = 5  # VW's num_cache_evals
COUNTER = 6  # VW's example_counter: the examples of the run so far (0-based)
N_EVENTS = 7
FEAT_LIVE = 8  # features of the stored examples still in use
N_RFREE = 9  # kernel rows free (``rfree``)
NI = 10
# kp
K_TYPE = 0  # 0 linear, 1 rbf, 2 poly (VW's SVM_KER_*)
K_BANDWIDTH = 1
K_DEGREE = 2
K_LAMBDA = 3
K_REPROCESS = 4
K_POOL = 5
K_LOSS_SUM = 6  # VW's loss_sum (a float32)
K_MAXCACHE = 7
NK = 8
LINEAR, RBF, POLY = 0, 1, 2
KERNELS = {"linear": LINEAR, "rbf": RBF, "poly": POLY}
# slot_i columns
S_LO = 0
S_LEN = 1
S_NFEAT = 2  # the example's feature count (VW's num_features)
S_COUNTER = 3  # its example_counter
S_KLEN = 4  # its kernel row's length
S_USED = 5
S_ROW = 6  # the batch's row it was stored from (-1: an earlier batch's; its tag)
S_KROW = 7  # its kernel row in ``krow`` (-1: none yet)
NSI = 8
# slot_f columns (float32 values)
S_LABEL = 0
S_WEIGHT = 1
S_INITIAL = 2
S_SQ = 3  # Σ x² of its merged features (VW's total_sum_feat_sq)
MAXCACHE = 1024 * 1024 * 1024
"""VW's ``maxcache``: kernel values the rows may hold (its trim never fires below it)."""


@jit_inline
def _dot(f_idx, f_val, a_lo, a_len, b_lo, b_len):
    """VW's ``features_dot_product`` of two sorted, merged feature lists (float32)."""
    d = F32(0.0)
    if b_len == 0:
        return d
    j = I64(0)
    for i in range(a_len):
        ia = f_idx[a_lo + i]
        ib = f_idx[b_lo + j]
        if ia < ib:
            continue
        while ia > ib:
            j += 1
            if j >= b_len:
                break
            ib = f_idx[b_lo + j]
        if j >= b_len:
            break
        if ia == ib:
            d += f_val[a_lo + i] * f_val[b_lo + j]
            j += 1
            if j >= b_len:
                break
    return d


@jit_inline
def kernel(kp, slot_i, slot_f, f_idx, f_val, a, b):
    """K(a, b) of two stored examples (slots)."""
    d = _dot(f_idx, f_val, slot_i[a, S_LO], slot_i[a, S_LEN], slot_i[b, S_LO], slot_i[b, S_LEN])
    kind = kp[K_TYPE]
    if kind == RBF:
        e = F32(F32(slot_f[a, S_SQ]) + F32(slot_f[b, S_SQ])) - F32(2.0) * d
        return expf(F32(-e * F32(kp[K_BANDWIDTH])))
    if kind == POLY:
        return F32(np.power(F64(F32(F32(1.0) + d)), F64(kp[K_DEGREE])))
    return d


@jit_inline
def row_of(ints, slot_i, rfree, e):
    """Slot ``e``'s kernel row, taken from the free rows the first time it needs one (an
    example scored against a model never learned from needs one row, not one per vector)."""
    r = slot_i[e, S_KROW]
    if r < 0:
        ints[N_RFREE] -= 1
        r = rfree[ints[N_RFREE]]
        slot_i[e, S_KROW] = r
    return r


@jit_inline
def compute_kernels(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, rfree, e):
    """VW's ``compute_kernels``: slot ``e``'s row extended to the model's size; the row."""
    n = ints[N_SUPPORT]
    k = slot_i[e, S_KLEN]
    r = row_of(ints, slot_i, rfree, e)
    if k < n:
        ints[EVALS] += k  # (VW counts the row's length before, not the values computed)
        for i in range(k, n):
            krow[r, i] = kernel(kp, slot_i, slot_f, f_idx, f_val, e, sv[i])
        slot_i[e, S_KLEN] = n
    else:
        ints[CACHE] += n
    return r


@jit_inline
def dense_dot(krow, r, alpha, n):
    d = F32(0.0)
    for i in range(n):
        d += krow[r, i] * alpha[i]
    return d


@jit_inline
def score(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, rfree, alpha, e):
    """VW's ``predict`` of one stored example: its row against the model, over λ."""
    r = compute_kernels(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, rfree, e)
    if slot_i[e, S_KLEN] > 0:
        return dense_dot(krow, r, alpha, ints[N_SUPPORT]) / F32(kp[K_LAMBDA])
    return F32(0.0)


@jit_inline
def release(ints, slot_i, free, rfree, e):
    """Slot ``e`` back on the free stack (its features become garbage), its row too."""
    ints[FEAT_LIVE] -= slot_i[e, S_LEN]
    slot_i[e, S_USED] = 0
    slot_i[e, S_KLEN] = 0
    r = slot_i[e, S_KROW]
    if r >= 0:
        rfree[ints[N_RFREE]] = r
        ints[N_RFREE] += 1
        slot_i[e, S_KROW] = -1
    free[ints[N_FREE]] = e
    ints[N_FREE] += 1


@jit_inline
def remove(ints, slot_i, krow, sv, alpha, delta, free, rfree, svi):
    """VW's ``remove``: the vector at ``svi`` out of the model; the support vectors' rows
    (only theirs) lose its column."""
    n = ints[N_SUPPORT]
    e = sv[svi]
    for i in range(svi, n - 1):
        sv[i] = sv[i + 1]
        alpha[i] = alpha[i + 1]
        delta[i] = delta[i + 1]
    release(ints, slot_i, free, rfree, e)
    n -= 1
    ints[N_SUPPORT] = n
    for j in range(n):
        s = sv[j]
        size = slot_i[s, S_KLEN]
        if svi < size:
            r = slot_i[s, S_KROW]
            for i in range(svi, size - 1):
                krow[r, i] = krow[r, i + 1]
            slot_i[s, S_KLEN] = size - 1


@jit_inline
def make_hot(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, rfree, alpha, delta, svi):
    """VW's ``make_hot_sv``: the vector at ``svi`` to the front, the support vectors' rows
    rotated with it (a row too short for it gains its value at the front)."""
    n = ints[N_SUPPORT]
    hot = sv[svi]
    h = compute_kernels(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, rfree, hot)
    a, d = alpha[svi], delta[svi]
    for i in range(svi, 0, -1):
        sv[i] = sv[i - 1]
        alpha[i] = alpha[i - 1]
        delta[i] = delta[i - 1]
    sv[0] = hot
    alpha[0] = a
    delta[0] = d
    for j in range(n):
        s = sv[j]
        size = slot_i[s, S_KLEN]
        r = row_of(ints, slot_i, rfree, s)
        if svi < size:
            kv = krow[r, svi]
            for i in range(svi, 0, -1):
                krow[r, i] = krow[r, i - 1]
            krow[r, 0] = kv
        else:
            kv = krow[h, j]
            for i in range(size, 0, -1):
                krow[r, i] = krow[r, i - 1]
            krow[r, 0] = kv
            slot_i[s, S_KLEN] = size + 1


@jit_inline
def update(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, alpha, delta, free, rfree, pos):
    """VW's ``update`` (LaSVM's step on one coordinate); True when it moved (> 1e-6)."""
    e = sv[pos]
    lam = F32(kp[K_LAMBDA])
    y = F32(slot_f[e, S_LABEL])
    r = compute_kernels(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, rfree, e)
    n = ints[N_SUPPORT]
    aki = dense_dot(krow, r, alpha, n)
    delta[pos] = aki * y / lam - F32(1.0)
    old = alpha[pos]
    aki -= alpha[pos] * krow[r, pos]
    alpha[pos] = F32(0.0)
    proj = aki * y
    ai = fdiv(lam - proj, krow[r, pos])  # (as C: inf or nan when K(x, x) is 0)
    w = F32(slot_f[e, S_WEIGHT])
    if ai > w:
        ai = w
    elif ai < F32(0.0):
        ai = F32(0.0)
    ai *= y
    diff = ai - old
    moved = F64(abs(diff)) > 1.0e-06
    if F64(abs(diff)) > 1.0:
        diff = F32(diff > 0) - F32(diff < 0)
        ai = old + diff
    for i in range(n):
        delta[i] += diff * krow[r, i] * F32(slot_f[sv[i], S_LABEL]) / lam
    if F64(abs(ai)) <= 1.0e-6:
        remove(ints, slot_i, krow, sv, alpha, delta, free, rfree, pos)
    else:
        alpha[pos] = ai
    return moved


@jit_inline
def suboptimality(ints, slot_f, sv, alpha, delta):
    """VW's ``suboptimality``: the position of the most violating vector and its |delta|."""
    best, at = 0.0, I64(0)
    for i in range(ints[N_SUPPORT]):
        e = sv[i]
        t = alpha[i] * F32(slot_f[e, S_LABEL])
        v = 0.0
        if (t < F32(slot_f[e, S_WEIGHT]) and delta[i] < 0) or (t > 0 and delta[i] > 0):
            v = F64(abs(delta[i]))
        if v > best:
            best, at = v, I64(i)
    return at, best


@jit_inline
def train_pool(ints, kp, rng, slot_i, slot_f, f_idx, f_val, krow, sv, alpha, delta, pool,
               free, rfree):  # fmt: skip
    """VW's ``train``: score the pool (its rows completed), then add each of its examples as
    a support vector, process it, and reprocess."""
    m = ints[POOL_POS]
    for i in range(m):
        score(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, rfree, alpha, pool[i])
    for i in range(m):
        pos = ints[N_SUPPORT]
        sv[pos] = pool[i]
        alpha[pos] = F32(0.0)
        delta[pos] = F32(0.0)
        ints[N_SUPPORT] = pos + 1
        update(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, alpha, delta, free, rfree, pos)
        for _ in range(I64(kp[K_REPROCESS])):
            n = ints[N_SUPPORT]
            if n == 0:
                break
            if merand48(rng) < F32(0.5):
                at = I64(np.floor(merand48(rng) * F32(n)))
                update(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, alpha, delta, free, rfree,
                       at)  # fmt: skip
            else:
                at, worst = suboptimality(ints, slot_f, sv, alpha, delta)
                if worst > 0.0:
                    if at * n <= I64(kp[K_MAXCACHE]):
                        make_hot(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, rfree, alpha,
                                 delta, at)  # fmt: skip
                    update(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, alpha, delta, free,
                           rfree, at)  # fmt: skip
    ints[POOL_POS] = 0


@jit_inline
def store(ints, slot_i, slot_f, f_idx, f_val, free, indices, values, lo, hi, mask, y, a, base,
          row):  # fmt: skip
    """Example ``lo..hi`` flattened into a free slot (VW's ``flatten_sort_example``):
    features masked to the table, sorted by (index, value), equal indices merged (summed),
    Σ x² of the merged ones; its slot."""
    ints[N_FREE] -= 1
    e = free[ints[N_FREE]]
    m = I64(hi - lo)
    idx = np.empty(m, dtype=np.uint64)
    val = np.empty(m, dtype=np.float32)
    for t in range(m):
        idx[t] = U64(indices[lo + U64(t)]) & mask
        val[t] = F32(values[lo + U64(t)])
    order = np.argsort(val, kind="mergesort")
    order = order[np.argsort(idx[order], kind="mergesort")]
    start = ints[FEAT_END]
    k = I64(-1)
    sq = F32(0.0)
    for t in range(m):
        j = order[t]
        if k >= 0 and f_idx[start + k] == idx[j]:
            f_val[start + k] += val[j]
        else:
            if k >= 0:
                sq += f_val[start + k] * f_val[start + k]
            k += 1
            f_idx[start + k] = idx[j]
            f_val[start + k] = val[j]
    if k >= 0:
        sq += f_val[start + k] * f_val[start + k]
    length = k + 1
    ints[FEAT_END] = start + length
    ints[FEAT_LIVE] += length
    slot_i[e, S_LO] = start
    slot_i[e, S_LEN] = length
    slot_i[e, S_NFEAT] = m
    slot_i[e, S_COUNTER] = ints[COUNTER]
    slot_i[e, S_KLEN] = 0
    slot_i[e, S_USED] = 1
    slot_i[e, S_ROW] = row
    slot_i[e, S_KROW] = -1
    slot_f[e, S_LABEL] = F64(F32(y))
    slot_f[e, S_WEIGHT] = F64(F32(a))
    slot_f[e, S_INITIAL] = F64(F32(base))
    slot_f[e, S_SQ] = F64(sq)
    return e


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, start, ints, kp, rng, slot_i, slot_f, f_idx, f_val,
                krow, sv, alpha, delta, pool, free, rfree, events):  # fmt: skip
    """Score, account and learn the batch's examples from ``start`` on (see the module);
    returns the row to call again from when an array is too small for the next example, or
    -1 when the batch is done."""
    mask = U64(table.shape[0] - 1)
    pool_size = I64(kp[K_POOL])
    learning = params[P_LEARN] != 0.0
    n = indptr.shape[0] - 1
    for i in range(start, n):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        m = I64(hi - lo)
        if (ints[N_FREE] < 2 or ints[FEAT_END] + m > f_idx.shape[0]
                or ints[N_SUPPORT] + pool_size + 1 > sv.shape[0] or ints[N_RFREE] < 2
                or (learning and krow.shape[0] < slot_i.shape[0])
                or ints[N_EVENTS] >= events.shape[0]):  # fmt: skip
            return i  # (learning, every stored example may need a row: one a slot)
        y = labels[i]
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        learn = labeled and not holdout and params[P_LEARN] != 0.0
        if learn:  # (VW's count_label, ahead of the prediction; the score is not clipped)
            clip(gstate, params, loss_id, 0.0, y, True)
        learned = learn and a > 0.0
        e = store(ints, slot_i, slot_f, f_idx, f_val, free, indices, values, lo, hi, mask, y, a,
                  bases[i], i)  # fmt: skip
        p = score(ints, kp, slot_i, slot_f, f_idx, f_val, krow, sv, rfree, alpha, e)
        if learned:
            lv = F32(1.0) - p * F32(y)
            kp[K_LOSS_SUM] = F64(F32(F32(kp[K_LOSS_SUM]) + (lv if lv > F32(0.0) else F32(0.0))))
            c = ints[COUNTER]
            if c % 1000 == 0 and c >= 2:  # VW's trace line (alpha of the last two vectors)
                k, ns = ints[N_EVENTS], ints[N_SUPPORT]
                events[k, 0] = F64(ns)
                events[k, 1] = F64(ints[EVALS])
                events[k, 2] = F64(ints[CACHE])
                events[k, 3] = kp[K_LOSS_SUM]
                events[k, 4] = F64(alpha[ns - 1]) if ns >= 1 else 0.0
                events[k, 5] = F64(alpha[ns - 2]) if ns >= 2 else 0.0
                ints[N_EVENTS] = k + 1
            pool[ints[POOL_POS]] = e
            ints[POOL_POS] += 1
            if ints[POOL_POS] == pool_size:
                train_pool(ints, kp, rng, slot_i, slot_f, f_idx, f_val, krow, sv, alpha, delta,
                           pool, free, rfree)  # fmt: skip
        else:
            release(ints, slot_i, free, rfree, e)
        ints[COUNTER] += 1
        write_raw(preds, indptr, i, F64(p))
        lv = loss32(loss_id, p, F32(y), F32(0.5), F32(-1.0), F32(1.0)) if labeled else F32(0.0)
        add_scored(stats, rows, F64(p), y, a, m, labeled, holdout, F64(lv), params[P_PROGRESS])
        preds[i] = F64(p)
    return -1


@jit
def current_weights(table, gstate, params, slots, out):
    for j in range(slots.shape[0]):
        out[j] = table[slots[j], 0]


@jit
def rebase(table, gstate, params):
    return


def init_gstate(params: np.ndarray) -> np.ndarray:  # noqa: ARG001
    return np.zeros(GSTATE_SIZE)


def spec() -> LearnerSpec:
    """The learner's (unused) table: one column; its model is the entry's state."""
    return LearnerSpec(name="ksvm", ncols=1, fresh=(0.0,), train_batch=train_batch,
                       current_weights=current_weights, rebase=rebase,
                       init_gstate=init_gstate, dtype=np.float32)  # fmt: skip


LOSS_ID = HINGE
