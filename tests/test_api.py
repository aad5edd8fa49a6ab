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


# ---------------------------------------------------------------------------
# checked before any learning, with the command line's messages (#29)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"bits": 18.5}, "--bits must be an integer, got 18.5"),
        ({"bits": True}, "--bits must be an integer, got True"),
        ({"l1": "1e-5"}, "--l1 must be a number, got '1e-5'"),
        ({"passes": 2.0}, "--passes must be an integer, got 2.0"),
        ({"adaptive": 1}, "--adaptive must be true or false, got 1"),
        ({"quadratic": "ab"}, "--quadratic must be a list of strings, got 'ab'"),
        ({"bits": 31}, "--bits must be between 1 and 30, got 31"),
    ],
)
def test_bad_options_are_refused_at_construction(options, says):
    with pytest.raises(ValueError, match=f"^{says.replace('[', '.').replace('(', '.')}"):
        Model(**options)


def test_numpy_numbers_are_options():
    m = Model(bits=np.int64(16), l1=np.float32(0.5), algo="ftrl", adaptive=np.bool_(True))
    assert type(m.config.bits) is int and type(m.config.l1) is float
    assert m.config.l1 == float(np.float32(0.5))


def test_scoring_the_other_format_is_refused_as_the_cli_refuses_it(tmp_path, data):
    X = sparse.random(50, 8, density=0.4, format="csr", random_state=0)
    y = np.where(np.arange(50) % 2, 1.0, -1.0)
    on_matrix = Model(loss="logistic").fit(X, y)
    assert on_matrix.config.format == "svmlight"
    with pytest.raises(ValueError, match="looks like vw data, but the model was trained on "
                                         "svmlight lines"):  # fmt: skip
        on_matrix.predict(str(data))
    with pytest.raises(ValueError, match="<lines> looks like vw data"):
        on_matrix.predict(lines=["1 |a x"])
    with pytest.raises(ValueError, match="<lines> looks like vw data, but the model was"):
        on_matrix.partial_fit(lines=["1 |a x", "-1 |a y"])
    assert not np.isnan(on_matrix.predict(str(data), format="vw")).any()  # named: read anyway
    on_lines = Model().fit(str(data))
    with pytest.raises(ValueError, match="<matrix> looks like svmlight data, but the model"):
        on_lines.predict(X)
    with pytest.raises(ValueError, match="<matrix> looks like svmlight data"):
        on_lines.partial_fit(X, y)
    np.testing.assert_array_equal(on_lines.predict(X, format="svmlight"),
                                  on_lines.predict(lines=_svm_lines(X),
                                                   format="svmlight"))  # fmt: skip
    # the same refusal the command line prints
    on_matrix.save(tmp_path / "m.sl")
    r = invoke(["predict", "-i", str(tmp_path / "m.sl"), str(data)])
    assert r.exit_code == 2 and "looks like vw data, but model" in r.output


def _svm_lines(X) -> list[str]:  # noqa: ANN001
    X = sparse.csr_matrix(X)
    return [" ".join(["0"] + [f"{j}:{float(v)!r}" for j, v in zip(X[i].indices, X[i].data,
                                                                  strict=True)])
            for i in range(X.shape[0])]  # fmt: skip


def test_lines_are_str_or_bytes_and_a_bare_text_is_its_lines():
    text = "1 |f a\n-1 |f b\n1 |f a b"
    whole = Model().fit(lines=text)
    assert whole.report["examples"] == 3  # three lines, not one example per character
    for same in ([text], text.encode(), text.splitlines(), [s.encode() for s in text.split("\n")],
                 iter(text.splitlines(keepends=True))):  # fmt: skip
        np.testing.assert_array_equal(Model().fit(lines=same).weights, whole.weights)
    np.testing.assert_array_equal(whole.predict(lines="1 |f a\n-1 |f b"),
                                  whole.predict(lines=["1 |f a", "-1 |f b"]))  # fmt: skip
    with pytest.raises(TypeError, match="lines= item 1 is of type int: each line is a str or"):
        Model().fit(lines=["1 |f a", 3])
    with pytest.raises(TypeError, match="item 0 is of type list"):
        Model().fit(lines=[["1 |f a"]])


@pytest.mark.parametrize(
    ("what", "says"),
    [
        ({"base": [0.0, np.inf, 0.0, 0.0]}, r"base of row 1 \(inf\) is not finite"),
        ({"sample_weight": [1.0, 1.0, np.nan, 1.0]}, r"sample_weight of row 2 \(nan\) is not"),
        ({"sample_weight": [1.0, -2.0, 1.0, 1.0]}, r"sample_weight of row 1 \(-2.0\) is negative"),
        ({"y": [1.0, -1.0, 1.0, -np.inf]}, r"y of row 3 \(-inf\) is not finite"),
        ({"X": np.array([[1.0, 0.0]] * 3 + [[np.nan, 1.0]])},
         r"X holds NaN or infinite values \(first in row 3\)"),
        ({"X": np.ones(4)}, r"X must be 2-D \(one row per example\), not of shape \(4,\)"),
        ({"X": np.array([["a", "b"]] * 4)}, "X must be a numeric matrix"),
    ],
)
def test_non_finite_labels_weights_and_bases_are_refused_as_the_parser_refuses_them(what, says):
    args = {"X": np.eye(4)[:, :2], "y": [1.0, -1.0, 1.0, -1.0], **what}
    X, y = args.pop("X"), args.pop("y")
    with pytest.raises(ValueError, match=says):
        Model().fit(X, y, **args)


def test_dense_input_needs_no_scipy():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.modules['scipy'] = None  # not installed\n"
        "import numpy as np, streamlearn as sl\n"
        "X = np.array([[1.0, 0.0], [0.0, 2.0]] * 50); y = np.array([1.0, -1.0] * 50)\n"
        "m = sl.Model(loss='logistic').fit(X, y)\n"
        "print(m.predict(X[:2], link='logistic').round(3).tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    dense = Model(loss="logistic").fit(np.array([[1.0, 0.0], [0.0, 2.0]] * 50),
                                       np.array([1.0, -1.0] * 50))  # fmt: skip
    assert out.stdout.strip() == str(dense.predict(np.array([[1.0, 0.0], [0.0, 2.0]]),
                                                   link="logistic").round(3).tolist())  # fmt: skip


def test_a_matrix_is_not_modified():
    X = sparse.csr_matrix((np.array([1.0, 2.0, 0.0]), np.array([3, 1, 2]), np.array([0, 3])),
                          shape=(1, 4))  # fmt: skip
    before = (X.data.copy(), X.indices.copy())
    Model().fit(X, [1.0])
    np.testing.assert_array_equal(X.data, before[0])
    np.testing.assert_array_equal(X.indices, before[1])


@pytest.mark.parametrize(("field", "value"), [("max_crosses", 1 << 70), ("max_crosses", 0),
                                              ("max_line_bytes", -1), ("block_size", 2.5),
                                              ("max_crosses", True)])  # fmt: skip
def test_limits_out_of_range_are_usage_errors_before_any_work(tmp_path, field, value):
    """A library caller's Inputs are checked as the CLI checks its options (a huge
    max_crosses raised OverflowError in a kernel)."""
    (tmp_path / "d.vw").write_text("1 |a x |b y\n")
    inputs = api.Inputs(sources=[str(tmp_path / "d.vw")], **{field: value})
    outputs = api.Outputs(final_model=str(tmp_path / "m.sl"))
    with pytest.raises(streamlearn.errors.UsageError, match=f"Inputs.{field} must be"):
        api.train({"quadratic": ("ab",)}, inputs, outputs)
    assert not (tmp_path / "m.sl").exists()
