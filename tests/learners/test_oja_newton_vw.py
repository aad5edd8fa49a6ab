"""VW's ``--OjaNewton`` under ``sl vw`` beside VW 9.11.9 on data of our own: the progressive
loss, ``-p``, models both ways (VW scores sl's, sl scores VW's), the resume model's text,
a VW model continued, and one-line refusals.  The kernel against a dense reference:
``test_oja_newton.py``.
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from tests import unix
from tests.unix import SL_VW, VW_MODULE


def _data(path, n: int = 300, seed: int = 7) -> None:  # noqa: ANN001
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        x = {f"f{j}": round(rnd.uniform(-1, 1.5), 3) for j in rnd.sample(range(30), 5)}
        y = round(0.4 + 0.5 * x.get("f1", 0) - 0.3 * x.get("f2", 0) + rnd.gauss(0, 0.1), 4)
        weight = " 2" if i % 11 == 3 else ""
        label = "" if i % 41 == 7 else f"{y}{weight}"
        feats = " ".join(f"{k}:{v}" for k, v in x.items())
        lines.append(f"{label} |a {feats} |b g{rnd.randrange(6)} h{rnd.randrange(4)}")
    path.write_text("\n".join(lines) + "\n")


def run_module(prog: list[str], args: list[str], cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    return unix.run_module(prog, args, cwd, timeout=600)  # (a first run compiles)


def _summary(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln[:1].isdigit() or ln.startswith(
        ("average loss", "total feature", "weighted"))]  # fmt: skip


@pytest.mark.parametrize("opts", [
    ["-b", "12", "--sketch_size", "3", "--epoch_size", "5", "-q", "ab"],
    ["-b", "11", "--normalize", "false", "--random_init", "false", "--alpha_inverse", "4",
     "--learning_rate_cnt", "5", "--random_seed", "3"],
    ["-b", "10", "--sketch_size", "2", "--epoch_size", "3", "-c", "-k", "--passes", "3"],
])  # fmt: skip
def test_sl_vw_gives_vw_s_numbers_and_models(tmp_path, opts):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt")
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        r = run_module(prog, ["--OjaNewton", "-d", "d.txt", *opts, "-p", f"{tag}.p", "-f",
                              f"{tag}.m", "--predict_only_model"], tmp_path)  # fmt: skip
        out[tag] = _summary(r.stderr)
        (tmp_path / "d.txt.cache").unlink(missing_ok=True)
        (tmp_path / "d.txt.cache.sl").unlink(missing_ok=True)
    assert out["sl"] == out["vw"] and out["sl"]
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()
    four = unix.scored_both_ways("d.txt", tmp_path)
    assert len(set(four.values())) == 1, four


def test_models_with_resume_state_are_vw_s_and_a_vw_model_is_continued(tmp_path):
    pytest.importorskip("vowpalwabbit")
    _data(tmp_path / "d.txt", n=150)
    _data(tmp_path / "e.txt", n=150, seed=8)
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):  # VW's default: its resume state
        run_module(prog, ["--OjaNewton", "-b", "12", "-d", "d.txt", "--sketch_size", "4", "-f",
                          f"{tag}.m", "--readable_model", f"{tag}.r"], tmp_path)  # fmt: skip
    assert (tmp_path / "sl.r").read_text() == (tmp_path / "vw.r").read_text()
    run_module(VW_MODULE, ["--OjaNewton", "-b", "12", "-d", "d.txt", "-f", "m",
                           "--predict_only_model"], tmp_path)  # fmt: skip
    out = {}
    for tag, prog in (("vw", VW_MODULE), ("sl", SL_VW)):
        args = ["-i", "m", "-d", "e.txt", "-p", f"{tag}.p", "-f", f"{tag}.c",
                "--predict_only_model", "--readable_model", f"{tag}.cr"]  # fmt: skip
        out[tag] = _summary(run_module(prog, args, tmp_path).stderr)
    assert out["sl"] == out["vw"] and out["sl"]
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()
    assert (tmp_path / "sl.cr").read_text() == (tmp_path / "vw.cr").read_text()


@pytest.mark.parametrize(("args", "said"), [
    (["--OjaNewton", "--adaptive"], "--adaptive"),
    (["--OjaNewton", "--l1", "0.1"], "--l1"),
    (["--OjaNewton", "--oaa", "2"], "--OjaNewton"),
    (["--OjaNewton", "--audit"], "--audit"),
    (["--OjaNewton", "--sketch_size", "-1"], "--sketch_size"),
    (["--OjaNewton", "--epoch_size", "0"], "--epoch_size"),
    (["--OjaNewton", "--alpha", "x"], "--alpha"),
])  # fmt: skip
def test_what_it_does_not_run_is_refused_in_one_line(tmp_path, args, said):
    _data(tmp_path / "d.txt", n=5)
    unix.refused(["-d", "d.txt", *args], tmp_path, said)


def test_a_model_with_resume_state_is_refused_in_one_line(tmp_path):
    _data(tmp_path / "d.txt", n=20)
    run_module(SL_VW, ["--OjaNewton", "-b", "8", "-d", "d.txt", "-f", "m"], tmp_path)
    r = subprocess.run([sys.executable, "-m", *SL_VW, "-t", "-i", "m", "-d", "d.txt"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode != 0 and "--predict_only_model" in r.stderr, r.stderr
    unix.one_line_error(r.stderr)
