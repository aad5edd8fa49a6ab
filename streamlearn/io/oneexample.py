"""One multiline example at a time, into arrays kept between calls: the per-call path of a
resident bandit (``vowpalwabbit.Workspace.predict``/``learn`` of ``--cb_explore_adf``,
``--cb_adf``, ``--csoaa_ldf``; a server's bandit request).

:meth:`ExampleParser.part` gives the :class:`~streamlearn.io.examples.Part` that
:func:`~streamlearn.io.multiline.parse_examples`, :func:`~streamlearn.io.multiline.merge_shared`,
:func:`~streamlearn.io.multiline.cross_merged` and :func:`~streamlearn.io.examples.adf_part`
give the same lines, through the same kernels, each called through its compiled entry
(:mod:`streamlearn.system.direct`) over arrays kept between calls.  That path sizes,
allocates and indexes a dozen small arrays per kernel for a block of any number of
examples: ~40 µs of Python for one example of five lines, where the kernels take ~3.

It gives ``None`` where that path must run: a malformed line (its message is that path's),
a number for Python's ``float()``, a tag touching ``|``, n-grams, named labels, more rows
or features than the kept arrays hold.  The part's arrays are the parser's: valid until
its next call.
"""

from __future__ import annotations

import numpy as np

from streamlearn.io._scan import block_arrays, feature_bound
from streamlearn.io.batch import MAX_MAGNITUDE
from streamlearn.io.crosses import CROSS_BUDGET
from streamlearn.io.examples import FEATURES_ACTIONS, FEATURES_MERGED, Part, Source, Tags
from streamlearn.io.interactions import Interactions, row_crosser
from streamlearn.io.labels import ROW_SHARED, read_labels_kernel
from streamlearn.io.multiline import (
    Merged,
    check_examples,
    cross_merged,
    merge_examples,
    row_labels,
)
from streamlearn.io.textparse import WORDS, vw_options
from streamlearn.io.vw import parse_vw_block
from streamlearn.system.direct import Entries

_NO_POS = np.empty(0, dtype=np.int64)
_NO_VALS = np.empty(0, dtype=np.float64)


class ExampleParser:
    """One example's lines (each ending in ``\\n``, no blank line) to a
    :class:`~streamlearn.io.examples.Part` (module doc).

    ``inter`` are the parse options without crosses (:func:`~streamlearn.io.examples.
    parse_options`), ``full`` the run's with them; ``kind`` the label kind, ``cb`` and
    ``features`` as :func:`~streamlearn.io.examples.adf_part` takes them.
    """

    ROWS = 256
    """Lines an example may have (more: the general path)."""
    ROOM = 1 << 17
    """Feature entries of the lines as parsed."""
    MERGED = 1 << 18
    """Feature entries of the merged rows (each action row with the shared line's)."""

    def __init__(self, bits: int, constant: bool, inter: Interactions, kind: int,
                 full: Interactions | None, cb: bool, features: str = FEATURES_MERGED,
                 words: bool = WORDS) -> None:  # fmt: skip
        self.usable = not (inter.regroups or inter.named is not None or inter.csv is not None
                           or inter.crosses_or_filters or inter.affix is not None)  # fmt: skip
        mask = np.uint64((1 << bits) - 1)
        self.bits = bits
        self.full = full
        self.kind = int(kind)
        self.cb = bool(cb)
        self.features = features
        self.vw_numbers = bool(inter.vw_numbers)
        self.head = (mask, bool(constant), float(MAX_MAGNITUDE),
                     *vw_options(inter, inter.vw_numbers))  # fmt: skip
        self.crosser = row_crosser(None, mask, CROSS_BUDGET)
        self.words = words
        self.call = Entries()
        n, room = self.ROWS, self.ROOM
        self.buf = np.empty(room, dtype=np.uint8)
        self.view = memoryview(self.buf)
        self.arrays = block_arrays(n, room)
        self.spans = np.empty((1, 2), dtype=np.int64)
        self.st = np.zeros(2, dtype=np.int64)
        self.no_slow = (_NO_POS, _NO_VALS)
        """The parse's slow-token positions and values (none: the line's numbers are read
        in the kernel)."""
        self.ex_ptr = np.zeros(2, dtype=np.int64)
        # the label entries (io.labels.read_labels')
        self.lab = (np.empty(n + 1, dtype=np.int64), np.empty(2 * n, dtype=np.int64),
                    np.empty(2 * n), np.empty(2 * n))  # fmt: skip
        self.flags = np.empty(n, dtype=np.int64)
        # the merged rows (io.multiline.merge_shared's) and their labels (adf_part's)
        self.out_ex = np.empty(1, dtype=np.int64)
        self.out_row = np.empty(n, dtype=np.int64)
        self.out_ptr = np.empty(n + 1, dtype=np.int64)
        self.out_idx = np.empty(self.MERGED, dtype=np.uint32)
        self.out_val = np.empty(self.MERGED)
        self.out_ns = np.empty(self.MERGED, dtype=np.uint8)
        self.lab_n = np.empty(n, dtype=np.int64)
        self.lab_cls = np.empty(n, dtype=np.int64)
        self.lab_cost = np.empty(n)
        self.chosen = np.empty(1, dtype=np.int64)
        self.cost = np.empty(1)
        self.prob = np.empty(1)
        self.keep = np.empty(1, dtype=np.bool_)

    def fits(self, data: bytes, lines: int) -> bool:
        """Whether ``data``, of ``lines`` lines, fits the kept arrays (and the parse options
        this path takes)."""
        nb = len(data)
        return (self.usable and 0 < lines < self.ROWS and nb <= self.buf.shape[0]
                and feature_bound(nb, self.ROWS) <= self.ROOM)  # fmt: skip

    def lines(self, data: bytes, first_line: int = 1) -> int:
        """``data``'s lines parsed into the kept arrays and their labels read (:attr:`lab`,
        :attr:`flags`): how many, or 0 where the general path must run (module doc)."""
        nb = len(data)
        lines = data.count(b"\n")
        if not self.fits(data, lines):
            return 0
        self.view[:nb] = data  # (a memoryview's copy: a third of numpy's cost)
        buf = self.buf[:nb]
        self.st[0] = 0
        call = self.call
        a = self.arrays
        rows, _, touching, _, overflow, _ = call(
            parse_vw_block, buf, int(first_line), *self.head, self.spans, self.st,
            *self.no_slow, self.words, a, self.crosser,
        )  # fmt: skip
        if rows != lines or touching or overflow or self.st[0]:
            return 0
        _, _, _, tag_start, tag_end, _, _, _, status, _, line_start, err, _ = a
        ptr, cls, cost, prob = self.lab
        k = call(read_labels_kernel, buf, line_start[:rows], tag_start[:rows], tag_end[:rows],
                 status[:rows], err[:rows], self.kind, self.vw_numbers, ptr[: rows + 1], cls,
                 cost, prob, self.flags[:rows])  # fmt: skip
        return 0 if k < 0 else rows

    def part(self, data: bytes, first_line: int = 1) -> Part | None:
        """The part of the one example ``data`` holds, or None (module doc)."""
        rows = self.lines(data, first_line)
        if rows == 0:
            return None
        buf = self.buf[: len(data)]
        call = self.call
        _, _, _, tag_start, tag_end, indptr, indices, values, status, line, _, err, ns = \
            self.arrays  # fmt: skip
        status, err = status[:rows], err[:rows]
        ptr, cls, cost, prob = self.lab
        flags = self.flags[:rows]
        ex_ptr = self.ex_ptr
        ex_ptr[1] = rows
        call(check_examples, ex_ptr, flags, status, err)
        shared = int(flags[0]) & ROW_SHARED
        need = int(indptr[rows]) + int(indptr[1]) * rows
        if np.count_nonzero(status) or need > self.MERGED:
            return None
        m, r, nnz = call(merge_examples, ex_ptr, flags, status, indptr, indices, values, ns, False,
                         self.out_ex, self.out_row, self.out_ptr, self.out_idx, self.out_val,
                         self.out_ns)  # fmt: skip
        self.chosen[0] = -1
        self.cost[0] = 0.0
        self.prob[0] = 1.0
        self.keep[0] = True
        act_ptr = np.array([0, r], dtype=np.int64)
        row = self.out_row[:r]
        call(row_labels, row, act_ptr, ptr[: rows + 1], cls, cost, prob, self.cb, status,
             self.lab_n, self.lab_cls, self.lab_cost, self.chosen, self.cost, self.prob,
             self.keep)  # fmt: skip
        if m != 1 or not self.keep[0]:
            return None
        mg = Merged(act_ptr, self.out_ex, row, self.out_ptr[: r + 1], self.out_idx[:nnz],
                    self.out_val[:nnz], self.out_ns[:nnz])  # fmt: skip
        mg = cross_merged(mg, self.full, self.bits)
        feat_row = np.array([mg.indptr[r]], dtype=np.int64)
        feat_total = feat_row
        if self.features != FEATURES_MERGED:
            own = int(indptr[rows] - indptr[rows - r])
            if self.features != FEATURES_ACTIONS and shared:
                own += int(indptr[1])
            feat_total = np.array([own], dtype=np.int64)
        head = line[:1]
        src = Source(buf, int(first_line), line[rows - r : rows], tag_start[rows - r : rows],
                     tag_end[rows - r : rows], head)  # fmt: skip
        return Part(mg, self.chosen, self.cost, self.prob, self.lab_n[:r], self.lab_cls[:r],
                    self.lab_cost[:r], Tags(buf, tag_start[:1], tag_end[:1]), head, [], None,
                    feat_row, feat_total, src=src)  # fmt: skip
