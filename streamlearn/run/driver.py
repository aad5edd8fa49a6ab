"""The one driver of a run's passes, single-line and multiline alike.

Every learning run is the same loop: a pass begins, its batches come from the run's
:class:`Source` (the input on the first pass, tee'd into a cache when later passes need
one; the cache, the input again or the batches kept in memory on the others) and go to its
:class:`Learning`, and the pass ends, which may stop the run (early termination on the
holdout, a learner that converged, every run of a grid done).  :func:`drive` is that loop;
what differs between a line and a multiline example is what a batch is (an
:class:`~streamlearn.io.batch.Batch` of rows, a :class:`~streamlearn.io.examples.Part` of
examples) and who learns it (the online learners of ``run/online.py``, a reduction's
learner in ``run/mlpasses.py``, the API's and the server's bandit in ``run/bandit.py``).

The multiline half shares two more pieces here: :class:`Holdout` (VW's
``summarize_holdout_set`` over passes) and :func:`holdout_flags` (which examples of a
batch are held out: every ``period``-th of the pass).  The single-line learners count
their holdout in the kernel (``S_PASS_N``) and log their passes in
:class:`~streamlearn.run.passes.PassLog`, which keeps the best pass's model (sl's rule;
VW's multiline learners keep the last).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

import numpy as np


class Source(Protocol):
    """Where a run's batches come from, pass by pass."""

    def batches(self, pass_no: int) -> Iterable:
        """The batches of pass ``pass_no`` (1, 2, ...)."""
        ...


class Learning(Protocol):
    """What a run does with its batches."""

    def begin_pass(self, pass_no: int) -> None: ...

    def learn(self, batch: object, pass_no: int) -> None: ...

    def end_pass(self, pass_no: int) -> bool:
        """The pass is over: whether the run stops here."""
        ...


def drive(passes: int, source: Source, learning: Learning,
          input_read: Callable[[], None] | None = None) -> int:  # fmt: skip
    """Run up to ``passes`` passes of ``source``'s batches through ``learning``; the
    passes run.  ``input_read()`` is called once the first pass has read the whole input
    (before that pass ends)."""
    used = 0
    for pass_no in range(1, max(1, passes) + 1):
        used = pass_no
        learning.begin_pass(pass_no)
        for batch in source.batches(pass_no):
            learning.learn(batch, pass_no)
        if pass_no == 1 and input_read is not None:
            input_read()
        if learning.end_pass(pass_no):
            break
    return used


class Holdout:
    """VW's summarize_holdout_set over passes: the best pass's holdout loss, and early
    termination after ``patience`` passes that did not improve it.  ``sums()`` are the
    run's holdout examples and loss so far (a pass's are the difference)."""

    def __init__(self, sums: Callable[[], tuple[float, float]], patience: int) -> None:
        self.sums = sums
        self.patience = patience
        self.best = FLT_MAX
        self.no_win = 0
        self.before = (0.0, 0.0)

    def begin(self) -> None:
        self.before = self.sums()

    def stop(self) -> bool:
        """The pass ended: whether to stop here.  A pass without held-out examples counts
        as loss FLT_MAX/2, as VW's: the first such pass is a win, the later ones are not
        (VW stops a run whose passes hold nothing out after ``patience`` more)."""
        n, loss = self.sums()
        n_ho = n - self.before[0]
        this = float(np.float32((loss - self.before[1]) / n_ho)) if n_ho > 0 else FLT_MAX / 2
        if this < self.best:
            self.best = this
            self.no_win = 0
        elif this != FLT_MAX or np.isfinite(self.best):
            self.no_win += 1
            return self.no_win >= self.patience
        return False

    @property
    def best_loss(self) -> float | None:
        return float(self.best) if self.best < FLT_MAX / 2 else None


FLT_MAX = float(np.float32(3.4028234663852886e38))


def holdout_flags(seen: int, m: int, period: int) -> np.ndarray | None:
    """Which of a batch's ``m`` examples are held out, ``seen`` examples into the pass:
    VW's every ``period``-th (None without a holdout)."""
    if not period:
        return None
    return (seen + 1 + np.arange(m)) % period == 0


class Replay:
    """A multiline run's batches by pass: the first pass's from ``first()``; a later
    pass's from ``later()`` when it gives an iterable (the cache sealed at the end of the
    first pass, read again), else the first pass's batches, kept in memory when ``keep``."""

    def __init__(self, first: Callable[[], Iterable],
                 later: Callable[[], Iterable | None] | None = None,
                 keep: bool = False) -> None:  # fmt: skip
        self.first = first
        self.later = later
        self.keep = keep
        self.kept: list = []

    def batches(self, pass_no: int) -> Iterable:
        if pass_no == 1:
            return self._first()
        again = self.later() if self.later is not None else None
        return again if again is not None else iter(self.kept)

    def _first(self) -> Iterable:
        for batch in self.first():
            if self.keep:
                self.kept.append(batch)
            yield batch
