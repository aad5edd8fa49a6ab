"""Contextual bandits through sl's own interface: ``sl train``/``sl predict``, the Python
API (:meth:`streamlearn.api.Model.choose`, :meth:`~streamlearn.api.Model.learn`) and the
server, over the kernels ``sl vw`` runs (:mod:`streamlearn.run.multiline`).

:class:`Bandit` is one live learner of a multiline reduction -- ``--cb-adf`` (VW's
``--cb_adf``, with ``--explore``: ``--cb_explore_adf``), ``--cb K``, ``--csoaa-ldf`` --
whose whole state (gd's table and global state, cb_adf's counters, the explorer's
counters and VW's random generator) is kept between calls and in sl's model file
(:func:`Bandit.to_model`, the reduction and that state in the file's ``meta``), so that
continuing a saved model (``-i``), N calls of one example or one call of N examples learn
exactly what one uninterrupted run over the same examples learns.

Predictions (``-p``, sl's format: one line per example, no blank line between them):

* ``--explore``: the pmf, VW's ``action:probability`` list in the explorer's order
  (``1:0.9625,0:0.0125,...``), 0-based actions among the action lines, then the tag;
* ``--cb-adf`` without an explorer: the top-ranked action (0-based), then the tag
  (``--rank-all``: VW's ``action:score`` list);
* ``--csoaa-ldf``: the predicted class (``--csoaa-rank``: VW's ``class:score`` list).

``sl vw -p`` writes the same lines each followed by a blank line (VW's multiline
``-p``); the server answers VW's way (:class:`BanditServed`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import TrainConfig
from streamlearn.errors import ModelError, UsageError
from streamlearn.io.batch import Block
from streamlearn.io.examples import Part, Tags, parse_options
from streamlearn.learners import cb_adf, csoaa_ldf
from streamlearn.learners.base import P_LEARN
from streamlearn.reductions import Multiline, reduction_of
from streamlearn.reductions.base import Seen
from streamlearn.reductions.cb_adf import cb_part
from streamlearn.reductions.options import config_of
from streamlearn.run.bandit_options import BANDIT_OPTIONS, EXPLORE_NAMES, multiline_of  # noqa: F401
from streamlearn.run.driver import Replay, drive
from streamlearn.run.mlpasses import ExampleLearning, cb_width, prepare

META = "multiline"
"""The key of a bandit model's reduction in the model file's ``meta`` (its state: ``bandit``)."""

def is_bandit(m: model_io.Model | None) -> bool:
    """Whether ``m`` is a multiline reduction's model (:meth:`Bandit.to_model`)."""
    return m is not None and isinstance(m.meta.get(META), dict)


class Bandit:
    """A multiline reduction's live learner: its weights, counters and explorer state."""

    def __init__(self, config: TrainConfig, ml: Multiline,
                 start: model_io.Model | None = None) -> None:  # fmt: skip
        from streamlearn.io.interactions import compile_interactions
        from streamlearn.learners.base import fresh_table

        if config.algo != "gd":
            raise UsageError(f"bandits run on gd (VW's default learner), not {config.algo}")
        if ml.cb_type not in cb_adf.CB_TYPES:
            raise UsageError(f"--cb-type {ml.cb_type}: one of {', '.join(cb_adf.CB_TYPES)}")
        self.config = config
        self.ml = ml
        self.params = config.params()
        self.loss_id = config.loss_id
        self.cb_type = cb_adf.CB_TYPES[ml.cb_type]
        self.step = 1 if ml.reduction == "cb" or ml.cb_type != "dr" else 2
        red = reduction_of(ml)
        red.check_served()
        if not red.batched:
            name = "slates" if ml.reduction == "slates" else "ccb_explore_adf"
            raise UsageError(f"--{name}: only sl vw's passes run its examples; serving a "
                             f"--{name} model, or the API's bandit calls on it: not yet")
        self.kind = red.label_kind
        self.full = config.namespaces() or compile_interactions()
        full = self.full
        self.parse_inter = parse_options(full, self.kind)
        if ml.reduction == "cb" and full.crosses_or_filters:
            raise UsageError("--cb K with interactions or namespace filters is not supported yet "
                             "(VW crosses its rewritten indices); use --cb-adf")  # fmt: skip
        self.learner = red.learner(ml, config)
        """The reduction's learner (:mod:`streamlearn.reductions`): this object is its state."""
        self.xp = getattr(self.learner, "xp", None)
        """The explorer's state (:class:`~streamlearn.reductions.explore.Explorer`), if any."""
        gstate = csoaa_ldf.init_gstate(self.params)
        if self.xp is not None:
            gstate = self.xp.grow(gstate, self.cb_type)  # (sets the bag's layout too)
        if start is None:
            self.table = fresh_table(config.bits, (0.0, 0.0, 0.0, 0.0), np.float32)
            self.gstate = gstate
            self.stats = np.zeros(cb_adf.STATS)
            self.dr_prev = np.zeros(257)
        else:
            st = start.meta.get("bandit") or {}
            try:
                self.table = start.table((0.0, 0.0, 0.0, 0.0), np.float32)
                self.gstate = np.array(start.gstate, dtype=np.float64)
                self.stats = np.array(st["stats"], dtype=np.float64)
                self.dr_prev = np.array(st["dr_prev"], dtype=np.float64)
                if self.xp is not None:
                    self.xp.xstats = np.array(st["xstats"], dtype=np.float64)
                    self.xp.rng = np.array([int(st["rng"])], dtype=np.uint64)
                    self.xp.counts = np.array(st["counts"], dtype=np.float64)
                    if "costs" in st:  # (--explore synthcover's; models before it have none)
                        self.xp.costs = np.array(st["costs"], dtype=np.float64)
            except (KeyError, TypeError, ValueError) as e:
                raise ModelError(f"a bandit model without its state ({e})") from None
            xs = self.xp.xstats.shape if self.xp is not None else (self.xp_size(),)
            if (self.gstate.shape != gstate.shape or self.stats.shape != (cb_adf.STATS,)
                    or xs != (self.xp_size(),)):  # fmt: skip
                raise ModelError("the bandit model's state does not fit its options")
        self.tables = cb_adf.tables_of(self.table)
        self.parsed: dict = {}
        """The API's recently parsed examples (:func:`api_part`)."""
        self.one = None
        """:meth:`one_example`'s parser (made at its first call)."""
        self.stepper = None
        """:meth:`line`'s one-call step (made at its first call; False: none for this run)."""
        self.draws = int((start.meta.get("bandit") or {}).get("draws", 0)) if start else 0
        """Actions sampled by :meth:`choose` (the next one's seed: ``seed + draws``)."""

    def xp_size(self) -> int:
        return self.xp.ex.XSTATS if self.xp is not None else 0

    # -- examples ---------------------------------------------------------------------------

    def parse(self, block: Block) -> Part:
        """A block of whole multiline examples (``--cb K``: single lines) made ready."""
        from streamlearn.io.multiline import cross_merged, merge_shared, parse_examples

        cfg = self.config
        if self.ml.reduction == "cb":
            return cb_part(block, cfg.bits, cfg.constant, self.parse_inter, self.ml.actions,
                           cb_width(self.ml))  # fmt: skip
        ex = parse_examples(block, cfg.bits, cfg.constant, self.parse_inter, self.kind)
        mg = cross_merged(merge_shared(ex), self.full, cfg.bits)
        return prepare(self.ml, ex, mg)

    def line(self, data: bytes, learn: bool, first_line: int = 1,
             guard: bool = False) -> Seen | None:  # fmt: skip
        """One example (``--cb K``'s line, or a multiline example's lines: each ending in a
        newline, no blank line) as :meth:`one_example` then :meth:`run` (``learn``) or
        :meth:`score` give it, in one kernel call
        (:meth:`~streamlearn.reductions.cb_line.CbLineParser.step`,
        :meth:`~streamlearn.reductions.cb_example.AdfStep.step`; what it gives is valid
        until the next call); None where they must run (nothing has moved).  ``guard``: an
        example whose update would leave the model non-finite is put back and raises
        :class:`~streamlearn.reductions.cb_line.Diverging`."""
        stepper = self.stepper
        if stepper is None:
            if self.one is None:
                self.one_example(b"")  # (the parser, made)
            if self.ml.reduction == "cb":
                stepper = self.one
            elif self.ml.reduction == "cb_adf":
                from streamlearn.reductions.cb_example import AdfStep

                stepper = AdfStep(self.one)
            else:
                stepper = False
            self.stepper = stepper
        if not stepper:
            return None
        xp = self.xp
        if learn:
            learning = xp is not None and xp.learning
            if guard:
                return stepper.step(data, first_line, self, self.learner, learning, True)
            return stepper.step(data, first_line, self, self.learner, learning)
        params = self.params
        before = params[P_LEARN]  # (as predicting(), without a context manager's cost)
        params[P_LEARN] = 0.0
        try:
            return stepper.step(data, first_line, self, self.learner, False)
        finally:
            params[P_LEARN] = before

    def one_example(self, data: bytes, first_line: int = 1) -> Part | None:
        """One example's lines (each ending in a newline, no blank line among them) made
        ready as :meth:`parse` makes them, through the arrays an
        :class:`~streamlearn.io.oneexample.ExampleParser` (``--cb K``'s line: a
        :class:`~streamlearn.reductions.cb_line.CbLineParser`) keeps between calls (the part
        is valid until the next call); None where it leaves them to :meth:`parse` (a
        malformed line, ...)."""
        if self.one is None:
            cfg = self.config
            if self.ml.reduction == "cb":
                from streamlearn.reductions.cb_line import CbLineParser

                self.one = CbLineParser(cfg.bits, cfg.constant, self.parse_inter,
                                        self.ml.actions, cb_width(self.ml))  # fmt: skip
                return self.one.part(data, first_line)
            from streamlearn.io.oneexample import ExampleParser

            red = reduction_of(self.ml)
            self.one = ExampleParser(cfg.bits, cfg.constant, self.parse_inter, self.kind,
                                     self.full, red.cb, red.features(self.ml))  # fmt: skip
        return self.one.part(data, first_line)

    def parse_one(self, data: bytes, source: str, first_line: int = 1) -> Part:
        """:meth:`one_example`, else :meth:`parse` of the example (and its errors)."""
        part = self.one_example(data, first_line)
        if part is not None:
            return part
        data = np.frombuffer(bytearray(data + b"\n"), dtype=np.uint8)
        return self.parse(Block(data, source, first_line, live=True))

    def run(self, part: Part, holdout: np.ndarray | None = None, one: bool = False) -> Seen:
        """Score each example of ``part`` (the pmf with an explorer) and learn the labeled
        ones (unless ``test_only``), as ``sl vw`` does a batch: the reduction's learner
        over this learner's state.  ``one``: ``part`` is :meth:`one_example`'s (one example
        in arrays kept between calls), which a learner's ``learn_one`` may take."""
        m = part.mg.act_ptr.shape[0] - 1
        if m == 0:
            return Seen(part)
        if one and holdout is None:
            fast = getattr(self.learner, "learn_one", None)
            seen = fast(self, part) if fast is not None else None
            if seen is not None:
                return seen
        ho = np.zeros(m, dtype=np.bool_) if holdout is None else holdout
        return self.learner.learn(self, part, ho)

    @contextmanager
    def uncounted(self) -> Iterator[None]:
        """Counters and the explorer's statistics as they were before the block: the
        examples it runs are not counted (choosing, predicting, warming up)."""
        xp = self.xp
        saved = self.stats.copy(), (xp.xstats.copy() if xp is not None else None)
        try:
            yield
        finally:
            self.stats[:] = saved[0]
            if xp is not None:
                xp.xstats[:] = saved[1]

    def score(self, part: Part, one: bool = False) -> Seen:
        """:meth:`run` without learning (VW's ``predict``: each example scored, its pmf
        made, and counted; no weight, sum or explorer state moves); ``one`` as there."""
        with self.predicting():
            return self.run(part, one=one)

    @contextmanager
    def predicting(self) -> Iterator[None]:
        """The learner's switches off (weights, sums, the explorer's state): :meth:`score`."""
        xp = self.xp
        before = self.params[P_LEARN], (xp.learning if xp is not None else None)
        self.params[P_LEARN] = 0.0
        if xp is not None:
            xp.learning = False
        try:
            yield
        finally:
            self.params[P_LEARN] = before[0]
            if xp is not None:
                xp.learning = before[1]

    def lines(self, step: Seen, vw: bool = False) -> list[str]:
        """The ``-p`` lines of a step: sl's (one per example, module doc), or with ``vw``
        VW's (each example's then a blank line; ``--csoaa-ldf``: one per action line)."""
        out: list[str] = []
        if step.part.mg.act_ptr.shape[0] > 1:
            self.learner.write(step, out, vw)
        return out

    # -- the model --------------------------------------------------------------------------

    def state(self) -> dict:
        xp = self.xp
        return {
            "dr_prev": self.dr_prev.tolist(),
            "xstats": xp.xstats.tolist() if xp is not None else [],
            "rng": int(xp.rng[0]) if xp is not None else 0,
            "counts": xp.counts.tolist() if xp is not None else [],
            "costs": xp.costs.tolist() if xp is not None else [],
            "stats": self.stats.tolist(),
            "draws": self.draws,
        }

    def to_model(self) -> model_io.Model:
        """sl's model of the learner as it stands (copies: the learner goes on)."""
        from streamlearn.learners import gd
        from streamlearn.learners.base import S_N, STATS_SIZE

        stats = np.zeros(STATS_SIZE)  # (sl's counters of a single-line model: examples)
        stats[S_N] = self.stats[cb_adf.N_EX]
        table = self.table
        slots = np.flatnonzero((table != 0).any(axis=1)).astype(np.uint32)
        weights = np.empty(slots.shape[0])
        gd.SPEC.current_weights(table, self.gstate, self.params, slots, weights)
        ml = {f.name: getattr(self.ml, f.name) for f in dataclasses.fields(Multiline)
              if f.name != "notes"}  # fmt: skip
        return model_io.Model(
            config=self.config, learner="gd", slots=slots,
            state=np.take(table, slots, axis=0), weights=weights, gstate=self.gstate.copy(),
            stats=stats, meta={META: ml, "bandit": self.state()},
        )  # fmt: skip

    def save(self, target: str, fmt: str = "sl") -> None:
        """Write the model: VW's model file (``fmt`` ``vw``: the options VW keeps with it,
        its weights and sums, as ``sl vw -f`` writes a bandit's; ``vw -i`` and ``sl vw -i``
        read it) or sl's, which keeps the whole explorer state."""
        if fmt in ("vw", "vw_predict_only"):
            from streamlearn.run.mlmodel import save
            from streamlearn.run.mlpasses import Fitted

            fitted = Fitted(self.table, self.gstate, self.stats, [], {}, False, explorer=self.xp)
            save(fitted, self.ml, dataclasses.asdict(self.config), target, fmt)
        else:
            model_io.save(self.to_model(), target, "sl")

    @classmethod
    def from_model(cls, m: model_io.Model, config: TrainConfig | None = None,
                   overrides: dict | None = None) -> Bandit:  # fmt: skip
        """The learner of a saved model (``overrides``: Multiline fields given again)."""
        saved = dict(m.meta[META])
        for k, v in (overrides or {}).items():
            if k in ("reduction", "actions", "classifier", "cb_type", "explore", "bag") \
                    and saved.get(k) != v:  # fmt: skip
                raise UsageError(f"the model was trained with {k} {saved.get(k)!r}, not {v!r}")
            saved[k] = v
        known = {f.name for f in dataclasses.fields(Multiline)}
        ml = Multiline(**{k: v for k, v in saved.items() if k in known})
        return cls(config or m.config, ml, m)

    @classmethod
    def from_vw(cls, path: str, learn: dict, bandit: dict) -> Bandit:
        """The learner of VW's model file of a multiline reduction (``vw -f``, ``sl vw -f``;
        :mod:`streamlearn.run.mlmodel`): ``bandit`` holds its options, the model's merged in
        (``sl vw`` merges them, ``cli/vw.py``), ``learn`` the TrainConfig fields given."""
        from streamlearn.run.mlmodel import start

        ml = Multiline(**bandit)
        options, table, gstate, counts, counter, _ = start(path, ml, learn)
        b = cls(config_of(options), ml)
        b.table, b.tables = table, cb_adf.tables_of(table)
        b.gstate = b.xp.grow(gstate, b.cb_type) if b.xp is not None else gstate
        b.stats[cb_adf.EVENTS], b.stats[cb_adf.ACTIONS] = counts
        if b.xp is not None:
            b.xp.resume(counter, b.stats)
        return b

    # -- the numbers ------------------------------------------------------------------------

    def summary(self, since: np.ndarray | None = None) -> dict:
        """The counts and progressive loss (``since``: of the examples after those counts)."""
        s = self.stats if since is None else self.stats - since
        return {"examples": int(s[cb_adf.N_EX]), "labeled": int(s[cb_adf.N_LAB]),
                "loss": float(s[cb_adf.LOSS] / s[cb_adf.N_LAB]) if s[cb_adf.N_LAB] else None,
                "features": int(s[cb_adf.FEATURES])}  # fmt: skip


# --------------------------------------------------------------------------- sl train / predict


def train(learn: dict, bandit: dict, inputs, outputs, console, start_model=None,
          test_only: bool = False) -> dict:  # noqa: ANN001  # fmt: skip
    """``sl train`` (and ``sl predict``: ``test_only``) of a bandit: every pass over
    ``inputs.sources``, ``-p`` in sl's format, ``-f`` in sl's model format; the summary."""
    from streamlearn.run.options import check
    from streamlearn.system.locks import model_lock
    from streamlearn.system.outputs import same_file

    # the rules of every run (run/options.py): unreadable inputs, and outputs that would
    # destroy an input, the initial model or another output, refused before any work
    check(inputs, outputs, max(1, int(learn.get("passes") or 1)))
    begin = inputs.initial_model if start_model is None else None
    final = None if test_only else getattr(outputs, "final_model", None)
    in_place = final if begin and final and same_file(final, begin) else None
    # a model continued in place is locked from reading -i to writing -f
    from streamlearn.run.mlsummary import reader_may_leave

    # -p - into `| head`: the model still written, exit 141 with a note (sl train's; sl
    # predict's quietly)
    note = console.say if not test_only else (lambda _: None)
    with model_lock(begin, in_place, outputs.lock_timeout, console.say), \
            reader_may_leave(note, final):  # fmt: skip
        return _train(learn, bandit, inputs, outputs, console, start_model, test_only)


def _train(learn: dict, bandit: dict, inputs, outputs, console, start_model,
           test_only: bool) -> dict:  # noqa: ANN001  # fmt: skip
    from streamlearn.run.train import check_model, merge_config

    start = start_model
    if start is None and inputs.initial_model is not None:
        start = model_io.load(inputs.initial_model)
    if start is not None and not is_bandit(start):
        raise UsageError(f"{inputs.initial_model}: not a bandit model (--cb-adf, --cb, "
                         "--csoaa-ldf): sl train -i continues one")  # fmt: skip
    if start is not None:
        config = merge_config(start.config, dict(learn))
        if test_only:
            config = config.replace(test_only=True)
        config_of({"algo": config.algo})
        b = Bandit.from_model(start, config, bandit)
    else:
        if not bandit.get("reduction"):
            raise UsageError("a bandit needs --cb-adf, --cb K or --csoaa-ldf")
        config = config_of(dict(learn))
        b = Bandit(config, Multiline(**bandit))
    say = console.say
    since = b.stats.copy()
    passes = max(1, config.passes)
    learning = _Learning(b, inputs, say, config.effective_holdout if passes > 1 else 0,
                         config.early_terminate, bool(outputs.predictions))  # fmt: skip
    used = drive(passes, Replay(lambda: _blocks(b, inputs), keep=passes > 1), learning)
    want, preds, malformed, holdout = (learning.want, learning.preds, learning.malformed,
                                       learning.holdout)  # fmt: skip
    if b.stats[cb_adf.N_EX] == since[cb_adf.N_EX] and not inputs.allow_empty:
        from streamlearn.errors import NoExamples

        raise NoExamples("no usable multiline example in the input")
    out = {**b.summary(since), "passes": used, "malformed": malformed,
           "best_holdout": holdout.best_loss}  # fmt: skip
    final = getattr(outputs, "final_model", None)
    model = b.to_model() if final and not test_only else None
    if model is not None:
        check_model(model)  # a diverged run writes nothing (exit 6)
    from streamlearn.system.outputs import staging, write_bytes
    from streamlearn.system.process import committing

    with staging() as stage:  # every output written in full before any is visible
        if want:
            from streamlearn.run.mlsummary import write_text

            write_text(outputs.predictions, "".join(preds))
        if outputs.report:
            import json

            from streamlearn.run.mlsummary import completeness

            report = completeness(out, outputs)
            write_bytes(outputs.report, json.dumps(report, indent=2).encode() + b"\n", "report")
        if model is not None:
            model_io.save(model, final)
        stage.write()
        with committing():
            stage.commit()  # the model last: a failure before leaves the old one
    loss = out["loss"]
    say(f"{'scored' if test_only else 'trained'}: {out['examples']} examples, "
        f"average loss {'n.a.' if loss is None else f'{loss:.6f}'}")  # fmt: skip
    return out


class _Learning(ExampleLearning):
    """:func:`train`'s learning: each batch through :meth:`Bandit.run`, the first pass's
    ``-p`` lines kept."""

    def __init__(self, b: Bandit, inputs, say, period: int, patience: int,
                 want: bool) -> None:  # noqa: ANN001  # fmt: skip
        super().__init__(b.stats, inputs, say, period, patience)
        self.b = b
        self.want = want
        self.preds: list[str] = []

    def step(self, part: Part, m: int, ho: np.ndarray | None, pass_no: int) -> None:
        step = self.b.run(part, ho)
        if self.want and pass_no == 1:
            self.preds.extend(self.b.lines(step))


def _blocks(b: Bandit, inputs):  # noqa: ANN001, ANN202
    from streamlearn.io.multiline import example_blocks
    from streamlearn.io.reader import iter_blocks

    blocks = iter_blocks(inputs.sources or ["-"], inputs.block_size, inputs.max_line_bytes,
                         inputs.flat_text(b.config))  # fmt: skip
    if b.ml.reduction != "cb":
        blocks = example_blocks(blocks)
    for block in blocks:
        yield b.parse(block)


# --------------------------------------------------------------------------- the Python API


@dataclass(frozen=True)
class Choice:
    """An action chosen for a context: its index among the actions, the probability it was
    chosen with (to log beside its cost), and the pmf over all the actions."""

    action: int
    probability: float
    pmf: np.ndarray
    """float64[K]: each action's probability, by index (VW's pmf, float32 numbers)."""


_M64 = (1 << 64) - 1


def _uniform(seed: int) -> np.float32:
    """VW's ``merand48_noadvance(seed)``: one step of its generator, as a float32 in [0, 1)."""
    s = (0xEECE66D5DEECE66D * (seed & _M64) + 2147483647) & _M64
    return np.float32(((s >> 25) & 0x7FFFFF) / 8388608.0)


def sample(actions: np.ndarray, probs: np.ndarray, seed: int) -> tuple[int, float]:
    """VW's ``sample_after_normalizing``: an action of the pmf (in its order) with one draw
    from ``seed``; the action and its normalised probability."""
    p = np.maximum(probs, np.float32(0.0), dtype=np.float32)
    run = np.cumsum(p, dtype=np.float32)  # (sequential float32 sums, as VW's loop)
    total = run[-1]
    if total == 0.0:
        return int(actions[0]), 1.0
    draw = min(np.float32(total * _uniform(seed)), total)
    # the first running sum above the draw (the sums of non-negatives never decrease), else
    # the last action
    pick = min(int(run.searchsorted(draw, side="right")), p.shape[0] - 1)
    return int(actions[pick]), float(np.float32(p[pick] / total))


def _token(name: object, value: object) -> str:
    key = str(name)
    if not key or any(c in key for c in " \t\n|:"):
        raise ValueError(f"feature name {key!r}: no spaces, '|' or ':'")
    if value is True or value is None:
        return key
    if isinstance(value, str):
        if any(c in value for c in " \t\n|:"):
            raise ValueError(f"feature {key}={value!r}: no spaces, '|' or ':' in a value")
        return f"{key}={value}"
    v = float(value)
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError(f"feature {key}: not a finite number ({value!r})")
    return f"{key}:{v!r}"


def feature_text(x: object) -> str:
    """A context or an action as the features of a VW text line.

    * a string: VW's text after the label (``"|user a b |time c:2"``; without a leading
      ``|``, the default namespace's features);
    * a dict of namespace -> features, each a string (``"a b c:2"``), a list of names, or a
      dict of name -> value (a number: ``name:value``; a string: ``name=value``; True:
      ``name``).
    """
    if isinstance(x, str):
        if "\n" in x or "\r" in x:
            raise ValueError("a context or action holds no newline")
        t = x.strip()
        return t if t.startswith("|") else ("| " + t if t else "|")
    if isinstance(x, dict):
        parts = []
        for ns, feats in x.items():
            name = str(ns)
            if any(c in name for c in " \t\n|:"):
                raise ValueError(f"namespace {name!r}: no spaces, '|' or ':'")
            if isinstance(feats, str):
                if "\n" in feats or "|" in feats:
                    raise ValueError(f"namespace {name}: no newline or '|' in its features")
                body = feats.strip()
            elif isinstance(feats, dict):
                body = " ".join(_token(k, v) for k, v in feats.items())
            elif isinstance(feats, list | tuple):
                body = " ".join(_token(k, True) for k in feats)
            else:
                raise TypeError(f"namespace {name}: features as a str, a list or a dict, "
                                f"not {type(feats).__name__}")  # fmt: skip
            parts.append(f"|{name} {body}" if body else f"|{name}")
        return " ".join(parts) if parts else "|"
    if x is None:
        return "|"
    raise TypeError(f"a context or action is a str or a dict, not {type(x).__name__}")


def example_text(context: object, actions: list, label: tuple | None = None,
                 write_label: bool = True) -> str:  # fmt: skip
    """One multiline example (``label``: the logged (action index, cost, probability),
    checked, and written on its line unless ``write_label`` is false)."""
    if not isinstance(actions, list | tuple) or not actions:
        raise ValueError("an example needs a non-empty list of actions")
    lines = []
    ctx = feature_text(context) if context is not None else "|"
    if ctx != "|":
        lines.append("shared " + ctx)
    k = -1
    if label is not None:
        k, cost, prob = check_label(label, len(actions))
    for i, a in enumerate(actions):
        t = feature_text(a)
        lines.append(f"0:{cost!r}:{prob!r} {t}" if i == k and write_label else t)
    return "\n".join(lines) + "\n\n"


def check_label(label: tuple, n_actions: int) -> tuple[int, float, float]:
    """A logged (chosen action index, cost, probability), checked as the parser checks a
    line's ``action:cost:probability``: the index an integer among the actions, the cost a
    finite number of magnitude at most 1e18, the probability in [1e-18, 1] (its importance
    weight 1/p at most 1e18).  Strings and booleans are refused, not converted."""
    from streamlearn.io.batch import MAX_MAGNITUDE, MIN_PROBABILITY

    try:
        k, cost, prob = label
    except (TypeError, ValueError):
        raise ValueError(f"a label is (chosen, cost, probability), not {label!r}") from None
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise ValueError(f"chosen action {k!r}: an integer index of the actions")
    if not 0 <= k < n_actions:
        raise ValueError(f"chosen action {k}: not an index of the {n_actions} actions")
    for name, v in (("cost", cost), ("probability", prob)):
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise ValueError(f"{name} {v!r}: a number")
    cost, prob = float(cost), float(prob)
    if not abs(cost) <= MAX_MAGNITUDE:
        raise ValueError(f"cost {cost}: not a finite number of magnitude at most 1e18")
    if not MIN_PROBABILITY <= prob <= 1.0:
        raise ValueError(f"probability {prob}: must be in (0, 1] and at least 1e-18 (its "
                         "importance weight 1/p at most 1e18)")  # fmt: skip
    return int(k), cost, prob


PARSED = 256
"""Parsed examples kept by the API (by their text): ``learn`` after ``choose`` of the same
context and actions does not parse them again."""


def _remember(b: Bandit, text: str, hit: tuple) -> tuple:
    """Keep ``hit`` (merged rows, line numbers) as the parse of ``text`` (:data:`PARSED` at
    most: the oldest goes)."""
    if len(b.parsed) >= PARSED:
        b.parsed.pop(next(iter(b.parsed)))
    b.parsed[text] = hit
    return hit


def api_part(b: Bandit, contexts: list, actions: list, labels: list | None) -> Part:
    """The examples of the API's lists, parsed and made ready (errors: ``ValueError``)."""
    if len(actions) != len(contexts) or (labels is not None and len(labels) != len(contexts)):
        raise ValueError("contexts, actions (and labels) of different lengths")
    from streamlearn.io.multiline import cross_merged, merge_shared, parse_examples
    from streamlearn.io.parse import describe_errors

    # the labels go to the kernels as given (parsed from text they are the same float32s)
    text = "".join(example_text(c, a, labels[i] if labels is not None else None, False)
                   for i, (c, a) in enumerate(zip(contexts, actions, strict=True)))  # fmt: skip
    m = len(contexts)
    hit = b.parsed.get(text)
    if hit is None and m == 1:  # (one example: the parser's arrays, copied for the cache)
        one = b.one_example(text.encode("utf-8")[:-1])
        if one is not None:
            mg = dataclasses.replace(one.mg, **{f.name: getattr(one.mg, f.name).copy()
                                                for f in dataclasses.fields(one.mg)})  # fmt: skip
            hit = _remember(b, text, (mg, one.ex_lines.copy()))
    if hit is None:
        data = np.frombuffer(bytearray(text.encode("utf-8")), dtype=np.uint8)
        cfg = b.config
        ex = parse_examples(Block(data, "<api>", 1), cfg.bits, cfg.constant, b.parse_inter,
                            b.kind)  # fmt: skip
        if ex.batch.status.any():
            raise ValueError("; ".join(describe_errors(ex.batch, limit=3)))
        mg = cross_merged(merge_shared(ex), b.full, cfg.bits)
        if mg.act_ptr.shape[0] - 1 != m:
            raise ValueError("an example was not read whole (an action without features?)")
        hit = _remember(b, text, (mg, ex.batch.line[ex.ex_ptr[:-1]]))
    mg, lines = hit
    if labels is None:
        chosen, cost, prob = np.full(m, -1, dtype=np.int64), np.zeros(m), np.ones(m)
    else:
        chosen = np.array([lab[0] for lab in labels], dtype=np.int64)
        cost = np.array([lab[1] for lab in labels], dtype=np.float64)
        prob = np.array([lab[2] for lab in labels], dtype=np.float64)
    none = np.zeros(0)
    no_tags = Tags(np.zeros(0, dtype=np.uint8), np.zeros(m, dtype=np.int64),
                   np.zeros(m, dtype=np.int64))  # fmt: skip
    return Part(mg, chosen, cost, prob, none, none, none, no_tags, lines, [])


def _pmfs(b: Bandit, step: Seen) -> list[np.ndarray]:
    ptr = step.part.mg.act_ptr
    out = []
    for e in range(ptr.shape[0] - 1):
        lo, hi = int(ptr[e]), int(ptr[e + 1])
        pmf = np.zeros(hi - lo)
        if step.probs is not None:
            pmf[step.actions[lo:hi]] = step.probs[lo:hi]
        else:
            pmf[step.order[lo]] = 1.0
        out.append(pmf)
    return out


def choose(b: Bandit, contexts: list, actions: list, seeds: list | None = None) -> list[Choice]:
    """An action for each (context, actions), sampled from the explorer's pmf (nothing is
    learned; VW's sampling, seeded with ``seeds`` or the model's ``seed + draws``)."""
    if b.ml.reduction != "cb_adf":
        raise ValueError("choose() needs a contextual bandit with action features (cb_adf=True)")
    step = _one(b, contexts, actions, None)
    if step is None:
        part = api_part(b, contexts, actions, None)
        with b.uncounted():
            step = b.run(part)
    ptr = step.part.mg.act_ptr
    out = []
    for e, pmf in enumerate(_pmfs(b, step)):
        lo, hi = int(ptr[e]), int(ptr[e + 1])
        if seeds is not None and seeds[e] is not None:
            seed = int(seeds[e])
        else:
            seed = b.config.seed + b.draws
            b.draws += 1
        if step.probs is not None:
            a, p = sample(step.actions[lo:hi], step.probs[lo:hi], seed)
        else:
            a, p = int(step.order[lo]), 1.0
        out.append(Choice(a, p, pmf))
    return out


def predict(b: Bandit, blocks) -> list[np.ndarray]:  # noqa: ANN001 - io.batch.Block's
    """Each example's pmf (by action index; without an explorer, 1 on the top action) in
    ``blocks`` of multiline text, nothing learned and nothing counted; a malformed example
    is left out, with a warning naming its line."""
    import warnings

    out: list[np.ndarray] = []
    with b.uncounted():
        for block in blocks:
            part = b.parse(block)
            for msg in part.bad[:10]:
                warnings.warn(f"skipped: {msg}", stacklevel=3)
            out += _pmfs(b, b.score(part))
    return out


def learn(b: Bandit, contexts: list, actions: list, labels: list) -> list[np.ndarray]:
    """Learn each (context, actions, (chosen, cost, probability)); each example's pmf as it
    was before it was learned (what ``sl vw -p`` writes for it)."""
    if b.ml.reduction != "cb_adf":
        raise ValueError("learn() needs a contextual bandit with action features (cb_adf=True)")
    step = _one(b, contexts, actions, labels)
    return _pmfs(b, step if step is not None else b.run(api_part(b, contexts, actions, labels)))


def _one(b: Bandit, contexts: list, actions: list, labels: list | None) -> Seen | None:
    """One example of the API through the one-call step (:meth:`Bandit.line`: parsed and
    learned, or scored uncounted when ``labels`` is None, in one kernel call), as
    :func:`api_part` then :meth:`Bandit.run` give it; None where they must run (several
    examples, a line the step leaves, a malformed one: :func:`api_part` says why).  The
    label is written on its line: the parser reads ``repr``'s digits back to the same
    float64, which the kernels take as float32, as they take :func:`api_part`'s."""
    if len(contexts) != 1 or len(actions) != 1 or (labels is not None and len(labels) != 1):
        return None
    text = example_text(contexts[0], actions[0], labels[0] if labels is not None else None)
    data = text.encode("utf-8")[:-1]  # (each line ends in a newline, no blank line)
    if labels is not None:
        return b.line(data, True)
    with b.uncounted():
        return b.line(data, True)
