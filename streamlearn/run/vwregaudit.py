"""``sl vw -i MODEL -d DATA --audit_regressor FILE``: a model's weights named by the data, as
VW's audit_regressor writes them.

VW's ``audit_regressor`` learns nothing and predicts nothing: for each example, in the
order VW walks its features (namespaces as they come, the constant, then the crosses), each
weight of the model that is not zero and not yet written is written to FILE as
``name:slot:weight`` (``ns^f``, ``f`` in the default namespace, ``Constant``, ``a^x*b^y``
for a cross; the weight as C++ writes a float, six significant digits), then counted and
set to 0, so that each weight is written once.  Under ``--csoaa K`` each class's weights
in turn, the class (0-based) first: ``c:name:slot:weight``; under ``--oaa`` only class 0's
(VW's reduction sits above oaa's classes and sees one), unprefixed.

VW's stderr has its usual header without ``Enabled learners``, then ``Regressor contains N
values`` (the model's non-zero weights), a table of its own (examples, weights written,
the percentage of N) at VW's ``-P`` schedule, and no summary; once every weight has been
written the table's last line says 100% and no more examples are read.  A run that did not
find them all ends with VW's ``Note: for some reason audit couldn't find ...`` line.

What VW's behaviour would cost a user is refused before any data: ``-f`` and the readable
models (VW saves the weights it has zeroed), ``-p``/``-r`` (VW's file stays empty), passes,
a cache read instead of the data.  ``--lda`` models, the single-line reductions and
``--multilabel_oaa`` are not done yet (:func:`refusal`).
"""

from __future__ import annotations

import numpy as np

from streamlearn.errors import UsageError
from streamlearn.run.vwaudit import Auditor
from streamlearn.system.outputs import Output

F32 = np.float32

WIDTHS = (8, 9, 12)
"""The table's columns (example counter, values audited, total progress): the first left-
aligned, the others right-aligned, one space between them (VW's ``format_row``)."""


def refusal(config, inputs, outputs) -> str | None:  # noqa: ANN001 - TrainConfig, Inputs, Outputs
    """Why ``--audit_regressor`` cannot run with these options (None: it can)."""
    c = config
    if (c.passes or 1) > 1:
        return "--passes > 1: VW's audit_regressor reads the data once"
    if getattr(inputs, "cache", None) and not getattr(inputs, "rebuild_cache", False):
        return ("a cache file: VW's audit_regressor reads the data itself (-k rewrites the "
                "cache)")  # fmt: skip
    if c.multilabel or (c.stack and not _weights_as_gd(c.stack)):
        return "a reduction over gd (--lrq, --nn, --multilabel_oaa, ...): not yet"
    if not getattr(inputs, "initial_model", None):
        return "no -i MODEL: it writes the weights of a model"
    for name, flag in (("final_model", "-f"), ("readable_model", "--readable_model"),
                       ("invert_hash", "--invert_hash")):  # fmt: skip
        if getattr(outputs, name, None):
            return f"{flag}: VW would save the weights it sets to 0 once written"
    for name, flag in (("predictions", "-p"), ("raw_predictions", "-r")):
        if getattr(outputs, name, None):
            return f"{flag}: it predicts nothing (VW's file stays empty)"
    if outputs.audit or outputs.print_examples:
        return "--audit or --print"
    return None


def _weights_as_gd(stack: tuple[str, ...]) -> bool:
    """Whether the reductions ``stack`` names keep gd's weights as gd (or ``--oaa``'s,
    ``--csoaa``'s) lays them out: ``--top``, the experience replays."""
    names = {w for w in stack if w.startswith("--")}
    return names <= {"--top", *(f"--replay_{lv}{c}" for lv in "bmc" for c in ("", "_count"))}


def row(cells: tuple[str, str, str]) -> str:
    """One line of the table (VW's ``format_row`` of three cells)."""
    first, *rest = cells
    return " ".join(
        [first.ljust(WIDTHS[0]), *(c.rjust(w) for c, w in zip(rest, WIDTHS[1:], strict=True))]
    )


HEADER = "\n".join([row(("example", "values", "total")), row(("counter", "audited", "progress"))])


def _number(x: float) -> str:
    """A float32 as C++'s ``ostream << float`` writes it (six significant digits)."""
    return format(float(F32(x)), "g")


class RegressorAudit:
    """The audit of the model in ``table`` (a run's learner table, read, never changed),
    written to ``path``; the table's lines with ``say``; ``progress``: the console's
    ``-P`` (:func:`streamlearn.run.console.progress_step`)."""

    def __init__(self, config, table: np.ndarray, path: str, say, progress: float) -> None:  # noqa: ANN001
        self.config = config
        self.weights = np.array(table[:, 0], dtype=F32)  # (a copy: written weights set to 0)
        self.loaded = int(np.count_nonzero(self.weights))
        if self.loaded == 0:
            raise UsageError("--audit_regressor: the model has no non-zero weights: nothing "
                             "to audit")  # fmt: skip
        self.say = say
        self.progress = progress
        self.mask = (1 << config.bits) - 1
        k = max(config.oaa, 1)  # (--oaa K and --csoaa K: config.oaa is K)
        self.step = 1 << (k - 1).bit_length() if k > 1 else 1
        # --csoaa: each class's weights, prefixed; --oaa: class 0's alone, as VW
        self.prefix = [f"{c}:" for c in range(k)] if config.csoaa and k > 1 else [""]
        self.names = Auditor(config, out=None)
        self.counter = 0
        self.audited = 0
        self.next_row = 1.0
        self.done = False
        self.broken = False  # (written to a pipe whose reader went away: nothing more)
        self.out = Output(path, "regressor audit")

    def header(self) -> str:
        """The lines after VW's header: the count of weights, the table's head."""
        return f"Regressor contains {self.loaded} values\n{HEADER}"

    def run(self, batch) -> None:  # noqa: ANN001 - an io.batch.Batch
        """The examples of ``batch``, until every weight has been written."""
        lines = batch.block.data.tobytes().split(b"\n")
        first = batch.block.first_line
        self.names.source = batch.block.source
        weights, step, mask = self.weights, self.step, self.mask
        for i in range(batch.n):
            if self.done:
                return
            if batch.status[i] != 0:
                continue
            lo, hi = int(batch.indptr[i]), int(batch.indptr[i + 1])
            names = self.names.names(lines[int(batch.line[i]) - first], hi - lo)
            slots = batch.indices[lo:hi].astype(np.int64)
            out = []
            for k, prefix in enumerate(self.prefix):
                for name, slot in zip(names, ((slots * step + k) & mask).tolist(), strict=True):
                    w = weights[slot]
                    if w != 0.0:
                        out.append(f"{prefix}{name or ''}:{slot}:{_number(w)}\n")
                        weights[slot] = 0.0
            self.audited += len(out)
            if out:
                try:
                    self.out.write("".join(out).encode("utf-8", "surrogateescape"))
                except BrokenPipeError:
                    self.broken = self.done = True
                    return
            self._count()

    def _count(self) -> None:
        """VW's print_update: a line at ``-P``'s schedule; done once all are written."""
        self.counter += 1
        printed = False
        if self.counter >= self.next_row:
            self.say(row((str(self.counter), str(self.audited),
                          f"{self.audited * 100 // self.loaded}%")))  # fmt: skip
            p = self.progress
            self.next_row = float(F32(self.counter * (p or 2.0))) if p >= 0 else self.counter - p
            printed = True
        if self.audited == self.loaded:
            if not printed:
                self.say(row((str(self.counter), str(self.audited), "100%")))
            self.done = True

    def finish(self) -> None:
        """The file made visible; VW's note when some weights were not found (or sl's,
        when the reader of a pipe went away: the run then exits 141)."""
        if self.broken:
            self.out.abort()
            self.say("note: the reader of the regressor audit went away; it stopped there")
            return
        self.out.commit()
        if self.audited < self.loaded:
            self.say("Note: for some reason audit couldn't find all regressor values in "
                     f"dataset ({self.audited} of {self.loaded} found).")  # fmt: skip

    def abort(self) -> None:
        self.out.abort()
