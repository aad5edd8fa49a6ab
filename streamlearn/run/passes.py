"""Passes over the data: where each pass's batches come from, and what each pass scored.

:class:`Passes` gives the batches of pass 1, 2, ...: the first pass parses the
sources (writing the parsed-batch cache when there will be more passes, or when
``--cache`` asks for it); later passes replay the cache, or re-read the files
when there is none.

:class:`PassLog` keeps the figures of every pass (time, examples, holdout
loss), the model of the best pass, and decides when ``--early-terminate``
stops the run.  Conventions, as in Vowpal Wabbit:

* with a holdout period n, every n-th usable example of each pass is held
  out, on the first pass too: it is scored with the weights as they are when
  the stream reaches it, and never learned;
* a pass's holdout loss is the importance-weighted mean loss of its labeled
  held-out examples;
* a pass improves on the best so far only if its holdout loss is strictly
  lower (a tie is no improvement), so the best pass is the *first* one with
  the lowest holdout loss;
* after ``early_terminate`` passes in a row without improvement the run
  stops, and the model saved is the best pass's, whichever pass ran last.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from streamlearn.config import FEATURE_FLAGS, FLOAT32_ALGORITHMS, NAMESPACE_OPTIONS, TrainConfig
from streamlearn.errors import InputUnreadable
from streamlearn.io import cache as batch_cache
from streamlearn.io.batch import Batch
from streamlearn.io.interactions import MAX_CROSSES, capped
from streamlearn.io.reader import MAX_LINE_BYTES
from streamlearn.learners.base import S_HO_CORRECT_W, S_HO_LOSS, S_HO_N, S_HO_W, S_PASS_N
from streamlearn.system.outputs import forget_temp, temp_dir
from streamlearn.system.sources import is_regular

HOLDOUT_SUMS = np.array([S_HO_LOSS, S_HO_W, S_HO_N, S_HO_CORRECT_W])


def parsed(sources: list[str], fmt: str, bits: int, constant: bool, block_size: int,
           workers: int = 2, inter=None, max_line: int = MAX_LINE_BYTES,
           flatbuffer=None) -> Iterator[Batch]:  # noqa: ANN001  # fmt: skip
    """Parse ``sources`` into batches; unreadable input becomes :class:`InputUnreadable`.

    ``inter``: the run's interactions and namespace filters (``TrainConfig.namespaces()``);
    ``max_line``: the longest line read (``Inputs.max_line_bytes``); ``flatbuffer``: the
    sources are VW's flatbuffer files (``Inputs.flat_text``).
    """
    from streamlearn.io import read_batches
    from streamlearn.io.reader import InputError

    try:
        batches = read_batches(
            sources, fmt=fmt, bits=bits, constant=constant, block_size=block_size,
            workers=workers, inter=inter, max_line=max_line, flatbuffer=flatbuffer,
        )
        if inter is not None and inter.cs_classes:  # --csoaa K: cost-sensitive labels
            from streamlearn.io.cslabels import cs_batch

            batches = (cs_batch(b, inter.cs_classes, inter.named, inter.vw_numbers)
                       for b in batches)  # fmt: skip
        if inter is not None and inter.ml_classes:  # --multilabel_oaa K
            from streamlearn.io.multilabels import ml_batch

            batches = (ml_batch(b, inter.ml_classes) for b in batches)
        yield from batches
    except InputError as e:
        raise InputUnreadable(str(e)) from None
    except OSError as e:  # e.g. a corrupt gzip stream
        raise InputUnreadable(f"cannot read input: {e}") from None


def first_examples(batches: Iterator[Batch], n: int | None) -> Iterator[Batch]:
    """The batches of the first ``n`` rows (examples, malformed lines included) of
    ``batches``; all of them when ``n`` is None (VW's ``--examples``)."""
    if n is None:
        yield from batches
        return
    left = n
    try:
        for b in batches:
            if left <= 0:
                return
            yield b.head(left) if b.n > left else b
            left -= b.n
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()  # stop the parser threads: the rest of the input is not read


class BatchSource(Protocol):
    """Where a run's batches come from when they are made in memory (the Python API):
    :meth:`batches` gives one pass's batches each time it is called."""

    name: str

    def batches(self) -> Iterator[Batch]: ...

    def close(self) -> None: ...


class Passes:
    """Batches for pass 1, 2, ...: re-read files, or replay a parsed cache.

    Parameters
    ----------
    sources : list of str
        Paths, or ``'-'`` for stdin (empty means stdin).
    config : TrainConfig
    cache_path : str or None
        ``--cache``: a cache kept across runs and reused while the sources are
        unchanged.  Without it, a stream (stdin, a pipe, a FIFO, ``<(...)``)
        read for several passes is cached in a temporary directory removed by
        :meth:`close` (or, on a signal, at exit).
    block_size, workers, max_line
        Passed to the parser.
    max_excerpts : int
        Malformed lines per batch whose text the cache keeps, so that a run
        replaying it can still quote them.
    allow_empty : bool
        Write the cache of an input without a usable example (otherwise the
        run fails with exit 10 and nothing is written, the cache included).
    rebuild : bool
        Write the cache anew even when it matches (VW's ``-k``).
    examples : int or None
        Each pass reads only the first ``examples`` rows (VW's ``--examples``).
    max_crosses : int
        The most crosses one example may make (``Inputs.max_crosses``).
    flatbuffer : FlatText or None
        The sources are VW's flatbuffer files (``Inputs.flat_text``).
    """

    def __init__(self, sources: list[str], config: TrainConfig, cache_path: str | None,
                 block_size: int, workers: int, max_excerpts: int,
                 allow_empty: bool = False, rebuild: bool = False,
                 examples: int | None = None, max_line: int = MAX_LINE_BYTES,
                 max_crosses: int = MAX_CROSSES,
                 flatbuffer=None) -> None:  # noqa: ANN001  # fmt: skip
        self.sources = sources or ["-"]
        self.flatbuffer = flatbuffer
        self.max_crosses = max_crosses
        self.config = config
        self.block_size = block_size
        self.max_line = max_line
        self.workers = workers
        self.max_excerpts = max_excerpts
        self.examples = examples
        self.cache_path = cache_path
        self.allow_empty = allow_empty
        self._tmpdir: str | None = None
        streams = not all(is_regular(s) for s in self.sources)  # read once, never again
        self.use_cache = cache_path is not None or (config.passes > 1 and streams)
        if self.use_cache and self.cache_path is None:
            self._tmpdir = temp_dir("sl-cache-")
            self.cache_path = os.path.join(self._tmpdir, "batches.cache")
        self.ident = None
        if self.use_cache:
            self.ident = batch_cache.identity(
                self.sources, config.bits, config.constant, config.format,
                {
                    **{name: list(getattr(config, name)) for name in NAMESPACE_OPTIONS},
                    **{name: getattr(config, name) for name in FEATURE_FLAGS},
                    "hash": config.hash,
                    "hash_seed": config.hash_seed,
                    "numbers": config.numbers,
                    "f32_crosses": config.algo in FLOAT32_ALGORITHMS,
                    "examples": examples,
                    # what the labels and cells were read as (a cache holds them parsed)
                    "labels": ["cs" if config.csoaa else "multilabel" if config.multilabel
                               else "simple", config.oaa, config.named_labels],  # (JSON: a list)
                    "csv": [config.csv_separator, config.csv_header, config.csv_no_file_header,
                            config.csv_ns_value] if config.format == "csv" else None,
                },
            )
            if max_line != MAX_LINE_BYTES:  # which lines were skipped
                self.ident["max_line"] = max_line
            if max_crosses != MAX_CROSSES:
                self.ident["max_crosses"] = max_crosses
            if config.stack:  # a reduction reading namespaces (--lrq): the cache keeps them
                self.ident["ns"] = True
            if flatbuffer is not None:
                self.ident["flatbuffer"] = flatbuffer.hash_seed
        self._held = None
        """The cache this run replays, open: checked once, never reopened by its path."""
        if self.use_cache and not streams and not rebuild:
            self._held = batch_cache.open_matching(self.cache_path, self.ident)
        self.cache_ready = self._held is not None

    def batches(self) -> Iterator[Batch]:
        """The batches of the next pass."""
        c = self.config
        if self.cache_ready:
            try:
                yield from batch_cache.read(self.cache_path, self._held)
            except batch_cache.CacheCorrupt as e:
                raise InputUnreadable(
                    f"{e}: delete it and run again (it is rebuilt from the input)"
                ) from None
            return
        batches = first_examples(
            parsed(self.sources, c.format, c.bits, c.constant, self.block_size, self.workers,
                   capped(c.namespaces(), self.max_crosses), self.max_line, self.flatbuffer),
            self.examples,
        )  # fmt: skip
        if not self.use_cache:
            yield from batches
            return
        writer = batch_cache.CacheWriter(self.cache_path, self.ident, self.max_excerpts,
                                         keep_ns=bool(self.ident.get("ns")))  # fmt: skip
        usable = 0
        try:
            for b in batches:
                writer.add(b)
                usable += int(np.count_nonzero(b.status == 0))
                yield b
        except BaseException:
            writer.abort()
            raise
        if usable == 0 and not self.allow_empty:
            writer.abort()  # the run fails for want of examples (exit 10): write nothing
            return
        self._held = writer.close()
        self.cache_ready = True

    def close(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None
        if self._tmpdir is not None:
            forget_temp(self._tmpdir)
            self._tmpdir = None


@dataclass
class PassFigures:
    """What one pass did: wall seconds, usable examples read, holdout loss."""

    number: int
    seconds: float
    examples: int
    holdout_loss: float | None
    holdout_examples: int
    holdout_accuracy: float | None = None

    def to_json(self) -> dict:
        rate = self.examples / self.seconds if self.seconds > 0 else None
        return {
            "pass": self.number,
            "seconds": self.seconds,
            "examples": self.examples,
            "examples_per_second": rate,
            "holdout_loss": self.holdout_loss,
            "holdout_examples": self.holdout_examples,
            "holdout_accuracy": self.holdout_accuracy,
        }

    def text(self) -> str:
        """The line printed on stderr after the pass (when there are several)."""
        head = f"pass {self.number}:"
        if self.holdout_loss is not None:
            head += f" holdout loss {self.holdout_loss:.6f} ({self.holdout_examples} examples),"
        rate = f" ({self.examples / self.seconds:,.0f} ex/s)" if self.seconds > 0 else ""
        return f"{head} {self.examples} examples in {self.seconds:.3f} s{rate}"


class PassLog:
    """Per-pass figures, the best pass's model, and early termination.

    Call :meth:`begin` before a pass and :meth:`end` after it; ``end`` says
    whether to stop.  :meth:`final_model` is the model to save.
    """

    def __init__(self, config: TrainConfig, say: Callable[[str], None], vw: bool = False) -> None:
        self.passes = config.passes
        self.patience = config.early_terminate
        self.say = say
        self.vw = vw
        """VW's rule for the model saved (``sl vw``): the last pass's, unless early
        termination fired (then the best pass's, which VW wrote when it was the best)."""
        self.terminated = False
        """VW's ``early_terminate``: ``patience`` passes without improvement, the last
        pass included."""
        self.figures: list[PassFigures] = []
        self.best: PassFigures | None = None
        self.best_model = None
        self.stopped_early = False
        self._t0 = 0.0
        self._ho_before = np.zeros(HOLDOUT_SUMS.shape[0])

    def begin(self, stats: np.ndarray) -> None:
        """Start a pass: its holdout sums start from zero (see :meth:`end`)."""
        stats[S_PASS_N] = 0.0  # holdout selection counts from the start of each pass
        self._ho_before = stats[HOLDOUT_SUMS].copy()
        stats[HOLDOUT_SUMS] = 0.0
        self._t0 = time.perf_counter()

    def end(self, stats: np.ndarray, snapshot: Callable[[], object]) -> bool:
        """Record the pass just finished; True when the run should stop here.

        ``snapshot()`` returns the current model; it is taken (an O(table)
        copy of the non-zero slots) only when the pass is a new best.
        """
        seconds = time.perf_counter() - self._t0
        # this pass's sums, accumulated from zero: two passes that score the same
        # examples with the same weights tie exactly (no cancellation noise)
        ho_w = float(stats[S_HO_W])
        fig = PassFigures(
            number=len(self.figures) + 1,
            seconds=seconds,
            examples=int(stats[S_PASS_N]),
            holdout_loss=float(stats[S_HO_LOSS]) / ho_w if ho_w > 0 else None,
            holdout_examples=int(stats[S_HO_N]),
            holdout_accuracy=float(stats[S_HO_CORRECT_W]) / ho_w if ho_w > 0 else None,
        )
        stats[HOLDOUT_SUMS] += self._ho_before  # the run's totals again
        self.figures.append(fig)
        if self.passes == 1:
            return False
        self.say(fig.text())
        if fig.holdout_loss is None:
            return False
        if self.best is None or fig.holdout_loss < self.best.holdout_loss:
            self.best_model = None  # let the old copy go before taking the new one
            self.best_model = snapshot()
            self.best = fig
            return False
        stale = fig.number - self.best.number
        if stale == self.patience:
            self.terminated = True
        if stale >= self.patience and fig.number < self.passes:
            self.stopped_early = True
            self.say(
                f"early termination: no holdout improvement in {stale} "
                f"pass{'es' if stale > 1 else ''}; "
                f"keeping the model of pass {self.best.number}"
            )
            return True
        return False

    def final_model(self, current: Callable[[], object]):
        """The best pass's model when passes were compared, else ``current()``; under VW's
        rule (:attr:`vw`) the last pass's unless early termination fired.

        When the last pass is the best, its snapshot is the current model.
        """
        if self.vw and not self.terminated:
            return current()
        return self.best_model if self.best is not None else current()

    def report(self) -> dict:
        """The JSON report's pass figures.

        With several passes compared, ``holdout_loss``, ``holdout_examples`` and
        ``holdout_accuracy`` are the best pass's -- what the console's summary
        prints, and the model kept -- over the run's pooled figures, which
        :func:`~streamlearn.run.report.summary` also writes as ``pooled_holdout_*``.
        """
        best = self.best
        chosen = {}
        if best is not None and len(self.figures) > 1:
            chosen = {
                "holdout_loss": best.holdout_loss,
                "holdout_examples": best.holdout_examples,
                "holdout_accuracy": best.holdout_accuracy,
            }
        return chosen | {
            "passes": [f.to_json() for f in self.figures],
            "passes_run": len(self.figures),
            # as VW: the examples a pass learns from (held-out ones excluded)
            "examples_per_pass": (
                self.figures[0].examples - self.figures[0].holdout_examples if self.figures else 0
            ),
            "best_pass": best.number if best else None,
            "best_holdout_loss": best.holdout_loss if best else None,
            "early_terminated": self.stopped_early,
        }
