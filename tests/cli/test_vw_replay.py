"""``sl vw --replay_b N`` and ``--replay_c N`` next to VW 9.11.9: each example predicted, then
put in a slot drawn from VW's generator while the example it displaces is learned, the slots
learned at each pass's end; stderr, ``-p``, the readable model and the models both ways
(VW's generator kept as ``--random_seed``) as VW's, on data of our own."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unix import SL_VW, VW_MODULE, beside_vw, refused
from tests.unix import run_module as _run


@pytest.fixture
def data(tmp_path):
    """Labels 0 to 4 (squared loss) and -1/1 (logistic), some weights, unlabeled lines."""
    rng = np.random.default_rng(9)
    plain, signs = [], []
    for i in range(600):
        feats = " ".join(f"f{int(j)}:{rng.choice([0.5, 1, 2])}" for j in rng.integers(0, 60, 5))
        head = f"{int(rng.integers(0, 5))}" + (" 2" if i % 11 == 0 else "")
        plain.append(("" if i % 37 == 5 else head) + f" |a {feats} |b g{i % 7}")
        signs.append(f"{rng.choice(['1', '-1'])} |a {feats} |b g{i % 7}")
    (tmp_path / "d.vw").write_text("\n".join(plain) + "\n")
    (tmp_path / "s.vw").write_text("\n".join(signs) + "\n")
    costs = []  # --csoaa 4: three classes' costs a line, a line without costs now and then
    for i in range(400):
        classes = rng.permutation([1, 2, 3, 4])[:3]
        head = " ".join(f"{c}:{rng.choice([0, 1, 0.5])}" for c in classes) if i % 17 else ""
        costs.append(f"{head} |a f{int(rng.integers(0, 30))} f{int(rng.integers(0, 30))}")
    (tmp_path / "cs.vw").write_text("\n".join(costs) + "\n")
    return tmp_path


SETS = [
    ("d.vw", ["--replay_b", "100"]),
    ("d.vw", ["--replay_b", "7", "--replay_b_count", "3", "-q", "ab"]),
    ("d.vw", ["--replay_b", "30", "--sgd", "--power_t", "1", "--initial_t", "100", "-P", "1"]),
    ("d.vw", ["--replay_b", "50", "--normalized", "-l", "0.3", "--random_seed", "9"]),
    ("d.vw", ["--replay_b", "20", "-c", "-k", "--passes", "3", "--holdout_off"]),
    ("s.vw", ["--replay_b", "40", "--loss_function", "logistic", "--link", "logistic"]),
    ("cs.vw", ["--csoaa", "4", "--replay_c", "30"]),
    ("cs.vw", ["--csoaa", "4", "--replay_c", "10", "--replay_c_count", "2", "-c", "-k",
               "--passes", "3", "--holdout_off"]),
]


@pytest.mark.parametrize(("file", "args"), SETS)
def test_replay_learns_what_vw_learns(data, file: str, args: list[str]) -> None:
    pytest.importorskip("vowpalwabbit")
    vw_err, sl_err = beside_vw(file, args, data)
    assert sl_err == vw_err
    assert ("Enabled learners: gd, replay_b, scorer-" in sl_err if "--replay_b" in args
            else "Enabled learners: gd, scorer-identity, csoaa, replay_c" in sl_err)
    assert (data / "sl.p").read_bytes() == (data / "vw.p").read_bytes()
    assert (data / "sl.txt").read_text() == (data / "vw.txt").read_text()
    # the models both ways: their generator too, so each run continues as the other's
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        for model in ("vw", "sl"):
            _run(prog, ["-d", file, "-i", f"{model}.m", "-p", f"{name}-{model}.p"], data)
    same = {(data / f"{n}-{m}.p").read_bytes() for n in ("vw", "sl") for m in ("vw", "sl")}
    assert len(same) == 1


def test_scoring_replays_nothing(data) -> None:
    """Under -t the slots are never used: the predictions and loss of a run without it."""
    _run(SL_VW, ["-d", "d.vw", "--replay_b", "10", "-f", "m.vw", "--quiet"], data)
    a = _run(SL_VW, ["-d", "d.vw", "-i", "m.vw", "-t", "-p", "a.p"], data)
    b = _run(SL_VW, ["-d", "d.vw", "-i", "m.vw", "-t", "--replay_b", "10", "-p", "b.p"], data)
    assert (data / "a.p").read_bytes() == (data / "b.p").read_bytes()
    loss = [ln for ln in a.stderr.splitlines() if ln.startswith("average loss")]
    assert loss and loss == [ln for ln in b.stderr.splitlines() if ln.startswith("average loss")]


@pytest.mark.parametrize(("args", "said"), [
    (["--replay_b", "5", "--passes", "2", "-c"], "--replay_b with a holdout"),
    (["--replay_b", "5", "--oaa", "3"], "--replay_b with --oaa"),
    (["--replay_b", "5", "--audit"], "--audit with --replay_b"),
    (["--replay_b_count", "2"], "--replay_b_count is an option of --replay_b"),
    (["--replay_c", "5"], "--replay_c replays --csoaa K's examples"),
    (["--oaa", "3", "--replay_m", "5"], "--replay_m is not supported by sl yet"),
])  # fmt: skip
def test_refused_before_reading(data, args: list[str], said: str) -> None:
    refused(["-d", "d.vw", *args], data, said)


def test_a_buffer_beyond_memory_is_refused_before_it_is_made(data) -> None:
    """N is bounded before its slots are made (from the command line or a model's options):
    exit 8 and one line, not a MemoryError."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", "-d", "d.vw", "--replay_b",
                        "100000000000", "--quiet"], cwd=data, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 8, r.stderr
    assert "experience replay's 100000000000 slots needs at least" in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
