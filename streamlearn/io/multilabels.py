"""Multilabel labels of one-line examples (VW's ``--multilabel_oaa K``) as one row each.

VW's label (``multilabel.cc``) is one word of class numbers separated by ``,``
(``0,3,7``; 0-based).  The parse kernel leaves the label part alone
(``Interactions.label_kind``, cb's hook in :mod:`streamlearn.io.labels`);
:func:`ml_batch` reads it into the batch's ``labels``, float64[n, 1 + K]: column 0
the number ``m`` of classes (0: no label, a test example), then the ``m`` classes in
the order written (VW matches them against the classes in increasing order, so an
unsorted or repeated list trains as VW trains it, and so does a class K or more,
which no class matches: VW says it "won't work right", and sl warns once, but the line
is learned as VW learns it).  A class that is no integer, more than K of them, or more
than one word, make the line malformed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streamlearn.io.batch import Batch
from streamlearn.io.labels import _label_span
from streamlearn.system.jit import jit

NOT_A_CLASS = 34
LABEL_TOKENS = 5


@jit
def read_multilabels(buf, line_start, tag_start, tag_end, status, err_pos, k, out):
    """Each usable row's ``c1,c2,...`` into ``out`` (see :func:`ml_batch`)."""
    n = buf.shape[0]
    for r in range(status.shape[0]):
        out[r, 0] = 0.0
        if status[r] != 0:
            continue
        s0, e0 = _label_span(buf, line_start[r], n, tag_start[r], tag_end[r])
        while s0 < e0 and (buf[s0] == 32 or buf[s0] == 9):
            s0 += 1
        while e0 > s0 and (buf[e0 - 1] == 32 or buf[e0 - 1] == 9):
            e0 -= 1
        m = 0
        code = 0
        err = -1
        p = s0
        while p < e0 and code == 0:
            c = buf[p]
            if c == 44:  # ',' (empty items are skipped, as VW's tokenize)
                p += 1
                continue
            if c == 32 or c == 9:
                code = LABEL_TOKENS
                err = p
                break
            q = p
            v = 0
            while q < e0 and buf[q] != 44 and buf[q] != 32 and buf[q] != 9:
                d = np.int64(buf[q]) - 48
                if d < 0 or d > 9 or v > 100000000:
                    code = NOT_A_CLASS
                    err = p
                    break
                v = v * 10 + d
                q += 1
            if code != 0:
                break
            if m >= k:
                code = NOT_A_CLASS
                err = p
                break
            out[r, 1 + m] = v
            m += 1
            p = q
        if code != 0:
            status[r] = code
            err_pos[r] = err
        else:
            out[r, 0] = m


def ml_batch(batch: Batch, k: int) -> Batch:
    """``batch`` (parsed with ``label_kind`` set) with its multilabel labels in ``labels``."""
    if batch.labels.ndim == 2:
        return batch  # (replayed from the cache: read already)
    status = batch.status.copy()
    err_pos = batch.err_pos.copy() if batch.err_pos is not None else np.full(batch.n, -1)
    out = np.zeros((batch.n, 1 + k))
    line_start = batch.line_start if batch.line_start is not None else np.zeros(batch.n, np.int64)
    read_multilabels(batch.block.data, line_start, batch.tag_start, batch.tag_end, status,
                     err_pos, k, out)  # fmt: skip
    return dataclasses.replace(batch, labels=out, status=status, err_pos=err_pos)
