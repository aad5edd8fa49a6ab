"""The registry of multiline reductions (:mod:`streamlearn.reductions`): every entry has the
shape ``reductions/base.py`` states, the options record is assembled from the entries, and
the two drivers that consult it (``sl vw``'s passes and the API's ``Bandit``) learn the same
thing through it (the cb_adf family: tests/run/test_bandit.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from streamlearn.api import Console, Inputs
from streamlearn.io.labels import LABEL_CB, LABEL_CS, LABEL_SIMPLE
from streamlearn.reductions import REDUCTIONS, Multiline, reduction_of
from streamlearn.reductions.options import STACK

FIELDS = {f.name for f in dataclasses.fields(Multiline)}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_every_entry_has_the_shape(name: str) -> None:
    red = REDUCTIONS[name]
    assert red.name == name
    assert red.label_kind in (LABEL_CB, LABEL_CS, LABEL_SIMPLE)  # (LDA's: no label)
    assert red.cb == (red.label_kind == LABEL_CB)
    assert {spec[0] for spec in red.options} <= FIELDS
    ml = Multiline(name, explore="greedy" if red.cb else "")
    chain, label, pred = red.stack(ml, "gd, scorer-identity")
    assert chain and label and pred
    words = red.vw_words(ml)
    assert words and all(isinstance(w, str) for w in words)
    assert red.features(ml) in ("merged", "lines", "actions")
    assert reduction_of(ml) is red


def test_the_options_record_is_the_entries_options() -> None:
    names = [spec[0] for spec in STACK]
    for red in REDUCTIONS.values():
        names += [spec[0] for spec in red.options]
    assert set(names) == FIELDS
    assert [f.name for f in dataclasses.fields(Multiline)][0] == "reduction"  # (positional)


def test_an_explorer_is_stacked_on_cb_adf_when_asked() -> None:
    from streamlearn.config import TrainConfig
    from streamlearn.reductions import cb_adf, explore

    cfg = TrainConfig()
    red = REDUCTIONS["cb_adf"]
    assert isinstance(red.learner(Multiline("cb_adf"), cfg), cb_adf.Learner)
    assert isinstance(red.learner(Multiline("cb_adf", explore="softmax"), cfg), explore.Learner)


LDF = """\
1:0.5 |a x y
2:1.0 |a z
3:0.0 |a x w

1:1.0 |a y
2:0.0 |a x z

|a x
|a y w
"""


@pytest.mark.parametrize("classifier", [False, True])
@pytest.mark.parametrize("rank", [False, True])
def test_csoaa_ldf_through_both_drivers(tmp_path, classifier: bool, rank: bool) -> None:
    """The worked example end to end: ``sl vw``'s passes and the API's learner give the same
    ``-p`` and the same weights, through the one learner of the registry."""
    from streamlearn.config import TrainConfig
    from streamlearn.io.batch import Block
    from streamlearn.run.bandit import Bandit
    from streamlearn.run.multiline import fit

    path = tmp_path / "ldf.txt"
    path.write_text(LDF * 5)
    ml = Multiline("csoaa_ldf", classifier=classifier, csoaa_rank=rank)
    f = fit({}, ml, Inputs(sources=[str(path)]), Console(True), predictions=True)
    b = Bandit(TrainConfig(), Multiline("csoaa_ldf", classifier=classifier, csoaa_rank=rank))
    data = np.frombuffer(bytearray(path.read_bytes()), dtype=np.uint8)
    seen = b.run(b.parse(Block(data, str(path), 1)))
    assert "".join(b.lines(seen, vw=True)) == "".join(f.predictions)
    np.testing.assert_array_equal(b.table, f.table)
    assert b.stats[:6].tolist() == f.stats[:6].tolist()
