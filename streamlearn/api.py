"""The Python API: train, continue, save, load and score ``sl`` models from code.

Two ways in, both running the same driver and kernels as the command line
(:func:`streamlearn.run.train.train`, :class:`streamlearn.run.predict.Scorer`),
so a model trained here is bit for bit the one ``sl train`` trains on the same
data with the same options:

* :class:`Model`, for code: fit, continue, save, load and score;
* :func:`train`, :func:`predict` and :func:`inspect`, one-shot runs over files
  with the command line's outputs (model files, predictions, reports): what
  ``sl train``, ``sl predict`` and ``sl inspect`` call, with the options of a
  run in its parts (learning options; :class:`Inputs`; :class:`Outputs`;
  :class:`Console`).

:class:`Model` learns from

* files (a path or a list of paths: VW or svmlight text, plain or gzip), read
  as ``sl train FILE ...`` reads them;
* text lines (VW or svmlight): ``lines=`` any iterable of str or bytes lines,
  e.g. a generator over a socket, or one str or bytes holding lines separated
  by newlines (never read character by character), or an open file object as
  ``data``;
* a matrix with labels: a ``scipy.sparse`` matrix or a 2-D numpy array (which
  needs no scipy: scipy is not a dependency), column ``j`` being feature ``j``
  of the default namespace, i.e. exactly the svmlight line ``y j:x_j ...``
  (so slot ``j mod 2^bits``), plus the constant.

(Lines and matrices become batches in :mod:`streamlearn.api_sources`.)

Everything is checked before any learning, with the command line's messages
(``ValueError``): options at ``Model(...)`` (``bits=18.5``: ``--bits must be an
integer``), non-finite labels, weights and bases as the parsers refuse them,
and input of the other format than the model's (VW lines for a model fitted on
a matrix, which is svmlight's format, or the reverse) unless ``format=`` names it.

Conventions follow scikit-learn's online estimators: :meth:`Model.fit` starts
from scratch, :meth:`Model.partial_fit` continues (``sl train -i``); both
return the model.  Options are :class:`~streamlearn.config.TrainConfig`'s
names (``algo``, ``loss``, ``bits``, ``l1``, ``learning_rate``, ...).

>>> import numpy as np
>>> from scipy import sparse
>>> X = sparse.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0]] * 50))
>>> y = np.array([1.0, -1.0] * 50)
>>> m = Model(loss="logistic").fit(X, y)
>>> m.predict(X[:2], link="logistic").round(3).tolist()
[0.933, 0.069]
>>> m.report["examples"]
100
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

import numpy as np

from streamlearn import model as model_io
from streamlearn.api_sources import (
    BLOCK_BYTES,
    LineSource,
    line_blocks,
    one_line,
    paths_of,
    source_of,
)
from streamlearn.config import ConfigError, TrainConfig
from streamlearn.errors import UsageError
from streamlearn.io.batch import Batch
from streamlearn.io.reader import BLOCK_SIZE
from streamlearn.run.console import Console
from streamlearn.run.options import Inputs, Outputs

__all__ = ["Console", "Inputs", "Model", "Outputs", "inspect", "predict", "serve", "train"]


def train(options: dict, inputs: Inputs, outputs: Outputs, console: Console | None = None, *,
          dask=None, sync_every: int | None = None) -> dict:  # noqa: ANN001  # fmt: skip
    """``sl train``: learn from ``inputs`` and write ``outputs``; the JSON report.

    Parameters
    ----------
    options : dict
        The learning options given (names as :class:`~streamlearn.config.TrainConfig`'s
        fields); the rest come from ``inputs.initial_model`` or the defaults.  A
        grid option (:data:`~streamlearn.run.grid.GRID_OPTIONS`) may be a list of
        ``(typed, value)`` pairs: every configuration is trained over one parse.
    inputs, outputs : Inputs, Outputs
        What to read and where the results go.
    console : Console, optional
        How progress is shown (default: stderr).
    dask : str or distributed.Client, optional
        Train on a Dask cluster (:mod:`streamlearn.distributed`): an address as
        ``sl train --dask`` takes (``"local:2"``, a scheduler file,
        ``"tcp://host:8786"``) or a client; ``sync_every`` also averages the
        workers every that many examples of each.
    """
    console = console or Console(False)
    if dask is None and sync_every is not None:
        raise UsageError("--sync-every applies to --dask runs only")
    if dask is not None:
        from streamlearn import distributed

        client, address = (None, dask) if isinstance(dask, str) else (dask, None)
        return distributed.train(options, inputs, outputs, address=address, client=client,
                                 sync_every=sync_every, console=console)  # fmt: skip
    from streamlearn.run.train import train as run

    return run(options, inputs, outputs, console).report


def train_multiline(options: dict, multiline: dict, inputs: Inputs, outputs: Outputs,
                    console: Console | None = None) -> dict:  # fmt: skip
    """Train a multiline reduction (VW's ``--csoaa_ldf``, ``--cb_adf``, ``--cb K``):
    ``multiline`` holds :class:`~streamlearn.reductions.Multiline`'s fields; the rest
    as :func:`train`.  Returns the run's summary."""
    from streamlearn.run.multiline import Multiline, run

    if "reduction" not in multiline:
        raise UsageError("--cb_type/--rank_all/--csoaa_rank/--clip_p/--ope need --cb_adf, "
                         "--cb K or --csoaa_ldf")  # fmt: skip
    return run(options, Multiline(**multiline), inputs, outputs, console or Console(False))


def train_bandit(options: dict, bandit: dict, inputs: Inputs, outputs: Outputs,
                 console: Console | None = None, dask: str | None = None,
                 client=None) -> dict:  # noqa: ANN001  # fmt: skip
    """``sl train --cb-adf/--cb K/--csoaa-ldf [--explore ...]``: ``bandit`` holds sl's
    bandit options (:data:`streamlearn.run.bandit.BANDIT_OPTIONS`), ``options`` the
    learning options; a bandit model ``-i`` is continued.  ``dask``/``client``: on a Dask
    cluster (:mod:`streamlearn.distributed.bandit`).  Returns the run's summary."""
    from streamlearn.run import bandit as run
    from streamlearn.run.bandit_options import multiline_of

    if dask is not None or client is not None:
        from streamlearn.distributed import bandit as dist

        if options.get("test_only"):
            raise UsageError("--dask trains: score a bandit model with sl predict")
        return dist.train(options, multiline_of(bandit), inputs, outputs, address=dask,
                          client=client, console=console)  # fmt: skip
    test_only = bool(options.get("test_only"))
    return run.train(options, multiline_of(bandit), inputs, outputs,
                     console or Console(False), test_only=test_only)  # fmt: skip


def predict(inputs: Inputs, outputs: Outputs, console: Console | None = None,
            fmt: str = "auto") -> dict:  # fmt: skip
    """``sl predict``: score ``inputs.sources`` with the model ``inputs.initial_model``.

    Writes ``outputs.predictions`` and ``outputs.report``; returns the report
    (loss and accuracy when the input is labeled).  ``fmt`` is ``--format``:
    ``auto`` reads the model's format and refuses input of the other one.
    """
    from streamlearn.run.predict import predict as run

    return run(inputs, outputs, console, fmt=fmt)


def serve(options: dict, inputs: Inputs, outputs: Outputs, serving=None,  # noqa: ANN001
          console: Console | None = None) -> dict:  # fmt: skip
    """``sl serve`` / ``sl vw --daemon``: serve ``inputs.initial_model`` over TCP until a
    signal, with VW's daemon protocol (:mod:`streamlearn.run.serve`).

    ``options``: learning options (TrainConfig fields) merged over the model's;
    ``serving``: a :class:`~streamlearn.run.serve.ServeOptions` (port, learning, saves).
    Returns the server's final ``stats``.
    """
    from streamlearn.run.serve import ServeOptions
    from streamlearn.run.serve import serve as run

    return run(options, inputs, outputs, serving or ServeOptions(), console)


def inspect(path: str | os.PathLike, top: int = 20, as_json: bool = False) -> str:
    """``sl inspect``: a model file's options, counters, sparsity and largest weights."""
    from streamlearn.run.inspect import inspect_model

    return inspect_model(os.fspath(path), top=top, as_json=as_json)


class Model:
    """A sparse linear model: train it on files, lines or matrices, continue it, save, score.

    Parameters
    ----------
    **options
        Training options, named as :class:`~streamlearn.config.TrainConfig`'s
        fields (``algo="tg", loss="logistic", l1=1e-5, bits=20`` ...); the
        defaults are ``sl train``'s.  Checked at once (``ValueError``).

    Attributes
    ----------
    report : dict or None
        The figures of the last :meth:`fit` / :meth:`partial_fit`: what
        ``sl train --report`` writes (progressive loss, curve, passes, ...).

    Notes
    -----
    A Model may be shared between threads: :meth:`fit`, :meth:`partial_fit`
    and :meth:`save` take the model's lock, so two threads' ``partial_fit``
    calls are learned one after the other, each from the other's result (none
    is lost), and a save writes one whole state.  Predictions do not wait for
    a fit: they score the model as it was when they started (training makes a
    new one); they take a second lock of their own while they score.

    ``partial_fit(lines=...)`` with no other argument keeps the learner live
    between calls (:class:`~streamlearn.run.resident.Resident`): a call costs
    what its lines cost, not the table's size, and N one-line calls learn what
    one call over the N lines learns.  The model is captured from the live
    learner when something needs it (:meth:`save`, the :attr:`weights`,
    pickling, a prediction of a file, a matrix or several lines).  One line's
    :meth:`predict` after such a call is scored by the live learner itself,
    learning switched off, nothing counted (the snapshot's scorer would give
    the same number at O(table) per call: ``predict`` then ``partial_fit`` of
    each line costs what VW's ``predict`` then ``learn`` costs); it takes the
    model's lock for that line, so it waits for a ``partial_fit`` under way.
    """

    def __init__(self, **options) -> None:
        from streamlearn.run.bandit_options import BANDIT_OPTIONS, multiline_of

        bandit = {k: options.pop(k) for k in BANDIT_OPTIONS if k in options}
        try:
            self._bandit_ml = multiline_of(bandit) if bandit else None
        except UsageError as e:
            raise ValueError(e.message) from None
        self._bandit = None
        # a list where the options keep a tuple (interactions=["ab"]): as given, it conflicted
        # with the fitted model's own tuple when partial_fit continued it
        options = {k: tuple(v) if type(v) is list else v for k, v in options.items()}  # noqa: E721
        try:
            TrainConfig(**options)
        except (ConfigError, TypeError) as e:
            raise ValueError(str(e)) from None
        self.options = options
        self._live_report = None
        self.report = None
        self._lock = threading.RLock()
        self._score_lock = threading.Lock()
        self._resident = None
        self._scoring = None
        self._model = None

    @property
    def report(self) -> dict | None:
        """The figures of the last :meth:`fit` / :meth:`partial_fit` (what ``sl train
        --report`` writes); after a live ``partial_fit(lines=...)``, its summary (loss,
        examples, ...: :func:`~streamlearn.run.report.summary`, made when read) with an
        empty ``curve``."""
        if self._live_report is not None:
            from streamlearn.run.report import summary

            before, after, config = self._live_report
            m = self._model
            # a run's counters: the model's and its own (preserve_performance_counters),
            # else its own only -- as the run that partial_fit used to start reports them
            stats = after if config.preserve_performance_counters else after - before
            out = summary(stats, config.loss_id, m.nnz, config.oaa)
            self._report = {**out, "curve": [], "live": True}
            self._live_report = None
        return self._report

    @report.setter
    def report(self, value: dict | None) -> None:
        self._report = value
        self._live_report = None

    @property
    def _model(self) -> model_io.Model | None:
        """The model as it stands (captured from the live learner when it has learned)."""
        resident = self._resident
        if resident is not None and resident.model is None:
            with self._lock:
                if self._resident is not None:
                    self._m = self._resident.snapshot()
        return self._m

    @_model.setter
    def _model(self, m: model_io.Model | None) -> None:
        self._m = m
        self._resident = None  # a new model (fit, load): the live learner is gone

    def __getstate__(self) -> dict:
        self._model  # noqa: B018 - captured from the live learner
        self.report  # noqa: B018 - made from the live learner's counters
        state = dict(self.__dict__)
        for key in ("_lock", "_score_lock", "_resident", "_scoring", "_live_report"):
            state.pop(key, None)  # this process's: a copy gets its own
        if state.get("_bandit") is not None:  # a bandit travels as its model
            state["_m"] = state.pop("_bandit").to_model()
        return state

    def __setstate__(self, state: dict) -> None:
        state.pop("_model", None)  # (pickled before the live learner existed)
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._score_lock = threading.Lock()
        self._resident = None
        self._scoring = None
        self._live_report = None
        self.__dict__.setdefault("_m", None)
        self.__dict__.setdefault("_bandit_ml", None)
        self._bandit = None
        if self._m is not None and self._m.meta.get("multiline") is not None:
            from streamlearn.run.bandit import Bandit

            self._bandit = Bandit.from_model(self._m)
        if "report" in state:  # (pickled before report was made on demand)
            self._report = state["report"]
        self.__dict__.setdefault("_report", None)

    # -- files -----------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike) -> Model:
        """A model saved by ``sl train -f`` or :meth:`save` (checked as ``sl`` checks it), or
        VW's (``vw -f``; of a multiline reduction too, its kept options read as ``sl vw -i``
        reads them)."""
        from streamlearn.run.mlmodel import kept_options

        m = cls()
        if kept_options(str(path)) is not None:  # VW's model of a bandit
            return m._load_vw_bandit(str(path))
        m._model = model_io.load(str(path))
        m.options = _options_of(m._model.config)  # fit() starts over with the same options
        if isinstance(m._model.meta.get("multiline"), dict):  # a bandit (run/bandit.py)
            from streamlearn.run.bandit import Bandit

            m._bandit = Bandit.from_model(m._model)
            m._bandit_ml = dict(m._model.meta["multiline"])
        return m

    def _load_vw_bandit(self, path: str) -> Model:
        import dataclasses

        from streamlearn.run.bandit import Bandit
        from streamlearn.vwargs import model_translation, resolve

        t = model_translation(path)
        try:
            resolve(t)
            b = Bandit.from_vw(path, t.learn, t.multiline)
        except UsageError as e:
            raise ValueError(e.message) from None
        self._bandit = b
        self._bandit_ml = {k: v for k, v in dataclasses.asdict(b.ml).items() if k != "notes"}
        self.options = _options_of(b.config)
        return self

    def save(self, path: str | os.PathLike, format: str = "sl") -> None:  # noqa: A002
        """Write the model (atomically, with its resume state) to ``path``: in sl's format,
        or ``format="vw"`` in Vowpal Wabbit's (``"vw_predict_only"``: its weights only),
        which ``vw -i`` reads (docs/vw-compat.md).  :meth:`load` reads either."""
        with self._lock:
            if self._bandit is not None:  # (VW's model of a multiline reduction keeps its options)
                self._bandit.save(str(path), format)
                return
            model_io.save(self._fitted(), str(path), format)

    # -- contextual bandits -----------------------------------------------------

    def choose(self, context, actions, *, seed: int | None = None):  # noqa: ANN001, ANN201
        """Choose an action for ``context`` among ``actions``: a
        :class:`~streamlearn.run.bandit.Choice` (``action``: its index in ``actions``,
        ``probability``: to log with its cost, ``pmf``: every action's probability).

        For a model made with bandit options (``Model(cb_adf=True, explore="epsilon",
        epsilon=0.1)``; ``explore``: ``epsilon``, ``first``, ``softmax``, ``bag``,
        ``squarecb``, as ``sl train --explore``).  A context and each action is a VW text
        feature string (``"|user a b |time c:2"``) or a dict of namespace -> features (a
        string, a list of names, or a dict of name -> value); ``context`` may be None.
        Nothing is learned.  The action is drawn from the pmf as VW's
        ``sample_after_normalizing`` draws it, seeded with ``seed`` or with the model's
        ``seed`` plus the number of draws so far (reproducible).

        Batch form: ``context`` a list of contexts and ``actions`` a list of action lists
        (``seed`` a list or None): a list of choices, all through the kernels at once.
        """
        from streamlearn.run import bandit as bd

        batch = isinstance(context, list)
        with self._lock:
            b = self._bandit_live()
            if batch:
                seeds = seed if isinstance(seed, list) else None
                return bd.choose(b, context, actions, seeds)
            return bd.choose(b, [context], [actions], None if seed is None else [seed])[0]

    def learn(self, context, actions, chosen, cost, probability):  # noqa: ANN001, ANN201
        """Learn that ``actions[chosen]`` was taken for ``context`` with ``probability``
        and cost ``cost`` (lower is better); returns the pmf the model gave the example
        before learning it (float64[K], by action index), as ``sl vw -p`` writes it.

        Batch form: lists of contexts, action lists, chosen indices, costs and
        probabilities (a list of pmfs).  N calls of one example and one call of N learn
        the same weights: those of ``sl train --cb-adf ...`` over the same examples.
        """
        from streamlearn.run import bandit as bd

        with self._lock:
            b = self._bandit_live()
            if isinstance(context, list):
                labels = list(zip(chosen, cost, probability, strict=True))
                return bd.learn(b, context, actions, labels)
            return bd.learn(b, [context], [actions], [(chosen, cost, probability)])[0]

    def _learn_bandit(self, fresh: bool, data, y, lines, run: dict) -> Model:  # noqa: ANN001
        """``fit``/``partial_fit`` of a bandit: VW multiline text from paths or lines."""
        if y is not None or run:
            raise ValueError("a bandit learns from files or lines= of multiline examples "
                             "(and choose/learn); no y or run options")  # fmt: skip
        paths = paths_of(data, lines)
        if paths is None and lines is None:
            raise ValueError("a bandit's fit/partial_fit takes paths or lines=")
        if fresh:
            self._bandit = None
        b = self._bandit_live()
        since = b.stats.copy()
        for block in _bandit_blocks(b, paths, lines):
            part = b.parse(block)
            if part.bad:
                import warnings

                for msg in part.bad[:10]:
                    warnings.warn(f"skipped: {msg}", stacklevel=3)
            b.run(part)
        self.report = b.summary(since)
        return self

    def _bandit_live(self):  # noqa: ANN202
        """The live bandit learner (made from the options at the first call)."""
        if self._bandit is None:
            from streamlearn.run.bandit import Bandit
            from streamlearn.run.multiline import Multiline

            if not self._bandit_ml:
                raise ValueError("not a bandit: make the model with bandit options, e.g. "
                                 "Model(cb_adf=True, explore='epsilon')")  # fmt: skip
            try:
                config = self._config(self.options, None)
                self._bandit = Bandit(config, Multiline(**self._bandit_ml))
            except UsageError as e:
                raise ValueError(e.message) from None
        return self._bandit

    # -- training ---------------------------------------------------------------

    def fit(self, data=None, y=None, *, lines=None, sample_weight=None, base=None,
            **run) -> Model:  # noqa: ANN001  # fmt: skip
        """Train from scratch on ``data`` (paths, an open file, or a matrix with labels
        ``y``) or on ``lines`` (an iterable of text lines).

        ``sample_weight`` (importance weights) and ``base`` (added to each
        prediction) go with a matrix.  ``run`` takes the options of one run:
        ``passes``, ``holdout_period``, ``early_terminate``, ``format`` (of
        lines and files: ``auto`` detects it, and a model continued must have
        been trained on the same format), and
        ``quiet=False`` to print ``sl train``'s progress on stderr,
        ``report=PATH`` to also write the JSON report, ``strict=True`` to
        fail on the first malformed line, ``allow_empty=True`` to accept data
        without a usable example (otherwise :class:`~streamlearn.errors.NoExamples`,
        and the model is left as it was), and ``dask=`` (a ``distributed.Client``
        or an address as ``sl train --dask`` takes: ``"local:2"``, a scheduler
        file, ``"tcp://host:8786"``) with ``sync_every=N`` to train files on a
        Dask cluster (:mod:`streamlearn.distributed.driver`): the same kind of model.
        """
        with self._lock:
            if self._bandit_ml is not None:
                return self._learn_bandit(True, data, y, lines, run)
            return self._learn(None, data, y, lines, sample_weight, base, run)

    def partial_fit(self, data=None, y=None, *, lines=None, sample_weight=None, base=None,
                    **run) -> Model:  # noqa: ANN001  # fmt: skip
        """Continue training, as ``sl train -i``: the result equals one run over
        everything seen so far (see :meth:`fit` for the arguments)."""
        with self._lock:  # from reading the model to replacing it: no update lost
            if self._bandit_ml is not None:
                return self._learn_bandit(False, data, y, lines, run)
            if (lines is not None and data is None and y is None and sample_weight is None
                    and base is None and not run and self._m is not None):  # fmt: skip
                return self._learn_live(lines)
            return self._learn(self._model, data, y, lines, sample_weight, base, run)

    def _learn_live(self, lines) -> Model:  # noqa: ANN001
        """``partial_fit(lines=...)`` on the live learner (:class:`Resident`)."""
        resident = self._resident
        if resident is None:
            from streamlearn.run.resident import Resident

            start = self._m
            config = self._config(self.options, start)
            resident = self._resident = Resident(start, config)
        before = resident.learner.stats.copy()
        line = one_line(lines)
        if line is None or not resident.learn_line(line):  # (one line: two kernel calls)
            resident.learn(resident.parse(line_blocks(lines, LineSource.name)))
        # this call's figures, as a run's report holds them: made if read (report)
        self._live_report = (before, resident.learner.stats.copy(), resident.config)
        return self

    def _learn(self, start: model_io.Model | None, data, y, lines, sample_weight, base,
               run: dict) -> Model:  # noqa: ANN001  # fmt: skip
        """Train from ``start`` (None: from scratch); the model changes only when it succeeds."""
        from streamlearn.run.train import train as run_train

        console = Console(run.pop("quiet", True))
        inputs = Inputs(strict=run.pop("strict", False),
                        allow_empty=run.pop("allow_empty", False))  # fmt: skip
        outputs = Outputs(report=run.pop("report", None))
        explicit = {**self.options, **run}
        source = None
        paths = paths_of(data, lines)
        cluster, sync_every = run.pop("dask", None), run.pop("sync_every", None)
        if cluster is not None:
            if paths is None:
                raise ValueError("dask= trains on files (workers open them by path)")
            return self._fit_on_dask(start, paths, cluster, sync_every, inputs, outputs,
                                     console, {**self.options, **run})  # fmt: skip
        if paths is not None:
            if y is not None or sample_weight is not None or base is not None:
                raise ValueError("y, sample_weight and base go with a matrix, not with files")
            inputs.sources = paths
        else:
            config = self._config(explicit, start)
            source = source_of(data, lines, y, sample_weight, base, config,
                               fmt=explicit.get("format", "auto"))  # fmt: skip
        trained = run_train(explicit, inputs, outputs, console, initial=start,
                            source=source)  # fmt: skip
        self._model = trained.models[0]
        self.report = trained.report
        return self

    def _fit_on_dask(self, start: model_io.Model | None, paths: list[str], cluster,
                     sync_every: int | None, inputs: Inputs, outputs: Outputs, console: Console,
                     explicit: dict) -> Model:  # noqa: ANN001  # fmt: skip
        """:func:`train` on Dask, through model files in a temporary directory."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="sl-api-") as tmp:
            inputs.sources = paths
            outputs.final_model = os.path.join(tmp, "final.sl")
            if start is not None:
                inputs.initial_model = os.path.join(tmp, "initial.sl")
                model_io.save(start, inputs.initial_model)
            self.report = train(explicit, inputs, outputs, console, dask=cluster,
                                sync_every=sync_every)  # fmt: skip
            self._model = model_io.load(outputs.final_model)
        return self

    # -- scoring -----------------------------------------------------------------

    def predict(self, data=None, *, lines=None, link: str = "identity",
                format: str = "auto") -> np.ndarray:  # noqa: ANN001, A002  # fmt: skip
        """One prediction per example of ``data`` (paths, an open file or a matrix) or
        of ``lines``.

        ``link="logistic"`` gives probabilities (``"glf1"``, ``"poisson"``: VW's
        other links); a model trained with ``binary=True`` gives -1/+1.  Malformed
        lines score NaN (as ``sl predict -p`` writes ``nan``), so the result lines
        up with the input.  A multiclass model (``oaa=K``) predicts classes 1..K, or
        0..K-1 with ``indexing=0`` (as floats; NaN for a malformed line); see
        :meth:`predict_proba` and :meth:`decision_function`.  Input of the other
        format than the model's (VW lines for a model fitted on a matrix, which is
        svmlight's format, or the reverse) raises ``ValueError``, as ``sl predict``
        refuses it, unless ``format`` names it (``sl predict --format``).  A contextual
        bandit (``Model(cb_adf=True, ...)``, or loaded) predicts from multiline examples:
        a list with each example's pmf by action index, nothing learned or counted.
        """
        from streamlearn.run.runner import LINKS, shown

        if self._bandit_ml is not None or self._bandit is not None:
            return self._predict_bandit(data, lines)
        if link not in LINKS:
            raise ValueError(f"link must be one of {', '.join(LINKS)}, not {link!r}")
        preds = self._predictions(data, lines, format=format)
        if preds.ndim == 2:
            if link != "identity":
                raise ValueError("a multiclass model predicts classes: use predict_proba() "
                                 "for probabilities")  # fmt: skip
            return preds[:, 0].copy()
        return shown(preds, link, self._options_now().binary)

    def _predict_bandit(self, data, lines) -> list[np.ndarray]:  # noqa: ANN001
        """A bandit's :meth:`predict`: each multiline example's pmf (by action index; 1 on
        the top action without an explorer), nothing learned or counted."""
        from streamlearn.run import bandit as bd

        paths = paths_of(data, lines)
        if paths is None and lines is None:
            raise ValueError("a bandit predicts from files or lines= of multiline examples "
                             "(choose() for one context and its actions)")  # fmt: skip
        with self._lock:
            b = self._bandit_live()
            return bd.predict(b, _bandit_blocks(b, paths, lines))

    def predict_proba(self, data=None, *, lines=None) -> np.ndarray:  # noqa: ANN001
        """Class probabilities, an ``(n, K)`` array with columns in the order of
        :attr:`classes_` (NaN rows for malformed lines).

        A multiclass model (``oaa=K``): VW's ``--probabilities`` -- the logistic
        function of each class's score, normalised to sum 1 (needs ``loss="logistic"``).
        A binary model with logistic loss: ``[P(-1), P(+1)]`` from its margin.
        """
        loss = self._options_now().loss
        if loss != "logistic":
            raise ValueError(f"predict_proba needs a model trained with loss='logistic' "
                             f"(this one learns {loss} loss)")  # fmt: skip
        preds = self._predictions(data, lines, probabilities=True)
        if preds.ndim == 2:
            return preds[:, 1:].copy()
        p = 1.0 / (1.0 + np.exp(-preds))
        return np.column_stack([1.0 - p, p])

    def decision_function(self, data=None, *, lines=None) -> np.ndarray:  # noqa: ANN001
        """The raw scores: a multiclass model's ``(n, K)`` class scores (each clipped to the
        prediction range, as VW's); a binary or regression model's margins ``(n,)``."""
        preds = self._predictions(data, lines)
        return preds[:, 1:].copy() if preds.ndim == 2 else preds

    @property
    def n_classes(self) -> int:
        """The number of classes K of a multiclass model (``oaa=K``); 0 otherwise."""
        return self.config.oaa

    @property
    def classes_(self) -> np.ndarray:
        """The classes, in the order of :meth:`predict_proba`'s columns: ``1..K`` for a
        multiclass model (``0..K-1`` with ``indexing=0``), ``[-1, 1]`` for a binary one."""
        k = self.config.oaa
        first = 0.0 if self.config.indexing == 0 else 1.0
        return np.arange(first, first + k) if k else np.array([-1.0, 1.0])

    def _predictions(self, data, lines, probabilities: bool = False,
                     format: str = "auto") -> np.ndarray:  # noqa: ANN001, A002  # fmt: skip
        """The scorer's output for every example: ``(n,)``, or ``(n, K + 1)`` for a
        multiclass model (the class, then the K scores or probabilities)."""
        from streamlearn.run.runner import FormatGuard

        line = one_line(lines) if data is None else None
        resident = self._resident
        if line is not None and resident is not None and format in ("auto", "vw"):
            # learned live since the last snapshot: the live learner scores the line with
            # learning off, as the snapshot's scorer would (no O(table) snapshot per call)
            with self._lock:
                p = None if self._resident is not resident or resident.model is not None \
                    else resident.score_line(line, probabilities)  # fmt: skip
            if p is not None:
                return p
        m = self._fitted()
        if self._scoring is None:
            from streamlearn.run.resident import Scoring

            self._scoring = Scoring()
        if line is not None:  # (one VW line, the model's format: two kernel calls)
            with self._score_lock:
                p = self._scoring.score_line(m, line, probabilities, format)
            if p is not None:
                return p
        guard = FormatGuard(m.config, format, "the model")
        paths = paths_of(data, lines)
        if paths is not None:
            from streamlearn.run.passes import parsed

            c = m.config
            batches: Iterable[Batch] = parsed(paths, guard.parse_as, c.bits, c.constant,
                                              BLOCK_BYTES, 1, c.namespaces())  # fmt: skip
        elif data is None and lines is not None:  # the per-line path: the parse options kept
            from streamlearn.io.parse import FORMATS, parse_blocks

            c = self._scoring.lines_config(m, guard.parse_as)
            batches = parse_blocks(line_blocks(lines, LineSource.name), FORMATS.get(c.format),
                                   c.bits, c.constant, self._scoring.inter)  # fmt: skip
        else:
            batches = source_of(data, lines, None, None, None, m.config, labeled=False,
                                fmt=guard.parse_as).batches()  # fmt: skip
        out = []
        with self._score_lock:
            scorer = self._scoring.scorer_for(m, probabilities)
            sc = self._scoring
            for batch in batches:
                if sc.model is m and sc.checked is not None:  # no re-validated copy per call
                    sc.checked = guard.check(batch, sc.checked)
                else:
                    guard.check(batch, m.config)
                if m.config.oaa:
                    batch.labels[:] = np.nan  # scoring: a line's label (any) plays no part
                p = scorer.score(batch)
                p[batch.status != 0] = np.nan
                out.append(p)
        if out:
            return np.concatenate(out)
        return np.empty((0, m.config.oaa + 1)) if m.config.oaa else np.empty(0)

    # -- what is in it -------------------------------------------------------------

    @property
    def config(self) -> TrainConfig:
        """The model's options (after training), or the options it will train with."""
        if self._model is not None:
            return self._model.config
        return self._config(self.options, None)

    @property
    def weights(self) -> np.ndarray:
        """The current weights, one per slot (2^bits, zero where nothing was learned)."""
        return self._fitted().dense_weights()

    @property
    def nnz(self) -> int:
        """The number of non-zero weights."""
        return self._fitted().nnz

    def __repr__(self) -> str:
        c = self.config
        state = f"{self._model.nnz} non-zero weights" if self._model is not None else "not fitted"
        return f"Model(algo={c.algo!r}, loss={c.loss!r}, bits={c.bits}; {state})"

    def _options_now(self) -> TrainConfig:
        """The fitted model's options; a live learner's when it learned since the last
        snapshot (the snapshot's options, without the O(table) snapshot)."""
        resident = self._resident
        if resident is not None and resident.model is None and self._bandit is None:
            return resident.config
        return self._fitted().config

    def _fitted(self) -> model_io.Model:
        if self._bandit is not None:
            return self._bandit.to_model()
        if self._model is None:
            raise ValueError("the model is not trained yet: call fit() or Model.load() first")
        return self._model

    def _config(self, explicit: dict, start: model_io.Model | None) -> TrainConfig:
        from streamlearn.run.train import merge_config

        try:
            return merge_config(start.config if start is not None else None, explicit,
                                model_io.unrecorded(start))
        except UsageError as e:
            raise ValueError(e.message) from None


def _bandit_blocks(b, paths: list[str] | None, lines):  # noqa: ANN001, ANN202
    """The blocks of a bandit's multiline text, from ``paths`` or ``lines`` (whole
    examples: never split between blocks, but under ``--cb K``, whose examples are lines)."""
    from streamlearn.io.multiline import example_blocks
    from streamlearn.io.reader import iter_blocks

    blocks = iter_blocks(paths, BLOCK_SIZE, Inputs().max_line_bytes) if paths is not None \
        else line_blocks(lines, LineSource.name)  # fmt: skip
    return blocks if b.ml.reduction == "cb" else example_blocks(blocks)


def _options_of(config: TrainConfig) -> dict:
    """A model's training options, as ``Model(**options)`` takes them (not the per-run ones)."""
    from dataclasses import fields

    from streamlearn.config import PER_RUN

    return {f.name: getattr(config, f.name) for f in fields(TrainConfig) if f.name not in PER_RUN}
