"""A run's learner: its options and its live state.

:func:`merge_config` resolves a run's options (an initial model's, overridden by
the ones given); :class:`Learner` is the learner's state -- its kernels' spec,
weight table, global state and counters -- built fresh or continued from a
model, and captured as a model (:meth:`Learner.snapshot`);
:func:`class_weigher` weighs the examples it learns by class (``--classweight``).
``sl train``, ``sl predict``'s VW learners, the server and the API's live
learner all build their learner here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import FIXED_BY_MODEL, PER_RUN, ConfigError, TrainConfig
from streamlearn.errors import ModelError, UsageError
from streamlearn.hashing import CONSTANT_HASH
from streamlearn.io.batch import Batch
from streamlearn.learners import spec_by_name, spec_of
from streamlearn.learners.base import (
    G_CLIP,
    G_N,
    G_T,
    GSTATE_SIZE,
    LIFETIME_STATS,
    P_BINARY,
    P_HOLDOUT,
    P_HOLDOUT_AFTER,
    P_LEARN,
    LearnerSpec,
    new_stats,
)


def merge_config(model_cfg: TrainConfig | None, explicit: dict,
                 unrecorded: tuple[str, ...] = ()) -> TrainConfig:  # fmt: skip
    """Options for a run: the model's (when continuing), overridden by explicit ones.

    Options fixed by the model (bits, algorithm, loss, constant, hashing) may
    be repeated but not changed, unless its file did not record them
    (``unrecorded``, :func:`streamlearn.model.unrecorded`: a VW model's loss).
    Options of one run (:data:`PER_RUN`: passes, holdout, early termination)
    are never inherited: they are this run's, or the defaults.
    """
    try:
        if model_cfg is None:
            return TrainConfig(**explicit)
        defaults = {f.name: f.default for f in fields(TrainConfig)}
        explicit = {**{k: defaults[k] for k in PER_RUN}, **explicit}
        fixed: dict = {}
        if model_cfg.stack:  # what a model's reduction always sets (--ksvm: the hinge loss,
            from streamlearn.reductions import fixed_fields  # --log_multi K: K classes)

            fixed = fixed_fields(model_cfg.stack)
            model_cfg = model_cfg.replace(**fixed)
        for key in FIXED_BY_MODEL:
            if key in unrecorded or (key == "loss" and explicit.get("test_only")):
                continue  # not in the file, or only scoring (VW's -t -i reports any loss)
            if key == "stack" and key in explicit:
                from streamlearn.io.vwmodel import vw_order
                from streamlearn.reductions import fixed_words

                # the same options in whatever order (VW's model keeps them in its own)
                mine, its = (vw_order(" ".join(fixed_words(w)))
                             for w in (explicit[key], model_cfg.stack))  # fmt: skip
                if mine == its:
                    continue  # (--bfgs over a gd model, as VW: warm-started)
                merged = _merged_stack(explicit[key], model_cfg.stack)
                if merged is not None:  # (as VW merges a model's options into the line's)
                    explicit = {**explicit, key: merged}
                    continue
            if key in explicit and explicit[key] != getattr(model_cfg, key):
                if key == "stack":  # a reduction's own words (--lrq ab3): shown as they are
                    raise UsageError(
                        f"{' '.join(explicit[key]) or 'no reduction'} conflicts with the "
                        "initial model, which was trained with "
                        f"{' '.join(model_cfg.stack) or 'none'}"
                    )
                raise UsageError(
                    f"--{key.replace('_', '-')} {_shown(explicit[key])} conflicts with the "
                    f"initial model, which was trained with {key.replace('_', '-')} "
                    f"{_shown(getattr(model_cfg, key))}"
                )
        explicit = {**explicit, **fixed}  # (and a run gives them as the model's)
        if unrecorded:  # their defaults, resolved with the run's options (VW's rates)
            kept = {k: v for k, v in model_cfg.to_dict().items() if k not in unrecorded}
            return TrainConfig.from_dict({**kept, **explicit})
        return model_cfg.replace(**explicit)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def _merged_stack(mine: tuple[str, ...], its: tuple[str, ...]) -> tuple[str, ...] | None:
    """A run's reduction words over a model's, as VW merges a model's options into its
    command line: the words VW keeps with a model (``--ksvm --kernel rbf``) that the run
    gives must be the model's, and those it leaves out are the model's (but for those VW
    keeps only when given, ``--mellowness``: a model without one ran with its default, and
    the run's is the run's); the words of a run (``--reprocess 5``) are the run's, else the
    model's.  None when they disagree."""
    from streamlearn.learners.stacked import KEPT_WHEN_GIVEN, kept_stack, run_words

    model_kept = kept_stack(its)
    named = {w for w, _ in model_kept}
    added = [kv for kv in kept_stack(mine) if kv[0] not in named and kv[0][2:] in KEPT_WHEN_GIVEN]
    if not set(kept_stack(mine)) - set(added) <= set(model_kept):
        return None
    given = run_words(mine)
    names = {w for w, _ in given}
    out = [w for kv in [*model_kept, *added] for w in kv if w is not None]
    for w, v in [*given, *(kv for kv in run_words(its) if kv[0] not in names)]:
        out += [w] if v is None else [w, v]
    return tuple(out)


def _shown(value) -> str:
    """An option's value as typed (``ab cd`` for repeated ``-q``, ``none`` for none)."""
    if isinstance(value, tuple):
        return " ".join(value) if value else "none"
    return str(value)


def _spec(config: TrainConfig) -> LearnerSpec:
    """The kernels that learn with ``config``'s algorithm and options: a reduction's of
    :data:`streamlearn.reductions.SINGLE_LINE` when its ``stack`` names one."""
    if config.stack:
        from streamlearn.reductions import single_line

        named = single_line(config)
        if named is not None:  # (None: one VW sets up only to learn, under -t)
            return named[0].spec(config)
    return spec_of(config)


def _given_state(config: TrainConfig, gstate: np.ndarray, fresh: bool) -> None:
    """VW's ``--l1_state``/``--l2_state``: gd's gravity and contraction a run starts from. A
    fresh run takes a value given; a continued one a value given that is not the default
    (0, 1), else the model's (VW's gd: the command line's when not its default)."""
    if config.l1_state is None and config.l2_state is None:
        return
    from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY

    for value, slot, default in ((config.l1_state, G_GRAVITY, 0.0),
                                 (config.l2_state, G_CONTRACTION, 1.0)):  # fmt: skip
        if value is not None and (fresh or value != default):
            gstate[slot] = value


@dataclass
class Learner:
    """A learner's live state: spec, table, global state, counters."""

    config: TrainConfig
    spec: LearnerSpec
    table: np.ndarray
    gstate: np.ndarray
    stats: np.ndarray
    counted: np.ndarray | None = None
    """The initial model's counters when this run counts from zero (VW's default, without
    --preserve_performance_counters): added back into the model saved."""

    @classmethod
    def fresh(cls, config: TrainConfig) -> Learner:
        spec = _spec(config)
        params = config.params()
        table = spec.new_table(config.bits)
        if config.initial_weight != 0.0:  # VW's --initial_weight: every slot (gd only)
            table[:, 0] = config.initial_weight
        elif config.initial_weights != "zero":  # VW's random initial weights (gd only)
            from streamlearn.learners.initial import initial_weights

            table[:, 0] = initial_weights(config.initial_weights, config.bits,
                                          config.stride_shift, config.seed)  # fmt: skip
        if config.initial_constant != 0.0:  # VW's -C: the constant's slot
            table[CONSTANT_HASH & ((1 << config.bits) - 1), 0] = config.initial_constant
        gstate = spec.init_gstate(params)
        _given_state(config, gstate, fresh=True)
        return cls(config, spec, table, gstate, new_stats())

    @classmethod
    def from_model(cls, model: model_io.Model, config: TrainConfig) -> Learner:
        spec = _spec(config)
        if spec.name == model.learner:
            if spec.name == "gd" and model.state.shape[1] == 3:
                # written before gd kept each slot's last rate (VW's spare float): a zero
                # rate means "not rated yet", which only a zero-gradient update reads
                model.state = np.pad(model.state, ((0, 0), (0, 1)))
            table = model.table(spec.fresh, spec.dtype)
            gstate = model.gstate.copy()
            t = model_io.learned_weight(model, config)
            if t is not None:  # VW's t, counted from this run's --initial_t (as VW)
                gstate[G_T] = t
            if config.test_only and model_io.is_vw(model):
                # VW settles a model's l1 and l2 state into its weights when it only tests
                spec.rebase(table, gstate, model.config.params())
            before, now = model.config.params(), config.params()
            for k in (P_HOLDOUT, P_HOLDOUT_AFTER, P_LEARN, P_BINARY):
                before[k] = now[k] = 0.0  # per run: no bearing on what is owed
            if not np.array_equal(before, now) and not model_io.is_vw(model):
                # e.g. another --l1: settle what each slot owes under the options it
                # was owed under, so the new ones apply from this run's first step (a VW
                # model records no --l1, --l2: its state goes on under the new ones, as VW)
                spec.rebase(table, gstate, before)
        else:
            # different regularisers: warm start from the model's current weights,
            # each slot current at the new learner's initial sums
            try:
                old = spec_by_name(model.learner)
            except ValueError:
                raise ModelError(
                    f"the model was written by learner {model.learner!r}, which this sl "
                    "does not know (a newer version?)"
                ) from None
            if old.name == "smidas" or spec.name == "smidas":
                raise UsageError("cannot change the options of a smidas model")
            if spec.name == "l0":
                raise UsageError(
                    f"cannot continue a {model.learner} model with --algo l0: "
                    "train l0 from scratch (its heap holds every live weight)"
                )
            table = spec.warm_table(config.bits, model.slots, model.weights)
            gstate = spec.init_gstate(config.params())
            gstate[G_T] = model.gstate[G_T]
            gstate[G_N] = model.gstate[G_N]
            # the prediction range (G_CLIP..G_LABEL_MAX)
            gstate[G_CLIP:GSTATE_SIZE] = model.gstate[G_CLIP:GSTATE_SIZE]
            if hasattr(spec.train_batch, "warm_gstate"):  # (--OjaNewton: VW's generator)
                spec.train_batch.warm_gstate(gstate, model.gstate)
        stats = model.stats.copy()
        if hasattr(spec.train_batch, "restore"):  # (--ksvm: its support vectors after it)
            gstate = spec.train_batch.restore(gstate)
        fresh = spec.init_gstate(config.params())  # GSTATE_SIZE but for l0's heap, boosting's
        want = fresh.shape[0]
        if gstate.shape[0] < want and model_io.is_vw(model):
            # a reduction's state VW's model file does not keep (--boosting's other learners'
            # sums): as a fresh run starts it
            fresh[: gstate.shape[0]] = gstate
            gstate = fresh
        if stats.shape[0] != new_stats().shape[0] or gstate.shape[0] != want:
            raise ModelError("model counters have an unexpected layout")
        _given_state(config, gstate, fresh=False)
        if not config.preserve_performance_counters:
            return cls(config, spec, table, gstate, new_stats(), counted=stats)
        return cls(config, spec, table, gstate, stats)

    def snapshot(self, names=None, meta=None, final: bool = False) -> model_io.Model:
        """The model as it stands; ``final``: the run is over, and the table may be
        reused for the model's state (:func:`~streamlearn.model.from_training`), after
        which it is gone (None)."""
        stats = self.stats
        if self.counted is not None:
            stats = stats.copy()
            stats[LIFETIME_STATS] += self.counted[LIFETIME_STATS]
        model = model_io.from_training(
            self.config,
            self.spec,
            self.table,
            self.gstate,
            stats,
            self.config.params(),
            names=names,
            meta=meta,
            final=final,
        )
        if hasattr(self.spec.train_batch, "saved"):  # (--ksvm: its support vectors)
            model.gstate = np.concatenate([model.gstate, self.spec.train_batch.saved()])
        if final:
            self.table = None  # its rows may have moved: nothing may read it now
        return model


def class_weigher(config: TrainConfig):  # noqa: ANN201 - a function of a batch, or None
    """VW's ``--classweight``: each learned example's importance weight times its class's
    multiplier (a new array: a batch replayed by the API is not weighed twice); None when
    there is none, or nothing is learned (VW weighs examples it learns only)."""
    table = config.class_weights()
    if not table or config.test_only or "--recall_tree" in config.stack:
        return None  # (--recall_tree weighs them itself: its router reads both weights)
    keys = np.array(sorted(table), dtype=np.uint64)
    factors = np.array([table[int(k)] for k in keys], dtype=np.float32)

    def weigh(batch: Batch) -> None:
        labels = batch.labels
        known = np.isfinite(labels)
        klass = np.zeros(labels.shape[0], dtype=np.uint64)
        klass[known] = np.trunc(labels[known]).astype(np.int64).astype(np.uint64) & 0xFFFFFFFF
        at = np.minimum(np.searchsorted(keys, klass), len(keys) - 1)
        hit = known & (keys[at] == klass)
        if hit.any():
            w = batch.weights.copy()
            w[hit] = (w[hit].astype(np.float32) * factors[at[hit]]).astype(np.float64)
            batch.weights = w

    return weigh

