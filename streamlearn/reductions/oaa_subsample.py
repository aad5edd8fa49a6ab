"""VW's ``--oaa K --oaa_subsample N``: one-against-all teaching each labeled example's class
and N other classes of a shuffled order (:mod:`streamlearn.learners.oaa_subsample` is its
kernel and says what it computes), in the single-line reductions' shape
(:mod:`streamlearn.reductions.lrq` is the worked example).

Its option is its own word in ``TrainConfig.stack`` (a run's word: VW does not keep
``--oaa_subsample`` with a model, whose weights are ``--oaa K``'s, read and continued as
any ``--oaa`` model).  N >= K turns it off with VW's line (``oaa is turning off subsampling
because parameter >= K``); N = 0 is none.  VW counts every learned example as unlabeled:
its table and summary say ``n.a.`` for the loss.

Refused, one line each before any data is read: without ``--oaa K`` (or with
``--csoaa``/``--multilabel_oaa``/``--ect`` or another reduction), a learner other than gd,
``--probabilities``, ``--scores``, ``-r``, ``--audit`` and ``--invert_hash``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import checked, configured, refuse_over_gd, word
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "oaa_subsample"
"""Its name in the registry (VW's ``Enabled learners`` line names oaa: :func:`stack_name`)."""

FLAG = "--oaa_subsample"


@dataclass(frozen=True)
class Options:
    n: int


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--oaa_subsample`` (or N = 0: VW then subsamples nothing)."""
    if FLAG not in words:
        return None
    at = words.index(FLAG) + 1
    value = words[at] if at < len(words) else ""
    if not value.isdigit() or int(value) >= 1 << 64:
        raise UsageError(f"{FLAG} {value}: a count of negative classes is expected")
    return Options(int(value)) if int(value) else None


VW_OPTIONS = {"oaa_subsample": VWOption(None, True, word("oaa_subsample", True))}
"""VW's option of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def _without(words: tuple[str, ...]) -> tuple[str, ...]:
    at = words.index(FLAG)
    return (*words[:at], *words[at + 2 :])


def settle(t: Command) -> None:
    """What ``--oaa_subsample N`` means with the rest of a VW command line (one line, exit 2):
    nothing without ``--oaa K`` (VW reads it only there) or with N >= K (VW's note), as VW."""
    words = t.learn.get("stack", ())
    if FLAG not in words:
        return
    opts = checked(t, read, lambda learn, outputs: None)
    k = t.learn.get("oaa") or 0
    classes = any(t.learn.get(key) for key in ("csoaa", "multilabel", "ect"))
    # (without --oaa K on the line, a model's K: checked when the model is read, spec())
    from_model = not k and "initial_model" in t.inputs
    if opts is None or classes or not (k or from_model):
        t.learn["stack"] = _without(words)  # (ignored, as VW ignores it)
        return
    if k and opts.n >= k:
        t.notes.append("oaa is turning off subsampling because parameter >= K")
        t.learn["stack"] = _without(words)
        return
    if k:
        refuse(t.learn, t.outputs)
    if t.probabilities or t.raw_predictions or t.outputs.get("scores"):
        raise VWUsage(f"{FLAG} with --probabilities, --scores or -r is not supported by sl "
                      "(VW's subsampling predicts a class)")  # fmt: skip


def refuse(learn: dict, outputs: dict) -> None:
    """What ``--oaa_subsample`` does not run with, one line each."""
    if not learn.get("oaa") or any(learn.get(k) for k in ("csoaa", "multilabel", "ect")):
        raise VWUsage(f"{FLAG} subsamples --oaa K's classes: give --oaa K")
    others = [w for w in learn.get("stack", ()) if w.startswith("--") and w != FLAG]
    if others:
        raise VWUsage(f"{FLAG} with {others[0]} is not supported by sl")
    refuse_over_gd({k: v for k, v in learn.items() if k != "oaa"}, outputs, FLAG,
                   "VW audits each class it learns")  # fmt: skip


def stack_name(opts: Options) -> str:  # noqa: ARG001
    return ""  # (VW's oaa: run/classes.py's vw_name)


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


class Entry:
    """The kernel entry of one run: VW's order of the classes and its cursor, made at the
    run's start (as VW's set-up makes them; a model keeps neither) from VW's generator, which
    the run's ``gstate`` holds last (:func:`spec`; a model keeps it as ``--random_seed``)."""

    def __init__(self, k: int, n: int, seed: int) -> None:
        from streamlearn.learners.base import GSTATE_SIZE
        from streamlearn.learners.oaa_subsample import S_RNG

        self.n = n
        self.order = np.zeros(k, dtype=np.int64)
        self.state = np.zeros(3, dtype=np.uint64)
        self.state[S_RNG] = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
        self.full = GSTATE_SIZE + 2 * k + 2
        """``gstate``'s size with the generator (``--oaa K``'s sums, then its two halves)."""
        self.held_labeled = False
        """VW counts a held-out example as unlabeled (its total feature number keeps it)."""

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        from streamlearn.learners.oaa_subsample import train_gd

        # (a state without the generator -- sl's model of a plain --oaa continued -- draws
        # from the run's --random_seed and keeps nothing)
        train_gd(table, gstate, params, loss_id, indptr, indices, values, labels, weights,
                 bases, status, stats, rows, preds, self.order, self.state, self.n,
                 gstate.shape[0] == self.full)  # fmt: skip


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """``--oaa K``'s gd learner (its table and name: its models are ``--oaa``'s) with the
    subsampling kernel, its state followed by VW's generator (``--random_seed``)."""
    from streamlearn.learners import oaa
    from streamlearn.learners.stacked import with_generator

    opts = configured(config, read, refuse)
    if config.algo != "gd":
        raise UsageError(f"{FLAG} runs over gd, not --{config.algo}")
    if opts.n >= config.oaa:  # (a model's K: VW turns it off)
        return oaa.GD
    seed = config.seed
    return dataclasses.replace(
        oaa.GD, train_batch=Entry(config.oaa, opts.n, seed),
        init_gstate=lambda params: with_generator(oaa.GD.init_gstate(params), seed),
    )  # fmt: skip
