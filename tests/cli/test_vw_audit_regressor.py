"""``sl vw -i MODEL --audit_regressor FILE`` next to VW 9.11.9: each non-zero weight of the
model written once, named as the data names it (crosses, the constant, --csoaa's classes),
FILE and stderr byte for byte VW's on data and models of our own, VW's and sl's models
alike; and what it refuses before reading any data."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unix import SL_VW, VW_MODULE, refused
from tests.unix import run_module as _run


@pytest.fixture
def data(tmp_path):
    """Binary labels over three namespaces (one sometimes missing, one default), a line of
    cost-sensitive labels for each, and a file of a few examples that name few features."""
    rng = np.random.default_rng(11)
    plain, costs = [], []
    for i in range(400):
        a = " ".join(f"x{int(j)}" + (":0.5" if j % 3 == 0 else "")
                     for j in rng.integers(0, 40, 4))  # fmt: skip
        b = f" |b u{int(rng.integers(0, 9))} v:{rng.choice([2, -1, 0.25])}" if i % 3 else ""
        d = f" | w{int(rng.integers(0, 5))}" if i % 5 == 0 else ""
        label = rng.choice(["1", "-1"])
        plain.append(f"{label} |a {a}{b}{d}")
        k = int(rng.integers(1, 4))
        costs.append(f"{k}:0 {k % 3 + 1}:1 |a {a}{b}{d}")
    (tmp_path / "d.vw").write_text("\n".join(plain) + "\n")
    (tmp_path / "cs.vw").write_text("\n".join(costs) + "\n")
    (tmp_path / "few.vw").write_text("1 |a x1 x2\n-1 |a x3 |b u1\n")
    return tmp_path


SETS = [
    ("d.vw", [], []),
    ("d.vw", ["-q", "ab", "--noconstant"], []),
    ("d.vw", ["--ftrl", "--l1", "0.001"], []),
    ("d.vw", ["--oaa", "2", "--predict_only_model"], []),  # (VW: class 0's weights alone)
    ("cs.vw", ["--csoaa", "3", "-q", "ab"], []),  # each class, prefixed
    ("d.vw", ["--normalized", "--invariant", "-b", "12"], ["-P", "5"]),
    ("d.vw", ["--adaptive", "--sgd"], ["-P", "1.5", "-t"]),
    ("few.vw", [], ["--quiet"]),
]


@pytest.mark.parametrize(("file", "train", "audit"), SETS)
@pytest.mark.parametrize("maker", [VW_MODULE, SL_VW], ids=["vw-model", "sl-model"])
def test_audit_regressor_writes_what_vw_writes(
    data, file: str, train: list[str], audit: list[str], maker: list[str]
) -> None:
    pytest.importorskip("vowpalwabbit")
    _run(maker, ["-d", file, *train, "-f", "m.vw", "--quiet"], data)
    v = _run(VW_MODULE, ["-d", file, "-i", "m.vw", "--audit_regressor", "vw.txt", *audit], data)
    s = _run(SL_VW, ["-d", file, "-i", "m.vw", "--audit_regressor", "sl.txt", *audit], data)
    assert s.stderr == v.stderr
    assert (data / "sl.txt").read_bytes() == (data / "vw.txt").read_bytes()
    if "--quiet" not in audit:
        assert "Regressor contains " in s.stderr and "Enabled learners" not in s.stderr


def test_each_weight_once_then_no_more_examples(data) -> None:
    """Without VW: the file names every non-zero weight of the model once (the model's
    readable form has the same slots and weights), and the table's last line says 100%."""
    _run(SL_VW, ["-d", "d.vw", "-f", "m.vw", "--readable_model", "r.txt", "--quiet"], data)
    s = _run(SL_VW, ["-d", "d.vw", "-i", "m.vw", "--audit_regressor", "a.txt"], data)
    audited = {}
    for line in (data / "a.txt").read_text().splitlines():
        name, slot, w = line.rsplit(":", 2)
        assert int(slot) not in audited and name
        audited[int(slot)] = float(w)
    readable = (data / "r.txt").read_text().split(":0\n", 1)[-1]  # (past the header)
    weights = {}
    for line in readable.splitlines():
        if ":" in line:
            slot, rest = line.split(":", 1)
            if slot.isdigit() and float(rest.split()[0]) != 0.0:
                weights[int(slot)] = float(rest.split()[0])
    assert set(audited) == set(weights)
    assert all(abs(audited[k] - weights[k]) <= 1e-5 * max(1.0, abs(weights[k]))
               for k in audited)  # fmt: skip
    err = s.stderr
    assert f"Regressor contains {len(weights)} values" in err
    assert err.rstrip().endswith("100%") and "Note:" not in err and "average loss" not in err


def test_weights_not_found_are_noted(data) -> None:
    _run(SL_VW, ["-d", "d.vw", "-f", "m.vw", "--quiet"], data)
    s = _run(SL_VW, ["-d", "few.vw", "-i", "m.vw", "--audit_regressor", "a.txt"], data)
    assert "Note: for some reason audit couldn't find all regressor values" in s.stderr
    assert (data / "a.txt").read_text().count("\n") >= 3  # x1, x2, x3, u1, Constant at most


@pytest.mark.parametrize(("train", "args", "said"), [
    ([], ["-d", "d.vw", "--passes", "2", "-c"], "--audit_regressor with --passes > 1"),
    ([], ["-d", "d.vw", "-f", "m2.vw"], "--audit_regressor with -f"),
    ([], ["-d", "d.vw", "-p", "p.txt"], "--audit_regressor with -p"),
    (["--nn", "2"], ["-d", "d.vw"], "--audit_regressor with a reduction over gd"),
    (["--lda", "2"], ["-d", "d.vw"], "--audit_regressor with lda: not yet"),
    ([], ["--daemon", "--port", "0"], "--audit_regressor with --daemon"),
])  # fmt: skip
def test_refused_before_reading(data, train: list[str], args: list[str], said: str) -> None:
    _run(SL_VW, ["-d", "d.vw", *train, "-f", "m.vw", "--quiet"], data)
    refused(["-i", "m.vw", "--audit_regressor", "a.txt", *args], data, said)
    assert not (data / "a.txt").exists() and not (data / "m2.vw").exists()


def test_no_model_and_an_input_as_output_are_refused(data) -> None:
    refused(["-d", "d.vw", "--audit_regressor", "a.txt"], data, "no -i MODEL")
    _run(SL_VW, ["-d", "d.vw", "-f", "m.vw", "--quiet"], data)
    before = (data / "d.vw").read_bytes()
    refused(["-d", "d.vw", "-i", "m.vw", "--audit_regressor", "d.vw"], data, "is the input")
    refused(["-d", "d.vw", "-i", "m.vw", "--audit_regressor", "m.vw"], data,
            "is the initial model")  # fmt: skip
    assert (data / "d.vw").read_bytes() == before


def test_a_reader_that_leaves_ends_the_run_141(data) -> None:
    """``--audit_regressor -`` into ``head -1``: the audit stops there, a note says so and
    the run exits 141, as ``-p -`` does; nothing else is left behind."""
    import subprocess
    import sys

    # ~40,000 weights, ~1 MB of audit: far more than a pipe holds before head has left
    lines = [f"{i % 2} |a " + " ".join(f"f{i}_{j}" for j in range(20)) for i in range(2000)]
    (data / "big.vw").write_text("\n".join(lines) + "\n")
    _run(SL_VW, ["-d", "big.vw", "-f", "m.vw", "--quiet"], data)
    r = subprocess.run(f"{sys.executable} -m streamlearn vw -d big.vw -i m.vw "
                       "--audit_regressor - | head -1; exit ${PIPESTATUS[0]}",
                       shell=True, executable="/bin/bash", cwd=data, capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 141, r.stderr
    assert r.stdout.count("\n") == 1 and "the reader of the regressor audit went away" in r.stderr
    assert sorted(p.name for p in data.iterdir()) == ["big.vw", "cs.vw", "d.vw", "few.vw", "m.vw"]
