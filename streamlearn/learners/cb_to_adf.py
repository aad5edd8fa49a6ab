"""``--cb K`` as VW 9 runs it: each single-line example copied to K action lines for
``--cb_adf`` (VW's ``cb_to_cb_adf.cc`` and ``cbify_adf_data::copy_example_to_adf``).

Action ``a`` (0-based) gets every feature of the line with VW's index rewritten
literally: with ``W`` the feature width below (1; 2 for ``--cb_type dr``; ``--cover N``'s
``(N + 1)·2`` with mtr or dr; ``--bag B`` times B) a feature of hash ``h`` has index
``i = h·S``, ``S`` being ``W`` rounded up to a power of 2 (in weights, not floats: VW's
``--audit`` shows it), and action ``a`` reads ``i' = (i - (i & M)) + a·W`` with
``M = 2^bitlen(K·W) - 1`` (VW's ``custom_index_mask``), the learner's offset ``o`` (dr's
regressor: 1) added after, all modulo the table's ``2^b`` rows.  So actions share the low
bits of ``h``: two hashes that differ only in them meet on the same weights, as in VW.  VW
crosses the rewritten indices (``-q`` after the copy), but its copies also keep the
namespaces of earlier lines, which sl does not reproduce: the driver refuses ``--cb K``
with interactions.

Labels (:func:`chosen_of`): the first ``a:c:p`` with a cost and a probability > 0 when the
line has several, else its only one (1-based action ``a``); the logged action is
``a - 1``.  No shared line is made.
"""

from __future__ import annotations

import numpy as np

from streamlearn.system.jit import jit


def index_mask(k: int, width: int) -> int:
    """VW's ``custom_index_mask``: ``2^bitlen(K·W) - 1``."""
    return (1 << (k * width).bit_length()) - 1


def index_scale(width: int) -> int:
    """``S``: the feature width ``W`` rounded up to a power of 2 (VW's weights per feature)."""
    return 1 << (width - 1).bit_length()


@jit
def copy_to_adf(indptr, indices, values, ns, status, k, width, scale, bits, cim, act_ptr, rows,
                sub, out_ptr, out_idx, out_val, out_ns):  # fmt: skip
    """Write K action rows per usable row (``width`` W, ``scale`` S: the module doc); returns
    the examples written.

    ``act_ptr`` (int64[m + 1]), ``rows`` (each example's source row), ``sub`` (each action
    row's weight window: 0), ``out_ptr``/``out_idx``/``out_val`` (the action rows'
    features; ``out_idx`` VW's rewritten index, read with step 1) must have room for K rows
    per usable row.
    """
    wmask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    keep = ~np.uint64(cim)
    m = 0
    r_out = 0
    t_out = 0
    out_ptr[0] = 0
    act_ptr[0] = 0
    for r in range(indptr.shape[0] - 1):
        if status[r] != 0:
            continue
        rows[m] = r
        for a in range(k):
            off = np.uint64(a * width)
            for t in range(indptr[r], indptr[r + 1]):
                i = np.uint64(indices[t]) * np.uint64(scale)
                out_idx[t_out] = ((i & keep) + off) & wmask
                out_val[t_out] = values[t]
                out_ns[t_out] = ns[t]
                t_out += 1
            sub[r_out] = 0
            r_out += 1
            out_ptr[r_out] = t_out
        m += 1
        act_ptr[m] = r_out
    return m


def chosen_of(ptr: np.ndarray, cls: np.ndarray, cost: np.ndarray, prob: np.ndarray,
              r: int) -> tuple[int, float, float]:  # fmt: skip
    """The logged (1-based action, cost, probability) of row ``r``'s label entries, as
    ``cb_to_cb_adf`` picks it; action 0 when the row is a test example."""
    lo, hi = int(ptr[r]), int(ptr[r + 1])
    if hi == lo:
        return 0, 0.0, 0.0
    if hi - lo > 1:
        for q in range(lo, hi):
            if cost[q] == cost[q] and prob[q] > 0.0:
                return int(cls[q]), float(cost[q]), float(prob[q])
        return 0, 0.0, 0.0
    if cost[lo] != cost[lo]:
        return 0, 0.0, 0.0
    return int(cls[lo]), float(cost[lo]), float(prob[lo])
