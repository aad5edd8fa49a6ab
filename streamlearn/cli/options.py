"""What the commands share: option types, shared option groups, and the translation
of click's values into the library's objects (learning options, ``Inputs``,
``Outputs``, ``Console``).

Nothing here runs a command; :mod:`streamlearn.cli.commands` holds the commands.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys

import click

from streamlearn.cli.structured import NAMES as STRUCTURED
from streamlearn.run.bandit_options import BANDIT_OPTIONS

# option name -> TrainConfig field
_CONFIG_KEYS = {
    "bits": "bits",
    "algo": "algo",
    "loss": "loss",
    "learning_rate": "learning_rate",
    "power_t": "power_t",
    "initial_t": "initial_t",
    "l1": "l1",
    "l2": "l2",
    "theta": "theta",
    "period": "period",
    "top_k": "top_k",
    "minibatch": "minibatch",
    "p_norm": "p",
    "norm_refresh": "norm_refresh",
    "passes": "passes",
    "tol": "tol",
    "seed": "seed",
    "holdout_period": "holdout_period",
    "early_terminate": "early_terminate",
    "input_format": "format",
    "quadratic": "quadratic",
    "cubic": "cubic",
    "interactions": "interactions",
    "ignore": "ignore",
    "ignore_linear": "ignore_linear",
    "keep": "keep",
    "ftrl_alpha": "ftrl_alpha",
    "ftrl_beta": "ftrl_beta",
    "min_prediction": "min_prediction",
    "max_prediction": "max_prediction",
    # VW's options (vw_learning_options)
    "quantile_tau": "quantile_tau",
    "zero_label": "zero_label",
    "numbers": "numbers",
    "binary": "binary",
    "initial_weight": "initial_weight",
    "initial_constant": "initial_constant",
    "decay_learning_rate": "decay_learning_rate",
    "test_only": "test_only",
    "holdout_after": "holdout_after",
    "hash_kind": "hash",
    "ngram": "ngram",
    "skips": "skips",
    "affix": "affix",
    "redefine": "redefine",
    "spelling": "spelling",
    "sort_features": "sort_features",
    "leave_duplicate_interactions": "leave_duplicate_interactions",
    # VW's parameter-free learners and one-against-all (cli/commands.py: vw_learner_options)
    "fepsilon": "freegrad_epsilon",
    "flipschitz_const": "freegrad_lipschitz",
    "restart": "freegrad_restart",
    "project": "freegrad_project",
    "radius": "freegrad_radius",
    "oaa": "oaa",
    "indexing": "indexing",
}


HELP_GROUPS: dict[str, tuple[str, ...]] = {
    "Inputs": ("data", "input_format", "initial_model", "model_path", "strict", "allow_empty",
               "max_line_bytes", "max_crosses", "examples", "cache_path", "max_memory",
               "zero_label", "numbers"),
    "Learning": ("algo", "sgd", "ftrl", "coin", "pistol", "freegrad", "loss", "quantile_tau",
                 "oaa", "indexing", "bits", "learning_rate", "power_t",
                 "initial_t", "decay_learning_rate",
                 "adaptive", "normalized", "invariant", "ftrl_alpha", "ftrl_beta", "fepsilon",
                 "flipschitz_const", "restart", "project", "radius", "initial_weight",
                 "initial_constant", "p_norm", "norm_refresh", "minibatch", "passes",
                 "holdout_period", "holdout_off", "holdout_after", "early_terminate", "tol",
                 "seed", "test_only", "min_prediction", "max_prediction", "noconstant",
                 "hash_kind", "ngram", "skips", "affix", "sort_features", "quadratic", "cubic",
                 "interactions", "leave_duplicate_interactions", "ignore", "ignore_linear",
                 "keep", "redefine", "spelling"),
    "Reductions over gd": (),  # (each reduction's own options: TrainCommand)
    "Regularization": ("l1", "l2", "theta", "period", "top_k"),
    "Contextual bandits": BANDIT_OPTIONS,
    "Topics and learning to search": STRUCTURED,
    "Outputs": ("final_model", "predictions", "raw_predictions", "link", "binary",
                "probabilities", "report", "readable_model", "invert_hash", "save_per_pass",
                "lock_timeout"),
    "Console": ("quiet", "progress", "help"),
    "Scale-out": ("dask", "sync_every"),
}  # fmt: skip
"""Headings of ``sl train -h`` and ``sl predict -h``, in order, and the options under each
in the order listed (click's parameter names).  A new option joins a group here; one in
none is listed last, under "Other options" (and ``tests/cli/test_cli.py`` says so)."""


class GroupedCommand(click.Command):
    """A command whose help lists its options under the headings of :data:`HELP_GROUPS`."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        place = {name: (title, i) for title, names in HELP_GROUPS.items()
                 for i, name in enumerate(names)}  # fmt: skip
        records: dict[str, list[tuple[int, tuple[str, str]]]] = {}
        help_option = self.get_help_option(ctx)
        for n, param in enumerate(self.get_params(ctx)):
            if isinstance(param, click.Argument):
                continue  # in the usage line (click >= 8.2 gives arguments a record too)
            record = param.get_help_record(ctx)
            if record is not None:
                name = "help" if param is help_option else param.name or ""  # click >= 8.5
                title, i = place.get(name, (getattr(param, "help_group", "Other options"),
                                            1000 + n))  # fmt: skip
                records.setdefault(title, []).append((i, record))
        for title in [*HELP_GROUPS, "Other options"]:
            if records.get(title):
                with formatter.section(title):
                    formatter.write_dl([r for _, r in sorted(records[title])])


class TrainCommand(GroupedCommand):
    """``sl train``: its options, and those the single-line reductions declare in their
    modules (:data:`streamlearn.reductions.TRAIN_OPTIONS`), added when the command line
    names an option the command does not have itself, or asks for help (loading the
    reductions costs ~35 ms, which a plain run does not pay)."""

    REDUCTIONS_HEADING = "Reductions over gd"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not getattr(self, "_reductions_added", False):
            # (the help options are not among the params: asking for help loads them too)
            known = {o for p in self.params for o in (*p.opts, *p.secondary_opts)}
            for a in args:
                if a == "--":
                    break
                if a.startswith("-") and a != "-" and a.split("=", 1)[0] not in known:
                    self._add_reductions()
                    break
        return super().parse_args(ctx, args)

    def _add_reductions(self) -> None:
        if not getattr(self, "_reductions_added", False):
            self._reductions_added = True
            self.params.extend(_click_option(o) for o in _train_options())


def _train_options() -> tuple:
    from streamlearn.reductions import TRAIN_OPTIONS

    return TRAIN_OPTIONS


def _click_option(o) -> click.Option:  # noqa: ANN001 - a reductions.trainoptions.TrainOption
    """The click option of a reduction's declared option."""
    kw: dict = {"help": o.help, "metavar": o.metavar, "multiple": o.multiple}
    if o.kind == "flag":
        kw = {"help": o.help, "is_flag": True}
    elif o.kind == "int":
        kw["type"] = click.IntRange(o.low, o.high) if (o.low, o.high) != (None, None) else int
    elif o.kind == "float":
        kw["type"] = float
    elif o.kind == "choice":
        kw["type"] = click.Choice(list(o.choices))
    if o.kind != "flag" and not o.multiple:
        kw["default"] = None
    opt = click.Option([*o.flags, o.dest], **kw)
    opt.help_group = TrainCommand.REDUCTIONS_HEADING  # (GroupedCommand's heading for it)
    return opt


class GridValues(click.ParamType):
    """A number, or a comma-separated list of them: a grid trained over one parse.

    Converts to a list of ``(typed, value)`` pairs (:func:`streamlearn.run.grid.parse_values`),
    so output paths can name each value as written.
    """

    def __init__(self, kind: type) -> None:
        self.kind = kind
        self.name = "INT[,INT...]" if kind is int else "FLOAT[,FLOAT...]"

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201 - click's signature
        if not isinstance(value, str):  # a default
            return value
        from streamlearn.errors import UsageError
        from streamlearn.run.grid import parse_values

        try:
            return parse_values(value, self.kind, param.opts[0] if param else "value")
        except UsageError as e:
            self.fail(e.message, param, ctx)


FLOATS = GridValues(float)
INTS = GridValues(int)

TINY_INPUT = 32 << 10
"""Inputs up to this many bytes may run the kernels as plain Python (see :func:`_tiny_mode`)."""
TINY_WORK = 8000
"""...and only when they ask at most this many feature visits (:func:`estimate_work`).

Interpreted, a feature visit (parse and learn one feature or cross, once)
costs ~25 µs; compiled kernels cost ~0.2 s more to start (numba's import and
loading them, from the shipped build or the cache): so 8,000 visits is where
the interpreter stops being the faster way (docs/benchmarks.md, "Cold start")."""


def estimate_work(data: bytes, orders: tuple[int, ...] = ()) -> int:
    """An upper bound on the feature visits of one pass over ``data``.

    Each line's tokens after its first ``|`` (all of them for svmlight)
    bound its features ``t``; a cross of ``k`` namespaces adds at most ``t**k``.
    """
    work = 0
    for line in data.splitlines():
        bar = line.find(b"|")
        t = len((line if bar < 0 else line[bar:]).split())
        work += t + sum(t**k for k in orders)
    return work


def crosses(kw: dict) -> tuple[int, ...]:
    """The orders of the crosses a command's options ask for (-q AB: 2, --cubic ABC: 3 ...)."""
    return tuple([2] * len(kw.get("quadratic") or ()) + [3] * len(kw.get("cubic") or ())
                 + [len(t) for t in kw.get("interactions") or ()])  # fmt: skip


def train_factor(kw: dict) -> int:
    """How many times ``sl train``'s options go over the data: passes (cd, scd: up to
    100 sweeps counted) times the configurations of a grid (:class:`GridValues` lists)."""
    passes = kw.get("passes") or (100 if kw.get("algo") in ("cd", "scd") else 1)
    configs = 1
    for value in kw.values():
        if isinstance(value, list):
            configs *= max(1, len(value))
    return max(1, passes) * configs


def _model_crosses(path: str | None) -> tuple[int, ...] | None:
    """The crosses recorded in model file ``path`` (its JSON header: read without numba).

    None when ``path`` is not a regular file: a model read from a pipe, a FIFO or
    ``<(zcat m.sl.gz)`` can be read once only, by the run; and for a VW model (its
    options are read by the run): the kernels are compiled ones then.
    """
    if not path:
        return ()
    import json
    import struct

    from streamlearn.system import sources

    if not sources.is_regular(path):
        return None
    try:
        with open(path, "rb") as f:
            magic, _, n = struct.unpack("<8sII", f.read(16))
            if magic[4:5].isdigit() and magic[5:6] in b".0123456789" and 6 <= magic[0] <= 16:
                return None  # a VW model (io/vwmodel.py's sniff): not read before numba
            if magic != b"SLMODEL\0" or n > 64 << 20:
                return ()
            return crosses(json.loads(f.read(n)).get("config", {}))
    except (OSError, ValueError, struct.error, AttributeError, TypeError, RecursionError):
        return ()  # the run reports an unusable model (a crafted header too)


def _tiny_mode(files: tuple[str, ...], orders: tuple[int, ...] = (), factor: int = 1) -> None:
    """Run tiny inputs without compiling or loading a single kernel.

    Loading numba and the kernels (shipped compiled, or cached) costs ~0.2 s
    more than interpreting them, which dominates a run over a few lines.  The
    kernels are valid plain Python, so when the whole input is known to be at
    most :data:`TINY_INPUT` bytes and to ask at most :data:`TINY_WORK`
    feature visits -- its features and the crosses of ``orders``
    (:func:`estimate_work`), times ``factor`` (passes, configurations of a
    grid) -- numba is imported with ``NUMBA_DISABLE_JIT=1``: same code, same
    results, less time.  A wide line crossed with itself (``-q ff`` on 3,000
    features: 9 million visits, a minute interpreted) is compiled.  Only what
    can be measured without losing a byte counts: regular files (a compressed
    one is never tiny), stdin by a peek that is replayed to the reader and
    that waits for no more than a moment (a live stream is not tiny).  A pipe,
    FIFO or ``<(...)`` given as a path is never opened here.
    ``SL_JIT=1`` in the environment turns this off.
    """
    if "streamlearn.system.jit" in sys.modules or os.environ.get("SL_JIT") == "1":
        return
    from streamlearn.system import sources
    data = []
    for f in files or ("-",):
        if sources.is_stdin(f):
            if sources.stdin_is_regular():  # sl train < file: measured, read nothing
                fd = sources.stdin_fd()
                try:
                    at = os.lseek(fd, 0, os.SEEK_CUR)
                    if os.fstat(fd).st_size - at > TINY_INPUT:
                        return
                    data.append(os.pread(fd, TINY_INPUT + 1, at))
                except (OSError, sources.SourceError):
                    return
            else:
                head, eof = sources.peek_stdin(TINY_INPUT)
                if not eof or len(head) > TINY_INPUT:
                    return
                data.append(head)
        elif sources.is_regular(f):
            try:
                if os.path.getsize(f) > TINY_INPUT:
                    return
                with open(f, "rb") as fh:
                    data.append(fh.read(TINY_INPUT + 1))
            except (OSError, sources.SourceError):
                return  # let the run report it
        else:
            return
        try:
            if sum(map(len, data)) > TINY_INPUT or sources.compression(data[-1][:16]):
                return  # compressed: its size says little
        except sources.SourceError:
            return  # let the run report it
    if sum(estimate_work(d, orders) for d in data) * factor <= TINY_WORK:
        os.environ["NUMBA_DISABLE_JIT"] = "1"


def learning_options(ctx: click.Context, values: dict) -> dict:
    """The learning options the user actually gave (not click's defaults)."""
    out = {}
    for name, key in _CONFIG_KEYS.items():
        src = ctx.get_parameter_source(name)
        if src is not None and src.name in ("COMMANDLINE", "ENVIRONMENT"):
            out[key] = values[name]
    if values.get("noconstant"):
        out["constant"] = False
    if getattr(ctx.command, "_reductions_added", False):  # (else none of theirs was given)
        out.update(_stack(values))
    if values.get("holdout_off"):
        if "holdout_period" in out or "holdout_after" in out:
            raise click.UsageError("--holdout-off conflicts with --holdout-period/--holdout-after")
        out["holdout_period"] = 0
    out.update(_update_rule(out.get("algo"), values))
    if out.get("stack"):  # what a reduction sets unless given (--rank: VW's plain updates)
        from streamlearn.reductions import train_defaults

        for key, value in train_defaults(out["stack"]).items():
            out.setdefault(key, value)
    return out


def _stack(values: dict) -> dict:
    """The single-line reductions' own words (``TrainConfig.stack``), as VW spells them: each
    reduction's module makes its own of its options' values."""
    from streamlearn.errors import UsageError
    from streamlearn.reductions import train_words

    try:
        words = train_words(values)
    except UsageError as e:
        raise click.UsageError(e.message) from None
    if words and values.get("invert_hash"):
        raise click.UsageError(f"{words[0]} with --invert-hash is not supported")
    return {"stack": words} if words else {}


def _update_rule(algo: str | None, values: dict) -> dict:
    """VW's spellings of the update rule: ``--sgd``, ``--ftrl``, ``--adaptive`` ...

    Naming any of ``--adaptive``, ``--normalized``, ``--invariant`` turns on
    only those named (``--algo gd``); ``--sgd`` turns off those not named, so
    ``--sgd`` alone is VW's ``--sgd``: gd with the three rules off, in single
    precision (``--algo sgd`` is the papers' double-precision SGD); ``--ftrl``
    is ``--algo ftrl``.
    """
    from streamlearn.config import UPDATE_RULE

    out: dict = {}
    named = [n for n in UPDATE_RULE if values.get(n)]
    wanted = []
    if named or values.get("sgd"):
        out.update({n: n in named for n in UPDATE_RULE})
    if named:
        wanted.append(("gd", "--" + " --".join(named)))
    if values.get("sgd"):
        wanted.append(("gd", "--sgd"))
    for learner in ("ftrl", "coin", "pistol", "freegrad"):
        if values.get(learner):
            wanted.append((learner, f"--{learner}"))
    for name, flag in wanted:
        chosen = out.get("algo", algo)
        if chosen is not None and chosen != name:
            raise click.UsageError(f"{flag} conflicts with --algo {chosen}")
        out["algo"] = name
    return out


def run_parts(files: tuple[str, ...], kw: dict, inputs: dict, outputs: dict,
                 tiny: bool = True, progress: str | None = None,
                 factor: int = 1):  # noqa: ANN202  # fmt: skip
    """The library's :class:`~streamlearn.api.Inputs`, :class:`~streamlearn.api.Outputs`
    and :class:`~streamlearn.api.Console` of a command with :func:`input_options`.

    Decides the tiny-input mode first (:func:`_tiny_mode`, with the crosses of
    the options and of the initial model, and ``factor`` the passes or
    configurations): it must run before numba is imported.
    """
    model_crosses = _model_crosses(inputs.get("initial_model")) if tiny else None
    if model_crosses is not None:  # (a model from a stream: its crosses are not known)
        _tiny_mode(files, crosses(kw) + model_crosses, factor)
    from streamlearn.api import Console, Inputs, Outputs

    try:
        console = Console(kw["quiet"], progress=progress)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--progress") from None
    if kw.get("max_line_bytes") is not None:
        inputs = dict(inputs, max_line_bytes=size(kw["max_line_bytes"], "--max-line-bytes"))
    if kw.get("max_crosses") is not None:
        inputs = dict(inputs, max_crosses=kw["max_crosses"])
    return (
        Inputs(sources=list(files), strict=kw["strict"], allow_empty=kw.get("allow_empty", False),
               examples=kw["examples"], **inputs),
        Outputs(predictions=kw["predictions"], report=kw["report"], link=kw["link"],
                raw_predictions=kw["raw_predictions"],
                probabilities=kw.get("probabilities", False), **outputs),
        console,
    )  # fmt: skip


SIZE_MAX = 1 << 60
"""The largest size an option takes (an exbibyte): beyond any memory or line."""


def size(text: str | None, option: str = "--max-memory") -> int | None:
    """``4G``, ``500M``, ``64k`` or a number of bytes; None stays None.

    At least one byte and at most :data:`SIZE_MAX`, else a usage error (exit 2):
    ``inf``, ``nan``, ``1e400``, ``0``, ``-1G`` and ``0.1`` are not sizes.

    >>> size("4G"), size("1.5k"), size("500MiB"), size(None)
    (4294967296, 1536, 524288000, None)
    """
    if text is None:
        return None
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in units and t[-1:] else ""
    try:
        value = float(t[: len(t) - len(unit)]) * units[unit]
    except ValueError:
        value = math.nan
    if not 1 <= value <= SIZE_MAX:  # also NaN
        raise click.BadParameter(
            f"{text!r} is not a size (e.g. 4G, 500M: from 1 byte to 2^60)", param_hint=option
        )
    return int(value)


def save_every(text: str | None) -> tuple[int | None, float | None]:
    """``--save-every``: ``10000`` (examples) or ``30s`` / ``5m`` (time); both: ``10000,30s``.

    >>> save_every("1000"), save_every("30s"), save_every("500,2m")
    ((1000, None), (None, 30.0), (500, 120.0))
    """
    if text is None:
        return None, None
    n, secs = None, None
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", part)
        if m is None or float(m.group(1)) <= 0:
            raise click.BadParameter(f"{text!r}: N examples or a time such as 30s, 5m, 1h",
                                     param_hint="--save-every")  # fmt: skip
        if m.group(2):
            secs = float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]
        else:
            if "." in m.group(1):
                raise click.BadParameter(f"{text!r}: a whole number of examples",
                                         param_hint="--save-every")  # fmt: skip
            n = int(m.group(1))
    return n, secs


def input_options(f):
    @click.argument("files", nargs=-1, type=click.Path(dir_okay=False, allow_dash=True))
    @click.option(
        "-d",
        "--data",
        multiple=True,
        type=click.Path(dir_okay=False, allow_dash=True),
        metavar="FILE",
        help="An input file, as VW's -d (repeatable; read before the FILE arguments).",
    )
    @click.option(
        "--quiet", is_flag=True, help="Print nothing but errors (-q is --quadratic, as in VW)."
    )
    @click.option(
        "--strict",
        is_flag=True,
        help="Fail on the first malformed line (default: skip it, count it, warn with file:line).",
    )
    @click.option(
        "--allow-empty",
        is_flag=True,
        help="Accept an input without a usable example (empty, a failed producer, every "
        "line malformed) and write the outputs anyway [default: exit 10, nothing written].",
    )
    @click.option(
        "--max-line-bytes",
        "--max_line_bytes",
        "max_line_bytes",
        metavar="SIZE",
        default=None,
        help="Skip (count, warn about with file:line) lines longer than SIZE, e.g. 1M "
        "[default: 64M]; memory does not grow with a line beyond it.",
    )
    @click.option(
        "--max-crosses",
        "max_crosses",
        type=click.IntRange(min=1, max=1 << 62),  # run.options.MAX_CROSSES_LIMIT (no import here)
        metavar="N",
        default=None,
        help="Skip (count, warn about with file:line) an example whose -q/--cubic/"
        "--interactions would make more than N crosses [default: 33554432]; memory stays "
        "bounded whatever a line asks for.",
    )
    @click.option(
        "--report",
        type=click.Path(dir_okay=False, allow_dash=True),
        metavar="PATH",
        help="Write a JSON report (summary, per-pass figures, curve, skipped lines, timings).",
    )
    @click.option(
        "-p",
        "--predictions",
        type=click.Path(dir_okay=False, allow_dash=True),
        metavar="PATH",
        help="Write one prediction per example ('-' = stdout).",
    )
    @click.option(
        "-r",
        "--raw-predictions",
        "--raw_predictions",
        "raw_predictions",
        type=click.Path(dir_okay=False, allow_dash=True),
        metavar="PATH",
        help="Also write the margins themselves, whatever --link and --binary (VW's -r).",
    )
    @click.option(
        "--link",
        type=click.Choice(["identity", "logistic", "glf1", "poisson"]),
        default="identity",
        show_default=True,
        help="Transform written predictions: 'logistic' gives probabilities; glf1 "
        "(2/(1+e^-p) - 1) and poisson (e^p) are VW's other links.",
    )
    @click.option(
        "--examples",
        type=click.IntRange(min=0),
        default=None,
        metavar="N",
        help="Read only the first N examples of each pass (VW's --examples).",
    )
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        kwargs["files"] = tuple(kwargs.pop("data")) + tuple(kwargs["files"])
        return f(*args, **kwargs)

    return wrapper


def format_option(help_text: str):
    """``--format``, shared by train and predict (the model records the format it read)."""
    return click.option(
        "--format",
        "input_format",
        type=click.Choice(["auto", "vw", "svmlight", "json", "dsjson"]),
        default="auto",
        show_default=True,
        help=help_text,
    )


def vw_learning_options(f):
    """VW's options of what to learn, on ``sl train`` (``sl vw`` takes VW's argv whole)."""
    opts = [
        click.option("-t", "--testonly", "test_only", is_flag=True,
                     help="Score without learning: the progressive loss of the unchanged "
                     "model (VW's -t)."),
        click.option("--holdout-off", "--holdout_off", "holdout_off", is_flag=True,
                     help="No holdout with several passes (VW's --holdout_off)."),
        click.option("--holdout-after", "--holdout_after", "holdout_after",
                     type=click.IntRange(min=1), default=None, metavar="N",
                     help="Hold out the examples after the first N of each pass, on the "
                     "first pass too (VW's --holdout_after)."),
        click.option("--quantile-tau", "--quantile_tau", "quantile_tau", type=float,
                     default=None, help="--loss quantile: its level tau [default: 0.5]."),
        click.option("--zero-label", "zero_label", type=click.Choice(["negative", "vw"]),
                     default=None, help="Logistic and hinge losses: read a label 0 as -1 "
                     "(negative, the default) or as VW does (vw: logistic's probability 1/2, "
                     "hinge's constant loss)."),
        click.option("--numbers", "numbers", type=click.Choice(["exact", "vw"]), default=None,
                     help="Read decimals correctly rounded (exact, the default) or as VW 9 "
                     "reads them (vw: float32, often a float off; sl vw's reading). A model "
                     "keeps its reading."),
        click.option("--binary", is_flag=True, default=None,
                     help="Report the 0/1 loss of sign(p) and write -1/+1 (VW's --binary)."),
        click.option("--initial-weight", "--initial_weight", "initial_weight", type=float,
                     default=None, help="gd: every weight starts here (VW's --initial_weight)."),
        click.option("-C", "--constant", "initial_constant", type=float, default=None,
                     help="gd: the constant's weight starts here (VW's -C)."),
        click.option("--decay-learning-rate", "--decay_learning_rate", "decay_learning_rate",
                     type=float, default=None,
                     help="Multiply the learning rate by this after each pass [default: 1]."),
        click.option("--hash", "hash_kind", type=click.Choice(["strings", "all"]),
                     default=None, help="strings: an all-digit name is its number (VW's "
                     "default); all: every name is hashed."),
        click.option("--ngram", multiple=True, metavar="[A]N",
                     help="Add each namespace's (or namespace A's) 2- to N-grams (VW's "
                     "--ngram). Repeatable."),
        click.option("--skips", multiple=True, metavar="[A]K",
                     help="With --ngram: terms may skip up to K features (VW's --skips)."),
        click.option("--affix", default=None, metavar="[+-]N[A],...",
                     help="Each feature's N-byte prefixes (+) or suffixes (-) as features of "
                     "their own, of namespace A or the default one: +2a,-3 (VW's --affix; "
                     "VW text)."),
        click.option("--spelling", multiple=True, metavar="A",
                     help="Each feature of namespace A (_: the default one) also gives a "
                     "feature of its name's shape: digits 0, letters a or A, '.', others '#' "
                     "(VW's --spelling; VW text). Repeatable."),
        click.option("--redefine", multiple=True, metavar="N:=S",
                     help="Namespaces whose names start with a character of S become "
                     "namespace N for crosses, filters and n-grams (':' in S: every one; "
                     "later ones win; VW's --redefine; VW text). Repeatable."),
        click.option("--sort-features", "--sort_features", "sort_features", is_flag=True,
                     default=None, help="Sort each namespace's features by slot and drop "
                     "repeated ones (VW's --sort_features)."),
        click.option("--leave-duplicate-interactions", "--leave_duplicate_interactions",
                     "leave_duplicate_interactions", is_flag=True, default=None,
                     help="Keep interactions equal up to order (-q ab -q ba)."),
        click.option("-P", "--progress", metavar="N|F", default=None,
                     help="A table line every N examples (integer), or each time their "
                     "count grows F times (with a '.'), as VW's -P [default: 1, 2, 4, ...]."),
    ]  # fmt: skip
    for opt in reversed(opts):
        f = opt(f)
    return f
