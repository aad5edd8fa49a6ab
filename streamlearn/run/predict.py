"""``sl predict``: score inputs with a saved model, with learning switched off."""

from __future__ import annotations

import time

import numpy as np

from streamlearn import model as model_io
from streamlearn.errors import BrokenPipe
from streamlearn.learners.base import (
    P_HOLDOUT,
    S_N,
    S_NROWS,
    new_rows,
    new_stats,
    scoring_gstate,
)
from streamlearn.learners.losses import CLASSIFICATION
from streamlearn.run.console import Console
from streamlearn.run.options import Inputs, Outputs, check
from streamlearn.run.passes import parsed
from streamlearn.run.report import summary, write_json
from streamlearn.run.runner import (
    PARSE_WORKERS,
    BatchChecks,
    FormatGuard,
    PredictionWriter,
    prefetch,
    run_kernel,
)
from streamlearn.system.process import committing, interruptible


class Scorer:
    """A saved model's predictions, batch by batch, with its statistics (loss when labeled).

    Scoring is plain SGD's kernel with learning switched off, on the model's
    current weights, within the model's prediction range (as VW's ``-t``).
    """

    def __init__(self, m: model_io.Model) -> None:
        from streamlearn.learners import sgd

        self.kernel = sgd.train_batch
        self.loss_id = m.config.loss_id
        self.table = m.dense_weights().reshape(-1, 1)
        self.params = m.config.params(learn=False)
        self.params[P_HOLDOUT] = 0.0  # every example is scored the same way
        self.gstate = scoring_gstate(m.gstate)
        self.stats = new_stats()
        self.rows = new_rows()

    def score(self, batch) -> np.ndarray:  # noqa: ANN001 - a Batch or its arrays
        """The predictions (margins) of ``batch``'s rows; NaN-free for usable rows."""
        preds = run_kernel(self.kernel, self.table, self.gstate, self.params, self.loss_id,
                           batch, self.stats, self.rows)  # fmt: skip
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
    """
    console = console or Console(False)
    started = time.perf_counter()
    model_path = inputs.initial_model
    if model_path is None:
        raise ValueError("predict needs a model: Inputs(initial_model=PATH)")
    check(inputs, outputs)
    m = model_io.load(model_path)
    config = m.config
    guard = FormatGuard(config, fmt, f"model {model_path}")
    scorer = Scorer(m)
    checks = BatchChecks(console, config, inputs.strict)
    writer = PredictionWriter(outputs.predictions, outputs.link)
    batches = parsed(
        inputs.sources or ["-"],
        guard.parse_as,
        config.bits,
        config.constant,
        inputs.block_size,
        PARSE_WORKERS,
        config.namespaces(),
        inputs.max_line_bytes,
    )
    try:
        with interruptible("stopped"):
            for batch in prefetch(batches):
                guard.check(batch, config)
                checks.check(batch)
                preds = scorer.score(batch)
                writer.write(batch, preds)
                if writer.broken and not outputs.report:
                    break  # nobody reads the predictions and nothing else is asked for
            result = summary(scorer.stats, config.loss_id, m.nnz)
            result.update(
                model=model_path,
                skipped_lines=checks.skipped,
                skipped_reasons=dict(checks.reasons),
                first_errors=checks.first_errors,
            )
            if outputs.predictions:
                result["predictions_complete"] = not writer.broken
            with committing():  # from here on the run completes: a signal is dropped
                writer.close()
                elapsed = time.perf_counter() - started
                result.update(
                    seconds=elapsed,
                    examples_per_second=result["examples"] / elapsed if elapsed > 0 else None,
                )
                if outputs.report:
                    write_json(outputs.report, result)
    except BaseException:
        writer.abort()
        raise
    if not writer.broken:
        lines = [f"sl predict: {int(scorer.stats[S_N])} examples scored with {model_path}"]
        if result["average_loss"] is not None:
            lines.append(f"average {config.loss} loss = {result['average_loss']:.6f}")
            if config.loss_id in CLASSIFICATION:
                lines.append(f"accuracy = {result['accuracy']:.6f}")
        if checks.skipped:
            lines.append(f"skipped lines = {checks.skipped}")
        console.say("\n".join(lines))
    if writer.broken:
        raise BrokenPipe("")
    return result
