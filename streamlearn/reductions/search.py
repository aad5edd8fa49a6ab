"""``--search K --search_task T``: learning to search (VW's ``search.cc``), a multiline
reduction in the registry's shape (:mod:`streamlearn.reductions.base`).

Options (``reductions.Multiline``'s fields): ``search`` (K, the actions), ``search_task``,
``search_options`` (the rest of VW's ``--search_*`` options and the tasks' own, by VW's
name).  Labels: each line's class, read as a cost-sensitive row's first class
(``io.labels.LABEL_CS``; a line without one makes its example a test example).  State:
gd's table, and per policy and action a sub-model's normalizer sums in its global state.
The search itself: :mod:`streamlearn.reductions.search_engine` (its tasks:
:mod:`streamlearn.reductions.search_tasks`); its base learner:
:mod:`streamlearn.learners.search`.  Outputs: ``-p`` (each example's decisions, a line),
``-r`` (each decision's scores), VW's own progress table for search, VW's model options.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from streamlearn.errors import VWUsage
from streamlearn.reductions.base import Reduction, Seen
from streamlearn.reductions.vwoptions import Command, VWOption, count, integer, number, sized

if TYPE_CHECKING:
    from streamlearn.io.examples import Part

NAME = "search"

OPTIONS = (
    ("search", "int", 0),
    ("search_task", "str", ""),
    ("search_options", "dict", dataclasses.field(default_factory=dict)),
    ("search_run", "dict", dataclasses.field(default_factory=dict)),
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""

TASK_NAMES = ("sequence", "sequencespan", "sequence_ctg", "argmax", "sequence_demoldf",
              "multiclasstask", "dep_parser", "entity_relation", "hook", "graph", "list")
"""VW's tasks (``--search_task``)."""

ROLLS = ("policy", "learn", "oracle", "ref", "mix_per_state", "mix_per_roll", "mix")


def _claim(t: Command) -> None:
    """The stack is the search's (another multiline reduction named too: refused, whichever
    was named first; :func:`settle` sees one named after)."""
    _alone(t.multiline)
    t.multiline["reduction"] = NAME


def _alone(ml: dict) -> None:
    if ml.get("reduction") not in (None, NAME):
        raise VWUsage(f"--search with --{ml['reduction']}: not supported by sl (the search "
                      "stacks its own csoaa)")  # fmt: skip


def _search(t: Command, name: str, value: str) -> None:
    _claim(t)
    t.multiline["search"] = count(name, value, "--search", "the actions, at least 1 (VW's 0, "
                                  "label-dependent features, is not run by sl yet)")
    sized(t, "search", name)  # (a model's stored count too: bounded before any allocation)


def _task(t: Command, name: str, value: str) -> None:  # noqa: ARG001
    if value not in TASK_NAMES:
        raise VWUsage(f"fail: unknown task for --search_task '{value}'; use --search_task "
                      "list to get a list")  # fmt: skip
    _claim(t)
    t.multiline["search_task"] = value


def _option(kind, record: bool = True):  # noqa: ANN001, ANN202
    """A ``--search_*`` (or a task's) option kept by VW's name in ``search_options``
    (``record`` False: the run's only, as a path to read: ``run_options``)."""

    def apply(t: Command, name: str, value: str | None) -> None:
        if not record:
            t.multiline.setdefault("search_run", {})[name] = value
            return
        opts = t.multiline.setdefault("search_options", {})
        opts[name] = True if value is None else kind(name, value)

    return apply


def _choice(*allowed: str):  # noqa: ANN202
    def kind(name: str, value: str) -> str:
        if value not in allowed:
            raise VWUsage(f"'{value}' is not a valid choice for option --{name}. Please "
                          f"select from {{{', '.join(allowed)}}}")  # fmt: skip
        return value

    return kind


def _text(name: str, value: str) -> str:  # noqa: ARG001
    return value


VW_OPTIONS = {
    "search": VWOption(None, True, _search),
    "search_task": VWOption(None, True, _task),
    "search_interpolation": VWOption(None, True, _option(_choice("data", "policy"))),
    "search_rollout": VWOption(None, True, _option(_choice(*ROLLS, "none"))),
    "search_rollin": VWOption(None, True, _option(_choice(*ROLLS))),
    "search_passes_per_policy": VWOption(None, True, _option(integer)),
    "search_beta": VWOption(None, True, _option(number)),
    "search_alpha": VWOption(None, True, _option(number)),
    "search_total_nb_policies": VWOption(None, True, _option(integer)),
    "search_trained_nb_policies": VWOption(None, True, _option(integer)),
    "search_subsample_time": VWOption(None, True, _option(number)),
    "search_neighbor_features": VWOption(None, True, _option(_text)),
    "search_rollout_num_steps": VWOption(None, True, _option(integer)),
    "search_history_length": VWOption(None, True, _option(integer)),
    "search_no_caching": VWOption(None, False, _option(None)),
    "search_xv": VWOption(None, False, _option(None)),
    "search_perturb_oracle": VWOption(None, True, _option(number)),
    "search_linear_ordering": VWOption(None, False, _option(None)),
    "search_save_every_k_runs": VWOption(None, True, _option(integer, record=False)),
    "search_max_bias_ngram_length": VWOption(None, True, _option(integer)),
    "search_max_quad_ngram_length": VWOption(None, True, _option(integer)),
    "search_condition_feature_value": VWOption(None, True, _option(number)),
    "search_allowed_transitions": VWOption(None, True, _option(_text, record=False)),
    # the tasks' own
    "search_span_bilou": VWOption(None, False, _option(None)),
    "search_span_multipass": VWOption(None, True, _option(integer)),
    "cost": VWOption(None, True, _option(number)),
    "negative_weight": VWOption(None, True, _option(number)),
    "max": VWOption(None, False, _option(None)),
    "relation_cost": VWOption(None, True, _option(number)),
    "entity_cost": VWOption(None, True, _option(number)),
    "constraints": VWOption(None, False, _option(None)),
    "relation_none_cost": VWOption(None, True, _option(number)),
    "skip_cost": VWOption(None, True, _option(number)),
    "search_order": VWOption(None, True, _option(integer)),
    "root_label": VWOption(None, True, _option(integer)),
    "num_label": VWOption(None, True, _option(integer)),
    "transition_system": VWOption(None, True, _option(integer)),
    "one_learner": VWOption(None, False, _option(None)),
    "cost_to_go": VWOption(None, False, _option(None)),
    "old_style_labels": VWOption(None, False, _option(None)),
    "search_graph_num_loops": VWOption(None, True, _option(integer)),
    "search_graph_no_structure": VWOption(None, False, _option(None)),
    "search_graph_separate_learners": VWOption(None, False, _option(None)),
    "search_graph_directed": VWOption(None, False, _option(None)),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`)."""



def settle(t: Command) -> None:
    """The search's options together: a task is needed, and what sl does not run yet is
    refused in one line."""
    ml = t.multiline
    named = ("search" in ml or "search_task" in ml or ml.get("search_options")
             or ml.get("search_run"))  # fmt: skip
    if not named:
        return
    _alone(ml)
    if not ml.get("search_task"):
        raise VWUsage("--search needs --search_task (sequence, sequencespan, sequence_ctg, "
                      "argmax, ...)")  # fmt: skip
    ml["reduction"] = NAME
    ml.setdefault("search", 1)
    task = ml["search_task"]
    from streamlearn.reductions.search_tasks import TASKS

    if task == "list":
        raise VWUsage("available search tasks: " + ", ".join(TASK_NAMES[:-1]))
    if task not in TASKS:
        raise VWUsage(f"--search_task {task}: not supported by sl yet (sl runs "
                      f"{', '.join(TASKS)})")  # fmt: skip
    learn = t.learn
    if learn.get("csoaa"):  # (VW's model names the csoaa the search stacks: not another)
        learn.pop("csoaa")
        learn.pop("oaa", None)
    if learn.get("oaa"):
        raise VWUsage("--search with --oaa/--multilabel_oaa: not supported (the search "
                      "stacks its own csoaa)")  # fmt: skip
    crosses = [k for k in ("interactions", "quadratic", "cubic") if learn.get(k)]
    if task == "graph" and crosses == ["quadratic"] and tuple(learn["quadratic"]) == ("::",):
        odd = [k for k in ("leave_duplicate_interactions", "permutations", "ignore_linear")
               if learn.get(k)]  # fmt: skip
        if odd:
            raise VWUsage(f"--search_task graph with -q :: and --{odd[0]}: not supported by sl "
                          "yet")  # fmt: skip
        crosses = []  # (the graph task's -q ::: its nodes' pairs, made by the task)
        ml.setdefault("search_run", {})["quadratic"] = learn.pop("quadratic")
    if crosses or learn.get("ngram") or learn.get("stack") or learn.get("affix"):
        raise VWUsage("--search with interactions, n-grams, --affix or another reduction: "
                      "not supported by sl yet")  # fmt: skip
    if learn.get("algo") in ("ftrl", "coin", "pistol", "freegrad"):
        raise VWUsage(f"--search with --{learn['algo']}: not supported by sl (its base learner "
                      "is gd)")  # fmt: skip
    o = ml.get("search_options", {})
    stray = [k for k in o if k.startswith("search_graph_") and task != "graph"]
    if stray:  # (VW reads a task's options only for that task)
        raise VWUsage(f"unrecognised option '--{stray[0]}' (--search_task graph's)")
    if task == "graph" and o.get("search_neighbor_features"):
        raise VWUsage("--search_neighbor_features with --search_task graph: not supported by "
                      "sl yet (VW's edge features share their namespace)")  # fmt: skip
    if task == "dep_parser" and int(o.get("search_max_quad_ngram_length", 0)) > 0:
        raise VWUsage("--search_max_quad_ngram_length with --search_task dep_parser: not "
                      "supported by sl yet")  # fmt: skip
    if task == "dep_parser" and int(o.get("transition_system", 1)) not in (1, 2):
        raise VWUsage(f"--transition_system {o['transition_system']}: unknown (1 arc-hybrid, "
                      "2 arc-eager)")  # fmt: skip
    if task == "entity_relation" and int(ml.get("search_options", {}).get("search_order",
                                                                           0)) == 3:  # fmt: skip
        raise VWUsage("--search_order 3 (entity-relation's label-dependent features): not "
                      "supported by sl yet")  # fmt: skip


class Learner:
    """``--search``'s learner over one run: the search (its engine) fed each example of a
    batch in turn."""

    def __init__(self, ml, cfg=None, probabilities=None, wants=None) -> None:  # noqa: ANN001, ARG002
        from streamlearn.reductions.search_engine import Search
        from streamlearn.reductions.search_tasks import TASKS

        shows = Shows(wants, cfg)
        task = TASKS[ml.search_task]()
        if ml.search_run.get("quadratic"):  # (graph's -q ::, which settle keeps there)
            task.pairs = True
        self.search = Search(ml, cfg, task, not cfg.test_only, shows)
        self.npass = 0
        self.read = 0  # (examples read: VW's counts leave out what its test pass skipped)

    def learn(self, w, part: Part, ho: np.ndarray, lines: bool = False) -> Seen:  # noqa: ANN001, ARG002
        """Each example of ``part`` searched, scored and learned in turn."""
        from streamlearn.reductions.search_engine import Token

        sch = self.search
        sch.grow(w)
        mg = part.mg
        ptr = mg.act_ptr
        multi = getattr(sch.task, "multilabel", False)
        bad = None if multi else _not_numbers(part)
        lists = _multilabels(part) if multi else None
        tags = getattr(sch.task, "needs_tags", False)
        compiled = getattr(sch.task, "hamming_only", False)
        labels = np.where(part.lab_n > 0, part.lab_cls, 0).tolist()  # (per merged row)
        starts = mg.indptr.tolist()
        self.read += ptr.shape[0] - 1
        for e in range(ptr.shape[0] - 1):
            tokens = []
            held = bool(ho[e]) if ho is not None else False
            r0, r1 = int(ptr[e]), int(ptr[e + 1])
            if bad is not None and bad[r0:r1].any():
                _skip(part, r0 + int(np.argmax(bad[r0:r1])))
                continue
            for r in range(r0, r1):
                lo, hi = starts[r], starts[r + 1]
                tokens.append(Token(labels[r], mg.indices[lo:hi], mg.values[lo:hi],
                                    mg.ns[lo:hi], held, _tag(part, r) if tags else ""))  # fmt: skip
                if lists is not None:
                    tokens[-1].multilabel = lists[r]
            if lists is not None:
                test = any(not t.multilabel for t in tokens)
            else:
                test = any(y <= 0 for y in labels[r0:r1])
            if compiled:  # (the sentence's rows, as the compiled sequence task takes them)
                a, b = starts[r0], starts[r1]
                sch.csr = (mg.indptr[r0 : r1 + 1] - a, mg.indices[a:b].astype(np.uint64),
                           mg.values[a:b].astype(np.float64, copy=False))  # fmt: skip
            tag = part.tags[e].decode(errors="replace")
            last = int(part.src.row_line[int(ptr[e + 1]) - 1]) if part.src is not None else 0
            sch.example(tokens, test, held, w, tag, last)
        self.stats(w)
        return Seen(part)

    @property
    def raw_lines(self) -> list[str]:
        """``-r``: each test decision's scores (VW's lines), a line after each example."""
        return self.search.raw_lines

    def begin_pass(self, npass: int) -> None:
        while self.npass < npass:
            self.search.end_pass()
            self.npass += 1

    def write(self, seen: Seen, out: list[str], vw: bool = True) -> None:  # noqa: ARG002
        out.extend(self.search.predictions)
        self.search.predictions = []

    def progress(self, table, npass: int, seen: Seen, ho: np.ndarray) -> None:  # noqa: ANN001, ARG002
        sch = self.search
        for line in sch.said:
            table.say(line)
        sch.said = []
        for line in sch.rows:
            table.say(line)
        sch.rows = []
        table.started = True
        table.example_number = sch.example_number
        table.wlab = sch.weighted_labeled
        table.wunl = sch.weighted_unlabeled
        table.total_features = sch.total_features

    def saved(self) -> tuple[None, int]:
        """What VW's model keeps of the search: its generator's state (``--random_seed``)."""
        return None, int(self.search.rng.s)

    def stats(self, w) -> None:  # noqa: ANN001 - the run's Weights
        """The run's counters (``learners.cb_adf``'s) as the search counted them, and gd's
        count of examples (VW's t: every sequence counted)."""
        from streamlearn.learners import cb_adf
        from streamlearn.learners.base import G_N

        sch = self.search
        stats = w.stats
        stats[cb_adf.N_EX] = sch.weighted_labeled + sch.weighted_unlabeled
        stats[cb_adf.N_LAB] = sch.weighted_labeled
        stats[cb_adf.LOSS] = sch.sum_loss
        stats[cb_adf.FEATURES] = sch.total_features
        stats[cb_adf.HO_N] = sch.weighted_holdout
        stats[cb_adf.HO_LOSS] = sch.holdout_loss
        w.gstate[G_N] = sch.sd_t


DIGIT = np.zeros(256, dtype=bool)
DIGIT[ord("0") : ord("9") + 1] = True
ENDS = np.zeros(256, dtype=bool)
ENDS[[ord(" "), ord("\t"), ord("|"), ord("\n"), ord("\r")]] = True


def _not_numbers(part: Part) -> np.ndarray | None:
    """Per merged row: its class is not a number (VW's multiclass label: an integer; the
    cost-sensitive reader took a word for a named class).  None when the rows' text is not
    at hand."""
    src = part.src
    if src is None or not src.row_line.shape[0]:
        return None
    data = src.data
    starts = np.concatenate([[0], np.flatnonzero(data == 10) + 1])
    s = starts[np.asarray(src.row_line, dtype=np.int64) - src.first_line]
    ends = np.flatnonzero(ENDS[data])
    e = np.append(ends, data.shape[0])[np.searchsorted(ends, s)]
    signed = (s < e) & np.isin(data[np.minimum(s, data.shape[0] - 1)], (ord("+"), ord("-")))
    s = s + signed  # (a sign, as VW's strtol reads it)
    other = np.concatenate([[0], np.cumsum(~DIGIT[data])])  # (bytes not digits before each)
    return other[e] - other[s] > 0


def _multilabels(part: Part) -> list[list[int]]:
    """Per merged row: its multilabel, read from its line's text (``dep_parser``'s labels:
    ``head,label``)."""
    from streamlearn.reductions.search_dep import label_words

    src = part.src
    if src is None:
        raise VWUsage("--search_task dep_parser/graph: the lines' labels are not at hand (sl reads "
                      "them from the text)")  # fmt: skip
    data = src.data
    nl = np.flatnonzero(data == 10)
    starts = np.concatenate([[0], nl + 1]).tolist()
    ends = [*nl.tolist(), data.shape[0]]
    raw = data.tobytes()
    out = []
    for line in src.row_line.tolist():
        k = int(line) - src.first_line
        out.append(label_words(raw[starts[k] : ends[k]]))
    return out


def _skip(part: Part, r: int) -> None:
    """Say that row ``r``'s sequence is skipped: its class is not a number."""
    from streamlearn.system.notices import tell

    src = part.src
    line = int(src.row_line[r])
    data = src.data
    start = int(np.concatenate([[0], np.flatnonzero(data == 10) + 1])[line - src.first_line])
    word = data[start : start + 40].tobytes().split(b"|")[0].split()[:1]
    shown = word[0].decode(errors="replace") if word else ""
    tell(f"{src.name or 'input'} line {line}: the class {shown!r} of a --search line is not a "
         "number: its sequence is skipped (VW reads 0 and drops the line)")  # fmt: skip


def _tag(part: Part, r: int) -> str:
    """Row ``r``'s tag (the entity-relation task reads each line's)."""
    src = part.src
    if src is None:
        return ""
    return src.data[src.tag_start[r] : src.tag_end[r]].tobytes().decode(errors="replace")


class Shows:
    """What a run shows, as the search asks it (VW runs its test pass only for what shows
    it): quiet, ``-p``, ``-r``, ``-P``'s step, holdout off."""

    def __init__(self, wants, cfg) -> None:  # noqa: ANN001
        progress = getattr(wants, "progress", None)
        # (--quiet with a VW model written keeps a silent table for its counters: VW's
        # counters then take the test pass, as VW's model under --quiet shows)
        self.quiet = progress is None
        self.predictions = bool(getattr(wants, "predictions", False))
        self.raw = bool(getattr(wants, "raw", False))
        self.step = float(getattr(progress, "step", 0.0)) if progress is not None else 0.0
        passes = max(1, int(getattr(cfg, "passes", 1) or 1))
        self.holdout_off = not (getattr(cfg, "effective_holdout", 0) and passes > 1)


def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001
    """VW's header: (Enabled learners, Input label, Output pred)."""
    label = "MULTILABEL" if ml.search_task in ("dep_parser", "graph") else "MULTICLASS"
    if ml.search_run.get("quadratic"):  # (graph's -q ::, VW's generated per example)
        base = base.replace("gd", "gd, generate_interactions", 1)
    return f"{base}, csoaa, search_task", label, "MULTICLASS"


KEPT = ("search_interpolation", "search_neighbor_features", "search_history_length",
        "search_max_bias_ngram_length", "search_max_quad_ngram_length",
        "search_condition_feature_value", "relation_cost", "entity_cost", "constraints",
        "relation_none_cost", "skip_cost", "search_order", "root_label", "num_label",
        "transition_system", "one_learner", "cost_to_go", "old_style_labels")  # fmt: skip
"""The search's options (and its tasks') VW keeps with a model when given."""


def actions(ml) -> int:  # noqa: ANN001
    """The actions the task decides among (VW's ``num_actions`` after the task's set-up:
    csoaa's classes): BILOU's 2K - 1, entity-relation's skip label."""
    o = ml.search_options
    k = int(ml.search)
    if ml.search_task == "sequencespan" and o.get("search_span_bilou"):
        return k * 2 - 1
    if ml.search_task == "entity_relation" and int(o.get("search_order", 0)) == 2:
        return max(k, 11)
    return k


def vw_words(ml) -> list[str]:  # noqa: ANN001
    """The options VW keeps with the model: csoaa's (which the search adds), the search's."""
    words = ["--csoaa", str(actions(ml)), "--search", str(ml.search),
             "--search_task", ml.search_task]  # fmt: skip
    for name in KEPT:
        if name in ml.search_options:
            v = ml.search_options[name]
            words += [f"--{name}"] if v is True else [f"--{name}", str(v)]
    for q in ml.search_run.get("quadratic", ()):
        words += ["--quadratic", q]
    return words


REDUCTION = Reduction(NAME, "cs", False, Learner, stack, vw_words, options=OPTIONS,
                      served=False, wants=True)  # fmt: skip
