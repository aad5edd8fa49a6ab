"""Stochastic variance-reduced gradient, VW's ``--svrg`` (``--stage_size s``): the base
learner that replaces gd, in the single-line reductions' shape
(:mod:`streamlearn.reductions.lrq` is the worked example).  :mod:`streamlearn.learners.svrg`
is the kernel and says how.

What it owns: its words in ``TrainConfig.stack`` (``("--svrg", "--stage_size", "2")``);
its VW options and their refusals (its update is its own: no adaptive, normalized or
invariant rule, no regularizer, no schedule); its learner (:func:`spec`: the entry keeps
the pass, VW's announcements of each pass on the run's console, and the stage's count);
its header.  Its VW model file is gd's with plain updates (the inner weights) and none of
gd's options (``learners/stacked.WITHOUT_GD``).
"""

from __future__ import annotations

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import WITHOUT_GD_DEFAULTS, configured, refuse_without_gd
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption, count

NAME = "svrg"
"""Its name in VW's ``Enabled learners`` line, where the base learner's would be."""
BASE = True
"""VW names it instead of gd (it is the learner, not a reduction over gd)."""


def read(words: tuple[str, ...]) -> int | None:
    """The stage size (passes of steps after each pass of the stable gradient) in a
    configuration's ``stack`` words; None when they name no ``--svrg``."""
    if "--svrg" not in words:
        return None
    if "--stage_size" not in words:
        return 1
    i = words.index("--stage_size")
    text = words[i + 1] if i + 1 < len(words) else ""
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"--stage_size {text}: a number of passes of at least 1")
    return int(text)


def _svrg(t: Command, name: str, value: str | None) -> None:  # noqa: ARG001
    t.learn["stack"] = (*t.learn.get("stack", ()), "--svrg")


def _stage(t: Command, name: str, value: str | None) -> None:
    s = count(name, value or "", "--stage_size", "a number of passes of at least 1")
    t.learn["stack"] = (*t.learn.get("stack", ()), "--stage_size", str(s))


VW_OPTIONS = {"svrg": VWOption(None, False, _svrg), "stage_size": VWOption(None, True, _stage)}
"""VW's options of the learner."""

TRAIN_OPTIONS = (
    TrainOption(("--svrg",), "svrg", "Stochastic variance-reduced gradient over passes "
                "(VW's --svrg): a pass sums the gradient at a stable point, the next "
                "--svrg-stage-size passes step from it."),
    TrainOption(("--svrg-stage-size",), "svrg_stage_size", "--svrg: the passes of steps "
                "after each pass of the stable gradient (VW's --stage_size) [default: 1].",
                kind="int", low=1, metavar="S"),
)  # fmt: skip
"""``sl train --svrg [--svrg-stage-size S]`` (with ``--passes``)."""

TRAIN_DEFAULTS = dict(WITHOUT_GD_DEFAULTS)
"""``sl train --svrg``: VW's svrg has no other update rule, and VW's rate 0.5 (gd's
plain rules would default to 10)."""


def train_words(values: dict) -> tuple[str, ...]:
    stage = values.get("svrg_stage_size")
    if stage is not None and not values.get("svrg"):
        raise UsageError("--svrg-stage-size is an option of --svrg")
    if not values.get("svrg"):
        return ()
    return ("--svrg", *(("--stage_size", str(stage)) if stage is not None else ()))


def settle(t: Command) -> None:
    """VW's set-up of ``--svrg`` with the rest of a command line: its refusals (one line,
    exit 2) and its update (none of gd's rules)."""
    stack = t.learn.get("stack", ())
    if "--svrg" not in stack:
        if "--stage_size" in stack:
            raise VWUsage("--stage_size is an option of --svrg")
        return
    refuse(t.learn, t.outputs)
    for key, value in TRAIN_DEFAULTS.items():  # (gd's rules off: refuse let none be on)
        t.learn.setdefault(key, value)
    # VW's holdout summary and early termination are gd's end of pass: without gd no pass
    # ends a run early, the last pass's model is kept, and the summary's loss is 0 h
    t.learn["early_terminate"] = t.learn.get("passes", 1) + 1


def refuse(learn: dict, outputs: dict) -> None:
    """What sl's ``--svrg`` does not run with, one line each."""
    refuse_without_gd(learn, outputs, "--svrg", "svrg", "starts from zero weights",
                      ("audit", "invert_hash", "readable_model"))


def header_lines(stage: int, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


class Entry:
    """The kernel entry of one run: the stage's state (VW's svrg keeps it per run, not in
    its model), the rate, and VW's line on the console when a pass first learns."""

    wants_ns = True

    def __init__(self, stage: int, eta: float) -> None:
        self.conf = np.array([0.0, -1.0, 0.0, float(stage)])
        self.eta = float(np.float32(eta))
        self.said = -1
        self.in_pass = 0.0  # (the drivers count a pass's examples from 0 at each pass)

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds, ns):  # fmt: skip
        from streamlearn.learners import svrg
        from streamlearn.learners.base import P_LEARN, S_PASS_N

        # a new pass: the driver counts its examples from 0 (a resident model, the API's and
        # the server's, is in one pass for good, as VW's Python package, whose passes never end)
        if stats[S_PASS_N] < self.in_pass:
            self.conf[0] += 1.0
        npass = int(self.conf[0])
        if params[P_LEARN] != 0.0 and self.said != npass and indptr.shape[0] > 1:
            self.said = npass
            self._announce(npass)
        if ns is None:  # (svmlight: no namespaces, nothing crossed)
            ns = np.empty(0, dtype=np.uint8)
        svrg.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                         weights, bases, status, stats, rows, preds, ns, self.conf, self.eta)
        self.in_pass = stats[S_PASS_N]

    def _announce(self, npass: int) -> None:
        """VW's lines as a pass first learns (its ``trace_message``: the console's stderr)."""
        from streamlearn.system import notices

        if npass % (int(self.conf[3]) + 1) == 0:
            notices.tell(f"svrg pass {npass}: committing stable point")
            notices.tell(f"svrg pass {npass}: computing exact gradient")
        else:
            notices.tell(f"svrg pass {npass}: taking steps")


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """SVRG with the run's stage size and rate."""
    import dataclasses

    from streamlearn.learners import svrg

    stage = configured(config, read, refuse)
    entry = Entry(stage, config.learning_rate)
    return dataclasses.replace(svrg.spec(), train_batch=entry)
