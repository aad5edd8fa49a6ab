#!/usr/bin/env python
"""Serving, side by side with VW's daemon on one machine and one data set (issue 38).

Measures, on the loopback address only (127.0.0.1):

* one request at a time on one connection: each line sent, its answer awaited
  (p50, p90, p99 of the round trip);
* pipelined on one connection: every line sent by a writer thread while the
  answers are read (lines/s), and the same split over four connections at once;
* a live pipe: ``sl predict -i m -p -`` fed one line at a time (p50, p90);
* one ``--cb_explore_adf`` example at a time (``--bandit``), learned by each daemon;
* one ``--cb_explore 4`` line at a time (``--cb-k``: VW 9's ``--cb K``), learned;
* one ``--ccb_explore_adf`` example at a time (``--ccb``), each daemon continuing the same
  VW model file and learning, and the Python API's rounds (``Workspace.predict`` then
  ``learn``) against VW's;
* the Python API per line: ``Model.predict(lines=[l])`` and ``partial_fit`` against
  VW's ``Workspace.predict`` / ``Workspace.learn`` (if ``vowpalwabbit`` is installed).

Both servers are started with ``--port 0 --port_file`` (sl: ``sl vw --daemon
--foreground``; VW: ``python -m vowpalwabbit --daemon --foreground ... --passes 1``,
since the Python package's command line only runs its parser when it sees a data
or passes option) and killed at the end whatever happens.  Every loop is bounded
in count and in time.

Usage::

    python scripts/make_data.py --examples 20000 --features-per-example 20 \\
        --vocab 100000 --seed 3 -o /tmp/serve.vw
    python scripts/bench_serve.py /tmp/serve.vw --requests 2000 --pipelined 50000
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"
LIMIT = 60.0
"""Seconds any one measurement may take before it stops by itself."""


def pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))] * 1e3


def wait_port(path: str, proc: subprocess.Popen, timeout: float = 120.0) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with contextlib.suppress(OSError, ValueError):
            text = open(path).read()
            if text.endswith("\n"):
                port = int(text)
                with contextlib.suppress(OSError):  # listening?
                    socket.create_connection((HOST, port), timeout=1).close()
                    return port
        time.sleep(0.05)
    raise RuntimeError("server did not start")


@contextlib.contextmanager
def server(cmd: list[str], port_file: str):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield wait_port(port_file, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def read_lines(sock: socket.socket, n: int, deadline: float) -> int:
    """Read until ``n`` newlines arrived (or the deadline); the count read."""
    got = 0
    while got < n and time.monotonic() < deadline:
        r, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            break
        data = sock.recv(1 << 20)
        if not data:
            break
        got += data.count(b"\n")
    return got


def one_at_a_time(port: int, requests: list[bytes], newlines: int | list[int] = 1) -> list[float]:
    """Each request sent, its answer (``newlines`` of them, or each request's count)
    awaited: the round trips."""
    sock = socket.create_connection((HOST, port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    lat = []
    end = time.monotonic() + LIMIT
    counts = newlines if isinstance(newlines, list) else [newlines] * len(requests)
    try:
        for request, want in zip(requests, counts, strict=True):
            t = time.perf_counter()
            sock.sendall(request)
            if read_lines(sock, want, time.monotonic() + 10) != want:
                break
            lat.append(time.perf_counter() - t)
            if time.monotonic() > end:
                break
    finally:
        sock.close()
    return lat[10:]  # the first answers warm the caches


def bandit(args: argparse.Namespace, d: str) -> None:
    """``--cb_explore_adf`` daemons learning from one labeled example at a time."""
    data = os.path.join(d, "cb.txt")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "make_cb_data.py"),
                    "--examples", str(args.bandit), "--actions", "4", "--seed", "1", "-o", data],
                   check=True)  # fmt: skip
    examples = [ex.strip(b"\n") + b"\n\n" for ex in open(data, "rb").read().split(b"\n\n")
                if ex.strip()]  # fmt: skip
    opts = ["--cb_explore_adf", "--epsilon", "0.1", "--quiet"]
    runs = {"sl": [sys.executable, "-m", "streamlearn", "vw", "--daemon", "--foreground",
                   "--port", "0", "--port_file", os.path.join(d, "slcb.port"), *opts]}  # fmt: skip
    if not args.no_vw:
        runs["vw"] = [sys.executable, "-m", "vowpalwabbit", "--daemon", "--foreground", "--port",
                      "0", "--port_file", os.path.join(d, "vwcb.port"), "--passes", "1",
                      *opts]  # fmt: skip
    for name, cmd in runs.items():
        with server(cmd, cmd[cmd.index("--port_file") + 1]) as port:
            lat = one_at_a_time(port, examples, 2)  # (the pmf line and a blank line)
            print(f"{name} daemon, --cb_explore_adf, one labeled example at a time: n={len(lat)} "
                  f"p50 {pct(lat, .5):.3f} ms, p90 {pct(lat, .9):.3f} ms, "
                  f"p99 {pct(lat, .99):.3f} ms")  # fmt: skip


def cb_k(args: argparse.Namespace, d: str) -> None:
    """``--cb 4 --cb_explore 4`` daemons (VW 9's --cb K, on cb_adf) learning from one
    labeled line at a time: each answer a pmf line and a blank line."""
    import random

    r = random.Random(1)
    lines = [f"{r.randint(1, 4)}:{r.randint(0, 1)}:0.25 |f u{r.randrange(50)} "
             f"v{r.randrange(9)} w{r.randrange(200)}\n".encode()
             for _ in range(args.cb_k)]  # fmt: skip
    opts = ["--cb_explore", "4", "--epsilon", "0.1", "--quiet"]
    runs = {"sl": [sys.executable, "-m", "streamlearn", "vw", "--daemon", "--foreground",
                   "--port", "0", "--port_file", os.path.join(d, "slk.port"), *opts]}  # fmt: skip
    if not args.no_vw:
        runs["vw"] = [sys.executable, "-m", "vowpalwabbit", "--daemon", "--foreground", "--port",
                      "0", "--port_file", os.path.join(d, "vwk.port"), "--passes", "1",
                      *opts]  # fmt: skip
    for name, cmd in runs.items():
        with server(cmd, cmd[cmd.index("--port_file") + 1]) as port:
            lat = one_at_a_time(port, lines, 2)
            print(f"{name} daemon, --cb_explore 4, one labeled line at a time: n={len(lat)} "
                  f"p50 {pct(lat, .5):.3f} ms, p90 {pct(lat, .9):.3f} ms, "
                  f"p99 {pct(lat, .99):.3f} ms")  # fmt: skip


def ccb_log(n: int, seed: int) -> list[bytes]:
    """CCB examples: a shared line, 3-5 actions, 1-2 slots (most labeled)."""
    import random

    r = random.Random(seed)
    out = []
    for _ in range(n):
        k = r.randint(3, 5)
        lines = [f"ccb shared |User u{r.randrange(20)} v{r.randrange(5)}"]
        lines += [f"ccb action |Action a{a} t{r.randrange(4)}" for a in range(k)]
        for s in range(r.randint(1, 2)):
            label = f" {r.randrange(k)}:{r.choice([0, -1, 1])}:{r.choice([0.2, 0.5, 1])}" \
                if r.random() < 0.8 else ""  # fmt: skip
            lines.append(f"ccb slot{label} |Slot s{s}")
        out.append(("\n".join(lines) + "\n\n").encode())
    return out


def ccb(args: argparse.Namespace, d: str) -> None:
    """``--ccb_explore_adf``: both daemons continue one VW model and learn one example at a
    time; then the Python API's rounds (predict, then learn) against VW's package."""
    examples = ccb_log(args.ccb, 2)
    train = os.path.join(d, "ccb.txt")
    with open(train, "wb") as f:
        f.writelines(ccb_log(2000, 1))
    model = os.path.join(d, "ccb.vw")
    subprocess.run([sys.executable, "-m", "streamlearn", "vw", "--ccb_explore_adf", "-q", "::",
                    "-d", train, "-f", model, "--quiet"], check=True)  # fmt: skip
    slots = [ex.count(b"ccb slot") + 1 for ex in examples]  # (a line a slot, a blank line)
    runs = {"sl": [sys.executable, "-m", "streamlearn", "vw"]}
    if not args.no_vw:
        runs["vw"] = [sys.executable, "-m", "vowpalwabbit", "--passes", "1"]
    for name, head in runs.items():
        port_file = os.path.join(d, f"{name}ccb.port")
        cmd = [*head, "--daemon", "--foreground", "--port", "0", "--port_file", port_file,
               "-i", model, "--quiet"]  # fmt: skip
        with server(cmd, port_file) as port:
            lat = one_at_a_time(port, examples, slots)
            print(f"{name} daemon, --ccb_explore_adf, one example at a time, learned: "
                  f"n={len(lat)} p50 {pct(lat, .5):.3f} ms, p90 {pct(lat, .9):.3f} ms, "
                  f"p99 {pct(lat, .99):.3f} ms")  # fmt: skip
    mods = {"sl": "streamlearn.vowpalwabbit"}
    if not args.no_vw:
        mods["vw"] = "vowpalwabbit"
    rounds = [[ln for ln in ex.decode().split("\n") if ln] for ex in examples]
    for name, mod in mods.items():
        import importlib

        ws = importlib.import_module(mod).Workspace(f"-i {model} --quiet")
        t = time.perf_counter()
        for ex in rounds:
            ws.predict(ex)
            ws.learn(ex)
        per = (time.perf_counter() - t) / len(rounds)
        print(f"{name} Workspace, --ccb_explore_adf, a round (predict, learn): "
              f"{per * 1e6:.0f} us")


def pipelined(port: int, lines: list[bytes], connections: int = 1) -> float:
    """Lines per second answered, ``lines`` split over ``connections`` at once."""
    parts = [lines[i::connections] for i in range(connections)]
    socks = [socket.create_connection((HOST, port), timeout=10) for _ in parts]
    got = [0] * connections
    deadline = time.monotonic() + LIMIT

    def run(k: int) -> None:
        s = socks[k]
        payload = b"".join(parts[k])
        w = threading.Thread(target=lambda: s.sendall(payload), daemon=True)
        w.start()
        got[k] = read_lines(s, len(parts[k]), deadline)
        w.join(5)

    t = time.perf_counter()
    threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(connections)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(LIMIT + 10)
    elapsed = time.perf_counter() - t
    for s in socks:
        s.close()
    if sum(got) != len(lines):
        print(f"  (only {sum(got)} of {len(lines)} answers within {LIMIT:g} s)", file=sys.stderr)
    return sum(got) / elapsed


def live_pipe(model: str, lines: list[bytes]) -> list[float]:
    cmd = [sys.executable, "-m", "streamlearn", "predict", "-i", model, "-p", "-", "--quiet"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)  # fmt: skip
    lat = []
    try:
        end = time.monotonic() + LIMIT
        for i, line in enumerate(lines):
            t = time.perf_counter()
            p.stdin.write(line)
            p.stdin.flush()
            r, _, _ = select.select([p.stdout], [], [], 120 if i == 0 else 10)
            if not r:
                break
            p.stdout.readline()
            if i:
                lat.append(time.perf_counter() - t)
            if time.monotonic() > end:
                break
    finally:
        p.kill()
        p.wait()
    return lat


def api_costs(model: str, vw_model: str | None, lines: list[bytes], n: int,
              rounds: int = 3) -> dict:
    """Seconds per line of each call, the best of ``rounds`` interleaved rounds (a shared
    machine's pauses fall on one round, not on one program)."""
    from streamlearn.api import Model

    texts = [x.decode() for x in lines[:n]]
    m = Model.load(model)
    m.predict(lines=texts[:5])
    m.partial_fit(lines=texts[:5])
    ws = None
    try:
        import vowpalwabbit

        ws = vowpalwabbit.Workspace(f"-i {vw_model} --quiet") if vw_model else None
    except ImportError:
        pass
    def sl_both(x: str) -> None:  # an online user's round: score the line, then learn it
        m.predict(lines=[x])
        m.partial_fit(lines=[x])

    def vw_both(x: str) -> None:
        ws.predict(x)
        ws.learn(x)

    calls = {"sl predict": lambda x: m.predict(lines=[x]),
             "sl partial_fit": lambda x: m.partial_fit(lines=[x]),
             "sl predict+partial_fit": sl_both}  # fmt: skip
    if ws is not None:
        calls.update({"vw predict": ws.predict, "vw learn": ws.learn,
                      "vw predict+learn": vw_both})  # fmt: skip
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, call in calls.items():
            t = time.perf_counter()
            for x in texts:
                call(x)
            per = (time.perf_counter() - t) / len(texts)
            best[name] = min(best.get(name, per), per)
    if ws is not None:
        ws.finish()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="VW text lines (labeled): trained on, then sent as requests")
    ap.add_argument("--requests", type=int, default=2000, help="one-at-a-time requests")
    ap.add_argument("--pipelined", type=int, default=50000, help="lines sent pipelined")
    ap.add_argument("--live", type=int, default=300, help="lines through the live pipe")
    ap.add_argument("--api", type=int, default=2000, help="lines through the Python API")
    ap.add_argument("--bandit", type=int, default=2000,
                    help="--cb_explore_adf examples (4 actions), one at a time, learned")
    ap.add_argument("--cb-k", type=int, default=0,
                    help="--cb_explore 4 lines (VW 9's --cb K), one at a time, learned")
    ap.add_argument("--ccb", type=int, default=0,
                    help="--ccb_explore_adf examples, one at a time, learned; API rounds")
    ap.add_argument("--no-vw", action="store_true", help="sl only")
    args = ap.parse_args()
    lines = open(args.data, "rb").readlines()
    if not lines:
        sys.exit("no lines")
    pipe_lines = (lines * (args.pipelined // len(lines) + 1))[: args.pipelined]
    with tempfile.TemporaryDirectory() as d:
        sl_model, vw_model = os.path.join(d, "m.sl"), os.path.join(d, "m.vw")
        subprocess.run([sys.executable, "-m", "streamlearn", "vw", "-d", args.data, "-f",
                        sl_model, "--quiet"], check=True)  # fmt: skip
        runs = {"sl": [sys.executable, "-m", "streamlearn", "vw", "--daemon", "--foreground",
                       "--port", "0", "--port_file", os.path.join(d, "sl.port"), "-t", "-i",
                       sl_model, "--quiet"]}  # fmt: skip
        if not args.no_vw:
            subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", args.data, "-f", vw_model,
                            "--quiet"], check=True)  # fmt: skip
            runs["vw"] = [sys.executable, "-m", "vowpalwabbit", "--daemon", "--foreground",
                          "--port", "0", "--port_file", os.path.join(d, "vw.port"), "-t", "-i",
                          vw_model, "--passes", "1", "--quiet"]  # fmt: skip
        print(f"{len(lines)} lines of {args.data}; {os.cpu_count()} CPUs (shared)")
        for name, cmd in runs.items():
            with server(cmd, cmd[cmd.index("--port_file") + 1]) as port:
                lat = one_at_a_time(port, lines[: args.requests])
                print(f"{name} daemon, one at a time: n={len(lat)} p50 {pct(lat, .5):.3f} ms, "
                      f"p90 {pct(lat, .9):.3f} ms, p99 {pct(lat, .99):.3f} ms")
                one = pipelined(port, pipe_lines, 1)
                four = pipelined(port, pipe_lines, 4)
                print(f"{name} daemon, pipelined: one connection {one:,.0f} lines/s, "
                      f"four connections {four:,.0f} lines/s")
        if args.bandit:
            bandit(args, d)
        if args.cb_k:
            cb_k(args, d)
        if args.ccb:
            ccb(args, d)
        if args.live:
            lat = live_pipe(sl_model, lines[: args.live])
            print(f"sl predict -p - live pipe: n={len(lat)} p50 {pct(lat, .5):.3f} ms, "
                  f"p90 {pct(lat, .9):.3f} ms")
        if args.api:
            costs = api_costs(sl_model, None if args.no_vw else vw_model, lines, args.api)
            print("Python API per line: " + ", ".join(f"{k} {v * 1e3:.3f} ms"
                                                      for k, v in costs.items()))


if __name__ == "__main__":
    main()
