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
  new file -- and renamed over the target.  A symlink is followed: its target
  is replaced and the link stays.  A crash, a signal or a full disk leaves
  the old file whole and no temporary file behind (:func:`remove_temps`).

Every failure is an :class:`~streamlearn.errors.OutputUnwritable` naming the
path and the OS's reason.  :func:`check_outputs` refuses, before any work, an
output that names an input or another output.  Runs that continue one model in
place take turns through :func:`streamlearn.system.locks.model_lock`.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import io
import os
import re
import select
import stat
import sys
import tempfile
from pathlib import Path
from typing import IO

from streamlearn.errors import OutputUnwritable, UsageError
from streamlearn.system.sources import describe, same_stream

STDOUT = ("-", "/dev/stdout")
"""Paths that mean standard output."""

_FD_PATH = re.compile(r"^(?:/dev/fd/|/proc/self/fd/)(\d+)$")
_TEMPS: set[str] = set()

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


def temp_dir(prefix: str) -> str:
    """A private temporary directory, removed by :func:`forget_temp` or at exit."""
    d = tempfile.mkdtemp(prefix=prefix)
    _TEMPS.add(d)
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


def _remove_stale(real: Path) -> None:
    """Delete temporary files of ``real`` left by runs that were killed (their process is gone)."""
    for p in real.parent.glob(f".{glob.escape(real.name)}.*.tmp"):
        try:
            pid = int(p.name[len(real.name) + 2 :].split(".", 1)[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            p.unlink(missing_ok=True)
        except (ValueError, PermissionError, OSError):
            continue


# ---------------------------------------------------------------------------
# one output


class Output:
    """An output being written; :meth:`commit` makes it visible, :meth:`abort` drops it.

    ``file`` is a binary file object; ``what`` names the output in messages.
    """

    def __init__(self, path: str, what: str, buffering: int = -1) -> None:
        if not path:
            raise UsageError(f"{what}: the path is empty")
        self.path = path
        self.what = what
        self.tmp: str | None = None
        self.real: Path | None = None
        self.closed = False
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
                self.real = Path(os.path.realpath(path))
                _remove_stale(self.real)
                tfd, self.tmp = tempfile.mkstemp(
                    prefix=f".{self.real.name}.{os.getpid()}.", suffix=".tmp", dir=self.real.parent
                )
                _TEMPS.add(self.tmp)
                self._set_mode(tfd)
                self.file = os.fdopen(tfd, "wb", buffering=buffering)
        except OSError as e:
            self.abort()
            raise unwritable(what, path, e) from None

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

    def commit(self) -> None:
        """Flush and close; an atomic output is fsynced and renamed over its target."""
        if self.closed:
            return
        try:
            self.file.flush()
            if self.tmp is not None:
                os.fsync(self.file.fileno())
            if self._owns:
                self.file.close()
            self.closed = True
            if self.tmp is not None:
                os.replace(self.tmp, self.real)
                _TEMPS.discard(self.tmp)
                self.tmp = None
                _fsync_dir(self.real.parent)
        except OSError as e:
            self._fail(e)

    def abort(self) -> None:
        """Drop what was written to a temporary file; the target is left as it was.

        Does nothing after :meth:`commit`.
        """
        if not self.closed and getattr(self, "_owns", False) and hasattr(self, "file"):
            with contextlib.suppress(OSError, ValueError):
                self.file.close()
        self.closed = True
        if self.tmp is not None:
            forget_temp(self.tmp)
            self.tmp = None


def _fsync_dir(path: Path) -> None:
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


def write_bytes(path: str, data: bytes | list, what: str) -> None:
    """Write ``data`` (bytes, or a list of bytes-like pieces) to ``path`` as a whole.

    Atomically when ``path`` is a file.
    """
    out = Output(path, what)
    try:
        for piece in data if isinstance(data, list) else [data]:
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
        real = os.path.realpath(path)
        parent = os.path.dirname(real)
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
        key = ident or real
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
    ra, rb = os.path.realpath(a), os.path.realpath(b)
    if ra == rb:
        return True
    ia, ib = _identity(ra), _identity(rb)
    return ia is not None and ia == ib
