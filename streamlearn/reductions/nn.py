"""A one-hidden-layer network, VW's ``--nn k`` with ``--inpass``, ``--dropout``,
``--meanfield`` and ``--multitask`` (:mod:`streamlearn.learners.nn` is its kernel), in the
single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the worked example):
its options are its own words in ``TrainConfig.stack``; its state beside gd's (the other
units' normalizer sums, VW's generator and the dropout one) lives in gd's global state,
which sl's model keeps (VW's keeps its generator as ``--random_seed``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import refuse_over_gd
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "nn"
"""Its name in VW's ``Enabled learners`` line (just above gd)."""
MOST = 4096
"""The most hidden units sl runs (each a model of gd's table)."""


@dataclass(frozen=True)
class Options:
    k: int
    inpass: bool = False
    dropout: bool = False
    multitask: bool = False
    meanfield: bool = False

    @property
    def width(self) -> int:
        """Slots per feature: k + 1 rounded up to a power of 2 (VW's feature width)."""
        from streamlearn.learners.oaa import stride

        return stride(self.k + 1)


FLAGS = ("--inpass", "--dropout", "--multitask", "--meanfield")


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no ``--nn``."""
    k = None
    it = iter(words)
    for w in it:
        if w == "--nn":
            k = next(it, "")
    if k is None:
        return None
    if not k.isdigit() or not 1 <= int(k) <= MOST:
        raise UsageError(f"--nn {k}: 1 to {MOST} hidden units")
    return Options(int(k), *(f in words for f in FLAGS))


def _nn(t: Command, name: str, value: str | None) -> None:
    t.learn["stack"] = (*t.learn.get("stack", ()), "--nn", value)


def _flag(t: Command, name: str, value: str | None) -> None:
    if f"--{name}" not in t.learn.get("stack", ()):
        t.learn["stack"] = (*t.learn.get("stack", ()), f"--{name}")


VW_OPTIONS = {
    "nn": VWOption(None, True, _nn),
    "inpass": VWOption(None, False, _flag),
    "dropout": VWOption(None, False, _flag),
    "multitask": VWOption(None, False, _flag),
    "meanfield": VWOption(None, False, _flag),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = (
    TrainOption(("--nn",), "nn", "A network of K hidden units over gd: tanh units, a "
                "linear output (VW's --nn).", kind="int", metavar="K", low=1, high=MOST),
    TrainOption(("--nn-inpass",), "nn_inpass",
                "--nn: the output layer sees the example's features too (VW's --inpass)."),
    TrainOption(("--nn-dropout",), "nn_dropout",
                "--nn: train with dropout of the hidden units (VW's --dropout)."),
)  # fmt: skip
"""``sl train``'s options of the reduction (:mod:`streamlearn.reductions.trainoptions`)."""


def train_words(values: dict) -> tuple[str, ...]:
    """The words of ``sl train``'s ``--nn`` values (VW's spelling)."""
    if not values.get("nn"):
        if values.get("nn_inpass") or values.get("nn_dropout"):
            raise UsageError("--nn-inpass and --nn-dropout are options of --nn")
        return ()
    return ("--nn", str(values["nn"]), *(("--inpass",) if values.get("nn_inpass") else ()),
            *(("--dropout",) if values.get("nn_dropout") else ()))  # fmt: skip


def settle(t: Command) -> None:
    """What ``--nn`` means with the rest of a VW command line (one line, exit 2)."""
    words = t.learn.get("stack", ())
    if "--nn" not in words:
        named = [f for f in FLAGS if f in words]
        if named:
            t.notes.append(f"{' '.join(named)}: options of --nn, ignored")
            t.learn["stack"] = tuple(w for w in words if w not in FLAGS)
        return
    try:
        opts = read(words)
    except UsageError as e:
        raise VWUsage(e.message) from None
    refuse(t.learn, t.outputs, opts)
    if t.raw_predictions:
        raise VWUsage("-r with --nn is not supported by sl (VW writes each unit's activation)")


def refuse(learn: dict, outputs: dict, opts: Options) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals, and --inpass
    without gd's adaptive or normalized rates."""
    refuse_over_gd(learn, outputs, "--nn", "VW audits each hidden unit")
    plain = learn.get("adaptive") is False and learn.get("normalized") is False
    if opts.inpass and plain:
        raise VWUsage("--inpass without --adaptive or --normalized is not supported by sl")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    """VW says its network's options on stdout (``[info] using dropout for neural network
    training``), not among its stderr lines."""
    return []


class Entry:
    """The kernel entry of one run: the units, VW's feature width and weight size, the
    flags (dropout, inpass)."""

    wants_ns = False

    def __init__(self, opts: Options, stride_shift: int, seed: int, constant: bool = True) -> None:
        from streamlearn.learners import nn

        flags = (nn.DROPOUT if opts.dropout and not opts.meanfield else 0) | (
            nn.INPASS if opts.inpass else 0) | (0 if constant else nn.NO_CONSTANT)  # fmt: skip
        self.k = opts.k
        self.conf = np.array([opts.k, opts.width, stride_shift, flags], dtype=np.int64)
        self.seed = seed

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        from streamlearn.learners import nn

        nn.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights,
                       bases, status, stats, rows, preds, self.conf)  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        from streamlearn.learners import nn

        return nn.init_gstate(self.k, params, self.seed)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd's table with the units' and the output layer's slots: the run's learner."""
    import dataclasses

    from streamlearn.learners import gd

    try:
        opts = read(config.stack)
        refuse(config.to_dict(), {}, opts)
    except VWUsage as e:
        raise UsageError(e.message) from None
    entry = Entry(opts, config.stride_shift, config.seed, config.constant)
    return dataclasses.replace(gd.SPEC, train_batch=entry, init_gstate=entry.init_gstate)
