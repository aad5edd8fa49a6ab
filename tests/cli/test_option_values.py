"""Option values, hostile or odd: one line and a documented exit code, never a traceback
(issue 30); the interpreted path for tiny inputs ends as the compiled one does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.marks import slow_except
from tests.unix import invoke, one_line_error, text_data

# option -> the options it needs beside it
OPTIONS = {
    "-b": [], "-l": [], "--power-t": [], "--initial-t": [], "--l1": [], "--l2": [],
    "--theta": ["--algo", "tg"], "--period": ["--algo", "tg"],
    "--top-k": ["--algo", "l0"], "--minibatch": ["--algo", "sgd"],
    "--p": ["--algo", "smidas"], "--norm-refresh": ["--algo", "smidas"],
    "--ftrl-alpha": ["--algo", "ftrl"], "--ftrl-beta": ["--algo", "ftrl"],
    "--min-prediction": [], "--max-prediction": [], "--tol": ["--algo", "cd"],
    "--seed": ["--algo", "scd"], "--max-memory": ["--algo", "cd"],
    "--holdout-period": ["--passes", "2"], "--early-terminate": ["--passes", "2"],
    "--max-line-bytes": [], "--lock-timeout": [], "--passes": [],
    "--max-crosses": ["-q", "ab"],
}  # fmt: skip
HOSTILE = ["inf", "-inf", "nan", "1e400", "-1e400", "1e308", "-1e308", "1e-400", "-1", "0",
           "-0", "1", "2", "0.5", "99999999999999999999", "-99999999999999999999",
           "9223372036854775808", "abc", "", " ", "1,2", "1,,2", "0x10", "1e", "4G", "1k",
           "3.5e38", "1e39", "-1e-300", "NaN,1"]  # fmt: skip
VALUES = st.sampled_from(HOSTILE) | st.floats(allow_nan=False).map(repr) | st.integers(
    -(2**70), 2**70).map(str)  # fmt: skip
CODES = {0, 2, 6, 8, 10}
"""Runs with odd options: success, a usage error, diverged, the memory asked for is too
much, no examples (``--max-line-bytes 1`` or ``--max-crosses 1`` skip every line)."""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("options") / "d.vw"
    path.write_text(text_data(400))
    return path


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(choice=st.lists(st.tuples(st.sampled_from(sorted(OPTIONS)), VALUES), min_size=1,
                       max_size=3, unique_by=lambda t: t[0]))  # fmt: skip
def test_any_option_value_is_one_line_and_a_documented_code(data, choice):
    args = ["train", str(data), "--quiet"]
    for option, value in choice:
        if option == "--passes" and value.lstrip("-").isdigit() and int(value) > 3:
            value = "3"  # many passes over the data take as long as they take
        args += [*OPTIONS[option], f"{option}={value}"]
    try:
        r = invoke(args)  # a traceback fails the test
    except SystemExit as e:  # click's own exit on a usage error under CliRunner
        assert e.code in CODES
        return
    assert r.exit_code in CODES, (args, r.exit_code, r.output)
    if r.exit_code:
        errors = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
        assert len(errors) == 1, (args, r.output)


ISSUE = [
    ["--max-memory", "inf", "--algo", "cd"],
    ["--max-memory", "1e400", "--algo", "cd"],
    ["--algo", "scd", "--seed", "-1"],
    ["--algo", "smidas", "--p", "1e308"],
    ["--max-line-bytes", "0"],
    ["--max-line-bytes", "nan"],
    ["--algo", "ftrl", "--ftrl-alpha", "1.3541327108955347e-194"],  # 0 in float32
]


@pytest.mark.parametrize("args", ISSUE, ids=[" ".join(a) for a in ISSUE])
@pytest.mark.parametrize("jit", slow_except(["0", "1"], 0))
def test_the_issues_option_values_are_usage_errors(tmp_path, args, jit):
    (tmp_path / "d.vw").write_text("1 |f a\n-1 |f b\n")
    env = dict(os.environ, SL_JIT=jit)
    env.pop("NUMBA_DISABLE_JIT", None)
    r = subprocess.run([sys.executable, "-m", "streamlearn", "train", "d.vw", *args],
                       cwd=tmp_path, env=env, capture_output=True, timeout=120)  # fmt: skip
    assert r.returncode == 2, r.stderr
    one_line_error(r.stderr)


@pytest.mark.parametrize(
    ("text", "args"),
    slow_except(
        [("1 |f a:1e308\n1 |f a:1e308\n-1 |f a:-1e308 b\n", ["--algo", "smidas"]),
         ("1 |f a:1e308 b:1e308\n", ["--algo", "smidas", "--p", "1000"]),
         ("1 |f a\n-1 |f b\n" * 3, ["--algo", "smidas", "--p", "1000"]),
         ("1e308 |f a\n-1 |f a\n", ["--algo", "sgd"]),
         ("1 |f a:1e300\n", ["-l", "1e308"]),
         ("1 |f a:1e300\n", ["--algo", "tg", "--l1", "3e38"]),
         # a gradient whose square underflows, no beta, no l2: ftrl divides by 0 (inf, as C)
         ("1 |f a:1e-30\n-1 |f a:1e-30\n", ["--algo", "ftrl", "--ftrl-beta", "0"])],
        0, 6, unpack=True),
)  # fmt: skip
def test_tiny_inputs_end_as_compiled_runs_do(tmp_path, text, args):
    """Interpreted kernels (tiny inputs) give the compiled kernels' exit, output and model."""
    (tmp_path / "d.vw").write_text(text)
    results = []
    for jit in ("1", "0"):
        env = dict(os.environ, SL_JIT=jit)
        env.pop("NUMBA_DISABLE_JIT", None)
        r = subprocess.run([sys.executable, "-m", "streamlearn", "train", "d.vw", "--quiet",
                            "-f", f"m{jit}.sl", "-p", "-", *args], cwd=tmp_path, env=env,
                           capture_output=True, timeout=120)  # fmt: skip
        assert b"Traceback" not in r.stderr and b"Warning" not in r.stderr, r.stderr
        model = (tmp_path / f"m{jit}.sl").read_bytes() if r.returncode == 0 else None
        results.append((r.returncode, r.stdout, r.stderr, model))
    assert results[0][:3] == results[1][:3]
    if results[0][3] is not None:
        from streamlearn import model as model_io

        a, b = (model_io.decode(m) for m in (results[0][3], results[1][3]))
        assert a.slots.tolist() == b.slots.tolist()
        assert a.weights.tobytes() == b.weights.tobytes()
