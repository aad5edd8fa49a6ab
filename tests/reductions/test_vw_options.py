"""VW's options as the reductions declare them (:mod:`streamlearn.reductions.vwoptions`):
each module's ``VW_OPTIONS`` reach ``sl vw``'s table (:mod:`streamlearn.vwargs`) without a
line of the CLI naming them and fill only fields that exist, and reading a command line
loads no kernel (a tiny input then runs without numba, a larger one on the kernels shipped
compiled: a reduction module that imported its kernels at the top would change both)."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
import sys

import pytest

import streamlearn
from streamlearn.config import TrainConfig
from streamlearn.errors import VWUsage
from streamlearn.reductions import VW_OPTIONS, Multiline
from streamlearn.reductions.vwoptions import VWOption, take
from streamlearn.vwargs import OPTIONS, parse_argv, resolve
from streamlearn.vwargs.options import CORE

VALUES = {"csoaa_ldf": "m", "wap_ldf": "m", "bs_type": "vote", "cb_type": "dr", "lrq": "ab2",
          "lrqfa": "abc2", "kernel": "rbf", "search_interpolation": "policy",
          "search_rollin": "ref", "search_rollout": "none", "search_task": "sequence",
          "policy": "constant", "loss_report": "1", "interact": "ab"}
"""A value each option with a value takes ("2" for the others)."""
EXTRA = {"bfgs_mem_given"}  # (--mem, until settle makes it --bfgs's)


@pytest.mark.parametrize("name", sorted(VW_OPTIONS))
def test_each_option_fills_fields_that_exist(name: str) -> None:
    opt = VW_OPTIONS[name]
    assert opt.short is None  # (a reduction's options are long only: vwargs.options.SHORT)
    argv = [f"--{name}"] + ([VALUES.get(name, "2")] if opt.value else [])
    t = parse_argv(argv)
    assert set(t.multiline) <= {f.name for f in dataclasses.fields(Multiline)}
    assert set(t.learn) <= {f.name for f in dataclasses.fields(TrainConfig)} | EXTRA
    assert t.multiline or t.learn


def test_the_table_is_the_core_and_the_reductions() -> None:
    assert OPTIONS == {**CORE, **VW_OPTIONS}
    assert not CORE.keys() & VW_OPTIONS.keys()
    with pytest.raises(ValueError, match="--bag is declared twice"):
        take(VW_OPTIONS, {"bag": VWOption(None, True, lambda t, n, v: None)})


def test_the_cli_declares_no_vw_option() -> None:
    """Adding a reduction's options touches its module: neither the CLI nor the table of
    the options every run has (``vwargs/options.py: CORE``, disjoint from them above)."""
    cli = pathlib.Path(streamlearn.__file__).parent / "cli"
    assert not [p.name for p in cli.glob("*.py") if "VWOption(" in p.read_text()]


def test_each_module_settles_its_options() -> None:
    t = parse_argv(["--bag", "3", "--oaa", "3", "--link", "logistic"])
    resolve(t)  # the explorer's note first, then --oaa's (the registry's order)
    assert t.notes == ["--bag: an option of --cb_explore/--cb_explore_adf/--cbify, ignored "
                       "without them (as VW)",
                       "--link logistic: a --oaa model predicts classes; the link changes "
                       "nothing (as in VW)"]  # fmt: skip
    assert "explore" not in t.multiline and t.link == "identity"
    with pytest.raises(VWUsage, match="one explorer at a time"):
        parse_argv(["--cb_explore_adf", "--bag", "3", "--cover", "2"])


SCRIPT = """
import sys
from streamlearn.reductions import REDUCTIONS, Multiline
from streamlearn.vwargs import parse_argv, resolve
t = parse_argv(sys.argv[1:])
resolve(t)
print("streamlearn.system.jit" in sys.modules)
"""


@pytest.mark.parametrize("argv", [
    "-d x.vw -q ab --passes 2 -c",
    "--oaa 3 --passes 2", "--bfgs --mem 5 --passes 2",  # (--oaa with --bfgs: refused as read)
    "--cb_explore_adf --epsilon 0.1 -q UA",
    "--csoaa_ldf mc --csoaa_rank",
    "--cb_adf --cb_type dr --rank_all",
    "--ccb_explore_adf --slates --all_slots_loss",
    "--cb_explore_adf --softmax --lambda 2 --cb_force_legacy --eval",
])  # fmt: skip
def test_reading_a_line_loads_no_kernel(argv: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_DISABLE_JIT", "SL_JIT")}
    out = subprocess.run([sys.executable, "-c", SCRIPT, *argv.split()], capture_output=True,
                         env=env, text=True, timeout=120, check=True).stdout  # fmt: skip
    assert out.split()[-1] == "False"


CORE_VALUES = ("2", "0.5", "ab", "squared", "logistic", "stdout", "x.out", "compat", "all")
"""Values to try for each option of CORE's (the first one the option takes is used)."""


def _core_line(name: str) -> list[str] | None:
    """A command line of ``--name`` (with a value it takes) that reads and resolves."""
    opt = CORE[name]
    for value in CORE_VALUES if opt.value else (None,):
        argv = ["-d", "x.vw", f"--{name}", *([value] if value is not None else [])]
        try:
            resolve(parse_argv(argv))
        except VWUsage:
            continue
        return argv
    return None


@pytest.mark.parametrize("name", sorted(CORE))
def test_a_line_of_core_options_has_nothing_for_the_reductions_to_settle(name: str) -> None:
    """``resolve`` runs the reductions' ``settle`` only when a line names one of their
    options (a plain line then never imports them): for a line of options every run has,
    each option alone and with ``-q``, ``--passes`` and ``-c``, the translation is the same
    with and without them."""
    argv = _core_line(name)
    if argv is None:
        pytest.skip(f"--{name} takes none of {CORE_VALUES}")
    for line in (argv, [*argv, "-q", "ab", "--passes", "2", "-c", "--loss_function", "hinge"]):
        try:
            plain = parse_argv(line)
        except VWUsage:
            continue  # (--loss_function given twice, ...)
        assert not plain.reductions
        settled = dataclasses.replace(plain, learn=dict(plain.learn), notes=list(plain.notes))
        settled.reductions = True
        try:
            resolve(plain)
        except VWUsage as e:
            with pytest.raises(VWUsage, match=re.escape(e.message)):
                resolve(settled)
            continue
        resolve(settled)
        settled.reductions = False
        assert settled == plain


def test_a_plain_line_imports_no_reduction() -> None:
    code = ("import sys; from streamlearn.vwargs import parse_argv, resolve; "
            "resolve(parse_argv(['-d', 'x.vw', '-q', 'ab', '--passes', '2', '-c', '-p', 'p']));"
            "print(sorted(m for m in sys.modules if m.startswith('streamlearn.reductions.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    assert out.split("\n")[0] == "['streamlearn.reductions.vwoptions']"
    assert parse_argv(["--oaa", "3"]).reductions
