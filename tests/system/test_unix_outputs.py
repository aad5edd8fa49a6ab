"""Outputs: nothing is replaced that should not be, and nothing is lost."""

from __future__ import annotations

import json
import os
import stat
import threading

import pytest
from click.testing import CliRunner

from streamlearn.cli import cli
from streamlearn.system import outputs
from tests.marks import slow_except
from tests.unix import invoke, text_data

DATA = text_data(300)
OPTIONS = {
    "-f": "final model",
    "-p": "predictions",
    "--report": "report",
    "--readable-model": "readable model",
    "--invert-hash": "invert-hash model",
    "--cache": "cache",
}


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "d.vw"
    p.write_text(DATA)
    return p


def _train(data, option, path, *extra):
    return invoke(["train", "--algo", "sgd", "--quiet", str(data), option, str(path), *extra])


def _old(option) -> bytes:
    """What the output held before: for a cache, an older sl cache (a file that is not one
    is never replaced: tests/run/test_nothing_lost.py)."""
    return b"SLCACHE3 an older sl cache" if option == "--cache" else b"old"


def _check_content(option, text: bytes):
    if option == "--report":
        json.loads(text)
    elif option == "-p":
        assert text.count(b"\n") == DATA.count("\n")
    elif option == "-f":
        assert text.startswith(b"SLMODEL\0")
    elif option == "--cache":
        assert text.startswith(b"SLCACHE")
    else:
        assert text.startswith(b"# sl readable model")


@pytest.mark.parametrize("option", list(OPTIONS))
def test_regular_file_replaced_atomically_keeping_its_mode(tmp_path, data, option):
    out = tmp_path / "out"
    out.write_bytes(_old(option))
    os.chmod(out, 0o640)
    r = _train(data, option, out)
    assert r.exit_code == 0, r.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    _check_content(option, out.read_bytes())
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("option", list(OPTIONS))
def test_new_file_follows_the_umask(tmp_path, data, option):
    old = os.umask(0o027)
    try:
        r = _train(data, option, tmp_path / "new")
    finally:
        os.umask(old)
    assert r.exit_code == 0, r.output
    # the umask is read once per process: compare with what the module saw
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o666 & ~outputs._UMASK


@pytest.mark.parametrize("option", list(OPTIONS))
def test_symlink_target_replaced_link_kept(tmp_path, data, option):
    target = tmp_path / "real"
    target.write_bytes(_old(option))
    link = tmp_path / "link"
    link.symlink_to(target)
    r = _train(data, option, link)
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and os.readlink(link) == str(target)
    _check_content(option, target.read_bytes())


@pytest.mark.parametrize("option", ["-f", "-p", "--report", "--readable-model"])
def test_fifo_is_written_through_not_replaced(tmp_path, data, option):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))  # noqa: SIM115
    reader.start()
    r = _train(data, option, fifo)
    reader.join(30)
    assert r.exit_code == 0, r.output
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    _check_content(option, got[0])


@pytest.mark.parametrize("option", ["-f", "-p", "--report"])
def test_character_device_is_written_through(tmp_path, data, option):
    dev = tmp_path / "null"
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs privileges")
    r = _train(data, option, dev)
    assert r.exit_code == 0, r.output
    assert stat.S_ISCHR(dev.stat().st_mode)
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


@pytest.mark.parametrize("option", list(OPTIONS))
def test_an_output_naming_the_input_is_refused(tmp_path, data, option):
    before = data.read_bytes()
    r = _train(data, option, data)
    assert r.exit_code == 2 and "is the input" in r.output
    assert data.read_bytes() == before
    link = tmp_path / "alias.vw"  # the same file under another name
    link.symlink_to(data)
    r = _train(data, option, link)
    assert r.exit_code == 2 and data.read_bytes() == before


def test_an_output_naming_the_input_on_stdin_is_refused(tmp_path, data):
    from tests.unix import sl

    r = sl([f"SL train -p {data} < {data}"], tmp_path, shell=True)
    assert r.returncode == 2 and b"is the input standard input" in r.stderr
    assert data.read_text() == DATA


def test_outputs_naming_each_other_or_the_model_are_refused(tmp_path, data):
    m = tmp_path / "m.sl"
    assert _train(data, "-f", m).exit_code == 0
    r = invoke(["train", str(data), "-f", str(tmp_path / "x"), "--report", str(tmp_path / "x")])
    assert r.exit_code == 2 and "name the same file" in r.output
    r = invoke(["predict", "-i", str(m), str(data), "-p", str(m)])
    assert r.exit_code == 2 and "initial model" in r.output
    r = invoke(["train", str(data), "-p", "-", "--report", "-"])
    assert r.exit_code == 2 and "standard output" in r.output
    r = invoke(["train", str(data), "-p", ""])
    assert r.exit_code == 2 and "empty" in r.output


def test_dev_stdout_and_fd_paths_are_not_reopened(tmp_path, data):
    from tests.unix import sl

    log = tmp_path / "log.txt"
    log.write_text("keep me\n")
    r = sl([f"SL train --algo sgd --quiet {data} -p /dev/stdout >> {log}"], tmp_path, shell=True)
    assert r.returncode == 0, r.stderr
    lines = log.read_text().splitlines()
    assert lines[0] == "keep me" and len(lines) == 1 + DATA.count("\n")
    r = sl([f"SL train --algo sgd --quiet {data} -p /dev/fd/3 3>> {log}"], tmp_path, shell=True)
    assert r.returncode == 0, r.stderr
    assert log.read_text().splitlines()[0] == "keep me"
    assert len(log.read_text().splitlines()) == 1 + 2 * DATA.count("\n")


def test_predictions_have_one_line_per_example_line(tmp_path):
    src = tmp_path / "bad.vw"
    src.write_text("1 'a |f x\nfoo |f y\n\n-1 'c |f z:nan\n1 |f w\n")
    p = tmp_path / "p.txt"
    r = invoke(["train", "--algo", "sgd", str(src), "-p", str(p), "--quiet"])
    assert r.exit_code == 0
    lines = p.read_text().splitlines()  # the blank line is no example
    assert len(lines) == 4
    assert lines[0].endswith(" a") and lines[1] == "nan" and lines[2].startswith("nan")
    assert not lines[3].startswith("nan")


def test_interrupted_run_leaves_predictions_untouched(tmp_path, data, monkeypatch):
    p = tmp_path / "p.txt"
    p.write_text("yesterday\n")
    import streamlearn.run.train as train_mod

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_mod, "save_outputs", boom)
    r = CliRunner().invoke(cli, ["train", str(data), "-p", str(p), "-f", str(tmp_path / "m")])
    assert r.exit_code == 130
    assert p.read_text() == "yesterday\n"
    assert not (tmp_path / "m").exists()
    assert not any(x.name.endswith(".tmp") for x in tmp_path.iterdir())


def test_two_runs_building_one_cache_do_not_collide(tmp_path):
    """Two first runs with the same --cache: each writes its own temporary file."""
    from streamlearn.io import cache as batch_cache
    from streamlearn.io import parse_bytes

    path = tmp_path / "c.cache"
    ident = {"sources": [], "bits": 18}
    a = batch_cache.CacheWriter(path, ident)
    b = batch_cache.CacheWriter(path, ident)
    assert a.out.tmp != b.out.tmp
    batch = parse_bytes(DATA.encode())
    for w in (a, b):
        w.add(batch)
    a.close()
    b.close()
    replayed = list(batch_cache.read(path))
    assert len(replayed) == 1 and replayed[0].n == batch.n
    assert [p.name for p in tmp_path.iterdir()] == ["c.cache"]


# ---- an output FIFO nobody reads: a signal still ends the run (issue 30) ------------------


def _blocked(pid: int, timeout: float = 60.0) -> bool:
    """Wait until process ``pid`` sleeps opening a FIFO (Linux: wchan wait_for_partner)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/wchan") as f:
                if f.read() == "wait_for_partner":
                    return True
        except OSError:
            return False
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not os.path.exists("/proc/self/wchan"), reason="needs /proc/PID/wchan")
@pytest.mark.parametrize(
    "option", slow_except(["--report", "--readable-model", "--invert-hash", "pred"], 0)
)
def test_a_fifo_nobody_reads_does_not_hold_off_a_signal(tmp_path, data, option):
    """Signals end a run within a second wherever it blocks, the lock held or not.

    The model is whole: the old one when the outputs that cannot be staged are written
    before any is made visible, else the new one (the message says what stays).
    """
    import subprocess
    import time

    from streamlearn import model as model_io
    from tests.unix import SL, env, leftovers, one_line_error

    m = tmp_path / "m.sl"
    assert invoke(["train", str(data), "-f", str(m), "--quiet"]).exit_code == 0
    old = m.read_bytes()
    os.mkfifo(tmp_path / "ff")
    if option == "pred":
        args = ["predict", "-i", "m.sl", "d.vw", "--report", "ff", "--quiet"]
    else:
        args = ["train", "-i", "m.sl", "-f", "m.sl", "d.vw", option, "ff", "--quiet"]
    p = subprocess.Popen([*SL, *args], cwd=tmp_path, env=env(tmp_path), stderr=subprocess.PIPE)
    try:
        assert _blocked(p.pid), "never blocked on the FIFO"
        time.sleep(0.2)
        t = time.monotonic()
        p.send_signal(15)
        err = p.communicate(timeout=30)[1]
        assert time.monotonic() - t < 1.0
    finally:
        p.kill()
    assert p.returncode == 143, err
    one_line_error(err)
    model_io.load(m)  # whole, old or new
    if m.read_bytes() != old:
        assert b"already made visible stay" in err
    assert leftovers(tmp_path) == []
    r = invoke(["train", "-i", str(m), "-f", str(m), str(data), "--lock-timeout", "0",
                "--quiet"])  # the lock was released  # fmt: skip
    assert r.exit_code == 0, r.output
