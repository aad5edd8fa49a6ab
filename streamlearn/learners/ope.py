"""Off-policy estimates of a policy's expected cost from logged bandit data, with intervals.

Logged example ``i``: the action ``k_i`` the logging policy took with probability
``p_i``, its cost ``c_i``; the evaluated policy ``pi`` gives the logged action the
probability ``pi_i = pi(k_i | x_i)`` (an explorer's pmf, or 1/0 for a greedy policy)
and, for the doubly robust estimate, a reward model predicts each action's cost
``chat_i(a)``.  With the importance weight ``w_i = pi_i / p_i``:

* **IPS** (inverse propensity scoring): ``V = mean_i w_i c_i``.  Unbiased when the
  logged probabilities are right and positive wherever ``pi`` is.
* **SNIPS** (self-normalised IPS): ``V = sum_i w_i c_i / sum_i w_i``.  Slightly biased
  (O(1/n)), far less variable when the weights are uneven, and invariant to a constant
  added to the costs.
* **DR** (doubly robust, Dudik, Langford & Li 2011, eq. 2):
  ``V = mean_i [ sum_a pi(a|x_i) chat_i(a) + w_i (c_i - chat_i(k_i)) ]``: the reward
  model's cost of the policy, corrected by the importance-weighted residual of the
  logged action.  Unbiased whatever the model, as long as the model of example ``i`` was
  fitted without example ``i`` (progressive validation guarantees it: each example is
  scored before it is learned); the better the model, the smaller the variance.
* **logging**: the observed mean cost ``mean_i c_i``, the logging policy's own value.

**Intervals** are normal (central limit) intervals on the per-example terms:
``V +- z * s / sqrt(n)``, ``s`` the sample standard deviation of the terms ``w_i c_i``
(IPS), ``dr_i`` (DR), ``c_i`` (logging), and for SNIPS the delta method's
``s^2 = mean_i w_i^2 (c_i - V)^2 / mean_i(w_i)^2``.  Why these and not a finite-sample
bound (empirical Bernstein, Hoeffding): the terms are bounded only by the largest
importance weight ``max pi/p`` (``K/epsilon`` for epsilon-greedy logging), so the
finite-sample bounds are valid but many times wider than the estimate's actual spread
at the sizes logs come in, and a user deciding between policies needs the realistic
width; the central limit interval is asymptotically exact, and ``tests/learners/
test_ope.py`` checks its coverage on simulations with a known true cost
(``scripts/make_cb_data.py``).  It can under-cover when ``n`` times the smallest logged
probability is small (a few rare actions carry the estimate): read it with the
``max_weight`` and the effective sample size ``(sum w)^2 / sum w^2`` the summary gives.
For a policy that changes as it learns (progressive estimates), the terms are a
martingale difference sequence around the mean of the successive policies' values, and
the same interval applies (martingale central limit theorem) to that mean.

The functions take per-example arrays; :class:`Accumulator` keeps the running sums of a
stream of batches and records the estimates at checkpoints (examples 1, 2, 4, ... in
quarter-octave steps) for ``sl plot``.
"""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054
"""The standard normal's 97.5% quantile: a 95% two-sided interval."""

ESTIMATORS = ("ips", "snips", "dr", "logging")


def weights(prob_logged: np.ndarray, pi_logged: np.ndarray) -> np.ndarray:
    """``w_i = pi_i / p_i``, the importance weight of each logged example."""
    return np.asarray(pi_logged, dtype=np.float64) / np.asarray(prob_logged, dtype=np.float64)


def ips_terms(cost: np.ndarray, prob: np.ndarray, pi_logged: np.ndarray) -> np.ndarray:
    """IPS's per-example terms ``w_i c_i``."""
    return weights(prob, pi_logged) * np.asarray(cost, dtype=np.float64)


def dr_terms(cost: np.ndarray, prob: np.ndarray, pi_logged: np.ndarray, direct: np.ndarray,
             chat_logged: np.ndarray) -> np.ndarray:  # fmt: skip
    """DR's per-example terms ``direct_i + w_i (c_i - chat_i(k_i))``, ``direct_i`` being
    ``sum_a pi(a|x_i) chat_i(a)`` (:func:`policy_direct`)."""
    w = weights(prob, pi_logged)
    return np.asarray(direct, dtype=np.float64) + w * (
        np.asarray(cost, dtype=np.float64) - np.asarray(chat_logged, dtype=np.float64))  # fmt: skip


def policy_direct(act_ptr: np.ndarray, pmf: np.ndarray, chat: np.ndarray) -> np.ndarray:
    """Per example ``e``, ``sum_a pmf[a] chat[a]`` over its rows ``act_ptr[e]:act_ptr[e+1]``
    (``pmf`` and ``chat`` row-aligned: the same action on the same row).

    >>> policy_direct(np.array([0, 2, 3]), np.array([0.25, 0.75, 1.0]), np.array([4.0, 0, 2]))
    array([1., 2.])
    """
    sizes = np.diff(act_ptr)
    ex = np.repeat(np.arange(sizes.shape[0]), sizes)
    prod = np.asarray(pmf, dtype=np.float64) * np.asarray(chat, dtype=np.float64)
    return np.bincount(ex, weights=prod, minlength=sizes.shape[0])


def _interval(mean: float, var: float, n: float, z: float) -> dict:
    half = z * math.sqrt(max(var, 0.0) / n) if n > 1 else math.inf
    return {"estimate": mean, "low": mean - half, "high": mean + half,
            "stderr": half / z if n > 1 else math.inf}  # fmt: skip


def _mean_interval(terms: np.ndarray, z: float) -> dict:
    n = terms.shape[0]
    if n == 0:
        return {"estimate": math.nan, "low": math.nan, "high": math.nan, "stderr": math.nan}
    var = float(np.var(terms, ddof=1)) if n > 1 else math.inf
    return _interval(float(terms.mean()), var, n, z)


def ips(cost: np.ndarray, prob: np.ndarray, pi_logged: np.ndarray, z: float = Z95) -> dict:
    """The IPS estimate and its interval: ``{"estimate", "low", "high", "stderr"}``.

    >>> ips(np.array([1.0, 0.0]), np.array([0.5, 0.5]), np.array([1.0, 1.0]))["estimate"]
    1.0
    """
    return _mean_interval(ips_terms(cost, prob, pi_logged), z)


def snips(cost: np.ndarray, prob: np.ndarray, pi_logged: np.ndarray, z: float = Z95) -> dict:
    """The self-normalised IPS estimate and its delta-method interval.

    >>> snips(np.array([1.0, 0.0]), np.array([0.5, 0.25]), np.array([1.0, 1.0]))["estimate"]
    0.3333333333333333
    """
    w = weights(prob, pi_logged)
    c = np.asarray(cost, dtype=np.float64)
    n = w.shape[0]
    sw = float(w.sum())
    if n == 0 or sw <= 0.0:
        return {"estimate": math.nan, "low": math.nan, "high": math.nan, "stderr": math.nan}
    v = float((w * c).sum()) / sw
    mw = sw / n
    var = float(((w * (c - v)) ** 2).sum()) / (n - 1) / (mw * mw) if n > 1 else math.inf
    return _interval(v, var, n, z)


def dr(cost: np.ndarray, prob: np.ndarray, pi_logged: np.ndarray, direct: np.ndarray,
       chat_logged: np.ndarray, z: float = Z95) -> dict:  # fmt: skip
    """The doubly robust estimate and its interval (see :func:`dr_terms`)."""
    return _mean_interval(dr_terms(cost, prob, pi_logged, direct, chat_logged), z)


def observed(cost: np.ndarray, z: float = Z95) -> dict:
    """The logging policy's observed mean cost and its interval."""
    return _mean_interval(np.asarray(cost, dtype=np.float64), z)


# running sums (float64) kept by the accumulator
_N, _W, _W2, _WC, _W2C, _W2C2, _DR, _DR2, _C, _C2, _WMAX = range(11)
SUMS = 11


def _checkpoints(upto: int) -> np.ndarray:
    """Example counts where the curve records: 1, 2, 3, 4, 5, 6, 7, 8, then 2^(j/4) rounded."""
    pts = set(range(1, 9))
    j = 12
    while True:
        v = int(round(2.0 ** (j / 4.0)))
        if v > upto:
            break
        pts.add(v)
        j += 1
    return np.array(sorted(p for p in pts if p <= upto), dtype=np.int64)


def _estimates(s: np.ndarray, z: float, dr_known: bool) -> dict:
    """The four estimates from running sums ``s`` (one row of :data:`SUMS`)."""
    n = s[_N]
    nan = {"estimate": math.nan, "low": math.nan, "high": math.nan, "stderr": math.nan}
    if n <= 0:
        return {k: dict(nan) for k in ESTIMATORS}

    def mean_of(s1: float, s2: float) -> dict:
        m = s1 / n
        var = (s2 - n * m * m) / (n - 1) if n > 1 else math.inf
        return _interval(m, var, n, z)

    out = {"ips": mean_of(s[_WC], s[_W2C2]), "logging": mean_of(s[_C], s[_C2])}
    if s[_W] > 0:
        v = s[_WC] / s[_W]
        mw = s[_W] / n
        # sum w^2 (c - v)^2 = sum w^2 c^2 - 2 v sum w^2 c + v^2 sum w^2
        ss = s[_W2C2] - 2.0 * v * s[_W2C] + v * v * s[_W2]
        out["snips"] = _interval(v, ss / (n - 1) / (mw * mw) if n > 1 else math.inf, n, z)
    else:
        out["snips"] = dict(nan)
    out["dr"] = mean_of(s[_DR], s[_DR2]) if dr_known else dict(nan)
    return out


class Accumulator:
    """Running off-policy estimates over a stream of batches.

    :meth:`add` takes a batch's per-example arrays (only the examples to count: labeled,
    and progressive or held out as the caller decides) and records the estimates at the
    checkpoints the running count passes; :meth:`result` is the final figures and
    :attr:`curve` the recorded rows ``[examples, ips, ips_low, ips_high, snips, ...]``
    (:data:`CURVE_COLUMNS`).
    """

    CURVE_COLUMNS = ("examples", "ips", "ips_low", "ips_high", "snips", "snips_low",
                     "snips_high", "dr", "dr_low", "dr_high", "logging", "logging_low",
                     "logging_high")  # fmt: skip

    def __init__(self, z: float = Z95, dr: bool = True) -> None:
        self.z = z
        self.dr_known = dr
        self.sums = np.zeros(SUMS)
        self.curve: list[list[float]] = []
        self._next = 1

    def add(self, cost: np.ndarray, prob: np.ndarray, pi_logged: np.ndarray,
            direct: np.ndarray | None = None,
            chat_logged: np.ndarray | None = None) -> None:  # fmt: skip
        """Count a batch of examples (arrays as :func:`ips` and :func:`dr` take them)."""
        c = np.asarray(cost, dtype=np.float64)
        m = c.shape[0]
        if m == 0:
            return
        w = weights(prob, pi_logged)
        if self.dr_known and direct is not None and chat_logged is not None:
            d = dr_terms(c, prob, pi_logged, direct, chat_logged)
        else:
            self.dr_known = False
            d = np.zeros(m)
        cols = np.empty((m, SUMS))
        cols[:, _N] = 1.0
        cols[:, _W] = w
        cols[:, _W2] = w * w
        cols[:, _WC] = w * c
        cols[:, _W2C] = w * w * c
        cols[:, _W2C2] = (w * c) ** 2
        cols[:, _DR] = d
        cols[:, _DR2] = d * d
        cols[:, _C] = c
        cols[:, _C2] = c * c
        cols[:, _WMAX] = 0.0
        before = int(self.sums[_N])
        pts = _checkpoints(before + m)
        pts = pts[pts >= max(self._next, before + 1)]
        if pts.shape[0]:
            run = np.cumsum(cols[: int(pts[-1]) - before], axis=0)
            for p in pts.tolist():
                s = self.sums + run[p - before - 1]
                self._record(s)
            self._next = int(pts[-1]) + 1
        self.sums += cols.sum(axis=0)
        self.sums[_WMAX] = max(self.sums[_WMAX], float(w.max()))

    def _record(self, s: np.ndarray) -> None:
        e = _estimates(s, self.z, self.dr_known)
        row = [float(s[_N])]
        for k in ("ips", "snips", "dr", "logging"):
            row += [e[k]["estimate"], e[k]["low"], e[k]["high"]]
        self.curve.append(row)

    def result(self) -> dict:
        """The final estimates (``ips``, ``snips``, ``dr``, ``logging``: estimate, low, high,
        stderr), ``examples``, ``max_weight``, ``effective_examples`` ((sum w)^2 / sum w^2)."""
        s = self.sums
        n = int(s[_N])
        if n and (not self.curve or self.curve[-1][0] != n):
            self._record(s)
        out = _estimates(s, self.z, self.dr_known)
        if not self.dr_known:
            out["dr"] = None
        out.update(examples=n, max_weight=float(s[_WMAX]) if n else None,
                   effective_examples=float(s[_W] ** 2 / s[_W2]) if s[_W2] > 0 else None,
                   confidence=float(2.0 * _phi(self.z) - 1.0))  # fmt: skip
        return out


def _phi(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def pi_of_logged(act_ptr: np.ndarray, acts: np.ndarray, probs: np.ndarray,
                 chosen: np.ndarray) -> np.ndarray:  # fmt: skip
    """Per example, the pmf's probability of the logged action: rows
    ``act_ptr[e]:act_ptr[e+1]`` hold the pmf as (action, probability) pairs (an
    explorer's output, any order); ``chosen[e]`` is the logged action (-1: none, 0)."""
    sizes = np.diff(act_ptr)
    ex = np.repeat(np.arange(sizes.shape[0]), sizes)
    hit = (acts == chosen[ex]) & (chosen[ex] >= 0)
    return np.bincount(ex, weights=np.where(hit, probs, 0.0).astype(np.float64),
                       minlength=sizes.shape[0])  # fmt: skip
