"""Who hears that a kernel is being compiled.

A kernel that is neither in the user's cache nor shipped compiled
(:mod:`streamlearn.system.prebuilt`) is compiled on first use, which can take
seconds; :mod:`streamlearn.system.jit_numba` then says so (what, about how
long, where it is cached) through :func:`tell`.  The run's console listens
(:class:`streamlearn.run.console.Console` unless quiet); nobody listens by
default, so library code stays silent.  Free of numba: importing this never
loads the compiler.
"""

from __future__ import annotations

from collections.abc import Callable

_listener: Callable[[str], None] | None = None


def listen(listener: Callable[[str], None] | None) -> None:
    """Send notices to ``listener`` from now on (None: to nobody)."""
    global _listener
    _listener = listener


def tell(text: str) -> None:
    """Pass ``text`` to the listener, if any (never raises)."""
    listener = _listener
    if listener is not None:
        try:
            listener(text)
        except Exception:  # noqa: BLE001 - a notice never fails a run
            pass
