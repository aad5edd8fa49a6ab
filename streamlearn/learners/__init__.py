"""Learner registry: an algorithm name and its options resolve to one variant.

Each module in this package exposes the same kernels (see
:mod:`streamlearn.learners.base`) and a :class:`~streamlearn.learners.base.LearnerSpec`.
The driver resolves the variant once, before the loop, and never branches on
the algorithm inside it.  Modules are imported on demand so that startup only
loads the kernels a run uses.  Reductions over gd's update: one against all
(:mod:`~streamlearn.learners.oaa`), cost-sensitive (:mod:`~streamlearn.learners.csoaa`),
multilabel (:mod:`~streamlearn.learners.multilabel`).  The kernels of the reductions that
own their options (:mod:`~streamlearn.learners.lrq`, :mod:`~streamlearn.learners.boosting`)
are chosen by their modules in :data:`streamlearn.reductions.SINGLE_LINE`, not here.
"""

from __future__ import annotations

from streamlearn.learners.base import LearnerSpec

ALGORITHMS = ("gd", "sgd", "tg", "fobos", "smidas", "ftrl", "l0", "subgrad", "cd", "scd",
              "coin", "pistol", "freegrad")  # fmt: skip
PARAMETER_FREE = ("coin", "pistol", "freegrad")
"""VW's learners without a learning rate (``--coin``, ``--pistol``, ``--freegrad``)."""
MINIBATCH_ALGORITHMS = ("sgd", "tg", "fobos", "subgrad")


def _over(module: str):  # noqa: ANN202
    """A reduction over the run's base learner: ``module.resolve(algo)``."""

    def make(c) -> LearnerSpec:  # noqa: ANN001
        import importlib

        return importlib.import_module(f"streamlearn.learners.{module}").resolve(c.algo)

    return make


def _ect(c) -> LearnerSpec:  # noqa: ANN001
    """The error-correcting tournament of ``c``'s classes (its circuit: K and E)."""
    from streamlearn.learners import ect

    return ect.resolve(c)


def _log_multi(c) -> LearnerSpec:  # noqa: ANN001
    """The online tree of ``c``'s classes (``--log_multi K`` in its words)."""
    from streamlearn.learners import log_multi
    from streamlearn.learners.stacked import swap_resistance

    return log_multi.spec(c.oaa, swap_resistance(c.stack), "--no_progress" not in c.stack)


def _recall_tree(c) -> LearnerSpec:  # noqa: ANN001
    """The recall tree of ``c``'s classes (``--recall_tree K`` in its words)."""
    from streamlearn.learners import recall_tree

    return recall_tree.spec_of(c.stack, c.seed, c.class_weights())


def _plt(c) -> LearnerSpec:  # noqa: ANN001
    """The probabilistic label tree of ``c``'s labels (``--plt K`` in its words)."""
    from streamlearn.learners import plt

    return plt.spec_of(c.oaa, c.stack)


REDUCTIONS = (
    (lambda c: c.oaa and "--log_multi" in c.stack, _log_multi),  # --log_multi K
    (lambda c: c.oaa and "--plt" in c.stack, _plt),  # --plt K
    (lambda c: c.oaa and "--recall_tree" in c.stack, _recall_tree),  # --recall_tree K
    (lambda c: c.oaa and c.ect, _ect),  # --ect K --error E
    (lambda c: c.oaa and c.multilabel, _over("multilabel")),  # --multilabel_oaa K
    (lambda c: c.oaa and c.csoaa, _over("csoaa")),  # --csoaa K
    (lambda c: c.oaa, _over("oaa")),  # --oaa K: one against all
)
"""The single-line reductions, each over the run's base learner: (whether a run's options
ask for it, its kernels); the first that applies wins.  Adding one is its module and its
line here (the multiline reductions are :mod:`streamlearn.reductions`')."""


def spec_of(config) -> LearnerSpec:  # noqa: ANN001 - a config.TrainConfig
    """The kernels that learn with ``config``: a reduction's (:data:`REDUCTIONS`), or the
    base learner's (:func:`resolve`)."""
    return reduction_of(config) or resolve(config.algo, config.l1, config.l2, config.minibatch)


def reduction_of(config) -> LearnerSpec | None:  # noqa: ANN001 - a config.TrainConfig
    """The kernels of the single-line reduction ``config`` asks for (None: none)."""
    for applies, make in REDUCTIONS:
        if applies(config):
            return make(config)
    return None


def resolve(algo: str, l1: float = 0.0, l2: float = 0.0, minibatch: int = 1) -> LearnerSpec:
    """The kernel variant that runs the base learner ``algo`` with these regularisers.

    ``sgd`` with only ``l1`` runs the truncated-gradient kernel with K = 1 and
    θ = ∞ (ℓ1 clipped at zero, Lipton & Elkan eq. 4); the caller's params must
    say so (:func:`streamlearn.config.TrainConfig.params` does).  Mini-batches
    (``minibatch`` > 1) and ``subgrad`` run :mod:`streamlearn.learners.minibatch`.
    A reduction over it (``--oaa``, ``--csoaa``, ...): :func:`spec_of`.
    """
    if minibatch > 1 or algo == "subgrad":
        if algo not in MINIBATCH_ALGORITHMS:
            raise ValueError(
                f"--minibatch applies to --algo {', '.join(MINIBATCH_ALGORITHMS)}, not {algo}"
            )
        from streamlearn.learners import minibatch as mb

        return mb.resolve(algo, l1, l2)
    if algo == "gd":
        from streamlearn.learners import gd

        return gd.SPEC  # --l1/--l2 act through gd's global gravity and contraction
    if algo == "ftrl":
        from streamlearn.learners import ftrl

        return ftrl.SPEC
    if algo == "sgd":
        if l2 != 0.0:
            from streamlearn.learners import sgd_elastic

            return sgd_elastic.SPEC
        if l1 != 0.0:
            from streamlearn.learners import truncated

            return truncated.SPEC
        from streamlearn.learners import sgd

        return sgd.SPEC
    if algo == "tg":
        from streamlearn.learners import truncated

        return truncated.SPEC
    if algo == "fobos":
        from streamlearn.learners import fobos

        return fobos.resolve(l1, l2)
    if algo == "smidas":
        from streamlearn.learners import smidas

        return smidas.SPEC
    if algo == "l0":
        from streamlearn.learners import l0

        return l0.SPEC
    if algo in ("cd", "scd"):
        from streamlearn.learners import cd

        return cd.CD if algo == "cd" else cd.SCD
    if algo in PARAMETER_FREE:
        import importlib

        return importlib.import_module(f"streamlearn.learners.{algo}").SPEC
    raise ValueError(f"unknown algorithm {algo!r}; choose from {', '.join(ALGORITHMS)}")


def spec_by_name(name: str) -> LearnerSpec:
    """The variant stored in a model file under ``name`` (``LearnerSpec.name``)."""
    import importlib

    if name.startswith("bfgs") and name[4:].isdigit():  # (its table is 4 + 2m columns wide)
        from streamlearn.learners import bfgs

        return bfgs.spec(int(name[4:]))
    if name.startswith("gd_mf") and name[5:].isdigit():  # (2k + 2 columns)
        from streamlearn.learners import gd_mf

        return gd_mf.spec(int(name[5:]))
    for module in (
        "gd", "ftrl", "sgd", "truncated", "sgd_elastic", "fobos", "smidas", "l0", "minibatch",
        "cd", "coin", "pistol", "freegrad", "oaa", "csoaa", "bootstrap", "autolink",
        "multilabel", "ect", "log_multi", "recall_tree", "plt",
    ):
        try:
            mod = importlib.import_module(f"streamlearn.learners.{module}")
        except ImportError:
            continue
        for spec in getattr(mod, "SPECS", (getattr(mod, "SPEC", None),)):
            if spec is not None and spec.name == name:
                return spec
    raise ValueError(f"unknown learner variant {name!r}")
