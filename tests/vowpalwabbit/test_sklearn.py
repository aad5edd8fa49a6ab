"""``streamlearn.vowpalwabbit.sklearn``: VW's scikit-learn estimators over sl's Workspace,
their answers VW 9.11.9's (compared live when VW's package is installed)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from streamlearn.vowpalwabbit import sklearn as slv  # noqa: E402 - after the skip


def _data() -> tuple:
    rng = np.random.default_rng(0)
    X = rng.random((300, 6))  # noqa: N806 - scikit-learn's name
    X[X < 0.4] = 0
    y = np.where(X[:, 0] + X[:, 1] > 0.7, 1, 0)
    return X, y, X @ np.arange(6) + 0.3, rng.random((50, 6)) * 5 - 2, rng.integers(1, 3, 300)


def test_tovw_writes_vws_rows() -> None:
    x = np.array([[0.5, 0.0, 2.0], [0.0, 0.0, 0.0], [1e-7, 3.0, 0.0]])
    assert slv.tovw(x, np.array([0, 1, 0]), np.array([1.7, 2.0, 1.0]), convert_labels=True) == \
        ["-1 1 | 0:0.5 2:2", "1 2 | ", "-1 1 | 0:1e-07 1:3"]  # fmt: skip
    assert slv.tovw(x[:1]) == ["1 1 | 0:0.5 2:2"]


def _answers(mod) -> list:  # noqa: ANN001 - VW's sklearn module or sl's
    X, y, yr, Xt, w = _data()  # noqa: N806
    c = mod.VWClassifier().fit(X, y)
    r = mod.VWRegressor(l2=1e-6, b=20).fit(X, yr, sample_weight=w)
    return [c.decision_function(Xt), c.predict(Xt), c.predict_proba(Xt), r.predict(Xt),
            c.get_intercept()]  # fmt: skip


def test_the_answers_are_vws() -> None:
    ours = _answers(slv)
    assert set(ours[1]) <= {0, 1} and ours[2].shape == (50, 2)
    vw = pytest.importorskip("vowpalwabbit.sklearn")
    for a, b in zip(ours, _answers(vw), strict=True):
        assert np.array_equal(a, b)


def test_scikit_learns_tools_and_files(tmp_path) -> None:
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    X, y, _, Xt, _ = _data()  # noqa: N806
    g = GridSearchCV(slv.VWClassifier(), {"l2": [0.0, 1e-3]}, cv=3).fit(X, y)
    assert g.best_params_ in ({"l2": 0.0}, {"l2": 1e-3}) and g.best_score_ > 0.7
    m = clone(slv.VWClassifier(l1=1e-6, passes=2)).fit(X, y)  # (later passes: shuffled)
    assert m.get_params()["l1"] == 1e-6 and m.predict(Xt).shape == (50,)
    path = str(tmp_path / "m.vw")
    fitted = slv.VWRegressor().fit(X, X[:, 0])
    fitted.save(path)
    again = slv.VWRegressor()
    again.load(path)
    assert np.array_equal(again.predict(Xt), fitted.predict(Xt))


def test_the_multiclassifier_gives_vws_documented_probabilities() -> None:
    """VW's own example (its docstring): ``--oaa 3`` fed the class indices as -1 and 1, its
    reader taking -1 as no label; the probabilities as VW prints them."""
    X = np.array([[10, 10], [8, 10], [-5, 5.5], [-5.4, 5.5], [-20, -20], [-15, -20]])  # noqa: N806
    y = np.array([1, 1, 2, 2, 3, 3])
    m = slv.VWMultiClassifier(oaa=3, loss_function="logistic").fit(X, y)
    np.testing.assert_allclose(m.predict_proba(X), [
        [0.38926664, 0.30536669, 0.30536669], [0.40663728, 0.2966814, 0.2966814],
        [0.52337217, 0.23831393, 0.23831393], [0.52698863, 0.23650573, 0.23650573],
        [0.6543135, 0.17284323, 0.17284323], [0.61224902, 0.19387549, 0.19387549]],
        rtol=1e-7)  # fmt: skip
    assert list(m.predict(X)) == [1] * 6 and m.decision_function(X).shape == (6, 3)


@pytest.mark.parametrize("kw", [{}, {"convert_labels": False}, {"oaa": 4}],
                         ids=["default", "indices", "oaa"])  # fmt: skip
def test_the_multiclassifier_answers_are_vws(kw) -> None:  # noqa: ANN001
    vw = pytest.importorskip("vowpalwabbit.sklearn")
    rng = np.random.default_rng(0)
    X = rng.random((400, 6))  # noqa: N806
    y = np.array(["a", "b", "c", "d"])[(X[:, 0] * 4).astype(int)]
    ours, theirs = slv.VWMultiClassifier(**kw).fit(X, y), vw.VWMultiClassifier(**kw).fit(X, y)
    np.testing.assert_array_equal(ours.predict_proba(X), theirs.predict_proba(X))
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_array_equal(ours.classes_, theirs.classes_)
