"""VW's ``--baseline`` with ``--lr_multiplier`` (:mod:`streamlearn.learners.baseline` is its
kernel), in the single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the worked
example).  VW keeps ``--baseline`` with a model, not ``--lr_multiplier``.  ``--global_only``
and ``--check_enabled`` (a separate global constant; a baseline only for lines that ask for
it) are refused in one line, as is ``--baseline`` over the contextual bandits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import (
    ignore_alone,
    over_gd,
    refuse_labels,
    refuse_over_gd,
    word,
)
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "baseline"
"""Its name in VW's ``Enabled learners`` line (just above gd)."""

REFUSED = ("--global_only", "--check_enabled")


@dataclass(frozen=True)
class Options:
    lr_multiplier: float = 1.0


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--baseline``."""
    if "--baseline" not in words:
        return None
    text = "1"
    it = iter(words)
    for w in it:
        if w == "--lr_multiplier":
            text = next(it, "")
    try:
        value = float(np.float32(text))
    except ValueError:
        raise UsageError(f"--lr_multiplier {text}: a number is expected") from None
    return Options(value)


VW_OPTIONS = {
    "baseline": VWOption(None, False, word("baseline", False)),
    "lr_multiplier": VWOption(None, True, word("lr_multiplier", True)),
    "global_only": VWOption(None, False, word("global_only", False)),
    "check_enabled": VWOption(None, False, word("check_enabled", False)),
}
"""VW's options of the reduction (``--baseline`` is also ``--cs_active``'s word in VW)."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--baseline`` means with the rest of a VW command line (one line, exit 2): its
    other options alone are ignored, as VW ignores them."""
    if not ignore_alone(t, "--baseline", REFUSED, ("--lr_multiplier",)):
        return
    if t.multiline.get("reduction"):
        raise VWUsage(f"--baseline with --{t.multiline['reduction']} is not supported by sl "
                      "(a baseline over the contextual bandits' regressors)")  # fmt: skip
    try:
        read(t.learn["stack"])
    except UsageError as e:
        raise VWUsage(e.message) from None
    refuse(t.learn, t.outputs)


def refuse(learn: dict, outputs: dict) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals, VW's global
    baseline and enabling flag, crosses and other labels."""
    words = learn.get("stack", ())
    for w in REFUSED:
        if w in words:
            raise VWUsage(f"--baseline {w} is not supported by sl")
    refuse_over_gd(learn, outputs, "--baseline", "VW audits the baseline's example apart")
    for key in ("quadratic", "cubic", "interactions"):
        if learn.get(key):
            raise VWUsage("--baseline with -q, --cubic or --interactions is not supported by "
                          "sl")  # fmt: skip
    refuse_labels(learn, "--baseline")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


class Entry:
    """The kernel entry of one run (:mod:`streamlearn.learners.baseline`'s ``conf``)."""

    wants_ns = False

    def __init__(self, opts: Options, constant: bool, logistic: bool) -> None:
        self.conf = np.array([constant, opts.lr_multiplier, not logistic], dtype=np.float64)

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        from streamlearn.learners import baseline

        baseline.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                             weights, bases, status, stats, rows, preds, self.conf)  # fmt: skip


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd with the baseline: the run's learner."""
    from streamlearn.learners.losses import LOGISTIC

    return over_gd(config, read, refuse,
                   lambda o: Entry(o, config.constant, config.loss_id == LOGISTIC))
