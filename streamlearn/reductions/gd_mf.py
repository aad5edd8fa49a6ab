"""Matrix factorization, VW's ``--rank k`` (``gd_mf``): the base learner that factors each
``-q`` pair into rank-k latent weights, in the single-line reductions' shape
(:mod:`streamlearn.reductions.lrq` is the worked example).  :mod:`streamlearn.learners.gd_mf`
is the kernel and says how; VW's model file of it is :func:`streamlearn.learners.gd_mf`'s
``vw_model``/``read_vw_model`` (every row, VW's layout).

What it owns: its words in ``TrainConfig.stack`` (``("--rank", "10")``); its VW options
and their defaults (VW's rate 10 and initial t 1 unless given; plain updates, no adaptive
or normalized ones); its learner (:func:`spec`: the table of 2k + 1 weights a row and the
row's mark, an entry that asks for the batch's namespace bytes); its header.  The pairs
are the run's ``-q``: the parser makes no crosses for it (``TrainConfig.namespaces``), the
kernel multiplies the latent sums.
"""

from __future__ import annotations

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.classes import FIELDS
from streamlearn.reductions.singleline import configured
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption, count
from streamlearn.system.libm import powf

NAME = "rank"
"""Its name in VW's ``Enabled learners`` line, where the base learner's would be."""
BASE = True
"""VW names it instead of gd (it is the learner, not a reduction over gd)."""
MOST = 255
"""The largest rank sl runs (2k + 2 floats a row)."""


def read(words: tuple[str, ...]) -> int | None:
    """The rank in a configuration's ``stack`` words; None when they name no ``--rank``."""
    if "--rank" not in words:
        return None
    i = words.index("--rank")
    text = words[i + 1] if i + 1 < len(words) else ""
    if not text.isdigit() or not 1 <= int(text) <= MOST:
        raise UsageError(f"--rank {text}: a rank of 1 to {MOST}")
    return int(text)


def _rank(t: Command, name: str, value: str | None) -> None:
    k = count(name, value or "", "--rank", "the rank of the factorization is at least 1")
    t.learn["stack"] = (*t.learn.get("stack", ()), "--rank", str(k))


VW_OPTIONS = {"rank": VWOption(None, True, _rank)}
"""VW's option of the learner."""

TRAIN_OPTIONS = (
    TrainOption(("--rank",), "rank", "Matrix factorization of the -q pairs, rank K (VW's "
                "--rank: latent weights learned by plain gradient descent, rate 10 unless "
                "given).", kind="int", low=1, high=MOST, metavar="K"),
)  # fmt: skip
"""``sl train --rank K`` (with ``-q``)."""


TRAIN_DEFAULTS = {"adaptive": False, "normalized": False, "invariant": False}
"""``sl train --rank``: plain updates (VW's gd_mf has no other), so that the rate's and the
initial t's defaults are VW's (10 and 1)."""


def train_words(values: dict) -> tuple[str, ...]:
    return ("--rank", str(values["rank"])) if values.get("rank") else ()


def settle(t: Command) -> None:
    """VW's set-up of ``--rank`` with the rest of a command line: its refusals (one line,
    exit 2) and its defaults (plain updates; the rate's and the initial t's)."""
    if "--rank" not in t.learn.get("stack", ()):
        return
    for rule in ("adaptive", "normalized"):
        if t.learn.get(rule):
            raise VWUsage(f"{rule} is not implemented for matrix factorization (as VW)")
    refuse(t.learn, t.outputs)
    for rule in ("adaptive", "normalized", "invariant"):
        t.learn[rule] = False
    t.learn.setdefault("initial_t", 1.0)


def refuse(learn: dict, outputs: dict) -> None:
    """What sl's ``--rank`` does not run with, one line each."""
    if learn.get("adaptive") or learn.get("normalized"):
        raise VWUsage("--rank learns with plain updates: not --adaptive or --normalized (VW: "
                      "not implemented for matrix factorization)")  # fmt: skip
    if any(learn.get(k) for k in FIELDS) or learn.get("algo", "gd") != "gd":
        raise VWUsage("--rank runs alone (VW's gd_mf is a base learner): not with another "
                      "learner or reduction")  # fmt: skip
    if learn.get("minibatch", 1) > 1:
        raise VWUsage("--rank learns one example at a time: not with --minibatch")
    if learn.get("cubic") or learn.get("interactions"):
        raise VWUsage("--rank factors pairs only: -q, not --cubic or --interactions (as VW: "
                      "'can only use pairs in matrix factorization')")  # fmt: skip
    for pair in learn.get("quadratic", ()):
        if len(pair) != 2 or ":" in pair:
            raise VWUsage(f"-q {pair}: --rank takes pairs of two namespaces, no wildcard")
    for key in ("invert_hash", "readable_model"):
        if outputs.get(key):
            raise VWUsage(f"--{key} with --rank is not supported by sl (VW's readable model "
                          "of it prints memory addresses)")  # fmt: skip
    if learn.get("initial_weights", "zero") != "zero" or learn.get("initial_weight"):
        raise VWUsage("--rank draws its own initial weights (as VW)")


def header_lines(rank: int, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


def pairs_of(config) -> np.ndarray:  # noqa: ANN001 - a TrainConfig
    """int64[p, 2]: the namespace bytes of the run's ``-q`` pairs in VW's order: sorted, then
    each unordered pair once (the first), unless ``--leave_duplicate_interactions``."""
    seen: list[tuple[int, int]] = []
    for key in sorted((ord(q[0]), ord(q[1])) for q in config.quadratic):
        if config.leave_duplicate_interactions or not any(
                sorted(key) == sorted(k) for k in seen):  # fmt: skip
            seen.append(key)
    return np.array(seen, dtype=np.int64).reshape(-1, 2)


class Entry:
    """The kernel entry of one run: the pairs, the initial t and VW's stride shift."""

    wants_ns = True

    def __init__(self, pairs: np.ndarray, t0: float, stride_shift: int) -> None:
        self.pairs = pairs
        self.t0 = float(np.float32(t0))
        self.ss = stride_shift

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds, ns):  # fmt: skip
        from streamlearn.learners import gd_mf
        from streamlearn.learners.base import P_ETA0, P_POWER_T

        if ns is None:  # (svmlight: every feature in the default namespace)
            ns = np.full(indices.shape[0], 32, dtype=np.uint8)
        f32 = np.float32
        # VW's rate at set-up: η·t0^p (float32), then --decay_learning_rate's passes
        eta = f32(f32(params[P_ETA0]) * powf(self.t0, params[P_POWER_T]))
        conf = np.array([self.t0, float(eta)])
        gd_mf.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                          weights, bases, status, stats, rows, preds, ns, self.pairs, conf,
                          self.ss)  # fmt: skip


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """The factorization of rank k over the run's ``-q`` pairs."""
    import dataclasses

    from streamlearn.learners import gd_mf

    rank = configured(config, read, refuse)
    t0 = config.initial_t if config.initial_t is not None else 1.0
    entry = Entry(pairs_of(config), t0, gd_mf.stride_shift(rank))
    return dataclasses.replace(gd_mf.spec(rank), train_batch=entry)
