"""The VW options of the reductions over K classes, ``--oaa``, ``--csoaa`` and
``--multilabel_oaa`` (also the label kinds), and what the single-line reductions of
:data:`streamlearn.reductions.SINGLE_LINE` share: their refusals over gd, their words read on a
VW line or in a configuration, and an entry that fills their kernels' parameters
(:class:`Filled`).  ``--autolink``, ``--bootstrap`` and ``--bfgs`` were here and have moved
into that shape (``autolink.py``, ``bootstrap.py``, ``bfgs.py``).

Their kernels are chosen by :data:`streamlearn.learners.REDUCTIONS` (one over the run's
base learner, from :class:`~streamlearn.config.TrainConfig`'s fields, which these options
fill); the single-line driver (``run/online.py``) runs whichever it is.  What VW's command
line says of them is here, as each multiline reduction's module says its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.vwoptions import Command, VWOption, count


def _classes(key: str, flag_name: str, what: str, also: str | None = None):  # noqa: ANN202
    """A count of classes or copies as the learning option ``key`` (and ``also`` set)."""

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
    # VW applies a link below --oaa: no effect (--multilabel_oaa's scorer does link each class)
    if t.learn.get("oaa") and t.link != "identity" and not t.learn.get("multilabel"):
        t.notes.append(f"--link {t.link}: a --oaa model predicts classes; the link changes "
                       "nothing (as in VW)")  # fmt: skip
        t.link = "identity"


STACKED = ("oaa", "multilabel", "csoaa")
"""The older single-line reductions (``TrainConfig`` fields) a reduction of
:data:`streamlearn.reductions.SINGLE_LINE` does not stack with."""


def refuse_over_gd(learn: dict, outputs: dict, flag: str, audit_why: str) -> None:
    """What a single-line reduction over gd (``--lrq``, ``--lrqfa``, ``--boosting``) does not
    run with, one line each: another reduction, ``--bfgs``, a learner other than gd, and
    ``--audit``/``--invert_hash`` (``audit_why``: what VW would name).  ``learn``: TrainConfig
    fields (those a VW command line gave, or a whole configuration's)."""
    for key in STACKED:
        if learn.get(key):
            raise VWUsage(f"{flag} with --{key.replace('_', '-')} is not supported by sl")
    if learn.get("algo", "gd") != "gd":
        raise VWUsage(f"{flag} runs over gd, not --{learn['algo']}")
    for key in ("audit", "invert_hash"):
        if outputs.get(key):
            raise VWUsage(f"--{key} with {flag} is not supported by sl ({audit_why})")


def checked(t: Command, read: Callable, refuse: Callable):  # noqa: ANN201 - the options read
    """A single-line reduction's words on a VW command line read (``read(words)``; its
    ``UsageError`` as VW's usage error, exit 2) and its refusals applied (``refuse(learn,
    outputs)``): its options."""
    try:
        opts = read(t.learn.get("stack", ()))
    except UsageError as e:
        raise VWUsage(e.message) from None
    refuse(t.learn, t.outputs)
    return opts


def configured(config, read: Callable, refuse: Callable):  # noqa: ANN001, ANN201
    """A single-line reduction's options in a configuration (``TrainConfig.stack``: ``sl
    train``'s, the API's, a model's) read and its refusals applied (``refuse(learn,
    outputs)`` on the configuration's fields), each as a ``UsageError``: its options."""
    try:
        opts = read(config.stack)
        refuse(config.to_dict(), {})
    except VWUsage as e:
        raise UsageError(e.message) from None
    return opts


class Filled:
    """A learner's kernels (``spec``'s train, fresh state and end of pass) run with a
    reduction's values in their slots of the run's parameters, which the configuration no
    longer fills (``--autolink``'s degree, ``--bootstrap``'s K and vote, ``--bfgs``'s
    memory, threshold, curvature and passes): the kernels and :mod:`learners.base
    <streamlearn.learners.base>` keep their signatures.  ``bounds``: the kernel writes 3
    values a row when asked (``--bootstrap``'s prediction and copies' range)."""

    wants_ns = False

    def __init__(self, spec, values: tuple[tuple[int, float], ...], bounds: bool = False):  # noqa: ANN001 - a LearnerSpec
        self.values = tuple((slot, float(value)) for slot, value in values)
        self.bounds = bounds
        self.kernel, self.fresh, self.end, self.base = (spec.train_batch, spec.init_gstate,
                                                        spec.finish, spec)  # fmt: skip

    def fill(self, params: np.ndarray) -> np.ndarray:
        for slot, value in self.values:
            params[slot] = value
        return params

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        self.kernel(table, gstate, self.fill(params), loss_id, indptr, indices, values, labels,
                    weights, bases, status, stats, rows, preds)  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        return self.fresh(self.fill(params.copy()))

    def finish(self, table: np.ndarray, gstate: np.ndarray, params: np.ndarray) -> None:
        self.end(table, gstate, self.fill(params))

    def spec(self, name: str | None = None):  # noqa: ANN201 - a LearnerSpec
        """The learner with these entries (named ``name`` in model files, else its own)."""
        return dataclasses.replace(
            self.base, name=name or self.base.name, train_batch=self,
            init_gstate=self.init_gstate, finish=self.finish if self.end is not None else None)
