"""newGLMNET (``cd --loss logistic``): liblinear's optimum, KKT conditions, kernels against
dense numpy.

The optimum comes from scikit-learn's liblinear (``LogisticRegression(penalty='l1',
solver='liblinear')``, ``C = 1/(l1 W)``: liblinear's objective is F/l1), and where
liblinear has no counterpart (ℓ2, bases) from the first ``cd`` (one coordinate at a
time with a line search, ``active_set=False``) run to its floor, and the KKT
conditions computed densely.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.learners import glmnet
from tests.learners.test_cd import columns_of, objective, run_fit, write
from tests.unix import invoke

sklearn = pytest.importorskip("sklearn")
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402


def problem(seed, n=300, d=40, constant=False, weights=False):
    """A random sparse problem: a few frequent 0/1 columns (correlated, as one-hot data
    are), sparse Gaussian ones, labels from a sparse logistic model."""
    rng = np.random.default_rng(seed)
    density = rng.uniform(0.05, 0.4)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < density)
    X[:, :4] = rng.random((n, 4)) < rng.uniform(0.2, 0.8, 4)
    w_true = rng.normal(size=d) * (rng.random(d) < 0.4) * 2
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ w_true)), 1.0, -1.0)
    if constant:
        X = np.hstack([X, np.ones((n, 1))])
    a = rng.choice([0.5, 1.0, 2.0, 3.0], size=n) if weights else np.ones(n)
    return X, y, a


def l1_max(X, y, a):
    """The smallest l1 whose optimum is w = 0 (margins 0: ℓ' = −y/2)."""
    return float(np.abs(X.T @ (a * -y / 2)).max() / a.sum())


def kkt(X, y, w, l1, l2, a, base=None):
    """(Σ_j v_j, v(0)'s sum): the min-norm subgradient's ℓ1 norm at w and at 0."""

    def norm(w):
        p = X @ w + (0.0 if base is None else base)
        s = 1 / (1 + np.exp(y * p))
        g = X.T @ (a * -y * s) / a.sum() + l2 * w
        v = np.where(w == 0, np.maximum(np.abs(g) - l1, 0), np.abs(g + l1 * np.sign(w)))
        return float(v.sum())

    return norm(w), norm(np.zeros_like(w))


def liblinear(X, y, l1, a, tol=1e-10):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the penalty= spelling is deprecated in sklearn 1.8
        sk = LogisticRegression(penalty="l1", C=1 / (l1 * a.sum()), fit_intercept=False,
                                solver="liblinear", tol=tol, max_iter=1000)  # fmt: skip
        sk.fit(X, y, sample_weight=a)
    return sk.coef_.ravel()


PATHS = {  # how the inner cycles run (module constants of streamlearn.learners.glmnet)
    "default": {},
    "residuals": {"GRAM_COLUMNS": 0},
    "covariance": {"GRAM_PAYBACK": 10**9},  # switch after the first cycle
}


@pytest.fixture
def count_gram(monkeypatch):
    calls = []
    real = glmnet.gram_qp

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(glmnet, "gram_qp", counted)
    return calls


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("seed", range(8))
def test_equals_liblinear(monkeypatch, count_gram, path, seed):
    """Default tol: within 1e-7 of liblinear's optimum, the stopping rule met densely."""
    constant, weights = seed % 2 == 1, seed % 4 >= 2
    X, y, a = problem(seed, constant=constant, weights=weights)
    for name, value in PATHS[path].items():
        monkeypatch.setattr(glmnet, name, value)
    l1 = l1_max(X, y, a) * (0.02 if seed % 3 else 0.2)
    data = columns_of(X, y, a)
    w, res = run_fit(data, X.shape[1], "logistic", l1=l1, tol=1e-7)
    F = objective("logistic", X, y, w, l1, 0.0, a)
    F_lib = objective("logistic", X, y, liblinear(X, y, l1, a), l1, 0.0, a)
    assert res.converged and F == pytest.approx(res.objective, rel=1e-12)
    assert abs(F - F_lib) <= 1e-7 * F_lib
    v, v0 = kkt(X, y, w, l1, 0.0, a)
    assert v <= 1e-7 * v0 * (1 + 1e-6)
    assert res.epochs[-1]["sweep"] == "full" and res.epochs[-1]["kkt"] <= 1e-7
    assert 0 < np.count_nonzero(w) < X.shape[1]
    if path == "residuals":
        assert not count_gram
    if path == "covariance":
        assert count_gram


@pytest.mark.parametrize("seed", range(4))
def test_tight_tol_beats_liblinear(seed):
    """At --tol 1e-12 F is at or below liblinear's at its tightest (its optimum to rounding)."""
    X, y, a = problem(100 + seed, n=400, d=60, weights=True)
    l1 = l1_max(X, y, a) * 0.01
    w, res = run_fit(columns_of(X, y, a), X.shape[1], "logistic", l1=l1, tol=1e-12)
    F = objective("logistic", X, y, w, l1, 0.0, a)
    F_lib = objective("logistic", X, y, liblinear(X, y, l1, a), l1, 0.0, a)
    assert res.converged and F <= F_lib * (1 + 1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_elastic_net_bases_and_unlabeled(seed):
    """ℓ2, bases and unlabeled rows (no liblinear counterpart): the first cd, to its floor,
    agrees, and the KKT conditions hold densely."""
    X, y, a = problem(200 + seed, weights=True)
    rng = np.random.default_rng(seed)
    base = rng.normal(size=len(y)) * 0.3
    labels = y.copy()
    labels[rng.random(len(y)) < 0.1] = np.nan  # unlabeled: weigh nothing
    l1, l2 = l1_max(X, y, a) * 0.03, 0.05
    data = columns_of(X, labels, a, base)
    w, res = run_fit(data, X.shape[1], "logistic", l1=l1, l2=l2, tol=1e-9)
    w_ref, _ = run_fit(columns_of(X, labels, a, base), X.shape[1], "logistic", l1=l1, l2=l2,
                       tol=1e-15, active_set=False)  # fmt: skip
    keep = ~np.isnan(labels)
    Xk, yk, ak, bk = X[keep], y[keep], a[keep], base[keep]
    F = objective("logistic", Xk, yk, w, l1, l2, ak, bk)
    F_ref = objective("logistic", Xk, yk, w_ref, l1, l2, ak, bk)
    assert res.converged and F == pytest.approx(res.objective, rel=1e-12)
    assert F <= F_ref * (1 + 1e-10)
    v, v0 = kkt(Xk, yk, w, l1, l2, ak, bk)
    assert v <= 1e-9 * v0 * (1 + 1e-6)


def test_no_penalty_and_zero_solution():
    """l1 = l2 = 0 on non-separable data: the unregularised optimum (gradient zero), and
    below the rounding floor (F no longer measurably lower) a stop that says converged;
    l1 above l1_max: w = 0 after one sweep."""
    X, y, a = problem(7, n=500, d=10)
    w, res = run_fit(columns_of(X, y, a), X.shape[1], "logistic", tol=1e-8)
    v, v0 = kkt(X, y, w, 0.0, 0.0, a)
    assert res.converged and v <= 1e-8 * v0 * (1 + 1e-6)
    w, res = run_fit(columns_of(X, y, a), X.shape[1], "logistic", tol=1e-14)
    v, v0 = kkt(X, y, w, 0.0, 0.0, a)
    assert res.converged and v <= 1e-8 * v0 and len(res.epochs) < 1000
    w, res = run_fit(columns_of(X, y, a), X.shape[1], "logistic", l1=1.01 * l1_max(X, y, a))
    assert res.converged and not w.any() and len(res.epochs) == 1


# ---- the CLI: defaults, the cap, warm starts --------------------------------------------


@pytest.fixture(scope="module")
def cancer_file(tmp_path_factory):
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = np.where(y == 1, 1.0, -1.0)
    return write(tmp_path_factory.mktemp("cancer") / "d.vw", X, y), X, y


def train(tmp_path, data, name, *args):
    m, rep = tmp_path / f"{name}.sl", tmp_path / f"{name}.json"
    r = invoke(["train", str(data), "--algo", "cd", "--loss", "logistic", "--l1", "0.003",
                "-b", "6", "--noconstant", "-f", str(m), "--report", str(rep), *args])
    assert r.exit_code == 0, r.output
    model = model_io.load(m)
    w = np.zeros(64)
    w[model.slots.astype(int)] = model.weights
    return w[:30], json.loads(rep.read_text()), r.output


def test_cli_defaults_cap_and_warm_start(tmp_path, cancer_file):
    data, X, y = cancer_file
    l1 = 0.003
    w, rep, _ = train(tmp_path, data, "cold")
    F_lib = objective("logistic", X, y, liblinear(X, y, l1, np.ones(len(y))), l1, 0.0)
    assert rep["converged"] and abs(rep["objective"] - F_lib) <= 1e-7 * F_lib
    full = [e for e in rep["epochs"] if e["sweep"] == "full"]
    assert full[-1]["kkt"] <= 1e-7 < full[-2]["kkt"] and len(rep["epochs"]) < 10_000
    # the cap: a run stopped by --passes says so, and -i carries on to the same optimum
    _, short, out = train(tmp_path, data, "short", "--passes", "3")
    assert not short["converged"] and len(short["epochs"]) == 3
    assert "note: stopped after 3 sweeps, the minimum-norm subgradient still above" in out
    assert "stopped at --passes" in out
    w2, rep2, _ = train(tmp_path, data, "resumed", "-i", str(tmp_path / "short.sl"))
    assert rep2["converged"] and abs(rep2["objective"] - rep["objective"]) <= 1e-9 * F_lib
    v, v0 = kkt(X, y, w2, l1, 0.0, np.ones(len(y)))
    assert v <= 1e-7 * v0 * (1 + 1e-6)  # relative to v at w = 0, not at the warm start
    # from the optimum: one gradient pass finds the rule met, the weights stay
    w3, rep3, _ = train(tmp_path, data, "again", "-i", str(tmp_path / "cold.sl"))
    assert rep3["converged"] and len(rep3["epochs"]) == 1
    np.testing.assert_array_equal(w3, w)


def test_cli_help_documents_tol():
    out = invoke(["train", "--help"]).output
    assert "minimum-norm subgradient" in out and "duality gap" in out


# ---- kernels against dense numpy ----------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    X, y, a = problem(11, n=120, d=15, weights=True)
    rng = np.random.default_rng(0)
    p = rng.normal(size=len(y))
    return columns_of(X, y, a), X, y, a, p


def test_row_terms_and_outer(small):
    data, X, y, a, p = small
    c = a / a.sum()
    g, h = np.empty(len(y)), np.empty(len(y))
    L = glmnet.row_terms(y, c, p, g, h)
    s = 1 / (1 + np.exp(y * p))
    assert L == pytest.approx(c @ np.logaddexp(0, -y * p), rel=1e-13)
    np.testing.assert_allclose(g, -c * y * s, rtol=1e-13)
    np.testing.assert_allclose(h, c * s * (1 - s), rtol=1e-12)
    d = X.shape[1]
    w = np.zeros(d)
    w[[1, 5, 9]] = [0.3, -0.2, 0.1]
    l1, l2, nu = 0.01, 0.02, 1e-14
    grad, hdiag, index = np.full(d, np.nan), np.full(d, np.nan), np.zeros(d, np.int64)
    G = X.T @ g + l2 * w
    v = np.where(w == 0, np.maximum(np.abs(G) - l1, 0), np.abs(G + l1 * np.sign(w)))
    H = (X**2).T @ h + l2 + nu
    k, gmax, gnorm = glmnet.outer(data.colptr, data.rows, data.vals, g, h, w, l1, l2, nu, np.inf,
                                  grad, hdiag, index)  # fmt: skip
    assert k == d and gnorm == pytest.approx(v.sum(), rel=1e-12)
    assert gmax == pytest.approx(v.max(), rel=1e-12)
    np.testing.assert_allclose(grad, G, rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(hdiag, H, rtol=1e-12)
    # outer shrinking: zero weights with |G| < l1 − bound sit out; H only where kept
    bound = 0.5 * l1
    k, _, _ = glmnet.outer(data.colptr, data.rows, data.vals, g, h, w, l1, l2, nu, bound, grad,
                           hdiag, index)  # fmt: skip
    out = (w == 0) & (np.abs(G) < l1 - bound)
    assert out.any() and sorted(index[:k]) == np.flatnonzero(~out).tolist()


def test_cycles_with_and_without_covariance_updates(small):
    """One cycle of qp_cycle (residuals) and of gram_qp (covariance) take the same steps,
    and both leave the model's gradient and Xd current; the Hessian equals X_Aᵀ diag(h) X_A."""
    data, X, y, a, p = small
    n, d = X.shape
    c = a / a.sum()
    g, h = np.empty(n), np.empty(n)
    glmnet.row_terms(y, c, p, g, h)
    w = np.zeros(d)
    w[[0, 3, 7]] = [0.4, -0.3, 0.2]
    l1, ridge = 0.004, 0.01
    grad = X.T @ g + ridge * w
    hdiag = (X**2).T @ h + ridge
    cols = np.array([7, 0, 12, 3, 5, 1, 9], np.int64)
    # residual cycle over cols, in that order
    index, wpd, q = cols.copy(), w.copy(), np.zeros(n)
    m, _, gnorm = glmnet.qp_cycle(index, cols.size, data.colptr, data.rows, data.vals, h, grad,
                                  hdiag, w, wpd, q, l1, ridge, np.inf,
                                  np.empty(d, np.int64))  # fmt: skip
    assert m == cols.size and gnorm > 0
    np.testing.assert_allclose(q, X @ (wpd - w), rtol=1e-12, atol=1e-15)
    # the Hessian from a row-major copy of a superset of the columns
    superset = np.array([0, 1, 3, 4, 5, 7, 9, 12, 14], np.int64)
    start, where, value = glmnet.row_major(superset, data.colptr, data.rows, data.vals, n)
    pos = np.full(superset.size, -1, np.int64)
    pos[np.searchsorted(superset, cols)] = np.arange(cols.size)
    Q = glmnet.hessian(start, where, value, h, pos, cols.size)
    XA = X[:, cols]
    np.testing.assert_allclose(Q, (XA.T * h) @ XA, rtol=1e-12, atol=1e-17)
    # covariance cycle over the same columns: the same order is the identity permutation
    # only when the shuffle keeps it, so compare against qp_cycle run in gram_qp's order
    v = w[cols].copy()
    gm = grad[cols].copy()
    order = np.arange(cols.size, dtype=np.int64)
    visited = np.zeros(1, np.int64)
    cycles, _ = glmnet.gram_qp(Q, gm, v, hdiag[cols], order, cols.size, l1, ridge, 0.0, n,
                               np.inf, 1, 12345, visited, np.empty(cols.size, np.int64))
    assert cycles == 1 and visited[0] == cols.size
    index, wpd2, q2 = cols[order].copy(), w.copy(), np.zeros(n)  # order: the shuffle it used
    glmnet.qp_cycle(index, cols.size, data.colptr, data.rows, data.vals, h, grad, hdiag, w,
                    wpd2, q2, l1, ridge, np.inf, np.empty(d, np.int64))  # fmt: skip
    np.testing.assert_allclose(v, wpd2[cols], rtol=1e-11, atol=1e-15)
    dA = v - w[cols]
    np.testing.assert_allclose(gm, grad[cols] + Q @ dA + ridge * dA, rtol=1e-10, atol=1e-15)


def test_line_search_is_exact(small):
    """The accepted change equals F(w + λd) − F(w) computed densely, with λ the largest
    halving that meets Armijo's rule."""
    data, X, y, a, _ = small
    n, d = X.shape
    c = a / a.sum()
    w = np.zeros(d)
    w[[2, 6]] = [0.5, -0.25]
    p = X @ w
    wpd = w.copy()
    wpd[[2, 6, 8]] = [0.1, -0.6, 3.0]  # a long step: some halvings
    q = X @ (wpd - w)
    g, h = np.empty(n), np.empty(n)
    glmnet.row_terms(y, c, p, g, h)
    l1, l2 = 0.01, 0.03
    grad = X.T @ g + l2 * w
    index = np.arange(d, dtype=np.int64)
    lam, dF, delta = glmnet.line_search(index, d, w, wpd, grad, q, y, c, p, l1, l2,
                                        glmnet.SIGMA, glmnet.MAX_LINESEARCH)  # fmt: skip

    def F(v):
        return objective("logistic", X, y, v, l1, l2, a)

    dirn = wpd - w
    assert delta == pytest.approx(grad @ dirn + l1 * (np.abs(wpd).sum() - np.abs(w).sum()))
    assert 0 < lam < 1
    assert dF == pytest.approx(F(w + lam * dirn) - F(w), rel=1e-10)
    assert F(w + 2 * lam * dirn) - F(w) > glmnet.SIGMA * 2 * lam * delta
