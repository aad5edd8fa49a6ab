"""The tiny-input mode (``cli/options.py: _tiny_mode``): plain Python only where it is faster.

Interpreted kernels cost ~25 µs per feature visit; compiled ones ~0.2 s more
to start.  A small file can still ask for millions of visits (a wide line
crossed with itself, many passes, a grid, coordinate descent's sweeps):
those must be compiled, whatever their size in bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from streamlearn.cli.options import TINY_INPUT, TINY_WORK, crosses, estimate_work, train_factor
from tests.unix import invoke

WIDE = "1 |f " + " ".join(f"w{i}" for i in range(2800)) + "\n"  # 3,000-ish features, < 32 KiB

# the command line in a fresh process; prints whether the kernels ran compiled (shipped,
# cached or compiled: not interpreted)
SCRIPT = (
    "import sys\n"
    "from streamlearn.cli import cli\n"
    "try:\n"
    "    cli(sys.argv[1:])\n"
    "except SystemExit as e:\n"
    "    assert not e.code, e.code\n"
    "jit = sys.modules.get('streamlearn.system.jit')\n"
    "print(jit is not None and not jit.INTERPRETED)\n"
)


def _compiled(args: list[str], tmp_path, stdin: bytes | None = None) -> bool:
    env = dict(os.environ)
    for k in ("NUMBA_DISABLE_JIT", "SL_JIT"):
        env.pop(k, None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], input=stdin, env=env,
                          cwd=tmp_path, capture_output=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode().split()[-1] == "True"


def test_work_counts_features_and_bounds_crosses():
    assert estimate_work(b"1 |a x y |b z\n-1 |a x\n") == 5 + 2
    assert estimate_work(b"1 |a x y |b z\n", (2,)) == 5 + 25
    assert estimate_work(b"1 |a x y |b z\n", (2, 3)) == 5 + 25 + 125
    assert estimate_work(b"1 3:1 7:2\n\n") == 3  # svmlight: every token
    assert estimate_work(b"") == 0
    assert crosses({"quadratic": ("ab", "cd"), "cubic": ("abc",), "interactions": ("abcd",)}) \
        == (2, 2, 3, 4)  # fmt: skip
    assert crosses({}) == ()


def test_passes_grids_and_sweeps_multiply_the_work():
    assert train_factor({"passes": None, "algo": "gd"}) == 1
    assert train_factor({"passes": 3, "algo": "gd"}) == 3
    assert train_factor({"passes": None, "algo": "cd"}) == 100
    grid = [(0.0, "0"), (1e-5, "1e-5"), (1e-4, "1e-4")]
    assert train_factor({"passes": 2, "algo": "tg", "l1": grid, "l2": grid[:2]}) == 12


@pytest.mark.slow
def test_a_wide_line_crossed_with_itself_is_compiled(tmp_path):
    """-q ff on one 2,800-feature line: 29 KB, but 8 million visits (a minute as plain
    Python, a second compiled)."""
    data = tmp_path / "wide.vw"
    data.write_text(WIDE)
    assert data.stat().st_size <= TINY_INPUT
    assert estimate_work(WIDE.encode(), (2,)) > 900 * TINY_WORK
    assert _compiled(["train", "-q", "ff", "--quiet", str(data), "-f", "m.sl"], tmp_path)
    assert not _compiled(["train", "--quiet", str(data)], tmp_path)  # one pass, no cross
    # from stdin too, and when the crosses come from the model being continued or scored
    assert _compiled(["train", "-q", "ff", "--quiet"], tmp_path, WIDE.encode())
    assert _compiled(["train", "-i", "m.sl", "--quiet", str(data)], tmp_path)
    assert _compiled(["predict", "-i", "m.sl", "--quiet", str(data)], tmp_path)


@pytest.mark.slow
def test_many_passes_or_coordinate_descent_are_compiled(tmp_path):
    data = tmp_path / "small.vw"
    rng = np.random.default_rng(0)
    data.write_text("".join(f"{rng.choice([-1, 1])} |f a{rng.integers(50)} b{rng.integers(50)}\n"
                            for _ in range(300)))  # fmt: skip
    work = estimate_work(data.read_bytes())
    assert work <= TINY_WORK < work * 100
    assert not _compiled(["train", "--quiet", str(data)], tmp_path)
    assert _compiled(["train", "--quiet", "--algo", "cd", "--l1", "1e-3", str(data)], tmp_path)
    assert _compiled(["train", "--quiet", "--passes", "50", str(data)], tmp_path)


def test_the_tiny_path_and_the_compiled_one_agree_on_crosses(tmp_path):
    """Same model either way (the tiny path is the same code, interpreted)."""
    line = "1 |a x y:0.5 |b z\n-1 |a w |b z:2\n" * 20
    models = []
    for jit in ("0", "1"):
        m = tmp_path / f"m{jit}.sl"
        env = dict(os.environ, SL_JIT=jit)
        env.pop("NUMBA_DISABLE_JIT", None)
        proc = subprocess.run([sys.executable, "-m", "streamlearn", "train", "-q", "ab",
                               "--quiet", "-f", str(m)], input=line.encode(), env=env,
                              capture_output=True)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        models.append(m.read_bytes())
    from streamlearn import model as model_io

    a, b = (model_io.load(tmp_path / f"m{j}.sl") for j in ("0", "1"))
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.slots, b.slots)
    assert invoke(["inspect", str(tmp_path / "m0.sl")]).exit_code == 0
