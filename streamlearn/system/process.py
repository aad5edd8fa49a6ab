"""The process around a command: standard streams, signals, exit codes.

:func:`run` is what the ``sl`` console script calls.  It makes sure that

* closed standard descriptors (``sl train <&- 2>&-``) are reopened on
  ``/dev/null`` before anything else can take their numbers, so no file the
  run opens becomes "stderr"; reading a closed stdin or writing predictions to
  a closed stdout is then a clear error, and a closed stderr just means silence;
* SIGINT, SIGTERM and SIGHUP stop the run the same clean way wherever it is
  (waiting on a slow stdin, compiling, learning): nothing is written over an
  existing output, temporary files and caches are removed, and the exit
  status is 128 + the signal's number, as shells report it (also when code
  that catches everything swallowed the exception: :func:`raise_pending`).
  Once a finished run starts making its outputs visible (:func:`committing`) it completes:
  a signal then is held and dropped, so outputs are all old or all new --
  unless the commit stays blocked (a FIFO nobody reads, a hung disk) for
  :data:`COMMIT_GRACE` seconds after the signal: then the program ends
  anyway, saying so (signals end a run within a second wherever it blocks);
* every :class:`click.ClickException` (our :class:`~streamlearn.errors.SlError`
  included) prints one line and exits with its documented code;
* a reader of standard output that goes away (``sl inspect m | head -1``)
  ends the run quietly with 141 instead of a traceback, and standard output
  that cannot be written (``sl inspect m > /dev/full``, ``sl --help > /dev/full``)
  is one line and exit 7 (:func:`guard_stdout`).

Anything else is a bug and keeps its traceback (exit 1).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import NoReturn

import click

from streamlearn.errors import Interrupted, OutputUnwritable
from streamlearn.system import sources
from streamlearn.system.text import printable

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_HOLD_TO_EXIT = False
"""Set by :func:`run`: after :func:`committing`, signals stay held until the process exits."""
_HELD = False
_COMMITTING = 0
"""Inside :func:`committing` (a count: a grid's runs may nest nothing, but a caller may)."""
COMMIT_GRACE = 0.5
"""Seconds a held signal waits for a blocked commit before the program ends anyway."""
_watch: threading.Timer | None = None
NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


class Signalled(KeyboardInterrupt):
    """Raised in the main thread by a handled signal; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(NAMES.get(signum, str(signum)))
        self.signum = signum


_PENDING: int | None = None
"""The ``sl`` program's signal whose :class:`Signalled` has not yet become an error."""

_DEFERRING = 0
_DEFERRED: int | None = None
"""A signal that came inside :func:`deferring`, raised when its block ends."""


def _handler(signum, frame):  # noqa: ANN001 - signal API
    global _PENDING, _DEFERRED
    if _HELD:  # the run is committing its outputs: it completes, unless it is blocked
        _watch_commit(signum)
        return
    if _DEFERRING:  # a step that must finish once begun: the signal waits for its end
        _DEFERRED = signum
        return
    if _HOLD_TO_EXIT:
        _PENDING = signum
    raise Signalled(signum)


def raise_pending() -> None:
    """Raise again the ``sl`` program's signal if its :class:`Signalled` was swallowed.

    A handler's exception goes wherever the main thread happens to be, and
    some code there catches everything: Cython's ``try: ... except: pass``
    around an ABC registration in numpy's imports, or a weakref callback
    (importlib's module locks), whose exceptions Python prints and drops.
    The run would go on and exit 0.  So the program's signal stays pending
    until :func:`interrupted` has made it an error, and the run calls this
    where it starts (:func:`interruptible`), between batches, while it waits
    for input, and before it commits (:func:`committing`).  A library caller's
    signals are its own: nothing is pending for it.
    """
    if _PENDING is not None and not _HELD:
        raise Signalled(_PENDING)


def _unraisable(unraisable) -> None:  # noqa: ANN001 - sys.UnraisableHookArgs
    """``sys.unraisablehook`` of the ``sl`` program: a dropped :class:`Signalled` is no
    "Exception ignored" traceback; it stays pending (:func:`raise_pending`)."""
    if not isinstance(unraisable.exc_value, Signalled):
        _previous_unraisablehook(unraisable)


_previous_unraisablehook = sys.unraisablehook


def _excepthook(kind, value, tb) -> None:  # noqa: ANN001 - sys.excepthook
    """``sys.excepthook`` of the ``sl`` program: a :class:`Signalled` that C code printed
    is no traceback; it stays pending (:func:`raise_pending`).

    numba's ``_dispatcher`` imports ``numba._devicearray`` in its module init and, if
    that fails, calls ``PyErr_Print()`` (which calls this hook) before raising an
    ImportError: a signal that came at that import printed a traceback above the
    run's one line.  The top level never gets here with a :class:`Signalled`:
    :func:`run` catches it.
    """
    if not isinstance(value, Signalled):
        _previous_excepthook(kind, value, tb)


_previous_excepthook = sys.excepthook


def _watch_commit(signum: int) -> None:
    """After a signal held while committing: end the program if the commit is still
    blocked :data:`COMMIT_GRACE` seconds later (only ``sl`` itself, not a library caller)."""
    global _watch
    if not _HOLD_TO_EXIT or _watch is not None or not _COMMITTING:
        return
    _watch = threading.Timer(COMMIT_GRACE, _give_up, args=(signum,))
    _watch.daemon = True
    _watch.start()


def _give_up(signum: int) -> None:
    """The commit is still blocked a second after a signal: end ``sl`` now (timer thread)."""
    if not _COMMITTING:
        return  # it finished: the run completes as documented
    from streamlearn.system import outputs

    name = NAMES.get(signum, str(signum))
    text = (f"Error: interrupted by {name}: writing the outputs was blocked for "
            f"{COMMIT_GRACE:g} s (a FIFO or device nobody reads?); the outputs already made "
            "visible stay, the others are not written\n")  # fmt: skip
    with contextlib.suppress(OSError):
        os.write(2, text.encode())
    with contextlib.suppress(Exception):
        outputs.remove_temps()
    os._exit(128 + signum)


def install_signal_handlers() -> None:
    """SIGINT, SIGTERM and SIGHUP raise :class:`Signalled` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for s in SIGNALS:
        with contextlib.suppress(OSError, ValueError):
            if signal.getsignal(s) is not signal.SIG_IGN:  # nohup, background jobs: keep
                signal.signal(s, _handler)


def signal_number(e: BaseException) -> int:
    return e.signum if isinstance(e, Signalled) else int(signal.SIGINT)


def interrupted(e: BaseException, what: str = "no model written") -> Interrupted:
    """The :class:`Interrupted` error for a :class:`KeyboardInterrupt` (or :class:`Signalled`)."""
    global _PENDING
    _PENDING = None  # it has reached us: it ends the run now
    signum = signal_number(e)
    return Interrupted(f"interrupted by {NAMES.get(signum, signum)}: {what}", signum)


@contextlib.contextmanager
def interruptible(what: str | Callable[[], str] = "no model written") -> Iterator[None]:
    """Turn SIGINT/SIGTERM/SIGHUP inside the block into :class:`Interrupted`.

    ``what``: what the run leaves written, or a function saying it when the signal comes
    (a run that saved each pass's model has written some).
    """
    install_signal_handlers()
    try:
        raise_pending()
        yield
    except KeyboardInterrupt as e:
        raise interrupted(e, what() if callable(what) else what) from None


@contextlib.contextmanager
def committing() -> Iterator[None]:
    """The outputs of a finished run are being made visible: signals no longer stop it.

    A SIGINT/SIGTERM/SIGHUP that arrives meanwhile is dropped by the handler
    (a thread mask would not do: the kernel may hand the signal to the parser
    thread, and Python then runs the handler in the main thread anyway): the
    run completes (exit 0) with every output written, rather than stopping
    between the model and the predictions or the report.  The sl program
    keeps dropping them until it exits; a library caller gets them back after.

    A commit that is still blocked :data:`COMMIT_GRACE` seconds after such a
    signal (a report to a FIFO nobody reads; a hung file system) ends the sl
    program anyway, with 128 + the signal's number and a message saying that
    what was already made visible stays.
    """
    global _HELD, _COMMITTING
    raise_pending()
    _HELD = True
    _COMMITTING += 1
    try:
        yield
    finally:
        _COMMITTING -= 1
        if not _HOLD_TO_EXIT:
            _HELD = False


@contextlib.contextmanager
def deferring() -> Iterator[None]:
    """A step that must finish once begun, and be recorded: a signal that arrives inside
    the block is raised as it ends.

    A pass's model (``--save_per_pass``) is written and then named in the run's
    list of what it left; a SIGTERM between the file's rename and the list's
    append left a file the run's last line did not name.  The step is short
    (one model's write), so the signal is late by that much, not dropped.
    """
    global _DEFERRING, _DEFERRED, _PENDING
    raise_pending()
    _DEFERRING += 1
    try:
        yield
    finally:
        _DEFERRING -= 1
        signum = _DEFERRED if not _DEFERRING else None
        if signum is not None:
            _DEFERRED = None
            if _HOLD_TO_EXIT:
                _PENDING = signum  # raised again if the exception below is swallowed
    if signum is not None:
        raise Signalled(signum)


def reopen_closed_std_fds() -> None:
    """Put ``/dev/null`` on closed descriptors 0, 1 and 2 (see the module docstring)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        if fd == 0:
            sources.STDIN_CLOSED = True
        elif fd == 2:
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115 - silence, not None
        # fd 1: sys.stdout stays None, so '-p -' reports that stdout is closed


class _GuardedStdout(io.FileIO):
    """Descriptor 1 for ``sys.stdout``: a failed write is an :class:`OutputUnwritable` (exit 7).

    After the failure, standard output goes to ``/dev/null``, so that the
    interpreter's later flushes of what is still buffered do not fail again.
    A broken pipe stays a :class:`BrokenPipeError` (exit 141, quietly).
    """

    def write(self, b) -> int:  # noqa: ANN001 - bytes-like
        try:
            return super().write(b)
        except BrokenPipeError:
            raise
        except OSError as e:
            silence_stdout()
            raise OutputUnwritable(f"cannot write standard output: {sources.describe(e)}") from None


def guard_stdout() -> None:
    """Make a failed write to ``sys.stdout`` one line and exit 7 (:class:`_GuardedStdout`).

    Only for the ``sl`` program, whose ``sys.stdout`` writes to descriptor 1;
    the text layer keeps its encoding, error handler and line buffering.
    """
    old = sys.stdout
    try:
        if old is None or old.fileno() != 1:
            return
        old.flush()
        raw = _GuardedStdout(1, "wb", closefd=False)
        sys.stdout = io.TextIOWrapper(
            io.BufferedWriter(raw), encoding=old.encoding, errors=old.errors,
            line_buffering=old.line_buffering,
        )  # fmt: skip
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return


def _error(text: str) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(text, file=sys.stderr, flush=True)


def silence_stdout() -> None:
    """After a broken pipe on stdout: let the interpreter's final flush go nowhere."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def exit_now(code: int) -> NoReturn:
    """End the ``sl`` process with ``code``, skipping the interpreter's own finalization.

    Once kernels are loaded, Python's finalization (modules torn down one by
    one, numba's and LLVM's objects collected) takes ~0.1 s, 5% of a gigabyte's
    run and a fifth of a small one, to free memory the system frees anyway.
    :func:`run` has committed, closed or removed every output by then; exit
    handlers (``atexit``: logging, Dask) still run and the standard streams
    are flushed first.  Only for the program: a library caller keeps its
    interpreter.
    """
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is not None:
        run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code)


def run(command: click.Command, prog_name: str = "sl") -> int:
    """Run ``command`` as the ``sl`` program (or ``prog_name``); return the exit status."""
    from streamlearn.system import outputs
    global _HOLD_TO_EXIT
    _HOLD_TO_EXIT = True
    reopen_closed_std_fds()
    sys.unraisablehook = _unraisable
    sys.excepthook = _excepthook
    code = 0
    try:
        # (inside: a signal the moment its handler is in place is this run's error line;
        # until then the early handler of streamlearn.cli.main ends the program)
        install_signal_handlers()
        guard_stdout()
        rv = command.main(prog_name=prog_name, standalone_mode=False)
        raise_pending()  # a command that committed nothing ends as the signal said
        code = rv if isinstance(rv, int) else 0
    except click.ClickException as e:
        # a broken pipe ends quietly (no message); click's MissingParameter keeps its
        # text in format_message(), not in .message
        if e.format_message():
            if e.message:
                e.message = printable(e.message, keep="\n")  # a file or line from the input
            with contextlib.suppress(OSError, ValueError, AttributeError):
                e.show()
        code = e.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt) as e:
        cause = e.__cause__ if isinstance(e, click.exceptions.Abort) else e
        err = interrupted(cause if isinstance(cause, BaseException) else e, "nothing written")
        _error(f"Error: {err.message}")
        code = err.exit_code
    except BrokenPipeError:
        silence_stdout()
        code = 141
    except ImportError:
        if _PENDING is None:
            raise
        # the signal came during an import (numba's, loading the kernels), and an
        # extension module's import turned its Signalled into an ImportError
        err = interrupted(Signalled(_PENDING), "nothing written")
        _error(f"Error: {err.message}")
        code = err.exit_code
    finally:
        outputs.remove_temps()
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        code = code or 141
    except OutputUnwritable as e:
        if not code:
            _error(f"Error: {e.message}")
            code = e.exit_code
    except OSError:
        pass
    return code
