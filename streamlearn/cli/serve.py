"""``sl serve``: a resident model answering VW's daemon protocol over TCP (sl's names).

The same server as ``sl vw --daemon`` (:mod:`streamlearn.run.serve`); this
command only turns its options into the library's objects and calls
:func:`streamlearn.api.serve`.
"""

from __future__ import annotations

import click

from streamlearn.cli.bandit import bandit_of, bandit_options
from streamlearn.cli.options import run_parts, save_every

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


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
        from streamlearn.vwargs import model_translation

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
