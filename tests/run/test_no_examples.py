"""An input that yields no example writes nothing and exits 10 (``--allow-empty``: the old way).

A failed producer (``sl train <(zcat missing.gz) -i m -f m``) looks like an
empty input: the shell does not pass its status on.  Such a run used to
replace a trained model with a 0-example one and exit 0.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn import model as model_io
from streamlearn.errors import EXIT_CODES, NoExamples
from tests.marks import slow_except
from tests.unix import invoke, leftovers, one_line_error, sl, text_data

NO_EXAMPLES = 10
TRAIN = ["train", "--algo", "sgd", "--quiet"]
OUTPUTS = ["-p", "p.txt", "--report", "r.json", "--readable-model", "rm.txt",
           "--invert-hash", "ih.txt"]  # fmt: skip
SVMLIGHT = "".join(f"{1 if i % 2 else -1} {i % 7 + 1}:0.5 {i % 11 + 9}:1\n" for i in range(50))


def _digest(p) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture
def old(tmp_path, monkeypatch):
    """A trained model and yesterday's outputs beside it; the test runs in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.vw").write_text(text_data(300))
    assert invoke([*TRAIN, "d.vw", "-f", "m.sl"]).exit_code == 0
    for name in ("p.txt", "r.json", "rm.txt", "ih.txt"):
        (tmp_path / name).write_text("yesterday\n")
    return {p.name: _digest(p) for p in tmp_path.iterdir() if p.is_file()}


def _unchanged(tmp_path, before: dict) -> None:
    """Every file as it was; nothing new but the test's inputs and the lock file."""
    now = {p.name: _digest(p) for p in tmp_path.iterdir() if p.is_file()}
    assert {k: now.get(k) for k in before} == before
    assert set(now) - set(before) <= {"e.vw", "s.svm", "bad.vw", "m.sl.lock"}
    assert [p for p in leftovers(tmp_path) if p != "tmpdir"] == []


EMPTY_INPUTS = {
    "empty file": b"",
    "blank lines": b"\n\n   \n\t\n\r\n",
    "comments only (svmlight)": b"# nothing\n\n",
}


def test_the_code_is_documented():
    assert EXIT_CODES[NO_EXAMPLES].startswith("no examples")
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    assert f"| {NO_EXAMPLES} | no examples" in readme


@pytest.mark.parametrize("content", list(EMPTY_INPUTS.values()), ids=list(EMPTY_INPUTS))
@pytest.mark.parametrize("continuing", [False, True])
def test_an_empty_file_writes_nothing(tmp_path, old, content, continuing):
    (tmp_path / "e.vw").write_bytes(content)
    start = ["-i", "m.sl"] if continuing else []
    r = invoke([*TRAIN, *start, "e.vw", "-f", "m.sl", *OUTPUTS])
    assert r.exit_code == NO_EXAMPLES, r.output
    assert "no examples in e.vw" in r.output and "--allow-empty" in r.output
    _unchanged(tmp_path, old)


def test_empty_stdin_writes_nothing(tmp_path, old):
    r = invoke([*TRAIN, "-i", "m.sl", "-f", "m.sl", *OUTPUTS], input="")
    assert r.exit_code == NO_EXAMPLES
    assert "no examples in standard input" in r.output
    _unchanged(tmp_path, old)


def test_every_line_malformed_writes_nothing(tmp_path, old):
    """--format vw on svmlight data: every line skipped (each is reported)."""
    (tmp_path / "s.svm").write_text(SVMLIGHT)
    r = invoke([*TRAIN, "--format", "vw", "s.svm", "-f", "m.sl", *OUTPUTS])
    assert r.exit_code == NO_EXAMPLES
    assert "all 50 of its lines are malformed (first: s.svm:1: " in r.output
    _unchanged(tmp_path, old)


@pytest.mark.parametrize("extra", [
    ["--passes", "3"], ["--passes", "3", "--cache", "c.cache"], ["--cache", "c.cache"],
    ["--l1", "0,1e-5", "--algo", "tg", "-f", "m-{l1}.sl"], ["--algo", "cd"], ["--algo", "scd"],
    ["--algo", "ftrl"], ["--algo", "smidas"],
])  # fmt: skip
def test_every_driver_refuses_an_empty_input(tmp_path, old, extra):
    """Passes (stdin cached), grids, the batch learners: no model, no cache."""
    args = [*TRAIN, *extra] if "-f" in extra else [*TRAIN, *extra, "-f", "m.sl"]
    r = invoke([*args, "--report", "r.json"], input="\n\n")
    assert r.exit_code == NO_EXAMPLES, r.output
    _unchanged(tmp_path, old)


def test_allow_empty_keeps_the_old_behaviour(tmp_path, old):
    (tmp_path / "e.vw").write_bytes(b"")
    r = invoke([*TRAIN, "e.vw", "-f", "new.sl", "--report", "r.json", "--cache", "c.cache",
                "--allow-empty"])  # fmt: skip
    assert r.exit_code == 0, r.output
    m = model_io.load(tmp_path / "new.sl")
    assert m.nnz == 0 and m.stats[0] == 0
    assert (tmp_path / "c.cache").exists()
    assert '"examples": 0' in (tmp_path / "r.json").read_text()


def test_one_usable_line_is_enough(tmp_path, old):
    (tmp_path / "one.vw").write_text("oops |f 1:2:3\n\n1 |f a\n")
    r = invoke([*TRAIN, "one.vw", "-f", "m.sl"])
    assert r.exit_code == 0
    assert model_io.load(tmp_path / "m.sl").stats[0] == 1


def test_predict_refuses_an_empty_input_too(tmp_path, old):
    """A cron job's empty predictions file in place of yesterday's is the same silent wipe."""
    (tmp_path / "e.vw").write_bytes(b"\n")
    r = invoke(["predict", "-i", "m.sl", "e.vw", "-p", "p.txt", "--report", "r.json"])
    assert r.exit_code == NO_EXAMPLES
    _unchanged(tmp_path, old)
    r = invoke(["predict", "-i", "m.sl", "e.vw", "-p", "p.txt", "--allow-empty", "--quiet"])
    assert r.exit_code == 0
    assert (tmp_path / "p.txt").read_text() == ""  # a blank line is no example: no line
    r = invoke(["predict", "-i", "m.sl", "-p", "p.txt", "--allow-empty", "--quiet"], input="")
    assert r.exit_code == 0 and (tmp_path / "p.txt").read_text() == ""


def test_predict_with_malformed_lines_only(tmp_path, old):
    (tmp_path / "bad.vw").write_text("x |f a\ny |f b\n")
    r = invoke(["predict", "-i", "m.sl", "bad.vw", "-p", "p.txt"])
    assert r.exit_code == NO_EXAMPLES and "all 2 of its lines are malformed" in r.output
    _unchanged(tmp_path, old)


@pytest.mark.parametrize(
    "producer", slow_except(["<(false)", "<(true)", "<(exit 3)", "<(printf '\\n\\n')"], 0)
)
def test_a_failed_producer_as_a_user_runs_it(tmp_path, producer):
    """``sl train <(zcat missing.gz) -i m -f m``: the README's own example, failing."""
    (tmp_path / "d.vw").write_text(text_data(200))
    assert sl(["train", "d.vw", "-f", "m.sl", "--quiet"], tmp_path).returncode == 0
    before = _digest(tmp_path / "m.sl")
    r = sl([f"SL train {producer} -i m.sl -f m.sl --report r.json"], tmp_path, shell=True)
    assert r.returncode == NO_EXAMPLES, r.stderr
    one_line_error(r.stderr)
    assert _digest(tmp_path / "m.sl") == before
    assert not (tmp_path / "r.json").exists()
    assert leftovers(tmp_path) == ["tmpdir"] or leftovers(tmp_path) == []


def test_the_api_raises_and_keeps_the_model():
    from streamlearn import api

    m = api.Model(algo="sgd").fit(lines=["1 |f a", "-1 |f b"])
    weights = m.weights.copy()
    for call in (m.fit, m.partial_fit):
        with pytest.raises(NoExamples):
            call(lines=["", "oops |f 1:2:3"])
        with pytest.raises(NoExamples):
            call(np.zeros((0, 3)), np.zeros(0))
        np.testing.assert_array_equal(m.weights, weights)  # as it was
    m.fit(lines=[""], allow_empty=True)
    assert m.report["examples"] == 0 and m.nnz == 0


# a property: whatever mix of blank, comment-like and malformed lines, no example -> 10,
# and one good line among them -> 0

_JUNK = st.sampled_from([b"", b"   ", b"\t", b"\r", b"x |f a", b"1 2 3 4 |f a", b"|f a:1:2",
                         b"1 -1 |f a", b"|:3 a", b"1 nan |f a", b"1 1e39 |f a", b"1 |f a:1e20"])


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(junk=st.lists(_JUNK, max_size=12), good=st.booleans(), at=st.integers(0, 12))
def test_no_usable_line_means_exit_10(tmp_path, junk, good, at):
    lines = list(junk)
    if good:
        lines.insert(min(at, len(lines)), b"1 |f a b")
    path = tmp_path / "in.vw"
    path.write_bytes(b"\n".join(lines) + (b"\n" if lines else b""))
    out = tmp_path / "out.sl"
    out.unlink(missing_ok=True)
    r = invoke([*TRAIN, "--format", "vw", str(path), "-f", str(out)])
    if good:
        assert r.exit_code == 0 and out.exists()
    else:
        assert r.exit_code == NO_EXAMPLES and not out.exists()
