"""VW's own test suite through ``sl vw`` (``scripts/vw_suite.py``), when its tree is here.

Set ``VW_TEST_DIR`` to the ``test/`` directory of VW's repository (it holds
``core.vwtest.json``, the data and VW's reference outputs).  Every line of
``tests/data/vwsuite-match.txt`` (the suite's ids that gave VW's loss and
example counts when it was written) must still MATCH.  Without the tree the
test is skipped: the suite is not shipped with sl.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT, TESTS

EXPECTED = TESTS / "data" / "vwsuite-match.txt"


@pytest.mark.slow
def test_vw_suite_lines_that_matched_still_match(tmp_path):
    test_dir = os.environ.get("VW_TEST_DIR")
    if not test_dir or not (Path(test_dir) / "core.vwtest.json").exists():
        pytest.skip("VW_TEST_DIR (VW's test/ directory) is not set")
    ids = [int(x) for line in EXPECTED.read_text().splitlines() if not line.startswith("#")
           for x in line.split()]  # fmt: skip
    out = tmp_path / "suite.tsv"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "vw_suite.py"),
         str(Path(test_dir) / "core.vwtest.json"), test_dir,
         "--sl", f"{sys.executable} -m streamlearn vw", "--out", str(out),
         "--ids", ",".join(map(str, ids)), "--work", str(tmp_path / "work")],
        check=True, capture_output=True, timeout=3000,
    )  # fmt: skip
    with out.open() as f:
        rows = {int(r["id"]): r for r in csv.DictReader(f, delimiter="\t")}
    lost = {i: (rows[i]["status"], rows[i]["detail"]) for i in ids
            if rows.get(i, {}).get("status") != "MATCH"}  # fmt: skip
    assert not lost, lost
