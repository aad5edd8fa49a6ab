"""VW's contextual memory tree, ``--memory_tree N`` (``--max_number_of_labels L``,
``--leaf_example_multiplier M``, ``--alpha A``, ``--dream_repeats R``, ``--top_K K``,
``--learn_at_leaf``, ``--dream_at_update D``, ``--online``), in the single-line reductions'
shape (:mod:`streamlearn.reductions.emt` is the nearest: a memory of examples over gd).
:mod:`streamlearn.learners.memory_tree_state` keeps the tree and
:mod:`streamlearn.learners.memory_tree` has its kernels; both say what they compute.

It reads multiclass lines as ``--oaa`` does (``TrainConfig.oaa`` = 2: its classes are any
label VW's multiclass reader takes, ``-p`` the class, 0/1 loss; VW's learners line names
``memory_tree``); its options are its own words in ``TrainConfig.stack``.  Its memories and
tree are the run's, kept between batches and passes (VW's generator too, seeded by
``--random_seed``).  ``--top_K`` only names VW's progress messages (every 5000 examples,
which sl does not print): accepted, nothing else.

Refused, one line each before any data is read: ``--oas`` (VW's one-against-some labels and
its scalar reporting of them), N below 1, another reduction over classes or over gd, a
learner other than gd, gd without ``--adaptive`` and ``--normalized`` (VW's plain update
reads a pair's odd sum of squares), ``--normalized`` alone with a ``--power_t`` other than 0
(gd's decaying rate without ``--adaptive``: sl's clock of the tree's updates differs from
VW's), interactions and ``--ignore_linear`` (VW's memories
keep the features without and with them), ``--indexing``, ``--named_labels``,
``--probabilities``, ``-r``, ``--audit``, ``--invert_hash`` and every model file (``-f``,
``-i``, ``--readable_model``: VW's model of the tree keeps each memory's features, which sl
does not write or read yet).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import (
    ignore_alone,
    over_gd,
    refuse_over_gd,
    tree_over_classes,
    word,
)
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "memory_tree"
"""Its name (VW's ``Enabled learners`` line names it where oaa would be)."""
_VALUED = ("--max_number_of_labels", "--leaf_example_multiplier", "--dream_repeats",
           "--top_K", "--dream_at_update")  # fmt: skip
_FLAGS = ("--learn_at_leaf", "--oas", "--online")
MAX_NODES = 1 << 24
"""The most nodes sl's tree may be given (VW's uint64; sl's lists grow as it splits)."""
AVERAGED = False
"""Its model (memories) is not a table Dask's workers could average."""


@dataclass(frozen=True)
class Options:
    max_nodes: int
    max_labels: int = 10
    multiplier: int = 1
    alpha: float = 0.1
    dreams: int = 1
    top_k: int = 1
    learn_at_leaf: bool = False
    oas: bool = False
    dream_at_update: int = 0
    online: bool = False

    @property
    def width(self) -> int:
        """VW's feature width: the routers and the scorer (and ``--oas``'s labels)."""
        return self.max_nodes + 1 + (self.max_labels if self.oas else 0)

    @property
    def max_leaf(self) -> int:
        """VW's ``max_leaf_examples``: M·log2 N, truncated."""
        return int(self.multiplier * (math.log(self.max_nodes) / math.log(2)))


def _value(words: tuple[str, ...], name: str) -> str | None:
    if name not in words:
        return None
    at = len(words) - words[::-1].index(name)  # (the last one given)
    return words[at] if at < len(words) else ""


def _count(words: tuple[str, ...], name: str, default: int, bits: int = 64) -> int:
    v = _value(words, name)
    if v is None:
        return default
    if not v.isdigit() or int(v) >= 1 << bits:
        raise UsageError(f"{name} {v}: a count below 2^{bits} is expected")
    return int(v)


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--memory_tree``."""
    if "--memory_tree" not in words:
        return None
    alpha = _value(words, "--alpha")
    try:
        a = float(np.float32(alpha)) if alpha is not None else float(np.float32(0.1))
    except ValueError:
        raise UsageError(f"--alpha {alpha}: a number is expected") from None
    k = _value(words, "--top_K")
    if k is not None and not k.lstrip("-").isdigit():
        raise UsageError(f"--top_K {k}: an integer is expected")
    d = _value(words, "--dream_at_update")
    if d is not None and not d.lstrip("-").isdigit():
        raise UsageError(f"--dream_at_update {d}: an integer is expected")
    return Options(_count(words, "--memory_tree", 0), _count(words, "--max_number_of_labels", 10),
                   _count(words, "--leaf_example_multiplier", 1), a,
                   _count(words, "--dream_repeats", 1, 32), int(k) if k else 1,
                   "--learn_at_leaf" in words, "--oas" in words, int(d) if d else 0,
                   "--online" in words)  # fmt: skip


def FIXED(words: tuple[str, ...]) -> dict:  # noqa: N802 - the registry's name
    """The configuration's fields its words set (multiclass labels: ``oaa`` 2, any class;
    ``--oas``: multilabel rows of at most ``--max_number_of_labels`` classes)."""
    opts = read(words)
    if opts is None:
        return {}
    return {"oaa": max(opts.max_labels, 1), "multilabel": True} if opts.oas else {"oaa": 2}


VW_OPTIONS = {
    "memory_tree": VWOption(None, True, word("memory_tree", True)),
    "max_number_of_labels": VWOption(None, True, word("max_number_of_labels", True)),
    "leaf_example_multiplier": VWOption(None, True, word("leaf_example_multiplier", True)),
    "dream_repeats": VWOption(None, True, word("dream_repeats", True)),
    "top_K": VWOption(None, True, word("top_K", True)),
    "learn_at_leaf": VWOption(None, False, word("learn_at_leaf", False)),
    "oas": VWOption(None, False, word("oas", False)),
    "dream_at_update": VWOption(None, True, word("dream_at_update", True)),
    "online": VWOption(None, False, word("online", False)),
}
"""VW's options of the reduction (``--alpha`` is declared by ``active_cover.py``, whose
settle leaves it to a ``--memory_tree`` line)."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--memory_tree`` means with the rest of a VW command line (one line, exit 2):
    its other options alone are ignored, as VW ignores them; any class VW reads (the kernel
    takes labels as they come)."""
    if ignore_alone(t, "--memory_tree", _FLAGS, _VALUED):
        tree_over_classes(t, "--memory_tree", read, refuse, FIXED, models=False)


def refuse(learn: dict, outputs: dict) -> None:
    """What sl does not run with ``--memory_tree``, one line each."""
    words = learn.get("stack", ())
    try:
        opts = read(words)
    except UsageError as e:
        raise VWUsage(e.message) from None
    if opts is None or opts.max_nodes < 1 or opts.max_nodes >= MAX_NODES:
        n = opts.max_nodes if opts else 0
        raise VWUsage(f"--memory_tree {n} is not supported by sl (1 to 2^24 - 1 nodes)")
    if opts.oas and not 1 <= opts.max_labels < MAX_NODES:
        raise VWUsage(f"--memory_tree --oas with --max_number_of_labels {opts.max_labels} is "
                      "not supported by sl (1 to 2^24 - 1 labels)")  # fmt: skip
    others = [w for w in words if w.startswith("--") and w not in ("--memory_tree", "--alpha")
              and w not in _VALUED and w not in _FLAGS]  # fmt: skip
    if others:
        raise VWUsage(f"--memory_tree with {others[0]} is not supported by sl")
    for key in ("csoaa", "ect") if opts.oas else ("csoaa", "multilabel", "ect"):
        if learn.get(key):
            raise VWUsage("--memory_tree with another reduction over classes is not supported "
                          "by sl")  # fmt: skip
    if learn.get("indexing") is not None or learn.get("named_labels"):
        raise VWUsage("--memory_tree with --indexing or --named_labels is not supported by sl")
    for key in ("quadratic", "cubic", "interactions", "ignore_linear"):
        if learn.get(key):
            raise VWUsage(f"--memory_tree with --{key} is not supported by sl (VW's memories "
                          "keep the features without and with the interactions)")  # fmt: skip
    if learn.get("adaptive") is False and learn.get("normalized") is False:
        raise VWUsage("--memory_tree with gd's plain update (neither --adaptive nor "
                      "--normalized) is not supported by sl (VW's update then reads a pair's "
                      "odd sum of squares)")  # fmt: skip
    if learn.get("adaptive") is False and learn.get("power_t", 0.5) != 0.0:
        raise VWUsage("--memory_tree with --normalized alone and a --power_t other than 0 is "
                      "not supported by sl (gd's decaying rate without --adaptive: sl's clock "
                      "of the tree's updates is not VW's yet)")  # fmt: skip
    for key in ("final_model", "initial_model", "readable_model"):
        if outputs.get(key):
            raise VWUsage("--memory_tree with -f, -i or --readable_model is not supported by "
                          "sl (VW's model of the tree keeps every memory's features: not "
                          "written or read yet)")  # fmt: skip
    refuse_over_gd({k: v for k, v in learn.items() if k not in ("oaa", "multilabel")}, outputs,
                   "--memory_tree",
                   "VW audits each router, pair and memory its tree asks")  # fmt: skip


def stack_name(opts: Options) -> str:  # noqa: ARG001
    return ""  # (VW names it where oaa would be: run/classes.py's vw_name)


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    """VW's lines of its set-up."""
    return [
        "tree initialization is done....",
        f"max nodes {opts.max_nodes}",
        "tree size: 1",
        f"max number of unique labels: {opts.max_labels}",
        f"learn at leaf: {int(opts.learn_at_leaf)}",
        f"num of dream operations per example: {opts.dreams}",
        "current_pass: 0",
        f"oas: {int(opts.oas)}",
        f"memory_tree: max_nodes = {opts.max_nodes} max_leaf_examples = {opts.max_leaf} "
        f"alpha = {opts.alpha:.6g} oas = {int(opts.oas)} online ={int(opts.online)} ",
    ]


class Entry:
    """The kernel entry of one run: the tree and its memories between batches."""

    wants_ns = True

    def __init__(self, opts: Options, seed: int, truncate: bool) -> None:
        from streamlearn.learners.memory_tree_state import State

        step = 1 << max(opts.width - 1, 0).bit_length()
        self.state = State(opts.max_nodes, opts.max_labels, opts.multiplier, opts.alpha,
                           opts.dreams, opts.learn_at_leaf, opts.oas, opts.dream_at_update != 0,
                           opts.online, seed, step, truncate)  # fmt: skip
        self.step = step

    def end_pass(self) -> None:
        """A pass's end (the single-line driver's call, ``run/online.py``): VW's
        ``end_pass``."""
        self.state.end_pass()

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204, ARG002
                 weights, bases, status, stats, rows, preds, ns):  # fmt: skip
        from streamlearn.learners.base import P_INDEXING

        params[P_INDEXING] = 0.0  # (its classes are labels as read: none is decided)
        self.state.batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                         weights, status, stats, rows, preds, ns)  # fmt: skip

    def init_gstate(self, params):  # noqa: ANN001, ANN201
        """gd's state and each problem's normalizer sums."""
        from streamlearn.learners import gd
        from streamlearn.learners.base import P_T0
        from streamlearn.learners.oaa import G_CLASS

        base = gd.init_gstate(params)
        gstate = np.zeros(max(base.shape[0], G_CLASS + 2 * self.step))
        gstate[: base.shape[0]] = base
        t0 = float(np.float32(params[P_T0]))
        if t0 > 0.0:  # (VW sets only model 0's)
            gstate[G_CLASS] = t0
            gstate[G_CLASS + 1] = t0
        return gstate


def table_texts(labels: np.ndarray, preds: np.ndarray, k: int):  # noqa: ANN201, ARG001
    """``--oas``'s progress columns, as VW prints them: its simple label, never set
    (``unknown``), and the example's last clipped score (4 decimals)."""

    def texts(i: int) -> tuple[str, str]:
        return "unknown", f"{float(np.float32(preds[i, 0])) + 0.0:.4f}"

    return texts


def p_lines(batch, preds: np.ndarray, *_: object) -> bytes:  # noqa: ANN001 - a Batch
    """``--oas``'s ``-p``: the example's last clipped score as VW writes a scalar (no
    decimals when whole, else six), then `` tag``."""
    data = batch.block.data
    out = []
    for v, a, b in zip(preds[:, 0].tolist(), batch.tag_start.tolist(), batch.tag_end.tolist(),
                       strict=True):  # fmt: skip
        tag = b" " + data[a:b].tobytes() if b > a else b""
        if v != v:
            out.append(b"nan" + tag + b"\n")
            continue
        x = float(np.float32(v))
        text = f"{x:.0f}" if math.floor(x) == x else f"{x:.6f}"
        out.append(text.encode("ascii") + tag + b"\n")
    return b"".join(out)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """The tree over gd: the run's learner."""
    return over_gd(config, read, refuse, lambda opts: _entry(opts, config),
                   name="memory_tree_gd", init_gstate="init_gstate")  # fmt: skip


def _entry(opts: Options, config) -> Entry:  # noqa: ANN001 - a TrainConfig
    entry = Entry(opts, config.seed, bool(config.l1))
    if opts.oas:  # (VW reports a scalar never labeled: its table, -p and counts)
        entry.table_texts = table_texts
        entry.p_lines = p_lines
        entry.lists_labeled = False
    return entry
