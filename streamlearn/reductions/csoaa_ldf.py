"""``--csoaa_ldf m|mc`` (and ``--csoaa_rank``): cost-sensitive one-against-all over label-
dependent features, VW's ``csoaa_ldf.cc`` — the worked example of a reduction's shape
(:mod:`streamlearn.reductions.base`) — and ``--wap_ldf m|mc``, weighted all pairs over them
(the same file's: the same predictions, only the learning differs).

Options (``reductions.Multiline``'s fields): ``classifier`` (``mc``: each line's cost
regressed as a classifier's, VW's ``csoaa_ldf mc``), ``csoaa_rank`` (predict every action's
score, VW's ``csoaa_ldf-rank``), ``wap`` (``--wap_ldf``'s word as given, which VW keeps:
pairs of lines learned instead of the lines).  Labels: cost-sensitive rows
(``io.labels.LABEL_CS``).  State: gd's table and global state
(:func:`streamlearn.learners.csoaa_ldf.init_gstate`).  Kernel:
:func:`streamlearn.learners.csoaa_ldf.train_examples` (``--wap_ldf``:
:func:`streamlearn.learners.wap_ldf.train_examples`), one call per
:class:`~streamlearn.io.examples.Part`.  Outputs: ``-p`` (per action line the predicted
class on the first line that carries it, ``0`` on the others; with ``--csoaa_rank`` the
ranked ``class:score`` list; with ``--probabilities`` each line's probability:
``run/mlscores.py``), the progress table (``known`` when the predicted class is among the
example's labels), and VW's model options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from streamlearn.errors import VWUsage
from streamlearn.reductions.base import Reduction, Seen, Weights, scratch
from streamlearn.reductions.text import score_text
from streamlearn.reductions.vwoptions import Command, VWOption, stack_field

if TYPE_CHECKING:
    from streamlearn.io.examples import Part

NAME = "csoaa_ldf"


OPTIONS = (
    ("classifier", "bool", False),  # --csoaa_ldf mc
    ("csoaa_rank", "bool", False),
    ("wap", "str", ""),  # --wap_ldf m|multiline|mc|multiline-classifier
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""


def _csoaa_ldf(t: Command, name: str, value: str) -> None:
    if value not in ("m", "multiline", "mc", "multiline-classifier"):
        raise VWUsage(f"--csoaa_ldf {value}: m, multiline, mc or multiline-classifier")
    t.multiline["reduction"] = NAME
    t.multiline["classifier"] = value in ("mc", "multiline-classifier")


def _wap_ldf(t: Command, name: str, value: str) -> None:
    if value not in ("m", "multiline", "mc", "multiline-classifier"):
        raise VWUsage(f"--wap_ldf {value}: m, multiline, mc or multiline-classifier")
    t.multiline["wap"] = value


def settle(t: Command) -> None:
    """``--wap_ldf`` is weighted all pairs (VW's ``csoaa_ldf`` then learns pairs); with
    ``--csoaa_ldf`` or another multiline reduction it is refused (VW 9.11.9: "unrecognised
    option '--wap_ldf'" beside ``--csoaa_ldf``)."""
    wap = t.multiline.get("wap")
    if not wap:
        return
    if t.multiline.get("reduction") == NAME:
        raise VWUsage("--wap_ldf with --csoaa_ldf: VW refuses it (unrecognised option "
                      "'--wap_ldf')")  # fmt: skip
    if t.multiline.get("reduction"):
        raise VWUsage(f"--wap_ldf with --{t.multiline['reduction']} is not supported by sl")
    if t.outputs.get("audit"):
        raise VWUsage("--wap_ldf with --audit is not supported by sl (VW audits each pair of "
                      "lines it learns)")  # fmt: skip
    t.multiline["reduction"] = NAME
    t.multiline["classifier"] = wap in ("mc", "multiline-classifier")


VW_OPTIONS = {
    "csoaa_ldf": VWOption(None, True, _csoaa_ldf),
    "wap_ldf": VWOption(None, True, _wap_ldf),
    "csoaa_rank": VWOption(None, False, stack_field("csoaa_rank")),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`)."""


class Learner:
    """``--csoaa_ldf``'s learner over one run (``probabilities``: VW's ``csoaa_ldf-prob``,
    a ``run.mlscores.Probabilities``, which then makes the predicted class and ``-p``)."""

    def __init__(self, ml, cfg=None, probabilities=None) -> None:  # noqa: ANN001, ARG002
        self.classifier = bool(ml.classifier)
        self.wap = bool(getattr(ml, "wap", ""))
        self.rank = bool(ml.csoaa_rank)
        self.probabilities = probabilities

    def learn(self, w: Weights, part: Part, ho: np.ndarray, lines: bool = False) -> Seen:
        """Score each example's lines, learn the labeled examples (``lines``: the
        ``--probabilities`` ``-p`` lines are wanted)."""
        from streamlearn.learners import csoaa_ldf, wap_ldf

        mg = part.mg
        m = mg.act_ptr.shape[0] - 1
        scores, order, sub = scratch(part)
        pred = np.zeros(m, dtype=np.int64)
        s6 = np.zeros(6)
        rows = (mg.act_ptr, mg.indptr, mg.indices, mg.values, part.lab_n, part.lab_cls,
                part.lab_cost, ho, s6, scores, order, pred)  # fmt: skip
        if self.wap:
            wap_ldf.train_examples(w.tables, sub, w.gstate, w.params, w.loss_id, *rows)
        else:
            csoaa_ldf.train_examples(w.tables, sub, w.gstate, w.params, w.loss_id,
                                     self.classifier, *rows)  # fmt: skip
        w.stats[:6] += s6
        seen = Seen(part, scores=scores, order=order, pred=pred)
        if self.probabilities is not None:
            seen.text = [] if lines else None
            seen.pred = self.probabilities.batch(part, scores, pred, ho, w.stats, seen.text)
        return seen

    def write(self, seen: Seen, out: list[str], vw: bool = True) -> None:
        """``-p``: VW's lines (each example's, then a blank line) or sl's (one per example)."""
        if seen.text is not None:
            out.extend(seen.text)
            return
        part = seen.part
        ptr = part.mg.act_ptr
        end = "\n\n" if vw else "\n"
        for e in range(ptr.shape[0] - 1):
            lo, hi = int(ptr[e]), int(ptr[e + 1])
            if self.rank:
                order, scores = seen.order, seen.scores
                out.append(",".join(f"{int(part.lab_cls[lo + order[i]])}:"
                                    f"{score_text(float(scores[lo + order[i]]))}"
                                    for i in range(lo, hi)) + end)  # fmt: skip
            elif vw:
                done = False
                for r in range(lo, hi):
                    if not done and part.lab_cls[r] == seen.pred[e] and part.lab_n[r] > 0:
                        out.append(f"{int(seen.pred[e])}\n")
                        done = True
                    else:
                        out.append("0\n")
                out.append("\n")
            else:
                out.append(f"{int(seen.pred[e])}\n")

    def progress(self, table, npass: int, seen: Seen, ho: np.ndarray) -> None:  # noqa: ANN001
        """VW's table: ``known`` when the predicted class is among the example's labels
        (its cost is the loss), the predicted class (``.....`` after it with
        ``--csoaa_rank``).  csoaa_ldf counts held-out examples as the others (VW's)."""
        part = seen.part
        ptr = part.mg.act_ptr
        m = ptr.shape[0] - 1
        ex_of_row = np.repeat(np.arange(m), np.diff(ptr))
        cls = part.lab_cls
        if self.rank:
            top = cls[ptr[:-1] + seen.order[ptr[:-1]]] if m else np.zeros(0, dtype=np.int64)
        else:
            top = np.asarray(seen.pred, dtype=np.int64)
        match = (cls == top[ex_of_row]) & (part.lab_n > 0)
        first = np.full(m, -1, dtype=np.int64)
        rows = np.flatnonzero(match)[::-1]
        first[ex_of_row[rows]] = rows
        known = first >= 0
        loss = np.where(known, part.lab_cost[np.maximum(first, 0)], 0.0) if m else np.zeros(0)
        loss = np.nan_to_num(loss, nan=0.0)
        costed = (part.lab_n > 0) & ~np.isnan(part.lab_cost)
        labeled = np.bincount(ex_of_row[costed], minlength=m) > 0 if m else np.zeros(0, bool)
        tail = "....." if self.rank else ""

        def label(e: int) -> str:
            return "known" if known[e] else "unknown"

        def guess(e: int) -> str:
            return f"{int(top[e])}{tail}"

        table.batch(npass, labeled, np.zeros(m, dtype=bool), loss, part.feat_row,
                    part.feat_total, label, guess)  # fmt: skip


def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001
    """VW's header: (Enabled learners, Input label, Output pred) over the base learner's
    names ``base``."""
    if ml.csoaa_rank:
        return f"{base}, csoaa_ldf-rank, shared_feature_merger", "CS", "ACTION_SCORES"
    return f"{base}, csoaa_ldf, shared_feature_merger", "CS", "MULTICLASS"


def vw_words(ml) -> list[str]:  # noqa: ANN001
    """The options VW keeps with the model (before the base learner's)."""
    wap = getattr(ml, "wap", "")
    words = ["--wap_ldf", wap] if wap else ["--csoaa_ldf", "mc" if ml.classifier else "m"]
    if ml.csoaa_rank:
        words.append("--csoaa_rank")
    return words


REDUCTION = Reduction(NAME, "cs", False, Learner, stack, vw_words, options=OPTIONS)
