"""Field-aware low-rank quadratics, VW's ``--lrqfa abck``: every two of the namespaces
(fields) ``abc`` interact through rank-k latent weights that a feature keeps for each field
it meets (a field-aware factorization machine, over gd).

The reduction's shape is :mod:`streamlearn.reductions.lrq`'s (its options as its own words in
``TrainConfig.stack``, its VW options and refusals, its name in VW's stack); the kernel is
:mod:`streamlearn.learners.lrq`'s, with its pairs and slots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions import lrq
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "lrqfa"
"""Its name in VW's ``Enabled learners`` line (just above gd)."""


@dataclass(frozen=True)
class Options:
    """The fields (namespace characters, in the order given) and the rank."""

    fields: str
    k: int

    @property
    def width(self) -> int:
        """Slots per feature: 1 + fields·k, rounded up to a power of 2 (VW's)."""
        from streamlearn.learners.oaa import stride

        return stride(1 + len(self.fields) * self.k)

    def table(self) -> np.ndarray:
        """The kernel's pairs: every two fields in VW's order, with their field numbers
        (a character given twice is numbered by its last place, as VW)."""
        number = {c: i for i, c in enumerate(self.fields)}
        f = self.fields
        rows = [(ord(f[a]), ord(f[b]), self.k, number[f[a]], number[f[b]])
                for a in range(len(f)) for b in range(a + 1, len(f))]  # fmt: skip
        return np.array(rows, dtype=np.int64).reshape(-1, 5)


def parse(text: str, error: type[UsageError] = UsageError) -> Options:
    """``abc2`` as VW reads it: the fields, then the rank (the trailing digits)."""
    if ":" in text:
        raise error(f"--lrqfa {text}: --lrqfa does not support wildcards ':' (as VW)")
    fields = text.rstrip("0123456789")
    digits = text[len(fields):]
    if not fields or not digits or any(ord(c) > 127 for c in fields):
        raise error(f"--lrqfa {text}: fields and a rank are expected (abc2: namespaces a, b "
                    "and c, rank 2)")  # fmt: skip
    if int(digits) > 255:
        raise error(f"--lrqfa {text}: a rank above 255 is not supported by sl")
    return Options(fields, int(digits))


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no ``--lrqfa``."""
    it = iter(words)
    found = None
    for w in it:
        if w == "--lrqfa":
            found = parse(next(it, ""))
    return found


def _lrqfa(t: Command, name: str, value: str | None) -> None:
    parse(value or "", VWUsage)
    t.learn["stack"] = (*t.learn.get("stack", ()), "--lrqfa", value)


VW_OPTIONS = {"lrqfa": VWOption(None, True, _lrqfa)}
"""VW's option of the reduction (given twice with two values: VW's "Disagreeing option")."""

TRAIN_OPTIONS = (
    TrainOption(("--lrqfa",), "lrqfa", "Field-aware low-rank quadratics: every two of the "
                "namespaces ABC interact with rank K latent weights per field (VW's --lrqfa "
                "abc2: a field-aware factorization machine over gd).", kind="str",
                metavar="ABCK"),
)  # fmt: skip
"""``sl train``'s option of the reduction (:mod:`streamlearn.reductions.trainoptions`)."""


def train_words(values: dict) -> tuple[str, ...]:
    """The words of ``sl train --lrqfa``'s value (VW's spelling)."""
    if not values.get("lrqfa"):
        return ()
    parse(values["lrqfa"])
    return ("--lrqfa", values["lrqfa"])


def settle(t: Command) -> None:
    """What ``--lrqfa`` refuses with the rest of a VW command line (one line, exit 2)."""
    if "--lrqfa" in t.learn.get("stack", ()):
        lrq.refuse(t.learn, t.outputs, "--lrqfa")


def mark_rows(batch, opts: Options) -> None:  # noqa: ANN001 - an io.batch.Batch
    """The run's batch check: :func:`streamlearn.reductions.lrq.mark_rows`'s, its pairs."""
    lrq.mark_wide(batch.indptr, lrq.namespaces(batch), opts.table(), batch.status, batch.labels,
                  batch.weights)  # fmt: skip


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    """VW writes no line of its own when it sets the reduction up."""
    return []


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd with the field-aware latent products: the run's learner."""
    try:
        opts = read(config.stack)
        lrq.refuse(config.to_dict(), {}, "--lrqfa")
    except VWUsage as e:
        raise UsageError(e.message) from None
    return lrq.Entry(opts.table(), opts.width, config.stride_shift, False, config.seed,
                     fa=True).spec()  # fmt: skip
