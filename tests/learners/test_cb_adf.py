"""cb_adf, csoaa_ldf and --cb K: a dense reference of the updates, and VW's own numbers."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.run.console import Console
from streamlearn.run.multiline import Multiline, fit
from streamlearn.run.options import Inputs
from tests.cb_logs import adf_log, cb_log
from tests.paths import ROOT


def _fit(path: str, reduction: str = "cb_adf", cb_type: str = "mtr", **learn):
    learn = {"bits": 12, "numbers": "vw", **learn}
    ml = Multiline(reduction=reduction, cb_type=cb_type)
    return fit(learn, ml, Inputs(sources=[path]), Console(True))


def _reference(text: str, cb_type: str, lr: float, bits: int = 12) -> np.ndarray:
    """cb_adf over gd --sgd in plain Python (float64): squared loss, t from 1, no clip_p."""
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.labels import LABEL_CB
    from streamlearn.io.multiline import merge_shared, parse_examples
    from streamlearn.io.parse import Block

    inter = dataclasses.replace(compile_interactions(vw_numbers=True), label_kind=LABEL_CB)
    ex = parse_examples(Block(np.frombuffer(text.encode(), np.uint8).copy(), "x", 1), bits, True,
                        inter)  # fmt: skip
    mg = merge_shared(ex)
    width = 2 if cb_type == "dr" else 1
    n_slots = 1 << bits
    w = np.zeros(n_slots)
    lo_hi = [0.0, 0.0]
    t = [1.0]  # VW's t: 1, plus one per labeled example learned

    def feats(r):
        a, b = mg.indptr[r], mg.indptr[r + 1]
        return mg.indices[a:b].astype(np.int64), mg.values[a:b]

    def score(r, off):
        i, v = feats(r)
        return float(np.sum(w[(i * width + off) % n_slots] * v))

    def clip(p):
        return min(max(p, lo_hi[0]), lo_hi[1])

    def learn(r, y, imp, off):
        lo_hi[0], lo_hi[1] = min(lo_hi[0], y), max(lo_hi[1], y)
        p = clip(score(r, off))
        if (p - y) ** 2 > 0 and imp > 0:
            scale = lr * imp * (t[0] + imp) ** -0.5
            i, v = feats(r)
            np.add.at(w, (i * width + off) % n_slots, 2 * (y - p) * scale * v)
        return p

    lab = ex.labels
    for e in range(mg.act_ptr.shape[0] - 1):
        rows = range(mg.act_ptr[e], mg.act_ptr[e + 1])
        k = -1
        for i, r in enumerate(rows):
            q = lab.ptr[mg.row[r]]
            if lab.ptr[mg.row[r] + 1] > q and not np.isnan(lab.cost[q]):
                k, c, p = i, lab.cost[q], lab.prob[q]
        if k < 0:
            continue
        n = len(rows)
        if cb_type == "mtr":
            t_mtr = getattr(_reference, "_events", None)
            events, actions = t_mtr if t_mtr else (0, 0)
            events, actions = events + 1, actions + n
            _reference._events = (events, actions)
            learn(rows[k], c, 1 / p * (events / actions), 0)
        elif cb_type == "ips":
            for i, r in enumerate(rows):
                learn(r, c / p if i == k else 0.0, 1.0, 0)
        else:  # dr
            xs = []
            for i, r in enumerate(rows):
                xs.append(learn(r, c, 1 / p, 1) if i == k else clip(score(r, 1)))
            for i, r in enumerate(rows):
                y = xs[i] + ((c - xs[i]) / p if i == k else 0.0)
                learn(r, y, 1.0, 0)
        t[0] += 1
    _reference._events = None
    return w


@pytest.mark.parametrize("cb_type", ["mtr", "ips", "dr"])
def test_sgd_updates_equal_a_dense_reference(tmp_path, cb_type):
    text = adf_log(5, n=80)
    p = tmp_path / "log.dat"
    p.write_text(text)
    got = _fit(str(p), cb_type=cb_type, adaptive=False, normalized=False, invariant=False,
               learning_rate=0.05)  # fmt: skip
    want = _reference(text, cb_type, 0.05)
    w = got.table[:, 0].astype(np.float64)
    assert np.abs(want).max() > 0.01
    np.testing.assert_allclose(w, want, rtol=2e-4, atol=2e-6)


def test_scores_rank_actions_before_learning(tmp_path):
    p = tmp_path / "log.dat"
    p.write_text("shared |s a\n0:1:0.5 |a x\n|a y\n\nshared |s a\n|a x\n|a y\n\n")
    f = fit({"bits": 12}, Multiline("cb_adf", rank_all=True), Inputs(sources=[str(p)]),
             Console(True), predictions=True)  # fmt: skip
    # first example: all zero, action 0 first; then action 0 learned cost 1: action 1 first
    assert f.predictions[0] == "0:0,1:0\n\n"
    first, second = f.predictions[1].split(",")
    assert first.startswith("1:") and second.startswith("0:")
    assert float(first[2:]) < float(second[2:])


def test_cache_file_replays_the_examples(tmp_path):
    from streamlearn.io.example_cache import is_cache

    data = tmp_path / "log.dat"
    data.write_text(adf_log(7, n=50))
    cache = tmp_path / "log.cache"
    ml = Multiline("cb_adf")
    first = fit({"bits": 12, "passes": 2, "holdout_period": 0}, ml,
                Inputs(sources=[str(data)], cache=str(cache)), Console(True))  # fmt: skip
    assert is_cache(str(cache))
    data.write_text("")  # the cache is read, not the data (as VW)
    again = fit({"bits": 12, "passes": 2, "holdout_period": 0}, ml,
                Inputs(sources=[str(data)], cache=str(cache)), Console(True))  # fmt: skip
    assert again.summary == first.summary
    np.testing.assert_array_equal(again.table, first.table)


@pytest.mark.parametrize("args", ["--cb_adf", "--cb_adf --cb_type dr", "--csoaa_ldf m",
                                  "--cb 3"])  # fmt: skip
def test_model_file_continues_and_scores_as_vw(tmp_path, args):
    pytest.importorskip("vowpalwabbit")
    if args.startswith("--cb "):
        text = cb_log(9, 3)
        train, test = text[: len(text) // 2], text
    else:
        text = adf_log(9, n=120, cs="csoaa" in args)
        cut = text.index("\n\n", len(text) // 2) + 2
        train, test = text[:cut], text[cut:]
    (tmp_path / "tr.dat").write_text(train)
    (tmp_path / "te.dat").write_text(test)
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def loss(cmd, model, *more):
        subprocess.run([*cmd, *args.split(), "-d", str(tmp_path / "tr.dat"), "-f", model,
                        "--quiet"], check=True, env=env, capture_output=True)  # fmt: skip
        r = subprocess.run([*cmd, "-i", model, "-d", str(tmp_path / "te.dat"), *more],
                           check=True, env=env, capture_output=True, text=True)  # fmt: skip
        return _loss(r.stderr)

    for more in ((), ("-t",)):
        assert loss(SL, str(tmp_path / "s.m"), *more) == loss(VW, str(tmp_path / "v.m"), *more)


# ---------------------------------------------------------------------------
# VW 9.11.9 itself

VW = [sys.executable, "-m", "vowpalwabbit"]
SL = [sys.executable, "-m", "streamlearn", "vw"]


def _loss(text: str) -> str:
    m = re.search(r"average loss = (\S+)", text)
    assert m, text[-2000:]
    return m.group(1)


def _run(cmd: list[str], pred: str) -> tuple[str, bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([*cmd, "-p", pred], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    with open(pred, "rb") as f:
        return _loss(r.stderr), f.read()


CASES = [
    ("adf", 1, "--cb_adf"),
    ("adf", 2, "--cb_adf --cb_type ips -q sa"),
    ("adf", 3, "--cb_adf --cb_type dr -q sa -q ab --rank_all"),
    ("adf", 4, "--cb_adf --cb_type dm --noconstant"),
    ("adf", 5, "--cb_adf -c --passes 3"),
    ("adf", 6, "--cb_adf --cb_type dr --passes 2 --holdout_off -c"),
    ("adf", 7, "--cb_adf --cb_type sm -q sa --rank_all"),
    ("cs", 1, "--csoaa_ldf m -q sa"),
    ("cs", 2, "--csoaa_ldf mc"),
    ("cs", 3, "--csoaa_ldf m --csoaa_rank"),
    ("cb3", 1, "--cb 3"),
    ("cb5", 2, "--cb 5 --cb_type dr"),
]


@pytest.mark.parametrize(("kind", "seed", "args"), CASES)
def test_equals_vw_on_generated_logs(tmp_path, kind, seed, args):
    pytest.importorskip("vowpalwabbit")
    if kind.startswith("cb"):
        text = cb_log(seed, int(kind[2:]))
    else:
        text = adf_log(seed, n=150, cs=kind == "cs")
    data = tmp_path / "log.dat"
    data.write_text(text)
    argv = [*args.split(), "-d", str(data)]
    vw_loss, vw_pred = _run([*VW, *argv, "--cache_file", str(tmp_path / "vw.cache")]
                            if "-c" in argv else [*VW, *argv], str(tmp_path / "vw.p"))  # fmt: skip
    sl_loss, sl_pred = _run([*SL, *argv], str(tmp_path / "sl.p"))
    assert sl_loss == vw_loss
    assert sl_pred == vw_pred
