"""``sl train --dask ADDRESS``: data-parallel training on a Dask cluster.

The inputs are cut into shards (:mod:`streamlearn.io.ranges`: whole files,
and large plain files cut into byte ranges at newlines; compressed files
whole), and the shards are dealt, in input order and balanced by bytes, to
one *rank* per Dask worker.  Each rank learns its shards with the ordinary
parser and kernels (:func:`streamlearn.distributed.segment.run_segment`, one Dask task per
rank and sync interval).  After every pass -- and, with ``sync_every``, after
every that many examples of each rank -- each rank settles its lazy state and
the ranks' tables are averaged, weighted by the examples each learned
(iterative parameter mixing, :mod:`streamlearn.distributed.mixing`); every rank goes on
from the average.  Only the stored (non-zero) rows travel.

Exactly once: a task is a pure function of its inputs (the rows all ranks
start from, the rank's clock and counters, where it starts reading), so when
Dask reruns a task whose worker died, the rerun computes the same result; the
driver takes one result per task (a gathered future) and checks after every
pass that the pieces read of each shard are contiguous and complete, once.
The model written is an ordinary ``sl`` model.  With one rank nothing is ever
averaged and the model is bit-identical to ``sl train``'s over the same files.

As ``xgboost.dask`` and ``lightgbm.dask``: the same model whether trained
locally or on a cluster, a ``client`` or an address as the only new argument,
and no networking of our own (Dask moves the rows and reruns lost tasks).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
import types
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator

import numpy as np

from streamlearn import model as model_io
from streamlearn.distributed.mixing import Rows, average, label_range, refusal, share_label_range
from streamlearn.distributed.segment import Job, Position, Segment, run_segment
from streamlearn.errors import ClusterLost, UsageError
from streamlearn.io.ranges import Shard, cut
from streamlearn.learners.base import (
    G_LABEL_MAX,
    G_LABEL_MIN,
    G_N,
    G_T,
    P_HOLDOUT,
    S_HO_LOSS,
    S_HO_W,
    S_LOSS,
    S_NEXT_DUMP,
    S_NROWS,
    S_PASS_N,
    S_SHOWN_N,
    S_SHOWN_W,
    S_SINCE_LOSS,
    S_SINCE_W,
    S_WLAB,
    STATS_SIZE,
    new_stats,
)
from streamlearn.run.console import Console
from streamlearn.run.options import Inputs, Outputs, check
from streamlearn.run.passes import HOLDOUT_SUMS
from streamlearn.run.runner import SHOWN_ERRORS, no_examples
from streamlearn.system.sources import describe

MISSING = "--dask needs Dask: pip install 'streamlearn[dask]'"
SYNC_BLOCK = 1 << 20
"""Block size when syncing within a pass (a task reads at most a few blocks past its budget)."""


def require_dask() -> None:
    """Raise a :class:`UsageError` (exit 2) with the install command when Dask is missing."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise UsageError(MISSING) from None


CLOSE_TIMEOUT = 5
"""Seconds to wait for a client (and a local cluster) to close: a lost scheduler is not
waited for (Dask's client tries to reconnect for 30 s)."""
_LOCAL = re.compile(r"local(?::(\d{1,30}))?")
_FORMS = "give local, local:N, a scheduler file or an address such as tcp://host:8786"


def _local_workers(address: str) -> int:
    """N of ``local:N`` (the cores for ``local``), checked."""
    m = _LOCAL.fullmatch(address)
    if m is None:
        raise UsageError(f"--dask {address}: {_FORMS}")
    cores = os.cpu_count() or 1
    n = int(m.group(1) or cores)
    most = max(8, 4 * cores)
    if not 1 <= n <= most:
        raise UsageError(f"--dask {address}: a local cluster has 1 to {most} worker processes "
                         f"here (4 per core)")  # fmt: skip
    return n


def _scheduler_file(path: str) -> None:
    """Refuse a file that is not what ``dask scheduler --scheduler-file`` writes."""
    import json

    try:
        with open(path, "rb") as f:
            info = json.loads(f.read(1 << 20).decode("utf-8"))
    except OSError as e:
        raise UsageError(f"--dask {path}: cannot read the scheduler file: {describe(e)}") from None
    except (ValueError, RecursionError):
        info = None
    if not isinstance(info, dict) or not isinstance(info.get("address"), str):
        raise UsageError(f"--dask {path}: not a scheduler file (as written by dask scheduler "
                         "--scheduler-file: JSON with the scheduler's address)")  # fmt: skip


def _quiet_dask() -> None:
    """Dask's own log lines (a lost scheduler, a failed task) stay off sl's stderr: the run
    ends with one line of its own.  Dask's logging configuration gives some of its loggers
    their own levels (``distributed.client``: warning), so each is set, and the handlers."""
    names = ["distributed", "tornado", "asyncio"]
    names += [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]
    for name in names:
        logger = logging.getLogger(name)
        logger.setLevel(logging.CRITICAL)
        for handler in logger.handlers:
            handler.setLevel(logging.CRITICAL)


def connect(address: str):
    """A Dask client for ``address``; returns ``(client, close, description)``.

    ``address``: ``local`` or ``local:N`` (a LocalCluster of N worker
    processes on this machine, one thread each; N defaults to the cores), a
    scheduler file written by ``dask scheduler --scheduler-file``, or a
    scheduler address such as ``tcp://host:8786``.  Anything else, or a
    scheduler that cannot be reached, is a :class:`UsageError` (exit 2).
    """
    require_dask()
    from distributed import Client, LocalCluster

    if not address.strip():
        raise UsageError(f"--dask '{address}': {_FORMS}")
    _quiet_dask()
    local = address == "local" or address.startswith("local:")
    n = _local_workers(address) if local else 0
    is_file = not local and os.path.isfile(address)
    if is_file:
        _scheduler_file(address)
    try:
        if local:
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   dashboard_address=":0",
                                   silence_logs=logging.CRITICAL)  # fmt: skip
            client = Client(cluster)

            def close() -> None:
                with contextlib.suppress(Exception):
                    client.close(timeout=CLOSE_TIMEOUT)
                with contextlib.suppress(Exception):
                    cluster.close(timeout=CLOSE_TIMEOUT)

            return client, close, f"a local cluster of {n} worker process{'es' * (n > 1)}"
        if is_file:
            client = Client(scheduler_file=address, timeout="30s")
        else:
            client = Client(address, timeout="30s")
        client.wait_for_workers(1, timeout=60)
    except (OSError, TimeoutError) as e:
        raise UsageError(f"--dask {address}: cannot reach the scheduler: {e}") from None
    except (ValueError, TypeError) as e:  # how Dask says an address cannot be parsed
        raise UsageError(f"--dask {address}: not a scheduler address ({e}); {_FORMS}") from None

    def close_client() -> None:
        with contextlib.suppress(Exception):
            client.close(timeout=CLOSE_TIMEOUT)

    return client, close_client, f"the scheduler at {client.scheduler.address}"


@contextlib.contextmanager
def cluster_failures(where: str) -> Iterator[None]:
    """Failures of the cluster itself (its scheduler gone, every worker gone, tasks
    cancelled) as :class:`ClusterLost`, exit 11.  What a task raises for its input
    (:func:`~streamlearn.distributed.segment.run_segment`) is already an ``SlError``."""
    from concurrent.futures import CancelledError

    try:
        yield
    except (OSError, TimeoutError, CancelledError) as e:
        why = " ".join((describe(e) if str(e) else type(e).__name__).split())  # one line
        raise ClusterLost(f"--dask: lost the cluster ({where}): {why}; nothing written") from None


def plan(sources: list[str], ranks: int) -> list[list[tuple[int, Shard]]]:
    """The shards of ``sources`` dealt to ``ranks`` ranks: [(shard id, shard), ...] per rank.

    A plain file larger than its share (total bytes / ranks) is cut into that
    many byte ranges; each rank gets a contiguous run of shards in input
    order, balanced by bytes.  With one rank: every file whole, in order.
    """
    sizes = [os.path.getsize(s) for s in sources]
    total = sum(sizes) or 1
    share = total / ranks
    shards: list[Shard] = []
    for path, size in zip(sources, sizes, strict=True):
        shards.extend(cut(path, int(np.ceil(size / share)) if size > share else 1))
    out: list[list[tuple[int, Shard]]] = [[] for _ in range(ranks)]
    at = 0
    for sid, shard in enumerate(shards):
        middle = at + shard.size / 2
        out[min(ranks - 1, int(middle / share))].append((sid, shard))
        at += shard.size
    return out


def train(explicit: dict, inputs: Inputs, outputs: Outputs, *, address: str | None = None,
          client=None, sync_every: int | None = None, ranks: int | None = None,
          console: Console | None = None) -> dict:  # fmt: skip
    """Train over ``inputs.sources`` on a Dask cluster; return the JSON report.

    Parameters
    ----------
    explicit : dict
        Learning options given (names as :class:`~streamlearn.config.TrainConfig`).
    inputs : Inputs
        Regular files, by paths every worker can open, and the model to continue.
    outputs : Outputs
        The model and the report (predictions, --invert-hash: refused).
    address : str, optional
        ``local[:N]``, a scheduler file or a scheduler address (see :func:`connect`).
    client : distributed.Client, optional
        A client to use instead (left open).
    sync_every : int, optional
        Also average every this many examples of each rank within a pass.
    ranks : int, optional
        Learners to run (default: one per worker of the cluster).
    console : Console, optional
        Where the table and messages go (stderr).
    """
    from streamlearn.run.grid import Grid
    from streamlearn.system.locks import model_lock
    from streamlearn.system.outputs import same_file

    require_dask()
    console = console or Console(False)
    started = time.perf_counter()
    grid = Grid.expand(explicit)
    if grid.size > 1:
        raise UsageError("--dask trains one configuration: give single values, not lists")
    explicit = grid.configurations[0].explicit
    refuse_unsupported(inputs, outputs, sync_every)
    if explicit.get("decay_learning_rate", 1.0) != 1.0:
        raise UsageError("--dask does not take --decay-learning-rate (one rate for every pass)")
    check(inputs, outputs)
    start, out = inputs.initial_model, outputs.final_model
    in_place = out if start and out and same_file(out, start) else None
    with model_lock(start, in_place, outputs.lock_timeout, console.say):
        return _Run(explicit, inputs, outputs, console, sync_every,
                    ranks).run(address, client, started)  # fmt: skip


def refuse_unsupported(inputs: Inputs, outputs: Outputs, sync_every: int | None) -> None:
    """What a distributed run cannot do, refused before any work."""
    from streamlearn.system.sources import is_regular

    why = {
        "-p: predictions come from every worker at once; score the model with "
        "sl predict -i MODEL -p PATH": outputs.predictions,
        "--invert-hash: feature names are collected in one process": outputs.invert_hash,
        "--cache: each worker reads its own shards on every pass": inputs.cache,
        "-r: predictions come from every worker at once": outputs.raw_predictions,
        "--examples: the first examples of one stream; the workers read shards":
            inputs.examples is not None,
    }
    for text, given in why.items():
        if given:
            raise UsageError(f"--dask does not take {text}")
    if not inputs.sources:
        raise UsageError("--dask needs input files (workers open them by path; stdin is not "
                         "shared with them)")  # fmt: skip
    for s in inputs.sources:
        if s != "-" and os.path.exists(s) and not is_regular(s):
            raise UsageError(f"--dask needs regular files; {s} is a stream (workers open each "
                             "input by path)")  # fmt: skip
        if s == "-":
            raise UsageError("--dask needs input files; stdin is not shared with the workers")
    if sync_every is not None and sync_every < 1:
        raise UsageError(f"--sync-every {sync_every}: give a number of examples >= 1")


class _Run:
    """One distributed run: the driver's state between syncs."""

    def __init__(self, explicit: dict, inputs: Inputs, outputs: Outputs, console: Console,
                 sync_every: int | None, ranks: int | None) -> None:  # fmt: skip
        self.explicit, self.console = explicit, console
        self.inputs, self.outputs = inputs, outputs
        self.sync_every, self.want_ranks = sync_every, ranks

    # -- setup ---------------------------------------------------------------

    def _setup(self) -> None:
        from streamlearn.run.runner import FormatGuard
        from streamlearn.run.train import Learner, merge_config, print_config

        inputs = self.inputs
        self.initial = model_io.load(inputs.initial_model) if inputs.initial_model else None
        config = merge_config(self.initial.config if self.initial else None, self.explicit,
                              model_io.unrecorded(self.initial))
        why = refusal(config.algo, config.minibatch)
        if config.oaa:
            raise UsageError("--dask does not train one-against-all (--oaa) models: train them "
                             "in one process")  # fmt: skip
        if config.stack:
            from streamlearn.reductions import single_line

            named = single_line(config)
            if named is not None and not getattr(named[0], "AVERAGED", True):
                raise UsageError(f"--dask: a --{named[0].NAME} model cannot be averaged across "
                                 "workers: train it in one process")  # fmt: skip
        if self.outputs.save_per_pass:
            raise UsageError("--dask does not save each pass's model (--save-per-pass): its "
                             "passes end in the averaged model")  # fmt: skip
        if why is not None:
            raise UsageError(f"--dask: --algo {config.algo} cannot be averaged across "
                             f"workers: {why}")  # fmt: skip
        guard = FormatGuard(self.initial.config if self.initial else None,
                            self.explicit.get("format"),
                            f"model {inputs.initial_model}")  # fmt: skip
        fmt = guard.parse_as
        if fmt == "auto":
            fmt, source = _detect(inputs.sources)
            if source is not None:
                from streamlearn.io.parse import FORMATS

                probe = types.SimpleNamespace(fmt=FORMATS[fmt],
                                              block=types.SimpleNamespace(source=source))
                guard.check(probe, config)
        self.config = config.replace(format=fmt)
        learner = (Learner.from_model(self.initial, self.config) if self.initial
                   else Learner.fresh(self.config))  # fmt: skip
        self.spec, self.params = learner.spec, self.config.params()
        self.base = Rows.of(learner.table, self.spec)
        self.g0 = learner.gstate.copy()
        self.stats0 = learner.stats
        print_config(self.console, self.config, inputs, self.spec)

    # -- the run -------------------------------------------------------------

    def run(self, address: str | None, client, started: float) -> dict:
        from streamlearn.run.report import HEADER, ProgressTable
        from streamlearn.run.train import check_model, save_outputs
        from streamlearn.system.outputs import staging
        from streamlearn.system.process import committing, interruptible

        self._setup()
        close = None
        if client is None:
            client, close, where = connect(address)
        else:
            where = "the given client"
        try:
            with interruptible():
                with cluster_failures(where):
                    workers = sorted(client.scheduler_info()["workers"])
                    if not workers:
                        client.wait_for_workers(1, timeout=60)
                        workers = sorted(client.scheduler_info()["workers"])
                want = self.want_ranks or len(workers)
                self.ranks = [r for r in plan(self.inputs.sources, want) if r]
                n = len(self.ranks)
                self.assigned = [workers[r % len(workers)] for r in range(n)]
                nshards = sum(len(r) for r in self.ranks)
                when = "every pass" + (f" and every {self.sync_every:,} examples of each "
                                       "worker" if self.sync_every else "")  # fmt: skip
                self.console.say(
                    f"dask: {len(workers)} worker{'s' * (len(workers) > 1)} on {where}; "
                    f"{nshards} shard{'s' * (nshards > 1)} over {n} rank{'s' * (n > 1)}; "
                    + ("averaged after " + when if n > 1 else "one rank: nothing averaged")
                )
                self.console.say(HEADER)
                self.progress = ProgressTable(self.console.say,
                                              holdout=self.params[P_HOLDOUT] > 0.0)  # fmt: skip
                with cluster_failures(where):
                    self._learn(client)
                final = self.log.final_model(self._snapshot)
                check_model(final)
                result = self._result(final)
                elapsed = time.perf_counter() - started
                result.update(seconds=elapsed, examples_per_second=(
                    result["examples"] / elapsed if elapsed > 0 else None))  # fmt: skip
                with staging() as stage:  # every output written before any is visible
                    save_outputs(final, self.outputs)
                    if self.outputs.report:
                        from streamlearn.run.report import write_json

                        write_json(self.outputs.report, result)
                    stage.write()
                    with committing():
                        stage.commit()  # the model last
        finally:
            if close is not None:
                close()
        from streamlearn.run.report import summary_text

        self.console.say(summary_text(result))
        return result

    def _learn(self, client) -> None:
        from streamlearn.run.passes import PassLog

        n, c = len(self.ranks), self.config
        self.gstates = [self.g0.copy() for _ in range(n)]
        self.stats = [self.stats0.copy() if r == 0 else new_stats() for r in range(n)]
        self.log = PassLog(c, self.console.say)
        block = self.inputs.block_size if self.sync_every is None else min(self.inputs.block_size,
                                                                         SYNC_BLOCK)  # fmt: skip
        job = Job(c, c.format, block, self.inputs.strict, max_line=self.inputs.max_line_bytes)
        run_id = uuid.uuid4().hex[:10]
        self.skipped, self.reasons, self.first_errors = 0, Counter(), []
        self.syncs: list[dict] = []
        self.per_rank = [{"rank": r, "shards": [s.describe() for _, s in shards],
                          "bytes": sum(s.size for _, s in shards), "workers": [],
                          "tasks": 0, "examples": 0, "seconds": 0.0}
                         for r, shards in enumerate(self.ranks)]  # fmt: skip
        shard_ids = [sid for shards in self.ranks for sid, _ in shards]
        self._example = np.array([np.nan, np.nan, 0.0])
        for pass_no in range(1, c.passes + 1):
            agg = self._agg()
            self.progress.begin_pass(pass_no, agg)  # (the holdout sums of every pass so far)
            self.log.begin(agg)
            held = []
            for s in self.stats:
                held.append(s[HOLDOUT_SUMS].copy())
                s[HOLDOUT_SUMS] = 0.0
                s[S_PASS_N] = 0.0
            self._line_at = (float(agg[S_LOSS]), float(agg[S_WLAB]))
            self._next_line = max(1.0, float(agg[S_NEXT_DUMP]))
            where = {r: Position() for r in range(n)}
            pieces = []
            seg = 0
            while where:
                results = self._segment(client, job, run_id, pass_no, seg, where)
                for res in results:
                    pieces.extend(res.pieces)
                where = {res.rank: res.next for res in results if res.next is not None}
                self._lines(results, last=not where)
                seg += 1
            _check_pieces(pass_no, pieces, shard_ids)
            if pass_no == 1 and not self.inputs.allow_empty:
                if sum(p.examples for p in pieces) == 0:
                    raise no_examples(", ".join(self.inputs.sources), self.skipped,
                                      self.first_errors)  # fmt: skip
            agg = self._agg()
            for s, h in zip(self.stats, held, strict=True):
                s[HOLDOUT_SUMS] += h
            if self.log.end(agg, self._snapshot):
                break

    def _segment(self, client, job: Job, run_id: str, pass_no: int, seg: int,
                 where: dict) -> list:  # fmt: skip
        """Run one sync interval on every rank still reading; average; return the results."""
        n = len(self.ranks)
        t0 = time.perf_counter()
        base = client.scatter(self.base, hash=False, broadcast=n > 1)
        futures = [
            client.submit(
                run_segment,
                Segment(job, r, self.ranks[r], pos, self.sync_every, n > 1, self.gstates[r],
                        self.stats[r], pass_no == 1),
                base,
                key=f"sl-segment-{run_id}-pass{pass_no}-seg{seg}-rank{r}",
                pure=False,
                workers=[self.assigned[r]],
                allow_other_workers=True,
            )
            for r, pos in sorted(where.items())
        ]  # fmt: skip
        results = client.gather(futures)
        t1 = time.perf_counter()
        for res in results:
            self.gstates[res.rank], self.stats[res.rank] = res.gstate, res.stats
            info = self.per_rank[res.rank]
            info["tasks"] += 1
            info["seconds"] += res.seconds
            info["examples"] += sum(p.examples for p in res.pieces) if pass_no == 1 else 0
            if res.worker not in info["workers"]:
                info["workers"].append(res.worker)
            self._errors(res)
        if n == 1:
            self.base = results[0].rows
        else:
            parts = [(res.rows, res.learned) for res in results]
            if any(w > 0 for _, w in parts):
                self.base = average(self.spec, self.params, parts)
            share_label_range(self.gstates)
        t2 = time.perf_counter()
        self.syncs.append({
            "pass": pass_no, "segment": seg, "ranks": len(results),
            "examples": sum(res.learned for res in results),
            "rows_up": sum(int(res.rows.slots.size) for res in results),
            "bytes_up": sum(res.rows.nbytes for res in results),
            "bytes_down": self.base.nbytes * len(results),
            "wait_seconds": t1 - t0, "mix_seconds": t2 - t1,
            "task_seconds": max(res.seconds for res in results),
        })  # fmt: skip
        return results

    def _errors(self, res) -> None:
        self.skipped += res.skipped
        self.reasons.update(res.reasons)
        for msg in res.first_errors:
            if len(self.first_errors) < SHOWN_ERRORS:
                self.first_errors.append(msg)
                self.console.warn_once(msg, f"skipped {msg}")
        for text in res.warnings:
            self.console.warn_once(text, text)

    def _lines(self, results: list, last: bool) -> None:
        """The progressive table: the kernel's own lines with one rank, else one per sync."""
        if len(self.ranks) == 1:
            rows = results[0].table_rows
            if rows.shape[0]:
                count = np.zeros(STATS_SIZE)
                count[S_NROWS] = rows.shape[0]
                self.progress.emit(count, rows)
            return
        agg = self._agg()
        if agg[S_SHOWN_W] < self._next_line and not last:
            return
        while self._next_line <= agg[S_SHOWN_W]:
            self._next_line *= 2.0
        latest = [res.table_rows[-1] for res in results if res.table_rows.shape[0]]
        if latest:
            self._example = latest[-1][4:7].copy()
        row = np.full((1, 9), np.nan)
        loss, w = float(agg[S_LOSS]), float(agg[S_WLAB])
        row[0, 0] = loss / w if w > 0 else np.nan
        dw = w - self._line_at[1]
        row[0, 1] = (loss - self._line_at[0]) / dw if dw > 0 else np.nan
        row[0, 2], row[0, 3] = agg[S_SHOWN_N], agg[S_SHOWN_W]  # held-out ones left out
        row[0, 4:7] = self._example
        row[0, 7], row[0, 8] = agg[S_HO_LOSS], agg[S_HO_W]
        self._line_at = (loss, w)
        count = np.zeros(STATS_SIZE)
        count[S_NROWS] = 1
        self.progress.emit(count, row)

    # -- the model and the report ----------------------------------------------

    def _agg(self) -> np.ndarray:
        """The ranks' counters added up (one rank: its own, exactly)."""
        if len(self.stats) == 1:
            return self.stats[0].copy()
        agg = np.sum(self.stats, axis=0)
        agg[S_NROWS] = agg[S_SINCE_LOSS] = agg[S_SINCE_W] = 0.0
        agg[S_NEXT_DUMP] = 1.0
        while agg[S_NEXT_DUMP] <= agg[S_SHOWN_W]:
            agg[S_NEXT_DUMP] *= 2.0
        return agg

    def _gstate(self) -> np.ndarray:
        """The model's global state: rank 0's, with the clocks of every rank added up."""
        g = self.gstates[0].copy()
        if len(self.gstates) > 1:
            for k in (G_T, G_N):
                g[k] = self.g0[k] + sum(s[k] - self.g0[k] for s in self.gstates)
            both = label_range(self.gstates)
            if both is not None:
                g[G_LABEL_MIN], g[G_LABEL_MAX] = both
        return g

    def _snapshot(self) -> model_io.Model:
        names = self.initial.names if self.initial is not None else None
        return model_io.from_training(
            self.config, self.spec, self.base.table(self.spec, self.config.bits),
            self._gstate(), self._agg(), self.params, names=names,
        )  # fmt: skip

    def _result(self, final: model_io.Model) -> dict:
        from streamlearn.run.report import train_report

        result = train_report(self._agg(), self.config, self.spec.name, final.nnz,
                              self.progress.curve, self.skipped, self.reasons, self.first_errors,
                              self.outputs.final_model, self.inputs.initial_model)  # fmt: skip
        result.update(self.log.report())
        syncs = self.syncs
        result.update(
            distributed={
                "ranks": len(self.ranks),
                "sync_every": self.sync_every,
                "workers": self.per_rank,
                "syncs": len(syncs),
                "sync_bytes_up": sum(s["bytes_up"] for s in syncs),
                "sync_bytes_down": sum(s["bytes_down"] for s in syncs),
                "wait_seconds": sum(s["wait_seconds"] for s in syncs),
                "mix_seconds": sum(s["mix_seconds"] for s in syncs),
                "sync_log": syncs[:1000],
            },
        )
        return result


def _detect(sources: list[str]) -> tuple[str, str | None]:
    """The format of the first non-empty line of ``sources`` (``vw`` when there is none)."""
    from streamlearn.io.parse import FORMATS, detect_block
    from streamlearn.io.reader import iter_blocks

    names = {code: name for name, code in FORMATS.items()}
    for path in sources:
        for block in iter_blocks([path], 1 << 16):
            code = detect_block(block)
            if code is not None:
                return names[code], path
    return "vw", None


def _check_pieces(pass_no: int, pieces: list, shard_ids: list[int]) -> None:
    """Every shard read exactly once in the pass: contiguous pieces, the last one complete."""
    by = defaultdict(list)
    for p in pieces:
        by[p.shard].append(p)
    for sid in shard_ids:
        ps = sorted(by.get(sid, []), key=lambda p: (p.begin, p.end))
        ok = bool(ps) and ps[-1].complete and not any(p.complete for p in ps[:-1])
        ok = ok and all(a.end == b.begin for a, b in zip(ps, ps[1:], strict=False))
        if not ok:
            raise RuntimeError(
                f"pass {pass_no}: shard {sid} was not read exactly once "
                f"({[(p.begin, p.end, p.complete) for p in ps]}): a bug, please report it"
            )
