"""``sl vw --cb K --cb_force_legacy``, ``--eval``, ``--cb_explore K --cb_force_legacy`` (greedy,
``--first``, ``--bag``, ``--cover``; ``--cbify K --cb_force_legacy`` is
:func:`streamlearn.run.cbify.run_legacy`): VW's
single-line contextual bandits (:mod:`streamlearn.learners.cb_algs`) inside the multiline
driver (:mod:`streamlearn.run.multiline`, which reads, caches and replays ``--cb K``'s lines
and prints VW's stderr).

Each block is parsed as ``--cb K`` lines are (:func:`part`): one row per line, its label
entries kept whole (the actions allowed), checked (an action outside 1..K, a shared line, an
``--eval`` line without the policy's action then a logged one: malformed, skipped with the
reason).  :class:`Legacy` runs the kernel over a batch and writes VW's outputs: ``-p`` the
predicted class (1-based; explorers: the pmf, ``%f`` each, a space after each), ``-r``
each label entry's ``action:score``, and the progress rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError
from streamlearn.learners import cb_adf, cb_algs

EVAL_LABEL = 28
"""Status of an ``--eval`` line without ``policy_action a:c:p`` (io/batch.py REASONS)."""


@dataclass
class Entries:
    """Each example's label entries (``ptr`` per example) and ``--eval``'s policy actions."""

    ptr: np.ndarray
    cls: np.ndarray
    cost: np.ndarray
    prob: np.ndarray
    policy: np.ndarray


def check(ml) -> None:  # noqa: ANN001
    """Refuse what VW refuses, or sl does not have yet, before any work."""
    if ml.cb_type not in cb_algs.LEGACY_TYPES:
        raise UsageError(f"--cb_type {ml.cb_type} with --cb_force_legacy: ips, dm or dr")
    if ml.evaluate and ml.cb_type == "dm":
        raise UsageError("--eval with --cb_type dm: the direct method is biased, VW refuses it")
    if ml.evaluate and ml.explore:
        raise UsageError("--eval evaluates a logged policy: no explorer")
    if ml.explore not in cb_algs.EXPLORERS:
        raise UsageError(f"--cb_explore K --cb_force_legacy with --{ml.explore}: not supported "
                         "yet (greedy, --first, --bag, --cover)")  # fmt: skip
    if ml.explore == "cover" and (ml.cover < 1 or ml.cb_type != "dr"):
        raise UsageError("--cover N: N >= 1, with --cb_type dr (VW's cover estimates dr costs)")
    if ml.explore == "bag" and ml.bag < 1:
        raise UsageError("--bag needs at least one bag")
    if ml.epsilon is not None and not 0.0 <= ml.epsilon <= 1.0:
        raise UsageError("The value of epsilon must be in [0,1]")


def vw_words(ml) -> list[str]:  # noqa: ANN001
    """The options VW keeps with a legacy model: cb_explore's, cb_algs' (its cb_type, the
    ``--csoaa K`` it stacks on) and the explorer's given ones."""
    from streamlearn.reductions.explore import cover_words
    from streamlearn.reductions.text import vw_number

    k = str(ml.actions)
    words = ["--cb", k]
    if ml.explore:
        words += ["--cb_explore", k]
    words += ["--cb_force_legacy", "--cb_type", ml.cb_type, "--csoaa", k]
    if ml.evaluate:
        words.append("--eval")
    if getattr(ml, "ot", 0):
        words += ["--ot", str(ml.ot)]
    if ml.epsilon is not None:
        words += ["--epsilon", vw_number(ml.epsilon)]
    if ml.explore == "first":
        words += ["--first", str(ml.tau)]
    elif ml.explore == "bag":
        words += ["--bag", str(ml.bag)]
    elif ml.explore == "cover":
        words += cover_words(ml)
    return words


def part(ml, cfg, block, parse_inter):  # noqa: ANN001, ANN201
    """One block of ``--cb K`` lines as a :class:`~streamlearn.io.examples.Part` of one
    row per example, with its :class:`Entries` in ``legacy``."""
    from streamlearn.io.examples import Part, Tags, example_nnz
    from streamlearn.io.labels import LABEL_CB, ROW_SHARED, read_labels
    from streamlearn.io.multiline import Merged
    from streamlearn.io.parse import FMT_VW, describe_errors, parse_block

    b = parse_block(block, FMT_VW, cfg.bits, cfg.constant, parse_inter)
    if b.err_pos is None:
        b.err_pos = np.full(b.n, -1, dtype=np.int64)
    lab = read_labels(b, LABEL_CB, parse_inter.vw_numbers)
    ot = getattr(ml, "ot", 0)
    k = ot or ml.actions
    first = np.zeros(b.n, dtype=np.int64)
    for r in np.flatnonzero(b.status == 0):
        lo, hi = int(lab.ptr[r]), int(lab.ptr[r + 1])
        if lab.flags[r] & ROW_SHARED:
            b.status[r] = 20
            continue
        if ml.evaluate:
            # VW's cb_eval label: the policy's action, then a cb label with a logged cost
            logged = any(lab.cost[q] == lab.cost[q] and lab.prob[q] > 0 for q in range(lo + 1, hi))
            if hi - lo < 2 or lab.cost[lo] == lab.cost[lo] or not logged:
                b.status[r] = EVAL_LABEL
                continue
            first[r] = 1
        if ot and hi > lo and (hi - lo > 1 or not lab.prob[lo] > 0):
            b.status[r] = 20  # (--ot: one a:c:p, or none; VW's tree reads the first entry)
            continue
        cls = lab.cls[lo:hi]
        if k and cls.shape[0] and (cls.min() < 1 or cls.max() > k):  # (k 0: --multiworld_test)
            b.status[r] = 27
    rows = np.flatnonzero(b.status == 0)
    starts, ends = b.indptr[rows], b.indptr[rows + 1]
    lens = ends - starts
    ptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    take = np.repeat(starts - ptr[:-1], lens) + np.arange(int(ptr[-1]), dtype=np.int64)
    ns = b.ns if b.ns is not None else np.zeros(b.indices.shape[0], dtype=np.uint8)
    mg = Merged(np.arange(rows.shape[0] + 1, dtype=np.int64), rows, rows, ptr,
                b.indices[take], b.values[take], ns[take])  # fmt: skip
    e_lo = lab.ptr[rows] + first[rows]
    e_len = lab.ptr[rows + 1] - e_lo
    e_ptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(e_len, out=e_ptr[1:])
    pick = np.repeat(e_lo - e_ptr[:-1], e_len) + np.arange(int(e_ptr[-1]), dtype=np.int64)
    policy = np.zeros(rows.shape[0], dtype=np.int64)
    ev = first[rows] > 0
    policy[ev] = lab.cls[lab.ptr[rows[ev]]]
    entries = Entries(e_ptr, lab.cls[pick].astype(np.int64), lab.cost[pick], lab.prob[pick],
                      policy)  # fmt: skip
    bad = describe_errors(b, limit=1 << 30) if (b.status != 0).any() else []
    tags = Tags(b.block.data, b.tag_start[rows], b.tag_end[rows])
    none = np.zeros(0)
    m = rows.shape[0]
    feats = example_nnz(mg)
    out = Part(mg, np.full(m, -1, dtype=np.int64), np.zeros(m), np.ones(m), none, none, none,
                tags, b.line[rows], bad, None, feats, feats)  # fmt: skip
    out.legacy = entries
    return out


def learners(ml) -> tuple[str, str, str]:  # noqa: ANN001
    """(Enabled learners, Input label, Output pred) of VW's header."""
    if ml.mwt:
        from streamlearn.reductions.mwt import stack

        return stack(ml)
    if getattr(ml, "ot", 0):
        from streamlearn.reductions.offset_tree import stack

        return stack(ml)
    chain = "gd, scorer-identity, csoaa, cb"
    if ml.evaluate:
        return chain + "-eval", "CB_EVAL", "MULTICLASS"
    if ml.explore:
        return chain + f", cb_explore-{ml.explore}", "CB", "ACTION_PROBS"
    return chain, "CB", "MULTICLASS"


def _g(x: float) -> str:
    """A float as C++ streams it by default (6 significant digits)."""
    return f"{float(np.float32(x)):g}"


class Legacy:
    """The learner's state over a run and its per-batch outputs."""

    def __init__(self, ml, cfg, table: np.ndarray, gstate: np.ndarray,  # noqa: ANN001
                 counter: int | None = None, vw_log: bool = False) -> None:  # fmt: skip
        check(ml)
        # VW's csoaa below cb_algs says once how the classes are numbered, at the first
        # example whose cost-sensitive label lists class K (not under dm: no csoaa call)
        self.numbered = not vw_log or ml.cb_type == "dm"
        self.ml = ml
        self.ot = getattr(ml, "ot", 0)
        self.k = self.ot or ml.actions
        self.cb_type = cb_adf.CB_TYPES[ml.cb_type]
        self.explore = cb_algs.EXPLORERS[ml.explore]
        default = 0.05 if ml.explore == "greedy" else 0.0
        self.eps = np.float32(default if ml.epsilon is None else ml.epsilon)
        decay = ml.explore == "cover" and ml.epsilon is None  # VW: epsilon 1, decaying
        if decay:
            self.eps = np.float32(1.0)
        self.cover = np.array([float(ml.cover), float(np.float32(ml.psi)), float(ml.nounif),
                               float(decay)])  # fmt: skip
        self.bags = max(1, ml.bag)
        self.xstate = np.array([float(ml.tau)])
        if ml.explore == "cover" and counter:  # (a model's: VW's cover counts on from it)
            self.xstate[0] = float(counter)
        self.rng = np.array([cfg.seed], dtype=np.uint64)
        self.table = table
        self.gstate = gstate
        self.raw_lines: list[str] = []

    def closing_lines(self) -> list[str]:
        """VW's lines after the summary: none."""
        return []

    def saved(self) -> tuple[int | None, int]:
        """(cb_explore's counter, the generator's state) VW's model keeps: the counter of
        ``--cover`` (examples learned; 0 under the other explorers, None without one), and
        ``--bag``'s generator (VW's ``--random_seed``; 0: none kept)."""
        counter = None
        if self.ml.explore:
            counter = int(self.xstate[0]) if self.ml.explore == "cover" else 0
        return counter, int(self.rng[0]) if self.ml.explore == "bag" else 0

    @staticmethod
    def gstate_for(ml, params: np.ndarray) -> np.ndarray:  # noqa: ANN001
        cb_type = cb_adf.CB_TYPES.get(ml.cb_type, cb_adf.DR)
        if getattr(ml, "ot", 0):
            from streamlearn.learners.offset_tree import stride

            return cb_algs.init_gstate(params, stride(ml.ot, cb_type))
        bags = ml.bag if ml.explore == "bag" else 1
        w = cb_algs.stride(cb_algs.width(cb_type, ml.actions, bags))
        if ml.explore == "cover":
            w = cb_algs.stride(2 * ml.actions * (ml.cover + 1))
        return cb_algs.init_gstate(params, w)

    def run(self, part, ho: np.ndarray, params: np.ndarray, loss_id: int,
            stats: np.ndarray) -> tuple:  # noqa: ANN001  # fmt: skip
        """The kernel over a batch: each example's (prediction, label entries' raw scores,
        pmf, loss)."""
        mg = part.mg
        en = part.legacy
        m = mg.act_ptr.shape[0] - 1
        if not self.numbered:
            self._numbering(en)
        pred = np.zeros(m, dtype=np.int64)
        raw_out = np.zeros(en.cls.shape[0], dtype=np.float32)
        pmf = np.zeros((m, self.k), dtype=np.float32)
        loss = np.zeros(m)
        if self.ot:
            from streamlearn.learners import offset_tree

            offset_tree.train_examples(
                self.table, self.gstate, params, loss_id, self.cb_type, self.k, self.eps,
                offset_tree.tree(self.k), mg.indptr, mg.indices, mg.values, en.ptr, en.cls,
                en.cost, en.prob, ho, stats, pmf, loss,
            )  # fmt: skip
            return pred, raw_out, pmf, loss
        cb_algs.train_examples(
            self.table, self.gstate, params, loss_id, self.cb_type, self.k, self.explore,
            self.eps, self.bags, self.xstate, self.rng, True, mg.indptr, mg.indices, mg.values,
            en.ptr, en.cls, en.cost, en.prob, en.policy, ho, stats, pred, raw_out, pmf, loss,
            self.cover,
        )  # fmt: skip
        return pred, raw_out, pmf, loss

    def batch(self, part, ho: np.ndarray, params: np.ndarray, loss_id: int, stats: np.ndarray,
              npass: int, progress, pred_lines, raw: bool) -> None:  # noqa: ANN001  # fmt: skip
        pred, raw_out, pmf, loss = self.run(part, ho, params, loss_id, stats)
        labeled = ~np.isnan(loss)
        if progress is not None:
            self._progress(progress, npass, part, labeled, ho, loss, pred, pmf)
        if pred_lines is not None:
            self._predictions(pred_lines, part, pred, pmf)
        if raw:
            self._raw(part, raw_out)

    def _numbering(self, en: Entries) -> None:
        """VW's info line when the batch has an example whose cost-sensitive label (VW's
        ``gen_cs_example``: every action when the line lists none or only the logged one,
        else the actions listed) names class K."""
        from streamlearn.run.vwconsole import vw_log

        k = self.k
        if self.ot:  # (each node's csoaa 2 predicts every example with no label first)
            if en.ptr.shape[0] > 1:
                vw_log("[info] label 2 found -- labels are now considered 1-indexed.\n")
                self.numbered = True
            return
        for e in range(en.ptr.shape[0] - 1):
            lo, hi = int(en.ptr[e]), int(en.ptr[e + 1])
            every = hi - lo == 0 or (hi - lo == 1 and en.cost[lo] == en.cost[lo])
            if every or bool((en.cls[lo:hi] == k).any()):
                vw_log(f"[info] label {k} found -- labels are now considered 1-indexed.\n")
                self.numbered = True
                return

    def _progress(self, progress, npass, part, labeled, ho, loss, pred, pmf) -> None:  # noqa: ANN001
        from streamlearn.reductions.text import cb_label

        en = part.legacy
        explore = self.explore != cb_algs.NONE

        def label(e: int) -> str:
            if not labeled[e]:
                return "unknown"
            lo, hi = int(en.ptr[e]), int(en.ptr[e + 1])
            if explore:  # cb_explore: the first entry, streamed
                c = en.cost[lo]
                cost = "3.40282e+38" if c != c else _g(c)
                return f"{int(en.cls[lo])}:{cost}:{_g(en.prob[lo])}"
            for q in range(lo, hi):
                if en.cost[q] == en.cost[q] and en.prob[q] > 0:
                    return cb_label(int(en.cls[q]), float(en.cost[q]), float(en.prob[q]))
            return "unknown"

        def guess(e: int) -> str:
            if not explore:
                return str(int(pred[e]))
            best, at = 0.0, 0
            for a in range(self.k):
                if pmf[e, a] > best:
                    best, at = float(pmf[e, a]), a + 1
            return f"{at}:{best:.6f}"

        progress.batch(npass, labeled, ho, np.where(labeled, loss, 0.0), part.feat_row,
                       part.feat_total, label, guess)  # fmt: skip

    def _predictions(self, out: list[str], part, pred, pmf) -> None:  # noqa: ANN001
        explore = self.explore != cb_algs.NONE
        for e in range(pred.shape[0]):
            tag = part.tags[e]
            t = (" " + tag.decode("utf-8", "replace")) if tag else ""
            if explore:
                out.append("".join(f"{float(p):.6f} " for p in pmf[e]) + t + "\n")
            else:
                out.append(f"{int(pred[e])}{t}\n")

    def _raw(self, part, raw_out) -> None:  # noqa: ANN001
        en = part.legacy
        for e in range(en.ptr.shape[0] - 1):
            tag = part.tags[e]
            t = (" " + tag.decode("utf-8", "replace")) if tag else ""
            lo, hi = int(en.ptr[e]), int(en.ptr[e + 1])
            cells = " ".join(f"{int(en.cls[q])}:{_g(raw_out[q])}" for q in range(lo, hi))
            self.raw_lines.append(cells + t + "\n")
