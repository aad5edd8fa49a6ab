"""The shape every multiline reduction has, and what passes between it and a driver.

A reduction is one module (``reductions/csoaa_ldf.py`` is the worked example) that owns:

* its **options**: ``OPTIONS``, its fields of the stack's record
  (:class:`streamlearn.reductions.Multiline`, assembled from every registered reduction's);
* its **label kind**: which label reader its rows go through (:mod:`streamlearn.io.labels`),
  and whether each example's logged action is read (``cb``);
* its **learner**: a class made once per run from the run's options, whose
  :meth:`Learner.learn` is the kernel entry for one :class:`~streamlearn.io.examples.Part`
  (score every example with the weights before it, then learn the labeled ones) and
  returns what was :class:`Seen`;
* its **outputs**: :meth:`Learner.write` (``-p``, VW's lines or sl's), :meth:`Learner.progress`
  (the figures of VW's progress table), and :func:`stack` (VW's header lines: the
  reductions enabled, the label and prediction types);
* its **part of the model file**: :func:`vw_words`, the options VW keeps with its model.

Each module ends with its :class:`Reduction` record; :data:`streamlearn.reductions.REDUCTIONS`
is the table the drivers (``run/multiline.py``: ``sl vw``; ``run/bandit.py``: the API, the
server) and the model writers consult, so a driver never branches on the reduction.

The learning state a learner works on is the run's (:class:`Weights`): the drivers own
it, a learner only reads and updates its arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from streamlearn.io.examples import Part


@dataclass
class Seen:
    """What one batch of examples gave (before each was learned)."""

    part: Part
    actions: np.ndarray | None = None  # explore: the pmf's actions, per action line
    probs: np.ndarray | None = None  # explore: their probabilities
    scores: np.ndarray | None = None  # cb_adf/csoaa_ldf: each line's score
    order: np.ndarray | None = None  # per example, its actions sorted by (score, action)
    pred: np.ndarray | None = None  # csoaa_ldf: each example's predicted class
    loss: np.ndarray | None = None  # cb_adf: each example's progressive loss
    text: list[str] | None = None  # -p lines a learner wrote as it learned (--probabilities)


class Weights(Protocol):
    """A multiline run's learning state (``run/multiline.py``'s run, ``run/bandit.Bandit``)."""

    table: np.ndarray  # gd's table (VW's layout), float32
    tables: np.ndarray  # its views per model (learners.cb_adf.tables_of)
    gstate: np.ndarray
    params: np.ndarray
    loss_id: int
    cb_type: int
    step: int  # weights per action below (2 for dr's regressor, else 1)
    stats: np.ndarray  # learners.cb_adf's counters
    dr_prev: np.ndarray  # dr's scratch, one entry per action (grown by :func:`room`)


class Learner(Protocol):
    """A reduction's run-time part (see the module docstring)."""

    def learn(self, w: Weights, part: Part, ho: np.ndarray) -> Seen: ...

    def write(self, seen: Seen, out: list[str], vw: bool = True) -> None: ...

    def progress(self, table, npass: int, seen: Seen, ho: np.ndarray) -> None: ...  # noqa: ANN001


def merged(ml) -> str:  # noqa: ANN001, ARG001 - a Multiline
    """VW's summary counts an example's features merged (shared and action lines)."""
    from streamlearn.io.examples import FEATURES_MERGED

    return FEATURES_MERGED


@dataclass(frozen=True)
class Reduction:
    """One entry of the registry: a reduction's name and its parts."""

    name: str  # reductions.Multiline.reduction (VW's option without its dashes)
    label: str  # "cb", "cs" or "none" (LDA's): the label reader its rows go through
    cb: bool  # each example's logged action is read (contextual bandits)
    learner: Callable[..., Learner]  # (ml, cfg, **its run options) -> its Learner
    stack: Callable[..., tuple[str, str, str]]  # (ml, base) -> VW's header lines
    vw_words: Callable[..., list[str]]  # (ml) -> the options VW keeps with its model
    features: Callable[..., str] = merged
    """(ml) -> how VW's summary counts an example's features (io.examples.FEATURES_*)."""
    options: tuple = ()
    """Its fields of the stack's options record, (name, type, default) each
    (:func:`streamlearn.reductions.options.assemble`)."""
    batched: bool = True
    """Its examples run through :attr:`learner`, a batch at a time: ``sl vw``'s passes, the
    server, the API.  False: ``sl vw``'s passes only, which play them in a loop of their
    own (CCB's and slates' slots, ``run/ccb.py``); the server and the API refuse it."""
    served: bool = True
    """``sl vw --daemon``, ``sl serve`` and the API run its examples one at a time (the
    search: not yet, refused in one line)."""
    wants: bool = False
    """Its learner is made with what the run shows (``run.mlpasses.Wants``): the search
    runs its test pass only when something shows it, as VW's."""

    def check_served(self) -> None:
        """Refuse (one line) serving a model of a reduction whose examples only ``sl vw``'s
        passes run (:attr:`served` False), or the API's calls on it."""
        if not self.served:
            from streamlearn.errors import UsageError

            raise UsageError(f"--{self.name}: only sl vw's passes run its examples; serving "
                             f"a --{self.name} model, or the API's calls on it: not yet")

    @property
    def label_kind(self) -> int:
        """``io.labels.LABEL_*`` of :attr:`label` (io's kernels imported only now: a
        reduction's module is read before any kernel is chosen, see the package)."""
        from streamlearn.io import labels

        return {"cb": labels.LABEL_CB, "cs": labels.LABEL_CS,
                "none": labels.LABEL_SIMPLE}[self.label]  # fmt: skip


def room(w: Weights, act_ptr: np.ndarray) -> None:
    """Grow ``w.dr_prev`` to the largest example's actions (and one)."""
    if act_ptr.shape[0] == 2:  # (one example: the resident learner's call)
        need = int(act_ptr[1] - act_ptr[0]) + 1
    else:
        need = int(np.diff(act_ptr).max()) + 1
    if need > w.dr_prev.shape[0]:
        w.dr_prev = np.concatenate([w.dr_prev, np.zeros(need - w.dr_prev.shape[0])])


def scratch(part: Part) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: a score and a place in its example's order (zeros), and its weight window
    (``part.sub``, 0 but under ``--cb K``)."""
    rows = part.mg.row.shape[0]
    sub = part.sub if part.sub is not None else np.zeros(rows, dtype=np.int64)
    return np.zeros(rows, dtype=np.float32), np.zeros(rows, dtype=np.int64), sub
