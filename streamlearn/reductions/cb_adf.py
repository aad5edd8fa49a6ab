"""``--cb_adf`` and ``--cb K``: contextual bandits over action-dependent features, VW's
``cb_adf.cc`` (``--cb K``: each line turned into K action lines first, VW's
``cb_to_cb_adf``), in the shape of :mod:`streamlearn.reductions.base`.

Options (``reductions.Multiline``'s fields): ``cb_type`` (mtr, ips, dm, dr, sm),
``clip_p``, ``rank_all``, ``actions`` (``--cb K``).  Labels: cb rows, each example's
logged action read (``io.labels.LABEL_CB``).  Kernel:
:func:`streamlearn.learners.cb_adf.train_examples`.  Outputs: ``-p`` the top action (with
``--rank_all`` every ``action:score``), the progress table (the top action and its
score).  With an explorer (``--cb_explore_adf``, ``--cb_explore K``) the learner is
:class:`streamlearn.reductions.explore.Learner`, stacked on this one as in VW
(:func:`streamlearn.reductions.explore.over`, in the registry).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from streamlearn.reductions import mwt, offset_tree
from streamlearn.reductions.base import Reduction, Seen, Weights, room, scratch
from streamlearn.reductions.cb_dro import OPTIONS as DRO_OPTIONS
from streamlearn.reductions.text import cb_label, fmt_float, score_text, tag_text

if TYPE_CHECKING:
    from streamlearn.io.examples import Part

from streamlearn.reductions.vwoptions import Command, VWOption, count, number, sized, stack_field

OPTIONS = (
    ("cb_type", "str", "mtr"),
    ("clip_p", "float", 0.0),
    ("rank_all", "bool", False),  # --rank_all
    ("actions", "int", 0),  # --cb K
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""

LEGACY_OPTIONS = (
    ("legacy", "bool", False),  # --cb_force_legacy: VW's single-line cb_algs (run/cblegacy.py)
    ("evaluate", "bool", False),  # --eval (legacy): a logged policy's actions evaluated
)
"""``--cb K --cb_force_legacy``'s (its driver: ``run/cblegacy.py``)."""

CBIFY_OPTIONS = (
    ("cbify", "int", 0),  # --cbify K (run/cbify.py)
    ("cbify_cs", "bool", False),
    ("cbify_ldf", "bool", False),  # --cbify_ldf: cost-sensitive LDF examples (run/cbify.py)
    ("loss0", "float", 0.0),
    ("loss1", "float", 1.0),
    ("flip_loss_sign", "bool", False),  # --flip_loss_sign: -loss0/-loss1 (VW's rewards)
)
"""``--cbify``'s (its driver: ``run/cbify.py``)."""


def vw_cb(t: Command, name: str, value: str) -> None:
    """``--cb K`` (``--cb_explore K`` too): K actions, each line made K action lines."""
    t.multiline["reduction"] = "cb"
    t.multiline["actions"] = count(name, value, "--cb", "at least one action")
    sized(t, "actions", name)


def _cbify(t: Command, name: str, value: str) -> None:
    t.exploring = True
    t.multiline["reduction"] = "cbify"
    t.multiline["cbify"] = count(name, value, "--cbify", "at least one class")
    sized(t, "cbify", name)
    t.multiline.setdefault("explore", "greedy")


def _cbify_ldf(t: Command, name: str, value: str | None) -> None:
    """``--cbify_ldf``: cost-sensitive LDF examples played as a bandit (on --cb_explore_adf)."""
    t.exploring = True
    t.multiline["reduction"] = "cbify"
    t.multiline["cbify_ldf"] = True
    t.multiline.setdefault("explore", "greedy")


VW_OPTIONS = {
    "cb_adf": VWOption(None, False, stack_field("reduction", value="cb_adf")),
    "cb": VWOption(None, True, vw_cb),
    "cb_type": VWOption(None, True, stack_field("cb_type")),
    "rank_all": VWOption(None, False, stack_field("rank_all")),
    "clip_p": VWOption(None, True, stack_field("clip_p", number)),
    "cb_force_legacy": VWOption(None, False, stack_field("legacy")),  # VW's single-line cb
    "eval": VWOption(None, False, stack_field("evaluate")),
    "cbify": VWOption(None, True, _cbify),
    "cbify_cs": VWOption(None, False, stack_field("cbify_cs")),
    "cbify_ldf": VWOption(None, False, _cbify_ldf),
    "loss0": VWOption(None, True, stack_field("loss0", number)),
    "loss1": VWOption(None, True, stack_field("loss1", number)),
    "flip_loss_sign": VWOption(None, False, stack_field("flip_loss_sign")),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`), ``--cbify``'s too."""


def settle(t: Command) -> None:
    """``--cb_force_legacy`` and ``--eval``: VW's single-line cb_algs (``--eval`` runs it
    whatever else is given, as VW's cb_to_cb_adf steps aside); its cb_type defaults to dr,
    and mtr or sm become dr with VW's warning."""
    asked = t.multiline
    if not (asked.get("legacy") or asked.get("evaluate")):
        return
    if asked.get("reduction") not in ("cb", "cbify"):
        if asked.pop("evaluate", None):
            # VW warns that --eval depends on --cb, and runs without it (--cb_adf --eval is
            # --cb_adf's run)
            t.notes.append("--eval: an option of --cb K, ignored without it (as VW)")
        asked.pop("legacy", None)  # VW: without --cb/--cb_explore/--cbify it changes nothing
        return
    asked["legacy"] = True
    kind = asked.setdefault("cb_type", "dr")
    if kind in ("mtr", "sm"):
        t.notes.append(f"--cb_type {kind}: cb_type must be in {{'ips','dm','dr'}}; resetting to "
                       f"dr (as VW with --cb_force_legacy)")  # fmt: skip
        asked["cb_type"] = "dr"


class Learner:
    """cb_adf's greedy learner over one run: each example's actions ranked by score."""

    def __init__(self, ml) -> None:  # noqa: ANN001 - reductions.Multiline
        self.clip_p = ml.clip_p
        self.rank_all = bool(ml.rank_all)
        self.ho_learns = ml.reduction != "cb"  # VW predicts held-out single-line examples
        self.dro = None
        if getattr(ml, "cb_dro", False):
            from streamlearn.reductions.cb_dro import State

            self.dro = State(ml)

    def line_args(self, s) -> tuple | None:  # noqa: ANN001 - a cb_line.Scratch
        """The trailing arguments of ``--cb K``'s one-call step
        (:meth:`~streamlearn.reductions.cb_line.CbLineParser.step`); None under ``--cb_dro``."""
        if self.dro is not None:
            return None
        f0 = np.float32(0.0)
        return (self.clip_p, s.holdout, self.ho_learns, s.scores, s.order, s.loss, False, 0,
                f0, False, f0, f0, f0, s.xstats, s.actions, s.probs)

    def line_seen(self, part: Part, s) -> Seen:  # noqa: ANN001 - a cb_line.Scratch
        return Seen(part, scores=s.scores, order=s.order, loss=s.loss)

    def learn(self, w: Weights, part: Part, ho: np.ndarray, lines: bool = False) -> Seen:
        from streamlearn.learners import cb_adf

        mg = part.mg
        room(w, mg.act_ptr)
        scores, order, sub = scratch(part)
        if self.dro is not None:  # --cb_dro: the estimator scales each example's weight
            from streamlearn.reductions import cb_dro

            scores, order, loss, _, _ = cb_dro.learn(self.dro, w, (w.tables, sub, w.step), part,
                                                     ho, self.ho_learns, self.clip_p)  # fmt: skip
            return Seen(part, scores=scores, order=order, loss=loss)
        loss = np.zeros(mg.act_ptr.shape[0] - 1)
        cb_adf.train_examples(
            w.tables, sub, w.step, w.gstate, w.params, w.loss_id, w.cb_type, self.clip_p,
            mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen, part.cost, part.prob, ho,
            self.ho_learns, w.stats, w.dr_prev, scores, order, loss,
        )  # fmt: skip
        return Seen(part, scores=scores, order=order, loss=loss)

    def write(self, seen: Seen, out: list[str], vw: bool = True) -> None:
        """``-p``: each example's top action (``--rank_all``: ``action:score`` of each),
        its tag; VW's lines end with a blank line."""
        part = seen.part
        ptr = part.mg.act_ptr
        order, scores = seen.order, seen.scores
        end = "\n\n" if vw else "\n"
        for e in range(ptr.shape[0] - 1):
            t = tag_text(part.tags[e])
            lo, hi = int(ptr[e]), int(ptr[e + 1])
            if self.rank_all:
                out.append(",".join(f"{int(order[i])}:{score_text(float(scores[lo + order[i]]))}"
                                    for i in range(lo, hi)) + t + end)  # fmt: skip
            else:
                out.append(f"{int(order[lo])}{t}{end}")

    def progress(self, table, npass: int, seen: Seen, ho: np.ndarray) -> None:  # noqa: ANN001
        """VW's table for cb_adf: the top action and its score."""
        part = seen.part
        ptr = part.mg.act_ptr
        labeled = labeled_of(part)

        def pred(e: int) -> str:
            top = int(seen.order[ptr[e]])
            return f"{top}:{fmt_float(float(seen.scores[ptr[e] + top]))}"

        table.batch(npass, labeled, ho, np.where(labeled, seen.loss, 0.0), part.feat_row,
                    part.feat_total, label_of(part, labeled), pred)  # fmt: skip


def labeled_of(part: Part) -> np.ndarray:
    """Which examples carry a logged action (a positive probability)."""
    return (part.chosen >= 0) & (part.prob > 0)


def label_of(part: Part, labeled: np.ndarray):  # noqa: ANN201
    """The table's ``current label`` of example ``e``: ``action:cost:probability``."""

    def label(e: int) -> str:
        if not labeled[e]:
            return "unknown"
        return cb_label(int(part.chosen[e]), float(part.cost[e]), float(part.prob[e]))

    return label


def learner(ml, cfg, **_: object) -> Learner:  # noqa: ANN001, ARG001
    """cb_adf's learner (an explorer's over it: :func:`streamlearn.reductions.explore.over`)."""
    return Learner(ml)


def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001
    """VW's header: (Enabled learners, Input label, Output pred)."""
    chain = f"{base}, csoaa_ldf-rank, cb_adf"
    if ml.explore:
        chain += f", cb_explore_adf_{ml.explore}"
    chain += ", shared_feature_merger"
    if getattr(ml, "cbify_ldf", False):
        return f"{chain}, cbify_ldf", "CS", "MULTICLASS"
    if ml.reduction == "cb":
        chain += ", cb_to_cbadf"
    if ml.explore:
        out = "ACTION_PROBS"
    else:
        out = "MULTICLASS" if ml.reduction == "cb" else "ACTION_SCORES"
    return chain, "CB", out


def vw_words(ml) -> list[str]:  # noqa: ANN001
    """The options VW keeps with the model (an explorer's follow them:
    :func:`streamlearn.reductions.explore.vw_words`)."""
    from streamlearn.reductions.text import vw_number

    words: list[str] = []
    if ml.reduction == "cb" and ml.explore:
        words += ["--cb_explore", str(ml.actions)]
    elif ml.reduction == "cb":
        words += ["--cb", str(ml.actions)]
    words += ["--cb_adf", "--cb_type", ml.cb_type, "--csoaa_ldf", "multiline", "--csoaa_rank"]
    if ml.rank_all:
        words.append("--rank_all")
    if ml.clip_p:
        words += ["--clip_p", vw_number(ml.clip_p)]
    return words


def features(ml) -> str:  # noqa: ANN001
    """How VW's summary counts an example's features: cb_adf's update_statistics each
    line once, the shared line with its constant; explore_eval's the action lines' own;
    an explorer's (and ``--cb K``'s) the merged rows."""
    from streamlearn.io.examples import FEATURES_ACTIONS, FEATURES_LINES, FEATURES_MERGED

    if ml.reduction == "cb_adf" and ml.explore_eval:
        return FEATURES_ACTIONS
    if ml.reduction == "cb_adf" and not ml.explore:
        return FEATURES_LINES
    return FEATURES_MERGED


def copies(b, k: int, width: int, mask, bits: int) -> tuple:  # noqa: ANN001 - io.batch.Batch
    """Batch ``b``'s well-formed lines copied to ``k`` action lines each (VW's
    ``copy_example_to_adf``, ``width`` weights per action below, indices under ``mask``):
    the examples' action pointers, each one's row in ``b``, each action line's copy, and
    the action lines' features (indptr, indices, values, namespaces)."""
    from streamlearn.learners.cb_to_adf import copy_to_adf, index_scale

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
    copy_to_adf(b.indptr, b.indices, b.values, ns, b.status, k, width, index_scale(width), bits,
                mask, act_ptr, rows, sub, out_ptr, out_idx, out_val, out_ns)  # fmt: skip
    return act_ptr, rows, sub, out_ptr, out_idx, out_val, out_ns


def cb_part(block, bits: int, constant: bool, parse_inter, actions: int, width: int) -> Part:  # noqa: ANN001
    """``--cb K``: each line of ``block`` copied to ``actions`` action lines
    (:mod:`streamlearn.learners.cb_to_adf`), ``width`` weights per action below."""
    from streamlearn.io.examples import Part, Tags, errors_of, example_nnz
    from streamlearn.io.labels import LABEL_CB, read_labels
    from streamlearn.io.multiline import Merged
    from streamlearn.io.parse import FMT_VW, parse_block
    from streamlearn.learners.cb_to_adf import chosen_of, index_mask

    b = parse_block(block, FMT_VW, bits, constant, parse_inter)
    if b.err_pos is None:
        b.err_pos = np.full(b.n, -1, dtype=np.int64)
    lab = read_labels(b, LABEL_CB, parse_inter.vw_numbers)
    k = actions
    for r in np.flatnonzero(b.status == 0):
        a, _, _ = chosen_of(lab.ptr, lab.cls, lab.cost, lab.prob, int(r))
        if a > k:
            b.status[r] = 27
    n_ok = int(np.count_nonzero(b.status == 0))
    act_ptr, rows, sub, out_ptr, out_idx, out_val, out_ns = copies(
        b, k, width, index_mask(k, width), bits)  # fmt: skip
    chosen = np.full(n_ok, -1, dtype=np.int64)
    cost = np.zeros(n_ok)
    prob = np.ones(n_ok)
    for e, r in enumerate(rows):
        a, c, p = chosen_of(lab.ptr, lab.cls, lab.cost, lab.prob, int(r))
        if a > 0:
            chosen[e], cost[e], prob[e] = a - 1, c, p
    mg = Merged(act_ptr, rows, np.repeat(rows, k), out_ptr, out_idx, out_val, out_ns)
    tags = Tags(b.block.data, b.tag_start[rows], b.tag_end[rows])  # (VW's copies keep it)
    none = np.zeros(0)
    feats = example_nnz(mg)
    return Part(mg, chosen, cost, prob, none, none, none, tags, b.line[rows], errors_of(b), sub,
                feats, feats)  # fmt: skip


REDUCTION = Reduction("cb_adf", "cb", True, learner, stack, vw_words, features,
                      OPTIONS + LEGACY_OPTIONS + DRO_OPTIONS)  # fmt: skip
CB = Reduction("cb", "cb", True, learner, stack, vw_words,
              options=OPTIONS + LEGACY_OPTIONS + mwt.OPTIONS + offset_tree.OPTIONS)
CBIFY = Reduction("cbify", "cb", True, learner, stack, vw_words, options=CBIFY_OPTIONS)
"""``--cbify``: multiclass or cost-sensitive examples played as bandit rounds over cb_adf
and an explorer; its driver is still ``run/cbify.py``."""
