"""Dense reference learners: plain numpy, O(d) per step, straight from the papers.

Each function walks the stream example by example, applies the regulariser to
every weight on every step, and returns (weights, predictions).
"""

from __future__ import annotations

import math

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


class Clip:
    """VW's prediction range: [0, 0] ([-50, 50] for logistic), widened by each label
    learned before its example is predicted; or fixed by ``lo``/``hi`` (either given)."""

    def __init__(self, loss_id: int, lo: float | None = None, hi: float | None = None):
        self.fixed = lo is not None or hi is not None
        edge = 50.0 if loss_id == 1 else 0.0
        self.lo = (lo or 0.0) if self.fixed else -edge
        self.hi = (hi or 0.0) if self.fixed else edge

    def __call__(self, p: float, y: float) -> float:
        """``p`` clipped; ``y`` (NaN when unlabeled) widens the range first."""
        if not self.fixed and not np.isnan(y):
            self.lo = min(self.lo, y)
            self.hi = max(self.hi, y)
        return min(max(p, self.lo), self.hi)

    def run(self, p: np.ndarray, y: np.ndarray) -> np.ndarray:
        """:meth:`__call__` over arrays, in order (vectorized for long runs)."""
        if self.fixed or p.size == 0:
            return np.clip(p, self.lo, self.hi)
        lo = np.minimum.accumulate(np.concatenate([[self.lo], np.where(np.isnan(y), np.inf, y)]))
        hi = np.maximum.accumulate(np.concatenate([[self.hi], np.where(np.isnan(y), -np.inf, y)]))
        self.lo, self.hi = float(lo[-1]), float(hi[-1])
        return np.minimum(np.maximum(p, lo[1:]), hi[1:])


def learned(stream: Stream, loss_id: int, w: np.ndarray, preds: np.ndarray):
    """Walk the stream: predict each usable row with the current ``w`` (clipped, into
    ``preds``), and yield ``(idx, val, y, p, a)`` for the rows to learn from."""
    clip = Clip(loss_id)
    for i in range(stream.n):
        if stream.status[i] != 0:
            continue
        idx, val = stream.row(i)
        y = stream.labels[i]
        p = clip(stream.bases[i] + float(np.dot(w[idx], val)), y)
        preds[i] = p
        a = stream.weights[i]
        if np.isnan(y) or a == 0:
            continue
        yield idx, val, y, p, a


def gradient_steps(stream: Stream, loss_id: int, eta0, power_t, t0, regularise):
    """Generic dense loop; ``regularise(w, eta, n_learned)`` acts on all of w."""
    w = np.zeros(stream.d)
    preds = np.full(stream.n, np.nan)
    T = 0.0
    n_learned = 0
    for idx, val, y, p, a in learned(stream, loss_id, w, preds):
        T += a
        n_learned += 1
        eta = rate_np(eta0, power_t, t0, T)
        np.add.at(w, idx, -eta * a * dloss_np(loss_id, p, y) * val)
        regularise(w, eta, n_learned)
    return w, preds


def truncate(w: np.ndarray, alpha: float, theta: float) -> None:
    """T1(w_j, α, θ) on every weight, in place."""
    small = np.abs(w) <= theta
    pos = small & (w > 0)
    neg = small & (w < 0)
    w[pos] = np.maximum(0.0, w[pos] - alpha)
    w[neg] = np.minimum(0.0, w[neg] + alpha)


def truncated_gradient(stream, loss_id, eta0, power_t, t0, g, theta, K):
    """Langford, Li & Zhang (2009), update (6): T1 every K-th step with α = η K g."""

    def regularise(w, eta, n):
        if n % K == 0:
            truncate(w, eta * K * g, theta)

    return gradient_steps(stream, loss_id, eta0, power_t, t0, regularise)


# ---- elastic net, SGD and FoBoS forms (Lipton & Elkan 2015) ------------------


def enet_step(form: str, w, eta: float, l1: float, l2: float):
    """One regulariser step on every weight: SGD eq. 9 or the FoBoS solution of eq. 3."""
    mag = np.abs(w)
    if form == "sgd":
        f = 1.0 - eta * l2
        new = np.maximum(0.0, mag * f - eta * l1) if f > 0.0 else np.zeros_like(mag)
    else:
        new = np.maximum(0.0, mag - eta * l1) / (1.0 + eta * l2)
    return np.copysign(new, w)


def elastic_net(stream, loss_id, eta0, power_t, t0, l1, l2, form):
    """Dense elastic net: gradient step, then ``enet_step`` on every weight, every step."""

    def regularise(w, eta, n):
        w[:] = enet_step(form, w, eta, l1, l2)

    return gradient_steps(stream, loss_id, eta0, power_t, t0, regularise)


from streamlearn.system.jit import jit, jit_inline  # noqa: E402  (elastic-net section)


@jit_inline
def _en_two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@jit_inline
def _en_two_prod(a, b):
    p = a * b
    t = 134217729.0 * a
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@jit_inline
def _en_renorm(a, b):
    s = a + b
    return s, b - (s - a)


@jit
def _scalar_run(sgd_form, x, etas, l1, l2):
    """Apply the steps of ``etas`` one by one to the magnitude ``x`` (0 once clipped).

    In double-double arithmetic (~106 bits): a float64 loop that subtracts the
    same η λ1 10^6 times drifts by up to ~10^6 ulp (measured 1e-10 relative),
    which would hide the lazy side's own error.  Step factors are the float64
    values both sides use: ``1 − η λ2`` (SGD) and ``1 + η λ2`` (FoBoS divisor).
    """
    hi = x
    lo = 0.0
    for k in range(etas.shape[0]):
        eta = etas[k]
        c = eta * l1
        if sgd_form:
            f = 1.0 - eta * l2
            if f <= 0.0:
                return 0.0
            p, e = _en_two_prod(hi, f)
            hi, lo = _en_renorm(p, e + lo * f)
            s, e = _en_two_sum(hi, -c)
            hi, lo = _en_renorm(s, e + lo)
            if hi + lo <= 0.0:
                return 0.0
        else:
            s, e = _en_two_sum(hi, -c)
            hi, lo = _en_renorm(s, e + lo)
            if hi + lo <= 0.0:
                return 0.0
            q = 1.0 + eta * l2
            q1 = hi / q
            p, e = _en_two_prod(q1, q)
            hi, lo = _en_renorm(q1, (((hi - p) - e) + lo) / q)
    return hi + lo


def elastic_net_runs(chunks, d, loss_id, eta0, power_t, t0, l1, l2, form):
    """``elastic_net`` over long streams of mostly empty rows, fed as chunks.

    The same steps in the same order as :func:`elastic_net`, but a run of empty
    learned rows, which has no gradient, is applied weight by weight as a scalar
    loop over its steps (compiled, in double-double: see :func:`_scalar_run`)
    instead of one numpy call per step, so 10^7-step streams take seconds.
    Returns (weights, predictions, number of learned steps).
    """
    w = np.zeros(d)
    preds = []
    T = 0.0
    n_learned = 0
    clip = Clip(loss_id)
    for stream in chunks:
        p_chunk = np.full(stream.n, np.nan)
        empty = np.diff(stream.indptr) == 0
        i = 0
        while i < stream.n:
            if empty[i]:  # a run of empty rows: no gradient, only regulariser steps
                e = i
                while e < stream.n and empty[e]:
                    e += 1
                ok = stream.status[i:e] == 0
                p_chunk[i:e][ok] = clip.run(stream.bases[i:e][ok], stream.labels[i:e][ok])
                learned = ok & ~np.isnan(stream.labels[i:e]) & (stream.weights[i:e] != 0)
                a = stream.weights[i:e][learned]
                if a.size:
                    Ts = np.cumsum(np.concatenate([[T], a]))[1:]
                    T = float(Ts[-1])
                    n_learned += a.size
                    etas = eta0 * (t0 / (t0 + Ts)) ** power_t if power_t else np.full(Ts.size, eta0)
                    for j in np.flatnonzero(w):
                        x = _scalar_run(form == "sgd", abs(w[j]), etas, l1, l2)
                        w[j] = np.copysign(x, w[j])
                i = e
                continue
            if stream.status[i] == 0:
                idx, val = stream.row(i)
                y = stream.labels[i]
                p = clip(stream.bases[i] + float(np.dot(w[idx], val)), y)
                p_chunk[i] = p
                a = stream.weights[i]
                if not np.isnan(y) and a != 0:
                    T += a
                    n_learned += 1
                    eta = rate_np(eta0, power_t, t0, T)
                    np.add.at(w, idx, -eta * a * dloss_np(loss_id, p, y) * val)
                    w = enet_step(form, w, eta, l1, l2)
            i += 1
        preds.append(p_chunk)
    return w, np.concatenate(preds), n_learned


def smidas_link(theta: np.ndarray, p: float) -> np.ndarray:
    """w = f⁻¹(θ), eq. (12) of Shalev-Shwartz & Tewari, in ratios so no power overflows."""
    m = float(np.max(np.abs(theta))) if theta.size else 0.0
    if m == 0.0:
        return np.zeros_like(theta)
    norm = m * float(np.sum((np.abs(theta) / m) ** p)) ** (1.0 / p)
    return np.sign(theta) * norm * (np.abs(theta) / norm) ** (p - 1.0)


def smidas(stream, loss_id, eta0, power_t, t0, lam, p):
    """Shalev-Shwartz & Tewari (2009), Algorithm 3, every θ_j truncated every step.

    Returns (final weights f⁻¹(θ), predictions, final θ).
    """
    theta = np.zeros(stream.d)
    preds = np.full(stream.n, np.nan)
    T = 0.0
    clip = Clip(loss_id)
    for i in range(stream.n):
        if stream.status[i] != 0:
            continue
        idx, val = stream.row(i)
        w = smidas_link(theta, p)
        y = stream.labels[i]
        pr = clip(stream.bases[i] + float(np.dot(w[idx], val)), y)
        preds[i] = pr
        a = stream.weights[i]
        if np.isnan(y) or a == 0:
            continue
        T += a
        eta = rate_np(eta0, power_t, t0, T)
        np.add.at(theta, idx, -eta * a * dloss_np(loss_id, pr, y) * val)
        theta = np.sign(theta) * np.maximum(0.0, np.abs(theta) - eta * lam)
    return smidas_link(theta, p), preds, theta


# ---- per-coordinate learners: VW's default update (gd) and FTRL-proximal -------


class Arith:
    """Scalar arithmetic in one precision: ``Arith(np.float32)`` rounds every
    result to single precision, as VW computes; ``Arith(np.float64)`` is the
    same math in double.  exp/log/pow/sqrt round the double result."""

    def __init__(self, dt):
        self.f = dt

    def exp(self, x):
        return self.f(math.exp(float(x)))

    def log(self, x):
        return self.f(math.log(float(x)))

    def sqrt(self, x):
        return self.f(math.sqrt(float(x)))

    def pow(self, x, e):
        return self.f(self.f(x) ** self.f(e))


def vw_loss_terms(A: Arith, loss_id: int, p, y):
    """(loss, derivative ℓ', squared derivative) at the clipped prediction."""
    f = A.f
    if loss_id == 1:
        d = -y / (f(1.0) + A.exp(y * p))
        return A.log(f(1.0) + A.exp(-y * p)), d, d * d
    if loss_id == 2:
        d = f(0.0) if y * p >= f(1.0) else -y
        return max(f(1.0) - y * p, f(0.0)), d, d * d
    return (p - y) * (p - y), f(2.0) * (p - y), f(4.0) * (p - y) * (p - y)


def vw_step(A: Arith, loss_id: int, p, y, s, ppu, invariant: bool):
    """The update u (w_j += u · r_j x_j): the plain step −s ℓ', or the
    importance-invariant closed form (Karampatziakis & Langford 2011)."""
    f = A.f
    if not invariant:
        return -s * vw_loss_terms(A, loss_id, p, y)[1]
    if float(s * ppu) < 1e-6:  # first order (the plain step), as VW
        return -s * vw_loss_terms(A, loss_id, p, y)[1]
    if loss_id == 1:  # solve for the step along the gradient flow: Lambert W
        x = float(s * ppu + y * p + A.exp(y * p))
        w = lambert_w_exp(x) - x
        return -(y * f(w) + p) / ppu
    if loss_id == 2:
        if y * p >= f(1.0):
            return f(0.0)
        err = f(1.0) - y * p
        return y * (s if s * ppu < err else err / ppu)
    # squared: p moves toward y by (1 − e^{−2 s ppu}) of the gap
    return (y - p) * (f(1.0) - A.exp(f(-2.0) * s * ppu)) / ppu


def lambert_w_exp(x: float) -> float:
    """W(e^x) (the Lambert function at e^x) by VW's one-step approximation."""
    w = 0.86 * x + 0.01 if x >= 1.0 else math.exp(0.8 * x - 0.65)
    r = x - math.log(w) - w if x >= 1.0 else 0.2 * x + 0.65 - w
    t = 1.0 + w
    u = 2.0 * t * (t + 2.0 * r / 3.0)
    return w * (1.0 + r / t * (u - r) / (u - 2.0 * r))


def vw_gd(stream, loss_id, eta0=0.5, power_t=0.5, t0=0.0, l1=0.0, l2=0.0, adaptive=True,
          normalized=True, invariant=True, dt=np.float32, clip=None):
    """VW's gd update (adaptive, normalized, invariant and their subsets), dense state.

    State: per slot the raw weight v_j, the adaptive sum G_j (starting at t0)
    and the largest |x_j| seen m_j; globally the normalizer sums S, W, the
    gravity g and contraction c.  A weight reads as c · sign(v) max(0, |v| − g),
    for every slot, at every prediction.  Returns (weights as read at the end,
    clipped predictions, final G, final m).
    """
    A = Arith(dt)
    f = A.f
    d = stream.d
    v = np.zeros(d, dtype=dt)
    G = np.full(d, t0 if adaptive else 0.0, dtype=dt)
    m = np.zeros(d, dtype=dt)
    S = W = float(f(t0)) if t0 > 0 else 0.0
    g, c = 0.0, 1.0
    mu = f(1.0)
    q = f(power_t)
    # exponent of the normalizers: −(1 − q) with adaptive rates, else −1, except that
    # VW takes q − 1 in both cases when q ≠ 1/2 (it fixes the exponent before it
    # reads the update rule), and so do we
    nq = q - f(1.0) if adaptive or q != f(0.5) else f(-1.0)
    eta = f(eta0)
    if not adaptive and not normalized:
        eta = eta * A.pow(f(t0), q)
    T = 0.0
    clip = clip or Clip(loss_id)
    preds = np.full(stream.n, np.nan)

    def read(vj):  # the weight a slot holds under the current gravity and contraction
        return (vj - (f(-1.0) if vj <= 0 else f(1.0)) * f(g) if f(g) < abs(vj) else f(0.0)) * f(c)

    def rate(j):
        r = f(1.0)
        if adaptive:
            r = A.pow(G[j], -q)
        if normalized:
            r = r * A.pow(m[j] * m[j], nq)
        return r

    for i in range(stream.n):
        if stream.status[i] != 0:
            continue
        idx, val = stream.row(i)
        x = val.astype(dt)
        y = f(stream.labels[i])
        a = stream.weights[i]
        raw = f(stream.bases[i])
        for j, xj in zip(idx, x, strict=True):
            raw = raw + (v[j] - (f(-1.0) if v[j] <= 0 else f(1.0)) * f(g)
                         if f(g) < abs(v[j]) else f(0.0)) * xj
        p = f(clip(float(raw * f(c)), float(y)))
        preds[i] = float(p)
        if np.isnan(y) or a == 0:
            continue
        T += a
        loss, dl, dl2 = vw_loss_terms(A, loss_id, p, y)
        if not loss > 0:
            continue
        gamma = f(a) * dl2
        if not adaptive and not normalized:
            ppu = f(0.0)
            for xj in x:
                ppu = ppu + xj * xj
        else:
            ppu = f(0.0)
            nx = f(0.0)
            for j, xj in zip(idx, x, strict=True):
                x2 = max(xj * xj, f(1.084202e-19) * f(1.084202e-19))
                ax = A.sqrt(x2) if x2 > xj * xj else abs(xj)
                if adaptive:
                    G[j] = G[j] + gamma * x2
                if normalized:
                    if ax > m[j]:
                        if m[j] > 0:  # rescale v_j as if x had always been on the new scale
                            v[j] = v[j] * A.pow((ax / m[j]) * (ax / m[j]), nq)
                        m[j] = ax
                    nx = nx + x2 / (m[j] * m[j])
                ppu = ppu + x2 * rate(j)
            if normalized:
                S += float(f(a)) * float(nx)
                W += float(f(a))
                mu = A.pow(f(S) / f(W), nq)
                ppu = ppu * mu
        s = eta * f(a)
        if not adaptive:
            s = s * A.pow(f(f(t0) + T), -q)
        u = vw_step(A, loss_id, p, y, s, ppu, invariant)
        if (l1 > 0 or l2 > 0) and abs(float(u)) > 1e-8:
            eta_bar = -float(u) / float(dl) if abs(float(dl)) > 1e-8 else 0.0
            if abs(float(dl)) > 1e-8:
                c *= 1.0 - float(f(l2)) * eta_bar
            u = u / f(c)
            g += eta_bar * float(f(l1))
        if normalized:
            u = u * mu
        for j, xj in zip(idx, x, strict=True):
            v[j] = v[j] + u * (xj * rate(j) if adaptive or normalized else xj)
        if c < 1e-9 or g > 1e3:  # settle: every weight takes what it reads as
            v = np.array([read(vj) for vj in v], dtype=dt)
            g, c = 0.0, 1.0
    return np.array([float(read(vj)) for vj in v]), preds, G, m


def ftrl(stream, loss_id, alpha=0.5, beta=1.0, l1=0.0, l2=0.0, dt=np.float32, clip=None):
    """FTRL-proximal, McMahan et al. (2013) Algorithm 1, per-coordinate rates
    η_j = α / (β + √n_j), in the precision ``dt``.  Returns (weights, predictions, z, n)."""
    A = Arith(dt)
    f = A.f
    w = np.zeros(stream.d, dtype=dt)
    z = np.zeros(stream.d, dtype=dt)
    n = np.zeros(stream.d, dtype=dt)
    clip = clip or Clip(loss_id)
    preds = np.full(stream.n, np.nan)
    for i in range(stream.n):
        if stream.status[i] != 0:
            continue
        idx, val = stream.row(i)
        x = val.astype(dt)
        y = f(stream.labels[i])
        a = stream.weights[i]
        raw = f(stream.bases[i])
        for j, xj in zip(idx, x, strict=True):
            raw = raw + w[j] * xj
        p = f(clip(float(raw), float(y)))
        preds[i] = float(p)
        if np.isnan(y) or a == 0:
            continue
        g = vw_loss_terms(A, loss_id, p, y)[1] * f(a)
        for j, xj in zip(idx, x, strict=True):
            gj = g * xj
            sigma = (A.sqrt(n[j] + gj * gj) - A.sqrt(n[j])) / f(alpha)
            z[j] = z[j] + (gj - sigma * w[j])
            n[j] = n[j] + gj * gj
            if abs(z[j]) <= f(l1):
                w[j] = 0.0
            else:
                eta_inv = (f(beta) + A.sqrt(n[j])) / f(alpha) + f(l2)
                w[j] = -(z[j] - np.sign(z[j]) * f(l1)) / eta_inv
    return w.astype(np.float64), preds, z, n


# ---- parameter-free learners: VW's --coin, --pistol, --freegrad ----------------


def _stored_prediction(f, w, idx, x, base):
    """``base + Σ w_j x_j`` (what VW predicts an example it does not learn with)."""
    p = f(base)
    for j, xj in zip(idx, x, strict=True):
        p = p + w[j] * xj
    return p


def _parameter_free(stream, loss_id, dt, clip, learn_example):
    """Walk the stream: examples with a label and a weight are predicted and learned by
    ``learn_example(idx, x, y, a) -> (raw prediction, step(p))``; the others are predicted
    with the stored weights ``w`` (``learn_example.w``).  Returns the predictions."""
    f = dt
    clip = clip or Clip(loss_id)
    preds = np.full(stream.n, np.nan)
    for i in range(stream.n):
        if stream.status[i] != 0:
            continue
        idx, val = stream.row(i)
        x = val.astype(dt)
        y = stream.labels[i]
        a = stream.weights[i]
        learn = not np.isnan(y) and a != 0
        if learn:
            raw, step = learn_example(idx, x, f(y), a)
        else:
            raw = _stored_prediction(f, learn_example.w, idx, x, stream.bases[i])
        p = f(clip(float(raw), float(y)))
        preds[i] = float(p)
        if learn:
            step(p)
    return preds


def coin(stream, loss_id, alpha=4.0, beta=1.0, dt=np.float32, clip=None):
    """Coin betting (COCOB without its sigmoid; Orabona & Tommasi 2017, Alg. 2) per
    coordinate, as VW's ``--coin`` computes it.  Returns (weights, predictions, state)."""
    A = Arith(dt)
    f = A.f
    al, be = f(alpha), f(beta)
    w, theta, G, m, wealth, L = (np.zeros(stream.d, dtype=dt) for _ in range(6))
    sums = {"N": 0.0, "A": 0.0}

    def bet(j, mj, Lj):
        lm = Lj * mj
        return (al + wealth[j]) / (lm * (lm + G[j])) * theta[j] if lm > 0 else f(0.0)

    def learn_example(idx, x, y, a):
        raw, n2 = f(0.0), f(0.0)
        for j, xj in zip(idx, x, strict=True):
            mj = max(m[j], abs(xj))
            raw = raw + bet(j, mj, L[j]) * xj
            if mj > 0:
                n2 = n2 + (xj / mj) * (xj / mj)
        sums["N"] += float(f(a)) * float(n2)
        sums["A"] += float(f(a))
        s = f((sums["N"] + 1e-6) / sums["A"])

        def step(p):
            g = vw_loss_terms(A, loss_id, p, y)[1] * f(a)
            for j, xj in zip(idx, x, strict=True):
                m[j] = max(m[j], abs(xj))
                if abs(g) > L[j]:
                    L[j] = max(abs(g), be)
                b = bet(j, m[j], L[j])
                theta[j] = theta[j] - g * xj
                G[j] = G[j] + abs(g * xj)
                wealth[j] = wealth[j] - g * xj * b
                w[j] = b / s

        return raw / s, step

    learn_example.w = w
    preds = _parameter_free(stream, loss_id, dt, clip, learn_example)
    return w.astype(np.float64), preds, np.stack([w, theta, G, m, wealth, L], axis=1)


def pistol(stream, loss_id, alpha=1.0, beta=0.5, dt=np.float32, clip=None):
    """PiSTOL (Orabona 2014, Alg. 1) per coordinate, as VW's ``--pistol`` computes it.
    Returns (weights, predictions, state)."""
    A = Arith(dt)
    f = A.f
    al, be = f(alpha), f(beta)
    w, theta, G, m = (np.zeros(stream.d, dtype=dt) for _ in range(4))

    def learn_example(idx, x, y, a):
        raw = f(0.0)
        for j, xj in zip(idx, x, strict=True):
            m[j] = max(m[j], abs(xj))
            tau = f(1.0) / (al * m[j] * (G[j] + m[j]))
            w[j] = A.sqrt(G[j]) * be * theta[j] * A.exp(theta[j] * theta[j] / f(2.0) * tau) * tau
            raw = raw + w[j] * xj

        def step(p):
            g = vw_loss_terms(A, loss_id, p, y)[1] * f(a)
            for j, xj in zip(idx, x, strict=True):
                theta[j] = theta[j] - g * xj
                G[j] = G[j] + abs(g * xj)

        return raw, step

    learn_example.w = w
    preds = _parameter_free(stream, loss_id, dt, clip, learn_example)
    return w.astype(np.float64), preds, np.stack([w, theta, G, m], axis=1)


def freegrad(stream, loss_id, epsilon=1.0, lipschitz=0.0, restart=False, project=False,
             radius=None, dt=np.float32, clip=None):
    """FreeGrad (Mhammedi & Koolen 2020, eq. 9 and Alg. 2) per coordinate, with VW's
    FreeRange restarts and its projection (Cutkosky 2020, Alg. 1), as VW's ``--freegrad``
    computes them.  Returns (weights, predictions, state)."""
    A = Arith(dt)
    f = A.f
    eps, lip = f(epsilon), f(lipschitz)
    w, Gs, V, h1, ht, S = (np.zeros(stream.d, dtype=dt) for _ in range(6))
    glob = {"norms": f(1.0), "top": f(0.0)}

    def eq9(j):
        if not h1[j] > 0:
            return f(0.0)
        aG = abs(Gs[j])
        d = V[j] + ht[j] * aG
        num = -Gs[j] * eps * (f(2.0) * V[j] + ht[j] * aG) * (h1[j] * h1[j])
        e = A.exp(aG * aG / (f(2.0) * V[j] + f(2.0) * ht[j] * aG))
        return num / (f(2.0) * (d * d) * A.sqrt(V[j])) * e

    def learn_example(idx, x, y, a):
        raw, sq = f(0.0), f(0.0)
        for j, xj in zip(idx, x, strict=True):
            wj = eq9(j)
            sq = sq + wj * wj
            raw = raw + wj * xj
        norm_w = A.sqrt(sq)
        r = f(radius) if radius is not None else eps * A.sqrt(glob["norms"])
        if project and norm_w > r:
            raw = raw * (r / norm_w)

        def step(p):
            g = vw_loss_terms(A, loss_id, p, y)[1]
            e1 = f(a) - f(1.0)
            gw = f(0.0)
            for j, xj in zip(idx, x, strict=True):
                gw = gw + (g * xj) * eq9(j)
            sqc = f(0.0)
            for j, xj in zip(idx, x, strict=True):
                gx = g * xj
                tilde = gx
                old_h1, old_ht = h1[j], ht[j]
                if old_h1 > 0:
                    w[j] = eq9(j)
                if project and norm_w > r and gw < 0:
                    tilde = gx - gw * w[j] / (norm_w * norm_w)
                if tilde == 0:
                    continue
                c, at = tilde, abs(tilde)
                if old_h1 == 0:
                    h1[j] = ht[j] = at if lip == 0 else lip
                    V[j] = V[j] + f(a) * (at * at)
                elif at > old_ht:
                    c = c * (old_ht / at)
                    ht[j] = at
                sqc = sqc + c * c
                if restart and ht[j] / h1[j] > S[j] + f(2.0):
                    h1[j] = ht[j]
                    Gs[j] = c + e1 * tilde
                    V[j] = c * c + e1 * (tilde * tilde)
                else:
                    Gs[j] = Gs[j] + (c + e1 * tilde)
                    V[j] = V[j] + (c * c + e1 * (tilde * tilde))
                if old_ht > 0:
                    S[j] = S[j] + (abs(c) / old_ht + e1 * at / ht[j])
            n = A.sqrt(sqc)
            glob["top"] = max(glob["top"], n)
            if glob["top"] > 0:
                glob["norms"] = glob["norms"] + f(a) * n / glob["top"]

        return raw, step

    learn_example.w = w
    preds = _parameter_free(stream, loss_id, dt, clip, learn_example)
    return w.astype(np.float64), preds, np.stack([w, Gs, V, h1, ht, S], axis=1)


# ---- L0-constrained SGD (Dhingra et al., Alg. 5) ------------------------------


def hard_threshold(w: np.ndarray, K: int) -> np.ndarray:
    """H_K: the K entries of largest |w| kept (ties to the smaller index), the rest 0."""
    order = np.lexsort((np.arange(w.shape[0]), -np.abs(w)))
    out = np.zeros_like(w)
    out[order[:K]] = w[order[:K]]
    return out


def l0_sgd(stream: Stream, loss_id: int, eta0, power_t, t0, K, check=None):
    """Dense: a plain SGD step over the example's features, then H_K over all of w.

    ``check(w)``, when given, is called after every learned example."""
    w = np.zeros(stream.d)
    preds = np.full(stream.n, np.nan)
    T = 0.0
    clip = Clip(loss_id)
    for i in range(stream.n):
        if stream.status[i] != 0:
            continue
        idx, val = stream.row(i)
        y = stream.labels[i]
        p = stream.bases[i]
        for j, x in zip(idx, val, strict=True):
            p += w[j] * x
        p = clip(p, y)
        preds[i] = p
        a = stream.weights[i]
        if np.isnan(y) or a == 0:
            continue
        T += a
        g = rate_np(eta0, power_t, t0, T) * a * dloss_np(loss_id, p, y)
        for j, x in zip(idx, val, strict=True):
            w[j] -= g * x
        w = hard_threshold(w, K)
        if check is not None:
            check(w)
    return w, preds


# ---- mini-batches and the stochastic subgradient step (Dhingra et al., Algs. 3-4) ----


def minibatch(stream: Stream, loss_id: int, eta0, power_t, t0, B, reg="none", g=0.0,
              theta=np.inf, K=1):  # fmt: skip
    """Dense mini-batch learner: B learned examples predicted with the same weights, then

    z = (1/b) Σ a_i ∂ℓ_i x_i,  η = rate(t) with t the step count (T_0 = 0), and

    ``reg="none"``:     w ← w − η z
    ``reg="truncate"``: w ← w − η z, then T1(w, η K g, θ) on every weight every K-th step
    ``reg="subgrad"``:  w ← w − η (z + g sgn(w))   (eq. 14-15; sgn(0) = 0)

    The last, partial mini-batch takes its step at the end (b < B).
    Returns (weights, predictions).
    """
    w = np.zeros(stream.d)
    preds = np.full(stream.n, np.nan)
    z = np.zeros(stream.d)
    b = 0
    steps = 0

    def step():
        nonlocal z, b, steps
        steps += 1
        eta = rate_np(eta0, power_t, t0, float(steps))
        if reg == "subgrad":
            w[:] = w - (eta / b) * z - eta * g * np.sign(w)
        else:
            w[:] = w - (eta / b) * z
            if reg == "truncate" and g != 0.0 and steps % K == 0:
                truncate(w, eta * K * g, theta)
        z = np.zeros(stream.d)
        b = 0

    for idx, val, y, p, a in learned(stream, loss_id, w, preds):
        np.add.at(z, idx, a * dloss_np(loss_id, p, y) * val)
        b += 1
        if b == B:
            step()
    if b:
        step()
    return w, preds


# ---- one-against-all (VW's --oaa K over gd or ftrl) -----------------------------


class _GDModel:
    """One binary sub-problem of VW's gd, dense: its weights v, adaptive sums G, largest
    |x| m and normalizer sums S, W (the global gravity, contraction, clock and the last
    normalizer μ live in ``shared``, as in VW's shared data)."""

    def __init__(self, A, d, t0, adaptive, first):
        f = A.f
        self.A = A
        self.v = np.zeros(d, dtype=f)
        self.G = np.full(d, t0 if adaptive else 0.0, dtype=f)
        self.m = np.zeros(d, dtype=f)
        # VW starts only the first model's normalizer at t0 (gd_per_model_states[0])
        self.S = self.W = float(f(t0)) if t0 > 0 and first else 0.0


class VWIndexing:
    """VW's ``oaa.cc`` on how labels number the classes: ``indexing`` 0 (0..K-1), 1 (1..K)
    or None (VW's 2: not known, predicted as 1..K; ``learn`` of a label 0 makes it 0 and
    of a label K makes it 1, for good).  ``learn`` returns each class's binary label:
    +1 where the label equals the class's number (``c`` or ``c + 1``), else -1."""

    def __init__(self, indexing, k):
        self.i = 2 if indexing is None else indexing
        self.k = k

    def shown(self, best):
        return best if self.i == 0 else best + 1

    def learn(self, y):
        if self.i == 2 and y == 0:
            self.i = 0
        elif self.i == 2 and y == self.k:
            self.i = 1
        return [1.0 if y == (c if self.i == 0 else c + 1) else -1.0 for c in range(self.k)]


class VWClassesGD:
    """VW's gd under a reduction over K classes, dense: K binary sub-problems (:class:`_GDModel`)
    sharing VW's global state (gravity, contraction, clock ``T``, normalizer μ) and its
    prediction range ``lo, hi``.  The reductions (``--oaa``, ``--multilabel_oaa``,
    ``--csoaa``) differ in which class learns what, and when the range widens."""

    def __init__(self, d, loss_id, k, eta0=0.5, power_t=0.5, t0=0.0, l1=0.0, l2=0.0,
                 adaptive=True, normalized=True, invariant=True, dt=np.float32):
        self.A = A = Arith(dt)
        self.f = f = A.f
        self.dt = dt
        self.loss_id = loss_id
        self.adaptive, self.normalized, self.invariant = adaptive, normalized, invariant
        self.l1, self.l2, self.t0 = l1, l2, t0
        self.models = [_GDModel(A, d, t0, adaptive, c == 0) for c in range(k)]
        self.shared = {"g": 0.0, "c": 1.0, "mu": f(1.0), "T": 0.0}
        self.q = q = f(power_t)
        self.nq = q - f(1.0) if adaptive or q != f(0.5) else f(-1.0)
        self.eta = f(eta0)
        if not adaptive and not normalized:
            self.eta = self.eta * A.pow(f(t0), q)
        edge = 50.0 if loss_id == 1 else 0.0
        self.lo, self.hi = -edge, edge

    def rows(self, stream):
        """The stream's well-formed rows: (i, feature indices, values in the run's float)."""
        for i in range(stream.n):
            if stream.status[i] == 0:
                idx, val = stream.row(i)
                yield i, idx, val.astype(self.dt)

    def widen(self, *ys):
        self.lo, self.hi = min([self.lo, *ys]), max([self.hi, *ys])

    def clip(self, p):
        return min(max(float(p), self.lo), self.hi)

    def trunc(self, vj):
        f = self.f
        g = f(self.shared["g"])
        return vj - (f(-1.0) if vj <= 0 else f(1.0)) * g if g < abs(vj) else f(0.0)

    def score(self, c, base, idx, x):
        """Class c's score (truncated weights, times the contraction), not clipped."""
        f = self.f
        raw = f(base)
        for j, xj in zip(idx, x, strict=True):
            raw = raw + self.trunc(self.models[c].v[j]) * xj
        return float(raw * f(self.shared["c"]))

    def _rate(self, mod, j):
        A, f = self.A, self.f
        r = f(1.0)
        if self.adaptive:
            r = A.pow(mod.G[j], -self.q)
        if self.normalized:
            r = r * A.pow(mod.m[j] * mod.m[j], self.nq)
        return r

    def step(self, c, idx, x, p, y, a):
        """Class c learns label y from its prediction p (clipped), importance a."""
        A, f, shared = self.A, self.f, self.shared
        mod = self.models[c]
        p, y = f(p), f(y)
        loss, dl, dl2 = vw_loss_terms(A, self.loss_id, p, y)
        if not loss > 0:
            return
        gamma = f(a) * dl2
        if not self.adaptive and not self.normalized:
            ppu = f(0.0)
            for xj in x:
                ppu = ppu + xj * xj
        else:
            ppu, nx = f(0.0), f(0.0)
            for j, xj in zip(idx, x, strict=True):
                x2 = max(xj * xj, f(1.084202e-19) * f(1.084202e-19))
                ax = A.sqrt(x2) if x2 > xj * xj else abs(xj)
                if self.adaptive:
                    mod.G[j] = mod.G[j] + gamma * x2
                if self.normalized:
                    if ax > mod.m[j]:
                        if mod.m[j] > 0:
                            mod.v[j] = mod.v[j] * A.pow((ax / mod.m[j]) * (ax / mod.m[j]),
                                                        self.nq)
                        mod.m[j] = ax
                    nx = nx + x2 / (mod.m[j] * mod.m[j])
                ppu = ppu + x2 * self._rate(mod, j)
            if self.normalized:
                mod.S += float(f(a)) * float(nx)
                mod.W += float(f(a))
                shared["mu"] = A.pow(f(mod.S) / f(mod.W), self.nq)
                ppu = ppu * shared["mu"]
        s = self.eta * f(a)
        if not self.adaptive:
            s = s * A.pow(f(f(self.t0) + shared["T"]), -self.q)
        u = vw_step(A, self.loss_id, p, y, s, ppu, self.invariant)
        if (self.l1 > 0 or self.l2 > 0) and abs(float(u)) > 1e-8:
            eta_bar = -float(u) / float(dl) if abs(float(dl)) > 1e-8 else 0.0
            if abs(float(dl)) > 1e-8:
                shared["c"] *= 1.0 - float(f(self.l2)) * eta_bar
            u = u / f(shared["c"])
            shared["g"] += eta_bar * float(f(self.l1))
        if self.normalized:
            u = u * shared["mu"]
        for j, xj in zip(idx, x, strict=True):
            adapt = self.adaptive or self.normalized
            mod.v[j] = mod.v[j] + u * (xj * self._rate(mod, j) if adapt else xj)
        if shared["c"] < 1e-9 or shared["g"] > 1e3:  # settle every class's weights
            for other in self.models:
                other.v = np.array([self.trunc(vj) * f(shared["c"]) for vj in other.v],
                                   dtype=self.dt)
            shared["g"], shared["c"] = 0.0, 1.0

    def weights(self):
        """Every class's weights as read at the end: [K, d]."""
        f = self.f
        return np.array([[float(self.trunc(vj) * f(self.shared["c"])) for vj in mod.v]
                         for mod in self.models])


def oaa_gd(stream, loss_id, k, eta0=0.5, power_t=0.5, t0=0.0, l1=0.0, l2=0.0, adaptive=True,
           normalized=True, invariant=True, dt=np.float32, indexing=None):
    """VW's ``--oaa K`` over its gd, dense: K binary problems (class c learns +1 when the
    label is c + 1, else -1), each a :func:`vw_gd` of its own, sharing VW's global state.

    The K scores are clipped to the range as it was before the example (VW predicts all
    classes first, then each class's label widens the range), the class is the first
    largest score; every class learns from the score it predicted.  Labels are 0..K or
    NaN, read as :class:`VWIndexing` says.  Returns (weights[K, d] as read at the end,
    scores[n, K], classes[n]).
    """
    numbering = VWIndexing(indexing, k)
    gd = VWClassesGD(stream.d, loss_id, k, eta0, power_t, t0, l1, l2, adaptive, normalized,
                     invariant, dt)
    scores = np.full((stream.n, k), np.nan)
    classes = np.full(stream.n, np.nan)
    for i, idx, x in gd.rows(stream):
        y = stream.labels[i]
        a = stream.weights[i]
        for c in range(k):
            scores[i, c] = gd.clip(gd.score(c, stream.bases[i], idx, x))
        classes[i] = numbering.shown(int(np.argmax(scores[i])))
        if np.isnan(y):
            continue
        targets = numbering.learn(y)
        gd.widen(*targets)
        if a == 0:
            continue
        gd.shared["T"] += a
        for c in range(k):
            gd.step(c, idx, x, scores[i, c], targets[c], a)
    return gd.weights(), scores, classes


def multilabel_gd(stream, label_lists, loss_id, k, dt=np.float32, **options):
    """VW's ``--multilabel_oaa K`` over its gd, dense (``multilabel_oaa.cc``): for each
    learned example (``label_lists[i]``: its classes, increasing; None: unlabeled), class
    c = 0..K-1 in turn learns +1 when it is listed, else -1: the label widens the range,
    gd predicts clipped to it and learns from that prediction.  A class is predicted when
    its clipped score is above 0.  Returns (weights[K, d], scores[n, K], predicted[n, K])."""
    gd = VWClassesGD(stream.d, loss_id, k, dt=dt, **options)
    scores = np.full((stream.n, k), np.nan)
    predicted = np.zeros((stream.n, k), dtype=bool)
    for i, idx, x in gd.rows(stream):
        given = label_lists[i]
        if given is not None:
            gd.shared["T"] += 1.0
        for c in range(k):
            if given is not None:
                y = 1.0 if c in given else -1.0
                gd.widen(y)
            scores[i, c] = gd.clip(gd.score(c, stream.bases[i], idx, x))
            if given is not None:
                gd.step(c, idx, x, scores[i, c], y, 1.0)
            predicted[i, c] = scores[i, c] > 0.0
    return gd.weights(), scores, predicted


def csoaa_gd(stream, costs, loss_id, k, dt=np.float32, **options):
    """VW's ``--csoaa K`` over its gd, dense (``csoaa.cc``): a learned example's classes
    (``costs[i]``: (class 1..K, cost) in the line's order; cost None: not learned; an empty
    list: a test example, every class scored) each regress toward their cost: the cost
    widens the range, gd learns from the clipped score.  The predicted class is the first
    lowest unclipped score among those listed (a test example's: the first lowest of all,
    unclipped too: VW's csoaa asks multipredict not to finalize).  Returns (weights[K, d],
    classes[n])."""
    gd = VWClassesGD(stream.d, loss_id, k, dt=dt, **options)
    classes = np.full(stream.n, np.nan)
    for i, idx, x in gd.rows(stream):
        listed = costs[i]
        if not listed:
            s = [gd.score(c, stream.bases[i], idx, x) for c in range(k)]  # (not clipped)
            classes[i] = 1 + int(np.argmin(s))
            continue
        best, counted = None, False
        for cl, cost in listed:
            if cost is not None:
                gd.widen(cost)
            p = gd.score(cl - 1, stream.bases[i], idx, x)
            if best is None or p < best[0] or (p == best[0] and cl < best[1]):
                best = (p, cl)
            if cost is None:
                continue
            if not counted:
                counted = True
                gd.shared["T"] += 1.0
            gd.step(cl - 1, idx, x, gd.clip(p), cost, 1.0)
        classes[i] = best[1]
    return gd.weights(), classes


def oaa_ftrl(stream, loss_id, k, alpha=0.5, beta=1.0, l1=0.0, l2=0.0, dt=np.float32,
             indexing=None):
    """VW's ``--oaa K`` over its ftrl, dense: K independent :func:`ftrl` problems; each
    class learns by predicting again within the range its label has just widened (VW's
    ftrl has no separate update); labels as :class:`VWIndexing` reads them.  Returns
    (weights[K, d], scores[n, K], classes[n])."""
    numbering = VWIndexing(indexing, k)
    A = Arith(dt)
    f = A.f
    d = stream.d
    w, z, n = (np.zeros((k, d), dtype=dt) for _ in range(3))
    edge = 50.0 if loss_id == 1 else 0.0
    lo, hi = -edge, edge
    scores = np.full((stream.n, k), np.nan)
    classes = np.full(stream.n, np.nan)
    for i in range(stream.n):
        if stream.status[i] != 0:
            continue
        idx, val = stream.row(i)
        x = val.astype(dt)
        y = stream.labels[i]
        a = stream.weights[i]
        raw = np.zeros(k, dtype=dt)
        for c in range(k):
            raw[c] = f(stream.bases[i])
            for j, xj in zip(idx, x, strict=True):
                raw[c] = raw[c] + w[c, j] * xj
            scores[i, c] = min(max(float(raw[c]), lo), hi)
        classes[i] = numbering.shown(int(np.argmax(scores[i])))
        if np.isnan(y):
            continue
        targets = numbering.learn(y)
        for c in range(k):
            yc = targets[c]
            lo, hi = min(lo, yc), max(hi, yc)
            if a == 0:
                continue
            p = f(min(max(float(raw[c]), lo), hi))
            g = vw_loss_terms(A, loss_id, p, f(yc))[1] * f(a)
            for j, xj in zip(idx, x, strict=True):
                gj = g * xj
                sigma = (A.sqrt(n[c, j] + gj * gj) - A.sqrt(n[c, j])) / f(alpha)
                z[c, j] = z[c, j] + (gj - sigma * w[c, j])
                n[c, j] = n[c, j] + gj * gj
                if abs(z[c, j]) <= f(l1):
                    w[c, j] = 0.0
                else:
                    eta_inv = (f(beta) + A.sqrt(n[c, j])) / f(alpha) + f(l2)
                    w[c, j] = -(z[c, j] - np.sign(z[c, j]) * f(l1)) / eta_inv
    return w.astype(np.float64), scores, classes
