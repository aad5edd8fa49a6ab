"""``sl``: the command line, click commands only.

Each command turns its options into the library's objects (learning options,
:class:`~streamlearn.run.options.Inputs`, :class:`~streamlearn.run.options.Outputs`)
and calls one function of :mod:`streamlearn.api`.  Nothing imports this
package but ``streamlearn.__main__`` and the console script.
"""

from streamlearn.cli.commands import cli, main

__all__ = ["cli", "main"]
