"""VW's options, as sl reads them: what each one does to a :class:`Translation`.

:class:`Translation` holds what a VW command line asks for, in the library's
terms (:class:`~streamlearn.config.TrainConfig` fields, :class:`Inputs`,
:class:`Outputs` and :class:`Console` settings, the multiline reductions, the
daemon).  :data:`OPTIONS` is the table of VW's options sl takes, each with the
function that fills its part of a Translation: :data:`CORE`, those every run has,
and the reductions' (each declared by its module, :data:`streamlearn.reductions.VW_OPTIONS`);
:data:`NOT_SUPPORTED` those it does not (each named with the nearest thing sl has),
:data:`OTHER_VW_OPTIONS` the rest of VW's; an option in none is not VW's.  A refusal is
a :class:`~streamlearn.errors.VWUsage`: one line on stderr, exit 2, before any data is
read.  ``docs/vw-compat.md`` is this table for people.

Reading a whole command line with these tables: :mod:`streamlearn.vwargs.argv`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from streamlearn.errors import VWUsage
from streamlearn.reductions.vwoptions import (
    VWOption,
    flag,
    integer,
    learn,
    number,
    stack_field,
    take,
)


@dataclass
class Translation:
    """What a VW command line asks for, in the library's terms."""

    learn: dict = field(default_factory=dict)
    """TrainConfig fields."""
    inputs: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    data: list[str] = field(default_factory=list)
    predictions: str | None = None
    raw_predictions: str | None = None
    report: str | None = None
    link: str = "identity"
    quiet: bool = False
    probabilities: bool = False
    """--probabilities: each class's probability under --oaa (an output, not a config)."""
    progress: str | None = None
    log_output: str = "compat"
    """--log_output: where VW's info and warning lines go (compat, stdout: standard output;
    stderr: standard error); sl's own errors and notes go to standard error."""
    strict: bool = False
    cache: bool = False
    cache_files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """One line each on stderr before the run (options accepted with a difference)."""
    explorer_options: list[str] = field(default_factory=list)
    """The explorers named (--first, --bag, ...): VW ignores them without an exploring
    reduction (--cb_explore, --cb_explore_adf, --cbify)."""
    exploring: bool = False
    help: bool = False
    version: bool = False
    rate_zero: bool = False
    no_stdin: bool = False
    """--no_stdin: without -d, read no examples (VW); sl then reads none, and writes its
    outputs from the initial model (--allow-empty)."""
    allow_empty: bool = False
    noop: bool = False
    daemon: dict = field(default_factory=dict)
    """--daemon, --port, --foreground, --num_children, --pid_file, --port_file: a server
    (:func:`streamlearn.cli.vw.daemon`)."""

    multiline: dict = field(default_factory=dict)
    """--csoaa_ldf, --cb_adf, --cb K and their options
    (:class:`~streamlearn.reductions.Multiline`)."""
    reductions: bool = False
    """An option of a reduction was read (not one of :data:`CORE`): what the options mean
    together is then theirs to settle too (:data:`streamlearn.reductions.table.SETTLE`)."""
    single_line: set[str] = field(default_factory=set)
    """The modules of the single-line reductions whose options were read
    (:data:`streamlearn.reductions.table.OWNER`): then every module settles the line."""

    def add(self, key: str, value) -> None:  # noqa: ANN001 - a repeatable option's value
        self.learn[key] = (*self.learn.get(key, ()), value)




def _path(text: str) -> str:
    """VW's ``stdout`` for the standard output."""
    return "-" if text == "stdout" else text


def _repeat(key: str) -> Callable[[Translation, str, str], None]:
    return lambda t, name, value: t.add(key, value)


def _set(attr: str, value=True) -> Callable[[Translation, str, str | None], None]:  # noqa: ANN001
    def apply(t: Translation, name: str, _: str | None) -> None:
        setattr(t, attr, value)

    return apply


def _state(name: str, text: str) -> float:
    """``--l1_state``/``--l2_state`` as VW reads them: a 32-bit float (gd's option), kept in
    its double state."""
    import struct

    return struct.unpack("f", struct.pack("f", number(name, text)))[0]


def _log_output(t: Translation, name: str, value: str) -> None:
    if value not in ("compat", "stdout", "stderr"):
        raise VWUsage(f"--log_output {value}: VW's streams are compat, stdout and stderr")
    t.log_output = value


def _noop(t: Translation, name: str, value: str | None) -> None:
    """Accepted: what it asks for is what sl does anyway (docs/vw-compat.md)."""


def _rate(t: Translation, name: str, value: str) -> None:
    rate = number(name, value)
    if rate == 0.0:
        t.rate_zero = True  # VW: a rate of 0 only tests
    else:
        t.learn["learning_rate"] = rate


def _data(t: Translation, name: str, value: str) -> None:
    t.data.append(value)


def _loss(t: Translation, name: str, value: str) -> None:
    names = {"squared": "squared", "classic": "classic", "hinge": "hinge",
             "logistic": "logistic", "quantile": "quantile", "pinball": "quantile",
             "absolute": "quantile", "poisson": "poisson", "Huber": "squared",
             "expectile": "expectile"}  # fmt: skip
    if value not in names:
        raise VWUsage(f"--loss_function {value!r}: one of squared, classic, hinge, logistic, "
                      "quantile, expectile, poisson")  # fmt: skip
    t.learn["loss"] = names[value]


def _update_rule(rule: str) -> Callable[[Translation, str, str | None], None]:
    def apply(t: Translation, name: str, _: str | None) -> None:
        t.learn.setdefault("_rules", set()).add(rule)

    return apply


def _algo(t: Translation, name: str, _: str | None) -> None:
    """``--ftrl``, ``--coin``, ``--pistol``, ``--freegrad``: VW's learners of its ftrl
    reduction, one per line (VW would take the first of its own order silently)."""
    chosen = t.learn.get("algo")
    if chosen is not None and chosen != name:
        raise VWUsage(f"--{name} conflicts with --{chosen}")
    t.learn["algo"] = name


def _initial_weights(kind: str) -> Callable[[Translation, str, str | None], None]:
    """VW's random initial weights; of several, VW takes random, then normal, then
    truncated normal."""
    order = ("random", "normal", "truncated_normal")

    def apply(t: Translation, name: str, _: str | None) -> None:
        prev = t.learn.get("initial_weights")
        if prev is None or order.index(kind) < order.index(prev):
            t.learn["initial_weights"] = kind

    return apply


def _progress(t: Translation, name: str, value: str) -> None:
    t.progress = value


def _cache_file(t: Translation, name: str, value: str) -> None:
    t.cache_files.append(value)


def _link(t: Translation, name: str, value: str) -> None:
    if value not in ("identity", "logistic", "glf1", "poisson"):
        raise VWUsage(f"--link {value!r}: one of identity, logistic, glf1, poisson")
    t.link = value


def _output(key: str) -> Callable[[Translation, str, str], None]:
    def apply(t: Translation, name: str, value: str) -> None:
        t.outputs[key] = _path(value)

    return apply


def _save_per_pass(t: Translation, name: str, _: str | None) -> None:
    t.outputs["save_per_pass"] = True


def _predictions(t: Translation, name: str, value: str) -> None:
    t.predictions = _path(value)


def _raw(t: Translation, name: str, value: str) -> None:
    t.raw_predictions = _path(value)


def _initial_model(t: Translation, name: str, value: str) -> None:
    t.inputs["initial_model"] = value


def _examples(t: Translation, name: str, value: str) -> None:
    n = integer(name, value)
    if n < -1:
        raise VWUsage("--examples must be -1 or positive")
    t.inputs["examples"] = None if n == -1 else n


def _holdout_after(t: Translation, name: str, value: str) -> None:
    n = integer(name, value)
    if n < 0:
        raise VWUsage("--holdout_after must be >= 0")
    if n > 0:
        t.learn["holdout_after"] = n


def _daemon(kind: Callable | None = None) -> Callable[[Translation, str, str | None], None]:
    def apply(t: Translation, name: str, value: str | None) -> None:
        t.daemon[name] = True if value is None else kind(name, value) if kind else value

    return apply


def _report(t: Translation, name: str, value: str) -> None:
    t.report = value


def _hash(t: Translation, name: str, value: str) -> None:
    if value not in ("strings", "all"):
        raise VWUsage(f"--hash {value!r}: one of strings, all")
    t.learn["hash"] = value


CORE: dict[str, VWOption] = {
    # input
    "data": VWOption("d", True, _data, repeatable=True),
    "cache": VWOption("c", False, _set("cache")),
    "cache_file": VWOption(None, True, _cache_file, repeatable=True),
    "kill_cache": VWOption("k", False, lambda t, n, v: t.inputs.__setitem__("rebuild_cache", True)),
    "compressed": VWOption(None, False, _noop),
    "onethread": VWOption(None, False, _noop),  # VW: no parser thread; sl's threads change nothing
    "examples": VWOption(None, True, _examples),
    "strict_parse": VWOption(None, False, _set("strict")),
    "csv": VWOption(None, False, learn("format", lambda n, v: "csv")),
    "csv_separator": VWOption(None, True, learn("csv_separator")),
    "csv_header": VWOption(None, True, learn("csv_header")),
    "csv_no_file_header": VWOption(None, False, flag("csv_no_file_header")),
    "csv_ns_value": VWOption(None, True, learn("csv_ns_value")),
    "no_stdin": VWOption(None, False, _set("no_stdin")),
    "allow_empty": VWOption(None, False, _set("allow_empty")),  # sl's own: sl train --allow-empty
    # passes and holdout
    "passes": VWOption(None, True, learn("passes", integer)),
    "holdout_off": VWOption(None, False, learn("holdout_period", lambda n, v: 0)),
    "holdout_period": VWOption(None, True, learn("holdout_period", integer)),
    "holdout_after": VWOption(None, True, _holdout_after),
    "early_terminate": VWOption(None, True, learn("early_terminate", integer)),
    "testonly": VWOption("t", False, flag("test_only")),
    "noop": VWOption(None, False, _set("noop")),
    # what to learn
    "bit_precision": VWOption("b", True, learn("bits", integer)),
    "learning_rate": VWOption("l", True, _rate),
    "power_t": VWOption(None, True, learn("power_t", number)),
    "initial_t": VWOption(None, True, learn("initial_t", number)),
    "decay_learning_rate": VWOption(None, True, learn("decay_learning_rate", number)),
    "l1": VWOption(None, True, learn("l1", number)),
    "l2": VWOption(None, True, learn("l2", number)),
    "l1_state": VWOption(None, True, learn("l1_state", _state)),
    "l2_state": VWOption(None, True, learn("l2_state", _state)),
    "loss_function": VWOption(None, True, _loss),
    "quantile_tau": VWOption(None, True, learn("quantile_tau", number)),
    "expectile_q": VWOption(None, True, learn("expectile_q", number)),
    "logistic_min": VWOption(None, True, learn("logistic_min", number)),
    "logistic_max": VWOption(None, True, learn("logistic_max", number)),
    "min_prediction": VWOption(None, True, learn("min_prediction", number)),
    "max_prediction": VWOption(None, True, learn("max_prediction", number)),
    "binary": VWOption(None, False, flag("binary")),
    "link": VWOption(None, True, _link),
    "sgd": VWOption(None, False, _update_rule("sgd")),
    "adaptive": VWOption(None, False, _update_rule("adaptive")),
    "normalized": VWOption(None, False, _update_rule("normalized")),
    "invariant": VWOption(None, False, _update_rule("invariant")),
    "ftrl": VWOption(None, False, _algo),
    "ftrl_alpha": VWOption(None, True, learn("ftrl_alpha", number)),
    "ftrl_beta": VWOption(None, True, learn("ftrl_beta", number)),
    "coin": VWOption(None, False, _algo),
    "pistol": VWOption(None, False, _algo),
    "freegrad": VWOption(None, False, _algo),
    "fepsilon": VWOption(None, True, learn("freegrad_epsilon", number)),
    "flipschitz_const": VWOption(None, True, learn("freegrad_lipschitz", number)),
    "restart": VWOption(None, False, flag("freegrad_restart")),
    "project": VWOption(None, False, flag("freegrad_project")),
    "radius": VWOption(None, True, learn("freegrad_radius", number)),
    "example_queue_limit": VWOption(None, True, lambda t, n, v: integer(n, v)),  # a queue's size
    # labels and initial weights
    "indexing": VWOption(None, True, learn("indexing", integer)),
    "probabilities": VWOption(None, False, _set("probabilities")),
    "named_labels": VWOption(None, True, learn("named_labels")),
    "classweight": VWOption(None, True, _repeat("classweight"), repeatable=True),
    "initial_weight": VWOption(None, True, learn("initial_weight", number)),
    "constant": VWOption("C", True, learn("initial_constant", number)),
    "random_weights": VWOption(None, False, _initial_weights("random")),
    "normal_weights": VWOption(None, False, _initial_weights("normal")),
    "truncated_normal_weights": VWOption(None, False, _initial_weights("truncated_normal")),
    "random_seed": VWOption(None, True, learn("seed", integer)),
    # features
    "noconstant": VWOption(None, False, flag("constant", False)),
    "json": VWOption(None, False, flag("format", "json")),
    "dsjson": VWOption(None, False, flag("format", "dsjson")),
    "flatbuffer": VWOption(None, False, lambda t, n, v: t.inputs.__setitem__("flatbuffer", True)),
    "chain_hash": VWOption(None, False, flag("chain_hash")),
    "hash": VWOption(None, True, _hash),
    "hash_seed": VWOption(None, True, learn("hash_seed", integer)),
    "quadratic": VWOption("q", True, _repeat("quadratic"), repeatable=True),
    "cubic": VWOption(None, True, _repeat("cubic"), repeatable=True),
    "interactions": VWOption(None, True, _repeat("interactions"), repeatable=True),
    "ignore": VWOption(None, True, _repeat("ignore"), repeatable=True),
    "ignore_linear": VWOption(None, True, _repeat("ignore_linear"), repeatable=True),
    "keep": VWOption(None, True, _repeat("keep"), repeatable=True),
    "redefine": VWOption(None, True, _repeat("redefine"), repeatable=True),
    "spelling": VWOption(None, True, _repeat("spelling"), repeatable=True),
    "ngram": VWOption(None, True, _repeat("ngram"), repeatable=True),
    "skips": VWOption(None, True, _repeat("skips"), repeatable=True),
    "sort_features": VWOption(None, False, flag("sort_features")),
    "leave_duplicate_interactions": VWOption(None, False, flag("leave_duplicate_interactions")),
    "permutations": VWOption(None, False, flag("permutations")),
    "feature_limit": VWOption(None, True, _repeat("feature_limit"), repeatable=True),
    "affix": VWOption(None, True, learn("affix")),
    # outputs
    "initial_regressor": VWOption("i", True, _initial_model),
    "final_regressor": VWOption("f", True, _output("final_model")),
    "readable_model": VWOption(None, True, _output("readable_model")),
    "extra_metrics": VWOption(None, True, _output("extra_metrics")),
    "invert_hash": VWOption(None, True, _output("invert_hash")),
    "save_per_pass": VWOption(None, False, _save_per_pass),
    "predictions": VWOption("p", True, _predictions),
    "raw_predictions": VWOption("r", True, _raw),
    "save_resume": VWOption(None, False, _noop),
    "predict_only_model": VWOption(None, False, lambda t, n, v: t.outputs.__setitem__(
        "model_format", "vw_predict_only")),  # -f: VW's weights only
    "preserve_performance_counters": VWOption(None, False,
                                              flag("preserve_performance_counters")),
    "sparse_weights": VWOption(None, False, _noop),
    # diagnostics
    "quiet": VWOption(None, False, _set("quiet")),
    "driver_output_off": VWOption(None, False, _set("quiet")),
    "limit_output": VWOption(None, True, _noop),
    "log_output": VWOption(None, True, _log_output),
    "id": VWOption(None, True, learn("model_id")),
    "report": VWOption(None, True, _report),  # sl's own: the JSON report of sl train --report
    "ope": VWOption(None, False, stack_field("ope")),  # sl's own: off-policy estimates (cb)
    "progress": VWOption("P", True, _progress),
    "audit": VWOption("a", False, lambda t, n, v: t.outputs.__setitem__("audit", True)),
    "print": VWOption(None, False, lambda t, n, v: t.outputs.__setitem__("print_examples",
                                                                          True)),  # fmt: skip
    "audit_regressor": VWOption(None, True, _output("audit_regressor")),
    "scores": VWOption(None, False, lambda t, n, v: t.outputs.__setitem__("scores", True)),
    "dont_output_best_constant": VWOption(
        None, False, lambda t, n, v: t.outputs.__setitem__("best_constant", False)),
    "help": VWOption("h", False, _set("help")),
    "version": VWOption(None, False, _set("version")),
    # daemon (the server: streamlearn.cli.vw.daemon)
    "daemon": VWOption(None, False, _daemon()),
    "port": VWOption(None, True, _daemon(integer)),
    "foreground": VWOption(None, False, _daemon()),
    "num_children": VWOption(None, True, _daemon(integer)),
    "pid_file": VWOption(None, True, _daemon()),
    "port_file": VWOption(None, True, _daemon()),
    "save_every": VWOption(None, True, _daemon()),  # sl's own: sl serve --save-every
}  # fmt: skip
"""VW's options every run has (those of a reduction are its module's:
:data:`streamlearn.reductions.VW_OPTIONS`), by VW's long name."""





def option(name: str) -> VWOption | None:
    """VW's option ``name`` as sl vw takes it (None: not taken).  One of :data:`CORE` needs
    no reduction's module; any other reads the reductions' table (which imports a
    single-line reduction's module only for its own options)."""
    if name in CORE:
        return CORE[name]
    from streamlearn.reductions.table import vw_option

    return vw_option(name)


@cache
def _options() -> dict[str, VWOption]:
    from streamlearn.reductions import VW_OPTIONS

    return take(CORE, VW_OPTIONS)


def __getattr__(name: str):  # noqa: ANN202 - OPTIONS, made on first use (PEP 562)
    if name == "OPTIONS":
        return _options()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


OPTIONS: dict[str, VWOption]
"""VW's options ``sl vw`` takes, by VW's long name: :data:`CORE` and the reductions' (made
when first read: the reductions' registry is imported then)."""

NOT_SUPPORTED: dict[str, str] = {
    "new_mf": "none",
    "dictionary": "none",
    "dictionary_path": "none",
    "experimental_full_name_interactions": "--interactions (first characters of the names)",
    "sparse_l2": "--l2",
    "feature_mask": "none",
    "initial_pass_length": "--examples N (the first N examples of each pass)",
    "input_feature_regularizer": "none",
    "output_feature_regularizer_binary": "none",
    "output_feature_regularizer_text": "none",
    "hexfloat_weights": "--readable_model",
    "dump_json_weights_experimental": "--readable_model",
    "no_daemon": "none",
    "threads": "none (sl parses on two threads already)",
    "span_server": "sl train --dask (averaging over a Dask cluster)",
    "span_server_port": "sl train --dask",
    "total": "sl train --dask",
    "node": "sl train --dask",
    "unique_id": "sl train --dask",
    "dry_run": "none",
    "driver_output": "--quiet",
    "log_level": "--quiet",
    "ring_size": "none",
}
"""VW's options sl does not take, with the nearest thing sl has."""

OTHER_VW_OPTIONS = frozenset("""

    automl automl_significance_level
    baseline_challenger_cb
     cb_c_alpha
    cb_c_tau cb_explore_pdf
    cb_sample cb_to_cbadf

    cs_absolute_loss
    csv_trace debug_reversed_learn
    default_lease
      dump_json_weights_include_extra_online_state_experimental
    dump_json_weights_include_feature_names_experimental


    fixed_significance_level
     get_pmf  graph_feedback
     ignore_features_dsjson_experimental
        interaction_type

    ldf_override



    metrics

     oracle_type
     per_model_save_load pmf_to_pdf
      priority_challengers priority_type
     sample_pdf
    search_active_verify search_metatask
    search_use_passthrough_repr sendto

    tree_bandwidth
      verbose_metrics
""".split())
"""The rest of VW's options (``vw --help`` of VW 9.11): reductions and their settings,
refused as :data:`NOT_SUPPORTED` is, with no nearer thing in sl.  An option in neither
table is not VW's."""

SHORT = {o.short: name for name, o in CORE.items() if o.short}
"""VW's short options, by letter (each of :data:`CORE`: a reduction's options are long only,
``tests/reductions/test_vw_options.py``)."""
