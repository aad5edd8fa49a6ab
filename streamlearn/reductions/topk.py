"""VW's ``--top K`` (topk), in the single-line reductions' shape (:mod:`streamlearn.reductions.lrq`
is the worked example): gd learns every example as without it, in the file's order; the
examples come in groups separated by empty lines, and ``-p`` gives each group's K highest
predictions with their tags (:mod:`streamlearn.run.vwtopk` writes them, and VW's table of a
line per group).  VW keeps ``--top K`` with a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import (
    checked,
    over_gd,
    refuse_labels,
    refuse_over_gd,
    word,
)
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "top"
"""Its name in VW's ``Enabled learners`` line (above the scorer)."""

ABOVE_SCORER = True


@dataclass(frozen=True)
class Options:
    k: int


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no ``--top``."""
    if "--top" not in words:
        return None
    i = words.index("--top")
    try:
        k = int(words[i + 1])
    except (IndexError, ValueError):
        raise UsageError("--top needs a whole number K (the predictions kept a group)") from None
    if k < 1:  # (VW 9.11.9 runs --top 0 forever)
        raise UsageError(f"--top {k}: K must be 1 or more")
    return Options(k)


VW_OPTIONS = {"top": VWOption(None, True, word("top", True))}
"""VW's option of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--top`` means with the rest of a VW command line (one line, exit 2)."""
    if "--top" not in t.learn.get("stack", ()):
        return
    if getattr(t, "daemon", False):
        raise VWUsage("--top with --daemon is not supported by sl (VW's topk answers a "
                      "group of lines: sl vw -d FILE --top K -p OUT)")  # fmt: skip
    if getattr(t, "raw_predictions", None):
        raise VWUsage("--top with -r is not supported by sl (VW's raw predictions file "
                      "stays empty)")  # fmt: skip
    checked(t, read, refuse)


def refuse(learn: dict, outputs: dict) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals, other labels (VW's
    topk reads simple labels), and several passes (not yet: VW's holdout over groups)."""
    refuse_over_gd(learn, outputs, "--top", "VW audits gd's features")
    refuse_labels(learn, "--top")
    if (learn.get("passes") or 1) > 1:
        raise VWUsage("--top with --passes is not supported by sl yet (one pass)")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd itself: topk changes what is written, not what is learned."""
    from streamlearn.learners import gd

    return over_gd(config, read, refuse, lambda opts: gd.SPEC.train_batch)
