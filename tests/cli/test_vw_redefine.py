"""``sl vw --redefine N:=S`` next to VW 9.11.9: namespaces renamed as VW's text reader renames
them, before crosses, filters, n-grams and affixes read them, and each example's features
grouped by the new namespaces in VW's order; stderr, ``-p``, ``--audit``, the readable model
and the models both ways as VW's, on data of our own."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.io.interactions import redefine_table
from tests.unix import SL_VW, VW_MODULE, refused, same_as_vw
from tests.unix import run_module as _run


@pytest.fixture
def data(tmp_path):
    """Namespaces u, user, a, c, b and the default one, repeated and interleaved."""
    rng = np.random.default_rng(5)
    lines = []
    for i in range(400):
        u = " ".join(f"w{int(j)}" for j in rng.integers(0, 30, 3))
        a = " ".join(f"{int(j)}:{rng.choice([0.5, 2])}" for j in rng.integers(0, 40, 2))
        y = rng.choice([-1, 1])
        lines.append(f"{y} |u {u} |a {a} |c k{i % 7} |user z{i % 5} | bare{i % 3} "
                     f"|b:2 t{i % 11} |a again{i % 4}")  # fmt: skip
    (tmp_path / "d.vw").write_text("\n".join(lines) + "\n")
    return tmp_path


SETS = [
    ["--redefine", "y:=:", "--redefine", "x:=arma", "--ignore", "x", "-q", "yy"],
    ["--redefine", "z:=uc", "-q", "zb", "--loss_function", "logistic"],
    ["--redefine", ":=u", "-q", "::"],  # (u into the default namespace)
    ["--redefine", "q:=a", "--ngram", "q2", "--keep", "q", "--keep", "b"],
    ["--redefine", "c:=bu", "--affix", "+2c", "--cubic", "cac"],
    ["--redefine", "ab:=c", "--redefine", ":=", "--sort_features"],  # (N's first byte, as VW)
]


@pytest.mark.parametrize("args", SETS)
def test_redefined_namespaces_learn_what_vw_learns(data, args: list[str]) -> None:
    pytest.importorskip("vowpalwabbit")
    same_as_vw("d.vw", args, data, audit=5)  # (the model keeps --redefine, as VW's)


def test_a_continued_model_keeps_its_redefinitions(data) -> None:
    pytest.importorskip("vowpalwabbit")
    args = ["--redefine", "y:=ua", "-q", "yc"]
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        _run(prog, ["-d", "d.vw", *args, "-f", f"{name}.m"], data)
    outs = set()
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        for model in ("vw", "sl"):
            _run(prog, ["-d", "d.vw", "-i", f"{model}.m", "-p", f"{name}-{model}.p"], data)
            outs.add((data / f"{name}-{model}.p").read_text())
    assert len(outs) == 1


def test_the_table_is_vw_s() -> None:
    t = redefine_table(("y:=:", "x:=arma", ":=", "q:=b"))
    assert [chr(t[ord(c)]) for c in "uarmbz"] == ["y", "x", "x", "x", "q", "y"]
    assert t[32] == 32 and t[128] == 128  # (never the anonymous namespace, nor the constant)
    assert (redefine_table(("k:=",)) == np.arange(256)).all()
    with pytest.raises(ValueError, match="N:=S"):
        redefine_table(("ab",))


def test_refused_where_vw_does_not_redefine(data) -> None:
    refused(["-d", "d.vw", "--redefine", "a:=b", "--json"], data, "--redefine")
    refused(["-d", "d.vw", "--redefine", "a=b"], data, "--redefine")
