"""``--lda K``: latent Dirichlet allocation (VW's ``lda_core.cc``), VW's bottom learner for
topics: each line a document of word counts (its label, if any, ignored: VW's
``NOLABEL``), its prediction the document's K topic weights γ.

Options (``reductions.Multiline``'s fields): ``lda`` (K), ``lda_alpha``, ``lda_rho``,
``lda_D``, ``lda_epsilon``, ``lda_minibatch`` (VW's ``--minibatch``), ``lda_math_mode``
(VW's ``--math-mode``).  Its driver is ``run/lda.py`` (a loop of its own, as ``--cbify``'s:
documents go by minibatches, and VW counts and prints them a minibatch at a time); its
kernels :mod:`streamlearn.learners.lda`.  VW keeps ``--lda``, ``--lda_alpha`` and
``--lda_rho`` with a model.
"""

from __future__ import annotations

from streamlearn.errors import VWUsage
from streamlearn.reductions.base import Reduction
from streamlearn.reductions.vwoptions import (
    Command,
    VWOption,
    count,
    integer,
    number,
    stack_field,
)

NAME = "lda"

OPTIONS = (
    ("lda", "int", 0),
    ("lda_alpha", "float | None", None),  # (None: not given, 0.1; VW keeps it when given)
    ("lda_rho", "float | None", None),
    ("lda_D", "float", 10000.0),
    ("lda_epsilon", "float", 0.001),
    ("lda_minibatch", "int", 1),
    ("lda_math_mode", "int", 0),
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""

MOST = 4096
"""The most topics sl runs (VW's row of 2K + 1 floats rounded up to a power of 2)."""


def _lda(t: Command, name: str, value: str) -> None:
    ml = t.multiline
    if ml.get("reduction") not in (None, NAME):
        raise VWUsage(f"--lda with --{ml['reduction']}: not supported (LDA is a base learner)")
    k = count(name, value, "--lda", "at least one topic")
    if k > MOST:
        raise VWUsage(f"--lda {value}: sl runs at most {MOST} topics")
    ml["reduction"] = NAME
    ml["lda"] = k


def _math_mode(name: str, value: str) -> int:
    mode = integer(name, value)
    if mode not in (0, 1, 2):
        raise VWUsage(f"--math-mode {value}: 0 (simd), 1 (accuracy) or 2 (fast approximations)")
    return mode


def _minibatch(name: str, value: str) -> int:
    return count(name, value, "--minibatch", "at least one document a minibatch")


VW_OPTIONS = {
    "lda": VWOption(None, True, _lda),
    "lda_alpha": VWOption(None, True, stack_field("lda_alpha", number)),
    "lda_rho": VWOption(None, True, stack_field("lda_rho", number)),
    "lda_D": VWOption(None, True, stack_field("lda_D", number)),
    "lda_epsilon": VWOption(None, True, stack_field("lda_epsilon", number)),
    "minibatch": VWOption(None, True, stack_field("lda_minibatch", _minibatch)),
    "math_mode": VWOption(None, True, stack_field("lda_math_mode", _math_mode)),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`)."""

_OWN = {"lda_alpha": "--lda_alpha", "lda_rho": "--lda_rho", "lda_D": "--lda_D",
        "lda_epsilon": "--lda_epsilon", "lda_minibatch": "--minibatch",
        "lda_math_mode": "--math-mode"}  # fmt: skip
"""LDA's own fields, by the option that sets each (VW knows them only with ``--lda``)."""


def settle(t: Command) -> None:
    """LDA's options together: its own need ``--lda`` (VW knows them only with it); what sl
    does not run with it is refused in one line."""
    ml = t.multiline
    if ml.get("reduction") != NAME:
        given = [name for key, name in _OWN.items() if key in ml]
        if given:
            raise VWUsage(f"{given[0]} is an option of --lda (VW: unrecognised without it)")
        return
    learn = t.learn
    others = [k for k in ("oaa", "csoaa", "multilabel", "stack", "quadratic", "cubic",
                          "interactions", "ngram", "skips", "affix") if learn.get(k)]  # fmt: skip
    if others or learn.get("algo", "gd") != "gd":
        raise VWUsage("--lda is a base learner: not with another learner, reduction, "
                      "interactions or n-grams in sl")  # fmt: skip
    if learn.get("learning_rate") is not None and float(learn["learning_rate"]) > 1.0:
        learn["learning_rate"] = 1.0  # (VW: "The learning rate is too high, setting it to 1")
        t.notes.append("--lda: the learning rate is too high, set to 1 (as VW)")


def priors(ml) -> tuple[float, float]:  # noqa: ANN001
    """(α, ρ): ``--lda_alpha``'s and ``--lda_rho``'s, 0.1 each unless given."""
    return (0.1 if ml.lda_alpha is None else float(ml.lda_alpha),
            0.1 if ml.lda_rho is None else float(ml.lda_rho))  # fmt: skip


def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001, ARG001
    """VW's header: (Enabled learners, Input label, Output pred)."""
    return "lda", "NOLABEL", "NOPRED" if ml.lda_minibatch > 1 else "SCALARS"


def vw_words(ml) -> list[str]:  # noqa: ANN001
    """The options VW keeps with an LDA model: ``--lda``, and ``--lda_alpha``, ``--lda_rho``
    when given (floats as VW prints its float32 options)."""
    import numpy as np

    words = ["--lda", str(ml.lda)]
    for name in ("lda_alpha", "lda_rho"):
        if getattr(ml, name) is not None:
            words += [f"--{name}", f"{float(np.float32(getattr(ml, name))):.15g}"]
    return words


def _learner(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
    raise VWUsage("--lda runs in sl vw's own loop (run/lda.py): not in the server or the API yet")


REDUCTION = Reduction(NAME, "none", False, _learner, stack, vw_words, options=OPTIONS,
                      batched=False, served=False)  # fmt: skip
