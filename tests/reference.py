"""Dense reference learners: plain numpy, O(d) per step, straight from the papers.

Each function walks the stream example by example, applies the regulariser to
every weight on every step, and returns (weights, predictions).
"""

from __future__ import annotations

import numpy as np

from tests.streams import Stream


def loss_np(loss_id: int, p: float, y: float) -> float:
    if loss_id == 1:
        return float(np.logaddexp(0.0, -y * p))
    if loss_id == 2:
        return max(0.0, 1.0 - y * p)
    return (p - y) ** 2


def dloss_np(loss_id: int, p: float, y: float) -> float:
    if loss_id == 1:
        return float(-y / (1.0 + np.exp(y * p)))
    if loss_id == 2:
        return -y if y * p < 1.0 else 0.0
    return 2.0 * (p - y)


def rate_np(eta0: float, power_t: float, t0: float, T: float) -> float:
    return eta0 if power_t == 0 else eta0 * (t0 / (t0 + T)) ** power_t


def gradient_steps(stream: Stream, loss_id: int, eta0, power_t, t0, regularise):
    """Generic dense loop; ``regularise(w, eta, n_learned)`` acts on all of w."""
    w = np.zeros(stream.d)
    preds = np.full(stream.n, np.nan)
    T = 0.0
    n_learned = 0
    for i in range(stream.n):
        if stream.status[i] != 0:
            continue
        idx, val = stream.row(i)
        p = stream.bases[i] + float(np.dot(w[idx], val))
        preds[i] = p
        y = stream.labels[i]
        a = stream.weights[i]
        if np.isnan(y) or a == 0:
            continue
        T += a
        n_learned += 1
        eta = rate_np(eta0, power_t, t0, T)
        np.add.at(w, idx, -eta * a * dloss_np(loss_id, p, y) * val)
        regularise(w, eta, n_learned)
    return w, preds


def truncated_gradient(stream, loss_id, eta0, power_t, t0, g, theta, K):
    """Langford, Li & Zhang (2009), update (6): T1 every K-th step with α = η K g."""

    def regularise(w, eta, n):
        if n % K:
            return
        alpha = eta * K * g
        small = np.abs(w) <= theta
        pos = small & (w > 0)
        neg = small & (w < 0)
        w[pos] = np.maximum(0.0, w[pos] - alpha)
        w[neg] = np.minimum(0.0, w[neg] + alpha)

    return gradient_steps(stream, loss_id, eta0, power_t, t0, regularise)
