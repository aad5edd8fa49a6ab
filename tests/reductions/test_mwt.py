"""``--multiworld_test NS`` (:mod:`streamlearn.reductions.mwt`, :mod:`streamlearn.run.mwt`):
each feature of NS a policy, its value the action it takes, evaluated on a log of
``action:cost:probability`` lines.  Against a plain statement of VW's ``mwt.cc`` written
here, against VW's bytes (held, from VW 9.11.9 on these lines), against VW itself when it is
installed; VW's model file of the evaluation written and continued; the refusals."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.reductions.test_lrq import _sl, needs_vw

F32 = np.float32
CB_EVAL = "1:0:0.5 |f :1 :2\n2:1:0.5 |f :1 :2\n" * 4
"""VW's suite's train-sets/cb_eval: two policies, always action 1 and always action 2."""


def _log(seed: int, n: int, k: int = 3) -> str:
    """A log of k actions: most lines with a logged cost (some with a tag), 0-4 policies in
    f, one anonymous policy in h, other features in g; cost and probability varied."""
    r = random.Random(seed)
    out = []
    for i in range(n):
        label = f"{r.randint(1, k)}:{r.choice([0, 1, 0.5, -1])}:{r.choice([0.5, 0.25, 1, 0.2])}"
        label = label if r.random() < 0.85 else ""
        tag = f"t{i}" if r.random() < 0.3 else ""
        pols = " ".join(f"p{j}:{r.randint(1, k)}" for j in range(r.randint(0, 4)))
        out.append(f"{label} {tag}|f {pols} |g x{r.randint(0, 3)} |h :{r.randint(1, k)}")
    return "\n".join(out) + "\n"


def _g(x: float) -> str:
    return "-nan" if x != x else f"{float(F32(x)):g}"


def _reference(text: str, namespaces: str, bits: int = 18) -> list[str]:
    """``-p`` as VW's ``mwt.cc`` makes it, stated plainly: a policy per feature of the
    namespaces (its slot: VW's hash of its name, an anonymous one the namespace's hash plus
    its place), met in order; on a line with a logged cost, the count goes up and each
    policy met so far adds ``cost / probability`` (float32) when its action is the logged
    one; each line prints every policy's sum over the count (float32), then the tag."""
    from streamlearn.hashing import hashstring_py

    mask = (1 << bits) - 1
    policies: dict[int, int] = {}
    cost: list[float] = []
    total = 0.0
    out = []
    for line in text.splitlines():
        head, *parts = line.split("|")
        words = head.split()
        label = words[0] if words and ":" in words[0] else None
        tag = words[-1] if words and ":" not in words[-1] else ""
        if label is not None:
            total += 1
            a, c, p = label.split(":")
            actions: dict[int, int] = {}
            for part in parts:
                ns, *feats = part.split()
                if ns not in namespaces:
                    continue
                seed = hashstring_py(ns, 0)
                anon = 0
                for f in feats:
                    name, _, value = f.partition(":")
                    value = value or "1"
                    if name:
                        slot = hashstring_py(name, seed) & mask
                    else:
                        slot = (seed + anon) & mask
                        anon += 1
                    if slot not in policies:
                        policies[slot] = len(cost)
                        cost.append(0.0)
                    actions[policies[slot]] = int(value)
            estimate = float(F32(F32(float(c)) / F32(float(p))))
            for q in range(len(cost)):
                if actions.get(q) == int(a):
                    cost[q] += estimate
        with np.errstate(divide="ignore", invalid="ignore"):
            cells = [_g(F32(F32(c) / F32(total))) for c in cost]
        out.append(" ".join(cells) + (f" {tag}" if tag else "") + "\n")
    return out


@pytest.mark.parametrize("namespaces", ["f", "fh", "h", "g"])
@pytest.mark.parametrize("seed", [0, 1])
def test_predictions_are_the_plain_statements(tmp_path: Path, namespaces: str, seed: int) -> None:
    text = _log(seed, 200)
    (tmp_path / "d.txt").write_text(text)
    r = _sl(["-d", "d.txt", "--multiworld_test", namespaces, "-p", "p.txt", "--quiet"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.txt").read_text().splitlines(keepends=True) == _reference(
        text, namespaces)


def test_vws_bytes_on_its_suites_log(tmp_path: Path) -> None:
    """VW's suite's test 114: -p, and its table's head with no line (mwt writes lines only
    when it learns), its counts."""
    (tmp_path / "d.txt").write_text(CB_EVAL)
    r = _sl(["-d", "d.txt", "--multiworld_test", "f", "-p", "p.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.txt").read_text() == (
        "0 0\n0 1\n0 0.666667\n0 1\n0 0.8\n0 1\n0 0.857143\n0 1\n")
    err = r.stderr.splitlines()
    assert "Enabled learners: gd, scorer-identity, multiworld_test" in err
    assert ["Input label = CB", "Output pred = SCALARS"] == err[err.index(
        "Enabled learners: gd, scorer-identity, multiworld_test") + 1 :][:2]
    assert not any(ln.startswith("cb_type") for ln in err)
    head = err.index("loss     last          counter         weight          label        "
                     "predict features")  # fmt: skip
    assert err[head + 1 : head + 8] == [
        "", "finished run", "number of examples = 8", "weighted example sum = 8.000000",
        "weighted label sum = 0.000000", "average loss = 0.000000", "total feature number = 24"]


def test_a_model_keeps_the_evaluation_and_continues_it(tmp_path: Path) -> None:
    """-f writes VW's file (mwt's count, policies and their costs above gd's part, as VW
    9.11.9 writes it: test 121); -i continues the evaluation: the second file's -p is the
    tail of one run over both (test 122)."""
    first, second = _log(3, 120), _log(4, 80)
    (tmp_path / "a.txt").write_text(first)
    (tmp_path / "b.txt").write_text(second)
    (tmp_path / "ab.txt").write_text(first + second)
    assert _sl(["-d", "a.txt", "--multiworld_test", "fh", "-f", "m.vw", "--quiet"],
               tmp_path).returncode == 0  # fmt: skip
    r = _sl(["-d", "b.txt", "-i", "m.vw", "-p", "b.p", "--quiet"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert _sl(["-d", "ab.txt", "--multiworld_test", "fh", "-p", "ab.p", "--quiet"],
               tmp_path).returncode == 0  # fmt: skip
    whole = (tmp_path / "ab.p").read_text().splitlines(keepends=True)
    assert (tmp_path / "b.p").read_text().splitlines(keepends=True) == whole[120:]
    from streamlearn.io import vwmodel

    data = (tmp_path / "m.vw").read_bytes()
    h = vwmodel.read_header(data)
    assert h.options.strip() == "--multiworld_test fh"
    total, n = struct.unpack_from("<dQ", data, h.end)
    assert total == sum(1 for ln in first.splitlines() if ln.split("|")[0].count(":") == 2)
    assert n == len([c for c in whole[119].split() if not c.startswith("t")])  # (not tags)


def test_a_cut_model_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(_log(5, 50))
    assert _sl(["-d", "a.txt", "--multiworld_test", "f", "-f", "m.vw", "--quiet"],
               tmp_path).returncode == 0  # fmt: skip
    from streamlearn.io import vwmodel

    data = (tmp_path / "m.vw").read_bytes()
    (tmp_path / "cut.vw").write_bytes(data[: vwmodel.read_header(data).end + 20])
    r = _sl(["-d", "a.txt", "-i", "cut.vw", "-p", "p.txt"], tmp_path)
    assert r.returncode == 5 and "--multiworld_test" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "p.txt").exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--multiworld_test", "f", "--learn", "2"], "--learn"),
    (["--multiworld_test", "f", "--learn", "2", "--exclude_eval"], "--learn"),
    (["--multiworld_test", "f", "--cb", "2"], "--learn"),
    (["--learn", "2"], "--multiworld_test's options"),
    (["--multiworld_test", "f", "--cb_explore_adf"], "another reduction"),
    (["--multiworld_test", "f", "-q", "fg"], "interactions"),
    (["--multiworld_test", "f", "--readable_model", "r.txt"], "--readable_model"),
    (["--multiworld_test", "f", "--audit"], "--audit"),
])  # fmt: skip
def test_what_is_not_run_is_refused_in_one_line(tmp_path: Path, args: list[str],
                                                says: str) -> None:  # fmt: skip
    """--learn K (VW's legacy cb over the policies' indicators, laid out where they overlap
    its actions' offsets: sl's kernel does not lay them out so) and the outputs not written:
    exit 2, one line, before any data."""
    (tmp_path / "d.txt").write_text(CB_EVAL)
    r = _sl(["-d", "d.txt", *args, "-p", "p.txt"], tmp_path)
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.splitlines()) == 1
    assert not (tmp_path / "p.txt").exists()


@needs_vw
@pytest.mark.parametrize("namespaces", ["f", "fgh"])
def test_against_vw(tmp_path: Path, namespaces: str) -> None:
    text = _log(9, 300)
    (tmp_path / "d.txt").write_text(text)
    got = []
    for head in (["vowpalwabbit"], ["streamlearn", "vw"]):
        r = subprocess.run([sys.executable, "-m", *head, "-d", "d.txt", "--multiworld_test",
                            namespaces, "-p", "p.txt", "-f", "m.vw"], cwd=tmp_path,
                           capture_output=True, text=True, check=False)  # fmt: skip
        assert r.returncode == 0, r.stderr
        from streamlearn.io import vwmodel

        data = (tmp_path / "m.vw").read_bytes()
        got.append(((tmp_path / "p.txt").read_text(), data[vwmodel.read_header(data).end :],
                    [ln for ln in r.stderr.splitlines() if ln.startswith(("average", "number",
                                                                          "total"))]))  # fmt: skip
    assert got[0] == got[1]
