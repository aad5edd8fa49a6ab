"""Grids over one parse: each configuration equals its own run, byte for byte."""

from __future__ import annotations

import itertools
import json

import pytest

from streamlearn.errors import UsageError
from streamlearn.run.grid import GRID_OPTIONS, Grid, parse_values
from tests.unix import invoke, text_data


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("grid") / "d.vw"
    path.write_text(text_data(1500))
    return path


# (common options, {grid option: its values as typed})
CASES = {
    "gd": (["--loss", "logistic"], {"--l1": ["0", "1e-4"], "-l": ["0.3", "0.5"]}),
    "gd-passes": (["--passes", "3"], {"--l2": ["0", "1e-3"], "--power-t": ["0.5", "0"]}),
    "sgd": (["--algo", "sgd", "-l", "0.5"], {"--l2": ["0", "1e-3"]}),
    "sgd-power": (["--algo", "sgd", "-l", "0.2", "--passes", "2"], {"--power-t": ["0", "0.5"]}),
    "tg": (["--algo", "tg", "--loss", "logistic", "--passes", "3"],
           {"--l1": ["0", "1e-3"], "--theta": ["inf", "0.5"], "--period": ["1", "3"]}),
    "fobos": (["--algo", "fobos", "--loss", "hinge", "--passes", "2", "--holdout-period", "5"],
              {"--l1": ["0", "1e-3"], "--l2": ["0", "1e-3"]}),
    "smidas": (["--algo", "smidas", "--loss", "logistic"], {"--l1": ["1e-4", "1e-3"]}),
    "ftrl": (["--algo", "ftrl", "--loss", "logistic", "--passes", "2"],
             {"--ftrl-alpha": ["0.1", "0.5"], "--ftrl-beta": ["1", "0.5"], "--l1": ["0", "1"]}),
    "l0": (["--algo", "l0", "--loss", "logistic", "--passes", "2"], {"--top-k": ["5", "50"]}),
    "subgrad": (["--algo", "subgrad", "--minibatch", "4"], {"--l1": ["1e-4", "1e-3"]}),
    "minibatch": (["--algo", "fobos", "--minibatch", "3", "--passes", "2"],
                  {"-l": ["0.5", "1"], "--l1": ["0", "1e-4"]}),
    "cd": (["--algo", "cd", "--loss", "logistic", "--noconstant"], {"--l1": ["1e-3", "1e-2"]}),
}  # fmt: skip


def _placeholder(option: str) -> str:
    return {"-l": "learning_rate"}.get(option, option.lstrip("-").replace("-", "_"))


def _in_grid_order(grid: dict) -> dict:
    """The options in the order the product takes them (GRID_OPTIONS')."""
    return dict(sorted(grid.items(), key=lambda kv: list(GRID_OPTIONS).index(_placeholder(kv[0]))))


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_configuration_equals_its_own_run(tmp_path, data, case):
    common, grid = CASES[case]
    grid = _in_grid_order(grid)
    tag = "-".join("{" + _placeholder(o) + "}" for o in grid)
    online = "--algo" not in common or common[common.index("--algo") + 1] != "cd"
    outs = ["-f", str(tmp_path / f"m-{tag}.sl"), "--readable-model", str(tmp_path / f"r-{tag}.txt")]
    if online:
        outs += ["-p", str(tmp_path / f"p-{tag}.txt")]
    args = [str(data), *common, *itertools.chain(*((o, ",".join(v)) for o, v in grid.items()))]
    r = invoke(["train", *args, *outs, "--report", str(tmp_path / "grid.json")])
    assert r.exit_code == 0, r.output
    report = json.loads((tmp_path / "grid.json").read_text())
    points = list(itertools.product(*grid.values()))
    assert len(report["configurations"]) == len(points)
    for k, values in enumerate(points):
        name = "-".join(values)
        one = [str(data), *common, *itertools.chain(*zip(grid, values, strict=True))]
        mine = ["-f", str(tmp_path / "one.sl"), "--readable-model", str(tmp_path / "one.txt")]
        if online:
            mine += ["-p", str(tmp_path / "one-p.txt")]
        r = invoke(["train", *one, *mine, "--report", str(tmp_path / "one.json"), "--quiet"])
        assert r.exit_code == 0, r.output
        assert (tmp_path / f"m-{name}.sl").read_bytes() == (tmp_path / "one.sl").read_bytes()
        assert (tmp_path / f"r-{name}.txt").read_text() == (tmp_path / "one.txt").read_text()
        if online:
            assert (tmp_path / f"p-{name}.txt").read_text() == (tmp_path / "one-p.txt").read_text()
        alone = json.loads((tmp_path / "one.json").read_text())
        entry = report["configurations"][k]
        typed = {_placeholder(o): v for o, v in zip(grid, values, strict=True)}
        assert entry["grid_values"] == typed
        for key in ("average_loss", "nonzero_weights", "curve", "holdout_loss",
                    "best_holdout_loss", "passes_run", "objective"):  # fmt: skip
            assert entry.get(key) == alone.get(key), key


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, data):
    """A grid's report (4 values of --l1) and the run's output."""
    rep = tmp_path_factory.mktemp("sweep") / "sweep.json"
    r = invoke(["train", str(data), "--algo", "tg", "--loss", "logistic", "--passes", "2",
                "--l1", "0,1e-3,1e-2,1e-1", "--report", str(rep)])  # fmt: skip
    return rep, r


def test_the_report_ranks_the_grid(sweep):
    rep, r = sweep
    assert r.exit_code == 0, r.output
    assert "finished grid: 4 configurations" in r.output and "* best" in r.output
    report = json.loads(rep.read_text())
    entries = report["configurations"]
    losses = [e["best_holdout_loss"] for e in entries]
    assert report["best_by"] == "holdout loss" and report["best"] == losses.index(min(losses))
    nnz = [e["nonzero_weights"] for e in entries]
    assert nnz == sorted(nnz, reverse=True) and nnz[-1] < nnz[0]
    front = report["pareto_front"]
    for k in range(4):  # on the front iff no other is at least as good on both and better on one
        beaten = any(nnz[j] <= nnz[k] and losses[j] <= losses[k] and (nnz[j], losses[j]) !=
                     (nnz[k], losses[k]) for j in range(4))  # fmt: skip
        assert (k in front) == (not beaten)


def test_the_grid_report_plots(sweep, tmp_path):
    pytest.importorskip("matplotlib", reason="sl plot needs matplotlib: pip install '.[plot]'")
    from streamlearn.plot import figure, load_runs

    rep, _ = sweep
    entries = json.loads(rep.read_text())["configurations"]
    nnz = [e["nonzero_weights"] for e in entries]
    for suffix in ("png", "svg"):
        out = tmp_path / f"sweep.{suffix}"
        assert invoke(["plot", str(rep), "-o", str(out)]).exit_code == 0
        assert out.stat().st_size > 1000
    curves, sparsity = figure(load_runs([str(rep)])).axes
    labels = [ln.get_label() for ln in curves.lines]
    assert [x for x in labels if "holdout" not in x] == ["l1=0", "l1=1e-3", "l1=1e-2", "l1=1e-1"]
    points = [ln for ln in sparsity.lines if ln.get_label() != "Pareto front"]
    assert sorted(float(ln.get_xdata()[0]) for ln in points) == sorted(nnz)
    assert sparsity.get_ylabel() == "holdout loss"


def test_report_placeholders_write_one_report_per_configuration(tmp_path, data):
    r = invoke(["train", str(data), "--l2", "0,1e-3", "--report", str(tmp_path / "r-{l2}.json"),
                "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    for v in ("0", "1e-3"):
        assert json.loads((tmp_path / f"r-{v}.json").read_text())["config"]["l2"] == float(v)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["-f", "m.sl"], "-f m.sl would be written by two configurations (l1=0 and l1=1e-3)"),
        (["-p", "-"], "standard output takes one configuration's predictions"),
        (["-f", "x-{l1}", "-p", "x-{l1}"], "name the same file"),
        (["-f", "m-{l3}.sl"], "{l3} is not an option a grid can vary"),
        (["--cache", "c-{l1}"], "the cache is written once for the whole grid"),
        (["--max-memory", "1M"], "the grid's 2 tables need"),
    ],
)
def test_outputs_that_collide_are_refused_before_reading(tmp_path, monkeypatch, extra, says):
    monkeypatch.chdir(tmp_path)
    # stdin is never read: the refusal comes first
    r = invoke(["train", "--l1", "0,1e-3", *extra], input=None)
    assert r.exit_code in (2, 8), r.output
    assert says in r.output, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("value", "says"),
    [("1e-5,x", "'x' is not a number"), ("1e-5,1e-5", "lists 1e-5 twice"),
     ("1e-5,", "'' is not a number")],
)  # fmt: skip
def test_bad_lists_are_usage_errors(value, says):
    r = invoke(["train", "--l1", value])
    assert r.exit_code == 2 and says in r.output, r.output


def test_options_that_fix_the_parse_stay_single():
    r = invoke(["train", "-b", "18,20"])
    assert r.exit_code == 2 and "not a valid integer" in r.output


def test_a_diverging_configuration_stops_alone(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{i % 7} |a x:1e10 y:{i}\n" for i in range(3000)))
    r = invoke(["train", str(data), "--algo", "sgd", "--power-t", "0", "-l", "1e-30,1e300",
                "-f", str(tmp_path / "m-{l}.sl"),
                "--report", str(tmp_path / "r.json")])  # fmt: skip
    assert r.exit_code == 6, r.output
    assert "1 of 2 configurations diverged" in r.output and "learning-rate=1e300" in r.output
    assert (tmp_path / "m-1e-30.sl").exists() and not (tmp_path / "m-1e300.sl").exists()
    entries = json.loads((tmp_path / "r.json").read_text())["configurations"]
    assert "diverged" in entries[1] and "diverged" not in entries[0]


def test_invert_hash_names_weights_that_become_non_zero_after_pass_one(tmp_path):
    data = tmp_path / "bug.vw"
    data.write_text("0 |a x\n1 |a y\n")
    out = tmp_path / "names.txt"
    r = invoke(["train", str(data), "--algo", "sgd", "--passes", "2", "--holdout-period", "0",
                "--invert-hash", str(out), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = [ln.split("\t") for ln in out.read_text().splitlines() if not ln.startswith("#")]
    assert len(rows) == 3 and all(len(row) == 3 and row[2] for row in rows), rows


def test_grid_expansion_and_placeholders():
    g = Grid.expand({"l1": parse_values("0,1e-5", float, "--l1"), "l2": [0.5], "algo": "tg"})
    assert [c.explicit for c in g.configurations] == [
        {"algo": "tg", "l2": 0.5, "l1": 0.0}, {"algo": "tg", "l2": 0.5, "l1": 1e-5}]
    c = g.configurations[1]
    assert c.fill("m-{l1}-{l2}.sl") == "m-1e-5-0.5.sl"
    with pytest.raises(UsageError, match="names --learning-rate, which is not on the command"):
        c.fill("m-{learning-rate}.sl")
    assert g.describe() == "2 configurations: l1 in {0, 1e-5}"


def test_stdin_passes_and_a_warm_start_per_configuration(tmp_path, data):
    """stdin is cached once for all configurations' passes; -i warm-starts each one."""
    start = tmp_path / "start.sl"
    r = invoke(["train", str(data), "--algo", "fobos", "--l1", "1e-4", "-f", str(start), "--quiet"])
    assert r.exit_code == 0, r.output
    grid = ["--algo", "fobos", "--l1", "0,1e-3", "--passes", "3", "-i", str(start)]
    r = invoke(["train", *grid, "-f", str(tmp_path / "g-{l1}.sl"), "--quiet"],
               input=data.read_text())  # fmt: skip
    assert r.exit_code == 0, r.output
    cache = tmp_path / "c.cache"
    r = invoke(["train", str(data), *grid, "--cache", str(cache), "-f", str(tmp_path / "c-{l1}.sl"),
                "--quiet"])  # fmt: skip
    assert r.exit_code == 0 and cache.exists(), r.output
    for l1 in ("0", "1e-3"):
        one = tmp_path / "one.sl"
        r = invoke(["train", str(data), "--algo", "fobos", "--l1", l1, "--passes", "3", "-i",
                    str(start), "-f", str(one), "--quiet"])  # fmt: skip
        assert r.exit_code == 0, r.output
        assert (tmp_path / f"g-{l1}.sl").read_bytes() == one.read_bytes()
        assert (tmp_path / f"c-{l1}.sl").read_bytes() == one.read_bytes()


def test_the_compact_table_on_stderr(data):
    """Up to six configurations one column each; more as the best and the worst."""
    few = invoke(["train", str(data), "--l2", "0,1e-3", "--passes", "2"]).output
    assert "pass 1 holdout loss: l2=0 " in few and "(average loss per configuration)" in few
    values = ",".join(f"{k}e-4" for k in range(1, 9))
    many = invoke(["train", str(data), "--algo", "tg", "--l1", values]).output
    assert "best average loss" in many and "worst average loss" in many
    rows = [ln for ln in many.splitlines() if ln.startswith("l1=")]
    assert len(rows) == 8 and sum("* best" in ln for ln in rows) == 1
