"""Cost-sensitive active learning, VW's ``--cs_active K`` with ``--simulation``,
``--mellowness``, ``--range_c``, ``--cost_max``, ``--cost_min``, ``--max_labels``,
``--min_labels``, ``--domination`` and gd's ``--adax`` (:mod:`streamlearn.learners.cs_active`
is its kernel), in the single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the
worked example).  It reads cost-sensitive lines into K classes' slots as ``--csoaa K`` does
(``TrainConfig.oaa``, ``csoaa``); its options are its own words in ``TrainConfig.stack``
(``--simulation`` kept as ``--cs_simulation``: ``--active`` owns the word).

Refused in one line: ``--baseline`` (VW sets up its baseline reduction under it too), a
loss other than squared (as VW), ``--csa_debug`` (VW's per-label trace), gd without adaptive
rates, ``--adax`` with ``--l1``/``--l2`` or without ``--cs_active``, and a ``--min_labels`` or
``--max_labels`` budget once it is reached (VW then writes a model beside the final one and a
report, or leaves its predictions unset): the run stops with a one-line error, no output
replaced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import configured, word
from streamlearn.reductions.vwoptions import Command, VWOption, count

NAME = "cs_active"
"""Its name in VW's ``Enabled learners`` line (``cs_active-sim``: :func:`stack_name`)."""

NUMBERS = {"--cost_max": "1", "--cost_min": "0", "--range_c": "0.5", "--mellowness": "0.1",
           "--domination": "1", "--max_labels": "-1", "--min_labels": "-1"}  # fmt: skip
FLAGS = ("--cs_simulation", "--adax", "--csa_debug")


@dataclass(frozen=True)
class Options:
    k: int
    cost_max: float = 1.0
    cost_min: float = 0.0
    range_c: float = 0.5
    mellowness: float = 0.1
    domination: bool = True
    max_labels: int = -1
    min_labels: int = -1
    simulation: bool = False
    adax: bool = False
    baseline: bool = False

    def conf(self, at: int) -> np.ndarray:
        """The kernel's options (:data:`streamlearn.learners.cs_active.C_C0` ...)."""
        f = np.float32
        return np.array([f(self.mellowness), f(self.range_c), f(self.cost_max),
                         f(self.cost_min), self.simulation, self.baseline, self.domination,
                         self.min_labels, self.max_labels, self.adax, at, -1],
                        dtype=np.float64)  # fmt: skip


def _number(name: str, text: str) -> float:
    try:
        return float(np.float32(text))
    except ValueError:
        raise UsageError(f"{name} {text}: a number is expected") from None


def _budget(name: str, text: str) -> int:
    if text == "-1":
        return -1
    if not text.isdigit() or int(text) >= 1 << 64:
        raise UsageError(f"{name} {text}: a count of labels is expected")
    return int(text)


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no
    ``--cs_active``."""
    if "--cs_active" not in words:
        return None
    at = words.index("--cs_active") + 1
    k = int(words[at]) if at < len(words) and words[at].isdigit() else 0
    if k < 1:
        raise UsageError("--cs_active needs a number of classes, 1 or more")
    values = dict(NUMBERS)
    it = iter(words)
    for w in it:
        if w in NUMBERS:
            values[w] = next(it, "")
    dom = values["--domination"]
    try:
        domination = int(dom) != 0
    except ValueError:
        raise UsageError(f"--domination {dom}: an integer is expected") from None
    return Options(k, _number("--cost_max", values["--cost_max"]),
                   _number("--cost_min", values["--cost_min"]),
                   _number("--range_c", values["--range_c"]),
                   _number("--mellowness", values["--mellowness"]), domination,
                   _budget("--max_labels", values["--max_labels"]),
                   _budget("--min_labels", values["--min_labels"]),
                   "--cs_simulation" in words, "--adax" in words,
                   "--baseline" in words)  # fmt: skip


def FIXED(words: tuple[str, ...]) -> dict:  # noqa: N802 - the registry's name
    """The configuration's fields its words set (a model's ``--cs_active K``: csoaa's K
    classes, which VW's model names only so)."""
    opts = read(words)
    return {} if opts is None else {"oaa": opts.k, "csoaa": True}


def _classes(t: Command, name: str, value: str) -> None:
    k = count(name, value, "--cs_active", "cost-sensitive active learning needs at least one "
              "class")  # fmt: skip
    if t.learn.get("oaa"):
        raise VWUsage("--cs_active can't be used with --csoaa, --oaa or another reduction over "
                      "classes (as in VW)")  # fmt: skip
    t.learn["oaa"] = k
    t.learn["csoaa"] = NAME  # (True once settled: a --csoaa after it sets True)
    t.learn["stack"] = (*t.learn.get("stack", ()), "--cs_active", str(k))


VW_OPTIONS = {
    "cs_active": VWOption(None, True, _classes),
    **{n[2:]: VWOption(None, True, word(n[2:], True)) for n in NUMBERS if n != "--mellowness"},
    "adax": VWOption(None, False, word("adax", False)),
    "csa_debug": VWOption(None, False, word("csa_debug", False)),
}
"""VW's options of the reduction (``--simulation`` is ``--active``'s declaration,
``--mellowness`` the explorers': taken in :func:`settle`; ``--adax`` is gd's)."""

TRAIN_OPTIONS = ()
"""``sl train`` names none of it (``sl vw`` runs VW's command lines)."""


def train_words(values: dict) -> tuple[str, ...]:  # noqa: ARG001
    return ()


def settle(t: Command) -> None:
    """What ``--cs_active`` means with the rest of a VW command line (one line, exit 2); run
    before ``--active``'s, which would drop ``--simulation``."""
    words = t.learn.get("stack", ())
    if "--adax" in words and "--cs_active" not in words:
        raise VWUsage("--adax is supported by sl only with --cs_active")
    if (words and "--cs_active" not in words and t.inputs.get("initial_model")
            and "--active" not in words):
        # (a model may name --cs_active: the run's words are its, --simulation ours)
        t.learn["stack"] = tuple("--cs_simulation" if w == "--simulation" else w for w in words)
        return
    if "--cs_active" not in words:
        mine = [w for w in words if w in NUMBERS or w == "--csa_debug"]
        if mine:
            t.notes.append(f"{' '.join(mine)}: options of --cs_active, ignored")
            kept: list[str] = []
            it = iter(words)
            for w in it:
                if w in NUMBERS:
                    next(it, None)
                elif w != "--csa_debug":
                    kept.append(w)
            t.learn["stack"] = tuple(kept)
        return
    if t.learn.get("csoaa") != NAME or t.learn.get("oaa") != read(words).k:
        raise VWUsage("--cs_active can't be used with --csoaa, --oaa or another reduction over "
                      "classes (as in VW)")  # fmt: skip
    t.learn["csoaa"] = True
    words = tuple("--cs_simulation" if w == "--simulation" else w for w in words)
    c0 = t.multiline.get("mellowness")
    if c0 is not None and not t.exploring:
        t.multiline.pop("mellowness")
        t.explorer_options[:] = [n for n in t.explorer_options if n != "mellowness"]
        words = (*words, "--mellowness", f"{float(np.float32(c0)):.15g}")
    t.learn["stack"] = words
    try:
        read(words)
    except UsageError as e:
        raise VWUsage(e.message) from None
    refuse(t.learn, t.outputs)


def refuse(learn: dict, outputs: dict) -> None:
    """What sl does not run with ``--cs_active``, one line each."""
    words = learn.get("stack", ())
    if "--active" in words or "--active_cover" in words:
        raise VWUsage("--cs_active can't be used with --active or --active_cover (as in VW)")
    if "--baseline" in words:
        raise VWUsage("--cs_active --baseline is not supported by sl (VW sets up its baseline "
                      "reduction under cs_active too)")  # fmt: skip
    if "--csa_debug" in words:
        raise VWUsage("--csa_debug (VW's per-label trace of --cs_active) is not supported by sl")
    if learn.get("multilabel") or learn.get("ect"):
        raise VWUsage("--cs_active with another reduction over classes is not supported by sl")
    if learn.get("loss", "squared") != "squared":
        raise VWUsage("non-squared loss can't be used with --cs_active (as in VW)")
    if learn.get("algo", "gd") != "gd":
        raise VWUsage(f"--cs_active runs over gd in sl, not --{learn['algo']}")
    if learn.get("adaptive") is False:
        raise VWUsage("--cs_active without gd's adaptive rates is not supported by sl")
    if "--adax" in words and (learn.get("l1") or learn.get("l2")):
        raise VWUsage("--adax with --l1 or --l2 is not supported by sl")
    for key in ("audit", "invert_hash"):
        if outputs.get(key):
            raise VWUsage(f"--{key} with --cs_active is not supported by sl")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    return []


def stack_name(opts: Options) -> str:  # noqa: ARG001
    return ""  # (VW names it where csoaa would be: run/classes.py's vw_name)


def summary_lines(opts: Options, gstate) -> list[str]:  # noqa: ANN001
    """VW's last summary line: the labels its run queried (when any)."""
    from streamlearn.learners import cs_active as ca

    queries = int(gstate[ca.state_at(opts.k) + ca.S_QUERIES])
    return [f"total queries = {queries}"] if queries > 0 else []


class Entry:
    """The kernel entry of one run: the options, the counters' start, the scratch."""

    wants_ns = False

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        from streamlearn.learners.base import GSTATE_SIZE

        self.conf = opts.conf(GSTATE_SIZE + 2 * opts.k)  # (the kernel's state_at)
        self.ranges = np.zeros((max(opts.k, 1), 3), dtype=np.float32)
        self.started = False

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds):  # fmt: skip
        from streamlearn.learners import cs_active as ca
        from streamlearn.learners.oaa import widen

        if not self.started:  # (VW's counters start with each run; its range holds the costs)
            self.started = True
            ca.start(gstate, int(self.conf[ca.C_STATE]))
            from streamlearn.learners.oaa import prediction_range

            prediction_range(gstate, params, loss_id)
            widen(gstate, params, float(np.float32(self.opts.cost_max)))
            widen(gstate, params, float(np.float32(self.opts.cost_min)))
        n = indptr.shape[0] - 1
        stop = int(ca.train_gd(table, gstate, params, loss_id, indptr, indices, values, labels,
                               weights, bases, status, stats, rows, preds, self.conf, 0,
                               self.ranges))  # fmt: skip
        if stop < n:
            which = ("--min_labels", self.opts.min_labels, "saves a model of it and reports its "
                     "queries") if self.conf[ca.C_STOPPED] == 1.0 else (
                "--max_labels", self.opts.max_labels, "leaves its examples' predictions unset")
            raise UsageError(f"{which[0]} {which[1]}: the budget of labels is reached (VW then "
                             f"{which[2]}), which is not supported by sl")  # fmt: skip

    def init_gstate(self, params: np.ndarray) -> np.ndarray:
        from streamlearn.learners import cs_active as ca

        return ca.init_gstate(params, self.opts.k)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """csoaa's table and state with the queries: the run's learner."""
    import dataclasses

    from streamlearn.learners import csoaa

    opts = configured(config, read, refuse)
    entry = Entry(opts)
    return dataclasses.replace(csoaa.GD, train_batch=entry, init_gstate=entry.init_gstate)
