"""VW's ``--marginal NS``: id pairs replaced by their labels' running mean, with
``--compete``, ``--update_before_learn``, ``--unweighted_marginals``, ``--decay`` and the
initial numerator and denominator (:mod:`streamlearn.learners.marginal` is its kernel), in
the single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the worked
example).  Its options are its own words in ``TrainConfig.stack``; VW keeps ``--marginal``
with a model and none of the others (a model of ``--compete`` is read with ``--compete``
given again, as VW reads it).  Its state (the marginals, the experts) lives in gd's global
state, one entry per slot: the table's bits bound it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import (
    ignore_alone,
    over_gd,
    refuse_labels,
    refuse_over_gd,
    word,
)
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "marginal"
"""Its name in VW's ``Enabled learners`` line (just above gd)."""

FLAGS = ("--compete", "--update_before_learn", "--unweighted_marginals")
NUMBERS = {"--initial_numerator": 0.5, "--initial_denominator": 1.0, "--decay": 0.0}


@dataclass(frozen=True)
class Options:
    namespaces: str
    initial_numerator: float = 0.5
    initial_denominator: float = 1.0
    decay: float = 0.0
    compete: bool = False
    update_before_learn: bool = False
    unweighted: bool = False

    def ids(self) -> np.ndarray:
        """bool[256]: the namespace bytes whose features are id pairs."""
        out = np.zeros(256, dtype=np.bool_)
        for b in self.namespaces.encode("utf-8", "surrogateescape"):
            out[b] = True
        return out

    def conf(self, bits: int) -> np.ndarray:
        """The kernel's options (:data:`streamlearn.learners.marginal.C_NUM0` ...)."""
        f32 = np.float32
        return np.array([f32(self.initial_numerator), f32(self.initial_denominator),
                         f32(self.decay), self.update_before_learn, self.unweighted, self.compete,
                         1 << bits], dtype=np.float64)  # fmt: skip


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no ``--marginal``."""
    if "--marginal" not in words:
        return None
    values: dict[str, str] = {}
    it = iter(words)
    for w in it:
        if w == "--marginal" or w in NUMBERS:
            values[w] = next(it, "")
    ns = values["--marginal"]
    if ":" in ns:
        raise UsageError("--marginal: cannot use wildcard with marginal (as VW)")
    numbers = {}
    for name, default in NUMBERS.items():
        text = values.get(name)
        try:
            numbers[name] = default if text is None else float(text)
        except ValueError:
            raise UsageError(f"{name} {text}: a number is expected") from None
    return Options(ns, numbers["--initial_numerator"], numbers["--initial_denominator"],
                   numbers["--decay"], "--compete" in words, "--update_before_learn" in words,
                   "--unweighted_marginals" in words)  # fmt: skip


VW_OPTIONS = {
    "marginal": VWOption(None, True, word("marginal", True)),
    "initial_numerator": VWOption(None, True, word("initial_numerator", True)),
    "initial_denominator": VWOption(None, True, word("initial_denominator", True)),
    "decay": VWOption(None, True, word("decay", True)),
    "compete": VWOption(None, False, word("compete", False)),
    "update_before_learn": VWOption(None, False, word("update_before_learn", False)),
    "unweighted_marginals": VWOption(None, False, word("unweighted_marginals", False)),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--marginal`` means with the rest of a VW command line (one line, exit 2): its
    other options alone are ignored, as VW ignores them."""
    if not ignore_alone(t, "--marginal", FLAGS, tuple(NUMBERS)):
        return
    try:
        read(t.learn["stack"])
    except UsageError as e:
        raise VWUsage(e.message) from None
    refuse(t.learn, t.outputs)


def refuse(learn: dict, outputs: dict) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals, and what the
    replaced features cannot be: crossed, made into n-grams, read as other labels."""
    refuse_over_gd(learn, outputs, "--marginal", "VW names the replaced features")
    for key in ("quadratic", "cubic", "interactions", "ngram", "affix"):
        if learn.get(key):
            raise VWUsage(f"--marginal with --{key} is not supported by sl")
    refuse_labels(learn, "--marginal")
    if learn.get("format") in ("svmlight", "csv"):
        raise VWUsage("--marginal reads namespaces: VW text or JSON")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


class Entry:
    """The kernel entry of one run: the options, the id namespaces, scratch for one row."""

    wants_ns = True

    def __init__(self, opts: Options, bits: int) -> None:
        self.opts = opts
        self.bits = bits
        self.conf = opts.conf(bits)
        self.ids = opts.ids()
        self.room = 0
        self.scratch: tuple = ()

    def _scratch(self, indices: np.ndarray, values: np.ndarray, need: int) -> tuple:
        if need > self.room:
            self.room = max(need, 2 * self.room, 64)
            self.scratch = (np.empty(self.room, dtype=indices.dtype),
                            np.empty(self.room, dtype=values.dtype),
                            np.empty(self.room, dtype=np.uint8),
                            np.empty(self.room, dtype=np.int64), np.empty(self.room))  # fmt: skip
        return self.scratch

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds, ns):  # fmt: skip
        from streamlearn.learners import marginal

        if ns is None:  # (every feature in the default namespace)
            ns = np.full(indices.shape[0], 32, dtype=np.uint8)
        widest = int(np.diff(indptr).max(initial=0))
        out_idx, out_val, out_ns, keys, pred = self._scratch(indices, values, widest)
        marginal.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                             weights, bases, status, stats, rows, preds, ns, self.conf, self.ids,
                             out_idx, out_val, out_ns, keys, pred)  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        from streamlearn.learners import marginal
        from streamlearn.system.memory import refuse_above

        size = marginal.state_size(self.bits, self.opts.compete)
        refuse_above(8 * size, f"--marginal's state ({size:,} numbers: an entry per slot)",
                     "lower -b")  # fmt: skip
        return marginal.init_gstate(params, self.bits, self.opts.compete)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd over the replaced features: the run's learner."""
    return over_gd(config, read, refuse, lambda o: Entry(o, config.bits),
                   init_gstate="init_gstate")
