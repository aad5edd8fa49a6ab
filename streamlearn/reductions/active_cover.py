"""Active learning with a cover of policies, VW's ``--active_cover`` with ``--mellowness``,
``--alpha``, ``--beta_scale``, ``--cover`` and ``--oracular`` (:mod:`streamlearn.learners.
active_cover` is its kernel), in the single-line reductions' shape
(:mod:`streamlearn.reductions.lrq` is the worked example).

Its options are its own words in ``TrainConfig.stack``; VW keeps ``--active_cover`` with a
model, and ``--cover`` and ``--mellowness`` when they were given, none of the others (a
model is continued with their defaults unless the command line gives them again, as VW's).
``--cover`` and ``--mellowness`` are the explorers' options too: with ``--active_cover`` and
no explorer they are ours (:func:`settle`, run before the explorers').  Its state (the
copies' sums, VW's generator, its clock, the policies' λ) lives in gd's global state; its
table is bootstrap's (``bootstrap_gd``: a copy of gd in each of cover + 1 slots of a
feature, none with ``--oracular``, which runs no cover), which both model files keep.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import configured, refuse_over_gd, word
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "active_cover"
"""Its name in VW's ``Enabled learners`` line (just above gd)."""
MOST = 1023
"""The most policies sl runs in a cover (each a copy of gd's table)."""
NUMBERS = ("--alpha", "--beta_scale")
"""Its options VW does not keep with a model (``--oracular`` neither)."""


def vw_float(v: float) -> str:
    """A float option as VW keeps it in a model: the float32, 15 digits."""
    return f"{float(np.float32(v)):.15g}"


@dataclass(frozen=True)
class Options:
    cover: int = 12
    mellowness: float = 8.0
    alpha: float = 1.0
    beta_scale: float = float(np.float32(math.sqrt(10.0)))
    oracular: bool = False

    @property
    def policies(self) -> int:
        """The policies in the cover: none with ``--oracular`` (as VW's set-up)."""
        return 0 if self.oracular else self.cover

    def conf(self) -> np.ndarray:
        """The kernel's options (:data:`streamlearn.learners.active_cover.C_COVER` ...)."""
        f32 = np.float32
        beta = f32(self.beta_scale)
        return np.array([self.policies, f32(self.mellowness), f32(self.alpha), beta * beta,
                         self.oracular], dtype=np.float64)  # fmt: skip


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--active_cover``."""
    if "--active_cover" not in words:
        return None
    values: dict[str, str] = {}
    it = iter(words)
    for w in it:
        if w in ("--cover", "--mellowness", *NUMBERS):
            values[w] = next(it, "")
    text = values.get("--cover", "12")
    if not text.isdigit() or int(text) > MOST:
        raise UsageError(f"--cover {text}: a count of policies up to {MOST} is expected")
    numbers = {}
    for name, default in (("--mellowness", 8.0), ("--alpha", 1.0),
                          ("--beta_scale", Options.beta_scale)):  # fmt: skip
        given = values.get(name)
        try:
            numbers[name] = default if given is None else float(np.float32(float(given)))
        except (ValueError, OverflowError):
            raise UsageError(f"{name} {given}: a number is expected") from None
    return Options(int(text), numbers["--mellowness"], numbers["--alpha"],
                   numbers["--beta_scale"], "--oracular" in words)  # fmt: skip


VW_OPTIONS = {  # (--cover and --mellowness are the explorers' too: taken in settle)
    "active_cover": VWOption(None, False, word("active_cover", False)),
    "alpha": VWOption(None, True, word("alpha", True)),
    "beta_scale": VWOption(None, True, word("beta_scale", True)),
    "oracular": VWOption(None, False, word("oracular", False)),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--active_cover`` means with the rest of a VW command line (one line, exit 2):
    ``--cover`` and ``--mellowness`` are its own when no explorer runs (the explorers' settle
    would say they are ignored); its other options alone are ignored, as VW ignores them,
    unless a model given with ``-i`` may bring it."""
    words = t.learn.get("stack", ())
    if "--active_cover" not in words:
        # (--alpha is --OjaNewton's and --memory_tree's too: their modules read it then)
        shared = {"--OjaNewton", "--memory_tree"} & set(words)
        numbers = tuple(w for w in NUMBERS if w != "--alpha" or not shared)
        mine = [w for w in words if w in numbers or w == "--oracular"]
        if mine and "initial_model" not in t.inputs:  # (a model given may bring it)
            t.notes.append(f"{' '.join(mine)}: options of --active_cover, ignored")
            kept: list[str] = []
            it = iter(words)
            for w in it:
                if w in numbers:
                    next(it, None)
                elif w != "--oracular":
                    kept.append(w)
            t.learn["stack"] = tuple(kept)
        return
    if t.exploring or t.multiline.get("reduction"):
        named = "cb_explore_adf" if t.exploring else t.multiline["reduction"]
        raise VWUsage(f"--active_cover with --{named} is not supported by sl (VW's "
                      "active_cover learns single-line examples of simple labels)")  # fmt: skip
    taken = []
    cover = t.multiline.pop("cover", None)
    if cover is not None:
        taken.append("cover")
        if t.multiline.get("explore") == "cover":
            t.multiline.pop("explore")
        words = (*words, "--cover", str(cover))
    c0 = t.multiline.pop("mellowness", None)
    if c0 is not None:
        taken.append("mellowness")
        words = (*words, "--mellowness", vw_float(c0))
    t.explorer_options[:] = [n for n in t.explorer_options if n not in taken]
    t.learn["stack"] = words
    try:
        read(words)
    except UsageError as e:
        raise VWUsage(e.message) from None
    refuse(t.learn, t.outputs)
    if t.raw_predictions:
        raise VWUsage("-r with --active_cover is not supported by sl (VW writes the score of "
                      "the last gd call, a cover policy's when it learns)")  # fmt: skip


def refuse(learn: dict, outputs: dict) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals (other labels
    among them) and mini-batches."""
    refuse_over_gd(learn, outputs, "--active_cover", "VW audits and names each policy")
    if learn.get("minibatch", 1) > 1:
        raise VWUsage("--active_cover with --minibatch is not supported by sl")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


def summary_lines(opts: Options, gstate) -> list[str]:  # noqa: ANN001
    """VW's last summary line: the examples its run queried (when there were any)."""
    from streamlearn.learners import active_cover

    n = active_cover.queries(gstate, opts.policies)
    return [f"total queries = {n}"] if n > 0 else []


class Entry:
    """The kernel entry of one run: the options; VW's generator, clock and λ are in the
    global state (the λ and the queries start over in each run, as VW keeps neither)."""

    wants_ns = False

    def __init__(self, opts: Options, seed: int) -> None:
        self.opts = opts
        self.conf = opts.conf()
        self.seed = seed
        self.started = False

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        from streamlearn.learners import active_cover as ac

        if not self.started:
            self.started = True
            ac.restart(gstate, self.opts.policies)
            ac.start_clock(gstate, self.opts.policies, params)
        ac.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                       weights, bases, status, stats, rows, preds, self.conf)  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        from streamlearn.learners import active_cover as ac

        return ac.init_gstate(params, self.opts.policies, self.seed)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """cover + 1 copies of gd in one table (bootstrap's layout): the run's learner,
    ``bootstrap_gd`` in sl's model files."""
    from streamlearn.learners import bootstrap

    opts = configured(config, read, refuse)
    stride = 1 << opts.policies.bit_length()
    if stride > 1 << config.bits:
        raise UsageError(f"--active_cover with {opts.policies} policies needs -b "
                         f"{stride.bit_length() - 1} at least")  # fmt: skip
    entry = Entry(opts, config.seed)
    return dataclasses.replace(bootstrap.GD, train_batch=entry, init_gstate=entry.init_gstate)
