"""The README and docs/*.md run as written.

Every fenced ```sh and ```python block of README.md and docs/*.md runs, in
order, in a scratch directory per page holding a copy of the repository's
``data/`` (with the files ``python scripts/tour_data.py`` writes, as the
README's tour says) and ``scripts/``, with ``sl`` and ``streamlearn`` on the
PATH; shell blocks under bash with ``-e -o pipefail``.  A block is not run
when

* the line before it says ``<!-- not run by tests/test_docs.py: REASON -->``
  (installing packages, the CI set-up): the reason is the skip's;
* it needs an optional extra that is missing (matplotlib for ``sl plot``,
  Dask for ``--dask``, scikit-learn, scipy): skipped, naming it.

Fences with another or no language (output, grammars) are not code.
Indented blocks are the commands that reproduce the figures of
docs/benchmarks.md and docs/reproductions.md (minutes to an hour each) and
cluster set-ups: they are not run, but the scripts they name must exist and
know every option they pass, and ``sl`` must know every option of an ``sl``
line (:func:`test_reproduction_commands_name_real_scripts_and_options`).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"<!-- not run by tests/test_docs\.py: (.+?) -->")
RUN = ("sh", "python")

EXTRAS = [  # (pattern in a block, module it needs, the extra that brings it)
    (re.compile(r"\bsl plot\b|matplotlib"), "matplotlib", "plot"),
    (re.compile(r"--dask\b|\bdask="), "distributed", "dask"),
    (re.compile(r"\bsklearn\b"), "sklearn", "sklearn"),
    (re.compile(r"\bscipy\b"), "scipy", "test"),
    (re.compile(r"vowpalwabbit"), "vowpalwabbit", "bench"),
    (re.compile(r"\bpandas\b|dftovw"), "pandas", "dftovw"),
]


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def fenced_blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        i += 1
        body = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        i += 1
        before = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
        marker = MARKER.search(before)
        out.append(Block(page, start + 1, lang, "\n".join(body) + "\n",
                         marker.group(1) if marker else None))  # fmt: skip
    return out


BLOCKS = [b for page in PAGES for b in fenced_blocks(page) if b.lang in RUN]


def test_every_page_has_its_blocks_found():
    assert any(b.page.name == "README.md" and "tour_data.py" in b.code for b in BLOCKS)
    for b in BLOCKS:
        assert b.not_run or "pip install" not in b.code, f"{b.id} installs packages: mark it"


@pytest.fixture(scope="module")
def tour(tmp_path_factory) -> Path:
    """data/ with the tour's files, made once."""
    data = tmp_path_factory.mktemp("tour") / "data"
    shutil.copytree(ROOT / "data", data)
    subprocess.run([sys.executable, str(ROOT / "scripts" / "tour_data.py"), "-o", str(data)],
                   check=True, capture_output=True)  # fmt: skip
    return data


_SCRATCH: dict[Path, Path] = {}


def _scratch(page: Path, tour: Path, factory) -> Path:  # noqa: ANN001
    """The page's directory: data/, scripts/, bin/ with sl and streamlearn; a HOME."""
    if page not in _SCRATCH:
        d = factory.mktemp(page.stem.lower())
        shutil.copytree(tour, d / "data")
        shutil.copytree(ROOT / "scripts", d / "scripts")
        (d / "home").mkdir()
        bin_dir = d / "bin"
        bin_dir.mkdir()
        as_streamlearn = ("-c 'import sys; sys.argv[0] = \"streamlearn\"; "
                          "from streamlearn.cli import main; main()'")
        for name, run in (("sl", "-m streamlearn"), ("streamlearn", as_streamlearn)):
            script = bin_dir / name
            script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {run} \"$@\"\n")
            script.chmod(0o755)
        if page.name == "cron.md":  # the nightly job's model, log and report directories
            for sub in ("models", "logs", "reports"):
                (d / sub).mkdir()
            subprocess.run([str(bin_dir / "sl"), "train", "--quiet", "data/sample.vw", "-f",
                            "models/ctr.sl"], cwd=d, env=_env(d), check=True)  # fmt: skip
            import datetime

            day = datetime.date.today().isoformat()
            shutil.copy(tour / "today.vw.gz", d / "logs" / f"{day}.vw.gz")
        _SCRATCH[page] = d
    return _SCRATCH[page]


def _env(d: Path) -> dict:
    env = dict(os.environ, PATH=f"{d / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=str(ROOT), HOME=str(d / "home"), MPLBACKEND="Agg",
               MODELS=str(d / "models"), LOGS=str(d / "logs"),
               REPORTS=str(d / "reports"))  # fmt: skip
    for k in ("NUMBA_DISABLE_JIT", "SL_JIT"):
        env.pop(k, None)
    return env


def _missing(block: Block) -> str | None:
    for pattern, module, extra in EXTRAS:
        if pattern.search(block.code) and importlib.util.find_spec(module) is None:
            return f"needs {module} (pip install -e '.[{extra}]')"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block_runs_as_written(block, tour, tmp_path_factory):
    if block.not_run:
        pytest.skip(block.not_run)
    missing = _missing(block)
    if missing:
        pytest.skip(missing)
    d = _scratch(block.page, tour, tmp_path_factory)
    if block.lang == "sh":
        cmd = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    else:
        cmd = [sys.executable, "-c", block.code]
    r = subprocess.run(cmd, cwd=d, env=_env(d), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{block.id} failed ({r.returncode}):\n{r.stderr[-3000:]}"
    assert "Traceback" not in r.stderr, f"{block.id}:\n{r.stderr[-3000:]}"


@pytest.mark.slow
def test_the_cron_job_succeeds_with_its_directories(tour, tmp_path_factory):
    """The nightly script prints nothing when it learned (its case' 0) branch)."""
    page = ROOT / "docs" / "cron.md"
    (block,) = [b for b in fenced_blocks(page) if b.lang == "sh"]
    d = _scratch(page, tour, tmp_path_factory)
    r = subprocess.run(["sh", "-c", block.code], cwd=d, env=_env(d), capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    assert len(list((d / "reports").glob("ctr-*.json"))) == 1


# ---------------------------------------------------------------------------
# indented blocks: reproduction commands and cluster set-ups


def indented_commands() -> list[tuple[str, list[str]]]:
    out = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        fenced = False
        for n, line in enumerate(lines, 1):
            if line.startswith("```"):
                fenced = not fenced
            if fenced or not line.startswith("    ") or line.lstrip().startswith(("|", "-")):
                continue
            if not line.strip().startswith(("sl ", "python scripts/")):
                continue
            text = line.split("#", 1)[0].strip().rstrip("\\").strip()
            while text and lines[n - 1].rstrip().endswith("\\") and n < len(lines):
                n += 1
                text += " " + lines[n - 1].split("#", 1)[0].strip().rstrip("\\").strip()
            words = shlex.split(text) if text else []
            if words[:2] and (words[0] == "sl" or words[:2][0] == "python" and
                              len(words) > 1 and words[1].startswith("scripts/")):  # fmt: skip
                out.append((f"{page.relative_to(ROOT)}:{n}", words))
    return out


def test_reproduction_commands_name_real_scripts_and_options():
    from click.testing import CliRunner

    from streamlearn.cli import cli

    commands = indented_commands()
    assert len(commands) >= 20
    for where, words in commands:
        own = words[: words.index("--")] if "--" in words else words  # after --: a command's
        options = [w.split("=")[0] for w in own if w.startswith("--")]
        if words[0] == "sl":
            helptext = CliRunner().invoke(cli, [words[1], "-h"]).output
            known = set(re.findall(r"--[\w-]+", helptext)) | {"-f", "-p", "-i"}
            assert set(options) <= known, f"{where}: sl {words[1]} has no {set(options) - known}"
            continue
        script = ROOT / words[1]
        assert script.is_file(), f"{where}: {words[1]} does not exist"
        source = script.read_text(encoding="utf-8")
        for option in options:
            assert f'"{option}"' in source, f"{where}: {words[1]} has no option {option}"
