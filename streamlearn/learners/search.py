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
from streamlearn.system.jit import jit

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
