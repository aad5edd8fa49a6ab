"""VW's robust confidence sequence (``estimators/confidence_sequence_robust.cc``): the bounds
``--epsilon_decay`` compares its models by (:mod:`streamlearn.reductions.epsilon_decay`).

An estimator sees importance-weighted rewards ``(w, r)``, ``r`` in [0, 1]; its lower bound
is the countable-discrete betting bound of the mean of ``w·r`` and its upper bound one minus
that of ``w·(1 - r)``, at significance ``alpha / 2`` each (Waudby-Smith & Ramdas, *Estimating
means of bounded random variables by betting*, 2023; VW's port of the authors' Python, with
its constants: ``eta`` the float 0.95, ``k`` 1.5, ``lambda_max`` 0.5, ``xi`` 1.6, the root
found by bisection or Brent's method to ``tol_x``).

Plain Python on doubles, in VW's order of operations (its ``std::map`` histogram iterated
in key order), so the bounds are VW's to the bit: a bound is a root search of a few dozen
steps, made once per model and example, which is not where a run's time goes.  The state
of an estimator is what VW's model file holds (``update_count``, ``last_w``, ``last_r``, and
per bound ``t`` and the histogram's sums).
"""

from __future__ import annotations

import math

import numpy as np

ALPHA = float(np.float32(0.05))
"""VW's ``CS_ROBUST_DEFAULT_ALPHA`` (0.05f, as a double)."""

_ETA = float(np.float32(0.95))  # (VW's default argument is the float 0.95f)
_ZETA_R = 1.6449340668482264
_INT_MIN = -2147483648.0  # (std::numeric_limits<int>::min(), VW's start of a maximum)


class GTilde:
    """VW's ``g_tilde``: the sums of one bound's observations."""

    __slots__ = ("k", "log_k", "sum_x", "sum_low_v", "sum_mid_v", "t", "histo")

    def __init__(self, k: float = 1.5) -> None:
        self.k = k
        self.log_k = math.log(k)
        self.sum_x = 0.0
        self.sum_low_v = 0.0
        self.sum_mid_v = 0.0
        self.t = 0
        self.histo: dict[tuple[int, bool], float] = {}

    def copy(self, histo: bool = True) -> GTilde:
        g = GTilde.__new__(GTilde)
        g.k, g.log_k, g.sum_x, g.sum_low_v = self.k, self.log_k, self.sum_x, self.sum_low_v
        g.sum_mid_v, g.t = self.sum_mid_v, self.t
        g.histo = dict(self.histo) if histo else {}
        return g

    def histo_variance(self, lam_sqrt_tp1: float) -> float:
        sqrt_tp1 = math.sqrt(self.t + 1)
        k = self.k
        out = 0.0
        for n, strong in sorted(self.histo):
            c = self.histo[(n, strong)]
            x_ds = math.pow(k, n) / sqrt_tp1
            if strong:
                v = math.pow(lam_sqrt_tp1 * (k - 1) * x_ds / (1 + lam_sqrt_tp1 * k * x_ds), 2)
            else:
                v = lam_sqrt_tp1 * x_ds - math.log1p(lam_sqrt_tp1 * x_ds)
            out += c * v
        return out

    def histo_insert(self, x: float) -> None:
        k = self.k
        n = int(math.floor(math.log(x) / self.log_k))
        x1 = math.pow(k, n)
        alpha = (k * x1 - x) / ((k - 1.0) * x1)
        h = self.histo
        h[(n, False)] = h[(n, False)] + alpha if (n, False) in h else alpha
        h[(n + 1, False)] = h[(n + 1, False)] + 1 - alpha if (n + 1, False) in h else 1 - alpha
        s = -0.5 * alpha * (1 - alpha)
        h[(n, True)] = h[(n, True)] + s if (n, True) in h else s

    def add_obs(self, x: float) -> None:
        x_hat = (self.sum_x + 0.5) / (self.t + 1)
        error = x - min(1.0, x_hat)
        if error <= 0.0:
            self.sum_low_v += math.pow(error, 2)
        elif error <= 1.0:
            self.sum_mid_v += math.pow(error, 2)
        else:
            self.histo_insert(error)
        self.sum_x += x
        self.t += 1

    def get_v(self, lam_sqrt_tp1: float) -> float:
        tp1 = self.t + 1
        v_low = self.sum_low_v / (tp1 - math.sqrt(tp1) * lam_sqrt_tp1)
        v_mid = self.sum_mid_v / tp1
        return 0.5 * math.pow(lam_sqrt_tp1, 2) * (v_low + v_mid) + self.histo_variance(lam_sqrt_tp1)

    def reset(self) -> None:
        self.sum_x = self.sum_low_v = self.sum_mid_v = 0.0
        self.histo = {}
        self.t = 0


class Bound:
    """VW's ``countable_discrete_base``: one side's betting bound."""

    __slots__ = ("tol_x", "brentq", "log_xi", "log_xi_m1", "lambda_max", "log_scale_fac", "t",
                 "gt")  # fmt: skip

    def __init__(self, tol_x: float, brentq: bool) -> None:
        xi = 1.6
        self.tol_x = tol_x
        self.brentq = brentq
        self.log_xi = math.log1p(xi - 1)
        self.log_xi_m1 = math.log1p(xi - 2.0)
        self.lambda_max = 0.5
        scale_fac = 0.5 * (1.0 + 1.4406337969700393 / (_ETA * _ZETA_R))
        self.log_scale_fac = math.log1p(scale_fac - 1.0)
        self.t = 0
        self.gt = GTilde()

    def copy(self, histo: bool = True) -> Bound:
        b = Bound.__new__(Bound)
        for name in Bound.__slots__[:-1]:
            setattr(b, name, getattr(self, name))
        b.gt = self.gt.copy(histo)
        return b

    def lam(self, j: float) -> float:
        log_den = (j + 0.5) * self.log_xi - 0.5 * math.log(self.t + 1)
        return self.lambda_max * math.exp(-log_den)

    def log_weight(self, j: float) -> float:
        return self.log_scale_fac + self.log_xi_m1 - (1 + j) * self.log_xi

    def log_remaining(self, j: float) -> float:
        return self.log_scale_fac - j * self.log_xi

    def _v(self, memo: list[float], j: int) -> float:
        if j == len(memo):
            memo.append(self.gt.get_v(self.lam(j)))
        return memo[j]

    def log_wealth_mix(self, mu: float, s: float, thres: float, memo: list[float]) -> float:
        t = self.t
        sqrt_tp1 = math.sqrt(t + 1)
        y = s / sqrt_tp1 - (t / sqrt_tp1) * mu
        log_es = [self.lam(j) * y - v for j, v in enumerate(memo)]
        log_ws = [self.log_weight(j) for j in range(len(memo))]
        j = len(log_es)
        while True:
            lower = _log_sum_exp([e + w for e, w in zip(log_es, log_ws, strict=True)])
            if lower >= thres:
                return lower
            top = _INT_MIN
            for e in log_es[:-1]:
                top = max(top, e)
            log_upper = log_es[-1] if log_es[-1] < top else self.lam(j) * y
            upper = _log_sum_exp([lower, self.log_remaining(j) + log_upper])
            if upper < thres:
                return upper
            v = self._v(memo, j)
            log_es.append(self.lam(j) * y - v)
            log_ws.append(self.log_weight(j))
            j += 1

    def _bisect(self, s: float, thres: float, memo: list[float], lo: float, hi: float) -> float:
        def f(mu: float) -> float:
            return self.log_wealth_mix(mu, s, thres, memo) - thres

        if f(lo) * f(hi) >= 0:
            raise ValueError("Signs of f(x_min) and f(x_max) must be opposites")
        mid = lo
        while hi >= lo + self.tol_x:
            mid = (lo + hi) / 2
            # f twice, as VW's: each call may grow ``memo``, which the next one starts from
            if f(mid) == 0.0:
                break
            if f(mid) * f(lo) < 0.0:
                hi = mid
            else:
                lo = mid
        return mid

    def _brentq(self, s: float, thres: float, memo: list[float], a: float, b: float) -> float:
        def f(mu: float) -> float:
            return self.log_wealth_mix(mu, s, thres, memo) - thres

        fa, fb = f(a), f(b)
        if not fa * fb < 0.0:
            raise ValueError("Signs of f(x_min) and f(x_max) must be opposites")
        if abs(fa) < abs(b):  # (VW's comparison, as written)
            a, b, fa, fb = b, a, fb, fa
        c, fc, mflag, d = a, fa, True, 0.0
        tol = self.tol_x
        while abs(b - a) > tol:
            if fa != fc and fb != fc:
                s_ = (a * fb * fc / ((fa - fb) * (fa - fc)) + b * fa * fc / ((fb - fa) * (fb - fc))
                      + c * fa * fb / ((fc - fa) * (fc - fb)))  # fmt: skip
            else:
                s_ = b - fb * (b - a) / (fb - fa)
            bisect = s_ < (3.0 * a + b) / 4.0 or s_ > b
            if mflag:
                bisect = bisect or abs(s_ - b) >= abs(b - c) * 0.5 or abs(b - c) < tol
            else:
                bisect = bisect or abs(s_ - b) >= abs(c - d) * 0.5 or abs(c - d) < tol
            if bisect:
                s_ = 0.5 * (a + b)
                mflag = True
            else:
                mflag = False
            fs = f(s_)
            d, c, fc = c, b, fb
            if fa * fs < 0.0:
                b, fb = s_, fs
            else:
                a, fa = s_, fs
            if abs(fa) < abs(fb):
                a, b, fa, fb = b, a, fb, fa
        return min(a, b)

    def ci(self, alpha: float) -> float:
        """VW's ``lb_log_wealth``: the lower confidence bound of the mean at ``alpha``."""
        thres = -math.log(alpha)
        s = self.gt.sum_x
        memo = [self.gt.get_v(self.lam(j)) for j in range(2)]
        if self.log_wealth_mix(0.0, s, thres, memo) <= thres:
            return 0.0
        if self.log_wealth_mix(1.0, s, thres, memo) >= thres:
            return 1.0
        if self.brentq:
            return self._brentq(s, thres, memo, 0.0, 1.0)
        return self._bisect(s, thres, memo, 0.0, 1.0)

    def add_obs(self, x: float) -> None:
        self.t += 1
        self.gt.add_obs(x)

    def reset(self) -> None:
        self.t = 0
        self.gt.reset()


def _log_sum_exp(a: list[float]) -> float:
    top = max(a)
    return math.log(sum_in_order(math.exp(v - top) for v in a)) + top


def sum_in_order(xs) -> float:  # noqa: ANN001 - an iterable of floats
    """Σ left to right (as a C++ loop; Python's ``sum`` of floats is that too, said here)."""
    out = 0.0
    for x in xs:
        out += x
    return out


class ConfSeq:
    """VW's ``confidence_sequence_robust``: an estimator's count, last observation, bounds."""

    __slots__ = ("alpha", "update_count", "last_w", "last_r", "lower", "upper")

    def __init__(self, tol_x: float = 1e-6, brentq: bool = False, alpha: float = ALPHA) -> None:
        self.alpha = alpha
        self.update_count = 0
        self.last_w = 0.0
        self.last_r = 0.0
        self.lower = Bound(tol_x, brentq)
        self.upper = Bound(tol_x, brentq)

    def moved(self) -> ConfSeq:
        """What VW's ``std::move`` leaves behind: the numbers, the histograms emptied."""
        c = ConfSeq.__new__(ConfSeq)
        c.alpha, c.update_count, c.last_w, c.last_r = (self.alpha, self.update_count,
                                                       self.last_w, self.last_r)  # fmt: skip
        c.lower, c.upper = self.lower.copy(False), self.upper.copy(False)
        return c

    def update(self, w: float, r: float) -> None:
        self.lower.add_obs(w * r)
        self.upper.add_obs(w * (1.0 - r))
        self.update_count += 1
        self.last_w = w
        self.last_r = r

    def reset(self) -> None:
        self.lower.reset()
        self.upper.reset()
        self.update_count = 0
        self.last_w = 0.0
        self.last_r = 0.0

    def lower_bound(self) -> float:
        return self.lower.ci(self.alpha / 2.0)

    def upper_bound(self) -> float:
        return 1 - self.upper.ci(self.alpha / 2.0)
