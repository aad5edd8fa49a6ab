"""VW's options as a reduction declares them: its module's ``VW_OPTIONS`` and ``settle``.

Each reduction module names the VW options it takes (``VW_OPTIONS``: VW's long name ->
:class:`VWOption`, what the option does to the command line's translation) and, if the
options mean something together, a ``settle(t)`` run once the whole line is read.  The
registry (:data:`streamlearn.reductions.VW_OPTIONS`, :data:`~streamlearn.reductions.SETTLE`)
gathers them; ``sl vw``, ``sl serve -i`` of VW's model and the API read a VW command line
with those and the options every run shares (:mod:`streamlearn.vwargs`): adding a
reduction's options touches neither.

An option acts on a :class:`Command` (``vwargs.Translation``): ``learn`` (the learning
options, :class:`~streamlearn.config.TrainConfig` fields), ``multiline`` (the stack's,
:class:`~streamlearn.reductions.Multiline` fields), ``notes`` (one line each on stderr),
``exploring`` and ``explorer_options``.  A refusal is a :class:`~streamlearn.errors.VWUsage`:
one line, exit 2, before any data is read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from streamlearn.errors import VWUsage

__all__ = ["Command", "VWOption", "count", "flag", "integer", "learn", "stack_field",
           "number", "sized", "take"]


class Command(Protocol):
    """What VW's options fill in (``streamlearn.vwargs.Translation``)."""

    learn: dict
    multiline: dict
    notes: list[str]
    explorer_options: list[str]
    exploring: bool
    inputs: dict
    outputs: dict
    link: str
    raw_predictions: str | None
    probabilities: bool


Apply = Callable[[Command, str, "str | None"], None]
"""(the command, the option's long name, its value or None) -> None."""


@dataclass(frozen=True)
class VWOption:
    """One of VW's options: its short spelling, whether it takes a value, what it does."""

    short: str | None
    value: bool
    apply: Apply
    repeatable: bool = False
    """Given several times, each adds a value (``-q``, ``-d``); else a second, different
    value is refused (VW: "Disagreeing option values")."""


def take(*groups: dict[str, VWOption]) -> dict[str, VWOption]:
    """The options of several groups, each name declared once (two reductions claiming one
    option is a mistake of the registry, caught on import)."""
    out: dict[str, VWOption] = {}
    for group in groups:
        for name, opt in group.items():
            if name in out:
                raise ValueError(f"--{name} is declared twice")
            out[name] = opt
    return out


def number(name: str, text: str) -> float:
    """A VW option's number, as VW reads it (a 32-bit float)."""
    try:
        x = float(text)
    except ValueError:
        raise VWUsage(f"--{name} {text!r}: a number is expected") from None
    if abs(x) > F32_MAX and abs(x) != float("inf"):  # (VW: "Failed to convert 1e308 to f")
        raise VWUsage(f"--{name} {text}: beyond a 32-bit float, as VW reads it")
    return x


F32_MAX = 3.4028234663852886e38
"""The largest 32-bit float: VW reads its options' numbers as such."""


def integer(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise VWUsage(f"--{name} {text!r}: an integer is expected") from None


def count(name: str, text: str, flag: str, what: str) -> int:
    """An integer of at least 1 (classes, actions); otherwise ``FLAG TEXT: WHAT``."""
    k = integer(name, text)
    if k < 1:
        raise VWUsage(f"{flag} {text}: {what}")
    return k


def learn(key: str, kind: Callable | None = None) -> Apply:
    """The option's value (read by ``kind``) as the learning option ``key``."""

    def apply(t: Command, name: str, value: str | None) -> None:
        t.learn[key] = kind(name, value) if kind is not None else value

    return apply


def flag(key: str, value=True) -> Apply:  # noqa: ANN001 - the value it sets
    """A flag setting the learning option ``key`` to ``value``."""

    def apply(t: Command, name: str, _: str | None) -> None:
        t.learn[key] = value

    return apply


def stack_field(key: str, kind: Callable | None = None, value=True) -> Apply:  # noqa: ANN001
    """An option of the stack (``Command.multiline``, a field of ``Multiline``): a flag
    sets ``value``, an option with a value its value read by ``kind``."""

    def apply(t: Command, name: str, text: str | None) -> None:
        t.multiline[key] = value if text is None else (kind(name, text) if kind else text)

    return apply


def sized(t: Command, key: str, name: str) -> None:
    """Refuse (exit 8) a count whose memory passes what is available, before any is
    allocated: ``--cb 4294967296``, ``--bag 100000000`` (a model's too: vwargs.model_argv);
    a field that is no count (``model_sizes.SIZE_NAMES``) passes."""
    from streamlearn.model_sizes import SIZE_NAMES, check_sizes

    if key not in SIZE_NAMES:
        return

    check_sizes(t.multiline, {**SIZE_NAMES, key: f"--{name}"})

