"""VW's options, as ``sl vw`` reads them: what each one does to a :class:`Translation`.

:class:`Translation` holds what a VW command line asks for, in the library's
terms (:class:`~streamlearn.config.TrainConfig` fields, :class:`Inputs`,
:class:`Outputs` and :class:`Console` settings, the multiline reductions, the
daemon).  :data:`OPTIONS` is the table of VW's options sl takes, each with the
function that fills its part of a Translation; :data:`NOT_SUPPORTED` those it
does not (each named with the nearest thing sl has), :data:`OTHER_VW_OPTIONS`
the rest of VW's; an option in none is not VW's.  A refusal is a
:class:`VWUsage`: one line on stderr, exit 2, before any data is read.
``docs/vw-compat.md`` is this table for people.

Reading a whole command line with these tables: :mod:`streamlearn.cli.vwargv`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from streamlearn.errors import UsageError


class VWUsage(UsageError):
    """A VW option sl does not take, or a malformed VW command line: one line, exit 2."""

    def format_message(self) -> str:
        return f"sl vw: {self.message}"


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

    def add(self, key: str, value) -> None:  # noqa: ANN001 - a repeatable option's value
        self.learn[key] = (*self.learn.get(key, ()), value)


def _float(name: str, text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise VWUsage(f"--{name} {text!r}: a number is expected") from None
    if abs(x) > F32_MAX and abs(x) != float("inf"):  # (VW: "Failed to convert 1e308 to f")
        raise VWUsage(f"--{name} {text}: beyond a 32-bit float, as VW reads it")
    return x


F32_MAX = 3.4028234663852886e38
"""The largest 32-bit float: VW reads its options' numbers as such."""


def _int(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise VWUsage(f"--{name} {text!r}: an integer is expected") from None


def _count(name: str, text: str, flag: str, what: str) -> int:
    """An integer of at least 1 (classes, actions); otherwise ``FLAG TEXT: WHAT``."""
    k = _int(name, text)
    if k < 1:
        raise VWUsage(f"{flag} {text}: {what}")
    return k


def _path(text: str) -> str:
    """VW's ``stdout`` for the standard output."""
    return "-" if text == "stdout" else text


def _learn(key: str, kind: Callable | None = None) -> Callable[[Translation, str, str], None]:
    def apply(t: Translation, name: str, value: str) -> None:
        t.learn[key] = kind(name, value) if kind is not None else value

    return apply


def _repeat(key: str) -> Callable[[Translation, str, str], None]:
    return lambda t, name, value: t.add(key, value)


def _flag(key: str, value=True) -> Callable[[Translation, str, str | None], None]:  # noqa: ANN001
    def apply(t: Translation, name: str, _: str | None) -> None:
        t.learn[key] = value

    return apply


def _set(attr: str, value=True) -> Callable[[Translation, str, str | None], None]:  # noqa: ANN001
    def apply(t: Translation, name: str, _: str | None) -> None:
        setattr(t, attr, value)

    return apply


def _note(text: str) -> Callable[[Translation, str, str | None], None]:
    def apply(t: Translation, name: str, _: str | None) -> None:
        t.notes.append(f"--{name}: {text}")

    return apply


def _noop(t: Translation, name: str, value: str | None) -> None:
    """Accepted: what it asks for is what sl does anyway (docs/vw-compat.md)."""


def _rate(t: Translation, name: str, value: str) -> None:
    rate = _float(name, value)
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


def _oaa(t: Translation, name: str, value: str) -> None:
    k = _count(name, value, "--oaa", "one-against-all needs at least one class")
    t.learn["oaa"] = k


def _bootstrap(t: Translation, name: str, value: str) -> None:
    k = _count(name, value, "--bootstrap", "the bootstrap needs at least one copy")
    t.learn["bootstrap"] = k


def _bs_type(t: Translation, name: str, value: str) -> None:
    if value not in ("mean", "vote"):
        raise VWUsage(f"--bs_type {value}: mean or vote")
    t.learn["bs_type"] = value


def _ml(key: str, kind: Callable | None = None, value=True) -> Callable:  # noqa: ANN001
    """An option of the multiline reductions (``Translation.multiline``)."""

    def apply(t: Translation, name: str, text: str | None) -> None:
        t.multiline[key] = value if text is None else (kind(name, text) if kind else text)

    return apply


def _csoaa_ldf(t: Translation, name: str, value: str) -> None:
    if value not in ("m", "multiline", "mc", "multiline-classifier"):
        raise VWUsage(f"--csoaa_ldf {value}: m, multiline, mc or multiline-classifier")
    t.multiline["reduction"] = "csoaa_ldf"
    t.multiline["classifier"] = value in ("mc", "multiline-classifier")


SIZE_NAMES = {"actions": "--cb", "cbify": "--cbify", "bag": "--bag", "rnd": "--rnd",
              "cover": "--cover"}  # fmt: skip
"""The options of sl vw that declare a count the run allocates for (model_vw.check_sizes)."""


def _sized(t: Translation, key: str, name: str) -> None:
    """Refuse (exit 8) a count whose memory passes what is available, before any is
    allocated: ``--cb 4294967296``, ``--bag 100000000`` (a model's too: vwargv.model_argv)."""
    from streamlearn.model_vw import check_sizes

    check_sizes(t.multiline, {**SIZE_NAMES, key: f"--{name}"})


def _cb(t: Translation, name: str, value: str) -> None:
    k = _count(name, value, "--cb", "at least one action")
    t.multiline["reduction"] = "cb"
    t.multiline["actions"] = k
    _sized(t, "actions", name)


def _csoaa(t: Translation, name: str, value: str) -> None:
    k = _count(name, value, "--csoaa", "cost-sensitive one-against-all needs at least one class")
    t.learn["oaa"] = k
    t.learn["csoaa"] = True


def _multilabel(t: Translation, name: str, value: str) -> None:
    k = _count(name, value, "--multilabel_oaa", "at least one class is needed")
    t.learn["oaa"] = k
    t.learn["multilabel"] = True


def _cb_explore_adf(t: Translation, name: str, value: str | None) -> None:
    t.exploring = True
    # --cbify runs on --cb_explore_adf anyway, as --ccb_explore_adf and --slates do
    if t.multiline.get("reduction") not in ("cbify", "ccb", "slates"):
        t.multiline["reduction"] = "cb_adf"
    t.multiline.setdefault("explore", "greedy")


def _ccb(reduction: str) -> Callable:
    """``--ccb_explore_adf`` and ``--slates`` (run/ccb.py): on ``--cb_explore_adf``; slates
    runs through ccb, so the one named last of the two does not change the other."""

    def apply(t: Translation, name: str, value: str | None) -> None:
        t.exploring = True
        if t.multiline.get("reduction") not in (None, "cb_adf", "ccb", "slates"):
            raise VWUsage(f"--{name} with --{t.multiline['reduction']}: one reduction at a time")
        if t.multiline.get("reduction") != "slates":
            t.multiline["reduction"] = reduction
        t.multiline.setdefault("explore", "greedy")

    return apply


def _cb_explore(t: Translation, name: str, value: str) -> None:
    """``--cb_explore K``: VW 9 runs it as ``--cb K`` on ``--cb_explore_adf``."""
    t.exploring = True
    _cb(t, name, value)
    t.multiline.setdefault("explore", "greedy")


def _explore_eval(t: Translation, name: str, value: str | None) -> None:
    """``--explore_eval``: VW adds --cb_explore_adf below it when not given."""
    _cb_explore_adf(t, name, value)
    t.multiline["explore_eval"] = True


def _cbify(t: Translation, name: str, value: str) -> None:
    t.exploring = True
    k = _count(name, value, "--cbify", "at least one class")
    t.multiline["reduction"] = "cbify"
    t.multiline["cbify"] = k
    _sized(t, "cbify", name)
    t.multiline.setdefault("explore", "greedy")


def _cbify_ldf(t: Translation, name: str, value: str | None) -> None:
    """``--cbify_ldf``: cost-sensitive LDF examples played as a bandit (on --cb_explore_adf)."""
    t.exploring = True
    t.multiline["reduction"] = "cbify"
    t.multiline["cbify_ldf"] = True
    t.multiline.setdefault("explore", "greedy")


def _regcbopt(t: Translation, name: str, value: str | None) -> None:
    """``--regcbopt``: RegCB's optimistic variant (alone, VW still enables ``--regcb``)."""
    _explorer("regcb")(t, name, value)
    t.multiline["regcbopt"] = True


def _explorer(kind: str, key: str | None = None, conv: Callable | None = None) -> Callable:
    """An explorer of ``--cb_explore_adf`` (the last one named wins, as VW's setup order does
    not: two explorers are refused when the run starts)."""

    def apply(t: Translation, name: str, value: str | None) -> None:
        t.explorer_options.append(name)
        prev = t.multiline.get("explore")
        if prev not in (None, "greedy", kind):
            raise VWUsage(f"--{name} and --{prev}: one explorer at a time")
        t.multiline["explore"] = kind
        if key is not None:
            t.multiline[key] = conv(name, value) if conv else value
        if key in SIZE_NAMES:
            _sized(t, key, name)

    return apply


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
    n = _int(name, value)
    if n < -1:
        raise VWUsage("--examples must be -1 or positive")
    t.inputs["examples"] = None if n == -1 else n


def _holdout_after(t: Translation, name: str, value: str) -> None:
    n = _int(name, value)
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


@dataclass(frozen=True)
class Opt:
    """One of VW's options: its spellings, whether it takes a value, what it does in sl."""

    short: str | None
    value: bool
    apply: Callable


OPTIONS: dict[str, Opt] = {
    # input
    "data": Opt("d", True, _data),
    "cache": Opt("c", False, _set("cache")),
    "cache_file": Opt(None, True, _cache_file),
    "kill_cache": Opt("k", False, lambda t, n, v: t.inputs.__setitem__("rebuild_cache", True)),
    "compressed": Opt(None, False, _noop),
    "onethread": Opt(None, False, _noop),  # VW: no parser thread; sl's threads change nothing
    "examples": Opt(None, True, _examples),
    "strict_parse": Opt(None, False, _set("strict")),
    "csv": Opt(None, False, _learn("format", lambda n, v: "csv")),
    "csv_separator": Opt(None, True, _learn("csv_separator")),
    "csv_header": Opt(None, True, _learn("csv_header")),
    "csv_no_file_header": Opt(None, False, _flag("csv_no_file_header")),
    "csv_ns_value": Opt(None, True, _learn("csv_ns_value")),
    "no_stdin": Opt(None, False, _set("no_stdin")),
    "allow_empty": Opt(None, False, _set("allow_empty")),  # sl's own: sl train --allow-empty
    # passes and holdout
    "passes": Opt(None, True, _learn("passes", _int)),
    "holdout_off": Opt(None, False, _learn("holdout_period", lambda n, v: 0)),
    "holdout_period": Opt(None, True, _learn("holdout_period", _int)),
    "holdout_after": Opt(None, True, _holdout_after),
    "early_terminate": Opt(None, True, _learn("early_terminate", _int)),
    "testonly": Opt("t", False, _flag("test_only")),
    "noop": Opt(None, False, _set("noop")),
    # what to learn
    "bit_precision": Opt("b", True, _learn("bits", _int)),
    "learning_rate": Opt("l", True, _rate),
    "power_t": Opt(None, True, _learn("power_t", _float)),
    "initial_t": Opt(None, True, _learn("initial_t", _float)),
    "decay_learning_rate": Opt(None, True, _learn("decay_learning_rate", _float)),
    "l1": Opt(None, True, _learn("l1", _float)),
    "l2": Opt(None, True, _learn("l2", _float)),
    "loss_function": Opt(None, True, _loss),
    "quantile_tau": Opt(None, True, _learn("quantile_tau", _float)),
    "expectile_q": Opt(None, True, _learn("expectile_q", _float)),
    "logistic_min": Opt(None, True, _learn("logistic_min", _float)),
    "logistic_max": Opt(None, True, _learn("logistic_max", _float)),
    "min_prediction": Opt(None, True, _learn("min_prediction", _float)),
    "max_prediction": Opt(None, True, _learn("max_prediction", _float)),
    "binary": Opt(None, False, _flag("binary")),
    "link": Opt(None, True, _link),
    "sgd": Opt(None, False, _update_rule("sgd")),
    "adaptive": Opt(None, False, _update_rule("adaptive")),
    "normalized": Opt(None, False, _update_rule("normalized")),
    "invariant": Opt(None, False, _update_rule("invariant")),
    "ftrl": Opt(None, False, _algo),
    "ftrl_alpha": Opt(None, True, _learn("ftrl_alpha", _float)),
    "ftrl_beta": Opt(None, True, _learn("ftrl_beta", _float)),
    "coin": Opt(None, False, _algo),
    "pistol": Opt(None, False, _algo),
    "freegrad": Opt(None, False, _algo),
    "fepsilon": Opt(None, True, _learn("freegrad_epsilon", _float)),
    "flipschitz_const": Opt(None, True, _learn("freegrad_lipschitz", _float)),
    "restart": Opt(None, False, _flag("freegrad_restart")),
    "project": Opt(None, False, _flag("freegrad_project")),
    "radius": Opt(None, True, _learn("freegrad_radius", _float)),
    # multiclass
    "oaa": Opt(None, True, _oaa),
    "bootstrap": Opt(None, True, _bootstrap),
    "bs_type": Opt(None, True, _bs_type),
    "autolink": Opt(None, True, _learn("autolink", _int)),
    "bfgs": Opt(None, False, lambda t, n, v: t.learn.setdefault("bfgs", 15)),
    "mem": Opt(None, True, _learn("bfgs_mem_given", _int)),
    "termination": Opt(None, True, _learn("termination", _float)),
    "hessian_on": Opt(None, False, _flag("hessian_on")),
    "csoaa": Opt(None, True, _csoaa),
    "multilabel_oaa": Opt(None, True, _multilabel),
    "csoaa_ldf": Opt(None, True, _csoaa_ldf),
    "csoaa_rank": Opt(None, False, _ml("csoaa_rank")),
    "cb_adf": Opt(None, False, _ml("reduction", value="cb_adf")),
    "cb": Opt(None, True, _cb),
    "cb_type": Opt(None, True, _ml("cb_type")),
    "rank_all": Opt(None, False, _ml("rank_all")),
    "clip_p": Opt(None, True, _ml("clip_p", _float)),
    "cb_force_legacy": Opt(None, False, _ml("legacy")),  # VW's single-line cb (run/cblegacy.py)
    "eval": Opt(None, False, _ml("evaluate")),
    "cover": Opt(None, True, _explorer("cover", "cover", _int)),  # (legacy --cb_explore K)
    "psi": Opt(None, True, _ml("psi", _float)),
    "nounif": Opt(None, False, _ml("nounif")),
    # exploration (--cb_explore_adf, learners/explore.py)
    "cb_explore_adf": Opt(None, False, _cb_explore_adf),
    "cbify": Opt(None, True, _cbify),
    "cb_explore": Opt(None, True, _cb_explore),
    "cbify_cs": Opt(None, False, _ml("cbify_cs")),
    "cbify_ldf": Opt(None, False, _cbify_ldf),
    "ccb_explore_adf": Opt(None, False, _ccb("ccb")),
    "slates": Opt(None, False, _ccb("slates")),
    "all_slots_loss": Opt(None, False, _ml("all_slots_loss")),
    "ccb_no_slot_index": Opt(None, False, _ml("ccb_no_slot_index")),
    "no_predict": Opt(None, False, _ml("no_predict")),
    "example_queue_limit": Opt(None, True, lambda t, n, v: _int(n, v)),  # a queue's size
    "loss0": Opt(None, True, _ml("loss0", _float)),
    "loss1": Opt(None, True, _ml("loss1", _float)),
    "epsilon": Opt(None, True, _ml("epsilon", _float)),
    "first_only": Opt(None, False, _ml("first_only")),
    "first": Opt(None, True, _explorer("first", "tau", _int)),
    "softmax": Opt(None, False, _explorer("softmax")),
    "lambda": Opt(None, True, _ml("lam", _float)),
    "bag": Opt(None, True, _explorer("bag", "bag", _int)),
    "greedify": Opt(None, False, _ml("greedify")),
    "explore_eval": Opt(None, False, _explore_eval),
    "multiplier": Opt(None, True, _ml("multiplier", _float)),
    "target_rate": Opt(None, True, _ml("target_rate", _float)),
    "squarecb": Opt(None, False, _explorer("squarecb")),
    "elim": Opt(None, False, _ml("elim")),
    "synthcover": Opt(None, False, _explorer("synthcover")),
    "rnd": Opt(None, True, _explorer("rnd", "rnd", _int)),
    "rnd_alpha": Opt(None, True, _ml("rnd_alpha", _float)),
    "rnd_invlambda": Opt(None, True, _ml("rnd_invlambda", _float)),
    "synthcoverpsi": Opt(None, True, _ml("synthcoverpsi", _float)),
    "synthcoversize": Opt(None, True, _ml("synthcoversize", _int)),
    "regcb": Opt(None, False, _explorer("regcb")),
    "regcbopt": Opt(None, False, _regcbopt),
    "mellowness": Opt(None, True, _ml("mellowness", _float)),
    "cb_min_cost": Opt(None, True, _ml("cb_min_cost", _float)),
    "cb_max_cost": Opt(None, True, _ml("cb_max_cost", _float)),
    "gamma_scale": Opt(None, True, _ml("gamma_scale", _float)),
    "gamma_exponent": Opt(None, True, _ml("gamma_exponent", _float)),
    "indexing": Opt(None, True, _learn("indexing", _int)),
    "probabilities": Opt(None, False, _set("probabilities")),
    "named_labels": Opt(None, True, _learn("named_labels")),
    "classweight": Opt(None, True, _repeat("classweight")),
    "initial_weight": Opt(None, True, _learn("initial_weight", _float)),
    "constant": Opt("C", True, _learn("initial_constant", _float)),
    "random_weights": Opt(None, False, _initial_weights("random")),
    "normal_weights": Opt(None, False, _initial_weights("normal")),
    "truncated_normal_weights": Opt(None, False, _initial_weights("truncated_normal")),
    "random_seed": Opt(None, True, _learn("seed", _int)),
    # features
    "noconstant": Opt(None, False, _flag("constant", False)),
    "json": Opt(None, False, _flag("format", "json")),
    "dsjson": Opt(None, False, _flag("format", "dsjson")),
    "chain_hash": Opt(None, False, _flag("chain_hash")),
    "hash": Opt(None, True, _hash),
    "hash_seed": Opt(None, True, _learn("hash_seed", _int)),
    "quadratic": Opt("q", True, _repeat("quadratic")),
    "cubic": Opt(None, True, _repeat("cubic")),
    "interactions": Opt(None, True, _repeat("interactions")),
    "ignore": Opt(None, True, _repeat("ignore")),
    "ignore_linear": Opt(None, True, _repeat("ignore_linear")),
    "keep": Opt(None, True, _repeat("keep")),
    "ngram": Opt(None, True, _repeat("ngram")),
    "skips": Opt(None, True, _repeat("skips")),
    "sort_features": Opt(None, False, _flag("sort_features")),
    "leave_duplicate_interactions": Opt(None, False, _flag("leave_duplicate_interactions")),
    "permutations": Opt(None, False, _flag("permutations")),
    "feature_limit": Opt(None, True, _repeat("feature_limit")),
    # outputs
    "initial_regressor": Opt("i", True, _initial_model),
    "final_regressor": Opt("f", True, _output("final_model")),
    "readable_model": Opt(None, True, _output("readable_model")),
    "extra_metrics": Opt(None, True, _output("extra_metrics")),
    "invert_hash": Opt(None, True, _output("invert_hash")),
    "save_per_pass": Opt(None, False, _save_per_pass),
    "predictions": Opt("p", True, _predictions),
    "raw_predictions": Opt("r", True, _raw),
    "save_resume": Opt(None, False, _noop),
    "predict_only_model": Opt(None, False, lambda t, n, v: t.outputs.__setitem__(
        "model_format", "vw_predict_only")),  # -f: VW's weights only
    "preserve_performance_counters": Opt(None, False,
                                         _flag("preserve_performance_counters")),
    "sparse_weights": Opt(None, False, _noop),
    # diagnostics
    "quiet": Opt(None, False, _set("quiet")),
    "driver_output_off": Opt(None, False, _set("quiet")),
    "limit_output": Opt(None, True, _noop),
    "id": Opt(None, True, _learn("model_id")),
    "report": Opt(None, True, _report),  # sl's own: the JSON report of sl train --report
    "ope": Opt(None, False, _ml("ope")),  # sl's own: off-policy estimates on stderr (cb)
    "progress": Opt("P", True, _progress),
    "audit": Opt("a", False, lambda t, n, v: t.outputs.__setitem__("audit", True)),
    "help": Opt("h", False, _set("help")),
    "version": Opt(None, False, _set("version")),
    # daemon (the server: streamlearn.cli.vw.daemon)
    "daemon": Opt(None, False, _daemon()),
    "port": Opt(None, True, _daemon(_int)),
    "foreground": Opt(None, False, _daemon()),
    "num_children": Opt(None, True, _daemon(_int)),
    "pid_file": Opt(None, True, _daemon()),
    "port_file": Opt(None, True, _daemon()),
    "save_every": Opt(None, True, _daemon()),  # sl's own: sl serve --save-every
}  # fmt: skip
"""VW's options ``sl vw`` takes, by VW's long name."""

NOT_SUPPORTED: dict[str, str] = {
    "conjugate_gradient": "--algo cd in sl train",
    "lda": "none",
    "nn": "none (sl learns linear models)",
    "ksvm": "none (sl learns linear models)",
    "boosting": "none",
    "ect": "none",
    "log_multi": "none",
    "active": "none",
    "search": "none",
    "rank": "none",
    "new_mf": "none",
    "stage_poly": "none",
    "marginal": "none",
    "confidence": "none",
    "redefine": "none",
    "affix": "--ngram",
    "spelling": "none",
    "dictionary": "none",
    "dictionary_path": "none",
    "experimental_full_name_interactions": "--interactions (first characters of the names)",
    "adax": "--adaptive",
    "sparse_l2": "--l2",
    "l1_state": "none",
    "l2_state": "none",
    "feature_mask": "none",
    "no_bias_regularization": "none",
    "initial_pass_length": "--examples N (the first N examples of each pass)",
    "input_feature_regularizer": "none",
    "output_feature_regularizer_binary": "none",
    "output_feature_regularizer_text": "none",
    "hexfloat_weights": "--readable_model",
    "dump_json_weights_experimental": "--readable_model",
    "flatbuffer": "none (sl reads VW text and svmlight)",
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
    "log_output": "--quiet",
    "ring_size": "none",
    "lrq": "-q on the same pair of namespaces (full crosses, not a low-rank factorisation)",
    "lrqfa": "-q on the same namespaces (full crosses, not a low-rank factorisation)",
    "lrqdropout": "none",
    "interact": "-q (crosses whose values are products, as --interact's)",
    "oaa_subsample": "none (--oaa learns every class from every example)",
}
"""VW's options sl does not take, with the nearest thing sl has."""

OTHER_VW_OPTIONS = frozenset("""
    OjaNewton action_cache_slack active_cover alg alpha alpha_inverse
    audit_regressor automl automl_significance_level bandwidth baseline
    baseline_challenger_cb batch_sz batch_sz_no_doubling bern_hyper beta_scale
    block_size bonferroni_denominator cats cats_pdf cats_tree cb_c_alpha
    cb_c_tau cb_discrete cb_dro cb_dro_alpha cb_dro_tau cb_dro_wmax cb_explore_pdf
    cb_sample cb_to_cbadf cbify_reg cbzo challenger_epsilon
    check_enabled choices_lambda compete confidence_after_training
    constant_epsilon corrupt_prob_warm_start corrupt_type_warm_start cost_max cost_min
    cs_absolute_loss cs_active csa_debug
    csv_trace debug_reversed_learn decay
    default_lease degree direct domination dont_output_best_constant dream_at_update
    dream_repeats dropout dump_json_weights_include_extra_online_state_experimental
    dump_json_weights_include_feature_names_experimental emt emt_initial emt_leaf
    emt_router emt_scorer emt_tree epoch_size epsilon_decay epsilon_decay_audit
    epsilon_decay_significance_level error exclude_eval experimental_igl
    fixed_significance_level flip_loss_sign
    gamma get_pmf global_only graph_feedback
     ignore_features_dsjson_experimental initial_denominator
    initial_epsilon initial_numerator inpass interaction interaction_type
    interaction_update kary_tree kernel lambda_scheme large_action_space
    las_hint_explicit_simd lda_D lda_alpha lda_epsilon lda_rho ldf_override
    leaf_example_multiplier learn learn_at_leaf learning_rate_cnt
    loss_01_ratio loss_option loss_report lr_multiplier math max_actions max_candidates
    max_depth max_labels max_number_of_labels max_value meanfield
    memory_tree metrics min_champ_examples min_labels min_scope min_value minibatch
    model_count multitask multiworld_test no_progress node_only normalize oas online
    opt_func oracle_type oracular ot overwrite_label
    para_active per_model_save_load plt plt_force_load_legacy_model pmf_to_pdf policy
    pool_greedy pool_size print priority_challengers priority_type random_init
    randomized_routing range_c recall_tree replay_b
    replay_b_count replay_c replay_c_count replay_m replay_m_count reprocess
    reward_as_cost sample_pdf sched_exponent scores
    search_active_verify search_allowed_transitions search_alpha search_beta
    search_history_length search_interpolation search_linear_ordering search_metatask
    search_neighbor_features search_no_caching search_passes_per_policy
    search_perturb_oracle search_rollin search_rollout search_rollout_num_steps
    search_save_every_k_runs search_subsample_time search_task search_total_nb_policies
    search_trained_nb_policies search_xv sendto shift_model_bounds sim_bandit simulation
    sketch_size spanner_c stage_size subsample svrg swap_resistance
    thread_pool_size threshold tol_x top top_K top_k tree_bandwidth two_pass_svd
    unweighted_marginals update_before_learn verbose_metrics wap_ldf warm_cb warm_cb_cs
    warm_start warm_start_update
""".split())
"""The rest of VW's options (``vw --help`` of VW 9.11): reductions and their settings,
refused as :data:`NOT_SUPPORTED` is, with no nearer thing in sl.  An option in neither
table is not VW's."""

SHORT = {o.short: name for name, o in OPTIONS.items() if o.short}

REPEATABLE = frozenset({"data", "quadratic", "cubic", "interactions", "ignore", "ignore_linear",
                        "keep", "ngram", "skips", "cache_file", "classweight",
                        "feature_limit"})  # fmt: skip
"""VW's options that may be given several times, each adding a value."""
