"""How a run shows its progress: stderr lines, warnings once, the progress bar.

Everything but predictions goes to stderr; ``--quiet`` (``Console(quiet=True)``)
silences all but errors, which the caller raises.  The latest console also
hears when a kernel is being compiled (:mod:`streamlearn.system.notices`).
"""

from __future__ import annotations

import sys
from typing import IO

from streamlearn.system import notices


class Console:
    """stderr output: the table, notes and warnings (silent but errors under --quiet)."""

    def __init__(self, quiet: bool, stream: IO[str] | None = None) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.bar = None
        self._warned: set[str] = set()
        # a kernel compiled on first use says so here (streamlearn.system.jit_numba)
        notices.listen(None if quiet else self.say)

    def say(self, text: str) -> None:
        if self.quiet or self.stream is None:
            return
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
