"""Helpers for tests that run ``sl`` as a real process (pipes, FIFOs, signals, descriptors)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SL = [sys.executable, "-m", "streamlearn"]


def invoke(args: list[str], input: str | None = None):
    """``sl ARGS`` in this process, through click's CliRunner."""
    from click.testing import CliRunner

    from streamlearn.cli import cli

    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


def invoke_in(cwd, args: list[str]):  # noqa: ANN001, ANN201
    """:func:`invoke` with ``cwd`` as the working directory (relative paths are its)."""
    here = os.getcwd()
    os.chdir(cwd)
    try:
        return invoke(args)
    finally:
        os.chdir(here)


def text_data(n: int = 1500, seed: int = 0) -> str:
    """VW lines (over 32 KiB for n >= 1000, so runs use the compiled kernels)."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        idx, val = rng.integers(0, 300, 6), rng.random(6)
        feats = " ".join(f"f{j}:{v:.3f}" for j, v in zip(idx, val, strict=True))
        lines.append(f"{1 if rng.random() < 0.5 else -1} 'r{i} |a {feats} |b w{i % 13}")
    return "\n".join(lines) + "\n"


def env(tmp_path: Path, **extra: str) -> dict:
    """The environment of a child ``sl``: its own TMPDIR (to see what it leaves there)."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir(exist_ok=True)
    e = dict(os.environ)
    e.pop("NUMBA_DISABLE_JIT", None)
    e["TMPDIR"] = str(tmp)
    e.update(extra)
    return e


def sl(args: list[str], tmp_path: Path, shell: bool = False, **kw) -> subprocess.CompletedProcess:
    """Run ``sl ARGS`` (or, with ``shell``, a bash command line where ``SL`` is the program)."""
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 120)
    if shell:
        prog = " ".join(SL)
        return subprocess.run(
            ["bash", "-c", args[0].replace("SL ", prog + " ")],
            env=env(tmp_path),
            cwd=tmp_path,
            **kw,
        )
    return subprocess.run([*SL, *args], env=env(tmp_path), cwd=tmp_path, **kw)


VW_MODULE = ["vowpalwabbit"]
"""VW's command line through its Python package (``python -m vowpalwabbit``)."""
SL_VW = ["streamlearn", "vw"]
"""``sl vw`` as a module."""


def run_module(prog: list[str], args: list[str], cwd,  # noqa: ANN001
               timeout: float = 300) -> subprocess.CompletedProcess:  # fmt: skip
    """``python -m PROG ARGS`` in ``cwd`` (:data:`VW_MODULE` or :data:`SL_VW`), which must
    exit 0; its output."""
    r = subprocess.run([sys.executable, "-m", *prog, *args], cwd=cwd, capture_output=True,
                       text=True, timeout=timeout)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r


def beside_vw(file: str, args: list[str], cwd) -> tuple[str, str]:  # noqa: ANN001
    """VW's and ``sl vw``'s run of ``-d FILE ARGS`` in ``cwd``, each writing ``-p``, ``-f``
    and ``--readable_model`` as ``{vw,sl}.p``, ``.m``, ``.txt``: (VW's stderr as sl's would
    read, its file names and cache file sl's; sl's stderr)."""
    v = run_module(VW_MODULE, ["-d", file, *args, "-p", "vw.p", "-f", "vw.m",
                               "--readable_model", "vw.txt"], cwd)  # fmt: skip
    s = run_module(SL_VW, ["-d", file, *args, "-p", "sl.p", "-f", "sl.m",
                           "--readable_model", "sl.txt"], cwd)  # fmt: skip
    vw_err = v.stderr.replace("vw.p", "sl.p").replace("vw.m", "sl.m")
    if "-c" in args:  # (sl's cache is its own file, beside VW's name)
        vw_err = vw_err.replace(f"{file}.cache\n", f"{file}.cache.sl\n")
    return vw_err, s.stderr


def scored_both_ways(data: str, cwd) -> dict:  # noqa: ANN001
    """``-t -p`` of ``vw.m`` and ``sl.m`` in ``cwd`` by VW and by ``sl vw``: each of the four
    predictions' text, by (program, model)."""
    out = {}
    for prog, name in ((VW_MODULE, "vw"), (SL_VW, "sl")):
        for model in ("vw", "sl"):
            run_module(prog, ["-d", data, "-t", "-i", f"{model}.m", "-p", f"{name}-{model}.p"],
                       cwd)  # fmt: skip
            out[name, model] = (Path(cwd) / f"{name}-{model}.p").read_text()
    return out


def same_as_vw(file: str, args: list[str], cwd: Path, audit: int = 0) -> None:
    """``sl vw -d FILE ARGS`` in ``cwd`` as VW's run of it: stderr, ``-p``, the readable model,
    the models each program writes scored by both (:func:`beside_vw`,
    :func:`scored_both_ways`), and with ``audit`` the ``--audit`` of the first ``audit``
    examples (VW's warnings on standard output too)."""
    vw_err, sl_err = beside_vw(file, args, cwd)
    assert sl_err == vw_err
    assert (cwd / "sl.p").read_bytes() == (cwd / "vw.p").read_bytes()
    assert (cwd / "sl.txt").read_text() == (cwd / "vw.txt").read_text()
    assert len(set(scored_both_ways(file, cwd).values())) == 1
    if audit:
        shown = [run_module(prog, ["-d", file, *args, "--audit", "--examples", str(audit)],
                            cwd).stdout for prog in (VW_MODULE, SL_VW)]  # fmt: skip
        assert shown[1] == shown[0]


def leftovers(tmp_path: Path) -> list[str]:
    """Temporary files and caches an ``sl`` run left in ``tmp_path`` or its TMPDIR."""
    out = [p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    tmp = tmp_path / "tmpdir"
    if tmp.exists():
        out += [p.name for p in tmp.iterdir()]
    return out


def one_line_error(stderr: bytes | str) -> None:
    """An environmental failure: a message, never a traceback."""
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, text


def refused(args: list[str], cwd, said: str) -> None:  # noqa: ANN001
    """``sl vw ARGS`` in ``cwd`` exits 2 with one line that says ``said``."""
    r = subprocess.run([sys.executable, "-m", "streamlearn", "vw", *args], cwd=cwd,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2 and said in r.stderr, r.stderr
    one_line_error(r.stderr)


def default_signals() -> None:
    """``preexec_fn`` for a child that is sent SIGINT, SIGTERM or SIGHUP: their default
    actions, as under a terminal.  A test run started with ``nohup`` or as a background
    job passes them on ignored, and sl then rightly keeps ignoring them."""
    import signal

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
