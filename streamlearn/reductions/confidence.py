"""VW's ``--confidence`` and ``--confidence_after_training`` (:mod:`streamlearn.learners.confidence`
is its kernel), in the single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the
worked example): gd learns as without it; ``-p`` gives each prediction with its confidence.
VW keeps ``--confidence`` with a model, not ``--confidence_after_training``; under ``-t``
VW sets nothing up (it warns that confidence needs the learner's state): sl then predicts
as gd, as VW.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from streamlearn.reductions.singleline import over_gd, refuse_labels, refuse_over_gd
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "confidence"
"""Its name in VW's ``Enabled learners`` line (just above gd)."""

UNDER_TEST = False
"""Under ``-t`` VW sets nothing up (``reductions.single_line``): the run is gd's."""

TEST_NOTE = ("--confidence under -t: VW sets nothing up (confidence needs the learner's "
             "state): predicting as gd")


@dataclass(frozen=True)
class Options:
    after_training: bool = False


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--confidence``."""
    if "--confidence" not in words:
        return None
    return Options("--confidence_after_training" in words)


def _word(name: str):  # noqa: ANN202
    def apply(t: Command, _: str, v: str | None) -> None:
        if f"--{name}" not in t.learn.get("stack", ()):
            t.learn["stack"] = (*t.learn.get("stack", ()), f"--{name}")

    return apply


VW_OPTIONS = {
    "confidence": VWOption(None, False, _word("confidence")),
    "confidence_after_training": VWOption(None, False, _word("confidence_after_training")),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--confidence`` means with the rest of a VW command line (one line, exit 2):
    ``--confidence_after_training`` alone stacks nothing (VW says nothing either); under
    ``-t`` neither does ``--confidence``."""
    words = t.learn.get("stack", ())
    if "--confidence" not in words or t.learn.get("test_only"):
        if "--confidence" in words:
            t.notes.append(TEST_NOTE)
        if words:
            t.learn["stack"] = tuple(w for w in words
                                     if w not in ("--confidence", "--confidence_after_training"))
        return
    refuse(t.learn, t.outputs)


def refuse(learn: dict, outputs: dict) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals, and other
    labels (VW's confidence reads simple labels)."""
    refuse_over_gd(learn, outputs, "--confidence", "VW audits gd's features")
    refuse_labels(learn, "--confidence")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


def _text(v: float) -> str:
    """C++'s ``std::fixed`` of a float (six decimals; ``inf``, ``nan`` and ``-nan``)."""
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    return f"{v + 0.0:.6f}"


def p_lines(batch, preds: np.ndarray, extra: np.ndarray) -> bytes:  # noqa: ANN001 - a Batch
    """VW's ``-p``: the prediction, its confidence, a space, the tag."""
    data = batch.block.data
    lines = []
    rows = zip(preds.tolist(), extra[0].tolist(), batch.tag_start.tolist(),
               batch.tag_end.tolist(), strict=True)  # fmt: skip
    for v, c, a, b in rows:
        tag = data[a:b].tobytes() if b > a else b""
        lines.append(f"{_text(v)} {_text(np.float32(c))} ".encode("ascii") + tag + b"\n")
    return b"".join(lines)


class Entry:
    """The kernel entry of one run: ``--confidence_after_training``; its rows' confidences
    follow their predictions (``bounds``: the runs' extra values per row, written by
    :func:`p_lines`)."""

    wants_ns = False
    bounds = True

    def __init__(self, opts: Options) -> None:
        self.after = opts.after_training
        self.p_lines = p_lines

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        from streamlearn.learners import confidence

        confidence.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                               weights, bases, status, stats, rows, preds, self.after)  # fmt: skip


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd with its confidences: the run's learner."""
    return over_gd(config, read, refuse, Entry)

