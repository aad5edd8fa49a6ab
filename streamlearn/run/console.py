"""How a run shows its progress: stderr lines, warnings once, the progress bar.

Everything but predictions goes to stderr; ``--quiet`` (``Console(quiet=True)``)
silences all but errors, which the caller raises.  Text from the input (file
names, excerpts of lines) is shown with its control characters escaped
(:func:`~streamlearn.system.text.printable`).  The latest console also hears when
a kernel is being compiled (:mod:`streamlearn.system.notices`).
"""

from __future__ import annotations

import sys
from typing import IO

from streamlearn.system import notices
from streamlearn.system.text import printable


def reader_left(saved: bool) -> str:
    """The note of a run whose predictions' reader went away (``sl ... -p - | head``)."""
    return ("note: the reader of the predictions went away; they stopped there, every line "
            "was still learned" + (" and the model saved" if saved else ""))


class Console:
    """stderr output: the table, notes and warnings (silent but errors under --quiet).

    ``progress`` is when the progressive table gets a line, as VW's ``-P``
    reads it (:func:`progress_step`); None: at 1, 2, 4, 8, ... examples.
    """

    def __init__(self, quiet: bool, stream: IO[str] | None = None,
                 progress: str | None = None) -> None:  # fmt: skip
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.bar = None
        self._warned: set[str] = set()
        self.progress = progress_step(progress)
        # a kernel compiled on first use says so here (streamlearn.system.jit_numba)
        notices.listen(None if quiet else self.say)

    def say(self, text: str) -> None:
        """Print ``text`` (lines of it), input's characters that a terminal acts on escaped."""
        if self.quiet or self.stream is None:
            return
        text = printable(text, keep="\n")
        try:
            if self.bar is not None:
                self.bar.write(text, file=self.stream)
            else:
                print(text, file=self.stream, flush=True)
        except (OSError, ValueError):  # stderr's reader went away: go on silently
            self.quiet = True

    def warn_once(self, key: str, text: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.say(f"warning: {text}")

    def note_once(self, key: str, text: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.say(f"note: {text}")

    def progress_bar(self):  # noqa: ANN201 - a tqdm bar or None
        """A bar counting examples, when stderr is a terminal (lines are then written
        through it); None otherwise.  :meth:`close_bar` ends it."""
        if self.quiet or self.stream is None or not self.stream.isatty():
            return None
        from tqdm import tqdm

        self.bar = tqdm(unit=" ex", unit_scale=True, file=self.stream, leave=False)
        return self.bar

    def close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def progress_step(text: str | None) -> float:
    """VW's ``-P``/``--progress``: a number with a ``.`` multiplies the example count at
    each line (at most 1 is raised by 1, as VW), an integer adds to it (at least 1).

    Returns the kernels' ``P_PROGRESS``: 0 for the default (1, 2, 4, ...), a factor
    f > 1, or -n for every n examples.

    >>> progress_step("10"), progress_step("1.5"), progress_step("0.5"), progress_step(None)
    (-10.0, 1.5, 1.5, 0.0)
    """
    if text is None:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--progress {text!r} is not a number") from None
    if not value == value or value in (float("inf"), float("-inf")):
        raise ValueError(f"--progress {text!r} is not a number")
    if "." not in text:
        return -max(1.0, float(int(value)))
    return value + 1.0 if value <= 1.0 else value
