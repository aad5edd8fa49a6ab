"""The reductions over K classes: ``--oaa``, ``--csoaa``, ``--multilabel_oaa``, ``--ect``.

The other single-line reductions (:data:`streamlearn.reductions.SINGLE_LINE`) keep their
options as their own words (``TrainConfig.stack``), read by their modules only.  These three
are the classes' layout that layers below this package read: K (``TrainConfig.oaa``: each
feature's K slots, VW's feature width, in the slot names, the readable model, the audit) and
the label kind (``csoaa``, ``multilabel``: which of io's label readers a line goes through;
``ect``, ``ect_errors``: the tournament's problems, the slots' width,
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
from streamlearn.reductions.vwoptions import Command, VWOption, count, integer

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


def _ect(t: Command, name: str, value: str) -> None:
    """``--ect K``: K classes, set as ``oaa`` by :func:`settle` (which refuses ``--oaa``)."""
    t.learn["ect"] = count(name, value, "--ect", "an error-correcting tournament needs at "
                           "least one class")  # fmt: skip


def _errors(t: Command, name: str, value: str) -> None:
    e = integer(name, value)
    if not 0 <= e < 1 << 31:
        raise VWUsage(f"--error {value}: the errors a tournament corrects, 0 or more")
    t.learn["ect_errors"] = e


VW_OPTIONS = {
    "oaa": VWOption(None, True, _classes("oaa", "--oaa",
                                         "one-against-all needs at least one class")),
    "csoaa": VWOption(None, True, _classes(
        "oaa", "--csoaa", "cost-sensitive one-against-all needs at least one class", "csoaa")),
    "multilabel_oaa": VWOption(None, True, _classes(
        "oaa", "--multilabel_oaa", "at least one class is needed", "multilabel")),
    "ect": VWOption(None, True, _ect),
    "error": VWOption(None, True, _errors),
}  # fmt: skip
"""The VW options they take (:mod:`streamlearn.reductions.vwoptions`)."""


def settle(t: Command) -> None:
    """What their options mean together, and with the run's outputs, as VW reads them."""
    _settle_ect(t)
    if t.learn.get("multilabel") and t.link not in ("identity", "logistic"):
        raise VWUsage(f"--link {t.link}: --multilabel_oaa takes identity or logistic")
    if t.learn.get("multilabel") and t.probabilities:
        t.link = "logistic"  # (VW's multilabel_oaa sets it: its scorer's, its model's options)
    # VW applies a link below --oaa: no effect (--multilabel_oaa's scorer does link each class)
    if t.learn.get("oaa") and t.link != "identity" and not t.learn.get("multilabel"):
        t.notes.append(f"--link {t.link}: a --oaa model predicts classes; the link changes "
                       "nothing (as in VW)")  # fmt: skip
        t.link = "identity"


def _settle_ect(t: Command) -> None:
    """``--ect K [--error E]``: the K classes (``oaa``) as a tournament (``ect``); what sl
    does not run with it, one line each.  ``--error`` alone does nothing, as in VW."""
    k = t.learn.pop("ect", None)
    if k is None:
        if t.learn.pop("ect_errors", None) is not None:
            t.notes.append("--error: an option of --ect, ignored (as VW ignores it)")
        return
    for key, flag in (("oaa", "--oaa, --csoaa or --multilabel_oaa"),
                      ("indexing", "--indexing"), ("named_labels", "--named_labels")):  # fmt: skip
        if t.learn.get(key) is not None:
            raise VWUsage(f"--ect with {flag} is not supported by sl")
    if k < 2:
        raise VWUsage(f"--ect {k} is not supported by sl (one class: VW predicts it and "
                      "learns nothing)")  # fmt: skip
    if t.learn.get("algo", "gd") != "gd":
        raise VWUsage(f"--ect runs over gd in sl, not --{t.learn['algo']}")
    if t.link != "identity":
        raise VWUsage(f"--ect with --link {t.link} is not supported by sl (VW's tournament "
                      "then splits at the link's middle)")  # fmt: skip
    for given, what in ((t.probabilities, "--probabilities"), (t.raw_predictions, "-r"),
                        (t.outputs.get("scores"), "--scores")):  # fmt: skip
        if given:
            raise VWUsage(f"--ect with {what} is not supported by sl (a tournament "
                          "predicts a class, not scores)")  # fmt: skip
    if t.outputs.get("audit"):
        raise VWUsage("--ect with --audit is not supported by sl (VW audits each problem "
                      "the tournament asks)")  # fmt: skip
    t.learn.update(oaa=k, ect=True)
