"""``--experimental_igl``: interaction-grounded learning over ``--cb_explore_adf`` (VW's
``interaction_ground.cc``), in the shape of :mod:`streamlearn.reductions.base`.

A DSJSON record's ``o`` (its observations: objects of namespaces, and
``_definitely_bad``) is the feedback the inverse kinematics model learns from; the
policy learns from the cost that model infers (the kernel and its steps:
:mod:`streamlearn.learners.igl`).  io's DSJSON reader does not keep ``o``: this module
reads it from the record's line again (:class:`Observations`, by the source's name and
the example's line number), so the inputs are files (not standard input).

Options (``reductions.Multiline``'s field): ``igl``.  VW's rules: ``--coin`` is required,
``--cb_explore_adf`` implied.  sl runs it with the epsilon-greedy explorer, ``--cb_type
mtr``, ``-q`` pairs of distinct namespaces, one pass of learning; the rest is refused in
one line before any data is read.  VW's models both ways: the policy's coin sums are a
section above the others (:func:`read_section`), the inverse kinematics model's are gd's
resume state; ``--predict_only_model`` spins the policy off (:func:`spin_off`).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from typing import TYPE_CHECKING

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.base import Seen, Weights
from streamlearn.reductions.vwoptions import Command, VWOption

if TYPE_CHECKING:
    from streamlearn.io.examples import Part

OPTIONS = (("igl", "bool", False),)
"""Its field of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""


def _igl(t: Command, name: str, value: str | None) -> None:
    """``--experimental_igl``: VW inserts ``--cb_explore_adf`` when not given."""
    t.exploring = True
    t.multiline["igl"] = True
    if t.multiline.get("reduction") in (None, "cb_adf"):
        t.multiline["reduction"] = "cb_adf"
        t.multiline.setdefault("explore", "greedy")


VW_OPTIONS = {"experimental_igl": VWOption(None, False, _igl)}


def settle(t: Command) -> None:
    """VW's rule (``--coin``) and sl's refusals, one line each, before any data."""
    ml = t.multiline
    if not ml.get("igl"):
        return
    if t.learn.get("algo") != "coin":
        raise VWUsage("--experimental_igl needs to use --coin")
    what = None
    if ml.get("reduction") != "cb_adf" or ml.get("legacy"):
        what = f"--{ml.get('reduction')}"
    elif ml.get("explore", "greedy") != "greedy" or ml.get("explore_eval") or ml.get("cb_dro"):
        what = f"--{ml.get('explore') or 'explore_eval'}"
    elif ml.get("cb_type", "mtr") != "mtr":
        what = f"--cb_type {ml['cb_type']}"
    elif ml.get("clip_p"):
        what = "--clip_p"
    elif t.learn.get("cubic") or t.learn.get("interactions"):
        what = "--cubic/--interactions (sl takes -q pairs)"
    elif any(len(q) != 2 or q[0] == q[1] or ":" in q for q in t.learn.get("quadratic", ())):
        what = "-q other than a pair of two distinct namespaces"
    elif t.learn.get("test_only"):
        what = "-t"
    elif (t.learn.get("passes") or 1) > 1 or getattr(t, "cache", False):
        what = "--passes/--cache"
    elif t.outputs.get("audit") or getattr(t, "raw_predictions", None):
        what = "--audit/-r"
    elif getattr(t, "daemon", None):
        what = "--daemon"
    elif not getattr(t, "data", None) or "-" in t.data:
        what = "standard input (its observations are read from the files again)"
    elif t.outputs.get("invert_hash"):
        what = "--invert_hash"
    elif t.outputs.get("readable_model") and t.outputs.get("model_format") == "vw_predict_only":
        what = "--readable_model and --predict_only_model"
    elif t.learn.get("format") != "dsjson":
        what = "input other than --dsjson"
    elif t.learn.get("hash_seed"):
        what = "--hash_seed"
    if what:
        raise VWUsage(f"--experimental_igl with {what}: not yet")


class Observations:
    """The observations of DSJSON records by (source, line): each record's ``o`` hashed as
    VW's JSON reader hashes a namespace's numeric features, the constant last."""

    def __init__(self, bits: int, constant: bool) -> None:
        self.mask = (1 << bits) - 1
        self.constant = constant
        self.files: dict[str, dict[int, tuple]] = {}

    def of(self, name: str, line: int) -> tuple:
        got = self.files.get(name)
        if got is None:
            got = self.files[name] = self._read(name)
        obs = got.get(line)
        if obs is None:
            raise UsageError(f"--experimental_igl: {name}:{line}: a record without "
                             "observations ('o'), which VW fails on")  # fmt: skip
        return obs

    def _read(self, name: str) -> dict[int, tuple]:
        if not name or name == "-":
            raise UsageError("--experimental_igl reads its observations from files, not "
                             "standard input: not yet")  # fmt: skip
        with open(name, "rb") as f:
            head = f.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        out: dict[int, tuple] = {}
        with opener(name, "rb") as f:
            for n, raw in enumerate(f, 1):
                s = raw.lstrip()
                if not s.startswith(b"{") or b'"o"' not in s:
                    continue
                try:
                    doc = json.loads(raw, object_pairs_hook=list)
                except ValueError:
                    continue  # (io's reader reports the line)
                obs = [v for k, v in doc if k == "o"]
                if obs:
                    out[n] = self._hashed(obs[-1], name, n)
        return out

    def _hashed(self, o: object, name: str, n: int) -> tuple:
        from streamlearn.hashing import CONSTANT_HASH, hashstring_py

        def refuse(what: str) -> UsageError:
            return UsageError(f"--experimental_igl: {name}:{n}: observations with {what}: "
                              "not yet")  # fmt: skip

        items = o if isinstance(o, list) else [o]
        feats: dict[int, list] = {}
        bad = False
        for item in items:
            if item is None:
                continue
            if not isinstance(item, list):
                raise refuse("a value that is not an object")
            for key, v in item:
                if key == "_definitely_bad":
                    bad = bad or v is True
                    continue
                if key.startswith("_"):
                    continue
                if not isinstance(v, list):
                    raise refuse("features outside a namespace")
                kb = key.encode("utf-8", "surrogateescape")
                if not kb or kb[0] in (32, 128):
                    raise refuse(f"the namespace {key!r}")
                ns_hash = hashstring_py(kb, 0)
                for fk, fv in v:
                    if isinstance(fv, bool) or not isinstance(fv, int | float) or fv == 0:
                        raise refuse(f"the value {json.dumps(fv)[:20]} (sl takes non-zero "
                                     "numbers)")  # fmt: skip
                    h = hashstring_py(fk.encode("utf-8", "surrogateescape"), ns_hash) & self.mask
                    feats.setdefault(kb[0], []).append((h, float(np.float32(fv))))
        idx, val, ns = [], [], []
        for g, fs in feats.items():
            for h, x in fs:
                idx.append(h)
                val.append(x)
                ns.append(g)
        if self.constant:
            idx.append(CONSTANT_HASH & self.mask)
            val.append(1.0)
            ns.append(128)
        return idx, val, ns, bad


class Learner:
    """IGL over cb_adf and epsilon-greedy, for one run (:mod:`streamlearn.learners.igl`)."""

    def __init__(self, ml, cfg) -> None:  # noqa: ANN001 - reductions.Multiline, TrainConfig
        self.eps = 0.05 if ml.epsilon is None else float(ml.epsilon)
        self.first_only = bool(ml.first_only)
        self.bits = cfg.bits
        pairs = [q.encode("latin-1") for q in cfg.quadratic]
        self.terms = np.array([[q[0], q[1]] for q in pairs], dtype=np.int64).reshape(-1, 2)
        self.obs = Observations(cfg.bits, cfg.constant)
        self.constant = bool(cfg.constant)
        self.gik = None
        self.pi_sums = np.zeros(2)  # the policy's coin sums (VW's pi_ftrl)
        self.mtr = np.zeros(2)  # its mtr sums (cb_adf's per-model state 1: not saved)
        # (the run's explorer as the drivers see it: its state, the model's section)
        from streamlearn.learners import explore

        self.xp = self
        self.ex = explore
        self.kind = -1

    def start(self, w: Weights, counter, reduction: str) -> None:  # noqa: ANN001, ARG002
        """Continue a model: ``counter`` is its section (:func:`read_section`); the inverse
        kinematics model's coin sums are gd's resume state's (``w.gstate``, as VW's ftrl
        holds them between examples)."""
        if counter is not None:
            self.pi_sums[:] = counter

    def closing_lines(self) -> list[str]:
        return []

    def vw_section(self) -> bytes:
        """VW's ``igl.pi``: the policy's coin sums (``gd_per_model_states``)."""
        import struct

        return struct.pack("<Idd", 1, float(self.pi_sums[0]), float(self.pi_sums[1]))

    def vw_text(self) -> str:
        """:meth:`vw_section` as VW's readable model writes it."""
        n, t = (repr(float(x)) for x in self.pi_sums)
        return (f"igl.pi.gd_per_model_states.size() = 1\n"
                f"igl.pi.gd_per_model_states[0]_normalized_sum_norm_x = {n}\n"
                f"igl.pi.gd_per_model_states[0]_total_weight = {t}\n")  # fmt: skip

    def learn(self, w: Weights, part: Part, ho: np.ndarray, lines: bool = False) -> Seen:
        from streamlearn.learners import csoaa_ldf, igl

        if self.gik is None:  # (its range, logistic's [-50, 50]: set by the kernel)
            self.gik = csoaa_ldf.init_gstate(w.params, "coin")
        mg = part.mg
        m = mg.act_ptr.shape[0] - 1
        if np.any(part.chosen < 0) or np.any(~(part.prob > 0)):
            e = int(np.flatnonzero((part.chosen < 0) | ~(part.prob > 0))[0])
            raise UsageError(f"--experimental_igl: line {int(part.ex_lines[e])}: an example "
                             "without a logged action, which VW fails on")  # fmt: skip
        fns = np.ascontiguousarray(mg.ns, dtype=np.int64)
        pre = igl.pre_cross(mg.indptr, fns.shape[0], self.terms, fns)
        if m and (pre.min() < 0 or int(pre.sum()) != fns.shape[0]):
            raise UsageError("--experimental_igl: these examples' namespaces (one shared with "
                             "the observations, or repeated in -q): not yet")  # fmt: skip
        name = part.src.name if part.src is not None else ""
        obs_ptr = np.zeros(m + 1, dtype=np.int64)
        oi: list = []
        ov: list = []
        on: list = []
        bad = np.zeros(m, dtype=np.int64)
        row_ns = set(fns.tolist()) - {128}
        for e in range(m):
            idx, val, ns, b = self.obs.of(name, int(part.ex_lines[e]))
            if row_ns.intersection(g for g in ns if g != 128):
                raise UsageError("--experimental_igl: an observation's namespace is also the "
                                 "context's: not yet")  # fmt: skip
            oi += idx
            ov += val
            on += ns
            bad[e] = b
            obs_ptr[e + 1] = len(oi)
        rows = mg.row.shape[0]
        acts = np.zeros(rows, dtype=np.int64)
        probs = np.zeros(rows, dtype=np.float32)
        cost = np.zeros(m)
        # VW swaps the ftrl records: the policy's sums in, the inverse kinematics' out
        g = csoaa_ldf.G_MODEL
        self.gik[g : g + 2] = w.gstate[g : g + 2]
        w.gstate[g : g + 2] = self.pi_sums
        try:
            igl.igl_examples(
                w.table, w.gstate, self.gik, w.params, w.loss_id, np.float32(self.eps),
                self.first_only, mg.act_ptr, mg.indptr, mg.indices, mg.values, pre, fns,
                self.terms, obs_ptr, np.array(oi, dtype=np.uint32),
                np.array(ov, dtype=np.float64), np.array(on, dtype=np.int64), bad, part.chosen,
                part.prob, w.stats, self.mtr, acts, probs, cost, np.uint64((1 << self.bits) - 1),
            )  # fmt: skip
        finally:
            self.pi_sums[:] = w.gstate[g : g + 2]
            w.gstate[g : g + 2] = self.gik[g : g + 2]
        # VW's table: the shared line and each action line (each with its constant), the
        # crosses of the merged lines, and the observation's; its total (update_stats_igl)
        # the shared line's features without its constant once per other line instead
        feats = part.feat_total + np.diff(obs_ptr)
        total = part.feat_row + self._shared(part) + np.diff(obs_ptr)
        w.stats[3] += float(total.sum())  # (learners.cb_adf.FEATURES)
        seen = dataclasses.replace(part, cost=cost, feat_row=feats, feat_total=total)
        return Seen(seen, actions=acts, probs=probs)

    def _shared(self, part: Part) -> np.ndarray:
        """Each example's count of shared features (without the constant): the merged
        rows count them once per action line, the lines (``feat_total``) once with the
        shared line's constant (a DSJSON record always has its shared line)."""
        n = np.diff(part.mg.act_ptr)
        if np.any(n < 2):
            raise UsageError("--experimental_igl: an example of one action: not yet")
        d = part.feat_row - part.feat_total + (1 if self.constant else 0)
        return d // (n - 1)

    def write(self, seen: Seen, out: list[str], vw: bool = True) -> None:
        from streamlearn.reductions.pmf import pmf_lines

        pmf_lines(seen.part, seen.actions, seen.probs, out, "\n\n" if vw else "\n")

    def progress(self, table, npass: int, seen: Seen, ho: np.ndarray) -> None:  # noqa: ANN001
        from streamlearn.reductions.pmf import progress_rows

        progress_rows(table, npass, seen.part, seen.actions, seen.probs, ho)


def over(below):  # noqa: ANN001, ANN201 - a Reduction
    """``below`` (cb_adf with its explorers) with IGL stacked on it when the run asks."""

    def learner(ml, cfg, **options: object):  # noqa: ANN001, ANN202
        if getattr(ml, "igl", False):
            return Learner(ml, cfg)
        return below.learner(ml, cfg, **options)

    def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001
        chain, label, out = below.stack(ml, base)
        if getattr(ml, "igl", False):
            chain = chain.replace(", shared_feature_merger", ", experimental_igl, "
                                  "shared_feature_merger")  # fmt: skip
            label = "CB_WITH_OBSERVATIONS"
        return chain, label, out

    def features(ml) -> str:  # noqa: ANN001
        from streamlearn.io.examples import FEATURES_LINES

        return FEATURES_LINES if getattr(ml, "igl", False) else below.features(ml)

    def vw_words(ml) -> list[str]:  # noqa: ANN001
        words = below.vw_words(ml)
        return [*words, "--experimental_igl"] if getattr(ml, "igl", False) else words

    return dataclasses.replace(below, learner=learner, stack=stack, features=features,
                               vw_words=vw_words, options=below.options + OPTIONS)  # fmt: skip


def read_section(data: bytes, at: int) -> tuple[tuple[float, float], int]:
    """VW's ``igl.pi`` section of a model at byte ``at``: the policy's coin sums, and where
    the section ends (:meth:`Learner.vw_section` writes it)."""
    import struct

    if len(data) < at + 4:
        raise ValueError("the model ends inside its igl section")
    (n,) = struct.unpack_from("<I", data, at)
    if n != 1 or len(data) < at + 20:
        raise ValueError(f"its igl section holds {n} models' sums (VW's holds one)")
    norm, total = struct.unpack_from("<dd", data, at + 4)
    return (norm, total), at + 20


def spin_off(table: np.ndarray, cfg, ml):  # noqa: ANN001, ANN201 - TrainConfig, Multiline
    """``--predict_only_model``: the policy alone (offset 1 of the feature width 2), one bit
    fewer, without ``--experimental_igl`` (VW's ``pre_save_load_igl``): (table, cfg, ml)."""
    half = table[1::2].copy()
    return (half, dataclasses.replace(cfg, bits=cfg.bits - 1),
            dataclasses.replace(ml, igl=False))  # fmt: skip
