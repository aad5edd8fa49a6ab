"""VW's ``--cats_tree K`` (``reductions/cats_tree.cc``) and the continuous-action stack
built on it (``--cats``, ``--cats_pdf``, ``--cbify K --cbify_reg``): a binary tree over
K discrete actions whose internal nodes are binary learners of the base below (gd or
the ftrl family), each at its own offset of the table.

The tree (:func:`build_tree`, VW's ``min_depth_binary_tree``): nodes ``0 .. 2K-2`` stored
breadth first, node ``i < K-1`` internal with children ``2i+1`` and ``2i+2``; the leaves
are the K actions, leaf ``K-2+a`` for action ``a`` (1-based).  With a tree bandwidth
``h > 0`` two nodes go one way only (``right_only``: node ``K/h/2 - 1``, ``left_only``:
node ``K/h - 2``).

*Predict* (:func:`tree_predict`): from the root, each internal node scores the line at
offset ``node`` (VW's ``partial_prediction``, clipped to the label range, then the binary
reduction's sign: right when positive, else left); the leaf reached is the action.

*Learn* (:func:`tree_learn`, the CATS paper's tree training, Majzoubi et al. 2020, Alg. 2):
a logged label ``(cost c, probability p)`` over the actions ``a_lo .. a_hi`` (one or two
entries) gives the leaves ``c* = c/p`` between them and 0 elsewhere; level by level from
the deepest, each node ``v`` of the two on the path whose sibling ``w`` costs differently
teaches their parent to go toward the cheaper one, with importance ``|c_v - c_w|`` (below
1e-5: raised to 1e-5 or skipped by one fixed draw of VW's generator, :data:`SMALL_DRAW`),
then the parent's cost is the cheaper child's when the parent now goes that way, else the
dearer one's.  Each node learned is counted (VW's "Learn() count per node" line).

The pdf helpers (:func:`pmf_to_pdf`, :func:`explore_pdf`, :func:`sample_pdf`) follow VW's
``pmf_to_pdf.cc``, ``cb_explore_pdf.cc`` and ``explore::sample_pdf`` in float32.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.csoaa_ldf import clipped, learn_line, line_score
from streamlearn.learners.explore import merand48
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
LEFT_ID, RIGHT_ID, PARENT, LEFT_ONLY, RIGHT_ONLY, LEAF = range(6)
"""The columns of a tree's node array (int64)."""

WEIGHT_FLOOR = F32(0.00001)
"""VW's ``weight_th``: a node's importance below it is raised to it or the node skipped."""

SMALL_DRAW = np.array([918094374], dtype=np.uint32).view(np.float32)[0]
"""VW's draw for importances below :data:`WEIGHT_FLOOR` (5.51368e-06), the same at every
node and example: ``merand48`` once from ``uniform_hash`` of the 8 bytes of its seed
``uniform_hash("vw")`` (3097486185), times 1e-5 (``tests/learners/test_cats_tree.py``
derives it)."""


def tree_bandwidth(k: int, lo: float, hi: float, bw: float) -> int:
    """VW's ``pmf_to_pdf`` set-up: the tree bandwidth, in leaves, of the smoothing radius
    ``bw`` over K leaves of ``[lo, hi]`` (0 within half a leaf), in float32.

    >>> tree_bandwidth(4, 185.0, 23959.0, 3000.0), tree_bandwidth(4, 185.0, 23959.0, 2000.0)
    (1, 0)
    """
    import math

    lo, hi, bw = F32(lo), F32(hi), F32(bw)
    leaf = F32(F32(hi - lo) / F32(k))
    if bw <= F32(leaf / F32(2.0)):
        return 0
    if math.fmod(float(bw), float(leaf)) == 0.0:  # (fmod of floats is exact)
        return int(F32(bw / leaf))
    return int(F32(bw / leaf)) + 1


def build_tree(k: int, bandwidth: int) -> tuple[np.ndarray, int]:
    """VW's ``min_depth_binary_tree::build_tree`` of ``k`` leaves and tree bandwidth
    ``bandwidth``: the node array (:data:`LEFT_ID` ...) and the tree's depth.

    >>> nodes, depth = build_tree(4, 0)
    >>> nodes[:3, LEFT_ID].tolist(), nodes[:, LEAF].tolist(), depth
    ([1, 3, 5], [0, 0, 0, 1, 1, 1, 1], 2)
    """
    if k == 0:
        return np.zeros((0, 6), dtype=np.int64), 0
    nodes = np.zeros((2 * k - 1, 6), dtype=np.int64)
    nodes[0, LEAF] = 1
    depth, depth_const = 0, 1
    for i in range(k - 1):
        nodes[i, LEFT_ID], nodes[i, RIGHT_ID], nodes[i, LEAF] = 2 * i + 1, 2 * i + 2, 0
        if 2 * i + 1 >= depth_const:
            depth += 1
            depth_const = (1 << (depth + 1)) - 1
        for node in (2 * i + 1, 2 * i + 2):
            nodes[node, PARENT] = i
            nodes[node, LEAF] = 1
            if bandwidth:  # (unsigned arithmetic in VW: a wrapped id matches no node)
                nodes[node, RIGHT_ONLY] = node == (k // bandwidth) // 2 - 1
                nodes[node, LEFT_ONLY] = node == k // bandwidth - 2
    return nodes, depth


@jit_inline
def _goes_right(table, gstate, params, loss_id, indices, values, lo, hi, width, node, mask,
                truncate):  # fmt: skip
    """The binary learner at ``node``: its clipped score's sign (VW's binary: > 0 right)."""
    raw = line_score(table, gstate, indices, values, lo, hi, width, node, mask, truncate)
    return clipped(gstate, params, loss_id, raw) > F32(0.0)


@jit
def tree_predict(table, gstate, params, loss_id, indices, values, lo, hi, width, truncate, nodes):
    """The action (1-based; 0 for an empty tree) the tree predicts for line ``lo:hi``."""
    n = nodes.shape[0]
    if n == 0:
        return 0
    mask = np.uint64(table.shape[0] - 1)
    internal = n - (n + 1) // 2
    cur = 0
    while nodes[cur, LEAF] == 0:
        if nodes[cur, RIGHT_ONLY]:
            cur = nodes[cur, RIGHT_ID]
        elif nodes[cur, LEFT_ONLY]:
            cur = nodes[cur, LEFT_ID]
        elif _goes_right(table, gstate, params, loss_id, indices, values, lo, hi, width, cur,
                         mask, truncate):  # fmt: skip
            cur = nodes[cur, RIGHT_ID]
        else:
            cur = nodes[cur, LEFT_ID]
    return cur - internal + 1


@jit_inline
def _return_cost(w, a_node, a_cost, b_node, b_cost, cost_star):
    """VW's ``return_cost``: the cost of node ``w`` against the current span ``a .. b``."""
    if w < a_node:
        return F32(0.0)
    if w == a_node:
        return a_cost
    if w < b_node:
        return cost_star
    if w == b_node:
        return b_cost
    return F32(0.0)


@jit
def tree_learn(table, gstate, params, loss_id, rule, slots, indices, values, lo, hi, width,
               truncate, nodes, depth, counts, first_action, last_action, cost, prob,
               small_draw):  # fmt: skip
    """Learn the label ``cost:prob`` over the actions ``first_action .. last_action``
    (1-based) from line ``lo:hi``: VW's ``cats_tree::learn`` (see the module).
    ``counts[node]`` counts the learns of each node; ``small_draw`` is VW's fixed draw
    for tiny importances."""
    n = nodes.shape[0]
    if n == 0:
        return
    mask = np.uint64(table.shape[0] - 1)
    internal = n - (n + 1) // 2
    cost_star = F32(cost) / F32(prob)
    a_node = min(first_action + internal - 1, n - 1)
    b_node = min(last_action + internal - 1, n - 1)
    a_cost = cost_star
    b_cost = cost_star
    set_nodes = np.empty(2, dtype=np.int64)
    set_costs = np.empty(2, dtype=np.float32)
    for _d in range(depth, 0, -1):
        set_nodes[0], set_costs[0] = a_node, a_cost
        m = 1
        if nodes[a_node, PARENT] != nodes[b_node, PARENT]:
            set_nodes[1], set_costs[1] = b_node, b_cost
            m = 2
        a_parent_cost = a_cost
        b_parent_cost = b_cost
        for i in range(m):
            v = set_nodes[i]
            cost_v = set_costs[i]
            par = nodes[v, PARENT]
            cost_parent = cost_v
            if nodes[par, RIGHT_ONLY] or nodes[par, LEFT_ONLY]:
                continue
            left = nodes[par, LEFT_ID]
            w = nodes[par, RIGHT_ID] if v == left else left
            cost_w = _return_cost(w, a_node, a_cost, b_node, b_cost, cost_star)
            if cost_v != cost_w:
                cheaper = v if cost_v < cost_w else w
                y = -1.0 if cheaper == left else 1.0
                weight = abs(cost_v - cost_w)
                skip = False
                if weight < WEIGHT_FLOOR:
                    if small_draw < weight:
                        weight = WEIGHT_FLOOR
                    else:
                        skip = True
                if not skip:
                    a = np.float64(weight)
                    learn_line(table, gstate, params, loss_id, rule, slots, indices, values,
                               lo, hi, y, a, width, par, mask, truncate)  # fmt: skip
                    counts[par] += 1
                    right = _goes_right(table, gstate, params, loss_id, indices, values, lo,
                                        hi, width, par, mask, truncate)  # fmt: skip
                    lo_c = min(cost_v, cost_w)
                    hi_c = max(cost_v, cost_w)
                    # VW's blend with |prediction| = 1 (the binary reduction's sign)
                    if (y > 0.0) == right:
                        cost_parent = lo_c * F32(2.0) / F32(2.0) + hi_c * F32(0.0) / F32(2.0)
                    else:
                        cost_parent = hi_c * F32(2.0) / F32(2.0) + lo_c * F32(0.0) / F32(2.0)
            if i == 0:
                a_parent_cost = cost_parent
            else:
                b_parent_cost = cost_parent
        a_node, a_cost = nodes[a_node, PARENT], a_parent_cost
        b_node, b_cost = nodes[b_node, PARENT], b_parent_cost


# ---------------------------------------------------------------------- pdfs


@jit_inline
def pmf_to_pdf(action, k, lo_v, hi_v, bandwidth, lims, probs):
    """VW's ``pmf_to_pdf`` of one action (0-based) of probability 1: the segments'
    limits ``lims[:m+1]`` and densities ``probs[:m]``; returns m."""
    rng = F32(hi_v - lo_v)
    unit = rng / F32(k)
    centre = lo_v + F32(action) * unit + unit / F32(2.0)
    b = unit / F32(2.0) if bandwidth == F32(0.0) else bandwidth
    m = 0
    if centre - b != lo_v:
        lims[m] = lo_v
        m += 1
    left = centre - b
    right = centre + b
    if centre >= b:
        val = max(left, lo_v)
        if m == 0 or lims[m - 1] != val:
            lims[m] = val
            m += 1
        lims[m] = min(right, hi_v)
        m += 1
    else:
        lims[m] = min(right, hi_v)
        m += 1
    if lims[m - 1] != hi_v:
        lims[m] = hi_v
        m += 1
    used = False
    for i in range(m - 1):
        p = F32(0.0)
        if not used and ((centre - lo_v < b and lims[i] == lo_v) or lims[i] == left):
            actual_b = min(hi_v, right) - max(lo_v, left)
            p += F32(1.0) / actual_b
            used = True
        probs[i] = p
    return m - 1


@jit_inline
def explore_pdf(probs, m, epsilon, lo_v, hi_v):
    """VW's ``cb_explore_pdf``: each density mixed with the uniform one, weight ε."""
    for i in range(m):
        probs[i] = probs[i] * (F32(1.0) - epsilon) + epsilon / (hi_v - lo_v)


@jit_inline
def sample_pdf(rng, lims, probs, m):
    """VW's ``sample_pdf`` (its draw from a copy of the generator ``rng``, then ``rng``
    advanced once): (the action, its density)."""
    total = F32(0.0)
    for i in range(m):
        total += (lims[i + 1] - lims[i]) * probs[i]
    seed = np.empty(1, dtype=np.uint64)
    seed[0] = rng[0]
    draw = F32(0.0)
    while True:
        draw = F32(1.0001) * total * merand48(seed)
        if not draw >= total:
            break
    merand48(rng)
    acc = F32(0.0)
    for i in range(m):
        seg = probs[i] * (lims[i + 1] - lims[i])
        if draw <= seg + acc:
            return lims[i] + (draw - acc) / probs[i], probs[i]
        acc += seg
    return lims[0], probs[0]
