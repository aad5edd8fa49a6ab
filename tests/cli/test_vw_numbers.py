"""``sl vw`` reads numbers as VW does, end to end, and a model scores the same through
every entry point (``sl predict``, ``sl vw -t``, ``sl train -t``, ``api.Model.predict``).

The reader itself is checked against VW in ``tests/io/test_vw_numbers.py``.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import shutil

import numpy as np
import pytest

from streamlearn import api
from streamlearn import model as model_io
from tests.paths import TESTS
from tests.unix import invoke

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None

VW_LOSS = {
    ("0002", "--sgd"): 0.1076563818920415,
    ("0002", "-q ff --sgd"): 0.11864174094207329,
    ("0001", "--adaptive"): 0.3325595835177228,
}
"""VW 9.11.9's average loss (its sum of losses over its weighted examples) on its own
files; sl read them correctly rounded before: 0.102437, 0.117306, 0.332558."""


@pytest.fixture(scope="module")
def vwfiles(tmp_path_factory):
    """VW's 0001.dat and 0002.dat, unpacked (``tests/data/vw``)."""
    d = tmp_path_factory.mktemp("vwfiles")
    for name in ("0001", "0002"):
        with gzip.open(TESTS / "data" / "vw" / f"{name}.dat.gz") as src, \
                open(d / f"{name}.dat", "wb") as dst:  # fmt: skip
            shutil.copyfileobj(src, dst)
    return d


def _loss(args: list[str], tmp_path) -> float:
    rep = tmp_path / "r.json"
    r = invoke([*args, "--report", str(rep), "--quiet"])
    assert r.exit_code == 0, r.output
    return float(json.loads(rep.read_text())["average_loss"])


@pytest.mark.parametrize(("data", "opts"), list(VW_LOSS))
def test_sl_vw_gives_vws_average_loss(vwfiles, tmp_path, data, opts) -> None:
    path = str(vwfiles / f"{data}.dat")
    want = VW_LOSS[data, opts]
    ours = _loss(["vw", "-d", path, *opts.split()], tmp_path)
    assert abs(ours - want) <= 1e-6 * want, (ours, want)
    # sl train reads the same numbers with --numbers vw, its own (correctly rounded) without
    assert _loss(["train", path, "--numbers", "vw", *opts.split()], tmp_path) == ours
    if opts == "--sgd":  # unstable at VW's rate 10: a float's difference in the inputs shows
        assert abs(_loss(["train", path, *opts.split()], tmp_path) - want) > 1e-3
    if HAVE_VW:
        from vowpalwabbit import Workspace

        ws = Workspace(f"--quiet -d {path} {opts}")
        try:
            assert abs(ours - ws.get_sum_loss() / ws.get_weighted_examples()) <= 1e-6 * want
        finally:
            ws.finish()


@pytest.mark.parametrize("train", [
    ["vw", "-d", "{d}"],
    ["vw", "-d", "{d}", "--ftrl"],
    ["vw", "-d", "{d}", "--coin", "-q", "ff"],
    ["vw", "-d", "{d}", "--sgd", "-l", "0.1", "--l1", "1e-5"],
    ["train", "{d}"],
    ["train", "{d}", "--algo", "tg", "--l1", "1e-4"],
])  # fmt: skip
def test_one_model_scores_alike_everywhere(vwfiles, tmp_path, train) -> None:
    """``sl predict -i`` scored every model with plain SGD's float64 kernel, the other entry
    points with the model's own (float32 for VW's learners): the last digits differed
    (0002.dat: 0.486877324 against 0.486877322)."""
    d = str(vwfiles / "0002.dat")
    m = str(tmp_path / "m.sl")
    r = invoke([a.replace("{d}", d) for a in train] + ["-f", m, "--quiet"])
    assert r.exit_code == 0, r.output
    model = model_io.load(m)
    assert model.config.numbers == ("vw" if train[0] == "vw" else "exact")
    p = {who: str(tmp_path / f"{who}.txt") for who in ("predict", "vw", "train")}
    for args in (["predict", "-i", m, d, "-p", p["predict"]],
                 ["vw", "-t", "-i", m, "-d", d, "-p", p["vw"]],
                 ["train", "-t", "-i", m, d, "-p", p["train"]]):  # fmt: skip
        r = invoke([*args, "--quiet"])
        assert r.exit_code == 0, r.output
    texts = {who: open(path).read() for who, path in p.items()}
    assert texts["predict"] == texts["train"]
    _same_scores(texts["predict"], texts["vw"])
    ours = api.Model.load(m).predict(d)
    written = np.array([float(ln.split()[0]) for ln in texts["predict"].splitlines()])
    assert np.array_equal(np.array([float(f"{x:.9g}") for x in ours]), written)


def _same_scores(sl_text: str, vw_text: str) -> None:
    """``sl vw`` writes VW's six decimals of the float32 score ``sl predict`` writes in nine
    significant digits, with the same tags."""
    shown = [ln.split(" ", 1) for ln in sl_text.splitlines()]
    vw = [ln.split(" ", 1) for ln in vw_text.splitlines()]
    assert [t[1:] for t in shown] == [t[1:] for t in vw]
    assert np.allclose([float(t[0]) for t in shown], [float(t[0]) for t in vw], rtol=2.4e-7,
                       atol=5.1e-7)  # fmt: skip


def test_a_model_keeps_its_reading(vwfiles, tmp_path) -> None:
    d = str(vwfiles / "0002.dat")
    m = str(tmp_path / "m.sl")
    assert invoke(["vw", "-d", d, "-f", m, "--quiet"]).exit_code == 0
    # continued by sl train: still VW's numbers; another reading is refused
    m2 = str(tmp_path / "m2.sl")
    assert invoke(["train", d, "-i", m, "-f", m2, "--quiet"]).exit_code == 0
    assert model_io.load(m2).config.numbers == "vw"
    r = invoke(["train", d, "-i", m, "--numbers", "exact", "--quiet"])
    assert r.exit_code == 2 and "numbers" in r.output
    # a model of sl train keeps its correctly rounded numbers under sl vw -i (the model
    # sl vw writes is in VW's format, which reads as VW: a VW model knows no other reading)
    m3 = str(tmp_path / "m3.sl")
    assert invoke(["train", d, "-f", m3, "--quiet"]).exit_code == 0
    p3, p4 = str(tmp_path / "p3.txt"), str(tmp_path / "p4.txt")
    assert invoke(["vw", "-t", "-i", m3, "-d", d, "-p", p3, "--quiet"]).exit_code == 0
    assert invoke(["predict", "-i", m3, d, "-p", p4, "--quiet"]).exit_code == 0
    _same_scores(open(p4).read(), open(p3).read())
    m4 = str(tmp_path / "m4.vw")
    assert invoke(["vw", "-i", m3, "-d", d, "-f", m4, "--quiet"]).exit_code == 0
    assert model_io.load(m4).config.numbers == "vw"
