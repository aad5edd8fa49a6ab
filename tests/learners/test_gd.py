"""gd (VW's default update) equals its dense reference; untouched slots; options; models."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.learners import gd
from streamlearn.learners.base import G_T, make_params, new_rows, new_stats
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from streamlearn.run.runner import run_kernel
from tests import reference
from tests.marks import slow_except
from tests.streams import Stream, random_stream, run_lazy
from tests.unix import invoke, text_data

SUBSETS = [(a, n, i) for a in (True, False) for n in (True, False) for i in (True, False)]


def close(w, w_ref, preds, p_ref, rtol):
    """Equal to ``rtol`` of the largest weight / prediction (float32 rounding can differ)."""
    scale = max(float(np.max(np.abs(w_ref))), 1e-30)
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=rtol * scale)
    ok = ~np.isnan(p_ref)
    np.testing.assert_array_equal(np.isnan(preds), ~ok)
    pscale = max(float(np.max(np.abs(p_ref[ok]))), 1e-30)
    np.testing.assert_allclose(preds[ok], p_ref[ok], rtol=0, atol=rtol * pscale)


def defaults(adaptive, normalized):
    """VW's rate and t0 for an update rule."""
    eta = 0.5 if adaptive and normalized else 10.0
    t0 = 0.0 if adaptive or normalized else 1.0
    return eta, t0


def wide_stream(seed: int, n: int = 300, bits: int = 6) -> Stream:
    """Feature values spanning 1e-3 to 1e3, each slot's scale growing now and then."""
    st = random_stream(seed, n=n, bits=bits, classification=True)
    rng = np.random.default_rng(seed + 100)
    st.values = st.values * 10.0 ** rng.uniform(-3, 3, size=st.values.size)
    return st


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize(("adaptive", "normalized", "invariant"), SUBSETS)
@pytest.mark.parametrize("seed", range(2))
def test_kernel_equals_reference(loss_id, adaptive, normalized, invariant, seed):
    """Every update rule, with l1/l2, power_t and t0 drawn per seed, in 1 to 3 batches."""
    rng = np.random.default_rng(seed)
    stream = random_stream(seed, n=250, classification=loss_id != SQUARED)
    eta, t0 = defaults(adaptive, normalized)
    if loss_id == SQUARED and not normalized:
        eta = min(eta, 0.5)  # unnormalized squared loss at rate 10 diverges
    power_t = [0.5, 0.3, 1.0][seed % 3] if seed else 0.5
    t0 = t0 + [0.0, 2.0][seed]
    l1, l2 = [(0.0, 0.0), (1e-3, 1e-3)][seed]
    kw = dict(power_t=power_t, l1=l1, l2=l2, adaptive=adaptive, normalized=normalized,
              invariant=invariant)  # fmt: skip
    params = make_params(learning_rate=eta, initial_t=t0, **kw)
    w, preds, _ = run_lazy(gd.SPEC, params, stream, loss_id, chunks=1 + int(rng.integers(3)))
    w_ref, p_ref, _, _ = reference.vw_gd(stream, loss_id, eta0=eta, t0=t0, **kw)
    close(w, w_ref, preds, p_ref, rtol=1e-4)


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC])
@pytest.mark.parametrize(("adaptive", "normalized", "invariant"), SUBSETS)
@pytest.mark.parametrize(("seed", "nnz"),
                         slow_except([(0, 150), (1, 130), (2, 200), (3, 300)], 0, unpack=True))
def test_long_rows_equal_the_reference(loss_id, adaptive, normalized, invariant, seed, nnz):
    """Rows longer than the kernel's chunk of rates (gd.CHUNK), each slot met several
    times in a row (64 slots), some at growing scales: every visit sees the state its
    earlier visits left, across chunk boundaries, as in the one-loop reference."""
    stream = random_stream(seed, n=120, bits=6, nnz=nnz, classification=loss_id != SQUARED)
    if seed % 2:  # scales that grow: weights rescaled mid-row
        rng = np.random.default_rng(seed)
        stream.values = stream.values * 10.0 ** rng.uniform(-2, 2, size=stream.values.size)
    assert np.diff(stream.indptr).max() > gd.CHUNK
    eta, t0 = defaults(adaptive, normalized)
    eta = min(eta, 0.05)  # hundreds of features a row: a small rate keeps unnormalized runs finite
    power_t = [0.5, 0.3][seed % 2]
    kw = dict(power_t=power_t, adaptive=adaptive, normalized=normalized, invariant=invariant)
    params = make_params(learning_rate=eta, initial_t=t0, **kw)
    w, preds, _ = run_lazy(gd.SPEC, params, stream, loss_id, chunks=2)
    w_ref, p_ref, _, _ = reference.vw_gd(stream, loss_id, eta0=eta, t0=t0, **kw)
    assert np.isfinite(w).all()
    close(w, w_ref, preds, p_ref, rtol=1e-4)


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC])
def test_float32_kernel_computes_the_double_precision_math(loss_id):
    """The same update in float64 gives the same predictions to single-precision noise."""
    stream = random_stream(5, n=300, classification=loss_id == LOGISTIC)
    w, preds, _ = run_lazy(gd.SPEC, make_params(initial_t=0.0), stream, loss_id)
    w64, p64, _, _ = reference.vw_gd(stream, loss_id, dt=np.float64)
    close(w, w64, preds, p64, rtol=1e-4)


@pytest.mark.parametrize(("adaptive", "normalized"), [(True, True), (False, True)])
def test_rescaling_when_a_feature_grows(adaptive, normalized):
    """Values spanning 1e-3..1e3: each slot's weight is rescaled as its largest |x| grows."""
    stream = wide_stream(1)
    eta, t0 = defaults(adaptive, normalized)
    kw = dict(adaptive=adaptive, normalized=normalized, invariant=True)
    params = make_params(learning_rate=eta, initial_t=t0, **kw)
    bits = int(np.log2(stream.d))
    table = gd.SPEC.new_table(bits)
    gstate = gd.SPEC.init_gstate(params)
    run_kernel(gd.SPEC.train_batch, table, gstate, params, LOGISTIC, stream, new_stats(),
               new_rows())  # fmt: skip
    w_ref, p_ref, _, m_ref = reference.vw_gd(stream, LOGISTIC, eta0=eta, t0=t0, **kw)
    np.testing.assert_array_equal(table[:, 2], m_ref.astype(np.float64))  # max |x| per slot
    w = np.empty(stream.d)
    gd.SPEC.current_weights(table, gstate, params, np.arange(stream.d, dtype=np.uint32), w)
    close(w, w_ref, w, w_ref, rtol=1e-4)
    # ... and the rescaling matters: skipping it gives other weights
    grew = 0
    for j in range(stream.d):
        seen = np.abs(stream.values[stream.indices == j])
        grew += int(np.any(seen[1:] > np.maximum.accumulate(seen)[:-1]))
    assert grew > 10


def test_rescale_of_one_weight_by_hand():
    """One slot, |x| = 0.5 then 4 (squared loss, VW's defaults): the two steps worked out.

    Before the second step the weight is multiplied by 0.5 / 4 (adaptive rates:
    (m_old / m_new)^(2(1 − power_t)) = m_old / m_new), as if the first x had
    been on the new scale.
    """
    params = make_params(initial_t=0.0)
    stream = Stream(np.array([0, 1, 2]), np.array([1, 1], dtype=np.uint32), np.array([0.5, 4.0]),
                    np.array([1.0, 5.0]), np.ones(2), np.zeros(2), np.zeros(2, dtype=np.int32),
                    4)  # fmt: skip
    table = gd.SPEC.new_table(2)
    gstate = gd.SPEC.init_gstate(params)
    preds = run_kernel(gd.SPEC.train_batch, table, gstate, params, SQUARED, stream, new_stats(),
                       new_rows())  # fmt: skip

    def step(w, G, x, y, S, W, m_old):
        p = min(max(w * x, 0.0), y)  # clipped to [0, labels so far]
        G += 4 * (p - y) ** 2 * x * x
        if m_old:
            w *= m_old / abs(x)  # the rescale
        m = abs(x)
        S, W = S + 1.0, W + 1.0  # Σ (x/m)² = 1 each time
        mu = (W / S) ** 0.5
        r = G**-0.5 / m
        ppu = mu * x * x * r
        u = (y - p) * (1 - np.exp(-2 * 0.5 * ppu)) / ppu
        return w + mu * u * r * x, G, p, S, W

    w, G, p1, S, W = step(0.0, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0)
    w, G, p2, S, W = step(w, G, 4.0, 5.0, S, W, 0.5)
    assert (preds[0], preds[1]) == pytest.approx((p1, p2), rel=1e-6)
    assert table[1, 0] == pytest.approx(w, rel=1e-6)
    assert (table[1, 1], table[1, 2]) == (pytest.approx(G, rel=1e-6), 4.0)
    w_ref, _, _, _ = reference.vw_gd(stream, SQUARED)
    assert table[1, 0] == pytest.approx(w_ref[1], rel=1e-6)


@pytest.mark.parametrize("regs", [(0.0, 0.0), (1e-4, 1e-3)])
def test_weight_seen_once_then_untouched_for_a_million_examples(regs):
    """Slot 1 appears once, then 10^6 examples touch only slot 2: slot 1's state is untouched
    (no timestamps), and it reads as c·sign(v)·max(0, |v| − g) whatever g and c became
    (with l2, settled several times on the way: contraction below 1e-9)."""
    l1, l2 = regs
    params = make_params(initial_t=0.0, l1=l1, l2=l2)
    table = gd.SPEC.new_table(2)
    gstate = gd.SPEC.init_gstate(params)
    n = 10**6
    head = Stream(np.array([0, 1]), np.array([1], dtype=np.uint32), np.array([1.5]),
                  np.array([1.0]), np.ones(1), np.zeros(1), np.zeros(1, dtype=np.int32), 4)
    run_kernel(gd.SPEC.train_batch, table, gstate, params, LOGISTIC, head, new_stats(), new_rows())
    row = table[1].copy()
    syncs = gstate[gd.G_SYNCS]
    rng = np.random.default_rng(0)
    gap = Stream(np.arange(n + 1), np.full(n, 2, dtype=np.uint32), rng.uniform(0.5, 2.0, n),
                 rng.choice([-1.0, 1.0], n), np.ones(n), np.zeros(n), np.zeros(n, dtype=np.int32),
                 4)  # fmt: skip
    run_kernel(gd.SPEC.train_batch, table, gstate, params, LOGISTIC, gap, new_stats(), new_rows())
    w = np.empty(1)
    gd.SPEC.current_weights(table, gstate, params, np.array([1], dtype=np.uint32), w)
    if l2 == 0.0:
        np.testing.assert_array_equal(table[1], row)  # not one bit moved
        assert w[0] == np.float32(row[0])
    else:
        assert gstate[gd.G_SYNCS] > syncs  # gravity and contraction were settled into v
        np.testing.assert_array_equal(table[1, 1:], row[1:])  # G and max |x| untouched
        assert 0.0 <= abs(w[0]) < abs(row[0])
    # a prediction-only example with slot 1 alone reads exactly that weight
    tail = Stream(np.array([0, 1]), np.array([1], dtype=np.uint32), np.array([1.0]),
                  np.array([np.nan]), np.ones(1), np.zeros(1), np.zeros(1, dtype=np.int32), 4)
    p = run_kernel(gd.SPEC.train_batch, table, gstate, params, LOGISTIC, tail, new_stats(),
                   new_rows())  # fmt: skip
    assert p[0] == pytest.approx(w[0], rel=1e-6, abs=1e-30)


@pytest.mark.parametrize("regs", [(0.0, 0.0), (1e-3, 1e-2)])
def test_untouched_weight_over_a_long_gap_equals_reference(regs):
    """The same over 10^4 examples, against the dense reference (every weight read every step)."""
    l1, l2 = regs
    n = 10**4
    rng = np.random.default_rng(1)
    idx = np.concatenate([[1], np.full(n, 2), [1]]).astype(np.uint32)
    vals = np.concatenate([[1.5], rng.uniform(0.5, 2.0, n), [1.0]])
    labels = np.concatenate([[1.0], rng.choice([-1.0, 1.0], n), [np.nan]])
    st = Stream(np.arange(n + 3), idx, vals, labels, np.ones(n + 2), np.zeros(n + 2),
                np.zeros(n + 2, dtype=np.int32), 4)  # fmt: skip
    params = make_params(initial_t=0.0, l1=l1, l2=l2)
    w, preds, _ = run_lazy(gd.SPEC, params, st, LOGISTIC, chunks=3)
    w_ref, p_ref, _, _ = reference.vw_gd(st, LOGISTIC, l1=l1, l2=l2)
    close(w, w_ref, preds, p_ref, rtol=1e-4)


# ---- through the command line ------------------------------------------------


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "d.vw"
    p.write_text(text_data(1500))
    return p


def run(args, tmp_path):
    rep = tmp_path / "r.json"
    r = invoke(["train", *args, "--report", str(rep), "--quiet"])
    assert r.exit_code == 0, r.output
    return json.loads(rep.read_text())


def test_default_is_gd_with_vws_options(tmp_path, data):
    rep = run([str(data)], tmp_path)
    c = rep["config"]
    assert rep["learner"] == "gd" and c["algo"] == "gd"
    assert (c["adaptive"], c["normalized"], c["invariant"]) == (True, True, True)
    assert (c["learning_rate"], c["initial_t"], c["power_t"]) == (0.5, 0.0, 0.5)


@pytest.mark.parametrize(
    ("flags", "want", "rate", "t0"),
    [
        (["--adaptive"], (True, False, False), 10.0, 0.0),
        (["--normalized", "--invariant"], (False, True, True), 10.0, 0.0),
        (["--adaptive", "--normalized"], (True, True, False), 0.5, 0.0),
        (["--invariant"], (False, False, True), 10.0, 1.0),
        (["--sgd", "--invariant"], (False, False, True), 10.0, 1.0),  # VW: --sgd turns off the rest
    ],
)
def test_naming_update_rules_turns_on_only_those(tmp_path, data, flags, want, rate, t0):
    c = run([str(data), *flags], tmp_path)["config"]
    assert c["algo"] == "gd"
    assert (c["adaptive"], c["normalized"], c["invariant"]) == want
    assert (c["learning_rate"], c["initial_t"]) == (rate, t0)


def test_sgd_is_vws_and_ftrl_a_spelling_of_algo(tmp_path, data):
    """``--sgd`` is VW's: gd with the three rules off (rate 10, t0 1, single precision);
    ``--algo sgd`` stays the papers' double-precision SGD."""
    rep = run([str(data), "--sgd"], tmp_path)
    assert rep["learner"] == "gd"
    c = rep["config"]
    assert (c["adaptive"], c["normalized"], c["invariant"]) == (False, False, False)
    assert (c["learning_rate"], c["initial_t"], c["power_t"]) == (10.0, 1.0, 0.5)
    assert run([str(data), "--algo", "sgd"], tmp_path)["learner"] == "sgd"
    assert run([str(data), "--ftrl"], tmp_path)["learner"] == "ftrl"
    rep = run([str(data), "--ftrl", "--ftrl_alpha", "0.1", "--ftrl-beta", "2"], tmp_path)
    assert (rep["config"]["ftrl_alpha"], rep["config"]["ftrl_beta"]) == (0.1, 2.0)


@pytest.mark.parametrize(
    "args",
    [
        ["--sgd", "--algo", "tg"],
        ["--ftrl", "--algo", "gd"],
        ["--adaptive", "--algo", "sgd"],
        ["--sgd", "--ftrl"],
        ["--ftrl-alpha", "0.1"],  # gd
        ["--algo", "ftrl", "--ftrl-alpha", "0"],
        ["--min-prediction", "1"],  # the other bound is 0, as in VW: an empty range
        ["--algo", "tg", "--normalized"],
    ],
)
def test_conflicting_update_options_are_usage_errors(data, args):
    r = invoke(["train", str(data), *args, "--quiet"])
    assert r.exit_code == 2, r.output


def test_update_rule_is_fixed_by_the_model(tmp_path, data):
    m = tmp_path / "m.sl"
    assert invoke(["train", str(data), "-f", str(m), "--quiet"]).exit_code == 0
    r = invoke(["train", "-i", str(m), str(data), "--adaptive", "--quiet"])
    assert r.exit_code == 2 and "normalized" in r.output
    # the same rule named again is fine
    assert invoke(["train", "-i", str(m), str(data), "--quiet"]).exit_code == 0


def test_l1_model_on_disk_holds_the_truncated_weights(tmp_path, data):
    m, rd = tmp_path / "m.sl", tmp_path / "r.txt"
    rep = run([str(data), "--l1", "1e-3", "-f", str(m), "--readable-model", str(rd)], tmp_path)
    model = model_io.load(m)
    dense = run([str(data)], tmp_path)
    assert 0 < model.nnz == rep["nonzero_weights"] < dense["nonzero_weights"] / 2
    # the saved weights are what prediction uses: truncated (exact zeros) and contracted
    state_w = model.state[:, 0]
    assert np.count_nonzero(model.weights) < np.count_nonzero(state_w)
    g = np.float32(model.gstate[gd.G_GRAVITY])
    c = np.float32(model.gstate[gd.G_CONTRACTION])
    want = [float(gd.trunc(np.float32(v), g) * c) for v in state_w]
    np.testing.assert_array_equal(model.weights, want)
    rows = [ln for ln in rd.read_text().splitlines() if not ln.startswith("#")]
    assert len(rows) == model.nnz


def test_predict_scores_with_the_saved_weights(tmp_path, data):
    m, p1 = tmp_path / "m.sl", tmp_path / "p1.txt"
    run([str(data), "--l1", "1e-4", "--loss", "logistic", "-f", str(m)], tmp_path)
    r = invoke(["predict", "-i", str(m), str(data), "-p", str(p1), "--quiet"])
    assert r.exit_code == 0, r.output
    model = model_io.load(m)
    w = model.dense_weights()
    from streamlearn.io import read_batches
    from streamlearn.learners.base import predict_batch

    want = []
    for b in read_batches([str(data)], bits=model.config.bits):
        out = np.empty(b.n)
        predict_batch(w, b.indptr, b.indices, b.values, b.bases, b.status, out)
        want.append(out)
    got = np.loadtxt(p1, usecols=0)  # written with 9 significant digits
    # sl predict scores with gd's own float32 kernel, as -t and VW do (one model, one score):
    # the float64 dot product of the saved weights to float32's precision
    np.testing.assert_allclose(got, np.clip(np.concatenate(want), -50, 50), rtol=1e-6,
                               atol=5e-7)  # fmt: skip
    assert model.gstate[G_T] == 1500


def test_inspect_and_invert_hash_with_gd(tmp_path, data):
    m, ih = tmp_path / "m.sl", tmp_path / "ih.txt"
    run([str(data), "-f", str(m), "--invert-hash", str(ih)], tmp_path)
    out = invoke(["inspect", str(m)]).output
    assert "gd" in out
    names = [ln.split("\t")[2] for ln in ih.read_text().splitlines() if not ln.startswith("#")]
    assert any(n.startswith("a^f") for n in names)


def test_passes_holdout_and_cache_with_gd(tmp_path, data):
    args = [str(data), "--passes", "3", "--cache", str(tmp_path / "c"), "-f", str(tmp_path / "m")]
    rep = run(args, tmp_path)
    assert rep["passes_run"] == 3 and rep["holdout_examples"] > 0
    again = run(args, tmp_path)  # from the cache
    assert again["holdout_loss"] == rep["holdout_loss"]


def test_a_model_without_the_rate_column_continues_exactly(tmp_path, data):
    """gd models written before the fourth (rate) column load with r = 0 and continue as the
    kernel would have: a rate is only read back by a zero-gradient update."""
    m, old, a, b = (tmp_path / n for n in ("m.sl", "old.sl", "a.sl", "b.sl"))
    run([str(data), "-f", str(m)], tmp_path)
    model = model_io.load(m)
    assert model.state.shape[1] == 4 and model.state.dtype == np.float32
    model.state = np.ascontiguousarray(model.state[:, :3])
    model_io.save(model, old)
    run(["-i", str(m), str(data), "-f", str(a)], tmp_path)
    run(["-i", str(old), str(data), "-f", str(b)], tmp_path)
    np.testing.assert_array_equal(model_io.load(a).weights, model_io.load(b).weights)
