"""One ``--cb_adf``/``--cb_explore_adf`` example a call, in one kernel call: the per-call path
of a resident multiline bandit (``vowpalwabbit.Workspace`` and a server's request).

:meth:`AdfStep.step` gives what :meth:`~streamlearn.io.oneexample.ExampleParser.part` then
the learner's ``learn_one`` give the same example (:meth:`Bandit.run
<streamlearn.run.bandit.Bandit.run>` with ``one``), through
:func:`~streamlearn.reductions.cb_example_kernel.step_example` over the parser's arrays:
the same kernels in the same order, called once from Python instead of seven times, and the
part's views and objects kept between calls for each (lines, actions) shape instead of made
again.  It gives ``None`` where that path must run (nothing has moved): an example the
kernel leaves (its module doc), a run with interactions (the crosses are appended to the
merged rows in Python), a learner without ``line_args`` (the explorers with walks of their
own, ``--cb_dro``, ...).  What it gives is valid until its next call.
"""

from __future__ import annotations

import numpy as np

from streamlearn.io.examples import FEATURES_ACTIONS, FEATURES_MERGED, Part, Source, Tags
from streamlearn.io.multiline import Merged
from streamlearn.io.oneexample import ExampleParser
from streamlearn.reductions.base import Seen, Weights
from streamlearn.reductions.cb_line import Diverging, GuardRoom, Scratch

__all__ = ["AdfStep", "Diverging"]


class AdfStep:
    """:meth:`step` over an :class:`~streamlearn.io.oneexample.ExampleParser`'s arrays."""

    def __init__(self, one: ExampleParser) -> None:
        self.one = one
        n = one.ROWS
        self.act_ptr = np.zeros(2, dtype=np.int64)
        self.sub = np.zeros(n, dtype=np.int64)
        self.scratch = Scratch(n)
        """The kernel's outputs for up to the parser's rows of actions (``--cb K``'s)."""
        self.fixed: tuple | None = None
        """The kernel's arguments but the example and the state (() where it never runs)."""
        self.entry = None
        self.parts: dict[tuple[int, int], tuple[Part, Seen]] = {}
        """Per (lines, actions): the part and what the learner's step gives, kept."""
        self.feats = np.zeros(1, dtype=np.int64)
        self.own = np.zeros(1, dtype=np.int64)
        self.guarded = GuardRoom()

    def step(self, data: bytes, first_line: int, w: Weights, learner: object,
             learning: bool, guard: bool = False) -> Seen | None:  # fmt: skip
        """The example ``data`` (its lines, each ending in a newline, no blank line among
        them) parsed and learned as ``learner`` learns it over ``w``'s state (``learning``:
        the explorer's switch; ``w``'s params say whether weights move), or None where the
        general path must run (module doc).  ``guard`` (a learning server's): an example
        whose update would leave the model non-finite is put back and raises
        :class:`Diverging`."""
        one = self.one
        if self.fixed is None:
            self.fixed = self._fixed(w, learner)
        lines = data.count(b"\n")
        if not self.fixed or not one.fits(data, lines):  # (fewer lines than ROWS, ...)
            return None
        nb = len(data)
        one.view[:nb] = data
        one.st[0] = 0
        for _ in range(3):  # (GROW: at most dr_prev, then the guard's rows and sums)
            args = (one.buf[:nb], int(first_line), lines, bool(learning), w.tables, w.gstate,
                    w.params, w.stats, w.dr_prev, *self.fixed, bool(guard), w.table, w.step,
                    self.guarded.saved, self.guarded.saved_state)  # fmt: skip
            if self.entry is None:
                from streamlearn.reductions.cb_example_kernel import step_example
                from streamlearn.system.direct import direct

                nnz = step_example(*args)
                self.entry = direct(step_example, args)
            else:
                nnz = self.entry(*args)
            if nnz != -2:  # (cb_example_kernel.GROW)
                break
            rows = int(self.one.out_ptr[int(self.act_ptr[1])])
            self.guarded.grow(w, self.act_ptr, rows, self.fixed[-3])
            one.st[0] = 0
        if nnz == -3:  # (cb_example_kernel.DIVERGED: everything it changed put back)
            raise Diverging
        if nnz < 0:  # (cb_example_kernel.FALLBACK)
            return None
        r = int(self.act_ptr[1])
        kept = self.parts.get((lines, r))
        if kept is None:
            kept = self.parts[(lines, r)] = self._kept(lines, r, learner)
        part, seen = kept
        mg = part.mg
        if mg.indices.shape[0] != nnz:
            mg.indices, mg.values, mg.ns = (one.out_idx[:nnz], one.out_val[:nnz],
                                            one.out_ns[:nnz])  # fmt: skip
        self.feats[0] = nnz
        if one.features != FEATURES_MERGED:
            indptr = one.arrays[5]
            own = int(indptr[lines] - indptr[lines - r])
            if one.features != FEATURES_ACTIONS and lines > r:  # (a shared line)
                own += int(indptr[1])
            self.own[0] = own
        part.src.first_line = int(first_line)
        return seen

    def _fixed(self, w: Weights, learner: object) -> tuple:
        """The kernel's trailing arguments, or () where it never runs (module doc)."""
        one = self.one
        line_args = getattr(learner, "line_args", None)
        fused = line_args(self.scratch) if line_args is not None else None
        if fused is None or (one.full is not None and one.full.crosses_or_filters):
            return ()
        return (*one.head, one.spans, one.st, *one.no_slow, one.words, one.arrays, one.crosser,
                one.kind, *one.lab, one.flags, one.ex_ptr, one.MERGED, one.cb, one.out_ex,
                one.out_row, one.out_ptr, one.out_idx, one.out_val, one.out_ns, one.lab_n,
                one.lab_cls, one.lab_cost, one.chosen, one.cost, one.prob, one.keep,
                self.act_ptr, self.sub, w.step, w.loss_id, w.cb_type, *fused)  # fmt: skip

    def _kept(self, lines: int, r: int, learner: object) -> tuple[Part, Seen]:
        """The part of an example of ``lines`` lines and ``r`` actions over the parser's
        arrays (as :meth:`ExampleParser.part` makes it), and the learner's step of it."""
        one = self.one
        _, _, _, tag_start, tag_end, _, _, _, _, line, _, _, _ = one.arrays
        mg = Merged(self.act_ptr, one.out_ex, one.out_row[:r], one.out_ptr[: r + 1],
                    one.out_idx[:0], one.out_val[:0], one.out_ns[:0])  # fmt: skip
        head = line[:1]
        src = Source(one.buf, 1, line[lines - r : lines], tag_start[lines - r : lines],
                     tag_end[lines - r : lines], head)  # fmt: skip
        total = self.feats if one.features == FEATURES_MERGED else self.own
        part = Part(mg, one.chosen, one.cost, one.prob, one.lab_n[:r], one.lab_cls[:r],
                    one.lab_cost[:r], Tags(one.buf, tag_start[:1], tag_end[:1]), head, [], None,
                    self.feats, total, src=src)  # fmt: skip
        seen = learner.line_seen(part, self.scratch)
        for name in ("actions", "probs", "scores", "order"):
            if getattr(seen, name) is not None:
                setattr(seen, name, getattr(seen, name)[:r])
        return part, seen
