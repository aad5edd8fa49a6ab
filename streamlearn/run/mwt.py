"""``sl vw --multiworld_test NS``: VW's ``mwt.cc`` over the legacy cb driver
(:mod:`streamlearn.reductions.mwt` says what it computes).

:class:`Mwt` takes the place of :class:`~streamlearn.run.cblegacy.Legacy` in the multiline
driver's walk (``run/mlpasses.py``): the same batches (``--cb K``'s single lines, their
label entries), the same outputs (``-p``, VW's counts, the model's reductions' state).  The
policies' estimates are a short loop over an example's features of NS in Python (VW's
``value_policy``, one policy per slot, in the order met): an evaluation tool's speed, not
a learner's.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.errors import UsageError
from streamlearn.run.vwformat import general

F32 = np.float32


class Mwt:
    """The policies' running costs."""

    def __init__(self, ml, cfg, table: np.ndarray, gstate: np.ndarray,  # noqa: ANN001
                 counter=None, vw_log: bool = False) -> None:  # noqa: ANN001  # fmt: skip
        """``counter``: a model's state continued (:func:`read_section`'s), or None
        (interactions and namespace filters are refused with the options,
        :func:`streamlearn.reductions.mwt.settle`)."""
        self.ml = ml
        self.evaluated = np.zeros(256, dtype=np.bool_)
        for ch in ml.mwt.encode("latin-1", "replace"):
            self.evaluated[ch] = True
        self.gstate = gstate
        self.total = 0.0
        self.policies: list[int] = []
        """Each policy's slot, in the order met (VW's ``policies``)."""
        self.at: dict[int, int] = {}
        self.cost: list[float] = []
        self.action: list[int] = []
        self.raw_lines: list[str] = []
        self.resume(counter)

    def closing_lines(self) -> list[str]:
        return []

    def saved(self) -> tuple[int | None, int]:
        return None, 0

    def resume(self, state) -> None:  # noqa: ANN001 - read_section's, or None
        """A model's evaluation continued (``-i``): its count, policies and costs."""
        if state is None:
            return
        self.total, self.policies, self.cost, self.action = state
        self.at = {key: p for p, key in enumerate(self.policies)}

    def vw_section(self) -> bytes:
        """mwt's part of VW's model file (its ``save_load``, above the learner's): the
        example count (double), the policies (a count, then each slot as uint64), then
        each policy's cost (double), action (uint32) and seen flag (a byte)."""
        import struct

        out = struct.pack("<dQ", self.total, len(self.policies))
        out += b"".join(struct.pack("<Q", key) for key in self.policies)
        for p in range(len(self.policies)):
            out += struct.pack("<dIB", self.cost[p], self.action[p], 1)
        return out

    def batch(self, part, ho: np.ndarray, params: np.ndarray, loss_id: int, stats: np.ndarray,
              npass: int, progress, pred_lines, raw: bool) -> None:  # noqa: ANN001  # fmt: skip
        if raw:
            raise UsageError("-r with --multiworld_test: not supported yet")
        from streamlearn.learners import cb_adf
        from streamlearn.learners.base import G_N

        mg, en = part.mg, part.legacy
        m = mg.act_ptr.shape[0] - 1
        observed = [self._observed(en, e) for e in range(m)]
        averages = [self._evaluate(mg, e, observed[e]) for e in range(m)]
        # VW's shared data: every example counted, an observed one labeled, its loss 0
        # (nothing learns); its t one per example: sl's G_N the labeled ones (the model
        # writer adds the unlabeled weight, run/mlmodel.py)
        labeled = np.array([o is not None for o in observed], dtype=np.bool_)
        stats[cb_adf.N_EX] += m
        stats[cb_adf.FEATURES] += float(mg.indptr[-1] - mg.indptr[0])
        stats[cb_adf.N_LAB] += float(labeled.sum())
        self.gstate[G_N] += float(labeled.sum())
        if progress is not None:
            self._progress(progress, npass, part, ho, labeled)
        if pred_lines is not None:
            for e in range(m):
                tag = part.tags[e]
                t = (" " + tag.decode("utf-8", "replace")) if tag else ""
                pred_lines.append(" ".join(averages[e]) + t + "\n")

    @staticmethod
    def _observed(en, e: int) -> tuple[int, float, float] | None:  # noqa: ANN001
        """VW's ``get_observed_cost_cb``: the first entry with a cost and a probability."""
        for q in range(int(en.ptr[e]), int(en.ptr[e + 1])):
            if en.cost[q] == en.cost[q] and en.prob[q] > 0:
                return int(en.cls[q]), float(en.cost[q]), float(en.prob[q])
        return None

    def _evaluate(self, mg, e: int, obs) -> list[str]:  # noqa: ANN001
        """VW's ``predict_or_learn``: an observed example's policies valued and counted; each
        policy's average cost so far (``-p``'s cells)."""
        if obs is not None:
            self.total += 1.0
            lo, hi = int(mg.indptr[e]), int(mg.indptr[e + 1])
            for t in range(lo, hi):
                if not self.evaluated[int(mg.ns[t])]:
                    continue
                key = int(mg.indices[t])
                p = self.at.get(key)
                if p is None:
                    p = self.at[key] = len(self.policies)
                    self.policies.append(key)
                    self.cost.append(0.0)
                    self.action.append(0)
                self.action[p] = _action(float(mg.values[t]))
            a, c, pr = obs
            estimate = float(F32(F32(c) / F32(pr)))
            for p in range(len(self.policies)):
                if self.action[p] == a:
                    self.cost[p] += estimate
                self.action[p] = 0
        total = F32(self.total)
        with np.errstate(divide="ignore", invalid="ignore"):
            return [general(F32(F32(c) / total)) for c in self.cost]

    def _progress(self, progress, npass: int, part, ho, labeled: np.ndarray) -> None:  # noqa: ANN001
        """VW's counts, and no table line (VW's ``print_update`` writes mwt's only when it
        learns): the head alone."""
        from streamlearn.run.mlconsole import TABLE_HEAD

        if not progress.started:
            if not progress.quiet:
                progress.say(TABLE_HEAD)
            progress.started = True
        quiet = progress.quiet
        progress.quiet = True
        try:
            progress.batch(npass, labeled, ho, np.zeros(labeled.shape[0]), part.feat_row,
                           part.feat_total, str, str)  # fmt: skip
        finally:
            progress.quiet = quiet


def _action(v: float) -> int:
    """A policy's action: the feature's value as VW's uint32 (VW logs an error for one that
    is negative or not whole, and goes on)."""
    return int(v) & 0xFFFFFFFF if math.isfinite(v) else 0


def read_section(data: bytes, pos: int) -> tuple[tuple, int]:
    """mwt's part of VW's model file at ``pos`` (:meth:`Mwt.vw_section`'s layout): (count,
    policies, costs, actions) and where the learner's part starts; ValueError when it is
    cut short or says more policies than the file could hold."""
    import struct

    if pos + 16 > len(data):
        raise ValueError("it ends inside --multiworld_test's state (truncated)")
    total, n = struct.unpack_from("<dQ", data, pos)
    pos += 16
    if n > (len(data) - pos) // 21:  # (8 bytes a policy, then 13 of its state)
        raise ValueError(f"its --multiworld_test state names {n} policies (truncated or corrupt)")
    policies = list(struct.unpack_from(f"<{n}Q", data, pos))
    pos += 8 * n
    cost, action = [], []
    for _ in range(n):
        c, a, _seen = struct.unpack_from("<dIB", data, pos)
        cost.append(c)
        action.append(a)
        pos += 13
    if not (math.isfinite(total) and all(math.isfinite(c) for c in cost)):
        raise ValueError("its --multiworld_test state is not finite (corrupt)")
    return (total, policies, cost, action), pos
