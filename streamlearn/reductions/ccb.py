"""``--ccb_explore_adf`` and ``--slates``: conditional contextual bandits, VW's
``ccb_explore_adf.cc`` and ``slates.cc``, over cb_adf and an explorer.

Their driver is still ``run/ccb.py`` (each slot an example of cb_adf's, the slots'
chosen actions removed from the next slot's; ``batched=False``: the server and the API,
which run a batch through the registry's learner, refuse them): what the registry takes
from here is their place in VW's header; labels, learner and VW's model options are
cb_adf's and the explorer's (:mod:`streamlearn.reductions.cb_adf`,
:mod:`streamlearn.reductions.explore`).
"""

from __future__ import annotations

from streamlearn.errors import VWUsage
from streamlearn.reductions import cb_adf
from streamlearn.reductions.base import Reduction
from streamlearn.reductions.vwoptions import Command, VWOption, stack_field

OPTIONS = (
    ("all_slots_loss", "bool", False),  # --ccb_explore_adf (run/ccb.py)
    ("ccb_no_slot_index", "bool", False),
    ("no_predict", "bool", False),  # --ccb_explore_adf: learn only (no pmf, loss or -p)
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""


def _ccb(reduction: str):  # noqa: ANN202
    """``--ccb_explore_adf`` and ``--slates``: on ``--cb_explore_adf``; slates runs through
    ccb, so the one named last of the two does not change the other."""

    def apply(t: Command, name: str, value: str | None) -> None:
        t.exploring = True
        if t.multiline.get("reduction") not in (None, "cb_adf", "ccb", "slates"):
            raise VWUsage(f"--{name} with --{t.multiline['reduction']}: one reduction at a time")
        if t.multiline.get("reduction") != "slates":
            t.multiline["reduction"] = reduction
        t.multiline.setdefault("explore", "greedy")

    return apply


VW_OPTIONS = {
    "ccb_explore_adf": VWOption(None, False, _ccb("ccb")),
    "slates": VWOption(None, False, _ccb("slates")),
    "all_slots_loss": VWOption(None, False, stack_field("all_slots_loss")),
    "ccb_no_slot_index": VWOption(None, False, stack_field("ccb_no_slot_index")),
    "no_predict": VWOption(None, False, stack_field("no_predict")),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`)."""


def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001, ARG001 - VW names gd here
    """VW's header: (Enabled learners, Input label, Output pred)."""
    chain = (
        f"gd, generate_interactions, scorer-identity, csoaa_ldf-rank, cb_adf, "
        f"cb_explore_adf_{ml.explore}, cb_sample, shared_feature_merger, ccb_explore_adf"
    )
    if ml.reduction == "slates":
        return f"{chain}, slates", "SLATES", "DECISION_PROBS"
    return chain, "CCB", "DECISION_PROBS"


REDUCTION = Reduction("ccb", "cb", True, cb_adf.learner, stack, cb_adf.vw_words,
                      options=OPTIONS, batched=False)  # fmt: skip
SLATES = Reduction("slates", "cb", True, cb_adf.learner, stack, cb_adf.vw_words,
                   options=OPTIONS, batched=False)  # fmt: skip
