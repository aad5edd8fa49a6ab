"""Error-correcting tournament (VW's ``--ect K --error E``): K classes as a tree of binary
problems over gd, in one table.

As VW's ``reductions/ect.cc`` (Beygelzimer, Langford & Ravikumar 2009, "Error-Correcting
Tournaments") over its scorer and ``gd``:

* **Circuit** (:func:`circuit`, VW's ``create_circuit``).  E + 1 single-elimination
  tournaments: the classes are nodes 0..K-1; each round pairs the nodes of tournament
  ``i`` two by two into a new node (a binary problem), whose winner stays in ``i`` and
  whose loser drops to ``i + 1`` (or is eliminated from the last); a tournament's last
  pair is its final, whose winner also moves on.  A node's problem is its number less K;
  the ``2^h - 1`` problems of the finals' own binary tree (``h`` the bits of E) come after
  the ``(K - 1)(E + 1)`` of the circuit.
* **Slots.** Each feature takes ``s`` consecutive slots, ``s`` = ``(K - 1)(E + 1) + E``
  rounded up to a power of 2 (VW's feature width): problem ``c`` of feature slot ``h`` is
  at ``(h·s + c) mod 2^b``, as :mod:`streamlearn.learners.oaa` lays out its classes.  Each
  problem keeps its own normalizer sums (VW's ``gd_per_model_states``).
* **Prediction.** Down the finals' tree from its top bit (a bit ``b`` asked only while the
  winner so far with ``b`` set is at most E), then from that tournament's final down the
  circuit to a class: at each node the problem's score (gd's, clipped to the range before
  the example's labels) above 0 goes right, else left.  The class is 1..K; its progressive
  loss the 0/1 error.
* **Learning** a labeled example (label 1..K; any other is predicted and counted but not
  learned, as VW warns), with importance a: from the label's first node up, each node
  learns -1 when the label's side is its left, else +1, with importance a (the scorer
  widens the range to the label first), then predicts again (VW learns once more with
  weight 0): the label won when that score's sign is its label's.  It goes on to the
  node's winner or loser, recording at each tournament's final (or elimination) whether it
  won, until it leaves the circuit.  Then the finals' tree, level ``i`` = 0..h-1, pairs the
  records as VW's loop does (it halves the record inside its loop over pairs, so with more
  than two records only the first pair is met per level); a pair that differs is a query:
  its problem learns -1 when the left won, else +1, with importance ``2^(h-i-1)``, and its
  score before the step decides.  That importance is then the example's own, as VW leaves
  it in the example: its weight in the progressive statistics and in gd's clock.
* **Rates.** gd's clock (``gstate[G_T]``, VW's ``t``) counts the examples' weights as the
  statistics see them; each step reads it plus the weight of its own call (VW's
  ``get_scale``).

Only the identity link (VW's boundary 0; ``--link logistic``'s 0.5 is refused).
``preds`` is float64[n, K + 1]: column 0 the class, the others 0 (a tournament has no
scores of the classes); NaN rows for malformed lines.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.base import (
    G_N,
    G_T,
    GSTATE_SIZE,
    P_LEARN,
    P_PROGRESS,
    P_T0,
    LearnerSpec,
    begin_example,
    row_span,
)
from streamlearn.learners.losses import loss32
from streamlearn.learners.oaa import (
    G_CLASS,
    account_class,
    clipped,
    is_label,
    prediction_range,
    widen,
)
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
U64 = np.uint64

WINNER, LOSER, LEFT, RIGHT, LAST = range(5)
"""The circuit's columns, one row per node (VW's ``direction``): where its winner and its
loser go (0: out of the circuit), its two entrants, and whether it is a tournament's final."""
C_K, C_ERRORS, C_LAST_PAIR, C_HEIGHT, C_STRIDE = range(5)
"""The kernel's numbers (``conf``): K, E, the first problem of the finals' tree, its height,
the slots of a feature."""


def width(k: int, errors: int) -> int:
    """The binary problems of K classes and E errors (VW's feature width of ``--ect``)."""
    return (k - 1) * (errors + 1) + errors


def circuit(k: int, errors: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """VW's ``create_circuit``: the nodes (int64[n, 5]: :data:`WINNER` ...), the finals'
    nodes (one per tournament, in order), and ``conf`` (:data:`C_K` ...)."""
    elim = errors + 1
    tour = [0] * k
    nodes = [[0, 0, 0, 0, 0] for _ in range(k)]
    finals: list[int] = []
    level: list[list[int]] = [list(range(k))] + [[] for _ in range(elim - 1)]
    while k > 1 and any(level):
        new: list[list[int]] = [[] for _ in level]
        for i, t in enumerate(level):
            for j in range(len(t) // 2):
                me = len(nodes)
                a, b = t[2 * j], t[2 * j + 1]
                nodes.append([0, 0, a, b, 0])
                tour.append(i)
                for child in (a, b):
                    nodes[child][WINNER if tour[child] == i else LOSER] = me
                if nodes[a][LAST]:
                    nodes[a][WINNER] = me
                if len(t) == 2 and (i == 0 or not level[i - 1]):
                    nodes[me][LAST] = 1
                    if i + 1 < len(level):
                        new[i + 1].append(me)
                    else:
                        nodes[me][WINNER] = 0  # (the winner of the last tournament)
                    finals.append(me)
                else:
                    new[i].append(me)
                if i + 1 < len(level):
                    new[i + 1].append(me)
                else:
                    nodes[me][LOSER] = 0  # (a loser of the last tournament: eliminated)
            if len(t) % 2 == 1:
                new[i].append(t[-1])
        level = new
    height = errors.bit_length() if k > 1 else 0
    stride = 1 << max(width(k, errors) - 1, 0).bit_length()
    conf = np.array([k, errors, (k - 1) * elim, height, stride], dtype=np.int64)
    return np.array(nodes, dtype=np.int64), np.array(finals or [0], dtype=np.int64), conf


@jit_inline
def _score(table, gstate, indices, values, lo, hi, c, step, mask, base, truncate, rlo, rhi):
    """Problem ``c``'s score: gd's prediction (through its l1 gravity, times its l2
    contraction), clipped to ``[rlo, rhi]``."""
    grav = F32(gstate[gd.G_GRAVITY])
    p = F32(base)
    for t in range(lo, hi):
        j = (U64(indices[t]) * U64(step) + U64(c)) & mask
        w = F32(table[j, 0])
        if truncate:
            w = gd.trunc(w, grav)
        p += w * F32(values[t])
    return clipped(p * F32(gstate[gd.G_CONTRACTION]), rlo, rhi)


@jit_inline
def _learn(table, gstate, params, loss_id, indices, values, lo, hi, c, y, w, t, step, mask,
           base, truncate, rule, slots):  # fmt: skip
    """VW's scorer and gd learning problem ``c`` toward ``y`` with importance ``w``: the
    range widened to ``y``, the score clipped to it, gd's step from it when ``w`` > 0 and
    its loss > 0 (gd's clock at ``t`` + ``w``); returns that score (before the step)."""
    widen(gstate, params, y)
    rlo, rhi = prediction_range(gstate, params, loss_id)
    p = _score(table, gstate, indices, values, lo, hi, c, step, mask, base, truncate, rlo, rhi)
    if w > 0.0 and loss32(loss_id, p, F32(y)) > F32(0.0):
        gstate[G_T] = t + w
        for k in range(lo, hi):
            slots[k] = (U64(indices[k]) * U64(step) + U64(c)) & mask
        gd.step(table, gstate, G_CLASS + 2 * c, G_CLASS + 2 * c + 1, slots, values, lo, hi, p,
                F32(y), F32(w), loss_id, rule)  # fmt: skip
        if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
            gd.rebase(table, gstate, params)
    return p


@jit_inline
def predict_class(table, gstate, params, loss_id, indices, values, lo, hi, base, nodes,
                  finals, conf, step, mask, truncate):  # fmt: skip
    """VW's ``ect_predict``: the class 1..K (see the module)."""
    k = conf[C_K]
    if k == 1:
        return 1
    rlo, rhi = prediction_range(gstate, params, loss_id)
    errors = conf[C_ERRORS]
    winner = 0
    for i in range(conf[C_HEIGHT] - 1, -1, -1):
        bit = winner | (1 << i)
        if bit <= errors:
            c = conf[C_LAST_PAIR] + bit - 1
            if _score(table, gstate, indices, values, lo, hi, c, step, mask, base, truncate,
                      rlo, rhi) > F32(0.0):  # fmt: skip
                winner = bit
    node = finals[winner]
    while node >= k:
        p = _score(table, gstate, indices, values, lo, hi, node - k, step, mask, base,
                   truncate, rlo, rhi)  # fmt: skip
        node = nodes[node, RIGHT] if p > F32(0.0) else nodes[node, LEFT]
    return node + 1


@jit_inline
def train_class(table, gstate, params, loss_id, indices, values, lo, hi, base, label, a, t,
                nodes, conf, step, mask, truncate, rule, slots, won):  # fmt: skip
    """VW's ``ect_train`` of ``label`` (1..K) with importance ``a``, gd's clock at ``t``
    before the example: returns the example's importance as VW leaves it (see the module)."""
    k = conf[C_K]
    node = nodes[label - 1, WINNER]
    left = nodes[node, LEFT] == label - 1
    n = 0
    while True:
        y = -1.0 if left else 1.0
        c = node - k
        _learn(table, gstate, params, loss_id, indices, values, lo, hi, c, y, a, t, step, mask,
               base, truncate, rule, slots)  # fmt: skip
        p = _learn(table, gstate, params, loss_id, indices, values, lo, hi, c, y, 0.0, t, step,
                   mask, base, truncate, rule, slots)  # fmt: skip
        final = nodes[node, LAST] != 0
        if F64(p) * y > 0.0:
            if final:
                won[n] = 1
                n += 1
            else:
                left = nodes[nodes[node, WINNER], LEFT] == node
            node = nodes[node, WINNER]
        else:
            if final:
                won[n] = 0
                n += 1
            else:
                left = nodes[nodes[node, LOSER], LEFT] == node
                if nodes[node, LOSER] == 0:
                    won[n] = 0
                    n += 1
            node = nodes[node, LOSER]
        if node == 0:
            break
    height = conf[C_HEIGHT]
    for i in range(height):
        j = 0
        while j < n // 2:  # (VW halves the record inside this loop)
            lw, rw = won[2 * j], won[2 * j + 1]
            if lw == rw:
                won[j] = lw
            else:
                a = F64(1 << (height - i - 1))
                c = conf[C_LAST_PAIR] + j * (1 << (i + 1)) + (1 << i) - 1
                p = _learn(table, gstate, params, loss_id, indices, values, lo, hi, c,
                           -1.0 if lw else 1.0, a, t, step, mask, base, truncate, rule,
                           slots)  # fmt: skip
                won[j] = rw if p > F32(0.0) else lw
            if n % 2 == 1:
                won[n // 2] = won[n - 1]
            n = (n + 1) // 2
            j += 1
    return a


@jit
def train_gd(
    table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases, status,
    stats, rows, preds, nodes, finals, conf,
):
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    k = conf[C_K]
    step = conf[C_STRIDE]
    mask = U64(table.shape[0] - 1)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    won = np.zeros(conf[C_ERRORS] + 2, dtype=np.int64)
    for i in range(indptr.shape[0] - 1):
        y = labels[i]
        if status[i] != 0 or (y == y and not is_label(y, k)):
            preds[i, :] = np.nan
            continue
        lo, hi = row_span(indptr, i)
        a = weights[i]
        labeled, holdout = begin_example(stats, params, y)
        pred = predict_class(table, gstate, params, loss_id, indices, values, lo, hi, bases[i],
                             nodes, finals, conf, step, mask, truncate)  # fmt: skip
        preds[i, :] = 0.0
        preds[i, 0] = F64(pred)
        shown = a
        if labeled and not holdout and params[P_LEARN] != 0.0:
            t = gstate[G_T]
            if k > 1 and 1.0 <= y <= F64(k):
                shown = train_class(table, gstate, params, loss_id, indices, values, lo, hi,
                                    bases[i], int(y), a, t, nodes, conf, step, mask, truncate,
                                    rule, slots, won)  # fmt: skip
            gstate[G_T] = t + shown
            if shown != 0.0:
                gstate[G_N] += 1.0
        account_class(stats, rows, F64(pred), y, shown, hi - lo, labeled, holdout, np.nan, 0.0,
                      params[P_PROGRESS])  # fmt: skip


def gd_gstate(params: np.ndarray, problems: int) -> np.ndarray:
    """gd's global state and the normalizer sums of each problem (with ``--initial-t`` t0 > 0
    problem 0's start as if t0 examples of norm 1 had been seen, as VW's)."""
    gstate = np.zeros(GSTATE_SIZE + 2 * max(problems, 1))
    gstate[gd.G_CONTRACTION] = 1.0
    t0 = F64(np.float32(params[P_T0]))
    if t0 > 0.0:
        gstate[G_CLASS] = t0
        gstate[G_CLASS + 1] = t0
    return gstate


class Entry:
    """The kernel entry of a tournament of K classes and E errors: its circuit, built once."""

    wants_ns = False

    def __init__(self, k: int, errors: int) -> None:
        self.k, self.errors = k, errors
        self.nodes, self.finals, self.conf = circuit(k, errors)

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        train_gd(table, gstate, params, loss_id, indptr, indices, values, labels, weights, bases,
                 status, stats, rows, preds, self.nodes, self.finals, self.conf)  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        return gd_gstate(params, width(self.k, self.errors))


def spec(k: int, errors: int) -> LearnerSpec:
    """The tournament of ``k`` classes correcting ``errors`` errors, over gd."""
    entry = Entry(k, errors)
    return LearnerSpec(name="ect_gd", ncols=4, fresh=(0.0, 0.0, 0.0, 0.0), train_batch=entry,
                       current_weights=gd.current_weights, rebase=gd.rebase,
                       init_gstate=entry.init_gstate, dtype=np.float32, stored_cols=3)  # fmt: skip


def _params_spec() -> LearnerSpec:
    """A tournament as :func:`streamlearn.learners.spec_by_name` finds it (a model's table
    read back; the run's own spec comes from its configuration)."""
    return spec(2, 0)


SPECS = (_params_spec(),)


def resolve(config) -> LearnerSpec:  # noqa: ANN001 - a TrainConfig
    """The tournament a configuration asks for (``oaa`` K classes, ``ect_errors`` E)."""
    if config.algo != "gd":
        raise ValueError(f"--ect runs with --algo gd, not {config.algo}")
    return spec(config.oaa, config.ect_errors)
