"""The reductions over K classes: ``--oaa``, ``--csoaa``, ``--multilabel_oaa``.

The other single-line reductions (:data:`streamlearn.reductions.SINGLE_LINE`) keep their
options as their own words (``TrainConfig.stack``), read by their modules only.  These three
are the classes' layout that layers below this package read: K (``TrainConfig.oaa``: each
feature's K slots, VW's feature width, in the slot names, the readable model, the audit) and
the label kind (``csoaa``, ``multilabel``: which of io's label readers a line goes through,
:meth:`~streamlearn.config.TrainConfig.namespaces`), as VW keeps its weights' stride in its
global state.  They stay fields of the configuration for that.  Here: VW's options and what
they mean together; their run-time part (VW's names of the reduction and its label and
prediction types, the table's columns, the predictions' width, ``--probabilities``/``--link``,
``sl train``'s header line) is :mod:`streamlearn.run.classes`, which every single-line run
reads without loading this package's registry.  Their kernels (:mod:`streamlearn.learners.oaa`,
:mod:`~streamlearn.learners.csoaa`, :mod:`~streamlearn.learners.multilabel`) are chosen by
:data:`streamlearn.learners.REDUCTIONS` from those fields.
"""

from __future__ import annotations

from streamlearn.errors import VWUsage
from streamlearn.reductions.vwoptions import Command, VWOption, count

FIELDS = ("oaa", "multilabel", "csoaa")
"""The configuration's fields these reductions fill (a reduction of
:data:`streamlearn.reductions.SINGLE_LINE` does not stack with them)."""


def _classes(key: str, flag_name: str, what: str, also: str | None = None):  # noqa: ANN202
    """A count of classes as the learning option ``key`` (and ``also`` set)."""

    def apply(t: Command, name: str, value: str) -> None:
        t.learn[key] = count(name, value, flag_name, what)
        if also is not None:
            t.learn[also] = True

    return apply


VW_OPTIONS = {
    "oaa": VWOption(None, True, _classes("oaa", "--oaa",
                                         "one-against-all needs at least one class")),
    "csoaa": VWOption(None, True, _classes(
        "oaa", "--csoaa", "cost-sensitive one-against-all needs at least one class", "csoaa")),
    "multilabel_oaa": VWOption(None, True, _classes(
        "oaa", "--multilabel_oaa", "at least one class is needed", "multilabel")),
}  # fmt: skip
"""The VW options they take (:mod:`streamlearn.reductions.vwoptions`)."""


def settle(t: Command) -> None:
    """What their options mean together, and with the run's outputs, as VW reads them."""
    if t.learn.get("multilabel") and t.link not in ("identity", "logistic"):
        raise VWUsage(f"--link {t.link}: --multilabel_oaa takes identity or logistic")
    if t.learn.get("multilabel") and t.probabilities:
        t.link = "logistic"  # (VW's multilabel_oaa sets it: its scorer's, its model's options)
    # VW applies a link below --oaa: no effect (--multilabel_oaa's scorer does link each class)
    if t.learn.get("oaa") and t.link != "identity" and not t.learn.get("multilabel"):
        t.notes.append(f"--link {t.link}: a --oaa model predicts classes; the link changes "
                       "nothing (as in VW)")  # fmt: skip
        t.link = "identity"
