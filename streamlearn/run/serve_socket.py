"""The socket side of a server (:mod:`streamlearn.run.serve`): listening, connections,
the request protocol, signals, and the ``stats`` line.

:class:`Server` listens on a TCP port and serves any number of connections at once
on one ``asyncio`` event loop, each a :class:`_Connection` (a protocol: a read is answered
in the callback that brings it, no task woken per request).  Each read of a connection is
cut into whole lines
(a line longer than ``--max-line-bytes`` dropped and answered ``nan``); VW's save
commands among them go to the :class:`~streamlearn.run.serve_saves.Keeper`, the
other lines to the served model, and the answers go back in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import socket
import time
from collections import deque

import numpy as np

from streamlearn.errors import UsageError
from streamlearn.run.console import Console
from streamlearn.run.options import Inputs, Outputs
from streamlearn.run.serve_model import Served
from streamlearn.run.serve_options import ServeOptions, log
from streamlearn.run.serve_saves import Keeper
from streamlearn.system.outputs import write_text

LATENCIES = 4096
"""Answer times kept for the ``stats`` line (the most recent reads)."""

_SAVE = re.compile(rb"^[ \t]*'?save(?:_(\S+))?[ \t]*\|?[ \t]*\r?$")
"""A line VW reads as a save command: a tag starting with ``save`` and no feature."""


class Server:
    """The listening socket, its connections, and its counters; the served model and its
    saves and reloads are its :class:`~streamlearn.run.serve_saves.Keeper`'s."""

    def __init__(self, served: Served, inputs: Inputs, outputs: Outputs, opts: ServeOptions,
                 console: Console, explicit: dict | None = None,
                 kept: list | None = None, kind: tuple | None = None) -> None:  # fmt: skip
        self.opts = opts
        self.console = console
        self.signal: int | None = None
        self.stop: asyncio.Event | None = None  # made in the loop
        self.connections: set[_Connection] = set()
        self.open = 0
        self.counts = dict(connections=0, refused=0, reads=0, lines=0, malformed=0,
                           reloads=0, reload_failures=0, saves=0, save_failures=0)  # fmt: skip
        self.keeper = Keeper(served, inputs, outputs, opts, console, self.counts, explicit,
                             kept, kind)  # fmt: skip
        self.latency: deque[float] = deque(maxlen=LATENCIES)
        self.started = time.monotonic()
        self.sock: socket.socket | None = None

    @property
    def served(self) -> Served:  # (or a bandit's)
        """The model served now (a reload replaces it)."""
        return self.keeper.served

    # -- the socket -------------------------------------------------------------------------

    def bind(self) -> int:
        """Listen (before any fork, as VW does: the port file names a listening port)."""
        family = socket.AF_INET6 if ":" in self.opts.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.opts.host, self.opts.port))
        except OSError as e:
            sock.close()
            raise UsageError(f"cannot listen on {self.opts.host} port {self.opts.port}: "
                             f"{e.strerror or e}") from None  # fmt: skip
        sock.listen(1024)
        sock.setblocking(False)
        self.sock = sock
        port = sock.getsockname()[1]
        if self.opts.port_file:
            # written whole, then renamed into place (a descriptor such as /dev/stdout
            # written through, never replaced: system.outputs)
            write_text(self.opts.port_file, f"{port}\n", "port file")
        return port

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.stop = asyncio.Event()
        caught = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)
        before = {s: signal.getsignal(s) for s in caught}
        for s in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(s, self._stop, s)
        loop.add_signal_handler(signal.SIGHUP, self.keeper.hangup)
        loop.add_signal_handler(signal.SIGUSR1, self.say_stats)
        server = await loop.create_server(lambda: _Connection(self), sock=self.sock)
        timers = [asyncio.create_task(self._ticks())]
        try:
            await self.stop.wait()
        finally:
            server.close()
            for t in timers:
                t.cancel()
            for t in self.keeper.background:
                t.cancel()
            for c in list(self.connections):
                c.transport.close()  # (what it was sent is still written)
            await self.keeper.saved_so_far()
            for s in caught:
                loop.remove_signal_handler(s)  # (which leaves the default action)
                if before[s] is not None:
                    signal.signal(s, before[s])  # a second SIGTERM: sl's handler, not death

    def _stop(self, signum: int) -> None:
        self.signal = signum
        self.keeper.stopping = True
        self.stop.set()

    async def _ticks(self) -> None:
        """Reload checks, timed saves and stats lines, each on its own period."""
        last_stats = time.monotonic()
        while True:
            await asyncio.sleep(0.25)
            now = time.monotonic()
            self.keeper.tick(now)
            if self.opts.stats_seconds and now - last_stats >= self.opts.stats_seconds:
                last_stats = now
                self.say_stats()

    # -- a connection -----------------------------------------------------------------------

    def _answer(self, data: bytes, name: str,
                line: int) -> tuple[bytes, int, list[asyncio.Future]]:  # fmt: skip
        """Answer whole lines: save commands in their place, the rest in batches; and the
        saves the lines asked for (each done once written)."""
        lines = data.count(b"\n")
        out = []
        saves = []
        if b"save" in data:
            at = 0
            for m in re.finditer(rb"(?m)^[^\n]*save[^\n]*\n", data):
                text = m.group(0)[:-1]
                cmd = _SAVE.match(text)
                if cmd is None:
                    continue
                before = data[at : m.start()]
                if before:
                    out.append(self._score(before, name, line + data.count(b"\n", 0, at)))
                done = self._save_line(cmd.group(1))
                if done is not None:
                    saves.append(done)
                at = m.end()
            data_rest = data[at:]
            if data_rest:
                out.append(self._score(data_rest, name, line + data.count(b"\n", 0, at)))
        else:
            out.append(self._score(data, name, line))
        return b"".join(out), lines, saves

    def _score(self, data: bytes, name: str, line: int) -> bytes:
        long: tuple = ()
        if len(data) > self.opts.max_line_bytes:  # a long complete line within one read
            from streamlearn.io.reader import drop_long_lines

            arr, long = drop_long_lines(np.frombuffer(data, dtype=np.uint8), line,
                                         self.opts.max_line_bytes)  # fmt: skip
            if long:
                data = arr.tobytes()
        body, rows, bad = self.served.answer(data, name, line, long)
        self.counts["lines"] += rows
        self.counts["malformed"] += bad
        if self.served.learner is not None and rows:
            self.keeper.learned(rows - bad)
        return body

    def _save_line(self, path: bytes | None) -> asyncio.Future | None:
        if path is not None and not self.opts.save_paths:
            self.console.warn_once("save path", "sl serve: a 'save_PATH' line names no file "
                                   "here (sl vw --daemon allows it): saved to -f instead")
            path = None
        return self.keeper.save(path.decode("utf-8", "replace") if path is not None else None,
                                "save line")  # fmt: skip

    # -- stats ------------------------------------------------------------------------------

    def stats(self) -> dict:
        lat = sorted(self.latency)

        def q(f: float) -> float | None:
            return lat[min(len(lat) - 1, int(f * len(lat)))] * 1e3 if lat else None

        return dict(self.counts, open=self.open, examples=self.served.examples(),
                    uptime_s=round(time.monotonic() - self.started, 1),
                    p50_ms=q(0.5), p99_ms=q(0.99))  # fmt: skip

    def say_stats(self) -> None:
        s = self.stats()
        text = " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in s.items() if v is not None)  # fmt: skip
        log(self.console, f"sl serve: stats {text}")


class _Connection(asyncio.Protocol):
    """One client's connection: each read cut into whole lines and answered at once, in order.

    A read whose lines hold a save command is answered once the save is written; reads
    that come meanwhile wait, and the connection is not read (nor while the client does
    not read its answers: the transport's write buffer past its high-water mark).  A line
    longer than ``--max-line-bytes`` is dropped as it comes and answered ``nan``; a last
    line without newline at the client's end is answered."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.name = "<client>"
        self.counted = False  # (open: not refused)
        self.carry = b""
        self.skipping = 0  # bytes of a too-long line dropped so far (0: not skipping)
        self.line = 1
        self.saving = False  # a save line is being written: reads wait in ``waiting``
        self.waiting: deque[bytes | None] = deque()  # (None: the client's end)
        self.full = False  # the client does not read its answers

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        srv = self.server
        self.transport = transport  # type: ignore[assignment]
        srv.counts["connections"] += 1
        if srv.open >= srv.opts.max_connections:
            srv.counts["refused"] += 1
            srv.console.warn_once("full", f"sl serve: {srv.open} connections open "
                                  "(--max-connections): further ones are closed at once")
            transport.close()
            return
        self.counted = True
        srv.open += 1
        srv.connections.add(self)
        with contextlib.suppress(OSError):
            transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP,
                                                          socket.TCP_NODELAY, 1)  # fmt: skip
        peer = transport.get_extra_info("peername")
        self.name = f"<{peer[0]}:{peer[1]}>" if isinstance(peer, tuple) else "<client>"

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.counted:
            return
        self.counted = False
        srv = self.server
        srv.open -= 1
        srv.connections.discard(self)
        if hasattr(srv.served, "closed"):  # a bandit's unended example
            srv.served.closed(self.name)

    def data_received(self, data: bytes) -> None:
        if not self.counted:
            return
        if self.saving:
            self.waiting.append(data)
            return
        self._guarded(data)

    def eof_received(self) -> bool:
        if self.counted:
            if self.saving:
                self.waiting.append(None)
            else:
                self._guarded(None)
        return True  # (closed once the last answers are written: _read)

    def pause_writing(self) -> None:
        self.full = True
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.full = False
        if not self.saving:
            self.transport.resume_reading()

    def _guarded(self, data: bytes | None) -> None:
        try:
            self._read(data)
        except (ConnectionError, OSError):
            self.transport.close()  # the client left
        except BaseException:
            self.transport.close()
            raise

    def _read(self, data: bytes | None) -> None:
        """Answer one read (``None``: the client's end: its last line, then close)."""
        srv = self.server
        t0 = time.perf_counter()
        eof = data is None
        if eof:  # the client closed its side: a last line without newline counts
            if not self.carry or self.skipping:
                self.transport.close()
                return
            data = b"\n"
        head = b""
        if self.skipping:
            nl = data.find(b"\n")
            if nl < 0:
                self.skipping += len(data)
                return
            self.skipping = 0
            head = b"nan\n"  # the long line's answer, as a malformed line's
            srv.counts["malformed"] += 1
            srv.counts["lines"] += 1
            self.line += 1
            data = data[nl + 1 :]
        buf = self.carry + data if self.carry else data
        cut = buf.rfind(b"\n") + 1
        self.carry = buf[cut:]
        if len(self.carry) > srv.opts.max_line_bytes:
            self.skipping, self.carry = len(self.carry), b""
        saves: list[asyncio.Future] = []
        if cut:
            body, lines, saves = srv._answer(buf[:cut], self.name, self.line)
            self.line += lines
            head += body
        if saves:  # the answers after a save line come once it is written
            self.saving = True
            self.transport.pause_reading()
            done = asyncio.ensure_future(asyncio.wait(saves))
            done.add_done_callback(lambda _: self._saved(head, t0, eof))
            return
        self._answered(head, t0, eof)

    def _answered(self, head: bytes, t0: float, eof: bool) -> None:
        srv = self.server
        if head:
            self.transport.write(head)
            srv.latency.append(time.perf_counter() - t0)
            srv.counts["reads"] += 1
        if eof:
            self.transport.close()

    def _saved(self, head: bytes, t0: float, eof: bool) -> None:
        """A save line's file is written: its read's answers, then the reads that waited."""
        self.saving = False
        if self.transport.is_closing():
            return
        try:
            self._answered(head, t0, eof)
            while self.waiting and not self.saving and not self.transport.is_closing():
                self._read(self.waiting.popleft())
        except (ConnectionError, OSError):
            self.transport.close()
            return
        if not self.saving and not self.full and not self.transport.is_closing():
            self.transport.resume_reading()
