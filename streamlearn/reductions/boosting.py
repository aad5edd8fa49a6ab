"""Online boosting, VW's ``--boosting N`` with ``--alg BBM|logistic|adaptive`` and
``--gamma`` (:mod:`streamlearn.learners.boosting` is its kernel), in the single-line
reductions' shape (:mod:`streamlearn.reductions.lrq` is the worked example): its options
are its own words in ``TrainConfig.stack``, its state (α, v, each learner's normalizer sums)
lives in gd's global state, which sl's model keeps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import checked, configured, refuse_over_gd
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "boosting"
"""Its name in VW's ``Enabled learners`` line, with ``-logistic`` or ``-adaptive`` for those
algorithms (:func:`stack_name`)."""
ABOVE_SCORER = True
"""VW stacks it above its scorer (``gd, scorer-identity, boosting, count_label``)."""


@dataclass(frozen=True)
class Options:
    n: int
    alg: str = "BBM"
    gamma: float = 0.1


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no boosting."""
    found: dict = {}
    it = iter(words)
    for w in it:
        if w in ("--boosting", "--alg", "--gamma"):
            found[w[2:]] = next(it, "")
    if "boosting" not in found:
        return None
    try:
        n = int(found["boosting"])
        gamma = float(found.get("gamma", "0.1"))
    except ValueError:
        raise UsageError(f"--boosting {found['boosting']}: a count of weak learners and a "
                         "number for --gamma are expected") from None  # fmt: skip
    alg = found.get("alg", "BBM")
    if n < 1 or n > 1024:
        raise UsageError(f"--boosting {n}: 1 to 1024 weak learners")
    if alg not in ("BBM", "logistic", "adaptive"):
        raise UsageError(f"--alg {alg}: BBM, logistic or adaptive")
    return Options(n, alg, gamma)


def _word(name: str):  # noqa: ANN202
    def apply(t: Command, _: str, value: str | None) -> None:
        t.learn["stack"] = (*t.learn.get("stack", ()), f"--{name}", value)

    return apply


VW_OPTIONS = {
    "boosting": VWOption(None, True, _word("boosting")),
    "alg": VWOption(None, True, _word("alg")),
    "gamma": VWOption(None, True, _word("gamma")),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = (
    TrainOption(("--boosting",), "boosting", "Online boosting of N gd learners (VW's "
                "--boosting; Beygelzimer, Kale & Luo 2015).", kind="int", metavar="N", low=1,
                high=1024),
    TrainOption(("--boost-alg",), "boost_alg", "--boosting: boost-by-majority [default], "
                "AdaBoost.OL.W (logistic) or AdaBoost.OL (adaptive).", kind="choice",
                choices=("BBM", "logistic", "adaptive")),
    TrainOption(("--boost-gamma",), "boost_gamma", "--boosting BBM: the weak learners' edge "
                "[default: 0.1].", kind="float"),
)  # fmt: skip
"""``sl train``'s options of the reduction (:mod:`streamlearn.reductions.trainoptions`)."""


def train_words(values: dict) -> tuple[str, ...]:
    """The words of ``sl train``'s ``--boosting`` values (VW's spelling)."""
    if not values.get("boosting"):
        if values.get("boost_alg") or values.get("boost_gamma") is not None:
            raise UsageError("--boost-alg and --boost-gamma are options of --boosting")
        return ()
    words: tuple[str, ...] = ("--boosting", str(values["boosting"]))
    if values.get("boost_alg"):
        words += ("--alg", values["boost_alg"])
    if values.get("boost_gamma") is not None:
        words += ("--gamma", repr(values["boost_gamma"]))
    return words

def settle(t: Command) -> None:
    """What ``--boosting`` means with the rest of a VW command line (one line, exit 2)."""
    words = t.learn.get("stack", ())
    if "--boosting" not in words:
        if "--alg" in words or "--gamma" in words:
            t.notes.append("--alg and --gamma are options of --boosting: ignored")
            keep, it = [], iter(words)
            for w in it:
                if w in ("--alg", "--gamma"):
                    next(it, None)
                else:
                    keep.append(w)
            t.learn["stack"] = tuple(keep)
        return
    checked(t, read, refuse)
    if t.link != "identity":
        raise VWUsage(f"--link {t.link} with --boosting is not supported by sl (VW links each "
                      "weak learner's prediction)")  # fmt: skip


def refuse(learn: dict, outputs: dict) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals, and l1/l2."""
    refuse_over_gd(learn, outputs, "--boosting", "VW audits each weak learner")
    if learn.get("l1") or learn.get("l2"):
        raise VWUsage("--boosting with --l1 or --l2 is not supported by sl")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    """VW says its boosting's numbers on stdout (``[info]``), not among its stderr lines."""
    return []


def stack_name(opts: Options) -> str:
    return NAME if opts.alg == "BBM" else f"{NAME}-{opts.alg}"


class Entry:
    """The kernel entry of one run: the learners and the run's learned count (VW's ``t``, not
    kept in a model); VW's generator lives in the global state (``--random_seed``'s)."""

    wants_ns = False

    def __init__(self, opts: Options, seed: int) -> None:
        from streamlearn.learners import boosting

        self.n = opts.n
        self.conf = np.array([opts.n, boosting.ALGORITHMS.index(opts.alg), 0], dtype=np.int64)
        self.gamma = np.array([opts.gamma])
        self.seed = seed
        self.binom = boosting.binomials(opts.n)

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        from streamlearn.learners import boosting

        boosting.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                             weights, bases, status, stats, rows, preds, self.conf, self.gamma,
                             self.binom)  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        from streamlearn.learners import boosting

        return boosting.init_gstate(self.n, params, self.seed)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd's table with N weak learners' slots: the run's learner."""
    import dataclasses

    from streamlearn.learners import gd

    opts = configured(config, read, refuse)
    entry = Entry(opts, config.seed)
    return dataclasses.replace(gd.SPEC, train_batch=entry, init_gstate=entry.init_gstate)
