"""What the commands share: option types, shared option groups, and the translation
of click's values into the library's objects (learning options, ``Inputs``,
``Outputs``, ``Console``).

Nothing here runs a command; :mod:`streamlearn.cli.commands` holds the commands.
"""

from __future__ import annotations

import functools
import os
import sys

import click

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
}


HELP_GROUPS: dict[str, tuple[str, ...]] = {
    "Inputs": ("data", "input_format", "initial_model", "model_path", "strict", "cache_path",
               "max_memory"),
    "Learning": ("algo", "sgd", "ftrl", "loss", "bits", "learning_rate", "power_t", "initial_t",
                 "adaptive", "normalized", "invariant", "ftrl_alpha", "ftrl_beta", "p_norm",
                 "norm_refresh", "minibatch", "passes", "holdout_period", "early_terminate",
                 "tol", "seed", "min_prediction", "max_prediction", "noconstant", "quadratic",
                 "cubic", "interactions", "ignore", "ignore_linear", "keep"),
    "Regularization": ("l1", "l2", "theta", "period", "top_k"),
    "Outputs": ("final_model", "predictions", "link", "report", "readable_model", "invert_hash",
                "lock_timeout"),
    "Console": ("quiet", "help"),
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
        for n, param in enumerate(self.get_params(ctx)):
            record = param.get_help_record(ctx)
            if record is not None:
                title, i = place.get(param.name or "", ("Other options", 1000 + n))
                records.setdefault(title, []).append((i, record))
        for title in [*HELP_GROUPS, "Other options"]:
            if records.get(title):
                with formatter.section(title):
                    formatter.write_dl([r for _, r in sorted(records[title])])


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


def _model_crosses(path: str | None) -> tuple[int, ...]:
    """The crosses recorded in model file ``path`` (its JSON header: read without numba)."""
    if not path:
        return ()
    import json
    import struct

    try:
        with open(path, "rb") as f:
            magic, _, n = struct.unpack("<8sII", f.read(16))
            if magic != b"SLMODEL\0" or n > 64 << 20:
                return ()
            config = json.loads(f.read(n)).get("config", {})
    except (OSError, ValueError, struct.error, AttributeError):
        return ()  # the run reports an unusable model
    return crosses(config)


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
    if "numba" in sys.modules or os.environ.get("SL_JIT") == "1":
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
    out.update(_update_rule(out.get("algo"), values))
    return out


def _update_rule(algo: str | None, values: dict) -> dict:
    """VW's spellings of the update rule: ``--sgd``, ``--ftrl``, ``--adaptive`` ...

    Naming any of ``--adaptive``, ``--normalized``, ``--invariant`` turns on
    only those named (``--algo gd``); ``--sgd`` alone is ``--algo sgd`` (with
    one of them, as in VW, it only turns the others off); ``--ftrl`` is
    ``--algo ftrl``.
    """
    from streamlearn.config import UPDATE_RULE

    out: dict = {}
    named = [n for n in UPDATE_RULE if values.get(n)]
    wanted = []
    if named:
        out.update({n: n in named for n in UPDATE_RULE})
        wanted.append(("gd", "--" + " --".join(named)))
    if values.get("sgd"):
        wanted.append(("gd" if named else "sgd", "--sgd"))
    if values.get("ftrl"):
        wanted.append(("ftrl", "--ftrl"))
    for name, flag in wanted:
        chosen = out.get("algo", algo)
        if chosen is not None and chosen != name:
            raise click.UsageError(f"{flag} conflicts with --algo {chosen}")
        out["algo"] = name
    return out


def run_parts(files: tuple[str, ...], kw: dict, inputs: dict, outputs: dict,
                 tiny: bool = True, factor: int = 1):  # noqa: ANN202  # fmt: skip
    """The library's :class:`~streamlearn.api.Inputs`, :class:`~streamlearn.api.Outputs`
    and :class:`~streamlearn.api.Console` of a command with :func:`input_options`.

    Decides the tiny-input mode first (:func:`_tiny_mode`, with the crosses of
    the options and of the initial model, and ``factor`` the passes or
    configurations): it must run before numba is imported.
    """
    if tiny:
        _tiny_mode(files, crosses(kw) + _model_crosses(inputs.get("initial_model")), factor)
    from streamlearn.api import Console, Inputs, Outputs

    return (
        Inputs(sources=list(files), strict=kw["strict"], **inputs),
        Outputs(predictions=kw["predictions"], report=kw["report"], link=kw["link"], **outputs),
        Console(kw["quiet"]),
    )


def size(text: str | None) -> int | None:
    """``4G``, ``500M``, ``64k`` or a number of bytes; None stays None."""
    if text is None:
        return None
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in units and t[-1:] else ""
    try:
        value = float(t[: len(t) - len(unit)])
    except ValueError:
        value = -1.0
    if not value > 0:
        raise click.BadParameter(
            f"{text!r} is not a size (e.g. 4G, 500M)", param_hint="--max-memory"
        )
    return int(value * units[unit])


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
        "--link",
        type=click.Choice(["identity", "logistic"]),
        default="identity",
        show_default=True,
        help="Transform written predictions: 'logistic' gives probabilities.",
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
        type=click.Choice(["auto", "vw", "svmlight"]),
        default="auto",
        show_default=True,
        help=help_text,
    )
