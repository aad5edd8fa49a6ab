"""The model a server (:mod:`streamlearn.run.serve`) serves: each read's lines parsed,
scored or learned, and answered.

:class:`Served` answers a single-line model's requests with its prediction lines as
``sl predict -p`` (or VW, ``sl vw --daemon``) writes them; learning, a line whose
step would leave the model non-finite is rolled back and answered ``nan``.  A
bandit's model answers multiline examples (:class:`~streamlearn.run.bandit_served.BanditServed`,
guarded here the same way).  :func:`served_model` picks the one for a model.
Saves, reloads and the socket are :mod:`streamlearn.run.serve_saves`' and
:mod:`streamlearn.run.serve_socket`'s.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import TrainConfig
from streamlearn.errors import Diverged, UsageError
from streamlearn.io.batch import Block
from streamlearn.io.formats import FMT_VW
from streamlearn.io.interactions import capped
from streamlearn.io.parse import FORMATS, detect_format, parse_blocks
from streamlearn.learners.base import P_BINARY, P_HOLDOUT, S_N, S_NROWS, new_rows
from streamlearn.run.classes import check_probabilities, prediction_width
from streamlearn.run.console import Console
from streamlearn.run.finite import check_model
from streamlearn.run.learner import Learner
from streamlearn.run.options import Inputs
from streamlearn.run.predict import Scorer
from streamlearn.run.resident import OneLine
from streamlearn.run.runner import (
    BatchChecks,
    ClassNumbering,
    PredictionWriter,
    binary_mode,
    run_kernel,
)
from streamlearn.run.serve_options import ServeOptions, log
from streamlearn.system.jit import INTERPRETED


def _finite(a: np.ndarray) -> bool:
    """No NaN or inf in ``a`` (min and max are NaN if any element is, else ±inf if any is:
    no array of flags, as ``model.non_finite``; float32 weights: their float64 sum, one
    pass, which no finite float32 values can overflow)."""
    if a.dtype == np.float32:
        return math.isfinite(np.add.reduce(a, axis=None, dtype=np.float64))
    return not a.size or bool(np.isfinite(a.min()) and np.isfinite(a.max()))


def _sums_finite(*arrays: np.ndarray) -> bool:
    """No NaN or inf in ``arrays`` of float64 counters, by their sums: one pass each (a sum
    past 1.8e308 of finite counters reads as not finite: a state that large has diverged)."""
    return all(math.isfinite(np.add.reduce(a, axis=None)) for a in arrays)


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
        self.width = prediction_width(config) if opts.learn else self.scorer.width
        self.rows = self.rows if opts.learn else self.scorer.rows
        self.loss_id = config.loss_id if opts.learn else self.scorer.loss_id
        self._lines: OneLine | None = None  # (one-line requests: _one_line)
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
        if not long_lines and data.find(b"\n") == len(data) - 1:
            one = self._one_line(data)
            if one is not None:
                return one, 1, 0
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

    def _one_line(self, line: bytes) -> bytes | None:
        """The answer to one VW text line in two kernel calls and no batch (as
        :meth:`~streamlearn.run.resident.Resident.learn_line`); None where :meth:`answer`'s
        batch path must answer: a line the one-line parser leaves, a malformed line,
        one-against-all (its class numbering), a step that leaves the model non-finite."""
        if INTERPRETED or self.classes is not None:
            return None
        if self.code != FMT_VW and (self.code is not None or detect_format(line) != FMT_VW):
            return None
        one = self._lines
        if one is None:
            one = self._lines = OneLine(self.config, self.inter)
        row = one.parse(line)
        if row is None:
            return None
        if self.checks.classification:  # (label 0 read as -1, as BatchChecks.check does)
            self.checks.labels(row[1])
        if self.learner is not None:
            lr = self.learner
            table, gstate, kernel = lr.table, lr.gstate, lr.spec.train_batch
        else:
            sc = self.scorer
            table, gstate, kernel = sc.table, sc.gstate, sc.kernel
        idx = one.slots()
        saved = None if self.learner is None \
            else (table.take(idx, axis=0), gstate.copy(), self.stats.copy())  # fmt: skip
        preds = one.step(kernel, table, gstate, self.params, self.loss_id, self.stats, self.rows,
                         self.width)  # fmt: skip
        # (a sum that overflows only sends the line to answer(), which checks each value)
        if saved is not None and not math.isfinite(table.take(idx, axis=0).sum() + gstate.sum()):
            table[idx], gstate[:], self.stats[:] = saved  # (answer() says why)
            return None
        self.checks.examples += 1
        text = self.writer.texts(preds)[0].encode("ascii")
        ts, te = int(one.parser.arrays[3][0]), int(one.parser.arrays[4][0])
        return text + b" " + line[ts:te] + b"\n" if te > ts else text + b"\n"

    def _step(self, batch) -> tuple[np.ndarray, bool]:  # noqa: ANN001 - a Batch
        """Learn ``batch`` (its rows of status 0); its predictions, and False (everything
        put back as it was) when the step left a weight or the learner's state non-finite."""
        lr = self.learner
        slots = batch.indices  # the rows the kernel may touch (a slot twice: same values)
        saved = (lr.table.take(slots, axis=0), lr.gstate.copy(), lr.stats.copy())
        preds = run_kernel(lr.spec.train_batch, lr.table, lr.gstate, self.params,
                           self.config.loss_id, batch, lr.stats, self.rows,
                           prediction_width(self.config))  # fmt: skip
        lr.stats[S_NROWS] = 0.0  # no progress table: its rows are not kept
        if _finite(lr.table.take(slots, axis=0)) and _finite(lr.gstate):
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
            log(self.console, f"sl serve: {batch.block.source}:{int(batch.line[i])}: learning "
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


def kept_options(path: str | None) -> list | None:
    """The options kept in VW's model file of a multiline reduction at ``path``, in a
    stable order (None: another model, or no file), which :func:`served_model` reads itself;
    ModelError for one sl does not run."""
    from streamlearn.run import mlmodel

    if path is None:
        return None
    kept = mlmodel.kept_options(path)
    return None if kept is None else sorted(kept, key=lambda kv: (kv[0], kv[1] or ""))


def served_model(m: model_io.Model | None, config: TrainConfig, opts: ServeOptions,
                 console: Console, vw_path: str | None = None, explicit: dict | None = None):  # noqa: ANN202 - Served or run.bandit.BanditServed  # fmt: skip
    """The served model: a bandit's (multiline requests; ``vw_path``: read from VW's model
    file, with ``explicit``'s options) or a single-line model's."""
    if vw_path is not None:
        from streamlearn.run.bandit import Bandit

        if not opts.bandit or not opts.bandit.get("reduction"):
            raise UsageError(f"{vw_path} is VW's model of a multiline reduction: serve it "
                             "with sl vw --daemon -i, which reads its options")  # fmt: skip
        learn = {**(explicit or {}), "test_only": not opts.learn}
        from streamlearn.reductions import Multiline, reduction_of

        red = reduction_of(Multiline(**opts.bandit))
        red.check_served()  # (before either server: LDA's, the search's are not served yet)
        if not red.batched:  # (CCB's, slates' slots)
            from streamlearn.run import ccb

            return ccb.served(vw_path, learn, opts.bandit, opts, console)
        b = Bandit.from_vw(vw_path, learn, opts.bandit)
        return _guarded()(None, b.config, opts, console, opts.bandit, learner=b)
    if opts.bandit or (m is not None and isinstance(m.meta.get("multiline"), dict)):
        return _guarded()(m, config, opts, console, opts.bandit)
    return Served(m, config, opts, console)


class _Diverging(Exception):
    """A bandit's step left the model non-finite; everything it changed is put back."""


@functools.cache
def _guarded() -> type:
    """:class:`~streamlearn.run.bandit_served.BanditServed` that never keeps nor saves a
    non-finite model (defined on first use: a plain server does not import the bandits)."""
    from streamlearn.run.bandit_served import BanditServed

    class GuardedBandit(BanditServed):
        """A learning bandit server's safety net: an example whose update would make the
        model non-finite (an importance weight or a cost too large) is answered ``nan``
        and not learned, the model put back as it was (cb_adf's kernel and the explorers
        over it, ``--cb K``'s lines copied to it too; the explorers with kernels of their
        own -- bag, cover, regcb, rnd -- and csoaa_ldf are checked when saved); a
        non-finite model is never saved."""

        def __init__(self, *args, **kw) -> None:  # noqa: ANN002, ANN003 - BanditServed's
            super().__init__(*args, **kw)
            b = self.bandit
            own = () if b.xp is None else (b.xp.ex.BAG, b.xp.ex.COVER, b.xp.ex.REGCB,
                                            b.xp.ex.RND)  # fmt: skip
            self.width = b.step if b.ml.reduction in ("cb_adf", "cb") and not b.ml.legacy and (
                b.xp is None or b.xp.kind not in own) else 0  # fmt: skip
            """The step between a feature's rows (0: the rows a step touches not known)."""
            if self.learner is not None:
                b.run = self._guarded_run(b.run)  # (this server's Bandit only)
                self.guard = bool(self.width)  # (Bandit.line's one call, guarded alike)

        def _guarded_run(self, run):  # noqa: ANN001, ANN202 - Bandit.run
            def guarded(part, holdout=None, one=False):  # noqa: ANN001, ANN202
                b = self.bandit
                if not self.width:
                    return run(part, holdout, one)
                mask = b.table.shape[0] - 1
                if self.width == 1:  # (the feature's row: its index within the table)
                    rows = part.mg.indices & np.uint32(mask)
                else:
                    rows = ((part.mg.indices.astype(np.uint64)[:, None] * np.uint64(self.width)
                             + np.arange(self.width, dtype=np.uint64))
                            & np.uint64(mask)).ravel()  # fmt: skip
                xp = vars(b.xp) if b.xp is not None else {}
                kept = {k: v.copy() for k, v in xp.items() if type(v) is np.ndarray}
                saved = (b.table[rows], b.gstate.copy(), b.stats.copy(), b.dr_prev.copy())
                step = run(part, holdout, one)
                if _finite(b.table[rows]) and _sums_finite(b.gstate, b.stats):
                    return step
                b.table[rows], b.gstate[:], b.stats[:] = saved[:3]
                b.dr_prev = saved[3]
                for k, v in kept.items():
                    xp[k][...] = v
                raise _Diverging

            return guarded

        def _run(self, data: bytes, source: str, start: int) -> tuple[bytes, int, int]:
            from streamlearn.reductions.cb_line import Diverging

            try:
                return super()._run(data, source, start)
            except (_Diverging, Diverging):
                pass
            # one example at a time: the one that diverges is answered nan, the others learned
            out, rows, bad = [], 0, 0
            single = self.bandit.ml.reduction == "cb"  # (--cb K: an example a line)
            for chunk, first in _examples(data, start, single):
                try:
                    a, n, k = super()._run(chunk, source, first)
                except (_Diverging, Diverging):
                    log(self.console, f"sl serve: {source}:{first}: learning this example "
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


def _examples(data: bytes, start: int, single: bool = False) -> Iterator[tuple[bytes, int]]:
    """The multiline examples of ``data`` (whole examples, each ended by a blank line), one
    by one, with the line each starts on; ``single``: each line an example (``--cb K``'s), a
    blank line kept with the line before it."""
    lines = re.findall(rb"[^\n]*\n|[^\n]+$", data)
    at = 0
    for i, line in enumerate(lines):
        if single and line.strip() and i > at:
            yield b"".join(lines[at:i]), start + at
            at = i
        elif not single and not line.strip():
            chunk = b"".join(lines[at : i + 1])
            if chunk.strip():
                yield chunk, start + at
            at = i + 1
    if at < len(lines):
        yield b"".join(lines[at:]), start + at
