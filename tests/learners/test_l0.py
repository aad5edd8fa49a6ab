"""L0-constrained SGD: the heap kernel against H_K over the whole table, options, models."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.learners import l0
from streamlearn.learners.base import make_params, new_rows, new_stats
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from streamlearn.run.runner import run_kernel
from tests import reference
from tests.streams import random_stream, run_lazy
from tests.unix import invoke, text_data


def params(K, power_t, eta0=0.3, t0=1.0):
    return make_params(learning_rate=eta0, power_t=power_t, initial_t=t0, topk=K)


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize("power_t", [0.0, 0.5])
@pytest.mark.parametrize("K", [1, 2, 5, 17, 40, 100])
@pytest.mark.parametrize("seed", range(4))
def test_heap_kernel_equals_hard_thresholding_the_whole_table(loss_id, power_t, K, seed):
    stream = random_stream(seed, n=300, bits=6, classification=loss_id != SQUARED)
    eta0 = 0.05 if loss_id == SQUARED else 0.3
    w, preds, _ = run_lazy(l0.SPEC, params(K, power_t, eta0), stream, loss_id)
    w_ref, p_ref = reference.l0_sgd(stream, loss_id, eta0, power_t, 1.0, K)
    assert np.count_nonzero(w) <= K
    np.testing.assert_array_equal(np.flatnonzero(w), np.flatnonzero(w_ref))
    # the same operations in the same order; numba's exp and pow may differ from numpy's in
    # the last bit, so the weights agree to rounding and the kept slots exactly
    np.testing.assert_allclose(w, w_ref, rtol=1e-12, atol=0)
    ok = ~np.isnan(p_ref)
    np.testing.assert_allclose(preds[ok], p_ref[ok], rtol=1e-12, atol=1e-15)
    if K < 40:
        assert np.count_nonzero(w) == K  # the constraint binds on these streams


@pytest.mark.parametrize(("seed", "K"), [(11, 4), (0, 17), (3, 30)])
def test_never_more_than_k_after_any_example(seed, K):
    stream = random_stream(seed, n=300, bits=6)
    p = params(K, 0.5)
    table, gstate = l0.SPEC.new_table(6), l0.SPEC.init_gstate(p)
    stats, rows = new_stats(), new_rows()
    counts = []
    for i in range(stream.n):
        run_kernel(l0.SPEC.train_batch, table, gstate, p, LOGISTIC, stream.slice(i, i + 1),
                   stats, rows)  # fmt: skip
        live = np.flatnonzero(table[:, 0])
        counts.append(live.size)
        assert live.size <= K
        # the heap holds exactly the live slots, each knowing its position
        heap = gstate[l0.H0 : l0.H0 + int(gstate[l0.H_SIZE])].astype(np.int64)
        assert sorted(heap) == list(live)
        assert all(int(table[j, 1]) - 1 == k for k, j in enumerate(heap))
        # the heap order: no child goes before its parent, (|w|, -slot) as key
        for c in range(1, heap.size):
            parent, child = heap[(c - 1) // 2], heap[c]
            assert (abs(table[parent, 0]), -parent) <= (abs(table[child, 0]), -child)
    assert max(counts) == min(K, 64)


def test_ties_go_to_the_smaller_slot():
    w = np.array([0.0, -2.0, 1.0, 2.0, -1.0, 1.0])
    np.testing.assert_array_equal(reference.hard_threshold(w, 3), [0, -2, 1, 2, 0, 0])
    # the kernel: three slots always together with the same value tie at every step
    from tests.streams import Stream

    n = 20
    indptr = np.arange(0, 3 * n + 1, 3, dtype=np.int64)
    indices = np.tile(np.array([9, 4, 6], dtype=np.uint32), n)
    values = np.ones(3 * n)
    ones = np.ones(n)
    stream = Stream(indptr, indices, values, np.where(np.arange(n) % 2, 1.0, -1.0), ones,
                    np.zeros(n), np.zeros(n, dtype=np.int32), 16)  # fmt: skip
    w, _, _ = run_lazy(l0.SPEC, params(2, 0.5), stream, LOGISTIC)
    w_ref, _ = reference.l0_sgd(stream, LOGISTIC, 0.3, 0.5, 1.0, 2)
    np.testing.assert_array_equal(w, w_ref)
    # 4 and 6 always tie: 4 is kept with them whatever the third (9, dropped at first) does
    assert 4 in np.flatnonzero(w) and 6 not in np.flatnonzero(w)


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "d.vw"
    p.write_text(text_data(1500))
    return p


def test_cli_model_and_exact_resume(tmp_path, data):
    m, m1, m2, rep = (tmp_path / n for n in ("m.sl", "m1.sl", "m2.sl", "r.json"))
    half = tmp_path / "half.vw"
    lines = data.read_text().splitlines(keepends=True)
    half.write_text("".join(lines[:700]))
    rest = tmp_path / "rest.vw"
    rest.write_text("".join(lines[700:]))
    both = ["--algo", "l0", "--top-k", "25", "--loss", "logistic", "--quiet"]
    assert invoke(["train", str(data), *both, "-f", str(m), "--report", str(rep)]).exit_code == 0
    report = json.loads(rep.read_text())
    assert report["nonzero_weights"] == 25 and report["learner"] == "l0"
    assert model_io.load(m).nnz == 25
    assert invoke(["train", str(half), *both, "-f", str(m1)]).exit_code == 0
    r = invoke(["train", "-i", str(m1), str(rest), "--quiet", "-f", str(m2)])
    assert r.exit_code == 0, r.output
    a, b = model_io.load(m), model_io.load(m2)
    np.testing.assert_array_equal(a.slots, b.slots)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.gstate, b.gstate)
    p = tmp_path / "p.txt"
    assert invoke(["predict", "-i", str(m), str(data), "-p", str(p), "--quiet"]).exit_code == 0


@pytest.mark.parametrize(
    "args",
    [["--algo", "l0"], ["--top-k", "5"], ["--algo", "l0", "--top-k", "0"],
     ["--algo", "l0", "--top-k", "5", "--l1", "1e-3"]],
)  # fmt: skip
def test_option_errors(data, args):
    r = invoke(["train", str(data), *args, "--quiet"])
    assert r.exit_code == 2, r.output


def test_continuing_changes_neither_k_nor_warm_starts_into_l0(tmp_path, data):
    m, g = tmp_path / "m.sl", tmp_path / "g.sl"
    assert invoke(["train", str(data), "--algo", "l0", "--top-k", "5", "-f", str(m),
                   "--quiet"]).exit_code == 0  # fmt: skip
    assert invoke(["train", "-i", str(m), str(data), "--top-k", "6", "--quiet"]).exit_code == 2
    assert invoke(["train", str(data), "--sgd", "-f", str(g), "--quiet"]).exit_code == 0
    r = invoke(["train", "-i", str(g), str(data), "--algo", "l0", "--top-k", "5", "--quiet"])
    assert r.exit_code == 2, r.output


def test_k_beyond_the_table_keeps_everything(tmp_path, data):
    rep = tmp_path / "r.json"
    r = invoke(["train", str(data), "--algo", "l0", "--top-k", "1000000", "-b", "8",
                "--report", str(rep), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    sgd = tmp_path / "s.json"
    invoke(["train", str(data), "--algo", "sgd", "-l", "0.5", "-b", "8", "--report", str(sgd),
            "--quiet"])  # fmt: skip
    a, b = json.loads(rep.read_text()), json.loads(sgd.read_text())
    assert a["average_loss"] == b["average_loss"]


@pytest.mark.parametrize("K", [8, 20, 40])
@pytest.mark.parametrize("seed", range(6))
def test_rows_moving_many_live_weights_at_once(seed, K):
    """Long rows over few slots: many live keys change in one step (each must be re-keyed
    before the next is sifted, or the heap drops the wrong weight)."""
    stream = random_stream(100 + seed, n=400, bits=6, nnz=14)
    p = params(K, 0.0, 0.5)
    table, gstate = l0.SPEC.new_table(6), l0.SPEC.init_gstate(p)
    stats, rows = new_stats(), new_rows()
    ref = []
    reference.l0_sgd(stream, LOGISTIC, 0.5, 0.0, 1.0, K, check=lambda w: ref.append(w.copy()))
    k = 0
    for i in range(stream.n):
        run_kernel(l0.SPEC.train_batch, table, gstate, p, LOGISTIC, stream.slice(i, i + 1),
                   stats, rows)  # fmt: skip
        if stream.status[i] == 0 and not np.isnan(stream.labels[i]):
            np.testing.assert_array_equal(np.flatnonzero(table[:, 0]), np.flatnonzero(ref[k]))
            k += 1
