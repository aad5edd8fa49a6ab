"""Batch coordinate descent (cd, scd) reaches the optimum of its objective (hinge: descends).

The optimum comes from independent solvers: scikit-learn's Lasso/ElasticNet
and liblinear's ℓ1 logistic regression, and for the hinge loss (an LP with
ℓ1) scipy's HiGHS; the objective is the dense numpy formula of the issue.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.run.fit import to_columns
from tests.unix import invoke

sklearn = pytest.importorskip("sklearn")
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.linear_model import ElasticNet, LogisticRegression  # noqa: E402

from tests.paths import ROOT  # noqa: E402


def objective(loss, X, y, w, l1, l2, a=None, base=None):
    a = np.ones(len(y)) if a is None else a
    p = X @ w + (0.0 if base is None else base)
    if loss == "squared":
        terms = (p - y) ** 2
    elif loss == "logistic":
        terms = np.logaddexp(0.0, -y * p)
    else:
        terms = np.maximum(0.0, 1.0 - y * p)
    return float(a @ terms / a.sum() + l1 * np.abs(w).sum() + 0.5 * l2 * w @ w)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return X, np.where(y == 1, 1.0, -1.0)


def write(path, X, y, a=None, base=None):
    with open(path, "w") as f:
        for i, (xi, yi) in enumerate(zip(X, y, strict=True)):
            feats = " ".join(f"{j}:{v:.17g}" for j, v in enumerate(xi) if v != 0)
            head = f"{yi:.17g}"
            if a is not None:
                head += f" {a[i]:.17g}"
            if base is not None:
                head += f" {base[i]:.17g}"
            f.write(f"{head} | {feats}\n")
    return path


def fit(tmp_path, data, *args):
    m, rep = tmp_path / "m.sl", tmp_path / "r.json"
    r = invoke(["train", str(data), "--noconstant", "--quiet", "-f", str(m), "--report", str(rep),
                *args])  # fmt: skip
    assert r.exit_code == 0, r.output
    model = model_io.load(m)
    w = np.zeros(64)
    w[model.slots.astype(int)] = model.weights
    return w[:30], json.loads(rep.read_text())


@pytest.mark.parametrize(("l1", "l2"), [(0.02, 0.0), (0.1, 0.0), (0.02, 0.05)])
def test_cd_squared_equals_sklearn(tmp_path, cancer, l1, l2):
    X, y = cancer
    rng = np.random.default_rng(0)
    a = rng.choice([0.5, 1.0, 2.0], size=len(y))
    base = rng.normal(size=len(y)) * 0.1
    data = write(tmp_path / "d.vw", X, y, a, base)
    w, rep = fit(tmp_path, data, "--algo", "cd", "-b", "6", "--l1", str(l1), "--l2", str(l2),
                 "--tol", "1e-13")  # fmt: skip
    # ours = 2 x sklearn's (1/2W) Σ a (y − base − Xw)² + α ρ |w| + α (1 − ρ)/2 |w|²
    sk = ElasticNet(alpha=(l1 + l2) / 2, l1_ratio=l1 / (l1 + l2), fit_intercept=False,
                    tol=1e-14, max_iter=1_000_000).fit(X, y - base, sample_weight=a)  # fmt: skip
    F = objective("squared", X, y, w, l1, l2, a, base)
    F_sk = objective("squared", X, y, sk.coef_, l1, l2, a, base)
    assert F == pytest.approx(rep["objective"], rel=1e-12)
    assert abs(F - F_sk) <= 1e-9 * F_sk
    assert rep["nonzero_weights"] == np.count_nonzero(w) < 30


@pytest.mark.parametrize("l1", [0.001, 0.01])
def test_cd_logistic_equals_liblinear(tmp_path, cancer, l1):
    X, y = cancer
    data = write(tmp_path / "d.vw", X, y)
    w, rep = fit(tmp_path, data, "--algo", "cd", "--loss", "logistic", "-b", "6", "--l1", str(l1),
                 "--tol", "1e-13")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the penalty= spelling is deprecated in sklearn 1.8
        sk = LogisticRegression(penalty="l1", C=1 / (l1 * len(y)), fit_intercept=False,
                                solver="liblinear", tol=1e-12, max_iter=100_000)  # fmt: skip
        sk.fit(X, y)
    F = objective("logistic", X, y, w, l1, 0.0)
    F_sk = objective("logistic", X, y, sk.coef_.ravel(), l1, 0.0)
    assert F == pytest.approx(rep["objective"], rel=1e-12)
    assert F <= F_sk * (1 + 1e-6)


def test_cd_hinge_against_the_lp(tmp_path, cancer):
    """Hinge + ℓ1 is a linear programme: HiGHS gives the optimum."""
    from scipy.optimize import linprog

    X, y = cancer
    X, y = X[:200], y[:200]
    l1 = 0.01
    data = write(tmp_path / "d.vw", X, y)
    w, rep = fit(tmp_path, data, "--algo", "cd", "--loss", "hinge", "-b", "6", "--l1", str(l1),
                 "--tol", "1e-12")  # fmt: skip
    n, d = X.shape
    # variables: u (d), v (d), xi (n); w = u − v
    c = np.concatenate([np.full(2 * d, l1), np.full(n, 1.0 / n)])
    yx = y[:, None] * X
    A = np.hstack([-yx, yx, -np.eye(n)])  # 1 − y x·(u − v) − xi ≤ 0
    lp = linprog(c, A_ub=A, b_ub=-np.ones(n), bounds=(0, None), method="highs")
    F = objective("hinge", X, y, w, l1, 0.0)
    assert F == pytest.approx(rep["objective"], rel=1e-12)
    # coordinate descent on a non-smooth objective only promises descent: it stops at a
    # point where no single coordinate helps, 12.4% above the optimum here (documented)
    assert lp.fun <= F <= lp.fun * 1.15
    curve = [e["objective"] for e in rep["epochs"]]
    assert all(b <= a for a, b in zip(curve, curve[1:], strict=False))


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_scd_within_1e3(tmp_path, loss):
    """On the shipped sample (8,000 examples, 4,687 hashed features), default passes and tol."""

    data = ROOT / "data" / "sample.vw"
    objectives = []
    for algo in ("cd", "scd"):
        rep = tmp_path / f"{algo}.json"
        r = invoke(["train", str(data), "--algo", algo, "--loss", loss, "--l1", "1e-3",
                    "--quiet", "--report", str(rep), "--tol", "1e-12" if algo == "cd" else "1e-7"])
        assert r.exit_code == 0, r.output
        objectives.append(json.loads(rep.read_text())["objective"])
    F_cd, F = objectives
    assert F_cd * (1 - 1e-9) <= F <= F_cd * (1 + 1e-3)


def test_to_columns_sums_duplicates():
    rng = np.random.default_rng(1)
    n, d = 50, 16
    lengths = rng.integers(0, 6, n)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = rng.integers(0, d, indptr[-1]).astype(np.uint32)
    values = rng.normal(size=indptr[-1])
    dense = np.zeros((n, d))
    for i in range(n):
        np.add.at(dense[i], indices[indptr[i]:indptr[i + 1]], values[indptr[i]:indptr[i + 1]])
    slots, colptr, rows, vals = to_columns(indptr, indices, values)
    back = np.zeros((n, d))
    for c, j in enumerate(slots):
        back[rows[colptr[c]:colptr[c + 1]], j] = vals[colptr[c]:colptr[c + 1]]
    np.testing.assert_allclose(back, dense, rtol=0, atol=1e-15)
    assert (np.diff(slots.astype(int)) > 0).all()


def test_model_is_ordinary_and_continues(tmp_path, cancer):
    X, y = cancer
    data = write(tmp_path / "d.vw", X, y)
    m, m2, rep = tmp_path / "m.sl", tmp_path / "m2.sl", tmp_path / "r.json"
    args = ["--algo", "cd", "--loss", "logistic", "--l1", "0.01", "--quiet"]
    assert invoke(["train", str(data), *args, "-f", str(m)]).exit_code == 0
    p = tmp_path / "p.txt"
    r = invoke(["predict", "-i", str(m), str(data), "-p", str(p), "--quiet"])
    assert r.exit_code == 0, r.output
    assert len(p.read_text().splitlines()) == len(y)
    assert invoke(["inspect", str(m)]).exit_code == 0
    r = invoke(["train", "-i", str(m), str(data), *args, "-f", str(m2), "--report", str(rep)])
    assert r.exit_code == 0, r.output
    epochs = json.loads(rep.read_text())["epochs"]
    assert len(epochs) <= 3  # warm: already at the optimum


def test_refusals(tmp_path, cancer):
    X, y = cancer
    data = write(tmp_path / "d.vw", X, y)
    r = invoke(["train", str(data), "--algo", "cd", "--max-memory", "10k", "--quiet"])
    assert r.exit_code == 8 and "--max-memory" in r.output
    r = invoke(["train", str(data), "--algo", "cd", "-p", str(tmp_path / "p"), "--quiet"])
    assert r.exit_code == 2 and "sl predict" in r.output
    r = invoke(["train", str(data), "--algo", "scd", "--holdout-period", "5", "--quiet"])
    assert r.exit_code == 2
    r = invoke(["train", str(data), "--algo", "cd", "--max-memory", "lots", "--quiet"])
    assert r.exit_code == 2


# ---- the active set, covariance updates and the duality gap (fit.fit called directly) ----


def columns_of(X, y, a=None, base=None):
    """A dense matrix as the in-memory copy ``sl train --algo cd`` works on."""
    from streamlearn.run.fit import Columns

    n, _ = X.shape
    rows, cols = np.nonzero(X)
    indptr = np.searchsorted(rows, np.arange(n + 1))
    slots, colptr, r, v = to_columns(indptr, cols.astype(np.uint32), X[rows, cols])
    a = np.ones(n) if a is None else a
    base = np.zeros(n) if base is None else base
    return Columns(slots, colptr, r, v, y.astype(float), a, base, np.diff(indptr).astype(float))


def run_fit(data, d, loss="squared", **kw):
    from streamlearn.learners import cd
    from streamlearn.learners.base import GSTATE_SIZE, new_stats
    from streamlearn.learners.losses import NAMES
    from streamlearn.run import fit as fit_mod

    table = np.zeros((d, 1))
    opts = {"method": cd.CYCLIC, "l1": 0.0, "l2": 0.0, "passes": 100_000, "tol": 1e-12,
            "seed": 0, "say": lambda s: None} | kw  # fmt: skip
    res = fit_mod.fit(data, table, np.zeros(GSTATE_SIZE), new_stats(), loss_id=NAMES[loss],
                      **opts)  # fmt: skip
    return table[:, 0], res


@pytest.fixture(scope="module")
def wide(cancer):
    """Breast cancer plus 400 sparse 0/1 noise columns: 430 columns, the dense ones most of
    the non-zeros."""
    X, y = cancer
    rng = np.random.default_rng(3)
    noise = (rng.random((len(y), 400)) < 0.05).astype(float)
    return np.hstack([X, noise]), y


@pytest.fixture(scope="module")
def text_like():
    """1,500 rows of ~8 Zipf-distributed columns among 800 (a few frequent, a long tail),
    labels from 15 of them plus noise: a sparse solution, where the active set pays."""
    rng = np.random.default_rng(5)
    n, d = 1500, 800
    X = np.zeros((n, d))
    freq = 1.0 / np.arange(1, d + 1) ** 0.8
    for i in range(n):
        cols = rng.choice(d, size=8, replace=False, p=freq / freq.sum())
        X[i, cols] = rng.lognormal(size=8) * 0.5
    w_star = np.zeros(d)
    w_star[rng.choice(100, size=15, replace=False)] = rng.normal(size=15)
    return X, X @ w_star + 0.3 * rng.normal(size=n)


PATHS = {  # which sweeps cd's squared loss takes (module constants of streamlearn.run.fit)
    "covariance": {},
    "residuals": {"GRAM_COLUMNS": 0, "COVERING": 1.0},
    "every column, gap": {"GRAM_COLUMNS": 0, "COVERING": 0.0},
    "no active set": None,
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize(("l1", "l2"), [(0.02, 0.0), (0.02, 0.05)])
def test_cd_squared_paths_equal_sklearn(monkeypatch, text_like, path, l1, l2):
    """Every way cd can sweep reaches scikit-learn's optimum, importance weights and bases."""
    from streamlearn.run import fit as fit_mod
    X, y = text_like
    rng = np.random.default_rng(0)
    a = rng.choice([0.5, 1.0, 2.0], size=len(y))
    base = rng.normal(size=len(y)) * 0.1
    for name, value in (PATHS[path] or {}).items():
        monkeypatch.setattr(fit_mod, name, value)
    w, res = run_fit(columns_of(X, y, a, base), X.shape[1], l1=l1, l2=l2,
                     active_set=PATHS[path] is not None)  # fmt: skip
    sk = ElasticNet(alpha=(l1 + l2) / 2, l1_ratio=l1 / (l1 + l2), fit_intercept=False,
                    tol=1e-14, max_iter=1_000_000).fit(X, y - base, sample_weight=a)  # fmt: skip
    F = objective("squared", X, y, w, l1, l2, a, base)
    F_sk = objective("squared", X, y, sk.coef_, l1, l2, a, base)
    assert res.converged and F == pytest.approx(res.objective, rel=1e-12)
    assert abs(F - F_sk) <= 1e-9 * F_sk
    active = [e for e in res.epochs if e["sweep"] == "active"]
    full = [e for e in res.epochs if e["sweep"] == "full"]
    if path == "covariance":  # the restricted gap comes free with every covariance sweep
        assert active and all("gap" in e for e in active) and len(full) <= 6
    elif path == "residuals":
        assert len(active) > 3 * len(full) and not all("gap" in e for e in active)
    else:
        assert not active
    if path != "no active set":  # the last full sweep certifies
        assert full[-1]["gap"] <= 1e-12 * F or full[-1]["decrease"] <= 1e-15
    if active:
        assert max(e["columns"] for e in active) < X.shape[1] / 2


def test_duality_gap_bounds_the_suboptimality(wide):
    """gap(w) ≥ F(w) − F* at any w, equals the numpy formula, and vanishes at the optimum."""
    from streamlearn.learners import cd

    X, y = wide
    n, d = X.shape
    l1 = 0.01
    sk = ElasticNet(alpha=l1 / 2, l1_ratio=1.0, fit_intercept=False, tol=1e-14,
                    max_iter=1_000_000).fit(X, y)  # fmt: skip
    F_star = objective("squared", X, y, sk.coef_, l1, 0.0)
    every = np.arange(d, dtype=np.int64)
    rng = np.random.default_rng(1)
    for l2, w in [(0.0, sk.coef_), (0.0, sk.coef_ + rng.normal(size=d) * 0.01),
                  (0.0, np.zeros(d)), (0.1, rng.normal(size=d) * 0.1)]:  # fmt: skip
        r = X @ w - y
        G = 2.0 * X.T @ r / n
        L = float(r @ r / n)
        gap = cd.duality_gap(every, G, w, L, l1, l2)
        F = objective("squared", X, y, w, l1, l2)
        s = min(1.0, l1 / np.abs(G).max())
        excess = np.maximum(s * np.abs(G) - l1, 0.0) @ np.maximum(s * np.abs(G) - l1, 0.0)
        scaled = (1 - s) ** 2 * L + s * G @ w + l1 * np.abs(w).sum() + 0.5 * l2 * w @ w
        if l2 == 0:
            assert gap == pytest.approx(scaled, rel=1e-10, abs=1e-15)
            assert gap >= F - F_star - 1e-15
        else:
            assert gap <= scaled + excess / (2 * l2) * (1 + 1e-12)
            assert gap >= 0
    r = X @ sk.coef_ - y
    gap = cd.duality_gap(every, 2.0 * X.T @ r / n, sk.coef_, float(r @ r / n), l1, 0.0)
    assert 0 <= gap <= 1e-9 * F_star


def test_gram_and_covariance_sweep():
    """Q = (2/W) Xᵀ diag(a) X, built or extended, and a covariance sweep = a residual sweep."""
    from streamlearn.learners import cd
    from streamlearn.learners.losses import SQUARED

    rng = np.random.default_rng(2)
    n, d = 300, 40
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.2)
    y = rng.normal(size=n)
    a = rng.choice([0.5, 1.0, 3.0], size=n)
    data = columns_of(X, y, a)
    inv_w = 1.0 / a.sum()
    cols = np.flatnonzero(np.isin(data.slots, [1, 4, 5, 9, 17, 30])).astype(np.int64)
    dense = 2 * inv_w * (X[:, data.slots[cols]].T * a) @ X[:, data.slots[cols]]
    new = np.full(cols.size, -1)
    Q = cd.gram(cols, new, np.zeros((0, 0)), data.colptr, data.rows, data.vals, a, n, 2 * inv_w)
    np.testing.assert_allclose(Q, dense, rtol=1e-12, atol=1e-15)
    some = cols[[3, 0, 2]]  # an earlier active set, in another order: its Q is reused
    Q3 = cd.gram(some, new[:3], Q, data.colptr, data.rows, data.vals, a, n, 2 * inv_w)
    Qx = cd.gram(cols, np.array([1, -1, 2, 0, -1, -1]), Q3, data.colptr, data.rows, data.vals,
                 a, n, 2 * inv_w)  # fmt: skip
    np.testing.assert_allclose(Qx, dense, rtol=1e-12, atol=1e-15)
    # one sweep over cols both ways, from w = 0 with residuals r = −y
    l1, l2 = 0.01, 0.02
    hsq = cd.column_curvature(data.colptr, data.vals, data.rows, a, inv_w)
    p = -y.copy()
    w = np.zeros(data.slots.size)
    G = np.zeros(data.slots.size)
    cd.gradient(cols, data.colptr, data.rows, data.vals * a[data.rows], p, inv_w, G)
    g, v = G[cols], np.zeros(cols.size)
    dL, _ = cd.gram_epoch(Q, g, v, l1, l2)
    kinks = np.empty(1)
    cd.epoch(cd.CYCLIC, SQUARED, cols, data.colptr, data.rows, data.vals,
             data.vals * a[data.rows], hsq, np.zeros(n), a, p, w, l1, l2, inv_w, kinks, kinks)
    np.testing.assert_allclose(v, w[cols], rtol=1e-12, atol=1e-15)
    assert np.count_nonzero(v) > 2
    cd.gradient(cols, data.colptr, data.rows, data.vals * a[data.rows], p, inv_w, G)
    np.testing.assert_allclose(g, G[cols], rtol=1e-10, atol=1e-14)
    assert dL == pytest.approx(inv_w * (a @ p**2) - inv_w * (a @ y**2), rel=1e-10)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_cd_active_set_other_losses(wide, loss):
    """Logistic and hinge sweep the active set too, and end where every column was swept."""
    X, y = wide
    l1 = 0.01
    w, res = run_fit(columns_of(X, y), X.shape[1], loss, l1=l1, tol=1e-10)
    w_all, res_all = run_fit(columns_of(X, y), X.shape[1], loss, l1=l1, tol=1e-10,
                             active_set=False)  # fmt: skip
    F, F_all = objective(loss, X, y, w, l1, 0.0), objective(loss, X, y, w_all, l1, 0.0)
    assert res.converged and F == pytest.approx(res.objective, rel=1e-12)
    assert res.epochs[-1]["sweep"] == "full"
    assert {e["sweep"] for e in res.epochs} == {"full", "active"}
    curve = [e["objective"] for e in res.epochs]
    assert all(b <= a * (1 + 1e-14) for a, b in zip(curve, curve[1:], strict=False))
    if loss == "logistic":  # both at the optimum
        assert F == pytest.approx(F_all, rel=1e-8)
    else:  # descent only: different stopping points, both a local floor of CD
        assert F <= F_all * 1.05
    visited = sum(e["columns"] for e in res.epochs)
    assert visited < sum(e["columns"] for e in res_all.epochs)
