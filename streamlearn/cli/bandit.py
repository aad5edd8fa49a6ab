"""``sl train``'s contextual-bandit options (sl's names for VW's ``--cb_adf``,
``--cb_explore_adf`` and its explorers, ``--cb K``, ``--csoaa_ldf``): see
:mod:`streamlearn.run.bandit`."""

from __future__ import annotations

import click

from streamlearn.run.bandit_options import BANDIT_OPTIONS

OPTIONS = [
    click.option("--cb-adf", "cb_adf", is_flag=True, default=None,
                 help="Contextual bandit with action features (VW's --cb_adf): multiline "
                 "examples, an optional 'shared' line, one line per action, 'a:cost:prob' on "
                 "the logged action, a blank line after each."),
    click.option("--cb", "cb", type=click.IntRange(min=1), default=None, metavar="K",
                 help="Contextual bandit over K actions, one line per example "
                 "(VW's --cb K: 'a:cost:prob |features', a in 1..K)."),
    click.option("--csoaa-ldf", "csoaa_ldf", type=click.Choice(["m", "mc"]), default=None,
                 help="Cost-sensitive multiline examples, 'k:cost' per line (VW's --csoaa_ldf: "
                 "m ranks, mc classifies)."),
    click.option("--cb-type", "cb_type", type=click.Choice(["mtr", "ips", "dm", "dr"]),
                 default=None, help="How a logged cost is learned [default: mtr, as VW]."),
    click.option("--clip-p", "clip_p", type=float, default=None,
                 help="Clip logged probabilities below this (importance weights) [0]."),
    click.option("--rank-all", "rank_all", is_flag=True, default=None,
                 help="--cb-adf without --explore: predict every action's score."),
    click.option("--csoaa-rank", "csoaa_rank", is_flag=True, default=None,
                 help="--csoaa-ldf: predict every class's score."),
    click.option("--explore", "explore",
                 type=click.Choice(["epsilon", "first", "softmax", "bag", "squarecb", "cover",
                                    "regcb", "synthcover", "rnd"]),
                 default=None,
                 help="Explore (VW's --cb_explore_adf): predictions are each example's "
                 "probabilities over its actions [epsilon-greedy, --epsilon 0.05]."),
    click.option("--epsilon", "epsilon", type=float, default=None,
                 help="--explore: the probability spread over all actions [epsilon: 0.05, "
                 "others: 0]."),
    click.option("--first-only", "first_only", is_flag=True, default=None,
                 help="--explore epsilon/bag: ties get no share (only the first action)."),
    click.option("--tau", "tau", type=click.IntRange(min=0), default=None, metavar="T",
                 help="--explore first: explore uniformly for the first T learned examples "
                 "(VW's --first T)."),
    click.option("--lambda", "lam", type=float, default=None,
                 help="--explore softmax: the inverse temperature [1]."),
    click.option("--bags", "bags", type=click.IntRange(min=1), default=None, metavar="B",
                 help="--explore bag: the number of bootstrapped policies (VW's --bag B)."),
    click.option("--greedify", "greedify", is_flag=True, default=None,
                 help="--explore bag: the first policy learns every example once."),
    click.option("--gamma-scale", "gamma_scale", type=float, default=None,
                 help="--explore squarecb: gamma = scale * t^exponent [10]."),
    click.option("--gamma-exponent", "gamma_exponent", type=float, default=None,
                 help="--explore squarecb [0.5]."),
    click.option("--elim", "elim", is_flag=True, default=None,
                 help="--explore squarecb: only among the actions RegCB's bounds keep."),
    click.option("--cover-policies", "cover_policies", type=click.IntRange(min=1), default=None,
                 metavar="N", help="--explore cover: the policies of the cover (VW's --cover N)."),
    click.option("--psi", "psi", type=float, default=None,
                 help="--explore cover: the disagreement parameter [1]."),
    click.option("--nounif", "nounif", is_flag=True, default=None,
                 help="--explore cover: no uniform exploration of zero-probability actions."),
    click.option("--regcbopt", "regcbopt", is_flag=True, default=None,
                 help="--explore regcb: the optimistic variant (else elimination)."),
    click.option("--mellowness", "mellowness", type=float, default=None,
                 help="--explore regcb/squarecb --elim: RegCB's c0 [0.1; --elim: 0.001]."),
    click.option("--cb-min-cost", "cb_min_cost", type=float, default=None,
                 help="--explore regcb/squarecb --elim: the lowest cost [0]."),
    click.option("--cb-max-cost", "cb_max_cost", type=float, default=None,
                 help="--explore regcb/squarecb --elim: the highest cost [1]."),
    click.option("--synthcover-psi", "synthcover_psi", type=float, default=None,
                 help="--explore synthcover: the exploration reward bonus [0.1]."),
    click.option("--synthcover-size", "synthcover_size", type=click.IntRange(min=1),
                 default=None, help="--explore synthcover: the synthetic cover's size [100]."),
    click.option("--rnd-models", "rnd_models", type=click.IntRange(min=1), default=None,
                 metavar="R", help="--explore rnd: the random networks (VW's --rnd R) [1]."),
    click.option("--rnd-alpha", "rnd_alpha", type=float, default=None,
                 help="--explore rnd: the confidence width [0.1]."),
    click.option("--rnd-invlambda", "rnd_invlambda", type=float, default=None,
                 help="--explore rnd: the covariance regularization [0.1]."),
]  # fmt: skip

NAMES = tuple(BANDIT_OPTIONS)
F32_MAX = 3.4028234663852886e38
"""The largest 32-bit float (the explorers' parameters are VW's floats)."""
"""click's parameter names of these options (help group "Contextual bandits")."""


def bandit_options(f):  # noqa: ANN001, ANN201
    """The options above, on a click command."""
    for option in reversed(OPTIONS):
        f = option(f)
    return f


SIZES = {"cb": ("actions", "--cb"), "bags": ("bag", "--bags"),
         "cover_policies": ("cover", "--cover-policies"), "rnd_models": ("rnd", "--rnd-models")}
"""The bandit options that declare a count the run allocates for (exit 8 above the memory)."""


def bandit_of(kw: dict) -> dict:
    """The bandit options given (popped from ``kw``), sl's names; counts whose memory
    passes ``--max-memory`` or the memory available are refused (exit 8) here, before any
    is allocated (:func:`streamlearn.model_sizes.check_sizes`)."""
    from streamlearn.cli.options import size

    got = {k: v for k in NAMES if (v := kw.pop(k, None)) is not None and v is not False}
    for k, v in got.items():
        if isinstance(v, float) and F32_MAX < abs(v) < float("inf"):
            raise click.BadParameter(f"{v:g}: beyond a 32-bit float (the explorers compute in "
                                     "float32, as VW)", param_hint="--lambda" if k == "lam"
                                     else f"--{k.replace('_', '-')}")  # fmt: skip
    fields = {SIZES[k][0]: v for k, v in got.items() if k in SIZES}
    if fields:  # (imported here: a tiny plain run must not import numba)
        from streamlearn.model_sizes import check_sizes

        fields["cb_type"] = got.get("cb_type", "mtr")
        check_sizes(fields, {f: flag for f, flag in SIZES.values()},
                    size(kw.get("max_memory")))  # fmt: skip
    return got
