"""One ``--cb K`` line at a time, into arrays kept between calls: the per-call path of a
resident ``--cb K``/``--cb_explore K`` learner (``vowpalwabbit.Workspace`` and a server's
request).

:meth:`CbLineParser.part` gives the :class:`~streamlearn.io.examples.Part` that
:func:`~streamlearn.reductions.cb_adf.cb_part` gives the same line, through the same
kernels (the line's parse and labels by :class:`~streamlearn.io.oneexample.ExampleParser`,
its copy to K action rows by :func:`~streamlearn.learners.cb_to_adf.copy_to_adf`), each
called through its compiled entry over arrays kept between calls: ``cb_part`` sizes,
allocates and indexes its arrays for a block of any number of lines, ~80 µs of Python for
one line where the kernels take a few.  It gives ``None`` where ``cb_part`` must run: a
malformed line (its message is ``cb_part``'s), an action above K, a line the one-example
parser leaves to the block path (its module doc).  The part's arrays are the parser's:
valid until its next call.
"""

from __future__ import annotations

import numpy as np

from streamlearn.io.examples import Part, Tags
from streamlearn.io.interactions import Interactions
from streamlearn.io.labels import LABEL_CB
from streamlearn.io.multiline import Merged
from streamlearn.io.oneexample import ExampleParser
from streamlearn.learners.cb_to_adf import chosen_of, copy_to_adf, index_mask, index_scale
from streamlearn.reductions.base import Seen, Weights, room


class CbLineParser:
    """One ``--cb K`` line (ending in ``\\n``) to a :class:`Part` of K action rows, ``width``
    weights per action below (:func:`~streamlearn.reductions.cb_adf.cb_width`)."""

    def __init__(self, bits: int, constant: bool, inter: Interactions, actions: int,
                 width: int) -> None:  # fmt: skip
        self.one = ExampleParser(bits, constant, inter, LABEL_CB, None, True)
        k = int(actions)
        self.k, self.width, self.bits = k, int(width), int(bits)
        self.scale = index_scale(width)
        self.cim = index_mask(k, width)
        room = ExampleParser.ROOM
        self.act_ptr = np.zeros(2, dtype=np.int64)
        self.rows = np.zeros(1, dtype=np.int64)
        self.row = np.zeros(k, dtype=np.int64)
        self.sub = np.zeros(k, dtype=np.int64)
        self.out_ptr = np.zeros(k + 1, dtype=np.int64)
        self.out_idx = np.empty(room * k, dtype=np.uint32)
        self.out_val = np.empty(room * k)
        self.out_ns = np.empty(room * k, dtype=np.uint8)
        self.chosen = np.full(1, -1, dtype=np.int64)
        self.cost = np.zeros(1)
        self.prob = np.ones(1)
        self.feats = np.zeros(1, dtype=np.int64)
        none = np.zeros(0)
        one = self.one
        arrays = one.arrays
        self.parsed = (arrays[5][:2], arrays[6], arrays[7], arrays[12], arrays[8][:1])
        """The parse's indptr, indices, values, namespaces and the line's status."""
        self.mg = Merged(self.act_ptr, self.rows, self.row, self.out_ptr, self.out_idx,
                         self.out_val, self.out_ns)  # fmt: skip
        self.scratch = Scratch(k)
        self.guarded = GuardRoom()
        self.fixed = None
        """:meth:`step`'s kernel arguments after the state's (made at its first call; empty:
        its learner's examples take :meth:`part`)."""
        self.entry = None
        self.kept = Part(self.mg, self.chosen, self.cost, self.prob, none, none, none,
                         Tags(one.buf, arrays[3][:1], arrays[4][:1]), arrays[9][:1], [], self.sub,
                         self.feats, self.feats)  # fmt: skip
        """The part every call gives, its features' views set to the line's."""

    def part(self, data: bytes, first_line: int = 1) -> Part | None:
        """The part of the one line ``data`` holds, or None (module doc)."""
        one = self.one
        if one.lines(data, first_line) != 1:
            return None
        indptr, indices, values, ns, status = self.parsed
        if status[0] != 0:
            return None
        a, c, p = chosen_of(*one.lab, 0)
        k = self.k
        if a > k:
            return None
        m = one.call(copy_to_adf, indptr, indices, values, ns, status, k, self.width,
                     self.scale, self.bits, self.cim, self.act_ptr, self.rows, self.sub,
                     self.out_ptr, self.out_idx, self.out_val, self.out_ns)  # fmt: skip
        if m != 1:
            return None
        if a > 0:
            self.chosen[0], self.cost[0], self.prob[0] = a - 1, c, p
        else:
            self.chosen[0], self.cost[0], self.prob[0] = -1, 0.0, 1.0
        return self._kept(int(self.out_ptr[k]))

    def _kept(self, nnz: int) -> Part:
        """The kept part, its features' views set to the line's ``nnz`` action features."""
        mg = self.mg
        if mg.indices.shape[0] != nnz:
            self.feats[0] = nnz
            mg.indices, mg.values, mg.ns = (self.out_idx[:nnz], self.out_val[:nnz],
                                            self.out_ns[:nnz])  # fmt: skip
        return self.kept

    def step(self, data: bytes, first_line: int, w: Weights, learner: object,
             learning: bool, guard: bool = False) -> Seen | None:  # fmt: skip
        """:meth:`part` and ``learner``'s ``learn`` of it in one kernel call
        (:func:`~streamlearn.reductions.cb_line_kernel.step_line`) over ``w``'s state
        (``learning``: the explorer's switch): what the learner's batch gives (its arrays
        :attr:`scratch`'s, valid until the next call), or None where :meth:`part` and the
        learner's ``learn`` must run (nothing has moved; a learner without ``line_args``,
        or whose options its batch alone runs).  The kernel's arguments but the line and
        the state are made at the first call, and the later calls go straight to its
        compiled entry (:mod:`streamlearn.system.direct`).  ``guard`` (a learning
        server's): a line whose update would leave the model non-finite is put back and
        raises :class:`Diverging`."""
        if self.fixed is None:
            line_args = getattr(learner, "line_args", None)
            fused = line_args(self.scratch) if line_args is not None else None
            if fused is None:
                self.fixed = ()
            else:
                one = self.one
                self.fixed = (*one.head, one.spans, one.st, *one.no_slow, one.words,
                              one.arrays, one.crosser, one.kind, *one.lab, one.flags, self.k,
                              self.width, self.scale, self.bits, self.cim, self.act_ptr,
                              self.rows, self.sub, self.out_ptr, self.out_idx, self.out_val,
                              self.out_ns, self.chosen, self.cost, self.prob, w.step,
                              w.loss_id, w.cb_type, *fused)  # fmt: skip
        one = self.one
        if not self.fixed or data.count(b"\n") != 1 or not one.fits(data, 1):
            return None
        nb = len(data)
        one.view[:nb] = data
        one.st[0] = 0
        if w.dr_prev.shape[0] <= self.k:
            room(w, np.array([0, self.k], dtype=np.int64))
        g = self.guarded
        for _ in range(2):  # (GROW: the guard's rows and sums)
            args = (one.buf[:nb], int(first_line), bool(learning), w.tables, w.gstate,
                    w.params, w.stats, w.dr_prev, *self.fixed, bool(guard), w.table, g.saved,
                    g.saved_state)  # fmt: skip
            if self.entry is None:
                from streamlearn.reductions.cb_line_kernel import step_line
                from streamlearn.system.direct import direct

                nnz = step_line(*args)
                self.entry = direct(step_line, args)
            else:
                nnz = self.entry(*args)
            if nnz != -2:  # (cb_line_kernel.GROW)
                break
            g.grow(w, self.act_ptr, int(self.out_ptr[self.k]), self.fixed[-3])
            one.st[0] = 0
        if nnz == -3:  # (cb_line_kernel.DIVERGED: everything it changed put back)
            raise Diverging
        if nnz < 0:  # (cb_line_kernel.FALLBACK)
            return None
        part = self._kept(int(nnz))
        s = self.scratch
        if s.seen is None:
            s.seen = learner.line_seen(part, s)
        return s.seen


class Scratch:
    """:meth:`CbLineParser.step`'s outputs for K actions, kept between calls: each action
    row's score, place in the order, pmf action and probability; the example's loss; its
    held-out flag (never: a Workspace's and a server's examples are all learned)."""

    def __init__(self, k: int) -> None:
        from streamlearn.learners.explore import XSTATS

        self.scores = np.zeros(k, dtype=np.float32)
        self.order = np.zeros(k, dtype=np.int64)
        self.actions = np.zeros(k, dtype=np.int64)
        self.probs = np.zeros(k, dtype=np.float32)
        self.loss = np.zeros(1)
        self.holdout = np.zeros(1, dtype=np.bool_)
        self.xstats = np.zeros(XSTATS)
        """An explorer's statistics where there is none (the kernel's argument)."""
        self.seen = None
        """What every step gives (these arrays, the parser's kept part)."""


class GuardRoom:
    """A guarded kernel call's room (:meth:`CbLineParser.step`'s and
    :meth:`~streamlearn.reductions.cb_example.AdfStep.step`'s): the copy of the rows an
    example touches and of the state's sums, grown where the kernel answers GROW."""

    def __init__(self) -> None:
        self.saved = np.empty((0, 4), dtype=np.float32)
        """The rows an example touches (each feature's ``step`` rows)."""
        self.saved_state = np.empty(0)
        """The sums: gstate, stats, dr_prev, the explorer's statistics, in that order."""

    def grow(self, w: Weights, act_ptr: np.ndarray, features: int, xstats: np.ndarray) -> None:
        """Room for an example of ``features`` action-row features the kernel answered GROW:
        ``dr_prev`` as :func:`~streamlearn.reductions.base.room` grows it, the rows and the
        sums (``xstats``: the explorer's statistics the kernel is given)."""
        room(w, act_ptr)
        need = features * int(w.step)
        if need > self.saved.shape[0]:
            self.saved = np.empty((max(need, 2 * self.saved.shape[0]), w.table.shape[1]),
                                  dtype=w.table.dtype)  # fmt: skip
        sums = sum(a.shape[0] for a in (w.gstate, w.stats, w.dr_prev, xstats))
        if sums > self.saved_state.shape[0]:
            self.saved_state = np.empty(sums)


class Diverging(Exception):  # noqa: N818 - as serve_model._Diverging
    """A guarded step (:meth:`CbLineParser.step`,
    :meth:`~streamlearn.reductions.cb_example.AdfStep.step` with ``guard``): learning the
    example would have made the model non-finite; everything it changed is put back."""
