"""The online bootstrap, VW's ``--bootstrap K`` with ``--bs_type mean|vote``: K copies of gd
in one table learning Poisson(1)-resampled importances (:mod:`streamlearn.learners.bootstrap`
is its kernel and says how), in the single-line reductions' shape
(:mod:`streamlearn.reductions.lrq` is the worked example): its options are its own words in
``TrainConfig.stack`` (``("--bootstrap", "4", "--bs_type", "vote")``); its state beside
gd's (each copy's normalizer sums, VW's generator) lives in gd's global state, which both
model files keep (:func:`streamlearn.learners.stacked.kept`); its ``-p`` lines (the
prediction and the copies' range) are written from the kernel's 3 values a row
(``singleline.Filled``'s ``bounds``).

One of the older reductions moved into the shape (it was ``TrainConfig.bootstrap`` and
``bs_type``): sl's models written before keep them in their options, which
:meth:`streamlearn.config.TrainConfig.from_dict` reads as these words.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import Filled, checked, configured
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption, count

NAME = "bootstrap"
"""Its name in VW's ``Enabled learners`` line (above the scorer)."""
ABOVE_SCORER = True
MOST = 1024
"""The most copies sl runs (each a model of gd's table)."""


@dataclass(frozen=True)
class Options:
    k: int
    vote: bool = False


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no bootstrap."""
    found: dict = {}
    it = iter(words)
    for w in it:
        if w in ("--bootstrap", "--bs_type"):
            found[w[2:]] = next(it, "")
    if "bootstrap" not in found:
        return None
    try:
        k = int(found["bootstrap"])
    except ValueError:
        raise UsageError(f"--bootstrap {found['bootstrap']}: a count of copies is "
                         "expected") from None  # fmt: skip
    if k < 1 or k > MOST:
        raise UsageError(f"--bootstrap K needs 1 to {MOST} copies, got {k}")
    kind = found.get("bs_type", "mean")
    if kind not in ("mean", "vote"):
        raise UsageError(f"--bs_type {kind}: mean or vote")
    return Options(k, kind == "vote")


def _bootstrap(t: Command, name: str, value: str | None) -> None:
    count(name, value, "--bootstrap", "the bootstrap needs at least one copy")
    t.learn["stack"] = (*t.learn.get("stack", ()), "--bootstrap", value)


def _bs_type(t: Command, _: str, value: str | None) -> None:
    if value not in ("mean", "vote"):
        raise VWUsage(f"--bs_type {value}: mean or vote")
    t.learn["stack"] = (*t.learn.get("stack", ()), "--bs_type", value)


VW_OPTIONS = {
    "bootstrap": VWOption(None, True, _bootstrap),
    "bs_type": VWOption(None, True, _bs_type),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = (
    TrainOption(("--bootstrap",), "bootstrap", "Online bootstrap: K copies of gd, each "
                "learning Poisson(1)-resampled importances; the prediction is their mean or "
                "vote (VW's --bootstrap).", kind="int", metavar="K", low=1, high=MOST),
    TrainOption(("--bs-type",), "bs_type", "--bootstrap: the copies' predictions combined "
                "by their mean [default] or majority vote (VW's --bs_type).", kind="choice",
                choices=("mean", "vote")),
)  # fmt: skip
"""``sl train``'s options of the reduction (:mod:`streamlearn.reductions.trainoptions`)."""


def train_words(values: dict) -> tuple[str, ...]:
    """The words of ``sl train --bootstrap K [--bs-type vote]`` (VW's spelling)."""
    if not values.get("bootstrap"):
        if values.get("bs_type"):
            raise UsageError("--bs-type is an option of --bootstrap")
        return ()
    words: tuple[str, ...] = ("--bootstrap", str(values["bootstrap"]))
    if values.get("bs_type"):
        words += ("--bs_type", values["bs_type"])
    return words


def settle(t: Command) -> None:
    """What ``--bootstrap`` means with the rest of a VW command line (one line, exit 2)."""
    words = t.learn.get("stack", ())
    if "--bootstrap" not in words:
        if "--bs_type" in words:  # (VW reads it only with --bootstrap)
            t.notes.append("--bs_type is an option of --bootstrap: ignored")
            at = words.index("--bs_type")
            t.learn["stack"] = (*words[:at], *words[at + 2 :])
        return
    checked(t, read, refuse)
    if t.raw_predictions:
        raise VWUsage("-r with --bootstrap is not supported by sl (VW writes each copy's "
                      "score, 1:s1 2:s2 ...; -p has the prediction and the copies' range)")


def refuse(learn: dict, outputs: dict) -> None:
    """What sl's bootstrap does not run with, one line each: a reduction below it, another
    learner or mini-batches, ``--audit`` (``--invert_hash`` and the readable model show
    copy 0, as VW's)."""
    from streamlearn.reductions.classes import FIELDS

    for key in FIELDS:
        if learn.get(key):
            raise VWUsage("--bootstrap runs K copies of gd (VW's default learner); sl does "
                          f"not run it over --{key.replace('_', '-')}")  # fmt: skip
    if learn.get("algo", "gd") != "gd" or learn.get("minibatch", 1) > 1:
        raise VWUsage("--bootstrap runs K copies of gd (VW's default learner); sl does not "
                      "run it over other learners or mini-batches")  # fmt: skip
    if outputs.get("audit"):
        raise VWUsage("--audit with --bootstrap is not supported by sl (VW audits each copy; "
                      "sl's audit shows one gd model)")  # fmt: skip


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    """VW says nothing of the bootstrap among its stderr lines."""
    return []


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """K copies of gd in one table (K rounded up to a power of 2 slots a feature): the run's
    learner, ``bootstrap_gd`` in sl's model files (its global state holds the copies')."""
    from streamlearn.learners import bootstrap
    from streamlearn.learners.base import P_BOOTSTRAP, P_BS_VOTE

    opts = configured(config, read, refuse)
    stride = 1 << max(opts.k - 1, 0).bit_length()
    if stride > 1 << config.bits:
        raise UsageError(f"--bootstrap {opts.k} needs -b {stride.bit_length() - 1} at least")
    values = ((P_BOOTSTRAP, opts.k), (P_BS_VOTE, 1.0 if opts.vote else 0.0))
    return Filled(bootstrap.GD, values, bounds=True).spec()
