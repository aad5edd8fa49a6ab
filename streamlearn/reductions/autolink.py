"""Autolink, VW's ``--autolink d``: gd also learns from the powers ``p, p², ..., p^d`` of its
own prediction (:mod:`streamlearn.learners.autolink` is its kernel and says how, VW's
indices included), in the single-line reductions' shape (:mod:`streamlearn.reductions.lrq`
is the worked example): its option is its own words in ``TrainConfig.stack``
(``("--autolink", "2")``), read here; it keeps no state beyond gd's.

The first of the older reductions moved into the shape (it was a ``TrainConfig`` field,
chosen by ``learners.REDUCTIONS``): sl's models written before keep ``"autolink": d`` in
their options, which :meth:`streamlearn.config.TrainConfig.from_dict` reads as these words.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import Filled, checked, configured, refuse_over_gd
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "autolink"
"""Its name in VW's ``Enabled learners`` line (between gd and the scorer)."""
MOST = 64
"""The highest degree sl runs (VW takes any; each power is one more feature per example)."""


@dataclass(frozen=True)
class Options:
    d: int


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no autolink
    (``--autolink 0`` stacks it with no link features, as VW, which names and keeps it)."""
    if "--autolink" not in words:
        return None
    at = words.index("--autolink") + 1
    value = words[at] if at < len(words) else ""
    try:
        d = int(value)
    except ValueError:
        raise UsageError(f"--autolink {value}: a degree (an integer) is expected") from None
    if d < 0 or d > MOST:
        raise UsageError(f"--autolink {d}: 0 to {MOST}")
    return Options(d)


def _word(t: Command, _: str, value: str | None) -> None:
    t.learn["stack"] = (*t.learn.get("stack", ()), "--autolink", value)


VW_OPTIONS = {"autolink": VWOption(None, True, _word)}
"""VW's option of the reduction."""

TRAIN_OPTIONS = (
    TrainOption(("--autolink",), "autolink", "gd also learns from the powers 1..D of its own "
                "prediction, as features (VW's --autolink).", kind="int", metavar="D", low=0,
                high=MOST),
)  # fmt: skip
"""``sl train``'s option of the reduction (:mod:`streamlearn.reductions.trainoptions`)."""


def train_words(values: dict) -> tuple[str, ...]:
    """The words of ``sl train --autolink D`` (VW's spelling)."""
    d = values.get("autolink")
    return ("--autolink", str(d)) if d is not None else ()


def settle(t: Command) -> None:
    """What ``--autolink`` means with the rest of a VW command line (one line, exit 2)."""
    if "--autolink" in t.learn.get("stack", ()):
        checked(t, read, refuse)


def refuse(learn: dict, outputs: dict) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals, and gd's update
    rule other than VW's default (adaptive, normalized, invariant) or mini-batches."""
    refuse_over_gd(learn, outputs, "--autolink", "VW audits the added features")
    if not all(learn.get(r, True) for r in ("adaptive", "normalized", "invariant")):
        raise VWUsage("--autolink runs over gd's default update rule (adaptive, normalized, "
                      "invariant) in sl")  # fmt: skip
    if learn.get("minibatch", 1) > 1:
        raise VWUsage("--autolink with --minibatch is not supported by sl")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    """VW says nothing of autolink among its stderr lines."""
    return []


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd's table and rules with the link features: the run's learner (its table is gd's:
    sl's model files name it ``gd``; those written before the move, ``autolink_gd``, which
    :mod:`streamlearn.model` reads as ``gd``)."""
    from streamlearn.learners import autolink
    from streamlearn.learners.base import P_AUTOLINK

    opts = configured(config, read, refuse)
    return Filled(autolink.SPEC, ((P_AUTOLINK, opts.d),)).spec(name="gd")
