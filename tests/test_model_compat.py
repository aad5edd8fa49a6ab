"""Model files written by an earlier sl read, score and continue the same.

``tests/data/models/NAME.sl`` were written by sl at 97ce1a4 (before the
package's restructuring) with ``sl train`` on the first 600 lines of
``data/sample.vw`` at ``-b 10``; ``NAME.preds`` are that sl's ``sl predict -p``
on those lines, and ``NAME.cont.preds`` its predictions after continuing the
model (``-i``) on lines 601-800.  Today's sl must give the same lines, byte
for byte.

One exception, on purpose: since issue 26 the crosses of the float32 learners
(gd, ftrl, ...) are float32 products, as VW computes them, so ``gd-q``'s
expected predictions were written again from the same model file by the sl of
that change (they moved by at most 1.2e-6 relative when scoring, 4.6e-5 after
continuing).  The model file itself still reads unchanged.

A second, since issue 37: ``sl predict`` scores VW's float32 learners with their
own kernel (float32 sums in VW's order, as ``sl train -t`` and ``sl vw -t`` always
did) instead of plain SGD's float64 sum over the flushed weights, so that one
model scores the same through every entry point.  The expected lines of ``gd``,
``gd-q``, ``ftrl`` and ``passes`` (both files each) were written again; they are
byte for byte what the sl before that change printed with ``sl train -t -i``
(they moved by at most 7.7e-7 absolute, 4.9e-6 relative where |p| > 0.01).
"""

from __future__ import annotations

import pytest

from tests.paths import ROOT
from tests.unix import invoke

MODELS = ROOT / "tests" / "data" / "models"
NAMES = sorted(p.stem for p in MODELS.glob("*.sl"))


@pytest.fixture(scope="module")
def lines(tmp_path_factory):
    rows = (ROOT / "data" / "sample.vw").read_bytes().splitlines(keepends=True)
    d = tmp_path_factory.mktemp("compat")
    (d / "first.vw").write_bytes(b"".join(rows[:600]))
    (d / "next.vw").write_bytes(b"".join(rows[600:800]))
    return d / "first.vw", d / "next.vw"


def test_every_model_kind_is_covered():
    assert {"gd", "gd-q", "sgd", "tg", "fobos", "smidas", "ftrl", "l0", "cd", "passes"} <= set(
        NAMES
    )


@pytest.mark.parametrize("name", NAMES)
def test_an_old_model_scores_the_same(tmp_path, lines, name):
    first, _ = lines
    preds = tmp_path / "p.txt"
    r = invoke(["predict", "-i", str(MODELS / f"{name}.sl"), str(first), "-p", str(preds),
                "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert preds.read_bytes() == (MODELS / f"{name}.preds").read_bytes()


@pytest.mark.parametrize("name", [n for n in NAMES if (MODELS / f"{n}.cont.preds").exists()])
def test_an_old_model_continues_the_same(tmp_path, lines, name):
    first, nxt = lines
    model, preds = tmp_path / "m.sl", tmp_path / "p.txt"
    r = invoke(["train", "-i", str(MODELS / f"{name}.sl"), str(nxt), "-f", str(model),
                "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    r = invoke(["predict", "-i", str(model), str(first), "-p", str(preds), "--quiet"])
    assert r.exit_code == 0, r.output
    assert preds.read_bytes() == (MODELS / f"{name}.cont.preds").read_bytes()
