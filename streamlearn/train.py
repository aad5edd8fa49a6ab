"""The driver: read batches, run a learner kernel over them, report, save.

It is the only code that knows about predictions files and models (passes and
the parsed-batch cache are in :mod:`streamlearn.passes`); it never looks inside
an example.  Parsing of the next block runs on a second thread while the kernel
learns the current one (both release the GIL).
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

import numpy as np

from streamlearn import cache as batch_cache
from streamlearn import model as model_io
from streamlearn.config import FIXED_BY_MODEL, ConfigError, TrainConfig
from streamlearn.errors import (
    Diverged,
    InputUnreadable,
    Interrupted,
    MalformedData,
    ModelError,
    UsageError,
)
from streamlearn.io.batch import REASONS, Batch
from streamlearn.learners import resolve, spec_by_name
from streamlearn.learners.base import (
    G_N,
    G_T,
    GSTATE_SIZE,
    P_HOLDOUT,
    S_NROWS,
    LearnerSpec,
    new_rows,
    new_stats,
)
from streamlearn.losses import CLASSIFICATION
from streamlearn.passes import Passes, PassLog, parsed
from streamlearn.report import HEADER, summary, summary_text, table_line, write_json

SHOWN_ERRORS = 10
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
    if path is None or path == "-":
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
        if path == "-":
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


# ---------------------------------------------------------------------------
# train


def merge_config(model_cfg: TrainConfig | None, explicit: dict) -> TrainConfig:
    """Options for a run: the model's (when continuing), overridden by explicit ones.

    Options fixed by the model (bits, algorithm, loss, constant, hashing) may
    be repeated but not changed.
    """
    try:
        if model_cfg is None:
            return TrainConfig(**explicit)
        for key in FIXED_BY_MODEL:
            if key in explicit and explicit[key] != getattr(model_cfg, key):
                raise UsageError(
                    f"--{key.replace('_', '-')} {explicit[key]} conflicts with the initial "
                    f"model, which was trained with {key.replace('_', '-')} "
                    f"{getattr(model_cfg, key)}"
                )
        return model_cfg.replace(**explicit)
    except ConfigError as e:
        raise UsageError(str(e)) from None


@dataclass
class Learner:
    """A learner's live state: spec, table, global state, counters."""

    config: TrainConfig
    spec: LearnerSpec
    table: np.ndarray
    gstate: np.ndarray
    stats: np.ndarray

    @classmethod
    def fresh(cls, config: TrainConfig) -> Learner:
        spec = resolve(config.algo, config.l1, config.l2)
        params = config.params()
        return cls(config, spec, spec.new_table(config.bits), spec.init_gstate(params), new_stats())

    @classmethod
    def from_model(cls, model: model_io.Model, config: TrainConfig) -> Learner:
        spec = resolve(config.algo, config.l1, config.l2)
        if spec.name == model.learner:
            table = model.table(spec.fresh)
            gstate = model.gstate.copy()
        else:
            # different regularisers: warm start from the model's current weights
            if spec_by_name(model.learner).name == "smidas":
                raise UsageError("cannot change the options of a smidas model")
            table = spec.new_table(config.bits)
            table[model.slots, 0] = model.weights
            gstate = spec.init_gstate(config.params())
            gstate[G_T] = model.gstate[G_T]
            gstate[G_N] = model.gstate[G_N]
        stats = model.stats.copy()
        if stats.shape[0] != new_stats().shape[0] or gstate.shape[0] != GSTATE_SIZE:
            raise ModelError("model counters have an unexpected layout")
        return cls(config, spec, table, gstate, stats)

    def snapshot(self, names=None, meta=None) -> model_io.Model:
        return model_io.from_training(
            self.config,
            self.spec,
            self.table,
            self.gstate,
            self.stats,
            self.config.params(),
            names=names,
            meta=meta,
        )


def _print_config(console: Console, config: TrainConfig, opts: RunOptions, spec) -> None:
    c = config
    lines = [
        f"sl train: algo = {c.algo} ({spec.name} kernel), loss = {c.loss}, bits = {c.bits}",
        f"learning rate = {c.learning_rate:g}, power_t = {c.power_t:g}, "
        f"initial_t = {c.initial_t:g}, l1 = {c.l1:g}, l2 = {c.l2:g}",
    ]
    if c.algo == "tg":
        lines.append(f"theta = {c.theta:g}, period = {c.period}")
    if c.passes > 1:
        lines.append(f"passes = {c.passes}, holdout period = {c.effective_holdout}")
    src = ", ".join(opts.sources) if opts.sources else "<stdin>"
    lines.append(f"reading {src} (format {c.format})")
    if opts.initial_model:
        lines.append(f"continuing from {opts.initial_model}")
    console.say("\n".join(lines))


def train(explicit: dict, opts: RunOptions, console: Console | None = None) -> dict:
    """Train over ``opts.sources``; return the JSON report (also written if asked).

    ``explicit`` holds the options given on the command line (names as in
    :class:`~streamlearn.config.TrainConfig`); the rest come from the initial
    model or the defaults.
    """
    console = console or Console(opts.quiet)
    started = time.perf_counter()
    initial = model_io.load(opts.initial_model) if opts.initial_model else None
    config = merge_config(initial.config if initial else None, explicit)
    check_inputs(opts.sources)
    for path, what in [
        (opts.final_model, "final model"),
        (opts.predictions, "predictions"),
        (opts.report, "report"),
        (opts.readable_model, "readable model"),
        (opts.invert_hash, "invert-hash model"),
        (opts.cache, "cache"),
    ]:
        check_output(path, what)
    learner = Learner.from_model(initial, config) if initial else Learner.fresh(config)
    _print_config(console, config, opts, learner.spec)
    params = config.params()
    checks = BatchChecks(console, config, opts.strict)
    writer = PredictionWriter(opts.predictions, opts.link)
    passes = Passes(
        opts.sources, config, opts.cache, opts.block_size, PARSE_WORKERS, SHOWN_ERRORS
    )
    log = PassLog(config, console.say)
    rows = new_rows()
    curve: list[list[float]] = []
    names = initial.names if initial is not None else None
    collector = None
    if opts.invert_hash:
        from streamlearn.names import NameCollector

        collector = NameCollector(config.bits, config.format, config.constant)
        if initial is not None:
            collector.names.update(initial.names)
    console.say(HEADER)
    bar = _progress_bar(console)
    try:
        with interruptible():
            for pass_no in range(1, config.passes + 1):
                log.begin(learner.stats)
                if collector is not None:
                    names = collector.names
                for batch in prefetch(passes.batches()):
                    if pass_no == 1:
                        checks.check(batch)
                    elif checks.classification:
                        batch.labels[batch.labels == 0.0] = -1.0
                    preds = _learn(learner, params, batch, rows)
                    _emit_rows(console, learner.stats, rows, curve)
                    _check_finite(batch, preds)
                    if pass_no == 1:
                        writer.write(batch, preds)
                        if collector is not None:
                            collector.add(batch)
                            collector.prune(learner.table[:, 0])
                    if bar is not None:
                        bar.update(batch.n)
                if log.end(learner.stats, functools.partial(learner.snapshot, names)):
                    break
            final = log.final_model(functools.partial(learner.snapshot, names))
            _save(final, opts)
    finally:
        if bar is not None:
            bar.close()
            console.bar = None
        writer.close()
        passes.close()
    result = summary(learner.stats, config.loss_id, final.nnz)
    result.update(log.report())
    elapsed = time.perf_counter() - started
    result.update(
        config=config.to_dict(),
        learner=learner.spec.name,
        curve=curve,
        skipped_lines=checks.skipped,
        skipped_reasons=dict(checks.reasons),
        first_errors=checks.first_errors,
        seconds=elapsed,
        examples_per_second=result["examples"] / elapsed if elapsed > 0 else None,
        final_model=opts.final_model,
        initial_model=opts.initial_model,
    )
    console.say(summary_text(result))
    if opts.report:
        write_json(opts.report, result)
    return result


def _learn(learner: Learner, params: np.ndarray, batch: Batch, rows: np.ndarray) -> np.ndarray:
    """Run the learner's kernel over one batch; return its predictions."""
    preds = np.empty(batch.n)
    learner.spec.train_batch(
        learner.table,
        learner.gstate,
        params,
        learner.config.loss_id,
        batch.indptr,
        batch.indices,
        batch.values,
        batch.labels,
        batch.weights,
        batch.bases,
        batch.status,
        learner.stats,
        rows,
        preds,
    )
    return preds


def _save(final: model_io.Model, opts: RunOptions) -> None:
    """Write the model and its readable forms (after checking it is finite)."""
    _check_model(final)
    if opts.final_model:
        model_io.save(final, opts.final_model)
    if opts.readable_model or opts.invert_hash:
        from streamlearn.names import write_readable

        if opts.readable_model:
            write_readable(opts.readable_model, final, with_names=False)
        if opts.invert_hash:
            write_readable(opts.invert_hash, final, with_names=True)


def _progress_bar(console: Console):
    if console.quiet or not console.stream.isatty():
        return None
    from tqdm import tqdm

    console.bar = tqdm(unit=" ex", unit_scale=True, file=console.stream, leave=False)
    return console.bar


def _emit_rows(console: Console, stats: np.ndarray, rows: np.ndarray, curve: list) -> None:
    n = int(stats[S_NROWS])
    for r in range(n):
        curve.append([float(x) for x in rows[r]])
        console.say(table_line(rows[r]))
    stats[S_NROWS] = 0.0


def _check_finite(batch: Batch, preds: np.ndarray) -> None:
    ok = batch.status == 0
    if not np.all(np.isfinite(preds[ok])):
        i = int(np.flatnonzero(ok & ~np.isfinite(preds))[0])
        raise Diverged(
            f"{batch.block.source}:{int(batch.line[i])}: prediction is not finite; the "
            "weights diverged: lower --learning-rate, or scale the feature values"
        )


def _check_model(model: model_io.Model) -> None:
    if not np.all(np.isfinite(model.weights)):
        raise Diverged(
            "weights are not finite at the end of training: lower --learning-rate "
            "(no model written)"
        )


# ---------------------------------------------------------------------------
# predict


def predict(model_path: str, opts: RunOptions, console: Console | None = None) -> dict:
    """Score ``opts.sources`` with a saved model; report loss when labels are present."""
    from streamlearn.learners.base import S_N

    console = console or Console(opts.quiet)
    started = time.perf_counter()
    m = model_io.load(model_path)
    check_inputs(opts.sources)
    check_output(opts.predictions, "predictions")
    check_output(opts.report, "report")
    config = m.config
    w = m.dense_weights()
    from streamlearn.learners import sgd

    # Scoring is plain SGD's kernel with learning switched off, on current weights.
    table = w.reshape(-1, 1)
    params = config.params(learn=False)
    params[P_HOLDOUT] = 0.0  # every example is scored the same way
    stats = new_stats()
    rows = new_rows()
    gstate = np.zeros(GSTATE_SIZE)
    checks = BatchChecks(console, config, opts.strict)
    writer = PredictionWriter(opts.predictions if opts.predictions else None, opts.link)
    try:
        with interruptible():
            for batch in prefetch(
                parsed(
                    opts.sources or ["-"],
                    config.format,
                    config.bits,
                    config.constant,
                    opts.block_size,
                    PARSE_WORKERS,
                )
            ):
                checks.check(batch)
                preds = np.empty(batch.n)
                sgd.train_batch(
                    table,
                    gstate,
                    params,
                    config.loss_id,
                    batch.indptr,
                    batch.indices,
                    batch.values,
                    batch.labels,
                    batch.weights,
                    batch.bases,
                    batch.status,
                    stats,
                    rows,
                    preds,
                )
                stats[S_NROWS] = 0.0
                writer.write(batch, preds)
    finally:
        writer.close()
    result = summary(stats, config.loss_id, m.nnz)
    elapsed = time.perf_counter() - started
    result.update(
        model=model_path,
        skipped_lines=checks.skipped,
        skipped_reasons=dict(checks.reasons),
        first_errors=checks.first_errors,
        seconds=elapsed,
        examples_per_second=result["examples"] / elapsed if elapsed > 0 else None,
    )
    if not opts.quiet:
        lines = [f"sl predict: {int(stats[S_N])} examples scored with {model_path}"]
        if result["average_loss"] is not None:
            lines.append(f"average {config.loss} loss = {result['average_loss']:.6f}")
            if config.loss_id in CLASSIFICATION:
                lines.append(f"accuracy = {result['accuracy']:.6f}")
        if checks.skipped:
            lines.append(f"skipped lines = {checks.skipped}")
        console.say("\n".join(lines))
    if opts.report:
        write_json(opts.report, result)
    return result
