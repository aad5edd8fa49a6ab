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
    from streamlearn.io.labels import LABEL_CS
    from streamlearn.learners import cb_adf
    from streamlearn.learners.cb_to_adf import index_mask
    from streamlearn.reductions.options import config_of
    from streamlearn.run.mlpasses import cover_cb_type

    begun = _begin(learn, ml, inputs)
    cfg = config_of(begun[0] if begun else learn)
    k = ml.cbify
    if cfg.passes > 1:
        raise UsageError("--cbify with --passes: not supported yet")
    full = cfg.namespaces() or compile_interactions()
    if full.crosses_or_filters:
        raise UsageError("--cbify with interactions or namespace filters: not supported yet")
    parse_inter = dataclasses.replace(full, label_kind=LABEL_CS if ml.cbify_cs else 0)
    cover_cb_type(ml, console.say)
    lr = _Learner(begun, ml, cfg, cb_adf.CB_TYPES[ml.cb_type], np.zeros(k + 2))
    below = _width_below(ml, lr)
    cim = index_mask(k, below)
    tally = _Tally(ml)
    for b, lab in _lines(cfg, ml, inputs, parse_inter, tally, console.say):
        _play_copies(lr, tally, b, lab, k, below, cim)
    summary = _finish(outputs, console.say, tally, lr.stats, tally.n_lab, tally.loss)
    if outputs.final_model:
        _save(outputs, ml, lr, summary)
    return summary


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
    from streamlearn.learners import cb_adf
    from streamlearn.learners.base import G_N
    from streamlearn.reductions.options import config_of
    from streamlearn.run.mlpasses import cover_cb_type, report_bad

    begun = _begin(learn, ml, inputs)
    cfg = config_of(begun[0] if begun else learn)
    if cfg.passes > 1:
        raise UsageError("--cbify_ldf with --passes: not supported yet")
    cbify_ml = ml  # (the model's options: --cbify_ldf's)
    ml = dataclasses.replace(ml, reduction="cb_adf", cb_min_cost=ml.loss0, cb_max_cost=ml.loss1)
    cover_cb_type(ml, console.say)
    lr = _Learner(begun, ml, cfg, cb_adf.CB_TYPES[ml.cb_type], np.zeros(257))
    step = 2 if ml.cb_type == "dr" else 1
    t_start = float(lr.gstate[G_N])
    say, progress = _ldf_console(ml, cfg, inputs, outputs, console)
    tally = _Tally(ml)
    seen = _CsCosts()
    for part, shared in _ldf_parts(cfg, inputs):
        tally.malformed = report_bad(part.bad, tally.malformed, inputs.strict, say)
        _play_ldf(lr, tally, seen, part, shared, step, t_start, progress)
    stats = lr.stats
    summary = _finish(outputs, say, tally, stats, stats[cb_adf.N_LAB], stats[cb_adf.LOSS],
                      progress)  # fmt: skip
    if outputs.final_model:
        _save(outputs, cbify_ml, lr, summary)
    return summary


def run_legacy(learn: dict, ml, inputs, outputs, console) -> dict:  # noqa: ANN001
    """``--cbify K --cb_force_legacy``: VW's cbify over the single-line cb_explore (its
    ``predict_or_learn``): per line, cb_explore predicts a pmf over the K actions (in action
    order), an action is drawn as in adf mode, and cb_explore learns ``a:cost:p`` from it
    (no second prediction: cbify's learn returns its prediction).  Loss and ``-p`` as above."""
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.labels import LABEL_CS
    from streamlearn.learners import cb_adf
    from streamlearn.reductions.options import config_of

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
    lg = LegacyLearner(ml, cfg)
    tally = _Tally(ml)
    for b, lab in _lines(cfg, ml, inputs, parse_inter, tally, console.say):
        for r in np.flatnonzero(b.status == 0):
            lo, hi = int(b.indptr[r]), int(b.indptr[r + 1])
            line = (np.array([0, hi - lo], dtype=np.int64), b.indices[lo:hi], b.values[lo:hi])
            label, labeled = _label(b, lab, r)
            probs = lg.predict(line)  # (cb_explore predicts with no label)
            lg.stats[cb_adf.N_EX] += 1.0
            lg.stats[cb_adf.FEATURES] += hi - lo
            idx_a = tally.draw(probs)
            action = int(idx_a) + 1
            tally.preds.append(f"{action}\n")
            tally.raw(label)
            if labeled:
                lg.learn(line, action, tally.cost(label, action), float(probs[idx_a]))
    return _finish(outputs, console.say, tally, lg.stats, tally.n_lab, tally.loss)


# ---------------------------------------------------------------------- shared by the drivers


def _begin(learn: dict, ml, inputs):  # noqa: ANN001, ANN202
    """``-i``: what :func:`streamlearn.run.mlmodel.start` reads of the initial model
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


class _Learner:
    """cb_explore_adf's state over a run of :func:`run` or :func:`run_ldf`, fresh or
    ``-i``'s (``begun``, :func:`_begin`): gd's table and global state, cb_adf's tables,
    the explorer, the run's counts (``stats``) and those the kernels keep (``scratch``:
    mtr's sums); :meth:`play` puts one example through it."""

    def __init__(self, begun, ml, cfg, cb_type: int, dr_prev: np.ndarray) -> None:  # noqa: ANN001
        from streamlearn.learners import cb_adf, csoaa_ldf
        from streamlearn.learners import explore as ex
        from streamlearn.learners.base import fresh_table
        from streamlearn.reductions.explore import Explorer

        self.cb_adf, self.ex = cb_adf, ex
        self.cfg = cfg
        self.cb_type = cb_type
        self.params = cfg.params()
        self.table = begun[1] if begun else fresh_table(cfg.bits, (0.0, 0.0, 0.0, 0.0), np.float32)
        self.tables = cb_adf.tables_of(self.table)
        self.xp = Explorer(ml, cfg)
        gstate = begun[2] if begun else csoaa_ldf.init_gstate(self.params)
        self.gstate = self.xp.grow(gstate, cb_type)
        self.stats = np.zeros(cb_adf.STATS)
        self.scratch = np.zeros(cb_adf.STATS)
        self.dr_prev = dr_prev
        self.chosen = np.zeros(1, dtype=np.int64)
        self.ho = np.zeros(1, dtype=np.bool_)
        if begun is not None:  # a continued model's mtr sums and its explorer's counter
            self.scratch[cb_adf.EVENTS], self.scratch[cb_adf.ACTIONS] = begun[3]
            self.xp.resume(begun[4], self.scratch)

    def play(self, weights, ap, feats, chosen: int, cost: float, prob: float, out) -> None:  # noqa: ANN001
        """One example (action lines ``ap``) through :func:`_step`: ``chosen`` -1 predicts
        (the pmf in ``out``'s acts and probs), an action learns its ``cost`` drawn with
        ``prob``.  ``weights``: cb_adf's (sub, step); ``feats``: the action lines' (indptr,
        indices, values); ``out``: (scores, order, acts, probs)."""
        self.chosen[0] = chosen
        _step(self.xp, self.ex, self.cb_adf, (self.tables, *weights), self.table, self.gstate,
              self.params, self.cfg.loss_id, self.cb_type, ap, *feats, self.chosen, cost, prob,
              self.ho, self.scratch, self.dr_prev, *out)  # fmt: skip


def _buffers(rows: int) -> tuple:
    """What :func:`_step` writes for ``rows`` action lines: (scores, order, acts, probs)."""
    return (np.zeros(rows, dtype=np.float32), np.zeros(rows, dtype=np.int64),
            np.zeros(rows, dtype=np.int64), np.zeros(rows, dtype=np.float32))  # fmt: skip


class _Tally:
    """What a run counts as it plays: its draws (VW's ``example_counter``, which seeds each),
    the ``-p`` lines, the malformed lines, and (:func:`run`, :func:`run_legacy`) the labeled
    lines and their loss."""

    def __init__(self, ml) -> None:  # noqa: ANN001
        from streamlearn.learners import explore as ex

        self.ex = ex
        self.loss0, self.loss1 = np.float32(ml.loss0), np.float32(ml.loss1)
        # (--flip_loss_sign: VW's loss() of a class label, not of a cost-sensitive one's)
        self.sign = np.float32(-1.0 if ml.flip_loss_sign else 1.0)
        self.counter = 0
        self.preds: list[str] = []
        self.raws: list[str] = []
        self.malformed = 0
        self.n_lab = 0.0
        self.loss = 0.0

    def raw(self, label: tuple) -> None:
        """``-r``'s line of a line of :func:`_label`: under ``--cbify_cs`` VW's cost-sensitive
        line of the classes it lists, each scored 0 (nothing scores the class line itself);
        else none (VW writes an empty file)."""
        if label[1] is not None:
            self.raws.append("".join(f"{' ' if j else ''}{int(c)}:0"
                                     for j, c in enumerate(label[1])) + "\n")  # fmt: skip

    def draw(self, pmf: np.ndarray):  # noqa: ANN201
        """An index into ``pmf`` drawn with ``uniform_hash("vw") + n``, n the draws so far."""
        idx = self.ex.sample_after_normalizing(np.uint64(self.ex.APP_SEED + self.counter), pmf)
        self.counter += 1
        return idx

    def scaled(self, c) -> float:  # noqa: ANN001
        """A class's cost scaled to ``[--loss0, --loss1]``."""
        return float(self.loss0 + (self.loss1 - self.loss0) * c)

    def cost(self, label: tuple, action: int) -> float:
        """The cost of drawn ``action`` (1-based) under a line's :func:`_label`, its loss
        counted."""
        y, cls, costs = label
        self.n_lab += 1.0
        if cls is None:
            wrong = action != int(y)
            self.loss += 1.0 if wrong else 0.0
            return float(self.sign * (self.loss1 if wrong else self.loss0))
        # VW's loss_cs and update_stats_cs_label: the drawn class's cost (0 when not
        # listed) scaled to [loss0, loss1]; the loss is its cost above the cheapest
        hit = np.flatnonzero(cls == action)
        c_act = costs[hit[0]] if hit.shape[0] else np.float32(0.0)
        # a class not listed costs FLT_MAX (VW warns "csoaa predicted an invalid class")
        chosen_loss = costs[hit[-1]] if hit.shape[0] else np.finfo(np.float32).max
        self.loss += float(np.float32(chosen_loss - np.nanmin(costs)))
        return self.scaled(c_act)


def _finish(outputs, say, tally: _Tally, stats: np.ndarray, n_lab, loss, progress=None) -> dict:  # noqa: ANN001
    """The run's end: ``-p``'s lines written, the summary (``n_lab`` labeled examples of
    total ``loss``) said and returned."""
    from streamlearn.learners import cb_adf
    from streamlearn.run.mlsummary import summary_lines, write_text

    if outputs.predictions:
        write_text(outputs.predictions, "".join(tally.preds))
    if getattr(outputs, "raw_predictions", None):
        write_text(outputs.raw_predictions, "".join(tally.raws))
    stats[cb_adf.N_LAB] = n_lab
    stats[cb_adf.LOSS] = loss
    n_ex = int(stats[cb_adf.N_EX])
    summary = {"examples": n_ex, "per_pass": n_ex, "passes": 1, "best_holdout": None,
               "loss": loss / n_lab if n_lab else None, "malformed": tally.malformed}  # fmt: skip
    summary_lines(say, summary, stats, False, progress)
    return summary


def _save(outputs, ml, lr: _Learner, summary: dict) -> None:  # noqa: ANN001
    """``-f``: the run's model in VW's format (:func:`streamlearn.run.mlmodel.save`):
    cb_explore_adf's state with cbify's options in the header."""
    from streamlearn.learners import cb_adf
    from streamlearn.run.mlmodel import save
    from streamlearn.run.mlpasses import Fitted

    kept = lr.stats.copy()  # (the run's counts; mtr's sums are those the kernels kept)
    kept[cb_adf.EVENTS] = lr.scratch[cb_adf.EVENTS]
    kept[cb_adf.ACTIONS] = lr.scratch[cb_adf.ACTIONS]
    learn = {k: v for k, v in lr.cfg.to_dict().items() if k != "theta"}
    fitted = Fitted(lr.table, lr.gstate, kept, [], summary, False, explorer=lr.xp)
    save(fitted, ml, learn, outputs.final_model, getattr(outputs, "model_format", "sl"))


# ---------------------------------------------------------------------- --cbify K's lines


def _lines(cfg, ml, inputs, parse_inter, tally: _Tally, say):  # noqa: ANN001, ANN202
    """The data's batches of lines (:func:`run`, :func:`run_legacy`), their malformed lines
    reported; with each, its ``--cbify_cs`` labels (None without)."""
    from streamlearn.io.labels import LABEL_CS, read_labels
    from streamlearn.io.parse import FMT_VW, parse_block
    from streamlearn.io.reader import iter_blocks
    from streamlearn.run.mlpasses import report_block

    for block in iter_blocks(inputs.sources or ["-"], inputs.block_size, inputs.max_line_bytes,
                             inputs.flat_text(cfg)):  # fmt: skip
        b = parse_block(block, FMT_VW, cfg.bits, cfg.constant, parse_inter)
        tally.malformed = report_block(b, tally.malformed, inputs.strict, say)
        yield b, read_labels(b, LABEL_CS, parse_inter.vw_numbers) if ml.cbify_cs else None


def _label(b, lab, r) -> tuple:  # noqa: ANN001
    """Line ``r``'s label, (y, classes, costs) (the classes and costs under ``--cbify_cs``,
    else None), and whether it has one (a line without is only predicted)."""
    y = b.labels[r]
    if lab is None:
        return (y, None, None), not math.isnan(y)
    cls = lab.cls[lab.ptr[r] : lab.ptr[r + 1]]
    costs = lab.cost[lab.ptr[r] : lab.ptr[r + 1]].astype(np.float32)
    return (y, cls, costs), costs.shape[0] > 0 and not np.isnan(costs).all()


def _width_below(ml, lr: _Learner) -> int:  # noqa: ANN001
    """The feature width below ``--cbify K``'s copies: cb_adf's (2 for ``--cb_type dr``,
    else 1), times B under ``--bag B``, cover's under ``--cover N``.  Under ``--bag`` the
    explorer then steps by 1: the copies' indices are VW's rewritten ones."""
    from streamlearn.learners import explore as ex

    xp = lr.xp
    w = 2 if lr.cb_type == lr.cb_adf.DR else 1
    below = w * ml.bag if xp.kind == ex.BAG else w
    if xp.kind == ex.COVER:
        from streamlearn.run.mlpasses import feature_width

        below = feature_width(ml)  # (xp.width is 1: the copies' indices are VW's)
    if xp.kind == ex.BAG:
        xp.width, xp.w = 1, w
    return below


def _copies(b, k: int, below: int, cim, bits: int) -> tuple:  # noqa: ANN001
    """Batch ``b``'s well-formed lines copied to ``k`` action lines each
    (:func:`streamlearn.reductions.cb_adf.copies`): the examples' action pointers, each
    one's row in ``b``, each action line's copy, and the action lines' features."""
    from streamlearn.reductions.cb_adf import copies

    act_ptr, rows, sub, out_ptr, out_idx, out_val, _ = copies(b, k, below, cim, bits)
    return act_ptr, rows, sub, (out_ptr, out_idx, out_val)


def _play_copies(lr: _Learner, tally: _Tally, b, lab, k: int, below: int, cim) -> None:  # noqa: ANN001
    """A batch of ``--cbify K`` lines played in order, each over its ``k`` copies: a pmf, a
    draw (its ``-p`` line), and for a labeled line the drawn action's cost learned."""
    cb_adf = lr.cb_adf
    act_ptr, rows, sub, feats = _copies(b, k, below, cim, lr.cfg.bits)
    out = _buffers(rows.shape[0] * k)
    acts, probs = out[2], out[3]
    for e in range(rows.shape[0]):
        lo, hi = int(act_ptr[e]), int(act_ptr[e + 1])
        ap = np.array([lo, hi], dtype=np.int64)
        label, labeled = _label(b, lab, int(rows[e]))
        lr.play((sub, 1), ap, feats, -1, 0.0, 1.0, out)  # (no label, nothing learned or counted)
        lr.stats[cb_adf.N_EX] += 1.0
        # (VW counts the class line's features, not its copies')
        lr.stats[cb_adf.FEATURES] += b.indptr[rows[e] + 1] - b.indptr[rows[e]]
        pmf = probs[lo:hi].copy()
        idx = tally.draw(pmf)
        action = int(acts[lo + idx])
        tally.preds.append(f"{action + 1}\n")
        tally.raw(label)
        if labeled:
            cost = tally.cost(label, action + 1)
            lr.play((sub, 1), ap, feats, action, cost, float(pmf[idx]), out)


# ---------------------------------------------------------------------- --cbify_ldf


def _ldf_console(ml, cfg, inputs, outputs, console) -> tuple:  # noqa: ANN001
    """:func:`run_ldf`'s ``say`` (nothing under ``--quiet``) and, under ``sl vw``, VW's
    header said and its progress table."""
    from streamlearn.run.mlconsole import Progress

    say = console.say if not getattr(outputs, "vw_quiet", False) else (lambda *a: None)
    progress = None
    if getattr(outputs, "vw_format", False):
        from streamlearn.run.mlconsole import header
        from streamlearn.run.vwconsole import say_notes

        if not getattr(outputs, "vw_quiet", False):
            say_notes(cfg, outputs)
        say(header(ml, cfg, inputs, outputs, None, list(inputs.sources or ["-"])))
        progress = Progress(say, False, step=getattr(console, "progress", 0.0))
    return say, progress


def _ldf_parts(cfg, inputs):  # noqa: ANN001, ANN202
    """``--cbify_ldf``'s examples, parsed as ``--csoaa_ldf``'s but with a shared line kept
    as an action row (:func:`run_ldf`); with each row, whether it was a shared line."""
    from streamlearn.io.examples import crossed, parse_options
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.labels import LABEL_CS, ROW_SHARED
    from streamlearn.io.multiline import example_blocks, merge_shared, parse_examples
    from streamlearn.io.reader import iter_blocks
    from streamlearn.reductions import Multiline
    from streamlearn.run.mlpasses import prepare

    full = cfg.namespaces() or compile_interactions()
    parse_inter = parse_options(full, LABEL_CS)
    ml = Multiline(reduction="csoaa_ldf")
    blocks = iter_blocks(inputs.sources or ["-"], inputs.block_size, inputs.max_line_bytes,
                         inputs.flat_text(cfg))  # fmt: skip
    for block in example_blocks(blocks):
        ex = parse_examples(block, cfg.bits, cfg.constant, parse_inter, LABEL_CS)
        flags = ex.labels.flags
        shared = (flags & ROW_SHARED) != 0
        labels = dataclasses.replace(ex.labels, flags=flags & ~np.int64(ROW_SHARED))
        ex = dataclasses.replace(ex, labels=labels)
        part = prepare(ml, ex, merge_shared(ex))
        crossed(part, full, cfg.bits)
        yield part, shared[part.mg.row]


class _CsCosts:
    """VW's ``cs_costs`` under ``--cbify_ldf``: each action line's class and cost (0, 0
    for a line without), kept across examples; the list only grows, an example's lines
    written over the first ones of the longest example before it."""

    def __init__(self) -> None:
        self.cls = np.zeros(0, dtype=np.int64)
        self.cost = np.zeros(0, dtype=np.float32)

    def keep(self, has: np.ndarray, cls: np.ndarray, cost: np.ndarray) -> None:
        """An example's lines: ``has`` a label, its class and cost."""
        n = has.shape[0]
        if n > self.cls.shape[0]:
            self.cls = np.concatenate([self.cls, np.zeros(n - self.cls.shape[0], np.int64)])
            self.cost = np.concatenate([self.cost, np.zeros(n - self.cost.shape[0],
                                                            np.float32)])  # fmt: skip
        self.cls[:n] = np.where(has, cls, 0)  # (a shared line: class 0, never drawn)
        self.cost[:n] = np.where(has, cost, 0.0)

    def of(self, drawn: int):  # noqa: ANN201
        """The cost of the first line whose class is ``drawn`` (0 when none)."""
        hit = np.flatnonzero(self.cls == drawn)
        return self.cost[int(hit[0])] if hit.shape[0] else np.float32(0.0)


def _play_ldf(lr: _Learner, tally: _Tally, seen: _CsCosts, part, shared: np.ndarray,
              step: int, t_start: float, progress) -> None:  # noqa: ANN001  # fmt: skip
    """A batch of ``--cbify_ldf`` examples played in order (:func:`run_ldf`): a pmf over
    each one's lines, a draw (its ``-p`` lines), its counts, and for a labeled example
    the drawn line's cost learned."""
    from streamlearn.learners.base import G_N

    mg = part.mg
    rows = mg.row.shape[0]
    sub = part.sub if part.sub is not None else np.zeros(rows, dtype=np.int64)
    sizes = np.diff(mg.act_ptr)
    if sizes.shape[0] and int(sizes.max()) + 1 > lr.dr_prev.shape[0]:
        lr.dr_prev = np.zeros(int(sizes.max()) + 1)
    out = _buffers(rows)
    acts, probs = out[2], out[3]
    feats = (mg.indptr, mg.indices, mg.values)
    nnz = np.diff(mg.indptr)
    for e in range(sizes.shape[0]):
        lo, hi = int(mg.act_ptr[e]), int(mg.act_ptr[e + 1])
        ap = np.array([lo, hi], dtype=np.int64)
        lr.play((sub, step), ap, feats, -1, 0.0, 1.0, out)
        pmf = probs[lo:hi].copy()
        idx = tally.draw(pmf)
        action = int(acts[lo + idx])
        drawn = action + 1
        tally.preds.extend(f"{drawn}\n" if i == action else "0\n" for i in range(hi - lo)
                           if not shared[lo + i])  # fmt: skip
        has = part.lab_n[lo:hi] > 0
        cls = part.lab_cls[lo:hi]
        seen.keep(has, cls, part.lab_cost[lo:hi])
        labeled = bool(has.any())
        mine = has[action] and cls[action] == drawn
        loss = float(np.float32(part.lab_cost[lo + action])) if mine else 0.0
        _count_ldf(lr, progress, shared[lo:hi], nnz[lo:hi], loss, labeled, drawn, action)
        if not labeled:
            continue
        cost = tally.scaled(seen.of(drawn))
        lr.play((sub, step), ap, feats, action, cost, float(pmf[idx]), out)
        # VW's cbify_ldf never updates its shared data's t (its update_stats counts the
        # examples only): gd's rate, and the model's t, keep the t it started with
        lr.gstate[G_N] = t_start


def _count_ldf(lr: _Learner, progress, sh: np.ndarray, nnz: np.ndarray, loss: float,
               labeled: bool, drawn: int, action: int) -> None:  # noqa: ANN001  # fmt: skip
    """An ``--cbify_ldf`` example counted (every one as labeled, as VW), and its line in
    VW's progress table: ``sh``, which of its lines is shared; ``nnz``, their features."""
    cb_adf, stats = lr.cb_adf, lr.stats
    stats[cb_adf.N_EX] += 1.0
    stats[cb_adf.N_LAB] += 1.0
    stats[cb_adf.LOSS] += loss
    # VW counts the action lines' own features (none of a shared line's) in its
    # total, and in its table each action line with the shared features merged
    own = int(nnz[~sh].sum())
    shared_nnz = int(nnz[sh].sum()) - int(lr.cfg.constant) * int(np.count_nonzero(sh))
    merged = own + int(np.count_nonzero(~sh)) * max(0, shared_nnz)
    stats[cb_adf.FEATURES] += own
    if progress is not None:
        # (the first line VW's table shows: a shared line is skipped there)
        first = f"{drawn}" if action == int(np.argmin(sh)) else "0"
        progress.batch(0, np.ones(1, dtype=np.bool_), np.zeros(1, dtype=np.bool_),
                       np.array([loss]), np.array([merged]), np.array([own]),
                       lambda _e, k=labeled: "known" if k else "unknown",
                       lambda _e, f=first: f)  # fmt: skip


# ---------------------------------------------------------------------- --cb_force_legacy


class LegacyLearner:
    """cb_explore over ``--cbify K --cb_force_legacy``'s lines (VW's cb_algs,
    :class:`streamlearn.run.cblegacy.Legacy`, a fresh model): the kernel's buffers and
    the run's counts (``stats``)."""

    def __init__(self, ml, cfg) -> None:  # noqa: ANN001
        from streamlearn.learners import cb_adf
        from streamlearn.learners.base import fresh_table
        from streamlearn.run.cblegacy import Legacy

        self.params = cfg.params()
        self.loss_id = cfg.loss_id
        table = fresh_table(cfg.bits, (0.0, 0.0, 0.0, 0.0), np.float32)
        self.lg = Legacy(ml, cfg, table, Legacy.gstate_for(ml, self.params))
        self.k = ml.actions
        self.stats = np.zeros(cb_adf.STATS)
        self.scratch = np.zeros(cb_adf.STATS)
        self.none_i, self.none_f = np.zeros(0, dtype=np.int64), np.zeros(0)  # (no label)
        self.no_label = np.zeros(2, dtype=np.int64)
        self.one_label = np.array([0, 1], dtype=np.int64)
        self.policy = np.zeros(1, dtype=np.int64)  # (not --eval)
        self.ho = np.zeros(1, dtype=np.bool_)
        self.pred = np.zeros(1, dtype=np.int64)
        self.pmf = np.zeros((1, self.k), dtype=np.float32)
        self.loss_out = np.zeros(1)
        self.raw = np.zeros(1, dtype=np.float32)

    def predict(self, line: tuple) -> np.ndarray:
        """A line's (indptr, indices, values) pmf over the actions, in action order."""
        self._train(line, self.no_label, self.none_i, self.none_f, self.none_f)
        return self.pmf[0].copy()

    def learn(self, line: tuple, action: int, cost: float, prob: float) -> None:
        """``action:cost:prob`` (the action 1-based) learned from a line."""
        self._train(line, self.one_label, np.array([action], dtype=np.int64),
                    np.array([cost]), np.array([prob]))  # fmt: skip

    def _train(self, line: tuple, lab_ptr, actions, costs, probs) -> None:  # noqa: ANN001
        from streamlearn.learners import cb_algs

        lg = self.lg
        cb_algs.train_examples(
            lg.table, lg.gstate, self.params, self.loss_id, lg.cb_type, self.k, lg.explore,
            lg.eps, lg.bags, lg.xstate, lg.rng, False, *line, lab_ptr, actions, costs, probs,
            self.policy, self.ho, self.scratch, self.pred, self.raw, self.pmf,
            self.loss_out, lg.cover,
        )  # fmt: skip


# ---------------------------------------------------------------------- cb_explore_adf


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
