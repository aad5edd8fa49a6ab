"""Runs that continue one model in place take turns (``-i m.sl -f m.sl``).

Two cron jobs that both read yesterday's model and both write theirs would
each drop the other's day.  :func:`model_lock` holds an exclusive ``flock``
on a lock file beside the model from before the model is read until after
the new one is written; git's ``index.lock`` and ``flock(1)`` are the models.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator

from streamlearn.errors import LockTimeout, OutputUnwritable
from streamlearn.system.outputs import is_special, same_file, target, unwritable


@contextlib.contextmanager
def model_lock(
    initial: str | None, final: str | None, timeout: float, say: Callable[[str], None]
) -> Iterator[None]:
    """Hold an exclusive lock on ``final`` while it is continued in place.

    When ``initial`` and ``final`` are the same file, two runs must not both
    read the old model and then both write theirs (one run's data would be
    lost): the lock file ``<model>.lock`` beside the model's real path is
    locked with ``flock`` from before the model is read until after it is
    written (:func:`open_lock`).  Waits at most ``timeout`` seconds (``inf``: no limit), then
    raises :class:`~streamlearn.errors.LockTimeout`.  The lock file stays (it
    is empty; removing it could let a third run lock a different file).
    """
    if initial is None or final is None or is_special(final) or not same_file(initial, final):
        yield
        return
    try:
        lock = target(final) + ".lock"
    except OSError as e:
        raise unwritable("final model", final, e) from None
    fd = open_lock(lock)
    try:
        _acquire(fd, lock, final, timeout, say)
        yield
    finally:
        os.close(fd)  # releases the lock


def open_lock(lock: str) -> int:
    """Open (create) the lock file ``lock``: a regular file, never through a symlink.

    A symlink planted at ``m.sl.lock`` would make every run create or lock
    the file it points to (anywhere the user may write): refused, as a FIFO
    or a device there is.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(lock, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP and os.path.islink(lock):
            raise OutputUnwritable(
                f"cannot lock {lock}: it is a symbolic link, which sl does not follow "
                "(remove it; sl creates the lock file itself)"
            ) from None
        raise unwritable("lock file", lock, e) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OutputUnwritable(f"cannot lock {lock}: it is not a regular file (remove it)")
    return fd


def _acquire(fd: int, lock: str, model: str, timeout: float, say: Callable[[str], None]) -> None:
    start = time.monotonic()
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError as e:
            raise unwritable("lock file", lock, e) from None
        waited = time.monotonic() - start
        if waited >= timeout:
            raise LockTimeout(
                f"{model} is being continued by another sl run (lock {lock}); gave up after "
                f"{waited:.0f} s (--lock-timeout {timeout:g})"
            )
        if not told:
            say(f"waiting for another sl run that continues {model} (lock {lock})")
            told = True
        time.sleep(min(0.05, max(timeout - waited, 0.0)))
