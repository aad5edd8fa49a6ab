"""``--experimental_igl`` (:mod:`streamlearn.reductions.igl`, :mod:`streamlearn.learners.igl`)
against VW 9.11.9 on DSJSON records of our own (observations, ``_definitely_bad``, varying
actions): the progress table, ``-p``, readable models, VW's model files both ways and the
``--predict_only_model`` spin-off; and the refusals."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reductions.test_lrq import ROOT, needs_vw

IGL = ["--dsjson", "--cb_explore_adf", "--coin", "--experimental_igl"]


def _data(path: Path, n: int, seed: int) -> None:
    """DSJSON records: a user (namespace U, sometimes B too), 2-5 actions (namespace A), the
    logged action and its probability, observations in namespaces v (and w), now and then
    ``_definitely_bad``."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        k = rnd.randint(2, 5)
        user = {f"user=u{rnd.randrange(6)}": 1, "time": rnd.choice([1, 0.5, 2])}
        ctx: dict = {"User": user}
        if rnd.random() < 0.5:
            ctx["B"] = {f"b{rnd.randrange(4)}": rnd.choice([1, -0.5])}
        acts = [{"Action": {f"action=a{rnd.randrange(8)}": 1,
                            **({"len": rnd.choice([1, 3])} if rnd.random() < 0.4 else {})}}
                for _ in range(k)]  # fmt: skip
        ctx["_multi"] = acts
        chosen = rnd.randrange(k)
        p = round(rnd.choice([1.0 / k, 0.8, 0.5, 0.3]), 4)
        obs = {"v": {f"v={rnd.choice(['click', 'skip', 'none'])}": 1}}
        if rnd.random() < 0.3:
            obs["w"] = {f"dwell{rnd.randrange(3)}": rnd.choice([1, 2.5])}
        obs["_definitely_bad"] = rnd.random() < 0.15
        rec = {"_label_cost": 0, "_label_probability": p, "_label_Action": chosen + 1,
               "_labelIndex": chosen, "o": [obs], "a": list(range(k)), "c": ctx,
               "p": [p] * k, "EventId": f"e{i}"}  # fmt: skip
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")


def _run(cmd: list[str], cwd: Path, jit: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not jit:  # (the kernels as plain Python: no compilation in the tests)
        env["NUMBA_DISABLE_JIT"] = "1"
    return subprocess.run([sys.executable, "-m", *cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip


def _vw(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return _run(["vowpalwabbit", *args], cwd)


def _sl(args: list[str], cwd: Path, jit: bool = False) -> subprocess.CompletedProcess:
    return _run(["streamlearn", "vw", *args], cwd, jit)


def _table(text: str) -> list[str]:
    """VW's stderr from its table on (the lines above name files and say sl's compiling)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Enabled learners"))
    return lines[start:]


CASES = [
    ["--epsilon", "0.2", "-q", "UA"],
    ["-q", "UA", "-q", "BA", "--noconstant"],
    ["--epsilon", "0.1", "--first_only"],
]


@needs_vw
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_progress_and_predictions_match_vw(tmp_path: Path, seed: int, case: int) -> None:
    _data(tmp_path / "d.json", 60, seed)
    args = [*IGL, *CASES[case], "-d", "d.json"]
    vw = _vw([*args, "-p", "vw.pred"], tmp_path)
    sl = _sl([*args, "-p", "sl.pred"], tmp_path)
    assert vw.returncode == 0, vw.stderr
    assert sl.returncode == 0, sl.stderr
    assert _table(sl.stderr) == _table(vw.stderr)
    assert (tmp_path / "sl.pred").read_bytes() == (tmp_path / "vw.pred").read_bytes()


@needs_vw
def test_jitted_kernel_matches_vw(tmp_path: Path) -> None:
    _data(tmp_path / "d.json", 40, 7)
    args = [*IGL, "--epsilon", "0.2", "-q", "UA", "-d", "d.json"]
    vw = _vw([*args, "-p", "vw.pred"], tmp_path)
    sl = _sl([*args, "-p", "sl.pred"], tmp_path, jit=True)
    assert sl.returncode == 0, sl.stderr
    assert _table(sl.stderr) == _table(vw.stderr)
    assert (tmp_path / "sl.pred").read_bytes() == (tmp_path / "vw.pred").read_bytes()


@needs_vw
def test_models_both_ways(tmp_path: Path) -> None:
    """A model of sl continued by VW and one of VW continued by sl give VW's numbers; the
    models' bodies (all but the version in the header) and readable models are VW's."""
    from streamlearn.run.mlmodel import _header

    _data(tmp_path / "a.json", 50, 11)
    _data(tmp_path / "b.json", 50, 12)
    args = [*IGL, "--epsilon", "0.2", "-q", "UA"]
    assert _vw([*args, "-d", "a.json", "-f", "vw.model", "--readable_model", "vw.txt"],
               tmp_path).returncode == 0  # fmt: skip
    sl = _sl([*args, "-d", "a.json", "-f", "sl.model", "--readable_model", "sl.txt"], tmp_path)
    assert sl.returncode == 0, sl.stderr
    assert (tmp_path / "sl.txt").read_text() == (tmp_path / "vw.txt").read_text()
    a, ha = _header(str(tmp_path / "vw.model"), whole=True)
    b, hb = _header(str(tmp_path / "sl.model"), whole=True)
    assert a[ha.end :] == b[hb.end :] and ha.options == hb.options
    outs = {}
    for who, model, run in (("vw_of_sl", "sl.model", _vw), ("sl_of_vw", "vw.model", _sl),
                            ("vw_of_vw", "vw.model", _vw)):  # fmt: skip
        got = run([*args, "-d", "b.json", "-i", model, "-p", f"{who}.pred", "--readable_model",
                   f"{who}.txt"], tmp_path)  # fmt: skip
        assert got.returncode == 0, got.stderr
        outs[who] = (_table(got.stderr), (tmp_path / f"{who}.pred").read_bytes(),
                     (tmp_path / f"{who}.txt").read_text())  # fmt: skip
    assert outs["vw_of_sl"] == outs["vw_of_vw"]
    assert outs["sl_of_vw"] == outs["vw_of_vw"]


@needs_vw
def test_predict_only_spin_off(tmp_path: Path) -> None:
    """``--predict_only_model``: the policy alone, one bit fewer, a cb_explore_adf model."""
    _data(tmp_path / "a.json", 40, 21)
    _data(tmp_path / "b.json", 20, 22)
    args = [*IGL, "-q", "UA", "--noconstant", "--predict_only_model", "-b", "16", "-d", "a.json"]
    assert _vw([*args, "-f", "vw.model"], tmp_path).returncode == 0
    sl = _sl([*args, "-f", "sl.model"], tmp_path)
    assert sl.returncode == 0, sl.stderr
    for who in ("vw", "sl"):
        got = _vw(["-i", f"{who}.model", "-t", "--dsjson", "-d", "b.json", "-p", f"{who}.pred",
                   "--readable_model", f"{who}.txt"], tmp_path)  # fmt: skip
        assert got.returncode == 0, got.stderr
    assert (tmp_path / "sl.txt").read_text() == (tmp_path / "vw.txt").read_text()
    assert (tmp_path / "sl.pred").read_bytes() == (tmp_path / "vw.pred").read_bytes()


@pytest.mark.parametrize(
    ("extra", "word"),
    [
        (["--cb_explore_adf", "--dsjson", "-d", "x"], "--coin"),
        (["--coin", "--dsjson", "--softmax", "-d", "x"], "not yet"),
        (["--coin", "--dsjson", "--cb_type", "ips", "-d", "x"], "not yet"),
        (["--coin", "--dsjson", "--passes", "2", "-c", "-d", "x"], "not yet"),
        (["--coin", "--dsjson", "--cubic", "UAB", "-d", "x"], "not yet"),
        (["--coin", "--dsjson", "-c", "-d", "x"], "not yet"),
        (["--coin", "--dsjson", "--audit", "-d", "x"], "not yet"),
        (["--coin", "--dsjson"], "standard input"),
        (["--coin", "--json", "-d", "x"], "not yet"),
    ],
)
def test_refusals(tmp_path: Path, extra: list[str], word: str) -> None:
    got = _sl(["--experimental_igl", *extra], tmp_path)
    assert got.returncode == 2
    assert word in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1
