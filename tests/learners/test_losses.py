"""Losses: values, derivatives (finite differences), VW's single-precision forms and updates.

VW's ``loss_functions.cc`` is the reference for the float32 forms: classic,
quantile (``tau``), poisson (with its clamp at 44) and logistic with any label
(``s L(p, 1) + (1 - s) L(p, -1)``, s = (y + 1) / 2).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamlearn.learners import losses as L

F32 = np.float32

CASES = [
    (L.SQUARED, [-1.0, 0.0, 0.7, 3.0]),
    (L.CLASSIC, [-1.0, 0.0, 0.7, 3.0]),
    (L.LOGISTIC, [-1.0, 1.0, 0.0, 0.5]),
    (L.HINGE, [-1.0, 1.0]),
    (L.QUANTILE, [-1.0, 0.0, 0.7, 3.0]),
    (L.POISSON, [0.0, 1.0, 4.0]),
]
PREDICTIONS = [-2.3, -0.4, 0.05, 0.9, 2.7]


@pytest.mark.parametrize(("loss_id", "labels"), CASES)
@pytest.mark.parametrize("tau", [0.5, 0.2, 0.9])
def test_dloss_is_the_derivative_of_loss(loss_id, labels, tau):
    h = 1e-6
    for y in labels:
        for p in PREDICTIONS:
            if loss_id in (L.HINGE, L.QUANTILE) and min(abs(1 - y * p), abs(y - p)) < 1e-3:
                continue  # the kink
            num = (L.loss(loss_id, p + h, y, tau) - L.loss(loss_id, p - h, y, tau)) / (2 * h)
            if loss_id == L.POISSON:
                num /= 2.0  # VW's loss is the deviance, twice the negative log-likelihood
            assert L.dloss(loss_id, p, y, tau) == pytest.approx(num, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize(("loss_id", "labels"), CASES)
def test_single_precision_forms_agree_with_double(loss_id, labels):
    tau = 0.3
    for y in labels:
        for p in PREDICTIONS:
            want = L.loss(loss_id, p, y, tau)
            got = float(L.loss32(loss_id, F32(p), F32(y), F32(tau)))
            assert got == pytest.approx(want, rel=1e-5, abs=1e-5)
            d = L.dloss(loss_id, p, y, tau)
            assert float(L.dloss32(loss_id, F32(p), F32(y), F32(tau))) == pytest.approx(
                d, rel=1e-5, abs=1e-6
            )
            sq = float(L.square_grad32(loss_id, F32(p), F32(y), F32(tau)))
            assert sq == pytest.approx(d * d, rel=1e-5, abs=1e-6)


def test_quantile_loss_is_the_pinball_loss():
    assert L.loss(L.QUANTILE, 1.0, 3.0, 0.25) == pytest.approx(0.5)  # under: tau (y - p)
    assert L.loss(L.QUANTILE, 3.0, 1.0, 0.25) == pytest.approx(1.5)  # over: (1 - tau)(p - y)
    assert L.dloss(L.QUANTILE, 2.0, 2.0, 0.25) == 0.0


def test_poisson_loss_is_vws_deviance_and_clamps_at_44():
    y, p = 3.0, 0.4
    deviance = 2 * (y * (math.log(y + 1e-6) - p) - (y - math.exp(p)))
    assert L.loss(L.POISSON, p, y) == pytest.approx(deviance)
    assert L.dloss(L.POISSON, 100.0, 1.0) == pytest.approx(math.exp(44.0) - 1.0)
    d32 = float(L.dloss32(L.POISSON, F32(100.0), F32(1.0)))
    assert d32 == pytest.approx(math.exp(44.0), rel=1e-6)


def test_logistic_label_zero_is_halfway_as_vw_reads_it():
    for p in PREDICTIONS:
        mix = 0.5 * L.loss(L.LOGISTIC, p, 1.0) + 0.5 * L.loss(L.LOGISTIC, p, -1.0)
        assert L.loss(L.LOGISTIC, p, 0.0) == pytest.approx(mix)
        assert float(L.loss32(L.LOGISTIC, F32(p), F32(0.0))) == pytest.approx(mix, rel=1e-6)
    assert L.dloss(L.LOGISTIC, 0.0, 0.0) == 0.0  # p = 0 is the optimum for a label 0
    # labels -1 and +1 take the same path as before: the mixture collapses exactly
    for y in (-1.0, 1.0):
        for p in PREDICTIONS:
            p32, y32 = F32(p), F32(y)
            s = (y32 + F32(1.0)) / F32(2.0)
            mix = s * L.loss32(L.LOGISTIC, p32, F32(1.0)) + (F32(1.0) - s) * L.loss32(
                L.LOGISTIC, p32, F32(-1.0)
            )
            assert L.loss32(L.LOGISTIC, p32, y32) == mix


# how far the invariant form may be from the plain step at scale 1e-4: the curvature
# times the step (squared, poisson: e^p up to 15), and for logistic VW's approximation
# of the Lambert function (absolute error < 9e-5 in the prediction's units)
NEAR = {L.SQUARED: (1e-3, 0.0), L.CLASSIC: (1e-6, 0.0), L.HINGE: (1e-6, 0.0),
        L.QUANTILE: (1e-6, 0.0), L.POISSON: (5e-3, 1e-6), L.LOGISTIC: (0.0, 2e-4)}  # fmt: skip


@pytest.mark.parametrize(("loss_id", "labels"), CASES)
def test_invariant_update_starts_as_the_gradient_step(loss_id, labels):
    """For a small step the importance-invariant update is the plain one, -scale l'(p, y)."""
    tau = F32(0.3)
    rel, tol = NEAR[loss_id]
    for y in labels:
        for p in PREDICTIONS:
            if loss_id in (L.HINGE, L.QUANTILE) and min(abs(1 - y * p), abs(y - p)) < 1e-3:
                continue
            scale, ppu = F32(1e-4), F32(0.7)
            u = float(L.update32(loss_id, F32(p), F32(y), scale, ppu, tau))
            plain = float(L.unsafe_update32(loss_id, F32(p), F32(y), scale, tau))
            want = -float(scale) * float(L.dloss32(loss_id, F32(p), F32(y), tau))
            assert plain == pytest.approx(want, rel=1e-5, abs=1e-12)
            assert u == pytest.approx(plain, rel=rel, abs=tol)


@pytest.mark.parametrize("tau", [0.2, 0.5, 0.9])
def test_quantile_invariant_update_stops_at_the_label(tau):
    """VW's closed form: a large importance moves the prediction to the label, not past it."""
    p, y, ppu = F32(0.0), F32(2.0), F32(1.0)
    u = L.update32(L.QUANTILE, p, y, F32(1e6), ppu, F32(tau))
    assert float(p + u * ppu) == pytest.approx(2.0)
    u = L.update32(L.QUANTILE, F32(5.0), y, F32(1e6), ppu, F32(tau))
    assert float(F32(5.0) + u * ppu) == pytest.approx(2.0)


def test_poisson_invariant_update_moves_toward_log_label():
    """The exact solution of the gradient flow: p moves toward log(y), and never past it."""
    y, ppu = F32(3.0), F32(1.0)
    prev = F32(0.0)
    for scale in (F32(0.01), F32(0.1), F32(1.0), F32(100.0), F32(1e6)):
        u = L.update32(L.POISSON, F32(0.0), y, scale, ppu)
        moved = F32(0.0) + u * ppu
        assert prev <= moved <= math.log(3.0) + 1e-6
        prev = moved
    assert float(prev) == pytest.approx(math.log(3.0), rel=1e-5)


def test_classic_never_takes_the_invariant_form():
    for scale in (F32(1e-3), F32(10.0)):
        assert L.update32(L.CLASSIC, F32(0.2), F32(1.0), scale, F32(3.0)) == L.unsafe_update32(
            L.CLASSIC, F32(0.2), F32(1.0), scale
        )


def test_best_constants():
    assert L.best_constant(L.CLASSIC, 4.0, 2.0, 0.0)[0] == 0.5
    assert math.isnan(L.best_constant(L.QUANTILE, 4.0, 2.0, 0.0)[0])
    assert L.best_constant(L.POISSON, 4.0, 8.0, 0.0)[0] == pytest.approx(math.log(2.0))
