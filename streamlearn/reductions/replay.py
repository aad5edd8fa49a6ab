"""VW's ``--replay_b N`` (experience replay over gd), in the single-line reductions' shape
(:mod:`streamlearn.reductions.lrq` is the worked example): each example is predicted, then
put in one of N slots drawn from VW's generator, and the example it displaces is the one
learned; each pass ends by learning what the slots hold (:mod:`streamlearn.run.vwreplay`
plays it).  VW keeps ``--replay_b N`` with a model, not ``--replay_b_count``.  VW's
``--replay_m`` and ``--replay_c`` (over ``--oaa`` and ``--csoaa``) are not done yet.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import checked, over_gd, refuse_labels, refuse_over_gd, word
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "replay_b"
"""Its name in VW's ``Enabled learners`` line (just above gd)."""


@dataclass(frozen=True)
class Options:
    n: int
    count: int = 1


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--replay_b`` (or N is 0: VW then sets nothing up)."""
    if "--replay_b" not in words:
        return None
    values = {}
    for name in ("--replay_b", "--replay_b_count"):
        if name in words:
            try:
                values[name] = int(words[words.index(name) + 1])
            except (IndexError, ValueError):
                raise UsageError(f"{name} needs a whole number") from None
    n, count = values["--replay_b"], values.get("--replay_b_count", 1)
    if n < 0 or count < 1:
        raise UsageError("--replay_b N needs N >= 0 and --replay_b_count >= 1")
    return Options(n, count) if n else None


VW_OPTIONS = {
    "replay_b": VWOption(None, True, word("replay_b", True)),
    "replay_b_count": VWOption(None, True, word("replay_b_count", True)),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--replay_b`` means with the rest of a VW command line (one line, exit 2)."""
    words = t.learn.get("stack", ())
    if "--replay_b_count" in words and "--replay_b" not in words:
        raise VWUsage("--replay_b_count is an option of --replay_b N")
    if "--replay_b" not in words:
        return
    if getattr(t, "daemon", False):
        raise VWUsage("--replay_b with --daemon is not supported by sl")
    if read_checked(t) is None:  # (N = 0: VW sets nothing up)
        t.learn["stack"] = _without(words)


def read_checked(t: Command) -> Options | None:
    return checked(t, read, refuse)


def _without(words: tuple[str, ...]) -> tuple[str, ...]:
    out, it = [], iter(words)
    for w in it:
        if w in ("--replay_b", "--replay_b_count"):
            next(it, None)
        else:
            out.append(w)
    return tuple(out)


def refuse(learn: dict, outputs: dict) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals, and other labels
    (``--replay_b`` is VW's replay of simple labels; ``--replay_m``/``--replay_c`` are not
    done yet)."""
    refuse_over_gd(learn, outputs, "--replay_b", "VW audits gd's features")
    refuse_labels(learn, "--replay_b")
    holdout = learn.get("holdout_period") != 0 or learn.get("holdout_after")
    if (learn.get("passes") or 1) > 1 and holdout:
        raise VWUsage("--replay_b with a holdout (several passes without --holdout_off) is "
                      "not supported by sl yet")  # fmt: skip


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return [f"experience replay level=b, buffer={opts.n}, replay count={opts.count}"]


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd's kernel (replay changes which example gd learns when, not how), its global state
    followed by VW's generator (seeded with ``--random_seed``)."""
    from streamlearn.learners import gd
    from streamlearn.learners.stacked import replay_init

    seed = config.seed
    return over_gd(config, read, refuse, lambda opts: gd.SPEC.train_batch,
                   init_gstate=lambda params: replay_init(params, seed))  # fmt: skip
