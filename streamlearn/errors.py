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
130    interrupted (SIGINT/SIGTERM); no partial model is left behind
=====  =====================================================================
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
    130: "interrupted",
}


class SlError(click.ClickException):
    """Base class: an error with a message for the user and an exit code.

    A :class:`click.ClickException`, so the CLI prints ``Error: <message>`` on
    stderr and exits with :attr:`exit_code`.
    """

    exit_code = 1


class UsageError(SlError):
    exit_code = 2


class InputUnreadable(SlError):
    exit_code = 3


class MalformedData(SlError):
    exit_code = 4


class ModelError(SlError):
    exit_code = 5


class Diverged(SlError):
    exit_code = 6


class Interrupted(SlError):
    exit_code = 130
