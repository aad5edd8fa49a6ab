"""sl vw --ccb_explore_adf and --slates against VW 9.11.9 (the same progressive loss and the
same -p file), and the CCB/slates examples sl skips with a reason."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.marks import slow_except

ROOT = Path(__file__).parents[2]


def _ccb_logs(seed: int, n: int) -> str:
    """CCB logs: a shared line, 2..6 actions, 1..3 slots (some labeled, some with features,
    some listing the actions they may take)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(2, 7))
        lines = [f"ccb shared |User u{rng.integers(0, 5)} v{rng.integers(0, 3)}:0.5"]
        for a in range(k):
            lines.append(f"ccb action |Action a{a} t{rng.integers(0, 3)}")
        for s in range(int(rng.integers(1, min(k, 3) + 1))):
            label = ""
            if rng.random() < 0.75:
                c = rng.choice([0.0, -1.0, 1.0, -0.5])
                label = f" {rng.integers(0, k)}:{c}:{rng.choice([0.2, 0.25, 0.5, 1.0])}"
            if rng.random() < 0.2:
                inc = sorted(set(rng.integers(0, k, size=2).tolist()))
                label += " " + ",".join(map(str, inc))
            feats = rng.choice([f"|Slot s{s}", f"| d{rng.integers(0, 3)}", "|"])
            tag = f" 'seed=t{rng.integers(0, 9)}" if rng.random() < 0.2 else ""
            lines.append(f"ccb slot{label}{tag} {feats}")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def _slates_logs(seed: int, n: int) -> str:
    """Slates logs: a shared line (a cost: labeled), 2 or 3 slots of 1..3 actions each."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        sizes = rng.integers(1, 4, size=int(rng.integers(2, 4))).tolist()
        labeled = rng.random() < 0.8
        cost = f" {rng.choice([0.0, -1.0, 0.5, 1.0])}" if labeled else ""
        lines = [f"slates shared{cost} |User u{rng.integers(0, 5)}"]
        for s, m in enumerate(sizes):
            for a in range(m):
                lines.append(f"slates action {s} |Action a{s}{a} t{rng.integers(0, 2)}")
        for s, m in enumerate(sizes):
            lab = f" {rng.integers(0, m)}:{rng.choice([0.5, 0.8, 1.0])}" if labeled else ""
            lines.append(f"slates slot{lab} |Slot s{s}")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def _run(cmd: list[str], args: list[str], cwd: Path, p: bool = True) -> tuple[str, str, str, str]:
    pred = cwd / "p.txt"
    pred.unlink(missing_ok=True)
    pred.write_text("")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = ["-p", str(pred)] if p else []
    r = subprocess.run([sys.executable, "-m", *cmd, *args, *out], capture_output=True,
                       text=True, cwd=cwd, env=env, check=False)  # fmt: skip
    m = re.search(r"average loss = (\S+)", r.stderr)
    assert m, r.stderr[-1000:]
    n = re.search(r"number of examples = (\d+)", r.stderr)
    # VW's progress table and summary (labels, predictions, feature counts)
    table = r.stderr[r.stderr.find("average  since") :]
    return m.group(1), n.group(1) if n else "", pred.read_text(), table


CCB_CASES = [
    "",
    "-q ::",
    "--epsilon 0.2 --cb_type ips",
    "--all_slots_loss --random_seed 7",
    "--softmax --lambda 2",
    "--first 3 --cb_type dr",
    "--noconstant -q UA --ccb_no_slot_index",
    "--cb_type dm --interactions ::: --epsilon 0.5",
]


@pytest.mark.parametrize("flags", CCB_CASES)
def test_ccb_explore_adf_equals_vw(tmp_path: Path, flags: str) -> None:
    pytest.importorskip("vowpalwabbit")
    data = tmp_path / "ccb.txt"
    data.write_text(_ccb_logs(sum(map(ord, flags)) % 89, 50))
    args = ["--ccb_explore_adf", *flags.split(), "-d", str(data)]
    want = _run(["vowpalwabbit"], args, tmp_path)
    got = _run(["streamlearn", "vw"], args, tmp_path)
    assert got == want


@pytest.mark.parametrize("flags", ["", "-q ::", "--epsilon 0.3 --random_seed 2"])
def test_slates_equals_vw(tmp_path: Path, flags: str) -> None:
    pytest.importorskip("vowpalwabbit")
    data = tmp_path / "slates.txt"
    data.write_text(_slates_logs(sum(map(ord, flags)) % 83, 40))
    args = ["--slates", *flags.split(), "-d", str(data)]
    want = _run(["vowpalwabbit"], args, tmp_path)
    got = _run(["streamlearn", "vw"], args, tmp_path)
    assert got == want


def test_ccb_dsjson_equals_vw(tmp_path: Path) -> None:
    pytest.importorskip("vowpalwabbit")
    rec = ('{"c":{"shared":{"f":"%d"},"_multi":[{"action":{"f":"1"}},{"action":{"f":"2"}},'
           '{"action":{"f":"3"}}],"_slots":[{"_id":"a","sj":{"f":"1"}},{"_id":"b","_inc":[0,2],'
           '"sj":{"f":"2"}}]},"_outcomes":[{"_label_cost":-1.0,"_id":"a","_a":[%d,1],'
           '"_p":[0.5,0.5]},{"_label_cost":%s,"_id":"b","_a":[2,0],'
           '"_p":[0.7,0.3]}]}\n')  # fmt: skip
    lines = [rec % (i % 3, (i * 7) % 3 if (i * 7) % 3 != 1 else 0, ["0", "-2"][i % 2])
             for i in range(30)]  # fmt: skip
    # a record without any slot outcome is passed over (VW: no actions taken)
    lines.insert(3, '{"c":{"_multi":[{"f":"1"},{"f":"2"}],"_slots":[{"g":1}]}}\n')
    data = tmp_path / "d.json"
    data.write_text("".join(lines))
    args = ["--ccb_explore_adf", "--dsjson", "--chain_hash", "-d", str(data)]
    want = _run(["vowpalwabbit"], args, tmp_path)
    got = _run(["streamlearn", "vw"], args, tmp_path)
    assert got == want


GOOD = "ccb shared |u a\nccb action |a x\nccb action |a y\nccb slot 1:-1:0.5 |s z\n\n"
BAD = [
    (
        "ccb shared |u a\nccb action |a x\nccb slot 3:-1:0.5 |s z\n\n",
        3,
        "logged action is not one of",
    ),
    ("ccb shared |u a\nccb action |a x\nccb slot 0:-1:0 |s z\n\n", 3, "probability not in"),
    ("ccb shared |u a\nccb action |a x\nccb slot 0:-1:1.5 |s z\n\n", 3, "probability not in"),
    ("ccb shared |u a\nccb slot 0:-1:0.5 |s z\nccb action |a x\n\n", 3, "out of order"),
    ("ccb action |a x\nccb slot 0:-1:0.5 |s z\n\n", 1, "without its shared line"),
    (
        "ccb shared |u a\nccb action |a x\nccb slot |s z\nccb slot |s w\n\n",
        4,
        "more slots than actions",
    ),
    ("ccb shared |u a\nccb action |a x\nccb slot 0:1:0.5,1:0.2 |s z\n\n", 3, "add up to 1"),
    ("ccb shared |u a\nccb bogus |a x\nccb slot |s z\n\n", 2, "bad ccb/slates label"),
    ("ccb shared |u a\n1:0:0.5 |a x\nccb slot |s z\n\n", 2, "bad ccb/slates label"),
]


@pytest.mark.parametrize(("bad", "line", "reason"), slow_except(BAD, 0, 3, 6, unpack=True))
def test_bad_ccb_example_is_skipped_with_its_reason(tmp_path: Path, bad: str, line: int,
                                                    reason: str) -> None:  # fmt: skip
    data = tmp_path / "d.txt"
    data.write_text(bad + GOOD)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "streamlearn", "vw", "--ccb_explore_adf", "-d", str(data)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert r.returncode == 0, r.stderr[-800:]
    assert f"{data}:{line}: " in r.stderr and reason in r.stderr, r.stderr[-800:]
    assert "number of examples = 1" in r.stderr
    assert "average loss = -1.000000" in r.stderr  # the good example's, as VW's
    strict = subprocess.run([*cmd, "--strict_parse"], capture_output=True, text=True, env=env,
                            check=False)  # fmt: skip
    assert strict.returncode == 4, strict.stderr[-800:]


def test_bad_slates_example_is_skipped(tmp_path: Path) -> None:
    data = tmp_path / "d.txt"
    good = "slates shared 1 |u a\nslates action 0 |a x\nslates action 1 |a y\n" \
           "slates slot 0:0.5 |s z\nslates slot 0:1 |s w\n\n"  # fmt: skip
    bad = "slates shared 1 |u a\nslates action 2 |a x\nslates slot 0:0.5 |s z\n\n" \
          "slates shared 1 |u a\nslates action 0 |a x\nslates slot |s z\n\n"  # fmt: skip
    data.write_text(bad + good)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "streamlearn", "vw", "--slates", "-d", str(data)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert r.returncode == 0, r.stderr[-800:]
    assert f"{data}:2: " in r.stderr and "slot is not one of" in r.stderr
    assert f"{data}:7: " in r.stderr and "a labeled slate" in r.stderr
    assert "number of examples = 1" in r.stderr


def _one_slot_logs(seed: int, n: int) -> str:
    """CCB logs of one slot without features: VW adds the slot index only after a model or
    an example of several slots."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(2, 5))
        acts = "".join(f"ccb action |Action a{a} t{rng.integers(0, 3)}\n" for a in range(k))
        lab = f" {rng.integers(0, k)}:{rng.choice([0.0, -1.0])}:{rng.choice([0.25, 0.5])}"
        out.append(f"ccb shared |User u{rng.integers(0, 5)}\n{acts}ccb slot{lab} |\n\n")
    return "".join(out)


@pytest.mark.parametrize(
    "first", ["--ccb_explore_adf", "--cb_explore_adf", "--ccb_explore_adf --no_predict"]
)
def test_ccb_continued_with_i_equals_vw(tmp_path: Path, first: str) -> None:
    """A model of a first run (-f) continued by a CCB run (-i): VW's second loss and -p
    (gd's state, mtr's counts and whether the first run had seen several slots)."""
    pytest.importorskip("vowpalwabbit")
    d1 = tmp_path / "d1.txt"
    if first.startswith("--ccb_explore_adf"):
        d1.write_text(_ccb_logs(5, 40))
    else:
        from tests.run.test_cb_explore import _logs

        d1.write_text(_logs(5, 40))
    d2 = tmp_path / "d2.txt"
    d2.write_text(_one_slot_logs(6, 30))
    got = []
    for cmd, model in ((["vowpalwabbit"], "m.vw"), (["streamlearn", "vw"], "m.sl")):
        # (--no_predict: nothing counted, no -p; VW's loss n.a. and 0 examples)
        once = _run(cmd, [*first.split(), "-d", str(d1), "-f", str(tmp_path / model)], tmp_path,
                    "--no_predict" not in first)  # fmt: skip
        then = _run(cmd, ["--ccb_explore_adf", "-d", str(d2), "-i", str(tmp_path / model)],
                    tmp_path)  # fmt: skip
        got.append((once[:3], then))  # (sl's -f adds a line to the first run's stderr)
    assert got[1] == got[0]


@pytest.mark.parametrize("flags", ["", "--chain_hash -q ::"])
def test_slates_dsjson_equals_vw(tmp_path: Path, flags: str) -> None:
    """Slates DSJSON records: _slot_id, _slots, _outcomes and the slate's _label_cost (a
    record without it is passed over, as VW does)."""
    pytest.importorskip("vowpalwabbit")
    rng = np.random.default_rng(3)
    lines = []
    for i in range(30):
        sizes = rng.integers(1, 4, size=int(rng.integers(2, 4))).tolist()
        multi = ",".join(f'{{"_slot_id":{s},"feature":"a{s}{a}"}}'
                         for s, m in enumerate(sizes) for a in range(m))  # fmt: skip
        slots = ",".join(f'{{"sf":"s{s}"}}' for s in range(len(sizes)))
        outs = ",".join(f'{{"_a":[{rng.integers(0, m)}],"_p":[{rng.choice([0.5, 0.8, 1.0])}]}}'
                        for m in sizes)  # fmt: skip
        lab = f'"_label_cost":{rng.choice([0, -1, 0.5])},' if i % 5 else ""
        lines.append(f'{{{lab}"c":{{"shared_feature":"u{i % 3}","_multi":[{multi}],'
                     f'"_slots":[{slots}]}},"_outcomes":[{outs}]}}\n')  # fmt: skip
    data = tmp_path / "d.json"
    data.write_text("".join(lines))
    args = ["--slates", "--dsjson", *flags.split(), "-d", str(data)]
    want = _run(["vowpalwabbit"], args, tmp_path)
    got = _run(["streamlearn", "vw"], args, tmp_path)
    assert got == want
