"""What every part of the server (:mod:`streamlearn.run.serve`) shares: its options
(:class:`ServeOptions`, the CLI's ``--port`` etc.), the limits of a connection, and
its one-line log on stderr."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass

from streamlearn.run.console import Console
from streamlearn.system.text import printable

READ_SIZE = 256 << 10
"""Bytes read from a connection at once: a pipelining client's lines come in batches of
up to this much (a few thousand lines), an interactive client's one line at a time."""
MAX_LINE = 1 << 20
"""The longest request line (``--max-line-bytes``): a longer one is read and dropped
and answered ``nan``; what one connection holds stays below this plus :data:`READ_SIZE`."""
MAX_CONNECTIONS = 4096
"""Connections served at once (``--max-connections``); one more is closed at once."""
DEFAULT_PORT = 26542
"""VW's daemon port."""


@dataclass
class ServeOptions:
    """How the server listens, saves and reloads (the CLI's ``--port`` etc.)."""

    host: str = "127.0.0.1"
    """Address to listen on (VW listens on every address; sl on the loopback unless told)."""
    port: int = DEFAULT_PORT
    """0: the system picks one (write it with ``port_file``)."""
    port_file: str | None = None
    pid_file: str | None = None
    foreground: bool = True
    """False: VW's default -- the server forks into the background once it listens."""
    learn: bool = False
    """Learn labeled lines (VW's daemon without ``-t``)."""
    save_every: int | None = None
    """Learning: save after this many examples learned since the last save."""
    save_seconds: float | None = None
    """Learning: save this many seconds after the first example not yet saved."""
    save_paths: bool = False
    """Let a client's ``save_PATH`` line name the file written (VW does; ``sl serve``
    does not: a client could write any file the server can)."""
    reload_seconds: float = 1.0
    """Test-only: how often the model file is checked for a replacement (0: only SIGHUP)."""
    max_line_bytes: int = MAX_LINE
    max_connections: int = MAX_CONNECTIONS
    stats_seconds: float = 0.0
    """Print the ``stats`` line this often (0: on SIGUSR1 and at the exit only)."""
    probabilities: bool = False
    link: str = "identity"
    bandit: dict | None = None
    """A bandit's options (:class:`~streamlearn.reductions.Multiline`'s fields): requests
    are multiline examples (:class:`~streamlearn.run.bandit_served.BanditServed`); a bandit model
    (``-i``) is served so without them."""
    vw_format: bool = False
    """Answer lines as VW writes them (``sl vw --daemon``: ``Outputs.vw_format``), else as
    ``sl predict -p`` writes them."""


def log(console: Console, text: str) -> None:
    """One line on stderr, under --quiet too (a refused model, a failed save, stats)."""
    with contextlib.suppress(OSError, ValueError):
        print(printable(text), file=console.stream or sys.stderr, flush=True)
