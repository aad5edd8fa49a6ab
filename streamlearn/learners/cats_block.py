"""VW's ``--cats K`` and ``--cats_pdf K`` over a whole block of ``ca`` examples in one call
(:func:`play_block`), on the tree of :mod:`streamlearn.learners.cats_tree`.

Per usable row, in order (VW's stack ``cats`` → ``sample_pdf`` → ``cats_pdf`` →
``cb_explore_pdf`` → ``pmf_to_pdf`` → ``get_pmf`` → ``cats_tree``):

1. the tree's action (1-based leaf, :func:`~streamlearn.learners.cats_tree.tree_predict`),
   its pdf (:func:`~streamlearn.learners.cats_tree.pmf_to_pdf`, then mixed with the uniform
   density by ``--epsilon``, :func:`~streamlearn.learners.cats_tree.explore_pdf`);
2. ``--cats``: an action drawn from that pdf with VW's generator ``rng``
   (:func:`~streamlearn.learners.cats_tree.sample_pdf`), its loss :func:`cats_loss`;
   ``--cats_pdf``: the loss is the logged cost;
3. unless the label is a test label or the run only scores: the tree learns the label
   (:func:`learn_label`, VW's ``pmf_to_pdf::learn``);
4. ``gstate[G_N]`` counts the example (VW's ``t``: every line).

Everything is float32 as in VW; the driver (``run/cats_pdf.py``) formats what the kernel
leaves per row: the loss, the tree's leaf, the drawn action and its density.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners.base import G_N
from streamlearn.learners.cats_tree import (
    explore_pdf,
    pmf_to_pdf,
    sample_pdf,
    tree_learn,
    tree_predict,
)
from streamlearn.learners.gd import rule_of
from streamlearn.system.jit import fdiv, jit, jit_inline

F32 = np.float32

LO, HI, BW, EPS = range(4)
"""The float32 set-up of a run (``shape``): the action range, the bandwidth, epsilon."""


@jit_inline
def _segment(action, k, lo_v, unit):
    """The leaf (0-based, below ``k``) whose interval holds ``action``, as VW's
    ``floor((action - min) / unit)`` cut to K-1."""
    ac = F32(F32(action - lo_v) / unit)
    return min(k - 1, int(math.floor(ac)))


@jit_inline
def cats_loss(action, k, lo_v, hi_v, bw, lab_action, cost, pdf):
    """VW's ``cats::get_loss`` of the drawn ``action`` against the logged label: ``cost /
    (pdf · b')`` when the logged action is within ``bw`` of the drawn action's leaf centre
    (``b'`` the bandwidth cut to the range), else 0 (float32; a density of 0: inf)."""
    unit = F32(F32(hi_v - lo_v) / F32(k))
    seg = _segment(action, k, lo_v, unit)
    centre = F32(F32(lo_v + F32(F32(seg) * unit)) + F32(unit / F32(2.0)))
    if F32(lab_action - centre) <= bw and F32(centre - lab_action) <= bw:
        actual_b = F32(min(hi_v, F32(centre + bw)) - max(lo_v, F32(centre - bw)))
        return fdiv(F32(cost), F32(F32(pdf) * actual_b))
    return F32(0.0)


@jit_inline
def label_leaves(action, pdf, k, lo_v, hi_v, tree_bw):
    """VW's ``pmf_to_pdf::learn``: the leaves (1-based, first and last) within the tree
    bandwidth of the logged action's leaf, and the probability the tree learns with."""
    rng = F32(hi_v - lo_v)
    unit = F32(rng / F32(k))
    seg = _segment(action, k, lo_v, unit)
    if not F32(lo_v + F32(F32(seg) * unit)) <= action:
        seg -= 1
    if not action < F32(lo_v + F32(F32(seg + 1) * unit)):
        seg += 1
    first = max(0, seg - tree_bw)
    last = min(k - 1, seg + tree_bw)
    width = 1 if tree_bw == 0 else 2 * tree_bw
    prob = F32(F32(F32(pdf * F32(width)) * rng) / F32(k))
    return first + 1, last + 1, prob


@jit
def play_block(table, gstate, params, loss_id, nodes, depth, counts, width, small_draw, indptr,
               indices, values, rows, action, cost, pdf, given, test, k, tree_bw, shape,
               sampled, learning, rng, loss, leaf, drawn, density):  # fmt: skip
    """Play (and learn) the usable ``rows`` of a block in order (see the module).

    ``action``/``cost``/``pdf``/``given``/``test``: each row's logged label
    (:class:`~streamlearn.io.calabels.CaLabels`); ``shape``: :data:`LO` ...; ``sampled``:
    ``--cats`` (else ``--cats_pdf``); ``learning``: not ``-t``.  Out, per played row ``e``:
    ``loss[e]``, the tree's leaf ``leaf[e]`` (1-based), and under ``--cats`` the drawn
    action ``drawn[e]`` and its density ``density[e]``.
    """
    rule = rule_of(params)  # (float32 constants: a tuple from Python would be float64)
    truncate = rule[9] > F32(0.0)
    lo_v, hi_v, bw, eps = shape[LO], shape[HI], shape[BW], shape[EPS]
    lims = np.zeros(8, dtype=np.float32)
    probs = np.zeros(8, dtype=np.float32)
    slots = np.empty(indices.shape[0], dtype=np.uint32)
    for e in range(rows.shape[0]):
        r = rows[e]
        lo = indptr[r]
        hi = indptr[r + 1]
        a = tree_predict(table, gstate, params, loss_id, indices, values, lo, hi, width,
                         truncate, nodes)  # fmt: skip
        leaf[e] = a
        m = pmf_to_pdf(a - 1, k, lo_v, hi_v, bw, lims, probs)
        explore_pdf(probs, m, eps, lo_v, hi_v)
        lab_a = F32(action[r])
        lab_c = F32(cost[r])
        lab_p = F32(pdf[r])
        if sampled:
            act, dens = sample_pdf(rng, lims, probs, m)
            drawn[e] = act
            density[e] = dens
            loss[e] = 0.0
            if given[r]:
                loss[e] = cats_loss(F32(act), k, lo_v, hi_v, bw, lab_a, lab_c, lab_p)
        else:
            loss[e] = cost[r] if given[r] else 0.0
        if learning and not test[r]:
            first, last, prob = label_leaves(lab_a, lab_p, k, lo_v, hi_v, tree_bw)
            tree_learn(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi,
                       width, truncate, nodes, depth, counts, first, last, lab_c, prob,
                       small_draw)  # fmt: skip
        gstate[G_N] += 1.0
