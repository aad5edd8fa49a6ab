"""The off-policy estimates of sl vw --cb_adf/--cb_explore_adf runs (run/offpolicy.py):
in the JSON report, on stderr only with --ope, IPS equal to VW's progressive loss, the
interval around the true cost of the run's own predictions (scripts/make_cb_data.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.learners.test_ope import gen
from tests.paths import ROOT
from tests.unix import invoke

GEN = ROOT / "scripts" / "make_cb_data.py"


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cb")
    for fmt, name in (("adf", "log.txt"), ("dsjson", "log.json")):
        subprocess.run([sys.executable, str(GEN), "--examples", "3000", "--actions", "5",
                        "--seed", "3", "--format", fmt, "-o", str(d / name)],
                       check=True)  # fmt: skip
    return d


def _run(args, tmp_path, name="r.json"):
    rep = tmp_path / name
    r = invoke(["vw", *args, "--report", str(rep)])
    assert r.exit_code == 0, r.output
    return r, json.loads(rep.read_text())


def _vw_loss(args) -> float:
    pytest.importorskip("vowpalwabbit")
    out = subprocess.run([sys.executable, "-m", "vowpalwabbit", *args], capture_output=True,
                         text=True, check=True)  # fmt: skip
    return float(re.search(r"average loss = (\S+)", out.stderr).group(1))


@pytest.mark.parametrize("main", [["--cb_explore_adf"], ["--cb_adf"],
                                  ["--cb_explore_adf", "--softmax", "--lambda", "5"],
                                  ["--cb_adf", "--cb_type", "ips"]])  # fmt: skip
def test_ips_is_the_progressive_loss_and_sits_with_snips_and_dr(logs, tmp_path, main):
    args = [*main, "-q", "sa", "-d", str(logs / "log.txt")]
    r, rep = _run(args, tmp_path)
    off = rep["off_policy"]
    prog = off["progressive"]
    assert prog["examples"] == 3000 and off["holdout"] is None
    assert prog["ips"]["estimate"] == pytest.approx(rep["average_loss"], rel=1e-6)  # VW: float32
    assert f"{prog['ips']['estimate']:.6f}" == f"{_vw_loss(args):.6f}"
    for key in ("ips", "snips", "dr", "logging"):
        e = prog[key]
        assert e["low"] < e["estimate"] < e["high"]
    # the logging policy's observed cost is the mean logged cost
    costs = [int(line.split(":")[1]) for line in (logs / "log.txt").read_text().splitlines()
             if line[:2] == "0:"]  # fmt: skip
    assert prog["logging"]["estimate"] == pytest.approx(sum(costs) / len(costs))
    curve = prog["curve"]
    assert [row[0] for row in curve][:3] == [1, 2, 3] and curve[-1][0] == 3000
    assert len(curve[0]) == len(prog["curve_columns"]) == 13
    assert "off-policy" not in r.output  # VW's stderr: only with --ope


def test_ope_prints_the_estimates_after_vws_summary(logs, tmp_path):
    args = ["--cb_explore_adf", "-d", str(logs / "log.txt")]
    plain = invoke(["vw", *args])
    r = invoke(["vw", *args, "--ope"])
    assert r.exit_code == plain.exit_code == 0
    assert r.output.startswith(plain.output)  # VW's lines unchanged, ours after them
    extra = r.output[len(plain.output):].splitlines()  # fmt: skip
    assert extra[0].startswith("off-policy estimates of the learned policy's cost, progressive "
                               "(3000 examples, 95% intervals)")  # fmt: skip
    assert [x.split()[0] for x in extra[1:5]] == ["IPS", "SNIPS", "DR", "logging"]


def test_the_interval_covers_the_true_cost_of_the_runs_predictions(logs, tmp_path):
    preds = tmp_path / "p.txt"
    _, rep = _run(["--cb_explore_adf", "-q", "sa", "-d", str(logs / "log.txt"), "-p",
                   str(preds)], tmp_path)  # fmt: skip
    wd = gen.world(3, actions=5)
    truth = gen.predictions_cost(wd, 3000, 3, gen.read_predictions(str(preds), 5))
    prog = rep["off_policy"]["progressive"]
    for key in ("ips", "snips", "dr"):
        assert prog[key]["low"] <= truth <= prog[key]["high"], (key, truth, prog[key])
    # and the learned policy looks cheaper than the logging policy
    assert prog["dr"]["estimate"] < prog["logging"]["estimate"]


def test_dsjson_gives_the_same_estimates(logs, tmp_path):
    _, a = _run(["--cb_explore_adf", "-d", str(logs / "log.txt")], tmp_path, "a.json")
    _, b = _run(["--cb_explore_adf", "--dsjson", "-d", str(logs / "log.json")], tmp_path,
                "b.json")  # fmt: skip
    a, b = a["off_policy"]["progressive"], b["off_policy"]["progressive"]
    assert a["examples"] == b["examples"] == 3000
    for key in ("ips", "snips", "dr", "logging"):
        for f in ("estimate", "low", "high"):  # the scores agree to float32 rounding
            assert a[key][f] == pytest.approx(b[key][f], rel=1e-6), (key, f)


def test_holdout_and_bagging(logs, tmp_path):
    _, rep = _run(["--cb_adf", "--passes", "2", "-c", "-d", str(logs / "log.txt")], tmp_path)
    off = rep["off_policy"]
    assert off["progressive"]["examples"] == 2700  # the first pass, 1 in 10 held out
    assert off["holdout"]["examples"] == 300  # the last pass's held-out examples
    _, rep = _run(["--cb_explore_adf", "--bag", "3", "-d", str(logs / "log.txt")], tmp_path)
    prog = rep["off_policy"]["progressive"]
    assert prog["dr"] is None and prog["ips"]["estimate"] == pytest.approx(rep["average_loss"])


@pytest.mark.slow
def test_the_generator_is_seeded_and_states_true_costs(tmp_path):
    def make(*extra):
        return subprocess.run([sys.executable, str(GEN), "--examples", "50", "--actions", "3",
                               *extra], capture_output=True, check=True).stdout  # fmt: skip

    a, b, c = make("--seed", "1"), make("--seed", "1"), make("--seed", "2")
    assert a == b != c
    examples = a.decode().split("\n\n")
    assert len(examples) == 51 and examples[-1] == ""
    for ex in examples[:-1]:
        lines = ex.strip("\n").split("\n")
        assert lines[0].startswith("shared |s x0:") and len(lines) == 4
        assert sum(line.startswith("0:") for line in lines) == 1
    out = make("--seed", "1", "--policy-cost", "uniform", "--mc", "100000").decode()
    wd = gen.world(1, actions=3)
    assert float(out.split()[0]) == pytest.approx(gen.true_cost(wd, gen.policy("uniform"),
                                                                100_000)[0], abs=1e-6)  # fmt: skip
    # the optimal policy is the cheapest of those named
    named = ("optimal", "logging", "uniform", "noisy-greedy", "eps-greedy:0.5")
    costs = {p: gen.true_cost(wd, gen.policy(p), 100_000)[0] for p in named}
    assert min(costs, key=costs.get) == "optimal"


def test_sl_plot_draws_the_estimates_with_their_bands(logs, tmp_path):
    pytest.importorskip("matplotlib")
    from streamlearn.plot import load_runs, off_policy_figure

    _, rep = _run(["--cb_explore_adf", "--passes", "2", "-c", "-d", str(logs / "log.txt")],
                  tmp_path)  # fmt: skip
    out = tmp_path / "ope.png"
    r = invoke(["plot", str(tmp_path / "r.json"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes().startswith(b"\x89PNG")
    (run,) = load_runs([str(tmp_path / "r.json")])
    ax = off_policy_figure([run]).axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert {"IPS", "SNIPS", "DR", "logging policy (observed)"} <= set(lines)
    curve = rep["off_policy"]["progressive"]["curve"]
    xs, ys = lines["DR"].get_data()
    assert list(xs) == [row[0] for row in curve if row[0] >= 10]
    assert list(ys) == [row[7] for row in curve if row[0] >= 10]
    assert len(ax.collections) >= 4  # the bands (and the holdout's error bars)
    assert "95% intervals" in ax.get_title()
    # a malformed section is refused with the file's name
    bad = dict(rep, off_policy={"progressive": {"curve": [[1, 2]]}})
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    r = invoke(["plot", str(tmp_path / "bad.json"), "-o", str(tmp_path / "x.png")])
    assert r.exit_code != 0 and "off_policy section is malformed" in r.output


def test_a_saved_policy_is_evaluated_on_new_logs_and_ope_stays_the_runs(logs, tmp_path):
    model = tmp_path / "m.sl"
    r = invoke(["vw", "--cb_adf", "-d", str(logs / "log.txt"), "-f", str(model), "--ope"])
    assert r.exit_code == 0 and "off-policy" in r.output
    fresh = tmp_path / "fresh.txt"
    subprocess.run([sys.executable, str(GEN), "--examples", "2000", "--actions", "5", "--seed",
                    "3", "--log-seed", "4", "-o", str(fresh)], check=True)  # fmt: skip
    args = ["vw", "-t", "-i", str(model), "-d", str(fresh)]
    plain = invoke(args)
    assert plain.exit_code == 0 and "off-policy" not in plain.output  # --ope not recorded
    r, rep = _run([*args[1:], "--ope"], tmp_path)
    assert r.output.startswith(plain.output) and "off-policy" in r.output
    prog = rep["off_policy"]["progressive"]
    assert prog["examples"] == 2000 and prog["ips"]["estimate"] == pytest.approx(
        rep["average_loss"], rel=1e-6)  # fmt: skip
