"""The reductions: one module each, and the one table that names them.

A multiline reduction owns its options (its ``OPTIONS``: its fields of :data:`Multiline`,
the record assembled here from every registered reduction's), its VW options (its
``VW_OPTIONS`` and ``settle``, gathered in :data:`VW_OPTIONS` and :data:`SETTLE`), its label
kind, its learner (the kernel entry for one batch of examples, its state over a run), its
outputs (``-p``, the progress table, VW's header lines) and its part of VW's model options;
:mod:`streamlearn.reductions.base` says the shape, ``csoaa_ldf.py`` is the worked example.
:data:`REDUCTIONS` is the registry that the drivers (``run/multiline.py`` for ``sl vw``;
``run/bandit.py`` for the API and the server), VW's header (``run/mlconsole.py``) and VW's
model files (``run/mlmodel.py``) consult; :data:`VW_OPTIONS` the one VW's command lines are
read with (:mod:`streamlearn.vwargs`).  Adding a reduction is a module here and its line
in :mod:`~streamlearn.reductions.table` (a multiline one, or the order its ``settle``
runs and, for a single-line one, its options' names) and
:mod:`~streamlearn.reductions.registry`: their names are read from here, and imported on
first use (every reduction's module: ~45 ms of start-up that a VW command line of options
every run has does not pay; a line of other options reads the table, which imports the
single-line reductions' modules only for their own options).  The single-line reductions
in the same shape are :data:`SINGLE_LINE` (``lrq.py``, the worked example: its options are its
own words in ``TrainConfig.stack``, read by the module);
the reductions over K classes (``--oaa``, ``--csoaa``, ``--multilabel_oaa``) are
:mod:`~streamlearn.reductions.classes`: the classes' layout stays ``TrainConfig``'s fields,
which layers below read, and their kernels are chosen by :data:`streamlearn.learners.REDUCTIONS`.

A reduction's module is read before any kernel is chosen (a command line is read with it,
and a tiny input then runs without numba, a larger one with the kernels shipped compiled):
it imports its kernels, io's parsers and the config when it learns, not at the top
(``tests/reductions/test_vw_options.py`` checks that reading any command line loads no
kernel).  The kernels stay in :mod:`streamlearn.learners` (their numba caches are keyed by
their files).  Layer: above ``model``/``config``/``io``/``learners``, below ``run``.
"""

from __future__ import annotations

from importlib import import_module

_REGISTRY = ("REDUCTIONS", "SETTLE", "SINGLE_LINE", "TRAIN_OPTIONS", "VW_OPTIONS", "Multiline",
             "Reduction", "fixed_fields", "fixed_words", "reduction_of", "single_line",
             "train_defaults", "train_words")


_TABLE = ("REDUCTIONS", "Multiline", "Reduction", "reduction_of")
"""The registry's names that :mod:`streamlearn.reductions.table` has (the multiline
reductions), which does not import the single-line reductions' modules."""


def __getattr__(name: str):  # noqa: ANN202 - the registry's names, read on first use
    """The registry's names (:mod:`streamlearn.reductions.registry`), imported when first
    read: a plain VW command line reads none (PEP 562; any other name is a submodule)."""
    if name in _TABLE:
        return getattr(import_module("streamlearn.reductions.table"), name)
    if name in _REGISTRY:
        return getattr(import_module("streamlearn.reductions.registry"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_REGISTRY)
