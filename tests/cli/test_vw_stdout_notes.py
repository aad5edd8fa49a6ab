"""VW's logger writes its ``[info]`` and ``[warning]`` lines on standard output (the
suite's references hold them there): ``sl vw`` writes the ones it knows there too, once,
none under ``--quiet`` (``run/vwconsole.say_notes``, ``run/runner.ClassNumbering``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DUPLICATES = ("[info] Any duplicate namespace interactions will be removed\n"
              "You can use --leave_duplicate_interactions to disable this behaviour.\n")


def _stdout(tmp_path: Path, data: str, args: list[str]) -> subprocess.CompletedProcess:
    (tmp_path / "d.txt").write_text(data)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", "-d", "d.txt", *args],
                       cwd=tmp_path, env=env, capture_output=True, timeout=120,
                       check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr.decode()
    return r


@pytest.mark.parametrize(("args", "note"), [
    (["-q", "::"], b"[info] Any duplicate namespace interactions will be removed\n"),
    (["--readable_model", "r.txt"], b"[info] VW 9.0.0 introduced a change"),
    (["-q", "::", "--leave_duplicate_interactions"], b""),
    (["-q", "::", "--quiet"], b""),
    (["--readable_model", "r.txt", "--predict_only_model"], b""),
])  # fmt: skip
def test_vws_notes_go_to_standard_output(tmp_path: Path, args: list[str], note: bytes) -> None:
    """Once, before anything else; none under --quiet."""
    r = _stdout(tmp_path, "1 |a x y\n-1 |b z\n", args)
    assert r.stdout.startswith(note) and r.stdout.count(b"[info]") == (1 if note else 0)
    assert b"[info]" not in r.stderr


@pytest.mark.parametrize(("labels", "args", "note"), [
    ("2 3 1 3", ["--oaa", "3"], b"[info] label 3 found -- labels are now considered 1-indexed.\n"),
    ("2 0 1 3", ["--oaa", "3"], b"[info] label 0 found -- labels are now considered 0-indexed.\n"),
    ("2 3 1 3", ["--oaa", "3", "--indexing", "1"], b""),
    ("2 3 1 3", ["--oaa", "3", "--quiet"], b""),
    ("2 1 2 1", ["--oaa", "3"], b""),
])  # fmt: skip
def test_oaa_says_which_labels_decided(tmp_path: Path, labels: str, args: list[str],
                                       note: bytes) -> None:  # fmt: skip
    """VW's oaa numbers its classes by the first learned label 0 or K, and says so once."""
    data = "".join(f"{y} |f a{i} b\n" for i, y in enumerate(labels.split()))
    assert _stdout(tmp_path, data, args).stdout == note


@pytest.mark.parametrize(("data", "args", "note"), [
    ("1:0:0.5 |f a\n2:1:0.5 |f b\n", ["--cb", "2", "--cb_force_legacy"], 2),
    ("1:0:0.5 |f a\n2:1:0.5 |f b\n", ["--cb_explore", "2", "--cb_force_legacy"], 2),
    ("1:0:0.5 |f a\n2:1:0.5 |f b\n", ["--cb", "3", "--cb_force_legacy", "--cb_type", "ips"], 3),
    # dm's costs do not go through csoaa: no line
    ("1:0:0.5 |f a\n2:1:0.5 |f b\n", ["--cb", "2", "--cb_force_legacy", "--cb_type", "dm"], 0),
    # the actions listed name no class 3 until the third line, which lists none: every action
    ("1:0:0.5 2 |f a\n2:1:0.5 1 |f b\n |f c\n", ["--cb", "3", "--cb_force_legacy"], 3),
    ("1:0:0.5 2 |f a\n2:1:0.5 1 |f b\n", ["--cb", "3", "--cb_force_legacy"], 0),
    ("1:0:0.5 |f a\n", ["--cb", "2", "--cb_force_legacy", "--quiet"], 0),
])  # fmt: skip
def test_legacy_cb_says_how_its_classes_are_numbered(tmp_path: Path, data: str, args: list[str],
                                                     note: int) -> None:  # fmt: skip
    """VW's csoaa below the legacy cb says, once, that the classes are numbered 1..K when an
    example's cost-sensitive label first lists class K (VW 9.11.9's lines on these files)."""
    r = _stdout(tmp_path, data, args)
    said = f"[info] label {note} found -- labels are now considered 1-indexed.\n".encode()
    assert r.stdout == (said if note else b"")


@pytest.mark.parametrize(("args", "said"), [
    (["--ngram", "a2", "--skips", "a1", "--ngram", "3"],
     "[info] Generating 2-grams for a namespaces.\n[info] Generating 3-grams for all "
     "namespaces.\n[info] Generating 1-skips for a namespaces.\n"),
    (["--ngram", "2", "-q", "::"],
     "[info] Generating 2-grams for all namespaces.\n" + DUPLICATES),
    (["--ngram", "2", "--quiet"], ""),
])  # fmt: skip
def test_the_n_grams_made_are_said_first(tmp_path: Path, args: list[str], said: str) -> None:
    """VW's n-gram transformer says each --ngram, then each --skips, as given, before the
    other notes (VW 9.11.9's lines on these runs)."""
    r = _stdout(tmp_path, "1 |a x y z\n-1 |b z w\n", args)
    assert r.stdout.decode() == said


@pytest.mark.parametrize(("stream", "out", "err"), [("stderr", 0, 1), ("stdout", 1, 0),
                                                    ("compat", 1, 0)])  # fmt: skip
def test_log_output_says_where_the_notes_go(tmp_path: Path, stream: str, out: int,
                                            err: int) -> None:  # fmt: skip
    """VW's --log_output: stderr takes VW's info and warning lines off standard output (the
    table and summary stay on standard error, as VW's)."""
    r = _stdout(tmp_path, "1 |a x y\n-1 |b z\n", ["-q", "::", "--log_output", stream])
    assert (r.stdout.count(b"[info]"), r.stderr.count(b"[info]")) == (out, err)
    assert b"average loss" in r.stderr and b"average loss" not in r.stdout


def test_log_output_takes_vws_streams_only(tmp_path: Path) -> None:
    (tmp_path / "d.txt").write_text("1 |a x\n")
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", "-d", "d.txt", "--log_output",
                        "syslog"], cwd=tmp_path, capture_output=True, timeout=120, check=False,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"--log_output syslog" in r.stderr
