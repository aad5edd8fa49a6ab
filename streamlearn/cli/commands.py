"""``sl``: the command line.  Thin: parse options, call the library, map errors.

Every command has a one-line summary and an example; ``-`` (or no file) means
stdin; predictions go to stdout only when asked (``-p -``), everything else to
stderr.
"""

from __future__ import annotations

import math
import os
import sys

import click

from streamlearn._version import __version__
from streamlearn.cli.bandit import bandit_of, bandit_options
from streamlearn.cli.options import (
    FLOATS,
    INTS,
    GroupedCommand,
    TrainCommand,
    format_option,
    input_options,
    learning_options,
    run_parts,
    size,
    train_factor,
    vw_learning_options,
)
from streamlearn.cli.structured import NAMES as STRUCTURED
from streamlearn.cli.structured import multiline_of as structured_of
from streamlearn.cli.structured import structured_options
from streamlearn.errors import EXIT_CODES

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

EXIT_TEXT = "Exit status:\n\n\b\n" + "\n".join(
    f"  {code:>3}  {text}" for code, text in EXIT_CODES.items()
)


@click.group(context_settings=CONTEXT, epilog=EXIT_TEXT)
@click.version_option(__version__, prog_name="sl")
def cli() -> None:
    """sl: streaming learner for sparse linear models, in the manner of Vowpal Wabbit.

    Reads VW-format or svmlight lines from files (plain or compressed) or stdin,
    hashes features into 2^b weights as VW does and learns online, by default
    with VW's own update (gd: adaptive, normalized, importance-invariant), or
    with FTRL-proximal, truncated gradient, FoBoS, SMIDAS, L0-constrained SGD,
    or coordinate descent (--algo); prints progressive validation loss as it
    goes.  'sl COMMAND -h' for each command's options; shell completion:
    eval "$(_SL_COMPLETE=bash_source sl)" (zsh_source, fish_source).

    \b
    Example:
      cat data/sample.vw | sl train --loss logistic -f model.sl
      sl predict -i model.sl data/sample.vw -p preds.txt
    """


# ---------------------------------------------------------------------------
# VW's parameter-free learners and one-against-all multiclass (issue #26)

PROBABILITIES = click.option(
    "--probabilities", is_flag=True,
    help="--oaa with --loss logistic: write each class's probability (1:0.2 2:0.5 ...) "
    "instead of the class, and report the multiclass log loss (as VW).",
)  # fmt: skip


def vw_learner_options(f):
    """``--coin``, ``--pistol``, ``--freegrad`` (and freegrad's options), ``--oaa K`` and
    ``--probabilities``: VW's spellings, for ``sl train`` (the single-line reductions' own
    options, ``--lrq`` ..., come from their modules: :class:`~streamlearn.cli.options.
    TrainCommand`)."""
    options = [
        click.option("--coin", is_flag=True,
                     help="VW's spelling of --algo coin: coin betting, no learning rate "
                     "(alpha: --ftrl-alpha [4], beta: --ftrl-beta [1])."),
        click.option("--pistol", is_flag=True,
                     help="VW's spelling of --algo pistol: PiSTOL, no learning rate "
                     "(--ftrl-alpha [1], --ftrl-beta [0.5])."),
        click.option("--freegrad", is_flag=True,
                     help="VW's spelling of --algo freegrad: FreeGrad, no learning rate."),
        click.option("--fepsilon", type=float, default=None,
                     help="freegrad: the initial wealth epsilon [default: 1]."),
        click.option("--flipschitz-const", "--flipschitz_const", "flipschitz_const",
                     type=float, default=None,
                     help="freegrad: a known bound on the gradients [default: none]."),
        click.option("--restart", is_flag=True, help="freegrad: FreeRange restarts."),
        click.option("--project", is_flag=True,
                     help="freegrad: project the weights onto a ball (of --radius)."),
        click.option("--radius", type=float, default=None,
                     help="freegrad --project: the ball's radius [default: adaptive]."),
        click.option("--oaa", type=click.IntRange(min=1), default=None, metavar="K",
                     help="One-against-all multiclass over K classes, labels 1..K or "
                     "0..K-1 (--algo gd or ftrl); predictions are classes."),
        click.option("--indexing", type=click.IntRange(0, 1), default=None,
                     help="--oaa: the labels are 0..K-1 (0) or 1..K (1) [default: as VW, "
                     "1..K until a label 0 or K decides]."),
        PROBABILITIES,
    ]  # fmt: skip
    for option in reversed(options):
        f = option(f)
    return f


@cli.command(cls=TrainCommand, context_settings=CONTEXT, epilog=EXIT_TEXT)
@input_options
@click.option(
    "-f",
    "--final-model",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="Save the model here (written atomically).",
)
@click.option(
    "-i",
    "--initial-model",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="Continue training from this model (its options are the defaults).",
)
@format_option(
    "Input format (auto: detected; when continuing, the model's, and other input is "
    "refused unless named here)."
)
@click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0.0),
    default=3600.0,
    show_default=True,
    metavar="SECONDS",
    help="When -i and -f name the same model, runs take turns (a lock file MODEL.lock "
    "beside it): wait at most this long for another run, then exit 9 ('inf': no limit).",
)
@click.option(
    "-b", "--bits", type=int, default=18, show_default=True, help="Table size 2^b (1 to 30)."
)
@click.option(
    "--algo",
    type=click.Choice(["gd", "sgd", "tg", "fobos", "smidas", "ftrl", "l0", "subgrad", "cd", "scd",
                       "coin", "pistol", "freegrad"]),  # fmt: skip
    default="gd",
    show_default=True,
    help="Learning algorithm (see README's algorithm table); gd is VW's default update.",
)
@click.option(
    "--sgd",
    is_flag=True,
    help="VW's --sgd: gd with --adaptive, --normalized and --invariant off, in single "
    "precision (--algo sgd is the papers' double-precision SGD).",
)
@click.option("--ftrl", is_flag=True, help="VW's spelling of --algo ftrl (FTRL-proximal).")
@click.option(
    "--adaptive",
    is_flag=True,
    help="gd: per-feature adaptive rates. Naming any of --adaptive, --normalized, "
    "--invariant turns on only those named (default: all three, as VW).",
)
@click.option("--normalized", is_flag=True, help="gd: per-feature normalized updates.")
@click.option("--invariant", is_flag=True, help="gd: importance-invariant (safe) updates.")
@click.option(
    "--ftrl-alpha", "--ftrl_alpha", type=FLOATS, default=None,
    help="ftrl, coin, pistol: alpha [default: 0.5, 4, 1 as VW].",
)  # fmt: skip
@click.option(
    "--ftrl-beta", "--ftrl_beta", type=FLOATS, default=None,
    help="ftrl, coin, pistol: beta [default: 1, 1, 0.5 as VW].",
)  # fmt: skip
@click.option(
    "--min-prediction",
    "--min_prediction",
    type=float,
    default=None,
    help="Clip predictions below this (default: the smallest label seen and 0; "
    "-50 for logistic). Either bound fixes the range; the other is then 0, as VW.",
)
@click.option(
    "--max-prediction",
    "--max_prediction",
    type=float,
    default=None,
    help="Clip predictions above this (default: the largest label seen and 0; 50 for logistic).",
)
@click.option(
    "--loss",
    "--loss_function",
    type=click.Choice(["squared", "logistic", "hinge", "classic", "quantile", "poisson"]),
    default="squared",
    show_default=True,
    help="Loss function (logistic/hinge want labels -1/+1; classic: squared without the "
    "importance-invariant update; quantile: --quantile-tau; poisson: log-rate).",
)
@click.option(
    "-l",
    "--learning-rate",
    "--learning_rate",
    type=FLOATS,
    default=None,
    help="eta0 in eta_t = eta0 * (t0 / (t0 + T))^power_t [default, as VW: 0.5 for gd, 10 "
    "for sgd and for gd with only some of --adaptive/--normalized; 0.5 for tg/fobos/smidas].",
)
@click.option(
    "--power-t",
    "--power_t",
    type=FLOATS,
    default=0.5,
    show_default=True,
    help="Decay exponent of the learning rate (0 = constant).",
)
@click.option(
    "--initial-t",
    "--initial_t",
    type=float,
    default=None,
    help="t0 [default: 1; 0 for gd with adaptive or normalized rates, as VW].",
)
@click.option(
    "--l1",
    type=FLOATS,
    default=0.0,
    show_default=True,
    help="L1 strength (for tg: the gravity g; for smidas: lambda).",
)
@click.option(
    "--l2", type=FLOATS, default=0.0, show_default=True,
    help="L2^2 strength (gd, sgd, fobos, ftrl).",
)  # fmt: skip
@click.option(
    "--theta",
    type=FLOATS,
    default=math.inf,
    show_default="inf",
    help="tg: only weights with |w| <= theta are truncated.",
)
@click.option(
    "--period", type=INTS, default=1, show_default=True, help="tg: truncate every K-th example (K)."
)
@click.option(
    "--top-k", "--top_k", "top_k", type=INTS, default=None, metavar="K",
    help="l0: keep the K largest |w| after each step (required with --algo l0).",
)  # fmt: skip
@click.option(
    "--minibatch", type=int, default=1, show_default=True, metavar="B",
    help="sgd, tg, fobos, subgrad: average the gradient of B learned examples per step.",
)  # fmt: skip
@click.option(
    "--p",
    "p_norm",
    type=float,
    default=None,
    help="smidas: the p of the p-norm (default 2 ln 2^b).",
)
@click.option(
    "--norm-refresh",
    type=int,
    default=None,
    help="smidas: recompute ||theta||_p exactly every N examples.",
)
@click.option("--noconstant", is_flag=True, help="Do not add the constant (bias) feature.")
@click.option(
    "-q",
    "--quadratic",
    multiple=True,
    metavar="AB",
    help="Cross every feature of namespace A with every one of B (first characters of the "
    "names; '::' = every pair). Repeatable.",
)
@click.option(
    "--cubic", multiple=True, metavar="ABC", help="Three-way crosses, as -q. Repeatable."
)
@click.option(
    "--interactions",
    multiple=True,
    metavar="AB..",
    help="Crosses of 2 to 16 namespaces, e.g. --interactions abcd. Repeatable.",
)
@click.option("--ignore", multiple=True, metavar="A", help="Drop namespace A's features.")
@click.option(
    "--ignore-linear",
    "--ignore_linear",
    "ignore_linear",
    multiple=True,
    metavar="A",
    help="Drop namespace A's own features but keep them in crosses.",
)
@click.option(
    "--keep", multiple=True, metavar="A", help="Keep only the namespaces named (repeatable)."
)
@click.option(
    "--passes",
    type=int,
    default=None,
    help="Passes over the data (stdin is cached after the first) [default: 1; the most "
    "sweeps, full or over the active set: cd 100000 (a safety net: --tol stops it), "
    "scd 1000].",
)
@click.option(
    "--tol", type=float, default=1e-7, show_default=True,
    help="When cd and scd stop. cd, squared loss: the duality gap is at most this times the "
    "objective (F - F* <= tol F); cd, logistic: the l1 norm of the minimum-norm subgradient "
    "is at most this times its value at w = 0 (liblinear's eps); cd with hinge, and scd: "
    "a full sweep lowers the objective by at most this (relative).",
)  # fmt: skip
@click.option(
    "--seed", type=int, default=0, show_default=True,
    help="scd: random seed; cd with logistic loss: the order of its inner cycles.",
)  # fmt: skip
@click.option(
    "--max-memory", "--max_memory", "max_memory", type=str, default=None, metavar="SIZE",
    help="cd, scd: refuse an input needing more memory than SIZE (e.g. 4G, 500M); a grid: "
    "refuse tables needing more [default: the memory available].",
)  # fmt: skip
@click.option(
    "--cache",
    "cache_path",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="Parsed-batch cache for later passes (reused while the inputs are unchanged).",
)
@click.option(
    "--holdout-period",
    "--holdout_period",
    type=int,
    default=None,
    help="Hold out every n-th example of each pass (default 10 when passes > 1).",
)
@click.option(
    "--early-terminate",
    "--early_terminate",
    type=int,
    default=3,
    show_default=True,
    help="Stop after this many passes without holdout improvement (the best pass's "
    "model is saved).",
)
@click.option(
    "--readable-model",
    "--readable_model",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="Also write 'slot weight' lines for the non-zero weights.",
)
@click.option(
    "--invert-hash",
    "--invert_hash",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="Like --readable-model, with the feature names seen for each slot.",
)
@click.option(
    "--save-per-pass",
    "--save_per_pass",
    is_flag=True,
    help="Also save the model after each pass N as MODEL.N (-f MODEL), as VW does.",
)
@click.option(
    "--dask", metavar="ADDRESS", default=None,
    help="Train on a Dask cluster: local[:N] (N worker processes here), a scheduler file, "
    "or tcp://host:8786 (needs pip install 'streamlearn[dask]'; see docs/distributed.md).",
)  # fmt: skip
@click.option(
    "--sync-every", "--sync_every", "sync_every", type=int, default=None, metavar="N",
    help="--dask: also average the workers every N examples of each within a pass.",
)  # fmt: skip
@vw_learning_options
@vw_learner_options
@bandit_options
@structured_options
@click.pass_context
def train(ctx: click.Context, files, **kw) -> None:
    """Train a model on FILEs or stdin ('-' or no FILE).

    A grid over one parse: the numeric learner options (--l1, --l2, -l,
    --power-t, --top-k, --theta, --period, --ftrl-alpha, --ftrl-beta) take
    comma-separated lists, and every configuration of their product learns
    from the same parsed data, with its own model, predictions and report
    entry; output paths name the values with placeholders such as {l1}.

    \b
    Examples:
      cat data.vw | sl train --loss logistic -f model.sl
      sl train -i yesterday.sl today.vw.gz -f today.sl
      sl train --algo tg --l1 1e-6 --passes 3 data.vw -f model.sl
      sl train --algo tg --l1 0,1e-5,1e-4 data.vw -f 'tg-{l1}.sl' --report sweep.json
      sl train --dask local:2 a.vw b.vw c.vw d.vw --passes 3 -f model.sl
      sl train --cb-adf --explore epsilon --epsilon 0.1 logged.vw -f policy.sl
    """
    bandit = bandit_of(kw)
    structured = {k: v for k in STRUCTURED if (v := kw.pop(k, None)) is not None}
    inputs, outputs, console = run_parts(
        files,
        kw,
        tiny=kw["dask"] is None,  # Dask's workers inherit the environment
        progress=kw["progress"],
        factor=train_factor(kw),
        inputs=dict(
            initial_model=kw["initial_model"],
            cache=kw["cache_path"],
            max_memory=size(kw["max_memory"]),
        ),
        outputs=dict(
            final_model=kw["final_model"],
            readable_model=kw["readable_model"],
            invert_hash=kw["invert_hash"],
            lock_timeout=kw["lock_timeout"],
            save_per_pass=kw["save_per_pass"],
        ),
    )
    from streamlearn import api

    if structured:  # (--lda, --search: their reductions' runs)
        if bandit or kw["dask"] is not None:
            raise click.UsageError("--lda and --search: not with the bandit options or --dask")
        options = learning_options(ctx, kw)
        multiline, notes = structured_of(structured, options)
        for note in notes:
            console.say(f"sl train: {note}")
        api.train_multiline(options, multiline, inputs, outputs, console)
        return
    if bandit or _bandit_model(kw["initial_model"]):
        if kw["sync_every"] is not None:
            raise click.UsageError("--sync-every with a bandit: its ranks are averaged after "
                                   "every pass")  # fmt: skip
        api.train_bandit(learning_options(ctx, kw), bandit, inputs, outputs, console,
                         dask=kw["dask"])  # fmt: skip
        return
    api.train(learning_options(ctx, kw), inputs, outputs, console, dask=kw["dask"],
              sync_every=kw["sync_every"])  # fmt: skip


def _bandit_model(path: str | None) -> bool:
    """Whether ``path`` holds a bandit model (sl's format, :mod:`streamlearn.run.bandit`)."""
    if path is None or not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    return head.startswith(b"SLMODEL\0") and b'"multiline": {' in head


@cli.command(cls=GroupedCommand, context_settings=CONTEXT, epilog=EXIT_TEXT)
@input_options
@click.option(
    "-i",
    "--initial-model",
    "model_path",
    required=True,
    type=click.Path(dir_okay=False),
    metavar="MODEL",
    help="The model to score with.",
)
@format_option(
    "Input format (auto: the model's; input of the other format is refused unless named here)."
)
@PROBABILITIES
def predict(files, model_path, input_format, **kw) -> None:
    """Score FILEs or stdin with a model; report loss when labels are present.

    \b
    Example:
      sl predict -i model.sl test.vw -p preds.txt --link logistic
    """
    inputs, outputs, console = run_parts(files, kw, {"initial_model": model_path}, {})
    from streamlearn import api

    api.predict(inputs, outputs, console, fmt=input_format)


@cli.command(context_settings=CONTEXT, epilog=EXIT_TEXT)
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.option(
    "--top", type=int, default=20, show_default=True, help="Show this many largest weights."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def inspect(model_path: str, top: int, as_json: bool) -> None:
    """Show a model's options, counters, sparsity and largest weights.

    \b
    Example:
      sl inspect model.sl --top 10
    """
    from streamlearn import api

    click.echo(api.inspect(model_path, top=top, as_json=as_json))


@cli.command(context_settings=CONTEXT, epilog=EXIT_TEXT)
@click.argument("reports", metavar="REPORT...", nargs=-1, required=True,
                type=click.Path(dir_okay=False))  # fmt: skip
@click.option("-o", "--output", required=True, metavar="FILE",
              help="The picture: FILE.png, FILE.svg or FILE.pdf.")  # fmt: skip
def plot(reports: tuple[str, ...], output: str) -> None:
    """Plot loss curves (and, for several runs, loss against non-zero weights).

    REPORTs are JSON files written by sl train --report. Needs matplotlib
    (pip install 'streamlearn[plot]').

    \b
    Example:
      for l1 in 1e-5 1e-4 1e-3; do sl train d.vw --algo tg --l1 $l1 --report tg-$l1.json; done
      sl plot tg-*.json -o tg.png
    """
    from streamlearn.plot import plot as draw

    draw(list(reports), output)


from streamlearn.cli.serve import serve  # noqa: E402 - the command, registered below
from streamlearn.cli.vw import vw  # noqa: E402 - the command, registered below

cli.add_command(vw)
cli.add_command(serve)


def main() -> None:
    # sl makes no BLAS call: spare OpenBLAS its thread pool, whose start costs ~10 ms of
    # numpy's import and whose thread then spins for ~0.1 s of CPU (unless the user chose)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from streamlearn.system.process import exit_now, run

    # the same program is installed as 'sl' and as 'streamlearn' (messages and shell
    # completion, _STREAMLEARN_COMPLETE, follow the name it was called by)
    called = os.path.basename(sys.argv[0]) if sys.argv else ""
    exit_now(run(cli, prog_name="streamlearn" if called == "streamlearn" else "sl"))
