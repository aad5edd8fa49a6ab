"""The reductions' table (:mod:`streamlearn.reductions.table`): what a VW command line reads
instead of the whole registry.  It names each single-line reduction's options, so that a
line imports only the modules of the reductions it names, and settles a line as the whole
registry does (every pair of options, below)."""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import pkgutil
import subprocess
import sys
from unittest import mock

import pytest

import streamlearn.reductions as package
from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions import registry, table
from streamlearn.vwargs import OPTIONS, parse_argv, resolve
from streamlearn.vwargs.options import CORE, option
from tests.reductions.test_vw_options import VALUES


def _short(module) -> str:  # noqa: ANN001
    return module.__name__.rsplit(".", 1)[-1]


def test_the_table_names_each_single_line_reductions_options() -> None:
    """Edit ``SINGLE_LINE_OPTIONS`` when a single-line reduction's options change (the
    assertion prints what it should say)."""
    expected = {_short(m): tuple(sorted(m.VW_OPTIONS)) for m in registry._DECLARING
                if m in set(registry.SINGLE_LINE.values())}  # fmt: skip
    assert table.SINGLE_LINE_OPTIONS == expected


def test_every_module_that_declares_options_is_in_the_order() -> None:
    declaring = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"streamlearn.reductions.{info.name}")
        if isinstance(getattr(module, "VW_OPTIONS", None), dict) and info.name not in (
            "registry", "table",
        ):  # fmt: skip
            declaring.add(info.name)
    assert declaring == set(table.ORDER)
    assert len(table.ORDER) == len(set(table.ORDER))


def test_each_option_is_found_as_the_whole_table_has_it() -> None:
    assert set(OPTIONS) == set(CORE) | set(table.VW_OPTIONS) | set(table.OWNER)
    for name, opt in OPTIONS.items():
        assert option(name) is opt, name


def _words(name: str) -> list[str]:
    opt = OPTIONS[name]
    return [f"--{name}"] + ([VALUES.get(name, "2")] if opt.value else [])


_CORE_SAMPLE = {"binary": ["--binary"], "link": ["--link", "logistic"], "q": ["-q", "ab"],
                "loss_function": ["--loss_function", "logistic"], "passes": ["--passes", "2"],
                "t": ["-t"], "i": ["-i", "/nonexistent/m.vw"], "l": ["-l", "0"]}  # fmt: skip


def _outcome(argv: list[str], whole: bool) -> str:
    """The translation of ``argv`` resolved (or its refusal): with ``whole``, every
    module's settle, as the registry lists them."""
    try:
        t = parse_argv(list(argv))
        if whole:
            with mock.patch.object(table, "SETTLE", registry.SETTLE):
                resolve(t)
        else:
            resolve(t)
    except (VWUsage, UsageError) as e:
        return f"refused: {e}"
    out = dataclasses.asdict(t)
    out.pop("single_line")
    return repr(out)


def test_every_pair_of_options_settles_as_with_the_whole_registry() -> None:
    """A line that names no single-line reduction is settled without their modules: a
    pair of options tells whether any single-line module's settle acts on a line that
    does not name it (each option alone and every pair of two, with a sample of the
    options every run has)."""
    lines = {name: _words(name) for name in [*table.VW_OPTIONS, *table.OWNER]}
    lines.update(_CORE_SAMPLE)
    names = sorted(lines)
    differ = []
    for a, b in itertools.combinations_with_replacement(names, 2):
        argv = lines[a] + (lines[b] if a != b else [])
        if _outcome(argv, True) != _outcome(argv, False):
            differ.append(argv)
    assert not differ, differ[:10]
    assert len(names) > 250


def test_a_line_imports_the_single_line_reductions_it_names_only() -> None:
    script = """
import sys
from streamlearn.vwargs import parse_argv, resolve
t = parse_argv(sys.argv[1:])
resolve(t)
print(sorted(m.rsplit(".", 1)[-1] for m in sys.modules
             if m.startswith("streamlearn.reductions.") and m.rsplit(".", 1)[-1]
             in {"registry", "lrq", "nn", "ksvm", "active", "recall_tree"}))
"""
    def imported(*argv: str) -> str:
        r = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True,
                           text=True, check=True)  # fmt: skip
        return r.stdout.strip()

    assert imported("--dsjson", "--cb_explore_adf", "--epsilon", "0.1") == "[]"
    assert imported("--oaa", "3") == "[]"
    assert "registry" in imported("--lrq", "ab2")
    assert "registry" in imported("--nn", "3")


@pytest.mark.parametrize("name", ["REDUCTIONS", "Multiline", "Reduction", "reduction_of"])
def test_the_registry_and_the_table_are_one(name: str) -> None:
    assert getattr(package, name) is getattr(registry, name) is getattr(table, name)
