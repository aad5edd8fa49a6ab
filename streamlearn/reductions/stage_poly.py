"""VW's ``--stage_poly`` with ``--sched_exponent``, ``--batch_sz`` and
``--batch_sz_no_doubling`` (:mod:`streamlearn.learners.stage_poly` is its kernel), in the
single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the worked example).
Its options are its own words in ``TrainConfig.stack``; VW keeps ``--stage_poly`` with a
model and none of the others (a model is continued with their defaults unless the command
line gives them again, as VW's).  Its state (each slot's depth and bits) lives in gd's
global state, one entry per slot: the table's bits bound it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import (
    ignore_alone,
    over_gd,
    refuse_labels,
    refuse_over_gd,
    word,
)
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "stage_poly"
"""Its name in VW's ``Enabled learners`` line (just above gd)."""

NUMBERS = {"--sched_exponent": "1", "--batch_sz": "1000"}


@dataclass(frozen=True)
class Options:
    sched_exponent: float = 1.0
    batch_sz: int = 1000
    doubling: bool = True

    def conf(self, bits: int, passes: int) -> np.ndarray:
        """The kernel's options (:data:`streamlearn.learners.stage_poly.C_SLOTS` ...)."""
        return np.array([1 << bits, self.batch_sz, self.doubling,
                         float(np.float32(self.sched_exponent)), passes, 0, 0],
                        dtype=np.float64)  # fmt: skip


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--stage_poly``."""
    if "--stage_poly" not in words:
        return None
    values = dict(NUMBERS)
    it = iter(words)
    for w in it:
        if w in NUMBERS:
            values[w] = next(it, "")
    try:
        exponent = float(np.float32(values["--sched_exponent"]))
    except ValueError:
        raise UsageError(f"--sched_exponent {values['--sched_exponent']}: a number is "
                         "expected") from None  # fmt: skip
    text = values["--batch_sz"]
    if not text.isdigit() or int(text) >= 1 << 32:
        raise UsageError(f"--batch_sz {text}: a count below 2^32 is expected")
    return Options(exponent, int(text), "--batch_sz_no_doubling" not in words)


VW_OPTIONS = {
    "stage_poly": VWOption(None, False, word("stage_poly", False)),
    "sched_exponent": VWOption(None, True, word("sched_exponent", True)),
    "batch_sz": VWOption(None, True, word("batch_sz", True)),
    "batch_sz_no_doubling": VWOption(None, False, word("batch_sz_no_doubling", False)),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--stage_poly`` means with the rest of a VW command line (one line, exit 2):
    its other options alone are ignored, as VW ignores them."""
    if not ignore_alone(t, "--stage_poly", ("--batch_sz_no_doubling",), tuple(NUMBERS)):
        return
    try:
        read(t.learn["stack"])
    except UsageError as e:
        raise VWUsage(e.message) from None
    refuse(t.learn, t.outputs)


def refuse(learn: dict, outputs: dict) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals, crosses, and
    other labels."""
    refuse_over_gd(learn, outputs, "--stage_poly", "VW names the monomials by slot")
    for key in ("quadratic", "cubic", "interactions"):
        if learn.get(key):
            raise VWUsage("--stage_poly with -q, --cubic or --interactions is not supported "
                          "by sl (VW walks the line's crosses too, and counts only its own "
                          "features)")  # fmt: skip
    refuse_labels(learn, "--stage_poly")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


class Entry:
    """The kernel entry of one run: the options, VW's counters' start, the walk's scratch."""

    wants_ns = False

    def __init__(self, opts: Options, bits: int, passes: int) -> None:
        self.opts = opts
        self.bits = bits
        self.conf = opts.conf(bits, passes)
        self.started = False
        self.scratch: tuple = ()

    def end_pass(self) -> None:
        """A pass's end (the single-line driver's call): VW counts it as an example, and
        its ``end_pass`` may ask for new parents (``--batch_sz 0``)."""
        from streamlearn.learners import stage_poly as sp

        self.conf[sp.C_OFFSET] += 1
        self.conf[sp.C_ENDED] += 1

    def _room(self, need: int) -> tuple:
        if not self.scratch or need > self.scratch[0].shape[0]:
            size = min(max(need, 2 * (self.scratch[0].shape[0] if self.scratch else 0), 16),
                       (1 << self.bits) + 1)  # fmt: skip
            self.scratch = (np.empty(size, dtype=np.uint32), np.empty(size),
                            np.empty(size, dtype=np.float32), np.empty(size, dtype=np.uint64),
                            np.empty(size, dtype=np.int64))  # fmt: skip
        return self.scratch

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        from streamlearn.learners import stage_poly as sp

        if not self.started:  # (VW counts from 0 in each run, and keeps no counter)
            self.started = True
            self.conf[sp.C_OFFSET] -= int(stats[0])
            sp.restart(gstate, self.opts.batch_sz)
        n = indptr.shape[0] - 1
        start = 0
        widest = int(np.diff(indptr).max(initial=0))
        scratch = self._room(widest + 1)
        while start < n:
            start = int(sp.train_batch(table, gstate, params, loss_id, indptr, indices, values,
                                       labels, weights, bases, status, stats, rows, preds,
                                       self.conf, start, *scratch))  # fmt: skip
            if start < n:
                width = int(indptr[start + 1] - indptr[start])
                scratch = self._room(int(sp.room(width, gstate, self.conf, 1 << self.bits)))

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        from streamlearn.learners import stage_poly as sp
        from streamlearn.system.memory import refuse_above

        size = sp.state_size(self.bits)
        refuse_above(8 * size, f"--stage_poly's state ({size:,} numbers: an entry per slot)",
                     "lower -b")  # fmt: skip
        return sp.init_gstate(params, self.bits)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd over the monomials: the run's learner."""
    return over_gd(config, read, refuse, lambda o: Entry(o, config.bits, config.passes),
                   init_gstate="init_gstate")
