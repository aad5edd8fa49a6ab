"""VW's experience replay, ``--replay_b N`` (over gd, simple labels) and ``--replay_c N`` (above
``--csoaa K``), in the single-line reductions' shape
(:mod:`streamlearn.reductions.lrq` is the worked example): each example is predicted, then
put in one of N slots drawn from VW's generator, and the example it displaces is the one
learned; each pass ends by learning what the slots hold (:mod:`streamlearn.run.vwreplay`
plays it).  VW keeps ``--replay_X N`` with a model, not ``--replay_X_count``; a model keeps
VW's generator (``--random_seed``).  ``--replay_m N`` is refused: VW stacks it below
``--oaa``, where it keeps and replays each class's binary example.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.classes import FIELDS
from streamlearn.reductions.singleline import checked, configured, refuse_over_gd, word
from streamlearn.reductions.vwoptions import Command, VWOption

LEVELS = {"b": "", "m": "oaa", "c": "csoaa"}
"""VW's levels and the reduction over classes each replays (b: none, gd's simple labels)."""

NAME = "replay_b"
"""The reduction's name in the registry, its first level's (VW's ``Enabled learners`` names
the level it runs: :func:`stack_name`)."""


@dataclass(frozen=True)
class Options:
    level: str
    n: int
    count: int = 1


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no replay (or
    N is 0: VW then sets nothing up)."""
    named = [lv for lv in LEVELS if f"--replay_{lv}" in words]
    if not named:
        return None
    if len(named) > 1:
        raise UsageError("one of --replay_b, --replay_m, --replay_c at a time")
    lv = named[0]
    values = {}
    for name in (f"--replay_{lv}", f"--replay_{lv}_count"):
        if name in words:
            try:
                values[name] = int(words[words.index(name) + 1])
            except (IndexError, ValueError):
                raise UsageError(f"{name} needs a whole number") from None
    n, count = values[f"--replay_{lv}"], values.get(f"--replay_{lv}_count", 1)
    if n < 0 or count < 1:
        raise UsageError(f"--replay_{lv} N needs N >= 0 and --replay_{lv}_count >= 1")
    return Options(lv, n, count) if n else None


def stack_name(opts: Options) -> str:
    return f"replay_{opts.level}"


def above_classes(opts: Options) -> bool:
    """Whether VW stacks it above the reduction over classes (``replay_m``, ``replay_c``),
    not just above gd (``replay_b``)."""
    return opts.level != "b"


VW_OPTIONS = {
    name: VWOption(None, True, word(name, True))
    for lv in LEVELS for name in (f"replay_{lv}", f"replay_{lv}_count")
}  # fmt: skip
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What a replay means with the rest of a VW command line (one line, exit 2)."""
    words = t.learn.get("stack", ())
    for lv in LEVELS:
        if f"--replay_{lv}_count" in words and f"--replay_{lv}" not in words:
            raise VWUsage(f"--replay_{lv}_count is an option of --replay_{lv}")
    if not any(f"--replay_{lv}" in words for lv in LEVELS):
        return
    if getattr(t, "daemon", False):
        raise VWUsage("experience replay with --daemon is not supported by sl")
    if checked(t, read, refuse) is None:  # (N = 0: VW sets nothing up)
        t.learn["stack"] = _without(words)


def _without(words: tuple[str, ...]) -> tuple[str, ...]:
    out, it = [], iter(words)
    names = {f"--replay_{lv}{c}" for lv in LEVELS for c in ("", "_count")}
    for w in it:
        if w in names:
            next(it, None)
        else:
            out.append(w)
    return tuple(out)


def refuse(learn: dict, outputs: dict) -> None:
    """What a replay does not run with, one line each: a level other than the run's labels'
    (``--replay_b`` over simple labels, ``--replay_m`` over ``--oaa``, ``--replay_c`` over
    ``--csoaa``), another reduction, a learner other than gd, ``--audit``/``--invert_hash``,
    a holdout over several passes (not yet)."""
    words = learn.get("stack", ())
    lv = next((lv for lv in LEVELS if f"--replay_{lv}" in words), "b")
    flag = f"--replay_{lv}"
    want = LEVELS[lv]
    given = [k for k in FIELDS if learn.get(k)]
    if want and (learn.get("oaa") or 0) < 1:
        raise VWUsage(f"{flag} replays --{want} K's examples: give --{want} K")
    if lv == "m":  # (VW stacks it below oaa: it keeps and replays each class's binary
        # example, as oaa hands them to gd, with its multiclass label copied over them)
        raise VWUsage(
            "--replay_m is not supported by sl yet (VW replays --oaa's binary "
            "examples of each class; --replay_c replays --csoaa's examples)"
        )
    if lv == "c" and not learn.get("csoaa"):
        raise VWUsage("--replay_c replays --csoaa's examples: --replay_m replays --oaa's")
    if lv == "b" and given:
        raise VWUsage(f"--replay_b with --{given[0].replace('_', '-')} is not supported by sl "
                      "(--replay_m replays --oaa's examples, --replay_c --csoaa's)")  # fmt: skip
    refuse_over_gd(learn, outputs, flag, "VW audits gd's features",
                   allowed=("oaa", "csoaa"))  # fmt: skip
    holdout = learn.get("holdout_period") != 0 or learn.get("holdout_after")
    if (learn.get("passes") or 1) > 1 and holdout:
        raise VWUsage(f"{flag} with a holdout (several passes without --holdout_off) is not "
                      "supported by sl yet")  # fmt: skip


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return [f"experience replay level={opts.level}, buffer={opts.n}, replay count={opts.count}"]


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """The kernels the run has without it (gd's, ``--oaa``'s, ``--csoaa``'s: replay changes
    which example is learned when, not how), their global state followed by VW's generator
    (seeded with ``--random_seed``)."""
    from streamlearn.learners import spec_of
    from streamlearn.learners.stacked import with_generator

    configured(config, read, refuse)
    below = spec_of(config)
    seed = config.seed
    return dataclasses.replace(
        below, init_gstate=lambda params: with_generator(below.init_gstate(params), seed)
    )
