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
        nnz = int(self.out_ptr[k])
        self.feats[0] = nnz
        mg = self.mg
        mg.indices, mg.values, mg.ns = self.out_idx[:nnz], self.out_val[:nnz], self.out_ns[:nnz]
        return self.kept
