"""Training options: one validated record, the only place defaults live."""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from streamlearn.learners import ALGORITHMS, MINIBATCH_ALGORITHMS, PARAMETER_FREE
from streamlearn.learners.base import make_params
from streamlearn.learners.losses import NAMES as LOSSES

FORMATS = ("auto", "vw", "svmlight", "csv", "json", "dsjson")

# Interactions and namespace filters: they decide which features exist, so a
# model keeps them (see streamlearn/io/interactions.py).
NAMESPACE_OPTIONS = ("quadratic", "cubic", "interactions", "ignore", "ignore_linear", "keep",
                     "ngram", "skips", "feature_limit", "redefine", "spelling")  # fmt: skip
FEATURE_FLAGS = ("sort_features", "leave_duplicate_interactions", "chain_hash", "permutations")
"""The on/off options that, with :data:`NAMESPACE_OPTIONS`, decide which features exist."""
HASHES = ("strings", "all")
"""VW's ``--hash``: ``strings`` reads an all-digit name as its number; ``all`` hashes every name."""
ZERO_LABELS = ("negative", "vw")
NUMBERS = ("exact", "vw")
"""How logistic and hinge losses read a label 0: as -1 (sl's default, with a warning), or
as VW does (the label as it is: logistic's target probability 1/2, hinge's constant loss 1)."""

# gd's update rule (VW's --adaptive, --normalized, --invariant): naming any of
# them on the command line turns on only those named.
UPDATE_RULE = ("adaptive", "normalized", "invariant")

# Options fixed by the model: changing them on resume would make the saved
# table meaningless.
FIXED_BY_MODEL = ("bits", "algo", "loss", "constant", "hash", "hash_seed", "numbers", "top_k",
                  *UPDATE_RULE,
                  *NAMESPACE_OPTIONS, *FEATURE_FLAGS, "oaa", "csoaa", "multilabel", "ect",
                  "ect_errors", "named_labels", "affix", "stack")  # fmt: skip

# Options of one run, never inherited from the initial model: continuing a
# model trained with --passes 5 on today's log makes one pass and holds
# nothing out unless this run asks for it.
PER_RUN = ("passes", "holdout_period", "early_terminate", "test_only", "holdout_after",
           "decay_learning_rate", "preserve_performance_counters", "classweight", "l1_state",
           "l2_state")  # fmt: skip


BATCH_ALGORITHMS = ("cd", "scd")
FLOAT32_ALGORITHMS = ("gd", "ftrl", "coin", "pistol", "freegrad")
"""The learners that compute in single precision as VW: crosses' values are float32
products for them (:func:`streamlearn.io.crosses.expand_batch`)."""
BATCH_EPOCHS = {"cd": 100_000, "scd": 1000}
"""The most sweeps by default.  ``cd`` stops on its convergence rules (``tol``); its
cap is a safety net, high because a sweep over a small active set with covariance
updates costs microseconds (a9a, 32k x 123: 5,700 of them for squared loss, 2,700
inner cycles for logistic).  ``scd`` stops on the decrease per epoch."""

# --ftrl-alpha and --ftrl-beta: the learners that take them, and VW's defaults for each
FTRL_DEFAULTS = {"ftrl": (0.5, 1.0), "coin": (4.0, 1.0), "pistol": (1.0, 0.5)}
FREEGRAD_OPTIONS = ("freegrad_epsilon", "freegrad_lipschitz", "freegrad_restart",
                    "freegrad_project", "freegrad_radius")  # fmt: skip
CLASS_FLAGS = {"csoaa": "csoaa", "multilabel_oaa": "multilabel", "ect": "ect"}
"""VW's options of K classes other than ``--oaa K`` and the field each sets (with ``oaa`` K)."""
OAA_ALGORITHMS = ("gd", "ftrl")
"""The learners --oaa K runs K of (VW's one-against-all over its gd or ftrl)."""


P_MAX = 1000.0
"""The largest --p of smidas: 2 ln d is 25 at -b 18 and 42 at -b 30; beyond a thousand
every term but the largest of its scaled p-norm sum is below 2^-1000/p >= 1/2 of the
largest and left out (see :mod:`streamlearn.learners.pnorm`), so nothing is gained."""


class ConfigError(ValueError):
    """An option value, or a combination of options, that cannot run."""


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _check_types(config: TrainConfig) -> None:
    """Each field of the type its annotation names (the CLI's click types check the
    same before a value gets here; code may pass anything): ``bits=18.5`` is refused
    with ``--bits must be an integer``, not a TypeError deep in a run.  numpy
    numbers are taken (a grid from ``np.arange``) and stored as Python ones."""

    for f in fields(config):
        value = getattr(config, f.name)
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        optional = "None" in kind
        if value is None and optional:
            continue
        if kind.startswith("bool"):
            ok = isinstance(value, bool | np.bool_)
            want, cast = "true or false", bool
        elif kind.startswith("int"):
            ok = isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)
            want, cast = "an integer", int
        elif kind.startswith("float"):
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
            want, cast = "a number", float
        elif kind.startswith("str"):
            ok = isinstance(value, str)
            want, cast = "a string", str
        elif kind.startswith("tuple"):
            ok = isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
            want, cast = "a list of strings", tuple
        else:
            continue
        if not ok:
            raise ConfigError(f"{_option(f.name)} must be {want}, got {value!r}")
        object.__setattr__(config, f.name, cast(value))


def plt_tree(k: int, words: tuple[str, ...]) -> tuple[int, int]:
    """``--plt K``'s tree (``--kary_tree`` in ``words``, its last value; 2 by default): VW's
    count of its nodes, and the most labels one prediction lists (every leaf position under
    its internal nodes).  (K, K) when the words ask for no tree sl runs: the reduction
    refuses them.  (``learners/plt.py`` computes the same, beside its kernels.)"""
    kary = "2"
    if "--kary_tree" in words:
        at = len(words) - words[::-1].index("--kary_tree")
        kary = words[at] if at < len(words) else ""
    if not kary.isdigit() or not 2 <= int(kary) < 1 << 32 or k < 2:
        return k, k
    r = int(kary)
    a = math.pow(r, math.floor(math.log(k) / math.log(r)))
    t = int(k - (a - math.ceil((k - a) / (r - 1.0))) + (r * a - 1.0) / (r - 1.0))
    return t, (r - 1) * (t - k) + 1


@dataclass(frozen=True)
class TrainConfig:
    """Validated training options (names follow the CLI)."""

    bits: int = 18
    algo: str = "gd"
    loss: str = "squared"
    learning_rate: float | None = None
    """None: VW's default, 0.5; 10 for gd with only some of adaptive/normalized
    (VW's rate for its other update rules)."""
    power_t: float = 0.5
    initial_t: float | None = None
    """None: 0 for gd with adaptive or normalized rates (VW's default), else 1."""
    l1: float = 0.0
    l2: float = 0.0
    l1_state: float | None = None
    """gd's accumulated ℓ1 gravity to start from (VW's ``--l1_state``): a fresh run's, or, when
    not 0, instead of a continued model's (VW's rule); None: not given."""
    l2_state: float | None = None
    """gd's accumulated ℓ2 contraction to start from (VW's ``--l2_state``), as ``l1_state``
    (its default: 1)."""
    adaptive: bool = True
    normalized: bool = True
    invariant: bool = True
    ftrl_alpha: float | None = None
    """ftrl, coin, pistol: α (None: VW's default for the learner, :data:`FTRL_DEFAULTS`)."""
    ftrl_beta: float | None = None
    freegrad_epsilon: float | None = None
    """freegrad: the initial wealth ε (VW's --fepsilon; None: 1)."""
    freegrad_lipschitz: float | None = None
    """freegrad: a known bound on the gradients (VW's --flipschitz_const; None: 0, none)."""
    freegrad_restart: bool = False
    """freegrad: FreeRange restarts (VW's --restart)."""
    freegrad_project: bool = False
    """freegrad: project the weights onto a ball (VW's --project)."""
    freegrad_radius: float | None = None
    """freegrad --project: the ball's radius (None: adaptive, as VW)."""
    oaa: int = 0
    """One-against-all over K classes (VW's --oaa K): K sub-problems in one table; 0 = one
    binary or regression problem."""
    csoaa: bool = False
    """The ``oaa`` K classes are cost-sensitive (VW's --csoaa K): labels ``class:cost ...``,
    K regressions toward the costs (:mod:`streamlearn.learners.csoaa`)."""
    multilabel: bool = False
    """The ``oaa`` K classes are labels of a multilabel problem (VW's --multilabel_oaa K):
    labels ``c1,c2,...`` (0-based), K binary problems (:mod:`streamlearn.learners.multilabel`)."""
    ect: bool = False
    """The ``oaa`` K classes are an error-correcting tournament (VW's --ect K): a tree of
    binary problems (:mod:`streamlearn.learners.ect`)."""
    ect_errors: int = 0
    """--ect: the errors the tournament corrects (VW's --error E)."""
    stack: tuple[str, ...] = ()
    """The single-line reductions of :mod:`streamlearn.reductions` (``--lrq``, ...) as their
    own words, VW's spelling (``("--lrq", "ab3")``): each reduction reads its options from
    them (config knows none of them), and model files keep them as they are."""
    indexing: int | None = None
    """--oaa: the labels are the classes 0..K-1 (0) or 1..K (1); None: as VW, 1..K until
    a learned label 0 (then 0..K-1) or K (then 1..K) decides, for the run."""
    min_prediction: float | None = None
    max_prediction: float | None = None
    theta: float = math.inf
    period: int = 1
    top_k: int | None = None
    """l0: the number of weights kept after each step (required with --algo l0)."""
    minibatch: int = 1
    """Learned examples per step (sgd, tg, fobos, subgrad): their gradient averaged."""
    p: float | None = None
    norm_refresh: int | None = None
    passes: int | None = None
    """None: 1, or for the batch learners (cd, scd) the most epochs, :data:`BATCH_EPOCHS`."""
    tol: float = 1e-7
    """cd, squared loss: stop when the duality gap is at most tol times the objective
    (F - F* <= tol F); cd, logistic loss: when the l1 norm of the minimum-norm subgradient
    of F is at most tol times its value at w = 0 (liblinear's eps); hinge (cd) and scd:
    when a full sweep lowers the objective by at most tol (relative)."""
    seed: int = 0
    """scd: the seed of its random coordinates; cd with logistic loss: of the order of
    its inner cycles."""
    holdout_period: int | None = None
    early_terminate: int = 3
    constant: bool = True
    hash: str = "strings"
    format: str = "auto"
    chain_hash: bool = False
    """VW's ``--chain_hash``: a JSON string feature ``"k": "v"`` hashed as ``v`` seeded by ``k``
    (``--format json|dsjson``; VW text's ``k:v`` always is)."""
    quadratic: tuple[str, ...] = ()
    cubic: tuple[str, ...] = ()
    interactions: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    ignore_linear: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    spelling: tuple[str, ...] = ()
    """VW's ``--spelling a`` (``_``: the default namespace): each feature of namespace a also
    gives a feature of its name's shape (digits ``0``, letters ``a``/``A``, ``.``, others
    ``#``) in VW's spelling namespace; :mod:`streamlearn.io.affix`.  VW text only."""
    redefine: tuple[str, ...] = ()
    """VW's ``--redefine N:=S``: namespaces whose first byte is in S are namespace N for
    everything that reads namespaces (crosses, filters, n-grams), in order;
    :func:`streamlearn.io.interactions.redefine_table`.  VW text only."""
    # -- VW's command-line options (sl vw; streamlearn/cli/vw.py) --------------------------
    quantile_tau: float = 0.5
    """--loss quantile: the level tau (VW's --quantile_tau)."""
    expectile_q: float = 0.5
    logistic_min: float = -1.0
    """--loss logistic: the label read as certainly negative (VW's --logistic_min); a label
    between the two is the mixture of both losses by its position, as VW reads it."""
    logistic_max: float = 1.0
    """--loss logistic: the label read as certainly positive (VW's --logistic_max)."""
    """--loss expectile: the level q in (0, 0.5] (VW's --expectile_q)."""
    zero_label: str = "negative"
    """Logistic and hinge losses: a label 0 read as -1 ("negative") or as VW does ("vw");
    with ``--oaa K``, "vw" also reads a label -1 as no label, as VW's multiclass reader."""
    numbers: str = "exact"
    """How the VW text parser reads decimals: correctly rounded ("exact", sl's) or as VW 9's
    reader does ("vw": float32, often one float off, :mod:`streamlearn.io.vwfloat`).  ``sl vw``
    trains with "vw"; the model records it, and every run that scores or continues the
    model reads numbers the same way."""
    binary: bool = False
    """VW's --binary: the progressive loss is the 0/1 loss of sign(p), predictions -1/+1."""
    initial_weight: float = 0.0
    """gd: every weight starts at this value (VW's --initial_weight)."""
    initial_weights: str = "zero"
    """gd: VW's random initial weights, ``random`` (--random_weights), ``normal``
    (--normal_weights) or ``truncated_normal`` (--truncated_normal_weights), drawn as VW
    draws them (:mod:`streamlearn.learners.initial`); ``--initial_weight`` wins."""
    initial_constant: float = 0.0
    """gd: the constant feature's weight starts at this value (VW's --constant, -C)."""
    decay_learning_rate: float = 1.0
    """The learning rate is multiplied by this after each pass (VW's --decay_learning_rate)."""
    test_only: bool = False
    """Score without learning (VW's -t): the progressive loss of the unchanged model."""
    holdout_after: int = 0
    """> 0: the examples after the first n of each pass are held out (VW's --holdout_after)."""
    ngram: tuple[str, ...] = ()
    """VW's --ngram: N (every namespace) or aN (namespace a)."""
    skips: tuple[str, ...] = ()
    """VW's --skips: K or aK, with --ngram."""
    sort_features: bool = False
    """Each namespace's features sorted by slot, duplicates dropped (VW's --sort_features)."""
    leave_duplicate_interactions: bool = False
    """Keep interactions equal up to order (VW's --leave_duplicate_interactions)."""
    feature_limit: tuple[str, ...] = ()
    """VW's --feature_limit: ``aN`` keeps at most N features of namespace a (sorted, unique),
    ``N`` of every namespace."""
    permutations: bool = False
    """A namespace crossed with itself makes every ordered tuple of its features, not only
    their combinations (VW's --permutations)."""
    affix: str = ""
    """VW's ``--affix +2a,-3b,+1``: each named feature's prefixes (``+``) or suffixes (``-``) of
    1-7 bytes as features of their own, per namespace (none: the default namespace);
    :mod:`streamlearn.io.affix`.  VW text only."""
    hash_seed: int = 0
    """VW's ``--hash_seed``: the seed of the namespaces' hashes, so the slots of every
    namespaced feature (0: VW's default); fixed by the model, as ``hash``."""
    classweight: tuple[str, ...] = ()
    """VW's ``--classweight k:w,...``: a learned example of class (label) k has its importance
    weight multiplied by w (:meth:`class_weights`)."""
    model_id: str = ""
    """A name kept in the model (VW's ``--id``): a continued model keeps it unless another
    is given; ``sl inspect`` shows it."""
    named_labels: str = ""
    """VW's ``--named_labels a,b,c``: the labels are these names, classes 1..K in this order
    (with ``oaa`` = K); predictions are written as names."""
    csv_separator: str = ","
    """``format="csv"`` (VW's --csv): the cell separator (VW's --csv_separator)."""
    csv_header: str = ""
    """CSV: the column names, comma-separated, instead of each file's first line (VW's
    --csv_header)."""
    csv_no_file_header: bool = False
    """CSV: the files have no header line (VW's --csv_no_file_header, with --csv_header)."""
    csv_ns_value: str = ""
    """CSV: factors of the namespaces' values, ``a:0.5,b:2,:8`` (VW's --csv_ns_value)."""
    preserve_performance_counters: bool = True
    """Continuing a model, count and report from its totals (sl's default); False: this
    run's examples only, as VW without --preserve_performance_counters (the model saved
    keeps the totals either way)."""

    def __post_init__(self) -> None:
        _check_types(self)
        for name in (*NAMESPACE_OPTIONS, "stack"):  # lists from JSON or click become tuples
            object.__setattr__(self, name, tuple(getattr(self, name)))
        try:
            self.namespaces()
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if not 1 <= self.bits <= 30:
            raise ConfigError(f"--bits must be between 1 and 30, got {self.bits}")
        if self.algo not in ALGORITHMS:
            raise ConfigError(f"--algo must be one of {', '.join(ALGORITHMS)}, got {self.algo!r}")
        if self.loss not in LOSSES:
            raise ConfigError(f"--loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        if self.format not in FORMATS:
            raise ConfigError(f"--format must be one of {', '.join(FORMATS)}")
        self._check_vw_options()
        gd = self.algo == "gd"
        adaptive_or_normalized = gd and (self.adaptive or self.normalized)
        if self.learning_rate is None:
            object.__setattr__(self, "learning_rate", self.default_learning_rate)
        if self.initial_t is None:
            object.__setattr__(self, "initial_t", 0.0 if adaptive_or_normalized else 1.0)
        if self.passes is None:
            object.__setattr__(self, "passes", BATCH_EPOCHS.get(self.algo, 1))
        fixed_range = self.min_prediction is not None or self.max_prediction is not None
        checks = [
            (
                self.learning_rate > 0 and math.isfinite(self.learning_rate),
                "--learning-rate must be a positive number",
            ),
            (self.power_t >= 0 and math.isfinite(self.power_t), "--power-t must be >= 0"),
            (
                (self.initial_t > 0 or (gd and self.initial_t == 0))
                and math.isfinite(self.initial_t),
                "--initial-t must be > 0 (>= 0 for --algo gd)",
            ),
            (self.l1 >= 0 and math.isfinite(self.l1), "--l1 must be >= 0"),
            (self.l2 >= 0 and math.isfinite(self.l2), "--l2 must be >= 0"),
            (self.theta >= 0, "--theta must be >= 0"),
            (self.period >= 1, "--period must be >= 1"),
            (self.passes >= 1, "--passes must be >= 1"),
            (self.minibatch >= 1, "--minibatch must be >= 1"),
            (self.tol >= 0 and math.isfinite(self.tol), "--tol must be >= 0"),
            (
                self.holdout_period is None or self.holdout_period >= 0,
                "--holdout-period must be >= 0",
            ),
            (self.early_terminate >= 1, "--early-terminate must be >= 1"),
            (self.p is None or 2 <= self.p <= P_MAX, f"--p must be between 2 and {P_MAX:g}"),
            (self.seed >= 0, "--seed must be >= 0"),
            (self.norm_refresh is None or self.norm_refresh >= 1, "--norm-refresh must be >= 1"),
            (
                all(
                    v is None or math.isfinite(v)
                    for v in (self.min_prediction, self.max_prediction)
                ),
                "--min-prediction and --max-prediction must be finite",
            ),
            (
                not fixed_range or (self.min_prediction or 0.0) <= (self.max_prediction or 0.0),
                "--min-prediction must not exceed --max-prediction (a bound not given is 0, "
                "as in VW)",
            ),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        self._check_learner_options()
        if (self.algo == "l0") != (self.top_k is not None):
            raise ConfigError("--algo l0 needs --top-k K, and --top-k applies to --algo l0 only")
        if self.top_k is not None and self.top_k < 1:
            raise ConfigError("--top-k must be >= 1")
        if self.algo == "l0" and (self.l1 != 0 or self.l2 != 0):
            raise ConfigError("--l1 and --l2 do not apply to --algo l0 (its constraint is --top-k)")
        if self.algo != "tg" and (self.theta != math.inf or self.period != 1):
            raise ConfigError("--theta and --period apply to --algo tg only")
        if self.minibatch > 1 and self.algo not in MINIBATCH_ALGORITHMS:
            raise ConfigError(
                f"--minibatch applies to --algo {', '.join(MINIBATCH_ALGORITHMS)}, "
                f"not {self.algo}"
            )
        if self.minibatch > 1 and self.l2 != 0:
            raise ConfigError("--minibatch does not take --l2 (its regularisers are l1 only)")
        if self.algo in BATCH_ALGORITHMS and self.holdout_period:
            raise ConfigError(
                f"--holdout-period does not apply to --algo {self.algo}, which fits all the "
                "data: score a held-out file with sl predict"
            )
        if self.algo in ("tg", "smidas", "subgrad") and self.l2 != 0:
            raise ConfigError(f"--l2 is not defined for --algo {self.algo}")
        if self.algo != "smidas" and (self.p is not None or self.norm_refresh is not None):
            raise ConfigError("--p and --norm-refresh apply to --algo smidas only")
        if not gd and not (self.adaptive and self.normalized and self.invariant):
            raise ConfigError("--adaptive, --normalized and --invariant apply to --algo gd only")

    def _check_learner_options(self) -> None:
        """The options of ftrl, coin, pistol, freegrad and --oaa (resolving their defaults)."""
        alpha, beta = FTRL_DEFAULTS.get(self.algo, (None, None))
        if alpha is None:
            # (0.5 and 1 were written out for every learner by sl before coin and pistol)
            if self.ftrl_alpha not in (None, 0.5) or self.ftrl_beta not in (None, 1.0):
                raise ConfigError("--ftrl-alpha and --ftrl-beta apply to --algo ftrl, coin and "
                                  "pistol only")  # fmt: skip
            object.__setattr__(self, "ftrl_alpha", None)
            object.__setattr__(self, "ftrl_beta", None)
        else:
            if self.ftrl_alpha is None:
                object.__setattr__(self, "ftrl_alpha", alpha)
            if self.ftrl_beta is None:
                object.__setattr__(self, "ftrl_beta", beta)
            # these learners keep float32 state: a value near float32's largest would
            # overflow in their first step (1e18, as for the input's numbers), one below
            # its smallest normal number would be 0 or lose its digits (a divisor)
            if not 1e-38 <= self.ftrl_alpha <= 1e18:
                raise ConfigError("--ftrl-alpha must be a positive number from 1e-38 to 1e18 "
                                  "(the kernels compute in float32)")  # fmt: skip
            if not 0 <= self.ftrl_beta <= 1e18:
                raise ConfigError("--ftrl-beta must be >= 0, at most 1e18")
        if self.algo in PARAMETER_FREE and (self.l1 != 0 or self.l2 != 0):
            raise ConfigError(f"--l1 and --l2 do not apply to --algo {self.algo} (VW's "
                              f"--{self.algo} ignores them)")  # fmt: skip
        if self.algo != "freegrad":
            given = [n for n in FREEGRAD_OPTIONS if getattr(self, n) not in (None, False)]
            if given:
                raise ConfigError(f"--{_flag(given[0])} applies to --algo freegrad only")
        else:
            if self.freegrad_epsilon is None:
                object.__setattr__(self, "freegrad_epsilon", 1.0)
            if self.freegrad_lipschitz is None:
                object.__setattr__(self, "freegrad_lipschitz", 0.0)
            if not (self.freegrad_epsilon > 0 and math.isfinite(self.freegrad_epsilon)):
                raise ConfigError("--fepsilon must be a positive number")
            if not (self.freegrad_lipschitz >= 0 and math.isfinite(self.freegrad_lipschitz)):
                raise ConfigError("--flipschitz-const must be >= 0")
            r = self.freegrad_radius
            if r is not None and not (r > 0 and math.isfinite(r)):
                raise ConfigError("--radius must be a positive number")
            if r is not None and not self.freegrad_project:
                raise ConfigError("--radius is the radius of --project's ball: it does nothing "
                                  "without --project")  # fmt: skip
        if self.csoaa and (not self.oaa or self.algo != "gd"):
            raise ConfigError("--csoaa K runs K classes (oaa = K) with gd's update rules")
        if self.multilabel and (not self.oaa or self.algo != "gd" or self.csoaa):
            raise ConfigError("--multilabel_oaa K runs K classes (oaa = K) with gd's update rules")
        if self.ect and (not self.oaa or self.algo != "gd" or self.csoaa or self.multilabel
                         or self.indexing is not None or not 0 <= self.ect_errors < 1 << 31):
            raise ConfigError("--ect K runs K classes (oaa = K, --error E >= 0) with gd's "
                              "update rules")  # fmt: skip
        if self.oaa:
            if self.oaa < 2:
                raise ConfigError(f"--oaa K needs K >= 2 classes, got {self.oaa}")
            if self.algo not in OAA_ALGORITHMS:
                raise ConfigError(f"--oaa runs with --algo {' or '.join(OAA_ALGORITHMS)} (VW's "
                                  f"gd or ftrl), not {self.algo}")  # fmt: skip
            if self.oaa_stride > 1 << self.bits:
                raise ConfigError(f"--oaa {self.oaa} needs -b {self.oaa_stride.bit_length() - 1} "
                                  f"at least (each feature takes {self.oaa_stride} slots)")
        elif self.oaa < 0:
            raise ConfigError(f"--oaa K needs K >= 2 classes, got {self.oaa}")
        if (self.l1_state is not None or self.l2_state is not None) and (
                self.algo != "gd" or self.minibatch > 1):
            raise ConfigError("--l1_state and --l2_state are gd's state (VW's gd): not of "
                              f"--{self.algo}")  # fmt: skip
        if self.indexing is not None:
            if self.indexing not in (0, 1):
                raise ConfigError(f"--indexing is 0 (labels 0..K-1) or 1 (labels 1..K), "
                                  f"not {self.indexing}")  # fmt: skip
            if not self.oaa:
                raise ConfigError("--indexing numbers the classes of --oaa K: it does "
                                  "nothing without --oaa")  # fmt: skip

    @property
    def oaa_stride(self) -> int:
        """With --oaa K: the slots each feature takes, K rounded up to a power of 2 (VW's
        ``total_feature_width``); feature slot h of class c is ``(h·stride + c) mod 2^b``."""
        return 1 << max(self.class_problems - 1, 0).bit_length() if self.oaa else 1

    @property
    def class_problems(self) -> int:
        """The binary problems of each feature under the ``oaa`` K classes: K, or with
        ``--ect`` the tournament's (K - 1)(E + 1) + E (VW's feature width); 0 without."""
        if self.ect and self.oaa:
            return (self.oaa - 1) * (self.ect_errors + 1) + self.ect_errors
        if self.oaa and "--log_multi" in self.stack:  # (its tree: K - 1 problems)
            return self.oaa - 1
        if self.oaa and "--recall_tree" in self.stack:  # (its 2^D - 1 routers, its K classes)
            at = self.stack.index("--max_depth") + 1 if "--max_depth" in self.stack else 0
            d = int(self.stack[at]) if 0 < at < len(self.stack) and self.stack[at].isdigit() \
                else int(math.ceil(math.log(self.oaa) / math.log(2.0)))
            return (1 << min(d, 62)) - 1 + self.oaa
        if self.oaa and "--plt" in self.stack:  # (its tree's nodes)
            return plt_tree(self.oaa, self.stack)[0]
        return self.oaa

    @property
    def classes_option(self) -> str:
        """VW's name of the reduction over the ``oaa`` K classes (``oaa``, ``csoaa``,
        ``multilabel_oaa``; "" without classes): what VW's model files keep."""
        if not self.oaa:
            return ""
        if self.ect:
            return "ect"
        return "csoaa" if self.csoaa else "multilabel_oaa" if self.multilabel else "oaa"

    def classes_options(self) -> list[tuple[str, str]]:
        """The options VW keeps with a model of the ``oaa`` K classes, as (VW's long name,
        value): ``--oaa K`` (or ``--csoaa``, ...), ``--indexing``, ``--ect``'s ``--error``."""
        if not self.oaa or any(w in self.stack for w in ("--cs_active", "--log_multi",
                                                          "--recall_tree", "--plt")):
            # (--cs_active K, --log_multi K, --recall_tree K: kept in stack)
            return []
        out = [(self.classes_option, str(self.oaa))]
        if self.indexing is not None:
            out.append(("indexing", str(self.indexing)))
        if self.ect and self.ect_errors:
            out.append(("error", str(self.ect_errors)))
        return out

    def class_weights(self) -> dict[int, float]:
        """``--classweight``'s multipliers by class, as VW keys them: the label truncated to
        an integer, modulo 2^32 (so ``-1:5`` weighs the label -1)."""
        weights: dict[int, float] = {}
        for spec in self.classweight:
            for item in spec.split(","):
                klass, _, weight = item.partition(":")
                try:
                    weights[int(klass) % (1 << 32)] = float(weight)
                except ValueError:
                    raise ConfigError(f"--classweight {item!r}: CLASS:WEIGHT expected (an "
                                      "integer and a number)") from None  # fmt: skip
        return weights

    def _check_vw_options(self) -> None:
        """The checks of the options VW users bring (see the fields' docstrings)."""
        self.class_weights()
        if not 0 <= self.hash_seed < 1 << 32:
            raise ConfigError(f"--hash-seed must be in 0..2^32-1, got {self.hash_seed}")
        online = self.algo not in BATCH_ALGORITHMS
        checks = [
            (self.hash in HASHES, f"--hash must be one of {', '.join(HASHES)}"),
            (self.zero_label in ZERO_LABELS,
             f"--zero-label must be one of {', '.join(ZERO_LABELS)}"),
            (self.numbers in NUMBERS, f"numbers must be one of {', '.join(NUMBERS)}"),
            (not self.affix or self.format in ("vw", "auto"),
             f"--affix makes features of VW text's names: not of --format {self.format}"),
            (not self.spelling or self.format in ("vw", "auto"),
             f"--spelling makes features of VW text's names: not of --format {self.format}"),
            (not self.redefine or self.format in ("vw", "auto"),
             f"--redefine renames VW text's namespaces (VW's other readers skip it): not "
             f"--format {self.format}'s"),
            (0.0 < self.quantile_tau < 1.0, "--quantile-tau must be in (0, 1)"),
            (0.0 < self.expectile_q <= 0.5, "--expectile_q must be in (0, 0.5]"),
            (math.isfinite(self.logistic_min) and math.isfinite(self.logistic_max)
             and self.logistic_min < self.logistic_max,
             "--logistic_min must be below --logistic_max"),
            (self.expectile_q == 0.5 or self.loss == "expectile",
             "--expectile_q applies to --loss expectile only"),
            (self.quantile_tau == 0.5 or self.loss == "quantile",
             "--quantile-tau applies to --loss quantile only"),
            (self.decay_learning_rate > 0 and math.isfinite(self.decay_learning_rate),
             "--decay-learning-rate must be a positive number"),
            (self.holdout_after >= 0, "--holdout-after must be >= 0"),
            (math.isfinite(self.initial_weight) and math.isfinite(self.initial_constant),
             "--initial-weight and --constant must be finite"),
            (self.algo == "gd" or (self.initial_weight == 0 and self.initial_constant == 0),
             "--initial-weight and --constant (-C) apply to --algo gd only"),
            (self.initial_weights in ("zero", "random", "normal", "truncated_normal"),
             "initial_weights must be one of zero, random, normal, truncated_normal"),
            (self.algo == "gd" or self.initial_weights == "zero",
             "--random_weights, --normal_weights and --truncated_normal_weights apply to "
             "gd only"),
            (online or not (self.test_only or self.holdout_after or self.binary),
             f"-t, --holdout-after and --binary do not apply to --algo {self.algo}"),
            (online or self.loss in ("squared", "logistic", "hinge"),
             f"--algo {self.algo} takes --loss squared, logistic or hinge"),
            (online or self.decay_learning_rate == 1.0,
             f"--decay-learning-rate does not apply to --algo {self.algo}"),
        ]  # fmt: skip
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)

    @property
    def loss_id(self) -> int:
        return LOSSES[self.loss]

    @property
    def effective_holdout(self) -> int:
        """Holdout period in force: VW's default of 10 when there are several passes."""
        if self.holdout_after:
            return 0  # VW: --holdout_after disables the holdout period
        if self.holdout_period is not None:
            return self.holdout_period
        return 10 if self.passes > 1 and self.algo not in BATCH_ALGORITHMS else 0

    def params(self, learn: bool = True) -> np.ndarray:
        """The kernels' params array for this configuration."""
        p = self.p
        norm_refresh = self.norm_refresh
        if self.algo == "smidas":
            from streamlearn.learners import smidas

            p = smidas.default_p(self.bits) if p is None else p
            norm_refresh = smidas.DEFAULT_NORM_REFRESH if norm_refresh is None else norm_refresh
        return make_params(
            learning_rate=self.learning_rate,
            power_t=self.power_t,
            initial_t=self.initial_t,
            l1=self.l1,
            l2=self.l2,
            theta=self.theta,
            period=self.period,
            p=p if p is not None else 2.0,
            norm_refresh=norm_refresh or 0,
            topk=min(self.top_k, 1 << self.bits) if self.top_k else 0,
            holdout_period=self.effective_holdout,
            learn=learn and not self.test_only,
            adaptive=self.adaptive,
            normalized=self.normalized,
            invariant=self.invariant,
            ftrl_alpha=0.5 if self.ftrl_alpha is None else self.ftrl_alpha,
            ftrl_beta=1.0 if self.ftrl_beta is None else self.ftrl_beta,
            min_prediction=self.min_prediction,
            max_prediction=self.max_prediction,
            minibatch=self.minibatch,
            quantile_tau=self.expectile_q if self.loss == "expectile" else self.quantile_tau,
            logistic_min=self.logistic_min,
            logistic_max=self.logistic_max,
            holdout_after=self.holdout_after,
            binary=self.binary,
            oaa=self.oaa,
            indexing=1 if self.ect else self.indexing,  # (a tournament: labels 1..K)
            freegrad_epsilon=1.0 if self.freegrad_epsilon is None else self.freegrad_epsilon,
            freegrad_lipschitz=self.freegrad_lipschitz or 0.0,
            freegrad_restart=self.freegrad_restart,
            freegrad_project=self.freegrad_project,
            freegrad_radius=self.freegrad_radius,
            seed=self.seed,
        )

    @property
    def default_learning_rate(self) -> float:
        """VW's default rate: 0.5 for its adaptive-and-normalized update, 10 for the others
        and for --sgd; 0.5 for the papers' learners (tg, fobos, smidas)."""
        gd = self.algo == "gd"
        plain = (gd and not (self.adaptive and self.normalized)) or self.algo == "sgd"
        return 10.0 if plain else 0.5

    @property
    def stride_shift(self) -> int:
        """VW's stride shift of gd's weights as it learns: 4 floats a slot with adaptive or
        normalized rates, else 1 (VW's random initial weights and ``--lrq``'s latent draws are
        seeded by float indices)."""
        return 2 if self.adaptive or self.normalized else 0

    @property
    def update_rule(self) -> str:
        """gd's update rule as VW names it ("adaptive normalized invariant", or "sgd")."""
        named = [n for n in UPDATE_RULE if getattr(self, n)]
        return " ".join(named) if named else "sgd"

    def namespaces(self):
        """The compiled interactions, namespace filters and n-grams, or None when there are none."""
        names = (*NAMESPACE_OPTIONS, *FEATURE_FLAGS)
        if (not any(getattr(self, name) for name in names) and self.hash == "strings"
                and not self.affix
                and self.numbers == "exact" and not self.hash_seed
                and self.format != "csv" and not self.named_labels
                and not self.csoaa and not self.multilabel):  # fmt: skip
            return None
        from streamlearn.io.interactions import compile_interactions

        given = {name: getattr(self, name) for name in names}
        if "--rank" in self.stack:  # (VW's gd_mf multiplies the pairs' latent sums itself)
            given["quadratic"] = ()
        inter = compile_interactions(
            **given, hash_all=self.hash == "all",
            f32=self.algo in FLOAT32_ALGORITHMS, vw_numbers=self.numbers == "vw",
            hash_seed=self.hash_seed,
        )
        import dataclasses

        if self.affix:
            from streamlearn.io.affix import affix_table

            inter = dataclasses.replace(inter, affix=affix_table(self.affix))
        if self.named_labels:
            from streamlearn.io.named import NamedLabels

            named = NamedLabels.of(self.named_labels)
            if self.oaa != named.k:
                raise ValueError(f"--named_labels names {named.k} classes: give --oaa {named.k}")
            inter = dataclasses.replace(inter, label_kind=1, named=named)
        if self.csoaa:
            inter = dataclasses.replace(inter, label_kind=1, cs_classes=self.oaa)
        if self.multilabel:
            inter = dataclasses.replace(inter, label_kind=1, ml_classes=self.oaa)
        if self.format != "csv":
            return inter

        from streamlearn.io.csv import CsvOptions, CsvReader

        opts = CsvOptions(self.csv_separator, self.csv_header, self.csv_no_file_header,
                          self.csv_ns_value)  # fmt: skip
        return dataclasses.replace(inter, csv=CsvReader(opts, self.hash == "all", self.hash_seed))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["theta"] = None if math.isinf(self.theta) else self.theta
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        """The configuration a model records (:meth:`to_dict`); unknown keys are ignored.

        Raises :class:`ConfigError` (a ValueError) for anything but a dict of valid options.
        """
        if not isinstance(d, dict):
            raise ConfigError(f"the options are not a mapping: {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        # (a model written before --autolink, --bootstrap and --bfgs moved into config.stack)
        if d.get("autolink"):
            kw["stack"] = (*kw.get("stack", ()), "--autolink", str(d["autolink"]))
        if isinstance(d.get("bfgs"), int) and d["bfgs"] >= 0:  # (--mem m)
            kw["stack"] = (*kw.get("stack", ()), "--bfgs", "--mem", str(d["bfgs"]))
            if d.get("termination", 0.001) != 0.001:
                kw["stack"] += ("--termination", repr(float(d["termination"])))
            if d.get("hessian_on"):
                kw["stack"] += ("--hessian_on",)
        if d.get("bootstrap"):
            kw["stack"] = (*kw.get("stack", ()), "--bootstrap", str(d["bootstrap"]))
            if d.get("bs_type", "mean") != "mean":
                kw["stack"] += ("--bs_type", str(d["bs_type"]))
        if kw.get("theta") is None:
            kw["theta"] = math.inf
        return cls(**kw)

    def replace(self, **changes) -> TrainConfig:
        if "algo" in changes and changes["algo"] != self.algo:
            # another learner: its own defaults for the options only it takes
            for name in ("ftrl_alpha", "ftrl_beta", "freegrad_epsilon", "freegrad_lipschitz"):
                changes.setdefault(name, None)
        return replace(self, **changes)


def _flag(name: str) -> str:
    """The command line's spelling of a field."""
    return {"freegrad_epsilon": "fepsilon", "freegrad_lipschitz": "flipschitz-const",
            "freegrad_restart": "restart", "freegrad_project": "project",
            "freegrad_radius": "radius"}.get(name, name.replace("_", "-"))  # fmt: skip
