"""``--cb K`` and ``--cb_explore K`` in a Workspace (VW's single-line contextual bandits):
VW's answers call for call, its notebook unchanged but for its import, models both ways,
and the one-line path (:class:`~streamlearn.reductions.cb_line.CbLineParser`) giving what
the block path gives."""

from __future__ import annotations

import hashlib
import json
import pathlib

import numpy as np
import pytest

from streamlearn import vowpalwabbit as sl
from tests.vowpalwabbit.three_paths import assert_same_state, run_three

HERE = pathlib.Path(__file__).parent


def _lines(seed: int, n: int = 300, k: int = 4) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        feats = " ".join(f"f{rng.integers(0, 30)}:{rng.random():.3f}" for _ in range(4))
        r = rng.random()
        if r < 0.2:
            out.append(f"|u {feats} |v g{rng.integers(0, 5)}")
        elif r < 0.25:  # (two labels: the first with a cost and a probability is logged)
            out.append(f"{rng.integers(1, k + 1)} {rng.integers(1, k + 1)}:0.5:0.25 |u {feats}")
        else:
            out.append(f"{rng.integers(1, k + 1)}:{rng.random() * 2 - 0.5:.2f}:"
                       f"{rng.choice([0.1, 0.25, 0.5])} 'tag{rng.integers(0, 9)} |u {feats}")
    return out


ARGVS = ["--cb 4", "--cb_explore 4", "--cb 4 --cb_type dr", "--cb 4 --cb_type ips -l 0.3",
         "--cb 4 --cb_type mtr", "--cb_explore 4 --first 5", "--cb_explore 4 --bag 3",
         "--cb_explore 4 --cover 3", "--cb_explore 4 --softmax --lambda 2",
         "--cb_explore 4 --epsilon 0.3 --cb_type dr"]  # fmt: skip
RECORDED = {  # the first 12 hex digits of the sha256 of VW 9.11.9's answers (_digest)
    "--cb 4": "14bb3d4a78c3",
    "--cb_explore 4": "3999d74b5054",
    "--cb 4 --cb_type dr": "94cb0651c88a",
    "--cb 4 --cb_type ips -l 0.3": "587310fec6d6",
    "--cb 4 --cb_type mtr": "7149d2fe3546",
    "--cb_explore 4 --first 5": "844f61078de5",
    "--cb_explore 4 --bag 3": "ff68040dfffc",
    "--cb_explore 4 --cover 3": "1c775637ed81",
    "--cb_explore 4 --softmax --lambda 2": "4a70d92ab6d1",
    "--cb_explore 4 --epsilon 0.3 --cb_type dr": "29751b361c47",
}


def _answers(mod, argv: str, seed: int) -> list:  # noqa: ANN001
    w = mod.Workspace(argv + " --quiet")
    out = []
    for line in _lines(seed):
        out.append(w.predict(line))
        w.learn(line)
    out += [w.get_sum_loss(), w.get_weighted_examples(), int(w.get_prediction_type()),
            int(w.get_label_type())]  # fmt: skip
    w.finish()
    return out


def _digest(answers: list) -> str:
    return hashlib.sha256(json.dumps(answers).encode()).hexdigest()[:12]


@pytest.mark.parametrize("argv", ARGVS)
def test_vws_answers_call_for_call(argv: str) -> None:
    got = _answers(sl, argv, len(argv))
    if argv in RECORDED:
        assert _digest(got) == RECORDED[argv]
    vw = pytest.importorskip("vowpalwabbit")
    want = _answers(vw, argv, len(argv))
    first = next((i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b), None)
    assert first is None, f"call {first}: sl {got[first]}, VW {want[first]}"


def test_vws_notebook_unchanged_but_for_its_import(tmp_path) -> None:
    pytest.importorskip("pandas")
    text = (HERE / "cb_k_tutorial.py").read_text()
    mine = text.replace("from vowpalwabbit import pyvw",
                        "from streamlearn.vowpalwabbit import pyvw")  # fmt: skip
    assert mine != text
    ns: dict = {}
    exec(compile(mine, str(HERE / "cb_k_tutorial.py"), "exec"), ns)  # noqa: S102 - the notebook
    got = ns["run"](tmp_path)
    assert got == [(1, 3), (2, 3), (3, 3), (4, 3), 3]  # (VW 9.11.9's)
    pytest.importorskip("vowpalwabbit")
    theirs: dict = {}
    exec(compile(text, str(HERE / "cb_k_tutorial.py"), "exec"), theirs)  # noqa: S102
    assert theirs["run"](tmp_path) == got


@pytest.mark.parametrize("argv", ["--cb 4", "--cb_explore 4 --cb_type ips",
                                  "--cb_explore 4 --cb_type dr"])  # fmt: skip
def test_models_both_ways(tmp_path, argv: str) -> None:
    """A model saved, loaded by sl and by VW, and VW's loaded by sl: the same answers as
    VW's on the lines after (dr's reloaded model does not continue its run exactly, in VW
    as in sl: VW keeps no state of dr's in the file, so that check is left to VW's)."""
    lines = _lines(5)
    w = sl.Workspace(argv + " --quiet")
    for line in lines[:200]:
        w.learn(line)
    w.save(str(tmp_path / "sl.vw"))
    again = sl.Workspace(f"-i {tmp_path / 'sl.vw'} --quiet")
    for line in lines[200:] if "dr" not in argv else ():
        assert again.predict(line) == w.predict(line)
        again.learn(line)
        w.learn(line)
    vw = pytest.importorskip("vowpalwabbit")
    theirs = vw.Workspace(f"{argv} -i {tmp_path / 'sl.vw'} --quiet")
    ours = sl.Workspace(f"-i {tmp_path / 'sl.vw'} --quiet")
    v = vw.Workspace(argv + " --quiet")
    for line in lines[:200]:
        v.learn(line)
    v.save(str(tmp_path / "vw.vw"))
    v.finish()
    from_vw = sl.Workspace(f"-i {tmp_path / 'vw.vw'} --quiet")
    vw_again = vw.Workspace(f"{argv} -i {tmp_path / 'vw.vw'} --quiet")
    for line in lines[200:]:
        assert ours.predict(line) == theirs.predict(line)
        assert from_vw.predict(line) == vw_again.predict(line)
        for x in (theirs, ours, from_vw, vw_again):
            x.learn(line)


@pytest.mark.parametrize("argv", ARGVS[:4] + ARGVS[6:8])
def test_one_line_path_answers_as_the_block_path(argv: str, monkeypatch) -> None:
    """Three workspaces over the same calls: the one kernel call of a line
    (``Bandit.line``), the one-example parse then the learner's batch (``one_example``), and
    the block path: the same answers and errors, and the same state after."""
    lines = _lines(11)
    lines[7] = "7:1:0.5 |u a"  # (an action above K)
    lines[9] = "1:1:0.5 |u f:x:y"  # (malformed)
    lines[13] = "1:0.5:0.25 |u f\n2:0.5:0.25 |u g"  # (two lines at once)
    lines[21] = "| " + " ".join(f"w{i}:0.5" for i in range(20000))  # (past the kept buffer)
    (fused, one, block), took = run_three(argv, lines, monkeypatch)
    if not fused._live.bandit.one.fixed:  # (bagging, cover: their own walks, no one call)
        assert not any(p is not None for p in took.pop("line"))
    for name, parts in took.items():  # (each path ran, and left some lines to the next)
        assert sum(p is not None for p in parts) > 500 and None in parts, name
    assert_same_state([fused, one, block])
