"""VW's ``--plt K`` with ``--kary_tree``, ``--threshold``, ``--top_k`` and ``--probabilities``
(:mod:`streamlearn.learners.plt` is its kernel and says what it computes), in the
single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the worked example,
``log_multi.py`` its closest kin).

It reads multilabel lines as ``--multilabel_oaa K`` does (``TrainConfig.oaa`` K and
``multilabel``: ``c1,c2`` 0-based); its options are its own words in ``TrainConfig.stack``.
VW keeps ``--plt K --kary_tree k`` with a model, and the nodes' clocks in a section before
gd's; ``--threshold`` and ``--top_k`` are the run's (a ``-t`` run over a model gives them).
``-p`` lists the labels in VW's order (``l1,l2`` and a space; ``l:p,l:p`` under
``--probabilities``); under ``-t`` VW's precision and recall close the summary.

Refused, one line each before any data is read: K below 2 or a tree above
:data:`~streamlearn.learners.plt.MAX_NODES` nodes, ``--kary_tree`` below 2, ``--top_k``
above K, a loss other than logistic (as VW), a link other than identity, another reduction
over classes or over gd, a learner other than gd, ``--plt_force_load_legacy_model``,
``-r``, ``--audit`` and ``--invert_hash``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import configured, refuse_over_gd, word
from streamlearn.reductions.vwoptions import Command, VWOption, count

NAME = "plt"
"""Its name (VW's ``Enabled learners`` line names it last: run/classes.py's vw_name)."""

OWN = ("--plt", "--kary_tree", "--threshold", "--top_k")

MAX_NODES = 20000
"""``learners/plt.py``'s (read here without loading a kernel)."""


def _tree(k: int, kary: int) -> tuple[int, int]:
    """VW's count of the tree's nodes, and the most labels one prediction lists
    (``learners/plt.py``'s ``tree_size`` and ``width``, without loading a kernel)."""
    a = math.pow(kary, math.floor(math.log(k) / math.log(kary)))
    t = int(k - (a - math.ceil((k - a) / (kary - 1.0))) + (kary * a - 1.0) / (kary - 1.0))
    return t, (kary - 1) * (t - k) + 1


@dataclass(frozen=True)
class Options:
    k: int
    kary: int = 2
    threshold: float = 0.5
    top_k: int = 0


def _value(words: tuple[str, ...], flag: str, default: str) -> str:
    if flag not in words:
        return default
    at = len(words) - 1 - words[::-1].index(flag) + 1  # (the last one given: a run's)
    return words[at] if at < len(words) else ""


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no ``--plt``."""
    if "--plt" not in words:
        return None
    k = _value(words, "--plt", "0")
    kary = _value(words, "--kary_tree", "2")
    top_k = _value(words, "--top_k", "0")
    for name, v in (("--plt", k), ("--kary_tree", kary), ("--top_k", top_k)):
        if not v.isdigit() or int(v) >= 1 << 32:
            raise UsageError(f"{name} {v}: a count below 2^32 is expected")
    text = _value(words, "--threshold", "0.5")
    try:
        threshold = float(np.float32(float(text)))
    except ValueError:
        raise UsageError(f"--threshold {text}: a number is expected") from None
    return Options(int(k), int(kary), threshold, int(top_k))


def FIXED(words: tuple[str, ...]) -> dict:  # noqa: N802 - the registry's name
    """The configuration's fields its words set (a model's ``--plt K``: K labels)."""
    opts = read(words)
    return {} if opts is None else {"oaa": opts.k, "multilabel": True}


def _labels(t: Command, name: str, value: str) -> None:
    k = count(name, value, "--plt", "a label tree needs at least one label")
    t.learn["stack"] = (*t.learn.get("stack", ()), "--plt", str(k))


VW_OPTIONS = {
    "plt": VWOption(None, True, _labels),
    "kary_tree": VWOption(None, True, word("kary_tree", True)),
    "threshold": VWOption(None, True, word("threshold", True)),
    "top_k": VWOption(None, True, word("top_k", True)),
    "plt_force_load_legacy_model": VWOption(None, False, word("plt_force_load_legacy_model",
                                                              False)),
}  # fmt: skip
"""VW's options of the reduction."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--plt`` means with the rest of a VW command line (one line, exit 2).  Its other
    options alone stay (a ``-t`` run over a model of VW's tree gives them)."""
    words = t.learn.get("stack", ())
    if "--plt_force_load_legacy_model" in words:
        raise VWUsage("--plt_force_load_legacy_model is not supported by sl (VW's models "
                      "from before 9.7)")  # fmt: skip
    if "--plt" not in words:
        return
    try:
        opts = read(words)
    except UsageError as e:
        raise VWUsage(e.message) from None
    if opts is None or any(t.learn.get(k) for k in ("oaa", "csoaa", "multilabel", "ect")):
        raise VWUsage("--plt with --oaa, --multilabel_oaa or another reduction over classes "
                      "is not supported by sl")  # fmt: skip
    if t.learn.get("loss", "squared") != "logistic":
        raise VWUsage(f"--plt requires --loss_function=logistic, but instead found: "
                      f"{t.learn.get('loss', 'squared')}")  # fmt: skip
    t.learn["oaa"] = opts.k
    t.learn["multilabel"] = True
    refuse(t.learn, t.outputs)
    if t.raw_predictions:
        raise VWUsage("--plt with -r is not supported by sl (VW writes no raw scores of it)")
    if t.link != "identity":
        raise VWUsage(f"--plt with --link {t.link} is not supported by sl (VW links each "
                      "node's score before its sigmoid)")  # fmt: skip


def refuse(learn: dict, outputs: dict) -> None:
    """What sl does not run with ``--plt``, one line each."""
    try:
        opts = read(learn.get("stack", ()))
    except UsageError as e:
        raise VWUsage(e.message) from None
    k = opts.k if opts is not None else 0
    if k < 2:
        raise VWUsage(f"--plt {k} is not supported by sl (2 labels at least)")
    if opts.kary < 2:
        raise VWUsage(f"--kary_tree {opts.kary} is not supported by sl (VW's tree needs 2 "
                      "children at least)")  # fmt: skip
    if k > MAX_NODES or max(_tree(k, opts.kary)) > MAX_NODES:
        raise VWUsage(f"--plt {k} is not supported by sl (a tree of {MAX_NODES} nodes at most)")
    if opts.top_k > k:
        raise VWUsage(f"--top_k {opts.top_k} is not supported by sl with --plt {k} (VW reads "
                      "past its predictions)")  # fmt: skip
    if learn.get("loss", "logistic") != "logistic":
        raise VWUsage(f"--plt requires --loss_function=logistic, but instead found: "
                      f"{learn.get('loss')}")  # fmt: skip
    others = [w for w in learn.get("stack", ()) if w.startswith("--") and w not in OWN]
    if others:
        raise VWUsage(f"--plt with {others[0]} is not supported by sl")
    for key in ("csoaa", "ect"):
        if learn.get(key):
            raise VWUsage("--plt with another reduction over classes is not supported by sl")
    if learn.get("indexing") is not None or learn.get("named_labels"):
        raise VWUsage("--plt with --indexing or --named_labels is not supported by sl")
    refuse_over_gd({k: v for k, v in learn.items() if k not in ("oaa", "multilabel")},
                   outputs, "--plt", "VW audits each node the tree asks")  # fmt: skip


def stack_name(opts: Options) -> str:  # noqa: ARG001
    return ""  # (VW names it last, where multilabel_oaa would be: run/classes.py's vw_name)


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001 - a TrainConfig
    """VW's lines at its set-up: K, the tree's arity, and under ``-t`` how it predicts."""
    lines = [f"PLT k = {opts.k}", f"kary_tree = {opts.kary}"]
    if config is not None and config.test_only:  # (a float as C++ streams it: %g)
        lines.append(f"top_k = {opts.top_k}" if opts.top_k > 0
                     else f"threshold = {float(np.float32(opts.threshold)):g}")  # fmt: skip
    return lines


def summary_lines(opts: Options, gstate: np.ndarray) -> list[str]:
    """VW's lines at the end of a run that only predicted (its ``finish``)."""
    from streamlearn.learners import plt

    return plt.summary_lines(gstate, opts.k, opts.kary, opts.threshold)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """The tree over gd: the run's learner."""
    from streamlearn.learners import plt

    opts = configured(config, read, refuse)
    made = plt.spec(opts.k, opts.kary, opts.threshold, opts.top_k)
    made.train_batch.table_texts = table_texts
    made.train_batch.p_lines = p_lines
    return made


def _cut(text: str) -> str:
    """A column of VW's table (14 characters): a longer text cut to 11 and ``...``."""
    return text if len(text) <= 14 else text[:11] + "..."


def table_texts(labels: np.ndarray, preds: np.ndarray, k: int):  # noqa: ANN201, ARG001
    """The progress table's label and prediction columns of a batch's example ``i``, as VW
    prints them: the classes given (``unknown``: none), the labels predicted in order."""

    def texts(i: int) -> tuple[str, str]:
        m = int(labels[i, 0])
        given = ",".join(str(int(c)) for c in labels[i, 1 : 1 + m]) if m else "unknown"
        n = preds[i, 0]
        shown = ",".join(str(int(c)) for c in preds[i, 1 : 1 + int(n)]) if n == n else ""
        return _cut(given), _cut(shown)

    return texts


def p_lines(batch, preds: np.ndarray, probabilities: bool) -> bytes:  # noqa: ANN001 - a Batch
    """VW's ``-p`` of the tree: ``l1,l2 `` (then `` tag``), or ``l1:p1,l2:p2`` under
    ``--probabilities`` (then `` tag``)."""
    from streamlearn.reductions.text import fmt_float

    w = (preds.shape[1] - 1) // 2
    data = batch.block.data
    out = []
    for row, a, b in zip(preds.tolist(), batch.tag_start.tolist(), batch.tag_end.tolist(),
                         strict=True):  # fmt: skip
        tag = b" " + data[a:b].tobytes() if b > a else b""
        if row[0] != row[0]:
            out.append(b"nan\n")
            continue
        n = int(row[0])
        if probabilities:
            text = ",".join(f"{int(row[1 + j])}:{fmt_float(row[1 + w + j], 6)}" for j in range(n))
        else:
            text = ",".join(str(int(row[1 + j])) for j in range(n)) + " "
        out.append(text.encode("ascii") + tag + b"\n")
    return b"".join(out)
