"""``sl train``: read batches, run a learner kernel over them, report, save.

Passes and the parsed-batch cache are in :mod:`streamlearn.passes`, what
training shares with ``sl predict`` (options, stderr, batch checks, the
parser thread, predictions files) in :mod:`streamlearn.runner`.  The driver
never looks inside an example.  Parsing of the next block runs on other
threads while the kernel learns the current one (both release the GIL).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, fields

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import (
    BATCH_ALGORITHMS,
    FIXED_BY_MODEL,
    PER_RUN,
    ConfigError,
    TrainConfig,
)
from streamlearn.errors import BrokenPipe, Diverged, ModelError, UsageError
from streamlearn.io.batch import Batch
from streamlearn.learners import resolve, spec_by_name
from streamlearn.learners.base import (
    G_CLIP,
    G_N,
    G_T,
    GSTATE_SIZE,
    P_HOLDOUT,
    LearnerSpec,
    new_rows,
    new_stats,
)
from streamlearn.locks import model_lock
from streamlearn.passes import Passes, PassLog
from streamlearn.process import committing, interruptible
from streamlearn.report import HEADER, ProgressTable, summary, summary_text, write_json
from streamlearn.runner import (
    PARSE_WORKERS,
    SHOWN_ERRORS,
    BatchChecks,
    Console,
    FormatGuard,
    PredictionWriter,
    RunOptions,
    prefetch,
    run_kernel,
)

# ---------------------------------------------------------------------------
# train


def merge_config(model_cfg: TrainConfig | None, explicit: dict) -> TrainConfig:
    """Options for a run: the model's (when continuing), overridden by explicit ones.

    Options fixed by the model (bits, algorithm, loss, constant, hashing) may
    be repeated but not changed.  Options of one run (:data:`PER_RUN`: passes,
    holdout, early termination) are never inherited: they are this run's, or
    the defaults.
    """
    try:
        if model_cfg is None:
            return TrainConfig(**explicit)
        defaults = {f.name: f.default for f in fields(TrainConfig)}
        explicit = {**{k: defaults[k] for k in PER_RUN}, **explicit}
        for key in FIXED_BY_MODEL:
            if key in explicit and explicit[key] != getattr(model_cfg, key):
                raise UsageError(
                    f"--{key.replace('_', '-')} {_shown(explicit[key])} conflicts with the "
                    f"initial model, which was trained with {key.replace('_', '-')} "
                    f"{_shown(getattr(model_cfg, key))}"
                )
        return model_cfg.replace(**explicit)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def _shown(value) -> str:
    """An option's value as typed (``ab cd`` for repeated ``-q``, ``none`` for none)."""
    if isinstance(value, tuple):
        return " ".join(value) if value else "none"
    return str(value)


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
        spec = resolve(config.algo, config.l1, config.l2, config.minibatch)
        params = config.params()
        return cls(config, spec, spec.new_table(config.bits), spec.init_gstate(params), new_stats())

    @classmethod
    def from_model(cls, model: model_io.Model, config: TrainConfig) -> Learner:
        spec = resolve(config.algo, config.l1, config.l2, config.minibatch)
        if spec.name == model.learner:
            if spec.name == "gd" and model.state.shape[1] == 3:
                # written before gd kept each slot's last rate (VW's spare float): a zero
                # rate means "not rated yet", which only a zero-gradient update reads
                model.state = np.pad(model.state, ((0, 0), (0, 1)))
            table = model.table(spec.fresh, spec.dtype)
            gstate = model.gstate.copy()
            before, now = model.config.params(), config.params()
            before[P_HOLDOUT] = now[P_HOLDOUT] = 0.0  # per run: no bearing on what is owed
            if not np.array_equal(before, now):
                # e.g. another --l1: settle what each slot owes under the options it
                # was owed under, so the new ones apply from this run's first step
                spec.rebase(table, gstate, before)
        else:
            # different regularisers: warm start from the model's current weights,
            # each slot current at the new learner's initial sums
            try:
                old = spec_by_name(model.learner)
            except ValueError:
                raise ModelError(
                    f"the model was written by learner {model.learner!r}, which this sl "
                    "does not know (a newer version?)"
                ) from None
            if old.name == "smidas" or spec.name == "smidas":
                raise UsageError("cannot change the options of a smidas model")
            if spec.name == "l0":
                raise UsageError(
                    f"cannot continue a {model.learner} model with --algo l0: "
                    "train l0 from scratch (its heap holds every live weight)"
                )
            table = spec.warm_table(config.bits, model.slots, model.weights)
            gstate = spec.init_gstate(config.params())
            gstate[G_T] = model.gstate[G_T]
            gstate[G_N] = model.gstate[G_N]
            # the prediction range (G_CLIP..G_LABEL_MAX)
            gstate[G_CLIP:GSTATE_SIZE] = model.gstate[G_CLIP:GSTATE_SIZE]
        stats = model.stats.copy()
        want = spec.init_gstate(config.params()).shape[0]  # GSTATE_SIZE but for l0's heap
        if stats.shape[0] != new_stats().shape[0] or gstate.shape[0] != want:
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
    if c.minibatch > 1:
        lines.append(f"minibatch = {c.minibatch} (the rate's clock counts steps)")
    if c.algo == "gd":
        lines.append(f"update = {c.update_rule}")
    if c.algo == "ftrl":
        lines.append(f"ftrl_alpha = {c.ftrl_alpha:g}, ftrl_beta = {c.ftrl_beta:g}")
    if c.min_prediction is not None or c.max_prediction is not None:
        lo, hi = c.min_prediction or 0.0, c.max_prediction or 0.0
        lines.append(f"predictions clipped to [{lo:g}, {hi:g}]")
    if c.algo in BATCH_ALGORITHMS:
        lines.append(f"at most {c.passes} epochs, tol = {c.tol:g}"
                     + (f", seed = {c.seed}" if c.algo == "scd" else ""))  # fmt: skip
    elif c.passes > 1:
        lines.append(f"passes = {c.passes}, holdout period = {c.effective_holdout}")
    src = ", ".join(opts.sources) if opts.sources else "<stdin>"
    lines.append(f"reading {src} (format {c.format})")
    if opts.initial_model:
        lines.append(f"continuing from {opts.initial_model}")
    console.say("\n".join(lines))
    if spec.name == "sgd_elastic" and c.learning_rate * c.l2 >= 1.0:
        console.warn_once(
            "l2-step",
            f"--learning-rate {c.learning_rate:g} x --l2 {c.l2:g} >= 1: the SGD form of l2 "
            "scales weights by 1 - rate*l2, so while the rate is >= "
            f"{1.0 / c.l2:g} every step sets all weights to 0 (Lipton & Elkan eq. 9); "
            "lower --l2 or --learning-rate, or use --algo fobos (which divides by 1 + rate*l2)",
        )


def train(explicit: dict, opts: RunOptions, console: Console | None = None) -> dict:
    """Train over ``opts.sources``; return the JSON report (also written if asked).

    ``explicit`` holds the options given on the command line (names as in
    :class:`~streamlearn.config.TrainConfig`); the rest come from the initial
    model or the defaults.  A model continued in place (``-i m -f m``) is
    locked from reading to writing (:func:`~streamlearn.locks.model_lock`).
    """
    console = console or Console(opts.quiet)
    started = time.perf_counter()
    opts.check()
    with model_lock(opts.initial_model, opts.final_model, opts.lock_timeout, console.say):
        result = _train(explicit, opts, console, started)
    if result.get("predictions_complete") is False:
        raise BrokenPipe("")
    return result


def _train(explicit: dict, opts: RunOptions, console: Console, started: float) -> dict:
    initial = model_io.load(opts.initial_model) if opts.initial_model else None
    config = merge_config(initial.config if initial else None, explicit)
    guard = FormatGuard(
        initial.config if initial else None, explicit.get("format"), f"model {opts.initial_model}"
    )
    if guard.parse_as != config.format:
        config = config.replace(format=guard.parse_as)
    if config.algo in BATCH_ALGORITHMS and opts.predictions:
        raise UsageError(
            f"-p does not apply to --algo {config.algo}, which predicts only once it has "
            "fitted all the data: score it with sl predict -i MODEL -p PATH"
        )
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
    progress = ProgressTable(console.say, holdout=params[P_HOLDOUT] > 0.0)
    names = initial.names if initial is not None else None
    collector = None
    if opts.invert_hash:
        from streamlearn.names import NameCollector

        collector = NameCollector(config.bits, config.format, config.constant, config.namespaces())
        if initial is not None:
            collector.names.update(initial.names)
    batch_learner = config.algo in BATCH_ALGORITHMS
    if not batch_learner:
        console.say(HEADER)
    bar = _progress_bar(console)
    try:
        with interruptible():
            if batch_learner:

                def seen(batch: Batch) -> None:
                    learner.config = guard.check(batch, learner.config)
                    checks.check(batch)
                    if collector is not None:
                        collector.add(batch)
                    if bar is not None:
                        bar.update(batch.n)

                extra = _fit(learner, config, passes, seen, console, opts)
                final = learner.snapshot(collector.names if collector is not None else names)
            else:
                for pass_no in range(1, config.passes + 1):
                    log.begin(learner.stats)
                    progress.begin_pass(pass_no, learner.stats)
                    if collector is not None:
                        names = collector.names
                    for batch in prefetch(passes.batches()):
                        if pass_no == 1:
                            learner.config = guard.check(batch, learner.config)
                            checks.check(batch)
                        elif checks.classification:
                            batch.labels[batch.labels == 0.0] = -1.0
                        preds = _learn(learner, params, batch, rows)
                        progress.emit(learner.stats, rows)
                        _check_finite(batch, preds)
                        if pass_no == 1:
                            writer.write(batch, preds)
                            if collector is not None:
                                collector.add(batch)
                                collector.prune(learner.table[:, 0])
                        if bar is not None:
                            bar.update(batch.n)
                    if learner.spec.finish is not None:
                        learner.spec.finish(learner.table, learner.gstate, params)
                    if log.end(learner.stats, functools.partial(learner.snapshot, names)):
                        break
                final = log.final_model(functools.partial(learner.snapshot, names))
                extra = log.report()
            _check_model(final)
            result = summary(learner.stats, config.loss_id, final.nnz)
            result.update(extra)
            result.update(
                config=learner.config.to_dict(),
                learner=learner.spec.name,
                curve=progress.curve,
                skipped_lines=checks.skipped,
                skipped_reasons=dict(checks.reasons),
                first_errors=checks.first_errors,
                final_model=opts.final_model,
                initial_model=opts.initial_model,
            )
            if opts.predictions:
                result["predictions_complete"] = not writer.broken
            with committing():  # from here on the run completes: a signal is dropped
                _save(final, opts)
                writer.close()  # after the model: a failed save leaves old predictions
                elapsed = time.perf_counter() - started
                result.update(
                    seconds=elapsed,
                    examples_per_second=result["examples"] / elapsed if elapsed > 0 else None,
                )
                if opts.report:
                    write_json(opts.report, result)
    except BaseException:
        writer.abort()
        raise
    finally:
        if bar is not None:
            bar.close()
            console.bar = None
        passes.close()
    console.say(summary_text(result))
    if writer.broken:
        console.say(
            "note: the reader of the predictions went away; they stopped there, "
            "every line was still learned" + (" and the model saved" if opts.final_model else "")
        )
    return result


def _fit(
    learner: Learner, config: TrainConfig, passes: Passes, seen, console: Console,
    opts: RunOptions,
) -> dict:  # fmt: skip
    """Read the whole input into memory, then run the batch learner's epochs over it."""
    from streamlearn import fit
    from streamlearn.learners import cd
    from streamlearn.memory import available, gib, physical

    limit = opts.max_memory or available() or physical() or (1 << 62)
    data = fit.read(prefetch(passes.batches()), limit, seen)
    n, nnz, ncols = data.labels.size, data.vals.size, data.slots.size
    console.say(
        f"{config.algo}: {n:,} examples, {nnz:,} non-zeros over {ncols:,} features in "
        f"memory: {gib(data.nbytes)} (limit {gib(limit)})"
    )
    result = fit.fit(
        data, learner.table, learner.gstate, learner.stats,
        method=cd.CYCLIC if config.algo == "cd" else cd.STOCHASTIC, loss_id=config.loss_id,
        l1=config.l1, l2=config.l2, passes=config.passes, tol=config.tol, seed=config.seed,
        say=console.say,
    )  # fmt: skip
    if result.epochs and not result.converged:
        console.say(
            f"note: stopped after {config.passes} epochs, the objective still falling by more "
            f"than --tol {config.tol:g}: raise --passes to go on (-i to continue this model)"
        )
    return {
        "epochs": result.epochs,
        "objective": result.objective,
        "converged": result.converged,
    }


def _learn(learner: Learner, params: np.ndarray, batch: Batch, rows: np.ndarray) -> np.ndarray:
    """Run the learner's kernel over one batch; return its predictions."""
    return run_kernel(
        learner.spec.train_batch, learner.table, learner.gstate, params,
        learner.config.loss_id, batch, learner.stats, rows,
    )  # fmt: skip


def _save(final: model_io.Model, opts: RunOptions) -> None:
    """Write the model and its readable forms."""
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
