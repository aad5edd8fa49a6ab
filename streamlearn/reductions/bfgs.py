"""L-BFGS over passes, VW's ``--bfgs`` (``--mem m``, ``--termination``, ``--hessian_on``), and
its conjugate gradient, VW's ``--conjugate_gradient`` (``m = 0``, the curvature always, no
termination threshold): :mod:`streamlearn.learners.bfgs` is the kernel and says how.  In
the single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the worked example):
its options are its own words in ``TrainConfig.stack`` (``("--bfgs", "--mem", "7")``); its
state is the learner's own global state (the passes' state machine, L-BFGS's ρ and α) and
its table ``4 + 2m`` columns (``bfgs<m>`` in sl's model files).  VW names it in place of
the base learner (``bfgs, scorer-identity, count_label``).

One of the older reductions moved into the shape (it was ``TrainConfig.bfgs``,
``termination`` and ``hessian_on``): sl's models written before keep them in their options,
which :meth:`streamlearn.config.TrainConfig.from_dict` reads as these words.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.classes import FIELDS
from streamlearn.reductions.singleline import Filled, checked, configured
from streamlearn.reductions.vwoptions import Command, VWOption, integer, number

NAME = "bfgs"
"""Its name in VW's ``Enabled learners`` line, where the base learner's would be."""
BASE = True
"""VW names it instead of the base learner (it is the learner, not a reduction over gd)."""
MOST = 1024
"""The most L-BFGS corrections sl keeps (``--mem``: 2m columns a slot)."""
WARM = True
"""A run may lay it over a model trained without it (VW's ``-i gd.model --bfgs``): its
table starts from the model's weights (:func:`strip`)."""
FLAGS = ("--bfgs", "--conjugate_gradient")
"""(``learners/stacked.py: BFGS``, the same words: that module loads kernels, this one is read
with every command line)"""
OWN = ("--mem", "--termination", "--hessian_on")
"""Its options, which VW reads only with ``--bfgs``."""


@dataclass(frozen=True)
class Options:
    mem: int = 15
    termination: float = 0.001
    hessian: bool = False


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name neither."""
    named = [w for w in FLAGS if w in words]
    if not named:
        return None
    if len(named) > 1:
        raise UsageError("--conjugate_gradient and --bfgs cannot be used together (as VW)")
    if named[0] == "--conjugate_gradient":  # (VW: m = 0, its threshold 0, the curvature on)
        return Options(0, 0.0, True)
    found: dict = {}
    it = iter(words)
    for w in it:
        if w in ("--mem", "--termination"):
            found[w] = next(it, "")
    try:
        mem = int(found.get("--mem", "15"))
        termination = float(found.get("--termination", "0.001"))
    except ValueError:
        raise UsageError("--mem takes an integer and --termination a number") from None
    if mem < 0 or mem > MOST:
        raise UsageError(f"--mem {mem}: 0 to {MOST} corrections")
    return Options(mem, termination, "--hessian_on" in words or mem == 0)


def _flag(name: str):  # noqa: ANN202
    def apply(t: Command, _: str, value: str | None) -> None:  # noqa: ARG001
        if name not in t.learn.get("stack", ()):
            t.learn["stack"] = (*t.learn.get("stack", ()), name)

    return apply


def _valued(name: str, kind):  # noqa: ANN001, ANN202
    def apply(t: Command, option: str, value: str | None) -> None:
        kind(option, value)
        t.learn["stack"] = (*t.learn.get("stack", ()), name, value)

    return apply


VW_OPTIONS = {
    "bfgs": VWOption(None, False, _flag("--bfgs")),
    "conjugate_gradient": VWOption(None, False, _flag("--conjugate_gradient")),
    "mem": VWOption(None, True, _valued("--mem", integer)),
    "termination": VWOption(None, True, _valued("--termination", number)),
    "hessian_on": VWOption(None, False, _flag("--hessian_on")),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` has none of it (``sl vw --bfgs`` runs it)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def _without(words: tuple[str, ...], names: tuple[str, ...]) -> tuple[str, ...]:
    out, it = [], iter(words)
    for w in it:
        if w in names:
            if w in ("--mem", "--termination"):
                next(it, None)
        else:
            out.append(w)
    return tuple(out)


def strip(words: tuple[str, ...]) -> tuple[str, ...]:
    """``words`` without this reduction's (what a model it continues must agree with)."""
    return _without(words, FLAGS + OWN)


def settle(t: Command) -> None:
    """What ``--bfgs`` means with the rest of a VW command line (one line, exit 2)."""
    words = t.learn.get("stack", ())
    named = any(w in words for w in FLAGS)
    if any(w in words for w in OWN) and (not named or "--conjugate_gradient" in words):
        # (VW reads them only with --bfgs)
        t.notes.append("--mem, --termination and --hessian_on are options of --bfgs: ignored")
        t.learn["stack"] = _without(words, OWN)
    if not named:
        return
    checked(t, read, refuse)
    if t.learn.get("passes", 1) < 2 and not t.learn.get("test_only"):
        raise VWUsage(f"{_flag_of(t.learn['stack'])} needs at least 2 passes (as VW)")


def _flag_of(words: tuple[str, ...]) -> str:
    return "--conjugate_gradient" if "--conjugate_gradient" in words else "--bfgs"


def refuse(learn: dict, outputs: dict) -> None:  # noqa: ARG001
    """What sl's L-BFGS does not run with, one line: it runs alone (no reduction over or
    under it, gd's table only), with squared, classic or logistic loss."""
    flag = _flag_of(learn.get("stack", ()))
    if (any(learn.get(k) for k in FIELDS) or learn.get("algo", "gd") != "gd"
            or learn.get("minibatch", 1) > 1
            or learn.get("loss", "squared") not in ("squared", "logistic", "classic")):
        raise VWUsage(f"{flag} runs alone, with squared, classic or logistic loss")
    if learn.get("l1_state") is not None or learn.get("l2_state") is not None:
        raise VWUsage(f"--l1_state and --l2_state are gd's state (VW's gd): not of {flag}")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    """VW says its optimization on stdout (``enabling BFGS based optimization ...``)."""
    return []


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """The L-BFGS learner of ``--mem`` m (``bfgs<m>``) for this run's passes."""
    from streamlearn.learners import bfgs
    from streamlearn.learners.base import P_BFGS_HESSIAN, P_BFGS_MEM, P_BFGS_PASSES, P_BFGS_TERM

    opts = configured(config, read, refuse)
    values = ((P_BFGS_MEM, opts.mem), (P_BFGS_TERM, opts.termination),
              (P_BFGS_HESSIAN, 1.0 if opts.hessian else 0.0), (P_BFGS_PASSES, config.passes))
    return Filled(bfgs.spec(opts.mem), values).spec()
