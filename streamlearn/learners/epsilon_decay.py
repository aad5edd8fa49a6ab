"""The kernels of ``--epsilon_decay`` (VW's ``reductions/epsilon_decay.cc``) over cb_adf and
its epsilon-greedy explorer: M models in one table, the champion's pmf shown.

Model ``o`` (a weight *offset*, VW's ``_weight_indices``) of feature slot ``h`` is row
``(h · W + o) mod N`` of gd's table, W the power of 2 at least M (VW's total feature
width); each offset keeps its own gd normalizer sums (``gstate[G_MODEL + 2·o]``, VW's
``gd_per_model_states``) and its own mtr counts (``counts[2·o]``, ``counts[2·o + 1]``, VW's
cb_adf ``per_model_state``), which VW never resets when it moves or clears a model.

* :func:`model_example`: one example at one offset, as VW's ``cb_explore_adf_greedy`` over
  ``cb_adf`` learns it (``learn``) or predicts it: the actions scored with the weights
  before the step and ranked, the epsilon-greedy pmf of the ranking (in its order), then
  cb_adf's step (mtr, ips, dm) at that offset.
* :func:`spin_off`: VW's ``reduce_innermost_model_weights`` (``--predict_only_model``):
  the champion's weights moved down to a table of W times fewer slots, in VW's
  order over its flat array of floats (so, for an M that is no power of 2, VW's
  arithmetic on the indices, as VW's).

The estimators that pick the champion are plain Python
(:mod:`streamlearn.learners.conf_seq`); :mod:`streamlearn.reductions.epsilon_decay` walks
the examples.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners import gd
from streamlearn.learners.cb_adf import IPS, MTR
from streamlearn.learners.csoaa_ldf import learn_line, line_score, rank
from streamlearn.learners.explore import greedy_pmf
from streamlearn.system.jit import jit

F32 = np.float32
F64 = np.float64


@jit
def model_example(table, gstate, params, loss_id, cb_type, clip_p, width, offset, counts, indptr,
                  indices, values, r0, n, k, c, p, learn, weight, epsilon, first_only, slots,
                  scores, order, acts, probs):  # fmt: skip
    """Example rows ``r0:r0+n`` at offset ``offset``: ``acts``/``probs`` (length ``n``) get
    its pmf, in the ranking's order; with ``learn``, line ``k`` (cost ``c``, probability
    ``p``; ``weight`` the example's weight, as VW's ``ec.weight``) is learned as cb_adf
    learns it.  ``slots`` is scratch as long as ``indices``."""
    rule = gd.rule_of(params)
    truncate = rule[9] > F32(0.0)
    mask = np.uint64(table.shape[0] - 1)
    for i in range(n):
        r = r0 + i
        scores[i] = line_score(table, gstate, indices, values, indptr[r], indptr[r + 1], width,
                               offset, mask, truncate)  # fmt: skip
    rank(scores, 0, n, order)
    for i in range(n):
        acts[i] = order[i]
        probs[i] = scores[order[i]]
    greedy_pmf(probs[:n], epsilon, first_only)
    if not learn:
        return
    pc = max(F32(p), F32(clip_p))
    if cb_type == MTR:
        counts[2 * offset] += 1.0
        counts[2 * offset + 1] += n
        ratio = F32(counts[2 * offset]) / F32(counts[2 * offset + 1])
        a = F32(F32(weight) * (F32(1.0) / pc * ratio))
        r = r0 + k
        learn_line(table, gstate, params, loss_id, rule, slots, indices, values, indptr[r],
                   indptr[r + 1], F32(c), F64(a), width, offset, mask, truncate)  # fmt: skip
        return
    for i in range(n):
        y = F32(0.0)  # (ips: c/p on the logged line, dm: c; 0 on the others)
        if i == k:
            y = F32(c) / pc if cb_type == IPS else F32(c)
        r = r0 + i
        learn_line(table, gstate, params, loss_id, rule, slots, indices, values, indptr[r],
                   indptr[r + 1], y, F64(weight), width, offset, mask, truncate)  # fmt: skip


@jit
def spin_off(flat, offset, total, inner, stride):
    """VW's ``reduce_innermost_model_weights`` on its flat array of floats ``flat`` (``stride``
    floats per slot, ``total`` slots per feature, ``inner`` of them the models): every
    other model's floats cleared, then the model at ``offset`` moved to slot ``h`` of
    each feature block ``h``, as VW writes it (its first float left in place too)."""
    size = flat.shape[0]
    outer = total // inner
    block = total * stride
    for o in range(inner):
        if o == offset:
            continue
        for b in range(0, size, block):
            for u in range(outer):
                for s in range(stride):
                    flat[b + u * inner * stride + o * stride + s] = F32(0.0)
    for b in range(0, size, block):
        cb_ind = b // inner
        for u in range(outer):
            for s in range(stride):
                old = b + u * inner * stride + offset * stride + s
                new = cb_ind + u * stride + s
                if flat[old] != F32(0.0):
                    flat[new] = flat[old]
                    if b != 0 or u != 0:
                        flat[old] = F32(0.0)
