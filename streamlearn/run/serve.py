"""``sl serve`` and ``sl vw --daemon``: a resident model behind a TCP socket.

The protocol is Vowpal Wabbit's daemon's (VW 9.11, checked against ``vw
--daemon``): a client sends example lines, the server answers each usable
line with its prediction line as ``-p`` writes it (the prediction, then the
tag when there is one), in order, on the same connection; a blank line gets
no answer; a line whose tag starts with ``save`` and that holds no feature
(``save``, ``'save``, ``save_PATH``) saves the model (to ``-f``, or to PATH
when the server allows it) and gets no answer.  A malformed line gets sl's
answer for it, ``nan`` (and its tag), as ``sl predict -p`` writes it: the
connection stays.  Any number of connections are served at once by one
process (``asyncio`` streams): each read of a connection -- one line from an
interactive client, up to :data:`READ_SIZE` bytes from a pipelining one --
is parsed and scored as one batch in the compiled kernels, on the event
loop's thread, so the reads of all connections are scored (or learned) one
after the other, in the order they arrived.

With ``learn`` (no ``-t``), labeled lines are learned as ``sl vw`` learns them
from a file, and the model is saved atomically every N examples or seconds,
on a ``save`` line, on SIGHUP, and on SIGTERM/SIGINT before the exit (143/130).
Without it (``-t``), the model file is watched: when it is replaced (a cron
job writes it atomically) or on SIGHUP, the server loads it and switches
between two reads; a model that fails its checks is refused with one logged
line and the old one keeps serving.

A ``stats`` line on stderr (SIGUSR1, every ``stats_every`` seconds, and at
the exit): connections, reads answered, lines, malformed lines, reloads,
saves, and the answer time of recent reads (p50, p99).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import gc
import json
import os
import re
import signal
import socket
import stat
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import TrainConfig
from streamlearn.errors import Diverged, Interrupted, ModelError, SlError, UsageError
from streamlearn.io.batch import Block
from streamlearn.io.interactions import capped
from streamlearn.io.parse import FORMATS, parse_blocks
from streamlearn.learners.base import P_BINARY, P_HOLDOUT, S_N, S_NROWS, new_rows
from streamlearn.run.console import Console
from streamlearn.run.options import Inputs, Outputs, written
from streamlearn.run.predict import Scorer
from streamlearn.run.runner import (
    BatchChecks,
    ClassNumbering,
    PredictionWriter,
    binary_mode,
    check_probabilities,
    prediction_width,
    run_kernel,
)
from streamlearn.run.train import Learner, check_model, merge_config
from streamlearn.system.locks import model_lock
from streamlearn.system.outputs import check_outputs, is_special, same_file, staging, write_text
from streamlearn.system.process import NAMES, committing
from streamlearn.system.text import printable

READ_SIZE = 256 << 10
"""Bytes read from a connection at once: a pipelining client's lines come in batches of
up to this much (a few thousand lines), an interactive client's one line at a time."""
MAX_LINE = 1 << 20
"""The longest request line (``--max-line-bytes``): a longer one is read and dropped
and answered ``nan``; what one connection holds stays below this plus :data:`READ_SIZE`."""
MAX_CONNECTIONS = 4096
"""Connections served at once (``--max-connections``); one more is closed at once."""
LATENCIES = 4096
"""Answer times kept for the ``stats`` line (the most recent reads)."""
DEFAULT_PORT = 26542
"""VW's daemon port."""

_SAVE = re.compile(rb"^[ \t]*'?save(?:_(\S+))?[ \t]*\|?[ \t]*\r?$")
"""A line VW reads as a save command: a tag starting with ``save`` and no feature."""


@dataclass
class ServeOptions:
    """How the server listens, saves and reloads (the CLI's ``--port`` etc.)."""

    host: str = "127.0.0.1"
    """Address to listen on (VW listens on every address; sl on the loopback unless told)."""
    port: int = DEFAULT_PORT
    """0: the system picks one (write it with ``port_file``)."""
    port_file: str | None = None
    pid_file: str | None = None
    foreground: bool = True
    """False: VW's default -- the server forks into the background once it listens."""
    learn: bool = False
    """Learn labeled lines (VW's daemon without ``-t``)."""
    save_every: int | None = None
    """Learning: save after this many examples learned since the last save."""
    save_seconds: float | None = None
    """Learning: save this many seconds after the first example not yet saved."""
    save_paths: bool = False
    """Let a client's ``save_PATH`` line name the file written (VW does; ``sl serve``
    does not: a client could write any file the server can)."""
    reload_seconds: float = 1.0
    """Test-only: how often the model file is checked for a replacement (0: only SIGHUP)."""
    max_line_bytes: int = MAX_LINE
    max_connections: int = MAX_CONNECTIONS
    stats_seconds: float = 0.0
    """Print the ``stats`` line this often (0: on SIGUSR1 and at the exit only)."""
    probabilities: bool = False
    link: str = "identity"
    bandit: dict | None = None
    """A bandit's options (:class:`~streamlearn.run.multiline.Multiline`'s fields): requests
    are multiline examples (:class:`~streamlearn.run.bandit.BanditServed`); a bandit model
    (``-i``) is served so without them."""
    vw_format: bool = False
    """Answer lines as VW writes them (``sl vw --daemon``: ``Outputs.vw_format``), else as
    ``sl predict -p`` writes them."""


def _finite(a: np.ndarray) -> bool:
    """No NaN or inf in ``a`` (min and max are NaN if any element is, else ±inf if any is:
    no array of flags, as ``model.non_finite``)."""
    return not a.size or bool(np.isfinite(a.min()) and np.isfinite(a.max()))


def _identity(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Served:
    """The model being served: parse, score or learn, and write the answer lines of a read."""

    def __init__(self, m: model_io.Model | None, config: TrainConfig, opts: ServeOptions,
                 console: Console) -> None:  # fmt: skip
        self.config = config
        self.opts = opts
        self.console = console
        check_probabilities(config, opts.probabilities, opts.link)
        self.code = FORMATS.get(config.format) if config.format in ("vw", "svmlight") else None
        self.inter = capped(config.namespaces(), Inputs().max_crosses)
        self.checks = BatchChecks(console, config, strict=False)
        self.writer = PredictionWriter(None, opts.link, config.binary, None, opts.probabilities,
                                       vw=opts.vw_format)  # fmt: skip
        self.learner: Learner | None = None
        if opts.learn:
            self.learner = Learner.from_model(m, config) if m is not None else Learner.fresh(config)
            self.params = config.params()
            self.params[P_HOLDOUT] = 0.0  # a stream: every example learned
            self.params[P_BINARY] = binary_mode(config.binary, opts.link)
            self.stats = self.learner.stats
            self.rows = new_rows()
        else:
            self.scorer = Scorer(m, opts.probabilities)
            self.scorer.params[P_BINARY] = binary_mode(config.binary, opts.link)
            self.params = self.scorer.params
            self.stats = self.scorer.stats
        self.classes = ClassNumbering(self.params, self.stats, console) if config.oaa else None
        self.model = m
        """The model loaded (scoring: what a ``save`` line writes)."""

    def warm_up(self) -> None:
        """Load the parse and learn/score kernels (compiled, or from numba's cache) before
        the first client waits: a malformed line through them, on copies of the counters
        (a malformed row is neither scored nor learned)."""
        block = Block(np.frombuffer(bytearray(b"1 2 3 4 |w x\n"), dtype=np.uint8), "<warm-up>", 1)
        for batch in parse_blocks([block], self.code, self.config.bits, self.config.constant,
                                  self.inter):  # fmt: skip
            if self.learner is not None:
                lr = self.learner
                run_kernel(lr.spec.train_batch, lr.table, lr.gstate.copy(), self.params.copy(),
                           self.config.loss_id, batch, lr.stats.copy(), new_rows(),
                           prediction_width(self.config))  # fmt: skip
            else:
                sc = self.scorer
                run_kernel(sc.kernel, sc.table, sc.gstate.copy(), self.params.copy(),
                           self.config.loss_id, batch, sc.stats.copy(), new_rows(),
                           sc.width)  # fmt: skip

    def answer(self, data: bytes, source: str, first_line: int,
               long_lines: tuple = ()) -> tuple[bytes, int, int]:  # fmt: skip
        """The answer lines of ``data`` (whole lines); and its rows, malformed rows.

        ``long_lines``: lines dropped for their length, an empty line in their place
        (:class:`~streamlearn.io.batch.Block`): each answered as a malformed line."""
        # writable, as the parser takes it (a read-only view would be copied again)
        block = Block(np.frombuffer(bytearray(data), dtype=np.uint8), source, first_line, live=True,
                      long_lines=long_lines)  # fmt: skip
        out = []
        rows = bad = 0
        for batch in parse_blocks([block], self.code, self.config.bits, self.config.constant,
                                  self.inter):  # fmt: skip
            self.checks.check(batch)
            if self.learner is not None:
                preds = self._learn(batch)
            else:
                preds = self.scorer.score(batch)
            first = self.classes.after(batch) if self.classes else 1
            out.append(self.writer.lines(batch, preds, first))
            rows += batch.n
            bad += int(np.count_nonzero(batch.status))
        return b"".join(out), rows, bad

    def _step(self, batch) -> tuple[np.ndarray, bool]:  # noqa: ANN001 - a Batch
        """Learn ``batch`` (its rows of status 0); its predictions, and False (everything
        put back as it was) when the step left a weight or the learner's state non-finite."""
        lr = self.learner
        slots = batch.indices  # the rows the kernel may touch (a slot twice: same values)
        saved = (lr.table[slots], lr.gstate.copy(), lr.stats.copy())
        preds = run_kernel(lr.spec.train_batch, lr.table, lr.gstate, self.params,
                           self.config.loss_id, batch, lr.stats, self.rows,
                           prediction_width(self.config))  # fmt: skip
        lr.stats[S_NROWS] = 0.0  # no progress table: its rows are not kept
        if _finite(lr.table[slots]) and _finite(lr.gstate):
            return preds, True
        lr.table[slots], lr.gstate[:], lr.stats[:] = saved
        return preds, False

    def _learn(self, batch) -> np.ndarray:  # noqa: ANN001 - a Batch
        """Learn a read's batch; a line whose step would make the model non-finite (a
        diverging update: an importance weight or a value too large) is answered ``nan``
        and not learned, the model kept as it was before it, and the other lines learned
        in order."""
        preds, good = self._step(batch)
        if good:
            return preds
        status = batch.status
        out = np.full_like(preds, np.nan)
        lost = []
        try:
            for i in np.flatnonzero(status == 0).tolist():
                one = np.full_like(status, 7)  # the other rows skipped (a nonzero status)
                one[i] = 0
                batch.status = one
                p, good = self._step(batch)
                if good:
                    out[i] = p[i]
                else:
                    lost.append(i)
        finally:
            batch.status = status
        for i in lost:
            status[i] = 7  # (counted as a malformed line)
            _log(self.console, f"sl serve: {batch.block.source}:{int(batch.line[i])}: learning "
                 "this line would make the model non-finite (an importance weight or a value "
                 "too large for the learner): answered nan, not learned; the model is kept "
                 "as it was")  # fmt: skip
        return out

    def examples(self) -> int:
        return int(self.stats[S_N])

    def snapshot(self) -> model_io.Model:
        model = self.learner.snapshot()
        check_model(model)
        return model

    def save(self, target: str, fmt: str, link: str) -> None:
        """Write the model learned so far (``-t``: the served model, unchanged)."""
        model = self.snapshot() if self.learner is not None else self.model
        model_io.save(model, target, fmt, link)


def _kept(path: str | None) -> list | None:
    """The options kept in VW's model file of a multiline reduction at ``path``, in a
    stable order (None: another model, or no file), which :func:`_served` reads itself;
    ModelError for one sl does not run."""
    from streamlearn.run import mlmodel

    if path is None:
        return None
    kept = mlmodel.kept_options(path)
    return None if kept is None else sorted(kept, key=lambda kv: (kv[0], kv[1] or ""))


def _served(m: model_io.Model | None, config: TrainConfig, opts: ServeOptions,
            console: Console, vw_path: str | None = None, explicit: dict | None = None):  # noqa: ANN202 - Served or run.bandit.BanditServed  # fmt: skip
    """The served model: a bandit's (multiline requests; ``vw_path``: read from VW's model
    file, with ``explicit``'s options) or a single-line model's."""
    if vw_path is not None:
        from streamlearn.run.bandit import Bandit

        if not opts.bandit or not opts.bandit.get("reduction"):
            raise UsageError(f"{vw_path} is VW's model of a multiline reduction: serve it "
                             "with sl vw --daemon -i, which reads its options")  # fmt: skip
        learn = {**(explicit or {}), "test_only": not opts.learn}
        b = Bandit.from_vw(vw_path, learn, opts.bandit)
        return _guarded()(None, b.config, opts, console, opts.bandit, learner=b)
    if opts.bandit or (m is not None and isinstance(m.meta.get("multiline"), dict)):
        return _guarded()(m, config, opts, console, opts.bandit)
    return Served(m, config, opts, console)


class _Diverging(Exception):
    """A bandit's step left the model non-finite; everything it changed is put back."""


@functools.cache
def _guarded() -> type:
    """:class:`~streamlearn.run.bandit.BanditServed` that never keeps nor saves a
    non-finite model (defined on first use: a plain server does not import the bandits)."""
    from streamlearn.run.bandit import BanditServed

    class GuardedBandit(BanditServed):
        """A learning bandit server's safety net: an example whose update would make the
        model non-finite (an importance weight or a cost too large) is answered ``nan``
        and not learned, the model put back as it was (cb_adf's kernel and the explorers
        over it; the explorers with kernels of their own -- bag, cover, regcb, rnd -- and
        csoaa_ldf are checked when saved); a non-finite model is never saved."""

        def __init__(self, *args, **kw) -> None:  # noqa: ANN002, ANN003 - BanditServed's
            super().__init__(*args, **kw)
            b = self.bandit
            own = () if b.xp is None else (b.xp.ex.BAG, b.xp.ex.COVER, b.xp.ex.REGCB,
                                            b.xp.ex.RND)  # fmt: skip
            self.width = b.step if b.ml.reduction == "cb_adf" and (
                b.xp is None or b.xp.kind not in own) else 0  # fmt: skip
            """The step between a feature's rows (0: the rows a step touches not known)."""
            if self.learner is not None:
                b.run = self._guarded_run(b.run)  # (this server's Bandit only)

        def _guarded_run(self, run):  # noqa: ANN001, ANN202 - Bandit.run
            def guarded(part, holdout=None):  # noqa: ANN001, ANN202
                b = self.bandit
                if not self.width:
                    return run(part, holdout)
                idx = part.mg.indices.astype(np.uint64)
                mask = np.uint64(b.table.shape[0] - 1)
                rows = ((idx[:, None] * np.uint64(self.width)
                         + np.arange(self.width, dtype=np.uint64)) & mask).ravel()  # fmt: skip
                xp = vars(b.xp) if b.xp is not None else {}
                kept = {k: v.copy() for k, v in xp.items() if isinstance(v, np.ndarray)}
                saved = (b.table[rows], b.gstate.copy(), b.stats.copy(), b.dr_prev.copy())
                step = run(part, holdout)
                if _finite(b.table[rows]) and _finite(b.gstate) and _finite(b.stats):
                    return step
                b.table[rows], b.gstate[:], b.stats[:] = saved[:3]
                b.dr_prev = saved[3]
                for k, v in kept.items():
                    xp[k][...] = v
                raise _Diverging

            return guarded

        def _run(self, data: bytes, source: str, start: int) -> tuple[bytes, int, int]:
            try:
                return super()._run(data, source, start)
            except _Diverging:
                pass
            # one example at a time: the one that diverges is answered nan, the others learned
            out, rows, bad = [], 0, 0
            for chunk, first in _examples(data, start):
                try:
                    a, n, k = super()._run(chunk, source, first)
                except _Diverging:
                    _log(self.console, f"sl serve: {source}:{first}: learning this example "
                         "would make the model non-finite (an importance weight or a cost "
                         "too large for the learner): answered nan, not learned; the model "
                         "is kept as it was")  # fmt: skip
                    a, n, k = b"nan\n\n", 1, 1
                out.append(a)
                rows += n
                bad += k
            return b"".join(out), rows, bad

        def save(self, target: str, fmt: str, link: str) -> None:
            b = self.bandit
            if not (_finite(b.table) and _finite(b.gstate) and _finite(b.stats)):
                raise Diverged("the bandit's weights or state are not finite (an importance "
                               "weight or a cost too large for the learner): no model "
                               "written")  # fmt: skip
            super().save(target, fmt, link)

    return GuardedBandit


def _examples(data: bytes, start: int) -> Iterator[tuple[bytes, int]]:
    """The multiline examples of ``data`` (whole examples, each ended by a blank line), one
    by one, with the line each starts on."""
    lines = re.findall(rb"[^\n]*\n|[^\n]+$", data)
    at = 0
    for i, line in enumerate(lines):
        if not line.strip():
            chunk = b"".join(lines[at : i + 1])
            if chunk.strip():
                yield chunk, start + at
            at = i + 1
    if at < len(lines):
        yield b"".join(lines[at:]), start + at


def _log(console: Console, text: str) -> None:
    """One line on stderr, under --quiet too (a refused model, a failed save, stats)."""
    with contextlib.suppress(OSError, ValueError):
        print(printable(text), file=console.stream or sys.stderr, flush=True)


def _write_small(path: str, what: str, text: str) -> None:
    """A pid or port file: written whole, then renamed into place (a descriptor such as
    ``/dev/stdout`` written through, never replaced: ``system.outputs``)."""
    write_text(path, text, what)


def _kind(kept: list | None, m: model_io.Model | None) -> tuple | None:
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
    (:func:`_kind`), or None.  A replacement of another kind would change the protocol (a
    scoring server's one-line clients would get no answers from a bandit), one of other
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


def _regular(path: str, what: str) -> None:
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


SAVE_WAIT = 30.0
"""Seconds a stopping server waits for a save under way before it writes its last save."""


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

    def write(self, check) -> None:  # noqa: ANN001 - Server._check_target
        check(self.target, self.path is not None)
        self.stage.write()
        self.stage.commit()

    def close(self) -> None:
        """Drop what was not committed (the target is left as it was)."""
        if self.staging is not None:
            self.context.run(self.staging.__exit__, None, None, None)
            self.staging = None


class Server:
    """The listening socket, its connections, and the served model's life (saves, reloads)."""

    def __init__(self, served: Served, inputs: Inputs, outputs: Outputs, opts: ServeOptions,
                 console: Console, explicit: dict | None = None,
                 kept: list | None = None, kind: tuple | None = None) -> None:  # fmt: skip
        self.served = served
        self.explicit = explicit or {}
        """The learning options given (a reloaded VW bandit model's, as at the start)."""
        self.inputs = inputs
        self.outputs = outputs
        self.opts = opts
        self.console = console
        self.model_path = inputs.initial_model
        self.model_id = _identity(self.model_path) if self.model_path else None
        self.kept = kept
        """The kept options of the VW bandit model served (read again from a reload)."""
        self.kind = kind
        """The served model's kind and options (:func:`_kind`): a reload must keep them."""
        self.refused_id: tuple | None = None
        self.reloading = False
        self.background: set[asyncio.Task] = set()
        self.saves: deque[_SaveJob] = deque()
        """Saves encoded and not yet written (the first: being written)."""
        self.saver: asyncio.Task | None = None
        self.signal: int | None = None
        self.stop: asyncio.Event | None = None  # made in the loop
        self.clients: set[asyncio.Task] = set()
        self.open = 0
        self.counts = dict(connections=0, refused=0, reads=0, lines=0, malformed=0,
                           reloads=0, reload_failures=0, saves=0, save_failures=0)  # fmt: skip
        self.latency: deque[float] = deque(maxlen=LATENCIES)
        self.unsaved = 0
        self.unsaved_since: float | None = None
        self.started = time.monotonic()
        self.sock: socket.socket | None = None

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
            _write_small(self.opts.port_file, "port file", f"{port}\n")
        return port

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.stop = asyncio.Event()
        caught = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)
        before = {s: signal.getsignal(s) for s in caught}
        for s in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(s, self._stop, s)
        loop.add_signal_handler(signal.SIGHUP, self._hangup)
        loop.add_signal_handler(signal.SIGUSR1, self.say_stats)
        server = await asyncio.start_server(self._client, sock=self.sock, limit=READ_SIZE)
        timers = [asyncio.create_task(self._ticks())]
        try:
            await self.stop.wait()
        finally:
            server.close()
            for t in timers:
                t.cancel()
            for t in [*self.clients, *self.background]:
                t.cancel()
            if self.clients:
                await asyncio.wait(list(self.clients), timeout=0.5)
            if self.saver is not None and not self.saver.done():
                # a save under way completes (the last save follows); queued ones are dropped
                await asyncio.wait([self.saver], timeout=SAVE_WAIT)
            for s in caught:
                loop.remove_signal_handler(s)  # (which leaves the default action)
                if before[s] is not None:
                    signal.signal(s, before[s])  # a second SIGTERM: sl's handler, not death

    def _stop(self, signum: int) -> None:
        self.signal = signum
        self.stop.set()

    def _hangup(self) -> None:
        if self.served.learner is not None:
            self.save(None, "SIGHUP")
        else:
            self.reload("SIGHUP")

    async def _ticks(self) -> None:
        """Reload checks, timed saves and stats lines, each on its own period."""
        last_stats = time.monotonic()
        while True:
            await asyncio.sleep(0.25)
            now = time.monotonic()
            if self.served.learner is None and self.opts.reload_seconds > 0 and self.model_path:
                if not self.reloading and _identity(self.model_path) not in (
                        self.model_id, self.refused_id, None):  # fmt: skip
                    self.reload("replaced")
            if (self.opts.save_seconds and self.unsaved_since is not None
                    and now - self.unsaved_since >= self.opts.save_seconds):  # fmt: skip
                self.save(None, "timer", auto=True)
            if self.opts.stats_seconds and now - last_stats >= self.opts.stats_seconds:
                last_stats = now
                self.say_stats()

    # -- a connection -----------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self.counts["connections"] += 1
        if self.open >= self.opts.max_connections:
            self.counts["refused"] += 1
            self.console.warn_once("full", f"sl serve: {self.open} connections open "
                                   "(--max-connections): further ones are closed at once")
            writer.close()
            return
        self.open += 1
        self.clients.add(task)
        with contextlib.suppress(OSError):
            writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = writer.get_extra_info("peername")
        name = f"<{peer[0]}:{peer[1]}>" if isinstance(peer, tuple) else "<client>"
        try:
            await self._converse(reader, writer, name)
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass  # the client left
        except asyncio.CancelledError:
            pass  # the server stops
        finally:
            self.open -= 1
            self.clients.discard(task)
            writer.close()
            if hasattr(self.served, "closed"):  # a bandit's unended example
                self.served.closed(name)

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        name: str) -> None:  # fmt: skip
        limit = self.opts.max_line_bytes
        carry = b""
        skipping = 0  # bytes of a too-long line dropped so far (0: not skipping)
        line = 1
        while True:
            data = await reader.read(READ_SIZE)
            t0 = time.perf_counter()
            eof = not data
            if eof:  # the client closed its side: a last line without newline counts
                if not carry or skipping:
                    return
                data = b"\n"
            head = b""
            if skipping:
                nl = data.find(b"\n")
                if nl < 0:
                    skipping += len(data)
                    continue
                skipping = 0
                head = b"nan\n"  # the long line's answer, as a malformed line's
                self.counts["malformed"] += 1
                self.counts["lines"] += 1
                line += 1
                data = data[nl + 1 :]
            buf = carry + data if carry else data
            cut = buf.rfind(b"\n") + 1
            carry = buf[cut:]
            if len(carry) > limit:
                skipping, carry = len(carry), b""
            if cut:
                body, lines, saves = self._answer(buf[:cut], name, line)
                line += lines
                head += body
                if saves:  # the answers after a save line come once it is written
                    await asyncio.wait(saves)
            if head:
                writer.write(head)
                self.latency.append(time.perf_counter() - t0)
                self.counts["reads"] += 1
                await writer.drain()  # a client that does not read is not read either
            if eof:
                return

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
            from streamlearn.io.reader import _drop_long_lines

            arr, long = _drop_long_lines(np.frombuffer(data, dtype=np.uint8), line,
                                         self.opts.max_line_bytes)  # fmt: skip
            if long:
                data = arr.tobytes()
        body, rows, bad = self.served.answer(data, name, line, long)
        self.counts["lines"] += rows
        self.counts["malformed"] += bad
        if self.served.learner is not None and rows:
            self.unsaved += rows - bad
            if self.unsaved_since is None:
                self.unsaved_since = time.monotonic()
            if self.opts.save_every and self.unsaved >= self.opts.save_every:
                self.save(None, "examples", auto=True)
        return body

    # -- saves and reloads ------------------------------------------------------------------

    def _save_line(self, path: bytes | None) -> asyncio.Future | None:
        if path is not None and not self.opts.save_paths:
            self.console.warn_once("save path", "sl serve: a 'save_PATH' line names no file "
                                   "here (sl vw --daemon allows it): saved to -f instead")
            path = None
        return self.save(path.decode("utf-8", "replace") if path is not None else None,
                         "save line")  # fmt: skip

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
                if self.stop.is_set():
                    _log(self.console, f"sl serve: not saved to {printable(job.target[:300])} "
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
        _regular(target, what)
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
        _log(self.console, f"sl serve: saving to {printable(shown)} failed ({why}): "
             f"{printable(msg)}")  # fmt: skip

    def _saved(self, target: str, why: str, examples: int, learned: int) -> None:
        self.counts["saves"] += 1
        if learned:
            self.unsaved -= learned  # (examples learned while it was written stay unsaved)
            self.unsaved_since = time.monotonic() if self.unsaved else None
        self.console.say(f"sl serve: saved {target} ({why}, {examples} examples)")

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
            _log(self.console, f"sl serve: refused {self.model_path} ({why}): {msg}; the "
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
        kept = _kept(path)
        m = model_io.load(path) if kept is None else None
        other = _other_kind(self.kind, _kind(kept, m))
        if other:
            raise ModelError(f"{other}: restart the server to serve it")
        if kept is not None:
            return _served(None, self.served.config, self.opts, self.console, path,
                           self.explicit)  # fmt: skip
        config = m.config
        if config.test_only is False:
            config = config.replace(test_only=True)
        return _served(m, config, self.opts, self.console)

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
        _log(self.console, f"sl serve: stats {text}")


def _daemonize() -> None:
    """VW's background mode: the parent exits 0 once the child listens; the child leads
    a new session, its stdin on /dev/null."""
    pid = os.fork()
    if pid > 0:
        os._exit(0)
    os.setsid()
    fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)


def _raise_fd_limit(want: int) -> None:
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < want + 64:
            top = want + 64 if hard == resource.RLIM_INFINITY else min(hard, want + 64)
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, top), hard))


def serve(explicit: dict, inputs: Inputs, outputs: Outputs, opts: ServeOptions,
          console: Console | None = None) -> dict:  # fmt: skip
    """Serve the model ``inputs.initial_model`` (or a fresh one, learning) until a signal.

    ``explicit``: the learning options given (TrainConfig fields), merged over the model's
    as ``sl train -i`` does.  Returns the final ``stats``; a SIGTERM/SIGINT ends it with
    :class:`~streamlearn.errors.Interrupted` (143/130) once a learning server has saved.
    """
    console = console or Console(False)
    if outputs.vw_format != opts.vw_format:
        opts = dataclasses.replace(opts, vw_format=outputs.vw_format)
    path = inputs.initial_model
    if path is None and not opts.learn:
        raise UsageError("serving without learning (-t) needs a model: -i MODEL")
    if (opts.save_every or opts.save_seconds) and not outputs.final_model:
        raise UsageError("--save-every needs -f/--final-model: where to save")
    check_paths(inputs, outputs, opts)
    # a model learned in place (-i m -f m) is locked from reading it to the last save, as
    # sl train locks it: a second server or an sl train -i m -f m waits (--lock-timeout)
    in_place = outputs.final_model if opts.learn else None
    with model_lock(path, in_place, outputs.lock_timeout, console.say):
        return _serve(explicit, inputs, outputs, opts, console, path)


def check_paths(inputs: Inputs, outputs: Outputs, opts: ServeOptions) -> None:
    """Before the model is read or the port listens: every file the server writes (-f, the
    pid and port files, any other output) checked as ``sl train`` checks its outputs -- none
    names an input, the served model (only -f may), another one, a directory, or a path
    whose directory does not exist -- and -f a file (the server saves by renaming a file
    over it; a FIFO or a device would block it)."""
    check_outputs([*written(inputs, outputs), (opts.pid_file, "pid file"),
                   (opts.port_file, "port file")], inputs.sources,
                  inputs.initial_model)  # fmt: skip
    if outputs.final_model:
        _regular(outputs.final_model, "-f")


def _serve(explicit: dict, inputs: Inputs, outputs: Outputs, opts: ServeOptions,
           console: Console, path: str | None) -> dict:  # fmt: skip
    kept = _kept(path)  # (the model's header, read once: the server compares reloads with it)
    vw_path = path if kept is not None else None
    m = model_io.load(path) if path is not None and vw_path is None else None
    if m is not None:
        outputs = model_io.with_link(m, outputs)  # a VW model's --link, as sl predict
        if outputs.link != opts.link:
            opts = dataclasses.replace(opts, link=outputs.link)
    config = merge_config(m.config if m is not None else None, dict(explicit))
    if config.test_only == opts.learn:
        config = config.replace(test_only=not opts.learn)
    why = model_io.writable_as(config, outputs.model_format) if outputs.final_model else None
    if why:
        raise UsageError(f"-f {outputs.final_model}: {why}")
    served = _served(m, config, opts, console, vw_path, explicit)
    served.warm_up()
    _raise_fd_limit(opts.max_connections)
    server = Server(served, inputs, outputs, opts, console, explicit, kept, _kind(kept, m))
    port = server.bind()
    if not opts.foreground:
        _daemonize()
    if opts.pid_file:
        _write_small(opts.pid_file, "pid file", f"{os.getpid()}\n")
    console.say(f"sl serve: {'learning' if opts.learn else 'scoring'} with "
                f"{path or 'a new model'} on {opts.host} port {port}")  # fmt: skip
    # what start-up made stays: the collector's full passes then skip it (fewer pauses)
    gc.collect()
    gc.freeze()
    asyncio.run(server.run())
    with committing():  # the last save completes: a second signal is held meanwhile
        if server.served.learner is not None and server.unsaved and outputs.final_model:
            server.save_now(NAMES.get(server.signal, "exit"))
        stats = server.stats()
        server.say_stats()
    if server.signal is not None:
        what = "model saved" if server.served.learner is not None and not server.unsaved \
            and outputs.final_model else "stopped"  # fmt: skip
        raise Interrupted(f"interrupted by {NAMES.get(server.signal, server.signal)}: {what}",
                          server.signal)  # fmt: skip
    sys.stderr.flush()
    return stats
