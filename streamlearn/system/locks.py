"""Runs that continue one model in place take turns (``-i m.sl -f m.sl``).

Two cron jobs that both read yesterday's model and both write theirs would
each drop the other's day.  :func:`model_lock` holds an exclusive ``flock``
on a lock file beside the model from before the model is read until after
the new one is written; git's ``index.lock`` and ``flock(1)`` are the models.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator

from streamlearn.errors import LockTimeout
from streamlearn.system.outputs import is_special, same_file, unwritable


@contextlib.contextmanager
def model_lock(
    initial: str | None, final: str | None, timeout: float, say: Callable[[str], None]
) -> Iterator[None]:
    """Hold an exclusive lock on ``final`` while it is continued in place.

    When ``initial`` and ``final`` are the same file, two runs must not both
    read the old model and then both write theirs (one run's data would be
    lost): the lock file ``<model>.lock`` beside the model's real path is
    locked with ``flock`` from before the model is read until after it is
    written.  Waits at most ``timeout`` seconds (``inf``: no limit), then
    raises :class:`~streamlearn.errors.LockTimeout`.  The lock file stays (it
    is empty; removing it could let a third run lock a different file).
    """
    if initial is None or final is None or is_special(final) or not same_file(initial, final):
        yield
        return
    lock = os.path.realpath(final) + ".lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as e:
        raise unwritable("lock file", lock, e) from None
    try:
        _acquire(fd, lock, final, timeout, say)
        yield
    finally:
        os.close(fd)  # releases the lock


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
