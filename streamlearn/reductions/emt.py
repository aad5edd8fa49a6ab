"""VW's eigen memory tree, ``--emt`` (``--emt_tree N``, ``--emt_leaf N``, ``--emt_scorer
random|distance|self_consistent_rank|not_self_consistent_rank``, ``--emt_router
random|eigen``, ``--emt_initial euclidean|gaussian|cosine|none``), in the single-line
reductions' shape (:mod:`streamlearn.reductions.log_multi` is the nearest: a structure over
gd).  :mod:`streamlearn.learners.emt_state` keeps the tree and
:mod:`streamlearn.learners.emt` has its kernels; both say what they compute.

It reads multiclass lines as ``--oaa`` does (``TrainConfig.oaa`` = 2: its classes are any
label VW's multiclass reader takes, ``-p`` the class, 0/1 loss; VW's learners line names
``emt``); its options are its own words in ``TrainConfig.stack``.  Its memories and tree
are the run's, kept between batches (VW's generator too, seeded by ``--random_seed``).

Refused, one line each before any data is read: another reduction over classes or over
gd, a learner other than gd, interactions (VW's memories keep the example's features
without and with them: sl keeps one list), ``--ignore_linear``, a loss other than
squared, ``--min_prediction``/``--max_prediction``, ``--indexing``, ``--named_labels``,
``--probabilities``, ``-r``, ``--audit``, ``--invert_hash`` and every model file (``-f``,
``-i``, ``--readable_model``: sl does not write VW's tree of memories yet).
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import (
    ignore_alone,
    over_gd,
    refuse_over_gd,
    tree_over_classes,
    word,
)
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "emt"
"""Its name (VW's ``Enabled learners`` line names it where oaa would be)."""
SCORERS = ("random", "distance", "self_consistent_rank", "not_self_consistent_rank")
ROUTERS = ("random", "eigen")
INITIALS = ("gaussian", "cosine", "euclidean", "none")
_VALUED = ("--emt_tree", "--emt_leaf", "--emt_scorer", "--emt_router", "--emt_initial")
AVERAGED = False
"""Its model (memories) is not a table Dask's workers could average."""


@dataclass(frozen=True)
class Options:
    tree: int = 0
    leaf: int = 100
    scorer: str = "self_consistent_rank"
    router: str = "eigen"
    initial: str = "cosine"


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no ``--emt``."""
    if "--emt" not in words:
        return None
    given: dict = {}
    for i, w in enumerate(words):
        if w not in _VALUED:
            continue
        text = words[i + 1] if i + 1 < len(words) else ""
        if w in ("--emt_tree", "--emt_leaf"):
            if not text.isdigit() or int(text) >= 1 << 32:
                raise UsageError(f"{w} {text}: a count below 2^32 is expected (VW's uint32)")
            given[w[6:]] = int(text)
        else:
            allowed = {"--emt_scorer": SCORERS, "--emt_router": ROUTERS,
                       "--emt_initial": INITIALS}[w]  # fmt: skip
            if text not in allowed:
                raise UsageError(f"{w} {text}: not one of {', '.join(allowed)} (as VW)")
            given[w[6:]] = text
    return Options(**given)


def FIXED(words: tuple[str, ...]) -> dict:  # noqa: N802 - the registry's name
    """The configuration's fields its words set (multiclass labels: ``oaa`` 2, any class)."""
    return {} if read(words) is None else {"oaa": 2}


def _uint(name: str, text: str) -> str:
    if not text.isdigit() or int(text) >= 1 << 32:
        raise VWUsage(f"--{name} {text}: a count below 2^32 is expected (VW's uint32)")
    return str(int(text))


def _word(kind):  # noqa: ANN001, ANN202 - (name, text) -> the word kept
    def apply(t: Command, name: str, value: str | None) -> None:
        t.learn["stack"] = (*t.learn.get("stack", ()), "--" + name, kind(name, value or ""))

    return apply


VW_OPTIONS = {
    "emt": VWOption(None, False, word("emt", False)),
    "emt_tree": VWOption(None, True, _word(_uint)),
    "emt_leaf": VWOption(None, True, _word(_uint)),
    "emt_scorer": VWOption(None, True, _word(lambda name, text: text)),  # (read: settle's)
    "emt_router": VWOption(None, True, _word(lambda name, text: text)),
    "emt_initial": VWOption(None, True, _word(lambda name, text: text)),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--emt`` means with the rest of a VW command line (one line, exit 2): its other
    options alone are ignored, as VW ignores them; any class VW reads (the kernel takes
    labels as they come)."""
    if ignore_alone(t, "--emt", (), _VALUED):
        tree_over_classes(t, "--emt", read, refuse, FIXED, models=False)


def refuse(learn: dict, outputs: dict) -> None:
    """What sl does not run with ``--emt``, one line each."""
    others = [w for w in learn.get("stack", ())
              if w.startswith("--") and w != "--emt" and w not in _VALUED]  # fmt: skip
    if others:
        raise VWUsage(f"--emt with {others[0]} is not supported by sl")
    for key in ("csoaa", "multilabel", "ect"):
        if learn.get(key):
            raise VWUsage("--emt with another reduction over classes is not supported by sl")
    if learn.get("indexing") is not None or learn.get("named_labels"):
        raise VWUsage("--emt with --indexing or --named_labels is not supported by sl")
    for key in ("quadratic", "cubic", "interactions", "ignore_linear"):
        if learn.get(key):
            raise VWUsage(f"--emt with --{key} is not supported by sl (VW's memories keep the "
                          "features without and with the interactions)")  # fmt: skip
    if learn.get("loss", "squared") != "squared":
        raise VWUsage(f"--emt with --loss_function {learn['loss']} is not supported by sl "
                      "(its scorer learns with squared loss)")  # fmt: skip
    for key in ("min_prediction", "max_prediction"):
        if learn.get(key) is not None:
            raise VWUsage(f"--emt with --{key} is not supported by sl (its scorer's range "
                          "is VW's 0..3)")  # fmt: skip
    for key in ("final_model", "initial_model", "readable_model"):
        if outputs.get(key):
            raise VWUsage("--emt with -f, -i or --readable_model is not supported by sl (VW's "
                          "model of a memory tree is not written or read yet)")  # fmt: skip
    refuse_over_gd({k: v for k, v in learn.items() if k != "oaa"}, outputs, "--emt",
                   "VW audits each pair of memories its scorer asks")  # fmt: skip


def stack_name(opts: Options) -> str:  # noqa: ARG001
    return ""  # (VW names it where oaa would be: run/classes.py's vw_name)


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


class Entry:
    """The kernel entry of one run: the tree and its memories between batches."""

    wants_ns = False

    def __init__(self, opts: Options, seed: int) -> None:
        from streamlearn.learners.emt_state import State

        self.state = State(opts.leaf, opts.scorer, opts.router, opts.initial, opts.tree, seed)

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204, ARG002
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        from streamlearn.learners.base import P_INDEXING

        params[P_INDEXING] = 0.0  # (its classes are labels as read: none is decided)
        self.state.batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                         weights, status, stats, rows, preds)  # fmt: skip

    @staticmethod
    def init_gstate(params):  # noqa: ANN001, ANN205
        """gd's state, with VW's label range 0..3 (its set-up widens the scorer's)."""
        from streamlearn.learners import gd
        from streamlearn.learners.base import G_CLIP, G_LABEL_MAX, G_LABEL_MIN

        gstate = gd.init_gstate(params)
        gstate[G_CLIP] = 1.0
        gstate[G_LABEL_MIN] = 0.0
        gstate[G_LABEL_MAX] = 3.0
        return gstate


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """The tree over gd: the run's learner."""
    return over_gd(config, read, refuse, lambda opts: Entry(opts, config.seed), name="emt_gd",
                   init_gstate="init_gstate")  # fmt: skip
