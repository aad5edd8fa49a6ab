"""``sl vw --cbify_ldf``: cost-sensitive LDF examples played as a contextual bandit, against
VW 9.11.9 on the same bytes (its loss, ``-p`` and stderr), and what it does
without VW to compare with (run/cbify.py ``run_ldf``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cb_logs import adf_log
from tests.unix import invoke

EXPLORERS = ["", "--epsilon 0.2", "--softmax --lambda 2", "--first 5", "--squarecb",
             "--squarecb --elim", "--regcb --regcbopt --mellowness 0.01", "--bag 3",
             "--cover 2", "--synthcover", "--cb_type dr --epsilon 0.1", "--cb_type ips",
             "--loss0 -1 --loss1 2", "--noconstant -q sa"]  # fmt: skip


def _stderr(text: str, pred: str) -> list[str]:
    """VW's stderr lines, its option warnings (and their indented lines) left out."""
    return [ln.replace(pred, "P") for ln in text.splitlines()
            if ln.strip() and not ln.startswith(("[warning]", "\t"))]  # fmt: skip


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "no-shared"])
@pytest.mark.parametrize("opts", EXPLORERS)
def test_cbify_ldf_equals_vw(tmp_path: Path, opts: str, shared: bool) -> None:
    pytest.importorskip("vowpalwabbit")
    text = adf_log(7, 200, cs=True)
    if not shared:  # (VW plays a shared line as one more action: both ways are checked)
        text = "".join(ln for ln in text.splitlines(keepends=True)
                       if not ln.startswith("shared"))  # fmt: skip
    data = tmp_path / "cs.txt"
    data.write_text(text)
    args = ["-d", str(data), "--cbify_ldf", *opts.split()]
    vw = subprocess.run([sys.executable, "-m", "vowpalwabbit", *args, "-p",
                         str(tmp_path / "vw.p")], capture_output=True, text=True,
                        timeout=120)  # fmt: skip
    assert vw.returncode == 0, vw.stderr
    r = invoke(["vw", *args, "-p", str(tmp_path / "sl.p")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    assert _stderr(r.output, str(tmp_path / "sl.p")) == _stderr(vw.stderr, str(tmp_path / "vw.p"))


def test_the_drawn_line_and_its_cost(tmp_path: Path) -> None:
    """Without VW: -p is a line per action line (the drawn class number on the drawn line),
    none for a shared line; every line costing 0 but the cheapest class's, the loss is 0."""
    ex = "shared |s u1\n1:0 |a x\n2:1 |a y\n3:1 |a z\n\n"
    (tmp_path / "d.txt").write_text(ex * 30)
    r = invoke(["vw", "-d", str(tmp_path / "d.txt"), "--cbify_ldf", "--epsilon", "0",
                "-p", str(tmp_path / "p")])  # fmt: skip
    assert r.exit_code == 0, r.output
    lines = (tmp_path / "p").read_text().split()
    assert len(lines) == 90 and all(v in ("0", "1", "2", "3", "4") for v in lines)
    assert "number of examples = 30" in r.output


def test_a_malformed_example_is_skipped_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "d.txt").write_text("1:0 |a x\n2:1 |a y\n\n1:zz |a x\n2:1 |a y\n\n")
    r = invoke(["vw", "-d", str(tmp_path / "d.txt"), "--cbify_ldf"])
    assert r.exit_code == 0 and "d.txt:4" in r.output and "number of examples = 1" in r.output
    r = invoke(["vw", "-d", str(tmp_path / "d.txt"), "--cbify_ldf", "--strict_parse"])
    assert r.exit_code == 4


@pytest.mark.parametrize("mode", [["--cbify_ldf"], ["--cbify", "3"]])
def test_an_output_naming_the_input_is_refused(tmp_path: Path, mode: list[str]) -> None:
    """--cbify runs left sl vw's check of its outputs out: -p data.txt wrote over the data."""
    data = tmp_path / "d.txt"
    text = "1:0 |a x\n2:1 |a y\n\n" if mode[0] == "--cbify_ldf" else "1 |a x\n2 |a y\n"
    data.write_text(text)
    (tmp_path / "link").symlink_to(data)
    for out in (["-p", str(data)], ["-p", str(tmp_path / "link")], ["-f", str(data)]):
        r = invoke(["vw", "-d", str(data), *mode, *out])
        assert r.exit_code == 2 and "would destroy the data" in r.output
    assert data.read_text() == text
