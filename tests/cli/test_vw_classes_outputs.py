"""``sl vw`` over K classes beside VW 9.11.9: ``--scores`` (each class's score on ``-p``, VW's
accounting of an unlabeled example as wrong, as under ``--probabilities``), the stack's name
of each reduction over classes, and a tag touching ``|`` on a ``--csoaa`` line (it crashed)."""

from __future__ import annotations

import random
import re
import subprocess
import sys

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
