"""Where the repository's files are, for tests in any folder of ``tests/``."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
"""The repository's root (``data/``, ``scripts/``, ``streamlearn/``)."""
TESTS = ROOT / "tests"


def script(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported as module ``name`` (registered in ``sys.modules``,
    where dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module
