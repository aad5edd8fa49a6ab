"""Learning to search's base learner (VW's ``--search``): cost-sensitive one-against-all
over gd, one decision at a time.

VW's ``search.cc`` asks its base learner (``csoaa`` over ``scorer`` and ``gd``) for one
prediction or one cost-sensitive update per call, on an example whose features the search
has just extended (the conditioning features of the decisions before, the neighbours'
features).  These two kernels are that learner: ``reductions/search.py`` is the search.

* **Slots** as :mod:`streamlearn.learners.csoaa`'s: sub-model ``model`` (policy · K +
  class − 1) of feature slot ``h`` at ``(h·s + model) mod 2^b``, ``s`` = the policies'
  classes rounded up to a power of 2 (VW's feature width).
* :func:`predict`: the classes listed (every class, or the allowed ones) scored, not
  clipped (VW's ``multipredict`` from csoaa does not finalize its predictions), the
  smallest wins, the lower class on ties.
* :func:`learn`: each listed class, in order, scored and learned toward its cost (a cost
  ``FLT_MAX`` is scored only), the range widened by the cost first, gd's zero-loss gate
  and its per-model normalizer sums (``oaa.G_CLASS + 2·model``), as
  :func:`streamlearn.learners.csoaa.train_gd` learns one labeled row.  The caller keeps
  gd's clock (``G_T``: VW's ``sd->t``, which the search advances once per sequence).

Both return (the predicted class, its score: VW's ``partial_prediction``) and leave each
listed class's score in ``scores``.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.csoaa import score
from streamlearn.learners.losses import loss32
from streamlearn.learners.oaa import G_CLASS, clipped, prediction_range, widen
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
FLT_MAX = F32(3.4028234663852886e38)


@jit
def predict(table, gstate, params, idx, val, step, model0, classes, scores):
    """The class csoaa predicts for the example ``idx``/``val`` under the sub-models
    ``model0 + class − 1`` (see the module)."""
    mask = np.uint64(table.shape[0] - 1)
    truncate = F32(params[gd.P_L1]) > F32(0.0)
    grav = F32(gstate[gd.G_GRAVITY])
    scale = F32(gstate[gd.G_CONTRACTION])
    n = idx.shape[0]
    pred = 1
    best = FLT_MAX
    for j in range(classes.shape[0]):
        c = classes[j]
        p = score(table, idx, val, 0, n, 0.0, step, model0 + c - 1, mask, truncate, grav, scale)
        scores[j] = p
        if p < best or (p == best and c < pred):
            best = p
            pred = c
    return pred, best


@jit
def learn(table, gstate, params, loss_id, idx, val, step, model0, classes, costs, slots, scores):
    """csoaa's update on the example ``idx``/``val`` toward ``costs`` (see the module)."""
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = np.uint64(table.shape[0] - 1)
    n = idx.shape[0]
    pred = 1
    best = FLT_MAX
    prediction_range(gstate, params, loss_id)  # (VW's range is there before a cost widens it)
    for j in range(classes.shape[0]):
        c = classes[j]
        x = F32(costs[j])
        model = model0 + c - 1
        if x != FLT_MAX:
            widen(gstate, params, np.float64(x))
        p = score(table, idx, val, 0, n, 0.0, step, model, mask, truncate,
                  F32(gstate[gd.G_GRAVITY]), F32(gstate[gd.G_CONTRACTION]))  # fmt: skip
        scores[j] = p
        if p < best or (p == best and c < pred):
            best = p
            pred = c
        if x == FLT_MAX:
            continue
        rlo, rhi = prediction_range(gstate, params, loss_id)
        pc = clipped(p, rlo, rhi)
        if not loss32(loss_id, pc, x) > F32(0.0):
            continue
        for t in range(n):
            slots[t] = (np.uint64(idx[t]) * np.uint64(step) + np.uint64(model)) & mask
        gd.step(table, gstate, G_CLASS + 2 * model, G_CLASS + 2 * model + 1, slots, val, 0, n,
                pc, x, F32(1.0), loss_id, rule)  # fmt: skip
        if gstate[gd.G_CONTRACTION] < 1e-9 or gstate[gd.G_GRAVITY] > 1e3:
            gd.rebase(table, gstate, params)
    return pred, best


# --------------------------------------------------------------------------- sequences
# VW's sequence task whole (reductions/search_tasks.Sequence), one call per sequence: the
# test pass's decisions, and the training examples of the learning runs whose costs
# reductions/search_engine.OracleRollouts knows.  Token i's features are rows
# indptr[i]:indptr[i + 1]; its conditioning features (VW's add_example_conditioning) on the
# decisions of the ``hist`` tokens before it are appended as search_engine._conditioned
# makes them.

U64 = np.uint64
M32 = np.uint64(0xFFFFFFFF)


@jit_inline
def conditioned(indices, values, lo, hi, acts, hist, i, bias_n, quad_n, fv, bmask, out_i,
                out_v):  # fmt: skip
    """Token ``i``'s features then its conditioning features on ``acts`` (the decisions of
    tokens i-1, i-2, ...: VW's tags i, i-1, ... named 'p', 'q', ...; tag 0 is action 0);
    returns their count."""
    n = 0
    for t in range(lo, hi):
        out_i[n] = indices[t]
        out_v[n] = values[t]
        n += 1
    cnt = 0
    for j in range(hist):
        if j > i:
            break
        cnt += 1
    top = bias_n if bias_n > quad_n else quad_n
    start = n
    for c in range(cnt):
        fid = U64(71933)
        for g in range(top):
            if c + g >= cnt:
                break
            tag = i - (c + g)
            a = U64(0) if tag < 1 else U64(acts[tag - 1])
            name = U64(112 + c + g)  # 'p' + position
            a32 = ((a & M32) + U64(349101)) & M32
            fid = fid * U64(328901) + U64(71933) * (a32 * (name + U64(38490137)))
            base = fid * U64(27942141)
            if g < bias_n:
                out_i[n] = (base + U64(4398201)) & bmask
                out_v[n] = fv
                n += 1
            if g < quad_n:
                for t in range(lo, hi):
                    out_i[n] = (base + U64(indices[t])) & bmask
                    out_v[n] = F32(fv * F32(values[t]))
                    n += 1
    any_nonzero = False
    for t in range(start, n):
        if out_v[t] != 0.0:
            any_nonzero = True
    return n if any_nonzero else start


@jit
def sequence_test(table, gstate, params, indptr, indices, values, k, step, model0, hist,
                  bias_n, quad_n, fv, bmask, preds, nfeat):  # fmt: skip
    """The learned policy's decisions over one sequence (each conditioned on those before):
    ``preds[i]``, and the features each saw ``nfeat[i]``."""
    mask = np.uint64(table.shape[0] - 1)
    truncate = F32(params[gd.P_L1]) > F32(0.0)
    grav = F32(gstate[gd.G_GRAVITY])
    scale = F32(gstate[gd.G_CONTRACTION])
    top = bias_n if bias_n > quad_n else quad_n
    most = 0
    for i in range(indptr.shape[0] - 1):
        most = max(most, indptr[i + 1] - indptr[i])
    room = most + hist * top * (1 + most) + 1
    fi = np.empty(room, dtype=np.uint64)
    fv_ = np.empty(room, dtype=np.float64)
    for i in range(indptr.shape[0] - 1):
        n = conditioned(indices, values, indptr[i], indptr[i + 1], preds, hist, i, bias_n,
                        quad_n, fv, bmask, fi, fv_)  # fmt: skip
        best = FLT_MAX
        pred = 1
        for c in range(1, k + 1):
            p = score(table, fi, fv_, 0, n, 0.0, step, model0 + c - 1, mask, truncate, grav,
                      scale)  # fmt: skip
            if p < best:
                best = p
                pred = c
        preds[i] = pred
        nfeat[i] = n


@jit
def sequence_learn(table, gstate, params, loss_id, indptr, indices, values, order, traj, costs,
                   k, step, model0, hist, bias_n, quad_n, fv, bmask):  # fmt: skip
    """The training examples of one sequence's learning runs, in ``order``: token t
    conditioned on the roll-in's decisions ``traj``, each action toward its cost
    ``costs[t]`` less the least (csoaa over gd: :func:`learn`)."""
    top = bias_n if bias_n > quad_n else quad_n
    most = 0
    for i in range(indptr.shape[0] - 1):
        most = max(most, indptr[i + 1] - indptr[i])
    room = most + hist * top * (1 + most) + 1
    fi = np.empty(room, dtype=np.uint64)
    fv_ = np.empty(room, dtype=np.float64)
    slots = np.empty(room, dtype=np.uint32)
    classes = np.arange(1, k + 1)
    row = np.empty(k, dtype=np.float32)
    scores = np.empty(k, dtype=np.float32)
    for o in range(order.shape[0]):
        t = order[o]
        n = conditioned(indices, values, indptr[t], indptr[t + 1], traj, hist, t, bias_n,
                        quad_n, fv, bmask, fi, fv_)  # fmt: skip
        low = FLT_MAX
        for c in range(k):
            if costs[t, c] < low:
                low = costs[t, c]
        for c in range(k):
            row[c] = F32(costs[t, c] - low)
        learn(table, gstate, params, loss_id, fi[:n], fv_[:n], step, model0, classes, row,
              slots, scores)  # fmt: skip
