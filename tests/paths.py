"""Where the repository's files are, for tests in any folder of ``tests/``."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The repository's root (``data/``, ``scripts/``, ``streamlearn/``)."""
TESTS = ROOT / "tests"
