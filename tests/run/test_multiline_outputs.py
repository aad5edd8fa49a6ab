"""sl vw's --readable_model and --invert_hash under the multiline reductions, byte for byte
against VW 9.11.9 (its ``vowpalwabbit`` package, run in-process); the outputs not written
yet are refused with exit 2 before any data is read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.marks import slow_except

ROOT = Path(__file__).parents[2]


def _cb(seed: int, n: int) -> str:
    """cb_adf logs: a shared line (mostly), 2..4 actions of two namespaces, one labeled."""
    rng = np.random.default_rng(seed)
    out = []
    for e in range(n):
        lines = []
        if rng.random() < 0.9:
            lines.append(f"shared |u u{rng.integers(0, 6)} v{rng.integers(0, 3)}:0.5 |w z{e % 3}")
        k = int(rng.integers(2, 5))
        chosen = int(rng.integers(0, k)) if e % 7 else -1
        for a in range(k):
            lab = ""
            if a == chosen:
                lab = f"0:{rng.choice([0.0, 1.0, -1.0, 0.5])}:{rng.choice([0.25, 0.5, 0.9])} "
            lines.append(f"{lab}|a x{a} y{rng.integers(0, 6)} |b t{rng.integers(0, 3)}:1.5")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def _cs(seed: int, n: int) -> str:
    """csoaa_ldf examples, some with a shared line."""
    rng = np.random.default_rng(seed)
    out = []
    for e in range(n):
        lines = [f"shared |s q{rng.integers(0, 5)}"] if e % 3 == 0 else []
        for a in range(int(rng.integers(2, 5))):
            lines.append(f"{a + 1}:{rng.choice([0, 1, 2, 0.5])} |a x{a} y{rng.integers(0, 6)} "
                         f"|b t{rng.integers(0, 3)}:0.25")  # fmt: skip
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def _cbk(seed: int, n: int) -> str:
    rng = np.random.default_rng(seed)
    return "".join(
        (f"{rng.integers(1, 5)}:{rng.choice([0, 1, 0.5])}:0.5 " if e % 5 else "")
        + f"|a x{rng.integers(0, 9)} y{rng.integers(0, 6)} |b t{rng.integers(0, 3)}:2\n"
        for e in range(n)
    )


def _vw(line: str, cwd: Path) -> None:
    """VW 9.11.9 on ``line``, in a child process (a VW error must not end the tests)."""
    code = "import sys\nfrom vowpalwabbit import Workspace\nWorkspace(sys.argv[1]).finish()\n"
    subprocess.run([sys.executable, "-c", code, line], cwd=cwd, check=True, capture_output=True)


def _sl(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "streamlearn", "vw", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip


CASES = [
    ("cb", "--cb_explore_adf"),
    ("cb", "--cb_explore_adf -q ab --quiet"),
    ("cb", "--cb_adf --cb_type dr"),
    ("cb", "--cb_adf --cb_type ips -q ::"),
    ("cb", "--cb_explore_adf --epsilon 0.2 --predict_only_model"),
    ("cb", "--cb_explore_adf --first 3"),
    ("cb", "--cb_explore_adf --softmax --lambda 2"),
    ("cb", "--cb_explore_adf --squarecb --quiet"),
    ("cb", "--cb_explore_adf --regcb --regcbopt"),
    ("cb", "--cb_explore_adf --synthcover"),
    ("cb", "--cb_explore_adf --bag 3 -q ua"),
    ("cb", "--cb_explore_adf --cover 2 --interactions uab"),
    ("cb", "--cb_explore_adf --rnd 2 --quiet"),
    ("cb", "--cb_explore_adf --coin"),
    ("cb", "--explore_eval --epsilon 0.3"),
    ("cb", "--cb_explore_adf --squarecb --passes 3 -c -k"),
    ("cs", "--csoaa_ldf m -q ::"),
    ("cs", "--csoaa_ldf mc --noconstant --passes 2 -c -k --quiet"),
    ("cbk", "--cb 4 --cb_type dr"),
    ("cbk", "--cb_explore 4 --cover 2 --quiet"),
]


@pytest.mark.parametrize(("data", "flags"), CASES)
@pytest.mark.parametrize("option", ["--readable_model", "--invert_hash"])
def test_multiline_readable_models_equal_vws(tmp_path: Path, data: str, flags: str,
                                             option: str) -> None:  # fmt: skip
    pytest.importorskip("vowpalwabbit")
    if option == "--invert_hash" and data == "cbk":
        pytest.skip("--invert_hash under --cb K is refused (test_refused)")
    if option == "--invert_hash" and " -c" in flags:
        pytest.skip("VW refuses --invert_hash with a cache, and several passes without one")
    make = {"cb": _cb, "cs": _cs, "cbk": _cbk}[data]
    (tmp_path / "d.txt").write_text(make(len(flags), 120))
    _vw(f"{flags} -d d.txt {option} vw.txt", tmp_path)
    r = _sl([*flags.split(), "-d", "d.txt", option, "sl.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.txt").read_bytes() == (tmp_path / "vw.txt").read_bytes()


def test_both_readable_models_and_the_binary_one_in_one_run(tmp_path: Path) -> None:
    """The readable header says the options the binary model's header holds."""
    from streamlearn.io import vwmodel

    (tmp_path / "d.txt").write_text(_cb(3, 40))
    args = ["--cb_explore_adf", "--bag", "2", "--epsilon", "0.2", "-d", "d.txt", "-f", "m.vw"]
    r = _sl([*args, "--readable_model", "r.txt", "--invert_hash", "i.txt", "--quiet"], tmp_path)
    assert r.returncode == 0, r.stderr
    h = vwmodel.read_header((tmp_path / "m.vw").read_bytes())
    for name in ("r.txt", "i.txt"):
        text = (tmp_path / name).read_text()
        assert f"options:{h.options}\n" in text
        assert "--epsilon 0.200000002980232" in h.options


REFUSED = [
    (["--cb_explore_adf", "--cover", "2", "--audit"], "--audit"),
    (["--cb", "3", "-a"], "--audit"),
    (["--ccb_explore_adf", "-r", "raw.txt"], "-r/--raw_predictions"),
    (["--cb_explore_adf", "--probabilities"], "--probabilities"),
    (["--ccb_explore_adf", "--no_predict", "--invert_hash", "x.inv"], "--invert_hash"),
    (["--slates", "--cb_type", "ips", "--audit"], "--audit"),
    (["--cbify", "3", "--readable_model", "x.txt"], "--readable_model"),
    (["--cb", "3", "--invert_hash", "x.inv"], "--invert_hash"),
]


@pytest.mark.parametrize(("args", "name"), slow_except(REFUSED, 0, 1, unpack=True))
def test_refused_before_any_data_is_read(tmp_path: Path, args: list[str], name: str) -> None:
    """Exit 2 naming the option, and nothing read: a FIFO with no writer would hang a run
    that opened it."""
    fifo = tmp_path / "never.fifo"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", *args, "-d", str(fifo)],
                       cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert name in r.stderr and "not written" in r.stderr and "ignored" not in r.stderr
    assert not (tmp_path / "x.txt").exists() and not (tmp_path / "x.inv").exists()


def test_invert_hash_from_stdin_is_refused(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", "--cb_explore_adf",
                        "--invert_hash", "x.inv"], input=_cb(1, 5), cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                       text=True, timeout=60, check=False)  # fmt: skip
    assert r.returncode == 2 and "--invert_hash" in r.stderr
    assert not (tmp_path / "x.inv").exists()
