"""``sl vw --top K`` next to VW 9.11.9: gd over groups of examples separated by empty lines,
``-p`` each group's K highest predictions with their tags, VW's table of a line per group;
stderr, ``-p`` and the models byte for byte VW's on data of our own, and the models both
ways."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unix import SL_VW, VW_MODULE, refused
from tests.unix import run_module as _run


def _groups(rng: np.random.Generator, n: int, labels: bool = True) -> str:
    """``n`` groups of 1 to 5 examples: users and items crossed by ``-q ui``, tags on most,
    some unlabeled lines, runs of empty lines between groups (not a line of blanks: VW reads
    one as an example without features, sl's parser as none)."""
    out = []
    for _ in range(n):
        user = f"u{int(rng.integers(0, 30))}"
        for _ in range(int(rng.integers(1, 6))):
            item = f"i{int(rng.integers(0, 40))}"
            label = "" if not labels or rng.random() < 0.1 else f"{int(rng.integers(0, 4))} "
            tag = f"'{user}-{item}" if rng.random() < 0.8 else ""
            out.append(f"{label}{tag}|u {user} |i {item} x:{rng.choice([0.5, 1, 2])}")
        out += [""] * int(rng.integers(1, 4))
    return "\n".join(out[: -1 if out[-1] == "" else None]) + "\n"


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(7)
    (tmp_path / "g.vw").write_text(_groups(rng, 300))
    few = "1 'a|u x\n2 'b|u y\n\n\n0 'c|u x y\n|u z\n3 |u z x\n\n\n2 'e|u y"
    (tmp_path / "few.vw").write_text(few)
    return tmp_path


SETS = [
    ("few.vw", ["--top", "2"]),
    ("g.vw", ["--top", "3", "-q", "ui"]),
    ("g.vw", ["--top", "1", "-P", "1"]),
    ("g.vw", ["--top", "2", "-P", "1.5", "--noconstant", "-b", "10"]),
    ("g.vw", ["--top", "4", "--normalized", "--invariant", "-l", "0.1"]),
    ("g.vw", ["--top", "2", "--quiet"]),
]


@pytest.mark.parametrize(("file", "args"), SETS)
def test_top_writes_what_vw_writes(data, file: str, args: list[str]) -> None:
    pytest.importorskip("vowpalwabbit")
    v = _run(VW_MODULE, ["-d", file, *args, "-p", "vw.p", "-f", "vw.m"], data)
    s = _run(SL_VW, ["-d", file, *args, "-p", "sl.p", "-f", "sl.m"], data)
    vw_err = v.stderr.replace("vw.p", "sl.p").replace("vw.m", "sl.m")
    assert s.stderr == vw_err
    assert (data / "sl.p").read_bytes() == (data / "vw.p").read_bytes()
    if "--quiet" not in args:
        assert "Enabled learners: gd, scorer-identity, top, count_label" in s.stderr
        assert "Output pred = SCALARS" in s.stderr
    # the models both ways: each program scores the other's as its own
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        for model in ("vw", "sl"):
            _run(prog, ["-d", file, "-t", "-i", f"{model}.m", "-p", f"{name}-{model}.p"], data)
    same = {(data / f"{n}-{m}.p").read_bytes() for n in ("vw", "sl") for m in ("vw", "sl")}
    assert len(same) == 1


def test_top_over_a_continued_model_and_blocks(data) -> None:
    """A model learned without --top, continued with it (VW's suite line 34's form), and an
    input of several of sl's 2 MB blocks, whose groups cross their edges."""
    pytest.importorskip("vowpalwabbit")
    rng = np.random.default_rng(3)
    (data / "big.vw").write_text(_groups(rng, 90000))
    assert (data / "big.vw").stat().st_size > 5 << 20
    _run(VW_MODULE, ["-d", "g.vw", "-q", "ui", "-f", "m.vw", "--quiet"], data)
    common = ["-d", "big.vw", "-i", "m.vw", "--top", "2", "--predict_only_model"]
    v = _run(VW_MODULE, [*common, "-p", "vw.p"], data)
    s = _run(SL_VW, [*common, "-p", "sl.p"], data)
    assert s.stderr == v.stderr.replace("vw.p", "sl.p")
    assert (data / "sl.p").read_bytes() == (data / "vw.p").read_bytes()


def test_groups_and_their_lines_without_vw(data) -> None:
    """The hand-made file: three groups, the K highest of each lowest first with their
    tags, an empty line after each; the table's labels with VW's FLT_MAX for an unlabeled
    line, cut to the column."""
    s = _run(SL_VW, ["-d", "few.vw", "--top", "2", "-p", "p.txt"], data)
    blocks = (data / "p.txt").read_text().split("\n\n")
    assert len(blocks) == 4 and blocks[-1] == ""
    assert [len(b.splitlines()) for b in blocks[:3]] == [2, 2, 1]
    assert blocks[0].splitlines()[1].endswith("  b ") and blocks[2].endswith("  e ")
    values = [float(line.split()[0]) for b in blocks[:3] for line in b.splitlines()]
    assert values[0] <= values[1] and values[2] <= values[3]
    assert "0,340282346..." in s.stderr and "number of examples = 6" in s.stderr


@pytest.mark.parametrize(("args", "said"), [
    (["--top", "0"], "--top 0: K must be 1 or more"),
    (["--top", "2", "--passes", "2", "-c"], "--top with --passes"),
    (["--top", "2", "-r", "r.txt"], "--top with -r"),
    (["--top", "2", "--oaa", "3"], "--top with --oaa"),
    (["--top", "2", "--audit"], "--audit with --top"),
    (["--top", "2", "--daemon", "--port", "0"], "--top with --daemon"),
])  # fmt: skip
def test_refused_before_reading(data, args: list[str], said: str) -> None:
    extra = [] if "--daemon" in args else ["-d", "few.vw"]
    refused([*extra, *args], data, said)
