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

import numpy as np

from streamlearn.system.jit import INTERPRETED, jit_inline

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
    :func:`streamlearn.run.report.summary`).
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


# ---- single precision, as Vowpal Wabbit computes them ------------------------
#
# The per-coordinate learners (gd, ftrl) compute in float32, operation for
# operation as VW 9 does (``loss_functions.cc``), so that they give VW's
# numbers: every argument and result below is a float32 and every step is
# rounded to float32 in VW's order.  ``p`` is the prediction already clipped to
# the label range, which is what VW passes to its loss functions.

F32 = np.float32


def _c_single(name: str):
    """The C library's single-precision ``name`` (``expf``, ``logf``) as a Python function.

    Compiled kernels call the C library's ``expf``/``logf``; interpreted runs
    (``NUMBA_DISABLE_JIT``, the tiny-input mode) must too: rounding the double
    result of ``math.exp`` differs from ``expf`` in about 0.1% of arguments.
    """
    import ctypes
    import ctypes.util

    fallback = getattr(math, name[:-1])
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        fn = getattr(lib, name)
    except (OSError, AttributeError):
        return lambda x: F32(fallback(float(x)))
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return lambda x: F32(fn(x))


if INTERPRETED:
    expf = _c_single("expf")
    logf = _c_single("logf")
else:

    @jit_inline
    def expf(x):
        """e^x in single precision (the C library's expf, as VW calls)."""
        return math.exp(x)

    @jit_inline
    def logf(x):
        """log x in single precision (the C library's logf)."""
        return math.log(x)


@jit_inline
def loss32(loss_id, p, y):
    """Loss of ``p`` for ``y`` in float32 (what VW's zero-loss gate tests)."""
    if loss_id == LOGISTIC:
        return logf(F32(1.0) + expf(-y * p))
    if loss_id == HINGE:
        e = F32(1.0) - y * p
        return e if e > F32(0.0) else F32(0.0)
    d = p - y
    return d * d


@jit_inline
def dloss32(loss_id, p, y):
    """Derivative of :func:`loss32` in ``p`` (VW's ``first_derivative``)."""
    if loss_id == LOGISTIC:
        return -y / (F32(1.0) + expf(y * p))
    if loss_id == HINGE:
        return F32(0.0) if y * p >= F32(1.0) else -y
    return F32(2.0) * (p - y)


@jit_inline
def square_grad32(loss_id, p, y):
    """Squared derivative (VW's ``get_square_grad``): what the adaptive sums add, per x²."""
    if loss_id == SQUARED:
        return F32(4.0) * (p - y) * (p - y)
    d = dloss32(loss_id, p, y)
    return d * d


@jit_inline
def _wexpmx(x):
    """W(e^x) − x, W the Lambert function: VW's approximation (absolute error < 9e-5)."""
    xd = np.float64(x)
    if xd >= 1.0:
        w = 0.86 * xd + 0.01
        r = xd - math.log(w) - w
    else:
        w = math.exp(0.8 * xd - 0.65)
        r = 0.2 * xd + 0.65 - w
    t = 1.0 + w
    u = 2.0 * t * (t + 2.0 * r / 3.0)
    return F32(w * (1.0 + r / t * (u - r) / (u - 2.0 * r)) - xd)


@jit_inline
def update32(loss_id, p, y, scale, ppu):
    """Importance-invariant step (VW's ``get_update``) in units of the rate-weighted x.

    The closed form of following the gradient flow of the loss for an
    importance weight's worth of steps: with ``scale`` = η·a and ``ppu`` =
    Σ_j x_j² r_j (how much one unit of update moves the prediction), the
    returned ``u`` moves the prediction by ``u·ppu`` and never past the label
    (squared: ``(y − p)(1 − e^(−2·scale·ppu))/ppu``; logistic: through the
    Lambert W function; hinge: up to the margin).  For ``scale·ppu < 1e-6``
    the first-order form (the plain gradient step) avoids cancellation.
    """
    small = np.float64(scale * ppu) < 1e-6
    if loss_id == LOGISTIC:
        d = expf(y * p)
        if small:
            return y * scale / (F32(1.0) + d)
        x = scale * ppu + y * p + d
        w = _wexpmx(x)
        return -(y * w + p) / ppu
    if loss_id == HINGE:
        if y * p >= F32(1.0):
            return F32(0.0)
        err = F32(1.0) - y * p
        return y * (scale if scale * ppu < err else err / ppu)
    if small:
        return F32(2.0) * (y - p) * scale
    return (y - p) * (F32(1.0) - expf(F32(-2.0) * scale * ppu)) / ppu


@jit_inline
def unsafe_update32(loss_id, p, y, scale):
    """Plain gradient step (VW's ``get_unsafe_update``): −scale·ℓ'(p, y)."""
    if loss_id == LOGISTIC:
        return y * scale / (F32(1.0) + expf(y * p))
    if loss_id == HINGE:
        return F32(0.0) if y * p >= F32(1.0) else y * scale
    return F32(2.0) * (y - p) * scale
