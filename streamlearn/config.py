"""Training options: one validated record, the only place defaults live."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from streamlearn.learners import ALGORITHMS, MINIBATCH_ALGORITHMS
from streamlearn.learners.base import make_params
from streamlearn.learners.losses import NAMES as LOSSES

FORMATS = ("auto", "vw", "svmlight")

# Interactions and namespace filters: they decide which features exist, so a
# model keeps them (see streamlearn/io/interactions.py).
NAMESPACE_OPTIONS = ("quadratic", "cubic", "interactions", "ignore", "ignore_linear", "keep")

# gd's update rule (VW's --adaptive, --normalized, --invariant): naming any of
# them on the command line turns on only those named.
UPDATE_RULE = ("adaptive", "normalized", "invariant")

# Options fixed by the model: changing them on resume would make the saved
# table meaningless.
FIXED_BY_MODEL = ("bits", "algo", "loss", "constant", "hash", "top_k", *UPDATE_RULE,
                  *NAMESPACE_OPTIONS)  # fmt: skip

# Options of one run, never inherited from the initial model: continuing a
# model trained with --passes 5 on today's log makes one pass and holds
# nothing out unless this run asks for it.
PER_RUN = ("passes", "holdout_period", "early_terminate")


BATCH_ALGORITHMS = ("cd", "scd")
BATCH_EPOCHS = {"cd": 1000, "scd": 1000}


class ConfigError(ValueError):
    """An option value, or a combination of options, that cannot run."""


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _check_types(config: TrainConfig) -> None:
    """Each field of the type its annotation names (the CLI's click types check the
    same before a value gets here; code may pass anything): ``bits=18.5`` is refused
    with ``--bits must be an integer``, not a TypeError deep in a run.  numpy
    numbers are taken (a grid from ``np.arange``) and stored as Python ones."""
    import numbers

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
            ok = not isinstance(value, str | bytes) and all(isinstance(v, str) for v in value)
            want, cast = "a list of strings", tuple
        else:
            continue
        if not ok:
            raise ConfigError(f"{_option(f.name)} must be {want}, got {value!r}")
        object.__setattr__(config, f.name, cast(value))


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
    adaptive: bool = True
    normalized: bool = True
    invariant: bool = True
    ftrl_alpha: float = 0.5
    ftrl_beta: float = 1.0
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
    """cd with squared loss: stop when the duality gap is at most tol times the objective
    (F - F* <= tol F); otherwise (cd, scd) when a full sweep lowers the objective by at most
    tol (relative)."""
    seed: int = 0
    """scd: the seed of its random coordinates."""
    holdout_period: int | None = None
    early_terminate: int = 3
    constant: bool = True
    hash: str = "strings"
    format: str = "auto"
    quadratic: tuple[str, ...] = ()
    cubic: tuple[str, ...] = ()
    interactions: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    ignore_linear: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_types(self)
        for name in NAMESPACE_OPTIONS:  # lists from JSON or click become tuples
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
        gd = self.algo == "gd"
        adaptive_or_normalized = gd and (self.adaptive or self.normalized)
        if self.learning_rate is None:
            # VW's defaults: 0.5 for its adaptive-and-normalized update, 10 for the others
            # and for --sgd; 0.5 for the papers' learners (tg, fobos, smidas)
            plain = (gd and not (self.adaptive and self.normalized)) or self.algo == "sgd"
            rate = 10.0 if plain else 0.5
            object.__setattr__(self, "learning_rate", rate)
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
            (self.p is None or 2 <= self.p < math.inf, "--p must be a finite number >= 2"),
            (self.norm_refresh is None or self.norm_refresh >= 1, "--norm-refresh must be >= 1"),
            (
                self.ftrl_alpha > 0 and math.isfinite(self.ftrl_alpha),
                "--ftrl-alpha must be a positive number",
            ),
            (
                self.ftrl_beta >= 0 and math.isfinite(self.ftrl_beta),
                "--ftrl-beta must be >= 0",
            ),
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
        if self.algo != "ftrl" and (self.ftrl_alpha != 0.5 or self.ftrl_beta != 1.0):
            raise ConfigError("--ftrl-alpha and --ftrl-beta apply to --algo ftrl only")

    @property
    def loss_id(self) -> int:
        return LOSSES[self.loss]

    @property
    def effective_holdout(self) -> int:
        """Holdout period in force: VW's default of 10 when there are several passes."""
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
            learn=learn,
            adaptive=self.adaptive,
            normalized=self.normalized,
            invariant=self.invariant,
            ftrl_alpha=self.ftrl_alpha,
            ftrl_beta=self.ftrl_beta,
            min_prediction=self.min_prediction,
            max_prediction=self.max_prediction,
            minibatch=self.minibatch,
        )

    @property
    def update_rule(self) -> str:
        """gd's update rule as VW names it ("adaptive normalized invariant", or "sgd")."""
        named = [n for n in UPDATE_RULE if getattr(self, n)]
        return " ".join(named) if named else "sgd"

    def namespaces(self):
        """The compiled interactions and namespace filters, or None when there are none."""
        if not any(getattr(self, name) for name in NAMESPACE_OPTIONS):
            return None
        from streamlearn.io.interactions import compile_interactions

        return compile_interactions(**{name: getattr(self, name) for name in NAMESPACE_OPTIONS})

    def to_dict(self) -> dict:
        d = asdict(self)
        d["theta"] = None if math.isinf(self.theta) else self.theta
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        if kw.get("theta") is None:
            kw["theta"] = math.inf
        return cls(**kw)

    def replace(self, **changes) -> TrainConfig:
        return replace(self, **changes)
