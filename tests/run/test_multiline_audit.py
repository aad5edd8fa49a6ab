"""sl vw --audit under the multiline reductions (--csoaa_ldf, --cb_adf, --cb_explore_adf),
byte for byte against VW 9.11.9 (its ``vowpalwabbit`` package, in a child process), on
small data of our own and on the data of VW's suite; what is not written yet is refused
with exit 2 before any data is read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.marks import slow_except

ROOT = Path(__file__).parents[2]
MIRROR = Path("/work/.mirror/VowpalWabbit+vowpal_wabbit/repo")

CB = """shared tg1|u age:2 city=x |v r
0:1:0.5 a1|a x:0.5 y |b z
|a x w:3
|b q |a y

shared |u age:3
|a y
1:0:0.25 |b z w |a x

|a x
|b q

shared |u age:1 |v s
|a y w:2
|b z
0:-1:0.75 |a x

"""

CS = """1:1 |a x |b y
2:0 t2|a z
3:2 |b w:0.5

shared s1|s q
1:0.5 |a x
2:0.2 |a y |b y

1:0 |a x
2:1 |b y

"""


def _vw(line: str, cwd: Path) -> bytes:
    """VW 9.11.9's stdout on ``line`` (a child process: a VW error must not end the tests)."""
    code = "import sys\nfrom vowpalwabbit import Workspace\nWorkspace(sys.argv[1]).finish()\n"
    r = subprocess.run([sys.executable, "-c", code, line], cwd=cwd, check=True,
                       capture_output=True)  # fmt: skip
    return r.stdout


def _sl(line: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "streamlearn", "vw", *line.split()], cwd=cwd,
                          env=env, capture_output=True, timeout=300, check=False)  # fmt: skip


def _same(tmp_path: Path, line: str) -> None:
    pytest.importorskip("vowpalwabbit")
    want = _vw(line, tmp_path)
    for cache in tmp_path.glob("*.cache*"):
        cache.unlink()
    got = _sl(line, tmp_path)
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout == want


OWN = [
    ("cb", "--cb_explore_adf"),
    ("cb", "--cb_explore_adf -q ab -q ua --noconstant"),
    ("cb", "--cb_adf"),
    ("cb", "--cb_adf --interactions ua"),
    ("cb", "--cb_explore_adf --softmax"),
    ("cb", "--cb_explore_adf --first 1"),
    ("cb", "--cb_explore_adf --squarecb"),
    ("cb", "--cb_explore_adf --synthcover"),
    ("cb", "--cb_explore_adf --epsilon 0.3 --l2 0.01"),
    ("cb", "--cb_explore_adf --sgd"),
    ("cb", "--cb_explore_adf -t"),
    ("cb", "--cb_adf -b 4 --invariant"),
    ("cs", "--csoaa_ldf m"),
    ("cs", "--csoaa_ldf mc -q ab"),
    ("cs", "--csoaa_ldf mc --loss_function logistic"),
    ("cs", "--csoaa_ldf m --csoaa_rank --noconstant"),
    ("cs", "--csoaa_ldf mc -t"),
    ("cs", "--csoaa_ldf m --passes 3 --holdout_off -k -c -q ab"),
]


@pytest.mark.parametrize(("data", "flags"), OWN)
def test_audit_equals_vws(tmp_path: Path, data: str, flags: str) -> None:
    (tmp_path / "d.txt").write_text(CB if data == "cb" else CS)
    _same(tmp_path, f"-d d.txt --audit --quiet {flags}")


SUITE = {
    376: "-d train-sets/cb_test.ldf --cb_explore_adf --noconstant --audit",
    377: "-d train-sets/csoaa_ldf_shared.dat --csoaa_ldf m --audit",
    378: "-d train-sets/csoaa_ldf_shared.dat --csoaa_ldf m --noconstant --audit",
    510: "-k -c -d train-sets/cs_test.ldf -p csoaa_ldf_audit.predict --passes 5 "
         "--csoaa_ldf multiline --holdout_off --noconstant --audit",
    710: "--csoaa_ldf m --audit --noconstant -d train-sets/csoaa_ldf_shared.dat -P 1",
}  # fmt: skip
"""The lines of VW's test/core.vwtest.json (by id) whose --audit sl writes."""


@pytest.mark.parametrize("tid", sorted(SUITE))
def test_audit_of_vws_suite(tmp_path: Path, tid: int) -> None:
    if shutil.which("git") is None or not MIRROR.exists():
        pytest.skip("VW's repository is not mirrored here")
    line = SUITE[tid]
    name = next(w for w in line.split() if w.startswith("train-sets/"))
    data = subprocess.run(["git", "-C", str(MIRROR), "show", f"HEAD:test/{name}"],
                          capture_output=True, check=True).stdout  # fmt: skip
    (tmp_path / "train-sets").mkdir()
    (tmp_path / name).write_bytes(data)
    _same(tmp_path, line)


REFUSED = [
    "--cb_explore_adf --cover 3",
    "--cb_explore_adf --bag 2",
    "--cb_adf --cb_type dr",
    "--cb 3",
    "--ccb_explore_adf --cb_type dr",
    "--cb_explore_adf --passes 2 -c",
    "--csoaa_ldf m --l1 0.001",
    "--cb_explore_adf --json",
]


@pytest.mark.parametrize("flags", slow_except(REFUSED, 0, 1))
def test_refused_before_any_data_is_read(tmp_path: Path, flags: str) -> None:
    (tmp_path / "d.txt").write_text(CB)
    got = _sl(f"-d d.txt --audit {flags} -f m.vw", tmp_path)
    assert got.returncode == 2, got.stderr.decode()
    assert b"--audit" in got.stderr
    assert got.stdout == b""
    assert not (tmp_path / "m.vw").exists()
