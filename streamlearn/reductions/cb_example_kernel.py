"""One ``--cb_adf``/``--cb_explore_adf`` example parsed, merged, scored, explored and learned
in one compiled call: :func:`step_example`, the kernel of
:meth:`~streamlearn.reductions.cb_example.AdfStep.step` (a ``vowpalwabbit.Workspace``'s
``predict``/``learn`` and a server's request of one multiline example).

It runs the kernels :meth:`~streamlearn.io.oneexample.ExampleParser.part` and
:meth:`~streamlearn.reductions.explore.Explorer.one` run, in their order, over the arrays the
parser keeps between calls: the lines' parse (:func:`~streamlearn.io.vw.parse_vw_block`)
and labels (:func:`~streamlearn.io.labels.read_labels_kernel`), the shared line's checks
(:func:`~streamlearn.io.multiline.check_examples`), the merge of the shared features into
each action row (:func:`~streamlearn.io.multiline.merge_examples`), the rows' labels and
the logged action (:func:`~streamlearn.io.multiline.row_labels`), cb_adf's scores and update
(:func:`~streamlearn.learners.cb_adf.train_examples`) and the explorer's pmf
(:func:`~streamlearn.learners.explore.explore_examples`), whose progressive loss replaces
cb_adf's in the counters as :meth:`~streamlearn.reductions.explore.Explorer.batch` does.
Seven calls from Python, each unboxing ~15 arguments, and the Python around them (the
part's views and objects) took about twice VW's time per round.

Like :mod:`streamlearn.reductions.cb_line_kernel` it lives above ``io`` and ``learners``
(the layers: they do not import each other), and returns before any state moves where the
general path must run (:data:`FALLBACK`): a malformed line, a second costed action, an
example the one-example parser leaves to the block path, more than one example.
"""

from __future__ import annotations

from streamlearn.io.labels import read_labels_kernel
from streamlearn.io.multiline import check_examples, merge_examples, row_labels
from streamlearn.io.vw import parse_vw_block
from streamlearn.reductions.cb_line_kernel import (
    DIVERGED,
    GROW,
    keep_rows,
    learn_explore,
    put_back,
    rows_finite,
)
from streamlearn.system.jit import jit

FALLBACK = -1
""":func:`step_example`'s answer where the general path must run (nothing has moved)."""


@jit
def step_example(buf, first_line, n_lines, learning, tables, gstate, params, stats, dr_prev,
                 mask, constant, limit, hash_all, vw_numbers, raw_labels, hash_seed, slow_spans,
                 st, slow_pos, slow_vals, words, arrays, crosser,
                 kind, lab_ptr, lab_cls, lab_cost, lab_prob, flags, ex_ptr, merged, logged,
                 out_ex, out_row, out_ptr, out_idx, out_val, out_ns, lab_n, out_cls, out_cost,
                 chosen, cost, prob, keep, act_ptr, sub,
                 step, loss_id, cb_type, clip_p, holdout, holdout_learns, scores, order, loss_out,
                 explore, xkind, epsilon, first_only, lam, gamma_scale, gamma_exponent, xstats,
                 out_actions, out_probs, guard, table, width, saved, saved_state):  # fmt: skip
    """The ``n_lines`` lines of ``buf`` (one example, each line ending in ``\\n``, no blank
    line) parsed into ``arrays`` and its label entries, merged into action rows, scored and
    learned over the state (``tables`` ... ``dr_prev``; ``params``' learning switch and the
    explorer's ``learning``); returns the action rows' features (their count in
    ``act_ptr[1]``), or :data:`FALLBACK` or :data:`GROW` (nothing has moved).  ``merged``:
    the room of the merged rows' arrays.  ``explore``: the explorer's pmf
    (``out_actions``/``out_probs``) and its loss in ``stats``; else cb_adf's.  ``guard``
    (a learning server's): the rows of ``table`` the example's features touch (each
    feature's ``width`` rows) and the sums are kept in ``saved`` and ``saved_state`` first,
    and put back where learning left any of them non-finite (:data:`DIVERGED`), as
    ``run/serve_model.py``'s guard around the general path does."""
    rows, _, touching, _, overflow, _ = parse_vw_block(
        buf, first_line, mask, constant, limit, hash_all, vw_numbers, raw_labels, hash_seed,
        slow_spans, st, slow_pos, slow_vals, words, arrays, crosser,
    )  # fmt: skip
    if rows != n_lines or rows < 1 or touching or overflow or st[0] != 0:
        return FALLBACK
    _, _, _, tag_start, tag_end, indptr, indices, values, status, _, line_start, err, ns = arrays
    if read_labels_kernel(buf, line_start[:rows], tag_start[:rows], tag_end[:rows],
                          status[:rows], err[:rows], kind, vw_numbers, lab_ptr[: rows + 1],
                          lab_cls, lab_cost, lab_prob, flags[:rows]) < 0:  # fmt: skip
        return FALLBACK
    ex_ptr[0] = 0
    ex_ptr[1] = rows
    check_examples(ex_ptr, flags[:rows], status[:rows], err[:rows])
    for i in range(rows):
        if status[i] != 0:
            return FALLBACK
    if indptr[rows] + indptr[1] * rows > merged:
        return FALLBACK
    m, r, nnz = merge_examples(ex_ptr, flags[:rows], status[:rows], indptr, indices, values, ns,
                               False, out_ex, out_row, out_ptr, out_idx, out_val,
                               out_ns)  # fmt: skip
    if m != 1 or r < 1:
        return FALLBACK
    chosen[0] = -1
    cost[0] = 0.0
    prob[0] = 1.0
    keep[0] = True
    act_ptr[0] = 0
    act_ptr[1] = r
    row_labels(out_row[:r], act_ptr, lab_ptr[: rows + 1], lab_cls, lab_cost, lab_prob, logged,
               status[:rows], lab_n, out_cls, out_cost, chosen, cost, prob, keep)  # fmt: skip
    if not keep[0]:
        return FALLBACK
    if dr_prev.shape[0] <= r or (guard and (nnz * width > saved.shape[0] or saved_state.shape[0]
                                             < gstate.shape[0] + stats.shape[0]
                                             + dr_prev.shape[0] + xstats.shape[0])):
        return GROW  # fmt: skip
    if guard:
        keep_rows(table, width, out_idx[:nnz], saved, gstate, stats, dr_prev, xstats,
                  saved_state)  # fmt: skip
    learn_explore(tables, sub[:r], step, gstate, params, loss_id, cb_type, clip_p, act_ptr,
                  out_ptr[: r + 1], out_idx[:nnz], out_val[:nnz], chosen, cost, prob, holdout,
                  holdout_learns, stats, dr_prev, scores[:r], order[:r], loss_out, explore,
                  xkind, epsilon, first_only, lam, gamma_scale, gamma_exponent, learning, xstats,
                  out_actions[:r], out_probs[:r])  # fmt: skip
    if guard and not rows_finite(table, width, out_idx[:nnz], gstate, stats):
        put_back(table, width, out_idx[:nnz], saved, gstate, stats, dr_prev, xstats,
                  saved_state)  # fmt: skip
        return DIVERGED
    return nnz
