"""The model files of ``sl vw``'s multiline reductions, VW's and sl's: read (``-i``,
:func:`start`) and written (``-f``, :func:`save`).

The bytes are :mod:`streamlearn.io.vwmodel` (header, gd's body) and
:mod:`streamlearn.io.vwmodel_cb` (the explorer's counter, cb_adf's mtr sums); this module
says what they mean for :mod:`streamlearn.run.multiline`:

* **Options.** VW keeps the reductions' options in the header (`` --cb_adf
  --cb_explore_adf --cb_type mtr --csoaa_ldf multiline --csoaa_rank --epsilon 0.3``);
  :func:`kept_options` returns them, and ``sl vw`` (``cli/vw.py``) adds those the command
  line does not give, as VW merges a model's options (``--epsilon 0.3`` on the command
  line over a model's ``--epsilon 0.1``, suite test 207).
* **State.** gd's slots are sl's table rows (VW's index over its stride, sl's layout);
  the resume state gives gd's ``t``, model 0's normalizer sums, the label range and l1/l2
  state; cb_adf's mtr sums and the explorer's counter (``--first``'s examples still to
  explore, ``--squarecb``'s and ``--cover``'s examples learned) ride beside them.
  ``--cover``'s policies and bagging's copies are interleaved in the slots as VW's;
  bagging's generator's state is ``--random_seed``.

A model of another reduction (``--cb_dro``, VW's legacy ``--cb`` before 8.11,
...) is refused by name before anything is read from its body.

sl's own model of a multiline run is gd's model file (``model.py``) whose
``meta["multiline"]`` records the reduction (:func:`save`, :func:`initial`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from streamlearn import model_vw
from streamlearn.config import TrainConfig
from streamlearn.errors import Diverged, ModelError, UsageError
from streamlearn.io import vwmodel, vwmodel_cb
from streamlearn.learners import cb_adf, csoaa_ldf
from streamlearn.reductions import Multiline, reduction_of
from streamlearn.reductions.explore import saved_state
from streamlearn.reductions.explore import vw_words as explorer_words
from streamlearn.reductions.options import config_of

REDUCTIONS = model_vw.MULTILINE
"""Options that make a VW model a multiline one (read here, not by model_vw)."""


HEAD_BYTES = 1 << 20
"""What is read of a model to know its header (:func:`kept_options`): every header sl
meets fits, and a model of 2^30 weights is not read whole once more to learn its options."""


def _header(path: str, whole: bool = False) -> tuple[bytes, vwmodel.Header] | None:
    """The bytes read of the VW model at ``path`` (all of them with ``whole``, else its
    first :data:`HEAD_BYTES`) and its header; None when it is not a VW model."""
    try:
        with open(path, "rb") as f:
            data = f.read() if whole else f.read(HEAD_BYTES)
            more = not whole and len(data) == HEAD_BYTES and f.read(1) != b""
    except OSError:
        return None  # (the run's own checks report an unreadable -i)
    if not vwmodel.sniff(data[:16]):
        return None
    try:
        return data, vwmodel.read_header(data)
    except ValueError as e:
        if more:  # (a header longer than the bytes read: as the whole file says)
            return _header(path, whole=True)
        raise ModelError(f"-i {path}: {e}") from None


def kept_options(path: str) -> list[tuple[str, str | None]] | None:
    """The options kept in the VW model at ``path`` when it is a multiline reduction's
    (None: not a VW model, or a single-line one); ModelError when sl cannot run it."""
    got = _header(path)
    if got is None:
        return None
    h = got[1]
    try:
        items = vwmodel.option_items(h.options)
    except ValueError as e:
        raise ModelError(f"-i {path}: {e}") from None
    pairs = [(n, v) for n, v, _ in items]
    names = {n for n, _ in pairs}
    if not names & set(REDUCTIONS):
        return None
    unrun = model_vw.not_run(names)
    if unrun:
        version = f" {h.version} --cb" if unrun.startswith("VW's legacy") else ""
        raise ModelError(f"-i {path}: a VW{version} model of {unrun}, which sl does not run")
    if h.lda and "lda" not in names:
        raise ModelError(f"-i {path}: an --lda model whose options do not say --lda")
    try:  # (the options are data: learning and reduction options only, one list for all)
        model_vw.check_options(items)
    except model_vw.Unsupported as e:
        raise ModelError(f"-i {path}: {e}") from None
    for name, value, spelled in items:
        if name == "bit_precision" and value != str(h.bits):
            raise ModelError(f"-i {path}: its options say {spelled} {value[:20]}, its header "
                             f"{h.bits} bits (corrupt)")  # fmt: skip
    # (VW keeps --ngram and --skips in the header's own fields)
    return [*pairs, *(("ngram", v) for v in h.ngram), *(("skips", v) for v in h.skips)]


def seen_multi(path: str) -> bool:
    """Whether the VW model at ``path`` had seen a CCB example of several slots (its
    has_seen_multi_slot_example, the byte after the header; False when it keeps none: a
    cb_adf model, or one before 8.9.0)."""
    got = _header(path)
    if got is None:
        return False
    data, h = got
    return vwmodel_cb.has_ccb_flag(h) and len(data) > h.end and data[h.end] == 1


def explorer_of(ml) -> str:  # noqa: ANN001 - a reductions.Multiline
    return ml.explore or ""


def _columns(cfg) -> tuple[int, ...]:  # noqa: ANN001
    """The table columns of the floats VW keeps per slot: gd's for its update rule, or every
    one of the ftrl family's learner (its ``ftrl_size``: 3, 4 or 6)."""
    from streamlearn.learners import csoaa_ldf
    from streamlearn.model_vw import gd_columns

    if cfg.algo == "gd":
        return gd_columns(cfg)
    return tuple(range(csoaa_ldf.COLUMNS[cfg.algo]))


def _t0(cfg) -> float:  # noqa: ANN001
    """VW's t at the start, float32 (:func:`streamlearn.run.vwconsole.start_t`: 0 for the
    ftrl family, whose configuration holds 1 in sl)."""
    from streamlearn.run.vwconsole import start_t

    return float(np.float32(start_t(cfg)))


def read(path: str, ml, cfg) -> dict:  # noqa: ANN001
    """``-i``: the state of the VW model at ``path`` for a run of ``ml`` and ``cfg`` (whose
    options already hold the model's, :func:`kept_options`): ``table`` (2^bits rows, the
    base learner's float32 columns), ``gstate``, ``counts`` (mtr's event and action sums),
    ``counter`` (the explorer's, or None) and ``t`` (VW's, or None)."""
    from streamlearn.learners import csoaa_ldf
    from streamlearn.learners.base import G_CLIP, G_LABEL_MAX, G_LABEL_MIN, G_N, G_T, fresh_table
    from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY

    got = _header(path, whole=True)
    if got is None:
        raise ModelError(f"-i {path}: not a VW model")
    data, h = got
    if h.bits > 30 or h.bits < 1:
        raise ModelError(f"-i {path}: {h.bits} bits (sl's tables take 1 to 30)")
    cb = reduction_of(ml).cb
    counter, sums = vwmodel_cb.layout(h, explorer_of(ml), cb, ml.legacy)
    costs = vwmodel_cb.has_costs(h, explorer_of(ml)) and not ml.legacy
    # CCB's and slates' models keep has_seen_multi_slot_example (VW reads it when the
    # model's options name ccb_explore_adf: a cb_adf model continued by CCB has none)
    ccb = ml.reduction in ("ccb", "slates") and vwmodel_cb.has_ccb_flag(h)
    cols = _columns(cfg)
    top = None  # (--multiworld_test's state, above the learner's)
    try:
        if getattr(ml, "mwt", ""):
            from streamlearn.run.mwt import read_section

            top, end = read_section(data, h.end)
            h = dataclasses.replace(h, end=end)
        if getattr(ml, "igl", False):  # (--experimental_igl's policy's sums, its section)
            from streamlearn.reductions.igl import read_section as igl_section

            top, end = igl_section(data, h.end)
            h = dataclasses.replace(h, end=end)
        got_body = vwmodel_cb.read_cb_body(data, h, counter, sums, len(cols), costs=costs,
                                           ccb=ccb)  # fmt: skip
    except ValueError as e:
        raise ModelError(f"-i {path}: {e}") from None
    body = got_body.body
    table = fresh_table(h.bits, (0.0,) * csoaa_ldf.COLUMNS[cfg.algo], np.float32)
    use = cols if body.resume is not None else (0,)
    for k, c in enumerate(use):
        table[body.slots, c] = body.values[:, k]
    if ml.legacy:  # (cb_algs' normalizer sums per model: VW keeps model 0's)
        from streamlearn.run.cblegacy import Legacy

        gstate = Legacy.gstate_for(ml, cfg.params())
    else:
        gstate = csoaa_ldf.init_gstate(cfg.params(), cfg.algo)
    gstate[G_CLIP] = 1.0
    gstate[G_LABEL_MIN] = h.min_label
    gstate[G_LABEL_MAX] = h.max_label
    r = body.resume
    if r is not None:
        # sl's G_N is VW's t less the run's unlabeled weight (learners/csoaa_ldf.py) and
        # less its --initial_t, which gd's rate adds back (VW's t starts at it: 1 under
        # --sgd).  VW's rate takes the file's t whole: its count of unlabeled examples
        # starts again at 0 (the file's is not subtracted).
        t = max(0.0, float(r["t"]) - _t0(cfg))
        gstate[G_N] = gstate[G_T] = t
        gstate[G_LABEL_MIN] = r["min_label"]
        gstate[G_LABEL_MAX] = r["max_label"]
        # (the ftrl family's too: VW's ftrl keeps its first model's sums as gd does, and
        # --coin divides by their ratio)
        gstate[csoaa_ldf.G_MODEL] = r["norm"][0]
        gstate[csoaa_ldf.G_MODEL + 1] = r["total_weight"][0]
        gstate[G_GRAVITY] = r.get("l1_state", 0.0)
        gstate[G_CONTRACTION] = r.get("l2_state", 1.0)
    counts = (float(got_body.event_sum or 0), float(got_body.action_sum or 0))
    # the explorer's state: its counter, or --synthcover's (lowest, highest) costs seen
    state = got_body.costs if costs else top if top is not None else got_body.counter
    return {"table": table, "gstate": gstate, "counts": counts, "counter": state,
            "bits": h.bits, "resume": r is not None, "seen_multi": got_body.seen_multi,
            "t": float(r["t"]) if r is not None else None}  # fmt: skip


def options_string(ml, cfg, seed: int = 0, resume: bool = True) -> str:  # noqa: ANN001
    """The options VW keeps with a model of ``ml`` over gd with ``cfg``."""
    from streamlearn.model_vw import options_string as gd_options

    # the reduction's options, then its explorer's (as VW's stack keeps them)
    if ml.legacy:
        from streamlearn.run.cblegacy import vw_words

        words = vw_words(ml) if ml.actions else []  # (--multiworld_test alone: no cb)
        if ml.mwt:
            words += ["--multiworld_test", ml.mwt]
    else:
        words = reduction_of(ml).vw_words(ml) + explorer_words(ml)
    text = " " + " ".join(words) + gd_options(cfg, resume)
    if seed:  # (the generator's state now: the seed given, if any, is spent)
        text = re.sub(r" --random_seed \S+", "", text) + f" --random_seed {int(seed)}"
    return _vw_order(text)


_LAST = ("ignore", "ignore_linear", "keep", "random_seed")
"""Options VW 9.11 keeps after the others (the namespace filters, then its generator)."""


def _vw_order(text: str) -> str:
    """``text`` as VW 9.11 writes its options: by name (an option given twice keeps its
    order), then :data:`_LAST`; a float value with 15 significant digits of its float32
    (``--epsilon 0.200000002980232``), as VW's option serializer writes it."""
    groups: list[list[str]] = []
    for w in text.split():
        if w.startswith("--") or not groups:
            groups.append([w])
        else:
            groups[-1].append(w)

    def value(v: str) -> str:
        if re.fullmatch(r"-?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][-+]?\d+)", v):
            return f"{float(np.float32(float(v))):.15g}"
        return v

    def key(i: int) -> tuple:
        name = groups[i][0][2:]
        return (_LAST.index(name) + 1 if name in _LAST else 0, name if name not in _LAST else "",
                i)  # fmt: skip

    order = sorted(range(len(groups)), key=key)
    return "".join(" " + " ".join([groups[i][0], *map(value, groups[i][1:])]) for i in order)


def encode(ml, cfg, table: np.ndarray, gstate: np.ndarray, stats: np.ndarray,  # noqa: ANN001
           counter: int | tuple | None, seed: int = 0, weights_only: bool = False,
           seen_multi: bool = False, passes: int = 1, progress=None,
           top: bytes = b"") -> list:  # noqa: ANN001  # fmt: skip
    """The VW model file of a run's state, in pieces (``weights_only``: VW's
    ``--predict_only_model``); ``counter``: the explorer's (``--synthcover``: its lowest
    and highest costs seen); ``seen_multi``: CCB's and slates' has_seen_multi_slot_example,
    the byte VW's ccb writes above the explorer's state; ``passes``, ``progress``: what
    VW's table left in gd's resume state (:func:`table_state`); ``top``: the state of a
    reduction above them all (``--multiworld_test``'s)."""
    m = model_state(ml, cfg, table, gstate, stats, counter, seed, weights_only)
    if m.resume is not None:
        table_state(m.resume, passes, progress)
    gd_parts = vwmodel.encode_body(m.resume, m.keep, m.values)
    flag = bool(seen_multi) if ml.reduction in ("ccb", "slates") else None
    body = vwmodel_cb.encode_cb_body(m.counter, m.mtr, gd_parts, m.costs, flag)
    return [vwmodel.encode_header(m.header), *([top] if top else []), *body]


def table_state(resume: dict, passes: int, progress) -> None:  # noqa: ANN001
    """gd's resume state as VW's progress table leaves it: its loss since the last line and
    its next line's weight (``progress``: a :class:`~streamlearn.run.mlconsole.Progress`;
    None, or quiet: no line printed, the loss since the start), its counts (held-out
    examples apart) and the pass."""
    resume["sum_loss_since_last_dump"] = resume["sum_loss"]
    if resume["example_number"]:
        resume["current_pass"] = passes
    if progress is None:
        return
    resume["total_features"] = progress.total_features
    # (held-out examples count apart: neither examples nor unlabeled ones)
    resume["example_number"] = progress.example_number
    resume["weighted_unlabeled_examples"] = progress.wunl
    if not progress.quiet:
        resume["sum_loss_since_last_dump"] = progress.since_loss
        resume["dump_interval"] = progress.dump
        resume["old_weighted_labeled_examples"] = progress.old_wlab


@dataclass
class ModelState:
    """What a multiline model file holds (:func:`model_state`): the header, the reductions'
    state top first (the explorer's ``counter`` or ``--synthcover``'s ``costs``, None when
    not kept; cb_adf's ``mtr`` sums), gd's ``resume`` state (None: weights only) and the
    stored ``keep`` slots with their float32 ``values`` (VW's columns)."""

    header: vwmodel.Header
    counter: int | None
    costs: tuple | None
    mtr: tuple[int, int] | None
    resume: dict | None
    keep: np.ndarray
    values: np.ndarray


def model_state(ml, cfg, table: np.ndarray, gstate: np.ndarray, stats: np.ndarray,  # noqa: ANN001
                counter: int | tuple | None, seed: int = 0,
                weights_only: bool = False) -> ModelState:  # fmt: skip
    """The state :func:`encode` writes as bytes, and :func:`readable` as VW's text."""
    from streamlearn.learners import cb_adf, csoaa_ldf
    from streamlearn.learners.base import G_CLIP, G_LABEL_MAX, G_LABEL_MIN, G_N
    from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY

    if cfg.algo not in csoaa_ldf.BASES:
        raise ValueError(f"VW's multiline reductions run on gd or the ftrl family, not "
                         f"--{cfg.algo}")  # fmt: skip
    for name, values in (("ngram", cfg.ngram), ("skips", cfg.skips)):
        if any(len(v.encode("latin-1", "replace")) > 3 for v in values):
            raise ValueError(f"VW's header holds --{name} values of 3 bytes at most")
    lo, hi = 0.0, 0.0
    if gstate[G_CLIP]:
        # (+ 0.0: VW's std::min from 0 never makes -0, where sl's range may hold it)
        lo, hi = float(gstate[G_LABEL_MIN]) + 0.0, float(gstate[G_LABEL_MAX]) + 0.0
    h = vwmodel.Header(id=cfg.model_id, min_label=lo, max_label=hi, bits=cfg.bits,
                       options=options_string(ml, cfg, seed, not weights_only),
                       ngram=tuple(cfg.ngram), skips=tuple(cfg.skips))  # fmt: skip
    cb = reduction_of(ml).cb
    want_counter, sums = vwmodel_cb.layout(h, ml.explore or "", cb, ml.legacy)
    costs = None
    if vwmodel_cb.has_costs(h, ml.explore or ""):
        costs, counter = (tuple(counter) if counter is not None else (0.0, 0.0)), None
    cols = (0,) if weights_only else _columns(cfg)
    values = np.ascontiguousarray(table[:, list(cols)], dtype=np.float32)
    keep = np.flatnonzero(np.any(values != 0.0, axis=1)).astype(np.uint32)
    values = values[keep]
    resume = None
    if not weights_only:
        n_ex, n_lab = float(stats[cb_adf.N_EX]), float(stats[cb_adf.N_LAB])
        unlabeled = max(0.0, n_ex - n_lab)
        # gd's normalizer sums start at a given --initial_t, set before --sgd's default t0
        # of 1: VW's stay 0 there (sl's hold the 1, which a rate without --normalized never
        # reads; sl's configuration does not keep whether 1 was given)
        norm = float(gstate[csoaa_ldf.G_MODEL])
        total = float(gstate[csoaa_ldf.G_MODEL + 1])
        if cfg.algo == "coin":
            pass  # (coin's own normalizer sums, one pair: VW writes them as gd's)
        elif cfg.algo != "gd" or (not (cfg.adaptive or cfg.normalized) and _t0(cfg) == 1.0):
            norm = total = 0.0  # (ftrl and pistol keep gd's sums, at 0)
        resume = {
            "initial_t": _t0(cfg),
            "norm": [norm],
            "t": _t0(cfg) + float(gstate[G_N]) + unlabeled,
            "sum_loss": float(stats[cb_adf.LOSS]),
            "sum_loss_since_last_dump": 0.0, "dump_interval": 1.0, "min_label": lo,
            "max_label": hi, "weighted_labeled_examples": n_lab, "weighted_labels": 0.0,
            "weighted_unlabeled_examples": unlabeled, "example_number": int(n_ex),
            "total_features": int(stats[cb_adf.FEATURES]),
            "total_weight": [total],
            "old_weighted_labeled_examples": 0.0, "current_pass": 1 if n_ex else 0,
            "l1_state": float(gstate[G_GRAVITY]), "l2_state": float(gstate[G_CONTRACTION]),
        }  # fmt: skip
    mtr = (int(stats[cb_adf.EVENTS]), int(stats[cb_adf.ACTIONS])) if sums else None
    return ModelState(h, int(counter or 0) if want_counter else None, costs, mtr, resume, keep,
                      values)  # fmt: skip


_COUNTER_TEXT = {"first": "cb first adf", "cover": "cb cover adf", "squarecb": "cb squarecb adf",
                 "regcb": "cb squarecb adf"}  # fmt: skip
"""How VW's explorers name their counter in a text model (each its own ``save_load``)."""


def readable(m: ModelState, ml, names: dict | None = None,  # noqa: ANN001
             seen_multi: bool = False, top: str = "") -> bytes:  # fmt: skip
    """``--readable_model`` (``names`` None) or ``--invert_hash`` (slot -> VW's name) of the
    model :func:`model_state` describes, as VW writes it: the header, the reductions' state
    as text (CCB's and slates' ``seen_multi``, the explorer's, then cb_adf's
    ``event_sum``/``action_sum``), then gd's (:mod:`streamlearn.run.vwreadable`)."""
    from streamlearn.run.vwreadable import float_text, header_of, resume_text, slot_lines

    h = m.header  # (the text says VW's version, as VW's own: the bytes say sl's 9.0.0)
    t = header_of(h.id, h.min_label, h.max_label, h.bits, h.ngram, h.skips, h.options)
    if top:  # (a reduction's above them all: --experimental_igl's)
        t.add(top)
    if ml.reduction in ("ccb", "slates"):
        t.add(f"CCB: has_seen_multi_slot_example = {'true' if seen_multi else 'false'}\n")
    if m.counter is not None and ml.legacy:  # (VW's single-line cb_explore: every explorer)
        t.add(f"cb cover storing VW::example counter:  = {m.counter}\n")
    elif m.counter is not None:
        t.add(f"{_COUNTER_TEXT[ml.explore]} storing example counter:  = {m.counter}\n")
    if m.costs is not None:
        t.add(f"_min_cost {float_text(m.costs[0])}\n_max_cost {float_text(m.costs[1])}\n")
    if m.mtr is not None:
        t.add(f"event_sum {m.mtr[0]}\naction_sum {m.mtr[1]}\n")
    t.add(f":{0 if m.resume is None else 1}\n")
    if m.resume is not None:
        for line in resume_text(m.resume):
            t.add(line)
    slot_lines(t, m.keep.astype(np.int64), m.values, m.resume is not None, names)
    return "".join(t.parts).encode("utf-8", "surrogateescape")


def check_finite(fitted, path: str) -> None:
    """Refuse (exit 6) a model holding a NaN or an inf: a diverged run writes no model."""
    for a, what in ((fitted.table, "weights or per-slot state"), (fitted.gstate, "global state")):
        if a.size and not (np.isfinite(a.min()) and np.isfinite(a.max())):
            raise Diverged(f"the model's {what} holds a NaN or an inf: the training diverged "
                           f"(no model written to {path})")  # fmt: skip


def spec(ml: Multiline):  # noqa: ANN202
    from streamlearn.learners import gd

    return dataclasses.replace(gd.SPEC, name=f"{ml.reduction}_gd")


def reductions_state(fitted, ml: Multiline) -> tuple:  # noqa: ANN001
    """(explorer's counter, mtr's sums, generator state) a model of the run ``fitted``
    keeps (:func:`streamlearn.reductions.explore.saved_state`; ``--cb_force_legacy``'s:
    :meth:`streamlearn.run.cblegacy.Legacy.saved`)."""
    if ml.legacy:
        counter, seed = fitted.explorer.saved()
        return counter, (0.0, 0.0), seed
    if "saved" in fitted.summary:  # (a learner's own: --search's generator)
        counter, seed = fitted.summary["saved"]
        return counter, (0.0, 0.0), seed
    return saved_state(fitted.explorer, fitted.stats, ml)


def save(fitted, ml: Multiline, learn: dict, path: str, fmt: str = "sl",  # noqa: ANN001
         progress=None) -> None:  # noqa: ANN001  # fmt: skip
    """Write the run's model: VW's format (``fmt`` "vw" or "vw_predict_only",
    :mod:`streamlearn.run.mlmodel`; ``progress``: VW's table, whose state gd's resume
    state holds), or sl's, whose ``meta["multiline"]`` records the reduction (and mtr's
    running counts, the explorer's counter), which ``-i`` reads back (:func:`initial`)."""
    from streamlearn import model as model_io

    cfg = config_of(learn, bases=True)
    check_finite(fitted, path)
    counter, sums, seed = reductions_state(fitted, ml)
    if fmt in ("vw", "vw_predict_only"):
        from streamlearn.system.outputs import write_bytes

        stats = fitted.stats.copy()
        stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS] = sums
        table = fitted.table
        if getattr(ml, "ed_spin_off", False):  # --epsilon_decay: the champion alone, as VW's
            from streamlearn.reductions.epsilon_decay import spin_off

            try:
                table, bits = spin_off(table, _columns(cfg), ml, fitted.explorer.ed_champion,
                                       cfg.bits)  # fmt: skip
            except ValueError as e:
                raise ModelError(f"cannot write {path} as a VW model: {e}") from None
            cfg = dataclasses.replace(cfg, bits=bits)
        if getattr(ml, "igl", False) and fmt == "vw_predict_only":  # (the policy alone)
            from streamlearn.reductions.igl import spin_off as igl_spin_off

            stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS] = fitted.explorer.mtr  # (VW's swap)
            table, cfg, ml = igl_spin_off(table, cfg, ml)
            fitted = dataclasses.replace(fitted, explorer=None)  # (its section is not kept)
        try:
            multi = bool(fitted.summary.get("ccb_seen_multi"))  # (CCB's, slates')
            parts = encode(ml, cfg, table, fitted.gstate, stats, counter, seed,
                           weights_only=fmt == "vw_predict_only", seen_multi=multi,
                           passes=int(fitted.summary.get("passes") or 1),
                           progress=progress, top=getattr(fitted.explorer, "vw_section",
                                                          bytes)())  # fmt: skip
        except ValueError as e:
            raise ModelError(f"cannot write {path} as a VW model: {e}") from None
        write_bytes(str(path), parts, "model")
        return
    # --ope is the run's, not the model's: a later -i run prints VW's stderr unless asked
    # (and --search's run-only options: a path the run reads is the command line's)
    recorded = {k: v for k, v in dataclasses.asdict(ml).items() if k != "ope"}
    recorded["search_run"] = {}
    meta = {"multiline": recorded, "mtr_events": sums[0], "mtr_actions": sums[1]}
    if counter is not None:
        meta["explore_counter"] = counter
    if seed:
        meta["explore_seed"] = seed
    if "ccb_seen_multi" in fitted.summary:  # VW's has_seen_multi_slot_example
        meta["ccb_seen_multi"] = bool(fitted.summary["ccb_seen_multi"])
    from streamlearn.learners.base import new_stats

    # the counters start afresh in a continued run (as VW's); mtr's sums ride in meta
    model = model_io.from_training(cfg, spec(ml), fitted.table, fitted.gstate, new_stats(),
                                   cfg.params(), meta=meta)  # fmt: skip
    model_io.save(model, path, "sl")


def multiline_of_model(path: str) -> dict | None:
    """The multiline options a model written by :func:`save` records (None: another model)."""
    from streamlearn import model as model_io

    try:
        model = model_io.load(path)
    except Exception:  # noqa: BLE001 - not such a model: the caller's path reports it
        return None
    ml = model.meta.get("multiline") if isinstance(model.meta, dict) else None
    return dict(ml) if isinstance(ml, dict) else None


def initial(path: str, ml: Multiline, learn: dict):  # noqa: ANN201
    """``-i``: (config options, table, gstate, mtr counts) of a model :func:`save` wrote."""
    from streamlearn import model as model_io

    model = model_io.load(path)
    rec = model.meta.get("multiline") if isinstance(model.meta, dict) else None
    # CCB and slates run on cb_adf: they continue a --cb_adf/--cb_explore_adf model too
    names = {spec(ml).name}
    if ml.reduction in ("ccb", "slates"):
        names |= {"cb_adf_gd", "ccb_gd", "slates_gd"}
    if isinstance(model.meta, dict) and isinstance(model.meta.get("bandit"), dict):
        raise UsageError(f"-i {path}: a bandit model of sl train --cb-adf, sl serve or the "
                         "API (sl's own state), which sl vw does not read yet: continue it "
                         "with sl train -i, or write VW's model of it, which sl vw -i and vw "
                         "-i read (Model.load(PATH).save(OUT, format='vw'))")  # fmt: skip
    if not isinstance(rec, dict) or model.learner not in names:
        raise UsageError(f"-i {path}: not a {ml.reduction} model written by sl vw "
                         f"(learner {model.learner!r})")  # fmt: skip
    if rec.get("cb_type", "mtr") != ml.cb_type:
        raise UsageError(f"-i {path}: the model learned --cb_type {rec.get('cb_type')}, not "
                         f"{ml.cb_type}")  # fmt: skip
    options = {**model.config.to_dict(), **learn}
    options.pop("bits", None)
    options["bits"] = model.config.bits
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    options = {k: v for k, v in options.items() if k in known}
    if options.get("theta") is None:
        options.pop("theta", None)
    table = model.table((0.0, 0.0, 0.0, 0.0), np.float32)
    gstate = model.gstate.copy()
    # VW's model keeps gd's normalizer sums of model 0 only: dr's regressor starts afresh
    gstate[csoaa_ldf.G_MODEL + 2 : csoaa_ldf.G_MODEL + 4] = 0.0
    counts = (float(model.meta.get("mtr_events", 0.0)), float(model.meta.get("mtr_actions", 0.0)))
    counter = model.meta.get("explore_counter")
    if ml.explore in ("first", "squarecb") and counter is None:
        # a model of sl before the explorers' state was kept: a continued run would explore
        # differently
        raise UsageError(f"-i {path}: the model keeps no --{ml.explore} counter (an older "
                         "sl model): train it again")  # fmt: skip
    if model.meta.get("explore_seed"):
        options["seed"] = int(model.meta["explore_seed"])
    return options, table, gstate, counts, counter, None


def start(path: str, ml: Multiline, learn: dict):  # noqa: ANN202
    """``-i``: (config options, table, gstate, mtr counts, explorer counter, VW's t or
    None) of a VW model (:mod:`streamlearn.run.mlmodel`) or of sl's (:func:`initial`)."""
    if kept_options(path) is None:
        return initial(path, ml, learn)
    options = dict(learn)
    options.setdefault("numbers", "vw")  # (VW's model: its inputs read as VW reads them)
    options.pop("bits", None)
    got = read(path, ml, config_of(options, bases=True))
    options["bits"] = got["bits"]
    if ml.legacy:
        got["counter"] = got["counter"] or 0  # (cover's; VW before 8.9 kept none)
    elif ml.explore in ("first", "squarecb", "cover", "regcb") and got["counter"] is None:
        # (VW before 8.11 kept no counter: VW reads such a model with a fresh one)
        got["counter"] = ml.tau if ml.explore == "first" else 0
    return options, got["table"], got["gstate"], got["counts"], got["counter"], got["t"]
