"""VW's label and prediction types (``vowpalwabbit.LabelType``, ``PredictionType``), with
VW's values, and how a prediction is given back in VW's Python types."""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class LabelType(IntEnum):
    """VW's label types (``vowpalwabbit.LabelType``), with VW's values."""

    SIMPLE = 1
    MULTICLASS = 2
    COST_SENSITIVE = 3
    CONTEXTUAL_BANDIT = 4
    CONDITIONAL_CONTEXTUAL_BANDIT = 6
    SLATES = 7
    CONTINUOUS = 8
    CONTEXTUAL_BANDIT_EVAL = 9
    MULTILABEL = 10


class PredictionType(IntEnum):
    """VW's prediction types (``vowpalwabbit.PredictionType``), with VW's values."""

    SCALAR = 0
    SCALARS = 1
    ACTION_SCORES = 2
    ACTION_PROBS = 3
    MULTICLASS = 4
    MULTILABELS = 5
    PROB = 6
    MULTICLASSPROBS = 7
    DECISION_SCORES = 8
    ACTION_PDF_VALUE = 9
    PDF = 10
    ACTIVE_MULTICLASS = 11
    NOPRED = 12


def by_action(actions: np.ndarray, values: np.ndarray) -> list[float]:
    """Values per action line in the learner's order, as VW's package returns them: a list
    indexed by action."""
    out = [0.0] * int(actions.shape[0])
    for a, v in zip(actions.tolist(), values.tolist(), strict=True):
        out[a] = float(v)
    return out
