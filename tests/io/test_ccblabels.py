"""VW's CCB and slates labels (io/ccblabels.py) and the interactions CCB adds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from streamlearn.io import ccblabels as cl
from streamlearn.io.interactions import (
    CCB_ID_NS,
    WILDCARD,
    compile_interactions,
    with_ccb_slot_index,
)

ROOT = Path(__file__).parents[2]


def test_ccb_labels() -> None:
    assert cl.parse_ccb(["ccb", "shared"]).kind == cl.SHARED
    assert cl.parse_ccb(["ccb", "action"]).kind == cl.ACTION
    s = cl.parse_ccb(["ccb", "slot", "2:-1.5:0.25,0:0.5,1:0.25", "0,2"])
    assert (s.kind, s.action, s.cost, s.prob, s.include) == (cl.SLOT, 2, -1.5, 0.25, [0, 2])
    s = cl.parse_ccb(["ccb", "slot", "1,3"])
    assert (s.action, s.include) == (-1, [1, 3])


@pytest.mark.parametrize(("words", "code"), [
    (["ccb"], cl.BAD_LABEL),
    (["ccb", "shared", "1"], cl.BAD_LABEL),
    (["ccb", "slot", "1:2"], cl.BAD_LABEL),
    (["ccb", "slot", "1:2:0"], cl.BAD_PROBABILITY),
    (["ccb", "slot", "1:2:1.01"], cl.BAD_PROBABILITY),
    (["ccb", "slot", "1:2:nan"], cl.BAD_LABEL),
    (["ccb", "slot", "x:2:0.5"], cl.BAD_LABEL),
    (["ccb", "slot", "1:2:0.5", "0:1:0.5"], cl.BAD_LABEL),
    (["ccb", "slot", "1:2:0.5,0:0.2"], cl.NOT_ONE),
    (["cb", "slot"], cl.BAD_LABEL),
])  # fmt: skip
def test_bad_ccb_labels(words: list[str], code: int) -> None:
    with pytest.raises(cl.LabelError) as err:
        cl.parse_ccb(words)
    assert err.value.code == code


def test_slates_labels() -> None:
    sh = cl.parse_slates(["slates", "shared", "0.5"])
    assert (sh.kind, sh.has_cost, sh.cost) == (cl.SHARED, True, 0.5)
    assert cl.parse_slates(["slates", "action", "1"]).slot == 1
    s = cl.parse_slates(["slates", "slot", "1:0.8,0:0.2"])
    assert (s.action, s.prob) == (1, np.float32(0.8))
    with pytest.raises(cl.LabelError):
        cl.parse_slates(["slates", "action"])


def test_example_order() -> None:
    sh, act, slot = (cl.parse_ccb(["ccb", w]) for w in ("shared", "action", "slot"))
    assert cl.check_example([sh, act, slot], False) == (0, -1)
    assert cl.check_example([act, sh, slot], False) == (cl.NO_SHARED, 0)
    assert cl.check_example([sh, slot, act], False) == (cl.OUT_OF_ORDER, 2)
    assert cl.check_example([sh, act, slot, slot], False) == (cl.MORE_SLOTS, 3)
    far = cl.parse_ccb(["ccb", "slot", "1:0:0.5"])
    assert cl.check_example([sh, act, far], False) == (cl.UNKNOWN_ACTION, 2)


def test_slot_index_interactions() -> None:
    """VW's insert_ccb_interactions: each interaction also with the slot index, and every
    namespace with it; sorted and deduplicated as VW's list."""
    inter = with_ccb_slot_index(compile_interactions(quadratic=("ab",)))
    rows = [inter.terms[i, : inter.lengths[i]].tolist() for i in range(inter.terms.shape[0])]
    assert rows == [[WILDCARD, CCB_ID_NS], [97, 98], [97, 98, CCB_ID_NS]]
    assert with_ccb_slot_index(None).lengths.tolist() == [2]


def test_wildcards_skip_namespaces_vw_does_not_cross(tmp_path: Path) -> None:
    """A wildcard stands for VW's interaction namespaces only (' ' to '~', and the CCB
    slot's): a namespace named by a non-ASCII byte is not crossed (VW 9.11.9)."""
    pytest.importorskip("vowpalwabbit")
    data = tmp_path / "d.txt"
    data.write_bytes(b"1 |a x y |\xc3\xa9t z w\n0 |a x |\xc3\xa9t w\n1 |b q |a y\n" * 4)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = []
    for cmd in (["vowpalwabbit"], ["streamlearn", "vw"]):
        r = subprocess.run([sys.executable, "-m", *cmd, "-d", str(data), "-q", "::"],
                           capture_output=True, text=True, env=env, check=False)  # fmt: skip
        out.append(re.findall(r"(?:average loss|total feature number) = \S+", r.stderr))
    assert out[0] == out[1] and len(out[0]) == 2
