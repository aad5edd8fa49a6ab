"""Every path any command writes, named as something it must not destroy.

The cases are generated from the commands' own option tables: every path option of
``sl train``, ``sl predict``, ``sl serve`` and ``sl plot`` that is not one of the inputs
below (click's parameters), and every option of ``sl vw`` whose translation writes a file
(VW's option table, :data:`streamlearn.cli.vw.OPTIONS`).  A new output option is
covered here without a test of its own; a new *input* path option must be named in
:data:`INPUTS` (or :data:`VW_INPUTS`), or it is tested as an output and fails.

Each output is named as: the input data (a server's: the served model), a symlink to it,
the initial model, another
output of the same command, a directory, and a FIFO (read by a thread).  Whatever the
command (plain or bandit, a run or a server), the run is refused with exit 2 before
any work and nothing in the directory changes -- except the FIFO, which is written
through and stays a FIFO, and the initial model named by the final model (a model
continued in place).
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import click
import pytest

from streamlearn.cli import cli
from tests.unix import env, invoke, text_data

INPUTS = {"files", "data", "model_path", "initial_model", "reports"}
"""The path parameters of sl's click commands that are read, not written."""
VW_INPUTS = {"data", "initial_regressor", "feature_mask", "dictionary", "dictionary_path"}
"""sl vw's path options that are read (VW's names)."""
VW_WRITERS = ("_output", "_predictions", "_raw", "_report", "_cache_file")
"""How sl vw's option table says an option writes a file (its translation's function)."""
VW_SERVER = {"pid_file", "port_file"}

PLAIN = text_data(40)
BANDIT = "".join(f"shared |u a{i % 3}\n0:{i % 2}:0.5 |a x\n|a y{i % 4}\n\n" for i in range(12))
SCENARIOS = ("input", "symlink", "model", "other", "directory", "fifo")


def _path_params(command: click.Command) -> list[click.Parameter]:
    return [p for p in command.params
            if isinstance(p.type, click.Path) or getattr(p, "metavar", None) in ("PATH", "FILE")]


def _outputs(name: str) -> list[str]:
    """The output options of ``sl NAME`` (their longest spelling)."""
    command = cli.get_command(click.Context(cli), name)
    return [max(p.opts, key=len) for p in _path_params(command) if p.name not in INPUTS]


def _vw_outputs() -> list[str]:
    from streamlearn.vwargs import OPTIONS

    return [f"--{n}" for n, o in OPTIONS.items()
            if o.value and n not in VW_INPUTS and n not in VW_SERVER
            and getattr(o.apply, "__qualname__", "").startswith(VW_WRITERS)]  # fmt: skip


# (command, the command line before the output option, its outputs, is a server)
def _commands() -> list[tuple[str, list[str], list[str], bool]]:
    vw = _vw_outputs()
    serve = _outputs("serve")
    return [
        ("train", ["train", "--quiet", "{data}", "-i", "{model}"], _outputs("train"), False),
        ("train --cb-adf", ["train", "--quiet", "--cb-adf", "{bandit}", "-i", "{cbmodel}"],
         _outputs("train"), False),
        ("predict", ["predict", "--quiet", "-i", "{model}", "{data}"], _outputs("predict"), False),
        ("plot", ["plot", "{report}"], _outputs("plot"), False),
        ("vw", ["vw", "--quiet", "-d", "{data}", "-i", "{model}"], vw, False),
        ("vw --cb_explore_adf", ["vw", "--quiet", "--cb_explore_adf", "-d", "{bandit}", "-i",
                                 "{cbmodel}"], vw, False),
        ("serve", ["serve", "-i", "{model}", "--port", "0", "--learn"], serve, True),
        ("vw --daemon", ["vw", "--daemon", "--port", "0", "--quiet", "-i", "{model}"],
         ["--pid_file", "--port_file", "-f"], True),
    ]


def _cases():
    for name, base, outs, server in _commands():
        for opt in outs:
            for scenario in SCENARIOS:
                if scenario == "fifo" and (server or opt in ("--cache", "--cache_file")):
                    continue  # (a server never ends; a cache is read back: refused, tested)
                if name == "plot" and scenario == "model":
                    continue
                if name == "plot" and opt.endswith("output") and scenario == "input":
                    scenario = "report"
                # (a server's case starts a process: the quick set names its input only)
                yield pytest.param(name, base, opt, outs, server, scenario,
                                   id=f"{name}:{opt}:{scenario}",
                                   marks=pytest.mark.slow if server and scenario != "input" else ())


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The data and models every case starts from (made once)."""
    d = tmp_path_factory.mktemp("made")
    (d / "d.vw").write_text(PLAIN)
    (d / "cb.txt").write_text(BANDIT)
    for args in (["train", "--quiet", str(d / "d.vw"), "-f", str(d / "m.sl"), "--report",
                  str(d / "r.json")],
                 ["train", "--quiet", "--cb-adf", str(d / "cb.txt"), "-f", str(d / "cb.sl")]):
        assert invoke(args).exit_code == 0
    return {p.name: p.read_bytes() for p in d.iterdir()}


def _snapshot(root: Path) -> dict:
    out = {}
    for p in sorted(root.rglob("*")):
        st = os.lstat(p)
        if stat.S_ISREG(st.st_mode):
            what = hashlib.sha256(p.read_bytes()).hexdigest()
        elif stat.S_ISLNK(st.st_mode):
            what = "-> " + os.readlink(p)
        else:
            what = stat.S_IFMT(st.st_mode)
        out[str(p.relative_to(root))] = what
    return out


def _drain(path: Path, stop: threading.Event) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while not stop.is_set():
            try:
                if not os.read(fd, 1 << 16):
                    stop.wait(0.01)
            except BlockingIOError:
                stop.wait(0.01)
    finally:
        os.close(fd)


@pytest.mark.parametrize(("name", "base", "opt", "outs", "server", "scenario"), list(_cases()))
def test_an_output_never_destroys_what_it_names(tmp_path, made, name, base, opt, outs, server,
                                                scenario):  # fmt: skip
    for f, data in made.items():
        (tmp_path / f).write_bytes(data)
    paths = {"data": tmp_path / "d.vw", "bandit": tmp_path / "cb.txt", "model": tmp_path / "m.sl",
             "cbmodel": tmp_path / "cb.sl", "report": tmp_path / "r.json"}
    args = [a.format(**{k: str(v) for k, v in paths.items()}) for a in base]
    model = paths["cbmodel"] if "{cbmodel}" in base else paths["model"]
    # (what a command reads: its data; a server's, the model it serves)
    read = model if server else paths["bandit"] if "{bandit}" in base else paths["data"]
    final = opt in ("-f", "--final-model", "--final_regressor")
    if server and final and scenario in ("input", "symlink"):
        pytest.skip("the final model may name the served model: learned in place")
    extra: list[str] = []
    if scenario in ("input", "report"):
        target = paths["report"] if scenario == "report" else read
    elif scenario == "symlink":
        target = tmp_path / "link"
        target.symlink_to(read.name)
    elif scenario == "model":
        if final:
            pytest.skip("the final model may name the initial model: continued in place")
        target = model
    elif scenario == "other":
        other = next((o for o in outs if o != opt and o not in ("--cache", "--cache_file")), None)
        if other is None:
            pytest.skip("one output only")
        target = tmp_path / "same"
        extra = [other, str(target)]
    elif scenario == "directory":
        target = tmp_path / "dir"
        target.mkdir()
    else:
        target = tmp_path / "fifo"
        os.mkfifo(target)
    child_env = env(tmp_path)  # (its TMPDIR, made before the snapshot: what is left there shows)
    before = _snapshot(tmp_path)
    argv = [*args, opt, str(target), *extra]
    stop = threading.Event()
    reader = None
    if scenario == "fifo":
        reader = threading.Thread(target=_drain, args=(target, stop), daemon=True)
        reader.start()
    try:
        if server:
            try:
                r = subprocess.run([sys.executable, "-m", "streamlearn", *argv],
                                   env=child_env, capture_output=True, timeout=20)
            except subprocess.TimeoutExpired:
                pytest.fail(f"sl {' '.join(argv)}: started serving (not refused)")
            code, err = r.returncode, r.stderr.decode()
        else:
            res = invoke(argv)
            code, err = res.exit_code, res.output
    finally:
        stop.set()
        if reader is not None:
            reader.join(5)
    after = _snapshot(tmp_path)
    if scenario == "fifo":
        assert code in (0, 2), err
        assert stat.S_ISFIFO(os.lstat(target).st_mode), "the FIFO was replaced"
        after = {k: v for k, v in after.items() if k in before}
    else:
        assert code == 2, f"sl {' '.join(argv)} -> {code}: {err}"
        assert "Error:" in err
    assert after == before, f"sl {' '.join(argv)} changed the directory"


def test_the_tables_name_outputs():
    """The generator sees the outputs (a table that lost its markers would test nothing)."""
    assert {"--final-model", "--predictions", "--report", "--readable-model",
            "--invert-hash", "--cache"} <= set(_outputs("train"))  # fmt: skip
    assert {"--port-file", "--pid-file", "--final-model"} <= set(_outputs("serve"))
    assert {"--final_regressor", "--predictions", "--raw_predictions", "--readable_model",
            "--invert_hash", "--cache_file", "--report"} <= set(_vw_outputs())  # fmt: skip
