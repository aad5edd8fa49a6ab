"""``sl train --lda K`` and ``sl train --search K --search-task T``: sl's names for VW's
topic model and learning to search, the same learners as ``sl vw``'s (the same ``-p``
bytes), refused in sl's words (``streamlearn/cli/structured.py``)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamlearn.cli import cli


def _documents(path: Path) -> None:
    r = random.Random(1)
    with path.open("w") as f:
        for _ in range(60):
            t = r.randrange(3)
            words: dict[int, int] = {}
            for _ in range(12):
                w = r.randrange(8) + 8 * t if r.random() < 0.8 else r.randrange(24)
                words[w] = words.get(w, 0) + 1
            f.write("| " + " ".join(f"w{w}:{c}" for w, c in words.items()) + "\n")


def _sequences(path: Path) -> None:
    r = random.Random(2)
    with path.open("w") as f:
        for _ in range(30):
            for _ in range(r.randrange(2, 6)):
                y = r.randrange(1, 4)
                f.write(f"{y} | w{y}_{r.randrange(3)} x{r.randrange(9)}\n")
            f.write("\n")


def _run(args: list[str]) -> str:
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize(("sl", "vw"), [
    (["--lda", "3"], ["--lda", "3"]),
    (["--lda", "3", "--lda-alpha", "0.2", "--lda-rho", "0.05", "--lda-documents", "500",
      "--lda-minibatch", "4", "--lda-math", "fast"],
     ["--lda", "3", "--lda_alpha", "0.2", "--lda_rho", "0.05", "--lda_D", "500",
      "--minibatch", "4", "--math-mode", "2"]),
])  # fmt: skip
def test_lda_is_sl_vws(tmp_path: Path, sl: list[str], vw: list[str]) -> None:
    _documents(tmp_path / "d.vw")
    _run(["train", *sl, str(tmp_path / "d.vw"), "-p", str(tmp_path / "sl.p"), "--quiet"])
    _run(["vw", *vw, "-d", str(tmp_path / "d.vw"), "-p", str(tmp_path / "vw.p"), "--quiet"])
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()


@pytest.mark.parametrize(("sl", "vw"), [
    (["--search", "3", "--search-task", "sequence"],
     ["--search", "3", "--search_task", "sequence"]),
    (["--search", "3", "--search-task", "sequence", "--search-rollin", "ref",
      "--search-rollout", "none", "--search-history-length", "2", "--passes", "2"],
     ["--search", "3", "--search_task", "sequence", "--search_rollin", "ref",
      "--search_rollout", "none", "--search_history_length", "2", "--passes", "2", "-c"]),
])  # fmt: skip
def test_search_is_sl_vws(tmp_path: Path, sl: list[str], vw: list[str]) -> None:
    _sequences(tmp_path / "s.vw")
    _run(["train", *sl, str(tmp_path / "s.vw"), "-p", str(tmp_path / "sl.p"), "--quiet"])
    _run(["vw", *vw, "-d", str(tmp_path / "s.vw"), "-p", str(tmp_path / "vw.p"), "--quiet"])
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()


def test_the_summary_is_sl_vws(tmp_path: Path) -> None:
    """VW's search scores a test pass only when something shows it: sl train's summary does."""
    _sequences(tmp_path / "s.vw")
    sl = _run(["train", "--search", "3", "--search-task", "sequence", str(tmp_path / "s.vw")])
    vw = _run(["vw", "--search", "3", "--search_task", "sequence", "-d", str(tmp_path / "s.vw")])
    tail = vw[vw.index("number of examples") :]
    assert tail in sl and "total feature number = 0" not in tail


@pytest.mark.parametrize(("args", "says"), [
    (["--lda-alpha", "0.2"], "--lda-alpha is an option of --lda"),
    (["--lda", "3", "-q", "ab"], "--lda is a base learner"),
    (["--search", "3"], "--search needs --search-task"),
    (["--search", "3", "--search-task", "sequence", "--search-rollin", "bogus"],
     "option --search-rollin"),
    (["--lda", "3", "--cb-adf"], "not with the bandit options"),
])  # fmt: skip
def test_refused_in_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    _documents(tmp_path / "d.vw")
    r = CliRunner().invoke(cli, ["train", *args, str(tmp_path / "d.vw")])
    assert r.exit_code == 2 and says in r.output, r.output


def test_help_lists_them() -> None:
    out = _run(["train", "--help"])
    heading = out.index("Topics and learning to search:")
    assert heading < out.index("--lda K") < out.index("--search-task TASK")
