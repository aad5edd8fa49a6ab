"""sl's own options of a single-line reduction (``sl train --lrq ab3``), as its module
declares them: ``TRAIN_OPTIONS`` and ``train_words``.

A single-line reduction names the options ``sl train`` takes for it (``TRAIN_OPTIONS``:
:class:`TrainOption`, plain data: the CLI makes its click options of them and lists them
under one heading of ``sl train --help``) and turns their values into its words
(``train_words(values)``: VW's spelling, the words ``TrainConfig.stack`` keeps and the module
reads back).  The registry gathers them (:data:`streamlearn.reductions.TRAIN_OPTIONS`,
:func:`streamlearn.reductions.train_words`): adding a reduction touches neither the CLI nor a
table of every reduction's options.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TrainOption"]


@dataclass(frozen=True)
class TrainOption:
    """One option of ``sl train``: its spellings, its value's name among the command's
    values (``dest``), its help line, and what it takes."""

    flags: tuple[str, ...]
    dest: str
    help: str
    kind: str = "flag"
    """``flag`` (no value), ``int``, ``float``, ``str`` or ``choice`` (of :attr:`choices`)."""
    multiple: bool = False
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    low: int | None = None
    high: int | None = None
    """``int``: the range its value must be in (either end open when None)."""

    def __post_init__(self) -> None:
        if self.kind not in ("flag", "int", "float", "str", "choice"):
            raise ValueError(f"{self.flags[0]}: no option kind {self.kind!r}")
        if (self.kind == "choice") != bool(self.choices):
            raise ValueError(f"{self.flags[0]}: choices go with kind 'choice' only")
