"""scikit-learn estimators: :class:`SLClassifier` and :class:`SLRegressor`.

Thin wrappers around :class:`streamlearn.api.Model` that follow scikit-learn's
conventions, so ``sl``'s learners work in ``Pipeline``, ``GridSearchCV``,
``cross_val_score`` and anything else that clones an estimator:

* the parameters are ``sl train``'s learning options, under
  :class:`~streamlearn.config.TrainConfig`'s names and with its defaults
  (``algo``, ``loss``, ``bits``, ``learning_rate``, ``l1``, ``passes`` ...);
  they are checked by :meth:`fit` (``ValueError``, with ``sl``'s message);
* ``X`` is a dense array or a ``scipy.sparse`` matrix (CSR, CSC, ...):
  column ``j`` is the svmlight feature ``j``, in slot ``j mod 2^bits``, plus
  the constant feature unless ``constant=False``; examples are learned in
  the order of the rows (an online learner: shuffle sorted data first);
* ``fit`` starts from scratch, ``partial_fit`` continues (``sl train -i``);
  ``sample_weight`` is the importance weight of each row;
* the trained model is :attr:`model_`, an ordinary :class:`~streamlearn.api.Model`
  (``est.model_.save("model.sl")`` writes the file ``sl predict`` reads).

The classifier takes labels of any type (``classes_``, as scikit-learn's
classifiers); two classes learn through ``loss="logistic"`` (default, with
``predict_proba``) or ``"hinge"``, the second of ``classes_`` as +1.  More
than two classes learn one-against-all (``sl``'s ``--oaa K``, VW's slots and
updates): ``classes_[c]`` is sl's class ``c + 1``, ``decision_function``
gives the K scores and ``predict_proba`` VW's ``--probabilities`` (logistic
loss).

Needs scikit-learn (``pip install 'streamlearn[sklearn]'``); ``import
streamlearn`` does not import this module.  Checks that cannot hold for an
online learner are listed by :func:`expected_failed_checks`, for
``sklearn.utils.estimator_checks.check_estimator``.

>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [0.0, 1.0]] * 50)
>>> y = np.array(["spam", "ham"] * 50)
>>> clf = SLClassifier().fit(X, y)
>>> clf.classes_.tolist(), clf.predict(X[:2]).tolist()
(['ham', 'spam'], ['spam', 'ham'])
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from streamlearn.api import Model

__all__ = ["SLClassifier", "SLFMClassifier", "SLFMRegressor", "SLKernelSVC", "SLRegressor",
           "SLTopicModel", "expected_failed_checks"]

CLASSIFICATION_LOSSES = ("logistic", "hinge")
_SPARSE = ("csr", "csc", "coo", "lil", "dok", "bsr", "dia")


class _SLEstimator(BaseEstimator):
    """What both estimators share: sl's options as parameters, the data checks, the model."""

    def __init__(
        self,
        algo: str = "gd",
        loss: str = "squared",
        bits: int = 18,
        learning_rate: float | None = None,
        power_t: float = 0.5,
        initial_t: float | None = None,
        l1: float = 0.0,
        l2: float = 0.0,
        adaptive: bool = True,
        normalized: bool = True,
        invariant: bool = True,
        ftrl_alpha: float = 0.5,
        ftrl_beta: float = 1.0,
        min_prediction: float | None = None,
        max_prediction: float | None = None,
        theta: float = math.inf,
        period: int = 1,
        top_k: int | None = None,
        minibatch: int = 1,
        p: float | None = None,
        norm_refresh: int | None = None,
        passes: int | None = None,
        holdout_period: int | None = None,
        early_terminate: int = 3,
        tol: float = 1e-7,
        seed: int = 0,
        constant: bool = True,
    ) -> None:
        self.algo = algo
        self.loss = loss
        self.bits = bits
        self.learning_rate = learning_rate
        self.power_t = power_t
        self.initial_t = initial_t
        self.l1 = l1
        self.l2 = l2
        self.adaptive = adaptive
        self.normalized = normalized
        self.invariant = invariant
        self.ftrl_alpha = ftrl_alpha
        self.ftrl_beta = ftrl_beta
        self.min_prediction = min_prediction
        self.max_prediction = max_prediction
        self.theta = theta
        self.period = period
        self.top_k = top_k
        self.minibatch = minibatch
        self.p = p
        self.norm_refresh = norm_refresh
        self.passes = passes
        self.holdout_period = holdout_period
        self.early_terminate = early_terminate
        self.tol = tol
        self.seed = seed
        self.constant = constant

    # -- sl's side ---------------------------------------------------------------

    def _options(self) -> dict:
        """The parameters as :class:`~streamlearn.api.Model`'s options."""
        return self.get_params(deep=False)

    def _check_loss(self) -> None:  # the estimator's kind of loss (overridden)
        pass

    def _new_model(self) -> Model:
        self._check_loss()
        return Model(**self._options())  # ValueError with sl's message

    def _learn(self, X, y: np.ndarray, sample_weight, first: bool):  # noqa: ANN001, ANN202
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if first:
            self.model_ = self._new_model()
            self.model_.fit(X, y, sample_weight=sw)
        else:
            self.model_.partial_fit(X, y, sample_weight=sw)
        return self

    def _checked(self, X):  # noqa: ANN001, ANN202
        return validate_data(self, X, accept_sparse=_SPARSE, dtype=np.float64, reset=False)

    def _margins(self, X) -> np.ndarray:  # noqa: ANN001
        check_is_fitted(self)
        return self.model_.predict(self._checked(X))

    def _validate(self, X, y, reset: bool, **kw):  # noqa: ANN001, ANN202
        return validate_data(self, X, y, accept_sparse=_SPARSE, dtype=np.float64, reset=reset,
                             **kw)  # fmt: skip

    # -- what scikit-learn shows ---------------------------------------------------

    @property
    def coef_(self) -> np.ndarray:
        """The weight of each column (slot ``j mod 2^bits``; columns sharing a slot share it)."""
        check_is_fitted(self)
        w = self.model_.weights
        return w[np.arange(self.n_features_in_) & ((1 << self.model_.config.bits) - 1)]

    @property
    def intercept_(self) -> float:
        """The constant feature's weight (0 with ``constant=False``)."""
        check_is_fitted(self)
        if not self.model_.config.constant:
            return 0.0
        from streamlearn.hashing import CONSTANT_HASH

        return float(self.model_.weights[CONSTANT_HASH & ((1 << self.model_.config.bits) - 1)])

    def __sklearn_tags__(self):  # noqa: ANN204
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class SLClassifier(ClassifierMixin, _SLEstimator):
    """A linear classifier learned online by ``sl`` (logistic or hinge loss; more than
    two classes one-against-all).

    Parameters
    ----------
    algo, loss, bits, learning_rate, ... :
        ``sl train``'s learning options (:class:`~streamlearn.config.TrainConfig`),
        with its defaults but ``loss="logistic"``.

    Attributes
    ----------
    classes_ : ndarray
        The class labels; with two, ``classes_[1]`` is learned as +1; with more,
        ``classes_[c]`` is the one-against-all class ``c + 1``.
    model_ : streamlearn.api.Model
        The trained model (``model_.report``: the last fit's progressive figures).
    n_features_in_ : int
    coef_, intercept_ :
        The weights of the columns and of the constant feature.
    """

    def __init__(self, algo: str = "gd", loss: str = "logistic", bits: int = 18,
                 learning_rate: float | None = None, power_t: float = 0.5,
                 initial_t: float | None = None, l1: float = 0.0, l2: float = 0.0,
                 adaptive: bool = True, normalized: bool = True, invariant: bool = True,
                 ftrl_alpha: float = 0.5, ftrl_beta: float = 1.0,
                 min_prediction: float | None = None, max_prediction: float | None = None,
                 theta: float = math.inf, period: int = 1, top_k: int | None = None,
                 minibatch: int = 1, p: float | None = None, norm_refresh: int | None = None,
                 passes: int | None = None, holdout_period: int | None = None,
                 early_terminate: int = 3, tol: float = 1e-7, seed: int = 0,
                 constant: bool = True) -> None:  # fmt: skip
        super().__init__(
            algo=algo, loss=loss, bits=bits, learning_rate=learning_rate, power_t=power_t,
            initial_t=initial_t, l1=l1, l2=l2, adaptive=adaptive, normalized=normalized,
            invariant=invariant, ftrl_alpha=ftrl_alpha, ftrl_beta=ftrl_beta,
            min_prediction=min_prediction, max_prediction=max_prediction, theta=theta,
            period=period, top_k=top_k, minibatch=minibatch, p=p, norm_refresh=norm_refresh,
            passes=passes, holdout_period=holdout_period, early_terminate=early_terminate,
            tol=tol, seed=seed, constant=constant,
        )  # fmt: skip

    def _check_loss(self) -> None:
        if self.loss not in CLASSIFICATION_LOSSES:
            raise ValueError(
                f"SLClassifier learns with loss='logistic' or 'hinge', not {self.loss!r} "
                "(SLRegressor fits a squared loss)"
            )

    def _options(self) -> dict:
        options = super()._options()
        if len(self.classes_) > 2:
            options["oaa"] = len(self.classes_)  # one-against-all over the same learner
        return options

    def _set_classes(self, y: np.ndarray, classes=None) -> None:  # noqa: ANN001
        check_classification_targets(y)
        self.classes_ = np.unique(y) if classes is None else np.unique(np.asarray(classes))
        if len(self.classes_) < 2:
            raise ValueError(
                "SLClassifier needs samples of at least two classes to learn; got one class: "
                f"{self.classes_[0]!r}" if len(self.classes_) else "SLClassifier got no class"
            )

    @property
    def _multiclass(self) -> bool:
        return len(self.classes_) > 2

    def _encode(self, y: np.ndarray) -> np.ndarray:
        """Labels as sl learns them: -1 for ``classes_[0]`` and +1 for ``classes_[1]``;
        with more classes, sl's classes 1..K in the order of ``classes_``."""
        unknown = ~np.isin(y, self.classes_)
        if unknown.any():
            raise ValueError(
                f"y holds labels not in classes_ {self.classes_.tolist()}: "
                f"{np.unique(y[unknown]).tolist()[:5]}"
            )
        if self._multiclass:
            return np.searchsorted(self.classes_, y).astype(np.float64) + 1.0
        return np.where(y == self.classes_[1], 1.0, -1.0)

    def fit(self, X, y, sample_weight=None) -> SLClassifier:  # noqa: ANN001
        """Learn from scratch from the rows of ``X`` (in order) and their labels ``y``."""
        X, y = self._validate(X, y, reset=True)
        self._set_classes(y)
        return self._learn(X, self._encode(y), sample_weight, first=True)

    def partial_fit(self, X, y, classes=None, sample_weight=None) -> SLClassifier:  # noqa: ANN001
        """Continue learning (``sl train -i``); the first call needs ``classes`` (all of them)."""
        first = not hasattr(self, "model_")
        if first and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit")
        X, y = self._validate(X, y, reset=first)
        if first:
            self._set_classes(y, classes)
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(f"classes {np.unique(classes).tolist()} differ from the first "
                             f"call's {self.classes_.tolist()}")  # fmt: skip
        return self._learn(X, self._encode(y), sample_weight, first=first)

    def decision_function(self, X) -> np.ndarray:  # noqa: ANN001
        """The margin of each row (> 0: ``classes_[1]``); with more than two classes,
        the ``(n, K)`` scores of the classes (the largest wins)."""
        check_is_fitted(self)
        if not self._multiclass:
            return self._margins(X)
        return self.model_.decision_function(self._checked(X))

    def predict(self, X) -> np.ndarray:  # noqa: ANN001
        check_is_fitted(self)
        if not self._multiclass:
            return self.classes_[(self._margins(X) > 0).astype(np.intp)]
        return self.classes_[self.model_.predict(self._checked(X)).astype(np.intp) - 1]

    def _has_proba(self) -> bool:
        return self.loss == "logistic"

    @available_if(_has_proba)
    def predict_proba(self, X) -> np.ndarray:  # noqa: ANN001
        """Probabilities of ``classes_`` (logistic loss only): ``--link logistic`` of the
        margin; with more classes VW's ``--probabilities`` (each class's logistic
        function of its score, normalised to sum 1)."""
        check_is_fitted(self)
        if self._multiclass:  # VW's are float32 sums: renormalised in double precision
            p = self.model_.predict_proba(self._checked(X))
            return p / p.sum(axis=1, keepdims=True)
        p = 1.0 / (1.0 + np.exp(-self._margins(X)))
        return np.column_stack([1.0 - p, p])

    @available_if(_has_proba)
    def predict_log_proba(self, X) -> np.ndarray:  # noqa: ANN001
        check_is_fitted(self)
        if self._multiclass:
            with np.errstate(divide="ignore"):
                return np.log(self.predict_proba(X))
        m = self._margins(X)
        return np.column_stack([-np.logaddexp(0.0, m), -np.logaddexp(0.0, -m)])


class SLRegressor(RegressorMixin, _SLEstimator):
    """A linear regressor learned online by ``sl`` (squared loss).

    Parameters and attributes as :class:`SLClassifier`'s, without ``classes_``
    and with sl's default ``loss="squared"``.
    """

    def _check_loss(self) -> None:
        if self.loss in CLASSIFICATION_LOSSES:
            raise ValueError(f"loss={self.loss!r} is a classification loss: use SLClassifier")

    def fit(self, X, y, sample_weight=None) -> SLRegressor:  # noqa: ANN001
        """Learn from scratch from the rows of ``X`` (in order) and their targets ``y``."""
        X, y = self._validate(X, y, reset=True, y_numeric=True)
        return self._learn(X, y, sample_weight, first=True)

    def partial_fit(self, X, y, sample_weight=None) -> SLRegressor:  # noqa: ANN001
        """Continue learning (``sl train -i``)."""
        first = not hasattr(self, "model_")
        X, y = self._validate(X, y, reset=first, y_numeric=True)
        return self._learn(X, y, sample_weight, first=first)

    def predict(self, X) -> np.ndarray:  # noqa: ANN001
        return self._margins(X)


class _TwoClasses:
    """A classifier of two classes only (sl runs its reduction alone, not one-against-all):
    more are refused, and scikit-learn's checks are told (``_why``: the reason shown)."""

    _why = ""

    def __sklearn_tags__(self):  # noqa: ANN204
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # (scikit-learn's checks: two classes)
        return tags

    def _set_classes(self, y: np.ndarray, classes=None) -> None:  # noqa: ANN001
        super()._set_classes(y, classes)
        if len(self.classes_) > 2:
            raise ValueError(f"Only binary classification is supported: {type(self).__name__} "
                             f"learns two classes{self._why}, got {len(self.classes_)}")


class _Factorization:
    """A factorization machine over gd (VW's ``--lrq`` over the columns: every two columns
    interact through ``rank`` latent weights each; ``dropout``: VW's ``--lrqdropout``)."""

    def _options(self) -> dict:
        options = super()._options()
        rank = options.pop("rank")
        dropout = options.pop("dropout")
        if not isinstance(rank, int | np.integer) or not 1 <= rank <= 255:
            raise ValueError(f"rank={rank!r}: 1 to 255 latent weights per column")
        # the columns are the default namespace's features (svmlight's): the pair "  k"
        options["stack"] = ("--lrq", f"  {int(rank)}", *(("--lrqdropout",) if dropout else ()))
        return options


class SLFMClassifier(_TwoClasses, _Factorization, SLClassifier):
    """A factorization-machine classifier learned online by ``sl``: a linear model plus
    every pair of columns through ``rank`` latent weights (VW's ``--lrq`` over gd, with VW's
    numbers; Rendle's factorization machine with VW's updates).  Two classes (logistic or
    hinge loss); the other parameters are :class:`SLClassifier`'s.

    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]] * 50)
    >>> y = np.array([1, 1, 0, 0] * 50)                   # a XOR: no linear model fits it
    >>> SLFMClassifier(rank=2, passes=20, seed=1).fit(X, y).score(X, y) > 0.9
    True
    """

    _why = " (sl runs --lrq over gd alone, not one-against-all)"

    def __init__(self, rank: int = 4, dropout: bool = False, loss: str = "logistic",
                 bits: int = 18, learning_rate: float | None = None, power_t: float = 0.5,
                 l1: float = 0.0, l2: float = 0.0, adaptive: bool = True,
                 normalized: bool = True, invariant: bool = True, passes: int | None = None,
                 holdout_period: int | None = None, early_terminate: int = 3, seed: int = 0,
                 constant: bool = True) -> None:  # fmt: skip
        super().__init__(loss=loss, bits=bits, learning_rate=learning_rate, power_t=power_t,
                         l1=l1, l2=l2, adaptive=adaptive, normalized=normalized,
                         invariant=invariant, passes=passes, holdout_period=holdout_period,
                         early_terminate=early_terminate, seed=seed, constant=constant)  # fmt: skip
        self.rank = rank
        self.dropout = dropout



class SLFMRegressor(_Factorization, SLRegressor):
    """A factorization-machine regressor (squared loss): :class:`SLFMClassifier`'s model."""

    def __init__(self, rank: int = 4, dropout: bool = False, loss: str = "squared",
                 bits: int = 18, learning_rate: float | None = None, power_t: float = 0.5,
                 l1: float = 0.0, l2: float = 0.0, adaptive: bool = True,
                 normalized: bool = True, invariant: bool = True, passes: int | None = None,
                 holdout_period: int | None = None, early_terminate: int = 3, seed: int = 0,
                 constant: bool = True) -> None:  # fmt: skip
        super().__init__(loss=loss, bits=bits, learning_rate=learning_rate, power_t=power_t,
                         l1=l1, l2=l2, adaptive=adaptive, normalized=normalized,
                         invariant=invariant, passes=passes, holdout_period=holdout_period,
                         early_terminate=early_terminate, seed=seed, constant=constant)  # fmt: skip
        self.rank = rank
        self.dropout = dropout


class SLKernelSVC(_TwoClasses, SLClassifier):
    """A kernel support vector classifier learned online by ``sl`` (VW's ``--ksvm``: LaSVM
    over support vectors, the hinge loss, with VW's numbers): ``kernel`` "linear", "rbf"
    (``exp(-bandwidth·|x - z|²)``) or "poly" (``(1 + x·z)^degree``); ``l2`` is its λ (the
    scores are ``Σ K(x, sv)·α / λ``); ``reprocess`` LaSVM's steps after each example,
    ``pool_size`` the examples it adds at a time.  Two classes.  Its model is the support
    vectors, so its memory grows with them (n² kernel values while learning): it suits
    thousands of rows, not millions.

    >>> import numpy as np
    >>> X = np.array([[np.cos(t), np.sin(t)] for t in np.linspace(0, 6.2, 60)])
    >>> X = np.vstack([0.5 * X, 1.5 * X])                 # two rings: no line separates them
    >>> y = np.array([1] * 60 + [0] * 60)
    >>> SLKernelSVC(kernel="rbf", reprocess=2, passes=3).fit(X, y).score(X, y) == 1.0
    True
    """

    def __init__(self, kernel: str = "rbf", bandwidth: float = 1.0, degree: int = 2,
                 l2: float = 1.0, reprocess: int = 1, pool_size: int = 1, bits: int = 18,
                 passes: int | None = None, holdout_period: int | None = None,
                 early_terminate: int = 3, seed: int = 0,
                 constant: bool = True) -> None:  # fmt: skip
        super().__init__(loss="hinge", bits=bits, l2=l2, passes=passes,
                         holdout_period=holdout_period, early_terminate=early_terminate,
                         seed=seed, constant=constant)  # fmt: skip
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.degree = degree
        self.reprocess = reprocess
        self.pool_size = pool_size

    def _options(self) -> dict:
        options = super()._options()
        kernel, bandwidth, degree = (options.pop(k) for k in ("kernel", "bandwidth", "degree"))
        reprocess, pool = options.pop("reprocess"), options.pop("pool_size")
        if kernel not in ("linear", "rbf", "poly"):
            raise ValueError(f"kernel={kernel!r}: 'linear', 'rbf' or 'poly'")
        for name, value, low in (("degree", degree, 0), ("reprocess", reprocess, 0),
                                 ("pool_size", pool, 1)):  # fmt: skip
            if not isinstance(value, int | np.integer) or value < low:
                raise ValueError(f"{name}={value!r}: an integer of at least {low}")
        if not (isinstance(bandwidth, int | float) and math.isfinite(bandwidth)):
            raise ValueError(f"bandwidth={bandwidth!r}: a number")
        from streamlearn.reductions.ksvm import TRAIN_DEFAULTS, vw_float

        options["stack"] = ("--ksvm", "--kernel", kernel, "--bandwidth", vw_float(bandwidth),
                            "--degree", str(degree), "--reprocess", str(reprocess),
                            "--pool_size", str(pool))  # fmt: skip
        options.update(TRAIN_DEFAULTS)  # (sl train's: the hinge, no gd rules, VW's rate)
        return options

    @property
    def coef_(self) -> np.ndarray:
        raise AttributeError("SLKernelSVC has no coef_: its model is its support vectors")

    @property
    def intercept_(self) -> float:
        raise AttributeError("SLKernelSVC has no intercept_: its model is its support vectors")


class SLTopicModel(TransformerMixin, BaseEstimator):
    """A topic model learned online by ``sl``: VW's ``--lda`` (Hoffman, Blei & Bach's online
    variational Bayes, with VW's numbers), under scikit-learn's
    ``LatentDirichletAllocation`` names where they mean the same and VW's defaults.

    ``X`` holds word counts (documents × words, dense or sparse, non-negative): column ``j``
    is the word VW reads as ``j`` (``| j:count``), so ``fit`` learns what ``sl vw --lda K``
    (and VW) learn from those lines, minibatch for minibatch; ``max_iter`` passes.
    ``transform`` gives each document's topic distribution (its γ normalized, nothing
    learned); ``components_`` the topics' word weights (λ, K × words, as VW's readable
    model shows them); :meth:`save` VW's model file (``sl vw -i``, ``vw -i``).

    ``doc_topic_prior`` is VW's ``--lda_alpha``, ``topic_word_prior`` ``--lda_rho``,
    ``total_samples`` ``--lda_D``, ``batch_size`` ``--minibatch``, ``mean_change_tol``
    ``--lda_epsilon``, ``learning_decay`` ``--power_t``, ``learning_offset`` ``--initial_t``
    (VW's step at minibatch t: ``learning_rate`` × (t + offset)^-decay); ``math_mode`` VW's
    ``--math-mode`` (``"simd"``, ``"accuracy"``, ``"fast"``).

    >>> import numpy as np
    >>> X = np.array([[3, 1, 0, 0], [0, 0, 2, 4], [2, 2, 0, 0], [0, 1, 3, 3]] * 25)
    >>> tm = SLTopicModel(n_components=2, max_iter=3).fit(X)
    >>> tm.transform(X[:2]).shape, tm.components_.shape
    ((2, 2), (2, 4))
    """

    def __init__(self, n_components: int = 10, *, doc_topic_prior: float = 0.1,
                 topic_word_prior: float = 0.1, total_samples: float = 10000.0,
                 batch_size: int = 1, max_iter: int = 1, learning_rate: float = 0.5,
                 learning_decay: float = 0.5, learning_offset: float = 0.0,
                 mean_change_tol: float = 0.001, math_mode: str = "simd",
                 bits: int = 18) -> None:  # fmt: skip
        self.n_components = n_components
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.total_samples = total_samples
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.learning_decay = learning_decay
        self.learning_offset = learning_offset
        self.mean_change_tol = mean_change_tol
        self.math_mode = math_mode
        self.bits = bits

    def _argv(self) -> list[str]:
        modes = {"simd": "0", "accuracy": "1", "fast": "2"}
        if self.math_mode not in modes:
            raise ValueError(f"math_mode={self.math_mode!r}: 'simd', 'accuracy' or 'fast'")
        if not isinstance(self.max_iter, int | np.integer) or self.max_iter < 1:
            raise ValueError(f"max_iter={self.max_iter!r}: at least one pass")
        return ["--lda", str(self.n_components), "--lda_alpha", repr(float(self.doc_topic_prior)),
                "--lda_rho", repr(float(self.topic_word_prior)),
                "--lda_D", repr(float(self.total_samples)), "--minibatch", str(self.batch_size),
                "--lda_epsilon", repr(float(self.mean_change_tol)),
                "-l", repr(float(self.learning_rate)),
                "--power_t", repr(float(self.learning_decay)),
                "--initial_t", repr(float(self.learning_offset)), "--math-mode",
                modes[self.math_mode], "-b", str(self.bits), "--quiet"]  # fmt: skip

    def _topics(self):  # noqa: ANN202 - run.lda.Topics
        from streamlearn.errors import UsageError
        from streamlearn.reductions import Multiline
        from streamlearn.reductions.options import config_of
        from streamlearn.run.lda import Topics
        from streamlearn.vwargs import parse_argv, resolve

        try:
            t = parse_argv(self._argv())
            resolve(t)
            return Topics(Multiline(**t.multiline), config_of(t.learn))
        except UsageError as e:
            raise ValueError(e.message) from None

    def _documents(self, X, reset: bool) -> tuple:  # noqa: ANN001, N803
        import scipy.sparse as sp

        X = validate_data(self, X, accept_sparse="csr", dtype=np.float32, reset=reset)  # noqa: N806
        X = sp.csr_matrix(X)  # noqa: N806
        X.sum_duplicates()
        if X.data.size and (not np.isfinite(X.data).all() or X.data.min() < 0):
            raise ValueError("SLTopicModel takes word counts: negative or non-finite values")
        if X.shape[1] > 1 << self.bits:
            raise ValueError(f"{X.shape[1]} words: more than the 2^{self.bits} rows of "
                             "bits={self.bits}")  # fmt: skip
        return X.indptr, X.indices, X.data

    def fit(self, X, y=None) -> SLTopicModel:  # noqa: ANN001, ARG002, N803
        """Learn from scratch: ``max_iter`` passes over the documents, in row order."""
        docs = self._documents(X, reset=True)
        self.topics_ = self._topics()
        for _ in range(int(self.max_iter)):
            self.topics_.learn(*docs)
        return self

    def partial_fit(self, X, y=None) -> SLTopicModel:  # noqa: ANN001, ARG002, N803
        """One more pass, over these documents (the first call starts the model)."""
        first = not hasattr(self, "topics_")
        docs = self._documents(X, reset=first)
        if first:
            self.topics_ = self._topics()
        self.topics_.learn(*docs)
        return self

    def transform(self, X) -> np.ndarray:  # noqa: ANN001, N803
        """Each document's topic distribution (its γ normalized to 1), nothing learned."""
        check_is_fitted(self, "topics_")
        g = self.topics_.gammas(*self._documents(X, reset=False)).astype(np.float64)
        return g / g.sum(axis=1, keepdims=True)

    @property
    def components_(self) -> np.ndarray:
        """The topics' word weights: λ (ρ included), K × the columns seen by ``fit``."""
        check_is_fitted(self, "topics_")
        return self.topics_.topics(self.n_features_in_).T.astype(np.float64)

    def save(self, path: str) -> None:
        """VW's model file (``sl vw -i`` and ``vw -i`` continue or score it)."""
        check_is_fitted(self, "topics_")
        from streamlearn.system.outputs import write_bytes

        write_bytes(str(path), [self.topics_.model_bytes()], "model")


def expected_failed_checks(estimator: BaseEstimator) -> dict[str, str]:
    """The scikit-learn checks an online learner cannot pass, with the reason:
    ``check_estimator(est, expected_failed_checks=expected_failed_checks(est))``."""
    reason = ("an online learner takes one step per row: a row of weight 2 is one "
              "importance-weighted step, not the two steps of two copies of it")  # fmt: skip
    return {
        "check_sample_weight_equivalence_on_dense_data": reason,
        "check_sample_weight_equivalence_on_sparse_data": reason,
    }
