"""``--warm_cb K``: a contextual bandit warm-started from supervised examples (VW's
``cb/warm_cb.cc``), over ``--cb_explore_adf``; its driver is ``run/warm_cb.py``.

Options (``reductions.Multiline``'s fields): ``warm_cb`` (K classes), ``warm_cb_cs``
(cost-sensitive input), ``warm_start`` and ``interaction`` (the lengths of the two phases),
``warm_start_update``/``interaction_update`` (whether each phase learns),
``choices_lambda`` and ``lambda_scheme`` (the candidate weights between the phases),
``sim_bandit`` (warm-start examples played as bandit rounds), ``corrupt_type_warm_start``,
``corrupt_prob_warm_start`` and ``overwrite_label`` (the warm-start labels' corruption);
``--loss0``/``--loss1`` are cbify's (:mod:`streamlearn.reductions.cb_adf`).  The learning
itself is :mod:`streamlearn.learners.warm_cb`.
"""

from __future__ import annotations

from streamlearn.errors import VWUsage
from streamlearn.reductions.base import Reduction
from streamlearn.reductions.vwoptions import Command, VWOption, count, integer, number, stack_field

OPTIONS = (
    ("warm_cb", "int", 0),
    ("warm_cb_cs", "bool", False),
    ("warm_start", "int", 0),
    ("interaction", "int", 4294967295),  # VW's UINT32_MAX: every example after the warm start
    ("warm_start_update", "bool", False),
    ("interaction_update", "bool", False),
    ("choices_lambda", "int", 1),
    ("lambda_scheme", "int", 1),
    ("sim_bandit", "bool", False),
    ("corrupt_type_warm_start", "int", 1),
    ("corrupt_prob_warm_start", "float", 0.0),
    ("overwrite_label", "int", 1),
    ("warm_corrupt_given", "bool", False),  # (a corruption option given: refused with --warm_cb_cs)
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""


def _warm_cb(t: Command, name: str, value: str) -> None:
    t.exploring = True
    t.multiline["warm_cb"] = count(name, value, "--warm_cb", "at least one class")
    t.multiline.setdefault("explore", "greedy")


def _unsigned(name: str, text: str) -> int:
    """A VW ``uint32_t`` option."""
    k = integer(name, text)
    if not 0 <= k <= 4294967295:
        raise VWUsage(f"--{name} {text}: a number of examples from 0 to 4294967295 is expected")
    return k


def _one_of(low: int, high: int):  # noqa: ANN202
    def read(name: str, text: str) -> int:
        k = integer(name, text)
        if not low <= k <= high:
            raise VWUsage(f"--{name} {text}: one of {', '.join(map(str, range(low, high + 1)))}"
                          " is expected (as VW)")  # fmt: skip
        return k

    return read


def _corrupt(key: str, kind):  # noqa: ANN001, ANN202
    def apply(t: Command, name: str, value: str) -> None:
        t.multiline[key] = kind(name, value)
        t.multiline["warm_corrupt_given"] = True

    return apply


VW_OPTIONS = {
    "warm_cb": VWOption(None, True, _warm_cb),
    "warm_cb_cs": VWOption(None, False, stack_field("warm_cb_cs")),
    "warm_start": VWOption(None, True, stack_field("warm_start", _unsigned)),
    "interaction": VWOption(None, True, stack_field("interaction", _unsigned)),
    "warm_start_update": VWOption(None, False, stack_field("warm_start_update")),
    "interaction_update": VWOption(None, False, stack_field("interaction_update")),
    "choices_lambda": VWOption(None, True, stack_field("choices_lambda", _unsigned)),
    "lambda_scheme": VWOption(None, True, stack_field("lambda_scheme", _one_of(1, 4))),
    "sim_bandit": VWOption(None, False, stack_field("sim_bandit")),
    "corrupt_type_warm_start": VWOption(None, True, _corrupt("corrupt_type_warm_start",
                                                             _one_of(1, 3))),
    "corrupt_prob_warm_start": VWOption(None, True, _corrupt("corrupt_prob_warm_start", number)),
    "overwrite_label": VWOption(None, True, stack_field("overwrite_label", _unsigned)),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`)."""


def settle(t: Command) -> None:
    """``--warm_cb K`` runs on ``--cb_explore_adf`` (whichever comes first on the line):
    without it VW stops, refused here in one line; its settings without ``--warm_cb`` are
    ignored with a note, as VW warns and runs without them."""
    asked = t.multiline
    if not asked.get("warm_cb"):
        for name, _, _ in OPTIONS[1:-1]:
            if asked.pop(name, None) is not None:  # (VW warns, and runs without it)
                t.notes.append(f"--{name}: an option of --warm_cb K, ignored without it "
                               "(as VW)")  # fmt: skip
        asked.pop("warm_corrupt_given", None)
        return
    if asked.get("reduction") is None:
        raise VWUsage("--warm_cb K runs over --cb_explore_adf, which is not given (VW stops)")
    if asked.get("reduction") != "cb_adf":
        raise VWUsage(f"--warm_cb with --{asked['reduction']}: not supported by sl")
    asked["reduction"] = "warm_cb"
    if asked.get("warm_cb_cs") and asked.get("warm_corrupt_given"):
        # VW: "label corruption on cost-sensitive examples not currently supported"
        raise VWUsage("--warm_cb_cs with --corrupt_type_warm_start/--corrupt_prob_warm_start: "
                      "label corruption on cost-sensitive examples is not supported (as VW)")
    if asked.get("choices_lambda", 1) < 1:
        raise VWUsage("--choices_lambda 0: at least one lambda is needed (VW reads past "
                      "its empty list)")  # fmt: skip


def learner(ml, cfg, **_: object):  # noqa: ANN001, ANN201, ARG001
    """None: ``--warm_cb`` plays its rounds in a loop of its own (``run/warm_cb.py``)."""
    from streamlearn.errors import UsageError

    raise UsageError("--warm_cb: only sl vw's passes run its examples; serving a --warm_cb "
                     "model, or the API's calls on it: not yet")


def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001
    """VW's header: (Enabled learners, Input label, Output pred)."""
    chain = (f"{base}, csoaa_ldf-rank, cb_adf, cb_explore_adf_{ml.explore}, "
             f"shared_feature_merger, warm_cb-{'cs' if ml.warm_cb_cs else 'multi'}")  # fmt: skip
    return chain, "CS" if ml.warm_cb_cs else "MULTICLASS", "MULTICLASS"


def vw_words(ml) -> list[str]:  # noqa: ANN001
    """The options VW keeps with the model: cb_adf's and ``--warm_cb K`` (the explorer's
    follow: :func:`streamlearn.reductions.explore.vw_words`)."""
    from streamlearn.reductions.cb_adf import vw_words as cb_words

    return [*cb_words(ml), "--warm_cb", str(ml.warm_cb)]


REDUCTION = Reduction("warm_cb", "cb", True, learner, stack, vw_words, options=OPTIONS,
                      batched=False, served=False)  # fmt: skip
"""``--warm_cb``: multiclass (or cost-sensitive) lines played as a warm start, then as
bandit rounds over cb_adf and an epsilon-greedy explorer."""
