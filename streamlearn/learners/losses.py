"""Losses: value and true derivative in the prediction, chosen once per run.

Conventions (as in Vowpal Wabbit and the truncated-gradient paper):

* ``p`` is the raw prediction (margin) ``w·x + base``; ``y`` the label.
* squared: ``(p - y)**2``, derivative ``2 (p - y)``.
* logistic: ``log(1 + exp(-y p))`` with ``y`` in {-1, +1}.
* hinge: ``max(0, 1 - y p)``, derivative ``-y`` where ``y p < 1`` else 0.
* classic: squared loss whose update is always the plain gradient step (VW's
  ``--loss_function classic``: no importance-invariant closed form).
* quantile (pinball) at level ``tau``: ``tau (y - p)`` when ``y > p``, else
  ``(1 - tau)(p - y)``; derivative ``-tau`` or ``1 - tau`` (0 at ``p = y``).
* expectile at level ``q`` (VW's ``--expectile_q``, in (0, 0.5]): the squared loss
  weighted by ``q`` where ``y < p`` and ``1 - q`` elsewhere, and so its derivative and
  its (importance-invariant) update, whose scale is weighted the same way.  ``q``
  travels as ``tau``, as the quantile level does.
* poisson: VW's deviance ``2 (y (log(y + 1e-6) - p) - (y - e^p))`` of the
  log-rate ``p``, reported; learned from its half (the negative log-likelihood),
  derivative ``e^p - y``, as VW does.  ``p`` is clamped to [-44, 44] in ``exp``.

A logistic label strictly between -1 and +1 is read as VW reads it: with
``s = (y + 1) / 2``, the loss is ``s L(p, +1) + (1 - s) L(p, -1)`` (so a label
0 asks for the probability 1/2, a soft label its probability), and so are its
derivative and update.  A label beyond [-1, 1] keeps ``log(1 + e^(-y p))``
(sl warns; VW would extrapolate the mixture).  The
quantile level travels as the optional last argument ``tau`` of every
function (the kernels pass ``params[P_QUANTILE_TAU]``; 0.5 when omitted).

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
CLASSIC = 3
QUANTILE = 4
POISSON = 5
EXPECTILE = 6

NAMES: dict[str, int] = {
    "squared": SQUARED, "logistic": LOGISTIC, "hinge": HINGE, "classic": CLASSIC,
    "quantile": QUANTILE, "poisson": POISSON, "expectile": EXPECTILE,
}  # fmt: skip
CLASSIFICATION = frozenset({LOGISTIC, HINGE})
CURVATURE: dict[int, float] = {SQUARED: 2.0, LOGISTIC: 0.25, HINGE: 0.0, CLASSIC: 2.0,
                               QUANTILE: 0.0, POISSON: math.inf, EXPECTILE: 2.0}  # fmt: skip
"""Upper bound on the second derivative in ``p`` (0 for the non-smooth hinge and
quantile losses; none for poisson, whose curvature ``e^p`` grows without bound)."""
WIDE_RANGE = frozenset({LOGISTIC, POISSON})
"""Losses whose predictions start clipped to [-50, 50] instead of [0, 0] (VW's
``set_minmax`` for logistic and poisson)."""
POISSON_CLAMP = 44.0
"""VW clamps a poisson prediction to [-44, 44] before ``exp`` (``e^44`` squared
still fits a float)."""


@jit_inline
def _logistic(p: float, y: float) -> float:
    z = -y * p
    if z > 0.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@jit_inline
def _dlogistic(p: float, y: float) -> float:
    z = y * p
    if z > 0.0:
        e = math.exp(-z)
        return -y * e / (1.0 + e)
    return -y / (1.0 + math.exp(z))


@jit_inline
def loss(loss_id: int, p: float, y: float, tau: float = 0.5) -> float:
    """Loss of prediction ``p`` for label ``y`` (``tau``: the quantile loss's level)."""
    if loss_id == LOGISTIC:
        if y >= 1.0 or y <= -1.0:
            return _logistic(p, y)
        s = (y + 1.0) / 2.0
        return s * _logistic(p, 1.0) + (1.0 - s) * _logistic(p, -1.0)
    if loss_id == HINGE:
        m = 1.0 - y * p
        return m if m > 0.0 else 0.0
    if loss_id == QUANTILE:
        e = y - p
        return tau * e if e > 0.0 else (tau - 1.0) * e
    if loss_id == POISSON:
        c = min(max(p, -POISSON_CLAMP), POISSON_CLAMP)
        return 2.0 * (y * (math.log(y + 1e-6) - c) - (y - math.exp(c)))
    d = p - y
    if loss_id == EXPECTILE:
        return d * d * (tau if y - p < 0.0 else 1.0 - tau)
    return d * d


@jit_inline
def dloss(loss_id: int, p: float, y: float, tau: float = 0.5) -> float:
    """Derivative of :func:`loss` with respect to ``p``."""
    if loss_id == LOGISTIC:
        if y >= 1.0 or y <= -1.0:
            return _dlogistic(p, y)
        s = (y + 1.0) / 2.0
        return s * _dlogistic(p, 1.0) + (1.0 - s) * _dlogistic(p, -1.0)
    if loss_id == HINGE:
        return -y if y * p < 1.0 else 0.0
    if loss_id == QUANTILE:
        e = y - p
        if e == 0.0:
            return 0.0
        return -tau if e > 0.0 else 1.0 - tau
    if loss_id == POISSON:
        return math.exp(min(max(p, -POISSON_CLAMP), POISSON_CLAMP)) - y
    if loss_id == EXPECTILE:
        return 2.0 * (p - y) * (tau if y - p < 0.0 else 1.0 - tau)
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
    if loss_id in (SQUARED, CLASSIC, EXPECTILE):
        return label_sum / w, float("nan")
    if loss_id == QUANTILE:  # a weighted quantile of every label: not kept
        return float("nan"), float("nan")
    if loss_id == POISSON:
        mean = label_sum / w
        return (math.log(mean) if mean > 0 else -math.inf), float("nan")
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


def c_single(name: str):
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
    expf = c_single("expf")
    logf = c_single("logf")
    log1pf = c_single("log1pf")
    expm1f = c_single("expm1f")
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
    def log1pf(x):
        """log(1 + x) in single precision (the C library's log1pf)."""
        return math.log1p(x)

    @jit_inline
    def expm1f(x):
        """e^x - 1 in single precision (the C library's expm1f)."""
        return math.expm1(x)


CLAMP32 = F32(POISSON_CLAMP)
_LO = F32(-1.0)
_HI = F32(1.0)
"""VW's default logistic label range (``--logistic_min``, ``--logistic_max``)."""


@jit_inline
def _clamp32(p):
    """VW's poisson ``clamp_prediction``."""
    if p > CLAMP32:
        return CLAMP32
    if p < -CLAMP32:
        return -CLAMP32
    return p


@jit_inline
def _std_label(y, lo, hi):
    """VW's logistic ``std_label``: (y − logistic_min) / (logistic_max − logistic_min)."""
    return (y - lo) / (hi - lo)


@jit_inline
def _pure(y, lo, hi):
    """A logistic label read as itself, not as VW's mixture: a label of ±1 or beyond, with
    VW's default range [-1, 1] (VW mixes always; for these labels the mixture is the
    label's own loss, and beyond them sl keeps log(1 + e^(-yp)))."""
    return lo == F32(-1.0) and hi == F32(1.0) and (y >= F32(1.0) or y <= F32(-1.0))


@jit_inline
def loss32(loss_id, p, y, tau=0.5, lo=_LO, hi=_HI):
    """Loss of ``p`` for ``y`` in float32 (VW's ``get_loss``; what its zero-loss gate tests)."""
    if loss_id == LOGISTIC:
        if _pure(y, lo, hi):
            return logf(F32(1.0) + expf(-y * p))
        s = _std_label(y, lo, hi)
        return s * logf(F32(1.0) + expf(-p)) + (F32(1.0) - s) * logf(F32(1.0) + expf(p))
    if loss_id == HINGE:
        e = F32(1.0) - y * p
        return e if e > F32(0.0) else F32(0.0)
    if loss_id == QUANTILE:
        t = F32(tau)
        e = y - p
        return t * e if e > F32(0.0) else -(F32(1.0) - t) * e
    if loss_id == POISSON:
        c = _clamp32(p)
        return F32(2.0) * (y * (logf(y + F32(1e-6)) - c) - (y - expf(c)))
    d = p - y
    if loss_id == EXPECTILE:
        return d * d * _expectile_weight(p, y, tau)
    return d * d


@jit_inline
def _expectile_weight(p, y, tau):
    """VW's expectile weight: q where the label is below the prediction, else 1 - q."""
    return F32(tau) if y - p < F32(0.0) else F32(1.0) - F32(tau)


@jit_inline
def _dlogistic32(p, y):
    return -y / (F32(1.0) + expf(y * p))


@jit_inline
def dloss32(loss_id, p, y, tau=0.5, lo=_LO, hi=_HI):
    """Derivative of :func:`loss32` in ``p`` (VW's ``first_derivative``)."""
    if loss_id == LOGISTIC:
        if _pure(y, lo, hi):
            return _dlogistic32(p, y)
        s = _std_label(y, lo, hi)
        return s * _dlogistic32(p, F32(1.0)) + (F32(1.0) - s) * _dlogistic32(p, F32(-1.0))
    if loss_id == HINGE:
        return F32(0.0) if y * p >= F32(1.0) else -y
    if loss_id == QUANTILE:
        e = y - p
        if e == F32(0.0):
            return F32(0.0)
        return -F32(tau) if e > F32(0.0) else F32(1.0) - F32(tau)
    if loss_id == POISSON:
        return expf(_clamp32(p)) - y
    if loss_id == EXPECTILE:
        return F32(2.0) * (p - y) * _expectile_weight(p, y, tau)
    return F32(2.0) * (p - y)


@jit_inline
def square_grad32(loss_id, p, y, tau=0.5, lo=_LO, hi=_HI):
    """Squared derivative (VW's ``get_square_grad``): what the adaptive sums add, per x²."""
    if loss_id == SQUARED or loss_id == CLASSIC:
        return F32(4.0) * (p - y) * (p - y)
    if loss_id == EXPECTILE:
        w = _expectile_weight(p, y, tau)
        return F32(4.0) * (p - y) * (p - y) * (w * w)
    d = dloss32(loss_id, p, y, tau, lo, hi)
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
def _logistic_update32(p, y, scale, ppu):
    d = expf(y * p)
    if np.float64(scale * ppu) < 1e-6:
        return y * scale / (F32(1.0) + d)
    x = scale * ppu + y * p + d
    w = _wexpmx(x)
    return -(y * w + p) / ppu


@jit_inline
def update32(loss_id, p, y, scale, ppu, tau=0.5, lo=_LO, hi=_HI):
    """Importance-invariant step (VW's ``get_update``) in units of the rate-weighted x.

    The closed form of following the gradient flow of the loss for an
    importance weight's worth of steps: with ``scale`` = η·a and ``ppu`` =
    Σ_j x_j² r_j (how much one unit of update moves the prediction), the
    returned ``u`` moves the prediction by ``u·ppu`` and never past the label
    (squared: ``(y − p)(1 − e^(−2·scale·ppu))/ppu``; logistic: through the
    Lambert W function; hinge and quantile: up to the label or margin;
    poisson: VW's closed form through ``log1p``).  For ``scale·ppu < 1e-6``
    the first-order form (the plain gradient step) avoids cancellation.
    classic has no closed form: its step is the plain one.
    """
    small = np.float64(scale * ppu) < 1e-6
    if loss_id == LOGISTIC:
        if _pure(y, lo, hi):
            return _logistic_update32(p, y, scale, ppu)
        s = _std_label(y, lo, hi)
        return s * _logistic_update32(p, F32(1.0), scale, ppu) + (
            F32(1.0) - s
        ) * _logistic_update32(p, F32(-1.0), scale, ppu)
    if loss_id == HINGE:
        if y * p >= F32(1.0):
            return F32(0.0)
        err = F32(1.0) - y * p
        return y * (scale if scale * ppu < err else err / ppu)
    if loss_id == CLASSIC:
        return F32(2.0) * (y - p) * scale
    if loss_id == QUANTILE:
        t = F32(tau)
        err = y - p
        if err == F32(0.0):
            return F32(0.0)
        normal = scale * ppu
        if err > F32(0.0):
            normal = t * normal
            return t * scale if normal < err else err / ppu
        normal = -(F32(1.0) - t) * normal
        return (t - F32(1.0)) * scale if normal > err else err / ppu
    if loss_id == POISSON:
        c = _clamp32(p)
        e = expf(c)
        if y > F32(0.0):
            arg = y * scale * ppu
            if arg > CLAMP32:  # VW: the limit, instead of overflowing expm1
                return -(c - logf(y)) / ppu
            return y * scale - log1pf(e * expm1f(arg) / y) / ppu
        inner = e * scale * ppu
        if not math.isfinite(inner):
            return -(c + logf(scale * ppu)) / ppu
        return -log1pf(inner) / ppu
    if loss_id == EXPECTILE:
        scale = _expectile_weight(p, y, tau) * scale
        small = np.float64(scale * ppu) < 1e-6
    if small:
        return F32(2.0) * (y - p) * scale
    return (y - p) * (F32(1.0) - expf(F32(-2.0) * scale * ppu)) / ppu


@jit_inline
def _logistic_unsafe32(p, y, scale):
    return y * scale / (F32(1.0) + expf(y * p))


@jit_inline
def unsafe_update32(loss_id, p, y, scale, tau=0.5, lo=_LO, hi=_HI):
    """Plain gradient step (VW's ``get_unsafe_update``): −scale·ℓ'(p, y)."""
    if loss_id == LOGISTIC:
        if _pure(y, lo, hi):
            return _logistic_unsafe32(p, y, scale)
        s = _std_label(y, lo, hi)
        return s * _logistic_unsafe32(p, F32(1.0), scale) + (
            F32(1.0) - s
        ) * _logistic_unsafe32(p, F32(-1.0), scale)
    if loss_id == HINGE:
        return F32(0.0) if y * p >= F32(1.0) else y * scale
    if loss_id == QUANTILE:
        err = y - p
        if err == F32(0.0):
            return F32(0.0)
        if err > F32(0.0):
            return F32(tau) * scale
        return -(F32(1.0) - F32(tau)) * scale
    if loss_id == POISSON:
        return (y - expf(_clamp32(p))) * scale
    if loss_id == EXPECTILE:
        return F32(2.0) * (y - p) * (_expectile_weight(p, y, tau) * scale)
    return F32(2.0) * (y - p) * scale
