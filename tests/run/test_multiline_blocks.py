"""sl vw's multiline driver over many blocks: the blocks parsed on threads beside the
learner give the weights, predictions and warnings of one block read whole, and an
example with two logged actions is skipped with its line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streamlearn.run.console import Console
from streamlearn.run.multiline import Multiline, fit
from streamlearn.run.options import Inputs
from tests.cb_logs import adf_log


def _fit(path: Path, block_size: int, **ml):
    messages: list[str] = []
    console = Console(True)
    console.say = messages.append
    f = fit({"bits": 14}, Multiline(**ml), Inputs(sources=[str(path)], block_size=block_size),
            console, predictions=True)  # fmt: skip
    return f, messages


@pytest.mark.parametrize("ml", [{"reduction": "cb_adf"},
                                {"reduction": "cb_adf", "explore": "greedy"},
                                {"reduction": "csoaa_ldf"}])  # fmt: skip
def test_many_blocks_learn_as_one(tmp_path: Path, ml: dict) -> None:
    text = adf_log(4, n=3000, cs=ml["reduction"] == "csoaa_ldf")
    lines = text.split("\n")
    lines[10] = "1:x:y " + lines[10]  # a malformed line: its warning in order
    p = tmp_path / "d.txt"
    p.write_text("\n".join(lines))
    whole, said = _fit(p, 1 << 26, **ml)
    for size in (4096, 50_000):
        parts, said_parts = _fit(p, size, **ml)
        assert np.array_equal(parts.table, whole.table)
        assert parts.predictions == whole.predictions
        assert said_parts == said
        assert parts.summary == whole.summary


def test_two_logged_actions_skip_the_example(tmp_path: Path) -> None:
    good = "shared |s a\n0:1:0.5 |a x\n|a y\n\n"
    bad = "shared |s b\n0:1:0.5 |a x\n|a y\n1:0:0.25 |a z\n|a w\n\n"
    p = tmp_path / "d.txt"
    p.write_text(good * 3 + bad + good * 2)
    f, said = _fit(p, 1 << 20, reduction="cb_adf")
    assert f.summary["examples"] == 5 and f.summary["malformed"] == 1
    assert any(f"{p}:16: a second labeled line" in m for m in said), said
    q = tmp_path / "e.txt"
    q.write_text(good * 5)
    g, _ = _fit(q, 1 << 20, reduction="cb_adf")
    assert np.array_equal(f.table, g.table) and f.predictions == g.predictions
