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

The parts: :mod:`~streamlearn.run.serve_options` (the options and limits),
:mod:`~streamlearn.run.serve_socket` (listening, connections, the request
protocol, the ``stats`` line), :mod:`~streamlearn.run.serve_model` (the model
served: each read parsed, scored or learned, answered), and
:mod:`~streamlearn.run.serve_saves` (saves and reloads); this module starts a
server and ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import os
import sys

from streamlearn import model as model_io
from streamlearn.errors import Interrupted, UsageError
from streamlearn.run.console import Console
from streamlearn.run.learner import merge_config
from streamlearn.run.options import Inputs, Outputs, written
from streamlearn.run.serve_model import kept_options, served_model
from streamlearn.run.serve_options import ServeOptions
from streamlearn.run.serve_saves import check_regular, model_kind
from streamlearn.run.serve_socket import Server
from streamlearn.system.locks import model_lock
from streamlearn.system.outputs import check_outputs, write_text
from streamlearn.system.process import NAMES, committing

__all__ = ["ServeOptions", "check_paths", "serve"]


def serve(explicit: dict, inputs: Inputs, outputs: Outputs, opts: ServeOptions,
          console: Console | None = None) -> dict:  # fmt: skip
    """Serve the model ``inputs.initial_model`` (or a fresh one, learning) until a signal.

    ``explicit``: the learning options given (TrainConfig fields), merged over the model's
    as ``sl train -i`` does.  Returns the final ``stats``; a SIGTERM/SIGINT ends it with
    :class:`~streamlearn.errors.Interrupted` (143/130) once a learning server has saved.
    """
    console = console or Console(False)
    if outputs.audit_regressor:
        raise UsageError("--audit_regressor with --daemon: not supported (sl vw -d FILE -i "
                         "MODEL --audit_regressor OUT)")  # fmt: skip
    if outputs.print_examples:
        raise UsageError("--print with --daemon: not yet (sl vw -d FILE --print)")
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
        check_regular(outputs.final_model, "-f")


def _serve(explicit: dict, inputs: Inputs, outputs: Outputs, opts: ServeOptions,
           console: Console, path: str | None) -> dict:  # fmt: skip
    # (the model's header, read once: the server compares reloads with it)
    kept = kept_options(path)
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
    served = served_model(m, config, opts, console, vw_path, explicit)
    served.warm_up()
    _raise_fd_limit(opts.max_connections)
    server = Server(served, inputs, outputs, opts, console, explicit, kept, model_kind(kept, m))
    port = server.bind()
    if not opts.foreground:
        _daemonize()
    if opts.pid_file:
        # written whole, then renamed into place (a descriptor such as /dev/stdout
        # written through, never replaced: system.outputs)
        write_text(opts.pid_file, f"{os.getpid()}\n", "pid file")
    console.say(f"sl serve: {'learning' if opts.learn else 'scoring'} with "
                f"{path or 'a new model'} on {opts.host} port {port}")  # fmt: skip
    # what start-up made stays: the collector's full passes then skip it (fewer pauses)
    gc.collect()
    gc.freeze()
    asyncio.run(server.run())
    keeper = server.keeper
    with committing():  # the last save completes: a second signal is held meanwhile
        if server.served.learner is not None and keeper.unsaved and outputs.final_model:
            keeper.save_now(NAMES.get(server.signal, "exit"))
        stats = server.stats()
        server.say_stats()
    if server.signal is not None:
        what = "model saved" if server.served.learner is not None and not keeper.unsaved \
            and outputs.final_model else "stopped"  # fmt: skip
        raise Interrupted(f"interrupted by {NAMES.get(server.signal, server.signal)}: {what}",
                          server.signal)  # fmt: skip
    sys.stderr.flush()
    return stats


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

