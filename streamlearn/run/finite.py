"""Divergence: the checks that a learner's predictions and a model saved are finite.

A prediction that is not finite stops the run (:class:`~streamlearn.errors.Diverged`,
exit 6) with the line it came from and what to change; a model whose numbers
are not all finite is never saved.  ``sl train``, the API's live learner
(:mod:`streamlearn.run.resident`), the server and the bandits check with these.
"""

from __future__ import annotations

import numpy as np

from streamlearn import model as model_io
from streamlearn.errors import Diverged
from streamlearn.io.batch import Batch
from streamlearn.learners import PARAMETER_FREE


def check_finite(batch: Batch, preds: np.ndarray, algo: str = "gd",
                 partial: bool = False) -> None:  # fmt: skip
    """Refuse (:class:`Diverged`) ``batch``'s predictions unless its usable rows' are all
    finite; ``partial`` (--csoaa): a class a line does not list is not scored (NaN)."""
    ok = batch.status == 0
    bad = ~np.isfinite(preds.reshape(batch.n, -1))
    if partial:
        bad = np.isinf(preds) | np.isnan(preds[:, :1])
    if bad[ok].any():
        i = int(np.flatnonzero(ok & bad.any(axis=1))[0])
        raise Diverged(
            f"{batch.block.source}:{int(batch.line[i])}: prediction is not finite; the "
            "weights diverged: " + _what_to_change(algo)
        )


def check_model(model: model_io.Model) -> None:
    """Refuse (:class:`Diverged`, exit 6) to save a model whose numbers are not all finite.

    The weights, and the state that a continued run starts from (per-slot
    state, global state, counters): an inf in gd's sum of squared gradients
    leaves the weight finite but frozen for good, and a continued run would
    inherit it.
    """
    if not np.all(np.isfinite(model.weights)):
        raise Diverged(
            "weights are not finite at the end of training: "
            + _what_to_change(model.config.algo) + " (no model written)"
        )
    bad = model_io.non_finite(model)
    if bad is not None:
        raise Diverged(
            f"the learner's {bad} is not finite at the end of training: an importance weight, "
            "label or feature value (or a cross of them) too large for the learner's state, "
            "or a diverging rate; scale the data or lower --learning-rate (no model written)"
        )


def _what_to_change(algo: str) -> str:
    if algo in PARAMETER_FREE:
        return (f"{algo}'s arithmetic overflowed on this input, as VW's does (VW then predicts "
                "0 and goes on with non-finite weights); scale the features or labels, or "
                "try --coin")  # fmt: skip
    return "lower --learning-rate, or scale the feature values"
