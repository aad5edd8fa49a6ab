"""One-against-all (VW's --oaa K): the kernels equal K dense binary learners; VW's slots;
labels; predictions, probabilities; resume; passes, grids, predict, inspect, invert-hash."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn import model as model_io
from streamlearn.config import ConfigError, TrainConfig
from streamlearn.learners import oaa
from streamlearn.learners.base import (
    P_INDEXING,
    P_INDEXING_AT,
    S_CLASS_MOVED,
    S_LOSS,
    make_params,
    new_rows,
    new_stats,
)
from streamlearn.learners.losses import HINGE, LOGISTIC, SQUARED
from streamlearn.run.runner import run_kernel
from tests import reference
from tests.classes import class_weights, run_classes
from tests.marks import slow_except
from tests.streams import Stream, random_stream
from tests.unix import invoke


def class_stream(seed: int, k: int, n: int = 300, bits: int = 5) -> Stream:
    """A random stream whose labels are classes 1..K (a few unlabeled, a few of weight 0)."""
    s = random_stream(seed, n=n, bits=bits)
    rng = np.random.default_rng(seed + 100)
    s.labels[:] = rng.integers(1, k + 1, size=n)
    s.labels[rng.random(n) < 0.03] = np.nan
    s.weights[rng.random(n) < 0.03] = 0.0
    return s


def run_oaa(spec, params, stream: Stream, loss_id: int, k: int, chunks: int = 2):  # noqa: ANN001, ANN201
    """:func:`tests.classes.run_classes` with K + 1 columns: (table, gstate, predictions[n,
    K + 1], stats)."""
    return run_classes(spec, params, stream, loss_id, k, k + 1, chunks)


def assert_same(scores, classes, w, s_ref, c_ref, w_ref, rtol):
    ok = ~np.isnan(c_ref)
    np.testing.assert_array_equal(np.isnan(scores[:, 0]), ~ok)
    scale = max(float(np.max(np.abs(s_ref[ok]))), 1e-30)
    np.testing.assert_allclose(scores[ok], s_ref[ok], rtol=0, atol=rtol * scale)
    # the same class wherever the best two scores are not within rounding of each other
    top2 = np.sort(s_ref[ok], axis=1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > 10 * rtol * scale
    np.testing.assert_array_equal(classes[ok][clear], c_ref[ok][clear])
    wscale = max(float(np.max(np.abs(w_ref))), 1e-30)
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=rtol * wscale)


GD_CASES = [
    {},
    dict(adaptive=False),
    dict(normalized=False),
    dict(adaptive=False, normalized=False, invariant=False, learning_rate=0.1, initial_t=1.0),
    dict(l1=1e-3),
    dict(l2=1e-2),
    dict(power_t=0.25, initial_t=3.0),
]


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize("opts", GD_CASES)
@pytest.mark.parametrize(("k", "seed"), slow_except([(3, 0), (4, 1), (5, 2)], 0, unpack=True))
def test_gd_kernel_equals_k_dense_binary_learners(loss_id, opts, k, seed):
    stream = class_stream(seed, k)
    kw = dict(opts)
    params = make_params(oaa=k, **{"learning_rate": 0.5, "initial_t": 0.0, **kw})
    table, gstate, preds, _ = run_oaa(oaa.GD, params, stream, loss_id, k, chunks=1 + seed)
    ref = dict(kw)
    ref["eta0"] = ref.pop("learning_rate", 0.5)
    ref["t0"] = ref.pop("initial_t", 0.0)
    w_ref, s_ref, c_ref = reference.oaa_gd(stream, loss_id, k, **ref)
    w = class_weights(oaa.GD, table, gstate, params, k, stream.d)
    assert_same(preds[:, 1:], preds[:, 0], w, s_ref, c_ref, w_ref, rtol=3e-4)


@pytest.mark.parametrize("loss_id", [SQUARED, LOGISTIC, HINGE])
@pytest.mark.parametrize(("alpha", "beta", "l1", "l2"),
                         [(0.5, 1.0, 0.0, 0.0), (0.1, 0.5, 0.2, 0.3)])  # fmt: skip
@pytest.mark.parametrize(("k", "seed"), [(3, 0), (6, 1)])
def test_ftrl_kernel_equals_k_dense_binary_learners(loss_id, alpha, beta, l1, l2, k, seed):
    stream = class_stream(seed, k)
    params = make_params(oaa=k, ftrl_alpha=alpha, ftrl_beta=beta, l1=l1, l2=l2)
    table, gstate, preds, _ = run_oaa(oaa.FTRL, params, stream, loss_id, k)
    w_ref, s_ref, c_ref = reference.oaa_ftrl(stream, loss_id, k, alpha, beta, l1, l2)
    w = class_weights(oaa.FTRL, table, gstate, params, k, stream.d)
    assert_same(preds[:, 1:], preds[:, 0], w, s_ref, c_ref, w_ref, rtol=1e-5)


def test_progressive_loss_is_the_weighted_error_and_probabilities_sum_to_one():
    k = 4
    stream = class_stream(5, k, n=400)
    params = make_params(oaa=k, probabilities=True, learning_rate=0.5, initial_t=0.0)
    _, _, preds, stats = run_oaa(oaa.GD, params, stream, LOGISTIC, k)
    from streamlearn.run.report import summary

    ok = (stream.status == 0) & ~np.isnan(stream.labels)
    wrong = preds[ok, 0] != stream.labels[ok]
    s = summary(stats, LOGISTIC, 0, classes=k, probabilities=True)
    a = stream.weights[ok]
    assert s["average_loss"] == pytest.approx(np.sum(a * wrong) / np.sum(a), rel=1e-12)
    assert s["accuracy"] == pytest.approx(1.0 - s["average_loss"], rel=1e-12)
    probs = preds[stream.status == 0, 1:]
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)
    # the class predicted is the most probable one (the logistic function is monotone)
    np.testing.assert_array_equal(np.argmax(probs, axis=1) + 1, preds[stream.status == 0, 0])
    py = probs[ok[stream.status == 0], (stream.labels[ok] - 1).astype(int)]
    want = np.sum(a * -np.log(py.astype(np.float32))) / np.sum(a)
    assert s["multiclass_log_loss"] == pytest.approx(want, rel=1e-5)


def test_slots_are_vws():
    """Class c of feature slot h lives at (h·s + c) mod 2^b, s = K rounded up to a power of
    2: what `vw --oaa 3 --readable_model` lists for `|f a` (slot 14355 at -b 18)."""
    assert [oaa.stride(k) for k in (2, 3, 4, 5, 10, 16, 17)] == [2, 4, 4, 8, 16, 16, 32]
    from streamlearn.io import parse_bytes

    batch = parse_bytes(b"1 |f a\n", bits=18)
    h = int(batch.indices[0])
    assert h == 14355
    config = TrainConfig(oaa=3)
    table = oaa.GD.new_table(18)
    gstate = oaa.GD.init_gstate(config.params())
    run_kernel(oaa.GD.train_batch, table, gstate, config.params(), SQUARED, batch, new_stats(),
               new_rows(), 4)  # fmt: skip
    # VW 9.11: 57420 (class 1, +1), 57421 and 57422 (classes 2 and 3, -1), as its readable
    # model lists them; the constant's at 202096..202098
    assert set(np.flatnonzero(table[:, 0])) == {57420, 57421, 57422, 202096, 202097, 202098}
    assert table[57420, 0] > 0 > table[57421, 0]


def test_labels_that_are_not_classes_are_skipped_with_reasons(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |f a\n0 |f b\n3 |f a b\n|f a\n1.5 |f a\n-1 |f b\n4 |f c\n2 0.5 |f a\n"
                    "x |f a\n3 2 |f b\n2 1 0.5 |f a\n2.0 |f c\n")  # fmt: skip
    rep = tmp_path / "r.json"
    r = invoke(["train", str(data), "--oaa", "3", "--report", str(rep), "-p", "-"])
    assert r.exit_code == 0, r.output
    report = json.loads(rep.read_text())
    reasons = report["skipped_reasons"]
    assert reasons == {"label is not a class, an integer 0..K (--oaa K)": 3,
                       "bad label (not a number)": 1,
                       "a class label takes an importance weight but no base (--oaa)": 1}
    assert report["examples"] == 12 - 5
    assert ":5: label is not a class, an integer 0..K (--oaa K): 1.5 |f a" in r.output
    # the label 0 of line 2 makes the classes 0..2 (VW's rule); line 3's label 3 is then
    # no class: every class learns -1 from it, as VW does
    assert "d.vw:2: label 0: the labels number the classes 0..2 from here on" in r.output
    assert "not one of the classes 0..2 (3, or above 3): every class learns -1" in r.output
    preds = [ln for ln in r.output.splitlines() if ln in ("0", "1", "2", "3", "nan")]
    assert len(preds) == 12 and preds.count("nan") == 5
    r = invoke(["train", str(data), "--oaa", "3", "--strict"])
    assert r.exit_code == 4 and ":5: label is not a class" in r.output


def indexed_stream(seed: int, k: int, labels: str, n: int = 300) -> Stream:
    """:func:`class_stream` with labels 0..K-1 (``zero``), 1..K (``one``) or 0..K, a few
    of them outside whichever numbering the first decides (``mixed``)."""
    s = class_stream(seed, k, n=n)
    rng = np.random.default_rng(seed + 200)
    ok = ~np.isnan(s.labels)
    if labels == "zero":
        s.labels[ok] -= 1.0
    elif labels == "mixed":
        s.labels[ok & (rng.random(n) < 0.3)] = 0.0
    return s


@pytest.mark.parametrize("indexing", [None, 0, 1])
@pytest.mark.parametrize("labels", ["zero", "one", "mixed"])
@pytest.mark.parametrize(("k", "seed"),
                         slow_except([(3, 0), (4, 1), (5, 2), (2, 3)], 0, 1, unpack=True))
def test_labels_number_the_classes_as_vw_reads_them(indexing, labels, k, seed):
    """VW's --indexing, and its rule without it (the first learned label 0 or K decides,
    across batches: the kernel keeps the decision in params); labels outside the classes
    train every class -1 and count as errors; the reference is VW's oaa.cc, dense."""
    stream = indexed_stream(seed, k, labels)
    for spec, loss_id in ((oaa.GD, SQUARED), (oaa.GD, LOGISTIC), (oaa.FTRL, LOGISTIC)):
        params = make_params(oaa=k, indexing=indexing, learning_rate=0.5, initial_t=0.0)
        table, gstate, preds, stats = run_oaa(spec, params, stream, loss_id, k, chunks=3)
        if spec is oaa.GD:
            w_ref, s_ref, c_ref = reference.oaa_gd(stream, loss_id, k, indexing=indexing)
        else:
            w_ref, s_ref, c_ref = reference.oaa_ftrl(stream, loss_id, k, indexing=indexing)
        w = class_weights(spec, table, gstate, params, k, stream.d)
        assert_same(preds[:, 1:], preds[:, 0], w, s_ref, c_ref, w_ref, rtol=3e-4)
        numbering = reference.VWIndexing(indexing, k)
        moved = 0
        for y in stream.labels[(stream.status == 0) & ~np.isnan(stream.labels)]:
            moved += max(numbering.learn(y)) < 0
        assert params[P_INDEXING] == numbering.i
        assert stats[S_CLASS_MOVED] == moved
        ok = (stream.status == 0) & ~np.isnan(stream.labels)
        wrong = np.sum(stream.weights[ok] * (preds[ok, 0] != stream.labels[ok]))
        assert stats[S_LOSS] == pytest.approx(wrong, abs=1e-9)


@pytest.mark.parametrize("probabilities", [False, True])
def test_the_row_that_decides_is_shown_as_vw_shows_it(probabilities):
    """VW predicts a row before it learns it: the row whose label 0 decides is numbered
    1..K (its class is never 0: an error); with --probabilities VW accounts it after
    learning, numbered 0..K-1.  params records the decision and its row."""
    k = 3
    stream = indexed_stream(4, k, "one", n=40)
    stream.labels[:] = 2.0
    stream.status[:] = 0
    stream.labels[7] = 0.0
    params = make_params(oaa=k, probabilities=probabilities, learning_rate=0.5,
                         initial_t=0.0)  # fmt: skip
    table = oaa.GD.new_table(8)
    stats = new_stats()
    preds = run_kernel(oaa.GD.train_batch, table, oaa.GD.init_gstate(params), params,
                       LOGISTIC, stream, stats, new_rows(), k + 1)  # fmt: skip
    assert params[P_INDEXING] == 0.0 and params[P_INDEXING_AT] == 8.0
    best = np.argmax(preds[:, 1:], axis=1)
    np.testing.assert_array_equal(preds[:7, 0], best[:7] + 1)
    np.testing.assert_array_equal(preds[8:, 0], best[8:])
    assert preds[7, 0] == (best[7] if probabilities else best[7] + 1)
    again = run_kernel(oaa.GD.train_batch, table, oaa.GD.init_gstate(params), params,
                       LOGISTIC, stream.slice(0, 5), stats, new_rows(), k + 1)  # fmt: skip
    assert params[P_INDEXING] == 0.0 and params[P_INDEXING_AT] == 0.0
    np.testing.assert_array_equal(again[:, 0], np.argmax(again[:, 1:], axis=1))


def test_options_are_checked():
    with pytest.raises(ConfigError, match="--oaa K needs K >= 2"):
        TrainConfig(oaa=1)
    with pytest.raises(ConfigError, match="--indexing is 0 .* or 1"):
        TrainConfig(oaa=3, indexing=2)
    with pytest.raises(ConfigError, match="does nothing without --oaa"):
        TrainConfig(indexing=0)
    with pytest.raises(ConfigError, match="--oaa runs with --algo gd or ftrl"):
        TrainConfig(oaa=3, algo="tg")
    with pytest.raises(ConfigError, match="needs -b 4 at least"):
        TrainConfig(oaa=10, bits=3)
    assert TrainConfig(oaa=10).oaa_stride == 16


def digits_lines(n: int = 600) -> list[str]:
    """scikit-learn's digits as VW lines (raw pixels), classes 1..10."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return [f"{int(d) + 1} |p " + " ".join(f"p{j}:{int(v)}" for j, v in enumerate(row) if v)
            for row, d in zip(x[:n], y[:n], strict=True)]  # fmt: skip


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    d = tmp_path_factory.mktemp("digits")
    lines = digits_lines()
    (d / "a.vw").write_text("\n".join(lines[:300]) + "\n")
    (d / "b.vw").write_text("\n".join(lines[300:]) + "\n")
    (d / "all.vw").write_text("\n".join(lines) + "\n")
    return d


@pytest.mark.parametrize("opts", [[], ["--ftrl"], ["--l1", "1e-4", "--l2", "1e-3"],
                                  ["--adaptive"], ["--loss", "logistic"]])  # fmt: skip
def test_resume_equals_one_run(digits, tmp_path, opts):
    a, b, c = (str(tmp_path / n) for n in ("a.sl", "b.sl", "c.sl"))
    base = ["--oaa", "10", *opts, "--quiet"]
    assert invoke(["train", str(digits / "a.vw"), *base, "-f", a]).exit_code == 0
    r = invoke(["train", "-i", a, str(digits / "b.vw"), "--quiet", "-f", b])
    assert r.exit_code == 0, r.output
    assert invoke(["train", str(digits / "all.vw"), *base, "-f", c]).exit_code == 0
    resumed, whole = model_io.load(b), model_io.load(c)
    assert resumed.learner == whole.learner == ("oaa_ftrl" if "--ftrl" in opts else "oaa_gd")
    np.testing.assert_array_equal(resumed.slots, whole.slots)
    np.testing.assert_array_equal(resumed.state, whole.state)
    np.testing.assert_array_equal(resumed.gstate, whole.gstate)
    r = invoke(["train", "-i", a, str(digits / "b.vw"), "--oaa", "4", "--quiet"])
    assert r.exit_code == 2 and "--oaa 4 conflicts with the initial model" in r.output


def test_predict_inspect_and_invert_hash(digits, tmp_path):
    m, ih, p1, p2 = (str(tmp_path / n) for n in ("m.sl", "ih.txt", "p1", "p2"))
    r = invoke(["train", str(digits / "a.vw"), "--oaa", "10", "--loss", "logistic", "-f", m,
                "--invert-hash", ih, "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    r = invoke(["predict", "-i", m, str(digits / "b.vw"), "-p", p1])
    assert r.exit_code == 0, r.output
    assert "average multiclass 0/1 loss" in r.output and "accuracy" in r.output
    classes = np.loadtxt(p1)
    assert set(np.unique(classes)) <= set(range(1, 11)) and classes.size == 300
    r = invoke(["predict", "-i", m, str(digits / "b.vw"), "-p", p2, "--probabilities"])
    assert r.exit_code == 0 and "average multiclass log loss" in r.output
    rows = [dict(kv.split(":") for kv in ln.split()) for ln in open(p2).read().splitlines()]
    probs = np.array([[float(row[str(c)]) for c in range(1, 11)] for row in rows])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(np.argmax(probs, axis=1) + 1, classes)
    # the API scores as sl predict does
    from streamlearn import Model

    model = Model.load(m)
    np.testing.assert_array_equal(model.predict(str(digits / "b.vw")), classes)
    np.testing.assert_allclose(model.predict_proba(str(digits / "b.vw")), probs, atol=5e-7)
    text = invoke(["inspect", m, "--top", "5"]).output
    assert "one against all over 10 classes" in text and "multiclass 0/1 loss" in text
    named = [ln.split("\t") for ln in open(ih).read().splitlines() if not ln.startswith("#")]
    # VW's names: class 0 plain, class c > 0 with [c]; the constant's slots are its classes
    constant = {int(s): names for s, _, names in named if names.startswith("Constant")}
    s = oaa.stride(10)
    assert {n for n in constant.values()} == {"Constant"} | {f"Constant[{c}]" for c in range(1, 10)}
    assert len(constant) == 10 and len({slot // s for slot in constant}) == 1


def test_probabilities_need_logistic_loss_and_classes(digits):
    r = invoke(["train", str(digits / "a.vw"), "--oaa", "10", "--probabilities"])
    assert r.exit_code == 2 and "--probabilities needs --loss logistic" in r.output
    r = invoke(["train", str(digits / "a.vw"), "--loss", "logistic", "--probabilities"])
    assert r.exit_code == 2 and "--probabilities applies to --oaa K" in r.output


def test_table_and_summary_are_vws(digits):
    r = invoke(["train", str(digits / "a.vw"), "--oaa", "10", "--loss", "logistic",
                "--probabilities"])  # fmt: skip
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    first = next(ln for ln in lines if ln.startswith("0.000000") or ln.startswith("1.000000"))
    # classes as integers, the predicted one with its probability: VW's "1(10%)"
    assert first.split()[4:6] == ["5", "1(10%)"] or "(" in first.split()[5], first
    assert "average multiclass log loss = " in r.output
    assert "best constant" not in r.output and "weighted label sum = 0.000000" in r.output


@pytest.mark.parametrize(("progress", "counters"), [("100", [100, 200, 300]),
                                                   ("3.0", [1, 3, 9, 27, 81, 243])])
def test_progress_sets_the_table_lines_as_for_binary_learners(digits, progress, counters):
    """``-P`` with ``--oaa``: VW's schedule (an integer adds, a float multiplies), as
    every other learner (the table lines once doubled whatever -P said)."""
    r = invoke(["train", str(digits / "a.vw"), "--oaa", "10", "-P", progress])
    assert r.exit_code == 0, r.output
    got = [int(line.split()[2]) for line in r.output.splitlines()
           if line[:1].isdigit() and len(line.split()) == 7]  # fmt: skip
    assert got == counters


def test_passes_holdout_and_grid_over_one_parse(digits, tmp_path):
    rep = tmp_path / "g.json"
    r = invoke(["train", str(digits / "all.vw"), "--oaa", "10", "--passes", "3",
                "--l1", "0,1e-5", "--report", str(rep), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    grid = json.loads(rep.read_text())
    assert grid["grid"]["size"] == 2
    for entry, l1 in zip(grid["configurations"], ["0", "1e-5"], strict=True):
        alone = tmp_path / f"one-{l1}.json"
        r = invoke(["train", str(digits / "all.vw"), "--oaa", "10", "--passes", "3", "--l1", l1,
                    "--report", str(alone), "--quiet"])  # fmt: skip
        one = json.loads(alone.read_text())
        assert entry["best_holdout_loss"] == one["best_holdout_loss"]
        assert entry["average_loss"] == one["average_loss"]
        # the holdout loss is the multiclass error of the held-out examples
        assert 0 < one["best_holdout_loss"] < 0.5 and one["passes_run"] >= 2


def test_api_matrix_fit_predict_proba(tmp_path):
    from sklearn.datasets import load_digits

    from streamlearn import Model

    x, y = load_digits(return_X_y=True)
    y = y + 1.0
    m = Model(oaa=10, loss="logistic").fit(x[:1000], y[:1000])
    assert m.n_classes == 10 and m.classes_.tolist() == list(range(1, 11))
    pred = m.predict(x[1000:])
    proba = m.predict_proba(x[1000:])
    scores = m.decision_function(x[1000:])
    assert proba.shape == scores.shape == (797, 10)
    np.testing.assert_array_equal(np.argmax(proba, axis=1) + 1, pred)
    np.testing.assert_array_equal(np.argmax(scores, axis=1) + 1, pred)
    assert np.mean(pred == y[1000:]) > 0.85
    # continuing equals one run
    part = Model(oaa=10, loss="logistic").fit(x[:500], y[:500]).partial_fit(x[500:1000],
                                                                            y[500:1000])
    np.testing.assert_array_equal(part.predict_proba(x[1000:]), proba)
    with pytest.raises(ValueError, match=r"y\[3\] = 0 is not a class 1..10"):
        Model(oaa=10).fit(x[:10], np.array([1, 2, 3, 0, 5, 6, 7, 8, 9, 10.0]))
    with pytest.raises(ValueError, match="predict_proba needs a model trained with"):
        Model(oaa=10).fit(x[:50], y[:50]).predict_proba(x[:5])
    binary = Model(loss="logistic").fit(x[:200], np.where(y[:200] > 5, 1.0, -1.0))
    p = binary.predict_proba(x[:5])
    assert p.shape == (5, 2) and binary.classes_.tolist() == [-1.0, 1.0]
    np.testing.assert_allclose(p[:, 1], binary.predict(x[:5], link="logistic"))


@pytest.mark.parametrize("opts", slow_except([["--loss", "logistic", "--probabilities"],
                                              ["--ftrl", "--l1", "0.01"], ["--l1", "1e-3"]],
                                             0))  # fmt: skip
def test_tiny_inputs_run_interpreted_with_identical_results(tmp_path, opts):
    """Under 32 KiB the kernels run as plain Python (NUMBA_DISABLE_JIT): the same model and
    predictions as compiled."""
    import os
    import subprocess
    import sys

    text = "\n".join(digits_lines(60)) + "\n"
    assert len(text) < 32 << 10
    out = []
    for jit in ("1", "0"):
        m = tmp_path / f"m{jit}.sl"
        env = dict(os.environ, SL_JIT=jit)
        env.pop("NUMBA_DISABLE_JIT", None)
        proc = subprocess.run(
            [sys.executable, "-m", "streamlearn", "train", "--oaa", "10", *opts, "--quiet",
             "-f", str(m), "-p", "-"],
            input=text.encode(), env=env, capture_output=True,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        out.append((model_io.load(m), proc.stdout))
    (a, pa), (b, pb) = out
    assert pa == pb
    np.testing.assert_array_equal(a.state, b.state)
    np.testing.assert_array_equal(a.gstate, b.gstate)
    np.testing.assert_array_equal(a.stats, b.stats)


def test_labels_from_zero_through_the_cli_and_the_api(digits, tmp_path):
    """Labels 0..K-1: without --indexing the first label 0 decides (a note names its
    line); with --indexing 0 every line is read so, and the model learns what --indexing
    1 learns from the labels 1..K (class c is label c, or c + 1); sl predict and -t number
    the classes as the model's --indexing says, and warn of a label 0 they read as 1..K."""
    ones = (digits / "all.vw").read_text().splitlines()
    zeros = tmp_path / "zeros.vw"
    zeros.write_text("".join(f"{int(ln.split(' ', 1)[0]) - 1} {ln.split(' ', 1)[1]}\n"
                             for ln in ones))  # fmt: skip
    first_zero = 1 + next(i for i, ln in enumerate(ones) if ln.startswith("1 "))
    auto = invoke(["train", str(zeros), "--oaa", "10", "-p", str(tmp_path / "auto.p")])
    assert auto.exit_code == 0, auto.output
    assert f"zeros.vw:{first_zero}: label 0: the labels number the classes 0..9" in auto.output
    shown = np.loadtxt(tmp_path / "auto.p")
    assert shown[first_zero:].min() == 0 and shown[first_zero:].max() <= 9

    m0, m1 = tmp_path / "m0.sl", tmp_path / "m1.sl"
    r0 = invoke(["train", str(zeros), "--oaa", "10", "--indexing", "0", "-f", str(m0),
                 "--loss", "logistic", "-p", str(tmp_path / "z.p")])  # fmt: skip
    r1 = invoke(["train", str(digits / "all.vw"), "--oaa", "10", "--indexing", "1", "-f",
                 str(m1), "--loss", "logistic", "-p", str(tmp_path / "o.p")])  # fmt: skip
    assert r0.exit_code == r1.exit_code == 0, r0.output + r1.output
    assert "label 0" not in r0.output
    np.testing.assert_array_equal(model_io.load(m0).weights, model_io.load(m1).weights)
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "z.p") + 1, np.loadtxt(tmp_path / "o.p"))
    r = invoke(["predict", "-i", str(m0), str(zeros), "--probabilities", "-p", "-"])
    assert r.exit_code == 0 and "warning" not in r.output, r.output
    row = r.output.splitlines()[0].split()
    assert [c.split(":")[0] for c in row] == [str(c) for c in range(10)]

    auto_model = tmp_path / "auto.sl"
    assert invoke(["train", str(zeros), "--oaa", "10", "-f", str(auto_model)]).exit_code == 0
    for args in (["predict", "-i", str(auto_model), str(zeros)],
                 ["train", "-t", "-i", str(auto_model), str(zeros)]):  # fmt: skip
        r = invoke(args)
        assert r.exit_code == 0, r.output
        assert "label 0 is no class 1..10 when nothing is learned" in r.output
        assert "give --indexing 0" in r.output
    r = invoke(["vw", "--oaa", "10", "--indexing", "0", "-d", str(zeros), "-f",
                str(tmp_path / "vw.sl")])  # fmt: skip
    assert r.exit_code == 0 and "label 0" not in r.output, r.output
    assert model_io.load(tmp_path / "vw.sl").config.indexing == 0


def test_api_labels_from_zero():
    from sklearn.datasets import load_digits

    from streamlearn import Model

    x, y = load_digits(return_X_y=True)
    m = Model(oaa=10, indexing=0, loss="logistic").fit(x[:500], y[:500])
    assert m.classes_.tolist() == list(range(10))
    pred = m.predict(x[500:700])
    ones = Model(oaa=10, loss="logistic").fit(x[:500], y[:500] + 1)
    np.testing.assert_array_equal(pred + 1, ones.predict(x[500:700]))
    np.testing.assert_array_equal(np.argmax(m.predict_proba(x[500:700]), axis=1), pred)
    with pytest.raises(ValueError, match=r"labels 0..9: Model\(oaa=10, indexing=0\)"):
        Model(oaa=10).fit(x[:500], y[:500])
    with pytest.raises(ValueError, match=r"y\[\d+\] = 10 is not a class 0..9"):
        Model(oaa=10, indexing=0).fit(x[:20], y[:20] + 1)
