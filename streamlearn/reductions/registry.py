"""The registry of the reductions (:mod:`streamlearn.reductions` says what it is; its names
are read through the package: ``from streamlearn.reductions import REDUCTIONS``).

Importing it imports every reduction's module (~45 ms of a run's start-up): a VW command
line reads :mod:`streamlearn.reductions.table` (the multiline reductions and every
option's owner) and imports it only when it names a single-line reduction."""

from __future__ import annotations

from importlib import import_module

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions import (
    active,
    active_cover,
    autolink,
    baseline,
    bfgs,
    boosting,
    bootstrap,
    confidence,
    cs_active,
    emt,
    gd_mf,
    interact,
    ksvm,
    log_multi,
    lrq,
    lrqfa,
    marginal,
    memory_tree,
    nn,
    oaa_subsample,
    oja_newton,
    plt,
    recall_tree,
    replay,
    stage_poly,
    svrg,
    topk,
)
from streamlearn.reductions.base import Reduction
from streamlearn.reductions.table import ORDER, REDUCTIONS, Multiline, reduction_of
from streamlearn.reductions.vwoptions import VWOption, take

SINGLE_LINE = {lrq.NAME: lrq, lrqfa.NAME: lrqfa, boosting.NAME: boosting, nn.NAME: nn,
               active.NAME: active, active_cover.NAME: active_cover, autolink.NAME: autolink,
               bootstrap.NAME: bootstrap,
               bfgs.NAME: bfgs, gd_mf.NAME: gd_mf, svrg.NAME: svrg,
               ksvm.NAME: ksvm, marginal.NAME: marginal, stage_poly.NAME: stage_poly,
               confidence.NAME: confidence, baseline.NAME: baseline,
               oja_newton.NAME: oja_newton, cs_active.NAME: cs_active,
               log_multi.NAME: log_multi, recall_tree.NAME: recall_tree, emt.NAME: emt,
               plt.NAME: plt, memory_tree.NAME: memory_tree, topk.NAME: topk,
               replay.NAME: replay, oaa_subsample.NAME: oaa_subsample,
               interact.NAME: interact}
"""The single-line reductions that own their options (``TrainConfig.stack``), by name: each
module has ``read(words)`` (its options, or None when the words do not name it), ``spec``
(its learner), ``refuse`` (what it does not run with), ``header_lines`` and ``NAME`` (VW's
stderr; ``stack_name(opts)`` when the name says more, ``ABOVE_SCORER`` when VW stacks it
above its scorer), ``VW_OPTIONS`` and ``settle``, and ``sl train``'s ``TRAIN_OPTIONS`` and
``train_words``; ``UNDER_TEST = False``: VW sets it up only to learn (a run of ``-t`` is
gd's)."""


TRAIN_OPTIONS = tuple(o for m in SINGLE_LINE.values() for o in m.TRAIN_OPTIONS)
"""``sl train``'s options of the single-line reductions (each declared by its module:
:mod:`streamlearn.reductions.trainoptions`); the CLI makes its click options of them."""


def train_words(values: dict) -> tuple[str, ...]:
    """The words (``TrainConfig.stack``) of ``sl train``'s values of :data:`TRAIN_OPTIONS`:
    each reduction's, in the registry's order (a misused one: ``UsageError``)."""
    return tuple(w for m in SINGLE_LINE.values() for w in m.train_words(values))


def train_defaults(words: tuple[str, ...]) -> dict:
    """The configuration's fields the reductions ``words`` name set when ``sl train`` does
    not give them (a module's ``TRAIN_DEFAULTS``: ``--rank``'s plain updates, VW's gd_mf)."""
    out: dict = {}
    for m in SINGLE_LINE.values():
        if hasattr(m, "TRAIN_DEFAULTS") and m.read(words) is not None:
            out.update(m.TRAIN_DEFAULTS)
    return out


def fixed_fields(words: tuple[str, ...]) -> dict:
    """The configuration's fields the reductions ``words`` name always set, whatever a run
    gives (a module's ``FIXED``: ``--ksvm``'s hinge loss, as VW's set-up forces it): a model
    continued or scored with them."""
    out: dict = {}
    for m in SINGLE_LINE.values():
        if hasattr(m, "FIXED") and m.read(words) is not None:
            out.update(m.FIXED(words) if callable(m.FIXED) else m.FIXED)  # (--cs_active: K)
    return out


def _named(words: tuple[str, ...]) -> list:
    """The single-line reductions ``words`` name, with their options; two are refused (sl
    runs one over gd at a time)."""
    named = [(m, o) for m in SINGLE_LINE.values() if (o := m.read(words)) is not None]
    if len(named) > 1:
        raise VWUsage(f"--{named[0][0].NAME} with --{named[1][0].NAME} is not supported by sl")
    return named


def one_single_line(t) -> None:  # noqa: ANN001 - a vwoptions.Command
    """A VW command line's single-line reductions: one at a time (:func:`_named`)."""
    _named(t.learn.get("stack", ()))


_DECLARING = tuple(import_module(f"streamlearn.reductions.{m}") for m in ORDER)
"""The modules that declare VW options, in the order their ``settle`` runs
(:data:`streamlearn.reductions.table.ORDER`)."""

VW_OPTIONS: dict[str, VWOption] = take(*(m.VW_OPTIONS for m in _DECLARING))
"""VW's options the reductions take, by VW's long name (each declared by its module:
:mod:`streamlearn.reductions.vwoptions`; a name declared twice fails here);
:mod:`streamlearn.vwargs` adds those every run has."""

SETTLE = (*(m.settle for m in _DECLARING if hasattr(m, "settle")), one_single_line)
"""Each module's ``settle(t)``: what its options mean together, once a line is read."""


def single_line(config):  # noqa: ANN001, ANN201 - a TrainConfig -> (module, options) | None
    """The single-line reduction ``config.stack`` names and its options (None: none)."""
    try:
        named = _named(config.stack)
    except VWUsage as e:  # (sl train's, the API's, a model's: not a VW command line's)
        raise UsageError(e.message) from None
    if named:
        if config.test_only and not getattr(named[0][0], "UNDER_TEST", True):
            return None  # (--confidence: VW sets nothing up to only predict)
        return named[0]
    if config.stack:
        raise UsageError(f"the reductions' options {' '.join(config.stack)!r} name no "
                         "reduction sl runs")  # fmt: skip
    return None


def fixed_words(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words of ``words`` a model fixes: those of the reductions a run may lay over a
    model trained without them (``WARM``: ``--bfgs``) left out."""
    for m in SINGLE_LINE.values():
        if getattr(m, "WARM", False):
            words = m.strip(words)
    return words


__all__ = ["REDUCTIONS", "SETTLE", "SINGLE_LINE", "TRAIN_OPTIONS", "VW_OPTIONS", "Multiline",
           "Reduction", "fixed_fields", "fixed_words", "reduction_of", "single_line",
           "train_defaults", "train_words"]
