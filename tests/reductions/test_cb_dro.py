"""``--cb_dro`` (:mod:`streamlearn.reductions.cb_dro`, :mod:`streamlearn.learners.cb_dro`):
against VW 9.11.9 on generated bandit logs (``-p`` and stderr byte for byte, over cb_adf
and the explorers it runs over, every cb type: mtr, ips, dm, and dr and sm, which learn with the
scaled weight too), VW's chi-squared estimator's pieces, and the refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from streamlearn.learners import cb_dro
from tests.reductions.test_lrq import _sl, _stderr, needs_vw

ROOT = Path(__file__).resolve().parents[2]


def _log(path: Path, n: int, seed: int) -> None:
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_cb_data.py"), "--examples",
                    str(n), "--actions", "4", "--seed", str(seed), "-o", str(path)],
                   check=True, capture_output=True)  # fmt: skip


CASES = [
    "--cb_adf",
    "--cb_adf --cb_type ips --cb_dro_alpha 0.2 --cb_dro_tau 0.9 --cb_dro_wmax 5",
    "--cb_explore_adf",
    "--cb_explore_adf --cb_type dm --epsilon 0.3",
    "--cb_explore_adf --first 5",  # uniform pmfs: VW's max_element takes the largest action
    "--cb_explore_adf --softmax --lambda 2 --cb_type ips",
    "--cb_adf --rank_all --cb_type dm",
    "--cb_adf --cb_type dr",  # (the loss: the regressor's predictions as it learned)
    "--cb_adf --cb_type dr --cb_dro_wmax 3 --holdout_period 5 --passes 2 -c -k",
    "--cb_adf --cb_type sm --cb_dro_alpha 0.3",
    "--cb_explore_adf --cb_type dr --epsilon 0.2 -q sa",
    "--cb_explore_adf --cb_type sm --softmax --lambda 3",
]


@needs_vw
@pytest.mark.parametrize("args", CASES)
def test_cb_dro_is_vws_byte_for_byte(tmp_path: Path, args: str) -> None:
    _log(tmp_path / "d.vw", 300, seed=len(args))
    line = f"--cb_dro {args} -d d.vw -p {{0}}.p"
    code = "import sys\nfrom vowpalwabbit import Workspace\nWorkspace(sys.argv[1]).finish()\n"
    vw_err = subprocess.run([sys.executable, "-c", code, line.format("vw")], cwd=tmp_path,
                            capture_output=True, text=True).stderr  # fmt: skip
    r = _sl(line.format("sl").split(), tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    assert _stderr(r.stderr, "sl.") == _stderr(vw_err, "vw.")


def test_the_estimators_pieces() -> None:
    """VW's fit of the chi-squared quantile is near the true one (3.841 at α = 0.05); an
    estimator with nothing seen weighs 1; w = 0 weighs 1; the weight is at least 0.01."""
    assert cb_dro.onedof_isf(0.05) == pytest.approx(3.8415, abs=2e-3)
    chi = cb_dro.new_state(0.05, 0.999, float("inf"))
    assert chi[cb_dro.C_ALPHA] == float(np.float32(0.05))
    assert cb_dro.qlb_weight(chi, 0.0, -1.0) == 1.0
    for w, r in ((4.0, -1.0), (0.0, 0.0), (2.0, -0.5), (4.0, -1.0)):
        cb_dro._update(chi, w, r)
        assert cb_dro.qlb_weight(chi, w, r) >= np.float32(0.01)
    assert chi[cb_dro.C_N] == pytest.approx(1 + 0.999 * (1 + 0.999 * (1 + 0.999)))


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ("--cb_dro --cb_explore_adf --bag 3", "--bag is not supported"),
        ("--cb_dro --cb_explore_adf -f m.vw", "-f or --readable_model with --cb_dro"),
        ("--cb_dro --csoaa_ldf m", "requires cb_adf or cb_explore_adf"),
        ("--cb_dro --cb_adf --cb_dro_alpha 1", "cb_dro_alpha must be in (0, 1)"),
        ("--cb_dro --cb_adf --cb_dro_wmax 1", "cb_dro_wmax must exceed 1"),
    ],
)
def test_refused_in_one_line(tmp_path: Path, args: str, why: str) -> None:
    _log(tmp_path / "d.vw", 5, seed=1)
    r = _sl([*args.split(), "-d", "d.vw"], tmp_path)
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_its_options_alone_are_ignored_with_a_note(tmp_path: Path) -> None:
    _log(tmp_path / "d.vw", 20, seed=2)
    r = _sl(["--cb_adf", "--cb_dro_alpha", "0.1", "-d", "d.vw", "-p", "p"], tmp_path)
    assert r.returncode == 0 and "option of --cb_dro: ignored" in r.stderr, r.stderr
