"""Writing outputs without destroying anything: atomic replace, write-through, locks.

What a path names decides how it is written (DESIGN.md section 8; ``install``,
``rsync`` and git are the references):

* ``-``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``: the open descriptor
  itself, never reopened (reopening would truncate a file it is redirected to).
* A character or block device, a FIFO or a socket: opened and written
  through (``-f /dev/null`` must not replace the system's ``/dev/null``).
* Anything else (a regular file, a new name): written to a unique temporary
  file in the target's directory, flushed, fsynced, given the mode (and, when
  permitted, the owner) of the file it replaces -- or the umask's mode for a
  new file -- and renamed over the target.  A symlink is followed as the OS
  follows it (:func:`target`): its target is replaced and the link stays; a
  path is never normalised before the OS resolves it (``no_such_dir/../m``
  fails as ``open`` would).  A crash, a signal or a full disk leaves the old
  file whole and no temporary file behind (:func:`remove_temps`).

The outputs of one run are made visible together (:func:`staging`): every
one is written in full first -- files to their temporary files, fsynced;
devices and FIFOs, which cannot be staged, after the files -- and only then
are the temporary files renamed, the models last.  So a run whose report or
predictions cannot be written leaves the old model in place.

Temporary files are named ``.NAME.sltmp-PID.XXXXXXXX.tmp`` and hold an
``flock`` while their process lives; temporary directories
``PREFIXsltmp-PID.XXXXXXXX`` likewise.  Those a killed run left behind are
removed by a later run only when both say the owner is gone (no process PID,
the lock free): a file sl did not create is never touched.

Every failure is an :class:`~streamlearn.errors.OutputUnwritable` naming the
path and the OS's reason.  :func:`check_outputs` refuses, before any work, an
output that names an input or another output.  Runs that continue one model in
place take turns through :func:`streamlearn.system.locks.model_lock`.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import fcntl
import io
import os
import re
import select
import stat
import sys
import tempfile
from collections.abc import Iterator
from typing import IO

from streamlearn.errors import OutputUnwritable, UsageError
from streamlearn.system.sources import describe, same_stream

STDOUT = ("-", "/dev/stdout")
"""Paths that mean standard output."""

_FD_PATH = re.compile(r"^(?:/dev/fd/|/proc/self/fd/)(\d+)$")
_TEMPS: set[str] = set()
_HELD: dict[str, int] = {}
"""Temporary directories of this process -> the descriptor holding their flock."""

MARK = "sltmp-"
"""What every temporary name sl makes carries, before its process id and random token."""
_TOKEN = r"[a-z0-9_]{8}"  # tempfile's random part
MAXSYMLINKS = 40
"""Links followed before giving up with ELOOP (Linux's limit)."""
PID_LIMIT = 1 << 22
"""Linux's largest process id (``pid_max`` cannot exceed it on 64-bit)."""

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def descriptor(path: str) -> int | None:
    """The open file descriptor ``path`` names (``-`` is 1), or None for a file path."""
    if path in STDOUT:
        return 1
    if path == "/dev/stderr":
        return 2
    m = _FD_PATH.match(path)
    return int(m.group(1)) if m else None


def is_special(path: str) -> bool:
    """True when ``path`` is written through: a descriptor, a device, a FIFO or a socket."""
    if descriptor(path) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _stdout() -> IO:
    """Standard output as an unbuffered binary file (the one ``sys.stdout`` writes to)."""
    if sys.stdout is None:
        raise OSError(errno.EBADF, "standard output is closed")
    sys.stdout.flush()
    try:
        if sys.stdout.fileno() == 1:
            return io.FileIO(1, "wb", closefd=False)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass
    return sys.stdout.buffer  # a stand-in without a descriptor (tests)


def unwritable(what: str, path: str, e: BaseException) -> OutputUnwritable:
    shown = "standard output" if path in STDOUT else path
    return OutputUnwritable(f"cannot write {what} {shown}: {describe(e)}")


# ---------------------------------------------------------------------------
# temporary files


def remove_temps() -> None:
    """Delete every temporary file or directory this process still owns (at exit, on signals)."""
    import shutil

    for p in list(_TEMPS):
        _TEMPS.discard(p)
        try:
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass
        _release(p)


def _release(path: str) -> None:
    fd = _HELD.pop(path, None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def temp_dir(prefix: str) -> str:
    """A private temporary directory ``PREFIXsltmp-PID.XXXXXXXX``, removed by
    :func:`forget_temp` or at exit.

    It holds an ``flock`` while this process lives, so that a later run can
    tell (:func:`_remove_stale_dirs`) that a killed run's directory is orphaned.
    """
    base = tempfile.gettempdir()
    _remove_stale_dirs(base, prefix)
    d = tempfile.mkdtemp(prefix=f"{prefix}{MARK}{os.getpid()}.", dir=base)
    _TEMPS.add(d)
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _HELD[d] = fd
    except OSError:
        pass  # no lock on this file system: the directory still carries its owner's pid
    return d


def forget_temp(path: str, remove: bool = True) -> None:
    """Stop tracking ``path``; delete it first unless ``remove`` is False."""
    _TEMPS.discard(path)
    if remove:
        import shutil

        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    _release(path)


def _owner_gone(pid_text: str) -> bool:
    """True when no process has the id ``pid_text`` (a name's digits, any length)."""
    pid = int(pid_text)
    if not 0 < pid <= PID_LIMIT:
        return False  # not a pid sl wrote: leave it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: alive, another user's
        return False
    return False


def _orphaned(path: str, directory: bool) -> bool:
    """True when nobody holds the flock of ``path``, a regular file (or directory) of
    ours, not a symlink."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    if directory:
        flags |= os.O_DIRECTORY
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        kind = stat.S_ISDIR if directory else stat.S_ISREG
        if not kind(st.st_mode) or st.st_uid != os.geteuid():
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:  # held (the owner lives), or no locks here: leave it
        return False
    finally:
        os.close(fd)


def _remove_stale(target: str) -> None:
    """Delete temporary files of ``target`` left by runs that were killed.

    Only names sl makes (``.NAME.sltmp-PID.XXXXXXXX.tmp``), whose process is
    gone and whose flock nobody holds: a user's ``.NAME.123.backup.tmp`` is
    never touched.
    """
    parent, name = os.path.split(target)
    pattern = re.compile(rf"\.{re.escape(name)}\.{MARK}([0-9]{{1,20}})\.{_TOKEN}\.tmp")
    try:
        entries = os.listdir(parent or ".")
    except OSError:
        return
    for entry in entries:
        m = pattern.fullmatch(entry)
        if m is None or not _owner_gone(m.group(1)):
            continue
        path = os.path.join(parent, entry)
        if _orphaned(path, directory=False):
            with contextlib.suppress(OSError):
                os.unlink(path)


def _remove_stale_dirs(base: str, prefix: str) -> None:
    """Delete temporary directories ``PREFIXsltmp-PID.XXXXXXXX`` of killed runs in ``base``."""
    import shutil

    pattern = re.compile(rf"{re.escape(prefix)}{MARK}([0-9]{{1,20}})\.{_TOKEN}")
    try:
        entries = os.listdir(base)
    except OSError:
        return
    for entry in entries:
        m = pattern.fullmatch(entry)
        if m is None or not _owner_gone(m.group(1)):
            continue
        path = os.path.join(base, entry)
        if _orphaned(path, directory=True):
            shutil.rmtree(path, ignore_errors=True)


def target(path: str) -> str:
    """The file a write to ``path`` lands on: its symlinks followed as the OS follows them.

    Only the last component's links are followed (the OS resolves the
    directories when the file is opened), and nothing is normalised: in
    ``no_such_dir/../m.sl`` the OS looks for ``no_such_dir`` and fails, so
    must we (``os.path.realpath`` would write ``./m.sl``).  A dangling link
    gives its target (created, as ``open`` creates it); a loop raises ELOOP.
    """
    t = path
    for hops in range(MAXSYMLINKS + 1):
        try:
            link = os.readlink(t)
        except OSError as e:
            if e.errno in (errno.EINVAL, errno.ENOENT):
                return t  # not a link, or nothing there yet
            raise
        if hops == MAXSYMLINKS:
            break
        t = os.path.join(os.path.dirname(t), link)
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)


# ---------------------------------------------------------------------------
# one output


class Output:
    """An output being written; :meth:`commit` makes it visible, :meth:`abort` drops it.

    ``file`` is a binary file object; ``what`` names the output in messages.
    :meth:`prepare` does everything but make it visible (a temporary file is
    flushed and fsynced), so that several outputs can be made visible
    together (:class:`Staged`).
    """

    def __init__(self, path: str, what: str, buffering: int = -1) -> None:
        if not path:
            raise UsageError(f"{what}: the path is empty")
        self.path = path
        self.what = what
        self.tmp: str | None = None
        self.real: str | None = None
        self.closed = False
        self.prepared = False
        fd = descriptor(path)
        try:
            if fd is not None:  # written unbuffered, so a lost reader is noticed at once
                self.file: IO = _stdout() if fd == 1 else io.FileIO(fd, "wb", closefd=False)
                self._owns = False
            elif is_special(path):
                self.file = io.FileIO(path, "wb")
                self._owns = True
            else:
                self._owns = True
                self.real = target(path)
                parent, name = os.path.split(self.real)
                _remove_stale(self.real)
                tfd, self.tmp = tempfile.mkstemp(
                    prefix=f".{name}.{MARK}{os.getpid()}.", suffix=".tmp", dir=parent or "."
                )
                _TEMPS.add(self.tmp)
                # held until the rename: a later run's clean-up sees the temp is alive
                with contextlib.suppress(OSError):
                    fcntl.flock(tfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._set_mode(tfd)
                self.file = os.fdopen(tfd, "wb", buffering=buffering)
        except OSError as e:
            self.abort()
            raise unwritable(what, path, e) from None

    @property
    def staged(self) -> bool:
        """True when written to a temporary file (False: written through)."""
        return self.real is not None

    def _set_mode(self, fd: int) -> None:
        """The replaced file's mode and owner, or the umask's mode for a new file."""
        try:
            st = os.stat(self.real)
        except OSError:
            os.fchmod(fd, 0o666 & ~_UMASK)
            return
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
        if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):
                os.fchown(fd, st.st_uid, st.st_gid)

    def write(self, data) -> None:  # noqa: ANN001 - bytes-like
        """Write all of ``data``; an :class:`OSError` aborts (a broken pipe is re-raised).

        Loops over short writes: a pipe whose reader leaves mid-write accepts
        part of the data, and only the next write reports the broken pipe.
        """
        view = memoryview(data).cast("B")
        try:
            while view:
                n = self.file.write(view)
                if n is None:  # a non-blocking descriptor that is full: wait for it
                    select.select([], [self.file.fileno()], [])
                    continue
                view = view[n:]
        except OSError as e:
            self._fail(e)

    def flush(self) -> None:
        try:
            self.file.flush()
        except OSError as e:
            self._fail(e)

    def _fail(self, e: OSError):
        self.abort()
        if isinstance(e, BrokenPipeError):
            raise e
        raise unwritable(self.what, self.path, e) from None

    def prepare(self) -> None:
        """Everything but making it visible: flushed, and a temporary file fsynced."""
        if self.closed or self.prepared:
            return
        try:
            self.file.flush()
            if self.tmp is not None:
                os.fsync(self.file.fileno())
        except OSError as e:
            self._fail(e)
        self.prepared = True

    def commit(self) -> None:
        """Flush and close; an atomic output is fsynced and renamed over its target."""
        if self.closed:
            return
        self.prepare()
        try:
            if self.tmp is not None:
                os.replace(self.tmp, self.real)
                _TEMPS.discard(self.tmp)
                self.tmp = None
                _fsync_dir(os.path.dirname(self.real) or ".")
                with contextlib.suppress(OSError):  # renamed: the data is in place
                    self.file.close()
            elif self._owns:
                self.file.close()
            self.closed = True
        except OSError as e:
            self._fail(e)

    def abort(self) -> None:
        """Drop what was written to a temporary file; the target is left as it was.

        Does nothing after :meth:`commit`.
        """
        if self.tmp is not None:
            forget_temp(self.tmp)  # unlinked while still locked: no one else takes it
            self.tmp = None
        if not self.closed and getattr(self, "_owns", False) and hasattr(self, "file"):
            with contextlib.suppress(OSError, ValueError):
                self.file.close()
        self.closed = True


def _fsync_dir(path: str) -> None:
    try:
        dfd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


# ---------------------------------------------------------------------------
# the outputs of a run, made visible together


class Staged:
    """The outputs of one run, written in full before any is made visible.

    While :func:`staging` is active, :func:`write_bytes` (and so
    ``model.save``, the reports and the readable models) only *records* what
    to write.  :meth:`write` then writes every file to its temporary file
    (fsynced) and after them the devices, FIFOs and descriptors, which cannot
    be staged; :meth:`commit` renames the temporary files, every model
    (``what == "model"``) last.  A failure before :meth:`commit` leaves every
    target as it was; a rename itself failing leaves the models as they were.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[str, list, str]] = []
        self._outs: list[Output] = []

    def add(self, path: str, pieces: list, what: str) -> None:
        self._pending.append((path, pieces, what))

    def write(self) -> None:
        """Write every recorded output: files (to temporary files) first, then the rest.

        A broken pipe is an :class:`~streamlearn.errors.OutputUnwritable` here:
        nothing has been made visible yet, and none will be.
        """
        pending = sorted(self._pending, key=lambda x: is_special(x[0]))
        self._pending = []
        for path, pieces, what in pending:
            out = Output(path, what)
            self._outs.append(out)
            try:
                for piece in pieces:
                    out.write(piece)
                out.prepare()
            except BrokenPipeError as e:
                raise unwritable(what, path, e) from None

    def commit(self) -> None:
        """Make every output visible: the models last."""
        for out in sorted(self._outs, key=lambda o: o.what == "model"):
            out.commit()
        self._outs = []

    def abort(self) -> None:
        """Drop every output not committed (their targets are left as they were)."""
        for out in self._outs:
            out.abort()
        self._pending, self._outs = [], []


_STAGE: contextvars.ContextVar[Staged | None] = contextvars.ContextVar("sl_stage", default=None)
"""The staging of this thread (a library caller's other threads write as usual)."""


@contextlib.contextmanager
def staging() -> Iterator[Staged]:
    """Record the :func:`write_bytes` calls of the block in a :class:`Staged` (yielded).

    The caller then calls its :meth:`~Staged.write` and :meth:`~Staged.commit`;
    whatever is not committed is dropped when the block ends.
    """
    if _STAGE.get() is not None:
        raise RuntimeError("staging() does not nest")
    stage = Staged()
    token = _STAGE.set(stage)
    try:
        yield stage
    finally:
        _STAGE.reset(token)
        stage.abort()  # after a commit: nothing left to drop


def write_bytes(path: str, data: bytes | list, what: str) -> None:
    """Write ``data`` (bytes, or a list of bytes-like pieces) to ``path`` as a whole.

    Atomically when ``path`` is a file.  Within :func:`staging`, only recorded.
    """
    pieces = data if isinstance(data, list) else [data]
    stage = _STAGE.get()
    if stage is not None:
        stage.add(path, pieces, what)
        return
    out = Output(path, what)
    try:
        for piece in pieces:
            out.write(piece)
        out.commit()
    finally:
        out.abort()  # after a commit: nothing left to do


def write_text(path: str, text: str, what: str) -> None:
    """:func:`write_bytes` for text (UTF-8)."""
    write_bytes(path, text.encode("utf-8"), what)


# ---------------------------------------------------------------------------
# checks before a run


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def check_outputs(
    outputs: list[tuple[str | None, str]], inputs: list[str], model: str | None = None
) -> None:
    """Refuse, before any work, outputs that cannot be written or would destroy something.

    ``outputs`` is (path or None, what) pairs; ``inputs`` the data sources;
    ``model`` the initial model, which only the final model may replace.
    """
    taken: dict[object, str] = {}
    sources = {}
    for s in inputs or ["-"]:
        key = same_stream(s)
        if key is not None:
            sources[key] = "standard input" if s == "-" else s
    for path, what in outputs:
        if path is None:
            continue
        if path == "":
            raise UsageError(f"{what}: the path is empty")
        if is_special(path):
            fd = descriptor(path)
            if fd is not None and fd != 1 and not _fd_open(fd):
                raise UsageError(f"{what} {path}: file descriptor {fd} is not open")
            if fd is not None:
                _check_descriptor(fd, path, what, sources, model)
            if descriptor(path) == 1 or path in STDOUT:
                key = ("stdout",)
                if key in taken:
                    raise UsageError(f"{what} and {taken[key]} both go to standard output")
                taken[key] = what
            continue
        try:
            real = target(path)
        except OSError as e:  # a symlink loop, a component that is not a directory
            raise UsageError(f"{what} {path}: {describe(e)}") from None
        parent = os.path.dirname(real) or "."
        if os.path.isdir(real):
            raise UsageError(f"{what} {path} is a directory")
        if not os.path.isdir(parent):
            raise UsageError(f"{what} {path}: directory {parent} does not exist")
        if not os.access(parent, os.W_OK):
            raise UsageError(f"{what} {path}: directory {parent} is not writable")
        ident = _identity(real)
        if ident is not None and ident in sources:
            raise UsageError(
                f"{what} {path} is the input {sources[ident]}: writing it would destroy "
                "the data (choose another path)"
            )
        if model is not None and what != "final model" and same_file(real, model):
            raise UsageError(f"{what} {path} is the initial model: choose another path")
        # a file not there yet: its directory (as the OS resolves it) and name, so that
        # ``./m.sl`` and ``m.sl`` are one file
        key = ident or ("new", _identity(parent), os.path.basename(real))
        if key in taken:
            raise UsageError(f"{what} and {taken[key]} name the same file {path}")
        taken[key] = what


def _check_descriptor(fd: int, path: str, what: str, sources: dict, model: str | None) -> None:
    """Refuse an output descriptor that is a regular file the run reads (as ``cat``:
    "input file is output file").

    ``sl train big.vw -p - >> big.vw`` would read its own predictions back and
    learn them.  Only a regular file is compared: a terminal or a pipe can be
    both read and written (``sl predict -i m -p -`` typed at a terminal).
    """
    try:
        st = os.fstat(fd)
    except OSError:
        return  # a closed stdout: reported when it is written
    if not stat.S_ISREG(st.st_mode):
        return
    ident = (st.st_dev, st.st_ino)
    shown = "standard output" if fd == 1 else f"{path} (descriptor {fd})"
    if ident in sources:
        src = sources[ident]
        src = src if src == "standard input" else f"the input {src}"
        raise UsageError(
            f"{what} would be written to {shown}, which is {src} (input file is output "
            "file): the run would read its own output back; write it elsewhere"
        )
    if model is not None and _identity(model) == ident:
        raise UsageError(
            f"{what} would be written to {shown}, which is the initial model {model}: "
            "write it elsewhere"
        )


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def same_file(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` name one existing file (as the OS resolves them)."""
    ia, ib = _identity(a), _identity(b)
    return ia is not None and ia == ib
