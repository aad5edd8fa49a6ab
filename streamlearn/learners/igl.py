"""Interaction-grounded learning (VW's ``--experimental_igl``, ``interaction_ground.cc``).

Two models share VW's table, interleaved (feature width 2): the *policy* π at offset 1
(cb_adf's ``mtr`` over ``csoaa_ldf`` over the base learner, explored epsilon-greedy) and
the *inverse kinematics* model ψ at offset 0 (a logistic regression on the base learner),
each with its own base-learner state (``gstate``: VW swaps its ``ftrl`` records and its
shared data between the two).  An example (its shared line merged into each action line,
crosses made) with its observation's features ``o`` (the record's ``o`` field, read by
:mod:`streamlearn.reductions.igl`):

1. π scores each action line (the stored weights at offset 1), ranks them, and the
   explorer makes the pmf p (:func:`streamlearn.learners.explore.greedy_pmf`);
2. for each action a, in order, ψ learns the line ``a``'s features without its constant,
   then ``o``'s, then for each of π's pairs (n1, n2) and each of ``o``'s namespaces g the
   triple n1×n2×g: label +1 with importance ``1/4 / p_a`` for the logged action, else
   −1 with ``3/4 / (1 − p_a)`` (logistic loss);
3. the logged action's cost becomes −1 when ψ's logistic output on it (before its step)
   is above 1/2 (2 when the observation is ``_definitely_bad``), else 0;
4. π learns the example with that cost (cb_adf's mtr, importance 1/p · events/actions).

The progressive loss is cb_explore_adf's: the pmf's weight on the logged action times its
(new) cost over its probability.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import cb_adf, gd
from streamlearn.learners.base import G_N
from streamlearn.learners.csoaa_ldf import learn_line, line_score, rank
from streamlearn.learners.explore import greedy_pmf
from streamlearn.learners.losses import LOGISTIC, expf
from streamlearn.system.jit import jit

F32 = np.float32
F64 = np.float64
FNV = np.uint64(16777619)
CONSTANT_NS = 128


@jit
def igl_examples(table, gpi, gik, params, loss_id, eps, first_only, act_ptr, indptr, indices,
                 values, pre, fns, terms, obs_ptr, obs_idx, obs_val, obs_ns, bad, chosen, prob,
                 stats, mtr, acts, probs, cost_out, idx_mask):  # fmt: skip
    """Learn each example of a batch (the module's steps 1-4).

    ``pre[r]``: how many of row ``r``'s features come before its crosses; ``fns``: each
    row feature's namespace byte (the rows' features before their crosses, row after
    row); ``terms``: π's pairs of namespaces (int64[k, 2]); example ``e``'s observation
    features are ``obs_ptr[e]:obs_ptr[e + 1]`` of ``obs_idx``/``obs_val``/``obs_ns``
    (its constant last), ``bad[e]`` its ``_definitely_bad``; ``chosen``/``prob``: the
    logged action (0-based) and its probability.  Writes ``acts``/``probs`` (each row:
    the pmf's action and probability, in the ranking's order) and ``cost_out`` (each
    example's cost as π learned it); ``stats``: cb_adf's counters; ``mtr``: the policy's
    mtr sums (events, actions: VW's per-model state 1 of cb_adf)."""
    rule = gd.rule_of(params)
    mask = np.uint64(table.shape[0] - 1)
    n_rows = indptr.shape[0] - 1
    slots = np.empty(max(indices.shape[0], 16), dtype=np.uint32)
    scores = np.zeros(n_rows, dtype=np.float32)
    order = np.zeros(n_rows, dtype=np.int64)
    buf = np.empty(64, dtype=np.float32)
    cap = 256
    ik_idx = np.empty(cap, dtype=np.uint32)
    ik_val = np.empty(cap, dtype=np.float64)
    ik_slots = np.empty(cap, dtype=np.uint32)
    ns_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    for r in range(n_rows):
        ns_ptr[r + 1] = ns_ptr[r] + pre[r]
    onss = np.empty(64, dtype=np.int64)
    for e in range(act_ptr.shape[0] - 1):
        r0 = act_ptr[e]
        n = act_ptr[e + 1] - r0
        k = chosen[e]
        p = F32(prob[e])
        stats[cb_adf.N_EX] += 1.0
        # 1. the policy's pmf
        for i in range(n):
            r = r0 + i
            scores[r] = line_score(table, gpi, indices, values, indptr[r], indptr[r + 1], 2, 1,
                                   mask, False)  # fmt: skip
        rank(scores, r0, n, order)
        if n > buf.shape[0]:
            buf = np.empty(2 * n, dtype=np.float32)
        for i in range(n):
            buf[i] = scores[r0 + order[r0 + i]]
        pmf = buf[:n]
        greedy_pmf(pmf, eps, first_only)
        for i in range(n):
            acts[r0 + i] = order[r0 + i]
            probs[r0 + i] = pmf[i]
        # the observation's namespaces, in order
        o0 = obs_ptr[e]
        o1 = obs_ptr[e + 1]
        n_ons = 0
        for t in range(o0, o1):
            g = obs_ns[t]
            seen = False
            for u in range(n_ons):
                if onss[u] == g:
                    seen = True
            if not seen and n_ons < onss.shape[0]:
                onss[n_ons] = g
                n_ons += 1
        # 2. the inverse kinematics model learns each action
        ik_pred = F32(0.0)
        for i in range(n):
            r = r0 + i
            lo = indptr[r]
            f0 = ns_ptr[r]
            need = pre[r] + (o1 - o0)
            for q in range(terms.shape[0]):
                c1 = 0
                c2 = 0
                for t in range(pre[r]):
                    if fns[f0 + t] == terms[q, 0]:
                        c1 += 1
                    if fns[f0 + t] == terms[q, 1]:
                        c2 += 1
                need += c1 * c2 * (o1 - o0)
            if need > ik_idx.shape[0]:
                ik_idx = np.empty(2 * need, dtype=np.uint32)
                ik_val = np.empty(2 * need, dtype=np.float64)
                ik_slots = np.empty(2 * need, dtype=np.uint32)
            m = 0
            for t in range(pre[r]):
                if fns[f0 + t] != CONSTANT_NS:
                    ik_idx[m] = indices[lo + t]
                    ik_val[m] = values[lo + t]
                    m += 1
            for t in range(o0, o1):
                ik_idx[m] = obs_idx[t]
                ik_val[m] = obs_val[t]
                m += 1
            for q in range(terms.shape[0]):
                for u in range(n_ons):
                    g = onss[u]
                    for t1 in range(pre[r]):
                        if fns[f0 + t1] != terms[q, 0]:
                            continue
                        h1 = FNV * np.uint64(indices[lo + t1])
                        v1 = F32(values[lo + t1])
                        for t2 in range(pre[r]):
                            if fns[f0 + t2] != terms[q, 1]:
                                continue
                            h2 = FNV * (h1 ^ np.uint64(indices[lo + t2]))
                            v2 = v1 * F32(values[lo + t2])
                            for t3 in range(o0, o1):
                                if obs_ns[t3] != g:
                                    continue
                                ik_idx[m] = np.uint32((h2 ^ np.uint64(obs_idx[t3])) & idx_mask)
                                ik_val[m] = F64(v2 * F32(obs_val[t3]))
                                m += 1
            pa = F32(0.0)
            for j in range(n):
                if acts[r0 + j] == i:
                    pa = probs[r0 + j]
            if i == k:
                y = F32(1.0)
                a = F32(1.0) / F32(4.0) / pa
            else:
                y = F32(-1.0)
                a = F32(3.0) / F32(4.0) / (F32(1.0) - pa)
            raw = learn_line(table, gik, params, LOGISTIC, rule, ik_slots, ik_idx, ik_val, 0, m,
                             y, F64(a), 2, 0, mask, False)  # fmt: skip
            if i == k:
                ik_pred = F32(1.0) / (F32(1.0) + expf(-raw))
        # 3. the logged action's cost
        c = F32(0.0)
        if ik_pred * F32(2.0) > F32(1.0):
            c = F32(-1.0) + F32(bad[e]) * (F32(1.0) + F32(1.0) / F32(0.5))
        cost_out[e] = c
        # the progressive loss: the pmf's weight on the logged action, times c / p
        loss = F32(0.0)
        for j in range(n):
            if acts[r0 + j] == k:
                loss = F32(F32(c / p) * probs[r0 + j])
        stats[cb_adf.N_LAB] += 1.0
        stats[cb_adf.LOSS] += F64(loss)
        # 4. the policy learns (cb_adf's mtr, offset 1)
        mtr[0] += 1.0
        mtr[1] += n
        w = F32(F32(1.0) * (F32(1.0) / p * (F32(mtr[0]) / F32(mtr[1]))))
        r = r0 + k
        learn_line(table, gpi, params, loss_id, rule, slots, indices, values, indptr[r],
                   indptr[r + 1], c, F64(w), 2, 1, mask, False)  # fmt: skip
        gpi[G_N] += 1.0


@jit
def pre_cross(indptr, ns_len, terms, fns):
    """Each row's count of features before its crosses (``ns_len``: the namespace bytes
    ``fns`` hold, row after row): the one count ``L`` whose features' pairs of ``terms``
    make up the rest of the row.  -1: none fits."""
    n_rows = indptr.shape[0] - 1
    out = np.full(n_rows, -1, dtype=np.int64)
    start = 0
    for r in range(n_rows):
        length = indptr[r + 1] - indptr[r]
        for L in range(length + 1):
            if start + L > ns_len:
                break
            crosses = 0
            for q in range(terms.shape[0]):
                c1 = 0
                c2 = 0
                for t in range(L):
                    if fns[start + t] == terms[q, 0]:
                        c1 += 1
                    if fns[start + t] == terms[q, 1]:
                        c2 += 1
                crosses += c1 * c2
            if L + crosses == length:
                out[r] = L
                break
        if out[r] < 0:
            return out
        start += out[r]
    return out
