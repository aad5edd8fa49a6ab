"""VW's ``--OjaNewton`` (:mod:`streamlearn.learners.oja_newton`; the learner's options in
:mod:`streamlearn.reductions.oja_newton`).

The kernel against a dense reference: ``oja_newton.cc`` / Luo et al. (NIPS 2016),
Algorithms 4-5, stated with whole vectors and matrices in float64 (the sketch ``Z`` as a
d×m matrix, ``x`` as a dense vector, the updates of ``K``, ``A``, ``b`` and the explicit
form as matrix products) on random streams over a small table, from the kernel's own
initial sketch (which is checked alone: VW's Box-Muller draws, orthonormal columns) and
VW's rewrite of a large sketch in explicit form.  ``sl vw`` beside VW 9.11.9:
``test_oja_newton_vw.py``.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from streamlearn.config import TrainConfig
from streamlearn.learners import oja_newton as K
from streamlearn.learners.base import new_rows, new_stats
from streamlearn.learners.explore import _A, _C, _MANTISSA, _SHIFT, _ULP
from streamlearn.learners.losses import SQUARED
from streamlearn.reductions import oja_newton as reduction
from streamlearn.run.runner import run_kernel
from tests.streams import Stream

F = np.float32
BITS = 6
PLAIN = {"adaptive": False, "normalized": False, "invariant": False}


def stream(seed: int, n: int = 80, d: int = 1 << BITS, scale: float = 1.0) -> Stream:
    """Rows of 1-6 distinct features, random values, labels in [-1, 2] (times ``scale``)
    with some unlabeled rows and some weights 0 or 2; the constant last."""
    rng = random.Random(seed)
    ptr, idx, val, lab, wt = [0], [], [], [], []
    for _ in range(n):
        for j in rng.sample(range(d - 1), rng.randint(1, 6)):
            idx.append(j)
            val.append(float(F(rng.uniform(-1.5, 1.5))))
        idx.append(d - 1)
        val.append(1.0)
        ptr.append(len(idx))
        lab.append(np.nan if rng.random() < 0.05 else round(rng.uniform(-1, 2) * scale, 3))
        wt.append(rng.choice([1.0, 1.0, 1.0, 2.0, 0.0]))
    n = len(lab)
    return Stream(np.array(ptr, dtype=np.int64), np.array(idx, dtype=np.uint32),
                  np.array(val, dtype=np.float32), np.array(lab), np.array(wt), np.zeros(n),
                  np.zeros(n, dtype=np.int64), d)  # fmt: skip


class Reference:
    """Sketched online Newton with Oja's sketch in its implicit form, dense and in float64:
    ``w = w̄ + Z·(D∘b)``, ``Z_sketch = A·diag(D)·Zᵀ``; the epoch's examples update the sketch
    one by one, then A is made K-orthonormal, then w̄ and b step."""

    def __init__(self, table: np.ndarray, m: int, epoch: int, alpha: float, rate: float,
                 normalize: bool) -> None:  # fmt: skip
        t = table.astype(np.float64)
        self.w, self.Z, self.n = t[:, 0].copy(), t[:, 1 : m + 1].copy(), t[:, m + 1].copy()
        self.m, self.epoch, self.alpha, self.rate, self.normalize = m, epoch, alpha, rate, normalize
        self.A, self.K = np.eye(m), np.eye(m)
        self.b, self.D, self.ev = np.zeros(m), np.ones(m), np.zeros(m)
        self.t, self.buffer, self.explicit = 1, [], 0
        self.lo = self.hi = 0.0

    def scaled(self, x: np.ndarray) -> np.ndarray:
        return x / np.sqrt(self.n) if self.normalize else x

    def score(self, x: np.ndarray) -> float:
        xs = self.scaled(x)
        return float(self.w @ xs + (self.Z.T @ xs) @ (self.D * self.b))

    def step(self, x: np.ndarray, y: float, a: float) -> float:
        """Predict (the range before ``y``: what VW shows), learn (the range with it)."""
        raw = self.score(x)
        shown = min(max(raw, self.lo), self.hi)
        if y != y:
            return shown
        self.lo, self.hi = min(self.lo, y), max(self.hi, y)
        p = min(max(raw, self.lo), self.hi)
        g = 2.0 * (p - y) * a / 2.0  # (VW: the derivative of (p - y)², halved)
        if self.normalize:
            self.n += (x * g) ** 2
        self.buffer.append((x, g / 2.0))
        if len(self.buffer) == self.epoch:
            for xk, sc in self.buffer:
                self.sketch(xk, sc)
            self.buffer = []
            self.orthonormalize()
        xs = self.scaled(x)
        zx = self.D * (self.Z.T @ xs)
        self.w -= g * xs / self.alpha
        azx = self.A @ zx
        self.b += g * (self.A.T @ (self.ev * azx / (self.alpha * (self.alpha + self.ev))))
        self.make_explicit()
        return shown

    def sketch(self, x: np.ndarray, sc: float) -> None:
        xs = self.scaled(x)
        zx = self.D * (self.Z.T @ xs)
        azx = self.A @ zx
        gamma = min(self.rate / self.t, 1.0)
        if self.t == 1:
            self.ev = gamma * (azx * sc) ** 2
        else:
            decayed = (1 - gamma) * self.t * self.ev / (self.t - 1)
            self.ev = decayed + gamma * self.t * (azx * sc) ** 2
        delta = gamma * zx * sc
        self.K += (np.outer(delta, zx) + np.outer(zx, delta)) * sc
        self.K += np.outer(delta, delta) * (xs @ xs) * sc * sc
        self.Z += np.outer(xs * sc, delta / self.D)
        self.w -= xs * sc * (delta @ self.b)
        self.t += 1

    def orthonormalize(self) -> None:
        """Row i of A: minus its K-projections on rows 0..i-1, then of K-norm 1."""
        A, Kg = self.A, self.K
        for i in range(self.m):
            zv = A[i, : i + 1] @ Kg[: i + 1, :i]
            vv = np.array([A[j, : j + 1] @ zv[: j + 1] for j in range(i)])
            if i:
                A[i, :i] -= vv @ A[:i, :i]
            a = A[i, : i + 1]
            A[i, : i + 1] /= math.sqrt(a @ Kg[: i + 1, : i + 1] @ a)

    def make_explicit(self) -> None:
        if np.max(np.abs(np.triu(self.K))) < K.EXPLICIT_AT:
            return
        self.explicit += 1
        self.K = self.A @ self.K @ self.A.T
        self.w += self.Z @ (self.b * self.D)
        self.b[:] = 0.0
        self.Z = self.Z @ (self.A * self.D[None, :]).T
        self.A, self.D = np.eye(self.m), np.ones(self.m)


def dense(s: Stream, i: int) -> np.ndarray:
    x = np.zeros(s.d)
    idx, val = s.row(i)
    x[idx.astype(np.int64)] += val
    return x


def words(m: int, epoch: int, alpha: float, rate: float, normalize: bool,
          random_init: bool) -> tuple[str, ...]:  # fmt: skip
    return ("--OjaNewton", "--sketch_size", str(m), "--epoch_size", str(epoch), "--alpha",
            str(alpha), "--learning_rate_cnt", str(rate), "--normalize",
            "true" if normalize else "false", "--random_init", "true" if random_init else "0")


def run(s: Stream, opts: tuple, chunks: int, seed: int = 0):  # noqa: ANN001, ANN201
    """The kernel over ``s`` in ``chunks`` calls: its predictions, final table, and the
    table it started from (VW's initial sketch, drawn as the entry draws it)."""
    config = TrainConfig(stack=words(*opts), bits=BITS, numbers="vw", seed=seed, **PLAIN)
    spec = reduction.spec(config)
    params = config.params()
    table = spec.new_table(BITS)
    gstate = spec.init_gstate(params)
    start = table.copy()
    m, _, _, _, normalize, random_init = opts
    K.initialize(start, np.int64(m), normalize, random_init,
                 np.array([K.get_rng(gstate)], dtype=np.uint64))  # fmt: skip
    stats, rows = new_stats(), new_rows()
    preds = np.empty(s.n)
    cuts = np.linspace(0, s.n, chunks + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        preds[a:b] = run_kernel(spec.train_batch, table, gstate, params, SQUARED,
                                s.slice(a, b), stats, rows, 0)  # fmt: skip
    return preds, table, start


OPTIONS = [
    (10, 1, 1.0, 2.0, True, True),  # VW's defaults
    (3, 4, 1.0, 2.0, True, True),
    (2, 1, 1.0, 2.0, False, False),
    (5, 2, 0.5, 5.0, True, False),
    (4, 3, 2.0, 1.0, False, True),
]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("opts", OPTIONS)
def test_the_kernel_is_the_dense_sketched_newton_step(seed, opts):
    s = stream(seed)
    got, table, start = run(s, opts, chunks=1 + seed, seed=seed)
    m, epoch, alpha, rate, normalize, _ = opts
    ref = Reference(start, m, epoch, float(F(alpha)), float(F(rate)), normalize)
    want = [ref.step(dense(s, i), s.labels[i], s.weights[i]) for i in range(s.n)]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(table[:, 0], ref.w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_a_large_gram_matrix_makes_the_sketch_explicit_keeping_w_and_the_sketch(seed):
    """VW's ``check`` once K passes 1e7: ``K ← AKAᵀ``, ``w̄ ← w̄ + Z(D∘b)``, ``Z ← Z(AD)ᵀ``,
    ``b ← 0``, ``A, D ← I`` (the reference's :meth:`Reference.make_explicit`): what the
    sketch stands for (w and ``A·D·Zᵀ``) does not change.  (Streams that reach it are
    ill-conditioned: float32 and float64 part there, VW's float32 as the kernel's.)"""
    rng = np.random.default_rng(seed)
    m, n = 4, 1 << BITS
    table = rng.normal(size=(n, m + 2)).astype(F)
    mats, vecs = K.fresh_state(m)
    A = np.tril(rng.normal(size=(m, m))) + 3 * np.eye(m)
    G = rng.normal(size=(m, m))
    mats[0, 1:, 1:] = A
    mats[1, 1:, 1:] = G @ G.T + np.eye(m) * (2e7 if seed != 2 else 1.0)
    vecs[K.V_B, 1:] = rng.normal(size=m)
    vecs[K.V_D, 1:] = rng.uniform(0.5, 2.0, size=m)
    ref = Reference(table, m, 1, 1.0, 2.0, False)
    ref.A, ref.K = mats[0, 1:, 1:].astype(np.float64), mats[1, 1:, 1:].astype(np.float64)
    ref.b, ref.D = vecs[K.V_B, 1:].astype(np.float64), vecs[K.V_D, 1:].astype(np.float64)
    w_before = ref.w + ref.Z @ (ref.D * ref.b)
    sketch_before = ref.A @ np.diag(ref.D) @ ref.Z.T
    before = table.copy()
    K.make_explicit(table, mats, vecs, np.int64(m))
    ref.make_explicit()
    if seed == 2:  # (K small: nothing happens)
        assert ref.explicit == 0 and np.array_equal(table, before)
        return
    assert ref.explicit == 1
    np.testing.assert_allclose(table[:, 0], ref.w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(table[:, 1 : m + 1], ref.Z, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mats[1, 1:, 1:], ref.K, rtol=1e-5)
    assert np.array_equal(mats[0, 1:, 1:], np.eye(m)) and np.all(vecs[K.V_D, 1:] == 1.0)
    assert np.all(vecs[K.V_B] == 0.0)
    np.testing.assert_allclose(ref.w + ref.Z @ (ref.D * ref.b), w_before, rtol=1e-9)
    np.testing.assert_allclose(ref.A @ np.diag(ref.D) @ ref.Z.T, sketch_before, atol=1e-9)


def test_the_initial_sketch_is_vw_s_draws_made_orthonormal():
    m, n = 3, 1 << BITS
    table = np.zeros((n, m + 2), dtype=F)
    rng = np.array([7], dtype=np.uint64)
    K.initialize(table, np.int64(m), True, True, rng)
    z = table[:, 1 : m + 1].astype(np.float64)
    np.testing.assert_allclose(z.T @ z, np.eye(m), atol=1e-5)
    assert np.all(table[:, m + 1] == F(0.1))
    # the first column is the first draws normalised: VW's Box-Muller of merand48 from 7
    state, first = 7, []
    for _ in range(n):
        row = []
        for _ in range(m):
            state = (state * int(_A) + int(_C)) % (1 << 64)
            r1 = F((state >> int(_SHIFT)) & int(_MANTISSA)) * _ULP
            state = (state * int(_A) + int(_C)) % (1 << 64)
            r2 = F((state >> int(_SHIFT)) & int(_MANTISSA)) * _ULP
            row.append(math.sqrt(-2.0 * math.log(r1)) * math.cos(K.PI2 * float(r2)))
        first.append(row[0])
    first = np.array(first) / np.linalg.norm(first)
    np.testing.assert_allclose(z[:, 0], first, rtol=1e-5, atol=1e-6)
    assert int(rng[0]) == state
    unit = np.zeros((n, m + 2), dtype=F)
    K.initialize(unit, np.int64(m), False, False, np.zeros(1, dtype=np.uint64))
    assert np.array_equal(unit[1 : m + 1, 1 : m + 1], np.eye(m, dtype=F))
    assert np.count_nonzero(unit) == m
