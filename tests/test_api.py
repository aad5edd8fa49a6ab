"""The Python API gives the command line's numbers, bit for bit."""

from __future__ import annotations

import doctest
import gzip
import json

import numpy as np
import pytest
from scipy import sparse

import streamlearn
from streamlearn import api
from streamlearn.api import Model
from tests.unix import invoke, text_data

OPTIONS = [
    {"loss": "logistic"},
    {"algo": "tg", "l1": 1e-3, "loss": "logistic"},
    {"algo": "fobos", "l1": 1e-4, "l2": 1e-3},
    {"algo": "ftrl", "l1": 1.0, "loss": "logistic", "bits": 16},
    {"algo": "sgd", "learning_rate": 0.3, "power_t": 0.0, "loss": "hinge"},
]


def _flags(options: dict) -> list[str]:
    out = []
    for k, v in options.items():
        out += [f"--{k.replace('_', '-')}", str(v)]
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "d.vw"
    path.write_text(text_data(1500))
    return path


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: o.get("algo", "gd"))
def test_files_and_lines_train_the_cli_model(tmp_path, data, options):
    cli = tmp_path / "cli.sl"
    r = invoke(["train", str(data), *_flags(options), "--passes", "2", "-f", str(cli),
                "--report", str(tmp_path / "r.json"), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    from_file = Model(**options).fit(data, passes=2)
    from_file.save(tmp_path / "api.sl")
    assert (tmp_path / "api.sl").read_bytes() == cli.read_bytes()
    report = json.loads((tmp_path / "r.json").read_text())
    assert from_file.report["average_loss"] == report["average_loss"]
    assert from_file.report["curve"] == report["curve"]
    lines = (ln for ln in data.read_text().splitlines())  # a one-shot generator, two passes
    from_lines = Model(**options).fit(lines=lines, passes=2)
    from_lines.save(tmp_path / "lines.sl")
    assert np.array_equal(from_lines.weights, from_file.weights)
    assert from_lines.report["curve"] == report["curve"]
    with open(data) as f:
        assert np.array_equal(Model(**options).fit(f, passes=2).weights, from_file.weights)


def _svmlight(X: sparse.csr_matrix, y: np.ndarray) -> str:
    rows = []
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        feats = " ".join(f"{j}:{float(v)!r}" for j, v in zip(X.indices[lo:hi], X.data[lo:hi],
                                                       strict=True))  # fmt: skip
        rows.append(f"{y[i]:g} {feats}")
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: o.get("algo", "gd"))
def test_a_matrix_trains_as_its_svmlight_file(tmp_path, options):
    rng = np.random.default_rng(3)
    X = sparse.random(3000, 500, density=0.02, format="csr", random_state=4)
    X.data = np.round(rng.normal(size=X.nnz), 6)
    y = np.where(rng.random(3000) < 0.5, 1.0, -1.0)
    path = tmp_path / "d.svm"
    path.write_text(_svmlight(X, y))
    cli = tmp_path / "cli.sl"
    r = invoke(["train", str(path), *_flags(options), "-f", str(cli), "-p",
                str(tmp_path / "p.txt"), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    m = Model(**options).fit(X, y)
    m.save(tmp_path / "api.sl")
    assert (tmp_path / "api.sl").read_bytes() == cli.read_bytes()
    preds = np.loadtxt(tmp_path / "p.txt")
    r = invoke(["predict", "-i", str(cli), str(path), "-p", str(tmp_path / "q.txt"), "--quiet"])
    assert r.exit_code == 0, r.output
    # sl predict -p writes 9 significant digits
    assert np.allclose(m.predict(X), np.loadtxt(tmp_path / "q.txt"), rtol=1e-8, atol=1e-12)
    assert np.array_equal(m.predict(X.toarray()), m.predict(path))
    assert preds.shape == (3000,)


def test_partial_fit_continues_exactly(tmp_path, data):
    text = data.read_text().splitlines()
    whole = Model(algo="fobos", l1=1e-4).fit(lines=text)
    half = Model(algo="fobos", l1=1e-4).fit(lines=text[:700])
    half.save(tmp_path / "half.sl")
    again = Model.load(tmp_path / "half.sl").partial_fit(lines=text[700:])
    assert np.array_equal(half.partial_fit(lines=text[700:]).weights, whole.weights)
    assert np.array_equal(again.weights, whole.weights)
    assert again.config.algo == "fobos" and again.nnz == whole.nnz
    # fit() on a loaded model starts over with the model's options
    assert np.array_equal(Model.load(tmp_path / "half.sl").fit(lines=text).weights, whole.weights)


def test_gzip_files_and_importance_weights(tmp_path, data):
    gz = tmp_path / "d.vw.gz"
    gz.write_bytes(gzip.compress(data.read_bytes()))
    assert np.array_equal(Model().fit([gz]).weights, Model().fit(str(data)).weights)
    X = sparse.csr_matrix(np.eye(4))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    twice = Model(algo="sgd", power_t=0.0).fit(X, y, sample_weight=[2, 2, 2, 2])
    assert twice.report["weighted_example_sum"] == 8.0


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: Model(algo="nope"), "--algo must be one of"),
        (lambda: Model().predict(sparse.eye(2)), "not trained yet"),
        (lambda: Model().fit(sparse.eye(2)), "needs its labels"),
        (lambda: Model().fit(sparse.eye(2), [1, 2, 3]), "y has 3 values for 2 rows"),
        (lambda: Model().fit("1 |a b\n"), "cannot read"),
        (lambda: Model().fit(42), "cannot learn from a int"),
        (lambda: Model().fit(), "nothing to learn from"),
    ],
)
def test_mistakes_get_clear_errors(call, says):
    with pytest.raises((ValueError, streamlearn.errors.SlError)) as e:
        call()
    assert says in str(e.value)


def test_doctests():
    assert doctest.testmod(api).failed == 0
