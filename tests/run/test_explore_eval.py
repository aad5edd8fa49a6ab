"""``sl vw --explore_eval`` (streamlearn/learners/explore_eval.py) against VW 9.11.9 itself.

On the same log, each explorer, cb_type, ``--multiplier`` and ``--target_rate``: VW's
average loss, its closing lines (weighted update count, average accepted example weight,
violations, final multiplier, targeted update count, final rate) and ``-p`` byte for byte.
The rejection sampler draws from VW's generator, so one accepted example too many or too
few changes the later pmfs and the lines.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.test_vw_model_cb import adf_data
from tests.unix import invoke

pytest.importorskip("vowpalwabbit")

CLOSING = re.compile(r"^(average loss|weighted update count|average accepted example weight|"
                     r"violation count|final multiplier|targeted update count|final rate) = .*$",
                     re.M)  # fmt: skip


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    p = tmp_path_factory.mktemp("ee") / "log.txt"
    p.write_text(adf_data(300, 11, actions=5))
    return p


def _vw(args: list[str]) -> str:
    r = subprocess.run([sys.executable, "-m", "vowpalwabbit", *args], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stderr


CASES = [
    "--epsilon 0.2",
    "--epsilon 0.1 -q UA",
    "--first 30",
    "--softmax --lambda 2",
    "--squarecb -q UA",
    "--cb_type ips --epsilon 0.1",
    "--cb_type dr --epsilon 0.1",
    "--epsilon 0.1 --multiplier 0.3",
    "--cb_type ips --softmax --lambda 2 --multiplier 0.7",
    "--epsilon 0.1 --target_rate 0.3",
    "--squarecb --target_rate 0.5 --random_seed 7",
    # weighed examples (a threshold above 1) under the two cb_types with their own weights
    "--cb_type dr --multiplier 5",
    "--cb_type sm --multiplier 5 --epsilon 0.1",
    "--cb_type dr --target_rate 0.9 -q UA",
]


@pytest.mark.parametrize("opts", CASES)
def test_explore_eval_is_vws(tmp_path, log, opts):
    args = ["--explore_eval", *opts.split(), "-d", str(log)]
    ref = _vw([*args, "-p", str(tmp_path / "vw.p")])
    r = invoke(["vw", *args, "-p", str(tmp_path / "sl.p")])
    assert r.exit_code == 0, r.output
    assert CLOSING.findall(r.output) and [m.group(0) for m in CLOSING.finditer(r.output)] == [
        m.group(0) for m in CLOSING.finditer(ref)]  # fmt: skip
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()


def test_its_options_are_refused_where_they_mean_nothing(tmp_path, log):
    r = invoke(["vw", "--cb_explore_adf", "--multiplier", "0.5", "-d", str(log)])
    assert r.exit_code == 2 and "--explore_eval's" in r.output
    r = invoke(["vw", "--explore_eval", "--bag", "2", "-d", str(log)])
    assert r.exit_code == 2 and "not --bag" in r.output
