"""The ``sl`` process: signals from its first instant, standard output that cannot be written."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.marks import slow_except
from tests.paths import ROOT
from tests.unix import SL, default_signals, env, one_line_error, sl, text_data


@pytest.fixture
def model(tmp_path):
    (tmp_path / "d.vw").write_text("1 |f a b\n-1 |f c\n")
    r = sl(["train", "d.vw", "-f", "m.sl", "--quiet"], tmp_path)
    assert r.returncode == 0, r.stderr
    return tmp_path / "m.sl"


@pytest.mark.parametrize(
    "args",
    slow_except([["inspect", "m.sl"], ["inspect", "m.sl", "--json"], ["--help"],
                 ["train", "--help"], ["--version"],
                 ["predict", "-i", "m.sl", "d.vw", "-p", "/dev/stdout", "--quiet"]], 0, 5),
)  # fmt: skip
def test_stdout_on_a_full_disk_is_exit_7(tmp_path, model, args):
    with open("/dev/full", "wb") as full:
        r = subprocess.run([*SL, *args], cwd=tmp_path, env=env(tmp_path), stdout=full,
                           stderr=subprocess.PIPE, timeout=120)  # fmt: skip
    assert r.returncode == 7, r.stderr
    one_line_error(r.stderr)
    assert b"standard output" in r.stderr and b"no space left on device" in r.stderr


def test_stdout_still_works(tmp_path, model):
    r = sl(["inspect", "m.sl"], tmp_path)
    assert r.returncode == 0 and r.stdout.startswith(b"model m.sl")
    r = sl(["SL inspect m.sl | head -c 3"], tmp_path, shell=True)
    assert r.returncode == 0 and r.stdout == b"mod" and r.stderr == b""


def _catches(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has a handler for ``sig`` (``SigCgt`` in /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


# The console script's own code (``from streamlearn.cli import main; main()``), after a
# marker: the process catches SIGUSR2 once the interpreter has started (streams, site).
_SCRIPT = ("import signal; signal.signal(signal.SIGUSR2, lambda *a: None); "
           "from streamlearn.cli import main; main()")  # fmt: skip


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
@pytest.mark.parametrize("sig", slow_except([signal.SIGINT, signal.SIGTERM], 1))
def test_a_signal_during_the_imports_is_one_line_and_128_plus_n(tmp_path, sig):
    """From the first moment the program's code runs, a signal is one line, never a traceback.

    The child runs what the ``sl`` script runs; once ``sl.main`` has installed its
    first handler (before that the interpreter and ``site`` are starting, which no
    program can change), signals come at delays that fall in the imports (click,
    numpy, numba: the first ~0.3 s) and after.
    """
    # the data comes down a pipe that stays open: the run cannot end before the signal,
    # however fast the machine (a file of 2,000 lines was learned within 0.3 s)
    data = text_data(200).encode()
    for delay in (0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.2, 0.3):
        p = subprocess.Popen([sys.executable, "-c", _SCRIPT, "train", "--quiet", "-f", "m.sl"],
                             cwd=tmp_path, env=env(tmp_path), stdin=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             preexec_fn=default_signals)  # fmt: skip
        p.stdin.write(data)
        p.stdin.flush()
        deadline = time.monotonic() + 30
        # from the moment sl's own code has installed its first handler (a loaded machine
        # can take longer than the smallest delay to get from the marker to it)
        # (SIGTERM: Python itself already catches SIGINT, sl installs both at once)
        while not (_catches(p.pid, signal.SIGUSR2) and _catches(p.pid, signal.SIGTERM)) \
                and time.monotonic() < deadline:  # fmt: skip
            time.sleep(0.0002)
        time.sleep(delay)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        assert b"Traceback" not in err, (delay, err.decode())
        assert p.returncode == 128 + sig, (delay, p.returncode, err.decode())
        one_line_error(err)
        assert f"interrupted by {signal.Signals(sig).name}".encode() in err
        assert not (tmp_path / "m.sl").exists()


_WRAPPED = """
import ctypes, sys
import click
from streamlearn.system.process import run

@click.command()
def slow_import():
    # what numba's _dispatcher does when its import of numba._devicearray fails: C code
    # that prints the exception (PyErr_Print(), as PyRun_SimpleString does), then an ImportError
    if ctypes.pythonapi.PyRun_SimpleString(
            b"import os, signal, time; os.kill(os.getpid(), signal.SIGHUP); time.sleep(5)"):
        raise ImportError("numba._devicearray failed to import")

sys.exit(run(slow_import))
"""


def test_a_signal_turned_into_an_import_error_is_one_line_and_128_plus_n():
    """A signal during numba's import (kernels load lazily, after the run's handlers are
    in) reached the program as an ImportError: a traceback and exit 1, once in CI.  Before
    the ImportError, numba's C code printed the signal's exception (``PyErr_Print``): a
    traceback above the one line, once more in CI."""
    p = subprocess.run([sys.executable, "-c", _WRAPPED], capture_output=True, timeout=60,
                       preexec_fn=default_signals)  # fmt: skip
    assert p.returncode == 128 + signal.SIGHUP, p.stderr.decode()
    assert p.stderr == b"Error: interrupted by SIGHUP: nothing written\n"


_SWALLOWED = """
import os, signal, sys, time, weakref
import click
from streamlearn.run.runner import prefetch
from streamlearn.system.process import committing, interruptible, run

def swallow():
    if sys.argv[1] == "callback":  # importlib releases its module locks in weakref callbacks
        class Thing:
            pass
        def callback(ref):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)
        thing = Thing()
        ref = weakref.ref(thing, callback)
        del thing
    else:  # Cython's try: ... except: pass around an ABC registration, in numpy's imports
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)
        except:  # noqa: E722
            pass

def slowly():
    yield 1
    time.sleep(30)
    yield 2

@click.command()
@click.argument("how")
@click.argument("then")
def work(how, then):
    if then == "run":
        swallow()
        with interruptible():
            time.sleep(30)
    elif then == "wait":
        with interruptible():
            for item in prefetch(slowly()):
                swallow()
    elif then == "commit":
        swallow()
        with committing():
            print("committed", flush=True)
    else:
        swallow()
    print("finished", flush=True)

sys.exit(run(work))
"""


@pytest.mark.parametrize("then", slow_except(["run", "wait", "commit", "return"], 0))
@pytest.mark.parametrize("how", ["callback", "bare-except"])
def test_a_signal_whose_exception_was_swallowed_still_ends_the_run(how, then):
    """A handler's exception goes wherever the main thread is, and some code drops it:
    Python prints and drops what a weakref callback raises (importlib's module locks),
    Cython wraps an ABC registration in numpy's imports in ``except: pass``.  Once in CI,
    a SIGTERM that fell there printed a traceback and the run went on to exit 0."""
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-c", _SWALLOWED, how, then], capture_output=True,
                       timeout=60, preexec_fn=default_signals)  # fmt: skip
    assert p.returncode == 128 + signal.SIGTERM, p.stderr.decode()
    assert time.monotonic() - t < 20  # not after the slow input's next item
    assert p.stdout == (b"finished\n" if then == "return" else b"")  # it had no checkpoint
    assert b"Traceback" not in p.stderr and b"Exception ignored" not in p.stderr
    one_line_error(p.stderr)
    assert b"interrupted by SIGTERM" in p.stderr


@pytest.mark.parametrize(
    ("args", "missing"),
    [
        (["predict", str(ROOT / "data" / "sample.vw")], "Missing option '-i' / '--initial-model'"),
        (["plot", "report.json"], "Missing option '-o' / '--output'"),
        (["inspect"], "Missing argument 'MODEL'"),
    ],
)
def test_a_missing_option_or_argument_says_what_is_missing(tmp_path, args, missing):
    """click keeps the text of MissingParameter in format_message(), not in .message."""
    r = sl(args, tmp_path)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert f"Error: {missing}." in err
    assert f"Try 'sl {args[0]} --help' for help." in err
    assert r.stdout == b""


_DEFERRED = """
import os, signal, sys
import click
from streamlearn.system.process import deferring, interruptible, run

@click.command()
def work():
    with interruptible(lambda: "left: " + ", ".join(done)):
        with deferring():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler has run by now (it returned)
                pass
            done.append("written")
        print("not reached", flush=True)

done = []
sys.exit(run(work))
"""


def test_a_signal_inside_a_deferred_step_ends_the_run_after_it():
    """--save_per_pass names each pass model it wrote: the write and the record are one
    step, and a SIGTERM between them (once in CI: the rename done, the name not recorded)
    waits for the step's end, then ends the run as any signal does."""
    p = subprocess.run([sys.executable, "-c", _DEFERRED], capture_output=True, timeout=60,
                       preexec_fn=default_signals)  # fmt: skip
    assert p.returncode == 128 + signal.SIGTERM, p.stderr.decode()
    assert p.stdout == b""
    one_line_error(p.stderr)
    assert b"interrupted by SIGTERM: left: written" in p.stderr
