"""VW's conditional contextual bandit reduction (``ccb_explore_adf``, and ``slates`` on it)
as numba kernels over a block of examples.

:func:`streamlearn.io.shared.ccb_pair_rows` writes, for each (slot, action) pair of a
block, the action line with the shared line's and the slot's features (VW's
``inject_slot_features`` and ``shared_feature_merger``) and the slot's index feature; the
caller crosses them once for the block.  :func:`run_slots` then walks the examples and
their slots in order: each slot is one ``cb_explore_adf`` example over the pairs of the
actions earlier slots left (and the slot lists, if it does), scored and learned by
:func:`streamlearn.learners.cb_adf.train_examples`, explored by
:func:`streamlearn.learners.explore.explore_examples` and sampled by
:func:`streamlearn.learners.explore.cb_sample`; the first action is the slot's.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import cb_adf
from streamlearn.learners.base import G_N
from streamlearn.learners.explore import cb_sample, explore_examples
from streamlearn.system.jit import jit

F32 = np.float32
CCB = 0
SLATES = 1


@jit
def run_slots(mode, all_slots, no_pred, ex_slot_ptr, ex_nact, shared_cost, shared_labeled,
              slot_pair0, slot_act, slot_cost, slot_prob, slot_seed, slot_own, inc_ptr,
              inc_ids, indptr, indices, values, tables, step, gstate, params, loss_id, cb_type,
              clip_p, stats, dr_prev, kind, epsilon, first_only, lam, gamma_scale,
              gamma_exponent, learning, xstats, rng, dec_ptr, dec_n, dec_act, dec_prob, ex_loss,
              ex_labeled, ex_feat):  # noqa: ANN001, ANN201  # fmt: skip
    """Every slot of every example, in order (see the module's docstring).

    Per slot ``s``: its first pair row ``slot_pair0[s]`` (action ``i``'s is the next
    ``i``-th), the logged action (original id, -1: none), cost and probability, a
    ``seed=`` tag's seed (-1: none), its own entries (VW's count for a slot with no
    action left) and its included actions ``inc_ids[inc_ptr[s]:inc_ptr[s + 1]]`` (none:
    all).  Writes each slot's decision (``dec_n[s]`` actions and probabilities at
    ``dec_ptr[s]``, the first the slot's), and per example VW's loss, whether it counts
    as labeled and its features.  ``mode``: :data:`CCB` or :data:`SLATES` (the loss).
    ``no_pred`` (VW's ``--no_predict``): no pmf and no ``cb_sample``; a slot takes its
    logged action when it was learned (else none).
    """
    act_ptr = np.zeros(2, dtype=np.int64)
    chosen = np.zeros(1, dtype=np.int64)
    cost = np.zeros(1)
    prob = np.ones(1)
    ho = np.zeros(1, dtype=np.bool_)
    loss_out = np.zeros(1)
    for e in range(ex_slot_ptr.shape[0] - 1):
        n_act = ex_nact[e]
        excluded = np.zeros(n_act, dtype=np.bool_)
        avail = np.empty(n_act, dtype=np.int64)
        loss = F32(0.0)
        n_lab = 0
        feats = 0
        ratio = F32(0.0)
        t_ex = gstate[G_N]  # VW's t: the examples before this one (its slots all learn at it)
        for s in range(ex_slot_ptr[e], ex_slot_ptr[e + 1]):
            k = s - ex_slot_ptr[e]
            inc = np.zeros(n_act, dtype=np.bool_)
            any_inc = False
            for q in range(inc_ptr[s], inc_ptr[s + 1]):
                if inc_ids[q] < n_act:
                    inc[inc_ids[q]] = True
                any_inc = True
            n = 0
            for i in range(n_act):
                if excluded[i] or (any_inc and not inc[i]):
                    continue
                avail[n] = i
                n += 1
            dec_n[s] = n
            if slot_act[s] >= 0:
                n_lab += 1
            if n == 0:
                feats += slot_own[s]
                continue
            nnz = 0
            for j in range(n):
                r = slot_pair0[s] + avail[j]
                nnz += indptr[r + 1] - indptr[r]
            s_ptr = np.empty(n + 1, dtype=np.int64)
            s_idx = np.empty(nnz, dtype=indices.dtype)
            s_val = np.empty(nnz, dtype=values.dtype)
            s_ptr[0] = 0
            w = 0
            for j in range(n):
                r = slot_pair0[s] + avail[j]
                for t in range(indptr[r], indptr[r + 1]):
                    s_idx[w] = indices[t]
                    s_val[w] = values[t]
                    w += 1
                s_ptr[j + 1] = w
            feats += nnz
            act_ptr[1] = n
            logged = -1
            if learning and slot_act[s] >= 0:
                for j in range(n):
                    if avail[j] == slot_act[s]:
                        logged = j
            chosen[0] = logged
            cost[0] = slot_cost[s] if logged >= 0 else 0.0
            prob[0] = slot_prob[s] if logged >= 0 else 1.0
            scores = np.zeros(n, dtype=np.float32)
            order = np.zeros(n, dtype=np.int64)
            gstate[G_N] = t_ex
            cb_adf.train_examples(tables, np.zeros(n, dtype=np.int64), step, gstate, params,
                                  loss_id, cb_type, clip_p, act_ptr, s_ptr, s_idx, s_val, chosen,
                                  cost, prob, ho, True, stats, dr_prev, scores, order,
                                  loss_out)  # fmt: skip
            if no_pred:
                if logged >= 0:
                    excluded[avail[logged]] = True
                continue
            acts = np.zeros(n, dtype=np.int64)
            probs = np.zeros(n, dtype=np.float32)
            explore_examples(kind, epsilon, first_only, lam, gamma_scale, gamma_exponent, act_ptr,
                             scores, order, chosen, cost, prob, ho, True, learning, xstats,
                             acts, probs)  # fmt: skip
            cb_sample(rng, acts, probs, logged, slot_seed[s])
            o = dec_ptr[s]
            for j in range(n):
                dec_act[o + j] = avail[acts[j]]
                dec_prob[o + j] = probs[j]
            top = avail[acts[0]]
            excluded[top] = True
            if mode == CCB:
                if slot_act[s] >= 0 and (k == 0 or all_slots):
                    est = F32(0.0)
                    if top == slot_act[s]:
                        est = F32(F32(slot_cost[s]) / F32(slot_prob[s]))
                    loss = F32(loss + F32(est * probs[0]))
            elif shared_labeled[e]:
                ratio = F32(ratio + F32(probs[0] / F32(slot_prob[s])))
        if mode == SLATES:
            n_slots = ex_slot_ptr[e + 1] - ex_slot_ptr[e]
            if shared_labeled[e]:
                # a slot with no action left adds nothing (VW would read an empty prediction)
                ratio = F32(ratio - F32(n_slots - 1))
                loss = F32(F32(shared_cost[e]) * ratio)
            ex_labeled[e] = shared_labeled[e]
        else:
            ex_labeled[e] = n_lab > 0
        ex_loss[e] = loss
        ex_feat[e] = feats
        # VW's t counts the example once, after it (none under --no_predict: no update_stats)
        gstate[G_N] = t_ex + (1.0 if ex_labeled[e] and not no_pred else 0.0)


__all__ = ["CCB", "SLATES", "run_slots"]
