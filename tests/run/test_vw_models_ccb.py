"""VW's model files of ``--ccb_explore_adf``, ``--slates``, ``--cbify K`` and ``--cbify_ldf``,
both ways (run/mlmodel.py, io/vwmodel_cb.py, run/ccb.py, run/cbify.py; issue 44, "an
option that is accepted does its job"); and ``--eval`` where VW runs it.

Each kind is trained by VW 9.11.9 (its ``vowpalwabbit`` package, in-process) and by ``sl
vw`` on the same bytes, each writing ``-f``; then VW continues sl's model and its own, and
sl continues VW's and its own, with ``-p`` on later data, learning and with ``-t``: the four
``-p`` files are equal byte for byte (CCB's has_seen_multi_slot_example, the explorer's
counter, mtr's sums, cb_sample's generator in the header's ``--random_seed``, carried over).
"""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.io import vwmodel
from tests.run.test_ccb import _ccb_logs, _slates_logs
from tests.unix import invoke

vowpalwabbit = pytest.importorskip("vowpalwabbit")


def _vw(line: str) -> None:
    vowpalwabbit.Workspace(line + " --quiet").finish()


def _sl(line: str) -> None:
    r = invoke(["vw", *line.split(), "--quiet"])
    assert r.exit_code == 0, r.output


def _mc(n: int, seed: int, unlabeled: float = 0.0) -> str:
    """Multiclass lines for --cbify 3 (a share ``unlabeled`` with no label)."""
    rng = np.random.default_rng(seed)
    out = []
    for x in rng.integers(0, 6, n):
        label = "" if rng.random() < unlabeled else f"{x % 3 + 1} "
        out.append(f"{label}|f x{x} z{rng.integers(0, 3)}\n")
    return "".join(out)


def _ldf(n: int, seed: int) -> str:
    """Cost-sensitive LDF examples for --cbify_ldf."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.integers(0, 4)
        out.append("\n".join(f"{c + 1}:{float((c + x) % 3):g} |f x{x} c{c}" for c in range(3)))
    return "\n\n".join(out) + "\n\n"


def _one_slot(n: int, seed: int) -> str:
    """CCB examples of one slot without features: has_seen_multi_slot_example stays false."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        lines = [f"ccb shared |User u{rng.integers(0, 4)}"]
        lines += [f"ccb action |Action a{a}" for a in range(3)]
        lines.append(f"ccb slot {rng.integers(0, 3)}:{rng.choice([0, -1])}:0.5 |")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


DATA = {
    "ccb": lambda s: _ccb_logs(s, 40), "slates": lambda s: _slates_logs(s, 30),
    "one": lambda s: _one_slot(30, s), "mc": lambda s: _mc(120, s, 0.1),
    "ldf": lambda s: _ldf(40, s),
}  # fmt: skip

KINDS = [
    ("--ccb_explore_adf", "ccb"),
    ("--ccb_explore_adf --first 60 --cb_type dr", "ccb"),
    ("--ccb_explore_adf --softmax --lambda 2 -q UA", "ccb"),
    ("--ccb_explore_adf --epsilon 0.2 --cb_type ips --random_seed 7", "ccb"),
    ("--ccb_explore_adf --noconstant --ccb_no_slot_index", "ccb"),
    ("--ccb_explore_adf --predict_only_model", "ccb"),
    ("--ccb_explore_adf", "one"),
    ("--slates", "slates"),
    ("--slates -q :: --epsilon 0.3 --random_seed 2", "slates"),
    ("--cbify 3", "mc"),
    ("--cbify 3 --cb_type dr --epsilon 0.1", "mc"),
    ("--cbify 3 --first 150", "mc"),
    ("--cbify 3 --regcb", "mc"),
    ("--cbify 3 --bag 2", "mc"),
    ("--cbify 3 --cover 2", "mc"),
    ("--cbify 3 --sgd", "mc"),
    ("--cbify_ldf", "ldf"),
    ("--cbify_ldf --regcb", "ldf"),
    ("--cbify_ldf --sgd --cb_type dr", "ldf"),
]


@pytest.mark.parametrize(("train", "kind"), KINDS, ids=[k[0] for k in KINDS])
def test_models_carry_over_both_ways(tmp_path, train, kind):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(DATA[kind](1))
    b.write_text(DATA[kind](2))
    vwm, slm = tmp_path / "vw.model", tmp_path / "sl.model"
    _vw(f"{train} -d {a} -f {vwm}")
    _sl(f"{train} -d {a} -f {slm}")
    # the header VW reads back: its options as VW keeps them
    want = vwmodel.read_header(vwm.read_bytes()).options
    assert vwmodel.read_header(slm.read_bytes()).options == want
    for extra in ("", "-t"):
        outs = {}
        for who, model in (("vw<sl", slm), ("vw<vw", vwm), ("sl<vw", vwm), ("sl<sl", slm)):
            p = tmp_path / f"{who}{extra}.p"
            (_vw if who.startswith("vw") else _sl)(f"-i {model} {extra} -d {b} -p {p}")
            outs[who] = p.read_text()
        assert outs["vw<vw"]
        assert outs["sl<vw"] == outs["vw<vw"], extra
        assert outs["vw<sl"] == outs["vw<vw"], extra
        assert outs["sl<sl"] == outs["vw<vw"], extra


def test_a_cb_model_continued_as_ccb(tmp_path):
    """A --cb_explore_adf model keeps no CCB flag: VW and sl read it under --ccb_explore_adf."""
    from tests.test_vw_model_cb import adf_data

    a, b = tmp_path / "a.adf", tmp_path / "b.ccb"
    a.write_text(adf_data(40, 1))
    b.write_text(_ccb_logs(3, 30))
    m = tmp_path / "cb.model"
    _vw(f"--cb_explore_adf -d {a} -f {m}")
    p, q = tmp_path / "p", tmp_path / "q"
    _vw(f"--ccb_explore_adf -i {m} -d {b} -p {q}")
    _sl(f"--ccb_explore_adf -i {m} -d {b} -p {p}")
    assert p.read_text() == q.read_text()


@pytest.mark.parametrize("line", ["--cbify 3 --cb_force_legacy"])
def test_legacy_models_are_refused_before_any_data(tmp_path, line):
    """--cbify's legacy model is not written as VW's yet: -f is refused (exit 2) before a
    line is read, nothing written (was: silently not saved, exit 0).  --cb K's and
    --cb_explore K's legacy models move both ways: tests/run/test_cb_legacy_models.py."""
    m = tmp_path / "m.vw"
    r = invoke(["vw", *line.split(), "-f", str(m)], input="this is not read\n")
    assert r.exit_code == 2, r.output
    assert "-f with --cb" in r.output and r.output.count("\n") == 1
    assert not m.exists()


@pytest.mark.parametrize("line", ["--cb_adf --eval", "--cb_explore_adf --eval", "--eval"])
def test_eval_without_cb_runs_as_vw(tmp_path, line):
    """VW warns that --eval depends on --cb and runs without it: so does sl (was: exit 2)."""
    from tests.test_vw_model_cb import adf_data

    d = tmp_path / "d.txt"
    d.write_text(adf_data(30, 4) if "adf" in line else "1 |a x\n0 |a y\n1 |a x z\n")
    p, q = tmp_path / "p", tmp_path / "q"
    _vw(f"{line} -d {d} -p {q}")
    r = invoke(["vw", *line.split(), "-d", str(d), "-p", str(p)])
    assert r.exit_code == 0, r.output
    assert "--eval: an option of --cb K, ignored without it" in r.output
    assert p.read_text() == q.read_text()
