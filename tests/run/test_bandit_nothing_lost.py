"""Bandit runs lose nothing: a logged probability too small for its importance weight, a
diverged model, an input with no example, a report that was skipped (issue 44)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import streamlearn as sl
from streamlearn import model as model_io
from streamlearn.errors import Diverged
from tests.unix import invoke

GOOD = "".join(f"shared |u a{i % 3}\n0:{i % 2}:0.5 |a x\n|a y{i % 4}\n\n" for i in range(8))


def _file(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("prob", ["1e-45", "1e-30", "1e-19", "0", "1.5", "-0.5"])
@pytest.mark.parametrize("how", ["train", "vw"])
def test_a_probability_below_1e_18_is_a_malformed_line(tmp_path, prob, how):
    """1e-45 passed (0, 1] in float32, its importance weight 1/p overflowed, and the run
    replaced a good model with non-finite weights (exit 0); the next run exited 5."""
    good = _file(tmp_path, "good.txt", GOOD)
    bad = _file(tmp_path, "bad.txt", f"shared |u a\n0:1:{prob} |a x\n|a y\n\n" + GOOD)
    model = tmp_path / "m.sl"
    if how == "train":
        assert invoke(["train", "--quiet", "--cb-adf", str(good), "-f", str(model)]).exit_code == 0
        args = ["train", "--cb-adf", "-i", str(model), str(bad), "-f", str(model)]
    else:
        model = tmp_path / "m.vw"
        assert invoke(["vw", "--quiet", "--cb_adf", "-d", str(good), "-f", str(model)]
                      ).exit_code == 0  # fmt: skip
        args = ["vw", "--cb_adf", "-i", str(model), "-d", str(bad), "-f", str(model)]
    r = invoke(args)
    assert r.exit_code == 0, r.output
    assert "bad.txt:2: probability not in (0, 1]" in r.output
    if how == "train":
        loaded = model_io.load(str(model))  # finite: load refuses a non-finite model
        assert np.isfinite(loaded.weights).all()
        assert invoke(["predict", "--quiet", "-i", str(model), str(good)]).exit_code == 0


def test_only_such_lines_is_no_example_and_keeps_the_model(tmp_path):
    good = _file(tmp_path, "good.txt", GOOD)
    bad = _file(tmp_path, "bad.txt", "shared |u a\n0:1:1e-45 |a x\n|a y\n\n")
    model = tmp_path / "m.sl"
    assert invoke(["train", "--quiet", "--cb-adf", str(good), "-f", str(model)]).exit_code == 0
    before = model.read_bytes()
    r = invoke(["train", "--cb-adf", "-i", str(model), str(bad), "-f", str(model)])
    assert r.exit_code == 10, r.output
    assert model.read_bytes() == before


@pytest.mark.parametrize(("label", "message"), [
    ((0, 1.0, 1e-300), "at least 1e-18"),
    ((0, 1.0, 1e-45), "at least 1e-18"),
    ((0, 1.0, 0.0), "must be in (0, 1]"),
    ((1.5, 1.0, 0.5), "an integer index"),
    (("1", 1.0, 0.5), "an integer index"),
    ((True, 1.0, 0.5), "an integer index"),
    ((0, "1", 0.5), "cost '1': a number"),
    ((0, 1.0, "0.5"), "probability '0.5': a number"),
    ((0, float("nan"), 0.5), "not a finite number"),
    ((0, 1e300, 0.5), "not a finite number"),
    ((2, 1.0, 0.5), "not an index of the 2 actions"),
])  # fmt: skip
def test_api_labels_are_checked_not_converted(label, message):
    """learn(..., probability=1e-300) raised ZeroDivisionError; chosen=1.5 was truncated;
    "1" and "0.5" were converted."""
    m = sl.Model(cb_adf=True, explore="epsilon", epsilon=0.1)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        m.learn({"u": "a"}, ["|a x", "|a y"], *label)
    assert m.learn({"u": "a"}, ["|a x", "|a y"], np.int64(1), np.float32(1), 0.5).shape == (2,)


def test_no_model_with_a_nan_is_ever_saved(tmp_path):
    """Every path that saves comes through model.save: the API's save of a model whose
    weights went non-finite raises Diverged (exit 6) and the old file stays."""
    good = _file(tmp_path, "good.txt", GOOD)
    path = tmp_path / "m.sl"
    m = sl.Model(cb_adf=True)
    m.fit(str(good))
    m.save(path)
    before = path.read_bytes()
    fitted = m._fitted()
    fitted.weights[:] = np.nan
    with pytest.raises(Diverged, match="no model written"):
        model_io.save(fitted, str(path))
    assert path.read_bytes() == before
    assert Diverged.exit_code == 6


@pytest.mark.parametrize("text", ["", "\n\n", "shared |u a\n\nshared |u b\n\n"])
@pytest.mark.parametrize("reduction", [["--cb_explore_adf"], ["--cb_adf"], ["--csoaa_ldf", "m"]])
def test_vw_bandit_run_of_no_example_exits_10_and_writes_nothing(tmp_path, text, reduction):
    data = _file(tmp_path, "d.txt", text)
    out = tmp_path / "m.vw"
    r = invoke(["vw", "--quiet", *reduction, "-d", str(data), "-f", str(out), "-p",
                str(tmp_path / "p.txt")])  # fmt: skip
    assert r.exit_code == 10, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.txt"]


def test_cbify_writes_its_report(tmp_path):
    """--report under --cbify said "not written yet (ignored)" and exited 0."""
    data = _file(tmp_path, "mc.txt", "".join(f"{1 + i % 3} |f a{i % 3}\n" for i in range(9)))
    report = tmp_path / "r.json"
    r = invoke(["vw", "--cbify", "3", "-d", str(data), "--report", str(report)])
    assert r.exit_code == 0, r.output
    assert "ignored" not in r.output
    got = json.loads(report.read_text())
    assert got["examples"] == 9 and got["multiline"]["reduction"] == "cbify"


@pytest.mark.parametrize("opts", [{"explore": "softmax", "lam": 1e308},
                                  {"explore": "epsilon", "epsilon": float("nan")},
                                  {"explore": "squarecb", "gamma_scale": float("inf")}])
def test_api_explorer_numbers_beyond_float32_are_refused(opts):
    """Model(lam=1e308) leaked numpy's RuntimeWarning (overflow in cast) with its source
    path, and explored with an infinite lambda."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="a float32 holds"):
            sl.Model(cb_adf=True, **opts).learn({"u": "a"}, ["|a x", "|a y"], 0, 1.0, 0.5)
