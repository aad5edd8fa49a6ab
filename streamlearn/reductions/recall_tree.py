"""VW's ``--recall_tree K`` with ``--max_candidates M``, ``--bern_hyper β``, ``--max_depth D``,
``--node_only`` and ``--randomized_routing`` (:mod:`streamlearn.learners.recall_tree` is its
kernel and says what it computes), in the single-line reductions' shape
(:mod:`streamlearn.reductions.lrq` is the worked example; ``log_multi.py`` its closest kin).

It reads multiclass lines into K classes as ``--oaa K`` does (``TrainConfig.oaa``: labels
1..K, ``-p`` the class, 0/1 loss); its options are its own words in ``TrainConfig.stack``.
VW keeps ``--recall_tree K`` with a model, and ``--max_candidates``, ``--max_depth``,
``--node_only``, ``--randomized_routing`` when given (not ``--bern_hyper``: a run's own, 1
by default); its tree (M and D in it: a model continued keeps its own) in a section before
gd's; VW's generator, drawn from by ``--randomized_routing``, as ``--random_seed``.
``--classweight`` is applied by the kernel (the router's choice reads the label's own weight).

Refused, one line each before any data is read: K below 1 or M, D beyond sl's bounds,
another reduction over classes or over gd, a learner other than gd, ``--indexing``,
``--named_labels``, ``--probabilities``, ``-r``, ``--audit``, ``--invert_hash`` and
interactions with ``:`` (VW's node features sit in a namespace of their own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import configured, refuse_over_gd, tree_over_classes, word
from streamlearn.reductions.vwoptions import Command, VWOption, count

NAME = "recall_tree"
"""Its name (VW's ``Enabled learners`` line names it where oaa would be)."""
MINE = ("--max_candidates", "--bern_hyper", "--max_depth")
MAX_DEPTH = 20
"""The deepest tree sl builds (2^21 - 1 nodes; ``learners/recall_tree.py`` keeps the same)."""
MAX_ROWS = 1 << 24
"""The most class rows (nodes × K, 16 bytes each) sl keeps."""
FLAGS = ("--node_only", "--randomized_routing")


@dataclass(frozen=True)
class Options:
    k: int
    candidates: int
    depth: int
    bern: float = 1.0
    node_only: bool = False
    randomized: bool = False


def _value(words: tuple[str, ...], name: str) -> str | None:
    if name not in words:
        return None
    at = words.index(name) + 1
    return words[at] if at < len(words) else ""


def _count(words: tuple[str, ...], name: str) -> int | None:
    v = _value(words, name)
    if v is None:
        return None
    if not v.isdigit() or int(v) >= 1 << 63:
        raise UsageError(f"{name} {v}: a count is expected")
    return int(v)


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--recall_tree``."""
    if "--recall_tree" not in words:
        return None
    v = _value(words, "--recall_tree") or ""
    k = int(v) if v.isdigit() else 0
    log2 = int(math.ceil(math.log(k) / math.log(2.0))) if k > 0 else 0
    depth = _count(words, "--max_depth")
    candidates = _count(words, "--max_candidates")
    bern = _value(words, "--bern_hyper")
    try:
        b = float(bern) if bern is not None else 1.0
    except ValueError:
        raise UsageError(f"--bern_hyper {bern}: a number is expected") from None
    return Options(k, min(k, 4 * log2) if candidates is None else candidates,
                   log2 if depth is None else depth, b, "--node_only" in words,
                   "--randomized_routing" in words)  # fmt: skip


def FIXED(words: tuple[str, ...]) -> dict:  # noqa: N802 - the registry's name
    """The configuration's fields its words set (a model's ``--recall_tree K``: K classes)."""
    opts = read(words)
    return {} if opts is None else {"oaa": opts.k}


def _classes(t: Command, name: str, value: str) -> None:
    k = count(name, value, "--recall_tree", "a multiclass tree needs at least one class")
    t.learn["stack"] = (*t.learn.get("stack", ()), "--recall_tree", str(k))  # (K: settle's)


VW_OPTIONS = {
    "recall_tree": VWOption(None, True, _classes),
    "max_candidates": VWOption(None, True, word("max_candidates", True)),
    "bern_hyper": VWOption(None, True, word("bern_hyper", True)),
    "max_depth": VWOption(None, True, word("max_depth", True)),
    "node_only": VWOption(None, False, word("node_only", False)),
    "randomized_routing": VWOption(None, False, word("randomized_routing", False)),
}
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--recall_tree`` means with the rest of a VW command line (one line, exit 2): its
    other options alone are ignored, as VW ignores them (but beside ``-i``: a model of VW's
    recall tree takes them, ``--bern_hyper`` the run's own)."""
    words = t.learn.get("stack", ())
    if "--recall_tree" not in words:
        mine = [w for w in words if w in MINE or w in FLAGS]
        if mine and not t.inputs.get("initial_model"):
            t.notes.append(f"{' '.join(mine)}: options of --recall_tree, ignored")
            kept: list[str] = []
            it = iter(words)
            for w in it:
                if w in MINE:
                    next(it, None)
                elif w not in FLAGS:
                    kept.append(w)
            t.learn["stack"] = tuple(kept)
        return
    tree_over_classes(t, "--recall_tree", read, refuse)


def refuse(learn: dict, outputs: dict) -> None:
    """What sl does not run with ``--recall_tree``, one line each."""
    try:
        opts = read(learn.get("stack", ()))
    except UsageError as e:
        raise VWUsage(e.message) from None
    if opts is None or opts.k < 1 or opts.k >= 1 << 24:
        raise VWUsage(f"--recall_tree {opts.k if opts else 0} is not supported by sl (1 to "
                      "2^24 - 1 classes)")  # fmt: skip
    if opts.depth > MAX_DEPTH or (2 << opts.depth) * opts.k > MAX_ROWS:
        raise VWUsage(f"--recall_tree {opts.k} with --max_depth {opts.depth} is not supported "
                      f"by sl (its classes at each of 2^{opts.depth + 1} - 1 nodes: "
                      f"{MAX_ROWS} rows at most)")  # fmt: skip
    if opts.candidates >= 1 << 32:
        raise VWUsage(f"--max_candidates {opts.candidates} is not supported by sl (below 2^32)")
    if not math.isfinite(opts.bern):
        raise VWUsage(f"--bern_hyper {opts.bern} is not supported by sl (a finite number)")
    others = [w for w in learn.get("stack", ())
              if w.startswith("--") and w not in ("--recall_tree", *MINE, *FLAGS)]  # fmt: skip
    if others:
        raise VWUsage(f"--recall_tree with {others[0]} is not supported by sl")
    for key in ("csoaa", "multilabel", "ect"):
        if learn.get(key):
            raise VWUsage("--recall_tree with another reduction over classes is not supported "
                          "by sl")  # fmt: skip
    if learn.get("indexing") is not None or learn.get("named_labels"):
        raise VWUsage("--recall_tree with --indexing or --named_labels is not supported by sl")
    for key in ("quadratic", "cubic", "interactions"):
        if any(":" in v for v in learn.get(key, ()) or ()):
            raise VWUsage("--recall_tree with interactions of ':' is not supported by sl (they "
                          "would cross VW's node features)")  # fmt: skip
    refuse_over_gd({k: v for k, v in learn.items() if k != "oaa"}, outputs, "--recall_tree",
                   "VW audits each problem the tree asks")  # fmt: skip


def stack_name(opts: Options) -> str:  # noqa: ARG001
    return ""  # (VW names it where oaa would be: run/classes.py's vw_name)


def _general(x: float) -> str:
    """C++'s stream of a float (6 significant digits, trailing zeros dropped)."""
    text = f"{x:.6g}"
    return text


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001 - a TrainConfig
    """VW's line of its set-up."""
    testing = config is not None and config.test_only
    routing = "n/a testonly" if testing else "randomized" if opts.randomized else "deterministic"
    return [
        f"recall_tree: node_only = {int(opts.node_only)} bern_hyper = "
        f"{_general(opts.bern)} max_depth = {opts.depth} routing = {routing}"
    ]


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """The tree over gd: the run's learner."""
    from streamlearn.learners import recall_tree

    opts = configured(config, read, refuse)
    return recall_tree.spec(opts.k, opts.depth, opts.candidates, opts.bern, opts.node_only,
                            opts.randomized, config.seed, config.class_weights())  # fmt: skip
