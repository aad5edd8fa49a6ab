"""Cost-sensitive labels of one-line examples (VW's ``--csoaa K``) as one row each.

The label part ``class[:cost] ...`` is read by :func:`streamlearn.io.labels.read_labels`
(cb's label hook, kind ``LABEL_CS``); :func:`cs_batch` writes its entries into the
batch's ``labels``, which becomes float64[n, 1 + 2K]: column 0 the number ``m`` of
entries (0: no label, a test example over every class), then ``m`` pairs (class,
cost) in the order the line gives them, the class as written (0..K, or 1..K by name
with ``--named_labels``), the cost ``inf`` for a class listed without one (VW's
``FLT_MAX``: a test entry).  A line with more than K entries, or a class that is no
integer 0..K, is malformed (``status`` 16, as ``--oaa``'s), as is a name not in
``--named_labels`` (33; under VW's numbers class 0 with VW's warning, as VW reads it).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streamlearn.io.batch import Batch
from streamlearn.io.labels import LABEL_CS, read_labels
from streamlearn.system.jit import jit

NOT_A_CLASS = 16
MISSING_NAME = 33


@jit
def _fill(ptr, cls, cost, status, err_pos, line_start, k, out):
    for r in range(status.shape[0]):
        out[r, 0] = 0.0
        if status[r] != 0:
            continue
        m = ptr[r + 1] - ptr[r]
        if m > k:
            status[r] = NOT_A_CLASS
            err_pos[r] = line_start[r]
            continue
        for j in range(m):
            c = cls[ptr[r] + j]
            if c < 0 or c > k:
                status[r] = MISSING_NAME if c < 0 else NOT_A_CLASS
                err_pos[r] = line_start[r]
                break
            x = cost[ptr[r] + j]
            out[r, 1 + 2 * j] = c
            out[r, 2 + 2 * j] = np.inf if x != x else x
        if status[r] == 0:
            out[r, 0] = m


def cs_batch(batch: Batch, k: int, named=None, vw_numbers: bool = True) -> Batch:  # noqa: ANN001
    """``batch`` (parsed with ``label_kind`` = ``LABEL_CS``) with its cost-sensitive labels
    in ``labels`` (see the module's docstring); ``named``: a
    :class:`~streamlearn.io.named.NamedLabels` the classes are names of."""
    if batch.labels.ndim == 2:
        return batch  # (replayed from the cache: read already)
    status = batch.status.copy()
    err_pos = batch.err_pos.copy() if batch.err_pos is not None else np.full(batch.n, -1)
    b = dataclasses.replace(batch, status=status, err_pos=err_pos)
    lab = read_labels(b, LABEL_CS, vw_numbers)
    cls = lab.cls
    if named is not None:
        from streamlearn.io.named import class_numbers

        mapped = class_numbers(cls, named)
        cls = np.where(mapped > 0, mapped, 0 if vw_numbers else -1)
        if vw_numbers and (mapped == 0).any():
            _warn_missing(b, lab.ptr, mapped, named)
    out = np.zeros((batch.n, 1 + 2 * k))
    line_start = batch.line_start if batch.line_start is not None else np.zeros(batch.n, np.int64)
    _fill(lab.ptr, cls, lab.cost, status, err_pos, line_start, k, out)
    return dataclasses.replace(b, labels=out)


def _warn_missing(batch: Batch, ptr: np.ndarray, mapped: np.ndarray, named) -> None:  # noqa: ANN001
    """VW's warning for each class name not in ``--named_labels``, in the lines' order."""
    from streamlearn.io.named import warn_missing

    data = batch.block.data
    rows = np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr))
    for r in np.unique(rows[mapped[: rows.shape[0]] == 0]):
        if batch.status[r] != 0:
            continue
        start = int(batch.line_start[r])
        end = start
        while end < data.shape[0] and data[end] not in (10, 124):
            end += 1
        words = bytes(data[start:end]).decode("utf-8", "replace").split()
        for w in words[: int(ptr[r + 1] - ptr[r])]:
            name = w.split(":")[0]
            if name not in named.names:
                warn_missing(name)
