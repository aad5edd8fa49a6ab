"""One run of a multiline reduction (``sl vw --csoaa_ldf m|mc``, ``--cb_adf``, ``--cb K``).

The path of an example: the reader's blocks (:func:`~streamlearn.io.reader.iter_blocks`,
every input path), re-cut at blank lines (:func:`~streamlearn.io.multiline.example_blocks`),
parsed with the label part left to the label kernel
(:func:`~streamlearn.io.multiline.parse_examples`), the shared line merged into each
action line and the interactions crossed after it
(:func:`~streamlearn.io.multiline.merge_shared`, :func:`~streamlearn.io.multiline.cross_merged`),
then one kernel call per batch that walks it example by example
(:func:`streamlearn.learners.cb_adf.train_examples`,
:func:`streamlearn.learners.csoaa_ldf.train_examples`).  ``--cb K`` examples are single
lines turned into K action lines first (:mod:`streamlearn.learners.cb_to_adf`).

Later passes read the cache (``-c``) back, or without one replay the parsed, merged
batches kept in memory; holdout, passes and counts are
in examples.  Output as VW's: ``-p`` per example, the summary on stderr.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import os
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np

from streamlearn.config import TrainConfig
from streamlearn.errors import Diverged, ModelError, NoExamples, UsageError
from streamlearn.io.labels import LABEL_CB, LABEL_CS
from streamlearn.learners import cb_adf, csoaa_ldf
from streamlearn.learners.base import P_ADAPTIVE, P_NORMALIZED


@dataclass
class Multiline:
    """What a multiline reduction asks for (from VW's options)."""

    reduction: str  # "csoaa_ldf", "cb_adf", "cb", "cbify", "ccb", "slates"
    classifier: bool = False  # csoaa_ldf mc
    cb_type: str = "mtr"
    clip_p: float = 0.0
    rank_all: bool = False  # cb_adf --rank_all
    csoaa_rank: bool = False
    actions: int = 0  # --cb K
    notes: list[str] = field(default_factory=list)
    explore: str = ""  # --cb_explore_adf: greedy, first, softmax, squarecb, bag, cover
    epsilon: float | None = None  # None: the explorer's default (greedy 0.05, others 0)
    first_only: bool = False
    tau: int = 0  # --first T
    lam: float = 1.0  # --softmax --lambda
    bag: int = 0  # --bag B
    cover: int = 0  # --cover N (and legacy --cb_explore K --cb_force_legacy)
    psi: float = 1.0  # --cover's --psi
    nounif: bool = False  # --cover's --nounif
    rnd: int = 0  # --rnd R
    rnd_alpha: float = 0.1
    rnd_invlambda: float = 0.1
    synthcoverpsi: float = 0.1  # --synthcover
    synthcoversize: int = 100
    regcbopt: bool = False  # --regcb --regcbopt
    elim: bool = False  # --squarecb --elim
    mellowness: float | None = None  # None: --regcb's 0.1, --squarecb's 0.001
    cb_min_cost: float | None = None  # None: 0 (--cbify: --loss0)
    cb_max_cost: float | None = None  # None: 1 (--cbify: --loss1)
    greedify: bool = False
    gamma_scale: float = 10.0  # --squarecb
    gamma_exponent: float = 0.5
    ope: bool = False  # sl's own --ope: the off-policy estimates on stderr
    cbify: int = 0  # --cbify K (run/cbify.py)
    cbify_cs: bool = False
    cbify_ldf: bool = False  # --cbify_ldf: cost-sensitive LDF examples (run/cbify.py)
    loss0: float = 0.0
    loss1: float = 1.0
    legacy: bool = False  # --cb_force_legacy: VW's single-line cb_algs (run/cblegacy.py)
    evaluate: bool = False  # --eval (legacy): a logged policy's actions evaluated
    explore_eval: bool = False  # --explore_eval (learners/explore_eval.py)
    multiplier: float | None = None
    target_rate: float | None = None
    all_slots_loss: bool = False  # --ccb_explore_adf (run/ccb.py)
    ccb_no_slot_index: bool = False
    no_predict: bool = False  # --ccb_explore_adf: learn only (no pmf, loss or -p)


@dataclass
class _Tags:
    """Each example's tag: a span of its block's bytes."""

    data: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __getitem__(self, e: int) -> bytes:
        return self.data[self.start[e] : self.end[e]].tobytes()


@dataclass
class _Part:
    """One batch ready for the kernel (kept for later passes)."""

    mg: object
    chosen: np.ndarray
    cost: np.ndarray
    prob: np.ndarray
    lab_n: np.ndarray
    lab_cls: np.ndarray
    lab_cost: np.ndarray
    tags: _Tags
    ex_lines: np.ndarray
    bad: list
    sub: np.ndarray | None = None  # each action line's weight window (--cb K), else 0
    feat_row: np.ndarray | None = None  # VW's "current features" of each example
    feat_total: np.ndarray | None = None  # what VW's total feature number adds for it
    legacy: object = None  # --cb_force_legacy: the label entries (run/cblegacy.py: Entries)
    src: object = None  # the rows' text and tags (run/mlaudit.py: Source; --audit reads them)


def _config(learn: dict, bases: bool = False) -> TrainConfig:
    """The learning options of a multiline run; ``bases``: a path that runs the ftrl
    family's learners too (``csoaa_ldf.BASES``: ``--cb_adf``, ``--cb_explore_adf``,
    ``--csoaa_ldf``, ``--cb K`` of :func:`fit`), others run on gd only."""
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(learn) - known)
    if unknown:
        raise UsageError(f"options not taken with multiline examples: {', '.join(unknown)}")
    cfg = TrainConfig(**learn)
    if cfg.algo != "gd" and not (bases and cfg.algo in csoaa_ldf.BASES):
        also = " or --ftrl/--coin/--pistol" if bases else ""
        raise UsageError(f"this multiline reduction runs on gd (VW's default learner){also}, "
                         f"not {cfg.algo}")  # fmt: skip
    if cfg.initial_weights != "zero":
        raise UsageError(f"--{cfg.initial_weights}_weights: not with multiline examples yet "
                         "(VW draws them as its sparse or dense table is first read)")  # fmt: skip
    return cfg


def _parts(ml: Multiline, cfg: TrainConfig, sources: list[str], block_size: int,
           max_line: int, tee=None):  # noqa: ANN001, ANN202  # fmt: skip
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.multiline import example_blocks, merge_shared, parse_examples
    from streamlearn.io.reader import iter_blocks

    full = cfg.namespaces() or compile_interactions()
    kind = LABEL_CS if ml.reduction == "csoaa_ldf" else LABEL_CB
    parse_inter = parse_options(full, kind)
    blocks = iter_blocks(sources or ["-"], block_size, max_line)
    json_fmt = cfg.format in ("json", "dsjson")
    if tee is not None:
        blocks = _tee(blocks, tee)
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

    def part_of(block) -> _Part:  # noqa: ANN001
        if json_fmt:
            from streamlearn.io.vwjson import json_block, restore_examples

            text, tr = json_block(block, cfg.format == "dsjson", parse_inter)
            if ml.reduction == "cb":
                raise UsageError("--json/--dsjson with --cb K: not yet (use --cb_adf)")
            ex = parse_examples(text, cfg.bits, cfg.constant, parse_inter, kind)
            ex = restore_examples(ex, tr)
            part = _prepare(ml, ex, merge_shared(ex))
            _crossed(part, full, cfg.bits)
            return part
        if ml.reduction == "cb":
            if ml.legacy:
                from streamlearn.run import cblegacy

                part = cblegacy.part(ml, cfg, block, parse_inter)
            else:
                part = _cb_part(ml, cfg, block, parse_inter)
            _crossed(part, full, cfg.bits)
            return part
        ex = parse_examples(block, cfg.bits, cfg.constant, parse_inter, kind)
        part = _prepare(ml, ex, merge_shared(ex))
        _crossed(part, full, cfg.bits)
        return part

    yield from _ahead(part_of, blocks)


PARSE_WORKERS = 2
"""Blocks parsed at once beside the learner (the kernels release the GIL): parsing,
merging and reading labels cost ~3x learning (200k examples of 8 actions: 0.4 s
against 0.15 s)."""


def _ahead(part_of, blocks, workers: int = PARSE_WORKERS):  # noqa: ANN001, ANN202
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


def parse_options(full, kind: int):  # noqa: ANN001, ANN201
    """The parse options of multiline input: ``full``'s without crosses or namespace
    filters (they come after the shared line is merged), the label part left to
    the label reader of ``kind``."""
    return dataclasses.replace(
        full, terms=full.terms[:0], lengths=full.lengths[:0], drop=np.zeros_like(full.drop),
        drop_linear=np.zeros_like(full.drop_linear), label_kind=kind,
    )  # fmt: skip


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


CACHE_NAME = b"sl-multiline-cache"
"""The name in the gzip header of sl's cache of multiline (and ``--cb K``) input."""


def _tee(blocks, out):  # noqa: ANN001, ANN202
    """``blocks``, their bytes also written to ``out`` (each source's last example ended)."""
    prev = None
    for b in blocks:
        if prev is not None and b.source != prev:
            out.write(b"\n\n")
        out.write(b.data.tobytes())
        prev = b.source
        yield b
    if prev is not None:
        out.write(b"\n\n")


def is_cache(path: str) -> bool:
    """Whether ``path`` is sl's cache of multiline input (a gzip file named
    :data:`CACHE_NAME` in its header): VW's ``-c``/``--cache_file`` reads it instead of
    the data, as VW reads its own cache."""
    try:
        with open(path, "rb") as f:
            head = f.read(10 + len(CACHE_NAME) + 1)
    except OSError:
        return False
    return head[:2] == b"\x1f\x8b" and bool(head[3] & 8) and head[10:-1] == CACHE_NAME


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


def _cb_part(ml: Multiline, cfg: TrainConfig, block, parse_inter) -> _Part:  # noqa: ANN001
    """``--cb K``: each line copied to K action lines (:mod:`streamlearn.learners.cb_to_adf`)."""
    from streamlearn.io.labels import read_labels
    from streamlearn.io.multiline import Merged
    from streamlearn.io.parse import FMT_VW, describe_errors, parse_block
    from streamlearn.learners.cb_to_adf import chosen_of, copy_to_adf, index_mask, index_scale

    b = parse_block(block, FMT_VW, cfg.bits, cfg.constant, parse_inter)
    if b.err_pos is None:
        b.err_pos = np.full(b.n, -1, dtype=np.int64)
    lab = read_labels(b, LABEL_CB, parse_inter.vw_numbers)
    k = ml.actions
    for r in np.flatnonzero(b.status == 0):
        a, _, _ = chosen_of(lab.ptr, lab.cls, lab.cost, lab.prob, int(r))
        if a > k:
            b.status[r] = 27
    width = feature_width(ml)
    if ml.explore == "bag":
        width *= max(1, ml.bag)  # each bag's models (cb_explore_adf_bag's feature width)
    n_ok = int(np.count_nonzero(b.status == 0))
    nnz = int(np.sum(np.diff(b.indptr)[b.status == 0]))
    act_ptr = np.empty(n_ok + 1, dtype=np.int64)
    rows = np.empty(n_ok, dtype=np.int64)
    sub = np.empty(n_ok * k, dtype=np.int64)
    out_ptr = np.empty(n_ok * k + 1, dtype=np.int64)
    out_idx = np.empty(nnz * k, dtype=np.uint32)
    out_val = np.empty(nnz * k, dtype=np.float64)
    ns = b.ns if b.ns is not None else np.zeros(b.indices.shape[0], dtype=np.uint8)
    out_ns = np.empty(nnz * k, dtype=ns.dtype)
    copy_to_adf(b.indptr, b.indices, b.values, ns, b.status, k, width, index_scale(width),
                cfg.bits, index_mask(k, width), act_ptr, rows, sub, out_ptr, out_idx, out_val,
                out_ns)  # fmt: skip
    chosen = np.full(n_ok, -1, dtype=np.int64)
    cost = np.zeros(n_ok)
    prob = np.ones(n_ok)
    for e, r in enumerate(rows):
        a, c, p = chosen_of(lab.ptr, lab.cls, lab.cost, lab.prob, int(r))
        if a > 0:
            chosen[e], cost[e], prob[e] = a - 1, c, p
    mg = Merged(act_ptr, rows, np.repeat(rows, k), out_ptr, out_idx, out_val, out_ns)
    bad = describe_errors(b, limit=1 << 30) if (b.status != 0).any() else []
    tags = _Tags(b.block.data, b.tag_start[rows], b.tag_end[rows])  # (VW's copies keep it)
    none = np.zeros(0)
    feats = _example_nnz(mg)
    return _Part(mg, chosen, cost, prob, none, none, none, tags, b.line[rows], bad, sub, feats,
                 feats)  # fmt: skip


def _prepare(ml: Multiline, ex, mg) -> _Part:  # noqa: ANN001
    from streamlearn.io.multiline import row_labels
    from streamlearn.io.parse import describe_errors

    b = ex.batch
    lab = ex.labels
    rows = mg.row
    lab_n = np.empty(rows.shape[0], dtype=np.int64)
    lab_cls = np.empty(rows.shape[0], dtype=np.int64)
    lab_cost = np.empty(rows.shape[0])
    m = mg.act_ptr.shape[0] - 1
    chosen = np.full(m, -1, dtype=np.int64)
    cost = np.zeros(m)
    prob = np.ones(m)
    keep = np.ones(m, dtype=bool)
    # (VW throws on an example with two logged actions; sl skips it with its reason)
    row_labels(rows, mg.act_ptr, lab.ptr, lab.cls, lab.cost, lab.prob, ml.reduction != "csoaa_ldf",
               b.status, lab_n, lab_cls, lab_cost, chosen, cost, prob, keep)  # fmt: skip
    bad = describe_errors(b, limit=1 << 30) if (b.status != 0).any() else []
    if not keep.all():
        mg, chosen, cost, prob, lab_n, lab_cls, lab_cost = _drop(
            mg, keep, chosen, cost, prob, lab_n, lab_cls, lab_cost)  # fmt: skip
    data = b.block.data
    first_rows = mg.row[mg.act_ptr[:-1]] if mg.row.shape[0] else np.zeros(0, dtype=np.int64)
    shared_rows = ex.ex_ptr[mg.example] if hasattr(ex, "ex_ptr") else first_rows
    tags = _Tags(data, b.tag_start[shared_rows], b.tag_end[shared_rows])
    feat_row = _example_nnz(mg)
    feat_total = feat_row
    if ml.reduction == "cb_adf" and (not ml.explore or ml.explore_eval):
        # cb_adf's update_statistics: each line once, the shared line with its constant;
        # explore_eval's: the action lines' own features only
        from streamlearn.io.labels import ROW_SHARED

        row_nnz = np.diff(b.indptr)
        own = _example_sums(row_nnz[mg.row], mg.act_ptr)
        head = ex.ex_ptr[mg.example]
        has_shared = (ex.labels.flags[head] & ROW_SHARED) != 0
        feat_total = own if ml.explore_eval else own + np.where(has_shared, row_nnz[head], 0)
    from streamlearn.run.mlaudit import Source

    src = Source(data, b.block.first_line, b.line[mg.row], b.tag_start[mg.row], b.tag_end[mg.row],
                 b.line[shared_rows])  # fmt: skip
    return _Part(mg, chosen, cost, prob, lab_n, lab_cls, lab_cost, tags, b.line[shared_rows], bad,
                 None, feat_row, feat_total, src=src)  # fmt: skip


def _crossed(part: _Part, full, bits: int) -> None:  # noqa: ANN001
    """``part.mg`` with its interactions; VW's feature counts take the crossed features."""
    from streamlearn.io.multiline import cross_merged

    before = part.mg
    part.mg = cross_merged(part.mg, full, bits)
    if part.mg is before or part.feat_row is None:
        return
    extra = _example_nnz(part.mg) - _example_nnz(before)
    same = part.feat_total is part.feat_row
    part.feat_row = part.feat_row + extra
    part.feat_total = part.feat_row if same else part.feat_total + extra


def _example_sums(per_row: np.ndarray, act_ptr: np.ndarray) -> np.ndarray:
    """Each example's sum of ``per_row`` over its action rows."""
    c = np.concatenate([[0], np.cumsum(per_row, dtype=np.int64)])
    return c[act_ptr[1:]] - c[act_ptr[:-1]]


def _example_nnz(mg) -> np.ndarray:  # noqa: ANN001
    """Each example's entries over its merged action rows (before crosses)."""
    return mg.indptr[mg.act_ptr[1:]] - mg.indptr[mg.act_ptr[:-1]]


def _drop(mg, keep, chosen, cost, prob, lab_n, lab_cls, lab_cost):  # noqa: ANN001, ANN202
    """The examples of ``keep`` only."""
    sizes = np.diff(mg.act_ptr)
    row_keep = np.repeat(keep, sizes)
    nnz = np.diff(mg.indptr)
    ent_keep = np.repeat(row_keep, nnz)
    new = dataclasses.replace(
        mg, act_ptr=np.concatenate([[0], np.cumsum(sizes[keep])]).astype(np.int64),
        example=mg.example[keep], row=mg.row[row_keep],
        indptr=np.concatenate([[0], np.cumsum(nnz[row_keep])]).astype(np.int64),
        indices=mg.indices[ent_keep], values=mg.values[ent_keep],
    )  # fmt: skip
    return (new, chosen[keep], cost[keep], prob[keep], lab_n[row_keep], lab_cls[row_keep],
            lab_cost[row_keep])  # fmt: skip


def _g(x: float) -> str:
    """A score as VW prints it in an action list: 6 decimals, trailing zeros dropped."""
    s = f"{x:.6f}".rstrip("0").rstrip(".")
    return "0" if s in ("", "-0") else s


def run(learn: dict, ml: Multiline, inputs, outputs, console) -> dict:  # noqa: ANN001
    """Train (or with ``-t`` score) a multiline reduction, write its outputs; the summary."""
    from streamlearn.run.options import check
    from streamlearn.system.locks import model_lock
    from streamlearn.system.outputs import same_file, staging
    from streamlearn.system.process import committing

    say = console.say if not getattr(outputs, "vw_quiet", False) else (lambda *a: None)
    # the single-line runs' rules (run/train.py): unreadable inputs and outputs that would
    # destroy an input, the initial model or another output refused before any work
    check(inputs, outputs, int(learn.get("passes") or 1))
    from streamlearn.run import mloutputs

    mloutputs.refuse(ml, outputs, inputs, learn)  # (exit 2: an output not written yet)
    if ml.reduction == "cbify":
        from streamlearn.run import cbify

        play = cbify.run_legacy if ml.legacy else cbify.run_ldf if ml.cbify_ldf else cbify.run
        summary = play(learn, ml, inputs, outputs, console)
        if getattr(outputs, "report", None):
            from streamlearn.run.report import write_json

            write_json(outputs.report, _summary_report(learn, ml, summary))
        return summary
    if ml.legacy or ml.evaluate:
        from streamlearn.run import cblegacy

        cblegacy.check(ml)
    _check_base(learn, ml)
    # a model continued in place is locked from reading -i to writing -f
    start = inputs.initial_model
    in_place = outputs.final_model if (
        start and outputs.final_model and same_file(outputs.final_model, start)) else None
    with model_lock(start, in_place, outputs.lock_timeout, console.say):
        # a VW model is read before the header, which says its t (VW's "initial_t")
        begun = _start(start, ml, learn) if start and not ml.legacy else None
        progress = None  # (VW's table: not made under --quiet, where nothing shows it)
        if getattr(outputs, "vw_format", False) and not getattr(outputs, "vw_quiet", False):
            progress = _vw_header(learn, ml, inputs, outputs, say, begun[5] if begun else None)
        elif getattr(outputs, "vw_quiet", False):
            progress = mloutputs.quiet_progress(outputs)  # (VW's counters a readable model says)
        # the off-policy estimates cost a fifth of the learner's time: made when shown
        fitted = fit(learn, ml, inputs, console, predictions=bool(outputs.predictions),
                     progress=progress, raw=bool(getattr(outputs, "raw_predictions", None)),
                     off_policy=bool(ml.ope or getattr(outputs, "report", None)),
                     begun=begun, audit=bool(getattr(outputs, "audit", False)),
                     probabilities=bool(getattr(outputs, "probabilities", False)))  # fmt: skip
        if fitted.summary.get("config") is not None:
            learn = fitted.summary.pop("config")
        if getattr(outputs, "invert_hash", None):
            fitted.names = mloutputs.feature_names(ml, learn, inputs, fitted)
        if not fitted.summary.get("read", fitted.summary.get("examples")) \
                and not inputs.allow_empty:  # fmt: skip
            raise NoExamples("no usable multiline example in the input (nothing written)")
        with staging() as stage:  # every output written in full before any is visible
            _write_outputs(fitted, learn, ml, outputs, console, say, progress)
            stage.write()
            with committing():
                stage.commit()  # the model last: a failure before leaves the old one
    return fitted.summary


def _write_outputs(fitted: Fitted, learn: dict, ml: Multiline, outputs, console, say,
                   progress) -> None:  # noqa: ANN001  # fmt: skip
    """The run's predictions, summary lines, report and model (the model last)."""
    if outputs.final_model:
        _check_finite(fitted, outputs.final_model)  # a diverged run writes nothing (exit 6)
    if outputs.predictions:
        _write(outputs.predictions, "".join(fitted.predictions))
    if fitted.raw is not None and getattr(outputs, "raw_predictions", None):
        _write(outputs.raw_predictions, "".join(fitted.raw))
    _summary(say, fitted.summary, fitted.stats, fitted.holdout, progress)
    if fitted.explorer is not None and progress is not None:
        for line in fitted.explorer.closing_lines():
            say(line)
    if fitted.off_policy is not None:
        if ml.ope:
            for line in fitted.off_policy.lines():
                console.say(line)
        fitted.summary["off_policy"] = fitted.off_policy.report()
    if getattr(outputs, "report", None):
        from streamlearn.run.report import write_json

        write_json(outputs.report, _report(learn, ml, fitted))
    if getattr(outputs, "readable_model", None) or getattr(outputs, "invert_hash", None):
        from streamlearn.run import mloutputs

        mloutputs.write_readable(fitted, learn, ml, outputs, progress)
    if outputs.final_model:
        save(fitted, ml, learn, outputs.final_model,
             getattr(outputs, "model_format", "sl"))  # fmt: skip


def _check_finite(fitted: Fitted, path: str) -> None:
    """Refuse (exit 6) a model holding a NaN or an inf: a diverged run writes no model."""
    for a, what in ((fitted.table, "weights or per-slot state"), (fitted.gstate, "global state")):
        if a.size and not (np.isfinite(a.min()) and np.isfinite(a.max())):
            raise Diverged(f"the model's {what} holds a NaN or an inf: the training diverged "
                           f"(no model written to {path})")  # fmt: skip


def _check_base(learn: dict, ml: Multiline) -> None:
    """The reductions and explorers that run on the ftrl family's learners (``--ftrl``,
    ``--coin``, ``--pistol``, as VW's), and one line for those that do not yet."""
    algo = learn.get("algo") or "gd"
    if algo == "gd":
        return
    if algo not in csoaa_ldf.BASES:
        _config(learn, bases=True)  # (its message)
    what = None
    if ml.legacy or ml.evaluate:
        what = "--cb_force_legacy/--eval"
    elif ml.reduction in ("ccb", "slates"):
        what = f"--{ml.reduction}"
    elif ml.explore in ("regcb", "regcbopt") or (ml.explore == "squarecb" and ml.elim):
        what = "--regcb/--regcbopt/--squarecb --elim (VW's sensitivity of the ftrl family)"
    elif algo == "pistol" and ml.explore == "cover":
        # (pistol's learn returns its prediction, from its state: VW's cover then ranks by
        # the predictions its learn made, where sl's kernel scores the stored weights)
        what = "--cover"
    if what:
        raise UsageError(f"--{algo} under {what}: not supported yet (sl runs these on gd, "
                         "VW's default learner)")  # fmt: skip


def _vw_header(learn: dict, ml: Multiline, inputs, outputs, say,
               model_t: float | None = None):  # noqa: ANN001, ANN202  # fmt: skip
    """Print VW's header lines (``model_t``: the t of VW's model continued); the progress
    table to fill (:mod:`streamlearn.run.mlconsole`)."""
    from streamlearn.run import mlconsole

    cfg = _config(learn, bases=True)
    sources = list(inputs.sources or ["-"])
    cache = None
    if inputs.cache:
        reused = (os.path.exists(inputs.cache) and not inputs.rebuild_cache
                  and is_cache(inputs.cache))  # fmt: skip
        cache = (inputs.cache, reused)
    say(mlconsole.header(ml, cfg, inputs, outputs, cache, sources, model_t))
    holdout_on = bool(cfg.effective_holdout) and max(1, cfg.passes) > 1
    return mlconsole.Progress(say, holdout_on)


def _spec(ml: Multiline):  # noqa: ANN202
    from streamlearn.learners import gd

    return dataclasses.replace(gd.SPEC, name=f"{ml.reduction}_gd")


def _explorer_state(fitted: Fitted, ml: Multiline) -> tuple[int | tuple | None, tuple, int]:
    """(state, mtr sums, generator state) of a run's explorer, as VW saves them: the
    counter of --first (examples still to explore), --squarecb, --regcb or --cover
    (examples learned), --synthcover's (lowest, highest) costs seen; bagging's copy 0
    mtr sums (VW's per-model state 0), cover's, regcb's and rnd's first model's (their
    own walk keeps them); bagging's and rnd's generator (VW's global one)."""
    xp = fitted.explorer
    counter = None
    sums = (float(fitted.stats[cb_adf.EVENTS]), float(fitted.stats[cb_adf.ACTIONS]))
    seed = 0
    if xp is not None:
        from streamlearn.learners import explore as ex

        if ml.explore == "first":
            counter = int(xp.xstats[ex.X_TAU])
        elif ml.explore in ("squarecb", "cover", "regcb"):
            counter = int(xp.xstats[ex.X_COUNTER])
        elif ml.explore == "synthcover":
            counter = (float(xp.costs[0]), float(xp.costs[1]))
        if xp.kind in (ex.BAG, ex.COVER, ex.REGCB, ex.RND):
            sums = (float(xp.counts[0]), float(xp.counts[1]))
        if ml.explore in ("bag", "rnd") or ml.reduction in ("ccb", "slates"):
            seed = int(xp.rng[0])  # (VW's generator, cb_sample's: the header's --random_seed)
    return counter, sums, seed


def save(fitted: Fitted, ml: Multiline, learn: dict, path: str, fmt: str = "sl") -> None:
    """Write the run's model: VW's format (``fmt`` "vw" or "vw_predict_only",
    :mod:`streamlearn.run.mlmodel`), or sl's, whose ``meta["multiline"]`` records the
    reduction (and mtr's running counts, the explorer's counter), which ``-i`` reads
    back (:func:`initial`)."""
    from streamlearn import model as model_io

    cfg = _config(learn, bases=True)
    _check_finite(fitted, path)
    if ml.legacy:  # (cb_algs' weights: neither VW 9's cb_adf layout nor read back by sl)
        raise ModelError(f"cannot write {path}: a --cb_force_legacy/--eval model is not "
                         "written yet")  # fmt: skip
    counter, sums, seed = _explorer_state(fitted, ml)
    if fmt in ("vw", "vw_predict_only"):
        from streamlearn.run import mlmodel
        from streamlearn.system.outputs import write_bytes

        stats = fitted.stats.copy()
        stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS] = sums
        try:
            multi = bool(fitted.summary.get("ccb_seen_multi"))  # (CCB's, slates')
            parts = mlmodel.encode(ml, cfg, fitted.table, fitted.gstate, stats, counter, seed,
                                   weights_only=fmt == "vw_predict_only",
                                   seen_multi=multi)  # fmt: skip
        except ValueError as e:
            raise ModelError(f"cannot write {path} as a VW model: {e}") from None
        write_bytes(str(path), parts, "model")
        return
    # --ope is the run's, not the model's: a later -i run prints VW's stderr unless asked
    recorded = {k: v for k, v in dataclasses.asdict(ml).items() if k != "ope"}
    meta = {"multiline": recorded, "mtr_events": sums[0], "mtr_actions": sums[1]}
    if counter is not None:
        meta["explore_counter"] = counter
    if seed:
        meta["explore_seed"] = seed
    if "ccb_seen_multi" in fitted.summary:  # VW's has_seen_multi_slot_example
        meta["ccb_seen_multi"] = bool(fitted.summary["ccb_seen_multi"])
    from streamlearn.learners.base import new_stats

    # the counters start afresh in a continued run (as VW's); mtr's sums ride in meta
    model = model_io.from_training(cfg, _spec(ml), fitted.table, fitted.gstate, new_stats(),
                                   cfg.params(), meta=meta)  # fmt: skip
    model_io.save(model, path, "sl")


def multiline_of_model(path: str) -> dict | None:
    """The multiline options a model written by :func:`save` records (None: another model)."""
    from streamlearn import model as model_io

    try:
        model = model_io.load(path)
    except Exception:  # noqa: BLE001 - not such a model: the caller's path reports it
        return None
    ml = model.meta.get("multiline") if isinstance(model.meta, dict) else None
    return dict(ml) if isinstance(ml, dict) else None


def initial(path: str, ml: Multiline, learn: dict):  # noqa: ANN201
    """``-i``: (config options, table, gstate, mtr counts) of a model :func:`save` wrote."""
    from streamlearn import model as model_io

    model = model_io.load(path)
    rec = model.meta.get("multiline") if isinstance(model.meta, dict) else None
    # CCB and slates run on cb_adf: they continue a --cb_adf/--cb_explore_adf model too
    names = {_spec(ml).name}
    if ml.reduction in ("ccb", "slates"):
        names |= {"cb_adf_gd", "ccb_gd", "slates_gd"}
    if not isinstance(rec, dict) or model.learner not in names:
        raise UsageError(f"-i {path}: not a {ml.reduction} model written by sl vw "
                         f"(learner {model.learner!r})")  # fmt: skip
    if rec.get("cb_type", "mtr") != ml.cb_type:
        raise UsageError(f"-i {path}: the model learned --cb_type {rec.get('cb_type')}, not "
                         f"{ml.cb_type}")  # fmt: skip
    options = {**model.config.to_dict(), **learn}
    options.pop("bits", None)
    options["bits"] = model.config.bits
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    options = {k: v for k, v in options.items() if k in known}
    if options.get("theta") is None:
        options.pop("theta", None)
    table = model.table((0.0, 0.0, 0.0, 0.0), np.float32)
    gstate = model.gstate.copy()
    # VW's model keeps gd's normalizer sums of model 0 only: dr's regressor starts afresh
    gstate[csoaa_ldf.G_MODEL + 2 : csoaa_ldf.G_MODEL + 4] = 0.0
    counts = (float(model.meta.get("mtr_events", 0.0)), float(model.meta.get("mtr_actions", 0.0)))
    counter = model.meta.get("explore_counter")
    if ml.explore in ("first", "squarecb") and counter is None:
        # a model of sl before the explorers' state was kept: a continued run would explore
        # differently
        raise UsageError(f"-i {path}: the model keeps no --{ml.explore} counter (an older "
                         "sl model): train it again")  # fmt: skip
    if model.meta.get("explore_seed"):
        options["seed"] = int(model.meta["explore_seed"])
    return options, table, gstate, counts, counter, None


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
    explorer: object = None  # _Explore (its counter, bagging's counts and generator)


def fit(learn: dict, ml: Multiline, inputs, console, predictions: bool = False,
        progress=None, raw: bool = False, off_policy: bool = True, begun=None,
        audit: bool = False, probabilities: bool = False) -> Fitted:  # noqa: ANN001  # fmt: skip
    """Learn from ``inputs.sources`` (every pass); see :func:`run`.  ``progress``: a
    :class:`streamlearn.run.mlconsole.Progress` fed each batch (VW's table);
    ``off_policy``: make the off-policy estimates (:mod:`streamlearn.run.offpolicy`);
    ``begun``: what :func:`_start` read of ``inputs.initial_model`` already; ``audit``:
    write VW's ``--audit`` (:mod:`streamlearn.run.mlaudit`); ``probabilities``, ``raw``:
    VW's ``--probabilities`` and ``-r`` (:mod:`streamlearn.run.mlscores`)."""
    from streamlearn.learners.base import fresh_table

    if ml.cb_type not in cb_adf.CB_TYPES:
        raise UsageError(f"--cb_type {ml.cb_type}: sl takes mtr, ips, dm, dr, sm")
    cover_cb_type(ml, console.say)
    if ml.legacy and inputs.initial_model:
        raise UsageError("-i with --cb_force_legacy: not supported yet")
    start = begun
    if start is None and inputs.initial_model:
        start = _start(inputs.initial_model, ml, learn)
    cfg = _config(start[0] if start else learn, bases=True)
    params = cfg.params()
    stats = np.zeros(cb_adf.STATS)
    counter = None
    if start:
        _, table, gstate, (stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS]), counter, _ = start
    else:
        table = fresh_table(cfg.bits, (0.0,) * csoaa_ldf.COLUMNS[cfg.algo], np.float32)
        gstate = csoaa_ldf.init_gstate(params, cfg.algo)
    if ml.legacy:
        from streamlearn.run.cblegacy import Legacy

        gstate = Legacy.gstate_for(ml, params)
    tables = cb_adf.tables_of(table)
    # --cb K's indices are VW's rewritten ones (learners/cb_to_adf.py): read with step 1
    step = 1 if ml.reduction == "cb" or ml.cb_type != "dr" else 2
    dr_prev = np.zeros(257)
    say = console.say
    # -c / --cache_file: the input's bytes, gzipped, replayed by later runs (as VW's cache)
    sources = inputs.sources
    cache = _Cache(None)
    if inputs.cache:
        if os.path.exists(inputs.cache) and not inputs.rebuild_cache and is_cache(inputs.cache):
            sources = [inputs.cache]
            cache.sealed = [inputs.cache]
            if progress is None:  # (VW's header says it)
                say(f"sl vw: reading the cache {inputs.cache}")
        else:
            cache = _Cache(inputs.cache)
    try:
        fitted = _passes(ml, cfg, inputs, say, sources, cache, predictions, params, table,
                         tables, step, gstate, stats, dr_prev, progress, raw,
                         counter, off_policy, audit, probabilities)  # fmt: skip
    except BaseException:
        cache.drop()
        raise
    finally:
        cache.seal()  # (a one-pass run's cache is committed here)
        if cache.held is not None:
            os.close(cache.held)
            cache.held = None
    return fitted


class _Cache:
    """The cache a run writes (``-c``): the input's bytes gzipped into ``PATH.sl-tmp``,
    renamed to ``PATH`` once the first pass has read all of them (:meth:`seal`); later
    passes read it back, so memory does not grow with the examples.  A run that fails
    first leaves no cache (the temporary file is removed)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.raw = None
        self.tee = None
        self.sealed: list[str] | None = None
        self.held: int | None = None
        if path is not None:
            # a name of this run's own: two runs naming one cache never write one file
            fd, self.tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".",
                                            prefix=os.path.basename(path) + ".",
                                            suffix=".sl-tmp")  # fmt: skip
            self.raw = os.fdopen(fd, "wb")  # noqa: SIM115 - closed by seal/drop
            # level 1: level 9 (gzip's default) took 12 s of a 65 MB input's 14 s run
            self.tee = gzip.GzipFile(filename=CACHE_NAME.decode(), mode="wb", fileobj=self.raw,
                                     compresslevel=1, mtime=0)  # fmt: skip

    def seal(self) -> list[str] | None:
        """Close and commit the cache; the sources later passes read (None: no cache)."""
        if self.tee is not None:
            self.tee.close()
            self.raw.close()
            self.tee = None
            # later passes read this run's file through a descriptor held from before the
            # rename: another run replacing PATH meanwhile cannot feed them its bytes
            # (as run/passes.py holds single-line caches)
            self.held = os.open(self.tmp, os.O_RDONLY)
            os.replace(self.tmp, self.path)
            self.sealed = [f"/dev/fd/{self.held}"]
        return self.sealed

    def drop(self) -> None:
        if self.tee is not None:
            try:
                self.tee.close()
                self.raw.close()
            finally:
                self.tee = None
                with contextlib.suppress(OSError):
                    os.unlink(self.tmp)


def _passes(ml: Multiline, cfg: TrainConfig, inputs, say, sources: list[str], cache: _Cache,
            predictions: bool, params: np.ndarray, table: np.ndarray, tables: np.ndarray,
            step: int, gstate: np.ndarray, stats: np.ndarray, dr_prev: np.ndarray,
            progress=None, raw: bool = False, counter: int | None = None,
            off_policy: bool = True, audit: bool = False,
            probabilities: bool = False) -> Fitted:  # noqa: ANN001  # fmt: skip
    """:func:`fit`'s passes over the data: the first reads ``sources`` (copying their bytes
    to the cache being written, if any), the others read the cache back (with no cache:
    replay the batches kept in memory)."""
    if ml.reduction in ("ccb", "slates"):
        from streamlearn.run import ccb

        return ccb.passes(ml, cfg, inputs, say, sources, cache, predictions, params, table,
                          tables, step, gstate, stats, dr_prev, progress, counter)  # fmt: skip
    loss_id = cfg.loss_id
    passes = max(1, cfg.passes)
    period = cfg.effective_holdout
    kept: list[_Part] = []
    pred_lines: list[str] = []
    cb_type = cb_adf.CB_TYPES[ml.cb_type]
    malformed = 0
    xp = _Explore(ml, cfg) if ml.explore and not ml.legacy else None
    from streamlearn.run.offpolicy import OffPolicy

    opp = OffPolicy() if off_policy and ml.reduction != "csoaa_ldf" and not ml.legacy else None
    lg = None
    if ml.legacy:
        from streamlearn.run.cblegacy import Legacy

        lg = Legacy(ml, cfg, table, gstate)
    auditor = None
    if audit:  # (one example per kernel call, its audit written before it is learned)
        from streamlearn.run.mlaudit import Audit

        auditor = Audit(ml, cfg)
    from streamlearn.run import mlscores

    raws = None  # (-r: VW's lines)
    if raw and lg is None:
        raws = mlscores.Raw(ml, json=cfg.format in ("json", "dsjson"))
    probs = None  # --probabilities: VW's csoaa_ldf-prob (--csoaa_rank's ranking wins)
    if probabilities and ml.reduction == "csoaa_ldf" and not ml.csoaa_rank:
        probs = mlscores.Probabilities()
    if ml.explore_eval and (ml.reduction != "cb_adf" or ml.explore == "bag"):
        raise UsageError("--explore_eval runs over --cb_explore_adf's greedy, first, softmax "
                         "and squarecb explorers (not --cb K, not --bag yet)")  # fmt: skip
    if not ml.explore_eval and (ml.multiplier is not None or ml.target_rate is not None):
        raise UsageError("--multiplier and --target_rate are --explore_eval's")
    if xp is not None:
        gstate = xp.grow(gstate, cb_type)
        if ml.reduction == "cb" and xp.kind == xp.ex.BAG:
            # --cb_explore K --bag B: the copies' indices are VW's rewritten ones, with the
            # bags' width below (as --cbify's, run/cbify.py): read with step 1
            xp.width, xp.w = 1, 2 if cb_type == cb_adf.DR else 1
        xp.resume(counter, stats)
    best = np.inf
    no_win = 0
    used = 0
    again: list[str] | None = None
    for npass in range(passes):
        ho_before = (stats[cb_adf.HO_N], stats[cb_adf.HO_LOSS])
        used = npass + 1
        if npass == 0:
            source = _parts(ml, cfg, sources, inputs.block_size, inputs.max_line_bytes,
                            cache.tee)  # fmt: skip
        elif again is not None:
            source = _parts(ml, cfg, again, inputs.block_size, inputs.max_line_bytes)
        else:
            source = iter(kept)
        if auditor is not None:  # (VW's cache keeps no feature names)
            source = auditor.split(source, cached=npass > 0 or cache.sealed is not None)
        pass_n = 0
        if opp is not None:
            opp.begin_pass(npass + 1)
        for part in source:
            if npass == 0:
                malformed = report_bad(part.bad, malformed, inputs.strict, say)
                if passes > 1 and cache.path is None and cache.sealed is None:
                    kept.append(part)
            mg = part.mg
            m = mg.act_ptr.shape[0] - 1
            if m == 0:
                continue
            ho = np.zeros(m, dtype=np.bool_)
            if period and passes > 1:
                idx = pass_n + 1 + np.arange(m)
                ho = idx % period == 0
            pass_n += m
            if auditor is not None:
                auditor.example(part, table, gstate)
            rows = mg.row.shape[0]
            scores = np.zeros(rows, dtype=np.float32)
            sub = part.sub if part.sub is not None else np.zeros(rows, dtype=np.int64)
            order = np.zeros(rows, dtype=np.int64)
            if lg is not None:
                lg.batch(part, ho, params, loss_id, stats, npass, progress,
                         pred_lines if predictions else None, raw)  # fmt: skip
            elif ml.reduction == "csoaa_ldf":
                pred = np.zeros(m, dtype=np.int64)
                s6 = np.zeros(6)
                csoaa_ldf.train_examples(
                    tables, sub, gstate, params, loss_id, ml.classifier, mg.act_ptr, mg.indptr,
                    mg.indices, mg.values, part.lab_n, part.lab_cls, part.lab_cost, ho, s6,
                    scores, order, pred,
                )  # fmt: skip
                stats[:6] += s6
                if probs is not None:
                    pred = probs.batch(part, scores, pred, ho, stats,
                                       pred_lines if predictions else None)  # fmt: skip
                if progress is not None:
                    _ldf_progress(progress, npass, part, pred, scores, order, ho, ml)
                if predictions and probs is None:
                    _ldf_predictions(pred_lines, part, pred, scores, order, ml)
                if raws is not None:
                    raws.ldf(part, scores)
            else:
                need = int(np.diff(mg.act_ptr).max()) + 1
                if need > dr_prev.shape[0]:
                    dr_prev = np.concatenate([dr_prev, np.zeros(need - dr_prev.shape[0])])
                loss_out = np.zeros(m)
                if xp is not None:
                    seen = xp.batch((tables, sub, step), table, gstate, params, loss_id,
                                    cb_type, part, ho, stats, dr_prev,
                                    pred_lines if predictions else None)  # fmt: skip
                    if raws is not None:
                        raws.cb(part)
                    if opp is not None:
                        opp.explored(part, ho, *seen)
                    if progress is not None:
                        _explore_progress(progress, npass, part, seen[0], seen[1], ho,
                                          known=ml.explore_eval)  # fmt: skip
                    continue
                cb_adf.train_examples(
                    tables, sub, step, gstate, params, loss_id, cb_type, ml.clip_p, mg.act_ptr,
                    mg.indptr, mg.indices, mg.values, part.chosen, part.cost, part.prob, ho,
                    ml.reduction != "cb", stats, dr_prev, scores, order, loss_out,
                )  # fmt: skip
                if opp is not None:
                    opp.greedy(part, ho, scores, order)
                if progress is not None:
                    _cb_progress(progress, npass, part, scores, order, ho, loss_out)
                if predictions:
                    _cb_predictions(pred_lines, part, scores, order, ml)
        if npass == 0:
            per_pass = int(stats[cb_adf.N_EX])
            again = cache.seal() if passes > 1 else None
        if period and passes > 1:
            # VW's summarize_holdout_set: the best pass's holdout loss; early termination
            n_ho = stats[cb_adf.HO_N] - ho_before[0]
            this = (stats[cb_adf.HO_LOSS] - ho_before[1]) / n_ho if n_ho > 0 else np.inf
            if this < best:
                best = this
                no_win = 0
            elif np.isfinite(this) or np.isfinite(best):
                no_win += 1
                if no_win >= cfg.early_terminate:
                    break
    n_ex = int(stats[cb_adf.N_EX])
    summary = {"examples": n_ex, "per_pass": per_pass, "passes": used,
               "best_holdout": best if np.isfinite(best) else None,
               "loss": stats[cb_adf.LOSS] / stats[cb_adf.N_LAB] if stats[cb_adf.N_LAB] else None,
               "malformed": malformed}  # fmt: skip
    summary["config"] = {k: v for k, v in cfg.to_dict().items() if k != "theta"}
    if probabilities and ml.reduction == "csoaa_ldf":  # (the summary's multiclass log loss)
        summary["log_loss"] = (probs.log_loss, probs.ho_log_loss) if probs else (0.0, 0.0)
    raw_lines = lg.raw_lines if lg is not None else raws.lines if raws is not None else None
    return Fitted(table, gstate, stats, pred_lines, summary, bool(period and passes > 1), opp,
                  raw=raw_lines, explorer=xp)  # fmt: skip


def _start(path: str, ml: Multiline, learn: dict):  # noqa: ANN202
    """``-i``: (config options, table, gstate, mtr counts, explorer counter, VW's t or
    None) of a VW model (:mod:`streamlearn.run.mlmodel`) or of sl's (:func:`initial`)."""
    from streamlearn.run import mlmodel

    if mlmodel.kept_options(path) is None:
        return initial(path, ml, learn)
    options = dict(learn)
    options.setdefault("numbers", "vw")  # (VW's model: its inputs read as VW reads them)
    options.pop("bits", None)
    got = mlmodel.read(path, ml, _config(options, bases=True))
    options["bits"] = got["bits"]
    if ml.explore in ("first", "squarecb", "cover", "regcb") and got["counter"] is None:
        # (VW before 8.11 kept no counter: VW reads such a model with a fresh one)
        got["counter"] = ml.tau if ml.explore == "first" else 0
    return options, got["table"], got["gstate"], got["counts"], got["counter"], got["t"]


class _Explore:
    """``--cb_explore_adf``: cb_adf's ranking of each example turned into a pmf
    (:mod:`streamlearn.learners.explore`), VW's progressive loss of the pmf, ``-p`` as VW."""

    def __init__(self, ml: Multiline, cfg: TrainConfig) -> None:
        from streamlearn.learners import explore as ex

        self.ex = ex
        self.ml = ml
        self.kind = ex.EXPLORERS[ml.explore]
        if ml.explore == "squarecb" and ml.elim:
            self.kind = ex.REGCB
        default = 0.05 if ml.explore == "greedy" else 0.0
        # --cover without --epsilon: epsilon 1, decaying with the examples learned
        self.decay = ml.explore == "cover" and ml.epsilon is None
        if self.decay:
            default = 1.0
        self.eps = np.float32(default if ml.epsilon is None else ml.epsilon)
        self.xstats = np.zeros(ex.XSTATS)
        self.xstats[ex.X_TAU] = ml.tau
        self.learning = cfg.params()[10] != 0.0  # P_LEARN
        self.ho_learns = ml.reduction != "cb"  # VW predicts held-out single-line examples
        self.clip_p = ml.clip_p
        self.rng = np.array([cfg.seed], dtype=np.uint64)  # VW's global generator
        self.counts = np.zeros(2 * max(1, ml.bag, ml.rnd + 1))
        self.costs = np.zeros(2)  # --synthcover: the lowest and highest cost seen (from 0)
        self.ee = None  # --explore_eval's counts (learners/explore_eval.py)

    def resume(self, counter: int | None, stats: np.ndarray) -> None:
        """Continue a model's explorer: its counter (``--synthcover``: its lowest and highest
        costs seen), and the mtr sums its own walk keeps (bagging's copy 0, cover's first
        policy, regcb's)."""
        ex = self.ex
        if counter is not None and self.kind == ex.FIRST:
            self.xstats[ex.X_TAU] = float(counter)
        elif counter is not None and self.kind in (ex.SQUARECB, ex.COVER, ex.REGCB):
            self.xstats[ex.X_COUNTER] = float(counter)
        elif counter is not None and self.kind == ex.SYNTHCOVER:
            self.costs[:] = counter  # (its lowest and highest costs seen)
        if self.kind in (ex.BAG, ex.COVER, ex.REGCB, ex.RND):
            self.counts[0], self.counts[1] = stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS]

    def grow(self, gstate: np.ndarray, cb_type: int) -> np.ndarray:
        """gd's global state with room for the bag's or cover's models (one per offset)."""
        if self.kind == self.ex.COVER:
            from streamlearn.learners import cb_cover

            _, s = cb_cover.layout(self.ml.cover, cb_type)
            # --cb K's copies carry VW's rewritten indices: step 1 (see feature_width)
            self.width = 1 if self.ml.reduction in ("cb", "cbify") else s
            models = s
        elif self.kind == self.ex.RND:
            from streamlearn.learners import cb_rnd

            if self.ml.reduction != "cb_adf":
                raise UsageError("--rnd with --cb K or --cbify: not supported yet (use "
                                 "--cb_explore_adf)")  # fmt: skip
            w, s = cb_rnd.layout(self.ml.rnd, cb_type)
            self.w, self.width = w, s
            models = s
        elif self.kind == self.ex.BAG:
            from streamlearn.learners import cb_bag

            w, s = cb_bag.layout(self.ml.bag, cb_type)
            self.w, self.width = w, s
            models = self.ml.bag * w
        else:
            # --regcb, --squarecb --elim: cb_adf's one model (step 1 for --cb K's copies)
            self.width = 1
            return gstate
        out = np.zeros(gstate.shape[0] + 2 * max(0, models - csoaa_ldf.MODELS))
        out[: gstate.shape[0]] = gstate
        return out

    def _own_walk(self, part: _Part, stats: np.ndarray, kernel) -> tuple:  # noqa: ANN001
        """An explorer with its own kernel (bagging, cover, regcb, rnd): ``kernel(xstats,
        acts, probs)`` walks the batch; cb_adf's counters follow its explorer counters.
        Returns each row's action and probability."""
        ex = self.ex
        mg = part.mg
        rows = mg.row.shape[0]
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        x = self.xstats
        before = x.copy()
        kernel(x, acts, probs)
        stats[cb_adf.N_EX] += mg.act_ptr.shape[0] - 1
        stats[cb_adf.FEATURES] += mg.indptr[-1] - mg.indptr[0]
        stats[cb_adf.N_LAB] += x[ex.X_N] - before[ex.X_N]
        stats[cb_adf.LOSS] += x[ex.X_LOSS] - before[ex.X_LOSS]
        stats[cb_adf.HO_N] += x[ex.X_HO_N] - before[ex.X_HO_N]
        stats[cb_adf.HO_LOSS] += x[ex.X_HO_LOSS] - before[ex.X_HO_LOSS]
        return acts, probs

    def bag(self, table, gstate, params, loss_id, cb_type, part, ho, stats) -> tuple:  # noqa: ANN001
        from streamlearn.learners import cb_bag

        mg = part.mg

        def kernel(x: np.ndarray, acts: np.ndarray, probs: np.ndarray) -> None:
            cb_bag.train_bag(
                table, gstate, params, loss_id, cb_type, np.float32(self.clip_p), self.ml.bag,
                self.width, self.w, self.eps, self.ml.first_only, self.ml.greedify, self.rng,
                mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen, part.cost, part.prob, ho,
                self.learning, self.counts, x, acts, probs,
            )  # fmt: skip

        return self._own_walk(part, stats, kernel)

    def rnd(self, table, gstate, params, loss_id, cb_type, part, ho, stats) -> tuple:  # noqa: ANN001
        from streamlearn.learners import cb_rnd

        mg = part.mg
        # gd's stride (floats per weight) in VW's raw feature indices: 4 with its state,
        # which VW keeps only when it learns (-t turns adaptive and normalized off)
        stride = 4 if (params[P_ADAPTIVE] or params[P_NORMALIZED]) and self.learning else 1

        def kernel(x: np.ndarray, acts: np.ndarray, probs: np.ndarray) -> None:
            cb_rnd.train_rnd(
                table, gstate, params, loss_id, cb_type, np.float32(self.clip_p), self.ml.rnd,
                self.width, self.w, stride, np.float32(self.ml.rnd_alpha),
                np.float32(self.ml.rnd_invlambda), self.eps, self.rng, mg.act_ptr, mg.indptr,
                mg.indices, mg.values, mg.ns, part.chosen, part.cost, part.prob, ho, self.learning,
                self.counts, x, acts, probs,
            )  # fmt: skip

        return self._own_walk(part, stats, kernel)

    def regcb_args(self) -> tuple:
        """cb_regcb.train_regcb's explorer arguments (variant .. first_only)."""
        from streamlearn.learners import cb_regcb

        ml = self.ml
        if ml.explore == "squarecb":
            variant, c0 = cb_regcb.ELIM, 0.001
        else:
            variant, c0 = (cb_regcb.REGCBOPT if ml.regcbopt else cb_regcb.REGCB), 0.1
        if ml.mellowness is not None:
            c0 = ml.mellowness
        lo = ml.cb_min_cost
        hi = ml.cb_max_cost
        if ml.reduction == "cbify":  # VW's cbify passes its loss0/loss1
            lo, hi = ml.loss0, ml.loss1
        return (variant, np.float32(c0), np.float32(0.0 if lo is None else lo),
                np.float32(1.0 if hi is None else hi), np.float32(ml.gamma_scale),
                np.float32(ml.gamma_exponent), ml.first_only)  # fmt: skip

    def regcb(self, table, gstate, params, loss_id, cb_type, part, ho, stats) -> tuple:  # noqa: ANN001
        from streamlearn.learners import cb_regcb

        mg = part.mg

        def kernel(x: np.ndarray, acts: np.ndarray, probs: np.ndarray) -> None:
            cb_regcb.train_regcb(
                table, gstate, params, loss_id, np.float32(self.clip_p), *self.regcb_args(),
                self.width, mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen, part.cost,
                part.prob, ho, self.learning, self.counts, x, acts, probs,
            )  # fmt: skip

        return self._own_walk(part, stats, kernel)

    def cover(self, table, gstate, params, loss_id, cb_type, part, ho, stats) -> tuple:  # noqa: ANN001
        from streamlearn.learners import cb_cover

        mg = part.mg

        def kernel(x: np.ndarray, acts: np.ndarray, probs: np.ndarray) -> None:
            cb_cover.train_cover(
                table, gstate, params, loss_id, cb_type, np.float32(self.clip_p), self.ml.cover,
                self.width, np.float32(self.ml.psi), self.eps, self.decay, self.ml.nounif,
                self.ml.first_only, mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen,
                part.cost, part.prob, ho, self.learning, self.counts, x, acts, probs,
            )  # fmt: skip

        return self._own_walk(part, stats, kernel)

    def batch(self, weights, table, gstate, params, loss_id, cb_type, part, ho, stats, dr_prev,
              pred_lines) -> tuple:  # noqa: ANN001  # fmt: skip
        """One batch: cb_adf scores and learns (``weights`` = its tables, sub, step), the
        explorer makes each example's pmf; bagging has its own kernel.  Returns each row's
        action and probability, and the scores (None for bagging): the off-policy estimates'
        inputs."""
        ex = self.ex
        mg = part.mg
        m = mg.act_ptr.shape[0] - 1
        if self.kind in (ex.BAG, ex.COVER, ex.REGCB, ex.RND):
            run = {ex.BAG: self.bag, ex.COVER: self.cover, ex.REGCB: self.regcb,
                   ex.RND: self.rnd}[self.kind]  # fmt: skip
            acts, probs = run(table, gstate, params, loss_id, cb_type, part, ho, stats)
            self.write(part, acts, probs, pred_lines)
            return acts, probs, None
        if self.ml.explore_eval:
            return self.explore_eval(weights, gstate, params, loss_id, cb_type, part, stats,
                                     dr_prev, pred_lines)  # fmt: skip
        rows = mg.row.shape[0]
        scores = np.zeros(rows, dtype=np.float32)
        order = np.zeros(rows, dtype=np.int64)
        prob = part.prob
        if self.kind == ex.SQUARECB:
            # VW's squarecb learns without importance weights: probability 1 on the label
            # of every action line but the last
            sizes = np.diff(mg.act_ptr)
            prob = np.where(part.chosen == sizes - 1, part.prob, 1.0)
        saved = stats[cb_adf.LOSS], stats[cb_adf.HO_LOSS]
        tables, sub, step = weights
        cb_adf.train_examples(
            tables, sub, step, gstate, params, loss_id, cb_type, self.clip_p, mg.act_ptr,
            mg.indptr, mg.indices, mg.values, part.chosen, part.cost, prob, ho, self.ho_learns,
            stats, dr_prev, scores, order, np.zeros(m),
        )  # fmt: skip
        x = self.xstats
        before = x[ex.X_LOSS], x[ex.X_HO_LOSS]
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        if self.kind == ex.SYNTHCOVER:
            ex.synthcover_examples(
                mg.act_ptr, scores, order, part.chosen, part.cost, part.prob, ho, self.learning,
                self.eps, np.float32(self.ml.synthcoverpsi), self.ml.synthcoversize, self.costs,
                x, acts, probs,
            )  # fmt: skip
        else:
            ex.explore_examples(
                self.kind, self.eps, self.ml.first_only, np.float32(self.ml.lam),
                np.float32(self.ml.gamma_scale), np.float32(self.ml.gamma_exponent),
                mg.act_ptr, scores, order, part.chosen, part.cost, part.prob, ho, self.ho_learns,
                self.learning, x, acts, probs,
            )  # fmt: skip
        stats[cb_adf.LOSS] = saved[0] + (x[ex.X_LOSS] - before[0])
        stats[cb_adf.HO_LOSS] = saved[1] + (x[ex.X_HO_LOSS] - before[1])
        self.write(part, acts, probs, pred_lines)
        return acts, probs, scores

    def explore_eval(self, weights, gstate, params, loss_id, cb_type, part, stats, dr_prev,
                     pred_lines) -> tuple:  # noqa: ANN001  # fmt: skip
        """``--explore_eval``: each example predicted, then learned when the rejection
        sampler accepts it (:mod:`streamlearn.learners.explore_eval`)."""
        from streamlearn.learners import explore_eval as ee

        ex = self.ex
        ml = self.ml
        if self.ee is None:
            self.ee = ee.new_state(ml.multiplier)
        mg = part.mg
        rows = mg.row.shape[0]
        scores = np.zeros(rows, dtype=np.float32)
        order = np.zeros(rows, dtype=np.int64)
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        tables, sub, step = weights
        predict_only = params.copy()
        predict_only[10] = 0.0  # P_LEARN
        saved = stats[cb_adf.LOSS], stats[cb_adf.HO_LOSS]
        x = self.xstats
        before = x[ex.X_LOSS], x[ex.X_HO_LOSS]
        target = ml.target_rate is not None
        ee.explore_eval_examples(
            tables, sub, step, gstate, params, predict_only, loss_id, cb_type, self.clip_p,
            mg.act_ptr, mg.indptr, mg.indices, mg.values, part.chosen, part.cost, part.prob,
            stats, dr_prev, self.kind, self.eps, ml.first_only, np.float32(ml.lam),
            np.float32(ml.gamma_scale), np.float32(ml.gamma_exponent), x,
            ml.multiplier is not None, target, np.float32(ml.target_rate if target else 1.0),
            self.ee, self.rng, scores, order, acts, probs,
        )  # fmt: skip
        if self.ee[ee.E_STOPPED]:
            line = int(part.ex_lines[int(self.ee[ee.E_STOPPED]) - 1])
            raise UsageError(f"--explore_eval: example at line {line} was accepted with a "
                             "threshold above 1 (--multiplier/--target_rate): VW learns it "
                             "with that weight, which sl does under --cb_type mtr, ips and dm "
                             "only")  # fmt: skip
        stats[cb_adf.LOSS] = saved[0] + (x[ex.X_LOSS] - before[0])
        stats[cb_adf.HO_LOSS] = saved[1] + (x[ex.X_HO_LOSS] - before[1])
        self.write(part, acts, probs, pred_lines)
        return acts, probs, scores

    def closing_lines(self) -> list[str]:
        """VW's lines after the summary (``--explore_eval``'s counts)."""
        if not self.ml.explore_eval or self.ee is None:
            return []
        from streamlearn.learners import explore_eval as ee

        s = self.ee
        upd = s[ee.E_UPDATES]
        avg = float(np.float32(s[ee.E_WEIGHT]) / np.float32(upd)) if upd else float("nan")
        out = [f"weighted update count = {s[ee.E_WEIGHT]:.6f}",
               f"average accepted example weight = {avg:.6f}"]  # fmt: skip
        if s[ee.E_VIOLATIONS]:
            out.append(f"violation count = {int(s[ee.E_VIOLATIONS])}")
        if self.ml.multiplier is None:
            out.append(f"final multiplier = {s[ee.E_MULTIPLIER]:.6f}")
        if self.ml.target_rate is not None:
            tr = np.float32(self.ml.target_rate)
            out.append(f"targeted update count = {float(np.float32(s[ee.E_EXAMPLES]) * tr):.6f}")
            out.append(f"final rate = {s[ee.E_RATE]:.6f}")
        return out

    def write(self, part: _Part, acts: np.ndarray, probs: np.ndarray, pred_lines) -> None:  # noqa: ANN001
        if pred_lines is None:
            return
        # as explore.pmf_text, each distinct probability's text made once per batch (the
        # pmfs take few values): 200k examples x 8 actions took 2.3 s one by one
        ptr = part.mg.act_ptr.tolist()
        uniq, inv = np.unique(probs, return_inverse=True)
        ptext = [self.ex.prob_text(float(p)) for p in uniq]
        top = int(acts.max()) + 1 if acts.shape[0] else 0
        atext = [f"{a}:" for a in range(top)]
        cells = [atext[a] + ptext[i] for a, i in zip(acts.tolist(), inv.tolist(), strict=True)]
        tags = part.tags
        tagged = bool(np.any(tags.end > tags.start))
        for e in range(len(ptr) - 1):
            body = ",".join(cells[ptr[e] : ptr[e + 1]])
            if tagged:
                tag = tags[e].decode("utf-8", "replace")
                if tag:
                    body += " " + tag
            pred_lines.append(body + "\n\n")


def _cb_labeled(part: _Part) -> np.ndarray:
    return (part.chosen >= 0) & (part.prob > 0)


def _cb_label_of(part: _Part, labeled: np.ndarray):  # noqa: ANN202
    from streamlearn.run.mlconsole import cb_label

    def label(e: int) -> str:
        if not labeled[e]:
            return "unknown"
        return cb_label(int(part.chosen[e]), float(part.cost[e]), float(part.prob[e]))

    return label


def _cb_progress(progress, npass: int, part: _Part, scores, order, ho, loss_out) -> None:  # noqa: ANN001
    """VW's table for cb_adf: the top action and its score."""
    from streamlearn.run.mlconsole import fmt_float

    ptr = part.mg.act_ptr
    labeled = _cb_labeled(part)

    def pred(e: int) -> str:
        top = int(order[ptr[e]])
        return f"{top}:{fmt_float(float(scores[ptr[e] + top]))}"

    progress.batch(npass, labeled, ho, np.where(labeled, loss_out, 0.0), part.feat_row,
                   part.feat_total, _cb_label_of(part, labeled), pred)  # fmt: skip


def _explore_progress(progress, npass: int, part: _Part, acts, probs, ho,  # noqa: ANN001
                      known: bool = False) -> None:  # fmt: skip
    """VW's table for cb_explore_adf: the pmf's first action and its probability; the loss
    of an example is the pmf's weight on the logged action times its cost over its
    probability (float32, as VW's).  ``known``: a labeled example's label shows as
    ``known`` (--explore_eval's table)."""
    from streamlearn.run.mlconsole import fmt_float

    ptr = part.mg.act_ptr
    m = ptr.shape[0] - 1
    labeled = _cb_labeled(part)
    ex_of_row = np.repeat(np.arange(m), np.diff(ptr))
    hit = acts == part.chosen[ex_of_row]
    ips = (part.cost.astype(np.float32) / part.prob.astype(np.float32)).astype(np.float32)
    contrib = (ips[ex_of_row[hit]] * probs[hit].astype(np.float32)).astype(np.float32)
    loss = np.zeros(m)
    loss[ex_of_row[hit]] = contrib
    loss = np.where(labeled, loss, 0.0)

    def pred(e: int) -> str:
        return f"{int(acts[ptr[e]])}:{fmt_float(float(probs[ptr[e]]))}"

    label = _cb_label_of(part, labeled)
    if known:
        label = lambda e: "known" if labeled[e] else "unknown"  # noqa: E731
    progress.batch(npass, labeled, ho, loss, part.feat_row, part.feat_total, label, pred)


def _ldf_progress(progress, npass: int, part: _Part, pred, scores, order, ho, ml) -> None:  # noqa: ANN001
    """VW's table for csoaa_ldf: ``known`` when the predicted class is among the example's
    labels (its cost is the loss), the predicted class (``.....`` after it with
    ``--csoaa_rank``).  csoaa_ldf counts held-out examples as the others (VW's)."""
    ptr = part.mg.act_ptr
    m = ptr.shape[0] - 1
    sizes = np.diff(ptr)
    ex_of_row = np.repeat(np.arange(m), sizes)
    cls = part.lab_cls
    if ml.csoaa_rank:
        top = cls[ptr[:-1] + order[ptr[:-1]]] if m else np.zeros(0, dtype=np.int64)
    else:
        top = np.asarray(pred, dtype=np.int64)
    match = (cls == top[ex_of_row]) & (part.lab_n > 0)
    first = np.full(m, -1, dtype=np.int64)
    rows = np.flatnonzero(match)[::-1]
    first[ex_of_row[rows]] = rows
    known = first >= 0
    loss = np.where(known, part.lab_cost[np.maximum(first, 0)], 0.0) if m else np.zeros(0)
    loss = np.nan_to_num(loss, nan=0.0)
    costed = (part.lab_n > 0) & ~np.isnan(part.lab_cost)
    labeled = np.bincount(ex_of_row[costed], minlength=m) > 0 if m else np.zeros(0, dtype=bool)
    tail = "....." if ml.csoaa_rank else ""

    def label(e: int) -> str:
        return "known" if known[e] else "unknown"

    def guess(e: int) -> str:
        return f"{int(top[e])}{tail}"

    progress.batch(npass, labeled, np.zeros(m, dtype=bool), loss, part.feat_row,
                   part.feat_total, label, guess)  # fmt: skip


def _cb_predictions(out: list[str], part: _Part, scores, order, ml: Multiline) -> None:  # noqa: ANN001
    ptr = part.mg.act_ptr
    for e in range(ptr.shape[0] - 1):
        tag = part.tags[e]
        t = (" " + tag.decode("utf-8", "replace")) if tag else ""
        lo, hi = ptr[e], ptr[e + 1]
        if ml.rank_all:
            out.append(",".join(f"{int(order[i])}:{_g(float(scores[lo + order[i]]))}"
                                for i in range(lo, hi)) + t + "\n\n")  # fmt: skip
        else:
            out.append(f"{int(order[lo])}{t}\n\n")


def _ldf_predictions(out: list[str], part: _Part, pred, scores, order, ml: Multiline) -> None:  # noqa: ANN001
    ptr = part.mg.act_ptr
    for e in range(ptr.shape[0] - 1):
        lo, hi = ptr[e], ptr[e + 1]
        if ml.csoaa_rank:
            cells = (f"{int(part.lab_cls[lo + order[i]])}:{_g(float(scores[lo + order[i]]))}"
                     for i in range(lo, hi))  # fmt: skip
            out.append(",".join(cells) + "\n\n")
            continue
        done = False
        for r in range(lo, hi):
            if not done and part.lab_cls[r] == pred[e] and part.lab_n[r] > 0:
                out.append(f"{int(pred[e])}\n")
                done = True
            else:
                out.append("0\n")
        out.append("\n")


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from streamlearn.system.outputs import write_bytes

    write_bytes(path, text.encode(), "predictions")


def _report(learn: dict, ml: Multiline, fitted: Fitted) -> dict:
    """The JSON ``--report`` of a multiline run: the summary's figures, the options, and
    (contextual bandits) the off-policy estimates (:mod:`streamlearn.run.offpolicy`)."""
    stats = fitted.stats
    out = _summary_report(learn, ml, fitted.summary)
    out["weighted_example_sum"] = float(stats[cb_adf.N_EX])
    out["total_features"] = int(stats[cb_adf.FEATURES])
    if fitted.off_policy is not None:
        out["off_policy"] = fitted.off_policy.report()
    return out


def _summary_report(learn: dict, ml: Multiline, s: dict) -> dict:
    """The report's fields that a run's summary ``s`` gives (``--cbify``'s whole report)."""
    return {
        "examples": s["examples"],
        "examples_per_pass": s["per_pass"],
        "passes_run": s["passes"],
        "average_loss": s["loss"],
        "best_holdout_loss": s["best_holdout"],
        "skipped_lines": s["malformed"],
        "config": {k: v for k, v in learn.items() if isinstance(v, str | int | float | bool)},
        "learner": ml.reduction if not ml.explore else f"cb_explore_adf ({ml.explore})",
        "multiline": dataclasses.asdict(ml),
        "curve": [],
    }


def _summary(say, s: dict, stats, holdout: bool, progress=None) -> None:  # noqa: ANN001
    """VW's summary; with ``progress`` (:class:`~streamlearn.run.mlconsole.Progress`) its
    counts, which leave held-out examples out as VW's."""
    examples, weighted = s["examples"], stats[cb_adf.N_EX]
    per_pass = s["per_pass"]
    if progress is not None:
        examples = progress.example_number
        weighted = progress.wlab + progress.wunl
        per_pass = examples // max(1, s["passes"])
    say("")
    say("finished run")
    if s["passes"] > 1:
        say(f"number of examples per pass = {per_pass}")
        say(f"passes used = {s['passes']}")
    else:
        say(f"number of examples = {examples}")
    say(f"weighted example sum = {weighted:.6f}")
    say("weighted label sum = 0.000000")
    if holdout:
        best = s["best_holdout"]
        say("average loss = undefined (no holdout)" if best is None
            else f"average loss = {best:.6f} h")  # fmt: skip
    elif s["loss"] is None:
        say("average loss = n.a.")
    else:
        say(f"average loss = {s['loss']:.6f}")
    if "log_loss" in s:  # (--csoaa_ldf --probabilities: run/mlscores.py)
        from streamlearn.run.mlscores import log_loss_line

        labeled = stats[cb_adf.N_LAB] if progress is None else progress.wlab
        say(log_loss_line(*s["log_loss"], labeled, holdout))
    total = int(stats[cb_adf.FEATURES]) if progress is None else progress.total_features
    say(f"total feature number = {total}")
