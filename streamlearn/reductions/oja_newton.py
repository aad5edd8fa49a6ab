"""Online Newton step with Oja's sketch, VW's ``--OjaNewton`` (``--sketch_size``,
``--epoch_size``, ``--alpha``, ``--alpha_inverse``, ``--learning_rate_cnt``, ``--normalize``,
``--random_init``): the base learner that replaces gd, in the single-line reductions' shape
(:mod:`streamlearn.reductions.svrg` is the nearest).  :mod:`streamlearn.learners.oja_newton`
is the kernel and says how.

What it owns: its words in ``TrainConfig.stack`` (``("--OjaNewton", "--sketch_size",
"5")``); its VW options and their refusals (its update is its own: none of gd's rules,
regularizers or schedule); its learner (:func:`spec`: the entry keeps the sketch, which VW
keeps in no model, for the run).  Its VW model file is gd's with plain updates (``w̄``
only) and ``--OjaNewton --random_seed S`` as options (``learners/stacked.kept``: VW's
generator after the sketch's draws); a resume model (saved without
``--predict_only_model``) is refused when read: VW reads it into an undefined sketch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import (
    WITHOUT_GD_DEFAULTS,
    configured,
    ignore_alone,
    refuse_without_gd,
)
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "OjaNewton"
"""Its name in VW's ``Enabled learners`` line, where the base learner's would be."""
BASE = True
"""VW names it instead of gd (it is the learner, not a reduction over gd)."""
AVERAGED = False
"""Its model is not one Dask's workers could average (its sketch is the run's)."""
MOST_SKETCH = 256
"""The largest ``--sketch_size`` sl runs (the table holds m + 2 floats per slot)."""

_NUMBERS = ("--sketch_size", "--epoch_size", "--alpha", "--alpha_inverse",
            "--learning_rate_cnt", "--normalize", "--random_init")  # fmt: skip


@dataclass(frozen=True)
class Options:
    sketch_size: int = 10
    epoch_size: int = 1
    alpha: float = 1.0
    learning_rate_cnt: float = 2.0
    normalize: bool = True
    random_init: bool = True

    def conf(self) -> np.ndarray:
        """The kernel's options (``learners.oja_newton.C_M`` ...) and a fresh step count."""
        from streamlearn.learners import oja_newton as K

        conf = np.zeros(K.CONF_SIZE)
        conf[K.C_M] = self.sketch_size
        conf[K.C_EPOCH] = self.epoch_size
        conf[K.C_ALPHA] = float(np.float32(self.alpha))
        conf[K.C_RATE] = float(np.float32(self.learning_rate_cnt))
        conf[K.C_NORMALIZE] = float(self.normalize)
        conf[K.C_T] = 1.0
        return conf


def _f32(name: str, text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise UsageError(f"{name} {text}: a number is expected") from None
    return float(np.float32(x))


def _int(name: str, text: str, low: int, high: int) -> int:
    if not text.isdigit() or not low <= int(text) <= high:
        raise UsageError(f"{name} {text}: an integer from {low} to {high} is expected")
    return int(text)


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--OjaNewton``.  ``--normalize`` and ``--random_init`` are VW's strings: ``true``
    turns them on (their default), any other word off."""
    if "--OjaNewton" not in words:
        return None
    given: dict[str, str] = {}
    it = iter(words)
    for w in it:
        if w in _NUMBERS:
            given[w] = next(it, "")
    out: dict = {}
    if "--sketch_size" in given:
        out["sketch_size"] = _int("--sketch_size", given["--sketch_size"], 0, MOST_SKETCH)
    if "--epoch_size" in given:
        out["epoch_size"] = _int("--epoch_size", given["--epoch_size"], 1, 1 << 20)
    if "--alpha" in given:
        out["alpha"] = _f32("--alpha", given["--alpha"])
    if "--alpha_inverse" in given:  # (VW: α = 1/that, in float32, whatever --alpha says)
        inv = np.float32(_f32("--alpha_inverse", given["--alpha_inverse"]))
        with np.errstate(divide="ignore"):
            out["alpha"] = float(np.float32(1.0) / inv)
    if "--learning_rate_cnt" in given:
        out["learning_rate_cnt"] = _f32("--learning_rate_cnt", given["--learning_rate_cnt"])
    for key in ("normalize", "random_init"):
        if f"--{key}" in given:
            out[key] = given[f"--{key}"] == "true"
    return Options(**out)


def _flag(t: Command, name: str, value: str | None) -> None:  # noqa: ARG001
    t.learn["stack"] = (*t.learn.get("stack", ()), "--OjaNewton")


def _valued(t: Command, name: str, value: str | None) -> None:
    t.learn["stack"] = (*t.learn.get("stack", ()), f"--{name}", value or "")


VW_OPTIONS = {"OjaNewton": VWOption(None, False, _flag),
              **{w[2:]: VWOption(None, True, _valued) for w in _NUMBERS if w != "--alpha"}}
"""VW's options of the learner (``--alpha`` is declared by ``active_cover``, whose words
it shares: its settle leaves it to ``--OjaNewton``)."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""

TRAIN_DEFAULTS = dict(WITHOUT_GD_DEFAULTS)
"""VW's OjaNewton runs none of gd's rules; VW's header shows rate 0.5 and t0 0."""


FIXED = dict(WITHOUT_GD_DEFAULTS)
"""What a model of it always runs with (a VW model without its resume state records no
update rule: gd's defaults would otherwise fill them in; the rate and t0 VW's header
shows, which OjaNewton does not read)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """VW's set-up of ``--OjaNewton`` with the rest of a command line: its options alone
    are ignored (with a note, as VW ignores them), its refusals (one line, exit 2), and
    its update (none of gd's rules)."""
    if not ignore_alone(t, "--OjaNewton", (), tuple(w for w in _NUMBERS if w != "--alpha")):
        return
    try:
        read(t.learn.get("stack", ()))
    except UsageError as e:
        raise VWUsage(e.message) from None
    refuse(t.learn, t.outputs)
    for key, value in TRAIN_DEFAULTS.items():
        t.learn.setdefault(key, value)
    t.learn["early_terminate"] = t.learn.get("passes", 1) + 1


def refuse(learn: dict, outputs: dict) -> None:
    """What sl's ``--OjaNewton`` does not run with, one line each."""
    refuse_without_gd(learn, outputs, "--OjaNewton", "OjaNewton", "draws its own sketch",
                      ("audit", "invert_hash"))


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


class Entry:
    """The kernel entry of one run: the sketch (VW keeps it in no model: each run draws it
    afresh over the whole table before its first example, from the generator in the global
    state) and the epoch's buffer, grown to hold the examples waiting in it."""

    wants_ns = True

    def __init__(self, opts: Options, seed: int) -> None:
        from streamlearn.learners import oja_newton as K

        self.opts = opts
        self.seed = seed
        self.conf = opts.conf()
        self.mats, self.vecs = K.fresh_state(opts.sketch_size)
        self.buf_at = np.zeros(opts.epoch_size + 1, dtype=np.int64)
        self.buf_g = np.zeros(opts.epoch_size, dtype=np.float32)
        self.buf_rows = np.zeros(1024, dtype=np.int64)
        self.buf_vals = np.zeros(1024, dtype=np.float32)
        self.started = False

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        from streamlearn.learners import oja_newton as K

        return K.init_gstate(params, self.seed)

    def warm_gstate(self, gstate: np.ndarray, model: np.ndarray) -> None:
        """A model's generator (VW's ``--random_seed`` in its options) into a run's fresh
        global state, which draws the sketch from it."""
        from streamlearn.learners import oja_newton as K

        if model.shape[0] >= K.STATE_SIZE:
            gstate[K.G_RNG : K.STATE_SIZE] = model[K.G_RNG : K.STATE_SIZE]

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds, ns):  # fmt: skip
        from streamlearn.learners import oja_newton as K

        if not self.started:  # (VW's initialize_Z, as a model is set up)
            self.started = True
            rng = np.array([K.get_rng(gstate)], dtype=np.uint64)
            o = self.opts
            K.initialize(table, np.int64(o.sketch_size), o.normalize, o.random_init, rng)
            K.set_rng(gstate, int(rng[0]))
        need = int(self.buf_at[int(self.conf[K.C_CNT])]) + int(indptr[-1] - indptr[0])
        if need > self.buf_rows.shape[0]:
            size = max(need, 2 * self.buf_rows.shape[0])
            self.buf_rows = np.resize(self.buf_rows, size)
            self.buf_vals = np.resize(self.buf_vals, size)
        if ns is None:  # (svmlight: no namespaces, nothing crossed)
            ns = np.empty(0, dtype=np.uint8)
        K.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels, weights,
                      bases, status, stats, rows, preds, ns, self.conf, self.mats, self.vecs,
                      self.buf_rows, self.buf_vals, self.buf_at, self.buf_g)  # fmt: skip


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """The sketched Newton learner with the run's options and generator."""
    import dataclasses

    from streamlearn.learners import oja_newton

    opts = configured(config, read, refuse)
    entry = Entry(opts, config.seed)
    return dataclasses.replace(oja_newton.spec(opts.sketch_size), train_batch=entry,
                               init_gstate=entry.init_gstate)  # fmt: skip
