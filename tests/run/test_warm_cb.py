"""``sl vw --warm_cb K`` against VW 9.11.9 on the same bytes (its stderr line for line, ``-p``
byte for byte), and its one-line refusals (run/warm_cb.py).

sl runs as a child with its kernels interpreted (``NUMBA_DISABLE_JIT=1``: no compile on a
busy machine); ``scripts/kernel_lines.py`` reaches the compiled ones."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unix import invoke


def _multiclass(path: Path, k: int, n: int, seed: int) -> Path:
    """``n`` lines of ``k`` classes (some unlabeled, some tagged), values other than 1."""
    r = random.Random(seed)
    lines = []
    for i in range(n):
        y = r.randint(1, k)
        feats = " ".join(f"f{j}:{r.choice([0.5, 1, 2, 1.5])}" for j in r.sample(range(20), 4))
        label = "" if i % 37 == 5 else str(y)
        tag = f" 't{i}" if i % 5 == 0 else ""
        lines.append(f"{label}{tag} |a {feats} y{y}:0.{r.randint(1, 9)} |b z{(y + i) % 3}\n")
    path.write_text("".join(lines))
    return path


def _costs(path: Path, k: int, n: int, seed: int) -> Path:
    r = random.Random(seed)
    lines = []
    for _ in range(n):
        costs = " ".join(f"{c}:{r.choice([0, 0.5, 1, 2])}" for c in range(1, k + 1))
        feats = " ".join(f"f{j}:{r.choice([0.5, 1, 2])}" for j in r.sample(range(20), 4))
        lines.append(f"{costs} |a {feats}\n")
    path.write_text("".join(lines))
    return path


def _vw(tmp_path: Path, args: list[str]) -> subprocess.CompletedProcess:
    vw = subprocess.run([sys.executable, "-m", "vowpalwabbit", *args], capture_output=True,
                        text=True, cwd=tmp_path, timeout=300)  # fmt: skip
    assert vw.returncode == 0, vw.stderr
    return vw


def _sl(tmp_path: Path, args: list[str]) -> subprocess.CompletedProcess:
    sl = subprocess.run([sys.executable, "-m", "streamlearn", "vw", *args],
                        capture_output=True, text=True, cwd=tmp_path, timeout=300,
                        env={**os.environ, "NUMBA_DISABLE_JIT": "1"})  # fmt: skip
    assert sl.returncode == 0, sl.stderr
    return sl


def _both(tmp_path: Path, args: list[str]) -> tuple[str, str]:
    """VW's and sl's stderr (each naming its -p file P), after checking their -p agree."""
    vw = _vw(tmp_path, [*args, "-p", "vw.p"])
    sl = _sl(tmp_path, [*args, "-p", "sl.p"])
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    return vw.stderr.replace("vw.p", "P"), sl.stderr.replace("sl.p", "P")


BASE = ["--warm_cb", "5", "--cb_explore_adf", "--warm_start_update", "--interaction_update"]

MULTICLASS = [
    "--epsilon 0.1 --warm_start 40 --interaction 100 --choices_lambda 6 --lambda_scheme 4",
    "--cb_type ips --epsilon 0.1 --warm_start 40 --choices_lambda 5 --corrupt_type_warm_start 1 "
    "--corrupt_prob_warm_start 0.4 --random_seed 7",
    "--cb_type dm --epsilon 0.2 --warm_start 30 --choices_lambda 4 --lambda_scheme 3 "
    "--corrupt_type_warm_start 3 --corrupt_prob_warm_start 0.5 --overwrite_label 4",
    "--epsilon 0.1 --warm_start 40 --choices_lambda 8 --lambda_scheme 2 --sim_bandit --sgd",
    "--cb_type dr --epsilon 0.1 --warm_start 30 --choices_lambda 3 --normalized --initial_t 2 "
    "--clip_p 0.2 --corrupt_type_warm_start 2 --corrupt_prob_warm_start 0.5",
    "--cb_type dr --epsilon 0 --warm_start 30 --choices_lambda 2 --sim_bandit --loss0 -1 "
    "--loss1 2 -b 10 --power_t 0.3 -l 0.3",
]


@pytest.mark.parametrize("opts", MULTICLASS)
def test_multiclass_equals_vw(tmp_path: Path, opts: str) -> None:
    pytest.importorskip("vowpalwabbit")
    _multiclass(tmp_path / "mc.txt", 5, 200, 3)
    vw, sl = _both(tmp_path, ["-d", "mc.txt", *BASE, *opts.split()])
    assert sl == vw


@pytest.mark.parametrize("opts", [
    # only the warm start learns (every lambda 0), VW's default epsilon, -P
    "--warm_start 40 --interaction 50 --choices_lambda 4 --warm_start_update -P 5",
    "--epsilon 0.3 --warm_start 40 --choices_lambda 4 --interaction_update",  # (every one 1)
])  # fmt: skip
def test_the_phases_that_learn_equal_vw(tmp_path: Path, opts: str) -> None:
    pytest.importorskip("vowpalwabbit")
    _multiclass(tmp_path / "mc.txt", 5, 120, 4)
    vw, sl = _both(tmp_path, ["-d", "mc.txt", "--warm_cb", "5", "--cb_explore_adf",
                              *opts.split()])  # fmt: skip
    assert sl == vw


@pytest.mark.parametrize("opts", [
    "--cb_type ips --epsilon 0.1 --warm_start 20 --interaction 50 --choices_lambda 3 "
    "--loss0 -1 --loss1 2",
])  # fmt: skip
def test_cost_sensitive_input_equals_vw(tmp_path: Path, opts: str) -> None:
    pytest.importorskip("vowpalwabbit")
    _costs(tmp_path / "cs.txt", 5, 150, 5)
    vw, sl = _both(tmp_path, ["-d", "cs.txt", *BASE, "--warm_cb_cs", *opts.split()])
    assert sl == vw


@pytest.mark.parametrize(("extra", "named"), [
    (["--cb_type", "sm"], "--cb_type sm"),
    (["--squarecb"], "squarecb"),
    (["--first_only"], "--first_only"),
    (["--passes", "2", "-c"], "--passes"),
    (["-q", "ab"], "interactions"),
    (["--audit"], "--audit"),
    (["-t"], "-t"),
    (["--readable_model", "r.txt"], "--readable_model"),
    (["--warm_cb_cs", "--corrupt_prob_warm_start", "0.3"], "label corruption"),
    (["--lambda_scheme", "5"], "--lambda_scheme"),
])  # fmt: skip
def test_what_sl_does_not_run_is_refused_in_one_line(tmp_path: Path, extra: list[str],
                                                     named: str) -> None:  # fmt: skip
    data = _multiclass(tmp_path / "mc.txt", 3, 20, 1)
    r = invoke(["vw", "-d", str(data), "--warm_cb", "3", "--cb_explore_adf", *extra])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and named in lines[0], r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("args", [["--warm_cb", "3"], ["--warm_cb", "0", "--cb_explore_adf"],
                                  ["--warm_cb", "3", "--cbify", "3", "--cb_explore_adf"]])
def test_a_misused_option_is_refused_in_one_line(tmp_path: Path, args: list[str]) -> None:
    data = _multiclass(tmp_path / "mc.txt", 3, 20, 1)
    r = invoke(["vw", "-d", str(data), *args])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output


def test_its_options_without_it_are_ignored_as_vw(tmp_path: Path) -> None:
    data = _multiclass(tmp_path / "mc.txt", 3, 20, 1)
    r = invoke(["vw", "-d", str(data), "--cb_explore_adf", "--warm_start", "3", "--cb", "3"])
    assert r.exit_code == 0 and "--warm_start: an option of --warm_cb K, ignored" in r.output


@pytest.mark.parametrize("cb_type", ["mtr", "dr"])
def test_models_both_ways(tmp_path: Path, cb_type: str) -> None:
    """VW continues sl's model as its own, sl VW's: the same -p and stderr (VW keeps lambda
    0's mtr sums, model 0's normalizer sums and the generator; the phases start again)."""
    pytest.importorskip("vowpalwabbit")
    _multiclass(tmp_path / "mc.txt", 5, 120, 6)
    first = ["-d", "mc.txt", "-b", "12", *BASE, "--cb_type", cb_type, "--epsilon", "0.1",
             "--warm_start", "30", "--choices_lambda", "3", "--corrupt_prob_warm_start", "0.3"]
    _vw(tmp_path, [*first, "-f", "vw.model"])
    _sl(tmp_path, [*first, "-f", "sl.model"])
    again = ["-d", "mc.txt", "--warm_start", "10", "--choices_lambda", "3",
             "--warm_start_update", "--interaction_update", "--corrupt_prob_warm_start", "0.3"]
    ref = _vw(tmp_path, ["-i", "vw.model", *again, "-p", "a.p"])
    vw_of_sl = _vw(tmp_path, ["-i", "sl.model", *again, "-p", "b.p"])
    sl_of_vw = _sl(tmp_path, ["-i", "vw.model", *again, "-p", "c.p"])
    assert (tmp_path / "b.p").read_bytes() == (tmp_path / "a.p").read_bytes()
    assert (tmp_path / "c.p").read_bytes() == (tmp_path / "a.p").read_bytes()
    want = ref.stderr.replace("a.p", "P")
    assert vw_of_sl.stderr.replace("b.p", "P") == want
    assert sl_of_vw.stderr.replace("c.p", "P") == want
