"""What the single-line reductions of :data:`streamlearn.reductions.SINGLE_LINE` share: their
refusals over gd, their words read on a VW line or in a configuration, and an entry that
fills their kernels' parameters (:class:`Filled`).  The reductions over K classes, which
were here too, are :mod:`streamlearn.reductions.classes`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.classes import FIELDS
from streamlearn.reductions.vwoptions import Command


def refuse_over_gd(learn: dict, outputs: dict, flag: str, audit_why: str,
                   allowed: tuple[str, ...] = ()) -> None:  # fmt: skip
    """What a single-line reduction over gd (``--lrq``, ``--lrqfa``, ``--boosting``) does not
    run with, one line each: another reduction, ``--bfgs``, a learner other than gd, and
    ``--audit``/``--invert_hash`` (``audit_why``: what VW would name).  ``learn``: TrainConfig
    fields (those a VW command line gave, or a whole configuration's); ``allowed``: the
    reductions' fields it runs above (``--replay_c``: ``csoaa``)."""
    for key in FIELDS:
        if learn.get(key) and key not in allowed:
            raise VWUsage(f"{flag} with --{key.replace('_', '-')} is not supported by sl")
    if learn.get("algo", "gd") != "gd":
        raise VWUsage(f"{flag} runs over gd, not --{learn['algo']}")
    for key in ("audit", "invert_hash"):
        if outputs.get(key):
            raise VWUsage(f"--{key} with {flag} is not supported by sl ({audit_why})")


WITHOUT_GD_DEFAULTS = {"adaptive": False, "normalized": False, "invariant": False,
                       "learning_rate": 0.5, "initial_t": 0.0}
"""What a base learner in gd's place (``--svrg``, ``--OjaNewton``) runs with unless told: none
of gd's update rules, and VW's rate 0.5 and t0 0 (gd's plain rules would default to 10)."""


def refuse_without_gd(learn: dict, outputs: dict, flag: str, name: str, start: str,
                      outputs_refused: tuple[str, ...]) -> None:  # fmt: skip
    """What a base learner in gd's place does not run with, one line each: another learner
    or reduction, gd's update rules and regularizers, ``--minibatch``, initial weights
    (``start``: what it starts from instead), and the outputs ``outputs_refused``.  ``flag``
    is sl vw's option, ``name`` VW's learner."""
    if any(learn.get(k) for k in FIELDS) or learn.get("algo", "gd") != "gd":
        raise VWUsage(f"{flag} runs alone (VW's {name} is a base learner): not with another "
                      "learner or reduction")  # fmt: skip
    for rule in ("adaptive", "normalized", "invariant"):
        if learn.get(rule):
            raise VWUsage(f"--{rule} is gd's update rule: {flag} has its own (VW runs it "
                          "without gd)")  # fmt: skip
    for key in ("l1", "l2"):
        if learn.get(key):
            raise VWUsage(f"--{key} is gd's: {flag} has no regularizer (VW ignores it)")
    if learn.get("minibatch", 1) > 1:
        raise VWUsage(f"{flag} learns one example at a time: not with --minibatch")
    if learn.get("initial_weights", "zero") != "zero" or learn.get("initial_weight"):
        raise VWUsage(f"{flag} {start} in sl: not --random_weights or --initial_weight")
    for key in outputs_refused:
        if outputs.get(key):
            raise VWUsage(f"--{key} with {flag} is not supported by sl")


def word(name: str, value: bool):  # noqa: ANN201 - an Apply
    """A VW option kept as its words in ``TrainConfig.stack`` (``--name`` and, when it takes
    one, its value): the single-line reductions' options, which their modules read."""

    def apply(t: Command, _: str, v: str | None) -> None:
        t.learn["stack"] = (*t.learn.get("stack", ()), f"--{name}", *((v,) if value else ()))

    return apply


def ignore_alone(t: Command, flag: str, flags: tuple[str, ...], numbers: tuple[str, ...]) -> bool:
    """Whether ``flag`` (``--stage_poly``) is among a VW command line's reduction words; when
    it is not, its options (``flags`` alone, ``numbers`` with a value) are dropped with a note
    (VW ignores them too)."""
    words = t.learn.get("stack", ())
    if flag in words:
        return True
    mine = [w for w in words if w in flags or w in numbers]
    if mine:
        t.notes.append(f"{' '.join(mine)}: options of {flag}, ignored")
        kept: list[str] = []
        it = iter(words)
        for w in it:
            if w in numbers:
                next(it, None)
            elif w not in flags:
                kept.append(w)
        t.learn["stack"] = tuple(kept)
    return False


def tree_over_classes(t: Command, flag: str, read: Callable, refuse: Callable,  # noqa: ANN201
                      fixed: Callable | None = None, models: bool = True):  # fmt: skip
    """A tree over classes in ``--oaa``'s place (``--log_multi``, ``--recall_tree``, ``--emt``,
    ``--memory_tree``) on a VW command line: its words read (``read``; VW's usage error for
    bad ones), refused beside another reduction over classes, the class settings made
    (``fixed(words)``, the module's ``FIXED``; by default K as ``--oaa``'s),
    ``refuse(learn, outputs)`` applied (``-i`` among the outputs when the tree has no
    ``models`` yet), ``-r`` and ``--probabilities`` refused (a tree predicts a class): its
    options."""
    try:
        opts = read(t.learn.get("stack", ()))
    except UsageError as e:
        raise VWUsage(e.message) from None
    if opts is None or any(t.learn.get(k) for k in ("oaa", "csoaa", "multilabel", "ect")):
        raise VWUsage(f"{flag} with --oaa, --csoaa or another reduction over classes is not "
                      "supported by sl")  # fmt: skip
    t.learn.update(fixed(t.learn.get("stack", ())) if fixed is not None else {"oaa": opts.k})
    initial = {} if models or "initial_model" not in t.inputs else \
        {"initial_model": t.inputs["initial_model"]}  # fmt: skip
    refuse(t.learn, {**t.outputs, **initial})
    if t.probabilities or t.raw_predictions:
        raise VWUsage(f"{flag} with --probabilities or -r is not supported by sl (its tree "
                      "predicts a class)")  # fmt: skip
    return opts


def refuse_labels(learn: dict, flag: str) -> None:
    """Refuse (one line) a single-line reduction that reads simple labels under the
    reductions over K classes."""
    for key in ("oaa", "csoaa", "multilabel"):
        if learn.get(key):
            raise VWUsage(f"{flag} with --{key} is not supported by sl (VW's {flag[2:]} reads "
                          "simple labels)")  # fmt: skip


def over_gd(config, read: Callable, refuse: Callable, entry: Callable,  # noqa: ANN001, ANN201
            name: str | None = None, **spec):  # fmt: skip
    """The learner of a single-line reduction over gd whose options ``config.stack`` holds:
    gd's table, state and name (or ``name``) with ``entry(options)`` as its kernel entry
    (and ``spec``'s other fields; a string names the entry's attribute: ``init_gstate``);
    ``read``'s and ``refuse``'s refusals as ``UsageError`` (:func:`configured`: ``sl
    train``'s, the API's, a model's: not a VW command line's)."""
    from streamlearn.learners import gd

    made = entry(configured(config, read, refuse))
    fields = {k: (getattr(made, v) if isinstance(v, str) else v) for k, v in spec.items()}
    if name is not None:
        fields["name"] = name
    return dataclasses.replace(gd.SPEC, train_batch=made, **fields)


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
