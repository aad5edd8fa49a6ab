"""The online learners' passes (``sl train``'s learning loop, single-line examples).

:class:`Run` is one configuration's state through a run (its learner, outputs,
progressive table, pass log and predictions file); :func:`learn_passes` gives
every parsed block to every run still learning -- the batches checked on the
parser's thread, the learners of a grid on both cores (or one example at a
time under ``sl vw --audit``), predictions checked finite and written, slot
names collected -- and ends each pass (``--decay_learning_rate``,
``--save-per-pass``, early termination).  Setting the runs up, the batch
learners and the outputs at the end are :mod:`streamlearn.run.train`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import TrainConfig
from streamlearn.errors import Diverged
from streamlearn.io.batch import Batch
from streamlearn.io.classes import check_classes
from streamlearn.learners.base import P_ETA0, P_PROGRESS, S_PASS_N, new_rows
from streamlearn.run.classes import prediction_width
from streamlearn.run.driver import drive
from streamlearn.run.finite import check_finite, check_model
from streamlearn.run.grid import Configuration
from streamlearn.run.learner import Learner, class_weigher
from streamlearn.run.options import Outputs
from streamlearn.run.passes import Passes, PassLog
from streamlearn.run.report import ProgressTable, multilabel_texts
from streamlearn.run.runner import (
    BatchChecks,
    ClassNumbering,
    FormatGuard,
    PredictionWriter,
    prefetch,
    run_kernel,
    split_bounds,
)
from streamlearn.system import process

LEARN_WORKERS = 2
"""Threads that run a grid's learners on a block (their kernels release the GIL)."""


@dataclass
class Run:
    """One configuration's learner, outputs, progressive table and pass log."""

    configuration: Configuration
    learner: Learner
    outputs: Outputs
    params: np.ndarray
    progress: ProgressTable
    log: PassLog
    writer: PredictionWriter
    rows: np.ndarray = field(default_factory=new_rows)
    classes: ClassNumbering | None = None
    """--oaa: how the labels number the classes (the first class in written predictions)."""
    done: bool = False
    """Early-terminated (or diverged): reads no more batches."""
    diverged: str | None = None
    result: dict = field(default_factory=dict)
    final: model_io.Model | None = None
    tally: object | None = None
    """``sl vw``: what VW counts that the kernels do not (``run/vwconsole.py: Tally``)."""
    pass_models: list[str] = field(default_factory=list)
    """--save-per-pass: the pass models written so far."""
    replay: object | None = None
    """``sl vw --replay_b N``: the examples handed to VW's experience replay one by one
    (``run/vwreplay.py: Replay``)."""
    topk: object | None = None
    """``sl vw --top K``: the groups of examples, their ``-p`` and table lines, in the
    table's and the predictions' place (``run/vwtopk.py: TopK``)."""
    regaudit: object | None = None
    """``sl vw --audit_regressor``: the model's weights written as the data names them, in
    the learner's place (``run/vwregaudit.py: RegressorAudit``)."""


def mark_diverged(run: Run, e: Diverged, alone: bool) -> None:
    """A configuration that diverged stops; a run of one configuration fails with it."""
    if alone:
        raise e
    run.diverged = f"{run.configuration.name}: {e.message}"
    run.done = True


def check_format(guard: FormatGuard, batch: Batch, runs: list[Run]) -> None:
    """The format read (the same for every configuration), recorded in each one's options."""
    fmt = guard.check(batch, runs[0].learner.config).format
    for run in runs:
        if run.learner.config.format != fmt:
            run.learner.config = run.learner.config.replace(format=fmt)


def learn_passes(runs: list[Run], config: TrainConfig, passes: Passes, guard: FormatGuard,
                 checks: BatchChecks, collector, names, bar, board,
                 end_of_input) -> None:  # fmt: skip
    """The online learners' passes (:func:`~streamlearn.run.driver.drive`): every block to
    every run still learning.

    ``collector``: --invert-hash's names (``io.names.NameCollector``), else the initial
    model's ``names`` go into the models; ``bar``, ``board``: the progress bar and a grid's
    table, when there are.  ``end_of_input()`` is called once the first pass has read the
    whole input.
    """
    learning = _Online(runs, config, collector, names, bar, board,
                       replayed=getattr(passes, "use_cache", False) and config.passes > 1)
    try:
        drive(config.passes, _Checked(passes, guard, checks, runs, class_weigher(config)),
              learning, end_of_input)  # fmt: skip
        for run in runs:
            if run.diverged is None:
                run.final = run.log.final_model(learning.snapshot(run, final=True))
                run.result = run.log.report()
    finally:
        learning.pool.close()


class _Checked:
    """The batches of a pass (:class:`~streamlearn.run.passes.Passes`), checked on the
    parser's side of :func:`~streamlearn.run.runner.prefetch` (:func:`_checked`)."""

    def __init__(self, passes: Passes, guard: FormatGuard, checks: BatchChecks,
                 runs: list[Run], weigh) -> None:  # noqa: ANN001  # fmt: skip
        self.passes, self.guard, self.checks, self.runs, self.weigh = (
            passes, guard, checks, runs, weigh)

    def batches(self, pass_no: int) -> Iterator[Batch]:
        return prefetch(_checked(self.passes.batches(), pass_no, self.guard, self.checks,
                                 self.runs, self.weigh))  # fmt: skip


class _Online:
    """:func:`learn_passes`' learning (:class:`~streamlearn.run.driver.Learning`): a
    batch to each run still learning (a grid's on both cores, or one example at a time
    under ``--audit``), its predictions written, slot names collected; a pass's end for
    each run (:func:`_end_pass`); the run stops once every run is done."""

    def __init__(self, runs: list[Run], config: TrainConfig, collector, names, bar, board,
                 replayed: bool) -> None:  # noqa: ANN001  # fmt: skip
        self.runs = runs
        self.collector = collector
        self.names = names
        self.bar = bar
        self.board = board
        self.replayed = replayed  # later passes replayed from the parsed cache: no text
        self.pool = _Pool(len(runs))
        self.auditor = _auditor(runs, config)
        self.printer = _printer(runs, config)
        self.active: list[Run] = []

    def snapshot(self, run: Run, final: bool = False):  # noqa: ANN201 - taken when PassLog asks
        names = self.collector.names if self.collector is not None else self.names
        return functools.partial(run.learner.snapshot, names, final=final)

    def begin_pass(self, pass_no: int) -> None:
        self.active = [run for run in self.runs if not run.done]
        for run in self.active:
            run.progress.begin_pass(pass_no, run.learner.stats)
            run.log.begin(run.learner.stats)
        if self.board is not None:
            self.board.begin_pass(pass_no)

    def learn(self, batch: Batch, pass_no: int) -> None:
        learning = [run for run in self.active if not run.done]
        if learning and learning[0].regaudit is not None:  # nothing learned or predicted
            run = learning[0]
            run.regaudit.run(batch)
            run.done = run.regaudit.done  # (every weight written: no more examples, as VW)
            return
        if self.printer is not None:  # --print: one example at a time, written, not learned
            learned = [self.printer.run(functools.partial(_score_one, run), run.params, batch,
                                        run.progress, run.learner.stats, run.rows)
                       for run in learning]  # fmt: skip
        elif learning and learning[0].replay is not None:  # --replay_b: one by one
            for run in learning:
                _room(run, batch.n)
            learned = [run.replay.run(batch, run.learner.stats, run.rows) for run in learning]
        elif learning and learning[0].topk is not None:  # --top K: group by group
            learned = [run.topk.run(functools.partial(_learn, run), batch) for run in learning]
        elif self.auditor is not None:  # one example at a time, each shown before it learns
            for run in learning:
                _room(run, batch.n)  # (the lines of the batch's calls, emitted after them)
            learned = [self.auditor.run(functools.partial(_learn, run), run.learner, batch,
                                        run.classes, run.rows) for run in learning]  # fmt: skip
        else:
            learned = self.pool.map(functools.partial(_learn, batch=batch), learning)
        for run, preds in zip(learning, learned, strict=True):
            _learned(run, batch, preds, pass_no, alone=len(self.runs) == 1)
        if self.board is not None:
            self.board.emit()
        if self.collector is not None:
            _collect(self.collector, self.runs, learning, batch, pass_no, self.replayed)
        if self.bar is not None:
            self.bar.update(batch.n)

    def end_pass(self, pass_no: int) -> bool:
        for run in self.active:
            if run.topk is not None and not run.done:
                run.topk.end()  # (the input's last group)
            if run.replay is not None and not run.done:
                run.replay.end_pass()  # (what the slots hold, learned)
            if not run.done:  # (else it diverged during this pass)
                _end_pass(run, pass_no, self.snapshot)
        if self.board is not None:
            self.board.end_pass(self.active)
        return all(run.done for run in self.runs)


def _auditor(runs: list[Run], config: TrainConfig):  # noqa: ANN202 - a vwaudit.Auditor or None
    """``sl vw --audit``: each example shown as VW shows it, before it is learned (not for
    one-against-all but gd's without probabilities)."""
    if runs[0].outputs.audit and runs[0].outputs.vw_format and not (
        config.oaa and (config.algo != "gd" or runs[0].outputs.probabilities)
    ):
        from streamlearn.run.vwaudit import Auditor

        return Auditor(config)
    return None


def _printer(runs: list[Run], config: TrainConfig):  # noqa: ANN202 - a vwprint.Printer or None
    """``sl vw --print``: VW's print learner (each example written, nothing learned)."""
    if runs[0].outputs.print_examples:
        from streamlearn.run.vwprint import Printer

        return Printer(config, runs[0].progress.say)
    return None


def _score_one(run: Run, params: np.ndarray, one) -> np.ndarray:  # noqa: ANN001 - a batch of one
    """The learner's kernel over a batch of one with ``params`` (``--print``: learning off)."""
    learner = run.learner
    return run_kernel(learner.spec.train_batch, learner.table, learner.gstate, params,
                      learner.config.loss_id, one, learner.stats, run.rows,
                      prediction_width(learner.config))  # fmt: skip


def _checked(batches: Iterator[Batch], pass_no: int, guard: FormatGuard, checks: BatchChecks,
             runs: list[Run], weigh=None) -> Iterator[Batch]:  # noqa: ANN001  # fmt: skip
    """``batches`` checked (format, malformed lines, labels) on the parser's side of
    :func:`~streamlearn.run.runner.prefetch`, so that the learners' thread only learns."""
    for batch in batches:
        if pass_no == 1:
            check_format(guard, batch, runs)
            checks.check(batch)
        elif checks.classes:  # the cache replays labels as parsed
            check_classes(batch, checks.classes, checks.vw_labels)
        elif checks.zero_to_negative:
            batch.labels[batch.labels == 0.0] = -1.0
        if weigh is not None:
            weigh(batch)
        yield batch


def _learn(run: Run, batch: Batch) -> np.ndarray:
    """Run the learner's kernel over one batch; return its predictions (VW's ``-r``:
    followed by the scores before clipping, :func:`~streamlearn.run.runner.run_kernel`)."""
    _room(run, batch.n)
    # VW's -r: the kernel writes the unclipped scores after the predictions
    raw = bool(run.outputs.raw_predictions and run.outputs.vw_format)
    learner = run.learner
    return run_kernel(
        learner.spec.train_batch, learner.table, learner.gstate, run.params,
        learner.config.loss_id, batch, learner.stats, run.rows, prediction_width(learner.config),
        raw, getattr(learner.spec.train_batch, "bounds", False),
    )  # fmt: skip


def _room(run: Run, n: int) -> None:
    """Room in the run's table lines for ``n`` examples' (``-P N``: a line every N)."""
    if run.params[P_PROGRESS] < 0 and run.rows.shape[0] < n:
        run.rows = np.zeros((n, run.rows.shape[1]))


def _learned(run: Run, batch: Batch, preds: np.ndarray, pass_no: int, alone: bool) -> None:
    """One run's predictions of a batch it learned: its table's lines, the finite check,
    VW's counts, and the predictions written (the first pass's; every pass's for ``sl vw``)."""
    raw = None
    preds, bounds = split_bounds(preds, batch.n)
    if preds.ndim == 1 and preds.shape[0] == 2 * batch.n:  # VW's -r
        preds, raw = preds[: batch.n], preds[batch.n :]
        raw[batch.status != 0] = np.nan
    first = run.classes.after(batch) if run.classes is not None else 1
    texts = None
    if run.progress.labels == "multilabel":
        texts = getattr(run.learner.spec.train_batch, "table_texts", multilabel_texts)(
            batch.labels, preds, run.learner.config.oaa)  # (--plt: its own, in its order)
    run.progress.emit(run.learner.stats, run.rows, texts)
    try:
        cfg = run.learner.config
        check_finite(batch, preds, cfg.algo, cfg.csoaa)
    except Diverged as e:
        mark_diverged(run, e, alone)
        return
    if run.tally is not None:
        run.tally.observe(batch, run.learner.stats[S_PASS_N], pass_no)
    if run.topk is None and (pass_no == 1 or run.outputs.vw_format):  # VW writes every pass's
        run.writer.write(batch, preds, first, run.classes.predicted if run.classes else None,
                         raw, bounds, getattr(run.learner.spec.train_batch, "p_lines", None))


def _collect(collector, runs: list[Run], learning: list[Run], batch: Batch, pass_no: int,
             replayed: bool) -> None:  # noqa: ANN001 - an io.names.NameCollector  # fmt: skip
    """--invert-hash: the names of the slots ``batch`` used."""
    if runs[0].outputs.vw_format:
        if pass_no == 1:  # VW names every slot it saw, on the first pass
            collector.add(batch)
        return
    collector.add(batch)
    if not replayed:  # a slot's name is pruned only if a later pass names it again
        collector.prune([run.learner.table[:, 0] for run in learning
                         if run.diverged is None])  # fmt: skip


def _end_pass(run: Run, pass_no: int, snapshot) -> None:  # noqa: ANN001 - learn_passes'
    """A pass's end for a run still learning: the learner's finish, the pass log (early
    termination), a converged --bfgs, --save-per-pass and --decay_learning_rate."""
    if run.learner.spec.finish is not None:
        run.learner.spec.finish(run.learner.table, run.learner.gstate, run.params)
    end_pass = getattr(run.learner.spec.train_batch, "end_pass", None)
    if end_pass is not None:  # a reduction's entry counting passes (reductions/lrq.py)
        end_pass()
    # --save-per-pass: one copy of the model, for its file and a new best pass
    model = snapshot(run)() if run.outputs.save_per_pass else None
    if run.log.end(run.learner.stats, snapshot(run) if model is None else lambda m=model: m):
        run.done = True
    if run.learner.spec.stopped is not None and run.learner.spec.stopped(run.learner.gstate):
        run.done = True  # (--bfgs: converged)
    if model is not None:
        _save_pass(model, run, pass_no)
    _decay(run)


def _save_pass(model: model_io.Model, run: Run, pass_no: int) -> None:
    """VW's ``--save_per_pass``: the model as it stands after pass ``pass_no``, written
    at once (atomically) to ``final_model.N`` and named in ``run.pass_models`` (a signal
    meanwhile waits, so that what is written is named); the run's other outputs wait for
    its end."""
    check_model(model)
    outputs = run.outputs
    path = f"{outputs.final_model}.{pass_no}"
    with process.deferring():
        model_io.save(model, path, outputs.model_format, outputs.link)
        run.pass_models.append(path)


def _decay(run: Run) -> None:
    """VW's ``--decay_learning_rate``: the rate of the next pass, times the factor (in
    float32, as VW); a learner whose ledger holds the rate is settled first."""
    d = run.learner.config.decay_learning_rate
    if d == 1.0:
        return
    if run.learner.spec.name not in ("gd", "ftrl"):
        run.learner.spec.rebase(run.learner.table, run.learner.gstate, run.params)
    run.params[P_ETA0] = float(np.float32(np.float32(run.params[P_ETA0]) * np.float32(d)))


class _Pool:
    """The learners of a grid on both cores (their kernels release the GIL); one runs inline."""

    def __init__(self, n: int) -> None:
        self._executor = None
        if n > 1:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(max_workers=min(n, LEARN_WORKERS),
                                                thread_name_prefix="sl-learn")  # fmt: skip

    def map(self, fn, items: list) -> list:
        if self._executor is None or len(items) == 1:
            return [fn(x) for x in items]
        return list(self._executor.map(fn, items))

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
