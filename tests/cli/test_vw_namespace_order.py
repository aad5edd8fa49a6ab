"""A namespace that comes back later in a line (``|user ... |item ... |url ...``: ``u`` twice)
gives VW's numbers: VW's reader appends each feature to its namespace's list, so every learner
sees each namespace's features together, the namespaces in the order they first come, and its
float32 sums add them in that order.  ``-p`` and ``--audit`` against VW 9.11.9 on data of our
own, single-line and multiline, with crosses, affixes and n-grams."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unix import SL_VW, VW_MODULE
from tests.unix import run_module as _run


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(17)
    lines, multi = [], []
    for i in range(300):
        u = " ".join(f"w{int(j)}:{rng.choice([0.25, 1, 3])}" for j in rng.integers(0, 30, 3))
        y = int(rng.integers(1, 4))
        lines.append(f"{y} |user {u} |item k{i % 7} g{i % 3} |url z{i % 5} | bare{i % 3} "
                     f"|u more{i % 4}:0.5 |item:2 again{i % 6}")  # fmt: skip
        a = int(rng.integers(0, 3))
        multi.append(f"shared |user {u} |s s{i % 4} |user extra{i % 3}")
        for j in range(3):
            label = f"{j}:{rng.choice([0.0, 1.0])}:0.5 " if j == a else ""
            multi.append(f"{label}|a id{j} |b b{(i + j) % 5} |a x{j}:{rng.choice([0.5, 2])}")
        multi.append("")
    (tmp_path / "d.vw").write_text("\n".join(lines) + "\n")
    (tmp_path / "m.vw").write_text("\n".join(multi) + "\n")
    return tmp_path


SETS = [
    ("d.vw", []),
    ("d.vw", ["-q", "ui", "--loss_function", "quantile", "--quantile_tau", "0.3"]),
    ("d.vw", ["--oaa", "3", "--cubic", "uui"]),
    ("d.vw", ["--affix", "+2u,-1i"]),
    ("d.vw", ["--ngram", "u2", "--skips", "u1"]),
    ("d.vw", ["--sgd", "-l", "0.1", "--interactions", "ui:"]),
    ("m.vw", ["--cb_explore_adf", "-q", "ua", "--epsilon", "0.1"]),
    ("m.vw", ["--cb_adf", "-q", "::"]),
]


@pytest.mark.parametrize(("file", "args"), SETS)
def test_a_namespace_that_comes_back_is_vws(data, file: str, args: list[str]) -> None:
    pytest.importorskip("vowpalwabbit")
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        _run(prog, ["-d", file, *args, "-p", f"{name}.p"], data)
    assert (data / "sl.p").read_bytes() == (data / "vw.p").read_bytes()
    if "--cb_adf" in args or "--cb_explore_adf" in args:
        return  # (their audit is checked in their own tests)
    audit = [_run(prog, ["-d", file, *args, "--audit", "--examples", "6"], data).stdout
             for prog in (VW_MODULE, SL_VW)]  # fmt: skip
    assert audit[1] == audit[0]
