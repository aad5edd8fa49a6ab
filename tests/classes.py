"""The reductions over K classes' kernels run on the tests' random streams, and their
weights read back as [class, feature slot] (``tests/learners/test_oaa.py``, ``test_csoaa.py``,
``test_multilabel.py``)."""

from __future__ import annotations

import numpy as np

from streamlearn.learners import oaa
from streamlearn.learners.base import new_rows, new_stats
from streamlearn.run.runner import run_kernel
from tests.streams import Stream


def run_classes(spec, params, stream: Stream, loss_id: int, k: int, width: int,  # noqa: ANN001
                chunks: int = 2):  # noqa: ANN201  # fmt: skip
    """The kernel over ``stream`` in ``chunks`` batches on a table wide enough that no two
    features share a slot: (table, gstate, predictions[n, width], stats)."""
    bits = int(np.log2(stream.d)) + int(np.log2(oaa.stride(k)))
    table = spec.new_table(bits)
    gstate = spec.init_gstate(params)
    stats, rows = new_stats(), new_rows()
    preds = np.empty((stream.n, width))
    cuts = np.linspace(0, stream.n, chunks + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        preds[a:b] = run_kernel(spec.train_batch, table, gstate, params, loss_id,
                                stream.slice(a, b), stats, rows, width)  # fmt: skip
    return table, gstate, preds, stats


def class_weights(spec, table, gstate, params, k: int, d: int) -> np.ndarray:  # noqa: ANN001
    """The kernel's weights as [class, feature slot]: class c of slot h at h·s + c (VW's)."""
    s = oaa.stride(k)
    slots = (np.arange(d)[None, :] * s + np.arange(k)[:, None]).astype(np.uint32)
    out = np.empty(slots.size)
    spec.current_weights(table, gstate, params, slots.ravel(), out)
    return out.reshape(k, d)
