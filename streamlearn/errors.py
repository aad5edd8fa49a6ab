"""Errors the CLI turns into messages and documented exit codes.

=====  =====================================================================
code   meaning
=====  =====================================================================
0      success
1      unexpected internal error (a bug: please report it)
2      usage error: unknown option, bad value, conflicting options
3      unreadable input: missing or unreadable file, broken gzip stream
4      malformed data under ``--strict`` (no model is written)
5      unusable model file: missing, not an sl model, wrong version, corrupt
6      training diverged: non-finite prediction or weight (no model written)
7      cannot write an output: disk full, I/O error, directory gone, stdout closed
8      not enough memory for the table the options ask for
9      gave up waiting for the lock of a model another run continues in place
10     no examples: the input yielded no usable line (empty, a failed producer,
       every line malformed); nothing is written (``--allow-empty`` writes anyway)
11     the Dask cluster was lost mid-run (``--dask``: the scheduler or every worker
       went away): nothing is written
129    hangup (SIGHUP); 130 interrupt (SIGINT, Ctrl-C); 143 terminate (SIGTERM):
       no model is written, an existing one is untouched, temporary files removed
141    the reader of the predictions went away (SIGPIPE/EPIPE): predictions
       stopped; ``sl train`` still learned every line and wrote its model
=====  =====================================================================

Environmental failures end with a one-line message and one of these codes;
a Python traceback (exit 1) is always a bug.
"""

from __future__ import annotations

import click

EXIT_CODES = {
    0: "success",
    1: "unexpected internal error",
    2: "usage error (bad option or conflicting options)",
    3: "unreadable input",
    4: "malformed data under --strict",
    5: "unusable model file",
    6: "training diverged (non-finite values)",
    7: "cannot write an output (disk full, I/O error, missing directory, closed stdout)",
    8: "not enough memory for the table (lower -b)",
    9: "timed out waiting for the lock of a model continued in place (--lock-timeout)",
    10: "no examples: the input yielded no usable line; nothing written (--allow-empty)",
    11: "the Dask cluster was lost mid-run (--dask): nothing written",
    129: "hangup (SIGHUP): nothing written, temporary files removed",
    130: "interrupted (SIGINT, Ctrl-C): nothing written, temporary files removed",
    141: "predictions' reader went away (broken pipe); train still saved its model",
    143: "terminated (SIGTERM): nothing written, temporary files removed",
}


class SlError(click.ClickException):
    """Base class: an error with a message for the user and an exit code.

    A :class:`click.ClickException`, so the CLI prints ``Error: <message>`` on
    stderr and exits with :attr:`exit_code`.
    """

    exit_code = 1


class UsageError(SlError, ValueError):
    """A bad option, value or combination: exit 2; a ValueError for library callers."""

    exit_code = 2


class VWUsage(UsageError):
    """A VW option sl does not take, or a malformed VW command line: one line, exit 2."""

    def format_message(self) -> str:
        return f"sl vw: {self.message}"


class InputUnreadable(SlError):
    exit_code = 3


class MalformedData(SlError):
    exit_code = 4


class ModelError(SlError):
    exit_code = 5


class Diverged(SlError):
    exit_code = 6


class OutputUnwritable(SlError):
    exit_code = 7


class OutOfMemory(SlError):
    exit_code = 8


class LockTimeout(SlError):
    exit_code = 9


class NoExamples(SlError):
    """The input yielded no usable example: nothing is written (``--allow-empty`` to allow it)."""

    exit_code = 10


class ClusterLost(SlError):
    """``--dask``: the scheduler (or every worker) went away during the run; nothing written."""

    exit_code = 11


class Interrupted(SlError):
    """A run stopped by a signal: exit 128 + the signal's number, as shells report it."""

    exit_code = 130

    def __init__(self, message: str, signum: int = 2) -> None:
        super().__init__(message)
        self.exit_code = 128 + signum


class BrokenPipe(SlError):
    """Standard output (or a FIFO) lost its reader; everything else was done."""

    exit_code = 141
