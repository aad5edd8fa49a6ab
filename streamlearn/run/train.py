"""``sl train``: read batches, run a learner kernel over them, report, save.

Passes and the parsed-batch cache are in :mod:`streamlearn.run.passes`, what
training shares with ``sl predict`` (options, stderr, batch checks, the
parser thread, predictions files) in :mod:`streamlearn.run.runner`.  The driver
never looks inside an example.  Parsing of the next block runs on other
threads while the kernel learns the current one (both release the GIL).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import (
    BATCH_ALGORITHMS,
    FIXED_BY_MODEL,
    PER_RUN,
    ConfigError,
    TrainConfig,
)
from streamlearn.errors import BrokenPipe, Diverged, ModelError, OutOfMemory, UsageError
from streamlearn.hashing import CONSTANT_HASH
from streamlearn.io.batch import Batch
from streamlearn.io.classes import check_classes
from streamlearn.learners import PARAMETER_FREE, resolve, spec_by_name
from streamlearn.learners.base import (
    G_CLIP,
    G_N,
    G_T,
    GSTATE_SIZE,
    LIFETIME_STATS,
    P_BINARY,
    P_ETA0,
    P_HOLDOUT,
    P_HOLDOUT_AFTER,
    P_LEARN,
    P_PROBS,
    P_PROGRESS,
    S_NEXT_DUMP,
    S_PASS_N,
    S_SHOWN_W,
    LearnerSpec,
    new_rows,
    new_stats,
)
from streamlearn.run.grid import Configuration, Grid, check_distinct
from streamlearn.run.options import Inputs, Outputs, check, check_pass_models, written
from streamlearn.run.passes import BatchSource, Passes, PassLog
from streamlearn.run.report import (
    HEADER,
    GridTable,
    ProgressTable,
    grid_loss,
    holdout_kind,
    pareto,
    summary_text,
    train_report,
    write_json,
)
from streamlearn.run.runner import (
    PARSE_WORKERS,
    SHOWN_ERRORS,
    BatchChecks,
    ClassNumbering,
    Console,
    FormatGuard,
    PredictionWriter,
    binary_mode,
    check_probabilities,
    class_names,
    prediction_width,
    prefetch,
    run_kernel,
    split_bounds,
)
from streamlearn.system.locks import model_lock
from streamlearn.system.outputs import check_outputs, same_file, staging
from streamlearn.system.process import committing, interruptible

LEARN_WORKERS = 2
"""Threads that run a grid's learners on a block (their kernels release the GIL)."""

# ---------------------------------------------------------------------------
# train


def merge_config(model_cfg: TrainConfig | None, explicit: dict,
                 unrecorded: tuple[str, ...] = ()) -> TrainConfig:  # fmt: skip
    """Options for a run: the model's (when continuing), overridden by explicit ones.

    Options fixed by the model (bits, algorithm, loss, constant, hashing) may
    be repeated but not changed, unless its file did not record them
    (``unrecorded``, :func:`streamlearn.model.unrecorded`: a VW model's loss).
    Options of one run (:data:`PER_RUN`: passes, holdout, early termination)
    are never inherited: they are this run's, or the defaults.
    """
    try:
        if model_cfg is None:
            return TrainConfig(**explicit)
        defaults = {f.name: f.default for f in fields(TrainConfig)}
        explicit = {**{k: defaults[k] for k in PER_RUN}, **explicit}
        for key in FIXED_BY_MODEL:
            if key in unrecorded or (key == "loss" and explicit.get("test_only")):
                continue  # not in the file, or only scoring (VW's -t -i reports any loss)
            if key in explicit and explicit[key] != getattr(model_cfg, key):
                raise UsageError(
                    f"--{key.replace('_', '-')} {_shown(explicit[key])} conflicts with the "
                    f"initial model, which was trained with {key.replace('_', '-')} "
                    f"{_shown(getattr(model_cfg, key))}"
                )
        if unrecorded:  # their defaults, resolved with the run's options (VW's rates)
            kept = {k: v for k, v in model_cfg.to_dict().items() if k not in unrecorded}
            return TrainConfig.from_dict({**kept, **explicit})
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
    counted: np.ndarray | None = None
    """The initial model's counters when this run counts from zero (VW's default, without
    --preserve_performance_counters): added back into the model saved."""

    @classmethod
    def fresh(cls, config: TrainConfig) -> Learner:
        spec = resolve(config.algo, config.l1, config.l2, config.minibatch, config.oaa,
                       config.csoaa, config.multilabel, config.bootstrap,
                       config.autolink, config.bfgs)
        params = config.params()
        table = spec.new_table(config.bits)
        if config.initial_weight != 0.0:  # VW's --initial_weight: every slot (gd only)
            table[:, 0] = config.initial_weight
        elif config.initial_weights != "zero":  # VW's random initial weights (gd only)
            from streamlearn.learners.initial import initial_weights

            shift = 2 if config.adaptive or config.normalized else 0  # VW's stride shift
            table[:, 0] = initial_weights(config.initial_weights, config.bits, shift,
                                          config.seed)  # fmt: skip
        if config.initial_constant != 0.0:  # VW's -C: the constant's slot
            table[CONSTANT_HASH & ((1 << config.bits) - 1), 0] = config.initial_constant
        return cls(config, spec, table, spec.init_gstate(params), new_stats())

    @classmethod
    def from_model(cls, model: model_io.Model, config: TrainConfig) -> Learner:
        spec = resolve(config.algo, config.l1, config.l2, config.minibatch, config.oaa,
                       config.csoaa, config.multilabel, config.bootstrap,
                       config.autolink, config.bfgs)
        if spec.name == model.learner:
            if spec.name == "gd" and model.state.shape[1] == 3:
                # written before gd kept each slot's last rate (VW's spare float): a zero
                # rate means "not rated yet", which only a zero-gradient update reads
                model.state = np.pad(model.state, ((0, 0), (0, 1)))
            table = model.table(spec.fresh, spec.dtype)
            gstate = model.gstate.copy()
            t = model_io.learned_weight(model, config)
            if t is not None:  # VW's t, counted from this run's --initial_t (as VW)
                gstate[G_T] = t
            if config.test_only and model_io.is_vw(model):
                # VW settles a model's l1 and l2 state into its weights when it only tests
                spec.rebase(table, gstate, model.config.params())
            before, now = model.config.params(), config.params()
            for k in (P_HOLDOUT, P_HOLDOUT_AFTER, P_LEARN, P_BINARY):
                before[k] = now[k] = 0.0  # per run: no bearing on what is owed
            if not np.array_equal(before, now) and not model_io.is_vw(model):
                # e.g. another --l1: settle what each slot owes under the options it
                # was owed under, so the new ones apply from this run's first step (a VW
                # model records no --l1, --l2: its state goes on under the new ones, as VW)
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
        if not config.preserve_performance_counters:
            return cls(config, spec, table, gstate, new_stats(), counted=stats)
        return cls(config, spec, table, gstate, stats)

    def snapshot(self, names=None, meta=None, final: bool = False) -> model_io.Model:
        """The model as it stands; ``final``: the run is over, and the table may be
        reused for the model's state (:func:`~streamlearn.model.from_training`), after
        which it is gone (None)."""
        stats = self.stats
        if self.counted is not None:
            stats = stats.copy()
            stats[LIFETIME_STATS] += self.counted[LIFETIME_STATS]
        model = model_io.from_training(
            self.config,
            self.spec,
            self.table,
            self.gstate,
            stats,
            self.config.params(),
            names=names,
            meta=meta,
            final=final,
        )
        if final:
            self.table = None  # its rows may have moved: nothing may read it now
        return model


def print_config(console: Console, config: TrainConfig, inputs: Inputs, spec,
                  grid: Grid | None = None, source: str | None = None) -> None:  # fmt: skip
    """The resolved options; a grid's varied options show their lists."""
    c = config
    varied = grid.varied if grid is not None else {}

    def v(key: str) -> str:
        if key in varied:
            return "{" + ", ".join(varied[key]) + "}"
        value = getattr(c, key)
        return f"{value:g}" if isinstance(value, float) else str(value)

    lines = [
        f"sl train: algo = {c.algo} ({spec.name} kernel), loss = {c.loss}, bits = {c.bits}",
        f"learning rate = {v('learning_rate')}, power_t = {v('power_t')}, "
        f"initial_t = {c.initial_t:g}, l1 = {v('l1')}, l2 = {v('l2')}",
    ]
    if c.algo in PARAMETER_FREE:
        lines[1] = "no learning rate (parameter-free)"
    if c.oaa:
        lines.append(f"one against all: {c.oaa} classes (labels 1..{c.oaa}), "
                     f"{c.oaa_stride} slots per feature")  # fmt: skip
    if grid is not None and grid.size > 1:
        lines.append(f"grid: {grid.describe()}, over one parse")
    if c.algo == "tg":
        lines.append(f"theta = {v('theta')}, period = {v('period')}")
    if c.algo == "l0":
        lines.append(f"top_k = {v('top_k')}")
    if c.minibatch > 1:
        lines.append(f"minibatch = {c.minibatch} (the rate's clock counts steps)")
    if c.algo == "gd":
        lines.append(f"update = {c.update_rule}")
    extras = _vw_extras(c)
    if extras:
        lines.append(", ".join(extras))
    if c.algo in ("ftrl", "coin", "pistol"):
        lines.append(f"ftrl_alpha = {v('ftrl_alpha')}, ftrl_beta = {v('ftrl_beta')}")
    if c.algo == "freegrad":
        radius = "adaptive" if c.freegrad_radius is None else f"{c.freegrad_radius:g}"
        lines.append(f"fepsilon = {c.freegrad_epsilon:g}, flipschitz_const = "
                     f"{c.freegrad_lipschitz:g}, restart = {c.freegrad_restart}, project = "
                     f"{c.freegrad_project}" + (f" (radius {radius})" if c.freegrad_project
                                                else ""))  # fmt: skip
    if c.min_prediction is not None or c.max_prediction is not None:
        lo, hi = c.min_prediction or 0.0, c.max_prediction or 0.0
        lines.append(f"predictions clipped to [{lo:g}, {hi:g}]")
    if c.algo in BATCH_ALGORITHMS:
        lines.append(f"at most {c.passes} epochs, tol = {c.tol:g}"
                     + (f", seed = {c.seed}" if c.algo == "scd" else ""))  # fmt: skip
    elif c.passes > 1:
        lines.append(f"passes = {c.passes}, holdout period = {c.effective_holdout}")
    src = source or (", ".join(inputs.sources) if inputs.sources else "<stdin>")
    lines.append(f"reading {src} (format {c.format})")
    if inputs.initial_model:
        lines.append(f"continuing from {inputs.initial_model}")
    console.say("\n".join(lines))
    if spec.name == "sgd_elastic" and c.learning_rate * c.l2 >= 1.0:
        console.warn_once(
            "l2-step",
            f"--learning-rate {c.learning_rate:g} x --l2 {c.l2:g} >= 1: the SGD form of l2 "
            "scales weights by 1 - rate*l2, so while the rate is >= "
            f"{1.0 / c.l2:g} every step sets all weights to 0 (Lipton & Elkan eq. 9); "
            "lower --l2 or --learning-rate, or use --algo fobos (which divides by 1 + rate*l2)",
        )


def _vw_extras(c: TrainConfig) -> list[str]:
    """The options VW users bring, when they are not their defaults (for print_config)."""
    shown = [
        (c.test_only, "testing only: nothing learned"),
        (c.loss == "quantile", f"quantile_tau = {c.quantile_tau:g}"),
        (c.loss == "expectile", f"expectile_q = {c.expectile_q:g}"),
        (c.binary, "binary"),
        (c.zero_label != "negative" and c.loss in ("logistic", "hinge"),
         "label 0 read as VW reads it"),
        (c.holdout_after > 0, f"holdout after {c.holdout_after} examples"),
        (c.decay_learning_rate != 1.0, f"decay_learning_rate = {c.decay_learning_rate:g}"),
        (c.initial_weight != 0.0, f"initial_weight = {c.initial_weight:g}"),
        (c.initial_weight == 0.0 and c.initial_weights != "zero",
         f"initial weights = {c.initial_weights}"),
        (c.initial_constant != 0.0, f"constant = {c.initial_constant:g}"),
        (c.hash != "strings", f"hash = {c.hash}"),
        (c.numbers == "vw", "decimals read as VW reads them"),
        (bool(c.ngram), f"ngram = {' '.join(c.ngram)}" + (f", skips = {' '.join(c.skips)}"
                                                          if c.skips else "")),
        (c.sort_features, "sort_features"),
    ]  # fmt: skip
    return [text for on, text in shown if on]


@dataclass
class Trained:
    """What :func:`train` returns: the report and the final model of each configuration."""

    report: dict
    """The JSON report (a grid's: one entry per configuration)."""
    models: list[model_io.Model | None]
    """One per configuration, in the grid's order; None for one that diverged."""


def train(
    explicit: dict,
    inputs: Inputs,
    outputs: Outputs,
    console: Console | None = None,
    *,
    initial: model_io.Model | None = None,
    source: BatchSource | None = None,
) -> Trained:
    """Train over ``inputs.sources``; return the report (also written if asked) and the models.

    ``explicit`` holds the options given on the command line (names as in
    :class:`~streamlearn.config.TrainConfig`); the rest come from the initial
    model or the defaults.  A value of a :data:`~streamlearn.run.grid.GRID_OPTIONS`
    key may be a list: the run then trains every configuration of the grid
    over one parse (:mod:`streamlearn.run.grid`), and the report holds one entry
    per configuration.  A model continued in place (``-i m -f m``) is locked
    from reading to writing (:func:`~streamlearn.system.locks.model_lock`).

    The Python API (:mod:`streamlearn.api`) passes ``initial`` (a model in
    memory, instead of ``inputs.initial_model``) and ``source`` (batches made in
    memory, instead of reading ``inputs.sources``).  ``console`` shows the progress
    (default: stderr).
    """
    console = console or Console(False)
    started = time.perf_counter()
    grid = Grid.expand(explicit)
    each = [_filled(inputs, outputs, c) for c in grid.configurations]
    start = inputs.initial_model
    passes = grid.configurations[0].explicit.get("passes") or 1  # a run's own (PER_RUN)
    if source is not None:
        check_pass_models(outputs)
        check_outputs([x for o in each for x in written(inputs, o, passes)], [], start)
    elif grid.size == 1:
        check(inputs, each[0], passes)
    else:
        _check_grid_outputs(inputs, outputs, each, grid, passes)
    in_place = next(
        (o.final_model for o in each
         if start and o.final_model and same_file(o.final_model, start)),
        None,
    )  # fmt: skip
    with model_lock(start, in_place, outputs.lock_timeout, console.say):
        if start:
            initial = model_io.load(start)
            each = [model_io.with_link(initial, o) for o in each]  # a VW model's --link
        trained = _train(grid, inputs, outputs, each, console, started, initial, source)
    if trained.report.get("predictions_complete") is False:
        raise BrokenPipe("")
    return trained


def _filled(inputs: Inputs, outputs: Outputs, c: Configuration) -> Outputs:
    """``outputs`` with one configuration's values in their paths' placeholders.

    The cache is the whole grid's (one parse): it takes no placeholder.
    """
    if inputs.cache and "{" in inputs.cache and c.fill(inputs.cache) != inputs.cache:
        raise UsageError(f"--cache {inputs.cache}: the cache is written once for the whole "
                         "grid (one parse), so it takes no placeholder")  # fmt: skip
    return outputs.filled(c.fill)


def _check_grid_outputs(inputs: Inputs, outputs: Outputs, each: list[Outputs],
                        grid: Grid, passes: int) -> None:  # fmt: skip
    """Refuse, before reading any data, two configurations writing one file."""
    names = [c.name for c in grid.configurations]
    distinct = [
        (f"-f {outputs.final_model}", [o.final_model for o in each]),
        (f"-p {outputs.predictions}", [o.predictions for o in each]),
        (f"-r {outputs.raw_predictions}", [o.raw_predictions for o in each]),
        (f"--readable-model {outputs.readable_model}", [o.readable_model for o in each]),
        (f"--invert-hash {outputs.invert_hash}", [o.invert_hash for o in each]),
    ]
    if outputs.report and "{" in outputs.report:  # one report per configuration
        distinct.append((f"--report {outputs.report}", [o.report for o in each]))
    check_distinct(distinct, names)
    inputs.check()
    check_pass_models(outputs)
    shared = [(inputs.cache, "cache")]
    if outputs.report == each[0].report:  # no placeholder: one report for the grid
        shared.append((outputs.report, "report"))
    every = shared + [
        (path, what) for o in each for path, what in written(inputs, o, passes)
        if (path, what) not in shared
    ]  # fmt: skip
    check_outputs(every, inputs.sources, inputs.initial_model)


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


def _train(grid: Grid, inputs: Inputs, outputs: Outputs, each: list[Outputs],
           console: Console, started: float, initial: model_io.Model | None,
           source: BatchSource | None) -> Trained:  # fmt: skip
    configs = [
        merge_config(initial.config if initial else None, c.explicit, model_io.unrecorded(initial))
        for c in grid.configurations
    ]
    config = configs[0]  # what the parse and the checks need is the same in every one
    guard = FormatGuard(
        initial.config if initial else None,
        grid.configurations[0].explicit.get("format"),
        f"model {inputs.initial_model}" if inputs.initial_model else "the model",
    )
    if guard.parse_as != config.format:
        configs = [c.replace(format=guard.parse_as) for c in configs]
        config = configs[0]
    if outputs.final_model and model_io.writable_as(config, outputs.model_format):
        raise UsageError(f"-f {outputs.final_model}: "
                         f"{model_io.writable_as(config, outputs.model_format)}")
    if config.algo in BATCH_ALGORITHMS and outputs.save_per_pass:
        raise UsageError(f"--save-per-pass saves the online learners' passes; --algo "
                         f"{config.algo} fits all the data at once (its --passes are epochs)")
    if config.algo in BATCH_ALGORITHMS and (outputs.predictions or outputs.raw_predictions):
        raise UsageError(
            f"-p does not apply to --algo {config.algo}, which predicts only once it has "
            "fitted all the data: score it with sl predict -i MODEL -p PATH"
        )
    check_probabilities(config, outputs.probabilities, outputs.link)
    grid_say = console.say if grid.size == 1 else _silent
    runs = []
    for c, cfg, o in zip(grid.configurations, configs, each, strict=True):
        learner = Learner.from_model(initial, cfg) if initial else Learner.fresh(cfg)
        params = cfg.params()
        params[P_PROGRESS] = console.progress  # VW's -P: when the table gets a line
        params[P_BINARY] = binary_mode(cfg.binary, o.link)
        params[P_PROBS] = 1.0 if o.probabilities else 0.0
        if cfg.multilabel and o.link == "logistic" and not o.probabilities:
            params[P_PROBS] = 2.0  # --multilabel_oaa: VW's logistic link on each class
        if console.progress < 0:
            learner.stats[S_NEXT_DUMP] = learner.stats[S_SHOWN_W] - console.progress
        runs.append(Run(
            c, learner, o, params,
            ProgressTable(grid_say, holdout=params[P_HOLDOUT] > 0.0, classes=cfg.oaa > 0,
                          probabilities=o.probabilities,
                          shown=_vw_shown(o.link, cfg.binary) if o.vw_format and not cfg.oaa
                          else None),  # fmt: skip
            PassLog(cfg, _silent if o.vw_format else grid_say),  # (VW prints no pass lines)
            PredictionWriter(o.predictions, o.link, cfg.binary, o.raw_predictions,
                             o.probabilities, vw=o.vw_format, names=class_names(cfg),
                             multilabel=cfg.multilabel),
            classes=ClassNumbering(params, learner.stats, console) if cfg.oaa else None,
        ))  # fmt: skip
    if not outputs.vw_format:
        print_config(console, config, inputs, runs[0].learner.spec, grid,
                     source.name if source is not None else None)  # fmt: skip
    if grid.size > 1:
        _check_grid_memory(runs, inputs, console)
    checks = BatchChecks(console, config, inputs.strict)
    passes = source or Passes(
        inputs.sources, config, inputs.cache, inputs.block_size, PARSE_WORKERS, SHOWN_ERRORS,
        allow_empty=inputs.allow_empty, examples=inputs.examples,
        # the names of --invert-hash and --audit come from the text, which a cache does not
        # keep: the first pass reads it (and writes the cache again)
        rebuild=inputs.rebuild_cache or bool(outputs.invert_hash or outputs.audit),
        max_line=inputs.max_line_bytes, max_crosses=inputs.max_crosses,
    )  # fmt: skip
    if outputs.vw_format:
        _vw_header(console, config, inputs, outputs, passes, initial, runs)
    names = initial.names if initial is not None else None
    collector = None
    if outputs.invert_hash:
        from streamlearn.io.names import NameCollector

        collector = NameCollector(config.bits, config.format, config.constant, config.namespaces(),
                                  config.oaa)  # fmt: skip
        if initial is not None:
            collector.names.update(initial.names)
    batch_learner = config.algo in BATCH_ALGORITHMS
    board = GridTable(console.say, runs) if grid.size > 1 else None
    if not batch_learner:
        console.say(board.header() if board else HEADER)
    bar = console.progress_bar()
    where = source.name if source is not None else _where(inputs)

    def end_of_input() -> None:  # after the first pass: an input without examples writes nothing
        checks.require_examples(inputs.allow_empty, where)

    try:
        with interruptible(lambda: _left_written(runs)):
            if batch_learner:

                def seen(batch: Batch) -> None:
                    _check_format(guard, batch, runs)
                    checks.check(batch)
                    if collector is not None:
                        collector.add(batch)
                    if bar is not None:
                        bar.update(batch.n)

                data = _read_columns(config, passes, seen, console, inputs)
                end_of_input()
                for run in runs:
                    quiet = Console(True) if grid.size > 1 else console
                    extra = _fit(run.learner, run.learner.config, data, quiet)
                    run.final = run.learner.snapshot(
                        collector.names if collector is not None else names, final=True
                    )
                    run.result = extra
            else:
                _learn_passes(runs, config, passes, guard, checks, collector, names, bar, board,
                              end_of_input)  # fmt: skip
            for run in runs:
                if run.diverged is None:
                    try:
                        check_model(run.final)
                    except Diverged as e:
                        _diverged(run, e, alone=grid.size == 1)
                        continue
                    run.result = _run_result(run, checks, inputs.initial_model, run.result)
            result = runs[0].result if grid.size == 1 else _grid_result(runs, grid, checks)
            for run in runs:
                if run.diverged is None:
                    run.writer.prepare()  # flushed and fsynced (a lost reader noticed now)
            if outputs.predictions or outputs.raw_predictions:
                result["predictions_complete"] = all(
                    not r.writer.broken for r in runs if r.diverged is None
                )
            elapsed = time.perf_counter() - started
            each = [run.result for run in runs if run.diverged is None and grid.size > 1]
            for r in [result, *each]:
                r.update(
                    seconds=elapsed,
                    examples_per_second=r["examples"] / elapsed if elapsed > 0 else None,
                )
            with staging() as stage:  # every output written in full before any is visible
                for run in runs:
                    if run.diverged is None:
                        passes_done = run.result.get("passes_run", 1)
                        save_outputs(run.final, run.outputs,
                                     passes_done + _earlier_passes(run, initial),
                                     run.tally.held_features if run.tally is not None else 0,
                                     run.learner.counted)  # fmt: skip
                    else:
                        run.writer.abort()
                _write_reports(outputs, runs, result, grid)
                stage.write()  # files to temporary files, then devices: a signal still stops
                with committing():  # from here on the run completes: a signal is dropped
                    for run in runs:
                        if run.diverged is None:
                            run.writer.close()
                    stage.commit()  # the models last: a failure before leaves the old ones
    except BaseException:
        for run in runs:
            run.writer.abort()
        raise
    finally:
        console.close_bar()
        passes.close()
    if board is None and outputs.vw_format and runs[0].diverged is None:
        from streamlearn.run.vwconsole import summary as vw_summary

        run = runs[0]
        holdout = run.params[P_HOLDOUT] > 0.0 or run.params[P_HOLDOUT_AFTER] > 0.0
        console.say(vw_summary(result, run.learner.stats, run.learner.config, run.tally,
                               holdout, outputs.probabilities,
                               _earlier_passes(run, initial)))  # fmt: skip
    elif board is None:
        console.say(summary_text(result, vw=outputs.vw_summary))
    else:
        console.say(board.summary(result))
    if any(run.writer.broken for run in runs):
        console.say(
            "note: the reader of the predictions went away; they stopped there, "
            "every line was still learned"
            + (" and the model saved" if outputs.final_model else "")
        )
    diverged = [run for run in runs if run.diverged is not None]
    if diverged:
        raise Diverged(
            f"{len(diverged)} of {grid.size} configurations diverged (no model written for "
            f"them; the others were saved): {diverged[0].diverged}"
        )
    return Trained(result, [run.final if run.diverged is None else None for run in runs])


def _earlier_passes(run: Run, initial: model_io.Model | None) -> int:
    """The passes of a model continued with its counters (``--preserve_performance_counters``,
    not ``-t``): VW counts them on (its ``current_pass``)."""
    c = run.learner.config
    if initial is None or not c.preserve_performance_counters or c.test_only:
        return 0
    return initial.config.passes or 1


def _vw_shown(link: str, binary: bool):  # noqa: ANN202 - float -> float
    """The table's "current predict" as VW prints it: linked, signed with --binary, +0."""
    from streamlearn.run.vwformat import link32

    return lambda p: float(link32(np.array([p]), link, binary)[0]) + 0.0


def _vw_header(console: Console, config: TrainConfig, inputs: Inputs, outputs: Outputs,
               passes, initial: model_io.Model | None, runs: list[Run]) -> None:  # fmt: skip
    """``sl vw``: VW's lines before the table (:mod:`streamlearn.run.vwconsole`), and what
    its summary will need counted."""
    from streamlearn.learners.base import S_WEX
    from streamlearn.run import vwconsole

    for run in runs:
        run.tally = vwconsole.Tally(int(run.params[P_HOLDOUT]), int(run.params[P_HOLDOUT_AFTER]))
    cache = None
    if inputs.cache:
        cache = (inputs.cache, bool(getattr(passes, "cache_ready", False)))
    model_t = None
    if initial is not None:
        model_t = vwconsole._initial_t(initial.config) + float(initial.stats[S_WEX])
    console.say(vwconsole.header(config, inputs, outputs, cache, model_t,
                                 list(inputs.sources) or ["-"]))  # fmt: skip


def _where(inputs: Inputs) -> str:
    """The inputs as messages name them."""
    shown = ["standard input" if s == "-" else s for s in inputs.sources or ["-"]]
    return ", ".join(shown)


def _diverged(run: Run, e: Diverged, alone: bool) -> None:
    """A configuration that diverged stops; a run of one configuration fails with it."""
    if alone:
        raise e
    run.diverged = f"{run.configuration.name}: {e.message}"
    run.done = True


def _check_format(guard: FormatGuard, batch: Batch, runs: list[Run]) -> None:
    """The format read (the same for every configuration), recorded in each one's options."""
    fmt = guard.check(batch, runs[0].learner.config).format
    for run in runs:
        if run.learner.config.format != fmt:
            run.learner.config = run.learner.config.replace(format=fmt)


def _checked(batches: Iterator[Batch], pass_no: int, guard: FormatGuard, checks: BatchChecks,
             runs: list[Run], weigh=None) -> Iterator[Batch]:  # noqa: ANN001  # fmt: skip
    """``batches`` checked (format, malformed lines, labels) on the parser's side of
    :func:`~streamlearn.run.runner.prefetch`, so that the learners' thread only learns."""
    for batch in batches:
        if pass_no == 1:
            _check_format(guard, batch, runs)
            checks.check(batch)
        elif checks.classes:  # the cache replays labels as parsed
            check_classes(batch, checks.classes)
        elif checks.zero_to_negative:
            batch.labels[batch.labels == 0.0] = -1.0
        if weigh is not None:
            weigh(batch)
        yield batch


def class_weigher(config: TrainConfig):  # noqa: ANN201 - a function of a batch, or None
    """VW's ``--classweight``: each learned example's importance weight times its class's
    multiplier (a new array: a batch replayed by the API is not weighed twice); None when
    there is none, or nothing is learned (VW weighs examples it learns only)."""
    table = config.class_weights()
    if not table or config.test_only:
        return None
    keys = np.array(sorted(table), dtype=np.uint64)
    factors = np.array([table[int(k)] for k in keys], dtype=np.float32)

    def weigh(batch: Batch) -> None:
        labels = batch.labels
        known = np.isfinite(labels)
        klass = np.zeros(labels.shape[0], dtype=np.uint64)
        klass[known] = np.trunc(labels[known]).astype(np.int64).astype(np.uint64) & 0xFFFFFFFF
        at = np.minimum(np.searchsorted(keys, klass), len(keys) - 1)
        hit = known & (keys[at] == klass)
        if hit.any():
            w = batch.weights.copy()
            w[hit] = (w[hit].astype(np.float32) * factors[at[hit]]).astype(np.float64)
            batch.weights = w

    return weigh


def _silent(text: str) -> None:
    """The per-configuration tables of a grid: kept for the report, not printed."""


def _learn_passes(runs: list[Run], config: TrainConfig, passes: Passes, guard: FormatGuard,
                  checks: BatchChecks, collector, names, bar, board,
                  end_of_input) -> None:  # fmt: skip
    """The online learners' passes: every block to every run still learning.

    ``end_of_input()`` is called once the first pass has read the whole input.
    """

    weigh = class_weigher(config)
    # later passes replayed from the parsed cache bring no text to name slots with
    replayed = getattr(passes, "use_cache", False) and config.passes > 1

    def snapshot(run: Run, final: bool = False):  # noqa: ANN202 - taken when PassLog asks
        return functools.partial(
            run.learner.snapshot, collector.names if collector is not None else names,
            final=final,
        )

    pool = _Pool(len(runs))
    auditor = None
    if runs[0].outputs.audit and runs[0].outputs.vw_format and not (
        config.oaa and (config.algo != "gd" or runs[0].outputs.probabilities)
    ):
        from streamlearn.run.vwaudit import Auditor

        auditor = Auditor(config)
    try:
        for pass_no in range(1, config.passes + 1):
            active = [run for run in runs if not run.done]
            if not active:
                break
            for run in active:
                run.progress.begin_pass(pass_no, run.learner.stats)
                run.log.begin(run.learner.stats)
            if board is not None:
                board.begin_pass(pass_no)
            for batch in prefetch(_checked(passes.batches(), pass_no, guard, checks, runs,
                                           weigh)):  # fmt: skip
                learning = [run for run in active if not run.done]
                if auditor is not None:  # one example at a time, each shown before it learns
                    learned = [auditor.run(functools.partial(_learn_run, run), run.learner, batch)
                               for run in learning]  # fmt: skip
                else:
                    learned = pool.map(functools.partial(_learn_run, batch=batch), learning)
                for run, preds in zip(learning, learned, strict=True):
                    raw = None
                    preds, bounds = split_bounds(preds, batch.n)
                    if preds.ndim == 1 and preds.shape[0] == 2 * batch.n:  # VW's -r
                        preds, raw = preds[: batch.n], preds[batch.n :]
                        raw[batch.status != 0] = np.nan
                    first = run.classes.after(batch) if run.classes is not None else 1
                    run.progress.emit(run.learner.stats, run.rows)
                    try:
                        cfg = run.learner.config
                        _check_finite(batch, preds, cfg.algo, cfg.csoaa)
                    except Diverged as e:
                        _diverged(run, e, alone=len(runs) == 1)
                        continue
                    if run.tally is not None:
                        run.tally.observe(batch, run.learner.stats[S_PASS_N], pass_no)
                    if pass_no == 1 or run.outputs.vw_format:  # VW writes every pass's
                        run.writer.write(batch, preds, first,
                                         run.classes.predicted if run.classes else None, raw,
                                         bounds)
                if board is not None:
                    board.emit()
                if collector is not None and runs[0].outputs.vw_format:
                    if pass_no == 1:  # VW names every slot it saw, on the first pass
                        collector.add(batch)
                elif collector is not None:
                    collector.add(batch)
                    if not replayed:  # a slot's name is pruned only if a later pass names it again
                        collector.prune([run.learner.table[:, 0] for run in learning
                                         if run.diverged is None])  # fmt: skip
                if bar is not None:
                    bar.update(batch.n)
            if pass_no == 1:
                end_of_input()
            for run in active:
                if run.done:  # diverged during this pass
                    continue
                if run.learner.spec.finish is not None:
                    run.learner.spec.finish(run.learner.table, run.learner.gstate, run.params)
                # --save-per-pass: one copy of the model, for its file and a new best pass
                model = snapshot(run)() if run.outputs.save_per_pass else None
                if run.log.end(run.learner.stats,
                               snapshot(run) if model is None else lambda m=model: m):
                    run.done = True
                if run.learner.spec.stopped is not None and run.learner.spec.stopped(
                    run.learner.gstate
                ):
                    run.done = True  # (--bfgs: converged)
                if model is not None:
                    run.pass_models.append(_save_pass(model, run.outputs, pass_no))
                _decay(run)
            if board is not None:
                board.end_pass(active)
        for run in runs:
            if run.diverged is None:
                run.final = run.log.final_model(snapshot(run, final=True))
                run.result = run.log.report()
    finally:
        pool.close()


def _save_pass(model: model_io.Model, outputs: Outputs, pass_no: int) -> str:
    """VW's ``--save_per_pass``: the model as it stands after pass ``pass_no``, written
    at once (atomically) to ``final_model.N`` (returned); the run's other outputs wait
    for its end."""
    check_model(model)
    path = f"{outputs.final_model}.{pass_no}"
    model_io.save(model, path, outputs.model_format, outputs.link)
    return path


def _left_written(runs: list[Run]) -> str:
    """What an interrupted run leaves: no final model, but each pass's model saved so far."""
    saved = [p for run in runs for p in run.pass_models]
    if not saved:
        return "no model written"
    return f"no final model written; the pass models {', '.join(saved)} were written"


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


def _run_result(run: Run, checks: BatchChecks, initial_model: str | None, extra: dict) -> dict:
    """One configuration's report: its summary, pass figures, curve and the run's checks."""
    learner = run.learner
    result = train_report(learner.stats, learner.config, learner.spec.name, run.final.nnz,
                          run.progress.curve, checks.skipped, checks.reasons, checks.first_errors,
                          run.outputs.final_model, initial_model,
                          run.outputs.probabilities)  # fmt: skip
    result.update(extra)
    if run.configuration.typed:
        result["grid_values"] = dict(run.configuration.typed)
    return result


def _grid_result(runs: list[Run], grid: Grid, checks: BatchChecks) -> dict:
    """The sweep's report: one entry per configuration, the best one and the Pareto front."""
    entries = []
    for run in runs:
        if run.diverged is not None:
            entries.append({"grid_values": dict(run.configuration.typed),
                            "config": run.learner.config.to_dict(), "learner":
                            run.learner.spec.name, "diverged": run.diverged,
                            "curve": run.progress.curve})  # fmt: skip
        else:
            entries.append(run.result)
    scored = [k for k, e in enumerate(entries) if grid_loss(e) is not None]
    points = [(float(entries[k]["nonzero_weights"]), grid_loss(entries[k])) for k in scored]
    best = min(scored, key=lambda k: grid_loss(entries[k])) if scored else None
    first = runs[0].result if runs[0].diverged is None else {}
    return {
        "grid": {"options": grid.varied, "size": grid.size},
        "configurations": entries,
        "best": best,
        "best_by": "holdout loss" if holdout_kind(entries) else "average loss",
        "pareto_front": [scored[i] for i in pareto(points)],
        "examples": max((e.get("examples", 0) for e in entries), default=0),
        "skipped_lines": checks.skipped,
        "skipped_reasons": dict(checks.reasons),
        "first_errors": checks.first_errors,
        "passes_run": max((e.get("passes_run", 1) for e in entries), default=1),
        **{k: first[k] for k in ("total_features",) if k in first},
    }


def _write_reports(outputs: Outputs, runs: list[Run], result: dict, grid: Grid) -> None:
    if not outputs.report:
        return
    if grid.size > 1 and runs[0].outputs.report != outputs.report:  # placeholders: one each
        for run in runs:
            if run.diverged is None:
                write_json(run.outputs.report, run.result)
        return
    write_json(outputs.report, result)


def _check_grid_memory(runs: list[Run], inputs: Inputs, console: Console) -> None:
    """Say what the grid's tables take; refuse (exit 8) above ``--max-memory``."""
    from streamlearn.system.memory import available, gib, physical

    each = runs[0].learner.table.nbytes
    total = sum(run.learner.table.nbytes for run in runs)
    limit = inputs.max_memory or available() or physical() or (1 << 62)
    console.say(f"grid: {len(runs)} tables of {gib(each)}: {gib(total)} (limit {gib(limit)})")
    if total > limit:
        raise OutOfMemory(
            f"the grid's {len(runs)} tables need {gib(total)}, more than "
            f"{'--max-memory' if inputs.max_memory else 'the memory available'} ({gib(limit)}): "
            "lower -b or train fewer configurations at once"
        )


def _read_columns(config: TrainConfig, passes: Passes, seen, console: Console,
                  inputs: Inputs):  # fmt: skip
    """The batch learners' input, read once into memory (refused above ``--max-memory``)."""
    from streamlearn.run import fit
    from streamlearn.system.memory import available, gib, physical

    limit = inputs.max_memory or available() or physical() or (1 << 62)
    data = fit.read(prefetch(passes.batches()), limit, seen)
    n, nnz, ncols = data.labels.size, data.vals.size, data.slots.size
    console.say(
        f"{config.algo}: {n:,} examples, {nnz:,} non-zeros over {ncols:,} features in "
        f"memory: {gib(data.nbytes)} (limit {gib(limit)})"
    )
    return data


def _fit(learner: Learner, config: TrainConfig, data, console: Console) -> dict:
    """Run the batch learner's epochs over the input in memory."""
    from streamlearn.learners import cd
    from streamlearn.run import fit

    result = fit.fit(
        data, learner.table, learner.gstate, learner.stats,
        method=cd.CYCLIC if config.algo == "cd" else cd.STOCHASTIC, loss_id=config.loss_id,
        l1=config.l1, l2=config.l2, passes=config.passes, tol=config.tol, seed=config.seed,
        say=console.say,
    )  # fmt: skip
    if result.epochs and not result.converged:
        console.say(
            f"note: stopped after {config.passes} sweeps, {result.unmet} --tol {config.tol:g} "
            "(relative): raise --passes to go on (-i to continue this model)"
        )
    return {
        "epochs": result.epochs,
        "objective": result.objective,
        "converged": result.converged,
    }


def _learn_run(run: Run, batch: Batch) -> np.ndarray:
    if run.params[P_PROGRESS] < 0 and run.rows.shape[0] < batch.n:  # -P N: a line every N
        run.rows = np.zeros((batch.n, run.rows.shape[1]))
    # VW's -r: the kernel writes the unclipped scores after the predictions
    raw = bool(run.outputs.raw_predictions and run.outputs.vw_format)
    return _learn(run.learner, run.params, batch, run.rows, raw)



def _learn(learner: Learner, params: np.ndarray, batch: Batch, rows: np.ndarray,
           raw: bool = False) -> np.ndarray:  # fmt: skip
    """Run the learner's kernel over one batch; return its predictions (``raw``: followed
    by the scores before clipping, :func:`~streamlearn.run.runner.run_kernel`)."""
    return run_kernel(
        learner.spec.train_batch, learner.table, learner.gstate, params,
        learner.config.loss_id, batch, learner.stats, rows, prediction_width(learner.config),
        raw, learner.config.bootstrap > 0,
    )  # fmt: skip


def save_outputs(final: model_io.Model, outputs: Outputs, passes: int = 1,
                 held_features: int = 0, counted: np.ndarray | None = None) -> None:  # fmt: skip
    """Write the model and its readable forms (within
    :func:`~streamlearn.system.outputs.staging`: record them, to be written together).
    ``passes``, ``held_features``: the passes run and the features of held-out examples
    (VW's readable models record the one and leave the other out); ``counted``: the
    counters of a model continued without them (VW's readable models show this run's)."""
    if outputs.final_model:
        model_io.save(final, outputs.final_model, outputs.model_format, outputs.link)
    if outputs.vw_format and (outputs.readable_model or outputs.invert_hash):
        from streamlearn.run.vwreadable import write_readable as write_vw

        for path, names in ((outputs.readable_model, False), (outputs.invert_hash, True)):
            if path:
                write_vw(path, final, names, outputs.vw_resume, outputs.link, passes,
                         outputs.vw_quiet, held_features, counted)
    elif outputs.readable_model or outputs.invert_hash:
        from streamlearn.io.names import write_readable

        if outputs.readable_model:
            write_readable(outputs.readable_model, final, with_names=False)
        if outputs.invert_hash:
            write_readable(outputs.invert_hash, final, with_names=True)


def _check_finite(batch: Batch, preds: np.ndarray, algo: str = "gd",
                  partial: bool = False) -> None:  # fmt: skip
    """``partial`` (--csoaa): a class a line does not list is not scored (NaN)."""
    ok = batch.status == 0
    bad = ~np.isfinite(preds.reshape(batch.n, -1))
    if partial:
        bad = np.isinf(preds) | np.isnan(preds[:, :1])
    if bad[ok].any():
        i = int(np.flatnonzero(ok & bad.any(axis=1))[0])
        raise Diverged(
            f"{batch.block.source}:{int(batch.line[i])}: prediction is not finite; the "
            "weights diverged: " + _what_to_change(algo)
        )


def check_model(model: model_io.Model) -> None:
    """Refuse (:class:`Diverged`, exit 6) to save a model whose numbers are not all finite.

    The weights, and the state that a continued run starts from (per-slot
    state, global state, counters): an inf in gd's sum of squared gradients
    leaves the weight finite but frozen for good, and a continued run would
    inherit it.
    """
    if not np.all(np.isfinite(model.weights)):
        raise Diverged(
            "weights are not finite at the end of training: "
            + _what_to_change(model.config.algo) + " (no model written)"
        )
    bad = model_io.non_finite(model)
    if bad is not None:
        raise Diverged(
            f"the learner's {bad} is not finite at the end of training: an importance weight, "
            "label or feature value (or a cross of them) too large for the learner's state, "
            "or a diverging rate; scale the data or lower --learning-rate (no model written)"
        )


def _what_to_change(algo: str) -> str:
    if algo in PARAMETER_FREE:
        return (f"{algo}'s arithmetic overflowed on this input, as VW's does (VW then predicts "
                "0 and goes on with non-finite weights); scale the features or labels, or "
                "try --coin")  # fmt: skip
    return "lower --learning-rate, or scale the feature values"

