"""Losses: value and true derivative in the prediction, chosen once per run.

Conventions (as in Vowpal Wabbit and the truncated-gradient paper):

* ``p`` is the raw prediction (margin) ``w·x + base``; ``y`` the label.
* squared: ``(p - y)**2``, derivative ``2 (p - y)``.
* logistic: ``log(1 + exp(-y p))`` with ``y`` in {-1, +1}.
* hinge: ``max(0, 1 - y p)``, derivative ``-y`` where ``y p < 1`` else 0.

``dloss`` is the derivative itself (not its negative).  A loss is selected by
an integer id and dispatched in one inlined helper, because jitted functions
passed as arguments do not cache reliably.

>>> loss(SQUARED, 0.5, 1.0)
0.25
>>> dloss(HINGE, 0.5, 1.0)
-1.0
"""

from __future__ import annotations

import math

from streamlearn._jit import jit_inline

SQUARED = 0
LOGISTIC = 1
HINGE = 2

NAMES: dict[str, int] = {"squared": SQUARED, "logistic": LOGISTIC, "hinge": HINGE}
CLASSIFICATION = frozenset({LOGISTIC, HINGE})
CURVATURE: dict[int, float] = {SQUARED: 2.0, LOGISTIC: 0.25, HINGE: 0.0}
"""Upper bound on the second derivative in ``p`` (0 for the non-smooth hinge)."""


@jit_inline
def loss(loss_id: int, p: float, y: float) -> float:
    """Loss of prediction ``p`` for label ``y``."""
    if loss_id == LOGISTIC:
        z = -y * p
        if z > 0.0:
            return z + math.log1p(math.exp(-z))
        return math.log1p(math.exp(z))
    if loss_id == HINGE:
        m = 1.0 - y * p
        return m if m > 0.0 else 0.0
    d = p - y
    return d * d


@jit_inline
def dloss(loss_id: int, p: float, y: float) -> float:
    """Derivative of :func:`loss` with respect to ``p``."""
    if loss_id == LOGISTIC:
        z = y * p
        if z > 0.0:
            e = math.exp(-z)
            return -y * e / (1.0 + e)
        return -y / (1.0 + math.exp(z))
    if loss_id == HINGE:
        return -y if y * p < 1.0 else 0.0
    return 2.0 * (p - y)


def best_constant(loss_id: int, w: float, label_sum: float, pos_w: float) -> tuple[float, float]:
    """Best constant predictor and its average loss, from weighted label sums.

    ``w`` is the weighted number of labeled examples, ``label_sum`` the
    weighted label sum, ``pos_w`` the weight of examples with a positive label.
    For squared loss the caller adds the variance term (see
    :func:`streamlearn.report.summary`).
    """
    if w <= 0:
        return 0.0, 0.0
    if loss_id == SQUARED:
        return label_sum / w, float("nan")
    q = pos_w / w
    if loss_id == LOGISTIC:
        if q <= 0.0 or q >= 1.0:
            return (math.inf if q >= 1.0 else -math.inf), 0.0
        return math.log(q / (1.0 - q)), -q * math.log(q) - (1.0 - q) * math.log(1.0 - q)
    c = 1.0 if q >= 0.5 else -1.0
    return c, 2.0 * min(q, 1.0 - q)
