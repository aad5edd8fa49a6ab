"""``sl``: the command line, click commands only.

Each command turns its options into the library's objects (learning options,
:class:`~streamlearn.run.options.Inputs`, :class:`~streamlearn.run.options.Outputs`)
and calls one function of :mod:`streamlearn.api`.  Nothing imports this
package but ``streamlearn.__main__`` and the console script.

Importing this package is cheap: :func:`main` installs its signal handlers
before the commands (click, numpy, ...) are imported, and :data:`cli` is loaded
on first use.
"""

from __future__ import annotations

import os
import signal

__all__ = ["cli", "main"]

_EARLY = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stop_early(signum: int, frame) -> None:  # noqa: ANN001 - signal API
    """A signal while the program is still importing: nothing was written; exit 128 + n."""
    name = signal.Signals(signum).name
    try:
        os.write(2, f"Error: interrupted by {name}: nothing written\n".encode())
    except OSError:
        pass
    os._exit(128 + signum)


def main() -> None:
    """The ``sl`` program (the console script and ``python -m streamlearn``).

    SIGINT, SIGTERM and SIGHUP end the program at once, with one line and
    128 + the signal's number, until :func:`streamlearn.system.process.run`
    installs the handlers that stop a run cleanly: a Ctrl-C during the imports
    is no KeyboardInterrupt traceback.  A signal ignored at start (``nohup``)
    stays ignored.
    """
    for s in _EARLY:
        try:
            if signal.getsignal(s) is not signal.SIG_IGN:
                signal.signal(s, _stop_early)
        except (OSError, ValueError):  # not the main thread
            pass
    from streamlearn.cli.commands import main as run

    run()


def __getattr__(name: str):  # noqa: ANN202 - module attribute hook
    if name == "cli":
        from streamlearn.cli.commands import cli

        return cli
    raise AttributeError(f"module 'streamlearn.cli' has no attribute {name!r}")
