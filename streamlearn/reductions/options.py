"""What a multiline reduction stack asks for, and the options every stack shares.

:class:`~streamlearn.reductions.Multiline` is one record for the stack (``sl vw``'s
translation of VW's options, ``vwargs/``; sl's bandit options,
``run/bandit_options.py``), recorded as it is in sl's model files (``meta["multiline"]``).
It is not written by hand: :func:`assemble` makes it from :data:`STACK` and the ``OPTIONS``
each registered reduction declares (``reductions/csoaa_ldf.py``: ``classifier``,
``csoaa_rank``; ``reductions/cb_adf.py``: ``cb_type``, ``clip_p``, ``rank_all``,
``actions``; ``reductions/explore.py``: the explorers'; ...), so that adding a reduction
touches no one else's options.  Here too: :func:`config_of` (the learning options of a
multiline run) and :func:`reduction_name` (the reduction as the user named it).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from streamlearn.errors import UsageError

if TYPE_CHECKING:
    from streamlearn.config import TrainConfig

STACK = (
    ("reduction", "str", dataclasses.field()),  # "csoaa_ldf", "cb_adf", "cb", "cbify", ...
    ("notes", "list[str]", dataclasses.field(default_factory=list)),
    ("ope", "bool", False),  # sl's own --ope: the off-policy estimates on stderr
)
"""The stack's own fields of :class:`~streamlearn.reductions.Multiline` (each reduction's
are its module's ``OPTIONS``)."""


def assemble(groups) -> type:  # noqa: ANN001 - iterables of (name, type, default)
    """The record of a stack's options: :data:`STACK`'s fields, then each group's (a
    reduction's ``OPTIONS``), each name once (a later group naming a field again shares
    it: the explorers' ``cb_min_cost`` is cbify's too)."""
    seen: dict[str, tuple] = {}
    for group in (STACK, *groups):
        for spec in group:
            seen.setdefault(spec[0], spec)
    cls = dataclasses.make_dataclass("Multiline", list(seen.values()))
    cls.__module__ = "streamlearn.reductions"
    cls.__doc__ = ("What a multiline reduction stack asks for (from VW's options): the "
                   "stack's fields and each registered reduction's (streamlearn.reductions).")
    return cls


def config_of(learn: dict, bases: bool = False) -> TrainConfig:
    """The learning options of a multiline run; ``bases``: a path that runs the ftrl
    family's learners too (``BASES``: ``--cb_adf``, ``--cb_explore_adf``,
    ``--csoaa_ldf``, ``--cb K`` of :func:`fit`), others run on gd only."""
    from streamlearn.config import TrainConfig
    from streamlearn.learners.csoaa_ldf import BASES

    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(learn) - known)
    if unknown:
        raise UsageError(f"options not taken with multiline examples: {', '.join(unknown)}")
    cfg = TrainConfig(**learn)
    if cfg.algo != "gd" and not (bases and cfg.algo in BASES):
        also = " or --ftrl/--coin/--pistol" if bases else ""
        raise UsageError(f"this multiline reduction runs on gd (VW's default learner){also}, "
                         f"not {cfg.algo}")  # fmt: skip
    if cfg.initial_weights != "zero":
        raise UsageError(f"--{cfg.initial_weights}_weights: not with multiline examples yet "
                         "(VW draws them as its sparse or dense table is first read)")  # fmt: skip
    return cfg


def reduction_name(ml) -> str:  # noqa: ANN001 - a Multiline
    """The reduction as the user named it (``--cb_explore_adf --cover``, ``--cb 4``, ...)."""
    if ml.reduction == "cbify":
        return "--cbify"
    if ml.reduction in ("ccb", "slates"):
        return "--ccb_explore_adf" if ml.reduction == "ccb" else "--slates"
    if getattr(ml, "wap", ""):
        return "--wap_ldf"
    if ml.reduction in ("csoaa_ldf", "search"):
        return f"--{ml.reduction}"
    if getattr(ml, "mwt", ""):
        return "--multiworld_test"
    if ml.legacy:
        return "--cb_force_legacy"
    base = "--cb" if ml.reduction == "cb" else "--cb_adf"
    if ml.explore:
        base = "--cb_explore" if ml.reduction == "cb" else "--cb_explore_adf"
        if ml.explore_eval:
            base = "--explore_eval"
        elif ml.explore != "greedy":
            base += f" --{ml.explore}"
    return base
