"""svmlight parser: round trip against scikit-learn, grammar, malformed lines."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from streamlearn.hashing import CONSTANT_HASH
from streamlearn.io import REASONS, Batch, parse_bytes, read_batches

BITS = 20


def to_csr(batch: Batch, n_features: int) -> sp.csr_matrix:
    """Our batch as a CSR matrix; with no collisions, slot == column index."""
    return sp.csr_matrix(
        (batch.values, batch.indices.astype(np.int64), batch.indptr), shape=(batch.n, n_features)
    )


def _random_matrix(seed: int, n: int = 300, d: int = 5000) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.01, random_state=rng, format="csr")
    X.data = rng.normal(0, 1, X.nnz) * 10.0 ** rng.integers(-12, 12, X.nnz)
    return X


@pytest.mark.parametrize("zero_based", [True, False])
@pytest.mark.parametrize("labels", ["binary", "real"])
def test_round_trip_with_sklearn(zero_based: bool, labels: str) -> None:
    X = _random_matrix(1)
    rng = np.random.default_rng(2)
    y = rng.choice([-1, 1], X.shape[0]) if labels == "binary" else rng.normal(0, 3, X.shape[0])
    f = io.BytesIO()
    dump_svmlight_file(X, y, f, zero_based=zero_based, comment="made by a test")
    text = f.getvalue()
    Xs, ys = load_svmlight_file(io.BytesIO(text), zero_based=zero_based, n_features=X.shape[1] + 1)
    b = parse_bytes(text, fmt="svmlight", bits=BITS, constant=False)
    assert b.status.tolist() == [0] * X.shape[0]
    ours = to_csr(b, X.shape[1] + 1)
    if not zero_based:  # the file's index i is our slot i; sklearn shifts to i - 1
        Xs = sp.hstack([sp.csr_matrix((Xs.shape[0], 1)), Xs[:, :-1]]).tocsr()
    assert (ours != Xs).nnz == 0  # bit-for-bit equal values
    assert np.array_equal(b.labels, ys)
    assert np.array_equal(ours.indptr, Xs.indptr)


def test_round_trip_long_digits_is_exact() -> None:
    rng = np.random.default_rng(5)
    vals = [repr(float(v)) for v in rng.normal(0, 1, 200) * 10.0 ** rng.integers(-300, 300, 200)]
    vals += ["0.1000000000000000055511151231257827", "123456789012345678901234567890"]
    vals += ["2.4703282292062328e-324", "2.2250738585072012e-308", "4.9406564584124654e-324"]
    lines = [f"1 {i + 1}:{v}" for i, v in enumerate(vals)]
    text = ("\n".join(lines) + "\n").encode()
    Xs, _ = load_svmlight_file(io.BytesIO(text), zero_based=False)
    b = parse_bytes(text, fmt="svmlight", bits=BITS, constant=False, limit=math.inf)
    assert b.values.tolist() == [float(v) for v in vals if float(v) != 0.0]
    assert np.array_equal(b.values, Xs.data)


def test_grammar() -> None:
    text = (
        b"# header comment\n"
        b"\n"
        b"+1 qid:7 1:0.5 3:-2e-3 10:1 # trailing comment\n"
        b"-1\t2:1\t\t5:0  7:3.25\r\n"
        b"0 4294967296:1 4294967297:2\n"  # indices wrap like VW's numeric names
        b"2.5e1\n"
        b"1 12:1#no space before the comment\n"
    )
    b = parse_bytes(text, fmt="svmlight", bits=BITS)
    c = CONSTANT_HASH & (2**BITS - 1)
    assert b.status.tolist() == [0] * 5
    assert b.line.tolist() == [3, 4, 5, 6, 7]
    assert b.labels.tolist() == [1.0, -1.0, 0.0, 25.0, 1.0]
    assert b.indptr.tolist() == [0, 4, 7, 10, 11, 13]
    assert b.indices.tolist() == [1, 3, 10, c, 2, 7, c, 0, 1, c, c, 12, c]
    assert b.values.tolist() == [0.5, -2e-3, 1, 1, 1, 3.25, 1, 1, 2, 1, 1, 1, 1]
    assert b.weights.tolist() == [1.0] * 5
    assert np.all(b.tag_start == b.tag_end)


@pytest.mark.parametrize(
    "text, code",
    [
        (b"x 1:2", 1),
        (b"1,2 1:2", 1),  # multilabel is not supported
        (b"1:2 3:4", 1),  # no label
        (b"1 1:x", 6),
        (b"1 1:", 6),
        (b"1 1:2x", 6),
        (b"1 1:nan", 7),
        (b"inf 1:1", 7),
        (b"1 1:1e999", 7),
        (b"1 a:1", 10),
        (b"1 -1:1", 10),
        (b"1 1.5:1", 10),
        (b"1 :1", 10),
        (b"1 abc", 11),
        (b"1 12", 11),
        (b"1 1:2:3", 12),
        (b"1 qid:", 14),
        (b"1 qid:x 1:1", 14),
    ],
)
def test_malformed(text: bytes, code: int) -> None:
    b = parse_bytes(text + b"\n1 1:1\n", fmt="svmlight")
    assert b.n == 2
    assert int(b.status[0]) == code, REASONS.get(int(b.status[0]))
    assert b.indptr[1] == 0 and math.isnan(b.labels[0])
    assert b.status[1] == 0 and b.indices[0] == 1  # the next line is untouched


def test_read_batches_auto_detects_svmlight(tmp_path) -> None:
    X = _random_matrix(3, n=50, d=100)
    path = tmp_path / "data.svm"
    with open(path, "wb") as f:
        dump_svmlight_file(X, np.ones(50), f, comment="x")
    (b,) = list(read_batches([str(path)], fmt="auto", bits=BITS, constant=False))
    Xs, _ = load_svmlight_file(str(path), n_features=100)
    assert b.n == 50
    assert (to_csr(b, 100) != Xs).nnz == 0  # (%.16g does not round-trip every double)
