"""``sl vw`` over K classes beside VW 9.11.9: ``--scores`` (each class's score on ``-p``, VW's
accounting of an unlabeled example as wrong, as under ``--probabilities``), the stack's name
of each reduction over classes, and a tag touching ``|`` on a ``--csoaa`` line (it crashed).
Then, with VW's bytes held here (taken from ``vw`` on these lines), what ``sl vw`` writes
around them: ``--csoaa``'s and ``--multilabel_oaa``'s progress columns (``known``; the
lists of classes), their readable models' options, and under ``--audit`` the indexing info
line among the audits and every table line of ``-P 1`` (``run/report.ProgressTable``,
``run/vwaudit.Auditor``, ``run/runner.ClassNumbering``)."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unix import invoke_in


def vw(args: list[str], cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    pytest.importorskip("vowpalwabbit")
    return subprocess.run([sys.executable, "-m", "vowpalwabbit", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def facts(stderr: str) -> list[str]:
    """The lines that must agree: the stack, the prediction type, the losses, the counts."""
    keep = ("Enabled learners", "Output pred", "average loss", "average multiclass log loss",
            "number of examples", "weighted example sum")
    return [line for line in stderr.splitlines() if line.startswith(keep)]


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    """Classes 1..4 or 0..3 (``zero``), a tag on every third line (one touching ``|``), an
    unlabeled line every eleventh."""
    d = tmp_path_factory.mktemp("classes")
    r = random.Random(5)
    for name, shift in (("one.vw", 0), ("zero.vw", -1)):
        lines = []
        for i in range(300):
            y = r.randint(1, 4)
            tag = f"t{i}" if i % 3 == 0 else ""
            feats = f"|f a{y} b{r.randint(0, 9)} c{r.randint(0, 5)}"
            if i % 11 == 0:
                lines.append(f"{tag}{feats}")  # (unlabeled; its tag touches the bar)
            else:
                lines.append(f"{y + shift} {tag}{feats}")
        (d / name).write_text("\n".join(lines) + "\n")
    return d


CASES = [["--oaa", "4", "--scores"], ["--oaa", "4", "--scores", "--indexing", "0"],
         ["--oaa", "4", "--scores", "-c", "-k", "--passes", "3"],
         ["--oaa", "4", "--probabilities", "--loss_function", "logistic"],
         ["--oaa", "4", "-r", "{out}.r"], ["--oaa", "4", "--scores", "-r", "{out}.r"],
         ["--csoaa", "4"], ["--csoaa", "4", "--scores"], ["--multilabel_oaa", "4"],
         ["--multilabel_oaa", "4", "--scores"]]  # fmt: skip


@pytest.mark.parametrize("data", ["one.vw", "zero.vw"])
@pytest.mark.parametrize("opts", CASES)
def test_outputs_over_classes_are_vws(classes, data, opts):
    if "--indexing" in opts and data == "one.vw":
        pytest.skip("--indexing 0 reads classes 0..3")
    if opts[0] == "--multilabel_oaa" and data == "zero.vw":
        pytest.skip("the multilabel classes are 0..K-1 either way")
    args = ["-d", data, *opts, "-p", "{out}.p"]
    r = vw([a.format(out="vw") for a in args], classes)
    assert r.returncode == 0, r.stderr
    s = invoke_in(classes, ["vw", *[a.format(out="sl") for a in args]])
    assert s.exit_code == 0, s.output
    assert facts(s.output) == facts(r.stderr)
    for ext in ("p", "r"):
        if (classes / f"vw.{ext}").exists() and f"{{out}}.{ext}" in args:
            assert (classes / f"sl.{ext}").read_bytes() == (classes / f"vw.{ext}").read_bytes()


def test_scores_lines_are_each_class_s_score(classes):
    s = invoke_in(classes, ["vw", "-d", "one.vw", "--oaa", "4", "--scores", "-p", "s.p",
                            "--quiet"])  # fmt: skip
    assert s.exit_code == 0, s.output
    first = (classes / "s.p").read_text().splitlines()[1]
    assert re.fullmatch(r"1:\S+ 2:\S+ 3:\S+ 4:\S+", first), first


# ----------------------------------------------------------- VW's bytes, held here

ROOT = Path(__file__).parents[2]

MULTILABEL = """\
 | f17:0.5 f11:-1 f20:1 f19:1 f29:-1
0,3 | f1:2 f24:1 f26:2 f15:-1 f22:-1
 | f21:-1 f24:2 f13:-1
1,2 | f17:1 f22:0.5 f20:2
3 | f1:1
 | f17:1 f6:-1 f9:2 f4:1 f27:2
3 | f16:2 f17:2 f0:-1
2,3 | f23:-1 f0:1 f21:1
3 | f24:1
1 | f25:0.5 f2:2 f23:0.5 f28:-1
0 | f11:0.5 f13:2 f16:2 f14:2 f20:-1
 | f26:2 f17:2 f28:0.5 f27:1
"""
MULTILABEL_TABLE = """\
n.a.     n.a.                1            1.0        unknown                       6
2.000000 2.000000            2            2.0            0,3                       6
2.000000 n.a.                3            3.0        unknown            0,3        4
3.000000 4.000000            4            4.0            1,2            0,3        4
2.333333 1.000000            5            5.0              3            0,3        2
2.333333 n.a.                6            6.0        unknown            1,2        6
2.500000 3.000000            7            7.0              3            1,2        4
2.200000 1.000000            8            8.0            2,3              3        4
1.833333 0.000000            9            9.0              3              3        2
1.857143 2.000000           10           10.0              1              3        5
1.875000 2.000000           11           11.0              0              3        6
1.875000 n.a.               12           12.0        unknown              3        5
"""
COSTS = """\
2:3 1:2 |a f26:-1 f12:0.5 f7:0.5 f27:-1 f23:1
4:1 1:0 |a f4:-1
3:-1 4:0.5 2:1 |a f27:2
1:2 4:3 |a f2:2 f25:1 f13:0.5 f0:2
3:1 4:-1 |a f1:2 f0:1
3:2 1:2 |a f27:-1 f20:1 f19:2 f13:0.5
3:-1 1:-1 2:3 |a f1:2 f14:2
3:2 4:1 |a f19:2 f5:2 f5:2 f24:2 f27:2
2:3 4:1 1:0.5 |a f5:-1 f20:1 f3:2
2:0 1:-1 |a f10:0.5 f27:2
4:2 3:0 |a f4:0.5 f0:-1 f26:-1 f17:0.5
3:0 1:0 4:3 |a f29:0.5 f28:-1 f18:1 f0:-1 f23:1
"""
COSTS_TABLE = """\
1.000000 1.000000            3            3.0          known              2        2
0.833333 0.666667            6            6.0          known              3        5
1.166667 1.833333            9            9.0          known              4        4
0.875000 0.000000           12           12.0          known              3        6
"""


NAMED = "cat | a b\ndog | b c\nbird | c d\ncat | a\nfish 2 | a b\nbird | d\n | a\n"
NAMED_TABLE = """\
0.000000 0.000000            1            1.0            cat            cat        3
0.500000 1.000000            2            2.0            dog            cat        3
0.666667 1.000000            3            3.0           bird            dog        3
0.500000 0.000000            4            4.0            cat            cat        2
0.666667 1.000000            5            6.0        unknown            cat        3
0.571429 0.000000            6            7.0           bird           bird        2
0.571429 n.a.                7            8.0        unknown            cat        2
"""
NAMED_COSTS = "bee:1 ant:0 |a x\nemu:1 |a\nant:1 bee:0.5 |a y x\n |a x\n"
NAMED_COSTS_TABLE = """\
0.000000 0.000000            1            1.0          known            ant        2
0.000000 0.000000            2            2.0          known            bee        1
0.166667 0.500000            3            3.0          known            ant        3
0.166667 n.a.                4            4.0        unknown            ant        2
"""


def _sl(tmp_path: Path, data: str, args: list[str]) -> subprocess.CompletedProcess:
    (tmp_path / "d.txt").write_text(data)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", "-d", "d.txt", *args],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                       check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r


def _table(stderr: str) -> str:
    lines = stderr.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("loss     last")) + 1
    end = lines.index("", start)
    return "".join(ln + "\n" for ln in lines[start:end])


@pytest.mark.parametrize("audit", [[], ["--audit"]])
def test_the_tables_columns_are_vws(tmp_path: Path, audit: list[str]) -> None:
    """--multilabel_oaa: the classes given and predicted (``unknown``: none given); --csoaa:
    ``known`` and the class; with --audit too (one kernel call per example)."""
    r = _sl(tmp_path, MULTILABEL, ["--multilabel_oaa", "4", "-P", "1", *audit])
    assert _table(r.stderr) == MULTILABEL_TABLE
    r = _sl(tmp_path, COSTS, ["--csoaa", "4", "-P", "3", *audit])
    assert _table(r.stderr) == COSTS_TABLE


def test_named_classes_in_the_table_are_vws(tmp_path: Path) -> None:
    """--named_labels: the table shows classes by name (``unknown``: none), a name not in
    the list is class 0 with VW's warning, and the header says VW's "parsed K named labels"."""
    r = _sl(tmp_path, NAMED, ["--oaa", "3", "--named_labels", "cat,dog,bird", "-P", "1"])
    assert _table(r.stderr).endswith(NAMED_TABLE)  # (after the warnings of the batch's parse)
    assert "parsed 3 named labels\n" in r.stderr
    assert "[warning] Missing named label 'fish'\n" in r.stderr
    r = _sl(tmp_path, NAMED_COSTS, ["--csoaa", "2", "--named_labels", "ant,bee", "-P", "1"])
    assert _table(r.stderr).endswith(NAMED_COSTS_TABLE)
    assert "[warning] Missing named label 'emu'\n" in r.stderr


@pytest.mark.parametrize(("data", "args", "options", "checksum"), [
    (MULTILABEL, ["--multilabel_oaa", "4"], "--multilabel_oaa 4", "3523126787"),
    (COSTS, ["--csoaa", "4"], "--csoaa 4", "880828640"),
    # (VW's multilabel_oaa sets its link with --probabilities: its scorer's, its model's)
    (MULTILABEL, ["--multilabel_oaa", "4", "--probabilities", "--loss_function", "logistic"],
     "--link logistic --multilabel_oaa 4", "3036747411"),
])  # fmt: skip
def test_readable_models_name_the_reduction(tmp_path: Path, data: str, args: list[str],
                                            options: str, checksum: str) -> None:  # fmt: skip
    """VW's ``options:`` line names --csoaa and --multilabel_oaa (not --oaa), and the
    checksum over the weights is VW's: the weights are VW's."""
    r = _sl(tmp_path, data, [*args, "--readable_model", "r.txt"])
    text = (tmp_path / "r.txt").read_text()
    assert f"options: {options}\nChecksum: {checksum}\n" in text
    if "--probabilities" in args:
        assert "scorer-logistic, multilabel_oaa-prob" in r.stderr
        assert "multiclass log loss" not in r.stderr  # (VW's oaa's line, not multilabel's)


def test_a_long_table_under_audit(tmp_path: Path) -> None:
    """-P 1 under --audit: a line for every example of a batch (the lines of its one-example
    kernel calls, all emitted after the batch)."""
    data = "".join(f"{i % 3 + 1}:1 |a f{i % 7}\n" for i in range(200))
    r = _sl(tmp_path, data, ["--csoaa", "3", "-P", "1", "--audit"])
    assert _table(r.stderr).count("known") == 200


@pytest.mark.parametrize(("data", "args", "at"), [
    # oaa decides as it learns: after the deciding example's audits (its 3 classes)
    ("1 | a b\n3 | c d\n2 | a d\n", ["--oaa", "3"], 12),
    # csoaa as it reads the label: before the deciding example's audits
    (COSTS[:COSTS.index("3:-1")], ["--csoaa", "4"], 4),
])  # fmt: skip
def test_the_indexing_note_is_among_the_audits_where_vw_writes_it(
        tmp_path: Path, data: str, args: list[str], at: int) -> None:  # fmt: skip
    r = _sl(tmp_path, data, [*args, "--audit"])
    lines = r.stdout.splitlines()
    assert [i for i, ln in enumerate(lines) if ln.startswith("[info]")] == [at]
    assert lines[at].startswith("[info] label")
