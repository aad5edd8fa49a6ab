"""Importance-weighted active learning, VW's ``--active --simulation`` with ``--mellowness``
(:mod:`streamlearn.learners.active` is its kernel), in the single-line reductions' shape
(:mod:`streamlearn.reductions.lrq` is the worked example): its options are its own words
in ``TrainConfig.stack``; VW's generator, which decides the queries, lives in gd's global
state (VW keeps it in a model as ``--random_seed``).

VW's interactive mode (``--active`` without ``--simulation``: unlabeled examples answered
with a query decision for a labeler) and ``--direct`` are refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import refuse_over_gd, word
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption


def vw_float(v: float) -> str:
    """A float option as VW keeps it in a model: the float32, 15 digits (``0.01`` ->
    ``0.00999999977648258``)."""
    return f"{float(np.float32(v)):.15g}"


NAME = "active"
"""Its name in VW's ``Enabled learners`` line (``active-simulation``: :func:`stack_name`)."""


@dataclass(frozen=True)
class Options:
    mellowness: float = 1.0
    simulation: bool = True


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no ``--active``."""
    if "--active" not in words:
        return None
    c0 = "1"
    it = iter(words)
    for w in it:
        if w == "--mellowness":
            c0 = next(it, "")
    try:
        mellowness = float(c0)
    except ValueError:
        raise UsageError(f"--mellowness {c0}: a number is expected") from None
    if not mellowness > 0.0 or mellowness == float("inf"):
        raise UsageError(f"--mellowness {c0}: a positive number is expected")
    return Options(mellowness, "--simulation" in words)


VW_OPTIONS = {  # (--mellowness is the explorers' option too: read by them, taken in settle)
    "active": VWOption(None, False, word("active", False)),
    "simulation": VWOption(None, False, word("simulation", False)),
    "direct": VWOption(None, False, word("direct", False)),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = (
    TrainOption(("--active",), "active", "Importance-weighted active learning: each example "
                "is learned with a probability from its margin and the loss so far, the others "
                "skipped (VW's --active --simulation)."),
    TrainOption(("--active-mellowness",), "active_mellowness", "--active: how many examples "
                "are queried (VW's --mellowness, c0) [default: 1].", kind="float"),
)  # fmt: skip
"""``sl train``'s options of the reduction (:mod:`streamlearn.reductions.trainoptions`)."""


def train_words(values: dict) -> tuple[str, ...]:
    """The words of ``sl train --active [--active-mellowness C]`` (VW's ``--active
    --simulation [--mellowness C]``; sl train's ``--mellowness`` is the explorers')."""
    if not values.get("active"):
        if values.get("active_mellowness") is not None:
            raise UsageError("--active-mellowness is an option of --active")
        return ()
    words: tuple[str, ...] = ("--active", "--simulation")
    if values.get("active_mellowness") is not None:
        words += ("--mellowness", vw_float(values["active_mellowness"]))
    return words


def settle(t: Command) -> None:
    """What ``--active`` means with the rest of a VW command line (one line, exit 2).  VW's
    ``--mellowness`` is one option for its explorers and for active learning: the explorers
    read it (``Multiline.mellowness``); with ``--active`` and no explorer it is ours (run
    before the explorers' settle, which would say it is ignored)."""
    words = t.learn.get("stack", ())
    c0 = t.multiline.get("mellowness")
    if "--active" in words and c0 is not None and not t.exploring:
        t.multiline.pop("mellowness")
        t.explorer_options[:] = [n for n in t.explorer_options if n != "mellowness"]
        words = t.learn["stack"] = (*words, "--mellowness", vw_float(c0))
    if "--active" not in words:
        named = [w for w in ("--simulation", "--direct") if w in words]
        if named:
            t.notes.append(f"{' '.join(named)}: options of --active, ignored")
            t.learn["stack"] = tuple(w for w in words if w not in ("--simulation", "--direct"))
        return
    try:
        read(words)
    except UsageError as e:
        raise VWUsage(e.message) from None
    refuse(t.learn, t.outputs, words)


def refuse(learn: dict, outputs: dict, words: tuple[str, ...]) -> None:
    """VW's interactive modes, and :func:`~streamlearn.reductions.singleline.refuse_over_gd`'s
    refusals."""
    if "--direct" in words:
        raise VWUsage("--active --direct (queries through the tag and prediction) is not "
                      "supported by sl")  # fmt: skip
    if "--simulation" not in words:
        raise VWUsage("--active without --simulation (VW's interactive mode, which answers "
                      "unlabeled examples with a query decision) is not supported by sl; "
                      "--active --simulation is")  # fmt: skip
    refuse_over_gd(learn, outputs, "--active", "VW audits its queries")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


def summary_lines(opts: Options, gstate) -> list[str]:  # noqa: ANN001
    """VW's last summary line: the examples its run queried."""
    from streamlearn.learners import active

    return [f"total queries = {int(gstate[active.G_QUERIES])}"]


def stack_name(opts: Options) -> str:
    return f"{NAME}-simulation" if opts.simulation else NAME


class Entry:
    """The kernel entry of one run: the mellowness; VW's generator is in the global state."""

    wants_ns = False

    def __init__(self, opts: Options, seed: int) -> None:
        self.c0 = np.array([opts.mellowness])
        self.seed = seed
        self.started = False

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        from streamlearn.learners import active

        if not self.started:  # (VW counts the queries of a run)
            self.started = True
            gstate[active.G_QUERIES] = 0.0
        active.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                           weights, bases, status, stats, rows, preds, self.c0)  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        from streamlearn.learners import active

        return active.init_gstate(params, self.seed)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd with the queries: the run's learner."""
    import dataclasses

    from streamlearn.learners import gd

    try:
        opts = read(config.stack)
        refuse(config.to_dict(), {}, config.stack)
    except VWUsage as e:
        raise UsageError(e.message) from None
    entry = Entry(opts, config.seed)
    return dataclasses.replace(gd.SPEC, train_batch=entry, init_gstate=entry.init_gstate)
