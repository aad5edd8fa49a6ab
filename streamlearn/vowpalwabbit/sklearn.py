"""VW 9's scikit-learn estimators (``vowpalwabbit.sklearn``) over sl's :class:`Workspace`.

``from streamlearn.vowpalwabbit.sklearn import VWClassifier, VWRegressor, VWMultiClassifier,
tovw`` in place of
VW's: the same parameters (VW's options by their long or short names, and
``convert_to_vw``, ``convert_labels``, ``passes``), the same rows (:func:`tovw`: a matrix's
rows as VW lines, ``label weight | index:value ...``), the same answers (a Workspace learns
each line as VW's does).  Needs scikit-learn (``pip install -e '.[sklearn]'``).

``VWMultiClassifier`` too: VW's feeds ``--oaa K`` its class indices converted to -1 and 1
(its ``convert_labels``), which ``sl vw``'s reader takes as VW's does (-1: no label), so its
probabilities are VW's, odd as they are; sl's own multiclass estimator, which learns every
class, is ``streamlearn.sklearn.SLClassifier(oaa=K)`` (docs/sklearn.md).
"""

from __future__ import annotations

import io

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.datasets import dump_svmlight_file
    from sklearn.exceptions import NotFittedError
    from sklearn.utils import check_array, check_X_y, shuffle
except ImportError as e:  # pragma: no cover - the extra's absence
    raise ImportError("streamlearn.vowpalwabbit.sklearn needs scikit-learn: "
                      "pip install -e '.[sklearn]'") from e

from streamlearn.vowpalwabbit.workspace import Workspace

ESTIMATOR = ("convert_to_vw", "convert_labels")
"""The estimators' own parameters (not VW options)."""


def tovw(x, y=None, sample_weight=None, convert_labels: bool = False) -> list[str]:  # noqa: ANN001
    """A matrix's rows as VW lines, as VW's ``tovw`` writes them: ``label weight | i:v ...``
    (each non-zero column ``i`` of the row, in the default namespace; the label 1 without
    ``y``; weights as integers; ``convert_labels``: labels below 1 become -1, others 1)."""
    if y is not None:
        x, y = check_X_y(x, y, accept_sparse=True)
    else:
        x = check_array(x, accept_sparse=True)
    n = x.shape[0]
    if sample_weight is not None:
        sample_weight = check_array(sample_weight, accept_sparse=False, ensure_2d=False,
                                    dtype=int, order="C")  # fmt: skip
        if sample_weight.shape != (n,):
            raise ValueError(f"Sample weight shape == {sample_weight.shape}, expected {(n,)}")
    else:
        sample_weight = np.ones(n, dtype=int)
    if convert_labels:
        y = np.where(y < 1, -1, 1)
    if x.dtype.kind == "u":  # (svmlight's writer takes signed integers)
        x = x.astype(np.int64)
    buf = io.BytesIO()
    dump_svmlight_file(x, np.zeros(n), buf)
    rows = buf.getvalue().decode("ascii").split("\n")[:-1]
    return [f"{y[i] if y is not None else 1} {sample_weight[i]} | {row.split('0 ', 1)[1]}"
            for i, row in enumerate(rows)]  # fmt: skip


class VW(BaseEstimator):
    """VW's estimator: its options as parameters, a :class:`Workspace` fitted on the rows."""

    def __init__(self, convert_to_vw: bool = True, convert_labels: bool = True, quiet: bool = True,
                 passes: int = 1, **options: object) -> None:  # fmt: skip
        self.convert_to_vw = convert_to_vw
        self.convert_labels = convert_labels
        self.quiet = quiet
        self.passes = passes
        for k, v in options.items():
            setattr(self, k, v)
        self.vw_: Workspace | None = None

    def get_params(self, deep: bool = True) -> dict:  # noqa: ARG002 - scikit-learn's
        """Every parameter given (VW's estimators keep them as attributes)."""
        return {k: v for k, v in vars(self).items() if not (k.endswith("_") or k.startswith("_"))}

    def set_params(self, **params: object) -> VW:
        """New parameters: the workspace is made again at the next fit."""
        for k, v in params.items():
            setattr(self, k, v)
        self.vw_ = None
        return self

    def _options(self) -> dict:
        skip = {*ESTIMATOR, "passes"}
        return {k: v for k, v in self.get_params().items() if v is not None and k not in skip}

    def fit(self, X=None, y=None, sample_weight=None) -> VW:  # noqa: ANN001, N803 - VW's names
        """Learn the rows of ``X`` (VW lines when ``convert_to_vw`` is off), ``passes``
        times, each pass after the first in a shuffled order (as VW's)."""
        self.vw_ = Workspace(**self._options())
        if X is not None:
            lines = tovw(X, y, sample_weight, self.convert_labels) if self.convert_to_vw else X
            for n in range(self.passes or 1):
                for line in shuffle(lines) if n else lines:
                    self.vw_.learn(line)
        return self

    def predict(self, X) -> np.ndarray:  # noqa: ANN001, N803
        """Each row's prediction, nothing learned."""
        if self.vw_ is None:
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. "
                                 "Call 'fit' with appropriate arguments before using this "
                                 "method.")  # fmt: skip
        lines = tovw(X) if self.convert_to_vw else X
        return np.array([self.vw_.predict(line) for line in lines], dtype=float)

    def get_vw(self) -> Workspace | None:
        return self.vw_

    def get_coefs(self):  # noqa: ANN201 - a scipy.sparse.csr_matrix
        from scipy.sparse import csr_matrix

        ws = self.get_vw()
        return csr_matrix([ws.get_weight(i) for i in range(ws.num_weights())])

    def get_intercept(self) -> float:
        """The constant feature's weight (VW's reads slot 116060, the constant's at ``-b 18``
        only; this is its slot at any ``-b``)."""
        from streamlearn.hashing import CONSTANT_HASH

        return self.get_vw().get_weight(CONSTANT_HASH)

    def save(self, filename: str) -> None:
        self.get_vw().save(filename)

    def load(self, filename: str) -> None:
        self.set_params(initial_regressor=filename)
        self.fit()
        self.initial_regressor = None


class VWClassifier(ClassifierMixin, VW):
    """VW's binary classifier: logistic loss; the classes are the labels' two values."""

    classes_ = np.array([-1.0, 1.0])

    def __init__(self, loss_function: str = "logistic", **kwargs: object) -> None:
        super().__init__(loss_function=loss_function, **kwargs)

    def fit(self, X=None, y=None, sample_weight=None) -> VWClassifier:  # noqa: ANN001, N803
        if y is not None:
            y = check_array(y, ensure_2d=False, dtype=None, accept_sparse=True)
            self.classes_, y = np.unique(y, return_inverse=True)
        return super().fit(X, y, sample_weight)

    def decision_function(self, X) -> np.ndarray:  # noqa: ANN001, N803
        """Each row's score (its log-odds under logistic loss)."""
        return VW.predict(self, X)

    def predict(self, X) -> np.ndarray:  # noqa: ANN001, N803
        """Each row's class: the sign of its score, or (several classes) its best score."""
        scores = np.asarray(self.decision_function(X))
        best = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[best]

    def predict_proba(self, X) -> np.ndarray:  # noqa: ANN001, N803
        """[P(first class), P(second)]: the logistic of each score, as VW's computes it
        (exp of the log-logistic, each sign's stable form)."""
        s = np.asarray(self.decision_function(X), dtype=float)
        log_p = np.where(s >= 0, -np.log1p(np.exp(-np.abs(s))), s - np.log1p(np.exp(-np.abs(s))))
        p = np.exp(log_p)
        return np.column_stack((1 - p, p))


class VWMultiClassifier(VWClassifier):
    """VW's multiclass classifier: ``--oaa K`` (or the ``csoaa`` given) with
    ``--probabilities``; the classes are the labels' values, taken in sorted order.

    As VW's, it feeds the workspace each row's class *index* (0..K-1), turned into -1 and 1
    while ``convert_labels`` is on (its default): VW's multiclass reader takes -1 as no
    label and 1 as the first class, and so does ``sl vw``'s, so the probabilities are
    VW's (``tests/vowpalwabbit/test_sklearn.py``)."""

    estimator_: dict | None = None

    def __init__(self, probabilities: bool = True, **kwargs: object) -> None:
        super().__init__(probabilities=probabilities, **kwargs)

    def fit(self, X=None, y=None, sample_weight=None) -> VWMultiClassifier:  # noqa: ANN001, N803
        if y is not None:
            y = check_array(y, ensure_2d=False, dtype=None, accept_sparse=True)
            self.classes_, y = np.unique(y, return_inverse=True)
        for name in ("csoaa", "ect", "oaa", "wap"):  # (VW's order; sl runs oaa and csoaa)
            k = getattr(self, name, None)
            if k is not None:
                self.estimator_ = {name: k}
                if y is None:
                    self.classes_ = np.arange(1, int(k) + 1)
                break
        else:
            self.estimator_ = {"oaa": len(self.classes_)}
        return VW.fit(self, X, y, sample_weight)

    def _options(self) -> dict:
        opts = {k: v for k, v in super()._options().items() if k != "estimator_"}
        return {**opts, **(self.estimator_ or {})}

    def decision_function(self, X) -> np.ndarray:  # noqa: ANN001, N803
        """Each class's log-odds (the logit of its probability; two classes: the second's)."""
        from scipy.special import logit  # (scikit-learn's own dependency)

        logits = logit(self.predict_proba(X))
        return logits[:, 1] if logits.shape[1] == 2 else logits

    def predict_proba(self, X) -> np.ndarray:  # noqa: ANN001, N803
        """Each class's probability (VW's ``--probabilities``)."""
        return VW.predict(self, X)


class VWRegressor(RegressorMixin, VW):
    """VW's regressor: the labels as they are."""

    def __init__(self, convert_labels: bool = False, **kwargs: object) -> None:
        super().__init__(convert_labels=convert_labels, **kwargs)


__all__ = ["VW", "VWClassifier", "VWMultiClassifier", "VWRegressor", "tovw"]
