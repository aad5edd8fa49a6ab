"""``sl vw``: a Vowpal Wabbit command line, pasted whole.

``sl vw -d train.vw -c --passes 10 -f m.vw`` does what ``vw`` does with those
options: it trains (or, with ``-t``, scores) and writes the same outputs.  VW's
argv is read with VW's grammar and translated into the library's objects --
the learning options (:class:`~streamlearn.config.TrainConfig` fields),
:class:`Inputs`, :class:`Outputs`, :class:`Console` -- then
:func:`streamlearn.api.train` runs, as for ``sl train`` (with ``--daemon``,
:func:`streamlearn.api.serve`, as for ``sl serve``).  Nothing here learns.

This module is the command: it runs a translated command line.  The
translation is the library's (:mod:`streamlearn.vwargs`): the table of VW's options
(``vwargs.OPTIONS``, those sl takes, each reduction's declared by its module;
:data:`NOT_SUPPORTED` and :data:`OTHER_VW_OPTIONS`, those it refuses: one line on
stderr, exit 2, before any data is read) and the reading of a whole command line
(:func:`parse_argv`).  ``docs/vw-compat.md`` is the table for people.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from streamlearn.cli.options import run_parts, save_every
from streamlearn.errors import EXIT_CODES, VWUsage

if TYPE_CHECKING:
    from streamlearn.vwargs import Translation

__all__ = ["VWUsage", "daemon", "vw"]
# (vwargs is imported when sl vw runs: it reads the reductions' modules, numpy with them,
# and every sl command imports this module)

EXIT_TEXT = "Exit status:\n\n" + "\n".join(f"  {c:>3}  {t}" for c, t in EXIT_CODES.items())

HELP = """Usage: sl vw [VW OPTIONS] [FILE]

  Run a Vowpal Wabbit command line with sl: it trains, or with -t scores, as vw would.

  VW's spellings (--loss_function, --bit_precision, -b 18, --passes=3, ...), options
  after the data, -d repeatable or the data file as an argument.  An option sl does not
  have is named with the nearest sl equivalent (exit 2).  -f writes VW's model format
  (vw -i reads it), -i reads VW's models and sl's; -c keeps sl's cache in
  <data>.cache.sl, beside VW's.
  sl's own additions: --report PATH writes sl train's JSON report; --ope prints the
  off-policy estimates (IPS, SNIPS, DR with intervals) of a --cb_adf/--cb_explore_adf run.

  Every option, what it does and what differs: docs/vw-compat.md.

  Example:
    sl vw -d train.vw -c --passes 10 -f m.vw
    sl vw -t -i m.vw -d test.vw -p preds.txt

""" + "\n".join([("  " + line).rstrip() for line in EXIT_TEXT.splitlines()]) + "\n"


@click.command(
    "vw",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                      "help_option_names": []},  # fmt: skip
    add_help_option=False,
)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def vw(argv: tuple[str, ...]) -> None:
    """Run a Vowpal Wabbit command line (VW's options, pasted whole).

    \b
    Example:
      sl vw -d train.vw -c --passes 10 -f m.vw
      sl vw -t -i m.vw -d test.vw -p preds.txt
    """
    from streamlearn.vwargs import model_argv, parse_argv, resolve

    t = parse_argv(list(argv))
    if t.inputs.get("initial_model") and not t.help and not t.version:
        kept = model_argv(t.inputs["initial_model"], list(argv))
        if kept:
            t = parse_argv([*kept, *argv])
    if t.help:
        click.echo(HELP, nl=False)
        return
    if t.version:
        from streamlearn._version import __version__

        click.echo(f"sl {__version__} (sl vw: Vowpal Wabbit's command line)")
        return
    resolve(t)
    if t.daemon and t.inputs.get("flatbuffer"):  # (a daemon's requests are lines of text)
        raise VWUsage("--flatbuffer with --daemon: not supported (sl's daemon reads VW text)")
    kw = {"strict": t.strict, "examples": t.inputs.pop("examples", None),
          "predictions": t.predictions, "raw_predictions": t.raw_predictions,
          "report": t.report, "link": t.link, "quiet": t.quiet,
          "probabilities": t.probabilities, "allow_empty": t.allow_empty}  # fmt: skip
    try:
        inputs, outputs, console = run_parts(tuple(t.data), kw, t.inputs,
                                             {**t.outputs, "vw_summary": True,
                                              "vw_format": True, "vw_quiet": t.quiet,
                                              "vw_resume": t.outputs.get("model_format")
                                              != "vw_predict_only"},
                                             progress=t.progress,
                                             # an O(2^b) draw, LDA's iterations, the
                                             # OjaNewton sketch's O(2^b·m²) set-up: compiled
                                             tiny=not t.daemon
                                             and "initial_weights" not in t.learn
                                             and "--OjaNewton" not in t.learn.get("stack", ())
                                             and "lda" not in t.multiline
                                             # (--cbify_reg's K-action cb_explore)
                                             and not (t.multiline.get("cb_discrete")
                                                      and "cats_tree" not in t.multiline))
    except click.BadParameter as e:
        raise VWUsage(e.format_message()) from None
    for note in t.notes:
        console.say(f"sl vw: {note}")
    from streamlearn.run.vwconsole import log_to

    log_to(t.log_output)  # (VW's info and warning lines: --log_output)
    if t.daemon:
        return daemon(t, inputs, outputs, console)
    from streamlearn import api
    from streamlearn.run import vwmetrics

    if t.multiline and t.learn.get("csoaa") and set(t.multiline) == {"csoaa_rank"}:
        # VW: --csoaa_rank is csoaa_ldf's; beside --csoaa K it changes nothing
        console.say("sl vw: --csoaa_rank: an option of --csoaa_ldf; --csoaa K ignores it (as VW)")
        t.multiline = {}
    if set(t.multiline) <= {"ope"} and inputs.initial_model:
        from streamlearn.run.mlmodel import multiline_of_model

        t.multiline = {**(multiline_of_model(inputs.initial_model) or {}), **t.multiline}
    if t.multiline:
        summary = api.train_multiline(t.learn, t.multiline, inputs, outputs, console)
        if outputs.extra_metrics:
            vwmetrics.write(outputs.extra_metrics, vwmetrics.multiline(
                summary, test_only=bool(t.learn.get("test_only")),
                predicts_first=t.multiline.get("reduction") == "csoaa_ldf"
                or "explore" in t.multiline))  # fmt: skip
        return summary
    report = api.train(t.learn, inputs, outputs, console)
    if outputs.extra_metrics:
        vwmetrics.write(outputs.extra_metrics, vwmetrics.single_line(
            report, test_only=bool(t.learn.get("test_only")), oaa=bool(t.learn.get("oaa")),
            csoaa=bool(t.learn.get("csoaa") or t.learn.get("multilabel"))))  # fmt: skip


def daemon(t: Translation, inputs, outputs, console) -> None:  # noqa: ANN001 - the run's parts
    """``sl vw --daemon ...``: VW's daemon options, translated (see ``docs/serving.md``).

    As VW: listens on port 26542 unless ``--port``; forks into the background
    unless ``--foreground``; ``-t`` scores, otherwise labeled lines are learned;
    a ``save`` or ``save_PATH`` line writes the model (to ``-f``, or PATH).
    ``--num_children`` is accepted: one sl process serves every connection at once.
    sl's own ``--save_every N|Ts`` is ``sl serve --save-every``.
    sl listens on 127.0.0.1 (VW: every address).
    """
    from streamlearn import api
    from streamlearn.run.serve import ServeOptions

    d = t.daemon
    if t.data:
        raise VWUsage("--daemon reads its examples from its connections: give no data file")
    if t.predictions or t.raw_predictions or t.report:
        raise VWUsage("--daemon answers each line on its connection: -p/-r/--report "
                      "do not apply")  # fmt: skip
    fmt = t.learn.get("format")
    if fmt in ("json", "dsjson", "csv"):  # (requests would be parsed as VW text, wrongly)
        raise VWUsage(f"--{fmt} with --daemon: the daemon reads VW text lines from its "
                      "connections (a model learned from such data serves VW text requests)")
    port = d.get("port", 26542)
    if not 0 <= port <= 65535:
        raise VWUsage(f"--port {port}: 0 to 65535")
    if "num_children" in d:
        if d["num_children"] < 1:
            raise VWUsage("--num_children must be at least 1")
        console.say("sl vw: --num_children accepted; one sl process serves every "
                    "connection at once")  # fmt: skip
    learn = not t.learn.get("test_only", False)
    explicit = {k: v for k, v in t.learn.items() if k != "test_only"}
    try:
        n, secs = save_every(d.get("save_every"))
    except click.BadParameter as e:
        raise VWUsage(e.format_message()) from None
    opts = ServeOptions(port=port, port_file=d.get("port_file"), pid_file=d.get("pid_file"),
                        foreground=bool(d.get("foreground")), learn=learn, save_paths=True,
                        save_every=n, save_seconds=secs, probabilities=t.probabilities,
                        link=t.link, bandit=dict(t.multiline) or None)  # fmt: skip
    api.serve(explicit, inputs, outputs, opts, console)
