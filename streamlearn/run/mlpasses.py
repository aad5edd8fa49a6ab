"""The passes of a multiline run (``sl vw --csoaa_ldf``, ``--cb_adf``, ``--cb_explore_adf``,
``--cb K``): its input read into :class:`~streamlearn.io.examples.Part` batches, each
handed to its reduction's learner (the registry's, :mod:`streamlearn.reductions`).

The path of an example: the reader's blocks (:func:`~streamlearn.io.reader.iter_blocks`,
every input path), re-cut at blank lines (:func:`~streamlearn.io.multiline.example_blocks`),
parsed with the label part left to the label kernel, the shared line merged into each
action line and the interactions crossed after it (:mod:`streamlearn.io.examples`), parsed
ahead on threads (:func:`ahead`); then one learner call per batch (:class:`_Walk`), which
walks it example by example in the reduction's kernel.  ``--cb K`` examples are single
lines turned into K action lines first (:mod:`streamlearn.learners.cb_to_adf`).

Later passes read the cache (``-c``, :mod:`streamlearn.io.example_cache`) back, or without
one replay the batches kept in memory; holdout, passes and counts are in examples.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from streamlearn.config import TrainConfig
from streamlearn.errors import UsageError
from streamlearn.io.example_cache import Cache, is_cache
from streamlearn.io.examples import Part, adf_part, crossed, parse_options
from streamlearn.learners import cb_adf, csoaa_ldf
from streamlearn.reductions import Multiline, reduction_of
from streamlearn.reductions.cb_adf import cb_part
from streamlearn.run.driver import Holdout, Replay, drive, holdout_flags


@dataclass
class Fitted:
    """What :func:`fit` leaves: the weights (gd's table, VW's layout), its state, the
    counts, the ``-p`` lines and the summary."""

    table: np.ndarray
    gstate: np.ndarray
    stats: np.ndarray
    predictions: list
    summary: dict
    holdout: bool
    off_policy: object = None  # run.offpolicy.OffPolicy (cb_adf, cb_explore_adf, cb)
    raw: list | None = None  # -r lines (run/mlscores.py; --cb_force_legacy's)
    explorer: object = None  # reductions.explore.Explorer (its counter, counts, generator)
    names: dict | None = None  # --invert_hash: slot -> VW's name (run/mloutputs.py)


@dataclass
class Weights:
    """A run's learning state (:class:`streamlearn.reductions.base.Weights`)."""

    table: np.ndarray
    tables: np.ndarray
    gstate: np.ndarray
    params: np.ndarray
    loss_id: int
    cb_type: int
    step: int
    stats: np.ndarray
    dr_prev: np.ndarray


@dataclass
class Wants:
    """What a run writes besides the model: :func:`fit`'s options."""

    predictions: bool = False
    progress: object = None  # run.mlconsole.Progress
    raw: bool = False
    off_policy: bool = True
    audit: bool = False
    probabilities: bool = False
    vw_log: bool = False  # VW's info lines on standard output (sl vw without --quiet)


def parts(ml: Multiline, cfg: TrainConfig, sources: list[str], block_size: int,
          max_line: int, tee=None, flatbuffer=None):  # noqa: ANN001, ANN201  # fmt: skip
    """The :class:`~streamlearn.io.examples.Part` of each block of ``sources`` (``tee``: a
    file the bytes read are also written to, the cache being made), parsed ahead on
    threads (:func:`ahead`); ``flatbuffer``: ``sources`` are VW's flatbuffer files
    (``Inputs.flat_text``)."""
    from streamlearn.io.example_cache import tee as tee_blocks
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.multiline import example_blocks, merge_shared, parse_examples
    from streamlearn.io.reader import iter_blocks

    full = cfg.namespaces() or compile_interactions()
    kind = reduction_of(ml).label_kind
    parse_inter = parse_options(full, kind)
    blocks = iter_blocks(sources or ["-"], block_size, max_line, flatbuffer)
    json_fmt = cfg.format in ("json", "dsjson")
    text_again = bool(getattr(ml, "large_action_space", False))
    if tee is not None:
        blocks = tee_blocks(blocks, tee)
    if ml.reduction != "cb" and not json_fmt:
        blocks = example_blocks(blocks)
    if ml.explore == "rnd" and full.crosses_or_filters:
        # VW draws rnd's random targets from its crossed features' unmasked indices
        raise UsageError("--rnd with interactions or namespace filters: not supported yet")
    if ml.reduction == "cb" and full.crosses_or_filters and not ml.legacy:
        # VW's copies keep the namespaces of earlier lines: a line without namespace g
        # still crosses f with the last g seen (--audit shows f^x*g^y on such lines)
        raise UsageError(
            "--cb K with interactions or namespace filters is not supported: "
            "VW crosses namespaces left over from earlier lines; use --cb_adf"
        )

    def part_of(block) -> Part:  # noqa: ANN001
        if json_fmt:
            from streamlearn.io.jsondirect import read_examples

            if ml.reduction == "cb":
                raise UsageError("--json/--dsjson with --cb K: not yet (use --cb_adf)")
            dsjson = cfg.format == "dsjson"
            # straight into rows, unless the block holds a line for the text path, or the
            # reduction reads the examples' text again (--large_action_space)
            ex = None if text_again else read_examples(block, dsjson, cfg.bits, cfg.constant,
                                                       parse_inter, kind)  # fmt: skip
            if ex is None:
                from streamlearn.io.vwjson import json_block, restore_examples

                text, tr = json_block(block, dsjson, parse_inter)
                ex = parse_examples(text, cfg.bits, cfg.constant, parse_inter, kind)
                ex = restore_examples(ex, tr)
            part = prepare(ml, ex, merge_shared(ex))
        elif ml.reduction == "cb" and ml.legacy:
            from streamlearn.run import cblegacy

            part = cblegacy.part(ml, cfg, block, parse_inter)
        elif ml.reduction == "cb":
            part = cb_part(block, cfg.bits, cfg.constant, parse_inter, ml.actions, cb_width(ml))
        else:
            ex = parse_examples(block, cfg.bits, cfg.constant, parse_inter, kind)
            part = prepare(ml, ex, merge_shared(ex))
        crossed(part, full, cfg.bits)
        return part

    yield from ahead(part_of, blocks)


def prepare(ml: Multiline, ex, mg) -> Part:  # noqa: ANN001 - io.multiline.Examples, Merged
    """The :class:`~streamlearn.io.examples.Part` of parsed examples and their merged rows,
    labels read as ``ml``'s reduction reads them."""
    red = reduction_of(ml)
    return adf_part(ex, mg, red.cb, red.features(ml))


def cb_width(ml: Multiline) -> int:
    """``--cb K``'s weights per action below its copies: :func:`feature_width`, times
    bagging's models."""
    width = feature_width(ml)
    if ml.explore == "bag":
        width *= max(1, ml.bag)  # each bag's models (cb_explore_adf_bag's feature width)
    return width


PARSE_WORKERS = 2
"""Blocks parsed at once beside the learner (the kernels release the GIL): parsing,
merging and reading labels cost ~3x learning (200k examples of 8 actions: 0.4 s
against 0.15 s)."""


def ahead(part_of, blocks, workers: int = PARSE_WORKERS):  # noqa: ANN001, ANN202
    """``part_of(block)`` of each block, in order, ``workers`` blocks made on threads
    while the caller learns from the earlier ones (as ``io.parse.read_batches``), the
    blocks read on another (:func:`~streamlearn.run.runner.prefetch`, as ``sl train``); a
    block from a paused live input is handed on at once.  Interpreted kernels (tiny
    inputs) run one after the other."""
    from streamlearn.system.jit import INTERPRETED

    if INTERPRETED or workers <= 0:
        for block in blocks:
            yield part_of(block)
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    from streamlearn.run.runner import prefetch

    pending: deque = deque()
    blocks = prefetch(blocks)  # reading and re-cutting too: off the learner's thread
    with ThreadPoolExecutor(workers, thread_name_prefix="sl-parse") as pool:
        try:
            for block in blocks:
                pending.append(pool.submit(part_of, block))
                while len(pending) > (0 if block.live else workers):
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for f in pending:
                f.cancel()


def report_bad(messages: list[str], malformed: int, strict: bool, say) -> int:  # noqa: ANN001
    """Warn of malformed examples (the first ten of the run), or stop (``--strict``);
    returns the run's count of them."""
    for msg in messages:
        malformed += 1
        if strict:
            from streamlearn.errors import MalformedData

            raise MalformedData(f"{msg} (--strict)")
        if malformed <= 10:
            say(f"warning: {msg}")
    return malformed


def report_block(b, malformed: int, strict: bool, say) -> int:  # noqa: ANN001 - an io.batch.Batch
    """:func:`report_bad` of parsed block ``b``'s malformed lines (each named with its file
    and line); the run's count of them."""
    if not (b.status != 0).any():
        return malformed
    from streamlearn.io.parse import describe_errors

    return report_bad(describe_errors(b, limit=1 << 30), malformed, strict, say)


def cover_cb_type(ml: Multiline, say) -> None:  # noqa: ANN001
    """The cost types VW 9.11.9 takes with the explorer: ``--cover`` ips, dr, mtr;
    ``--regcb`` and ``--squarecb`` only mtr."""
    if ml.explore == "cover" and ml.cb_type not in ("ips", "dr", "mtr"):
        raise UsageError(f"'{ml.cb_type}' is not a valid choice for option --cb_type with "
                         "--cover. Please select from {dr, ips, mtr}")  # fmt: skip
    if ml.explore in ("regcb", "squarecb") and ml.cb_type != "mtr":
        raise UsageError(f"'{ml.cb_type}' is not a valid choice for option --cb_type with "
                         f"--{ml.explore}. Please select from {{mtr}}")  # fmt: skip


def feature_width(ml: Multiline) -> int:
    """The feature width below ``--cb K``'s copies (VW's ``feature_width_below``): cb_adf's
    (2 for ``dr``, else 1), or the explorer's that keeps several models (``--cover``)."""
    if ml.explore == "cover":
        from streamlearn.learners import cb_cover

        return cb_cover.layout(ml.cover, cb_adf.CB_TYPES[ml.cb_type])[0]
    return 2 if ml.cb_type == "dr" else 1


def sources_of(inputs, say, progress) -> tuple[list[str], Cache]:  # noqa: ANN001
    """What the first pass reads (``-c``/``--cache_file``: sl's cache of an earlier run,
    if there is one), and the cache this run writes (the input's bytes, gzipped, replayed
    by later passes and runs, as VW's cache)."""
    sources = inputs.sources
    cache = Cache(None)
    if inputs.cache:
        if os.path.exists(inputs.cache) and not inputs.rebuild_cache and is_cache(inputs.cache):
            sources = [inputs.cache]
            cache.sealed = [inputs.cache]
            if progress is None:  # (VW's header says it)
                say(f"sl vw: reading the cache {inputs.cache}")
        else:
            cache = Cache(inputs.cache)
    return sources, cache


def weights(ml: Multiline, cfg: TrainConfig, start) -> tuple[Weights, object]:  # noqa: ANN001
    """A run's state: fresh, or a model's (``start``: :func:`_start`'s); the explorer's
    counter the model kept."""
    from streamlearn.learners.base import fresh_table

    params = cfg.params()
    stats = np.zeros(cb_adf.STATS)
    counter = None
    if start:
        _, table, gstate, (stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS]), counter, _ = start
    else:
        table = fresh_table(cfg.bits, (0.0,) * csoaa_ldf.COLUMNS[cfg.algo], np.float32)
        gstate = csoaa_ldf.init_gstate(params, cfg.algo)
    if ml.legacy and not start:
        from streamlearn.run.cblegacy import Legacy

        gstate = Legacy.gstate_for(ml, params)
    # --cb K's indices are VW's rewritten ones (learners/cb_to_adf.py): read with step 1
    step = 1 if ml.reduction == "cb" or ml.cb_type != "dr" else 2
    w = Weights(table, cb_adf.tables_of(table), gstate, params, cfg.loss_id,
                cb_adf.CB_TYPES[ml.cb_type], step, stats, np.zeros(257))  # fmt: skip
    return w, counter


class _Walk:
    """One run's reduction over its batches, and what it writes besides the model: the
    reduction's learner (the registry's, :mod:`streamlearn.reductions`), or
    ``--cb_force_legacy``'s (``run/cblegacy.py``); ``-p``, VW's table, ``-r``,
    ``--audit``, the off-policy estimates."""

    def __init__(self, ml: Multiline, cfg: TrainConfig, w: Weights, wants: Wants,
                 counter) -> None:  # noqa: ANN001  # fmt: skip
        from streamlearn.run import mlscores
        from streamlearn.run.offpolicy import OffPolicy

        self.w = w
        self.wants = wants
        self.pred_lines: list[str] = []
        probs = None  # --probabilities: VW's csoaa_ldf-prob (--csoaa_rank's ranking wins)
        if wants.probabilities and ml.reduction == "csoaa_ldf" and not ml.csoaa_rank:
            probs = mlscores.Probabilities()
        self.probs = probs
        red = reduction_of(ml)
        more = {"wants": wants} if red.wants else {}
        self.learner = None if ml.legacy else red.learner(ml, cfg, probabilities=probs, **more)
        self.xp = getattr(self.learner, "xp", None)
        self.opp = (OffPolicy() if wants.off_policy and red.cb
                    and not ml.legacy else None)  # fmt: skip
        self.lg = None
        if ml.legacy:
            from streamlearn.run.cblegacy import Legacy

            if ml.mwt:
                from streamlearn.run.mwt import Mwt

                self.lg = Mwt(ml, cfg, w.table, w.gstate, counter, wants.vw_log)
            else:
                self.lg = Legacy(ml, cfg, w.table, w.gstate, counter, wants.vw_log)
        self.auditor = None
        if wants.audit:  # (one example per kernel call, its audit written before it is learned)
            from streamlearn.run.mlaudit import Audit

            self.auditor = Audit(ml, cfg)
        self.raws = None  # (-r: VW's lines)
        if wants.raw and self.lg is None and not hasattr(self.learner, "raw_lines"):
            self.raws = mlscores.Raw(ml, json=cfg.format in ("json", "dsjson"))
        if ml.explore_eval and (ml.reduction != "cb_adf" or ml.explore == "bag"):
            raise UsageError("--explore_eval runs over --cb_explore_adf's greedy, first, "
                             "softmax and squarecb explorers (not --cb K, not --bag yet)")
        if not ml.explore_eval and (ml.multiplier is not None or ml.target_rate is not None):
            raise UsageError("--multiplier and --target_rate are --explore_eval's")
        if self.xp is not None:
            self.learner.start(w, counter, ml.reduction)

    def batch(self, part: Part, ho: np.ndarray, npass: int) -> None:
        """Learn one batch (each example scored first) and write what it gave."""
        w, wants = self.w, self.wants
        if self.auditor is not None:
            self.auditor.example(part, w.table, w.gstate)
        if self.lg is not None:
            self.lg.batch(part, ho, w.params, w.loss_id, w.stats, npass, wants.progress,
                          self.pred_lines if wants.predictions else None, wants.raw)  # fmt: skip
            return
        begin = getattr(self.learner, "begin_pass", None)
        if begin is not None:  # (the search's policies: one per passes, VW's end_pass)
            begin(npass)
        seen = self.learner.learn(w, part, ho, lines=wants.predictions)
        if self.raws is not None:
            if seen.pred is not None:
                self.raws.ldf(part, seen.scores)
            else:
                self.raws.cb(part)
        if self.opp is not None:
            if seen.actions is not None:
                self.opp.explored(part, ho, seen.actions, seen.probs, seen.scores)
            else:
                self.opp.greedy(part, ho, seen.scores, seen.order)
        if wants.progress is not None:
            self.learner.progress(wants.progress, npass, seen, ho)
        if wants.predictions:
            self.learner.write(seen, self.pred_lines)

    def raw_lines(self) -> list[str] | None:
        if self.lg is not None:
            return self.lg.raw_lines
        if hasattr(self.learner, "raw_lines"):  # (a learner that writes its own: --search)
            return self.learner.raw_lines
        return self.raws.lines if self.raws is not None else None


class ExampleLearning:
    """The learning of a multiline run's passes (:class:`~streamlearn.run.driver.Learning`),
    as :func:`passes` and ``run/bandit.py`` share it: the first pass's malformed examples
    reported, each batch's holdout flags (:func:`~streamlearn.run.driver.holdout_flags`),
    VW's holdout rule over the run's ``stats`` at a pass's end; :meth:`step` learns a batch."""

    def __init__(self, stats: np.ndarray, inputs, say, period: int,
                 patience: int) -> None:  # noqa: ANN001  # fmt: skip
        self.inputs = inputs
        self.say = say
        self.period = period
        self.holdout = Holdout(lambda: (stats[cb_adf.HO_N], stats[cb_adf.HO_LOSS]), patience)
        self.malformed = 0
        self.seen = 0

    def begin_pass(self, pass_no: int) -> None:
        self.holdout.begin()
        self.seen = 0

    def learn(self, part: Part, pass_no: int) -> None:
        if pass_no == 1:
            self.malformed = report_bad(part.bad, self.malformed, self.inputs.strict, self.say)
        m = part.mg.act_ptr.shape[0] - 1
        ho = holdout_flags(self.seen, m, self.period)
        self.seen += m
        self.step(part, m, ho, pass_no)

    def step(self, part: Part, m: int, ho: np.ndarray | None, pass_no: int) -> None:
        """Learn ``part`` (``m`` examples; ``ho``: the held-out ones, None without)."""
        raise NotImplementedError

    def end_pass(self, pass_no: int) -> bool:
        return bool(self.period) and self.holdout.stop()


class _Learning(ExampleLearning):
    """:func:`passes`' learning: the walk over each batch of examples, the off-policy
    estimates' passes."""

    def __init__(self, walk: _Walk, inputs, say, period: int,
                 patience: int) -> None:  # noqa: ANN001  # fmt: skip
        super().__init__(walk.w.stats, inputs, say, period, patience)
        self.walk = walk
        self.per_pass = 0

    def begin_pass(self, pass_no: int) -> None:
        super().begin_pass(pass_no)
        if self.walk.opp is not None:
            self.walk.opp.begin_pass(pass_no)

    def step(self, part: Part, m: int, ho: np.ndarray | None, pass_no: int) -> None:
        if m:
            self.walk.batch(part, np.zeros(m, dtype=np.bool_) if ho is None else ho,
                            pass_no - 1)  # fmt: skip


class _Audited:
    """``--audit``: a pass's batches cut into single examples, each audited before it is
    learned (:meth:`streamlearn.run.mlaudit.Audit.split`)."""

    def __init__(self, inner: Replay, auditor, cache: Cache) -> None:  # noqa: ANN001
        self.inner = inner
        self.auditor = auditor
        self.cache = cache

    def batches(self, pass_no: int):  # noqa: ANN201
        return self.auditor.split(self.inner.batches(pass_no),
                                  cached=pass_no > 1 or self.cache.sealed is not None)


def passes(ml: Multiline, cfg: TrainConfig, inputs, say, sources: list[str], cache: Cache,
            w: Weights, wants: Wants, counter) -> Fitted:  # noqa: ANN001  # fmt: skip
    """:func:`fit`'s passes over the data (:func:`~streamlearn.run.driver.drive`): the first
    reads ``sources`` (copying their bytes to the cache being written, if any), the others
    read the cache back (with no cache: replay the batches kept in memory)."""
    npasses = max(1, cfg.passes)
    walk = _Walk(ml, cfg, w, wants, counter)
    learning = _Learning(walk, inputs, say, cfg.effective_holdout if npasses > 1 else 0,
                         cfg.early_terminate)  # fmt: skip
    again: list[str] | None = None

    def later():  # noqa: ANN202 - the sealed cache, parsed again
        return parts(ml, cfg, again, inputs.block_size, inputs.max_line_bytes) \
            if again is not None else None  # fmt: skip

    def input_read() -> None:
        nonlocal again
        learning.per_pass = int(w.stats[cb_adf.N_EX])
        again = cache.seal() if npasses > 1 else None

    source = Replay(lambda: parts(ml, cfg, sources, inputs.block_size, inputs.max_line_bytes,
                                  cache.tee, inputs.flat_text(cfg, sources)), later,
                    keep=npasses > 1 and cache.path is None and cache.sealed is None)  # fmt: skip
    if walk.auditor is not None:  # (VW's cache keeps no feature names)
        source = _Audited(source, walk.auditor, cache)
    used = drive(npasses, source, learning, input_read)
    holdout, per_pass, malformed, period = (learning.holdout, learning.per_pass,
                                            learning.malformed, learning.period)  # fmt: skip
    stats = w.stats
    summary = {"examples": int(stats[cb_adf.N_EX]), "per_pass": per_pass, "passes": used,
               "best_holdout": holdout.best_loss,
               "loss": stats[cb_adf.LOSS] / stats[cb_adf.N_LAB] if stats[cb_adf.N_LAB] else None,
               "malformed": malformed}  # fmt: skip
    summary["config"] = {k: v for k, v in cfg.to_dict().items() if k != "theta"}
    if hasattr(walk.learner, "saved"):  # (the state a learner keeps in VW's model)
        summary["saved"] = walk.learner.saved()
    if hasattr(walk.learner, "read"):  # (the examples read, which its counts may leave out)
        summary["read"] = walk.learner.read
    if wants.probabilities and ml.reduction == "csoaa_ldf":  # (the summary's log loss)
        probs = walk.probs
        summary["log_loss"] = (probs.log_loss, probs.ho_log_loss) if probs else (0.0, 0.0)
    return Fitted(w.table, w.gstate, stats, walk.pred_lines, summary, bool(period), walk.opp,
                  raw=walk.raw_lines(), explorer=walk.xp or walk.lg)  # fmt: skip
