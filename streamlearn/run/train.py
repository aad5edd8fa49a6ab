"""``sl train``: read batches, run a learner kernel over them, report, save.

:func:`train` checks the outputs, builds one :class:`~streamlearn.run.online.Run`
per configuration (a grid's, or the one), learns -- the online learners' passes
(:mod:`streamlearn.run.online`) or the batch learners' epochs over the input in
memory (:mod:`streamlearn.run.fit`) -- then reports and writes every output
together.  The learner itself is :mod:`streamlearn.run.learner`'s, the divergence
checks :mod:`streamlearn.run.finite`'s, passes and the parsed-batch cache
:mod:`streamlearn.run.passes`'s, and what training shares with ``sl predict``
(options, stderr, batch checks, the parser thread, predictions files)
:mod:`streamlearn.run.runner`'s.  The driver never looks inside an example.
Parsing of the next block runs on other threads while the kernel learns the
current one (both release the GIL).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import BATCH_ALGORITHMS, TrainConfig
from streamlearn.errors import BrokenPipe, Diverged, OutOfMemory, UsageError
from streamlearn.io.batch import Batch
from streamlearn.learners import PARAMETER_FREE
from streamlearn.learners.base import (
    P_BINARY,
    P_HOLDOUT,
    P_HOLDOUT_AFTER,
    P_PROBS,
    P_PROGRESS,
    S_NEXT_DUMP,
    S_SHOWN_W,
)
from streamlearn.run.classes import check_probabilities, header_lines, table_labels
from streamlearn.run.console import reader_left
from streamlearn.run.finite import check_model
from streamlearn.run.grid import Configuration, Grid, check_distinct
from streamlearn.run.learner import Learner, merge_config
from streamlearn.run.online import Run, check_format, learn_passes, mark_diverged
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
    class_names,
    input_names,
    prefetch,
)
from streamlearn.system.locks import model_lock
from streamlearn.system.outputs import check_outputs, same_file, staging
from streamlearn.system.process import committing, interruptible


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
    lines += header_lines(c)
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


def _train(grid: Grid, inputs: Inputs, outputs: Outputs, each: list[Outputs],
           console: Console, started: float, initial: model_io.Model | None,
           source: BatchSource | None) -> Trained:  # fmt: skip
    """One run's life once its outputs are checked (and the model read): the learners
    built, the input learned, the report made, every output written, the summary said."""
    configs, guard = _configs(grid, inputs, outputs, initial)
    config = configs[0]  # what the parse and the checks need is the same in every one
    runs = [_new_run(c, cfg, o, console, initial, grid.size)
            for c, cfg, o in zip(grid.configurations, configs, each, strict=True)]  # fmt: skip
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
        rebuild=inputs.rebuild_cache or bool(outputs.invert_hash or outputs.audit
                                             or outputs.audit_regressor),
        max_line=inputs.max_line_bytes, max_crosses=inputs.max_crosses,
        flatbuffer=inputs.flat_text(config),
    )  # fmt: skip
    if outputs.vw_format:
        _vw_header(console, config, inputs, outputs, passes, initial, runs)
    names = initial.names if initial is not None else None
    collector = _name_collector(outputs, config, initial)
    batch_learner = config.algo in BATCH_ALGORITHMS
    board = GridTable(console.say, runs) if grid.size > 1 else None
    if outputs.vw_format and "--top" in config.stack:
        _group_runs(runs, console)
    if outputs.vw_format and any(f"--replay_{lv}" in config.stack for lv in "bmc"):
        _replay_runs(runs)
    if outputs.audit_regressor:
        from streamlearn.run.vwregaudit import RegressorAudit

        run = runs[0]  # (one configuration: a grid is refused)
        run.regaudit = RegressorAudit(config, run.learner.table, outputs.audit_regressor,
                                      console.say, console.progress)  # fmt: skip
        console.say(run.regaudit.header())
    elif not batch_learner:
        console.say(board.header() if board else HEADER)
    bar = console.progress_bar()
    where = source.name if source is not None else input_names(inputs.sources)

    def end_of_input() -> None:  # after the first pass: an input without examples writes nothing
        checks.require_examples(inputs.allow_empty, where)

    try:
        with interruptible(lambda: _left_written(runs)):
            if batch_learner:
                _fit_runs(runs, config, passes, guard, checks, collector, names, bar, console,
                          inputs, end_of_input)  # fmt: skip
            else:
                learn_passes(runs, config, passes, guard, checks, collector, names, bar, board,
                             end_of_input)  # fmt: skip
            result = _results(runs, grid, checks, inputs, outputs, started)
            _save(runs, outputs, result, grid, initial)
    except BaseException:
        for run in runs:
            run.writer.abort()
            if run.regaudit is not None:
                run.regaudit.abort()
        raise
    finally:
        console.close_bar()
        passes.close()
    _say_summary(console, board, outputs, runs, result, initial)
    if any(run.regaudit is not None and run.regaudit.broken for run in runs):
        raise BrokenPipe("")  # (--audit_regressor to a pipe whose reader left: 141, as -p)
    diverged = [run for run in runs if run.diverged is not None]
    if diverged:
        raise Diverged(
            f"{len(diverged)} of {grid.size} configurations diverged (no model written for "
            f"them; the others were saved): {diverged[0].diverged}"
        )
    return Trained(result, [run.final if run.diverged is None else None for run in runs])


def _configs(grid: Grid, inputs: Inputs, outputs: Outputs,
             initial: model_io.Model | None) -> tuple[list[TrainConfig], FormatGuard]:  # fmt: skip
    """Each configuration's options (over the initial model's), in the format the input is
    parsed in, and the guard of that format; refused before any data is read: options
    that a model file, ``--save-per-pass`` or ``-p`` cannot go with."""
    configs = [
        merge_config(initial.config if initial else None, c.explicit, model_io.unrecorded(initial))
        for c in grid.configurations
    ]
    config = configs[0]
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
    if outputs.audit_regressor:
        from streamlearn.run.vwregaudit import refusal as audit_refusal

        why = "a grid of options" if grid.size > 1 else audit_refusal(config, inputs, outputs)
        if why:
            raise UsageError(f"--audit_regressor with {why}")
    if outputs.print_examples:
        from streamlearn.run.vwprint import refusal

        why = refusal(config, inputs, outputs)
        if why:
            raise UsageError(f"--print with {why}")
    return configs, guard


def _new_run(c: Configuration, cfg: TrainConfig, o: Outputs, console: Console,
             initial: model_io.Model | None, size: int) -> Run:  # fmt: skip
    """One configuration's run: its learner (fresh, or continued from ``initial``), its
    kernels' parameters, progressive table, pass log and predictions file (of a grid of
    ``size`` configurations: a grid's tables and pass lines are kept, not printed)."""
    grid_say = console.say if size == 1 else _silent
    learner = Learner.from_model(initial, cfg) if initial else Learner.fresh(cfg)
    params = cfg.params()
    params[P_PROGRESS] = console.progress  # VW's -P: when the table gets a line
    params[P_BINARY] = binary_mode(cfg.binary, o.link)
    # (sl vw: VW's accounting, an unlabeled example a loss: learners/oaa.py)
    probs = (4.0 if o.vw_format and not cfg.multilabel else 1.0) if o.probabilities else 0.0
    params[P_PROBS] = 3.0 if o.oaa_scores(cfg) else probs
    if cfg.multilabel and o.link == "logistic" and not o.probabilities:
        params[P_PROBS] = 2.0  # --multilabel_oaa: VW's logistic link on each class
    if console.progress < 0:
        learner.stats[S_NEXT_DUMP] = learner.stats[S_SHOWN_W] - console.progress
    return Run(
        c, learner, o, params,
        ProgressTable(grid_say, holdout=params[P_HOLDOUT] > 0.0, classes=cfg.oaa > 0,
                      probabilities=o.probabilities, labels=table_labels(cfg, o),
                      names=class_names(cfg) if o.vw_format else (),
                      shown=_vw_shown(o.link, cfg.binary) if o.vw_format and not cfg.oaa
                      else None),  # fmt: skip
        PassLog(cfg, _silent if o.vw_format else grid_say, vw=o.vw_format),  # (no pass lines)
        PredictionWriter(o.predictions, o.link, cfg.binary, o.raw_predictions,
                         o.probabilities, vw=o.vw_format, names=class_names(cfg),
                         multilabel=cfg.multilabel, scores=o.oaa_scores(cfg)),
        classes=ClassNumbering(params, learner.stats, console,
                               o.vw_format and not o.vw_quiet) if cfg.oaa else None,  # fmt: skip
    )  # fmt: skip


def _silent(text: str) -> None:
    """The per-configuration tables of a grid: kept for the report, not printed."""


def _vw_shown(link: str, binary: bool):  # noqa: ANN202 - float -> float
    """The table's "current predict" as VW prints it: linked, signed with --binary, +0."""
    from streamlearn.run.vwformat import link32

    return lambda p: float(link32(np.array([p]), link, binary)[0]) + 0.0


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


def _vw_header(console: Console, config: TrainConfig, inputs: Inputs, outputs: Outputs,
               passes, initial: model_io.Model | None, runs: list[Run]) -> None:  # fmt: skip
    """``sl vw``: VW's lines before the table (:mod:`streamlearn.run.vwconsole`), and what
    its summary will need counted."""
    from streamlearn.learners.base import S_WEX
    from streamlearn.run import vwconsole

    for run in runs:
        run.tally = vwconsole.Tally(int(run.params[P_HOLDOUT]), int(run.params[P_HOLDOUT_AFTER]))
        run.tally.lists_labeled = getattr(run.learner.spec.train_batch, "lists_labeled", True)
        run.tally.held_labeled = getattr(run.learner.spec.train_batch, "held_labeled", True)
    cache = None
    if inputs.cache:
        cache = (inputs.cache, bool(getattr(passes, "cache_ready", False)))
    model_t = None
    if initial is not None:
        # a VW model's own t (its --initial_t and every example it learned, as VW prints it)
        model_t = initial.meta.get("vw_model", {}).get("t")
        if model_t is None:
            model_t = vwconsole.start_t(initial.config) + float(initial.stats[S_WEX])
    if not outputs.vw_quiet:
        vwconsole.say_notes(config, outputs)
    console.say(vwconsole.header(config, inputs, outputs, cache, model_t,
                                 list(inputs.sources) or ["-"]))  # fmt: skip


def _group_runs(runs: list[Run], console: Console) -> None:
    """``sl vw --top K``: each run learns and writes its examples group by group."""
    from streamlearn.reductions import topk
    from streamlearn.run.vwtopk import TopK

    for run in runs:
        cfg = run.learner.config
        run.topk = TopK(topk.read(cfg.stack).k, run.learner.stats, run.learner.gstate,
                        run.progress.say,
                        run.writer.write_bytes if run.writer.out is not None else None,
                        console.progress, run.outputs.link, cfg.binary,
                        run.progress.curve)  # fmt: skip


def _replay_runs(runs: list[Run]) -> None:
    """``sl vw --replay_b|m|c N``: each run's examples handed to VW's experience replay."""
    from streamlearn.reductions import replay
    from streamlearn.run.vwreplay import Replay

    for run in runs:
        cfg = run.learner.config
        opts = replay.read(cfg.stack)
        if opts is not None:
            run.replay = Replay(opts.n, opts.count, run.learner, run.params,
                                zero_loss=opts.level == "b")


def _name_collector(outputs: Outputs, config: TrainConfig, initial: model_io.Model | None):  # noqa: ANN202 - an io.names.NameCollector or None
    """--invert-hash: what collects the names of the slots learned (the initial model's
    first), or None."""
    if not outputs.invert_hash:
        return None
    from streamlearn.io.names import NameCollector

    collector = NameCollector(config.bits, config.format, config.constant, config.namespaces(),
                              config.class_problems)  # fmt: skip
    if initial is not None:
        collector.names.update(initial.names)
    return collector


def _left_written(runs: list[Run]) -> str:
    """What an interrupted run leaves: no final model, but each pass's model saved so far."""
    saved = [p for run in runs for p in run.pass_models]
    if not saved:
        return "no model written"
    return f"no final model written; the pass models {', '.join(saved)} were written"


def _fit_runs(runs: list[Run], config: TrainConfig, passes: Passes, guard: FormatGuard,
              checks: BatchChecks, collector, names, bar, console: Console, inputs: Inputs,
              end_of_input) -> None:  # noqa: ANN001  # fmt: skip
    """The batch learners (--algo cd, scd): the input read once into memory, checked as
    the online passes check it, then each configuration's epochs over it."""

    def seen(batch: Batch) -> None:
        check_format(guard, batch, runs)
        checks.check(batch)
        if collector is not None:
            collector.add(batch)
        if bar is not None:
            bar.update(batch.n)

    data = _read_columns(config, passes, seen, console, inputs)
    end_of_input()
    for run in runs:
        quiet = Console(True) if len(runs) > 1 else console
        extra = _fit(run.learner, run.learner.config, data, quiet)
        run.final = run.learner.snapshot(
            collector.names if collector is not None else names, final=True
        )
        run.result = extra


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


def _results(runs: list[Run], grid: Grid, checks: BatchChecks, inputs: Inputs,
             outputs: Outputs, started: float) -> dict:  # fmt: skip
    """The run's report once learned (a grid's: every configuration's): each final model
    checked finite (a configuration of a grid that fails it is dropped), the predictions
    files flushed, the timing."""
    for run in runs:
        if run.diverged is None:
            try:
                check_model(run.final)
            except Diverged as e:
                mark_diverged(run, e, alone=grid.size == 1)
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
    return result


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


def _save(runs: list[Run], outputs: Outputs, result: dict, grid: Grid,
          initial: model_io.Model | None) -> None:  # fmt: skip
    """Every output of every configuration that did not diverge, written in full before
    any is visible (:func:`~streamlearn.system.outputs.staging`), the models last."""
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
                    if run.regaudit is not None:
                        run.regaudit.finish()
            stage.commit()  # the models last: a failure before leaves the old ones


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


def _write_reports(outputs: Outputs, runs: list[Run], result: dict, grid: Grid) -> None:
    if not outputs.report:
        return
    if grid.size > 1 and runs[0].outputs.report != outputs.report:  # placeholders: one each
        for run in runs:
            if run.diverged is None:
                write_json(run.outputs.report, run.result)
        return
    write_json(outputs.report, result)


def _earlier_passes(run: Run, initial: model_io.Model | None) -> int:
    """The passes of a model continued with its counters (``--preserve_performance_counters``,
    not ``-t``): VW counts them on (its ``current_pass``)."""
    c = run.learner.config
    if initial is None or not c.preserve_performance_counters or c.test_only:
        return 0
    return initial.config.passes or 1


def _say_summary(console: Console, board: GridTable | None, outputs: Outputs, runs: list[Run],
                 result: dict, initial: model_io.Model | None) -> None:  # fmt: skip
    """The summary on stderr (VW's for ``sl vw``, a grid's table for a grid), and a note
    when the reader of the predictions went away."""
    if outputs.audit_regressor:
        pass  # (VW's audit_regressor has no summary: its note, if any, is said)
    elif board is None and outputs.vw_format and runs[0].diverged is None:
        from streamlearn.run.vwconsole import summary as vw_summary

        run = runs[0]
        holdout = run.params[P_HOLDOUT] > 0.0 or run.params[P_HOLDOUT_AFTER] > 0.0
        console.say(vw_summary(result, run.learner.stats, run.learner.config, run.tally,
                               holdout, outputs.probabilities, _earlier_passes(run, initial),
                               run.learner.gstate, outputs.best_constant))  # fmt: skip
    elif board is None:
        console.say(summary_text(result, vw=outputs.vw_summary))
    else:
        console.say(board.summary(result))
    if any(run.writer.broken for run in runs):
        console.say(reader_left(bool(outputs.final_model)))
