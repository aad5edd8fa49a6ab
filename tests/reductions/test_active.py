"""``--active --simulation`` (``reductions/active.py``, ``learners/active.py``) against VW
9.11.9 on data of our own: ``-p``, stderr (its ``total queries`` line too) and the readable
model byte for byte; VW's model read (VW 9.11.9 cannot read its own: sl can); ``sl train
--active``; what sl refuses, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamlearn.errors import UsageError
from streamlearn.reductions import active
from tests.reductions.test_lrq import _sl, _vw, assert_refused, assert_vws_bytes, needs_vw
from tests.reductions.test_nn import _data, _xor

CASES = [
    "xor: --active --simulation",
    "xor: --active --simulation --mellowness 0.5",
    "xor: --active --simulation --mellowness 0.01 --loss_function logistic",
    "xor: --active --simulation --mellowness 1e-6 -l 10 --initial_t 10 --random_seed 3",
    "xor: --active --simulation --sgd",
    "xor: --active --simulation --passes 3 -c -k",
    "xor: --active --simulation --l1 1e-5 --mellowness 0.1",
    "--active --simulation",  # (labels of several sizes, weights, unlabeled lines)
    "--active --simulation --mellowness 0.05 --normalized",
]


@needs_vw
@pytest.mark.parametrize("case", CASES)
def test_active_is_vws_byte_for_byte(tmp_path: Path, case: str) -> None:
    args = case.split(": ")[-1]
    (_xor if case.startswith("xor") else _data)(tmp_path / "d.vw", 500, seed=len(args))
    assert "total queries = " in assert_vws_bytes(tmp_path, args, model=False)


@needs_vw
def test_a_zero_sensitivity_is_vws_not_a_division_error(tmp_path: Path) -> None:
    """An example predicted exactly (label 0 on fresh weights: no gradient, so gd's rates
    divide by a sum of 0) gives VW's infinite rate, not numba's ZeroDivisionError."""
    _xor(tmp_path / "x.vw", 200, seed=7)
    (tmp_path / "d.vw").write_text("0 |z fresh\n0 |z other:2\n" + (tmp_path / "x.vw").read_text())
    assert_vws_bytes(tmp_path, "--active --simulation", model=False)


@needs_vw
def test_vws_model_is_read_as_the_simulation(tmp_path: Path) -> None:
    """VW's model does not say which mode it was trained in (and VW 9.11.9 cannot load it):
    sl reads it as the simulation, the weights as sl's own model of the same run."""
    _xor(tmp_path / "d.vw", 400, seed=3)
    _data(tmp_path / "e.vw", 200, seed=4)
    _vw("--active --simulation --mellowness 0.5 -d d.vw -f vw.model", tmp_path)
    args = ["--active", "--simulation", "--mellowness", "0.5", "-d", "d.vw", "-f", "sl.model"]
    assert _sl(args, tmp_path).returncode == 0
    for model in ("vw", "sl"):
        r = _sl(["-i", f"{model}.model", "-t", "-d", "e.vw", "-p", f"{model}.p"], tmp_path)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()


@needs_vw
def test_sl_train_active_learns_as_sl_vw(tmp_path: Path) -> None:
    _xor(tmp_path / "d.vw", 300, seed=2)
    _vw("--active --simulation --mellowness 0.1 -d d.vw -p vw.p", tmp_path)
    r = _sl(["--active", "--active-mellowness", "0.1", "d.vw", "-p", "sl.p", "-f", "m.sl"],
            tmp_path, "train")  # fmt: skip
    assert r.returncode == 0, r.stderr
    vw = [float(ln) for ln in (tmp_path / "vw.p").read_text().split()]
    sl = [float(ln) for ln in (tmp_path / "sl.p").read_text().split()]
    assert sl == pytest.approx(vw, abs=1e-5)  # (sl train reads decimals exactly, VW not)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ("--active", "--active without --simulation"),
        ("--active --simulation --direct", "--direct"),
        ("--active --simulation --audit", "--audit"),
        ("--active --simulation --mellowness -1", "a positive number"),
        ("--active --simulation --oaa 3", "--oaa"),
        ("--active --simulation --nn 2", "--nn with --active"),
    ],
)
def test_what_sl_does_not_run_is_refused_in_one_line(tmp_path: Path, args: str,
                                                     why: str) -> None:  # fmt: skip
    assert_refused(tmp_path, args, why)


def test_options_are_read_from_the_reductions_words() -> None:
    assert active.read(("--active", "--simulation", "--mellowness", "0.5")) == \
        active.Options(0.5, True)  # fmt: skip
    assert active.read(("--simulation",)) is None
    assert active.vw_float(0.01) == "0.00999999977648258"  # (VW's option text)
    with pytest.raises(UsageError, match="a number"):
        active.read(("--active", "--mellowness", "x"))


def test_the_coin_bias_is_vws() -> None:
    """VW's get_active_coin_bias at a few points (float32), from its C expression."""
    import math

    import numpy as np

    from streamlearn.learners.active import coin_bias

    f = np.float32
    for count, loss, diff, c0 in ((10.0, 0.3, 0.05, 1.0), (100.0, 0.9, 0.5, 1e-3),
                                  (1000.0, 0.1, 0.9, 0.01), (5.0, 2.0, 0.001, 1.0)):  # fmt: skip
        count, loss, diff, c0 = f(count), f(loss), f(diff), f(c0)
        mellow = c0 * (f(math.log(count + f(1))) + f(0.0001)) / (count + f(0.0001))
        root = f(math.sqrt(mellow))
        spread = min(f(1), f(math.sqrt(min(max(loss, f(0)), f(1)) + diff)))
        if diff <= root * spread + mellow:
            want = f(1)
        else:
            s = (root + f(math.sqrt(mellow + f(4) * diff * mellow))) / f(2) * diff
            want = s * s
        assert coin_bias(count, loss, diff, c0) == want
