"""``sl vw --cbify K``: a multiclass data set played as a contextual bandit (VW's ``cbify.cc``).

VW 9 runs ``--cbify K`` on ``--cb_explore_adf`` (its "adf" mode).  Per line ``y |x``:

1. the line is copied to K action lines (:func:`streamlearn.learners.cb_to_adf.copy_to_adf`,
   VW's ``copy_example_to_adf``, with the feature width below: 1, 2 for ``--cb_type dr``,
   times B under ``--bag B``, cover's width under ``--cover N``);
2. cb_explore_adf predicts a pmf (:mod:`streamlearn.learners.explore`,
   :mod:`streamlearn.learners.cb_bag`);
3. an action is drawn with ``sample_after_normalizing(uniform_hash("vw") + n, pmf)``, n the
   lines seen so far (VW's ``app_seed + example_counter++``), in the pmf's order;
4. its cost is ``--loss0`` (default 0) when it is the class y, ``--loss1`` (default 1)
   otherwise; the label ``action:cost:probability`` goes on the chosen action line and
   cb_explore_adf learns.

The progressive loss is the 0/1 loss of the drawn action against y; ``-p`` writes the drawn
action (1-based), one per line.  Lines without a label are only predicted (a draw all the
same).

Models (``-f``, ``-i``): VW's cbify keeps no state of its own (its ``example_counter`` starts
again at 0 in a continued run); its model is cb_explore_adf's (the explorer's counter,
cb_adf's mtr sums, gd's weights, :mod:`streamlearn.run.mlmodel`) with ``--cbify K`` (or
``--cbify_ldf``) in the header's options, and ``--cb_min_cost``/``--cb_max_cost`` (``--loss0``
and ``--loss1``) where VW inserts them: always under ``--cbify_ldf``, under ``--regcb`` and
``--squarecb`` with ``--cbify K``.  ``--cb_force_legacy``'s (cb_algs) is not written.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from streamlearn.errors import UsageError


def run(learn: dict, ml, inputs, outputs, console) -> dict:  # noqa: ANN001
    """Play ``inputs.sources`` as a bandit; returns the summary."""
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.parse import FMT_VW, describe_errors, parse_block
    from streamlearn.io.reader import iter_blocks
    from streamlearn.learners import cb_adf, csoaa_ldf
    from streamlearn.learners import explore as ex
    from streamlearn.learners.base import fresh_table
    from streamlearn.learners.cb_to_adf import copy_to_adf, index_mask, index_scale
    from streamlearn.reductions.explore import Explorer
    from streamlearn.reductions.options import config_of
    from streamlearn.run.mlpasses import report_bad
    from streamlearn.run.mlsummary import summary_lines, write_text

    begun = _begin(learn, ml, inputs)
    cfg = config_of(begun[0] if begun else learn)
    k = ml.cbify
    if cfg.passes > 1:
        raise UsageError("--cbify with --passes: not supported yet")
    full = cfg.namespaces() or compile_interactions()
    if full.crosses_or_filters:
        raise UsageError("--cbify with interactions or namespace filters: not supported yet")
    from streamlearn.io.labels import LABEL_CS, read_labels

    parse_inter = dataclasses.replace(full, label_kind=LABEL_CS if ml.cbify_cs else 0)
    from streamlearn.run.mlpasses import cover_cb_type

    cover_cb_type(ml, console.say)
    cb_type = cb_adf.CB_TYPES[ml.cb_type]
    params = cfg.params()
    loss_id = cfg.loss_id
    table = begun[1] if begun else fresh_table(cfg.bits, (0.0, 0.0, 0.0, 0.0), np.float32)
    tables = cb_adf.tables_of(table)
    gstate = begun[2] if begun else csoaa_ldf.init_gstate(params)
    xp = Explorer(ml, cfg)
    gstate = xp.grow(gstate, cb_type)
    w = 2 if cb_type == cb_adf.DR else 1
    below = w * ml.bag if xp.kind == ex.BAG else w
    if xp.kind == ex.COVER:
        from streamlearn.run.mlpasses import feature_width

        below = feature_width(ml)  # (xp.width is 1: the copies' indices are VW's)
    if xp.kind == ex.BAG:
        xp.width, xp.w = 1, w  # the copies' indices are VW's rewritten ones: step 1
    cim = index_mask(k, below)
    stats = np.zeros(cb_adf.STATS)
    scratch = np.zeros(cb_adf.STATS)
    _resume(begun, xp, scratch)
    dr_prev = np.zeros(k + 2)
    loss0, loss1 = np.float32(ml.loss0), np.float32(ml.loss1)
    counter = 0
    n_lab = 0.0
    n_wrong = 0.0
    preds: list[str] = []
    malformed = 0
    say = console.say
    one = np.zeros(1, dtype=np.int64)
    ho = np.zeros(1, dtype=np.bool_)
    for block in iter_blocks(inputs.sources or ["-"], inputs.block_size, inputs.max_line_bytes):
        b = parse_block(block, FMT_VW, cfg.bits, cfg.constant, parse_inter)
        bad = describe_errors(b, limit=1 << 30) if (b.status != 0).any() else []
        malformed = report_bad(bad, malformed, inputs.strict, say)
        lab = read_labels(b, LABEL_CS, parse_inter.vw_numbers) if ml.cbify_cs else None
        n_ok = int(np.count_nonzero(b.status == 0))
        nnz = int(np.sum(np.diff(b.indptr)[b.status == 0]))
        act_ptr = np.empty(n_ok + 1, dtype=np.int64)
        rows = np.empty(n_ok, dtype=np.int64)
        sub = np.empty(n_ok * k, dtype=np.int64)
        out_ptr = np.empty(n_ok * k + 1, dtype=np.int64)
        out_idx = np.empty(nnz * k, dtype=np.uint32)
        out_val = np.empty(nnz * k, dtype=np.float64)
        ns = b.ns if b.ns is not None else np.zeros(b.indices.shape[0], dtype=np.uint8)
        out_ns = np.empty(nnz * k, dtype=ns.dtype)
        copy_to_adf(b.indptr, b.indices, b.values, ns, b.status, k, below, index_scale(below),
                    cfg.bits, cim, act_ptr, rows, sub, out_ptr, out_idx, out_val,
                    out_ns)  # fmt: skip
        total = n_ok * k
        scores = np.zeros(total, dtype=np.float32)
        order = np.zeros(total, dtype=np.int64)
        acts = np.zeros(total, dtype=np.int64)
        probs = np.zeros(total, dtype=np.float32)
        for e in range(n_ok):
            lo, hi = int(act_ptr[e]), int(act_ptr[e + 1])
            ap = np.array([lo, hi], dtype=np.int64)
            y = b.labels[rows[e]]
            labeled = not math.isnan(y)
            if lab is not None:
                r = int(rows[e])
                cls = lab.cls[lab.ptr[r] : lab.ptr[r + 1]]
                costs = lab.cost[lab.ptr[r] : lab.ptr[r + 1]].astype(np.float32)
                labeled = costs.shape[0] > 0 and not np.isnan(costs).all()
            # predict: no label, nothing learned or counted
            one[0] = -1
            _step(xp, ex, cb_adf, (tables, sub, 1), table, gstate, params, loss_id, cb_type, ap,
                  out_ptr, out_idx, out_val, one, 0.0, 1.0, ho, scratch, dr_prev, scores, order,
                  acts, probs)  # fmt: skip
            stats[cb_adf.N_EX] += 1.0
            stats[cb_adf.FEATURES] += out_ptr[hi] - out_ptr[lo]
            pmf = probs[lo:hi].copy()
            idx = ex.sample_after_normalizing(np.uint64(ex.APP_SEED + counter), pmf)
            counter += 1
            action = int(acts[lo + idx])
            preds.append(f"{action + 1}\n")
            if not labeled:
                continue
            if lab is not None:
                # VW's loss_cs and update_stats_cs_label: the drawn class's cost (0 when not
                # listed) scaled to [loss0, loss1]; the loss is its cost above the cheapest
                hit = np.flatnonzero(cls == action + 1)
                c_act = costs[hit[0]] if hit.shape[0] else np.float32(0.0)
                cost = float(loss0 + (loss1 - loss0) * c_act)
                # a class not listed costs FLT_MAX (VW warns "csoaa predicted an invalid class")
                chosen_loss = costs[hit[-1]] if hit.shape[0] else np.finfo(np.float32).max
                n_lab += 1.0
                n_wrong += float(np.float32(chosen_loss - np.nanmin(costs)))
            else:
                wrong = action + 1 != int(y)
                n_lab += 1.0
                n_wrong += 1.0 if wrong else 0.0
                cost = float(loss1 if wrong else loss0)
            p = float(pmf[idx])
            one[0] = action
            _step(xp, ex, cb_adf, (tables, sub, 1), table, gstate, params, loss_id, cb_type, ap,
                  out_ptr, out_idx, out_val, one, cost, p, ho, scratch, dr_prev, scores, order,
                  acts, probs)  # fmt: skip
    if outputs.predictions:
        write_text(outputs.predictions, "".join(preds))
    stats[cb_adf.N_LAB] = n_lab
    stats[cb_adf.LOSS] = n_wrong
    n_ex = int(stats[cb_adf.N_EX])
    summary = {"examples": n_ex, "per_pass": n_ex, "passes": 1, "best_holdout": None,
               "loss": n_wrong / n_lab if n_lab else None, "malformed": malformed}  # fmt: skip
    summary_lines(say, summary, stats, False)
    if outputs.final_model:
        _save(outputs, ml, cfg, table, gstate, stats, scratch, xp, summary)
    return summary


def _begin(learn: dict, ml, inputs):  # noqa: ANN001, ANN202
    """``-i``: what :func:`streamlearn.run.multiline._start` reads of the initial model
    (options, table, gstate, mtr's sums, the explorer's counter, VW's t), or None."""
    # VW's cbify inserts --cb_min_cost/--cb_max_cost as --loss0/--loss1: a model's (or the
    # command line's) other values disagree, and VW stops ("Disagreeing option values")
    for name, value, loss in (("cb_min_cost", ml.cb_min_cost, ml.loss0),
                              ("cb_max_cost", ml.cb_max_cost, ml.loss1)):  # fmt: skip
        if value is not None and np.float32(value) != np.float32(loss):
            raise UsageError(f"--{name} {value:g} (the model's, or given) disagrees with "
                             f"--cbify's {loss:g} (--loss0/--loss1): give the same, "
                             "as VW")  # fmt: skip
    if not inputs.initial_model:
        return None
    from streamlearn.run.mlmodel import start

    return start(inputs.initial_model, ml, learn)


def _resume(begun, xp, scratch: np.ndarray) -> None:  # noqa: ANN001
    """A continued model's mtr sums (cb_adf's, in ``scratch``, the stats the kernels count
    in) and its explorer's counter."""
    if begun is None:
        return
    from streamlearn.learners import cb_adf

    scratch[cb_adf.EVENTS], scratch[cb_adf.ACTIONS] = begun[3]
    xp.resume(begun[4], scratch)


def _save(outputs, ml, cfg, table, gstate, stats, scratch, xp, summary: dict) -> None:  # noqa: ANN001
    """``-f``: the run's model in VW's format (:func:`streamlearn.run.multiline.save`):
    cb_explore_adf's state with cbify's options in the header."""
    from streamlearn.learners import cb_adf
    from streamlearn.run.mlmodel import save
    from streamlearn.run.mlpasses import Fitted

    kept = stats.copy()  # (the run's counts; mtr's sums are those the kernels kept)
    kept[cb_adf.EVENTS], kept[cb_adf.ACTIONS] = scratch[cb_adf.EVENTS], scratch[cb_adf.ACTIONS]
    learn = {k: v for k, v in cfg.to_dict().items() if k != "theta"}
    fitted = Fitted(table, gstate, kept, [], summary, False, explorer=xp)
    save(fitted, ml, learn, outputs.final_model, getattr(outputs, "model_format", "sl"))


def run_ldf(learn: dict, ml, inputs, outputs, console) -> dict:  # noqa: ANN001
    """``--cbify_ldf``: cost-sensitive LDF examples (``class:cost |x`` per action line, an
    optional ``shared`` line, a blank line to end) played as a contextual bandit (VW's
    ``cbify.cc``: ``do_actual_predict_ldf`` and ``do_actual_learning_ldf``).  Per example:

    1. cb_explore_adf predicts a pmf over its action lines;
    2. an action is drawn as in :func:`run` (``uniform_hash("vw") + n``, the pmf's order);
    3. its cost: the cost of the first line whose class is the drawn action's number
       (1-based), scaled to ``[--loss0, --loss1]``, which also bound regcb's costs (VW
       inserts ``--cb_min_cost``/``--cb_max_cost``); that label goes on the drawn line and
       cb_explore_adf learns.  As VW's ``loss_csldf``, the lines searched are those of a
       list kept across examples: this example's lines over the first ones of the
       longest example before it (VW's ``cs_costs`` only grows), then 0.

    The loss is the drawn line's own cost when its class is the drawn number (else 0);
    ``-p`` writes a line per action line: the drawn number on the drawn line, 0 elsewhere.
    A ``shared`` line is one more action, as in VW 9 (cbify_ldf gives every line an empty
    cb label before ``shared_feature_merger`` looks for the shared one): action 0, with
    the shared features only, never the cost of a class, and no ``-p`` line.
    """
    from streamlearn.learners import cb_adf, csoaa_ldf
    from streamlearn.learners import explore as ex
    from streamlearn.learners.base import G_N, fresh_table
    from streamlearn.reductions.explore import Explorer
    from streamlearn.reductions.options import config_of
    from streamlearn.run.mlconsole import Progress
    from streamlearn.run.mlpasses import cover_cb_type, report_bad
    from streamlearn.run.mlsummary import summary_lines, write_text

    begun = _begin(learn, ml, inputs)
    cfg = config_of(begun[0] if begun else learn)
    if cfg.passes > 1:
        raise UsageError("--cbify_ldf with --passes: not supported yet")
    cbify_ml = ml  # (the model's options: --cbify_ldf's)
    ml = dataclasses.replace(ml, reduction="cb_adf", cb_min_cost=ml.loss0, cb_max_cost=ml.loss1)
    cover_cb_type(ml, console.say)
    cb_type = cb_adf.CB_TYPES[ml.cb_type]
    step = 2 if ml.cb_type == "dr" else 1
    params = cfg.params()
    table = begun[1] if begun else fresh_table(cfg.bits, (0.0, 0.0, 0.0, 0.0), np.float32)
    tables = cb_adf.tables_of(table)
    xp = Explorer(ml, cfg)
    gstate = xp.grow(begun[2] if begun else csoaa_ldf.init_gstate(params), cb_type)
    stats = np.zeros(cb_adf.STATS)
    scratch = np.zeros(cb_adf.STATS)
    _resume(begun, xp, scratch)
    t_start = float(gstate[G_N])
    dr_prev = np.zeros(257)
    loss0, loss1 = np.float32(ml.loss0), np.float32(ml.loss1)
    say = console.say if not getattr(outputs, "vw_quiet", False) else (lambda *a: None)
    progress = None
    if getattr(outputs, "vw_format", False):
        from streamlearn.run.mlconsole import header

        say(header(ml, cfg, inputs, outputs, None, list(inputs.sources or ["-"])))
        progress = Progress(say, False)
    one = np.zeros(1, dtype=np.int64)
    ho = np.zeros(1, dtype=np.bool_)
    counter = 0
    malformed = 0
    preds: list[str] = []
    seen_cls = np.zeros(0, dtype=np.int64)  # VW's cs_costs: each row's first class, cost
    seen_cost = np.zeros(0, dtype=np.float32)
    for part, shared in _ldf_parts(cfg, inputs):
        malformed = report_bad(part.bad, malformed, inputs.strict, say)
        mg = part.mg
        rows = mg.row.shape[0]
        sub = part.sub if part.sub is not None else np.zeros(rows, dtype=np.int64)
        sizes = np.diff(mg.act_ptr)
        if sizes.shape[0] and int(sizes.max()) + 1 > dr_prev.shape[0]:
            dr_prev = np.zeros(int(sizes.max()) + 1)
        scores = np.zeros(rows, dtype=np.float32)
        order = np.zeros(rows, dtype=np.int64)
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        weights = (tables, sub, step)
        nnz = np.diff(mg.indptr)
        for e in range(sizes.shape[0]):
            lo, hi = int(mg.act_ptr[e]), int(mg.act_ptr[e + 1])
            ap = np.array([lo, hi], dtype=np.int64)
            one[0] = -1
            _step(xp, ex, cb_adf, weights, table, gstate, params, cfg.loss_id, cb_type, ap,
                  mg.indptr, mg.indices, mg.values, one, 0.0, 1.0, ho, scratch, dr_prev, scores,
                  order, acts, probs)  # fmt: skip
            pmf = probs[lo:hi].copy()
            idx = ex.sample_after_normalizing(np.uint64(ex.APP_SEED + counter), pmf)
            counter += 1
            action = int(acts[lo + idx])
            drawn = action + 1
            preds.extend(f"{drawn}\n" if i == action else "0\n" for i in range(hi - lo)
                         if not shared[lo + i])  # fmt: skip
            has = part.lab_n[lo:hi] > 0
            cls = part.lab_cls[lo:hi]
            n = hi - lo
            if n > seen_cls.shape[0]:
                seen_cls = np.concatenate([seen_cls, np.zeros(n - seen_cls.shape[0], np.int64)])
                seen_cost = np.concatenate([seen_cost, np.zeros(n - seen_cost.shape[0],
                                                                np.float32)])  # fmt: skip
            seen_cls[:n] = np.where(has, cls, 0)  # (a shared line: class 0, never drawn)
            seen_cost[:n] = np.where(has, part.lab_cost[lo:hi], 0.0)
            labeled = bool(has.any())
            mine = has[action] and cls[action] == drawn
            loss = float(np.float32(part.lab_cost[lo + action])) if mine else 0.0
            stats[cb_adf.N_EX] += 1.0
            stats[cb_adf.N_LAB] += 1.0
            stats[cb_adf.LOSS] += loss
            # VW counts the action lines' own features (none of a shared line's) in its
            # total, and in its table each action line with the shared features merged
            sh = shared[lo:hi]
            own = int(nnz[lo:hi][~sh].sum())
            merged = own + int(np.count_nonzero(~sh)) * max(
                0, int(nnz[lo:hi][sh].sum()) - int(cfg.constant) * int(np.count_nonzero(sh)))
            stats[cb_adf.FEATURES] += own
            if progress is not None:
                # (the first line VW's table shows: a shared line is skipped there)
                first = f"{drawn}" if action == int(np.argmin(sh)) else "0"
                progress.batch(0, np.ones(1, dtype=np.bool_), np.zeros(1, dtype=np.bool_),
                               np.array([loss]), np.array([merged]), np.array([own]),
                               lambda _e, k=labeled: "known" if k else "unknown",
                               lambda _e, f=first: f)  # fmt: skip
            if not labeled:
                continue
            hit = np.flatnonzero(seen_cls == drawn)
            c = seen_cost[int(hit[0])] if hit.shape[0] else np.float32(0.0)
            one[0] = action
            _step(xp, ex, cb_adf, weights, table, gstate, params, cfg.loss_id, cb_type, ap,
                  mg.indptr, mg.indices, mg.values, one, float(loss0 + (loss1 - loss0) * c),
                  float(pmf[idx]), ho, scratch, dr_prev, scores, order, acts, probs)  # fmt: skip
            # VW's cbify_ldf never updates its shared data's t (its update_stats counts the
            # examples only): gd's rate, and the model's t, keep the t it started with
            gstate[G_N] = t_start
    if outputs.predictions:
        write_text(outputs.predictions, "".join(preds))
    n_ex = int(stats[cb_adf.N_EX])
    n_lab = stats[cb_adf.N_LAB]
    summary = {"examples": n_ex, "per_pass": n_ex, "passes": 1, "best_holdout": None,
               "loss": stats[cb_adf.LOSS] / n_lab if n_lab else None,
               "malformed": malformed}  # fmt: skip
    summary_lines(say, summary, stats, False, progress)
    if outputs.final_model:
        _save(outputs, cbify_ml, cfg, table, gstate, stats, scratch, xp, summary)
    return summary


def _ldf_parts(cfg, inputs):  # noqa: ANN001, ANN202
    """``--cbify_ldf``'s examples, parsed as ``--csoaa_ldf``'s but with a shared line kept
    as an action row (:func:`run_ldf`); with each row, whether it was a shared line."""
    from streamlearn.io.examples import crossed, parse_options
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.labels import LABEL_CS, ROW_SHARED
    from streamlearn.io.multiline import example_blocks, merge_shared, parse_examples
    from streamlearn.io.reader import iter_blocks
    from streamlearn.reductions.options import Multiline
    from streamlearn.run.mlpasses import prepare

    full = cfg.namespaces() or compile_interactions()
    parse_inter = parse_options(full, LABEL_CS)
    ml = Multiline(reduction="csoaa_ldf")
    blocks = iter_blocks(inputs.sources or ["-"], inputs.block_size, inputs.max_line_bytes)
    for block in example_blocks(blocks):
        ex = parse_examples(block, cfg.bits, cfg.constant, parse_inter, LABEL_CS)
        flags = ex.labels.flags
        shared = (flags & ROW_SHARED) != 0
        labels = dataclasses.replace(ex.labels, flags=flags & ~np.int64(ROW_SHARED))
        ex = dataclasses.replace(ex, labels=labels)
        part = prepare(ml, ex, merge_shared(ex))
        crossed(part, full, cfg.bits)
        yield part, shared[part.mg.row]


def _step(xp, ex, cb_adf, weights, table, gstate, params, loss_id, cb_type, ap, out_ptr,
          out_idx, out_val, chosen, cost, prob, ho, stats, dr_prev, scores, order, acts,
          probs) -> None:  # noqa: ANN001  # fmt: skip
    """One example through cb_explore_adf: its pmf (``acts``/``probs``), and with a chosen
    action its learning (and the explorer's counts).  ``weights``: cb_adf's (tables, sub,
    step); --cbify's copies carry VW's rewritten indices (step 1, window 0)."""
    tables, sub, step = weights
    c = np.array([cost])
    p = np.array([prob])
    if xp.kind == ex.BAG:
        from streamlearn.learners import cb_bag

        cb_bag.train_bag(
            table, gstate, params, loss_id, cb_type, np.float32(xp.clip_p), xp.ml.bag, xp.width,
            xp.w, xp.eps, xp.ml.first_only, xp.ml.greedify, xp.rng, ap, out_ptr, out_idx,
            out_val, chosen, c, p, ho, xp.learning, xp.counts, np.zeros(ex.XSTATS), acts, probs,
        )  # fmt: skip
        return
    if xp.kind == ex.REGCB:
        from streamlearn.learners import cb_regcb

        cb_regcb.train_regcb(
            table, gstate, params, loss_id, np.float32(xp.clip_p), *xp.regcb_args(), xp.width,
            ap, out_ptr, out_idx, out_val, chosen, c, p, ho, xp.learning, xp.counts, xp.xstats,
            acts, probs,
        )  # fmt: skip
        return
    if xp.kind == ex.COVER:
        from streamlearn.learners import cb_cover

        cb_cover.train_cover(
            table, gstate, params, loss_id, cb_type, np.float32(xp.clip_p), xp.ml.cover,
            xp.width, np.float32(xp.ml.psi), xp.eps, xp.decay, xp.ml.nounif, xp.ml.first_only,
            ap, out_ptr, out_idx, out_val, chosen, c, p, ho, xp.learning, xp.counts, xp.xstats,
            acts, probs,
        )  # fmt: skip
        return
    learn_p = p
    if xp.kind == ex.SQUARECB and chosen[0] >= 0 and chosen[0] != ap[1] - ap[0] - 1:
        learn_p = np.array([1.0])  # squarecb learns with probability 1 (not on the last line)
    cb_adf.train_examples(
        tables, sub, step, gstate, params, loss_id, cb_type, xp.clip_p, ap, out_ptr, out_idx,
        out_val, chosen, c, learn_p, ho, False, stats, dr_prev, scores, order, np.zeros(1),
    )  # fmt: skip
    if xp.kind == ex.SYNTHCOVER:
        ex.synthcover_examples(
            ap, scores, order, chosen, c, p, ho, xp.learning, xp.eps,
            np.float32(xp.ml.synthcoverpsi), xp.ml.synthcoversize, xp.costs, np.zeros(ex.XSTATS),
            acts if chosen[0] < 0 else acts.copy(), probs if chosen[0] < 0 else probs.copy(),
        )  # fmt: skip
        return
    if chosen[0] < 0:
        ex.explore_examples(
            xp.kind, xp.eps, xp.ml.first_only, np.float32(xp.ml.lam),
            np.float32(xp.ml.gamma_scale), np.float32(xp.ml.gamma_exponent), ap, scores, order,
            chosen, c, p, ho, False, xp.learning, xp.xstats, acts, probs,
        )  # fmt: skip
    else:  # the explorer's counts (tau, squarecb's counter) after learning
        ex.explore_examples(
            xp.kind, xp.eps, xp.ml.first_only, np.float32(xp.ml.lam),
            np.float32(xp.ml.gamma_scale), np.float32(xp.ml.gamma_exponent), ap, scores, order,
            chosen, c, p, ho, False, xp.learning, xp.xstats, acts.copy(), probs.copy(),
        )  # fmt: skip


def run_legacy(learn: dict, ml, inputs, outputs, console) -> dict:  # noqa: ANN001
    """``--cbify K --cb_force_legacy``: VW's cbify over the single-line cb_explore (its
    ``predict_or_learn``): per line, cb_explore predicts a pmf over the K actions (in action
    order), an action is drawn as in adf mode, and cb_explore learns ``a:cost:p`` from it
    (no second prediction: cbify's learn returns its prediction).  Loss and ``-p`` as above."""
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.labels import LABEL_CS, read_labels
    from streamlearn.io.parse import FMT_VW, describe_errors, parse_block
    from streamlearn.io.reader import iter_blocks
    from streamlearn.learners import cb_adf, cb_algs
    from streamlearn.learners import explore as ex
    from streamlearn.learners.base import fresh_table
    from streamlearn.reductions.options import config_of
    from streamlearn.run.cblegacy import Legacy
    from streamlearn.run.mlpasses import report_bad
    from streamlearn.run.mlsummary import summary_lines, write_text

    if inputs.initial_model:
        raise UsageError("-i with --cbify: not supported yet")
    if outputs.final_model:
        raise UsageError("-f with --cbify --cb_force_legacy: not supported yet (VW's legacy cb "
                         "model is not written; without --cb_force_legacy it is)")  # fmt: skip
    cfg = config_of(learn)
    k = ml.cbify
    if cfg.passes > 1:
        raise UsageError("--cbify with --passes: not supported yet")
    full = cfg.namespaces() or compile_interactions()
    parse_inter = dataclasses.replace(full, label_kind=LABEL_CS if ml.cbify_cs else 0)
    ml = dataclasses.replace(ml, actions=k, reduction="cb")
    params = cfg.params()
    loss_id = cfg.loss_id
    table = fresh_table(cfg.bits, (0.0, 0.0, 0.0, 0.0), np.float32)
    lg = Legacy(ml, cfg, table, Legacy.gstate_for(ml, params))
    stats = np.zeros(cb_adf.STATS)
    scratch = np.zeros(cb_adf.STATS)
    loss0, loss1 = np.float32(ml.loss0), np.float32(ml.loss1)
    counter = 0
    n_lab = 0.0
    n_wrong = 0.0
    preds: list[str] = []
    malformed = 0
    say = console.say
    none_i = np.zeros(0, dtype=np.int64)
    none_f = np.zeros(0)
    zero = np.zeros(1, dtype=np.int64)
    zero2 = np.zeros(2, dtype=np.int64)
    ho = np.zeros(1, dtype=np.bool_)
    pred = np.zeros(1, dtype=np.int64)
    pmf = np.zeros((1, k), dtype=np.float32)
    loss_out = np.zeros(1)
    raw = np.zeros(1, dtype=np.float32)
    one_ptr = np.array([0, 1], dtype=np.int64)
    for block in iter_blocks(inputs.sources or ["-"], inputs.block_size, inputs.max_line_bytes):
        b = parse_block(block, FMT_VW, cfg.bits, cfg.constant, parse_inter)
        bad = describe_errors(b, limit=1 << 30) if (b.status != 0).any() else []
        malformed = report_bad(bad, malformed, inputs.strict, say)
        lab = read_labels(b, LABEL_CS, parse_inter.vw_numbers) if ml.cbify_cs else None
        for r in np.flatnonzero(b.status == 0):
            lo, hi = int(b.indptr[r]), int(b.indptr[r + 1])
            ptr = np.array([0, hi - lo], dtype=np.int64)
            idx, val = b.indices[lo:hi], b.values[lo:hi]
            y = b.labels[r]
            labeled = not math.isnan(y)
            if lab is not None:
                cls = lab.cls[lab.ptr[r] : lab.ptr[r + 1]]
                costs = lab.cost[lab.ptr[r] : lab.ptr[r + 1]].astype(np.float32)
                labeled = costs.shape[0] > 0 and not np.isnan(costs).all()
            # cb_explore predicts with no label
            cb_algs.train_examples(
                lg.table, lg.gstate, params, loss_id, lg.cb_type, k, lg.explore, lg.eps,
                lg.bags, lg.xstate, lg.rng, False, ptr, idx, val, zero2, none_i, none_f, none_f,
                zero, ho, scratch, pred, raw, pmf, loss_out, lg.cover,
            )  # fmt: skip
            stats[cb_adf.N_EX] += 1.0
            stats[cb_adf.FEATURES] += hi - lo
            probs = pmf[0].copy()
            idx_a = ex.sample_after_normalizing(np.uint64(ex.APP_SEED + counter), probs)
            counter += 1
            action = int(idx_a) + 1
            preds.append(f"{action}\n")
            if not labeled:
                continue
            if lab is not None:
                hit = np.flatnonzero(cls == action)
                c_act = costs[hit[0]] if hit.shape[0] else np.float32(0.0)
                cost = float(loss0 + (loss1 - loss0) * c_act)
                chosen_loss = costs[hit[-1]] if hit.shape[0] else np.finfo(np.float32).max
                n_lab += 1.0
                n_wrong += float(np.float32(chosen_loss - np.nanmin(costs)))
            else:
                wrong = action != int(y)
                n_lab += 1.0
                n_wrong += 1.0 if wrong else 0.0
                cost = float(loss1 if wrong else loss0)
            cb_algs.train_examples(
                lg.table, lg.gstate, params, loss_id, lg.cb_type, k, lg.explore, lg.eps,
                lg.bags, lg.xstate, lg.rng, False, ptr, idx, val, one_ptr,
                np.array([action], dtype=np.int64), np.array([cost]),
                np.array([float(probs[idx_a])]), zero, ho, scratch, pred, raw, pmf, loss_out,
                lg.cover,
            )  # fmt: skip
    if outputs.predictions:
        write_text(outputs.predictions, "".join(preds))
    stats[cb_adf.N_LAB] = n_lab
    stats[cb_adf.LOSS] = n_wrong
    n_ex = int(stats[cb_adf.N_EX])
    summary = {"examples": n_ex, "per_pass": n_ex, "passes": 1, "best_holdout": None,
               "loss": n_wrong / n_lab if n_lab else None, "malformed": malformed}  # fmt: skip
    summary_lines(say, summary, stats, False)
    return summary
