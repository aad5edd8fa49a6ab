"""``sl predict``: score inputs with a saved model, with learning switched off."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import FLOAT32_ALGORITHMS, TrainConfig
from streamlearn.errors import BrokenPipe
from streamlearn.io.batch import Batch
from streamlearn.io.interactions import capped
from streamlearn.learners.base import (
    P_BINARY,
    P_HOLDOUT,
    P_PROBS,
    S_N,
    S_NROWS,
    new_rows,
    new_stats,
    scoring_gstate,
)
from streamlearn.learners.losses import CLASSIFICATION
from streamlearn.run.classes import check_probabilities, prediction_width
from streamlearn.run.console import Console
from streamlearn.run.options import Inputs, Outputs, check
from streamlearn.run.passes import first_examples, parsed
from streamlearn.run.report import summary, write_json
from streamlearn.run.runner import (
    PARSE_WORKERS,
    BatchChecks,
    ClassNumbering,
    FormatGuard,
    PredictionWriter,
    binary_mode,
    class_names,
    input_names,
    prefetch,
    run_kernel,
)
from streamlearn.system.outputs import staging
from streamlearn.system.process import committing, interruptible


def own_kernel(config) -> bool:  # noqa: ANN001 - a TrainConfig
    """Whether a model of ``config`` scores with its own learner's kernel, learning off
    (VW's learners, ``FLOAT32_ALGORITHMS``, and one-against-all), rather than plain SGD's
    over its flushed weights (:class:`Scorer`)."""
    return bool(config.oaa) or config.algo in FLOAT32_ALGORITHMS


def scoring_params(config, probabilities: bool = False) -> np.ndarray:  # noqa: ANN001
    """The kernels' params for scoring a model of ``config``: learning off, every example
    scored the same way (no holdout), one-against-all's classes' probabilities or not."""
    params = config.params(learn=False)
    params[P_HOLDOUT] = 0.0
    if config.oaa:
        params[P_PROBS] = 1.0 if probabilities else 0.0
    return params


class Scorer:
    """A saved model's predictions, batch by batch, with its statistics (loss when labeled).

    Scoring is the model's own learner kernel with learning switched off for VW's
    learners (``FLOAT32_ALGORITHMS``) and one-against-all, so that a model scores
    the same through ``sl predict``, ``sl vw -t``, ``sl train -t`` and
    :meth:`streamlearn.api.Model.predict`; the float64 learners score with plain
    SGD's kernel on the model's flushed weights.  Predictions are clipped to the
    model's prediction range (as VW's ``-t``).
    """

    def __init__(self, m: model_io.Model, probabilities: bool = False) -> None:
        self.loss_id = m.config.loss_id
        self.params = scoring_params(m.config, probabilities)
        self.width = prediction_width(m.config)
        if own_kernel(m.config):
            # VW's learners (and one-against-all): the model's own kernel with learning off,
            # on the training table and global state, as `sl vw -t` and `sl train -t` score
            # (the learner's arithmetic: float32 sums in VW's order, clipped); plain SGD's
            # float64 sum of the flushed weights differs from it in the last digits
            from streamlearn.run.learner import Learner

            # (test_only: the very table -t scores with, a VW model's l1/l2 state settled)
            learner = Learner.from_model(m, m.config.replace(test_only=True))
            self.kernel = learner.spec.train_batch
            self.table = learner.table
            self.gstate = learner.gstate
        else:
            from streamlearn.learners import sgd

            self.kernel = sgd.train_batch
            self.table = m.dense_weights().reshape(-1, 1)
            self.gstate = scoring_gstate(m.gstate)
        self.stats = new_stats()
        self.rows = new_rows()

    def score(self, batch) -> np.ndarray:  # noqa: ANN001 - a Batch or its arrays
        """The predictions (margins) of ``batch``'s rows; NaN-free for usable rows.

        One-against-all: ``(n, K + 1)``, the class and the K scores (or probabilities).
        """
        preds = run_kernel(self.kernel, self.table, self.gstate, self.params, self.loss_id,
                           batch, self.stats, self.rows, self.width)  # fmt: skip
        self.stats[S_NROWS] = 0.0
        return preds


def predict(
    inputs: Inputs, outputs: Outputs, console: Console | None = None, fmt: str = "auto"
) -> dict:
    """Score ``inputs.sources`` with the model ``inputs.initial_model``; report loss when
    labels are present.  Writes ``outputs.predictions`` and ``outputs.report`` (a
    final model is not written: nothing is learned).

    ``fmt`` is ``--format``: ``auto`` reads the model's recorded format and
    refuses input of the other one (see :class:`~streamlearn.run.runner.FormatGuard`).
    When the reader of the predictions goes away, scoring stops at once unless
    a ``--report`` is still to be written; the exit status is then 141.

    An input without a usable example fails as ``sl train``'s does
    (:class:`~streamlearn.errors.NoExamples`, exit 10; ``inputs.allow_empty``
    accepts it): no predictions file or report is written, since an empty
    predictions file in place of yesterday's is what a failed producer
    (``sl predict -i m <(zcat missing.gz) -p p.txt``) would otherwise leave.
    Lines already sent to a stream (``-p -``, a FIFO) stay sent: a malformed
    line's ``nan``.
    """
    console = console or Console(False)
    started = time.perf_counter()
    model_path = inputs.initial_model
    if model_path is None:
        raise ValueError("predict needs a model: Inputs(initial_model=PATH)")
    check(inputs, outputs)
    m = model_io.load(model_path)
    if isinstance(m.meta.get("multiline"), dict):  # a bandit's model (run/bandit.py)
        from streamlearn.run import bandit

        return bandit.train({}, {}, inputs, outputs, console, start_model=m, test_only=True)
    outputs = model_io.with_link(m, outputs)  # a VW model's --link
    config = m.config
    check_probabilities(config, outputs.probabilities, outputs.link)
    guard = FormatGuard(config, fmt, f"model {model_path}")
    scorer = Scorer(m, outputs.probabilities)
    scorer.params[P_BINARY] = binary_mode(config.binary, outputs.link)
    checks = BatchChecks(console, config, inputs.strict)
    classes = ClassNumbering(scorer.params, scorer.stats, console) if config.oaa else None
    writer = PredictionWriter(outputs.predictions, outputs.link, config.binary,
                              outputs.raw_predictions, outputs.probabilities,
                              names=class_names(config),
                              multilabel=config.multilabel)  # fmt: skip
    batches = _batches(inputs, config, guard.parse_as)
    try:
        with interruptible("stopped"):
            for batch in prefetch(batches):
                guard.check(batch, config)
                checks.check(batch)
                preds = scorer.score(batch)
                writer.write(batch, preds, classes.after(batch) if classes else 1)
                if writer.broken and not outputs.report:
                    break  # nobody reads the predictions and nothing else is asked for
            if not writer.broken:
                checks.require_examples(inputs.allow_empty, input_names(inputs.sources))
            result = _result(scorer, m, model_path, checks, writer, outputs, started)
            _commit(outputs, result, writer)
    except BaseException:
        writer.abort()
        raise
    if not writer.broken:
        console.say(_summary_text(scorer, config, result, checks, outputs.probabilities,
                                  model_path))  # fmt: skip
    if writer.broken:
        raise BrokenPipe("")
    return result


def _batches(inputs: Inputs, config: TrainConfig, fmt: str) -> Iterator[Batch]:
    """The input's batches, parsed in ``fmt`` with the model's options (up to
    ``--examples``)."""
    return first_examples(
        parsed(
            inputs.sources or ["-"],
            fmt,
            config.bits,
            config.constant,
            inputs.block_size,
            PARSE_WORKERS,
            capped(config.namespaces(), inputs.max_crosses),
            inputs.max_line_bytes,
            inputs.flat_text(config),
        ),
        inputs.examples,
    )


def _result(scorer: Scorer, m: model_io.Model, model_path: str, checks: BatchChecks,
            writer: PredictionWriter, outputs: Outputs, started: float) -> dict:  # fmt: skip
    """The report: the loss of the labeled examples, the lines skipped, the timing; the
    predictions flushed and fsynced (a lost reader noticed now)."""
    config = m.config
    result = summary(scorer.stats, config.loss_id, m.nnz, config.oaa,
                     outputs.probabilities)  # fmt: skip
    result.update(
        model=model_path,
        skipped_lines=checks.skipped,
        skipped_reasons=dict(checks.reasons),
        first_errors=checks.first_errors,
    )
    writer.prepare()
    if outputs.predictions or outputs.raw_predictions:
        result["predictions_complete"] = not writer.broken
    elapsed = time.perf_counter() - started
    result.update(
        seconds=elapsed,
        examples_per_second=result["examples"] / elapsed if elapsed > 0 else None,
    )
    return result


def _commit(outputs: Outputs, result: dict, writer: PredictionWriter) -> None:
    """The report and the predictions made visible together (each written in full first)."""
    with staging() as stage:  # the report written in full before anything is visible
        if outputs.report:
            write_json(outputs.report, result)
        stage.write()
        with committing():  # from here on the run completes: a signal is dropped
            writer.close()
            stage.commit()


def _summary_text(scorer: Scorer, config: TrainConfig, result: dict, checks: BatchChecks,
                  probabilities: bool, model_path: str) -> str:  # fmt: skip
    """What ``sl predict`` says on stderr: the examples scored, the loss (and accuracy)."""
    lines = [f"sl predict: {int(scorer.stats[S_N])} examples scored with {model_path}"]
    if result["average_loss"] is not None and config.oaa:
        lines.append(f"average multiclass 0/1 loss = {result['average_loss']:.6f}")
        lines.append(f"accuracy = {result['accuracy']:.6f}")
        if probabilities:
            lines.append(f"average multiclass log loss = {result['multiclass_log_loss']:.6f}")
    elif result["average_loss"] is not None:
        lines.append(f"average {config.loss} loss = {result['average_loss']:.6f}")
        if config.loss_id in CLASSIFICATION:
            lines.append(f"accuracy = {result['accuracy']:.6f}")
    if checks.skipped:
        lines.append(f"skipped lines = {checks.skipped}")
    return "\n".join(lines)
