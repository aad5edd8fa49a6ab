"""``sl serve`` / ``sl vw --daemon``: real server processes on the loopback address.

Every server is started with ``--port 0`` and a port file, and killed in a
``finally``; every request loop is bounded in count and time.  Timing is
measured but asserted only with generous bounds (behaviour, not machine speed).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tests.unix import SL, env, sl, text_data

HOST = "127.0.0.1"
START = 300.0
"""Seconds a server may take to start (a cold numba cache compiles)."""


class Server:
    """A server process; :meth:`stop` (called by the context manager) ends it."""

    def __init__(self, args: list[str], tmp: Path, name: str = "s") -> None:
        self.tmp = tmp
        self.port_file = tmp / f"{name}.port"
        self.err_path = tmp / f"{name}.err"
        if self.port_file.exists():
            self.port_file.unlink()
        has_port_file = "--port-file" in args or "--port_file" in args
        extra = [] if has_port_file else ["--port", "0", "--port-file", str(self.port_file)]
        self.err = open(self.err_path, "wb")
        self.proc = subprocess.Popen([*SL, *args, *extra], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.err,
                                     env=env(tmp), cwd=tmp)  # fmt: skip
        try:
            self.port = self._wait_port()
        except BaseException:
            self.stop(signal.SIGKILL)  # never left running
            raise

    def _wait_port(self) -> int:
        end = time.monotonic() + START
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}: {self.log()}")
            with contextlib.suppress(OSError, ValueError):
                text = self.port_file.read_text()
                if text.endswith("\n"):
                    port = int(text)
                    # listening and answering (the warm-up is done before the port file)
                    return port
            time.sleep(0.05)
        raise AssertionError("server did not start: " + self.log())

    def log(self) -> str:
        if not self.err.closed:
            self.err.flush()
        return self.err_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.err.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def connect(port: int, host: str = HOST) -> socket.socket:
    s = socket.create_connection((host, port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_lines(s: socket.socket, n: int, timeout: float = 20.0) -> list[bytes]:
    """Exactly ``n`` answer lines (fewer if the time runs out or the server closes)."""
    buf = b""
    end = time.monotonic() + timeout
    while buf.count(b"\n") < n and time.monotonic() < end:
        r, _, _ = select.select([s], [], [], max(0.0, end - time.monotonic()))
        if not r:
            break
        try:
            data = s.recv(1 << 20)
        except ConnectionResetError:  # a connection the server closed at once
            break
        if not data:
            break
        buf += data
    return buf.splitlines(keepends=True)[:n] if buf else []


def ask(port: int, payload: bytes, n: int) -> list[bytes]:
    s = connect(port)
    try:
        s.sendall(payload)
        return recv_lines(s, n)
    finally:
        s.close()


def predict_lines(tmp: Path, model: Path, payload: bytes, vw: bool = False) -> list[bytes]:
    """What ``sl predict -p -`` writes for ``payload`` (``vw``: ``sl vw -t -p``, VW's format,
    which ``sl vw --daemon`` answers in)."""
    (tmp / "req.vw").write_bytes(payload)
    if vw:
        args = ["vw", "-t", "-i", str(model), "-d", "req.vw", "-p", "/dev/stdout", "--quiet"]
    else:
        args = ["predict", "-i", str(model), "req.vw", "-p", "-", "--quiet"]
    r = sl(args, tmp)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines(keepends=True)


REQUESTS = (b"1 |a f1:0.5 f7 |b w3\n|a f2 f9:2\n-1 'tagged |a f3\n\n"
            b"'x7 |b w1 w2\n1 2 3 4 |a f1\n|a f4:nan\n0.5 2 'last|a f5 f6\n")
"""Labeled, unlabeled, tagged, blank (no answer), malformed (nan) lines."""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve")
    (d / "d.vw").write_text(text_data(1500, seed=0))
    (d / "d2.vw").write_text(text_data(1500, seed=1))
    for data, model in (("d.vw", "m.sl"), ("d2.vw", "m2.sl")):
        r = sl(["vw", "-d", data, "-f", model, "--quiet"], d)
        assert r.returncode == 0, r.stderr
    return d


def test_answers_equal_sl_predict_and_vw_protocol(models, tmp_path):
    want = predict_lines(tmp_path, models / "m.sl", REQUESTS)
    assert len(want) == 7 and want[1] != b"nan\n" and want[5] == b"nan\n"
    assert want[2].endswith(b" tagged\n") and want[6].endswith(b" last\n")
    with Server(["serve", "-i", str(models / "m.sl")], tmp_path) as srv:
        # pipelined in one write, and one line at a time, on two connections
        assert ask(srv.port, REQUESTS, 7) == want
        s = connect(srv.port)
        try:
            got = []
            for line in REQUESTS.splitlines(keepends=True):
                s.sendall(line)
                if line.strip():
                    got += recv_lines(s, 1)
            assert got == want
            s.sendall(b"|a f1")  # a last line without newline, then the client's side closes
            s.shutdown(socket.SHUT_WR)
            assert recv_lines(s, 1) == predict_lines(tmp_path, models / "m.sl", b"|a f1\n")
        finally:
            s.close()
        rc = srv.stop()
    assert rc == 143
    assert "stats connections=2" in srv.log()


def test_vw_daemon_options(models, tmp_path):
    """``sl vw --daemon --foreground --port 0 --port_file F --pid_file P -t -i M``: VW's
    answer lines (``sl vw -t -p``'s)."""
    want = predict_lines(tmp_path, models / "m.sl", REQUESTS, vw=True)
    pid = tmp_path / "pid"
    args = ["vw", "--daemon", "--foreground", "--num_children", "4", "--port", "0",
            "--port_file", str(tmp_path / "s.port"), "--pid_file", str(pid), "-t", "-i",
            str(models / "m.sl")]  # fmt: skip
    with Server(args, tmp_path) as srv:
        assert ask(srv.port, REQUESTS, 7) == want
        assert int(pid.read_text()) == srv.proc.pid
        # a save_PATH line saves the served model there (VW's daemon command); no answer
        assert ask(srv.port, f"save_{tmp_path / 'copy.sl'}\n|a f2 f9:2\n".encode(), 1) == \
            [want[1]]  # fmt: skip
        assert (tmp_path / "copy.sl").read_bytes()[:4] == (models / "m.sl").read_bytes()[:4]


def test_vw_daemon_refuses_data_and_predictions(models, tmp_path):
    r = sl(["vw", "--daemon", "-t", "-i", str(models / "m.sl"), "-d", "x.vw"], tmp_path)
    assert r.returncode == 2 and b"give no data file" in r.stderr
    r = sl(["vw", "--daemon", "-t", "-i", str(models / "m.sl"), "-p", "p.txt"], tmp_path)
    assert r.returncode == 2 and b"-p/-r/--report" in r.stderr


def test_concurrent_clients_each_get_their_answers_in_order(models, tmp_path):
    lines = (models / "d2.vw").read_bytes().splitlines(keepends=True)[:400]
    want = predict_lines(tmp_path, models / "m.sl", b"".join(lines))
    with Server(["serve", "-i", str(models / "m.sl")], tmp_path) as srv:
        socks = [connect(srv.port) for _ in range(8)]
        try:
            # interleaved: each connection sends its share in small pieces, in turn
            shares = [lines[k::8] for k in range(8)]
            for i in range(0, 50, 10):
                for k, s in enumerate(socks):
                    s.sendall(b"".join(shares[k][i : i + 10]))
            for k, s in enumerate(socks):
                assert recv_lines(s, len(shares[k])) == want[k::8]
        finally:
            for s in socks:
                s.close()


def _replace(path: Path, data: bytes) -> None:
    """What a cron job does: write beside, then rename over."""
    tmp = path.with_suffix(".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _until(fn, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if fn():
            return True
        time.sleep(0.05)
    return False


def test_reload_on_replace_and_sighup_and_refuses_a_bad_model(models, tmp_path):
    served = tmp_path / "served.sl"
    served.write_bytes((models / "m.sl").read_bytes())
    one = b"|a f1 f2 |b w4\n"
    first = predict_lines(tmp_path, models / "m.sl", one)
    second = predict_lines(tmp_path, models / "m2.sl", one)
    assert first != second
    with Server(["serve", "-i", str(served), "--reload-every", "0.2"], tmp_path) as srv:
        keep = connect(srv.port)  # a connection open across every reload
        try:
            keep.sendall(one)
            assert recv_lines(keep, 1) == first
            _replace(served, (models / "m2.sl").read_bytes())
            assert _until(lambda: ask(srv.port, one, 1) == second)
            keep.sendall(one)
            assert recv_lines(keep, 1) == second
            # a broken model: refused with one line, the old one keeps serving
            _replace(served, b"not a model at all\n")
            assert _until(lambda: "refused" in srv.log())
            keep.sendall(one)
            assert recv_lines(keep, 1) == second
            assert srv.log().count("refused") == 1  # not again at every check
            # SIGHUP (the watch off: only the signal reloads)
            _replace(served, (models / "m.sl").read_bytes())
            assert _until(lambda: ask(srv.port, one, 1) == first)
        finally:
            keep.close()
    with Server(["serve", "-i", str(served), "--reload-every", "0"], tmp_path, "h") as srv:
        _replace(served, (models / "m2.sl").read_bytes())
        time.sleep(0.5)
        assert ask(srv.port, one, 1) == first  # not watched
        srv.proc.send_signal(signal.SIGHUP)
        assert _until(lambda: ask(srv.port, one, 1) == second)
        assert "reloaded" in srv.log()


def _weights(tmp: Path, model: Path) -> tuple:
    """What a model learned: its slots, weights, state and counters."""
    from streamlearn import model as model_io

    m = model_io.load(model)
    return (m.slots.tolist(), m.weights.tolist(), m.state.tolist(), m.gstate.tolist(),
            m.stats.tolist())  # fmt: skip


def test_learning_while_serving_equals_a_file_run_and_saves_on_signal(models, tmp_path):
    lines = (models / "d2.vw").read_bytes().splitlines(keepends=True)[:600]
    first, rest = b"".join(lines[:400]), b"".join(lines[400:])
    (tmp_path / "first.vw").write_bytes(first)
    (tmp_path / "all.vw").write_bytes(first + rest)
    r = sl(["vw", "-i", str(models / "m.sl"), "-d", "first.vw", "-f", "ref1.sl", "-p", "p1.txt",
            "--quiet"], tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = sl(["vw", "-i", str(models / "m.sl"), "-d", "all.vw", "-f", "ref2.sl", "--quiet"],
           tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = tmp_path / "live.sl"
    args = ["vw", "--daemon", "--foreground", "--port", "0", "--port_file",
            str(tmp_path / "s.port"), "-i", str(models / "m.sl"), "-f", str(out),
            "--save_every", "1000000"]  # fmt: skip  (taken; never reached here)
    srv = Server(args, tmp_path)
    try:
        s = connect(srv.port)
        try:
            for k in range(0, 400, 37):  # reads of several sizes, in arrival order
                s.sendall(b"".join(lines[k : min(k + 37, 400)]))
            got = recv_lines(s, 400)
            assert b"".join(got) == (tmp_path / "p1.txt").read_bytes()  # progressive
            s.sendall(b"save\n")
            assert _until(lambda: "saved" in srv.log())
        finally:
            s.close()
        assert _weights(tmp_path, out) == _weights(tmp_path, tmp_path / "ref1.sl")
        s = connect(srv.port)
        try:
            s.sendall(rest)
            assert len(recv_lines(s, 200)) == 200
        finally:
            s.close()
        t = time.monotonic()
        rc = srv.stop(signal.SIGTERM)
        assert time.monotonic() - t < 5  # well within a second when idle
    finally:
        srv.stop(signal.SIGKILL)
    assert rc == 143, srv.log()
    assert _weights(tmp_path, out) == _weights(tmp_path, tmp_path / "ref2.sl")
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob("sltmp-*"))


def test_save_every_examples(models, tmp_path):
    out = tmp_path / "live.sl"
    lines = (models / "d2.vw").read_bytes().splitlines(keepends=True)[:50]
    with Server(["serve", "--learn", "-i", str(models / "m.sl"), "-f", str(out),
                 "--save-every", "20"], tmp_path) as srv:  # fmt: skip
        assert len(ask(srv.port, b"".join(lines[:10]), 10)) == 10
        time.sleep(0.3)
        assert not out.exists()
        assert len(ask(srv.port, b"".join(lines[10:30]), 20)) == 20
        assert _until(out.exists)
        rc = srv.stop(signal.SIGINT)
    assert rc == 130
    assert srv.log().count("saved") == 2  # 20 examples, then the 10 left at SIGINT


@pytest.mark.slow
def test_bad_clients(models, tmp_path):
    """A line over --max-line-bytes, a client leaving mid-line, a client that never reads,
    many idle connections: others are answered, and SIGTERM ends the server promptly."""
    one = b"|a f1 f2 |b w4\n"
    want = predict_lines(tmp_path, models / "m.sl", one)
    with Server(["serve", "-i", str(models / "m.sl"), "--max-line-bytes", "4k"], tmp_path) as srv:
        s = connect(srv.port)
        try:
            s.sendall(b"|a " + b"f1 " * 5000 + b"\n" + one)  # 15 kB line, then a good one
            assert recv_lines(s, 2) == [b"nan\n", *want]
            s.sendall(b"|a " + b"f1 " * 3000)  # a long partial line ...
            time.sleep(0.2)
            s.sendall(b"f2\n" + one)  # ... ended later: still one nan
            assert recv_lines(s, 2) == [b"nan\n", *want]
        finally:
            s.close()
        gone = connect(srv.port)
        gone.sendall(b"1 |a f1 f2")  # mid-line, then away
        gone.close()
        hog = connect(srv.port)  # sends a lot and never reads its answers
        hog.setblocking(False)
        sent = 0
        end = time.monotonic() + 5
        with contextlib.suppress(BlockingIOError):
            while sent < 64 << 20 and time.monotonic() < end:
                sent += hog.send(one * 4096)
        idle = [connect(srv.port) for _ in range(200)]
        try:
            assert ask(srv.port, one, 1) == want  # answered meanwhile
            garbage = bytes(range(256)) * 4 + b"\n\x00\xff|\n:::\n" + one
            expected = predict_lines(tmp_path, models / "m.sl", garbage)
            assert ask(srv.port, garbage, len(expected)) == expected
        finally:
            for c in idle:
                c.close()
            hog.close()
        t = time.monotonic()
        rc = srv.stop(signal.SIGTERM)
        assert time.monotonic() - t < 5  # generous: about a tenth of a second when idle
    assert rc == 143
    assert "Traceback" not in srv.log()


@pytest.mark.slow
def test_a_thousand_idle_connections(models, tmp_path):
    one = b"|a f1 f2 |b w4\n"
    want = predict_lines(tmp_path, models / "m.sl", one)
    with Server(["serve", "-i", str(models / "m.sl")], tmp_path) as srv:
        idle = []
        try:
            for _ in range(1000):
                idle.append(connect(srv.port))
            lat = []
            for _ in range(50):
                t = time.perf_counter()
                assert ask(srv.port, one, 1) == want
                lat.append(time.perf_counter() - t)
            assert np.median(lat) < 1.0  # generous
        finally:
            for c in idle:
                c.close()


def test_timed_save_stats_on_sigusr1_and_no_client_paths(models, tmp_path):
    out = tmp_path / "live.sl"
    lines = (models / "d2.vw").read_bytes().splitlines(keepends=True)[:20]
    args = ["serve", "--learn", "-i", str(models / "m.sl"), "-f", str(out), "--save-every",
            "0.5s", "--max-connections", "2"]  # fmt: skip
    with Server(args, tmp_path) as srv:
        assert len(ask(srv.port, b"".join(lines[:5]), 5)) == 5
        assert _until(out.exists, 10)  # half a second after the first unsaved example
        # sl serve: a client's save_PATH writes -f, never PATH
        out.unlink()
        assert ask(srv.port, f"save_{tmp_path / 'elsewhere.sl'}\n".encode() + lines[5], 1)
        assert _until(out.exists, 10) and not (tmp_path / "elsewhere.sl").exists()
        # over --max-connections: closed at once, the others served
        a, b = connect(srv.port), connect(srv.port)
        try:
            a.sendall(lines[6])
            assert len(recv_lines(a, 1)) == 1
            b.sendall(lines[7])
            assert len(recv_lines(b, 1)) == 1
            c = connect(srv.port)
            c.sendall(lines[8])
            assert recv_lines(c, 1, timeout=5) == []
            c.close()
        finally:
            a.close()
            b.close()
        srv.proc.send_signal(signal.SIGUSR1)
        assert _until(lambda: "stats connections=" in srv.log() and "refused=1" in srv.log())
        rc = srv.stop(signal.SIGTERM)
    assert rc == 143


def test_a_second_signal_does_not_cut_the_last_save(models, tmp_path):
    """``timeout``, systemd and process groups may deliver SIGTERM twice: the learning
    server still saves what it learned, and exits 143 (never the default action's death)."""
    out = tmp_path / "live.sl"
    lines = (models / "d2.vw").read_bytes().splitlines(keepends=True)[:30]
    srv = Server(["serve", "--learn", "-i", str(models / "m.sl"), "-f", str(out)], tmp_path)
    try:
        assert len(ask(srv.port, b"".join(lines), 30)) == 30
        srv.proc.send_signal(signal.SIGTERM)
        srv.proc.send_signal(signal.SIGTERM)
        rc = srv.proc.wait(20)
    finally:
        srv.stop(signal.SIGKILL)
    assert rc == 143, srv.log()
    assert "saved" in srv.log() and out.exists()
    assert "Traceback" not in srv.log()


@pytest.mark.slow
def test_a_model_learned_in_place_is_locked_until_the_last_save(models, tmp_path):
    """DESIGN 8: a learning server on -i m -f m holds m's lock from reading m to its last
    save, as ``sl train -i m -f m`` does: a second server and a train wait for it (or give
    up after --lock-timeout, exit 9, the model untouched); once it has saved and exited, a
    waiting train continues the server's model, so nothing either learned is lost."""
    import shutil

    m = tmp_path / "m.sl"
    shutil.copy(models / "m.sl", m)
    lines = (models / "d2.vw").read_bytes().splitlines(keepends=True)
    (tmp_path / "more.vw").write_bytes(b"".join(lines[100:160]))
    srv = Server(["serve", "--learn", "-i", str(m), "-f", str(m)], tmp_path)
    waiting = None
    try:
        assert len(ask(srv.port, b"".join(lines[:40]), 40)) == 40
        before = m.read_bytes()
        r = sl(["train", "-i", "m.sl", "-f", "m.sl", "more.vw", "--lock-timeout", "0.3"],
               tmp_path, text=True)  # fmt: skip
        assert r.returncode == 9, r.stderr
        assert "being continued by another sl run" in r.stderr
        r = subprocess.run([*SL, "serve", "--learn", "-i", "m.sl", "-f", "m.sl", "--port", "0",
                            "--lock-timeout", "0.3"], env=env(tmp_path), cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
        assert r.returncode == 9 and "sl serve: learning" not in r.stderr, r.stderr
        assert m.read_bytes() == before  # neither wrote
        waiting = subprocess.Popen([*SL, "train", "-i", "m.sl", "-f", "m.sl", "more.vw",
                                    "--quiet"], env=env(tmp_path), cwd=tmp_path,
                                   stderr=subprocess.PIPE)  # fmt: skip
        assert _until(lambda: (tmp_path / "m.sl.lock").exists())
        time.sleep(1.0)
        assert waiting.poll() is None  # waits for the server
        assert srv.stop(signal.SIGTERM) == 143, srv.log()
        assert waiting.wait(120) == 0, waiting.stderr.read()
    finally:
        srv.stop(signal.SIGKILL)
        if waiting is not None and waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    from streamlearn import model as model_io
    from streamlearn.learners.base import S_N

    n0 = model_io.load(models / "m.sl").stats[S_N]
    assert model_io.load(m).stats[S_N] == n0 + 40 + 60  # the server's 40, then the train's 60


@pytest.mark.slow
def test_ipv6_loopback(models, tmp_path):
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        pytest.skip("no ::1 here")
    one = b"|a f1 f2 |b w4\n"
    want = predict_lines(tmp_path, models / "m.sl", one)
    with Server(["serve", "-i", str(models / "m.sl"), "--host", "::1"], tmp_path) as srv:
        s = connect(srv.port, "::1")
        try:
            s.sendall(one)
            assert recv_lines(s, 1) == want
        finally:
            s.close()


def test_on_a_vw_model_the_answers_are_vw_daemons(models, tmp_path):
    """``sl vw --daemon -t -i VW_MODEL`` answers as ``vw --daemon -t -i VW_MODEL`` does (VW
    prints six decimals; a malformed line is where they differ: sl answers nan)."""
    pytest.importorskip("vowpalwabbit")
    import sys

    r = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(models / "d.vw"), "-f",
                        str(tmp_path / "m.vw"), "--quiet"], capture_output=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = (models / "d2.vw").read_bytes().splitlines(keepends=True)[:300]
    payload = b"".join(lines) + b"|a f1 f2\n'tg |b w1\n"
    sl_args = ["vw", "--daemon", "--foreground", "--port", "0", "--port_file",
               str(tmp_path / "s.port"), "-t", "-i", str(tmp_path / "m.vw"), "--quiet"]
    vw_port = tmp_path / "vw.port"
    # the Python package's command line runs its parser only when it sees --passes or -d
    vw = subprocess.Popen([sys.executable, "-m", "vowpalwabbit", "--daemon", "--foreground",
                           "--num_children", "1", "--port", "0", "--port_file", str(vw_port),
                           "-t", "-i", str(tmp_path / "m.vw"), "--passes", "1", "--quiet"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          cwd=tmp_path)  # fmt: skip
    try:
        assert _until(lambda: vw_port.exists() and vw_port.read_text().endswith("\n"), 60)
        port = int(vw_port.read_text())
        got_vw = None
        for _ in range(50):  # listening a moment after the port file
            with contextlib.suppress(OSError):
                got_vw = ask(port, payload, 302)
                break
            time.sleep(0.1)
        with Server(sl_args, tmp_path) as srv:
            got_sl = ask(srv.port, payload, 302)
    finally:
        vw.terminate()
        try:
            vw.wait(10)
        except subprocess.TimeoutExpired:
            vw.kill()
            vw.wait()
    assert got_vw is not None and len(got_vw) == len(got_sl) == 302
    a = np.array([float(x.split()[0]) for x in got_sl])
    b = np.array([float(x.split()[0]) for x in got_vw])
    assert np.abs(a - b).max() < 2e-6, np.abs(a - b).max()
    assert got_sl[-1].endswith(b" tg\n") and got_vw[-1].endswith(b" tg\n")
