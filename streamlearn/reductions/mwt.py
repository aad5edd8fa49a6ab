"""``--multiworld_test NS`` (VW's ``mwt.cc``): the features of namespaces NS are policies,
evaluated on a log of single-line contextual-bandit examples (``action:cost:probability``).

Each feature of NS is one policy (keyed by its slot, VW's weight index), its value the action
it takes on that example.  For each example with a logged cost, every policy met so far
adds VW's IPS estimate of its action's cost (``cost / probability`` when its action is the
logged one, else 0) and the example count goes up; ``-p`` writes each policy's average so
far (its estimates over the examples counted), in the order the policies were met; nothing
is learned.  ``--learn K`` (VW's legacy ``--cb K`` learning over NS's features made
(policy, action) indicators) is refused: VW places those indicators where they overlap its
actions' offsets, which sl's legacy kernel does not lay out, so its predictions would be
VW's only by luck.  The runtime is ``run/mwt.py``, over the legacy cb driver's
(``run/cblegacy.py``).
"""

from __future__ import annotations

from streamlearn.errors import VWUsage
from streamlearn.reductions.vwoptions import Command, VWOption, count, stack_field

OPTIONS = (
    ("mwt", "str", ""),  # --multiworld_test NS: the policies' namespaces
    ("mwt_learn", "int", 0),  # --learn K: VW's legacy cb over K actions learns too
    ("mwt_exclude", "bool", False),  # --exclude_eval
)
"""Its fields of :class:`~streamlearn.reductions.Multiline` (on ``--cb K``'s record)."""


def _learn(t: Command, name: str, value: str) -> None:
    t.multiline["mwt_learn"] = count(name, value, "--learn", "at least one action")


VW_OPTIONS = {
    "multiworld_test": VWOption(None, True, stack_field("mwt")),
    "learn": VWOption(None, True, _learn),
    "exclude_eval": VWOption(None, False, stack_field("mwt_exclude")),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`)."""


def settle(t: Command) -> None:
    """``--multiworld_test`` over VW's legacy cb: ``--learn K`` inserts ``--cb K`` (unless
    given) and ``--cb_force_legacy``, as VW's set-up does; without it nothing learns."""
    asked = t.multiline
    if not asked.get("mwt"):
        if asked.get("mwt_learn") or asked.get("mwt_exclude"):
            raise VWUsage("--learn and --exclude_eval are --multiworld_test's options")
        return
    if asked.get("reduction") not in (None, "cb") or asked.get("explore"):
        raise VWUsage("--multiworld_test with another reduction: not supported by sl")
    if any(t.learn.get(k) for k in ("quadratic", "cubic", "interactions", "ignore",
                                     "ignore_linear", "keep")):  # fmt: skip
        raise VWUsage("--multiworld_test with interactions or namespace filters: not "
                      "supported by sl yet")  # fmt: skip
    if asked.get("mwt_learn") or asked.get("reduction") == "cb":
        # VW's legacy cb then learns NS's (policy, action) indicators at indices that
        # overlap its actions' offsets (VW's own layout), which sl's kernel does not lay
        # out: its predictions would be VW's only where nothing overlaps
        raise VWUsage("--multiworld_test with --learn (or --cb): not supported by sl yet "
                      "(the evaluation alone is)")  # fmt: skip
    asked["reduction"] = "cb"
    asked["actions"] = 0
    asked["legacy"] = True


def stack(ml) -> tuple[str, str, str]:  # noqa: ANN001, ARG001
    """VW's header: (Enabled learners, Input label, Output pred)."""
    return "gd, scorer-identity, multiworld_test", "CB", "SCALARS"
