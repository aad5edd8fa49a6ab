"""What ``sl train`` and ``sl predict`` share: run options, stderr, input and
output checks, the parser thread, per-batch checks, predictions files,
clean interruption, and running a kernel over one batch.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

import numpy as np

from streamlearn import cache as batch_cache
from streamlearn.config import TrainConfig
from streamlearn.errors import InputUnreadable, Interrupted, MalformedData, UsageError
from streamlearn.io.batch import REASONS, Batch
from streamlearn.losses import CLASSIFICATION

SHOWN_ERRORS = 10
STDOUT = ("-", "/dev/stdout")
"""Prediction paths that mean standard output (``/dev/stdout`` as VW users write it:
opening it anew would truncate a file stdout is redirected to)."""
PARSE_WORKERS = 2
"""Blocks parsed at once: parsing costs ~5x learning, so both cores parse (the
learner runs on the main thread between blocks)."""


@dataclass
class RunOptions:
    """What a run reads and writes (everything that is not a learning option)."""

    sources: list[str] = field(default_factory=list)
    final_model: str | None = None
    initial_model: str | None = None
    predictions: str | None = None
    report: str | None = None
    readable_model: str | None = None
    invert_hash: str | None = None
    cache: str | None = None
    link: str = "identity"
    strict: bool = False
    quiet: bool = False
    block_size: int = 8 << 20


class Console:
    """stderr output: the table, notes and warnings (silent but errors under --quiet)."""

    def __init__(self, quiet: bool, stream: IO[str] | None = None) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.bar = None
        self._warned: set[str] = set()

    def say(self, text: str) -> None:
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream)

    def warn_once(self, key: str, text: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.say(f"warning: {text}")


# ---------------------------------------------------------------------------
# inputs


def check_inputs(sources: list[str]) -> None:
    """Fail before any work when an input file cannot be opened."""
    for s in sources:
        if s != "-" and not os.access(s, os.R_OK):
            reason = "no such file" if not os.path.exists(s) else "permission denied"
            raise InputUnreadable(f"cannot read input {s}: {reason}")


def check_output(path: str | None, what: str) -> None:
    """Fail before training when an output could not be written at the end."""
    if path is None or path in STDOUT:
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{what} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{what} {path}: directory {parent} is not writable")
    if os.path.isdir(path):
        raise UsageError(f"{what} {path} is a directory")


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
    def __init__(self, path: str | None, link: str) -> None:
        self.link = link
        self.f = None
        self.tmp = None
        self.path = path
        if path in STDOUT:
            self.f = sys.stdout
        elif path is not None:
            self.f = open(path, "w", buffering=1 << 20)  # noqa: SIM115

    def write(self, batch: Batch, preds: np.ndarray) -> None:
        if self.f is None:
            return
        ok = batch.status == 0
        p = preds[ok]
        if self.link == "logistic":
            p = 1.0 / (1.0 + np.exp(-p))
        ts, te = batch.tag_start[ok], batch.tag_end[ok]
        data = batch.block.data
        lines = []
        for v, a, b in zip(p.tolist(), ts.tolist(), te.tolist(), strict=True):
            if b > a:
                lines.append(f"{v:.9g} {data[a:b].tobytes().decode('utf-8', 'replace')}\n")
            else:
                lines.append(f"{v:.9g}\n")
        self.f.write("".join(lines))

    def close(self) -> None:
        if self.f is not None and self.f is not sys.stdout:
            self.f.close()
        elif self.f is sys.stdout:
            self.f.flush()


@contextlib.contextmanager
def interruptible():
    """Turn SIGTERM into KeyboardInterrupt so both stop a run the same clean way."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    old = None
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted("interrupted: no model written") from None
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


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
