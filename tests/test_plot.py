"""sl plot: the pictures hold the curves and panels the reports ask for."""

from __future__ import annotations

import json

import pytest

from streamlearn.plot import figure, load_runs, pareto
from tests.unix import invoke, text_data

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plot")
    data = tmp / "d.vw"
    data.write_text(text_data(2000))
    out = {}
    for l1 in ("1e-4", "1e-3", "1e-2"):
        out[l1] = tmp / f"tg-{l1}.json"
        r = invoke(["train", str(data), "--algo", "tg", "--l1", l1, "--loss", "logistic",
                    "--report", str(out[l1]), "--quiet"])  # fmt: skip
        assert r.exit_code == 0, r.output
    out["passes"] = tmp / "passes.json"
    r = invoke(["train", str(data), "--passes", "3", "--holdout-period", "5", "--cache",
                str(tmp / "c.cache"), "--report", str(out["passes"]), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    return out


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_one_run_one_panel(tmp_path, reports, suffix):
    out = tmp_path / f"p.{suffix}"
    r = invoke(["plot", str(reports["1e-3"]), "-o", str(out)])
    assert r.exit_code == 0, r.output
    head = out.read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if suffix == "png" else b"<svg" in out.read_bytes()
    fig = figure(load_runs([str(reports["1e-3"])]))
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and "tg, logistic loss" in ax.get_title()
    assert len(ax.lines) == 1
    report = json.loads(reports["1e-3"].read_text())
    assert list(ax.lines[0].get_ydata()) == [row[0] for row in report["curve"]]


def test_passes_with_holdout_draw_the_holdout_rows_apart(reports):
    fig = figure(load_runs([str(reports["passes"])]))
    (ax,) = fig.axes
    labels = [ln.get_label() for ln in ax.lines]
    assert labels == ["passes", "passes (holdout)"]
    assert "3 passes" in ax.get_title()
    report = json.loads(reports["passes"].read_text())
    held = [row[0] for row in report["curve"] if row[7]]
    assert held and list(ax.lines[1].get_ydata()) == held


def test_several_runs_add_loss_against_sparsity_with_the_pareto_front(tmp_path, reports):
    paths = [str(reports[k]) for k in ("1e-4", "1e-3", "1e-2")]
    out = tmp_path / "sweep.png"
    assert invoke(["plot", *paths, "-o", str(out)]).exit_code == 0
    fig = figure(load_runs(paths))
    curves, sparsity = fig.axes
    assert [ln.get_label() for ln in curves.lines] == ["l1=0.0001", "l1=0.001", "l1=0.01"]
    nnz = [json.loads(reports[k].read_text())["nonzero_weights"] for k in ("1e-4", "1e-3", "1e-2")]
    points = [ln for ln in sparsity.lines if ln.get_label() != "Pareto front"]
    assert sorted(float(ln.get_xdata()[0]) for ln in points) == sorted(nnz)
    assert sparsity.get_xlabel() == "non-zero weights"
    assert any(ln.get_label() == "Pareto front" for ln in sparsity.lines)


def test_pareto_front():
    pts = [(10, 0.5), (5, 0.6), (20, 0.4), (15, 0.55), (5, 0.7)]
    assert pareto(pts) == [1, 0, 2]


@pytest.mark.parametrize(
    ("content", "out", "says"),
    [("{}", "p.png", "not an sl train report"), ("nope", "p.png", "not a JSON report"),
     ('{"curve": []}', "p.gif", "must end in")],
)  # fmt: skip
def test_bad_reports_and_outputs_are_usage_errors(tmp_path, content, out, says):
    rep = tmp_path / "r.json"
    rep.write_text(content)
    r = invoke(["plot", str(rep), "-o", str(tmp_path / out)])
    assert r.exit_code == 2 and says in r.output, r.output


def test_without_matplotlib_says_what_to_install(tmp_path, reports, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    r = invoke(["plot", str(reports["1e-3"]), "-o", str(tmp_path / "p.png")])
    assert r.exit_code == 2 and "pip install 'streamlearn[plot]'" in r.output
    assert not (tmp_path / "p.png").exists()
