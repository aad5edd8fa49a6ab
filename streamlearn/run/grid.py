"""Grids of configurations trained over one parse (``--l1 0,1e-5,1e-4``).

The numeric learner options (:data:`GRID_OPTIONS`) accept comma-separated
lists; a run trains the product of all lists, every configuration on the same
stream of parsed blocks, each with its own table, statistics and outputs.
Options that fix the parse (bits, format, loss, algorithm, constant,
interactions) stay single.

Output paths take ``{name}`` placeholders filled with the value *as written on
the command line* (``-f 'm-{l1}.sl'`` with ``--l1 1e-5,1e-4`` writes
``m-1e-5.sl`` and ``m-1e-4.sl``); an option that the grid does not vary fills
in its one value.  Two configurations that would write the same file are
refused before any data is read.

>>> g = Grid.expand({"l1": [("0", 0.0), ("1e-5", 1e-5)], "loss": "logistic"})
>>> [c.explicit["l1"] for c in g.configurations]
[0.0, 1e-05]
>>> g.configurations[1].fill("m-{l1}.sl")
'm-1e-5.sl'
>>> g.configurations[1].name
'l1=1e-5'
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from streamlearn.errors import UsageError

GRID_OPTIONS = {
    "l1": float,
    "l2": float,
    "learning_rate": float,
    "power_t": float,
    "top_k": int,
    "theta": float,
    "period": int,
    "ftrl_alpha": float,
    "ftrl_beta": float,
}
"""TrainConfig fields that take a list of values, with the type of one value.  Their
order is the grid's: the first option's values vary slowest."""

_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_-]*)\}")


def parse_values(text: str, kind: type, option: str) -> list[tuple[str, float | int]]:
    """``"0,1e-5"`` -> ``[("0", 0.0), ("1e-5", 1e-5)]``: each value as typed and as a number.

    >>> parse_values("1e-5, 3e-5", float, "--l1")
    [('1e-5', 1e-05), ('3e-5', 3e-05)]
    """
    out: list[tuple[str, float | int]] = []
    for part in text.split(","):
        typed = part.strip()
        try:
            value = kind(typed)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise UsageError(
                f"{option}: {typed!r} is not {what}"
                + (" (a list is comma-separated: 1e-5,1e-4)" if text.count(",") else "")
            ) from None
        if any(value == v for _, v in out):
            raise UsageError(f"{option} lists {typed} twice")
        out.append((typed, value))
    return out


@dataclass
class Configuration:
    """One point of a grid: the explicit options of one run, and the grid's values as typed."""

    explicit: dict
    typed: dict[str, str] = field(default_factory=dict)
    """The values the grid varies, as written on the command line (empty for a single run)."""
    fixed: dict[str, str] = field(default_factory=dict)
    """The grid options given a single value, as written (they fill placeholders too)."""

    @property
    def name(self) -> str:
        """``l1=1e-5 l2=0.1``: what tells this configuration apart in a grid."""
        return " ".join(f"{option_name(k)}={v}" for k, v in self.typed.items())

    def fill(self, path: str | None) -> str | None:
        """``path`` with its ``{name}`` placeholders filled (see the module's docstring).

        A placeholder names an option given on the command line: its value there
        (one of the grid's, or its only one).
        """
        if path is None:
            return None

        def value(m: re.Match) -> str:
            key = m.group(1).replace("-", "_")
            key = {"l": "learning_rate"}.get(key, key)
            if key in self.typed:
                return self.typed[key]
            if key in self.fixed:
                return self.fixed[key]
            if key in GRID_OPTIONS:
                raise UsageError(
                    f"{path}: {{{m.group(1)}}} names --{option_name(key)}, which is not on "
                    f"the command line: give it (e.g. --{option_name(key)} VALUE) or drop "
                    "the placeholder"
                )
            raise UsageError(
                f"{path}: {{{m.group(1)}}} is not an option a grid can vary "
                f"(placeholders: {', '.join('{' + k + '}' for k in GRID_OPTIONS)})"
            )

        return _PLACEHOLDER.sub(value, path)


@dataclass
class Grid:
    """The configurations of a run, in the order of the product of the lists."""

    configurations: list[Configuration]
    varied: dict[str, list[str]]
    """Each option with more than one value, its values as typed."""

    @property
    def size(self) -> int:
        return len(self.configurations)

    @classmethod
    def expand(cls, explicit: dict) -> Grid:
        """The product of the lists in ``explicit``.

        A value of a GRID_OPTIONS key may be a list of values or of ``(typed,
        value)`` pairs (the CLI's, which keep the text as written); any other
        value is one option's value.
        """
        lists = {
            k: [x if isinstance(x, tuple) else (_typed(x), x) for x in explicit[k]]
            for k in GRID_OPTIONS  # the product's order: GRID_OPTIONS', whatever was typed first
            if isinstance(explicit.get(k), list | tuple)
        }
        varied = {k: v for k, v in lists.items() if len(v) > 1}
        fixed = {k: v[0] for k, v in lists.items() if len(v) == 1}
        base = {k: v for k, v in explicit.items() if k not in lists}
        base.update({k: value for k, (_, value) in fixed.items()})
        configurations = []
        for combo in itertools.product(*varied.values()):
            point = dict(zip(varied, combo, strict=True))
            configurations.append(
                Configuration(
                    explicit={**base, **{k: value for k, (_, value) in point.items()}},
                    typed={k: typed for k, (typed, _) in point.items()},
                    fixed={k: typed for k, (typed, _) in fixed.items()},
                )
            )
        return cls(configurations, {k: [t for t, _ in v] for k, v in varied.items()})

    def describe(self) -> str:
        """``6 configurations: l1 in {0, 1e-5, 1e-4} x l2 in {0, 0.1}``."""
        parts = [f"{option_name(k)} in {{{', '.join(v)}}}" for k, v in self.varied.items()]
        return f"{self.size} configurations: " + " x ".join(parts)


def _typed(value: float | int) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def option_name(key: str) -> str:
    """A TrainConfig field as the option is spelled (``learning_rate`` -> ``learning-rate``)."""
    return key.replace("_", "-")


def check_distinct(paths: list[tuple[str, list[str | None]]], names: list[str]) -> None:
    """Refuse an output path that two configurations would both write.

    ``paths`` holds (what, one filled path per configuration) pairs: the
    option as typed (e.g. ``-f m.sl``) and the paths it gives.
    """
    for what, filled in paths:
        seen: dict[str, int] = {}
        for k, path in enumerate(filled):
            if path is None:
                continue
            if path in seen:
                j = seen[path]
                hint = (
                    "standard output takes one configuration's predictions: write them to "
                    "files, e.g. -p 'p-{l1}.txt'"
                    if path in ("-", "/dev/stdout")
                    else "name the options the grid varies in it, e.g. "
                    + " ".join("{" + n.split("=")[0].replace("-", "_") + "}"
                               for n in names[k].split())  # fmt: skip
                )
                raise UsageError(
                    f"{what} would be written by two configurations ({names[j]} and "
                    f"{names[k]}) as {path}: {hint}"
                )
            seen[path] = k
