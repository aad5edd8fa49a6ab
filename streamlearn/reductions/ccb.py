"""``--ccb_explore_adf`` and ``--slates``: conditional contextual bandits, VW's
``ccb_explore_adf.cc`` and ``slates.cc``, over cb_adf and an explorer.

Their driver is still ``run/ccb.py`` (each slot an example of cb_adf's, the slots'
chosen actions removed from the next slot's): what the registry takes from here is their
place in VW's header; labels, learner and VW's model options are cb_adf's and the
explorer's (:mod:`streamlearn.reductions.cb_adf`, :mod:`streamlearn.reductions.explore`).
"""

from __future__ import annotations

from streamlearn.io.labels import LABEL_CB
from streamlearn.reductions import cb_adf
from streamlearn.reductions.base import Reduction

OPTIONS = (
    ("all_slots_loss", "bool", False),  # --ccb_explore_adf (run/ccb.py)
    ("ccb_no_slot_index", "bool", False),
    ("no_predict", "bool", False),  # --ccb_explore_adf: learn only (no pmf, loss or -p)
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""


def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001, ARG001 - VW names gd here
    """VW's header: (Enabled learners, Input label, Output pred)."""
    chain = (
        f"gd, generate_interactions, scorer-identity, csoaa_ldf-rank, cb_adf, "
        f"cb_explore_adf_{ml.explore}, cb_sample, shared_feature_merger, ccb_explore_adf"
    )
    if ml.reduction == "slates":
        return f"{chain}, slates", "SLATES", "DECISION_PROBS"
    return chain, "CCB", "DECISION_PROBS"


REDUCTION = Reduction("ccb", LABEL_CB, True, cb_adf.learner, stack, cb_adf.vw_words,
                      options=OPTIONS)  # fmt: skip
SLATES = Reduction("slates", LABEL_CB, True, cb_adf.learner, stack, cb_adf.vw_words,
                   options=OPTIONS)  # fmt: skip
