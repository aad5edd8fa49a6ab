"""VW's contextual-bandit tutorial, unchanged but for its import, gives VW's click-through
curves round for round (``tests/data/vw-cb-tutorial.json``: VW 9.11.9's clicks, visit by
visit; with VW's package installed, VW's run of the same script beside sl's)."""

from __future__ import annotations

import json
import pathlib

import pytest

HERE = pathlib.Path(__file__).parent
SCRIPT = (HERE / "cb_tutorial.py").read_text()
RECORDED = json.loads((HERE.parent / "data" / "vw-cb-tutorial.json").read_text())


def _curves(import_line: str, n: int) -> dict[str, list[float]]:
    text = SCRIPT.replace("import vowpalwabbit\n", import_line + "\n", 1)
    assert text != SCRIPT or import_line == "import vowpalwabbit"
    ns: dict = {}
    exec(compile(text, str(HERE / "cb_tutorial.py"), "exec"), ns)  # noqa: S102 - the script
    return ns["curves"](n, 0)


def _ctr(clicks: str) -> list[float]:
    """The tutorial's click-through rates from its clicks (-1 x the cost sum over visits)."""
    cost_sum, out = 0.0, []
    for i, c in enumerate(clicks, 1):
        cost_sum += -1.0 if c == "1" else 0.0
        out.append(-1 * cost_sum / i)
    return out


@pytest.fixture(scope="module")
def sl_curves() -> dict[str, list[float]]:
    return _curves("from streamlearn import vowpalwabbit", 5000)


@pytest.mark.parametrize("scenario", ["learning", "no_learning", "changing"])
def test_the_tutorial_gives_vws_curves(sl_curves, scenario: str) -> None:
    want = _ctr(RECORDED["clicks"][scenario])
    got = sl_curves[scenario]
    first = next((i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b), None)
    assert first is None, f"visit {first + 1}: sl {got[first]}, VW {want[first]}"
    assert got[-1] > 0.7 if scenario != "no_learning" else got[-1] < 0.2


def test_beside_vws_package(sl_curves) -> None:
    pytest.importorskip("vowpalwabbit")
    assert _curves("import vowpalwabbit", 5000) == sl_curves
