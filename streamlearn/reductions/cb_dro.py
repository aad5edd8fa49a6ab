"""Distributionally robust learning over ``--cb_adf`` and ``--cb_explore_adf``, VW's
``--cb_dro`` (``--cb_dro_alpha``, ``--cb_dro_tau``, ``--cb_dro_wmax``): each labeled example
learned with its weight scaled by a lower confidence bound of VW's chi-squared estimator
(:mod:`streamlearn.learners.cb_dro` is the kernel and says how).

What it owns: its fields of the stack's record (:data:`OPTIONS`, which cb_adf's reduction
carries: VW stacks it over cb_adf and over an explorer), its VW options and refusals, its
header lines and its name in VW's stack, its run state (the estimator, :class:`State`) and
its kernel entry (:func:`learn`, which cb_adf's learner and the explorers call in place
of theirs), and its words in VW's model options.  VW keeps no estimator in its model files:
a continued run starts a fresh one, as VW.
"""

from __future__ import annotations

import numpy as np

from streamlearn.errors import VWUsage
from streamlearn.reductions.vwoptions import Command, VWOption, number, stack_field

OPTIONS = (
    ("cb_dro", "bool", False),
    ("cb_dro_alpha", "float", 0.05),
    ("cb_dro_tau", "float", 0.999),
    ("cb_dro_wmax", "float | None", None),  # None: VW's default, infinity
)
"""Its fields of :class:`~streamlearn.reductions.Multiline` (VW's defaults)."""

VW_OPTIONS = {
    "cb_dro": VWOption(None, False, stack_field("cb_dro")),
    "cb_dro_alpha": VWOption(None, True, stack_field("cb_dro_alpha", number)),
    "cb_dro_tau": VWOption(None, True, stack_field("cb_dro_tau", number)),
    "cb_dro_wmax": VWOption(None, True, stack_field("cb_dro_wmax", number)),
}

EXPLORERS = ("", "greedy", "first", "softmax")
"""The explorers it runs over (their pmf made from cb_adf's scores in the kernel)."""


def settle(t: Command) -> None:
    """VW's checks of ``--cb_dro`` (one line, exit 2) and sl's refusals."""
    ml = t.multiline
    own = [k for k in ("cb_dro_alpha", "cb_dro_tau", "cb_dro_wmax") if k in ml]
    if not ml.get("cb_dro"):
        if own:
            t.notes.append(f"--{own[0]} is an option of --cb_dro: ignored (as VW)")
            for k in own:
                ml.pop(k)
        return
    if ml.get("reduction") != "cb_adf" or ml.get("legacy"):
        raise VWUsage("cb_dro requires cb_adf or cb_explore_adf (as VW)")
    alpha = ml.get("cb_dro_alpha", 0.05)
    tau = ml.get("cb_dro_tau", 0.999)
    wmax = ml.get("cb_dro_wmax") or float("inf")
    if not 0.0 < alpha < 1.0:
        raise VWUsage("cb_dro_alpha must be in (0, 1) (as VW)")
    if not 0.0 < tau <= 1.0:
        raise VWUsage("cb_dro_tau must be in (0, 1] (as VW)")
    if not wmax > 1.0:
        raise VWUsage("cb_dro_wmax must exceed 1 (as VW)")
    if ml.get("explore", "") not in EXPLORERS or ml.get("explore_eval"):
        raise VWUsage(f"--cb_dro over --{ml.get('explore') or 'explore_eval'} is not supported "
                      "by sl (it runs over cb_adf and the epsilon-greedy, --first and "
                      "--softmax explorers)")  # fmt: skip
    if t.outputs.get("final_model") or t.outputs.get("readable_model"):
        raise VWUsage("-f or --readable_model with --cb_dro: not written by sl yet")


def _wmax(ml) -> float:  # noqa: ANN001 - a Multiline
    return float("inf") if ml.cb_dro_wmax is None else ml.cb_dro_wmax


def header_lines(ml) -> list[str]:  # noqa: ANN001 - a Multiline
    """VW's lines as it sets the reduction up (before the data's)."""
    wmax = float(np.float32(_wmax(ml)))
    return ["Using DRO for CB learning",
            f"cb_dro_alpha = {float(np.float32(ml.cb_dro_alpha)):g}",
            f"cb_dro_tau = {float(np.float32(ml.cb_dro_tau)):g}",
            f"cb_dro_wmax = {'inf' if wmax == float('inf') else f'{wmax:g}'}"]  # fmt: skip


def chain(ml, names: str) -> str:  # noqa: ANN001 - a Multiline
    """VW's stack line with the reduction above cb_adf or its explorer."""
    name = "cb_dro-cb_explore_adf" if ml.explore else "cb_dro"
    at = names.rfind(", shared_feature_merger")
    return names[:at] + f", {name}" + names[at:] if at >= 0 else f"{names}, {name}"


def vw_words(ml) -> list[str]:  # noqa: ANN001 - a Multiline
    """Its part of VW's model options (VW keeps all four)."""
    if not ml.cb_dro:
        return []
    f32 = np.float32
    return ["--cb_dro", "--cb_dro_alpha", f"{float(f32(ml.cb_dro_alpha)):g}", "--cb_dro_tau",
            f"{float(f32(ml.cb_dro_tau)):g}", "--cb_dro_wmax", f"{float(f32(_wmax(ml))):g}"]


class State:
    """The estimator of one run (a fresh one per run, as VW's model keeps none)."""

    def __init__(self, ml) -> None:  # noqa: ANN001 - a Multiline
        from streamlearn.learners.cb_dro import new_state

        self.chi = new_state(ml.cb_dro_alpha, ml.cb_dro_tau, _wmax(ml))


def learn(state: State, w, weights: tuple, part, ho: np.ndarray, holdout_learns: bool,  # noqa: ANN001
          clip_p: float, explorer=None) -> tuple:  # noqa: ANN001  # fmt: skip
    """One batch through the kernel (``weights``: cb_adf's tables, sub, step; ``explorer``:
    an ``explore.Explorer``, whose pmf it makes): (scores, order, loss, acts, probs)."""
    from streamlearn.learners import cb_dro
    from streamlearn.learners import explore as ex

    mg = part.mg
    rows = mg.row.shape[0]
    tables, sub, step = weights
    predict_only = w.params.copy()
    predict_only[10] = 0.0  # P_LEARN
    if explorer is None:
        kind, eps, first_only = ex.GREEDY, np.float32(0.0), False
        shape = (np.float32(1.0), np.float32(10.0), np.float32(0.5))
        xstats = np.zeros(ex.XSTATS)
    else:
        kind, eps, first_only = explorer.kind, explorer.eps, explorer.ml.first_only
        shape, xstats = explorer.shape, explorer.xstats
    scores = np.zeros(rows, dtype=np.float32)
    order = np.zeros(rows, dtype=np.int64)
    loss = np.zeros(mg.act_ptr.shape[0] - 1)
    acts = np.zeros(rows, dtype=np.int64)
    probs = np.zeros(rows, dtype=np.float32)
    cb_dro.dro_examples(
        tables, sub, step, w.gstate, w.params, predict_only, w.loss_id, w.cb_type, clip_p,
        mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen, part.cost, part.prob, ho,
        holdout_learns, w.stats, w.dr_prev, explorer is not None, kind, eps, first_only, *shape,
        xstats, state.chi, scores, order, loss, acts, probs,
    )  # fmt: skip
    return scores, order, loss, acts, probs
