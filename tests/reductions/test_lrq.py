"""``--lrq`` (:mod:`streamlearn.reductions.lrq`, :mod:`streamlearn.learners.lrq`) against VW
9.11.9 on data of our own: ``-p``, stderr and readable models byte for byte, models read by
the other program, continued models, passes over a cache, dropout; sl's ``sl train --lrq``
and the refusals."""

from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from streamlearn.errors import UsageError
from streamlearn.reductions import lrq, lrqfa

HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None
needs_vw = pytest.mark.skipif(not HAVE_VW, reason="vowpalwabbit is not installed")
ROOT = Path(__file__).resolve().parents[2]


def _data(path: Path, n: int, seed: int) -> None:
    """Lines with namespaces a, b, c (a value, a weight, a tag, an unlabeled line now and
    then; b sometimes missing, a sometimes twice as big)."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        a = " ".join(f"u{rnd.randrange(30)}:{rnd.choice(['1', '0.5', '2', '-0.25'])}"
                     for _ in range(rnd.randint(1, 3)))  # fmt: skip
        b = " ".join(f"m{rnd.randrange(40)}" for _ in range(rnd.randint(0, 3)))
        label = "" if rnd.random() < 0.12 else str(rnd.choice([-1, 1]))
        if label and rnd.random() < 0.1:
            label += f" {rnd.choice(['0.5', '2', '0'])}"
        tag = f"'t{i}" if rnd.random() < 0.2 else ""
        lines.append(f"{label} {tag}|a {a} |b {b} |c z{rnd.randrange(5)}".strip())
    path.write_text("\n".join(lines) + "\n")


def _vw(line: str, cwd: Path) -> None:
    code = "import sys\nfrom vowpalwabbit import Workspace\nWorkspace(sys.argv[1]).finish()\n"
    subprocess.run([sys.executable, "-c", code, line], cwd=cwd, check=True, capture_output=True)


def _sl(args: list[str], cwd: Path, command: str = "vw") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "streamlearn", command, *args], cwd=cwd,
                          env=env, capture_output=True, text=True, check=False)  # fmt: skip


def _stderr(text: str, name: str) -> list[str]:
    """VW's stderr lines, its file names made one, its cache's lines left out (sl names its
    cache file its own way)."""
    return [ln.replace(name, "X") for ln in text.splitlines()
            if "cache_file" not in ln and not ln.startswith("[")]  # fmt: skip


CASES = [
    "--lrq ab3",
    "--lrq ba2 --lrqdropout",
    "--lrq ab2 --lrq ac1 -b 12",
    "--lrq aa3",
    "--lrq ab5 --l1 1e-4",
    "--lrq ca2 --lrq bb1 --l2 1e-5",
    "--lrq ab3 --adaptive",
    "--lrq ab3 --normalized -l 0.2 --power_t 0.3",
    "--lrq ab3 --link logistic --loss_function logistic",
    "--lrq ab3 --lrqdropout --random_seed 7",
    "--lrq ab2 --holdout_off --passes 3 -c -k",
    "--lrq ab2 --lrqdropout --holdout_off --passes 2 -c -k --loss_function logistic",
    "--lrqfa ab2",
    "--lrqfa abc2",  # VW's stale indices on the second learn (three fields)
    "--lrqfa cab3 --loss_function logistic",
    "--lrqfa aa3",
    "--lrqfa abc1 --holdout_off --passes 2 -c -k",
]


def assert_vws_bytes(tmp_path: Path, args: str, model: bool = True) -> str:
    """``sl vw ARGS -d d.vw`` and VW's on the same ``d.vw`` (in ``tmp_path``): ``-p``, the
    readable model and stderr (cache lines and ``[...]`` lines aside) the same bytes; sl's
    stderr returned.  ``model``: both write a model file too."""
    outs = "-d d.vw -p {0}.p --readable_model {0}.txt" + (" -f {0}.model" if model else "")
    code = "import sys\nfrom vowpalwabbit import Workspace\nWorkspace(sys.argv[1]).finish()\n"
    vw_err = subprocess.run([sys.executable, "-c", code, f"{args} {outs.format('vw')}"],
                            cwd=tmp_path, capture_output=True, text=True).stderr  # fmt: skip
    for f in tmp_path.glob("d.vw.cache*"):
        f.unlink()
    r = _sl([*args.split(), *outs.format("sl").split()], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl.p").read_bytes() == (tmp_path / "vw.p").read_bytes()
    assert (tmp_path / "sl.txt").read_text() == (tmp_path / "vw.txt").read_text()
    assert _stderr(r.stderr, "sl.") == _stderr(vw_err, "vw.")
    return r.stderr


@needs_vw
@pytest.mark.parametrize("args", CASES)
def test_lrq_is_vws_byte_for_byte(tmp_path: Path, args: str) -> None:
    _data(tmp_path / "d.vw", 500, seed=len(args))
    assert_vws_bytes(tmp_path, args)


@needs_vw
@pytest.mark.parametrize("args", ["--lrq ab3", "--lrq ab2 --lrqdropout"])
def test_models_move_both_ways_and_continue(tmp_path: Path, args: str) -> None:
    """VW's model scored by sl and sl's by VW give the same ``-t`` predictions (dropout: half
    of every latent product); a model continued by the other program, too (VW's example
    counter starts again from 0 in a run)."""
    _data(tmp_path / "d.vw", 400, seed=3)
    _data(tmp_path / "e.vw", 300, seed=4)
    assert_models_move_both_ways(tmp_path, args)


def assert_models_move_both_ways(tmp_path: Path, args: str) -> None:
    """VW's model of ``args`` trained on ``d.vw`` and sl's, each scored on ``e.vw`` by the
    other program, give VW's ``-t`` predictions; VW's model continued by sl, VW's."""
    _vw(f"{args} -d d.vw -f vw.model", tmp_path)
    assert _sl([*args.split(), "-d", "d.vw", "-f", "sl.model"], tmp_path).returncode == 0
    _vw("-i vw.model -t -d e.vw -p vw_t.p", tmp_path)
    _vw("-i sl.model -t -d e.vw -p vw_of_sl.p", tmp_path)
    assert _sl(["-i", "vw.model", "-t", "-d", "e.vw", "-p", "sl_of_vw.p"], tmp_path).returncode == 0
    want = (tmp_path / "vw_t.p").read_bytes()
    assert (tmp_path / "vw_of_sl.p").read_bytes() == want
    assert (tmp_path / "sl_of_vw.p").read_bytes() == want
    _vw("-i vw.model -d e.vw -p vw_c.p -f vw_c.model", tmp_path)
    r = _sl(["-i", "vw.model", "-d", "e.vw", "-p", "sl_c.p", "-f", "sl_c.model"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sl_c.p").read_bytes() == (tmp_path / "vw_c.p").read_bytes()


@needs_vw
def test_sl_train_learns_as_sl_vw(tmp_path: Path) -> None:
    """``sl train --lrq`` is the same learner: its predictions are VW's (to the digits sl
    writes), its model scores the same with ``sl predict``, and continuing it with another
    ``--lrq`` is refused."""
    _data(tmp_path / "d.vw", 400, seed=5)
    _vw("--lrq ab3 -d d.vw -p vw.p", tmp_path)
    r = _sl(["--lrq", "ab3", "d.vw", "-p", "sl.p", "-f", "m.sl"], tmp_path, "train")
    assert r.returncode == 0, r.stderr
    vw = [float(ln.split()[0]) for ln in (tmp_path / "vw.p").read_text().splitlines()]
    sl = [float(ln.split()[0]) for ln in (tmp_path / "sl.p").read_text().splitlines()]
    assert sl == pytest.approx(vw, abs=1e-6)
    r = _sl(["-i", "m.sl", "--lrq", "ab2", "d.vw"], tmp_path, "train")
    assert r.returncode == 2 and "conflicts with the initial model" in r.stderr


@needs_vw
def test_sl_train_lrqfa_is_vws(tmp_path: Path) -> None:
    """``sl train --lrqfa`` (declared by the reduction's module, not the CLI) gives VW's
    predictions, and its model predicts as it learned."""
    _data(tmp_path / "d.vw", 300, seed=8)
    _vw("--lrqfa abc2 -d d.vw -p vw.p", tmp_path)
    r = _sl(["--lrqfa", "abc2", "d.vw", "-p", "sl.p", "-f", "m.sl"], tmp_path, "train")
    assert r.returncode == 0, r.stderr
    vw = [float(ln.split()[0]) for ln in (tmp_path / "vw.p").read_text().splitlines()]
    sl = [float(ln.split()[0]) for ln in (tmp_path / "sl.p").read_text().splitlines()]
    assert sl == pytest.approx(vw, abs=1e-6)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--lrqdropout"], "--lrqdropout is an option of --lrq"),
        (["--lrq", "ab"], "two sets and a rank"),
        (["--lrqfa", "ab:2"], "wildcards"),
        (["--boost-alg", "logistic"], "options of --boosting"),
        (["--lrq", "ab3", "--invert-hash", "x.txt"], "--lrq with --invert-hash"),
        (["--boosting", "0"], "1<=x<=1024"),
    ],
)
def test_sl_train_refuses_a_misused_reduction_option(tmp_path: Path, args: list[str],
                                                     why: str) -> None:  # fmt: skip
    _data(tmp_path / "d.vw", 20, seed=1)
    r = _sl([*args, "d.vw"], tmp_path, "train")
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_sl_train_takes_each_reductions_declared_options() -> None:
    """``sl train``'s reduction options are the registry's (each module's ``TRAIN_OPTIONS``),
    under one heading of its help; the CLI's source names none of them."""
    from click.testing import CliRunner

    from streamlearn.cli import cli
    from streamlearn.reductions import TRAIN_OPTIONS

    out = CliRunner().invoke(cli, ["train", "--help"], terminal_width=100).output
    section = out.split("Reductions over gd:")[1].split("\n\n")[0]
    for o in TRAIN_OPTIONS:
        assert o.flags[0] in section
    cli_source = " ".join(p.read_text() for p in (ROOT / "streamlearn" / "cli").glob("*.py"))
    for o in TRAIN_OPTIONS:
        assert f'"{o.flags[0]}"' not in cli_source, o.flags[0]


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ("--lrq ab3 -q ab", "-q, --cubic or --interactions"),
        ("--lrq ab3 --oaa 3", "--oaa"),
        ("--lrq ab3 --audit", "--audit"),
        ("--lrq a:3", "wildcards"),
        ("--lrq ab", "two sets and a rank"),
        ("--lrq ab3 --ftrl", "runs over gd"),
        ("--lrq ab3 --lrqfa abc2", "--lrq with --lrqfa"),
        ("--lrqfa ab", "fields and a rank"),
    ],
)
def test_what_sl_does_not_run_is_refused_in_one_line(tmp_path: Path, args: str,
                                                     why: str) -> None:  # fmt: skip
    assert_refused(tmp_path, args, why)


def assert_refused(tmp_path: Path, args: str, why: str) -> None:
    """``sl vw ARGS`` exits 2 with one line saying ``why``, before any data is read."""
    (tmp_path / "d.vw").write_text("1 |a x |b y\n")
    r = _sl([*args.split(), "-d", "d.vw"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert why in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_options_are_read_from_the_reductions_words() -> None:
    opts = lrq.read(("--lrq", "ba2", "--lrq", "ab3", "--lrq", "ab3", "--lrqdropout"))
    assert opts == lrq.Options(("ab3", "ba2"), True)  # VW's set: sorted, each once
    assert opts.width == 4  # 1 + 3, a power of 2
    assert lrq.Options(("ab4",)).width == 8
    assert lrq.Options(("ab1",)).width == 2
    assert lrq.read(("--lrqdropout",)) is None
    with pytest.raises(UsageError, match="two sets and a rank"):
        lrq.read(("--lrq", "a3"))


@needs_vw
@pytest.mark.parametrize("args", ["--lrq ab3", "--lrqfa abc2", "--lrq ab2 --lrqdropout"])
def test_the_python_drop_in_is_vws_round_for_round(tmp_path: Path, args: str) -> None:
    """``streamlearn.vowpalwabbit.Workspace`` against VW's: predictions between learns
    (each a parsed example for VW's counter, which picks the pairs' sides)."""
    import vowpalwabbit as vw_package

    from streamlearn import vowpalwabbit as sl_package

    _data(tmp_path / "d.vw", 300, seed=9)
    lines = (tmp_path / "d.vw").read_text().splitlines()
    got = []
    for package in (vw_package, sl_package):
        w = package.Workspace(f"{args} --quiet")
        seen = []
        for i, line in enumerate(lines):
            if i % 3:
                seen.append(w.predict(line))
            w.learn(line)
        got.append(seen)
        w.finish()
    assert got[1] == got[0]


def test_lrqfa_reads_vws_fields_and_rank() -> None:
    opts = lrqfa.read(("--lrqfa", "abc2"))
    assert opts == lrqfa.Options("abc", 2)
    assert opts.width == 8  # 1 + 3 fields x rank 2 = 7, a power of 2
    assert opts.table().tolist() == [[97, 98, 2, 0, 1], [97, 99, 2, 0, 2], [98, 99, 2, 1, 2]]
    assert lrqfa.Options("aa", 3).table().tolist() == [[97, 97, 3, 1, 1]]  # (the last place)
    assert lrqfa.read(("--lrq", "ab2")) is None


@pytest.mark.parametrize("command", ["vw", "train"])
def test_a_line_too_wide_for_the_latent_products_is_skipped(tmp_path: Path, command: str) -> None:
    """A line whose latent products pass the bound (``--lrq ab200`` over 3,000 x 3,000
    features: 1.8e9 products) is malformed, named with its file and line, and the rest is
    learned; it does not die with a MemoryError."""
    wide = "1 |a " + " ".join(f"x{i}" for i in range(3000)) + " |b " + " ".join(
        f"y{i}" for i in range(3000))  # fmt: skip
    (tmp_path / "d.vw").write_text(f"1 |a x1 |b y1\n{wide}\n-1 |a x3 |b y3\n")
    args = ["--lrq", "ab200", "-p", "p.txt", "-f", "m.sl"]
    args += ["-d", "d.vw"] if command == "vw" else ["d.vw"]
    r = _sl(args, tmp_path, command)
    assert r.returncode == 0, r.stderr
    assert "d.vw:2: more crosses than --max-crosses" in r.stderr
    assert "Traceback" not in r.stderr and (tmp_path / "m.sl").exists()


def test_the_drop_in_refuses_a_line_too_wide_for_the_latent_products() -> None:
    from streamlearn.vowpalwabbit import Workspace

    ws = Workspace("--lrq ab200 --quiet")
    wide = "1 |a " + " ".join(f"x{i}" for i in range(3000)) + " |b " + " ".join(
        f"y{i}" for i in range(3000))  # fmt: skip
    with pytest.raises(ValueError, match="more crosses than --max-crosses"):
        ws.learn(wide)
    ws.learn("1 |a x1 |b y1")  # (and it goes on)
    assert ws.get_weighted_examples() == 1.0


def test_products_counts_each_rows_latent_products() -> None:
    import numpy as np

    from streamlearn.io.interactions import MAX_CROSSES

    assert lrq.LIMIT == MAX_CROSSES

    indptr = np.array([0, 3, 3, 7])
    ns = np.array([97, 98, 98, 97, 97, 97, 99], dtype=np.uint8)
    pairs = lrq.read(("--lrq", "ab2", "--lrq", "aa1")).table()
    # row 0: a=1, b=2 -> 2*1*2 + 1*1*1; row 1: none; row 2: a=3, b=0 -> 0 + 9
    assert lrq.products(indptr, ns, pairs).tolist() == [5, 0, 9]
