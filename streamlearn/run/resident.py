"""A model kept live in memory between calls: the Python API's per-line path.

``Model.partial_fit(lines=[line])`` used to run a whole ``sl train -i`` per
call: the table rebuilt from the saved state (O(2^bits)), the driver's
threads started, the model captured again (O(2^bits)) -- 4 to 15 ms a line.
:class:`Resident` keeps the learner's table, global state and counters between
calls, learns each call's batches with the same kernel, checks and options as
``sl train`` (so N one-line calls learn what one run over the N lines learns),
and captures the model only when something asks for it (save, predict, the
weights).  :class:`Scoring` keeps a model's scorer between predictions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import TrainConfig
from streamlearn.errors import Diverged
from streamlearn.io.batch import Batch, Block
from streamlearn.io.formats import FMT_VW
from streamlearn.io.parse import detect_format, parse_blocks
from streamlearn.learners.base import P_BINARY, P_PROGRESS, S_NROWS, new_rows, new_stats
from streamlearn.run.classes import prediction_width
from streamlearn.run.console import Console
from streamlearn.run.finite import check_finite
from streamlearn.run.learner import Learner, class_weigher
from streamlearn.run.predict import Scorer, own_kernel, scoring_params
from streamlearn.run.runner import (
    BatchChecks,
    FormatGuard,
    binary_mode,
    no_examples,
    run_kernel,
)
from streamlearn.system.direct import direct
from streamlearn.system.jit import INTERPRETED


class OneLine:
    """One VW text line through a learner's or a scorer's kernel, no batch: parsed by one
    kernel call into arrays kept between calls (:class:`~streamlearn.io.textparse.
    LineParser`), then the kernel called through its compiled entry for these arguments'
    types (:func:`~streamlearn.system.direct.direct`).  The per-call path of
    :class:`Resident`, :class:`Scoring` and the server's ``Served``."""

    def __init__(self, config: TrainConfig, inter: object) -> None:
        from streamlearn.io.textparse import LineParser

        self.parser = LineParser(config.bits, config.constant, inter)
        self.kernel = None
        self.entry = None
        self.k = 0
        self.batch_only = bool(config.stack)
        """A reduction that owns its options (``--lrq``) reads the batch's namespace bytes,
        which the one-line parser does not keep: its lines take the batch path."""

    def parse(self, line: bytes) -> tuple | None:
        """The row of ``line`` (indptr, labels, weights, bases, status views), or None where
        the batch path must read it (the parser's cases, a malformed line)."""
        if self.batch_only:
            return None
        self.k = self.parser.parse(line)
        if self.k < 0:
            return None
        row = self.parser.row
        return row if row[4][0] == 0 else None

    def step(self, kernel, table: np.ndarray, gstate: np.ndarray, params: np.ndarray,
             loss_id: int, stats: np.ndarray, rows: np.ndarray, width: int) -> np.ndarray:  # noqa: ANN001  # fmt: skip
        """``kernel`` (a learner's ``train_batch`` or a scorer's) over the parsed row; its
        predictions, ``(1,)`` or ``(1, width)``."""
        lp, k = self.parser, self.k
        indptr, labels, weights, bases, status = lp.row
        preds = np.empty((1, width)) if width else np.empty(1)
        args = (table, gstate, params, loss_id, indptr, lp.indices[:k], lp.values[:k], labels,
                weights, bases, status, stats, rows, preds)  # fmt: skip
        if self.kernel is not kernel:  # (the dispatcher's call, then its entry)
            kernel(*args)
            self.kernel, self.entry = kernel, direct(kernel, args)
        else:
            self.entry(*args)
        stats[S_NROWS] = 0.0
        return preds

    def slots(self) -> np.ndarray:
        """The parsed row's slots (what a learner's step may change)."""
        return self.parser.indices[: self.k]


class Resident:
    """A learner continued from ``model`` with ``config``, live across calls.

    Equivalent to :func:`streamlearn.run.train.train` with the model as initial
    model, one pass, no outputs, called once per :meth:`learn` (what
    ``Model.partial_fit`` did), except that nothing O(table) is done per call.
    A call that fails (a diverging step) restores what its batches changed: the
    touched slots, the global state and the counters.
    """

    def __init__(self, model: model_io.Model | None, config: TrainConfig) -> None:
        self.config = config
        self.learner = Learner.from_model(model, config) if model is not None \
            else Learner.fresh(config)  # fmt: skip
        self.params = config.params()
        self.params[P_PROGRESS] = 0.0
        self.params[P_BINARY] = binary_mode(config.binary, "identity")
        self.rows = new_rows()
        console = Console(True)
        self.checks = BatchChecks(console, config, strict=False)
        self.guard = FormatGuard(model.config if model is not None else None, None, "the model")
        self.weigh = class_weigher(config)
        self.width = prediction_width(config)
        self.inter = config.namespaces()
        self.code: int | None = None
        """The format's code once lines were accepted (None: detected from the next ones)."""
        self.checked = config
        """``config`` with the format the lines were seen in (FormatGuard's)."""
        self.model: model_io.Model | None = model
        """The model as it stands (None: learned since; :meth:`snapshot` captures it)."""
        self.preds: np.ndarray | None = None
        """The last batch's predictions (:meth:`learn`)."""
        self._lines: OneLine | None = None  # (learn_line's and score_line's)
        self._scoring: tuple | None = None  # (score_line's params, stats and rows)
        self.loss_id = config.loss_id  # (a property of the config: computed once)

    def parse(self, blocks: Iterable[Block]) -> Iterator[Batch]:
        """The batches of ``blocks``, parsed as ``sl train`` parses lines (the format
        detected from the first line learned, then kept, as one run over all the calls'
        lines detects it once; the interactions compiled once, not per call)."""
        c = self.config
        return parse_blocks(blocks, self.code, c.bits, c.constant, self.inter)

    def learn(self, batches: Iterable[Batch], params: np.ndarray | None = None) -> int:
        """Learn ``batches`` in order; the number of usable rows (the last batch's
        predictions, made before each row was learned: :attr:`preds`).  ``params``: the
        kernel's, if not the run's (``P_LEARN`` 0: score and count only, VW's ``predict``).

        Input of the other format than the model's is refused (``UsageError``), and
        input without a usable line (``NoExamples``), before anything is learned."""
        lr = self.learner
        batches = batches if type(batches) is list else list(batches)  # noqa: E721
        bad = []
        for batch in batches:
            # kept: the same config once the format is seen (no re-validated copy per call)
            self.checked = self.guard.check(batch, self.checked)
            if self.code is None and batch.fmt >= 0:
                self.code = batch.fmt  # accepted: later calls parse in it, undetected
            bad.append(int(np.count_nonzero(batch.status)))
        if all(b == batch.n for b, batch in zip(bad, batches, strict=True)):
            raise no_examples("the lines", sum(b.n for b in batches), [])
        used = 0
        for batch, n_bad in zip(batches, bad, strict=True):
            n_bad = self.checks.check(batch, n_bad)
            if self.weigh is not None:
                self.weigh(batch)
            slots = batch.indices  # (a slot twice is restored twice to the same values)
            saved = (lr.table.take(slots, axis=0), lr.gstate.copy(), lr.stats.copy())
            preds = run_kernel(lr.spec.train_batch, lr.table, lr.gstate,
                               self.params if params is None else params,
                               self.loss_id, batch, lr.stats, self.rows, self.width)
            self.preds = preds
            lr.stats[S_NROWS] = 0.0  # no progress table
            # (a sum of finite numbers that overflows only sends it to the exact check)
            if n_bad or not math.isfinite(preds.item(0) if preds.size == 1 else preds.sum()):
                try:
                    check_finite(batch, preds, self.config.algo)
                except Diverged:
                    lr.table[slots], lr.gstate[:], lr.stats[:] = saved
                    raise
            self.model = None
            used += batch.n - n_bad
        if lr.spec.finish is not None and used:
            lr.spec.finish(lr.table, lr.gstate, self.params)
        return used

    def learn_line(self, line: bytes, params: np.ndarray | None = None) -> bool:
        """:meth:`learn` of one VW text line (ending in ``\\n``) in two kernel calls and no
        batch: parsed into arrays kept between calls (:class:`~streamlearn.io.textparse.
        LineParser`), learned (``params`` as :meth:`learn`'s), its predictions in
        :attr:`preds`.  False, with nothing learned, where :meth:`learn` must run: before
        the format is settled by a first line, a line the parser leaves, a malformed line (its
        error is :meth:`learn`'s), class weights, a step that does not stay finite."""
        if self.code != FMT_VW or self.weigh is not None or INTERPRETED:
            return False
        one = self._lines
        if one is None:
            one = self._lines = OneLine(self.config, self.inter)
        row = one.parse(line)
        if row is None:
            return False
        labels, bases = row[1], row[3]
        if self.checks.classification:  # (label 0 read as -1, as BatchChecks.check does)
            self.checks.labels(labels)
        classes = self.checks.classes
        if classes:  # (check_classes: a class 0..K, no base)
            y = labels[0]
            if y == y and not (0.0 <= y <= classes and y == math.floor(y) and bases[0] == 0.0):
                return False
        lr = self.learner
        idx = one.slots()
        # (take, not table[idx]: numpy indexes with uint32 slots 3-4x slower)
        saved = (lr.table.take(idx, axis=0), lr.gstate.copy(), lr.stats.copy())
        preds = one.step(lr.spec.train_batch, lr.table, lr.gstate,
                         self.params if params is None else params, self.loss_id, lr.stats,
                         self.rows, self.width)  # fmt: skip
        if not math.isfinite(preds.item(0) if preds.size == 1 else preds.sum()):
            lr.table[idx], lr.gstate[:], lr.stats[:] = saved  # (learn() says why)
            return False
        self.checks.examples += 1
        self.preds = preds
        self.model = None
        if lr.spec.finish is not None:
            lr.spec.finish(lr.table, lr.gstate, self.params)
        return True

    def score_line(self, line: bytes, probabilities: bool) -> np.ndarray | None:
        """The prediction of one VW text line by the live learner with learning off, as the
        :class:`Scorer` of a :meth:`snapshot` gives it (``(1,)``, or ``(1, K + 1)``), with
        nothing learned or counted and no snapshot made (O(table)); None where the snapshot's
        scorer must run: before the format is settled as VW text, a learner the scorer does
        not score with its own kernel, l1/l2 state the scorer settles, a line the one-line
        parser leaves.  Called under the owner's lock (the learner is live)."""
        c = self.config
        if (self.code != FMT_VW or INTERPRETED or c.l1 or c.l2 or c.csoaa or c.multilabel
                or not own_kernel(c)):  # fmt: skip
            return None
        one = self._lines
        if one is None:
            one = self._lines = OneLine(c, self.inter)
        row = one.parse(line)
        if row is None:
            return None
        if c.oaa:
            row[1][0] = np.nan  # scoring: a line's label (any) plays no part
        scoring = self._scoring
        if scoring is None or scoring[0] != probabilities:
            scoring = self._scoring = (probabilities, scoring_params(c, probabilities),
                                       new_stats(), new_rows())  # fmt: skip
        _, params, stats, rows = scoring
        lr = self.learner
        return one.step(lr.spec.train_batch, lr.table, lr.gstate, params, self.loss_id, stats,
                        rows, self.width)  # fmt: skip

    def snapshot(self) -> model_io.Model:
        if self.model is None:
            self.model = self.learner.snapshot()
        return self.model


class Scoring:
    """A model's :class:`Scorer`, built once (its dense weights are O(2^bits))."""

    def __init__(self) -> None:
        self.model: model_io.Model | None = None
        self.probabilities = False
        self.scorer: Scorer | None = None
        self._configs: tuple = (None, None, None)
        self.checked: TrainConfig | None = None
        """The model's config with the format its lines were seen in (FormatGuard's)."""
        self.inter = None
        self._lines: OneLine | None = None  # (score_line's, for ``inter``)
        self._lines_for = None

    def lines_config(self, model: model_io.Model, fmt: str) -> TrainConfig:
        """``model``'s options with ``fmt`` as the format lines are parsed in (checked once)."""
        m, f, config = self._configs
        if m is not model or f != fmt:
            config = model.config
            if config.format != fmt:
                config = config.replace(format=fmt)
            self._configs = (model, fmt, config)
            self.checked = model.config
            self.inter = config.namespaces()  # compiled once per model
        return config

    def score_line(self, model: model_io.Model, line: bytes, probabilities: bool,
                   fmt: str) -> np.ndarray | None:  # fmt: skip
        """The scorer's output for one VW text line (``(1,)``, or ``(1, K + 1)``) in two
        kernel calls and no batch, as ``Model.predict``'s batch path gives it; None where
        that path must run (a model of another format, a line the one-line parser leaves,
        a malformed line)."""
        recorded = model.config.format
        if INTERPRETED or not (fmt == "vw" or fmt == "auto" and (recorded == "vw" or (
                recorded == "auto" and detect_format(line) == FMT_VW))):  # fmt: skip
            return None  # (VW text, as the batch path would read the line)
        config = self.lines_config(model, fmt)
        scorer = self.scorer_for(model, probabilities)
        if self.checked is not None and self.checked.format != "vw":  # (FormatGuard.check's)
            self.checked = self.checked.replace(format="vw")
        one = self._lines
        if one is None or self._lines_for is not self.inter:
            one = self._lines = OneLine(config, self.inter)
            self._lines_for = self.inter
        row = one.parse(line)
        if row is None:
            return None
        if config.oaa:
            row[1][0] = np.nan  # scoring: a line's label (any) plays no part
        sc = scorer
        preds = one.step(sc.kernel, sc.table, sc.gstate, sc.params, sc.loss_id, sc.stats,
                         sc.rows, sc.width)  # fmt: skip
        return preds

    def scorer_for(self, model: model_io.Model, probabilities: bool) -> Scorer:
        if self.scorer is None or self.model is not model or self.probabilities != probabilities:
            if self.model is not model:
                self.checked = model.config
            self.scorer = Scorer(model, probabilities)
            self.model, self.probabilities = model, probabilities
        return self.scorer
