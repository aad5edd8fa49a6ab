"""Matrix factorization by gradient descent (VW's ``--rank k``, ``reductions/gd_mf.cc``).

VW's base learner for ``-q``-crossed namespaces in place of gd: each pair ``ab`` of the
run's ``-q`` gives the example the term ``Σ_n (Σ_{i∈a} x_i l_{i,n}) (Σ_{j∈b} x_j r_{j,n})``,
rank ``k``, beside the linear one, learned by plain stochastic gradient descent, O(k·nnz)
per example.

* **Slots.** Feature ``h`` owns row ``h mod 2^b`` of the table: its linear weight (column
  0), its left latent weights ``l_n`` (columns 1..k) and its right ones ``r_n`` (k+1..2k),
  VW's ``w[h·s + c]`` (``s`` = 2k + 1 rounded up to a power of 2).  Column 2k + 1 says
  the row holds its initial values: VW starts every weight at ``0.1·merand48`` of a chain
  seeded by its index (``h·s``, then each value's draw advances it, plus one), before any
  example; here a row is drawn the first time an example reads it (the same values), so a
  run costs O(nnz), not O(2^b), and a model file keeps the rows drawn.
* **Prediction** (float32, VW's order): the label's initial value, plus the linear sum
  over every feature, plus, for each pair whose two namespaces are present, each ``n``'s
  product of the two sides; clipped to the labels' range, widened by every labeled
  example, held out or not (VW's ``set_minmax`` in the predict).
* **Update** of a labeled example that is learned: ``η_t = η / (t + a)^p / 3 · a`` (``t``:
  the initial t plus every example's weight so far), ``u`` = the loss's ``get_update`` at
  ``η_t`` (one unit per update), ``ρ = η_t·λ₂``; each weight ``w += u·x − ρ·w`` in the
  features' order: the linear ones by ``u``, the left ones of pair q by ``u·(x·r_n)`` and
  the right ones by ``u·(x·l_n)``, both sides' sums taken before the update.  **VW's
  indexing kept**: every pair's update reads the sums of the first pair present (VW
  indexes its stored sums without the pair's offset); with one pair, as in VW's tests, it
  is exact.

``pairs`` is int64[p, 2] (the namespace bytes of each ``-q`` pair, in VW's order),
``conf`` float64[2]: the initial t and ``η`` times ``t0^p`` (VW's rate at set-up), the
batch's namespace bytes ``ns``.  ``gstate[G_T]``: the weight of the examples seen.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.base import (
    G_T,
    GSTATE_SIZE,
    P_BINARY,
    P_L2,
    P_LEARN,
    P_LOGISTIC_MAX,
    P_LOGISTIC_MIN,
    P_POWER_T,
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
from streamlearn.learners.losses import loss32, update32
from streamlearn.system.jit import INTERPRETED, jit, jit_inline

if INTERPRETED:  # (numpy's float32 power is not libm's on every CPU: VW's powf is)
    from streamlearn.system.libm import powf as powf32
else:

    @jit_inline
    def powf32(x, p):
        return x**p  # (compiled: libm's powf)

F32 = np.float32
F64 = np.float64
U64 = np.uint64


def stride_shift(rank: int) -> int:
    """VW's stride shift of ``--rank k``: ``ceil(log2(2k + 1))``."""
    return (2 * rank).bit_length()


@jit_inline
def draw(table, row, ss):
    """Row ``row``'s initial values, as VW draws them (``0.1·merand48`` of a chain seeded by
    the row's first index, advanced by each draw and one more), unless drawn already."""
    k2 = table.shape[1] - 1
    if table[row, k2] != F32(0.0):
        return
    s = U64(row) << U64(ss)
    for c in range(k2):
        s = lcg_step(s)
        table[row, c] = F32(0.1) * state_float(s)
        s += U64(1)
    table[row, k2] = F32(1.0)


@jit
def draw_all(table, ss):
    """Every row's initial values (VW's model file keeps them all)."""
    for row in range(table.shape[0]):
        draw(table, row, ss)


@jit_inline
def _side(table, lo, hi, ns, slot, values, which, col):
    """Σ x·w[col] over the example's features of namespace ``which``."""
    p = F32(0.0)
    for t in range(lo, hi):
        if ns[t] == which:
            p += F32(values[t]) * table[slot[t], col]
    return p


@jit_inline
def _move(table, lo, hi, ns, slot, values, which, col, u, rho):
    """w[col] += u·x − ρ·w over the features of namespace ``which`` (-1: every feature)."""
    for t in range(lo, hi):
        if which < 0 or ns[t] == which:
            w = table[slot[t], col]
            table[slot[t], col] = w + (F32(u * F32(values[t])) - F32(rho * w))


@jit
def train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                status, stats, rows, preds, ns, pairs, conf, ss):  # fmt: skip
    """Predict, account and learn each example of the batch (see the module)."""
    k = (table.shape[1] - 2) // 2
    mask = U64(table.shape[0] - 1)
    tau = F32(params[P_QUANTILE_TAU])
    lmin, lmax = F32(params[P_LOGISTIC_MIN]), F32(params[P_LOGISTIC_MAX])
    binary = params[P_BINARY]
    power = F32(params[P_POWER_T])
    l2 = F32(params[P_L2])
    t0 = conf[0]
    eta = F32(conf[1])
    width = 0
    n = indptr.shape[0] - 1
    for i in range(n):
        width = max(width, indptr[i + 1] - indptr[i])
    slot = np.empty(max(width, 1), dtype=np.int64)
    scalars = np.zeros(2 * k + 1, dtype=np.float32)
    count = np.zeros(256, dtype=np.int64)
    for i in range(n):
        if status[i] != 0:
            preds[i] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        y = labels[i]
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        for t in range(lo, hi):
            r = np.int64(U64(indices[t]) & mask)
            draw(table, r, ss)
            slot[t - lo] = r
            count[ns[t]] += 1
        sl = slot[: hi - lo]
        sns = ns[lo:hi]
        sv = values[lo:hi]
        m = np.int64(hi - lo)
        linear = F32(0.0)
        for t in range(m):
            linear += F32(sv[t]) * table[sl[t], 0]
        p = F32(bases[i]) + linear
        nfeat = m
        stored = 0
        for q in range(pairs.shape[0]):
            ca, cb = count[pairs[q, 0]], count[pairs[q, 1]]
            nfeat += k * (ca + cb)  # (VW's count: the crosses' out, the latent products in)
            if ca == 0 or cb == 0:
                continue
            for c in range(1, k + 1):
                left = _side(table, 0, m, sns, sl, sv, pairs[q, 0], c)
                right = _side(table, 0, m, sns, sl, sv, pairs[q, 1], k + c)
                p += left * right
                if stored < 2 * k:  # (VW reads the first pair's sums only)
                    scalars[stored + 1] = left
                    scalars[stored + 2] = right
                    stored += 2
        write_raw(preds, indptr, i, F64(p))
        p = F32(clip(gstate, params, loss_id, F64(p), y, labeled))
        lv = loss32(loss_id, p, F32(y), tau, lmin, lmax) if labeled else F32(0.0)
        shown = F64(lv)
        if labeled and binary != 0.0:
            shown = binary_loss(F64(p) if binary == 1.0 else 1.0, y, shown)
        # (a labeled held-out example: its row's width, which VW's total leaves out again:
        # run/vwconsole.py's Tally counts held-out features from the rows)
        counted = m if labeled and holdout else nfeat
        add_scored(stats, rows, F64(p), y, a, counted, labeled, holdout, shown,
                   params[P_PROGRESS])  # fmt: skip
        preds[i] = F64(p)
        if labeled and not holdout and params[P_LEARN] != 0.0:
            fa = F32(a)
            eta_t = eta / powf32(F32(F32(t0 + gstate[G_T]) + fa), power) / F32(3.0) * fa
            u = F32(update32(loss_id, p, F32(y), eta_t, F32(1.0), tau, lmin, lmax))
            rho = eta_t * l2
            _move(table, 0, m, sns, sl, sv, -1, 0, u, rho)
            for q in range(pairs.shape[0]):
                if count[pairs[q, 0]] == 0 or count[pairs[q, 1]] == 0:
                    continue
                for c in range(1, k + 1):
                    _move(table, 0, m, sns, sl, sv, pairs[q, 0], c, u * scalars[2 * c], rho)
                for c in range(1, k + 1):
                    _move(table, 0, m, sns, sl, sv, pairs[q, 1], k + c, u * scalars[2 * c - 1],
                          rho)  # fmt: skip
        gstate[G_T] += a
        for t in range(lo, hi):
            count[ns[t]] = 0


@jit
def current_weights(table, gstate, params, slots, out):
    for j in range(slots.shape[0]):
        out[j] = table[slots[j], 0]


@jit
def rebase(table, gstate, params):
    return


def init_gstate(params: np.ndarray) -> np.ndarray:  # noqa: ARG001
    return np.zeros(GSTATE_SIZE)


def spec(rank: int) -> LearnerSpec:
    """The table of ``--rank k``: 2k + 1 weights a row, and the row's drawn mark."""
    cols = 2 * rank + 2
    return LearnerSpec(name=f"gd_mf{rank}", ncols=cols, fresh=(0.0,) * cols,
                       train_batch=train_batch, current_weights=current_weights, rebase=rebase,
                       init_gstate=init_gstate, dtype=np.float32, stored_cols=cols)  # fmt: skip


def random_state(seed: int, bits: int) -> int:
    """VW's generator after its set-up of a ``--rank`` run, the ``--random_seed`` its model
    files keep: VW fills its weights with random values first (``--random_weights``' 2^bits
    draws, :func:`streamlearn.learners.initial.random_state`), then gd_mf draws them again by
    index."""
    from streamlearn.learners.initial import random_state as after_draws

    return after_draws("random", bits, seed)


# ---------------------------------------------------------------------------
# VW's model file of it (model_vw.py calls these for a configuration naming --rank)

_KEPT = ("binary", "hash", "learning_rate", "link", "noconstant", "power_t", "quadratic",
         "rank")  # fmt: skip
"""The options VW's gd_mf model keeps, in VW's order (its names sorted), before
``--ignore``/``--keep`` and the generator's state."""


def vw_options(config, rank: int, link: str | None) -> str:  # noqa: ANN001 - a TrainConfig
    """The options string VW writes with a ``--rank`` model (a rate or power only when not
    the default, 10 and 0.5: VW writes those the command line gave, default or not)."""
    given = {
        "binary": [None] if config.binary else [],
        "hash": ["all"] if config.hash == "all" else [],
        "learning_rate": [f"{F32(config.learning_rate):.15g}"]
        if F32(config.learning_rate) != F32(10.0) else [],
        "link": [link] if link not in (None, "identity") else [],
        "noconstant": [] if config.constant else [None],
        "power_t": [] if F32(config.power_t) == F32(0.5) else [f"{F32(config.power_t):.15g}"],
        "quadratic": list(config.quadratic),
        "rank": [str(rank)],
    }
    words: list[str] = []
    for name in _KEPT:
        for value in given[name]:
            words += [f"--{name}"] + ([value] if value is not None else [])
    for name in ("ignore", "ignore_linear", "keep"):
        chars = "".join(sorted(set("".join(getattr(config, name)))))
        if chars:
            words += [f"--{name}", chars]
    words += ["--random_seed", str(random_state(config.seed, config.bits))]
    return " " + " ".join(words)


def vw_rows(slots: np.ndarray, state: np.ndarray, bits: int, rank: int) -> bytes:
    """VW's weights of a ``--rank`` model: every row ``i`` of ``2^bits``, as ``uint64 i``
    and its 2k + 1 floats; the rows no example read drawn as VW drew them."""
    cols = 2 * rank + 2
    table = np.zeros((1 << bits, cols), dtype=np.float32)
    table[slots] = state
    draw_all(table, stride_shift(rank))
    rows = np.empty(1 << bits, dtype=[("i", "<u8"), ("w", "<f4", (cols - 1,))])
    rows["i"] = np.arange(1 << bits, dtype=np.uint64)
    rows["w"] = table[:, : cols - 1]
    return rows.tobytes()


def read_vw_rows(data: bytes, start: int, bits: int, rank: int) -> np.ndarray:
    """The table of VW's rows from ``start`` (each ``uint64 i`` and 2k + 1 floats): every
    row read marked drawn; ValueError when they are not the table's 2^bits rows (VW's
    files hold every row: fewer is a file cut short, which VW would read as random
    weights) or one is out of the table."""
    k1 = 2 * rank + 1
    kind = np.dtype([("i", "<u8"), ("w", "<f4", (k1,))])
    size = len(data) - start
    if size % kind.itemsize:
        raise ValueError(f"its weights are cut short ({size} bytes, rows of {kind.itemsize})")
    rows = np.frombuffer(data, dtype=kind, offset=start)
    if rows.shape[0] != 1 << bits:  # (VW writes every row: fewer is a file cut short)
        raise ValueError(f"its weights are cut short ({rows.shape[0]} of {1 << bits} rows)")
    if int(rows["i"].max()) >= 1 << bits:
        raise ValueError(f"a row past the table of {bits} bits")
    table = np.zeros((1 << bits, k1 + 1), dtype=np.float32)
    idx = rows["i"].astype(np.int64)
    table[idx, :k1] = rows["w"]
    table[idx, k1] = 1.0
    return table


def rank_of(stack: tuple[str, ...]) -> int:
    """The rank ``--rank`` gives in a configuration's words (a model's are data: ValueError
    unless 1 to 255, what the reduction runs)."""
    i = stack.index("--rank") + 1
    text = stack[i] if i < len(stack) else ""
    if not text.isdigit() or not 1 <= int(text) <= 255:
        raise ValueError(f"--rank {text}: a rank of 1 to 255")
    return int(text)


def decode_vw(config, data: bytes, h) -> tuple:  # noqa: ANN001 - a TrainConfig, a vwmodel.Header
    """``(learner, slots, state, weights, gstate, stats)`` of VW's ``--rank`` model: every
    row of its table, no state beyond it (VW's gd_mf keeps none: its t starts again)."""
    from streamlearn.learners.base import G_CLIP, G_LABEL_MAX, G_LABEL_MIN, new_stats
    from streamlearn.system.memory import refuse_above

    rank = rank_of(config.stack)
    refuse_above((4 * (2 * rank + 2)) << config.bits, "the model's table",
                 "it is not a model sl can load")  # fmt: skip
    state = read_vw_rows(data, h.end, config.bits, rank)
    learner = spec(rank)
    gstate = learner.init_gstate(config.params())
    gstate[G_CLIP], gstate[G_LABEL_MIN], gstate[G_LABEL_MAX] = 1.0, h.min_label, h.max_label
    slots = np.arange(state.shape[0], dtype=np.uint32)
    return learner.name, slots, state, state[:, 0].astype(np.float64), gstate, new_stats()


def initial_row(row: int, ss: int, k1: int) -> list[float]:
    """Row ``row``'s first ``k1`` initial values (:func:`draw`'s, in Python: an audit shows
    a row before any example has read it)."""
    s, out = row << ss, []
    for _ in range(k1):
        s = (s * 0xEECE66D5DEECE66D + 2147483647) & (2**64 - 1)
        out.append(float(F32(0.1) * F32(((s >> 25) & 0x7FFFFF) / 2.0**23)))
        s += 1
    return out
