"""What ``sl train`` and ``sl predict`` share: the format check, the parser
thread, per-batch checks, predictions files, and running a kernel over one batch.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from streamlearn.config import TrainConfig
from streamlearn.errors import MalformedData, NoExamples, UsageError
from streamlearn.io import cache as batch_cache
from streamlearn.io.batch import REASONS, Batch
from streamlearn.io.classes import check_classes
from streamlearn.io.parse import FORMATS
from streamlearn.learners.base import (
    INDEXING_AUTO,
    P_INDEXING,
    P_INDEXING_AT,
    P_LEARN,
    P_OAA,
    S_CLASS_MOVED,
)
from streamlearn.learners.losses import CLASSIFICATION
from streamlearn.run.console import Console
from streamlearn.system.jit import INTERPRETED
from streamlearn.system.outputs import STDOUT, Output
from streamlearn.system.process import raise_pending, silence_stdout

SHOWN_ERRORS = 10
PARSE_WORKERS = 2
"""Blocks parsed at once: parsing costs ~5x learning, so both cores parse (the
learner runs on the main thread between blocks)."""


# ---------------------------------------------------------------------------
# inputs


FORMAT_NAMES = {code: name for name, code in FORMATS.items()}


class FormatGuard:
    """The format a run parses with, and the check that the input is in the model's format.

    A model records the format it was trained on.  Continuing it, or scoring
    with it, on input of the other format would hash other features into its
    slots, so with ``--format auto`` the input's detected format must match
    the recorded one (exit 2 otherwise, naming the ``--format`` that reads it
    anyway: an svmlight index ``i`` is VW's feature ``i`` in the default
    namespace, so the conversion is well defined).  :meth:`check` returns the
    configuration with the format the run actually read.
    """

    def __init__(self, model_config: TrainConfig | None, explicit: str | None, what: str) -> None:
        recorded = model_config.format if model_config is not None else "auto"
        self.recorded = recorded if recorded in FORMAT_NAMES.values() else None
        self.explicit = explicit if explicit not in (None, "auto") else None
        self.parse_as = self.explicit or "auto"
        self.what = what
        self._seen: str | None = None

    def check(self, batch: Batch, config: TrainConfig) -> TrainConfig:
        if self._seen is None and batch.fmt in FORMAT_NAMES:
            seen = FORMAT_NAMES[batch.fmt]
            if self.explicit is None and self.recorded is not None and seen != self.recorded:
                raise UsageError(
                    f"{batch.block.source} looks like {seen} data, but {self.what} was trained "
                    f"on {self.recorded} lines; to read it as {seen} anyway, pass --format "
                    f"{seen} (svmlight index i is VW's feature i in the default namespace)"
                )
            if seen == "svmlight" and config.hash != "strings":
                raise UsageError(
                    f"{batch.block.source} is svmlight data, whose indices are slots: "
                    f"--hash {config.hash} applies to VW text only"
                )
            self._seen = seen
        if self._seen is None or config.format == self._seen:
            return config
        return config.replace(format=self._seen)


_END = object()
_WAKE = 0.2
"""Seconds between :func:`prefetch`'s checks for a pending signal while it waits."""


def prefetch(items: Iterable, depth: int = 2) -> Iterator:
    """Run ``items`` on a background thread, ``depth`` items ahead."""
    q: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(_END)
        except BaseException as e:  # handed to the consumer
            q.put(e)

    thread = threading.Thread(target=work, name="sl-parser", daemon=True)
    thread.start()
    try:
        while True:
            raise_pending()  # a signal swallowed while the last item was used
            try:
                item = q.get(timeout=_WAKE)
            except queue.Empty:  # a slow input: a swallowed signal still ends the run
                continue
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()


# ---------------------------------------------------------------------------
# per-batch work shared by train and predict


class BatchChecks:
    """Malformed lines (reported with file:line), label conventions, predictions."""

    def __init__(self, console: Console, config: TrainConfig, strict: bool) -> None:
        self.console = console
        self.config = config
        self.strict = strict
        self.examples = 0
        """Usable rows seen (labeled or not): what :func:`no_examples` counts."""
        self.skipped = 0
        self.reasons: Counter[str] = Counter()
        self.first_errors: list[str] = []
        self.classification = config.loss_id in CLASSIFICATION and not config.oaa
        # --oaa K: labels are classes 1..K (--csoaa, --multilabel_oaa: read with their rows)
        self.classes = 0 if config.csoaa or config.multilabel else config.oaa
        self.zero_to_negative = self.classification and config.zero_label == "negative"
        """Labels 0 become -1 (sl's reading; VW's, ``zero_label="vw"``, keeps them)."""
        self.vw_labels = config.zero_label == "vw"
        """Labels read as VW reads them (``sl vw``): with ``--oaa K``, ``-1`` is no label."""
        self.reduction = None
        """The single-line reduction's own check of a batch (``mark_rows``: lines it cannot
        run made malformed, then counted and reported here), with its options."""
        if config.stack:
            from streamlearn.reductions import single_line

            named = single_line(config)
            if named is not None and hasattr(named[0], "mark_rows"):
                self.reduction = named

    def check(self, batch: Batch, n_bad: int | None = None) -> int:
        """Count, report and (``--strict``) refuse ``batch``'s malformed rows (``n_bad`` of
        them, when the caller has counted); fix or warn of labels as the loss reads them.
        Returns the number of malformed rows."""
        if self.classes:
            check_classes(batch, self.classes, self.vw_labels)  # may mark more rows
            n_bad = None
        if self.reduction is not None:
            module, opts = self.reduction
            module.mark_rows(batch, opts)  # may mark more rows
            n_bad = None
        if n_bad is None:
            n_bad = int(np.count_nonzero(batch.status))
        self.examples += batch.n - n_bad
        if n_bad:
            bad = np.flatnonzero(batch.status)
            self.skipped += int(bad.size)
            for i in bad:
                reason = REASONS.get(int(batch.status[i]), f"error {int(batch.status[i])}")
                self.reasons[reason] += 1
                if len(self.first_errors) < SHOWN_ERRORS:
                    where = f"{batch.block.source}:{int(batch.line[i])}"
                    msg = f"{where}: {reason}: {batch_cache.excerpt(batch, i)}"
                    self.first_errors.append(msg)
                    if self.strict:
                        raise MalformedData(msg + " (--strict: no model written)")
                    self.console.warn_once(msg, f"skipped {msg}")
        if self.config.multilabel and batch.labels.ndim == 2:
            _multilabel_beyond(batch, self.config.oaa, self.console)
        if getattr(batch, "n_touching_tags", 0) and _touching_tag_unlabeled(batch):
            self.console.warn_once(
                "tag",
                "a label touching '|' (e.g. '1|f a') is read as a tag, as VW does: "
                "that example has no label; put a space before '|' to make it a label",
            )
        if self.classification:
            self.labels(batch.labels)
        return n_bad

    def labels(self, labels: np.ndarray) -> None:
        """Fix or warn of classification labels as the loss reads them (label 0 read as -1
        where sl does so; labels that are not -1/+1)."""
        zero = labels == 0.0
        if zero.any() and self.zero_to_negative:
            labels[zero] = -1.0
            self.console.warn_once(
                "zero", f"{self.config.loss} loss needs labels -1/+1: label 0 read as -1 "
                "(--zero-label vw reads it as VW does)",
            )
        elif zero.any():
            meaning = ("halfway between -1 and +1: a target probability of 1/2"
                       if self.config.loss == "logistic" else "a loss of 1, never learned")
            self.console.warn_once(
                "zero", f"label 0 under {self.config.loss} loss is read as VW reads it: "
                f"{meaning} (--zero-label negative reads it as -1)",
            )  # fmt: skip
        odd = (labels != 1.0) & (labels != -1.0) & ~np.isnan(labels) & ~zero
        if not self.zero_to_negative and self.config.loss == "logistic":
            odd &= np.abs(labels) > 1.0  # VW's soft labels: a probability (y + 1) / 2
        if odd.any():
            v = labels[np.flatnonzero(odd)[0]]
            self.console.warn_once(
                "odd", f"label {v:g} is not -1 or +1 as {self.config.loss} loss expects"
            )

    def require_examples(self, allow_empty: bool, where: str) -> None:
        """At the end of the input: fail (:func:`no_examples`) when no row was usable."""
        if self.examples == 0 and not allow_empty:
            raise no_examples(where, self.skipped, self.first_errors)


def _multilabel_beyond(batch: Batch, k: int, console: Console) -> None:
    """Warn once of a usable line listing a class K or more (``--multilabel_oaa K``): VW
    learns it as no class ("won't work right"), and so does sl."""
    lab = batch.labels
    m = lab[:, 0].astype(np.int64)
    cols = np.arange(1, lab.shape[1])
    beyond = ((lab[:, 1:] >= k) & (cols[None, :] <= m[:, None])).any(axis=1) & (batch.status == 0)
    if beyond.any():
        i = int(np.flatnonzero(beyond)[0])
        console.warn_once(
            "multilabel", f"{batch.block.source}:{int(batch.line[i])}: a class of "
            f"--multilabel_oaa {k} is 0..{k - 1}: a larger one is learned as no class (as VW)")


def _touching_tag_unlabeled(batch: Batch) -> bool:
    """Whether the first line whose tag touches ``|`` was left without a label (``1|f a``);
    a tag touching ``|`` after a label (VW's ``0.5 1 tag|f a``) is no surprise."""
    rows = np.flatnonzero(batch.line == batch.first_touching_tag_line)
    # (a row of labels under --csoaa and --multilabel_oaa: unlabeled when none is set)
    return rows.size == 0 or bool(np.isnan(batch.labels[rows[0]]).all())


def input_names(sources: list[str]) -> str:
    """The inputs as messages name them (``-``, or none: standard input)."""
    return ", ".join("standard input" if s == "-" else s for s in sources or ["-"])


def no_examples(where: str, skipped: int, first_errors: list[str]) -> NoExamples:
    """The error of an input that yielded no usable example (exit 10).

    An empty input is what a failed producer looks like (``sl train <(zcat
    missing.gz)``: the shell does not pass on zcat's status), so a run over it
    writes nothing rather than replace a model with an empty one.
    """
    if skipped:
        first = f" (first: {first_errors[0]})" if first_errors else ""
        lines = "its only line is" if skipped == 1 else f"all {skipped} of its lines are"
        why = f"{lines} malformed{first}"
    else:
        why = "it is empty or holds only blank lines (did the command producing it fail?)"
    return NoExamples(
        f"no examples in {where}: {why}; nothing written (--allow-empty to accept an "
        "empty input)"
    )


LINKS = ("identity", "logistic", "glf1", "poisson")
"""VW's ``--link`` functions, applied to written predictions (the loss is the margin's)."""


def shown(preds: np.ndarray, link: str = "identity", binary: bool = False) -> np.ndarray:
    """Predictions as VW writes them: the link applied to the margin (``logistic``
    1/(1 + e^-p), ``glf1`` 2/(1 + e^-p) - 1, ``poisson`` e^p), then with ``binary``
    the sign (> 0: 1, else -1).

    >>> shown(np.array([0.0, 2.0]), "glf1", binary=True).tolist()
    [-1.0, 1.0]
    """
    p = preds
    if link == "logistic":
        p = 1.0 / (1.0 + np.exp(-p))
    elif link == "glf1":
        p = 2.0 / (1.0 + np.exp(-p)) - 1.0
    elif link == "poisson":
        p = np.exp(p)
    elif link != "identity":
        raise ValueError(f"unknown link {link!r}: one of {', '.join(LINKS)}")
    if binary:
        p = np.where(p > 0.0, 1.0, np.where(np.isnan(p), np.nan, -1.0))
    return p


def binary_mode(binary: bool, link: str) -> float:
    """The kernels' ``P_BINARY``: 0 off, 1 the sign of the margin, 2 always +1 (VW's
    --binary signs the linked prediction, always positive after logistic or poisson)."""
    if not binary:
        return 0.0
    return 2.0 if link in ("logistic", "poisson") else 1.0


class PredictionWriter:
    """``-p``: one line per input example line, written as each batch is scored.

    A usable example gets its prediction (and its tag, byte for byte); a
    malformed line gets ``nan`` (and its tag when it had one), so the
    predictions can be joined to the input lines.  Each batch's lines are
    flushed at once, so a reader of a live stream sees them promptly.  A file is written atomically
    (:class:`~streamlearn.system.outputs.Output`); when the reader of standard output
    or of a FIFO goes away, writing stops quietly and :attr:`broken` is set.

    Predictions are written as :func:`shown` makes them (``link``, ``binary``);
    ``raw``, VW's ``-r``, is a second file of the margins themselves.  ``vw``: every
    number as VW writes it (:mod:`streamlearn.run.vwformat`, ``sl vw``).
    """

    def __init__(self, path: str | None, link: str, binary: bool = False,
                 raw: str | None = None, probabilities: bool = False,
                 vw: bool = False, names: tuple[str, ...] = (),
                 multilabel: bool = False, scores: bool = False) -> None:  # fmt: skip
        self.multilabel = multilabel  # --multilabel_oaa: classes c1,c2 (preds 2K + 1 wide)
        self.names = names  # --named_labels: class c (1..K) is written as names[c - 1]
        self.link = link
        self.binary = binary
        self.probabilities = probabilities
        self.scores = scores  # VW's --scores (vw): each class's score on -p
        self.vw = vw
        self.path = path
        self.broken = False
        self.outs = []
        if path:
            self.outs.append((Output(path, "predictions"), True))
        if raw:
            self.outs.append((Output(raw, "raw predictions"), False))
        self.out = self.outs[0][0] if self.outs else None

    def write(self, batch: Batch, preds: np.ndarray, first: int | np.ndarray = 1,
              raw_first: int | np.ndarray | None = None,
              raw: np.ndarray | None = None, bounds: np.ndarray | None = None,
              lines: Callable | None = None) -> None:  # fmt: skip
        """``first``: with one-against-all, the number of the first class in each row's
        ``c:p`` texts (:meth:`ClassNumbering.after`); ``raw_first`` the same as each row
        was predicted (VW's ``-r``: :attr:`ClassNumbering.predicted`), ``first`` if None.
        ``bounds`` (``--bootstrap``, :func:`split_bounds`): VW writes ``-p`` as
        ``prediction [tag] lowest highest``; ``lines(batch, preds, bounds)``: a reduction's
        ``-p`` of its values (``--confidence``'s)."""
        if not self.outs or self.broken:
            return
        if self.vw and bounds is not None:
            out, transformed = self.outs[0]
            if transformed:
                shown = preds
                if self.binary:  # (NaN stays NaN: a skipped line)
                    shown = np.where(preds > 0, 1.0, np.where(preds <= 0, -1.0, preds))
                self._write(out, (lines or _bootstrap_lines)(batch, shown, bounds))
            return
        if self.multilabel:
            for out, transformed in self.outs:
                if transformed:  # (lines: --plt's, its labels in its order)
                    self._write(out, lines(batch, preds, self.probabilities) if lines else
                                _multilabel_lines(batch, preds, self.probabilities))
            return
        for out, transformed in self.outs:
            if self.vw and not transformed and preds.ndim == 2 and (self.probabilities
                                                                   or self.scores):
                continue  # VW's -r stays empty under --probabilities and --scores
            if not transformed and batch.labels.ndim == 2:  # --csoaa: the classes listed
                start = first if raw_first is None else raw_first
                self._write(out, _lines(batch, _cs_raw_texts(batch.labels, preds, start)))
                continue
            if self.vw:
                texts = self._vw_texts(
                    preds if transformed or raw is None else raw,
                    first if transformed or raw_first is None else raw_first, transformed
                )
            else:
                texts = self._texts(preds, first) if transformed else _raw_texts(preds, first)
            try:
                out.write(_lines(batch, texts))
                out.flush()
            except BrokenPipeError:
                self._lost_reader(out)
                return

    def write_bytes(self, data: bytes) -> None:
        """``data`` as it is to ``-p`` (a reduction's own lines: ``--top K``'s groups)."""
        if self.out is not None and not self.broken:
            self._write(self.out, data)

    def _write(self, out: Output, data: bytes) -> None:
        try:
            out.write(data)
            out.flush()
        except BrokenPipeError:
            self._lost_reader(out)

    def lines(self, batch: Batch, preds: np.ndarray, first: int | np.ndarray = 1) -> bytes:
        """The lines :meth:`write` writes to ``-p`` for ``batch`` (a server's answer:
        ``run/serve.py``), in VW's format when the writer is VW's."""
        return _lines(batch, self.texts(preds, first))

    def texts(self, preds: np.ndarray, first: int | np.ndarray = 1) -> list[str]:
        """Each row's prediction as :meth:`lines` writes it (without its tag)."""
        return self._vw_texts(preds, first, True) if self.vw else self._texts(preds, first)

    def _texts(self, preds: np.ndarray, first: int | np.ndarray) -> list[str]:
        """Each row's prediction as written: :func:`shown`'s number; with one-against-all
        (K + 1 columns) the class, or with ``--probabilities`` ``1:p1 2:p2 ...`` (as VW)."""
        if preds.ndim == 2:
            if self.names and not self.probabilities:
                return self._named(preds)
            if not self.probabilities:
                return [f"{v:.9g}" for v in preds[:, 0].tolist()]
            return _class_texts(preds[:, 1:], "g", first)
        return [f"{v:.9g}" for v in shown(preds, self.link, self.binary).tolist()]

    def _vw_texts(self, preds: np.ndarray, first: int | np.ndarray, transformed: bool) -> list[str]:
        """Each row's ``-p`` (``transformed``) or ``-r`` text as VW writes it."""
        from streamlearn.run import vwformat as f

        if preds.ndim == 2:
            if not transformed:
                return f.oaa_raw_texts(preds[:, 1:], first)
            if self.probabilities or self.scores:
                return f.labelled_texts(preds[:, 1:], first)
            if self.names:
                return self._named(preds, "")
            return f.class_texts(preds)
        if not transformed:
            return f.raw_texts(preds)
        return f.scalar_texts(preds, self.link, self.binary)

    def _named(self, preds: np.ndarray, none: str = "unknown") -> list[str]:
        """Each row's class by its name (``none`` for a class that has none: VW writes an
        empty line, sl ``unknown``; ``nan`` for a skipped line)."""
        k = len(self.names)
        return ["nan" if v != v else self.names[int(v) - 1] if 1 <= v <= k else none
                for v in preds[:, 0].tolist()]  # fmt: skip

    def _lost_reader(self, out: Output) -> None:
        self.broken = True
        if out.path in STDOUT:
            silence_stdout()

    def prepare(self) -> None:
        """Everything but :meth:`close`: the last lines flushed, a file fsynced."""
        if self.out is not None and not self.broken:
            try:
                self.out.prepare()
            except BrokenPipeError:
                self._lost_reader(self.out)

    def close(self) -> None:
        """Make the predictions visible (rename a file into place); see :meth:`abort`."""
        for out, _ in self.outs:
            if self.broken:
                return
            try:
                out.commit()
            except BrokenPipeError:
                self._lost_reader(out)

    def abort(self) -> None:
        """Drop the predictions of a failed run (an existing file is left as it was)."""
        for out, _ in self.outs:
            out.abort()


def class_names(config) -> tuple[str, ...]:  # noqa: ANN001 - a TrainConfig
    """``--named_labels``: the classes' names, for ``-p`` (none without it)."""
    if not config.named_labels:
        return ()
    from streamlearn.io.named import NamedLabels

    return NamedLabels.of(config.named_labels).names


def _raw_texts(preds: np.ndarray, first: int | np.ndarray = 1) -> list[str]:
    """VW's ``-r``: the margin; with one-against-all each class's score (``1:s1 2:s2 ...``)."""
    if preds.ndim == 2:
        return _class_texts(preds[:, 1:], ".9g", first)
    return [f"{v:.9g}" for v in preds.tolist()]


def _class_texts(scores: np.ndarray, fmt: str, first: int | np.ndarray) -> list[str]:
    k = scores.shape[1]
    starts = np.broadcast_to(first, scores.shape[:1]).tolist()
    return [" ".join(f"{c}:{p:{fmt}}" for c, p in zip(range(f, f + k), row, strict=True))
            for f, row in zip(starts, scores.tolist(), strict=True)]  # fmt: skip


class ClassNumbering:
    """``--oaa K``: whether the labels number the classes 0..K-1 or 1..K, as a learner's
    kernel decides it (VW's ``--indexing``; without it, at the first learned label 0 or K:
    :func:`streamlearn.learners.oaa.decided`), and what the run is told of it.

    ``params`` and ``stats`` are the run's (the kernel's); :meth:`after` is called after
    each kernel call over a batch.
    """

    def __init__(self, params: np.ndarray, stats: np.ndarray, console: Console,
                 vw_log: bool = False) -> None:  # fmt: skip
        self.params = params
        self.stats = stats
        self.console = console
        self.vw_log = vw_log  # (sl vw, not --quiet: VW's info line when a label decides)
        self.k = int(params[P_OAA])
        self.before = float(params[P_INDEXING])
        self.moved = float(stats[S_CLASS_MOVED])
        self.predicted: int | np.ndarray = 1
        """After :meth:`after`: each row's first class as it was predicted (the row that
        decided numbered as before it)."""
        self.said = False  # (VW's info line written where --audit's lines put it)
        self.decided_row = 0  # (--audit: the batch's row that decided, 1-based; 0: none)

    def decided_in(self, row: int) -> str:
        """``sl vw --audit`` runs the kernel one example at a time: after the call over the
        batch's row ``row``, VW's info line when that example decided (the line is then
        the auditor's to write, in its place among the audits), else "".  The row is kept
        as the batch's deciding row, for :meth:`after`."""
        if not self.params[P_INDEXING_AT]:
            return ""
        self.params[P_INDEXING_AT] = 0.0
        self.decided_row = row + 1
        if self.before != INDEXING_AUTO or not self.vw_log:
            return ""
        self.said = True
        return _info_line(self.k, float(self.params[P_INDEXING]))

    def audited(self) -> None:
        """After the auditor's calls over a batch: the deciding row as a call over the whole
        batch would have left it."""
        self.params[P_INDEXING_AT] = float(self.decided_row)
        self.decided_row = 0

    def after(self, batch: Batch) -> int | np.ndarray:
        """The number of the first class in each row's predictions (0 or 1): what VW writes
        before ``:p`` (the row that decided is numbered as it decided)."""
        was, now = self.before, float(self.params[P_INDEXING])
        self.before = now
        at = int(self.params[P_INDEXING_AT])
        k = self.k
        if at and was == INDEXING_AUTO and now != was and self.vw_log and not self.said:
            from streamlearn.run.vwconsole import vw_log

            vw_log(_info_line(k, now))
        self.said = False
        if at and now == 0.0:
            self.console.note_once(
                "indexing", f"{batch.block.source}:{int(batch.line[at - 1])}: label 0: the "
                f"labels number the classes 0..{k - 1} from here on, as VW reads them "
                "(--indexing 0 reads every line so)",
            )  # fmt: skip
        if (now == INDEXING_AUTO and self.params[P_LEARN] == 0.0 and batch.labels.ndim == 1
                and (batch.labels == 0.0).any()):  # (not a row of classes: --multilabel_oaa's)
            self.console.warn_once(
                "unlearned 0", f"{batch.block.source}: label 0 is no class 1..{k} when nothing "
                "is learned, as VW reads it (the first learned label 0 or K decides the "
                "classes): give --indexing 0 for labels 0..K-1",
            )  # fmt: skip
        moved = float(self.stats[S_CLASS_MOVED])
        if moved > self.moved:
            label, classes = (k, f"0..{k - 1}") if now == 0.0 else (0, f"1..{k}")
            self.console.warn_once(
                "moved", f"{batch.block.source}: a label that is not one of the classes "
                f"{classes} ({label}, or above {k}): every class learns -1 from it, as VW does "
                f"(--oaa {k} has {k} classes)",
            )  # fmt: skip
        self.moved = moved
        first = 0 if now == 0.0 else 1
        if not at or was == now:
            self.predicted = first
            return first
        numbers = np.full(batch.n, first)
        numbers[: at - 1] = 0 if was == 0.0 else 1
        self.predicted = numbers.copy()
        self.predicted[at - 1] = 0 if was == 0.0 else 1
        return numbers


def _info_line(k: int, indexing: float) -> str:
    """VW's info line when a label decides how the K classes are numbered."""
    label, base = (0, 0) if indexing == 0.0 else (k, 1)
    return f"[info] label {label} found -- labels are now considered {base}-indexed.\n"


def _cs_raw_texts(labels: np.ndarray, preds: np.ndarray, first: int | np.ndarray) -> list[str]:
    """VW's ``-r`` of ``--csoaa K``: ``class:score`` of each class the line lists, in its
    order (the score before clipping; an empty line for a line that lists none);
    ``first``: each row's first class number (0 or 1)."""
    from streamlearn.run.vwformat import general

    starts = np.broadcast_to(first, labels.shape[:1]).tolist()
    k = preds.shape[1] - 1
    texts = []
    for lab, row, f in zip(labels.tolist(), preds.tolist(), starts, strict=True):
        if row[0] != row[0]:
            texts.append("nan")
            continue
        parts = []
        for j in range(int(lab[0])):
            c = int(lab[1 + 2 * j])
            col = c - f
            parts.append(f"{c}:{general(row[1 + col]) if 0 <= col < k else 0}")
        texts.append(" ".join(parts))
    return texts


def _multilabel_lines(batch: Batch, preds: np.ndarray, probabilities: bool) -> bytes:
    """VW's ``-p`` of ``--multilabel_oaa K``: the classes predicted, ``c1,c2`` and a space;
    with ``--probabilities`` first a line of each class's probability (``0:p0 1:p1 ...``)."""
    from streamlearn.run.vwformat import general

    k = (preds.shape[1] - 1) // 2
    texts = []
    for row in preds.tolist():
        if row[0] != row[0]:
            texts.append(["nan"])
            continue
        classes = ",".join(str(c) for c in range(k) if row[1 + k + c] != 0.0) + " "
        if probabilities:
            texts.append([" ".join(f"{c}:{general(row[1 + c])}" for c in range(k)), classes])
        else:
            texts.append([classes])
    data = batch.block.data
    out = []
    for parts, a, b in zip(texts, batch.tag_start.tolist(), batch.tag_end.tolist(), strict=True):
        tag = b" " + data[a:b].tobytes() if b > a else b""
        out += [p.encode("ascii") + tag + b"\n" for p in parts]
    return b"".join(out)


def _bootstrap_lines(batch: Batch, preds: np.ndarray, bounds: np.ndarray) -> bytes:
    """VW's ``-p`` of ``--bootstrap``: the prediction, the tag, the lowest and highest
    copy's prediction (each as ``%f``, six decimals); under ``--binary`` the prediction is
    its sign (-1 for 0, as VW's ``binary`` above the bootstrap)."""
    data = batch.block.data
    lines = []
    rows = zip(preds.tolist(), (bounds + 0.0).tolist()[0], (bounds + 0.0).tolist()[1],
               batch.tag_start.tolist(), batch.tag_end.tolist(), strict=True)  # fmt: skip
    for v, lo, hi, a, b in rows:
        tag = b" " + data[a:b].tobytes() if b > a else b""
        lines.append(f"{v + 0.0:.6f}".encode("ascii") + tag
                     + f" {lo:.6f} {hi:.6f}\n".encode("ascii"))  # fmt: skip
    return b"".join(lines)


def _lines(batch: Batch, texts: list[str]) -> bytes:
    """One line per row: the prediction as written, and the tag when there is one
    (the tag's bytes as they were, UTF-8 or not)."""
    data = batch.block.data
    lines = []
    for v, a, b in zip(texts, batch.tag_start.tolist(), batch.tag_end.tolist(), strict=True):
        if b > a:
            lines.append(v.encode("ascii") + b" " + data[a:b].tobytes() + b"\n")
        else:
            lines.append(v.encode("ascii") + b"\n")
    return b"".join(lines)


def run_kernel(
    train_batch, table, gstate, params, loss_id: int, batch: Batch, stats, rows, width: int = 0,
    raw: bool = False, bounds: bool = False,
) -> np.ndarray:
    """One call of a learner's ``train_batch`` kernel over ``batch``; its predictions.

    ``batch`` is a :class:`Batch` or anything with its CSR and row arrays
    (the tests pass their random streams).  ``width`` > 0: the kernel writes that
    many columns per row (one-against-all: the class and the K scores).  ``raw``
    (one column): the predictions are followed by each row's score before clipping
    (VW's ``-r``; :func:`~streamlearn.learners.base.write_raw`), 2n values in all.
    ``bounds`` (``--bootstrap``): followed by each row's lowest and highest copy's
    prediction, 3n values in all (:func:`split_bounds`).
    """
    if bounds:
        preds = np.empty(3 * batch.n)
    elif width == 0:
        preds = np.empty(2 * batch.n) if raw else np.empty(batch.n)
    else:
        preds = np.empty((batch.n, width))
    args = (table, gstate, params, loss_id, batch.indptr, batch.indices, batch.values,
            batch.labels, batch.weights, batch.bases, batch.status, stats, rows, preds)  # fmt: skip
    if getattr(train_batch, "wants_ns", False):  # a reduction's entry reading namespaces
        args += (getattr(batch, "ns", None),)
    if getattr(train_batch, "wants_batch", False):  # one keeping its rows' tags (--ksvm)
        args += (batch,)
    if INTERPRETED:
        # interpreted (tiny inputs), numpy warns of an overflow as a compiled kernel does not:
        # the run reports a non-finite state itself (check_model), in one line; compiled,
        # the kernel never warns, and the context (0.7 µs) is a fifth of a one-line call's
        with np.errstate(all="ignore"):
            train_batch(*args)
    else:
        train_batch(*args)
    return preds


def split_bounds(preds: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """A ``--bootstrap`` kernel's 3n values: the n predictions and the (2, n) lowest and
    highest copies' predictions; other kernels' predictions as they are, and None."""
    if preds.ndim == 1 and preds.shape[0] == 3 * n and n > 0:
        return preds[:n], preds[n:].reshape(2, n)
    return preds, None
