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
from streamlearn.io.interactions import CCB_ID_NS, CCB_SLOT_NS

F32 = np.float32
CONSTANT_NS = 128
DEFAULT_NS = 32


@dataclasses.dataclass
class _Row:
    """One example's figures for VW's table and summary."""

    labeled: bool
    loss: float
    features: int
    label: str
    pred: str


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
            raise UsageError(f"--{ml.reduction} with --{ml.explore}: not supported yet "
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

    # ------------------------------------------------------------------ features

    def _id_feature(self, k: int) -> int:
        from streamlearn.hashing import hashstring_py

        while len(self.id_hashes) <= k:
            seed = hashstring_py("_id", self.cfg.hash_seed)
            self.id_hashes.append(hashstring_py(f"index{len(self.id_hashes)}", seed))
        return self.id_hashes[k] & int(self.mask)

    @staticmethod
    def _entries(b, r: int, skip_constant: bool):  # noqa: ANN001, ANN205
        lo, hi = int(b.indptr[r]), int(b.indptr[r + 1])
        idx = b.indices[lo:hi]
        val = b.values[lo:hi]
        ns = b.ns[lo:hi] if b.ns is not None else np.zeros(hi - lo, dtype=np.uint8)
        if skip_constant:
            keep = ns != CONSTANT_NS
            idx, val, ns = idx[keep], val[keep], ns[keep]
        return idx, val, ns

    def _slot_example(self, b, shared: int, actions: list[int], slot: int, k: int,  # noqa: ANN001
                      augment: bool, inter):  # noqa: ANN001, ANN205  # fmt: skip
        """The cb example of slot ``slot`` (its ``k``-th) over ``actions`` (batch rows)."""
        from streamlearn.io.multiline import Merged, cross_merged

        s_idx, s_val, s_ns = self._entries(b, shared, True)
        t_idx, t_val, t_ns = self._entries(b, slot, True)
        t_ns = np.where(t_ns == DEFAULT_NS, CCB_SLOT_NS, t_ns).astype(s_ns.dtype)
        parts_idx = [s_idx, t_idx]
        parts_val = [s_val, t_val]
        parts_ns = [s_ns, t_ns]
        if augment:
            parts_idx.append(np.array([self._id_feature(k)], dtype=b.indices.dtype))
            parts_val.append(np.ones(1, dtype=b.values.dtype))
            parts_ns.append(np.array([CCB_ID_NS], dtype=s_ns.dtype))
        tail_idx = np.concatenate(parts_idx)
        tail_val = np.concatenate(parts_val)
        tail_ns = np.concatenate(parts_ns)
        rows_idx, rows_val, rows_ns, ptr = [], [], [], [0]
        for r in actions:
            a_idx, a_val, a_ns = self._entries(b, r, False)
            rows_idx += [a_idx, tail_idx]
            rows_val += [a_val, tail_val]
            rows_ns += [a_ns.astype(s_ns.dtype), tail_ns]
            ptr.append(ptr[-1] + a_idx.shape[0] + tail_idx.shape[0])
        n = len(actions)
        mg = Merged(np.array([0, n], dtype=np.int64), np.zeros(1, dtype=np.int64),
                    np.arange(n, dtype=np.int64), np.array(ptr, dtype=np.int64),
                    np.concatenate(rows_idx), np.concatenate(rows_val).astype(np.float64),
                    np.concatenate(rows_ns))  # fmt: skip
        return cross_merged(mg, inter, self.bits)

    # ------------------------------------------------------------------ one example

    def example(self, b, rows: list[int], labels: list) -> _Row:  # noqa: ANN001
        """Learn from (or score) one well-formed example; its figures."""
        ex = self.ex
        n_act = sum(1 for lab in labels if lab.kind == cl.ACTION)
        shared = rows[0]
        act_rows = rows[1 : 1 + n_act]
        slot_rows = rows[1 + n_act :]
        slot_labels = labels[1 + n_act :]
        n_slot = len(slot_rows)
        outcomes = self._outcomes(labels, n_act, slot_labels)
        prev = self.seen_multi
        self.seen_multi = self.seen_multi or n_slot > 1
        if not self.seen_multi and n_slot:
            lo, hi = int(b.indptr[slot_rows[0]]), int(b.indptr[slot_rows[0] + 1])
            ns = b.ns[lo:hi] if b.ns is not None else np.zeros(hi - lo, dtype=np.uint8)
            self.seen_multi = bool(np.any(ns != CONSTANT_NS))
        augment = self.seen_multi and not self.ml.ccb_no_slot_index
        del prev
        inter = self.with_index if augment else self.user
        excluded = np.zeros(n_act, dtype=bool)
        decisions: list[list[tuple[int, float]]] = []
        features = 0
        for k, r in enumerate(slot_rows):
            include = outcomes[k][3]
            avail = [i for i in range(n_act)
                     if not excluded[i] and (include is None or i in include)]  # fmt: skip
            if not avail:
                decisions.append([])
                features += int(b.indptr[r + 1] - b.indptr[r])
                continue
            mg = self._slot_example(b, shared, [act_rows[i] for i in avail], r, k, augment, inter)
            act, cost, prob, _ = outcomes[k]
            logged = avail.index(act) if (act >= 0 and act in avail and self.learning) else -1
            acts, probs = self._explore(mg, logged, cost, prob)
            ex.cb_sample(self.rng, acts, probs, logged, self._tag_seed(b, r))
            decision = [(avail[int(a)], float(p)) for a, p in zip(acts, probs, strict=True)]
            excluded[decision[0][0]] = True
            decisions.append(decision)
            features += int(mg.indptr[-1] - mg.indptr[0])
        if self.slates:
            row = self._slates_row(labels, n_act, slot_labels, decisions, features, b, rows)
        else:
            row = self._ccb_row(slot_labels, decisions, features)
        if self.pred_lines is not None:
            self.pred_lines.append(self._pred_text(decisions, labels, n_act))
        return row

    @staticmethod
    def _tag_seed(b, r: int) -> int:  # noqa: ANN001
        """VW's ``try_extract_random_seed``: a slot tagged ``seed=<text>`` samples with
        ``uniform_hash(text)`` (murmur3, seed 0); -1: no such tag."""
        tag = b.block.data[int(b.tag_start[r]) : int(b.tag_end[r])].tobytes()
        if len(tag) <= 5 or not tag.startswith(b"seed="):
            return -1
        import mmh3

        return mmh3.hash(tag[5:], 0, signed=False)

    def _outcomes(self, labels, n_act: int, slot_labels) -> list:  # noqa: ANN001
        """Each slot's (logged action, cost, probability, included actions or None) in
        CCB terms (slates: each slot's actions are its pool, the cost the shared line's)."""
        if not self.slates:
            return [(lab.action, lab.cost, lab.prob, set(lab.include) if lab.include else None)
                    for lab in slot_labels]  # fmt: skip
        pools: list[list[int]] = [[] for _ in slot_labels]
        for i, lab in enumerate(labels[1 : 1 + n_act]):
            pools[lab.slot].append(i)
        shared = labels[0]
        out = []
        for j, lab in enumerate(slot_labels):
            inc = set(pools[j]) if pools[j] else None
            if shared.has_cost and lab.action >= 0:
                out.append((pools[j][lab.action], shared.cost, lab.prob, inc))
            else:
                out.append((-1, 0.0, 0.0, inc))
        return out

    def _explore(self, mg, logged: int, cost: float, prob: float) -> tuple:  # noqa: ANN001
        ex = self.ex
        cb_adf = self.cb_adf
        n = mg.row.shape[0]
        scores = np.zeros(n, dtype=np.float32)
        order = np.zeros(n, dtype=np.int64)
        need = n + 1
        if need > self.dr_prev.shape[0]:
            self.dr_prev = np.concatenate([self.dr_prev, np.zeros(need - self.dr_prev.shape[0])])
        chosen = np.array([logged], dtype=np.int64)
        costs = np.array([cost if logged >= 0 else 0.0])
        probs_in = np.array([prob if logged >= 0 else 1.0])
        ho = np.zeros(1, dtype=np.bool_)
        cb_adf.train_examples(
            self.tables, np.zeros(n, dtype=np.int64), self.step, self.gstate, self.params,
            self.cfg.loss_id, self.cb_type, self.ml.clip_p, mg.act_ptr, mg.indptr, mg.indices,
            mg.values, chosen, costs, probs_in, ho, self.stats, self.dr_prev, scores, order,
            np.zeros(1),
        )  # fmt: skip
        acts = np.zeros(n, dtype=np.int64)
        probs = np.zeros(n, dtype=np.float32)
        ex.explore_examples(
            self.kind, self.eps, self.ml.first_only, F32(self.ml.lam), F32(self.ml.gamma_scale),
            F32(self.ml.gamma_exponent), mg.act_ptr, scores, order, chosen, costs, probs_in, ho,
            self.learning, self.xstats, acts, probs,
        )  # fmt: skip
        return acts, probs

    # ------------------------------------------------------------------ accounting

    def _ccb_row(self, slot_labels, decisions, features: int) -> _Row:  # noqa: ANN001
        loss = F32(0.0)
        n_lab = 0
        for k, lab in enumerate(slot_labels):
            if lab.action < 0:
                continue
            n_lab += 1
            d = decisions[k]
            if not d or not (k == 0 or self.ml.all_slots_loss):
                continue
            top, p = d[0]
            est = F32(F32(lab.cost) / F32(lab.prob)) if top == lab.action else F32(0.0)
            loss = F32(loss + F32(est * F32(p)))
        label = self._label_text([(lab.action, lab.cost) if lab.action >= 0 else None
                                  for lab in slot_labels])  # fmt: skip
        return _Row(n_lab > 0, float(loss), features, label, self._top_text(decisions))

    def _slates_row(self, labels, n_act: int, slot_labels, decisions, features: int, b,  # noqa: ANN001
                    rows) -> _Row:  # noqa: ANN001  # fmt: skip
        shared = labels[0]
        loss = F32(0.0)
        if shared.has_cost:
            ratio = F32(0.0)
            for k, lab in enumerate(slot_labels):
                top = decisions[k][0][1] if decisions[k] else 0.0
                ratio = F32(ratio + F32(F32(top) / F32(lab.prob)))
            ratio = F32(ratio - F32(len(slot_labels) - 1))
            loss = F32(F32(shared.cost) * ratio)
        # VW's count: every line of the example (the slots' as CCB counted them)
        own = sum(int(b.indptr[r + 1] - b.indptr[r]) for r in rows[: 1 + n_act])
        label = self._label_text([(lab.action, None) if lab.action >= 0 else None
                                  for lab in slot_labels])  # fmt: skip
        top = self._top_text(self._relative(decisions))
        return _Row(shared.has_cost, float(loss), features + own, label, top)

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

    def _pred_text(self, decisions, labels, n_act: int) -> str:  # noqa: ANN001
        from streamlearn.learners.explore import prob_text

        if self.slates:
            decisions = self._relative(decisions)
        lines = [",".join(f"{a}:{prob_text(p)}" for a, p in d) + "\n" for d in decisions]
        return "".join(lines) + "\n"


def passes(ml, cfg, inputs, say, sources: list[str], cache, predictions: bool, params,
           table, tables, step: int, gstate, stats, dr_prev, progress=None):  # noqa: ANN001, ANN201  # fmt: skip
    """:func:`streamlearn.run.multiline.fit`'s passes for ``--ccb_explore_adf`` and
    ``--slates`` (one pass); returns its :class:`~streamlearn.run.multiline.Fitted`."""
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.labels import LABEL_CB
    from streamlearn.io.multiline import example_blocks, example_starts
    from streamlearn.io.parse import FMT_VW, describe_errors, parse_block
    from streamlearn.io.reader import iter_blocks
    from streamlearn.learners import cb_adf
    from streamlearn.run.multiline import Fitted, _tee, parse_options, report_bad

    if max(1, cfg.passes) > 1:
        raise UsageError(f"--{ml.reduction} with --passes: not supported yet (one pass)")
    if cfg.format not in ("vw", "auto", "json", "dsjson"):
        raise UsageError(f"--{ml.reduction} reads VW's text or JSON, not --format {cfg.format}")
    run = _Runner(ml, cfg, params, tables, step, gstate, stats, dr_prev, predictions)
    # the labels are read here (io/ccblabels.py): the parser leaves them as cb's
    parse_inter = parse_options(cfg.namespaces() or compile_interactions(), LABEL_CB)
    blocks = iter_blocks(sources or ["-"], inputs.block_size, inputs.max_line_bytes)
    if cache.tee is not None:
        blocks = _tee(blocks, cache.tee)
    json_fmt = cfg.format in ("json", "dsjson")
    if not json_fmt:
        blocks = example_blocks(blocks)
    malformed = 0
    n_ex = 0
    n_lab = 0
    loss_sum = 0.0
    total_features = 0
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
        labels = cl.read_rows(b, run.slates, check_sum=not json_fmt)
        out: list[_Row] = []
        for e in range(ex_ptr.shape[0] - 1):
            lo, hi = int(ex_ptr[e]), int(ex_ptr[e + 1])
            if (b.status[lo:hi] != 0).any():
                continue
            labs = labels[lo:hi]
            code, at = cl.check_example(labs, run.slates)
            if code:
                b.status[lo + at] = code
                b.err_pos[lo + at] = -1
                continue
            out.append(run.example(b, list(range(lo, hi)), labs))
        bad = describe_errors(b, limit=1 << 30) if (b.status != 0).any() else []
        malformed = report_bad(bad, malformed, inputs.strict, say)
        if not out:
            continue
        labeled = np.array([r.labeled for r in out], dtype=bool)
        loss = np.array([r.loss if r.labeled else 0.0 for r in out])
        feats = np.array([r.features for r in out], dtype=np.int64)
        n_ex += len(out)
        n_lab += int(labeled.sum())
        loss_sum += float(loss.sum())
        total_features += int(feats.sum())
        if progress is not None:
            progress.batch(0, labeled, np.zeros(len(out), dtype=bool), loss, feats, feats,
                           lambda i, out=out: out[i].label,
                           lambda i, out=out: out[i].pred)  # fmt: skip
    out_stats = np.zeros(cb_adf.STATS)
    out_stats[cb_adf.N_EX] = n_ex
    out_stats[cb_adf.N_LAB] = n_lab
    out_stats[cb_adf.LOSS] = loss_sum
    out_stats[cb_adf.FEATURES] = total_features
    out_stats[cb_adf.EVENTS] = stats[cb_adf.EVENTS]
    out_stats[cb_adf.ACTIONS] = stats[cb_adf.ACTIONS]
    summary = {"examples": n_ex, "per_pass": n_ex, "passes": 1, "best_holdout": None,
               "loss": loss_sum / n_lab if n_lab else None, "malformed": malformed}  # fmt: skip
    summary["config"] = {k: v for k, v in cfg.to_dict().items() if k != "theta"}
    return Fitted(table, run.gstate, out_stats, run.pred_lines or [], summary, False, None)


__all__ = ["passes"]
