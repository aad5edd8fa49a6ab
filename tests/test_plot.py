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


# ---- hostile reports: one line and exit 2, never a traceback (issue 30) --------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=5),
    max_leaves=12,
)  # fmt: skip
_TEXT = st.text(alphabet=st.sampled_from("$\\^_{}%#a1 é\x1b\n"), max_size=20)
_NUM = st.none() | st.floats(allow_nan=True, allow_infinity=True) | st.integers(-5, 10**6)


@st.composite
def _reports(draw, base: dict):
    kind = draw(st.sampled_from(["any", "mutated", "rows", "grid"]))
    if kind == "any":
        return draw(_JSON)
    report = json.loads(json.dumps(base))
    if kind == "rows":
        report["curve"] = draw(st.lists(st.lists(_NUM, min_size=6, max_size=9), max_size=6))
    elif kind == "grid":
        report = {"configurations": draw(st.lists(st.fixed_dictionaries(
            {"curve": st.just(base["curve"]), "config": st.dictionaries(
                st.sampled_from(["l1", "l2", "passes", "loss"]), _NUM | _TEXT, max_size=3),
             "learner": _TEXT, "nonzero_weights": _NUM, "average_loss": _NUM}),
            min_size=1, max_size=4))}  # fmt: skip
    else:
        for _ in range(draw(st.integers(1, 3))):
            key = draw(st.sampled_from(sorted(report) + ["learner", "grid_values"]))
            report[key] = draw(_JSON | _TEXT)
    return report


@pytest.mark.filterwarnings("error::UserWarning", "error::RuntimeWarning")  # nothing on stderr
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_report_is_drawn_or_refused_in_one_line(tmp_path_factory, reports, data):
    tmp = tmp_path_factory.mktemp("hostile")
    base = json.loads(reports["1e-3"].read_text())
    paths = []
    for k in range(data.draw(st.integers(1, 3))):
        name = data.draw(st.sampled_from(["r", "$r$", "a$b", "x^{y}_z"]))
        path = tmp / f"{name}{k}.json"
        path.write_text(json.dumps(data.draw(_reports(base))))
        paths.append(str(path))
    r = invoke(["plot", *paths, "-o", str(tmp / "p.png")])  # a traceback fails the test
    assert r.exit_code in (0, 2), r.output
    if r.exit_code:
        assert len([ln for ln in r.output.splitlines() if ln.startswith("Error:")]) == 1
        assert not (tmp / "p.png").exists()


@pytest.mark.filterwarnings("error::UserWarning", "error::RuntimeWarning")  # nothing on stderr
def test_the_sparsity_axis_takes_counts_and_zero(tmp_path, reports):
    """hypothesis found nonzero_weights 2.2e-311 beside 11: the log axis it chose could not
    be laid out (a UserWarning on stderr).  A count that is no whole number is refused; a
    zero beside 11 is drawn on a linear axis."""
    base = json.loads(reports["1e-3"].read_text())
    for nonzero, code in ((2.225073858507e-311, 2), (0, 0)):
        entries = [dict(base, nonzero_weights=n, average_loss=0.5) for n in (nonzero, 11)]
        (tmp_path / "r.json").write_text(json.dumps({"configurations": entries}))
        out = tmp_path / "p.png"
        out.unlink(missing_ok=True)
        r = invoke(["plot", str(tmp_path / "r.json"), "-o", str(out)])
        assert r.exit_code == code, r.output
        assert out.exists() == (code == 0)


@pytest.mark.filterwarnings("error::UserWarning", "error::RuntimeWarning")  # nothing on stderr
def test_numbers_no_axis_can_hold_are_left_out(tmp_path, reports):
    """hypothesis found a curve whose examples reached 6.6e285: matplotlib's log axis
    overflowed laying out its ticks (a RuntimeWarning on stderr); a loss of ±1.7e308
    overflows a linear one.  Such rows are not drawn, as a NaN loss is not."""
    base = json.loads(reports["1e-3"].read_text())
    paths = []
    for k, rows in enumerate([[[0.0, None, 2.2e16, None, None, None, None, None],
                               [-3.8e16, None, 6.6e285, None, None, None, None, None]],
                              [[1.7e308, None, 10, None, None, None, None, None],
                               [-1.7e308, None, 20, None, None, None, None, None],
                               [0.5, None, 0.5, None, None, None, None, None]]]):  # fmt: skip
        (tmp_path / f"r{k}.json").write_text(json.dumps(dict(base, curve=rows,
                                                              average_loss=1.7e308)))
        paths.append(str(tmp_path / f"r{k}.json"))
    r = invoke(["plot", *paths, "-o", str(tmp_path / "p.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("content", "says"),
    [(b'{"curve": [\xff]}', "not UTF-8"), (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
     (b'{"curve": [1, 2, 3]}', "curve row 1"), (b'{"curve": [[1]]}', "curve row 1"),
     (b'{"curve": [["a", "b", "c", "d", "e", "f", "g", "h"]]}', "curve row 1"),
     (b'{"curve": [], "config": [1, 2]}', "config is [1, 2]")],
    ids=["utf8", "deep", "123", "[[1]]", "strings", "config"],
)  # fmt: skip
def test_the_issues_reports_are_exit_2_in_one_line(tmp_path, content, says):
    from tests.unix import one_line_error, sl

    (tmp_path / "r.json").write_bytes(content)
    r = sl(["plot", "r.json", "-o", "p.png"], tmp_path)
    assert r.returncode == 2 and says.encode() in r.stderr, r.stderr
    one_line_error(r.stderr)


def test_dollars_in_names_are_drawn_literally(tmp_path, reports):
    base = json.loads(reports["1e-3"].read_text())
    paths = []
    for name, learner in (("a$b", "$x"), ("c", "y$ $\\frac{"), ("$$", "tg")):
        (tmp_path / f"{name}.json").write_text(json.dumps(dict(base, learner=learner)))
        paths.append(str(tmp_path / f"{name}.json"))
    r = invoke(["plot", *paths, "-o", str(tmp_path / "p.png")])
    assert r.exit_code == 0, r.output
    labels = [ln.get_label() for ln in figure(load_runs(paths)).axes[0].lines]
    assert labels == [r"\$x", r"y\$ \$\frac{", "tg"]


def test_the_picture_may_not_replace_a_report(tmp_path, reports):
    rep = tmp_path / "rep.png"
    rep.write_bytes(reports["1e-3"].read_bytes())
    r = invoke(["plot", str(rep), "-o", str(rep)])
    assert r.exit_code == 2 and "is the input" in r.output
    assert rep.read_bytes() == reports["1e-3"].read_bytes()
