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
VW_VERSION = "9.6.0"
"""The version sl's VW files of a ksvm model say: VW reads none older (its support vectors'
tags were written otherwise before 9.6)."""
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


# ---- the state a run keeps, and its two files -------------------------------------------


class State:
    """The arrays of one run (see the module), grown as the model grows."""

    def __init__(self, kp: np.ndarray, seed: int, slots: int = 64, feats: int = 4096) -> None:
        pool = int(kp[K_POOL])
        self.ints = np.zeros(NI, dtype=np.int64)
        self.kp = kp
        self.rng = np.array([seed], dtype=np.uint64)
        self.slot_i = np.zeros((slots, NSI), dtype=np.int64)
        self.tags: dict[int, bytes] = {}
        """Each stored example's tag (VW keeps it with a support vector), when it has one."""
        self.slot_f = np.zeros((slots, 4))
        self.f_idx = np.zeros(feats, dtype=np.uint64)
        self.f_val = np.zeros(feats, dtype=np.float32)
        self.krow = np.zeros((4, slots), dtype=np.float32)
        """A row of kernel values per stored example that has needed one (rows by
        ``rfree``'s stack), a column per position of the model (its capacity: ``slots``)."""
        self.rfree = np.arange(3, -1, -1, dtype=np.int64)
        self.ints[N_RFREE] = 4
        self.sv = np.zeros(slots, dtype=np.int64)
        self.alpha = np.zeros(slots, dtype=np.float32)
        self.delta = np.zeros(slots, dtype=np.float32)
        self.pool = np.zeros(max(pool, 1), dtype=np.int64)
        self.free = np.arange(slots - 1, -1, -1, dtype=np.int64)
        self.ints[N_FREE] = slots
        self.events = np.zeros((64, 6))

    def arrays(self) -> tuple:
        return (self.ints, self.kp, self.rng, self.slot_i, self.slot_f, self.f_idx, self.f_val,
                self.krow, self.sv, self.alpha, self.delta, self.pool, self.free, self.rfree,
                self.events)

    def make_room(self, need_feats: int, learning: bool = True) -> None:
        """Room for one more example of ``need_feats`` features: the features compacted
        when half are garbage, each array doubled when still short; learning, a kernel row
        for every stored example (VW's rows: the support vectors' grow to their number,
        n² values in all, bounded by the memory available: exit 8 rather than a crash)."""
        ints = self.ints
        if ints[FEAT_END] + need_feats > self.f_idx.shape[0]:
            self._compact()
            while ints[FEAT_END] + need_feats > self.f_idx.shape[0]:
                self.f_idx = np.concatenate([self.f_idx, np.zeros_like(self.f_idx)])
                self.f_val = np.concatenate([self.f_val, np.zeros_like(self.f_val)])
        s = self.slot_i.shape[0]
        if ints[N_FREE] < 2 or ints[N_SUPPORT] + self.pool.shape[0] + 1 > self.sv.shape[0]:
            self._grow(2 * s)
        rows = self.krow.shape[0]
        if ints[N_RFREE] < 2 or (learning and rows < self.slot_i.shape[0]):
            self._grow_rows(max(2 * rows, self.slot_i.shape[0] if learning else 0))
        ints[N_EVENTS] = 0

    def _room_for(self, rows: int, cols: int) -> None:
        """Refuse (exit 8) kernel rows that would pass the memory available."""
        from streamlearn.system.memory import refuse_above

        refuse_above(4 * rows * cols, f"--ksvm's kernel rows ({int(self.ints[N_SUPPORT]):,} "
                     "support vectors)", "a larger --l2 or fewer examples keep fewer support "
                     "vectors")  # fmt: skip

    def _grow_rows(self, r: int) -> None:
        old, cols = self.krow.shape
        self._room_for(r, cols)
        krow = np.zeros((r, cols), dtype=np.float32)
        krow[:old] = self.krow
        self.krow = krow
        n_free = int(self.ints[N_RFREE])
        rfree = np.zeros(r, dtype=np.int64)
        rfree[: r - old] = np.arange(r - 1, old - 1, -1)
        rfree[r - old : r - old + n_free] = self.rfree[:n_free]
        self.rfree = rfree
        self.ints[N_RFREE] = n_free + r - old

    def _compact(self) -> None:
        ints = self.ints
        if ints[FEAT_LIVE] * 2 > ints[FEAT_END]:
            return
        used = np.flatnonzero(self.slot_i[:, S_USED])
        used = used[np.argsort(self.slot_i[used, S_LO], kind="stable")]
        at = 0
        for e in used.tolist():
            lo, n = int(self.slot_i[e, S_LO]), int(self.slot_i[e, S_LEN])
            self.f_idx[at : at + n] = self.f_idx[lo : lo + n]
            self.f_val[at : at + n] = self.f_val[lo : lo + n]
            self.slot_i[e, S_LO] = at
            at += n
        ints[FEAT_END] = at
        ints[FEAT_LIVE] = at

    def _grow(self, s: int) -> None:
        old = self.slot_i.shape[0]
        self.slot_i = np.concatenate([self.slot_i, np.zeros((s - old, NSI), dtype=np.int64)])
        self.slot_f = np.concatenate([self.slot_f, np.zeros((s - old, 4))])
        rows = self.krow.shape[0]
        self._room_for(rows, s)
        krow = np.zeros((rows, s), dtype=np.float32)
        krow[:, :old] = self.krow
        self.krow = krow
        for name in ("sv", "alpha", "delta"):
            a = getattr(self, name)
            setattr(self, name, np.concatenate([a, np.zeros(s - old, dtype=a.dtype)]))
        n_free = int(self.ints[N_FREE])
        free = np.zeros(s, dtype=np.int64)
        free[: s - old] = np.arange(s - 1, old - 1, -1)
        free[s - old : s - old + n_free] = self.free[:n_free]
        self.free = free
        self.ints[N_FREE] = n_free + s - old

    # -- the model: its support vectors, in order ------------------------------------------

    def take_tags(self, batch) -> None:  # noqa: ANN001 - an io.batch.Batch, or None
        """The tags of the examples the last call stored from ``batch`` (its rows' tags)."""
        rows = self.slot_i[:, S_ROW]
        for e in np.flatnonzero((rows >= 0) & (self.slot_i[:, S_USED] != 0)).tolist():
            i = int(rows[e])
            tag = b""
            if batch is not None and getattr(batch, "block", None) is not None:
                tag = bytes(batch.block.data[int(batch.tag_start[i]) : int(batch.tag_end[i])])
            if tag:
                self.tags[e] = tag
            else:
                self.tags.pop(e, None)
        rows[:] = -1

    def dump(self) -> np.ndarray:
        """float64[]: VW's generator, then the support vectors in order (each: label, weight,
        initial, Σx², features' count, example counter, merged count m, tag length t, m
        indices, m values, t bytes), then alpha and delta (what the model files keep)."""
        n = int(self.ints[N_SUPPORT])
        r = int(self.rng[0])
        out = [np.array([float(n), float(r & 0xFFFFFFFF), float(r >> 32)])]
        for k in range(n):
            e = int(self.sv[k])
            lo, m = int(self.slot_i[e, S_LO]), int(self.slot_i[e, S_LEN])
            tag = self.tags.get(e, b"")
            out.append(np.array([*self.slot_f[e], float(self.slot_i[e, S_NFEAT]),
                                 float(self.slot_i[e, S_COUNTER]), float(m), float(len(tag))]))
            out.append(self.f_idx[lo : lo + m].astype(np.float64))
            out.append(self.f_val[lo : lo + m].astype(np.float64))
            out.append(np.frombuffer(tag, dtype=np.uint8).astype(np.float64))
        out += [self.alpha[:n].astype(np.float64), self.delta[:n].astype(np.float64)]
        return np.concatenate(out)

    def load(self, saved: np.ndarray) -> None:
        """The model :meth:`dump` wrote (checked by :func:`check_dump`), kernel rows empty."""
        n, _ = check_dump(saved)
        self.rng[0] = np.uint64(int(saved[1]) | (int(saved[2]) << 32))
        while self.slot_i.shape[0] < n + self.pool.shape[0] + 2:
            self._grow(2 * self.slot_i.shape[0])
        at = 3
        for k in range(n):
            label, weight, initial, sq, nfeat, counter, m, t = saved[at : at + _FIELDS]
            m, t = int(m), int(t)
            at += _FIELDS
            idx, val = saved[at : at + m], saved[at + m : at + 2 * m]
            tag = saved[at + 2 * m : at + 2 * m + t].astype(np.uint8).tobytes()
            at += 2 * m + t
            self.make_room(m, learning=False)
            ints = self.ints
            ints[N_FREE] -= 1
            e = int(self.free[ints[N_FREE]])
            lo = int(ints[FEAT_END])
            self.f_idx[lo : lo + m] = idx.astype(np.uint64)
            self.f_val[lo : lo + m] = val.astype(np.float32)
            ints[FEAT_END] += m
            ints[FEAT_LIVE] += m
            self.slot_i[e] = (lo, m, int(nfeat), int(counter), 0, 1, -1, -1)
            self.slot_f[e] = (label, weight, initial, sq)
            if tag:
                self.tags[e] = tag
            self.sv[k] = e
        self.alpha[:n] = saved[at : at + n]
        self.delta[:n] = saved[at + n : at + 2 * n]
        self.ints[N_SUPPORT] = n


_FIELDS = 8
"""The numbers before a support vector's features in :meth:`State.dump`."""


def check_dump(saved: np.ndarray) -> tuple[int, int]:
    """(support vectors, where their coefficients start) of a :meth:`State.dump` read from
    a file; ValueError when its counts do not add up (numba does not check bounds: the
    kernel never sees a bad one)."""
    if saved.ndim != 1 or saved.shape[0] < 3 or not np.all(np.isfinite(saved)):
        raise ValueError("its support vectors are not a list of numbers")
    n = saved[0]
    if n != int(n) or not 0 <= n <= saved.shape[0]:
        raise ValueError("its count of support vectors is wrong")
    for half in saved[1:3]:
        if half != int(half) or not 0 <= half < 2**32:
            raise ValueError("its generator's state is wrong")
    at = 3
    for _ in range(int(n)):
        if at + _FIELDS > saved.shape[0]:
            raise ValueError("its support vectors are cut short")
        m, t = saved[at + 6], saved[at + 7]
        for c in (m, t, saved[at + 4], saved[at + 5]):
            if c != int(c) or c < 0:
                raise ValueError("a support vector's counts are wrong")
        m, t = int(m), int(t)
        at += _FIELDS
        if at + 2 * m + t > saved.shape[0]:
            raise ValueError("a support vector's features are cut short")
        idx = saved[at : at + m]
        if np.any(idx < 0) or np.any(idx >= 2**32) or np.any(idx != np.floor(idx)):
            raise ValueError("a support vector's features are out of range")
        if np.any(np.diff(idx) <= 0):
            raise ValueError("a support vector's features are not sorted")
        tag = saved[at + 2 * m : at + 2 * m + t]
        if np.any(tag < 0) or np.any(tag > 255) or np.any(tag != np.floor(tag)):
            raise ValueError("a support vector's tag is not bytes")
        at += 2 * m + t
    if at + 2 * int(n) != saved.shape[0]:
        raise ValueError("its coefficients do not match its support vectors")
    if np.any(np.abs(saved[3:]) > np.finfo(np.float32).max):
        raise ValueError("a number does not fit a float32")
    return int(n), at


def vw_section(saved: np.ndarray) -> bytes:
    """VW's model of the support vectors in ``saved`` (a :meth:`State.dump`): their count,
    each as VW's cache writes an example (its label, tag, counter, offset, weight, feature
    count, Σx², namespace 0 and its features), then alpha and delta."""
    import struct

    n, _ = check_dump(saved)
    parts = [struct.pack("<Q", n)]
    at = 3
    for _ in range(n):
        label, weight, initial, sq, nfeat, counter, m, t = saved[at : at + _FIELDS]
        m, t = int(m), int(t)
        at += _FIELDS
        idx = saved[at : at + m].astype(np.uint64)
        val = saved[at + m : at + 2 * m].astype(np.float32)
        tag = saved[at + 2 * m : at + 2 * m + t].astype(np.uint8).tobytes()
        at += 2 * m + t
        parts.append(struct.pack("<fffI", label, weight, initial, t) + tag)
        parts.append(struct.pack("<QQfQfB", int(counter), 0, 0.0, int(nfeat), sq, 0))
        parts.append(_cache_features(idx, val))
    parts.append(saved[at : at + n].astype("<f4").tobytes())
    parts.append(saved[at + n : at + 2 * n].astype("<f4").tobytes())
    return b"".join(parts)


def _varint(x: int) -> bytes:
    out = bytearray()
    while x >= 0x80:
        out.append((x & 0x7F) | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


def _cache_features(idx: np.ndarray, val: np.ndarray) -> bytes:
    """VW's ``cache_features``: each index as the zig-zag difference from the last, two
    flag bits (-1, or a value that follows), then the value when it is not ±1."""
    import struct

    body = bytearray()
    last = 0
    for i, v in zip(idx.tolist(), val.tolist(), strict=True):
        d = i - last
        last = i
        z = ((d << 1) ^ (d >> 63)) & 0xFFFFFFFFFFFFFFFF
        z = (z << 2) & 0xFFFFFFFFFFFFFFFF
        if v == 1.0:
            body += _varint(z)
        elif v == -1.0:
            body += _varint(z | 1)
        else:
            body += _varint(z | 2) + struct.pack("<f", v)
    return struct.pack("<Q", len(body)) + bytes(body)


def read_vw_section(data: bytes, pos: int, seed: int) -> np.ndarray:
    """:func:`vw_section` read back from a VW model file at ``pos`` (to its end): the
    support vectors as a :meth:`State.dump`, with ``seed`` (the header's ``--random_seed``)
    as the generator's state.  ValueError when the bytes are not VW's ksvm model."""
    import struct

    def take(fmt: str) -> tuple:
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise ValueError("its ksvm model is cut short")
        out = struct.unpack_from(fmt, data, pos)
        pos += size
        return out

    (n,) = take("<Q")
    if n > len(data):
        raise ValueError("its count of support vectors is wrong")
    out = [np.array([float(n), float(seed & 0xFFFFFFFF), float(seed >> 32)])]
    for _ in range(n):
        label, weight, initial, tag_len = take("<fffI")
        if tag_len > len(data) - pos:
            raise ValueError("a support vector's tag is cut short")
        tag = data[pos : pos + tag_len]
        pos += tag_len
        counter, _offset, _gw, nfeat, sq, _index, storage = take("<QQfQfBQ")
        end = pos + storage
        if end > len(data):
            raise ValueError("a support vector's features are cut short")
        idx, val, last = [], [], 0
        while pos < end:
            z, shift = 0, 0
            while True:
                if pos >= end or shift > 63:
                    raise ValueError("a support vector's features are malformed")
                b = data[pos]
                pos += 1
                z |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80:
                    break
            v = 1.0
            if z & 1:
                v = -1.0
            elif z & 2:
                if pos + 4 > end:
                    raise ValueError("a support vector's features are cut short")
                (v,) = struct.unpack_from("<f", data, pos)
                pos += 4
            d = z >> 2
            last += (d >> 1) ^ -(d & 1)
            idx.append(last)
            val.append(v)
        out.append(np.array([label, weight, initial, sq, float(nfeat), float(counter),
                             float(len(idx)), float(tag_len)]))  # fmt: skip
        out += [np.array(idx, dtype=np.float64), np.array(val, dtype=np.float64),
                np.frombuffer(tag, dtype=np.uint8).astype(np.float64)]
    alpha = take(f"<{n}f")
    delta = take(f"<{n}f")
    if pos != len(data):
        raise ValueError("bytes after its ksvm model")
    out += [np.array(alpha, dtype=np.float64), np.array(delta, dtype=np.float64)]
    saved = np.concatenate(out)
    check_dump(saved)
    return saved
