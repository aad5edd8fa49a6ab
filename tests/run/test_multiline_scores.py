"""sl vw's ``--probabilities`` under ``--csoaa_ldf`` and ``-r`` under the multiline
reductions, byte for byte against VW 9.11.9 (its ``vowpalwabbit`` package, in a child
process): ``-p``, ``-r`` and stderr (VW's suite ids 108 and 353 among them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.marks import slow_except

ROOT = Path(__file__).parents[2]

CS_TEST = """1:1.0 | a_1 b_1 c_1
2:0.0 | a_2 b_2 c_2
3:2.0 | a_3 b_3 c_3

1:1.0 | b_1 c_1 d_1
2:0.0 | b_2 c_2 d_2

1:1.0 | a_1 b_1 c_1
3:2.0 | a_3 b_3 c_3

"""
"""VW's ``test/train-sets/cs_test.ldf`` (suite ids 108, 353)."""


def _cs(seed: int, n: int, test: bool = False) -> str:
    """csoaa_ldf examples: a shared line (some with a tag), 2..5 costed lines (some tagged);
    ``test``: some examples of test lines (a class without a cost)."""
    rng = np.random.default_rng(seed)
    out = []
    for e in range(n):
        lines = []
        if rng.random() < 0.6:
            tag = f"s{e}" if rng.random() < 0.3 else ""
            lines.append(f"shared {tag}|s u{rng.integers(0, 5)} v:{rng.choice([0.5, 2])}")
        kind = rng.integers(0, 6) if test else 0
        for a in range(int(rng.integers(2, 6))):
            cost = f":{rng.choice([0, 1, 2, 0.5])}" if kind != 1 else ""
            tag = f"t{e}_{a}" if rng.random() < 0.2 else ""
            lines.append(f"{a + 1}{cost} {tag}|a x{a} y{rng.integers(0, 6)} "
                         f"|b t{rng.integers(0, 3)}:{rng.choice([0.25, -1, 3])}")  # fmt: skip
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def _cb(seed: int, n: int) -> str:
    """cb_adf logs: a shared line (mostly, some tagged), 2..4 actions, one labeled (some
    on the first line), tags here and there."""
    rng = np.random.default_rng(seed)
    out = []
    for e in range(n):
        lines = []
        if rng.random() < 0.7:
            tag = f"s{e}" if rng.random() < 0.4 else ""
            lines.append(f"shared {tag}|u u{rng.integers(0, 6)} v{rng.integers(0, 3)}:0.5")
        k = int(rng.integers(2, 5))
        chosen = int(rng.integers(0, k)) if e % 5 else -1
        for a in range(k):
            lab = f"{a}:{rng.choice([0.0, 1.0, -1.0])}:{rng.choice([0.25, 0.5])}" if a == chosen \
                else ""  # fmt: skip
            tag = f"a{e}" if rng.random() < 0.2 else ""
            lines.append(f"{lab} {tag}|a x{a} y{rng.integers(0, 6)}")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def _cbk(seed: int, n: int) -> str:
    rng = np.random.default_rng(seed)
    return "".join(
        (f"{rng.integers(1, 4)}:{rng.choice([0, 1])}:0.5 " if e % 4 else "")
        + (f"k{e}" if e % 3 == 0 else "")
        + f"| a{rng.integers(0, 9)} b{rng.integers(0, 4)}\n"
        for e in range(n)
    )


def _run(cmd: list[str], args: list[str], cwd: Path) -> str:
    """stderr of ``python -m cmd args`` (VW's ``vowpalwabbit`` or sl): exit 0 asserted; VW's
    warnings go to its stdout, sl's note of the kernels it compiles is not VW's."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", *cmd, *args], capture_output=True, text=True,
                       cwd=cwd, env=env, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return "".join(ln for ln in r.stderr.splitlines(True) if not ln.startswith("compiling "))


def _both(tmp_path: Path, args: list[str], outputs: tuple[str, ...] = ("-p", "-r")) -> tuple:
    """(VW's stderr, sl's), each output file asserted equal."""
    vw_args = [*args]
    sl_args = [*args]
    for flag in outputs:
        name = flag.strip("-")
        vw_args += [flag, f"vw_{name}.txt"]
        sl_args += [flag, f"sl_{name}.txt"]
    vw = _run(["vowpalwabbit"], vw_args, tmp_path)
    for c in tmp_path.glob("*.cache*"):
        c.unlink()
    sl = _run(["streamlearn", "vw"], sl_args, tmp_path)
    for flag in outputs:
        name = flag.strip("-")
        ours, vws = (tmp_path / f"sl_{name}.txt"), (tmp_path / f"vw_{name}.txt")
        assert ours.read_bytes() == vws.read_bytes(), flag
    return (vw.replace("vw_", "X_"), sl.replace("sl_", "X_"))


@pytest.mark.parametrize("extra", [[], ["--link", "logistic"]])
def test_suite_108_and_353(tmp_path: Path, extra: list[str]) -> None:
    """``-d train-sets/cs_test.ldf --probabilities --csoaa_ldf=mc --loss_function=logistic
    -p ...`` (353: ``--link logistic`` too, VW's identity link under --probabilities)."""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "cs_test.ldf").write_text(CS_TEST)
    args = ["-d", "cs_test.ldf", "--probabilities", "--csoaa_ldf=mc", "--loss_function=logistic",
            *extra]  # fmt: skip
    vw, sl = _both(tmp_path, args, ("-p",))
    assert "csoaa_ldf-prob" in vw and "Output pred = SCALARS" in vw
    assert "average multiclass log loss = 0.763647" in vw
    assert sl == vw
    assert (tmp_path / "sl_p.txt").read_text().startswith("0.333333\n0.333333\n0.333333\n\n")


PROBS = [
    "--csoaa_ldf mc --loss_function logistic",
    "--csoaa_ldf mc",
    "--csoaa_ldf m -q sa",
    "--csoaa_ldf mc --loss_function logistic --link logistic --noconstant",
    "--csoaa_ldf mc --loss_function logistic --passes 3 -c -k --cache_file c.cache",
    "--csoaa_ldf mc --loss_function logistic --csoaa_rank",
]


@pytest.mark.parametrize("flags", PROBS)
def test_csoaa_ldf_probabilities_as_vw(tmp_path: Path, flags: str) -> None:
    """-p (each line's probability, the example's tag), -r, and stderr: the header's
    csoaa_ldf-prob and SCALARS, the table's class (VW's shared-line indexing), the
    summary's loss and multiclass log loss (`` h`` over held-out examples)."""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "d.txt").write_text(_cs(len(flags), 300))
    outputs = ("-r",) if "rank" in flags else ("-p", "-r")  # (--csoaa_rank's -p: no tags yet)
    vw, sl = _both(tmp_path, ["-d", "d.txt", "--probabilities", *flags.split()], outputs)
    assert "average multiclass log loss" in vw
    assert sl == vw


def test_probabilities_with_test_examples(tmp_path: Path) -> None:
    """Examples of test lines: VW still writes their probabilities and sums their log
    loss, apart (with the held-out ones) those whose first line is a test one (not a
    shared line).  (Examples mixing test and costed lines: VW counts them unlabeled, sl's
    table labeled, its loss and log loss divided by one more.)"""
    pytest.importorskip("vowpalwabbit")
    (tmp_path / "d.txt").write_text(_cs(5, 300, test=True))
    args = ["-d", "d.txt", "--probabilities", "--csoaa_ldf", "mc", "--loss_function", "logistic"]
    vw, sl = _both(tmp_path, args)

    def line(text: str) -> str:
        return next(ln for ln in text.splitlines() if ln.startswith("average multiclass"))

    assert line(sl) == line(vw)


RAW = [
    ("cs", "--csoaa_ldf mc"),
    ("cs", "--csoaa_ldf m -q sa --passes 2 -c -k --cache_file c.cache"),
    ("cs", "--csoaa_ldf mc --csoaa_rank"),
    ("cb", "--cb_adf"),
    ("cb", "--cb_adf --rank_all"),
    ("cb", "--cb_explore_adf"),
    ("cb", "--cb_explore_adf --softmax"),
    ("cb", "--cb_explore_adf --first 2"),
    ("cb", "--cb_explore_adf --bag 2"),
    ("cb", "--cb_explore_adf --cover 2"),
    ("cb", "--cb_explore_adf --squarecb --passes 2 -c -k --cache_file c.cache"),
    ("cb", "--explore_eval --epsilon 0.3"),
    ("cbk", "--cb 3"),
    ("cbk", "--cb_explore 3"),
]


@pytest.mark.parametrize(("data", "flags"), RAW)
def test_raw_predictions_as_vw(tmp_path: Path, data: str, flags: str) -> None:
    """-r: csoaa_ldf's ``class:score`` per line (the shared line's ``0:0``), cb_explore_adf's
    first-line label and tag lines, nothing for --cb_adf and --cb K."""
    pytest.importorskip("vowpalwabbit")
    make = {"cs": _cs, "cb": _cb, "cbk": _cbk}[data]
    (tmp_path / "d.txt").write_text(make(len(flags), 200))
    _both(tmp_path, ["-d", "d.txt", *flags.split()], ("-r",))
    raw = (tmp_path / "sl_r.txt").read_text()
    if "explore" in flags:
        assert raw
    elif data != "cs":
        assert raw == ""


@pytest.mark.parametrize("fmt", ["--json", "--dsjson"])
def test_raw_predictions_of_json_as_vw(tmp_path: Path, fmt: str) -> None:
    """VW's JSON examples begin with its shared line: ``357971040:0`` and the tag."""
    pytest.importorskip("vowpalwabbit")
    rng = np.random.default_rng(3)
    lines = []
    for e in range(40):
        top = {"_tag": f"t{e}"} if e % 3 else {}
        if e % 4 and fmt == "--json":
            top.update({"_label_cost": float(rng.choice([0, -1])), "_label_probability": 0.5,
                        "_labelIndex": int(rng.integers(0, 2))})  # fmt: skip
        ctx = {"_multi": [{"a": {"f": str(a)}} for a in range(2)]}
        if e % 2:
            ctx["u"] = {"g": str(e % 5)}
        if fmt == "--dsjson":
            top = {"_label_cost": -1.0, "_label_probability": 0.5, "_label_Action": 1,
                   "_labelIndex": 0, "EventId": f"ev{e}", "a": [1, 2], "p": [0.5, 0.5]}  # fmt: skip
        lines.append(json.dumps({**top, "c": ctx}))
    (tmp_path / "d.json").write_text("\n".join(lines) + "\n")
    _both(tmp_path, ["--cb_explore_adf", fmt, "-d", "d.json"])
    assert (tmp_path / "sl_r.txt").read_text().startswith("357971040:0")


REFUSED = [
    (["--ccb_explore_adf", "-r", "raw.txt"], "-r/--raw_predictions"),
    (["--cbify", "3", "--cbify_ldf", "-r", "raw.txt"], "-r/--raw_predictions"),
    (["--cb_explore_adf", "--probabilities"], "--probabilities"),
    (["--cb_adf", "--probabilities"], "--probabilities"),
]


@pytest.mark.parametrize(("args", "name"), slow_except(REFUSED, 0, unpack=True))
def test_still_refused_before_any_data(tmp_path: Path, args: list[str], name: str) -> None:
    fifo = tmp_path / "never.fifo"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", *args, "-d", str(fifo)],
                       cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert name in r.stderr and "not written" in r.stderr
    assert not (tmp_path / "raw.txt").exists()
