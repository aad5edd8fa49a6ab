"""One ``--cb K`` line parsed, copied to its K action rows, scored, explored and learned in
one compiled call: :func:`step_line`, the kernel of
:meth:`~streamlearn.reductions.cb_line.CbLineParser.step` (a ``vowpalwabbit.Workspace``'s
``predict``/``learn`` and a server's request of ``--cb K``/``--cb_explore K``).

It runs the kernels the block path runs, in its order, over the arrays the parser keeps
between calls: the line's parse (:func:`~streamlearn.io.vw.parse_vw_block`) and labels
(:func:`~streamlearn.io.labels.read_labels_kernel`), the logged action
(:func:`~streamlearn.learners.cb_to_adf.chosen_of`, compiled here), the copy to K action rows
(:func:`~streamlearn.learners.cb_to_adf.copy_to_adf`), cb_adf's scores and update
(:func:`~streamlearn.learners.cb_adf.train_examples`) and the explorer's pmf
(:func:`~streamlearn.learners.explore.explore_examples`), whose progressive loss replaces
cb_adf's in the counters as :meth:`~streamlearn.reductions.explore.Explorer.batch` does.
Five calls from Python, each unboxing ~20 arguments, and the Python between them took
twice VW's time per call; one call takes ~VW's.

It lives above ``io`` and ``learners`` (the layers: they do not import each other), and
returns before any state moves where the general path must run (:data:`FALLBACK`).
"""

from __future__ import annotations

import numpy as np

from streamlearn.io.labels import read_labels_kernel
from streamlearn.io.vw import parse_vw_block
from streamlearn.learners.cb_adf import HO_LOSS, LOSS, train_examples
from streamlearn.learners.cb_to_adf import chosen_of, copy_to_adf
from streamlearn.learners.explore import X_HO_LOSS, X_LOSS, explore_examples
from streamlearn.system.jit import jit, jit_inline

FALLBACK = -1
""":func:`step_line`'s (and ``step_example``'s) answer where the general path must run
(nothing has moved)."""
GROW = -2
"""Their answer where ``dr_prev`` must first hold the example's actions and one
(:func:`~streamlearn.reductions.base.room`), or the guard's ``saved`` rows the example's
(nothing has moved)."""
DIVERGED = -3
"""Their answer (with ``guard``) where learning the example made the model non-finite:
everything it changed is put back."""

_chosen = jit_inline(chosen_of)


@jit
def step_line(buf, first_line, learning, tables, gstate, params, stats, dr_prev,
              mask, constant, limit, hash_all, vw_numbers, raw_labels, hash_seed, slow_spans,
              st, slow_pos, slow_vals, words, arrays, crosser,
              kind, lab_ptr, lab_cls, lab_cost, lab_prob, flags,
              k, width, scale, bits, cim, act_ptr, rows, sub, out_ptr, out_idx, out_val,
              out_ns, chosen, cost, prob,
              step, loss_id, cb_type, clip_p, holdout, holdout_learns, scores, order, loss_out,
              explore, xkind, epsilon, first_only, lam, gamma_scale, gamma_exponent, xstats,
              out_actions, out_probs, guard, table, saved, saved_state):  # fmt: skip
    """The line of ``buf`` (one, ending in ``\\n``) parsed into ``arrays`` and its label
    entries, copied to K rows, scored and learned over the state (``tables`` ...
    ``dr_prev``; ``params``' learning switch and the explorer's ``learning``); returns the
    action rows' features, or :data:`FALLBACK` (a malformed line, an action above K, what
    the parser leaves to the block path: nothing has moved).  ``explore``: the explorer's
    pmf (``out_actions``/``out_probs``) and its loss in ``stats``; else cb_adf's.  ``guard``
    (a learning server's): the rows of ``table`` the action rows touch (each feature's
    ``step`` rows) and the sums are kept in ``saved`` and ``saved_state`` first (room for
    them: else :data:`GROW`), and put back where learning left any of them non-finite
    (:data:`DIVERGED`), as ``step_example``'s guard."""
    n_rows, _, touching, _, overflow, _ = parse_vw_block(
        buf, first_line, mask, constant, limit, hash_all, vw_numbers, raw_labels, hash_seed,
        slow_spans, st, slow_pos, slow_vals, words, arrays, crosser,
    )  # fmt: skip
    if n_rows != 1 or touching or overflow or st[0] != 0:
        return FALLBACK
    _, _, _, tag_start, tag_end, indptr, indices, values, status, _, line_start, err, ns = arrays
    if read_labels_kernel(buf, line_start[:1], tag_start[:1], tag_end[:1], status[:1], err[:1],
                          kind, vw_numbers, lab_ptr[:2], lab_cls, lab_cost, lab_prob,
                          flags[:1]) < 0 or status[0] != 0:  # fmt: skip
        return FALLBACK
    a, c, p = _chosen(lab_ptr, lab_cls, lab_cost, lab_prob, 0)
    if a > k:
        return FALLBACK
    if copy_to_adf(indptr[:2], indices, values, ns, status[:1], k, width, scale, bits, cim,
                   act_ptr, rows, sub, out_ptr, out_idx, out_val, out_ns) != 1:  # fmt: skip
        return FALLBACK
    if a > 0:
        chosen[0], cost[0], prob[0] = a - 1, c, p
    else:
        chosen[0], cost[0], prob[0] = -1, 0.0, 1.0
    nnz = out_ptr[k]
    if guard and (nnz * step > saved.shape[0] or saved_state.shape[0] < gstate.shape[0]
                  + stats.shape[0] + dr_prev.shape[0] + xstats.shape[0]):
        return GROW  # fmt: skip
    if guard:
        keep_rows(table, step, out_idx[:nnz], saved, gstate, stats, dr_prev, xstats,
                  saved_state)  # fmt: skip
    learn_explore(tables, sub, step, gstate, params, loss_id, cb_type, clip_p, act_ptr, out_ptr,
                  out_idx[:nnz], out_val[:nnz], chosen, cost, prob, holdout, holdout_learns,
                  stats, dr_prev, scores, order, loss_out, explore, xkind, epsilon, first_only,
                  lam, gamma_scale, gamma_exponent, learning, xstats, out_actions,
                  out_probs)  # fmt: skip
    if guard and not rows_finite(table, step, out_idx[:nnz], gstate, stats):
        put_back(table, step, out_idx[:nnz], saved, gstate, stats, dr_prev, xstats,
                 saved_state)  # fmt: skip
        return DIVERGED
    return nnz


@jit
def learn_explore(tables, sub, step, gstate, params, loss_id, cb_type, clip_p, act_ptr, ptr, idx,
                  val, chosen, cost, prob, holdout, holdout_learns, stats, dr_prev, scores, order,
                  loss_out, explore, xkind, epsilon, first_only, lam, gamma_scale,
                  gamma_exponent, learning, xstats, out_actions, out_probs):  # fmt: skip
    """One example's action rows (``sub``, ``ptr``, ``idx``, ``val``) scored and learned by
    cb_adf, and (``explore``) its pmf drawn by the explorer into ``out_actions`` and
    ``out_probs``, whose progressive loss then replaces cb_adf's in ``stats``, as
    :meth:`~streamlearn.reductions.explore.Explorer.batch` does: the step both kernels end
    with (compiled on its own: numba's inliner refuses a call of this many arguments).
    """
    for r in range(scores.shape[0]):
        scores[r] = 0.0
        order[r] = 0
        out_actions[r] = 0
        out_probs[r] = 0.0
    saved, saved_ho = stats[LOSS], stats[HO_LOSS]
    before, before_ho = xstats[X_LOSS], xstats[X_HO_LOSS]
    train_examples(tables, sub, step, gstate, params, loss_id, cb_type, clip_p, act_ptr, ptr, idx,
                   val, chosen, cost, prob, holdout, holdout_learns, stats, dr_prev, scores,
                   order, loss_out)  # fmt: skip
    if explore:
        explore_examples(xkind, epsilon, first_only, lam, gamma_scale, gamma_exponent, act_ptr,
                         scores, order, chosen, cost, prob, holdout, holdout_learns, learning,
                         xstats, out_actions, out_probs)  # fmt: skip
        stats[LOSS] = saved + (xstats[X_LOSS] - before)
        stats[HO_LOSS] = saved_ho + (xstats[X_HO_LOSS] - before_ho)


@jit_inline
def row_of(idx, j, width, rows):
    """The table row of a feature's ``j``-th weight (``run/serve_model.py``'s rows)."""
    return (np.uint64(idx) * np.uint64(width) + np.uint64(j)) & np.uint64(rows - 1)


@jit_inline
def keep_rows(table, width, idx, saved, gstate, stats, dr_prev, xstats, saved_state):
    """The rows ``idx`` touch and the state's sums, kept (``saved_state``: gstate, stats,
    dr_prev, xstats, in that order)."""
    rows = table.shape[0]
    for i in range(idx.shape[0]):
        for j in range(width):
            saved[i * width + j, :] = table[row_of(idx[i], j, width, rows), :]
    at = 0
    for a in (gstate, stats, dr_prev, xstats):
        saved_state[at : at + a.shape[0]] = a
        at += a.shape[0]


@jit_inline
def put_back(table, width, idx, saved, gstate, stats, dr_prev, xstats, saved_state):
    """:func:`keep_rows`'s rows and sums put back (a row twice among them: both copies are its
    value before the example)."""
    rows = table.shape[0]
    for i in range(idx.shape[0]):
        for j in range(width):
            table[row_of(idx[i], j, width, rows), :] = saved[i * width + j, :]
    at = 0
    for a in (gstate, stats, dr_prev, xstats):
        a[:] = saved_state[at : at + a.shape[0]]
        at += a.shape[0]


@jit_inline
def rows_finite(table, width, idx, gstate, stats):
    """No NaN or inf in the rows ``idx`` touch, and finite sums of ``gstate`` and ``stats``
    (``run/serve_model.py``'s ``_finite`` and ``_sums_finite``)."""
    rows = table.shape[0]
    for i in range(idx.shape[0]):
        for j in range(width):
            r = row_of(idx[i], j, width, rows)
            for c in range(table.shape[1]):
                if not np.isfinite(table[r, c]):
                    return False
    return np.isfinite(np.sum(gstate)) and np.isfinite(np.sum(stats))
