"""The house's rules that import-linter does not see (issue 45): no module takes another
module's private names, and modules and functions stay a size a reader can hold.

The layers and the absence of circles are import-linter's contracts (``pyproject.toml``,
run by ``.ci/run``); this file checks the rest from the source, so it runs with the tests.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "streamlearn"

KERNEL_FAMILIES = ("io", "learners", "system")
"""Packages of numba kernels whose modules share ``@njit`` helpers (``_stride``,
``_label_span``, ``_QuickLoad``, ...): a kernel inlines its sibling's helper, and renaming
one changes the files the shipped compiled kernels are keyed by
(``scripts/build_kernels.py --check``).  Within one such package a private helper may be
shared; across packages, never."""

KERNEL_PRIVATE: set[tuple[str, str]] = set()
"""Private helpers of kernel files taken from outside their package (renaming one changes
the files the shipped kernels are keyed by, so it waits for a rebuild): none since the
session 26 rebuild; keep it so."""

LONG_MODULES: dict[str, int] = {}
"""Modules allowed over :data:`MAX_MODULE` lines, with their ceiling: none since
``io/interactions.py`` (its kernels now ``io/crosses.py``) and ``io/jsonfast.py`` (its
token scanner now ``io/jsonscan.py``) were split at the session 26 rebuild."""

MAX_MODULE = 800
MAX_FUNCTION = 100


def _modules() -> list[tuple[str, ast.Module, int]]:
    out = []
    for p in sorted(PACKAGE.rglob("*.py")):
        if "prebuilt" in p.parts:
            continue
        text = p.read_text(encoding="utf-8")
        out.append((p.relative_to(PACKAGE).as_posix(), ast.parse(text), text.count("\n")))
    return out


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else ""


def test_no_module_imports_another_modules_private_names() -> None:
    bad = []
    for rel, tree, _ in _modules():
        here = "streamlearn." + rel[:-3].replace("/", ".")
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                "streamlearn"
            ):
                continue
            for alias in node.names:
                name = alias.name
                if not name.startswith("_") or name.startswith("__"):
                    continue
                same_family = _package(node.module) == _package(here) in KERNEL_FAMILIES
                if not same_family and (node.module, name) not in KERNEL_PRIVATE:
                    bad.append(f"{rel}:{node.lineno}: from {node.module} import {name}")
    assert not bad, "private names taken across modules:\n" + "\n".join(bad)


def test_modules_stay_readable() -> None:
    long = [f"{rel}: {n} lines" for rel, _, n in _modules()
            if n > LONG_MODULES.get(rel, MAX_MODULE)]  # fmt: skip
    assert not long, "modules over ~800 lines (split along a seam):\n" + "\n".join(long)


def _jitted(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def test_functions_stay_readable() -> None:
    long = []
    for rel, tree, _ in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not _jitted(node):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION:
                    long.append(f"{rel}:{node.lineno} {node.name}: {n} lines")
    assert not long, "functions over 100 lines outside the kernels:\n" + "\n".join(long)
