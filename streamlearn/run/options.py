"""A run's options besides what to learn: what it reads and where its results go.

A run's options come in four parts, each given to the functions that use it:

* what to learn -- :class:`~streamlearn.config.TrainConfig` (recorded in the model);
* what to read -- :class:`Inputs`: the sources, the model to start from, the
  parsed-batch cache, how malformed lines are treated, memory limits;
* where results go -- :class:`Outputs`: the model, predictions, reports,
  readable models, and the lock that guards a model continued in place;
* how progress is shown -- :class:`~streamlearn.run.console.Console`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from dataclasses import replace as dataclass_replace
from typing import TYPE_CHECKING

import numpy as np

from streamlearn.errors import InputUnreadable, UsageError
from streamlearn.io.cache import is_cache
from streamlearn.io.flatbuffer import FlatText
from streamlearn.io.interactions import MAX_CROSSES
from streamlearn.io.reader import BLOCK_SIZE, MAX_LINE_BYTES
from streamlearn.system.outputs import check_outputs, is_special, same_file
from streamlearn.system.sources import (
    SNIFF_BYTES,
    SameStream,
    SourceError,
    check_sources,
    not_data,
)

if TYPE_CHECKING:
    from streamlearn.config import TrainConfig

MAX_CROSSES_LIMIT = 1 << 62
"""The largest ``max_crosses`` (``--max-crosses``) a run takes: the kernels count crosses in
int64."""


@dataclass
class Inputs:
    """What a run reads, and within which limits."""

    sources: list[str] = field(default_factory=list)
    """Paths, ``-`` for stdin; none: stdin."""
    initial_model: str | None = None
    """The model to continue (``sl train -i``) or to score with (``sl predict -i``)."""
    cache: str | None = None
    """Parsed-batch cache for later passes (read when it matches, else written)."""
    strict: bool = False
    """Fail on the first malformed line (default: skip it, count it, warn)."""
    allow_empty: bool = False
    """Accept an input that yields no example (empty, a failed producer, every line
    malformed) and write the outputs anyway; by default such a run fails with
    :class:`~streamlearn.errors.NoExamples` (exit 10) and writes nothing."""
    block_size: int = BLOCK_SIZE
    max_line_bytes: int = MAX_LINE_BYTES
    """The longest line read; a longer one is skipped, counted and reported (``--strict``:
    fails the run), and memory does not grow with it."""
    max_crosses: int = MAX_CROSSES
    """The most crosses one example may make (``-q``, ``--cubic``, ``--interactions``); a
    line that would make more is skipped, counted and reported, and memory stays bounded."""
    max_memory: int | None = None
    """Batch learners and grids: the most bytes the input or the tables may take
    in memory (None: what is available)."""
    rebuild_cache: bool = False
    """Rebuild the parsed-batch cache even when it matches the inputs (VW's -k)."""
    examples: int | None = None
    """Read at most this many examples (non-blank lines) in each pass (VW's --examples)."""
    flatbuffer: bool = False
    """The sources are VW's flatbuffer files (VW's --flatbuffer), read as the VW text of their
    examples (:mod:`streamlearn.io.flatbuffer`)."""

    def flat_text(self, config: TrainConfig, sources: list[str] | None = None) -> FlatText | None:
        """How the flatbuffer sources become VW text under ``config`` (None: they are text).

        ``sources``: what a pass reads, when it may be a cache of the input's text instead
        of :attr:`sources` themselves (then None).  The features of a flatbuffer file are
        stored hashed: VW's ``--hash all`` (which sl's text hashing would apply to the digit
        names that carry them) is refused."""
        if not self.flatbuffer or (sources is not None and sources is not self.sources):
            return None
        if config.hash == "all":
            raise UsageError("--flatbuffer with --hash all: not supported (the features of a "
                             "flatbuffer file are hashed already)")  # fmt: skip
        return FlatText(hash_seed=config.hash_seed)

    def check(self) -> None:
        """Fail before any work on inputs that cannot be read (or are given twice), and on
        limits out of range (a library caller's; the CLI's options check their own)."""
        for name, value, top in (("max_crosses", self.max_crosses, MAX_CROSSES_LIMIT),
                                 ("max_line_bytes", self.max_line_bytes, None),
                                 ("block_size", self.block_size, None)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1 \
                    or (top is not None and value > top):  # fmt: skip
                bound = f"1 to {top}" if top is not None else "at least 1"
                raise UsageError(f"Inputs.{name} must be an integer, {bound}: got {value!r}")
        try:
            check_sources(self.sources or ["-"])
        except SameStream as e:
            raise UsageError(str(e)) from None
        except SourceError as e:
            raise InputUnreadable(str(e)) from None
        if self.cache is not None and not any(
                s != "-" and same_file(s, self.cache) for s in self.sources):  # fmt: skip
            check_cache_file(self.cache)  # (a cache naming an input: check_outputs says so)


def check_cache_file(path: str) -> None:
    """A cache is rewritten when it does not match the run: refuse a ``path`` that holds
    something other than an sl cache (VW's cache, a model, a user's file), which sl did not
    create and must not replace."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise UsageError(f"cache {path} is not a regular file: a cache is written, then "
                             "read again on every pass")  # fmt: skip
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return  # a new file (or one check_outputs reports)
    if not head or is_cache(head):  # an sl cache, of any version: rebuilt when stale
        return
    from streamlearn.io.example_cache import is_cache as is_multiline_cache

    if is_multiline_cache(path):  # sl's cache of multiline input (its bytes, gzipped)
        return
    what = not_data(head) or "not an sl cache"
    raise UsageError(f"cache {path} is {what}; sl would replace it with its own cache: "
                     "name another cache file, or remove it")  # fmt: skip


@dataclass
class Outputs:
    """Where a run's results go (None: not written)."""

    final_model: str | None = None
    predictions: str | None = None
    """One prediction per input example line (``-``: stdout)."""
    link: str = "identity"
    """How written predictions are transformed (``logistic``: probabilities; ``glf1``,
    ``poisson``: VW's other links)."""
    raw_predictions: str | None = None
    """The margins themselves, one per line, whatever the link and --binary (VW's -r)."""
    probabilities: bool = False
    """--oaa with logistic loss: write each class's probability (``1:0.2 2:0.5 ...``, as
    VW's --probabilities) instead of the class, and report the multiclass log loss."""
    report: str | None = None
    save_per_pass: bool = False
    """Also save the model as it stands after each pass N as ``final_model.N`` (VW's
    ``--save_per_pass``; ``final_model`` is still the best pass's with a holdout)."""
    vw_summary: bool = False
    """The summary's "average loss" as VW prints it: with a holdout, the (best pass's)
    holdout loss, marked ``h`` (``sl vw``); the progressive loss on a line of its own."""
    vw_format: bool = False
    """Write as VW writes (``sl vw``): ``-p``/``-r`` with VW's numbers and on every pass,
    ``--readable_model``/``--invert_hash`` in VW's layout, ``--audit`` lines on stdout,
    stderr's header and summary (:mod:`streamlearn.run.vwformat`)."""
    vw_resume: bool = True
    """With vw_format: the readable models carry VW's resume state (``:1``), as VW 9 writes
    them unless ``--predict_only_model`` (``:0``, the weights only)."""
    vw_quiet: bool = False
    """With vw_format: ``--quiet`` was given; VW then never advances its table's counters,
    and its readable models show them so."""
    audit: bool = False
    """VW's ``--audit``: each example's prediction and features on stdout (with vw_format)."""
    print_examples: bool = False
    """VW's ``--print``: its print learner in gd's place, each example written on stderr,
    predictions 0, nothing learned (with vw_format: :mod:`streamlearn.run.vwprint`)."""
    audit_regressor: str | None = None
    """VW's ``--audit_regressor FILE``: the initial model's weights named by the data, written
    to FILE; nothing learned or predicted (with vw_format: :mod:`streamlearn.run.vwregaudit`)."""
    scores: bool = False
    """With vw_format: VW's ``--scores`` under ``--oaa``: ``-p`` has each class's score
    (``1:s1 2:s2 ...``) instead of the class (:meth:`oaa_scores`)."""
    best_constant: bool = True
    """With vw_format: the summary's best-constant lines (VW's ``--dont_output_best_constant``:
    False)."""
    model_format: str = "sl"
    """The final model's format (and ``--save-per-pass``'s): ``sl``; ``vw``, VW's with its
    resume state (``sl vw -f``); ``vw_predict_only``, VW's weights only
    (``--predict_only_model``).  See :data:`streamlearn.model.FORMATS`."""
    readable_model: str | None = None
    invert_hash: str | None = None
    extra_metrics: str | None = None
    """VW's ``--extra_metrics FILE``: the run's counters (:mod:`streamlearn.run.vwmetrics`)."""
    lock_timeout: float = 3600.0
    """A model continued in place is locked; wait at most this long for another run."""

    def paths(self) -> list[tuple[str | None, str]]:
        """Every output path with what it is."""
        return [
            (self.final_model, "final model"),
            (self.predictions, "predictions"),
            (self.raw_predictions, "raw predictions"),
            (self.report, "report"),
            (self.readable_model, "readable model"),
            (self.invert_hash, "invert-hash model"),
            (self.extra_metrics, "extra metrics"),
            (self.audit_regressor, "regressor audit"),
        ]

    def pass_models(self, passes: int) -> list[tuple[str, str]]:
        """``--save-per-pass``: the model file each of ``passes`` passes writes (``MODEL.N``)."""
        if not (self.save_per_pass and self.final_model):
            return []
        return [(f"{self.final_model}.{k}", f"pass {k} model") for k in range(1, passes + 1)]

    def filled(self, fill) -> Outputs:  # noqa: ANN001 - str | None -> str | None
        """These outputs with ``fill`` applied to every path (a grid's placeholders)."""
        return dataclass_replace(
            self,
            final_model=fill(self.final_model),
            predictions=fill(self.predictions),
            raw_predictions=fill(self.raw_predictions),
            report=fill(self.report),
            readable_model=fill(self.readable_model),
            invert_hash=fill(self.invert_hash),
            extra_metrics=fill(self.extra_metrics),
            audit_regressor=fill(self.audit_regressor),
        )

    def oaa_scores(self, config) -> bool:  # noqa: ANN001 - a TrainConfig
        """VW's ``--scores`` applies: an ``--oaa`` model (VW's csoaa and multilabel have no
        such option, and ``--probabilities`` wins, as in VW)."""
        return bool(self.scores and config.oaa and not (config.csoaa or config.multilabel)
                    and not self.probabilities)


def written(inputs: Inputs, outputs: Outputs, passes: int = 1) -> list[tuple[str | None, str]]:
    """Every path a run of ``passes`` passes writes: its outputs, each pass's model
    (``--save-per-pass``) and the parsed-batch cache."""
    return [*outputs.paths(), *outputs.pass_models(passes), (inputs.cache, "cache")]


def check(inputs: Inputs, outputs: Outputs, passes: int = 1) -> None:
    """Fail before any work: unreadable inputs, outputs that would destroy something
    (an input, the initial model, another output -- each pass's model included)."""
    inputs.check()
    from streamlearn.model import FORMATS

    if outputs.model_format not in FORMATS:
        raise UsageError(f"Outputs.model_format must be one of {', '.join(FORMATS)}: got "
                         f"{outputs.model_format!r}")  # fmt: skip
    check_pass_models(outputs)
    check_outputs(written(inputs, outputs, passes), inputs.sources, inputs.initial_model)


def check_pass_models(outputs: Outputs) -> None:
    """``--save-per-pass`` needs ``-f MODEL`` naming a file: ``MODEL.N`` is made beside it."""
    if not outputs.save_per_pass:
        return
    if not outputs.final_model:
        raise UsageError("--save-per-pass writes MODEL.1, MODEL.2, ... beside -f MODEL: "
                         "give -f")  # fmt: skip
    if is_special(outputs.final_model):
        raise UsageError(f"--save-per-pass writes MODEL.1, MODEL.2, ... beside -f MODEL, and "
                         f"-f {outputs.final_model} is not a file (a device, a FIFO or a "
                         "descriptor): give -f a file's path")  # fmt: skip
