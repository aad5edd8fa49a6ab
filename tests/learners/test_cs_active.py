"""``--cs_active K`` (:mod:`streamlearn.learners.cs_active`): its cost ranges against a plain
reading of VW's ``find_cost_range`` and ``binary_search``; runs beside VW 9.11.9 on data of
our own (-p, -r, progressive loss, total queries), models both ways; one-line refusals."""

from __future__ import annotations

import math
import random
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.learners import cs_active as ca

F32 = np.float32


def _search(fhat, delta, sens):
    """VW's binary_search, read straight from confidence_sequence_utility.h (float32)."""
    fhat, delta, sens = F32(fhat), F32(delta), F32(sens)
    maxw = min(F32(fhat / sens), F32(3.4028234663852886e38))
    if maxw * fhat * fhat <= delta:
        return maxw
    lo, hi = F32(0), maxw
    for _ in range(20):
        w = (hi + lo) / F32(2)
        v = w * (fhat * fhat - (fhat - sens * w) * (fhat - sens * w)) - delta
        if v > 0:
            hi = w
        else:
            lo = w
        if abs(v) <= F32(1e-6) or hi - lo <= F32(1e-6):
            break
    return lo


def _range(pc, sens, t, delta, eta, cmin, cmax):
    """VW's find_cost_range, plainly."""
    if t <= 1 or math.isnan(sens) or math.isinf(sens):
        return cmin, cmax, True
    hi = min(F32(pc + sens * _search(cmax - pc, delta, sens)), cmax)
    lo = max(F32(pc - sens * _search(pc - cmin, delta, sens)), cmin)
    return lo, hi, bool(hi - lo > eta)


def test_cost_range_is_vws():
    rng = random.Random(3)
    for _ in range(300):
        pc, sens = F32(rng.uniform(0, 2)), F32(rng.uniform(0.01, 2))
        t = rng.choice([1, 2, 5, 40])
        delta, eta = F32(rng.uniform(0, 2)), F32(rng.uniform(0.1, 1))
        got = ca.cost_range(pc, sens, float(t), delta, eta, F32(0), F32(2))
        want = _range(pc, sens, t, delta, eta, F32(0), F32(2))
        assert (F32(got[0]), F32(got[1]), bool(got[2])) == want


def _data(path, seed, k, n, missing=0.0):
    r = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(n):
            feats = " ".join(f"f{r.randint(0, 30)}:{r.uniform(-2, 2):.3f}"
                             for _ in range(r.randint(1, 6)))  # fmt: skip
            if r.random() < 0.05:
                lab = ""
            else:
                cls = sorted(r.sample(range(1, k + 1), r.randint(1, k)))
                lab = " ".join(f"{c}" if r.random() < missing else f"{c}:{r.uniform(0, 2):.2f}"
                               for c in cls)  # fmt: skip
            f.write(f"{lab} |a {feats} |b x{r.randint(0, 5)}\n")


def _run(tool, args, cwd):
    mod = ["vowpalwabbit"] if tool == "vw" else ["streamlearn", "vw"]
    return subprocess.run([sys.executable, "-m", *mod, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def _summary(stderr):
    return [ln for ln in stderr.splitlines()
            if ln.startswith(("average loss", "total queries", "number of examples"))]


@pytest.mark.parametrize("args", [
    "--cs_active 4 --simulation --adax --cost_max 2 --cost_min 0.1",
    "--cs_active 4 --simulation --cost_max 2 --mellowness 0.01 --range_c 0.2 --domination 0 "
    "--power_t 0.3",
])  # fmt: skip
def test_beside_vw(tmp_path, args):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d", 5, 4, 300, missing=0.05)
    out = {}
    for tool in ("vw", "sl"):
        a = ["-d", "d", *args.split(), "-p", f"{tool}.p", "-r", f"{tool}.r"]
        proc = _run(tool, a, tmp_path)
        assert proc.returncode == 0, proc.stderr[-500:]
        out[tool] = (_summary(proc.stderr), (tmp_path / f"{tool}.p").read_text(),
                     (tmp_path / f"{tool}.r").read_text())  # fmt: skip
    assert out["sl"] == out["vw"]


def test_models_both_ways(tmp_path):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d", 7, 3, 200)
    train = ["-d", "d", "--cs_active", "3", "--simulation", "--adax", "--cost_max", "2",
             "--mellowness", "0.3"]  # fmt: skip
    for tool in ("vw", "sl"):
        assert _run(tool, [*train, "-f", f"{tool}.model"], tmp_path).returncode == 0
    preds = []
    for tool, model in (("vw", "vw"), ("sl", "vw"), ("vw", "sl"), ("sl", "sl")):
        proc = _run(tool, ["-d", "d", "-t", "-i", f"{model}.model", "-p", "p"], tmp_path)
        assert proc.returncode == 0, proc.stderr[-500:]
        preds.append(((tmp_path / "p").read_text(), _summary(proc.stderr)))
    assert all(p == preds[0] for p in preds)


@pytest.mark.parametrize(("args", "says"), [
    ("--cs_active 3 --simulation --csa_debug", "--csa_debug"),
    ("--cs_active 3 --simulation --baseline", "--baseline"),
    ("--cs_active 3 --loss_function logistic", "non-squared loss"),
    ("--adax", "--adax"),
    ("--cs_active 3 --adax --l1 0.001", "--l1"),
    ("--cs_active 3 --csoaa 3", "--csoaa"),
    ("--csoaa 3 --cs_active 3", "--csoaa"),
    ("--cs_active 3 --sgd", "adaptive"),
])  # fmt: skip
def test_refused(args, says):
    from streamlearn.errors import VWUsage
    from streamlearn.vwargs import parse_argv, resolve

    with pytest.raises(VWUsage, match=says):
        resolve(parse_argv([*args.split(), "-d", "x"]))


def test_budget_refused_in_one_line(tmp_path):
    """A --max_labels budget reached: VW leaves its predictions unset; sl stops, exit 2."""
    _data(tmp_path / "d", 1, 3, 20)
    proc = _run("sl", ["-d", "d", "--cs_active", "3", "--simulation", "--max_labels", "1",
                       "-p", "p"], tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    last = [ln for ln in proc.stderr.splitlines() if ln.startswith("Error")]
    assert len(last) == 1 and "--max_labels 1" in last[0]
    assert not (tmp_path / "p").exists() or (tmp_path / "p").read_text() == ""
