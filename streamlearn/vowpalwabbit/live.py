"""A :class:`~streamlearn.vowpalwabbit.Workspace`'s learner, live between calls.

:class:`LineLive`: single-line examples, on :class:`~streamlearn.run.resident.Resident` (the
API's live learner: ``sl train``'s kernel, checks and options, one call per example).
:class:`BanditLive`: multiline examples (``--cb_adf``, ``--cb_explore_adf``,
``--csoaa_ldf``), on :class:`~streamlearn.run.bandit.Bandit` (the server's and the API's
bandit).  Each turns an example's text into a block, parses it, runs one kernel call, and
gives the prediction in VW's Python type.
"""

from __future__ import annotations

import numpy as np

from streamlearn import model as model_io
from streamlearn.api_sources import one_line
from streamlearn.errors import UsageError
from streamlearn.io.batch import Block
from streamlearn.vowpalwabbit.types import LabelType, PredictionType, by_action


def _block(text: str) -> Block:
    """A single-line example as a block of its line."""
    data = text.encode("utf-8")
    if not data.endswith(b"\n"):
        data += b"\n"
    return Block(np.frombuffer(bytearray(data), dtype=np.uint8), "<workspace>", 1, live=True)


def _example_lines(text: str) -> bytes:
    """A multiline example's lines, each ending in a newline, blank ones left out."""
    if "\n" not in text and text.strip():  # (one line: a --cb K example)
        return text.encode("utf-8") + b"\n"
    lines = [ln for ln in text.encode("utf-8").split(b"\n") if ln.strip()]
    return b"".join(ln + b"\n" for ln in lines)


def _start(t):  # noqa: ANN001, ANN202 - a vwargs.Translation; an sl model or None
    path = t.inputs.get("initial_model")
    return model_io.load(path) if path else None


def _refuse_malformed(batches: list) -> None:
    """A ``ValueError`` with sl's reason for the first malformed line of ``batches``."""
    from streamlearn.io.parse import describe_errors

    for b in batches:
        if b.status.any():
            raise ValueError(describe_errors(b, 1)[0])


class LineLive:
    """Single-line examples: a :class:`Resident` over a fresh or given model."""

    multiline = False

    def __init__(self, t) -> None:  # noqa: ANN001 - a vwargs.Translation
        from streamlearn.learners.base import P_LEARN, P_PROBS
        from streamlearn.run.classes import check_probabilities
        from streamlearn.run.resident import Resident
        from streamlearn.run.runner import shown
        from streamlearn.run.train import merge_config

        start = _start(t)
        learn = {k: v for k, v in t.learn.items() if k != "passes"}
        config = merge_config(start.config if start is not None else None, learn,
                              model_io.unrecorded(start))  # fmt: skip
        self.config = config
        check_probabilities(config, t.probabilities, t.link)
        self.probabilities = t.probabilities
        self.resident = Resident(start, config)
        if t.probabilities:  # (each class's probability in the kernel's columns 1..K, VW's
            # accounting of an unlabeled example: learners/oaa.py)
            self.resident.params[P_PROBS] = 1.0 if config.multilabel else 4.0
        self.scoring = self.resident.params.copy()
        self.scoring[P_LEARN] = 0.0
        self.link = t.link
        self.bits = config.bits
        self.oaa = bool(config.oaa)
        self.plain = t.link == "identity" and not config.binary  # (the margin as it is)
        self.shown = shown
        self.prediction_type = PredictionType.SCALAR
        if config.oaa:
            self.prediction_type = PredictionType.SCALARS if t.probabilities \
                else PredictionType.MULTICLASS  # fmt: skip
        self.label_type = LabelType.MULTICLASS if config.oaa else LabelType.SIMPLE
        from streamlearn.learners.stacked import BFGS

        if config.multilabel or config.csoaa or {"--bootstrap", *BFGS} & set(config.stack):
            raise UsageError("a Workspace of --multilabel_oaa, --csoaa, --bootstrap or --bfgs: "
                             "not yet (sl vw runs them)")  # fmt: skip

    def step(self, text: str, learn: bool) -> object:
        r = self.resident
        line = one_line(text)
        if line is None or not r.learn_line(line, None if learn else self.scoring):
            batches = list(r.parse([_block(text)]))
            _refuse_malformed(batches)
            r.learn(batches, None if learn else self.scoring)
            _refuse_malformed(batches)  # (a label that is no class of --oaa K: marked by learn)
        if learn:
            return None  # (VW's learn returns nothing)
        preds = r.preds
        if preds is None or preds.size == 0:
            return None
        if self.oaa:
            if self.probabilities:
                return [float(np.float32(p)) for p in preds[0, 1:]]
            return int(preds.reshape(-1)[0])
        if self.plain:
            return float(np.float32(preds.item(0)))
        p = self.shown(preds.reshape(-1)[:1], self.link, self.config.binary)
        return float(np.float32(p[0]))

    def save(self, path: str, fmt: str) -> None:
        model_io.save(self.resident.snapshot(), path, fmt, link=self.link)

    def weight(self, slot: int) -> float:
        return float(self.resident.learner.table[slot, 0])

    def sum_loss(self) -> float:
        from streamlearn.learners.base import S_LOSS

        return float(self.resident.learner.stats[S_LOSS])

    def weighted_examples(self) -> float:
        from streamlearn.learners.base import S_WEX

        return float(self.resident.learner.stats[S_WEX])


class BanditLive:
    """Multiline examples: a :class:`Bandit` from the command line's reduction."""

    multiline = True

    def __init__(self, t) -> None:  # noqa: ANN001 - a vwargs.Translation
        from streamlearn.reductions import Multiline
        from streamlearn.reductions.options import config_of
        from streamlearn.run.bandit import Bandit, is_bandit

        ml = Multiline(**t.multiline)
        if ml.reduction not in ("cb_adf", "cb", "csoaa_ldf") or ml.legacy or ml.explore_eval:
            raise UsageError(
                f"a Workspace of --{ml.reduction}: not yet (--cb K, --cb_explore K, --cb_adf, "
                "--cb_explore_adf and --csoaa_ldf are; sl vw runs the others)"
            )
        from streamlearn.run.mlmodel import kept_options

        path = t.inputs.get("initial_model")
        if path and kept_options(path) is not None:  # VW's model file (its options merged)
            self.bandit = Bandit.from_vw(path, t.learn, t.multiline)
        elif path:
            m = model_io.load(path)
            if not is_bandit(m):
                raise UsageError(f"-i {path}: not a multiline reduction's model")
            self.bandit = Bandit.from_model(m, None, t.multiline)
        else:
            self.bandit = Bandit(config_of(t.learn, bases=True), ml)
        b = self.bandit
        self.bits = b.config.bits
        self.explore = bool(b.ml.explore)
        self.csoaa = b.ml.reduction == "csoaa_ldf"
        self.single = b.ml.reduction == "cb"
        """``--cb K``: one line an example, its K actions copied from it; VW's package gives
        the chosen action (1-based) without an explorer, the pmf by action with one."""
        self.label_type = LabelType.CONTEXTUAL_BANDIT
        if self.csoaa:
            self.prediction_type = PredictionType.MULTICLASS
            self.label_type = LabelType.COST_SENSITIVE
        elif self.single and not self.explore:
            self.prediction_type = PredictionType.MULTICLASS
        else:
            self.prediction_type = PredictionType.ACTION_PROBS if self.explore \
                else PredictionType.ACTION_SCORES  # fmt: skip

    def step(self, text: str, learn: bool) -> object:
        b = self.bandit
        data = _example_lines(text)
        seen = b.line(data, learn)  # (--cb K's line, a cb_adf example: one kernel call)
        if seen is None:
            part = b.one_example(data)
            one = part is not None  # (arrays kept between calls, the learner's may be too)
            if not one:
                part = b.parse_one(data, "<workspace>")
            if part.bad:
                raise ValueError(part.bad[0])
            seen = b.run(part, one=one) if learn else b.score(part, one=one)
        act_ptr = seen.part.mg.act_ptr
        rows = int(act_ptr[1] - act_ptr[0]) if act_ptr.shape[0] > 1 else 0
        if rows == 0:
            return []
        if self.csoaa:
            return int(seen.pred[0])
        if self.single and not self.explore:  # (the first of the actions by (score, action))
            return int(seen.order[0]) + 1
        if self.explore:
            return by_action(seen.actions[:rows], seen.probs[:rows])
        return seen.scores[:rows].tolist()  # (each line's score: the lines are the actions)

    def save(self, path: str, fmt: str) -> None:
        self.bandit.save(path, fmt)

    def weight(self, slot: int) -> float:
        return float(self.bandit.table[slot, 0])

    def sum_loss(self) -> float:
        from streamlearn.learners.cb_adf import LOSS

        return float(self.bandit.stats[LOSS])

    def weighted_examples(self) -> float:
        from streamlearn.learners.cb_adf import N_EX

        return float(self.bandit.stats[N_EX])


class CcbLive:
    """``--ccb_explore_adf`` and ``--slates``: a :class:`streamlearn.run.ccb.Live` (fresh, or
    VW's model file continued); each example's decisions as VW's package gives them, a list
    per slot of (action, probability) pairs (slates: actions numbered within their slot)."""

    multiline = True

    def __init__(self, t) -> None:  # noqa: ANN001 - a vwargs.Translation
        from streamlearn.reductions import Multiline
        from streamlearn.run.ccb import Live
        from streamlearn.run.mlmodel import kept_options

        ml = Multiline(**t.multiline)
        path = t.inputs.get("initial_model")
        if path and kept_options(path) is None:
            raise UsageError(f"-i {path}: a Workspace of --{ml.reduction} continues VW's model "
                             "files (sl vw -f writes them)")  # fmt: skip
        self.live = Live(ml, t.learn, path)
        self.bits = self.live.config.bits
        self.prediction_type = PredictionType.DECISION_SCORES
        self.label_type = (LabelType.SLATES if ml.reduction == "slates"
                           else LabelType.CONDITIONAL_CONTEXTUAL_BANDIT)  # fmt: skip

    def step(self, text: str, learn: bool) -> object:
        played, bad = self.live.play(_example_lines(text) + b"\n", "<workspace>", learn=learn)
        if bad:
            raise ValueError(bad[0])
        if not played or played[0] is None:
            return []
        return [[(int(a), float(p)) for a, p in slot] for slot in self.live.relative(played[0])]

    def save(self, path: str, fmt: str) -> None:
        self.live.save(path, fmt)

    def weight(self, slot: int) -> float:
        return float(self.live.w.table[slot, 0])

    def sum_loss(self) -> float:
        return float(self.live.counts.loss)

    def weighted_examples(self) -> float:
        return float(self.live.counts.examples)


def multiline_live(t):  # noqa: ANN001, ANN201 - a vwargs.Translation
    """The live learner of a multiline command line: CCB's and slates' own
    (:class:`CcbLive`, the registry's ``batched`` False), else a :class:`BanditLive`."""
    from streamlearn.reductions import Multiline, reduction_of

    red = reduction_of(Multiline(**t.multiline))
    red.check_served()  # (LDA's, the search's: sl vw's passes only, not yet one by one)
    if not red.batched:
        return CcbLive(t)
    return BanditLive(t)
