"""Learning-rate schedule shared by every online learner.

The rate of a learned example is Vowpal Wabbit's ``--sgd`` schedule::

    eta_t = learning_rate * (initial_t / (initial_t + T)) ** power_t

where ``T`` is the sum of the importance weights of the examples learned so
far *including the current one*.  ``power_t = 0`` is a constant rate,
``power_t = 1`` a ``1/t`` decay, ``power_t = 0.5`` a ``1/sqrt(t)`` decay.

>>> import numpy as np
>>> from streamlearn.learners.base import make_params
>>> params = make_params(learning_rate=0.5, power_t=0.5, initial_t=1.0)
>>> round(rate(params, 3.0), 6)
0.25
"""

from __future__ import annotations

from streamlearn.learners.base import G_N, G_T, P_ETA0, P_POWER_T, P_T0
from streamlearn.system.jit import jit_inline


@jit_inline
def rate(params, T):
    """Learning rate of the example that brings the importance sum to ``T``."""
    power_t = params[P_POWER_T]
    if power_t == 0.0:
        return params[P_ETA0]
    t0 = params[P_T0]
    return params[P_ETA0] * (t0 / (t0 + T)) ** power_t


@jit_inline
def advance(gstate, params, a):
    """Count a learned example of importance ``a``; return its learning rate."""
    T = gstate[G_T] + a
    gstate[G_T] = T
    gstate[G_N] += 1.0
    return rate(params, T)
