"""What a multiline reduction stack asks for: :class:`Multiline`, from VW's options.

One record for the stack (``sl vw``'s translation of VW's options, ``cli/vw.py``; sl's
bandit options, ``run/bandit_options.py``), recorded as it is in sl's model files
(``meta["multiline"]``).  Each reduction reads its own fields: ``reductions/csoaa_ldf.py``
``classifier`` and ``csoaa_rank``, ``reductions/cb_adf.py`` ``cb_type``, ``clip_p``,
``rank_all``, ``actions``, ``reductions/explore.py`` the explorer's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from streamlearn.config import TrainConfig
from streamlearn.errors import UsageError


@dataclass
class Multiline:
    """What a multiline reduction asks for (from VW's options)."""

    reduction: str  # "csoaa_ldf", "cb_adf", "cb", "cbify", "ccb", "slates"
    classifier: bool = False  # csoaa_ldf mc
    cb_type: str = "mtr"
    clip_p: float = 0.0
    rank_all: bool = False  # cb_adf --rank_all
    csoaa_rank: bool = False
    actions: int = 0  # --cb K
    notes: list[str] = field(default_factory=list)
    explore: str = ""  # --cb_explore_adf: greedy, first, softmax, squarecb, bag, cover
    epsilon: float | None = None  # None: the explorer's default (greedy 0.05, others 0)
    first_only: bool = False
    tau: int = 0  # --first T
    lam: float = 1.0  # --softmax --lambda
    bag: int = 0  # --bag B
    cover: int = 0  # --cover N (and legacy --cb_explore K --cb_force_legacy)
    psi: float = 1.0  # --cover's --psi
    nounif: bool = False  # --cover's --nounif
    rnd: int = 0  # --rnd R
    rnd_alpha: float = 0.1
    rnd_invlambda: float = 0.1
    synthcoverpsi: float = 0.1  # --synthcover
    synthcoversize: int = 100
    regcbopt: bool = False  # --regcb --regcbopt
    elim: bool = False  # --squarecb --elim
    mellowness: float | None = None  # None: --regcb's 0.1, --squarecb's 0.001
    cb_min_cost: float | None = None  # None: 0 (--cbify: --loss0)
    cb_max_cost: float | None = None  # None: 1 (--cbify: --loss1)
    greedify: bool = False
    gamma_scale: float = 10.0  # --squarecb
    gamma_exponent: float = 0.5
    ope: bool = False  # sl's own --ope: the off-policy estimates on stderr
    cbify: int = 0  # --cbify K (run/cbify.py)
    cbify_cs: bool = False
    cbify_ldf: bool = False  # --cbify_ldf: cost-sensitive LDF examples (run/cbify.py)
    loss0: float = 0.0
    loss1: float = 1.0
    legacy: bool = False  # --cb_force_legacy: VW's single-line cb_algs (run/cblegacy.py)
    evaluate: bool = False  # --eval (legacy): a logged policy's actions evaluated
    explore_eval: bool = False  # --explore_eval (learners/explore_eval.py)
    multiplier: float | None = None
    target_rate: float | None = None
    all_slots_loss: bool = False  # --ccb_explore_adf (run/ccb.py)
    ccb_no_slot_index: bool = False
    no_predict: bool = False  # --ccb_explore_adf: learn only (no pmf, loss or -p)


def config_of(learn: dict, bases: bool = False) -> TrainConfig:
    """The learning options of a multiline run; ``bases``: a path that runs the ftrl
    family's learners too (``BASES``: ``--cb_adf``, ``--cb_explore_adf``,
    ``--csoaa_ldf``, ``--cb K`` of :func:`fit`), others run on gd only."""
    from streamlearn.learners.csoaa_ldf import BASES

    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(learn) - known)
    if unknown:
        raise UsageError(f"options not taken with multiline examples: {', '.join(unknown)}")
    cfg = TrainConfig(**learn)
    if cfg.algo != "gd" and not (bases and cfg.algo in BASES):
        also = " or --ftrl/--coin/--pistol" if bases else ""
        raise UsageError(f"this multiline reduction runs on gd (VW's default learner){also}, "
                         f"not {cfg.algo}")  # fmt: skip
    if cfg.initial_weights != "zero":
        raise UsageError(f"--{cfg.initial_weights}_weights: not with multiline examples yet "
                         "(VW draws them as its sparse or dense table is first read)")  # fmt: skip
    return cfg


def reduction_name(ml) -> str:  # noqa: ANN001 - a Multiline
    """The reduction as the user named it (``--cb_explore_adf --cover``, ``--cb 4``, ...)."""
    if ml.reduction == "cbify":
        return "--cbify"
    if ml.reduction in ("ccb", "slates"):
        return "--ccb_explore_adf" if ml.reduction == "ccb" else "--slates"
    if ml.reduction == "csoaa_ldf":
        return "--csoaa_ldf"
    if ml.legacy:
        return "--cb_force_legacy"
    base = "--cb" if ml.reduction == "cb" else "--cb_adf"
    if ml.explore:
        base = "--cb_explore" if ml.reduction == "cb" else "--cb_explore_adf"
        if ml.explore_eval:
            base = "--explore_eval"
        elif ml.explore != "greedy":
            base += f" --{ml.explore}"
    return base
