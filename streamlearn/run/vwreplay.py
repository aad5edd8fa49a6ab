"""``sl vw --replay_b N``: VW's experience replay over gd, example by example.

For each example VW's replay reduction (just above gd, below the scorer) is handed:

1. the example is predicted with the weights as they stand (the table's prediction and
   ``-p``) and counted, but with the loss of a prediction of 0 (gd never learns it, and
   gd's learning is what computes an example's loss in VW); under ``-t`` nothing is
   replayed and the example is counted as every example is;
2. ``--replay_b_count`` - 1 times, a slot drawn from VW's generator (``N`` times a draw,
   rounded down) and the example it holds, if any, learned;
3. one more slot drawn: the example it holds, if any, learned, and the new example put in
   its place (an example of weight 0 is not kept);

and each pass ends by learning what the slots hold, in their order, and emptying them.  An
example learned from a slot changes the weights, not the run's counts; gd's ``t`` grows
with the example handed in (VW counts it when it is finished), and its label widens the
prediction range once it is predicted (VW's ``count_label`` above the replay learns it
after VW predicts it: the replay does not return a prediction from learning).
The kernel is called twice per example (its prediction, uncounted; its count, as an example
without features) and once per learned slot (its counts kept apart), from Python: ~25,000
examples a second, against VW's hundreds of thousands (a kernel of its own would close it).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from streamlearn.learners.base import (
    G_CLIP,
    G_LABEL_MAX,
    G_LABEL_MIN,
    G_T,
    P_CLIP_FIXED,
    P_LEARN,
    S_FEATURES,
    S_NEXT_DUMP,
    S_NROWS,
    new_rows,
)
from streamlearn.learners.losses import LOGISTIC, POISSON
from streamlearn.learners.stacked import replay_rng, set_replay_rng
from streamlearn.run.classes import prediction_width
from streamlearn.run.runner import run_kernel
from streamlearn.run.vwaudit import row_batch

_A, _C, _MASK = 0xEECE66D5DEECE66D, 2147483647, (1 << 64) - 1


class Replay:
    """The slots of a run of ``--replay_b n`` (``count`` draws an example), over ``run``'s
    learner; ``seed``: VW's ``--random_seed``."""

    def __init__(self, n: int, count: int, learner, params: np.ndarray,
                 zero_loss: bool = True) -> None:  # noqa: ANN001  # fmt: skip
        from streamlearn.system.memory import refuse_above

        # (N comes from the command line or a model's options: bounded before its slots are
        # made, each at least a pointer and, once filled, an example's arrays)
        refuse_above(64 * n, f"experience replay's {n} slots", "give a smaller buffer")
        self.n, self.count = n, count
        self.zero_loss = zero_loss  # (replay_b: gd's loss, unset; m and c: the classes')
        self.learner = learner
        self.params = params
        self.slots: list[SimpleNamespace | None] = [None] * n

    def _draw(self) -> int:
        """VW's ``get_and_update_random`` times N, rounded down (float32 products, as VW);
        the generator's state lives in the learner's global state (a model keeps it)."""
        g = self.learner.gstate
        state = (_A * replay_rng(g) + _C) & _MASK
        set_replay_rng(g, state)
        u = np.float32((state >> 25) & 0x7FFFFF) * np.float32(2.0**-23)
        return int(np.float32(u * np.float32(self.n)))

    def _kernel(self, batch, params: np.ndarray, stats: np.ndarray, rows: np.ndarray) -> np.ndarray:  # noqa: ANN001
        le = self.learner
        return run_kernel(le.spec.train_batch, le.table, le.gstate, params, le.config.loss_id,
                          batch, stats, rows, prediction_width(le.config))  # fmt: skip

    def _scratch(self) -> np.ndarray:
        """Counts that are not the run's (a copy that never writes a table line)."""
        scratch = self.learner.stats.copy()
        scratch[S_NEXT_DUMP] = np.finfo(np.float64).max
        return scratch

    def _learn_kept(self, one: SimpleNamespace) -> None:
        """An example from a slot learned: the weights move, the run's counts do not."""
        self._kernel(one, self.params, self._scratch(), new_rows())

    def run(self, batch, stats: np.ndarray, rows: np.ndarray) -> np.ndarray:  # noqa: ANN001
        """The examples of ``batch`` handed in one by one; their predictions."""
        g = self.learner.gstate
        quiet = self.params.copy()
        quiet[P_LEARN] = 0.0
        preds = []
        for i in range(batch.n):
            one = row_batch(batch, i)
            learned = _labeled(batch, i) and self.params[P_LEARN] != 0.0
            if learned and self.zero_loss:
                preds.append(self._predicted_at_zero(one, float(batch.labels[i]), quiet, stats,
                                                     rows))  # fmt: skip
            else:  # (-t, unlabeled, malformed; --oaa's and --csoaa's, whose loss is their
                # prediction's: predicted and counted as without a replay)
                preds.append(self._kernel(one, quiet, stats, rows))
            if not learned:
                continue
            t0 = g[G_T]
            for _ in range(self.count - 1):
                kept = self.slots[self._draw()]
                if kept is not None:
                    g[G_T] = t0
                    self._learn_kept(kept)
            k = self._draw()
            if self.slots[k] is not None:
                g[G_T] = t0
                self._learn_kept(self.slots[k])
            weight = float(batch.weights[i])
            g[G_T] = t0 + weight
            if weight != 0.0:
                self.slots[k] = _copy(one)
        return np.concatenate(preds) if preds else np.empty(0)

    def _predicted_at_zero(self, one: SimpleNamespace, label: float, quiet: np.ndarray,
                           stats: np.ndarray, rows: np.ndarray) -> np.ndarray:  # fmt: skip
        """``--replay_b``: ``one`` predicted with ``quiet`` (the run's parameters, learning
        off; its prediction returned), but counted with the loss of a prediction of 0, as
        VW's gd, which never learns it, leaves its loss."""
        p = self._kernel(one, quiet, self._scratch(), new_rows())
        # VW predicts before its count_label learns the label (the replay does not learn
        # the example itself): the range is widened after the prediction
        _widen(self.learner.gstate, self.params, self.learner.config.loss_id, label)
        # counted as an example without features, its table line then given its prediction
        # and features
        shown = int(stats[S_NROWS])
        nfeat = int(one.indptr[1])
        self._kernel(_bare(one), quiet, stats, rows)
        stats[S_FEATURES] += nfeat
        if int(stats[S_NROWS]) > shown:
            rows[int(stats[S_NROWS]) - 1, 5] = p[0]
            rows[int(stats[S_NROWS]) - 1, 6] = nfeat
        return p

    def end_pass(self) -> None:
        """The pass is over: each slot's example learned, in the slots' order, then none."""
        g = self.learner.gstate
        for k, kept in enumerate(self.slots):
            if kept is not None:
                t0 = g[G_T]
                self._learn_kept(kept)
                g[G_T] = t0
                self.slots[k] = None


def _labeled(batch, i: int) -> bool:  # noqa: ANN001 - an io.batch.Batch
    """Whether row ``i`` is a usable example with a label (``--csoaa``: a cost given)."""
    if batch.status[i] != 0:
        return False
    label = batch.labels[i]
    if np.ndim(label) == 0:
        return bool(label == label)
    m = int(label[0])
    return any(np.isfinite(label[2 + 2 * j]) for j in range(m))


def _widen(gstate: np.ndarray, params: np.ndarray, loss_id: int, y: float) -> None:
    """The prediction range widened to label ``y``, as the kernels' ``clip`` does when it
    learns an example (:func:`streamlearn.learners.base.clip`)."""
    if params[P_CLIP_FIXED] != 0.0:
        return
    if gstate[G_CLIP] == 0.0:
        gstate[G_CLIP] = 1.0
        edge = 50.0 if loss_id in (LOGISTIC, POISSON) else 0.0
        gstate[G_LABEL_MIN], gstate[G_LABEL_MAX] = -edge, edge
    gstate[G_LABEL_MIN] = min(gstate[G_LABEL_MIN], y)
    gstate[G_LABEL_MAX] = max(gstate[G_LABEL_MAX], y)


def _bare(one: SimpleNamespace) -> SimpleNamespace:
    """``one`` without its features and initial value: a prediction of 0."""
    return SimpleNamespace(**{**vars(one), "indptr": np.zeros(2, dtype=one.indptr.dtype),
                              "indices": one.indices[:0], "values": one.values[:0],
                              "bases": np.zeros_like(one.bases),
                              "ns": one.ns[:0] if one.ns is not None else None})  # fmt: skip


def _copy(one: SimpleNamespace) -> SimpleNamespace:
    """A row kept in a slot: its own arrays (the batch's are reused)."""
    return SimpleNamespace(**{k: (v.copy() if isinstance(v, np.ndarray) else v)
                              for k, v in vars(one).items()})  # fmt: skip
