"""``--csoaa_ldf m|mc`` (and ``--csoaa_rank``): cost-sensitive one-against-all over label-
dependent features, VW's ``csoaa_ldf.cc`` — the worked example of a reduction's shape
(:mod:`streamlearn.reductions.base`).

Options (``reductions.Multiline``'s fields): ``classifier`` (``mc``: each line's cost
regressed as a classifier's, VW's ``csoaa_ldf mc``), ``csoaa_rank`` (predict every action's
score, VW's ``csoaa_ldf-rank``).  Labels: cost-sensitive rows (``io.labels.LABEL_CS``).
State: gd's table and global state (:func:`streamlearn.learners.csoaa_ldf.init_gstate`).
Kernel: :func:`streamlearn.learners.csoaa_ldf.train_examples`, one call per
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
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""


def _csoaa_ldf(t: Command, name: str, value: str) -> None:
    if value not in ("m", "multiline", "mc", "multiline-classifier"):
        raise VWUsage(f"--csoaa_ldf {value}: m, multiline, mc or multiline-classifier")
    t.multiline["reduction"] = NAME
    t.multiline["classifier"] = value in ("mc", "multiline-classifier")


VW_OPTIONS = {
    "csoaa_ldf": VWOption(None, True, _csoaa_ldf),
    "csoaa_rank": VWOption(None, False, stack_field("csoaa_rank")),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`)."""


class Learner:
    """``--csoaa_ldf``'s learner over one run (``probabilities``: VW's ``csoaa_ldf-prob``,
    a ``run.mlscores.Probabilities``, which then makes the predicted class and ``-p``)."""

    def __init__(self, ml, cfg=None, probabilities=None) -> None:  # noqa: ANN001, ARG002
        self.classifier = bool(ml.classifier)
        self.rank = bool(ml.csoaa_rank)
        self.probabilities = probabilities

    def learn(self, w: Weights, part: Part, ho: np.ndarray, lines: bool = False) -> Seen:
        """Score each example's lines, learn the labeled examples (``lines``: the
        ``--probabilities`` ``-p`` lines are wanted)."""
        from streamlearn.learners import csoaa_ldf

        mg = part.mg
        m = mg.act_ptr.shape[0] - 1
        scores, order, sub = scratch(part)
        pred = np.zeros(m, dtype=np.int64)
        s6 = np.zeros(6)
        csoaa_ldf.train_examples(
            w.tables, sub, w.gstate, w.params, w.loss_id, self.classifier, mg.act_ptr,
            mg.indptr, mg.indices, mg.values, part.lab_n, part.lab_cls, part.lab_cost, ho, s6,
            scores, order, pred,
        )  # fmt: skip
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
    words = ["--csoaa_ldf", "mc" if ml.classifier else "m"]
    if ml.csoaa_rank:
        words.append("--csoaa_rank")
    return words


REDUCTION = Reduction(NAME, "cs", False, Learner, stack, vw_words, options=OPTIONS)
