"""``sl train --dask`` of a bandit (``--cb-adf``, ``--cb K``, ``--csoaa-ldf``, with or
without ``--explore``): data-parallel passes over logged multiline examples.

As :mod:`streamlearn.distributed.driver` does for single-line learners, the inputs are cut
into shards dealt to one *rank* per Dask worker, each rank learns its shards with the
kernels ``sl train`` runs (:class:`streamlearn.run.bandit.Bandit`), and after every pass
the ranks' gd tables are averaged, weighted by the examples each learned (iterative
parameter mixing; :func:`streamlearn.distributed.mixing.average`).  Here a plain file is
cut only where an example ends (after a blank line, :func:`streamlearn.io.ranges.cut_examples`),
so no example is split between ranks; compressed files are whole shards.

What each rank keeps of its own, as VW's AllReduce does (it averages weights only): gd's
normalizer sums and clock, the explorer's counters and random generator, ``dr``'s last
regressor predictions.  The model written is ``sl train``'s bandit model: the averaged
weights, rank 0's state, the clocks and counts of every rank added up.  With one rank
nothing is averaged and the model equals ``sl train``'s over the same files.

Refused: ``-p`` (predictions come from every worker at once: score the model with
``sl predict``), ``--cache``, streams and stdin, ``--sync-every``.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import TrainConfig
from streamlearn.distributed.driver import (
    cluster_failures,
    connect,
    refuse_unsupported,
    require_dask,
)
from streamlearn.distributed.mixing import Rows, average
from streamlearn.errors import MalformedData, UsageError
from streamlearn.io.ranges import Shard, cut_examples
from streamlearn.learners import cb_adf, gd
from streamlearn.learners.base import G_N, G_T
from streamlearn.run.console import Console
from streamlearn.run.options import Inputs, Outputs, check


@dataclass(frozen=True)
class RankTask:
    """One rank's pass: a pure function of these (a rerun gives the same result)."""

    rank: int
    config: TrainConfig
    ml: dict
    shards: list
    block_size: int
    max_line: int
    strict: bool
    gstate: np.ndarray
    stats: np.ndarray
    """The rank's counters so far (mtr weighs by their ratio of examples to actions)."""
    own: dict
    """The rank's explorer state and ``dr``'s predictions (:meth:`Bandit.state`'s fields)."""
    holdout: bool


@dataclass
class RankResult:
    rank: int
    rows: Rows
    gstate: np.ndarray
    own: dict
    stats: np.ndarray
    """The rank's counters after the pass (:data:`streamlearn.learners.cb_adf.STATS`)."""
    learned: float
    malformed: int
    messages: list
    seconds: float


def plan(sources: list[str], ranks: int) -> list[list[Shard]]:
    """The shards of ``sources`` dealt to ``ranks`` ranks, in input order, balanced by bytes;
    a plain file larger than its share is cut at example ends."""
    import os

    sizes = [os.path.getsize(s) for s in sources]
    share = (sum(sizes) or 1) / ranks
    shards: list[Shard] = []
    for path, size in zip(sources, sizes, strict=True):
        shards.extend(cut_examples(path, int(np.ceil(size / share)) if size > share else 1))
    out: list[list[Shard]] = [[] for _ in range(ranks)]
    at = 0
    for shard in shards:
        out[min(ranks - 1, int((at + shard.size / 2) / share))].append(shard)
        at += shard.size
    return [r for r in out if r]


def _bandit(config: TrainConfig, ml: dict, rows: Rows, gstate: np.ndarray, own: dict):  # noqa: ANN202
    """A rank's learner: the averaged weights, its own state."""
    from streamlearn.reductions import Multiline
    from streamlearn.run.bandit import Bandit

    b = Bandit(config, Multiline(**ml))
    _restore(b, rows, gstate, own)
    return b


def _restore(b, rows: Rows, gstate: np.ndarray, own: dict) -> None:  # noqa: ANN001
    """Put ``rows`` (the weights), ``gstate`` and a rank's own state into learner ``b``."""
    b.table[:] = 0.0
    b.table[rows.slots] = rows.state
    b.gstate = gstate.copy()
    b.dr_prev = np.array(own["dr_prev"], dtype=np.float64)
    if b.xp is not None and own.get("xstats"):
        b.xp.xstats = np.array(own["xstats"], dtype=np.float64)
        b.xp.rng = np.array([int(own["rng"])], dtype=np.uint64)
        b.xp.counts = np.array(own["counts"], dtype=np.float64)


def run_rank(task: RankTask, base: Rows) -> RankResult:
    """Learn one pass of the rank's shards from the averaged weights ``base``."""
    from streamlearn.io.multiline import example_blocks
    from streamlearn.io.ranges import open_shard
    from streamlearn.io.reader import iter_lines_blocks

    t0 = time.perf_counter()
    b = _bandit(task.config, task.ml, base, task.gstate, task.own)
    b.stats = task.stats.copy()
    learned0 = float(b.gstate[G_N])
    period = task.config.effective_holdout if task.holdout else 0
    n = 0
    malformed = 0
    messages: list[str] = []
    for shard in task.shards:
        src, _ = open_shard(shard)
        try:
            blocks = iter_lines_blocks(src, task.block_size, task.max_line)
            if b.ml.reduction != "cb":
                blocks = example_blocks(blocks)
            for block in blocks:
                part = b.parse(block)
                for msg in part.bad:
                    malformed += 1
                    if task.strict:
                        raise MalformedData(f"{msg} (--strict)")
                    if len(messages) < 10:
                        messages.append(msg)
                m = part.mg.act_ptr.shape[0] - 1
                ho = (n + 1 + np.arange(m)) % period == 0 if period else None
                n += m
                b.run(part, ho)
        finally:
            src.close()
    gd.SPEC.rebase(b.table, b.gstate, b.params)
    state = b.state()
    own = {k: state[k] for k in ("dr_prev", "xstats", "rng", "counts")}
    return RankResult(task.rank, Rows.of(b.table, gd.SPEC), b.gstate, own, b.stats.copy(),
                      float(b.gstate[G_N]) - learned0, malformed, messages,
                      time.perf_counter() - t0)  # fmt: skip


def train(learn: dict, bandit: dict, inputs: Inputs, outputs: Outputs, *,
          address: str | None = None, client=None, ranks: int | None = None,
          console: Console | None = None) -> dict:  # noqa: ANN001  # fmt: skip
    """``sl train --dask ADDRESS --cb-adf ...``: every pass on the cluster, the weights
    averaged after each; writes ``-f`` (sl's bandit model) and the report; the summary."""
    from streamlearn.reductions import Multiline
    from streamlearn.reductions.options import config_of
    from streamlearn.run.bandit import Bandit, is_bandit
    from streamlearn.run.train import merge_config

    require_dask()
    console = console or Console(False)
    if outputs.predictions or outputs.raw_predictions:
        raise UsageError("--dask does not take -p: predictions come from every worker at "
                         "once; score the model with sl predict -i MODEL -p PATH")  # fmt: skip
    refuse_unsupported(inputs, outputs, None)
    check(inputs, outputs)
    start = model_io.load(inputs.initial_model) if inputs.initial_model else None
    if start is not None:
        if not is_bandit(start):
            raise UsageError(f"{inputs.initial_model}: not a bandit model")
        config = merge_config(start.config, dict(learn))
        config_of({"algo": config.algo})
        b0 = Bandit.from_model(start, config, bandit)
    else:
        if not bandit.get("reduction"):
            raise UsageError("a bandit needs --cb-adf, --cb K or --csoaa-ldf")
        config = config_of(dict(learn))
        b0 = Bandit(config, Multiline(**bandit))
    ml = {f.name: getattr(b0.ml, f.name) for f in dataclasses.fields(Multiline)}
    started = time.perf_counter()
    close = None
    if client is None:
        client, close, where = connect(address)
    else:
        where = "the given client"
    try:
        with cluster_failures(where):
            workers = sorted(client.scheduler_info()["workers"])
            if not workers:
                client.wait_for_workers(1, timeout=60)
                workers = sorted(client.scheduler_info()["workers"])
            shards = plan(list(inputs.sources), ranks or len(workers))
            n = len(shards)
            console.say(f"dask: {len(workers)} worker{'s' * (len(workers) > 1)} on {where}; "
                        f"{sum(map(len, shards))} shards over {n} rank{'s' * (n > 1)}; "
                        + ("weights averaged after every pass" if n > 1
                           else "one rank: nothing averaged"))  # fmt: skip
            out = _passes(client, workers, shards, b0, config, ml, inputs, console)
    finally:
        if close is not None:
            close()
    stats0 = b0.stats.copy()
    _restore(b0, out["base"], out["gstate"], out["own"])
    b0.stats = b0.stats + out["stats"]
    if b0.stats[cb_adf.N_EX] == stats0[cb_adf.N_EX] and not inputs.allow_empty:
        from streamlearn.errors import NoExamples

        raise NoExamples("no usable multiline example in the input")
    summary = {**b0.summary(stats0), "passes": out["passes"], "malformed": out["malformed"],
               "best_holdout": out["best_holdout"], "ranks": n,
               "seconds": time.perf_counter() - started}  # fmt: skip
    if outputs.final_model:
        model_io.save(b0.to_model(), outputs.final_model)
    if outputs.report:
        import json

        from streamlearn.system.outputs import write_bytes

        write_bytes(outputs.report, json.dumps(summary, indent=2).encode() + b"\n", "report")
    loss = summary["loss"]
    console.say(f"trained on {n} rank{'s' * (n > 1)}: {summary['examples']} examples, "
                f"average loss {'n.a.' if loss is None else f'{loss:.6f}'}")  # fmt: skip
    return summary


def _passes(client, workers: list, shards: list, b0, config: TrainConfig, ml: dict,
            inputs: Inputs, console: Console) -> dict:  # noqa: ANN001  # fmt: skip
    n = len(shards)
    gd.SPEC.rebase(b0.table, b0.gstate, b0.params)
    base = Rows.of(b0.table, gd.SPEC)
    g0 = b0.gstate.copy()
    gstates = [g0.copy() for _ in range(n)]
    state = b0.state()
    owns = [{k: state[k] for k in ("dr_prev", "xstats", "rng", "counts")} for _ in range(n)]
    counts = [b0.stats.copy() for _ in range(n)]
    total = np.zeros(cb_adf.STATS)
    passes = max(1, config.passes)
    holdout = passes > 1 and config.effective_holdout > 0
    run_id = uuid.uuid4().hex[:10]
    malformed = 0
    shown = 0
    best, no_win, used = np.inf, 0, 0
    for pass_no in range(1, passes + 1):
        used = pass_no
        scattered = client.scatter(base, hash=False, broadcast=n > 1)
        futures = [
            client.submit(
                run_rank,
                RankTask(r, config, ml, shards[r], inputs.block_size, inputs.max_line_bytes,
                         inputs.strict, gstates[r], counts[r], owns[r], holdout),
                scattered, key=f"sl-bandit-{run_id}-pass{pass_no}-rank{r}", pure=False,
                workers=[workers[r % len(workers)]], allow_other_workers=True,
            )
            for r in range(n)
        ]  # fmt: skip
        results = sorted(client.gather(futures), key=lambda res: res.rank)
        pass_stats = np.sum([res.stats - counts[res.rank] for res in results], axis=0)
        total += pass_stats
        for res in results:
            gstates[res.rank], owns[res.rank] = res.gstate, res.own
            counts[res.rank] = res.stats
            if pass_no == 1:
                malformed += res.malformed
                for msg in res.messages:
                    if shown < 10:
                        console.say(f"warning: {msg}")
                        shown += 1
        parts = [(res.rows, res.learned) for res in results]
        base = average(gd.SPEC, b0.params, parts) if any(w > 0 for _, w in parts) \
            else results[0].rows  # fmt: skip
        lab = pass_stats[cb_adf.N_LAB]
        line = (f"pass {pass_no}: {int(pass_stats[cb_adf.N_EX])} examples, average loss "
                + (f"{pass_stats[cb_adf.LOSS] / lab:.6f}" if lab else "n.a."))  # fmt: skip
        if holdout:
            n_ho = pass_stats[cb_adf.HO_N]
            this = pass_stats[cb_adf.HO_LOSS] / n_ho if n_ho > 0 else np.inf
            line += f", holdout loss {this:.6f}" if np.isfinite(this) else ", no holdout"
            if this < best:
                best, no_win = this, 0
            elif np.isfinite(this) or np.isfinite(best):
                no_win += 1
        console.say(line)
        if holdout and no_win >= config.early_terminate:
            break
    g = gstates[0].copy()
    for k in (G_T, G_N):
        g[k] = g0[k] + sum(s[k] - g0[k] for s in gstates)
    return {"base": base, "gstate": g, "own": owns[0], "stats": total, "passes": used,
            "malformed": malformed, "best_holdout": float(best) if np.isfinite(best) else None}
