"""The reductions' table that a VW command line reads: the multiline reductions, every
VW option's owner, and the order their ``settle`` runs, without the single-line reductions'
modules (:data:`streamlearn.reductions.SINGLE_LINE`: ~25 ms of start-up a run pays only
when it names one of their options).

:data:`REDUCTIONS`, :data:`Multiline` and :func:`reduction_of` are the registry's
(:mod:`streamlearn.reductions.registry` has the rest); :func:`vw_option` finds an option
by its owner; :data:`SETTLE` settles a command line that names no single-line reduction
(``tests/reductions/test_table.py`` checks this table against the modules, and every
pair of options settled alike by the whole registry).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from streamlearn.reductions import (
    cats,
    cb_adf,
    cb_dro,
    cbzo,
    ccb,
    classes,
    csoaa_ldf,
    epsilon_decay,
    explore,
    igl,
    large_action,
    lda,
    mwt,
    offset_tree,
    search,
    warm_cb,
)
from streamlearn.reductions.base import Reduction
from streamlearn.reductions.explore import over
from streamlearn.reductions.options import assemble
from streamlearn.reductions.vwoptions import VWOption, take

REDUCTIONS: dict[str, Reduction] = {
    r.name: r
    for r in (
        csoaa_ldf.REDUCTION,
        search.REDUCTION,
        lda.REDUCTION,
        cbzo.REDUCTION,
        cats.REDUCTION,
        # the contextual bandits: cb_adf's learner, an explorer over it when one is asked
        # --epsilon_decay above its explorer, --experimental_igl above them
        igl.over(epsilon_decay.over(over(cb_adf.REDUCTION))),
        over(cb_adf.CB),
        over(cb_adf.CBIFY),
        over(ccb.REDUCTION),
        over(ccb.SLATES),
        warm_cb.REDUCTION,
    )
}
"""Every multiline reduction by name (``Multiline.reduction``)."""

Multiline = assemble(r.options for r in REDUCTIONS.values())
"""What a multiline reduction stack asks for (from VW's options): the stack's fields
(:data:`streamlearn.reductions.options.STACK`) and every registered reduction's
``OPTIONS``, in one record (sl's model files keep it as ``meta["multiline"]``)."""


def reduction_of(ml) -> Reduction:  # noqa: ANN001 - a reductions.options.Multiline
    """The registry's entry of ``ml``'s reduction."""
    return REDUCTIONS[ml.reduction]


ORDER = ("cs_active", "cats", "active", "active_cover", "offset_tree", "explore", "log_multi",
         "recall_tree", "emt", "classes", "lrq", "lrqfa", "boosting", "nn", "autolink",
         "bootstrap", "bfgs", "gd_mf", "svrg", "ksvm", "oja_newton", "marginal", "stage_poly",
         "confidence", "baseline", "csoaa_ldf", "mwt", "cb_adf", "cb_dro", "ccb", "search",
         "lda", "cbzo", "warm_cb", "large_action", "epsilon_decay", "igl", "plt",
         "memory_tree", "topk", "replay", "oaa_subsample", "interact")  # fmt: skip
"""The modules that declare VW options, in the order their ``settle`` runs (``cs_active``
first: it takes ``--simulation`` before ``--active`` would drop it; ``active`` and
``active_cover``: they take ``--mellowness`` (``--cover``) from the explorers when
there is no explorer)."""

SINGLE_LINE_OPTIONS: dict[str, tuple[str, ...]] = {
    "cs_active": (
        "adax", "cost_max", "cost_min", "cs_active", "csa_debug", "domination", "max_labels",
        "min_labels", "range_c",
    ),
    "active": ("active", "direct", "simulation"),
    "active_cover": ("active_cover", "alpha", "beta_scale", "oracular"),
    "log_multi": ("log_multi", "no_progress", "swap_resistance"),
    "recall_tree": (
        "bern_hyper", "max_candidates", "max_depth", "node_only", "randomized_routing",
        "recall_tree",
    ),
    "emt": ("emt", "emt_initial", "emt_leaf", "emt_router", "emt_scorer", "emt_tree"),
    "lrq": ("lrq", "lrqdropout"),
    "lrqfa": ("lrqfa",),
    "boosting": ("alg", "boosting", "gamma"),
    "nn": ("dropout", "inpass", "meanfield", "multitask", "nn"),
    "autolink": ("autolink",),
    "bootstrap": ("bootstrap", "bs_type"),
    "bfgs": ("bfgs", "conjugate_gradient", "hessian_on", "mem", "termination"),
    "gd_mf": ("rank",),
    "svrg": ("stage_size", "svrg"),
    "ksvm": (
        "bandwidth", "degree", "kernel", "ksvm", "para_active", "pool_greedy", "pool_size",
        "reprocess", "subsample",
    ),
    "oja_newton": (
        "OjaNewton", "alpha_inverse", "epoch_size", "learning_rate_cnt", "normalize", "random_init",
        "sketch_size",
    ),
    "marginal": (
        "compete", "decay", "initial_denominator", "initial_numerator", "marginal",
        "unweighted_marginals", "update_before_learn",
    ),
    "stage_poly": ("batch_sz", "batch_sz_no_doubling", "sched_exponent", "stage_poly"),
    "confidence": ("confidence", "confidence_after_training"),
    "baseline": ("baseline", "check_enabled", "global_only", "lr_multiplier"),
    "plt": ("kary_tree", "plt", "plt_force_load_legacy_model", "threshold", "top_k"),
    "memory_tree": (
        "dream_at_update", "dream_repeats", "leaf_example_multiplier", "learn_at_leaf",
        "max_number_of_labels", "memory_tree", "oas", "online", "top_K",
    ),
    "topk": ("top",),
    "replay": (
        "replay_b", "replay_b_count", "replay_c", "replay_c_count", "replay_m", "replay_m_count",
    ),
    "oaa_subsample": ("oaa_subsample",),
    "interact": ("interact",),
}  # fmt: skip
"""The VW options of each single-line reduction's module (the registry's
:data:`~streamlearn.reductions.SINGLE_LINE`), by module: imported when a line names one."""

OWNER = {name: module for module, names in SINGLE_LINE_OPTIONS.items() for name in names}
"""The module of each single-line reduction's VW option."""

_HERE = {m.__name__.rsplit(".", 1)[-1]: m
         for m in (cats, cb_adf, cb_dro, cbzo, ccb, classes, csoaa_ldf, epsilon_decay, explore,
                   igl, large_action, lda, mwt, offset_tree, search, warm_cb)}  # fmt: skip
"""The modules that declare VW options imported here (every one not a single-line reduction's)."""

VW_OPTIONS: dict[str, VWOption] = take(*(_HERE[m].VW_OPTIONS for m in ORDER if m in _HERE))
"""The VW options of the modules imported here (the single-line reductions' are theirs)."""


def vw_option(name: str) -> VWOption | None:
    """A reduction's VW option ``name`` (None: no reduction's), its module imported."""
    opt = VW_OPTIONS.get(name)
    if opt is None and name in OWNER:
        opt = import_module(f"streamlearn.reductions.{OWNER[name]}").VW_OPTIONS[name]
    return opt


SETTLE: tuple[Callable, ...] = tuple(
    _HERE[m].settle for m in ORDER if m in _HERE and hasattr(_HERE[m], "settle"))
"""The settles of a command line that names no single-line reduction's option: those of
the modules imported here, in :data:`ORDER` (the single-line ones' would find none of
their words).  A line that names one is settled by every module's
(:data:`streamlearn.reductions.SETTLE`): one may read another's words (``--cs_active``
reads ``--active``'s ``--simulation``)."""


__all__ = ["ORDER", "OWNER", "REDUCTIONS", "SETTLE", "SINGLE_LINE_OPTIONS", "VW_OPTIONS",
           "Multiline", "reduction_of", "vw_option"]
