"""The topic model (:class:`streamlearn.sklearn.SLTopicModel`): VW's ``--lda`` over a
matrix of word counts, the same model as ``sl vw --lda K`` (and VW) on the same documents
as lines, and its ``transform`` the E step VW's ``-p`` prints for a minibatch of them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="scikit-learn is not installed (the sklearn extra)")

from scipy import sparse  # noqa: E402 - after the skip
from sklearn.base import clone  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402

from streamlearn.io.vwmodel import read_header  # noqa: E402
from streamlearn.sklearn import SLTopicModel  # noqa: E402
from tests.unix import invoke_in  # noqa: E402


def _docs(seed: int, n: int = 60, words: int = 40, k: int = 3) -> np.ndarray:
    """Word counts drawn from ``k`` topics, some documents empty."""
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(words, 0.2), size=k)
    X = np.zeros((n, words), dtype=np.int64)  # noqa: N806
    for d in range(n):
        mix = rng.dirichlet(np.full(k, 0.3))
        length = int(rng.integers(0, 25)) if d % 13 else 0
        for _ in range(length):
            X[d, rng.choice(words, p=topics[rng.choice(k, p=mix)])] += 1
    return X


def _lines(X) -> str:  # noqa: ANN001, N803
    return "".join("| " + " ".join(f"{j}:{c}" for j, c in enumerate(row) if c) + "\n"
                   for row in np.asarray(X))  # fmt: skip


def _argv(k: int, batch: int, mode: str) -> list[str]:
    return ["--lda", str(k), "--lda_alpha", "0.2", "--lda_rho", "0.05", "--lda_D", "500",
            "--minibatch", str(batch), "--math-mode", {"simd": "0", "accuracy": "1"}[mode],
            "-l", "0.7", "-b", "10", "--quiet"]  # fmt: skip


CASES = [(2, 1, "simd"), (3, 4, "simd"), (5, 7, "accuracy")]


@pytest.mark.parametrize("k, batch, mode", CASES)
def test_fit_learns_sl_vws_model(tmp_path, k: int, batch: int, mode: str) -> None:
    X = _docs(k)  # noqa: N806
    (tmp_path / "d.txt").write_text(_lines(X))
    r = invoke_in(tmp_path, ["vw", *_argv(k, batch, mode), "-d", "d.txt", "-f", "sl.vw"])
    assert r.exit_code == 0, r.output
    tm = SLTopicModel(k, doc_topic_prior=0.2, topic_word_prior=0.05, total_samples=500,
                      batch_size=batch, learning_rate=0.7, math_mode=mode, bits=10)  # fmt: skip
    tm.fit(sparse.csr_matrix(X))
    tm.save(tmp_path / "est.vw")
    assert (tmp_path / "est.vw").read_bytes() == (tmp_path / "sl.vw").read_bytes()
    # the same as a dense matrix; components_ as the readable model shows λ
    dense = clone(tm).fit(X)
    np.testing.assert_array_equal(dense.components_, tm.components_)
    assert tm.components_.shape == (k, X.shape[1])
    pytest.importorskip("vowpalwabbit")
    v = subprocess.run([sys.executable, "-m", "vowpalwabbit", *_argv(k, batch, mode), "-d",
                        "d.txt", "-f", "vw.vw"], cwd=tmp_path, capture_output=True)  # fmt: skip
    assert v.returncode == 0, v.stderr
    ours, theirs = (tmp_path / "est.vw").read_bytes(), (tmp_path / "vw.vw").read_bytes()
    # (VW's header names its own version, 9.11.9; sl's 9.0.0, the oldest that reads it)
    ours, theirs = ours[read_header(ours).end :], theirs[read_header(theirs).end :]
    if mode == "simd":
        assert ours == theirs
    else:  # (VW's double-precision math mode: within its rounding, tests/learners/test_lda.py)
        rows = np.dtype([("i", "<u8"), ("w", "<f4", (k,))])
        a, b = np.frombuffer(ours, dtype=rows), np.frombuffer(theirs, dtype=rows)
        np.testing.assert_array_equal(a["i"], b["i"])
        np.testing.assert_allclose(a["w"], b["w"], rtol=1e-5)


@pytest.mark.parametrize("k, batch, mode", CASES)
def test_transform_is_the_e_step_vw_prints(tmp_path, k: int, batch: int, mode: str) -> None:
    X = _docs(k)  # noqa: N806
    new = _docs(k + 10, n=20)
    tm = SLTopicModel(k, doc_topic_prior=0.2, topic_word_prior=0.05, total_samples=500,
                      batch_size=batch, learning_rate=0.7, math_mode=mode, bits=10,
                      max_iter=2)  # fmt: skip
    tm.fit(X)
    tm.save(tmp_path / "m.vw")
    before = tm.components_
    got = tm.transform(new)
    np.testing.assert_array_equal(tm.components_, before)  # (nothing learned)
    np.testing.assert_array_equal(tm.transform(new), got)
    assert got.shape == (20, k) and np.allclose(got.sum(axis=1), 1.0)
    # sl vw -i of the model, the new documents one minibatch: -p is their E step's γ
    (tmp_path / "n.txt").write_text(_lines(new))
    argv = [a if a != str(batch) else "20" for a in _argv(k, batch, mode)]
    r = invoke_in(tmp_path, ["vw", *argv, "-i", "m.vw", "-d", "n.txt", "-p", "p.txt"])
    assert r.exit_code == 0, r.output
    gam = np.loadtxt(tmp_path / "p.txt", ndmin=2)
    np.testing.assert_allclose(got, gam / gam.sum(axis=1, keepdims=True), rtol=2e-5)


def test_partial_fit_is_a_pass_and_sklearn_conventions() -> None:
    X = _docs(4)  # noqa: N806
    two = SLTopicModel(3, bits=10, max_iter=2).fit(X)
    inc = SLTopicModel(3, bits=10).partial_fit(X).partial_fit(X)
    np.testing.assert_array_equal(two.components_, inc.components_)
    pipe = make_pipeline(SLTopicModel(3, bits=10)).fit(X)
    assert pipe.transform(X).shape == (X.shape[0], 3)
    with pytest.raises(ValueError, match="word counts"):
        SLTopicModel(3, bits=10).fit(-X)
    with pytest.raises(ValueError, match="more than"):
        SLTopicModel(3, bits=4).fit(X)
    with pytest.raises(ValueError, match="math_mode"):
        SLTopicModel(3, math_mode="exact").fit(X)
    with pytest.raises(ValueError, match="features"):
        two.transform(X[:, :5])
