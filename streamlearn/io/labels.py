"""Labels beyond VW's simple label: one per-row CSR of label entries for every kind.

The parse kernel reads VW's simple label (``label [importance [base]]``) itself.  Any
other kind (:data:`LABEL_CS`, :data:`LABEL_CB`, and the kinds other reductions add) is
read here, after the parse: the parse kernel is told to leave the label part alone
(``Interactions.label_kind != 0``: label NaN, importance 1, base 0, the tag as always),
and :func:`read_labels` reads each usable row's label part from the block's bytes into

* ``ptr`` (int64[n + 1]): row ``i``'s entries are ``ptr[i]:ptr[i + 1]``;
* per entry ``cls`` (int64: the class or action, VW's ``hashstring`` of its name, so the
  integer itself when it is one), ``cost`` (float64; NaN: no cost given, VW's ``FLT_MAX``)
  and ``prob`` (float64; NaN when not given);
* per row ``flags``: :data:`ROW_SHARED` for VW's ``shared`` line (no entries).

A label part the kind cannot read makes the row malformed (``status``, ``err_pos``; the
reasons are :data:`REASONS`, codes 20-26 of :data:`streamlearn.io.batch.REASONS`).

Kinds and their grammar (VW's ``cost_sensitive.cc`` and ``cb.cc``):

* ``LABEL_CS`` -- ``class[:cost] ...``; a class without a cost is a test entry (cost NaN);
  ``shared`` alone marks the shared line.  Used by ``--csoaa K`` and ``--csoaa_ldf``.
* ``LABEL_CB`` -- ``action[:cost[:probability]] ...``; ``shared`` alone marks the shared
  line.  A probability must be in (0, 1] and a line of one entry with a cost must give
  one (VW clamps or replaces them with a warning; sl skips the line, with its reason);
  among several entries (``--cb K``'s ``1:1 2:2:0.5``) a cost alone has probability 0.

Examples
--------
>>> import numpy as np
>>> from streamlearn.io.parse import parse_bytes
>>> b = parse_bytes(b"shared |s a\\n0:1.5:0.25 |a x\\n|a y\\n", labels="cb")
>>> lab = read_labels(b, LABEL_CB)
>>> lab.ptr.tolist(), lab.cost.tolist(), lab.prob.tolist(), lab.flags.tolist()
([0, 0, 1, 1], [1.5], [0.25], [1, 0, 0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.hashing import hashstring
from streamlearn.io._numbers import NUM_NONE, NUM_OK, scan_number
from streamlearn.io.batch import MIN_PROBABILITY
from streamlearn.io.batch import REASONS as BATCH_REASONS
from streamlearn.io.vwfloat import vw_number
from streamlearn.system.jit import jit

LABEL_SIMPLE = 0
LABEL_CS = 1
LABEL_CB = 2
KINDS = {"simple": LABEL_SIMPLE, "cs": LABEL_CS, "cb": LABEL_CB}
"""Label kinds by name (``Interactions.label_kind`` holds the code)."""

ROW_SHARED = 1
"""``flags`` bit: the row is VW's ``shared`` line of a multiline example."""

BAD_COST_LABEL = 20
BAD_PROBABILITY = 21
COST_WITHOUT_PROBABILITY = 22
TWO_LABELED_LINES = 23
SHARED_ALONE = 24
SHARED_NOT_FIRST = 25
NO_ACTIONS = 26
REASONS = {c: BATCH_REASONS[c] for c in range(BAD_COST_LABEL, NO_ACTIONS + 1)}
"""This module's and :mod:`streamlearn.io.multiline`'s status codes (in ``batch.REASONS``)."""

_SHARED = np.frombuffer(b"shared", dtype=np.uint8)


@dataclass
class Labels:
    """The label entries of a batch's rows (see the module's docstring)."""

    ptr: np.ndarray
    cls: np.ndarray
    cost: np.ndarray
    prob: np.ndarray
    flags: np.ndarray

    @property
    def n(self) -> int:
        return int(self.ptr.shape[0] - 1)


@jit
def _number(buf, s, e, vw_numbers):
    """The number ``buf[s:e]`` (whole), or NaN and False."""
    if s >= e:
        return np.nan, False
    if vw_numbers:
        c, v, j = vw_number(buf, s, e, e)
    else:
        c, v, j = scan_number(buf, s, e)
    if c == NUM_NONE or j != e:
        return np.nan, False
    if c != NUM_OK:  # a slow token: its float32 by strtof's rounding is close enough here
        return v, True
    return v, True


@jit
def _is_shared(buf, s, e, word):
    if e - s != word.shape[0]:
        return False
    for q in range(e - s):
        if buf[s + q] != word[q]:
            return False
    return True


@jit
def _label_span(buf, start, n, tag_s, tag_e):
    """The label part of the line at ``start``: (from, to), the tag left out."""
    ls = start
    if ls + 3 <= n and buf[ls] == 0xEF and buf[ls + 1] == 0xBB and buf[ls + 2] == 0xBF:
        ls += 3
    bar = ls
    while bar < n and buf[bar] != 124 and buf[bar] != 10:
        bar += 1
    le = bar
    while le > ls and buf[le - 1] == 13:
        le -= 1
    p = ls
    while p < le and buf[p] != 9:
        p += 1
    p = ls if p == le else p + 1
    if tag_e > tag_s or (tag_s > p and tag_s <= le):
        # the tag is the last token: 'tag (quote at tag_s - 1) or one touching '|'
        q = tag_s
        if q > p and buf[q - 1] == 39:
            q -= 1
        le = q
    return p, le


@jit
def read_labels_kernel(buf, line_start, tag_start, tag_end, status, err_pos, kind, vw_numbers,
                       ptr, cls, cost, prob, flags):  # fmt: skip
    """Read each usable row's label part (``kind``) into the entry arrays; returns the
    entries written, or -1 when ``cls`` had no room (the caller grows it and calls again).
    Rows the kind cannot read get a status of :data:`REASONS` (and ``err_pos``)."""
    n = buf.shape[0]
    rows = status.shape[0]
    k = 0
    ptr[0] = 0
    for r in range(rows):
        flags[r] = 0
        if status[r] != 0:
            ptr[r + 1] = k
            continue
        s0, e0 = _label_span(buf, line_start[r], n, tag_start[r], tag_end[r])
        k_row = k
        code = 0
        err = -1
        p = s0
        ntok = 0
        nocp = False
        while p < e0 and code == 0:
            if buf[p] == 32:
                p += 1
                continue
            s = p
            while p < e0 and buf[p] != 32:
                p += 1
            e = p
            ntok += 1
            # split on ':' (at most three parts)
            c1 = -1
            c2 = -1
            extra = False
            for q in range(s, e):
                if buf[q] == 58:
                    if c1 < 0:
                        c1 = q
                    elif c2 < 0:
                        c2 = q
                    else:
                        extra = True
            if extra:
                code = BAD_COST_LABEL
                err = s
                break
            name_e = e if c1 < 0 else c1
            if c1 < 0 and _is_shared(buf, s, e, _SHARED):
                if ntok != 1:
                    code = BAD_COST_LABEL
                    err = s
                    break
                flags[r] |= ROW_SHARED
                continue
            if flags[r] & ROW_SHARED:  # shared takes nothing after it
                code = BAD_COST_LABEL
                err = s
                break
            if name_e == s:
                code = BAD_COST_LABEL
                err = s
                break
            a = np.int64(hashstring(buf, s, name_e, 0))
            c = np.nan
            pr = np.nan
            if kind == 1:  # cost-sensitive: class[:cost]
                if c2 >= 0:
                    code = BAD_COST_LABEL
                    err = s
                    break
                if c1 >= 0 and c1 + 1 < e:  # (VW reads "class:" as "class", a test entry)
                    c, ok = _number(buf, c1 + 1, e, vw_numbers)
                    if not ok or c != c:
                        code = BAD_COST_LABEL
                        err = s
                        break
            else:  # contextual bandit: action[:cost[:probability]]
                if c1 >= 0:
                    ce = e if c2 < 0 else c2
                    c, ok = _number(buf, c1 + 1, ce, vw_numbers)
                    if not ok or c != c or abs(c) > 1e18:
                        code = BAD_COST_LABEL
                        err = s
                        break
                    if c2 < 0:  # VW's probability 0: only among several entries (--cb K)
                        nocp = True
                        pr = 0.0
                    else:
                        pr, ok = _number(buf, c2 + 1, e, vw_numbers)
                        if not ok or not (pr >= MIN_PROBABILITY and pr <= 1.0):
                            code = BAD_PROBABILITY
                            err = c2 + 1
                            break
            if k >= cls.shape[0]:
                return -1
            cls[k] = a
            cost[k] = c
            prob[k] = pr
            k += 1
        if code == 0 and nocp and ntok == 1:
            code = COST_WITHOUT_PROBABILITY
            err = s0
        if code != 0:
            status[r] = code
            err_pos[r] = err
            flags[r] = 0
            k = k_row
        ptr[r + 1] = k
    return k


def read_labels(batch, kind: int, vw_numbers: bool = False) -> Labels:  # noqa: ANN001
    """The label entries of ``batch``'s rows (a batch parsed with ``label_kind`` = ``kind``).

    Rows whose label part ``kind`` cannot read become malformed in ``batch.status``.
    """
    if kind not in (LABEL_CS, LABEL_CB):
        raise ValueError(f"no label kernel for label kind {kind}")
    n = batch.n
    buf = batch.block.data
    line_start = batch.line_start
    if line_start is None:
        raise ValueError("read_labels needs the rows' line offsets (batch.line_start)")
    if batch.err_pos is None:
        batch.err_pos = np.full(n, -1, dtype=np.int64)
    ptr = np.empty(n + 1, dtype=np.int64)
    flags = np.empty(n, dtype=np.int64)
    size = max(2 * n, 16)
    while True:
        cls = np.empty(size, dtype=np.int64)
        cost = np.empty(size, dtype=np.float64)
        prob = np.empty(size, dtype=np.float64)
        k = read_labels_kernel(
            buf, line_start, batch.tag_start, batch.tag_end, batch.status, batch.err_pos, kind,
            vw_numbers, ptr, cls, cost, prob, flags,
        )  # fmt: skip
        if k >= 0:
            return Labels(ptr, cls[:k], cost[:k], prob[:k], flags)
        size *= 4
