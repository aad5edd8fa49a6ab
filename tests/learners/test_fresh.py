"""Every learner: a slot's snapshots are read only while its weight is non-zero.

Tables start as ``np.zeros`` (pages mapped on first write) and model files
store only rows with a non-zero weight, both relying on this.  Filling the
other columns of every zero-weight row with garbage must change nothing.
SMIDAS is the exception for its column 2: a slot's term of the norm sum,
which must be 0 while θ_j = 0 (a fresh zero row, or a row the model file
leaves out, is exactly that).
"""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.learners import spec_by_name
from streamlearn.learners.base import make_params, new_rows, new_stats
from streamlearn.learners.losses import LOGISTIC, SQUARED
from streamlearn.run.runner import run_kernel
from tests.streams import random_stream

CASES = [  # (variant, options, columns that may hold anything while the weight is 0)
    ("sgd", {}, []),
    ("tg", dict(l1=0.01, theta=0.5, period=3), [1]),
    ("sgd_elastic", dict(l1=0.01, l2=0.05), [1, 2]),
    ("fobos_l1", dict(l1=0.01), [1]),
    ("fobos_l2", dict(l2=0.05), [1]),
    ("fobos_enet", dict(l1=0.01, l2=0.05), [1, 2]),
    ("smidas", dict(l1=0.001, p=6.0, norm_refresh=50), [1]),
]


def _train(spec, params, stream, loss_id, table):
    gstate = spec.init_gstate(params)
    preds = run_kernel(spec.train_batch, table, gstate, params, loss_id, stream, new_stats(),
                       new_rows())
    w = np.empty(stream.d)
    spec.current_weights(table, gstate, params, np.arange(stream.d, dtype=np.uint32), w)
    return w, preds


@pytest.mark.parametrize(("name", "opts", "free"), CASES)
@pytest.mark.parametrize("power_t", [0.0, 0.5])
@pytest.mark.parametrize("seed", range(3))
def test_zero_weight_rows_are_never_read(name, opts, free, power_t, seed):
    spec = spec_by_name(name)
    assert not any(spec.fresh), "fresh rows must be all zeros (np.zeros tables)"
    loss_id = LOGISTIC if seed % 2 else SQUARED
    stream = random_stream(seed, n=300, bits=6, classification=loss_id == LOGISTIC)
    params = make_params(learning_rate=0.2, power_t=power_t, **opts)
    clean = spec.new_table(6)
    dirty = spec.new_table(6)
    rng = np.random.default_rng(seed)
    for c in free:
        dirty[:, c] = rng.uniform(-3.0, 3.0, size=dirty.shape[0])
    w_clean, p_clean = _train(spec, params, stream, loss_id, clean)
    w_dirty, p_dirty = _train(spec, params, stream, loss_id, dirty)
    np.testing.assert_array_equal(p_dirty, p_clean)
    np.testing.assert_array_equal(w_dirty, w_clean)
    assert np.count_nonzero(w_clean) > 0
