"""Learner registry: an algorithm name and its options resolve to one variant.

Each module in this package exposes the same kernels (see
:mod:`streamlearn.learners.base`) and a :class:`~streamlearn.learners.base.LearnerSpec`.
The driver resolves the variant once, before the loop, and never branches on
the algorithm inside it.  Modules are imported on demand so that startup only
loads the kernels a run uses.  Reductions over gd's update: one against all
(:mod:`~streamlearn.learners.oaa`), cost-sensitive (:mod:`~streamlearn.learners.csoaa`),
multilabel (:mod:`~streamlearn.learners.multilabel`).
"""

from __future__ import annotations

from streamlearn.learners.base import LearnerSpec

ALGORITHMS = ("gd", "sgd", "tg", "fobos", "smidas", "ftrl", "l0", "subgrad", "cd", "scd",
              "coin", "pistol", "freegrad")  # fmt: skip
PARAMETER_FREE = ("coin", "pistol", "freegrad")
"""VW's learners without a learning rate (``--coin``, ``--pistol``, ``--freegrad``)."""
MINIBATCH_ALGORITHMS = ("sgd", "tg", "fobos", "subgrad")


def resolve(algo: str, l1: float = 0.0, l2: float = 0.0, minibatch: int = 1,
            oaa: int = 0, csoaa: bool = False,
            multilabel: bool = False, bootstrap: int = 0,
            autolink: int = 0, bfgs: int = -1) -> LearnerSpec:  # fmt: skip
    """The kernel variant that runs ``algo`` with these regularisers.

    ``sgd`` with only ``l1`` runs the truncated-gradient kernel with K = 1 and
    θ = ∞ (ℓ1 clipped at zero, Lipton & Elkan eq. 4); the caller's params must
    say so (:func:`streamlearn.config.TrainConfig.params` does).  Mini-batches
    (``minibatch`` > 1) and ``subgrad`` run :mod:`streamlearn.learners.minibatch`.
    ``oaa`` = K > 0: one-against-all over K classes (:mod:`streamlearn.learners.oaa`).
    ``autolink`` = d > 0: gd with its prediction's powers as features
    (:mod:`streamlearn.learners.autolink`).
    ``bootstrap`` = K > 0: K resampled copies of gd (:mod:`streamlearn.learners.bootstrap`).
    """
    if bfgs >= 0:
        from streamlearn.learners import bfgs as lbfgs

        return lbfgs.spec(bfgs)
    if autolink:
        from streamlearn.learners import autolink as al

        return al.resolve(algo)
    if bootstrap:
        from streamlearn.learners import bootstrap as bs

        return bs.resolve(algo)
    if oaa and multilabel:
        from streamlearn.learners import multilabel as multi

        return multi.resolve(algo)
    if oaa and csoaa:
        from streamlearn.learners import csoaa as cost_sensitive

        return cost_sensitive.resolve(algo)
    if oaa:
        from streamlearn.learners import oaa as one_against_all

        return one_against_all.resolve(algo)
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
    for module in (
        "gd", "ftrl", "sgd", "truncated", "sgd_elastic", "fobos", "smidas", "l0", "minibatch",
        "cd", "coin", "pistol", "freegrad", "oaa", "csoaa", "bootstrap", "autolink",
        "multilabel",
    ):
        try:
            mod = importlib.import_module(f"streamlearn.learners.{module}")
        except ImportError:
            continue
        for spec in getattr(mod, "SPECS", (getattr(mod, "SPEC", None),)):
            if spec is not None and spec.name == name:
                return spec
    raise ValueError(f"unknown learner variant {name!r}")
