"""VW's conditional contextual bandits (``--ccb_explore_adf``) and slates (``--slates``)
through ``sl vw``: the passes of :func:`streamlearn.run.multiline.fit` for these two.

A CCB example (:mod:`streamlearn.io.ccblabels`) is a shared line, action lines and slot
lines.  Each slot, in order, is one ``--cb_explore_adf`` example over the actions that
earlier slots did not take (and, when the slot lists some, only those): each action
line gets the shared line's features, the slot's (its default namespace moved to VW's
``CCB_SLOT_NAMESPACE``, 139) and, once the run has seen an example of several slots (or
a slot with features), the slot's index feature ``index<k>`` in namespace ``_id``
(``CCB_ID_NAMESPACE``, 140) with VW's interactions for it
(:func:`streamlearn.io.interactions.with_ccb_slot_index`).  cb_adf scores and learns
(:func:`streamlearn.learners.cb_adf.train_examples`), the explorer makes the pmf
(:func:`streamlearn.learners.explore.explore_examples`) and VW's ``cb_sample`` puts
the logged action first (a learned slot whose logged action is offered) or one drawn
from the pmf with VW's global generator; that first action is the slot's, and the
later slots lose it.

Loss (VW's ``update_stats_ccb``): of the first slot (every slot with
``--all_slots_loss``) ``cost/p`` times the first action's probability when it is the
logged one; an example counts as labeled when one of its slots is.  ``-p``: one line
per slot, ``action:probability`` comma-joined (actions 0-based among the example's
action lines), and an empty line after each example.

Slates (VW's ``slates.cc``) run through the same: each action line belongs to a slot
(``slates action <slot>``), a slot chooses among its own actions only, the shared
line's cost is the slate's and every slot's logged cost, and the loss is
``cost * (Σ_slots π(first)/p_logged - (slots - 1))``; ``-p`` numbers each slot's
actions from 0.

VW runs each slot as it comes: the second slot's actions depend on what the first
chose, so examples go one by one (a kernel call per slot), not a batch per call.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streamlearn.errors import UsageError
from streamlearn.io import ccblabels as cl

F32 = np.float32
CONSTANT_NS = 128
DEFAULT_NS = 32


def _option(ml) -> str:  # noqa: ANN001
    """The VW option of the run's reduction."""
    return "slates" if ml.reduction == "slates" else "ccb_explore_adf"


def _g(x: float) -> str:
    """A float as C++'s ostream writes it (6 significant digits)."""
    s = f"{float(F32(x)):g}"
    return "-0" if s == "-0" else s


class _Runner:
    """The run's state over its examples: the weights (cb_adf's), the explorer's and
    cb_sample's state, the interactions in force and the summary's counts."""

    def __init__(self, ml, cfg, params, tables, step, gstate, stats, dr_prev, predictions: bool):  # noqa: ANN001
        from streamlearn.io.interactions import compile_interactions, with_ccb_slot_index
        from streamlearn.learners import cb_adf
        from streamlearn.learners import explore as ex

        if ml.explore not in ("greedy", "first", "softmax"):
            raise UsageError(f"--{_option(ml)} with --{ml.explore}: not supported yet "
                             "(epsilon-greedy, --first, --softmax)")  # fmt: skip
        self.ml = ml
        self.cfg = cfg
        self.slates = ml.reduction == "slates"
        self.params = params
        self.tables = tables
        self.step = step
        self.gstate = gstate
        self.stats = stats
        self.dr_prev = dr_prev
        self.cb_adf = cb_adf
        self.ex = ex
        self.cb_type = cb_adf.CB_TYPES[ml.cb_type]
        self.kind = ex.EXPLORERS[ml.explore]
        default = 0.05 if ml.explore == "greedy" else 0.0
        self.eps = F32(default if ml.epsilon is None else ml.epsilon)
        self.xstats = np.zeros(ex.XSTATS)
        self.xstats[ex.X_TAU] = ml.tau
        self.learning = params[10] != 0.0  # P_LEARN
        self.rng = np.array([cfg.seed], dtype=np.uint64)
        self.user = cfg.namespaces() or compile_interactions()
        self.with_index = with_ccb_slot_index(self.user)
        self.seen_multi = False
        self.bits = cfg.bits
        self.mask = np.uint64((1 << cfg.bits) - 1)
        self.id_hashes: list[int] = []
        self.pred_lines: list[str] | None = [] if predictions else None
        self.trace = None  # a run.ccbaudit.SlotAudit: --audit, --invert_hash's names
        self.vw_log = False  # VW's warning about partly labeled examples (sl vw, not --quiet)

    def closing_lines(self) -> list[str]:
        """VW's lines after the summary: none for CCB and slates."""
        return []

    # ------------------------------------------------------------------ features

    def _id_feature(self, k: int) -> int:
        from streamlearn.hashing import hashstring_py

        while len(self.id_hashes) <= k:
            seed = hashstring_py("_id", self.cfg.hash_seed)
            self.id_hashes.append(hashstring_py(f"index{len(self.id_hashes)}", seed))
        return self.id_hashes[k] & int(self.mask)

    @staticmethod
    def _tag_seed(b, r: int) -> int:  # noqa: ANN001
        """VW's ``try_extract_random_seed``: a slot tagged ``seed=<text>`` samples with
        ``uniform_hash(text)`` (murmur3, seed 0); -1: no such tag."""
        if b.tag_end[r] <= b.tag_start[r]:
            return -1
        tag = b.block.data[int(b.tag_start[r]) : int(b.tag_end[r])].tobytes()
        if len(tag) <= 5 or not tag.startswith(b"seed="):
            return -1
        import mmh3

        return mmh3.hash(tag[5:], 0, signed=False)

    def _outcomes(self, labels, n_act: int, slot_labels) -> list:  # noqa: ANN001
        """Each slot's (logged action, cost, probability, included actions) in CCB terms
        (slates: each slot's actions are its pool, the cost the shared line's)."""
        if not self.slates:
            return [(lab.action, lab.cost, lab.prob, lab.include) for lab in slot_labels]
        pools: list[list[int]] = [[] for _ in slot_labels]
        for i, lab in enumerate(labels[1 : 1 + n_act]):
            pools[lab.slot].append(i)
        shared = labels[0]
        out = []
        for j, lab in enumerate(slot_labels):
            if shared.has_cost and lab.action >= 0:
                out.append((pools[j][lab.action], shared.cost, lab.prob, pools[j]))
            else:
                out.append((-1, 0.0, 0.0, pools[j]))
        return out

    # ------------------------------------------------------------------ a block

    def block(self, b, examples: list) -> tuple:  # noqa: ANN001
        """Learn from (or score) the well-formed ``examples`` (first row, labels) of batch
        ``b``, in order; their (labeled, loss, features, label text, prediction text)."""
        out: list[tuple] = []
        seg: list = []
        seg_aug = None
        for ex in examples:
            aug = self._augment(b, ex)
            if seg and (aug != seg_aug or self.trace is not None):
                out.append(self._segment(b, seg, seg_aug))
                seg = []
            seg.append(ex)
            seg_aug = aug
        if seg:
            out.append(self._segment(b, seg, seg_aug))
        labeled = np.concatenate([o[0] for o in out])
        loss = np.concatenate([o[1] for o in out])
        feats = np.concatenate([o[2] for o in out])
        texts = [t for o in out for t in o[3]]
        return labeled, loss, feats, texts

    def _augment(self, b, ex) -> bool:  # noqa: ANN001
        """VW's slot index from this example on: once an example of several slots (or a
        first slot with features) has been seen, unless ``--ccb_no_slot_index``."""
        lo, labels = ex
        n_slot = sum(1 for lab in labels if lab.kind == cl.SLOT)
        if not self.seen_multi:
            self.seen_multi = n_slot > 1
        if not self.seen_multi and n_slot:
            r = lo + len(labels) - n_slot
            ns = b.ns[b.indptr[r] : b.indptr[r + 1]] if b.ns is not None else np.zeros(0)
            self.seen_multi = bool(np.any(ns != CONSTANT_NS))
        return self.seen_multi and not self.ml.ccb_no_slot_index

    def _segment(self, b, examples: list, augment: bool) -> tuple:  # noqa: ANN001
        from streamlearn.io.multiline import Merged, cross_merged
        from streamlearn.io.shared import ccb_pair_rows

        m = len(examples)
        ex_nact = np.zeros(m, dtype=np.int64)
        ex_slot_ptr = np.zeros(m + 1, dtype=np.int64)
        shared_cost = np.zeros(m)
        shared_labeled = np.zeros(m, dtype=np.bool_)
        slot_row, slot_k, slot_shared, slot_first, slot_ex = [], [], [], [], []
        s_act, s_cost, s_prob, s_seed, inc_ptr, inc_ids = [], [], [], [], [0], []
        own = np.zeros(m, dtype=np.int64)
        row_nnz = np.diff(b.indptr)
        for e, (lo, labels) in enumerate(examples):
            n_act = sum(1 for lab in labels if lab.kind == cl.ACTION)
            slot_labels = labels[1 + n_act :]
            ex_nact[e] = n_act
            ex_slot_ptr[e + 1] = ex_slot_ptr[e] + len(slot_labels)
            shared_cost[e] = labels[0].cost
            shared_labeled[e] = labels[0].has_cost
            if self.slates:
                own[e] = int(row_nnz[lo : lo + 1 + n_act].sum())
            for k, (act, cost, prob, inc) in enumerate(self._outcomes(labels, n_act, slot_labels)):
                r = lo + 1 + n_act + k
                slot_row.append(r)
                slot_k.append(k)
                slot_shared.append(lo)
                slot_first.append(lo + 1)
                slot_ex.append(e)
                s_act.append(act)
                s_cost.append(cost)
                s_prob.append(prob)
                s_seed.append(self._tag_seed(b, r))
                inc_ids.extend(inc)
                inc_ptr.append(len(inc_ids))
        n_of_slot = ex_nact[np.array(slot_ex, dtype=np.int64)] if slot_ex else np.zeros(0, np.int64)
        slot_pair0 = np.concatenate([[0], np.cumsum(n_of_slot)]).astype(np.int64)
        total = int(slot_pair0[-1])
        rep = lambda x: np.repeat(np.asarray(x, dtype=np.int64), n_of_slot)  # noqa: E731
        p_action = rep(slot_first) + (np.arange(total) - rep(slot_pair0[:-1]))
        ids = [self._id_feature(k) if augment else -1 for k in range(max(slot_k, default=-1) + 1)]
        p_id = rep([ids[k] for k in slot_k])
        ns = b.ns if b.ns is not None else np.zeros(b.indices.shape[0], dtype=np.uint8)
        args = (p_action, rep(slot_shared), rep(slot_row), p_id, b.indptr, b.indices, b.values, ns)
        e0 = np.zeros(1, dtype=np.int64)
        nnz = ccb_pair_rows(True, *args, e0, b.indices[:0], b.values[:0], ns[:0])
        ptr = np.empty(total + 1, dtype=np.int64)
        idx = np.empty(nnz, dtype=b.indices.dtype)
        val = np.empty(nnz, dtype=b.values.dtype)
        pns = np.empty(nnz, dtype=ns.dtype)
        ccb_pair_rows(False, *args, ptr, idx, val, pns)
        one = np.array([0, total], dtype=np.int64)  # (cross_merged reads the rows only)
        mg = Merged(one, one[:1], np.arange(total, dtype=np.int64), ptr, idx,
                    val.astype(np.float64), pns)  # fmt: skip
        mg = cross_merged(mg, self.with_index if augment else self.user, self.bits)
        if self.slates and total:
            # VW counts every line of a slate: the shared line (with the slot index's
            # feature, once), and each action line with the crosses of its slot's row
            incs = np.diff(np.asarray(inc_ptr, dtype=np.int64))
            pairs = np.repeat(slot_pair0[:-1], incs) + np.asarray(inc_ids, dtype=np.int64)
            extra = np.diff(mg.indptr) - np.diff(ptr)
            who = np.repeat(np.asarray(slot_ex, dtype=np.int64), incs)
            own += np.bincount(who, weights=extra[pairs], minlength=m).astype(np.int64)
            own += 1 if augment else 0
        need = int(ex_nact.max(initial=0)) + 1
        if need > self.dr_prev.shape[0]:
            self.dr_prev = np.concatenate([self.dr_prev, np.zeros(need - self.dr_prev.shape[0])])
        slot_own = row_nnz[np.asarray(slot_row, dtype=np.int64)] if slot_row else e0[:0]
        slots = (ex_slot_ptr, ex_nact, shared_cost, shared_labeled, slot_pair0[:-1].copy(),
                 np.array(s_act, dtype=np.int64), np.array(s_cost), np.array(s_prob),
                 np.array(s_seed, dtype=np.int64), slot_own.astype(np.int64),
                 np.array(inc_ptr, dtype=np.int64), np.array(inc_ids, dtype=np.int64))  # fmt: skip
        if self.trace is not None and m == 1:
            played = self._traced(b, examples[0], slots, mg, total, augment)
        else:
            played = self._play(slots, mg, total)
        dec_n, dec_act, dec_prob, ex_loss, ex_labeled, ex_feat = played
        ex_feat = ex_feat + own
        if self.vw_log and not self.ml.no_predict:
            self._warn_partly_labeled(examples)
        texts = []
        for e, (_, labels) in enumerate(examples):
            lo_s, hi_s = int(ex_slot_ptr[e]), int(ex_slot_ptr[e + 1])
            decisions = [list(zip(dec_act[slot_pair0[s] : slot_pair0[s] + dec_n[s]].tolist(),
                                  dec_prob[slot_pair0[s] : slot_pair0[s] + dec_n[s]].tolist(),
                                  strict=True)) for s in range(lo_s, hi_s)]  # fmt: skip
            texts.append((labels, decisions))
            if self.pred_lines is not None and not self.ml.no_predict:
                self.pred_lines.append(self._pred_text(decisions))
        return ex_labeled, np.where(ex_labeled, ex_loss, 0.0), ex_feat, texts

    @staticmethod
    def _warn_partly_labeled(examples: list) -> None:
        """VW's ``update_stats_ccb`` warns of each example with some but not all of its
        slots labeled (its logger: standard output)."""
        from streamlearn.run.vwconsole import vw_log

        for _, labels in examples:
            slots = [lab for lab in labels if lab.kind == cl.SLOT]
            n_lab = sum(1 for lab in slots if lab.action >= 0)
            if 0 < n_lab < len(slots):
                vw_log("[warning] Unlabeled example in train set, was this intentional?\n")

    def _play(self, slots: tuple, mg, total: int) -> tuple:  # noqa: ANN001
        """The kernel over ``slots`` (:meth:`_segment`'s arrays) and the pairs' crossed rows
        ``mg``: each slot's decision, and each example's loss, label and features."""
        from streamlearn.learners import ccb as kern

        ex_slot_ptr = slots[0]
        m = ex_slot_ptr.shape[0] - 1
        dec_n = np.zeros(int(ex_slot_ptr[-1]), dtype=np.int64)
        dec_act = np.zeros(total, dtype=np.int64)
        dec_prob = np.zeros(total, dtype=np.float32)
        ex_loss = np.zeros(m)
        ex_labeled = np.zeros(m, dtype=np.bool_)
        ex_feat = np.zeros(m, dtype=np.int64)
        ml = self.ml
        kern.run_slots(
            kern.SLATES if self.slates else kern.CCB, ml.all_slots_loss, ml.no_predict, *slots,
            mg.indptr, mg.indices, mg.values, self.tables, self.step, self.gstate, self.params,
            self.cfg.loss_id, self.cb_type, self.ml.clip_p, self.stats, self.dr_prev, self.kind,
            self.eps, ml.first_only, F32(ml.lam), F32(ml.gamma_scale), F32(ml.gamma_exponent),
            self.learning, self.xstats, self.rng, slots[4].copy(), dec_n, dec_act, dec_prob,
            ex_loss, ex_labeled, ex_feat,
        )  # fmt: skip
        return dec_n, dec_act, dec_prob, ex_loss, ex_labeled, ex_feat

    def _traced(self, b, ex, slots: tuple, mg, total: int, augment: bool) -> tuple:  # noqa: ANN001
        """:meth:`_play` of one example with its ``--audit`` or ``--invert_hash`` names
        (:mod:`streamlearn.run.ccbaudit`): each slot audited with the weights the slots
        before it left (a replay of them from a snapshot, put back)."""
        tr = self.trace
        table = self.tables[0]
        before: list = []
        if tr.audit:
            n_slots = int(slots[0][1])
            saved = self._snapshot(mg.indices)
            for k in range(n_slots):
                if k:
                    ptr = np.array([0, k], dtype=np.int64)
                    head = tuple(a[:k] for a in slots[4:10])
                    self._play((ptr, *slots[1:4], *head, slots[10][: k + 1], slots[11]), mg,
                               total)  # fmt: skip
                before.append((tr.frozen(table, mg.indices), self.gstate.copy()))
                self._restore(saved)
        played = self._play(slots, mg, total)
        dec_n, dec_act = played[0], played[1]
        lo = ex[0]
        n_act = int(slots[1][0])
        for k in range(dec_n.shape[0]):
            p0 = int(slots[4][k])
            avail = sorted(dec_act[p0 : p0 + dec_n[k]].tolist())
            if not avail:
                continue
            slot_row = lo + 1 + n_act + k
            common = tr.slot_common(b, lo, slot_row, k, self._id_feature(k) if augment else -1)
            act = int(slots[5][k])
            logged = avail.index(act) if self.learning and act in avail else -1
            w, g = before[k] if before else (None, None)
            scores = [tr.score(w, g, mg, p0 + a) for a in avail] if before else []
            tr.slot(b, [lo + 1 + a for a in avail], common, augment, slot_row, logged, scores, w,
                    g)  # fmt: skip
        return played

    def _snapshot(self, indices: np.ndarray) -> tuple:
        """The run's state an example's replay changes: the weights at ``indices`` (all of
        them under ``--l1``/``--l2``), gd's, the explorer's and the generator's."""
        table = self.tables[0]
        ent = None if self.trace.whole else np.unique(indices.astype(np.int64) & int(self.mask))
        rows = table.copy() if ent is None else table[ent].copy()
        return (ent, rows, self.gstate.copy(), self.stats.copy(), self.dr_prev.copy(),
                self.xstats.copy(), self.rng.copy())  # fmt: skip

    def _restore(self, saved: tuple) -> None:
        ent, rows, gstate, stats, dr_prev, xstats, rng = saved
        table = self.tables[0]
        if ent is None:
            table[:] = rows
        else:
            table[ent] = rows
        self.gstate[:] = gstate
        self.stats[:] = stats
        self.dr_prev[:] = dr_prev
        self.xstats[:] = xstats
        self.rng[:] = rng

    # ------------------------------------------------------------------ accounting

    def label_text(self, labels) -> str:  # noqa: ANN001
        n_act = sum(1 for lab in labels if lab.kind == cl.ACTION)
        slots = labels[1 + n_act :]
        if self.slates:
            items = [(lab.action, None) if lab.action >= 0 else None for lab in slots]
        else:
            items = [(lab.action, lab.cost) if lab.action >= 0 else None for lab in slots]
        return self._label_text(items)

    def pred_text(self, decisions) -> str:  # noqa: ANN001
        return self._top_text(self._relative(decisions) if self.slates else decisions)

    @staticmethod
    def _label_text(items: list) -> str:
        """VW's ``generate_ccb_label_printout``: the first two slots, ``...`` after them
        when there are more."""
        out = []
        for i, item in enumerate(items):
            if item is None:
                out.append("?")
            elif item[1] is None:
                out.append(f"{item[0]}")
            else:
                out.append(f"{item[0]}:{_g(item[1])}")
            if i >= 1 and len(items) > 2:
                out.append("...")
                break
        return ",".join(out)

    @staticmethod
    def _top_text(decisions) -> str:  # noqa: ANN001
        return ",".join(str(d[0][0]) if d else "None" for d in decisions)

    @staticmethod
    def _relative(decisions) -> list:  # noqa: ANN001
        """VW's slates numbering: each slot's actions less the sizes of the slots before."""
        out = []
        size = 0
        for d in decisions:
            out.append([(a - size, p) for a, p in d])
            size += len(d)
        return out

    def _pred_text(self, decisions) -> str:  # noqa: ANN001
        from streamlearn.learners.explore import prob_text

        if self.slates:
            decisions = self._relative(decisions)
        lines = [",".join(f"{a}:{prob_text(p)}" for a, p in d) + "\n" for d in decisions]
        return "".join(lines) + "\n"


def passes(ml, cfg, inputs, say, sources: list[str], cache, predictions: bool, params,
           table, tables, step: int, gstate, stats, dr_prev, progress=None,
           counter: int | None = None, trace: tuple = (False, False),
           vw_log: bool = False):  # noqa: ANN001, ANN201  # fmt: skip
    """:func:`streamlearn.run.multiline.fit`'s passes for ``--ccb_explore_adf`` and
    ``--slates`` (one pass); returns its :class:`~streamlearn.run.multiline.Fitted`, whose
    ``explorer`` is the run (its explorer's counter and the generator's state, which a
    model keeps).  ``counter``: a continued model's explorer's (``--first``'s examples
    still to explore); ``trace``: write VW's ``--audit``, collect ``--invert_hash``'s
    names (:mod:`streamlearn.run.ccbaudit`); ``vw_log``: VW's warning about an example of
    some slots labeled, on standard output."""
    from streamlearn.io.examples import parse_options
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.labels import LABEL_CB
    from streamlearn.run.mlpasses import report_block

    _refuse(ml, cfg, predictions)
    run = _Runner(ml, cfg, params, tables, step, gstate, stats, dr_prev, predictions)
    if counter is not None and ml.explore == "first":
        run.xstats[run.ex.X_TAU] = counter
    if inputs.initial_model:
        run.seen_multi = _seen_multi(inputs.initial_model)
    run.vw_log = vw_log and not run.slates
    if any(trace):
        from streamlearn.run.ccbaudit import SlotAudit

        run.trace = SlotAudit(ml, cfg, run.user, run.with_index, *trace)
    # the labels are read here (io/ccblabels.py): the parser leaves them as cb's
    parse_inter = parse_options(cfg.namespaces() or compile_interactions(), LABEL_CB)
    counts = _Counts()
    for b, good in _batches(ml, cfg, inputs, sources, cache, parse_inter):
        counts.malformed = report_block(b, counts.malformed, inputs.strict, say)
        if good:
            counts.count(run, len(good), run.block(b, good), progress)
    return counts.fitted(run, cfg, table, stats)


def _refuse(ml, cfg, predictions: bool) -> None:  # noqa: ANN001
    """What :func:`passes` does not run, refused before any data."""
    if max(1, cfg.passes) > 1:
        raise UsageError(f"--{_option(ml)} with --passes: not supported yet (one pass)")
    if cfg.format not in ("vw", "auto", "json", "dsjson"):
        raise UsageError(f"--{_option(ml)} reads VW's text or JSON, not --format {cfg.format}")
    if ml.no_predict and (predictions or ml.cb_type != "mtr" or ml.reduction == "slates"):
        raise UsageError("--no_predict: with --ccb_explore_adf and --cb_type mtr only, "
                         "and not with -p (as VW)")  # fmt: skip


def _seen_multi(path: str) -> bool:
    """Whether the model at ``path`` had seen several slots (its interactions then)."""
    from streamlearn import model as model_io
    from streamlearn.run import mlmodel

    if mlmodel.kept_options(path) is None:  # (sl's model)
        meta = model_io.load(path).meta
        return bool(isinstance(meta, dict) and meta.get("ccb_seen_multi", False))
    return mlmodel.seen_multi(path)  # (VW's: CCB's flag; a cb_adf model has none)


def _batches(ml, cfg, inputs, sources: list[str], cache, parse_inter):  # noqa: ANN001, ANN202
    """The run's batches of whole examples (VW's text, or its JSON and DSJSON lines made
    text), parsed; with each, its well-formed examples (:func:`_good`)."""
    from streamlearn.io.example_cache import tee
    from streamlearn.io.multiline import example_blocks, example_starts
    from streamlearn.io.parse import FMT_VW, parse_block
    from streamlearn.io.reader import iter_blocks

    blocks = iter_blocks(sources or ["-"], inputs.block_size, inputs.max_line_bytes,
                         inputs.flat_text(cfg, sources))  # (not its cache: text)  # fmt: skip
    if cache.tee is not None:
        blocks = tee(blocks, cache.tee)
    json_fmt = cfg.format in ("json", "dsjson")
    if not json_fmt:
        blocks = example_blocks(blocks)
    json_inter = dataclasses.replace(parse_inter, label_kind=ml.reduction)
    for block in blocks:
        tr = None
        if json_fmt:
            from streamlearn.io.vwjson import json_block

            block, tr = json_block(block, cfg.format == "dsjson", json_inter)
        b = parse_block(block, FMT_VW, cfg.bits, cfg.constant, parse_inter)
        if b.err_pos is None:
            b.err_pos = np.full(b.n, -1, dtype=np.int64)
        ex_ptr = example_starts(b.line)
        if tr is not None and b.n:
            # the JSON lines' numbers and refusals (the examples were cut at the text's)
            k = b.line - 1
            forced = tr.status[k]
            b.status[forced != 0] = forced[forced != 0]
            b.line = tr.lines[k]
        yield b, _good(b, ex_ptr, ml.reduction == "slates", check_sum=not json_fmt)


def _good(b, ex_ptr: np.ndarray, slates: bool, check_sum: bool) -> list:  # noqa: ANN001
    """Batch ``b``'s well-formed examples (first row, labels), its CCB or slates labels
    read and checked (an example refused is marked in ``b.status``)."""
    labels = cl.read_rows(b, slates, check_sum=check_sum)
    good: list = []
    for e in range(ex_ptr.shape[0] - 1):
        lo, hi = int(ex_ptr[e]), int(ex_ptr[e + 1])
        if (b.status[lo:hi] != 0).any():
            continue
        labs = labels[lo:hi]
        code, at = cl.check_example(labs, slates)
        if code:
            b.status[lo + at] = code
            b.err_pos[lo + at] = -1
            continue
        good.append((lo, labs))
    return good


@dataclasses.dataclass
class _Counts:
    """The summary's counts over :func:`passes`: the examples read, those counted (none
    under ``--no_predict``), the labeled ones, their loss and features, the malformed."""

    read: int = 0
    examples: int = 0
    labeled: int = 0
    loss: float = 0.0
    features: int = 0
    malformed: int = 0

    def count(self, run: _Runner, n: int, played: tuple, progress) -> None:  # noqa: ANN001
        """A batch's ``n`` examples as :meth:`_Runner.block` played them (labeled, loss,
        features, texts), and their lines in VW's progress table."""
        labeled, loss, feats, texts = played
        self.read += n
        if run.ml.no_predict:
            # VW's update_stats and print_update are skipped: nothing counted (VW's table
            # has its head only)
            if progress is not None and not progress.started:
                from streamlearn.run.mlconsole import TABLE_HEAD

                progress.say(TABLE_HEAD)
                progress.started = True
            return
        self.examples += n
        self.labeled += int(labeled.sum())
        self.loss += float(loss.sum())
        self.features += int(feats.sum())
        if progress is not None:
            progress.batch(0, labeled, np.zeros(n, dtype=bool), loss, feats, feats,
                           lambda i, t=texts: run.label_text(t[i][0]),
                           lambda i, t=texts: run.pred_text(t[i][1]))  # fmt: skip

    def fitted(self, run: _Runner, cfg, table: np.ndarray, stats: np.ndarray):  # noqa: ANN001, ANN201
        """What the run leaves (:class:`~streamlearn.run.mlpasses.Fitted`): its counts
        (mtr's sums: those of ``stats``, the kernels'), summary and ``-p`` lines."""
        from streamlearn.learners import cb_adf
        from streamlearn.run.mlpasses import Fitted

        out_stats = np.zeros(cb_adf.STATS)
        out_stats[cb_adf.N_EX] = self.examples
        out_stats[cb_adf.N_LAB] = self.labeled
        out_stats[cb_adf.LOSS] = self.loss
        out_stats[cb_adf.FEATURES] = self.features
        out_stats[cb_adf.EVENTS] = stats[cb_adf.EVENTS]
        out_stats[cb_adf.ACTIONS] = stats[cb_adf.ACTIONS]
        n_ex, n_lab = self.examples, self.labeled
        summary = {"examples": n_ex, "per_pass": n_ex, "passes": 1, "best_holdout": None,
                   "loss": self.loss / n_lab if n_lab else None,
                   "malformed": self.malformed}  # fmt: skip
        summary["config"] = {k: v for k, v in cfg.to_dict().items() if k != "theta"}
        summary["ccb_seen_multi"] = run.seen_multi
        summary["read"] = self.read  # (learned from, though --no_predict counts none)
        return Fitted(table, run.gstate, out_stats, run.pred_lines or [], summary, False, None,
                      explorer=run, names=run.trace.names if run.trace else None)  # fmt: skip


# ---------------------------------------------------------------------- one learner, live


class Live:
    """One CCB (slates) learner kept between calls, as one ``sl vw`` pass plays its examples
    one request after another: the server's (:func:`served`) and the Python API's
    (``streamlearn.vowpalwabbit``).  ``ml``: the stack's options; ``learn``: the
    configuration's fields; ``vw_path``: VW's model file continued, or None."""

    def __init__(self, ml, learn: dict, vw_path: str | None = None) -> None:  # noqa: ANN001
        from streamlearn.io.examples import parse_options
        from streamlearn.io.interactions import compile_interactions
        from streamlearn.io.labels import LABEL_CB
        from streamlearn.reductions.options import config_of
        from streamlearn.run.mlmodel import start
        from streamlearn.run.mlpasses import weights

        got = start(vw_path, ml, learn) if vw_path else None
        cfg = config_of(got[0] if got else learn, bases=True)
        _refuse(ml, cfg, True)
        if cfg.format in ("json", "dsjson"):
            raise UsageError(f"--{_option(ml)} one example at a time reads VW's text, not "
                             f"--{cfg.format}")  # fmt: skip
        w, counter = weights(ml, cfg, got)
        run = _Runner(ml, cfg, w.params, w.tables, w.step, w.gstate, w.stats, w.dr_prev, False)
        if counter is not None and ml.explore == "first":
            run.xstats[run.ex.X_TAU] = counter
        run.seen_multi = _seen_multi(vw_path) if vw_path else False
        self.ml, self.config, self.w, self.run = ml, cfg, w, run
        self.parse_inter = parse_options(cfg.namespaces() or compile_interactions(), LABEL_CB)
        self.counts = _Counts()

    def play(self, data: bytes, source: str = "<example>", start: int = 1,
             learn: bool = True) -> tuple[list, list[str]]:  # fmt: skip
        """The whole examples of ``data`` played in order (``learn`` False: scored, nothing
        learned): each example's decisions (per slot, its (action, probability) pairs; None
        for a malformed example), and the malformed lines' messages."""
        from streamlearn.io.batch import Block
        from streamlearn.io.multiline import example_starts
        from streamlearn.io.parse import FMT_VW, describe_errors, parse_block
        from streamlearn.learners.base import P_LEARN

        cfg, run = self.config, self.run
        block = Block(np.frombuffer(bytearray(data), dtype=np.uint8), source, start,
                      live=True)  # fmt: skip
        b = parse_block(block, FMT_VW, cfg.bits, cfg.constant, self.parse_inter)
        if b.err_pos is None:
            b.err_pos = np.full(b.n, -1, dtype=np.int64)
        ex_ptr = example_starts(b.line)
        m = max(ex_ptr.shape[0] - 1, 0)
        good = _good(b, ex_ptr, run.slates, check_sum=True) if m else []
        bad = describe_errors(b, limit=1 << 30) if (b.status != 0).any() else []
        out: list = [None] * m
        if good:
            kept = run.params[P_LEARN], run.learning
            if not learn:
                run.params[P_LEARN], run.learning = 0.0, False
            try:
                played = run.block(b, good)
            finally:
                run.params[P_LEARN], run.learning = kept
            self.counts.count(run, len(good), played, None)
            at = {int(lo): e for e, lo in enumerate(ex_ptr[:-1].tolist())}
            for (lo, _), (_, decisions) in zip(good, played[3], strict=True):
                out[at[int(lo)]] = decisions
        return out, bad

    def relative(self, decisions: list) -> list:
        """An example's decisions as VW's Python package gives them: slates' actions
        numbered within their slot."""
        return self.run._relative(decisions) if self.run.slates else decisions

    def text(self, decisions: list) -> str:
        """VW's ``-p`` text of an example's decisions (each slot's line, then a blank line)."""
        return self.run._pred_text(decisions)

    def save(self, target: str, fmt: str) -> None:
        """Write the model as ``sl vw -f`` does (:func:`streamlearn.run.mlmodel.save`)."""
        from streamlearn.run.mlmodel import save

        fitted = self.counts.fitted(self.run, self.config, self.w.table, self.w.stats)
        learn = fitted.summary.pop("config")
        save(fitted, self.ml, learn, target, fmt)


# ---------------------------------------------------------------------- sl vw --daemon


def served(vw_path: str, learn: dict, bandit: dict, opts, console):  # noqa: ANN001, ANN201
    """``sl vw --daemon -i`` of VW's model of ``--ccb_explore_adf`` or ``--slates``
    (:func:`streamlearn.run.serve_model.served_model`): the server's model, a
    :class:`~streamlearn.run.bandit_served.BanditServed` whose examples a :class:`Live` plays
    (defined on first use: a plain server does not import the bandits)."""
    from streamlearn.reductions import Multiline
    from streamlearn.run.bandit_served import BanditServed

    class Served(BanditServed):
        """Requests are CCB (slates) examples, each answered once its blank line has come
        with VW's ``-p`` text for it (each slot's decisions, then a blank line: what VW's
        daemon answers), in order, per connection; learning (no ``-t``) the labeled ones,
        one request after another exactly as one ``sl vw`` pass over them.  A malformed
        example is answered ``nan`` and a blank line (the connection stays).  A model made
        non-finite is never saved (:func:`streamlearn.run.mlmodel.save`'s check)."""

        def __init__(self) -> None:  # (BanditServed's answer and closed; not its learner)
            self.live = Live(Multiline(**bandit), learn, vw_path)
            self.config = self.live.config
            self.opts = opts
            self.console = console
            self.learner = self if opts.learn else None
            self.model = None
            self.carry: dict[str, tuple[bytes, int]] = {}

        def warm_up(self) -> None:
            """Load the kernels with one example, nothing of the run's state moved."""
            live = self.live
            run, counts = live.run, dataclasses.replace(live.counts)
            kept = run.rng.copy(), run.xstats.copy(), run.stats.copy(), run.seen_multi
            try:
                live.play(b"ccb shared |s w\nccb action |a x\nccb action |a y\nccb slot |s z"
                          b"\n\n" if not run.slates else b"slates shared |s w\nslates action"
                          b" 0 |a x\nslates slot |s z\n\n", "<warm-up>", learn=False)  # fmt: skip
            finally:
                run.rng[:], run.xstats[:], run.stats[:] = kept[:3]
                run.seen_multi, live.counts = kept[3], counts

        def _run(self, data: bytes, source: str, start: int) -> tuple[bytes, int, int]:
            played, bad = self.live.play(data, source, start)
            for msg in bad[:3]:
                self.console.warn_once(f"bad {msg}", f"sl serve: {msg}")
            answers = [self.live.text(d) if d is not None else "nan\n\n" for d in played]
            return "".join(answers).encode(), len(played), sum(d is None for d in played)

        def examples(self) -> int:
            return self.live.counts.read

        def snapshot(self):  # noqa: ANN202
            raise UsageError(f"--{_option(self.live.ml)}: the server saves VW's model (-f)")

        def save(self, target: str, fmt: str, link: str) -> None:  # noqa: ARG002 - Served's
            self.live.save(target, fmt)

    return Served()

__all__ = ["Live", "passes", "served"]
