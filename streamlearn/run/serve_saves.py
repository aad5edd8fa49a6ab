"""The served model's life in a server (:mod:`streamlearn.run.serve`): saves and reloads.

:class:`Keeper` holds the model served (:mod:`streamlearn.run.serve_model`).  A
learning server's saves -- every N examples or seconds, on a client's ``save``
line, on SIGHUP, and the last one at the exit -- are encoded between two reads and
written in order on a thread, to model files only (:meth:`Keeper.save`).  A scoring
server reloads its model file when it is replaced or on SIGHUP, on a thread, and
keeps the old model when the new one fails its checks or is of another kind
(:func:`model_kind`).  The event loop never waits on a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import os
import stat
import threading
import time
from collections import deque

from streamlearn import model as model_io
from streamlearn.errors import ModelError, SlError, UsageError
from streamlearn.run.console import Console
from streamlearn.run.options import Inputs, Outputs
from streamlearn.run.serve_model import Served, kept_options, served_model
from streamlearn.run.serve_options import ServeOptions, log
from streamlearn.system.outputs import check_outputs, is_special, same_file, staging
from streamlearn.system.text import printable

SAVE_WAIT = 30.0
"""Seconds a stopping server waits for a save under way before it writes its last save."""


def model_kind(kept: list | None, m: model_io.Model | None) -> tuple | None:
    """What a reload must keep: the kind of model (a VW bandit model's, read with its
    options; an sl bandit model's, multiline requests; a single-line model's) and the options
    that decide what requests and answers are -- a VW bandit's kept options, a bandit's
    reduction and explorer, a single-line model's format and classes (None: no model)."""
    if kept is not None:
        return ("vw", tuple(kept))
    if m is None:
        return None
    ml = m.meta.get("multiline")
    if isinstance(ml, dict):
        return ("bandit", tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in ml.items()
                                       if k not in ("notes", "ope"))))  # fmt: skip
    c = m.config
    return ("line", tuple((k, json.dumps(getattr(c, k))) for k in _LINE_KIND
                          if k != "format" or c.format != "auto"))  # fmt: skip


_LINE_KIND = ("format", "oaa", "csoaa", "multilabel", "named_labels")
"""A single-line model's options that decide how a request is parsed and what its answer
says (another learning rate or -q is a retrained model, served as it is; a format of
``auto``, detected from the requests, goes with either)."""

_KINDS = {"vw": "VW's model of a multiline reduction", "bandit": "a bandit model (multiline "
          "examples)", "line": "a single-line model", None: "no model"}  # fmt: skip


def _other_kind(served: tuple | None, new: tuple | None) -> str | None:
    """Why the server cannot switch from a model of kind ``served`` to one of kind ``new``
    (:func:`model_kind`), or None.  A replacement of another kind would change the protocol
    (a scoring server's one-line clients would get no answers from a bandit), one of other
    options would be read with the first file's (a VW bandit model) or answer otherwise:
    refused, naming what differs."""
    if served == new:
        return None
    if served is None or new is None or served[0] != new[0]:
        return (f"{_KINDS[new[0] if new else None]}, where the server serves "
                f"{_KINDS[served[0] if served else None]}")  # fmt: skip
    names = {n for n, _ in set(served[1]) ^ set(new[1])}
    if served[0] == "line":  # (an option only one of them names: either goes)
        names &= {n for n, _ in served[1]} & {n for n, _ in new[1]}
        if not names:
            return None
    names = sorted(names)
    if served[0] == "vw":
        return f"a VW model of other options ({', '.join('--' + n for n in names)})"
    return f"a model of other options ({', '.join('--' + n.replace('_', '-') for n in names)})"


def check_regular(path: str, what: str) -> None:
    """Refuse ``path`` unless it is a regular file or a new name: a FIFO, a device or a
    descriptor (``/dev/stdout``) could block the server on a reader that never comes."""
    if is_special(path):
        raise UsageError(f"{what} {path} is not a regular file (a FIFO, a device, a socket "
                         "or a descriptor): the server writes models to files only")  # fmt: skip


def _is_model_file(path: str) -> bool:
    """True for a missing or empty file, or one that starts as sl's or VW's model file
    (read without blocking: a regular file only)."""
    from streamlearn.io import vwmodel

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, 16)
    finally:
        os.close(fd)
    return not head or head.startswith(model_io.MAGIC) or vwmodel.sniff(head)


def _identity(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _in_thread(fn, name: str) -> asyncio.Future:  # noqa: ANN001 - a callable
    """``fn()`` run on a daemon thread: the event loop never waits on a file (a thread left
    blocked does not keep the process from exiting)."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def done(value, error) -> None:  # noqa: ANN001
        if not fut.done():
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(value)

    def work() -> None:
        try:
            value, error = fn(), None
        except BaseException as e:  # noqa: BLE001 - handed to the loop
            value, error = None, e
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(done, value, error)

    threading.Thread(target=work, name=name, daemon=True).start()
    return fut


class _SaveJob:
    """One save: the model's bytes, recorded between two reads (``system.outputs.staging``,
    in a context of its own, so the event loop's other tasks write as usual), then written
    and renamed into place on a thread."""

    def __init__(self, path: str | None, target: str, why: str, learned: int,
                 examples: int) -> None:  # fmt: skip
        self.path, self.target, self.why = path, target, why
        self.learned, self.examples = learned, examples
        self.context = contextvars.copy_context()
        self.staging = staging()
        self.stage = self.context.run(self.staging.__enter__)
        self.done: asyncio.Future | None = None

    def encode(self, save) -> None:  # noqa: ANN001 - a callable that writes the model
        try:
            self.context.run(save)
        except BaseException:
            self.close()
            raise

    def write(self, check) -> None:  # noqa: ANN001 - Keeper._check_target
        check(self.target, self.path is not None)
        self.stage.write()
        self.stage.commit()

    def close(self) -> None:
        """Drop what was not committed (the target is left as it was)."""
        if self.staging is not None:
            self.context.run(self.staging.__exit__, None, None, None)
            self.staging = None


class Keeper:
    """The served model and its life: the saves of a learning server, the reloads of a
    scoring one (``counts``: the server's ``stats`` counters, of saves and reloads here)."""

    def __init__(self, served: Served, inputs: Inputs, outputs: Outputs, opts: ServeOptions,
                 console: Console, counts: dict, explicit: dict | None = None,
                 kept: list | None = None, kind: tuple | None = None) -> None:  # fmt: skip
        self.served = served
        self.explicit = explicit or {}
        """The learning options given (a reloaded VW bandit model's, as at the start)."""
        self.inputs = inputs
        self.outputs = outputs
        self.opts = opts
        self.console = console
        self.counts = counts
        self.model_path = inputs.initial_model
        self.model_id = _identity(self.model_path) if self.model_path else None
        self.kept = kept
        """The kept options of the VW bandit model served (read again from a reload)."""
        self.kind = kind
        """The served model's kind and options (:func:`model_kind`): a reload must keep them."""
        self.refused_id: tuple | None = None
        self.reloading = False
        self.background: set[asyncio.Task] = set()
        """Reloads under way (cancelled when the server stops)."""
        self.saves: deque[_SaveJob] = deque()
        """Saves encoded and not yet written (the first: being written)."""
        self.saver: asyncio.Task | None = None
        self.stopping = False
        """The server stops: the saves queued are dropped."""
        self.unsaved = 0
        self.unsaved_since: float | None = None

    def learned(self, examples: int) -> None:
        """``examples`` learned from a read: saved once --save-every of them are unsaved."""
        self.unsaved += examples
        if self.unsaved_since is None:
            self.unsaved_since = time.monotonic()
        if self.opts.save_every and self.unsaved >= self.opts.save_every:
            self.save(None, "examples", auto=True)

    def tick(self, now: float) -> None:
        """The periodic checks: a replaced model file reloaded, a timed save."""
        if self.served.learner is None and self.opts.reload_seconds > 0 and self.model_path:
            if not self.reloading and _identity(self.model_path) not in (
                    self.model_id, self.refused_id, None):  # fmt: skip
                self.reload("replaced")
        if (self.opts.save_seconds and self.unsaved_since is not None
                and now - self.unsaved_since >= self.opts.save_seconds):  # fmt: skip
            self.save(None, "timer", auto=True)

    def hangup(self) -> None:
        """SIGHUP: a learning server saves, a scoring one reloads."""
        if self.served.learner is not None:
            self.save(None, "SIGHUP")
        else:
            self.reload("SIGHUP")

    # -- saves ------------------------------------------------------------------------------

    def save(self, path: str | None, why: str, auto: bool = False) -> asyncio.Future | None:
        """Save to a client's ``path`` or ``-f``: the model is encoded now, between two reads
        (what was learned up to here), and written on a thread after the saves asked before
        it (the event loop never waits on a file).  Returns a future done once it is written
        (None: nothing to write).  ``auto`` (a timer, --save-every): none while one to -f is
        waiting or under way."""
        if auto and any(job.path is None for job in self.saves):
            return None
        target = self._target(path, why)
        if target is None:
            return None
        job = _SaveJob(path, target, why, self.unsaved, self.served.examples())
        try:
            # as the command's -f writes it (sl vw: VW's model file), recorded, not written
            job.encode(lambda: self.served.save(target, self.outputs.model_format,
                                                self.outputs.link))  # fmt: skip
        except (SlError, OSError) as e:
            self._save_failed(target, why, e)
            return None
        job.done = asyncio.get_running_loop().create_future()
        self.saves.append(job)
        if self.saver is None or self.saver.done():
            self.saver = asyncio.get_running_loop().create_task(self._saving())
        return job.done

    def _target(self, path: str | None, why: str) -> str | None:
        target = path or self.outputs.final_model
        if target is None:
            self.console.warn_once("no -f", f"sl serve: cannot save ({why}): no -f/--final-model")
        return target

    async def _saving(self) -> None:
        """Write the saves in the order they were asked for, each on a thread."""
        while self.saves:
            job = self.saves[0]
            try:
                if self.stopping:
                    log(self.console, f"sl serve: not saved to {printable(job.target[:300])} "
                        f"({job.why}): the server stops")  # fmt: skip
                    continue
                try:
                    await _in_thread(functools.partial(job.write, self._check_target),
                                     "sl-serve-save")  # fmt: skip
                except (SlError, OSError) as e:
                    self._save_failed(job.target, job.why, e)
                else:
                    self._saved(job.target, job.why, job.examples,
                                job.learned if job.path is None else 0)  # fmt: skip
            finally:
                job.close()
                self.saves.popleft()
                if not job.done.done():
                    job.done.set_result(None)

    async def saved_so_far(self) -> None:
        """A stopping server: the save under way completes (the last save follows); the
        queued ones are dropped."""
        if self.saver is not None and not self.saver.done():
            await asyncio.wait([self.saver], timeout=SAVE_WAIT)

    def save_now(self, why: str) -> bool:
        """The last save, to -f, on the calling thread (the event loop has stopped)."""
        target = self._target(None, why)
        if target is None:
            return False
        learned, examples = self.unsaved, self.served.examples()
        try:
            self._check_target(target, False)
            self.served.save(target, self.outputs.model_format, self.outputs.link)
        except (SlError, OSError) as e:
            self._save_failed(target, why, e)
            return False
        self._saved(target, why, examples, learned)
        return True

    def _check_target(self, target: str, client: bool) -> None:
        """Refuse a save that is not a model file's (``docs/serving.md``): a FIFO, a device or
        a descriptor, whatever asks; a client's ``save_PATH`` also over an existing file
        that is not a model, an input, the initial model (unless it is -f) or the server's
        pid and port files (:func:`~streamlearn.system.outputs.check_outputs`)."""
        what = "save_PATH" if client else "-f"
        check_regular(target, what)
        if not client:
            return
        fm = self.outputs.final_model
        if fm is not None and (target == fm or same_file(target, fm)):
            return  # the server's own -f
        check_outputs([(target, what), (self.opts.pid_file, "pid file"),
                       (self.opts.port_file, "port file")], self.inputs.sources,
                      self.inputs.initial_model)  # fmt: skip
        if not _is_model_file(target):
            raise UsageError(f"{what} {target} exists and is not a model file: a client's "
                             "save writes only model files")  # fmt: skip

    def _save_failed(self, target: str, why: str, e: BaseException) -> None:
        self.counts["save_failures"] += 1
        msg = e.format_message() if isinstance(e, SlError) else str(e)
        # a client's path once, and cut short: the message would repeat a 5,000-byte path
        shown = target if len(target) <= 200 else f"{target[:100]}... ({len(target)} bytes)"
        msg = msg.replace(target, "it") if target else msg
        log(self.console, f"sl serve: saving to {printable(shown)} failed ({why}): "
            f"{printable(msg)}")  # fmt: skip

    def _saved(self, target: str, why: str, examples: int, learned: int) -> None:
        self.counts["saves"] += 1
        if learned:
            self.unsaved -= learned  # (examples learned while it was written stay unsaved)
            self.unsaved_since = time.monotonic() if self.unsaved else None
        self.console.say(f"sl serve: saved {target} ({why}, {examples} examples)")

    # -- reloads ----------------------------------------------------------------------------

    def reload(self, why: str) -> None:
        """Load the model file again, off the event loop; keep the old model if the new one
        fails its checks or would change the kind of model served."""
        if self.reloading:
            return
        self.reloading = True
        task = asyncio.get_running_loop().create_task(self._reload(why))
        self.background.add(task)  # (cancelled when the server stops)
        task.add_done_callback(self.background.discard)

    async def _reload(self, why: str) -> None:
        ident = _identity(self.model_path)
        try:
            served = await _in_thread(self._load, "sl-serve-reload")
        except (SlError, OSError, ValueError) as e:
            self.counts["reload_failures"] += 1
            self.refused_id = ident
            msg = e.format_message() if isinstance(e, SlError) else str(e)
            log(self.console, f"sl serve: refused {self.model_path} ({why}): {msg}; the "
                "previous model keeps serving")  # fmt: skip
            return
        finally:
            self.reloading = False
        self.served = served
        self.model_id, self.refused_id = ident, None
        self.counts["reloads"] += 1
        self.console.say(f"sl serve: reloaded {self.model_path} ({why})")

    def _load(self):  # noqa: ANN202 - Served or a bandit's
        """The served model read again from its file (on a thread): a regular file only (a
        FIFO would block its reader), of the served model's kind and options."""
        path = self.model_path
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ModelError(f"{path} is not a regular file (a FIFO, a device, a socket): a "
                             "model is replaced by renaming a file over it")  # fmt: skip
        kept = kept_options(path)
        m = model_io.load(path) if kept is None else None
        other = _other_kind(self.kind, model_kind(kept, m))
        if other:
            raise ModelError(f"{other}: restart the server to serve it")
        if kept is not None:
            return served_model(None, self.served.config, self.opts, self.console, path,
                                self.explicit)  # fmt: skip
        config = m.config
        if config.test_only is False:
            config = config.replace(test_only=True)
        return served_model(m, config, self.opts, self.console)
