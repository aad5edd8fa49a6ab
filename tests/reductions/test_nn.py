"""``--nn k`` (``reductions/nn.py``, ``learners/nn.py``) against VW 9.11.9 on data of our own:
``-p``, stderr and the readable model byte for byte; models both ways; the Python drop-in
round for round; ``sl train --nn``; what sl refuses, in one line."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from streamlearn.errors import UsageError
from streamlearn.reductions import nn
from tests.reductions.test_lrq import _sl, _vw, assert_refused, assert_vws_bytes, needs_vw


def _data(path: Path, n: int, seed: int) -> None:
    """Labels of several sizes (and none now and then), importance weights (0 too), initial
    values, tags, two namespaces of values small and large."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        feats = " ".join(f"f{rnd.randrange(60)}:{rnd.choice(['1', '0.5', '2', '-1.5', '0.01'])}"
                         for _ in range(rnd.randint(1, 6)))  # fmt: skip
        g = " ".join(f"g{rnd.randrange(20)}" for _ in range(rnd.randint(0, 3)))
        tag = rnd.choice(["", "", f"'t{i}"])
        if rnd.random() < 0.1:
            lines.append(f"{tag}|a {feats} |b {g}")
            continue
        label = rnd.choice(["1", "-1", "0.5", "2", "-3"])
        if rnd.random() < 0.3:
            label += " " + rnd.choice(["2", "0.5", "0"])
            if rnd.random() < 0.3:
                label += " 0.3"  # (an initial value)
        lines.append(f"{label} {tag}|a {feats} |b {g}")
    path.write_text("\n".join(lines) + "\n")


def _xor(path: Path, n: int, seed: int) -> None:
    """±1 labels of a parity (a network's problem), a weight now and then."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        x = [rnd.random() for _ in range(3)]
        y = 1 if (x[0] > 0.5) != (x[1] > 0.5) else -1
        w = rnd.choice(["", "", "", " 2", " 0.5"])
        out.append(f"{y}{w} |x a:{x[0]:.3f} b:{x[1]:.3f} |y c:{x[2]:.3f} d{rnd.randrange(9)}")
    path.write_text("\n".join(out) + "\n")


CASES = [
    "--nn 3",
    "--nn 1",
    "--nn 5 --dropout",
    "--nn 3 --inpass",
    "--nn 3 --inpass --multitask",
    "--nn 2 --meanfield --dropout",
    "--nn 3 -l 2 --power_t 0.3",
    "--nn 2 --sgd",
    # (the output layer's Σ x² in VW's order; one namespace: VW sums an example's Σ x² by
    # namespace, sl's gd in one run, which can differ in the last bit with several)
    "--nn 2 --invariant --ignore b",
    "--nn 2 --adaptive",
    "--nn 3 --l1 1e-5",
    "--nn 3 --l2 1e-4",
    "--nn 3 --noconstant",  # (VW's hidden biases: empty examples, a draw each, every time)
    "--nn 4 --dropout --noconstant -b 10",
    "--nn 3 --passes 3 -c -k",
    "xor: --nn 4 --loss_function logistic --link logistic",
    "xor: --nn 3 --loss_function hinge",
    "xor: --nn 5 --passes 4 -c -k --loss_function logistic",
    "xor: --nn 3 --holdout_period 5 --passes 2 -c -k --dropout",
    "xor: --nn 2 --binary --loss_function logistic",
    "xor: --nn 3 --initial_t 2 --loss_function quantile",
]


@needs_vw
@pytest.mark.parametrize("case", CASES)
def test_nn_is_vws_byte_for_byte(tmp_path: Path, case: str) -> None:
    args = case.split(": ")[-1]
    (_xor if case.startswith("xor") else _data)(tmp_path / "d.vw", 400, seed=len(args))
    assert_vws_bytes(tmp_path, args)


@needs_vw
@pytest.mark.parametrize("args", ["--nn 3", "--nn 2 --dropout", "--nn 3 --inpass"])
def test_models_move_both_ways_and_continue(tmp_path: Path, args: str) -> None:
    """VW's model scored by sl and sl's by VW give VW's ``-t`` predictions; a model continued
    by either program gives the same ``-p`` (VW's generator goes on from the state its model
    keeps as ``--random_seed``)."""
    _xor(tmp_path / "d.vw", 400, seed=3)
    _data(tmp_path / "e.vw", 300, seed=4)
    _vw(f"{args} -d d.vw -f vw.model", tmp_path)
    assert _sl([*args.split(), "-d", "d.vw", "-f", "sl.model"], tmp_path).returncode == 0
    for model in ("vw.model", "sl.model"):
        _vw(f"-i {model} -t -d e.vw -p vw_t.p", tmp_path)
        r = _sl(["-i", model, "-t", "-d", "e.vw", "-p", "sl_t.p"], tmp_path)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "sl_t.p").read_bytes() == (tmp_path / "vw_t.p").read_bytes()
        _vw(f"-i {model} -d e.vw -p vw_c.p", tmp_path)
        r = _sl(["-i", model, "-d", "e.vw", "-p", "sl_c.p"], tmp_path)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "sl_c.p").read_bytes() == (tmp_path / "vw_c.p").read_bytes()


@needs_vw
@pytest.mark.parametrize("args", ["--nn 3", "--nn 4 --dropout",
                                  "--nn 2 --inpass --loss_function logistic"])  # fmt: skip
def test_the_python_drop_in_is_vws_round_for_round(tmp_path: Path, args: str) -> None:
    """``streamlearn.vowpalwabbit.Workspace`` against VW's, predictions between learns (VW's
    predict starts a saddle's units too)."""
    import vowpalwabbit as vw_package

    from streamlearn import vowpalwabbit as sl_package

    _xor(tmp_path / "d.vw", 300, seed=9)
    lines = (tmp_path / "d.vw").read_text().splitlines()
    got = []
    for package in (vw_package, sl_package):
        w = package.Workspace(f"{args} --quiet")
        seen = []
        for i, line in enumerate(lines):
            if i % 7 != 3:
                w.learn(line)
            seen.append(w.predict(line))
        w.finish()
        got.append(seen)
    assert got[0] == got[1]


@needs_vw
def test_sl_train_nn_learns_as_sl_vw(tmp_path: Path) -> None:
    _xor(tmp_path / "d.vw", 300, seed=2)
    _vw("--nn 3 --dropout -d d.vw -p vw.p", tmp_path)
    r = _sl(["--nn", "3", "--nn-dropout", "d.vw", "-p", "sl.p", "-f", "m.sl"], tmp_path,
            "train")  # fmt: skip
    assert r.returncode == 0, r.stderr
    vw = [float(ln) for ln in (tmp_path / "vw.p").read_text().split()]
    sl = [float(ln) for ln in (tmp_path / "sl.p").read_text().split()]
    assert sl == pytest.approx(vw, abs=1e-5)  # (sl train reads decimals exactly, VW not)
    r = _sl(["-i", "m.sl", "d.vw", "-p", "again.p"], tmp_path, "predict")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ("--nn 0", "1 to 4096 hidden units"),
        ("--nn 3 --audit", "--audit"),
        ("--nn 3 -r r.txt", "-r with --nn"),
        ("--nn 3 --inpass --sgd", "--inpass without --adaptive or --normalized"),
        ("--nn 3 --oaa 3", "--oaa"),
        ("--nn 3 --lrq ab2", "--lrq with --nn"),
        ("--nn 3 --ftrl", "runs over gd"),
    ],
)
def test_what_sl_does_not_run_is_refused_in_one_line(tmp_path: Path, args: str,
                                                     why: str) -> None:  # fmt: skip
    assert_refused(tmp_path, args, why)


def test_options_are_read_from_the_reductions_words() -> None:
    opts = nn.read(("--nn", "3", "--dropout", "--meanfield"))
    assert opts == nn.Options(3, dropout=True, meanfield=True)
    assert opts.width == 4 and nn.Options(4).width == 8
    assert nn.read(("--dropout",)) is None
    with pytest.raises(UsageError, match="hidden units"):
        nn.read(("--nn", "x"))


def test_fasttanh_is_vws_bit_for_bit() -> None:
    """VW's ``fasttanh`` (``fastpow2``'s float32 arithmetic and its type pun) at a few points,
    against its C expression evaluated step by step in numpy's float32."""
    from streamlearn.learners.nn import fasttanh

    f = np.float32
    bits = np.empty(1, dtype=np.uint32)
    for p in (f(-3.0), f(-0.7), f(0.0), f(0.123), f(2.5), f(3.0)):
        q = f(1.442695040) * (f(-2.0) * p)
        clipp = max(q, f(-126.0))
        w = int(clipp)
        z = clipp - f(w) + (f(1.0) if q < 0 else f(0.0))
        v = ((clipp + f(121.2740575)) + f(27.7280233) / (f(4.84252568) - z)) - f(1.49012907) * z
        want = f(-1.0) + f(2.0) / (f(1.0) + np.array([f(8388608.0) * v]).astype(np.uint32)
                                   .view(np.float32)[0])  # fmt: skip
        assert fasttanh(p, bits, bits.view(np.float32)) == want
