"""Low-rank quadratics, VW's ``--lrq abk`` and ``--lrqdropout``: the single-line reduction
in the reductions' shape (the worked example for the others).

What it owns, all here:

* **its options**: :class:`Options`, read from the words it keeps in a run's configuration
  (``TrainConfig.stack``: ``("--lrq", "ab3", "--lrqdropout")``, as VW keeps them in a
  model's options) by :func:`read`; sl's and VW's model files keep those words, so a model
  carries its reduction's options and nothing else of it;
* **its VW options** (:data:`VW_OPTIONS`, :func:`settle`: what VW's command line says of it,
  and what it refuses, in one line before any data is read) and sl's (``sl train --lrq``,
  the same words);
* **its learner**: :func:`spec`, gd's table, state and name (a model of it is a gd model
  whose options name ``--lrq``) with its own kernel entry (:mod:`streamlearn.learners.lrq`),
  which asks for the batch's namespace bytes;
* **its outputs**: VW's header line and its name in VW's stack (:data:`HEADER`, :data:`NAME`);
  ``-p``, ``-r`` and the progress table are gd's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import refuse_over_gd
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "lrq"
"""Its name in VW's ``Enabled learners`` line (just above gd)."""

SEED_MIX = 8675309
"""VW seeds the dropout draws with ``random_seed | 8675309``."""


@dataclass(frozen=True)
class Options:
    """``--lrq`` pairs (VW's: a set, so sorted and each once) and ``--lrqdropout``."""

    pairs: tuple[str, ...]
    dropout: bool = False

    @property
    def width(self) -> int:
        """Slots per feature: 1 + the largest rank, rounded up to a power of 2 (VW's)."""
        from streamlearn.learners.oaa import stride

        return stride(1 + max((int(p[2:]) for p in self.pairs), default=0))

    def table(self) -> np.ndarray:
        """int64[p, 5]: each pair's (first namespace byte, second byte, rank, 0, 0): the
        kernel's pairs (:mod:`streamlearn.learners.lrq`)."""
        return np.array([(ord(p[0]), ord(p[1]), int(p[2:]), 0, 0) for p in self.pairs],
                        dtype=np.int64).reshape(-1, 5)  # fmt: skip


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when it names no ``--lrq``."""
    pairs, dropout = [], False
    it = iter(words)
    for w in it:
        if w == "--lrq":
            pairs.append(next(it, ""))
        elif w == "--lrqdropout":
            dropout = True
    if not pairs:
        return None
    for p in pairs:
        check_pair(p, "--lrq")
    return Options(tuple(sorted(set(pairs))), dropout)


def check_pair(p: str, flag: str, error: type[UsageError] = UsageError) -> None:
    """VW's rule for a pair: two namespaces and a rank (``ab3``); no wildcard."""
    if ":" in p:
        raise error(f"{flag} {p}: --lrq does not support wildcards ':' (as VW)")
    if len(p) < 3 or not p[2:].isdigit() or any(ord(c) > 127 for c in p[:2]):
        raise error(f"{flag} {p}: low-rank quadratic features must involve two sets and a "
                      "rank (ab3: namespaces a and b, rank 3)")  # fmt: skip
    if int(p[2:]) > 255:
        raise error(f"{flag} {p}: a rank above 255 is not supported by sl")


def _lrq(t: Command, name: str, value: str | None) -> None:
    check_pair(value or "", "--lrq", VWUsage)
    t.learn["stack"] = (*t.learn.get("stack", ()), "--lrq", value)


def _dropout(t: Command, name: str, value: str | None) -> None:
    if "--lrqdropout" not in t.learn.get("stack", ()):
        t.learn["stack"] = (*t.learn.get("stack", ()), "--lrqdropout")


VW_OPTIONS = {
    "lrq": VWOption(None, True, _lrq, repeatable=True),
    "lrqdropout": VWOption(None, False, _dropout),
}
"""VW's options of the reduction (:mod:`streamlearn.reductions.vwoptions`)."""

TRAIN_OPTIONS = (
    TrainOption(("--lrq",), "lrq", "Low-rank quadratic features between namespaces A and B, "
                "rank K (VW's --lrq ab3: a factorization machine over gd; repeatable).",
                kind="str", multiple=True, metavar="ABK"),
    TrainOption(("--lrqdropout",), "lrqdropout",
                "--lrq: dropout training of the latent products (VW's)."),
)  # fmt: skip
"""``sl train``'s options of the reduction (:mod:`streamlearn.reductions.trainoptions`)."""


def train_words(values: dict) -> tuple[str, ...]:
    """The words of ``sl train``'s ``--lrq``/``--lrqdropout`` values (VW's spelling)."""
    if not values.get("lrq"):
        if values.get("lrqdropout"):
            raise UsageError("--lrqdropout is an option of --lrq")
        return ()
    for p in values["lrq"]:
        check_pair(p, "--lrq")
    return (*(w for p in values["lrq"] for w in ("--lrq", p)),
            *(("--lrqdropout",) if values.get("lrqdropout") else ()))  # fmt: skip

def settle(t: Command) -> None:
    """What ``--lrq`` refuses with the rest of a VW command line (one line, exit 2)."""
    words = t.learn.get("stack", ())
    if "--lrq" not in words:
        if "--lrqdropout" in words:
            t.notes.append("--lrqdropout is an option of --lrq: ignored")
            t.learn["stack"] = tuple(w for w in words if w != "--lrqdropout")
        return
    refuse(t.learn, t.outputs, "--lrq")


def refuse(learn: dict, outputs: dict, flag: str) -> None:
    """Refuse what sl's ``flag`` (``--lrq``, ``--lrqfa``) does not run with, one line each:
    :func:`~streamlearn.reductions.singleline.refuse_over_gd`'s, and crosses."""
    refuse_over_gd(learn, outputs, flag, "VW names each latent product")
    for key in ("quadratic", "cubic", "interactions"):
        if learn.get(key):
            raise VWUsage(f"{flag} with -q, --cubic or --interactions is not supported by sl "
                          "(VW crosses the latent products too)")  # fmt: skip


HEADER = "creating low rank quadratic features for pairs: "


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    """VW's line on stderr when it sets the reduction up (its trailing space included)."""
    return [HEADER + ("(using dropout) " if opts.dropout else "")
            + "".join(p + " " for p in opts.pairs)]  # fmt: skip


LIMIT = 1 << 25
"""The most latent products one example may make (the crosses' default ``--max-crosses``,
``io.interactions.MAX_CROSSES``, not imported: reading a command line loads no parser): a
wider line is malformed (``TOO_MANY_CROSSES``), reported with its ``file:line``, not learned."""


def products(indptr: np.ndarray, ns: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Each row's latent products: Σ over the pairs of k·|a|·|b| (int64[rows])."""
    n = indptr.shape[0] - 1
    row = np.repeat(np.arange(n), np.diff(indptr))
    total = np.zeros(n, dtype=np.int64)
    for a, b, k, _, _ in pairs.tolist():
        ca = np.bincount(row[ns == a], minlength=n)
        cb = ca if a == b else np.bincount(row[ns == b], minlength=n)
        total += k * ca * cb
    return total


def mark_wide(indptr, ns, pairs, status, labels, weights, limit: int = LIMIT) -> int:  # noqa: ANN001
    """Make the rows with more than ``limit`` latent products malformed (as the crosses' rows
    past ``--max-crosses``: status, label NaN, weight 0); the most products a row left makes
    (the kernel's buffers)."""
    from streamlearn.io.batch import TOO_MANY_CROSSES
    from streamlearn.learners import lrq

    most = int(lrq.room(indptr, ns, pairs))
    if most <= limit:
        return most
    per_row = products(indptr, ns, pairs)
    wide = per_row > limit
    status[wide & (status == 0)] = TOO_MANY_CROSSES
    labels[wide] = np.nan
    weights[wide] = 0.0
    return int(per_row[~wide].max(initial=0))


def namespaces(batch) -> np.ndarray:  # noqa: ANN001 - an io.batch.Batch
    """Each entry's namespace byte (svmlight's: the default namespace's)."""
    if batch.ns is not None:
        return batch.ns
    return np.full(batch.indices.shape[0], 32, dtype=np.uint8)


def mark_rows(batch, opts: Options) -> None:  # noqa: ANN001 - an io.batch.Batch
    """The run's batch check (``run/runner.py: BatchChecks``): a line too wide for the
    latent products is malformed before it is counted and reported (:func:`mark_wide`)."""
    mark_wide(batch.indptr, namespaces(batch), opts.table(), batch.status, batch.labels,
              batch.weights)  # fmt: skip


class Entry:
    """The kernel entry of one run (:mod:`streamlearn.learners.lrq`, for ``--lrq`` and
    ``--lrqfa``): its pairs, slots per feature, the dropout generator's state."""

    wants_ns = True

    def __init__(self, pairs: np.ndarray, width: int, stride_shift: int, dropout: bool,
                 seed: int, fa: bool = False) -> None:  # fmt: skip
        self.pairs = pairs
        self.conf = np.array([width, stride_shift, int(dropout), 0, int(fa)], dtype=np.int64)
        self.seed = np.array([(seed & (2**64 - 1)) | SEED_MIX], dtype=np.uint64)
        self.started = False

    def end_pass(self) -> None:
        """A pass's end (the single-line driver's call, ``run/online.py``): VW counts it as
        an example, and its counter picks the pairs' sides.  (Not ``LearnerSpec.finish``,
        which a resident learner runs after every call.)"""
        self.conf[3] += 1

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds, ns):  # fmt: skip
        from streamlearn.learners import lrq

        if not self.started:  # VW counts from 0 in each run (sl's count may go on)
            self.started = True
            self.conf[3] -= int(stats[0])
        if ns is None:  # (svmlight: every feature in the default namespace)
            ns = np.full(indices.shape[0], 32, dtype=np.uint8)
        # (a run's batch checks marked the wide rows already, and reported them: here the
        # API's and the server's calls, whose callers report what was marked)
        pushed = mark_wide(indptr, ns, self.pairs, status, labels, weights)
        lrq.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                        weights, bases, status, stats, rows, preds, ns, self.pairs, self.conf,
                        self.seed, pushed)  # fmt: skip

    def spec(self):  # noqa: ANN201 - a LearnerSpec
        """gd's table, state and name (a model of it is a gd model whose options name the
        reduction), with this entry."""
        import dataclasses

        from streamlearn.learners import gd

        return dataclasses.replace(gd.SPEC, train_batch=self)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd with the latent products: the run's learner."""
    try:
        opts = read(config.stack)
        refuse(config.to_dict(), {}, "--lrq")
    except VWUsage as e:  # (sl train's, the API's: not a VW command line's)
        raise UsageError(e.message) from None
    return Entry(opts.table(), opts.width, config.stride_shift, opts.dropout,
                 config.seed).spec()  # fmt: skip
