"""The servers lose nothing (issue 44): their files are checked before they listen, a
client's ``save_PATH`` writes only a model file and never blocks the event loop, a reload
never changes the kind of model served, and a diverging update is answered ``nan`` and
never kept nor saved.  Real server processes on the loopback address; every request loop
and process is bounded in time, and every server is stopped in a ``finally``."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from streamlearn import model as model_io
from tests.cb_logs import adf_log
from tests.run.test_bandit_serve import _recv_examples
from tests.run.test_serve import Server, _replace, _until, ask, connect, recv_lines
from tests.unix import sl, text_data


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("lost")
    (d / "d.vw").write_text(text_data(600, seed=0))
    assert sl(["vw", "-d", "d.vw", "-f", "m.sl", "--quiet"], d).returncode == 0
    (d / "cb.txt").write_text(adf_log(50, 40))
    for name, explore in (("cb.sl", "epsilon"), ("cb2.sl", "softmax")):
        r = sl(["train", "--cb-adf", "--explore", explore, "cb.txt", "-f", name, "--quiet"], d)
        assert r.returncode == 0, r.stderr
    return d


def _refused(args: list[str], tmp: Path, stdin: Path | None = None) -> str:
    """stderr of a server command that must exit 2 before it listens (a server that
    starts is killed by the timeout, and the test fails)."""
    with open(stdin or os.devnull, "rb") as f:
        try:
            r = sl([*args, "--port", "0"], tmp, stdin=f, timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{args}: the server started") from None
    err = r.stderr.decode()
    assert r.returncode == 2, (args, r.returncode, err)
    assert err.count("Error:") == 1 and "sl serve:" not in err, err
    return err


@pytest.mark.slow
def test_server_files_are_checked_before_listening(files, tmp_path):
    """pid and port files naming the served model, -f, each other, an input, a directory or
    a path in no directory, and -f in no directory or not a file: exit 2, nothing written."""
    shutil.copy(files / "m.sl", tmp_path / "s.sl")
    shutil.copy(files / "d.vw", tmp_path / "in.vw")
    before = (tmp_path / "s.sl").read_bytes()
    os.mkdir(tmp_path / "dir")
    os.mkfifo(tmp_path / "fifo")
    serve = ["serve", "-i", "s.sl"]
    learn = ["serve", "-i", "s.sl", "--learn"]
    vw = ["vw", "--daemon", "--foreground", "-i", "s.sl"]
    for args, want in (
        ([*serve, "--pid-file", "s.sl"], "pid file s.sl is the initial model"),
        ([*serve, "--port-file", "s.sl"], "port file s.sl is the initial model"),
        ([*learn, "-f", "s.sl", "--pid-file", "s.sl"], "is the initial model"),
        ([*learn, "-f", "o.sl", "--pid-file", "o.sl"], "name the same file o.sl"),
        ([*serve, "--pid-file", "p", "--port-file", "p"], "name the same file p"),
        ([*serve, "--pid-file", "dir"], "is a directory"),
        ([*serve, "--port-file", "nodir/p"], "directory nodir does not exist"),
        ([*learn, "-f", "/no_such_dir/x.sl"], "directory /no_such_dir does not exist"),
        ([*learn, "-f", "dir"], "is a directory"),
        ([*learn, "-f", "fifo"], "not a regular file"),
        (["vw", "--daemon", "--foreground", "-t", "-i", "s.sl", "--pid_file", "s.sl"],
         "pid file s.sl is the initial model"),
        ([*vw, "-f", "o.vw", "--port_file", "o.vw"], "name the same file o.vw"),
        ([*vw, "-f", "/no_such_dir/x.vw"], "directory /no_such_dir does not exist"),
    ):  # fmt: skip
        assert want in _refused(args, tmp_path), args
    # an input: the server's standard input
    assert "is the input" in _refused([*serve, "--pid-file", "in.vw"], tmp_path, tmp_path / "in.vw")
    assert (tmp_path / "s.sl").read_bytes() == before
    assert (tmp_path / "in.vw").read_bytes() == (files / "d.vw").read_bytes()
    assert not (tmp_path / "o.sl").exists() and not (tmp_path / "p").exists()


@pytest.mark.parametrize("option", ["--json", "--dsjson", "--csv"])
def test_vw_daemon_refuses_request_formats_it_does_not_parse(files, tmp_path, option):
    err = _refused(["vw", "--daemon", "--foreground", "-t", "-i", str(files / "m.sl"), option],
                   tmp_path)  # fmt: skip
    assert f"--{option[2:]} with --daemon" in err and "VW text lines" in err


def test_a_clients_save_writes_only_model_files_and_blocks_no_one(files, tmp_path):
    """``save_PATH`` to a FIFO nobody reads, /dev/stdout, a file that is not a model, the
    initial model, the pid or port file, a directory: refused (the client is answered, the
    others too, the files stay); to a new file or a model file: written.  SIGTERM ends the
    server at once."""
    shutil.copy(files / "m.sl", tmp_path / "m.sl")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "notes.txt").write_text("precious\n")
    shutil.copy(files / "m.sl", tmp_path / "old.sl")
    args = ["vw", "--daemon", "--foreground", "-i", "m.sl", "-f", "out.sl", "--pid_file",
            "pid", "--port", "0", "--port_file", "s.port"]  # fmt: skip
    srv = Server(args, tmp_path)
    one = b"1 |a f1 f2\n"
    try:
        s = connect(srv.port)
        try:
            t = time.monotonic()
            s.sendall(f"save_{tmp_path / 'fifo'}\n".encode() + one)
            assert len(recv_lines(s, 1, 10)) == 1  # (was: the event loop blocked for good)
            assert time.monotonic() - t < 5
            assert len(ask(srv.port, one, 1)) == 1  # another client
            for bad in ("/dev/stdout", "notes.txt", "m.sl", "pid", "s.port", "tmpdir",
                        "nodir/x.sl", "/tmp/" + "x" * 5000):  # fmt: skip
                s.sendall(f"save_{bad}\n".encode() + one)
                assert len(recv_lines(s, 1, 10)) == 1, bad
            s.sendall(b"save_new.sl\nsave_old.sl\n" + one)
            assert len(recv_lines(s, 1, 10)) == 1  # answered once both are written
        finally:
            s.close()
        assert (tmp_path / "new.sl").exists() and (tmp_path / "old.sl").read_bytes() != \
            (files / "m.sl").read_bytes()  # fmt: skip
        t = time.monotonic()
        assert srv.stop(signal.SIGTERM) == 143
        assert time.monotonic() - t < 5
    finally:
        srv.stop(signal.SIGKILL)
    log = srv.log()
    assert log.count("failed (save line)") == 9, log
    assert "x" * 101 not in log and "(5005 bytes)" in log  # (a long path once, cut short)
    assert "is not a regular file" in log and "not a model file" in log
    assert (tmp_path / "notes.txt").read_text() == "precious\n"
    assert (tmp_path / "m.sl").read_bytes() == (files / "m.sl").read_bytes()
    assert int((tmp_path / "pid").read_text()) == srv.proc.pid
    assert int((tmp_path / "s.port").read_text()) == srv.port
    assert (tmp_path / "fifo").exists() and not (tmp_path / "fifo").is_file()
    assert "Traceback" not in log


@pytest.mark.slow
def test_a_reload_never_changes_the_kind_of_model(files, tmp_path):
    """A scoring server of a plain model refuses a bandit model in its place (its one-line
    clients would get no answers), and a FIFO (it would block the reload check); a bandit
    server refuses a plain model and a bandit of another explorer.  The old model keeps
    serving, and a good replacement is still taken afterwards."""
    served = tmp_path / "served.sl"
    shutil.copy(files / "m.sl", served)
    one = b"|a f1 f2\n"
    srv = Server(["serve", "-i", "served.sl", "--reload-every", "0.2"], tmp_path)
    try:
        want = ask(srv.port, one, 1)
        assert len(want) == 1
        _replace(served, (files / "cb.sl").read_bytes())
        assert _until(lambda: "refused" in srv.log())
        assert "a bandit model (multiline examples), where the server serves a single-line " \
            "model" in srv.log()  # fmt: skip
        assert ask(srv.port, one, 1) == want
        served.unlink()
        os.mkfifo(served)
        assert _until(lambda: srv.log().count("refused") == 2)
        assert "not a regular file" in srv.log()
        assert ask(srv.port, one, 1) == want
        served.unlink()
        r = sl(["train", "d.vw", "-f", str(served), "--quiet", "--learning-rate", "2"], files)
        assert r.returncode == 0, r.stderr
        assert _until(lambda: "reloaded" in srv.log())
        assert ask(srv.port, one, 1) != want
    finally:
        srv.stop(signal.SIGTERM)
    shutil.copy(files / "cb.sl", served)
    text = (files / "cb.txt").read_bytes()
    srv = Server(["serve", "-i", "served.sl", "--reload-every", "0.2"], tmp_path, "b")
    try:
        s = connect(srv.port)
        try:
            s.sendall(text)
            want = _recv_examples(s, 40, 30)
        finally:
            s.close()
        _replace(served, (files / "m.sl").read_bytes())
        assert _until(lambda: "refused" in srv.log())
        _replace(served, (files / "cb2.sl").read_bytes())
        assert _until(lambda: srv.log().count("refused") == 2)
        assert "other options (--explore" in srv.log(), srv.log()
        s = connect(srv.port)
        try:
            s.sendall(text)
            assert _recv_examples(s, 40, 30) == want
        finally:
            s.close()
    finally:
        srv.stop(signal.SIGTERM)


def _weights(path: Path) -> tuple:
    m = model_io.load(path)
    return m.slots.tolist(), m.weights.tolist(), m.state.tolist(), m.gstate.tolist()


def test_a_diverging_line_is_answered_nan_and_not_learned(files, tmp_path):
    """A line whose update would make the weights non-finite: ``nan``, and the model kept as
    it was before it -- the lines around it learned as a file of them alone is, and the
    model saved finite (exit 6's promise: a diverged model is never written)."""
    good = (files / "d.vw").read_bytes().splitlines(keepends=True)[:20]
    bad = b"1e18 |a x:1e18 y:1e18\n"
    (tmp_path / "good.vw").write_bytes(b"".join(good))
    r = sl(["train", "-i", str(files / "m.sl"), "good.vw", "-f", "ref.sl", "--quiet"], tmp_path)
    assert r.returncode == 0, r.stderr
    srv = Server(["serve", "--learn", "-i", str(files / "m.sl"), "-f", "live.sl"], tmp_path)
    try:
        got = ask(srv.port, b"".join(good[:10]) + bad + b"".join(good[10:15]), 16)
        assert got[10] == b"nan\n" and b"nan\n" not in got[:10] + got[11:]
        got = ask(srv.port, bad, 1)  # alone in its read
        assert got == [b"nan\n"]
        assert len(ask(srv.port, b"".join(good[15:]) + b"save\n", 5)) == 5
        assert _until(lambda: "saved" in srv.log())
    finally:
        srv.stop(signal.SIGTERM)
    assert "would make the model non-finite" in srv.log()
    ref, live = _weights(tmp_path / "ref.sl"), _weights(tmp_path / "live.sl")
    assert ref == live  # (without the check: saving failed, the in-memory model lost)


def test_a_diverging_bandit_example_is_answered_nan_and_never_saved(files, tmp_path):
    text = (files / "cb.txt").read_text()
    exs = [e + "\n\n" for e in text.strip("\n").split("\n\n")]
    bad = "shared |s a:1e18\n0:1e18:1e-18 |a x:1e18\n|a y\n\n"
    srv = Server(["serve", "--cb-adf", "--explore", "epsilon", "--learn", "-i",
                  str(files / "cb.sl"), "-f", "live.sl"], tmp_path)  # fmt: skip
    try:
        s = connect(srv.port)
        try:
            s.sendall("".join([*exs[:3], bad, *exs[3:6]]).encode())
            got = _recv_examples(s, 7, 30).split(b"\n\n")
            assert got[3] == b"nan" and b"nan" not in b" ".join(got[:3] + got[4:7]), got
            s.sendall(bad.encode())
            assert _recv_examples(s, 1, 30) == b"nan\n\n"
            s.sendall(b"save\n" + exs[6].encode())
            assert _recv_examples(s, 1, 30).count(b"\n\n") == 1
        finally:
            s.close()
        assert _until(lambda: "saved" in srv.log())
        assert srv.stop(signal.SIGTERM) == 143
    finally:
        srv.stop(signal.SIGKILL)
    assert "would make the model non-finite" in srv.log()
    assert model_io.non_finite(model_io.load(tmp_path / "live.sl")) is None
    r = sl(["predict", "-i", "live.sl", str(files / "cb.txt"), "-p", "/dev/null"], tmp_path)
    assert r.returncode == 0, r.stderr
