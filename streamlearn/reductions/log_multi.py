"""VW's ``--log_multi K`` with ``--swap_resistance S`` and ``--no_progress``
(:mod:`streamlearn.learners.log_multi` is its kernel and says what it computes), in the
single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the worked example).

It reads multiclass lines into K classes as ``--oaa K`` does (``TrainConfig.oaa``: labels
1..K, ``-p`` the class, 0/1 loss); its options are its own words in ``TrainConfig.stack``.
VW keeps ``--log_multi K`` with a model, and its tree (``swap_resistance`` in it: a model
continued keeps its own) in a section before gd's.  VW's set-up replaces the loss with
quantile (τ = 0.5): the kernel does so whatever ``--loss_function`` says.  ``--no_progress``
changes nothing VW computes (its flag is kept in the model only).

Refused, one line each before any data is read: K below 2 or above
:data:`~streamlearn.learners.log_multi.MAX_CLASSES`, another reduction over classes or over
gd, a learner other than gd, ``--indexing``, ``--named_labels``, ``--probabilities``,
``-r``, ``--audit`` and ``--invert_hash``.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import refuse_over_gd, tree_over_classes, word
from streamlearn.reductions.vwoptions import Command, VWOption, count

NAME = "log_multi"
"""Its name (VW's ``Enabled learners`` line names it where oaa would be: :func:`stack_name`)."""


@dataclass(frozen=True)
class Options:
    k: int
    swap: int = 4
    progress: bool = True


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--log_multi``."""
    if "--log_multi" not in words:
        return None
    at = words.index("--log_multi") + 1
    k = int(words[at]) if at < len(words) and words[at].isdigit() else 0
    swap = "4"
    if "--swap_resistance" in words:
        at = words.index("--swap_resistance") + 1
        swap = words[at] if at < len(words) else ""
    if not swap.isdigit() or int(swap) >= 1 << 32:
        raise UsageError(f"--swap_resistance {swap}: a count below 2^32 is expected")
    return Options(k, int(swap), "--no_progress" not in words)


def FIXED(words: tuple[str, ...]) -> dict:  # noqa: N802 - the registry's name
    """The configuration's fields its words set (a model's ``--log_multi K``: K classes)."""
    opts = read(words)
    return {} if opts is None else {"oaa": opts.k}


def _classes(t: Command, name: str, value: str) -> None:
    k = count(name, value, "--log_multi", "a multiclass tree needs at least one class")
    t.learn["stack"] = (*t.learn.get("stack", ()), "--log_multi", str(k))  # (K: settle's)


VW_OPTIONS = {
    "log_multi": VWOption(None, True, _classes),
    "swap_resistance": VWOption(None, True, word("swap_resistance", True)),
    "no_progress": VWOption(None, False, word("no_progress", False)),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--log_multi`` means with the rest of a VW command line (one line, exit 2): its
    other options alone are ignored, as VW ignores them."""
    words = t.learn.get("stack", ())
    if "--log_multi" not in words:
        mine = [w for w in words if w in ("--swap_resistance", "--no_progress")]
        if mine:
            t.notes.append(f"{' '.join(mine)}: options of --log_multi, ignored")
            kept: list[str] = []
            it = iter(words)
            for w in it:
                if w == "--swap_resistance":
                    next(it, None)
                elif w != "--no_progress":
                    kept.append(w)
            t.learn["stack"] = tuple(kept)
        return
    tree_over_classes(t, "--log_multi", read, refuse)


def refuse(learn: dict, outputs: dict) -> None:
    """What sl does not run with ``--log_multi``, one line each."""
    from streamlearn.learners.log_multi import MAX_CLASSES

    opts = read(learn.get("stack", ()))
    k = opts.k if opts is not None else 0
    if not 2 <= k <= MAX_CLASSES:
        raise VWUsage(f"--log_multi {k} is not supported by sl (2 to {MAX_CLASSES} classes)")
    others = [w for w in learn.get("stack", ())
              if w.startswith("--") and w not in ("--log_multi", "--swap_resistance",
                                                   "--no_progress")]  # fmt: skip
    if others:
        raise VWUsage(f"--log_multi with {others[0]} is not supported by sl")
    for key in ("csoaa", "multilabel", "ect"):
        if learn.get(key):
            raise VWUsage("--log_multi with another reduction over classes is not supported "
                          "by sl")  # fmt: skip
    if learn.get("indexing") is not None or learn.get("named_labels"):
        raise VWUsage("--log_multi with --indexing or --named_labels is not supported by sl")
    refuse_over_gd({k: v for k, v in learn.items() if k != "oaa"}, outputs, "--log_multi",
                   "VW audits each problem the tree asks")  # fmt: skip


def stack_name(opts: Options) -> str:  # noqa: ARG001
    return ""  # (VW names it where oaa would be: run/classes.py's vw_name)


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """The tree over gd: the run's learner."""
    from streamlearn.learners import log_multi

    try:
        opts = read(config.stack)
        refuse(config.to_dict(), {})
    except VWUsage as e:
        raise UsageError(e.message) from None
    return log_multi.spec(opts.k, opts.swap, opts.progress)
