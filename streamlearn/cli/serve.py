"""``sl serve``: a resident model answering VW's daemon protocol over TCP (sl's names).

The same server as ``sl vw --daemon`` (:mod:`streamlearn.run.serve`); this
command only turns its options into the library's objects and calls
:func:`streamlearn.api.serve`.
"""

from __future__ import annotations

import re

import click

from streamlearn.cli.bandit import bandit_of, bandit_options
from streamlearn.cli.options import run_parts

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


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


@click.command("serve", context_settings=CONTEXT)
@click.option("-i", "--initial-model", "model_path", metavar="MODEL",
              type=click.Path(dir_okay=False), help="The model served (reloaded when replaced).")
@click.option("--port", type=click.IntRange(0, 65535), default=26542, show_default=True,
              help="TCP port (VW's daemon port); 0: one the system picks (see --port-file).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on: 127.0.0.1 or ::1 (this machine), 0.0.0.0 (all).")
@click.option("--port-file", metavar="PATH", help="Write the port listened on here.")
@click.option("--pid-file", metavar="PATH", help="Write the server's process id here.")
@click.option("--learn", is_flag=True,
              help="Learn labeled lines as they arrive (default: score only, as -t).")
@click.option("-f", "--final-model", metavar="PATH",
              help="--learn: where the model is saved (save lines, --save-every, signals).")
@click.option("--save-every", "save_text", metavar="N|Ts",
              help="--learn: save after N examples and/or T seconds (e.g. 10000,30s).")
@click.option("--reload-every", type=click.FloatRange(0), default=1.0, show_default=True,
              help="Seconds between checks that MODEL was replaced (0: on SIGHUP only).")
@click.option("--stats-every", type=click.FloatRange(0), default=0.0,
              help="Print the stats line every this many seconds (also on SIGUSR1, at exit).")
@click.option("--max-line-bytes", metavar="SIZE", default="1M", show_default=True,
              help="The longest request line; a longer one is dropped and answered nan.")
@click.option("--max-connections", type=click.IntRange(1), default=4096, show_default=True,
              help="Connections served at once; one more is closed at once.")
@click.option("--link", type=click.Choice(["identity", "logistic", "glf1", "poisson"]),
              default="identity", show_default=True, help="Applied to the answers.")
@click.option("--probabilities", is_flag=True, help="--oaa models: each class's probability.")
@click.option("--lock-timeout", type=click.FloatRange(min=0.0), default=3600.0,
              show_default=True, metavar="SECONDS",
              help="--learn with -i and -f the same model: the server holds its lock "
              "(MODEL.lock, as sl train) until its last save; wait at most this long for "
              "another run that holds it, then exit 9 ('inf': no limit).")
@click.option("--quiet", is_flag=True, help="Only errors and the stats line on stderr.")
@bandit_options
def serve(model_path: str | None, port: int, host: str, port_file: str | None,
          pid_file: str | None, learn: bool, final_model: str | None, save_text: str | None,
          reload_every: float, stats_every: float, max_line_bytes: str, max_connections: int,
          link: str, probabilities: bool, lock_timeout: float, quiet: bool,
          **bandit_kw) -> None:  # fmt: skip
    """Serve a model over TCP: each example line in, its prediction line out (VW's daemon).

    \b
    Example:
      sl serve -i model.sl --port 26542 &
      printf '|f a b\\n' | nc -q1 127.0.0.1 26542
      sl serve -i model.sl --learn -f model.sl --save-every 30s --port 0 --port-file port
      sl serve --cb-adf --explore epsilon --learn -f policy.sl   (multiline examples in,
        each answered with its pmf line and a blank line, as VW's --cb_explore_adf daemon)
    """
    from streamlearn.errors import UsageError
    from streamlearn.run.bandit_options import multiline_of

    try:
        bandit = multiline_of(bandit_of(bandit_kw)) or None
    except UsageError as e:
        raise click.UsageError(e.message) from None
    explicit: dict = {}
    if bandit is None and model_path:
        from streamlearn.cli.vw import model_translation

        t = model_translation(model_path)  # VW's --cb_explore_adf model: its options
        if t is not None:
            bandit = dict(t.multiline)
            explicit = {k: v for k, v in t.learn.items() if k != "test_only"}
    n, secs = save_every(save_text)
    parts = {"strict": False, "examples": None, "predictions": None, "report": None,
             "link": link, "raw_predictions": None, "probabilities": probabilities,
             "quiet": quiet, "max_line_bytes": max_line_bytes}  # fmt: skip
    inputs, outputs, console = run_parts((), parts, {"initial_model": model_path},
                                         {"final_model": final_model, "lock_timeout": lock_timeout},
                                         tiny=False)  # fmt: skip
    from streamlearn import api
    from streamlearn.run.serve import ServeOptions

    opts = ServeOptions(host=host, port=port, port_file=port_file, pid_file=pid_file,
                        foreground=True, learn=learn, save_every=n, save_seconds=secs,
                        reload_seconds=reload_every, max_line_bytes=inputs.max_line_bytes,
                        max_connections=max_connections, stats_seconds=stats_every,
                        probabilities=probabilities, link=link, bandit=bandit)  # fmt: skip
    api.serve(explicit, inputs, outputs, opts, console)


def daemon(t, inputs, outputs, console) -> None:  # noqa: ANN001 - cli.vw's Translation, parts
    """``sl vw --daemon ...``: VW's daemon options, translated (see ``docs/serving.md``).

    As VW: listens on port 26542 unless ``--port``; forks into the background
    unless ``--foreground``; ``-t`` scores, otherwise labeled lines are learned;
    a ``save`` or ``save_PATH`` line writes the model (to ``-f``, or PATH).
    ``--num_children`` is accepted: one sl process serves every connection at once.
    sl's own ``--save_every N|Ts`` is ``sl serve --save-every``.
    sl listens on 127.0.0.1 (VW: every address).
    """
    from streamlearn import api
    from streamlearn.cli.vw import VWUsage
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
