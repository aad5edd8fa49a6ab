"""What ``sl train`` and ``sl predict`` share: the format check, the parser
thread, per-batch checks, predictions files, and running a kernel over one batch.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Iterable, Iterator

import numpy as np

from streamlearn.config import TrainConfig
from streamlearn.errors import MalformedData, UsageError
from streamlearn.io import cache as batch_cache
from streamlearn.io.batch import REASONS, Batch
from streamlearn.io.parse import FORMATS
from streamlearn.learners.losses import CLASSIFICATION
from streamlearn.run.console import Console
from streamlearn.system.outputs import STDOUT, Output
from streamlearn.system.process import silence_stdout

SHOWN_ERRORS = 10
PARSE_WORKERS = 2
"""Blocks parsed at once: parsing costs ~5x learning, so both cores parse (the
learner runs on the main thread between blocks)."""


# ---------------------------------------------------------------------------
# inputs


FORMAT_NAMES = {code: name for name, code in FORMATS.items()}


class FormatGuard:
    """The format a run parses with, and the check that the input is in the model's format.

    A model records the format it was trained on.  Continuing it, or scoring
    with it, on input of the other format would hash other features into its
    slots, so with ``--format auto`` the input's detected format must match
    the recorded one (exit 2 otherwise, naming the ``--format`` that reads it
    anyway: an svmlight index ``i`` is VW's feature ``i`` in the default
    namespace, so the conversion is well defined).  :meth:`check` returns the
    configuration with the format the run actually read.
    """

    def __init__(self, model_config: TrainConfig | None, explicit: str | None, what: str) -> None:
        recorded = model_config.format if model_config is not None else "auto"
        self.recorded = recorded if recorded in FORMAT_NAMES.values() else None
        self.explicit = explicit if explicit not in (None, "auto") else None
        self.parse_as = self.explicit or "auto"
        self.what = what
        self._seen: str | None = None

    def check(self, batch: Batch, config: TrainConfig) -> TrainConfig:
        if self._seen is None and batch.fmt in FORMAT_NAMES:
            seen = FORMAT_NAMES[batch.fmt]
            if self.explicit is None and self.recorded is not None and seen != self.recorded:
                raise UsageError(
                    f"{batch.block.source} looks like {seen} data, but {self.what} was trained "
                    f"on {self.recorded} lines; to read it as {seen} anyway, pass --format "
                    f"{seen} (svmlight index i is VW's feature i in the default namespace)"
                )
            self._seen = seen
        if self._seen is None or config.format == self._seen:
            return config
        return config.replace(format=self._seen)


_END = object()


def prefetch(items: Iterable, depth: int = 2) -> Iterator:
    """Run ``items`` on a background thread, ``depth`` items ahead."""
    q: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(_END)
        except BaseException as e:  # handed to the consumer
            q.put(e)

    thread = threading.Thread(target=work, name="sl-parser", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()


# ---------------------------------------------------------------------------
# per-batch work shared by train and predict


class BatchChecks:
    """Malformed lines (reported with file:line), label conventions, predictions."""

    def __init__(self, console: Console, config: TrainConfig, strict: bool) -> None:
        self.console = console
        self.config = config
        self.strict = strict
        self.skipped = 0
        self.reasons: Counter[str] = Counter()
        self.first_errors: list[str] = []
        self.classification = config.loss_id in CLASSIFICATION

    def check(self, batch: Batch) -> None:
        bad = np.flatnonzero(batch.status != 0)
        if bad.size:
            self.skipped += int(bad.size)
            for i in bad:
                reason = REASONS.get(int(batch.status[i]), f"error {int(batch.status[i])}")
                self.reasons[reason] += 1
                if len(self.first_errors) < SHOWN_ERRORS:
                    where = f"{batch.block.source}:{int(batch.line[i])}"
                    msg = f"{where}: {reason}: {batch_cache.excerpt(batch, i)}"
                    self.first_errors.append(msg)
                    if self.strict:
                        raise MalformedData(msg + " (--strict: no model written)")
                    self.console.warn_once(msg, f"skipped {msg}")
        if getattr(batch, "n_touching_tags", 0):
            self.console.warn_once(
                "tag",
                "a label touching '|' (e.g. '1|f a') is read as a tag, as VW does: "
                "that example has no label; put a space before '|' to make it a label",
            )
        if self.classification:
            labels = batch.labels
            zero = labels == 0.0
            if zero.any():
                labels[zero] = -1.0
                self.console.warn_once(
                    "zero", f"{self.config.loss} loss needs labels -1/+1: label 0 read as -1"
                )
            odd = (labels != 1.0) & (labels != -1.0) & ~np.isnan(labels)
            if odd.any():
                v = labels[np.flatnonzero(odd)[0]]
                self.console.warn_once(
                    "odd", f"label {v:g} is not -1 or +1 as {self.config.loss} loss expects"
                )


class PredictionWriter:
    """``-p``: one line per input example line, written as each batch is scored.

    A usable example gets its prediction (and its tag, byte for byte); a
    malformed line gets ``nan`` (and its tag when it had one), so the
    predictions can be joined to the input lines.  Each batch's lines are
    flushed at once, so a reader of a live stream sees them promptly.  A file is written atomically
    (:class:`~streamlearn.system.outputs.Output`); when the reader of standard output
    or of a FIFO goes away, writing stops quietly and :attr:`broken` is set.
    """

    def __init__(self, path: str | None, link: str) -> None:
        self.link = link
        self.path = path
        self.broken = False
        self.out = Output(path, "predictions") if path else None

    def write(self, batch: Batch, preds: np.ndarray) -> None:
        if self.out is None or self.broken:
            return
        p = preds
        if self.link == "logistic":
            p = 1.0 / (1.0 + np.exp(-p))
        data = batch.block.data
        lines = []
        for v, a, b in zip(
            p.tolist(), batch.tag_start.tolist(), batch.tag_end.tolist(), strict=True
        ):
            if b > a:  # the tag's bytes as they were, UTF-8 or not
                lines.append(b"%.9g %s\n" % (v, data[a:b].tobytes()))
            else:
                lines.append(b"%.9g\n" % v)
        try:
            self.out.write(b"".join(lines))
            self.out.flush()
        except BrokenPipeError:
            self._lost_reader()

    def _lost_reader(self) -> None:
        self.broken = True
        if self.out.path in STDOUT:
            silence_stdout()

    def close(self) -> None:
        """Make the predictions visible (rename a file into place); see :meth:`abort`."""
        if self.out is not None and not self.broken:
            try:
                self.out.commit()
            except BrokenPipeError:
                self._lost_reader()

    def abort(self) -> None:
        """Drop the predictions of a failed run (an existing file is left as it was)."""
        if self.out is not None:
            self.out.abort()


def run_kernel(
    train_batch, table, gstate, params, loss_id: int, batch: Batch, stats, rows
) -> np.ndarray:
    """One call of a learner's ``train_batch`` kernel over ``batch``; its predictions.

    ``batch`` is a :class:`Batch` or anything with its CSR and row arrays
    (the tests pass their random streams).
    """
    preds = np.empty(batch.n)
    train_batch(
        table, gstate, params, loss_id, batch.indptr, batch.indices, batch.values,
        batch.labels, batch.weights, batch.bases, batch.status, stats, rows, preds,
    )  # fmt: skip
    return preds
