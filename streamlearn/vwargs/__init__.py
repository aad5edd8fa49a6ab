"""A VW command line, read into the library's terms (what ``sl vw`` runs).

:mod:`~streamlearn.vwargs.options`: VW's options sl takes (the table: those every run
has, and each reduction's, declared by its module in :mod:`streamlearn.reductions`), those
it refuses, and the :class:`~streamlearn.vwargs.options.Translation` they fill.
:mod:`~streamlearn.vwargs.argv`: reading a whole line with VW's grammar, the options a VW
model keeps (``-i``), and what the options mean together.  The CLI (``sl vw``, ``sl serve``)
runs what is read here; the library may read VW's command lines too (nothing imports the
CLI).  Layer: above ``run`` (a VW model's kept options are read with ``run.mlmodel``),
below ``distributed``.
"""

from __future__ import annotations

from streamlearn.vwargs.argv import model_argv, model_translation, parse_argv, resolve
from streamlearn.vwargs.options import NOT_SUPPORTED, OTHER_VW_OPTIONS, Translation


def __getattr__(name: str):  # noqa: ANN202 - OPTIONS: every reduction's module (PEP 562)
    if name == "OPTIONS":
        from streamlearn.vwargs import options

        return options.OPTIONS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["NOT_SUPPORTED", "OPTIONS", "OTHER_VW_OPTIONS", "Translation", "model_argv",
           "model_translation", "parse_argv", "resolve"]
