"""Vowpal Wabbit's model files as sl's :class:`~streamlearn.model.Model`, and back.

Imported by :mod:`streamlearn.model` only (it is part of the model layer); the
bytes are :mod:`streamlearn.io.vwmodel`'s.  What is translated:

* **Options.** VW keeps some options with a model (its options string):
  ``--oaa K``, ``--indexing``, ``-q``/``--cubic``/``--interactions``,
  ``--ignore``/``--ignore_linear``/``--keep``, ``--noconstant``, ``--hash all``,
  ``--ngram``/``--skips`` (in the header), ``--binary``, ``--link``, the learner
  (``--ftrl``, ``--coin``, ``--pistol``, ``--freegrad``) and, in a model with its resume state,
  gd's update rule (``--sgd``, ``--adaptive``, ``--normalized``, ``--invariant``)
  and ``-l``/``--power_t``.  They become the model's
  :class:`~streamlearn.config.TrainConfig`; what VW does not keep (the loss
  function, ``--l1``, ``--l2``, ``--initial_t``; the update rule of a
  ``--predict_only_model`` model) comes from the command line, as in VW
  (:data:`UNRECORDED`: a different value is not a conflict).  Any other option
  (a reduction sl does not have) is refused, named.
* **Resume state** (VW 9's default ``--save_resume``): each slot's floats are
  the learner's own columns (gd: weight, adaptive sum, largest |x|, as many as
  the update rule keeps; ftrl: w, z, n; pistol: 4; coin, freegrad: 6); gd's normalizer sums
  (``norm``, ``total_weight``: class 0's under ``--oaa``, as VW keeps them without
  ``--per_model_save_load``), its l1 and l2 state, ``t`` and the progressive
  counters go to ``gstate`` and ``stats``.
* **Weights only** (``--predict_only_model``): the weights, every other state
  zero, as VW continues such a model.

Written models (:func:`encode`) carry the same, so that ``vw -i`` scores and
continues them as sl would.
"""

from __future__ import annotations

import numpy as np

from streamlearn.config import UPDATE_RULE, TrainConfig
from streamlearn.io import vwmodel

F32 = np.float32

VW_LEARNERS = ("gd", "ftrl", "coin", "pistol", "freegrad")
"""The learners whose models sl reads and writes in VW's format (and --oaa over gd, ftrl)."""
COLUMNS = {"ftrl": 3, "pistol": 4, "coin": 6, "freegrad": 6}
"""Floats per slot in the resume state of VW's ftrl-family learners (its ``ftrl_size``) and
of ``--freegrad`` (its ``freegrad_size``), in sl's column order."""
UNRECORDED = ("loss", "sort_features", "leave_duplicate_interactions", "permutations",
              "feature_limit",
              "initial_t")  # fmt: skip
"""Options an sl model records and a VW model does not: the command line's hold (their
defaults resolved with the run's other options, as VW resolves them)."""
NOT_RESUMED = (*UPDATE_RULE, "learning_rate", "power_t")
"""What a VW model without its resume state (``--predict_only_model``) does not record
either."""

class Unsupported(ValueError):
    """A VW model sl cannot use (a reduction or option it does not have)."""


def _options(h: vwmodel.Header) -> dict:
    """The options string of header ``h`` read into TrainConfig fields and VW facts."""
    learn: dict = {"bits": h.bits}
    if h.id:
        learn["model_id"] = h.id  # VW's --id, in its header
    facts = {"rules": set(), "models": 1, "link": None, "l1_state": None, "l2_state": None}
    unknown: list[str] = []
    items = vwmodel.split_options(h.options)
    seen: set[str] = set()
    for name, value in items:
        if name in ("quadratic", "cubic", "interactions", "ignore", "ignore_linear", "keep",
                    "ngram", "skips"):  # fmt: skip
            if value is None:
                raise Unsupported(f"--{name} without a value in its options")
            if name in ("quadratic", "cubic", "interactions"):  # (7.10.2: also in the header)
                if value in seen:
                    continue  # one cross, whichever option named it (as VW reads them)
                seen.add(value)
            learn[name] = (*learn.get(name, ()), value)
        elif name in ("oaa", "indexing"):
            learn[name] = _int(name, value)
        elif name == "multilabel_oaa":
            learn["oaa"] = _int(name, value)
            learn["multilabel"] = True
        elif name == "csoaa":
            learn["oaa"] = _int(name, value)
            learn["csoaa"] = True
        elif name == "bfgs":
            learn["bfgs"] = 15  # (VW keeps --bfgs, not --mem: the memory matters only to learn)
        elif name == "autolink":
            learn["autolink"] = _int(name, value)
        elif name == "bootstrap":
            learn["bootstrap"] = _int(name, value)
        elif name == "bs_type" and value in ("mean", "vote"):
            learn["bs_type"] = value
        elif name == "named_labels" and value:
            learn["named_labels"] = value
        elif name == "noconstant":
            learn["constant"] = False
        elif name == "hash":
            learn["hash"] = value
        elif name == "hash_seed":
            learn["hash_seed"] = _int(name, value)
        elif name == "random_seed":
            facts["random_seed"] = _int(name, value)  # (VW's generator as it was saved)
        elif name == "bit_precision":
            pass  # (the bits are the header's)
        elif name in UPDATE_RULE or name == "sgd":
            facts["rules"].add(name)
        elif name in ("learning_rate", "power_t", "ftrl_alpha", "ftrl_beta"):
            learn[name] = _float(name, value)
        elif name in ("ftrl", "coin", "pistol", "freegrad"):
            learn["algo"] = name
        elif name == "binary":
            learn["binary"] = True
        elif name == "link" and value in ("identity", "logistic", "glf1", "poisson"):
            facts["link"] = value
        elif name in ("l1_state", "l2_state"):
            facts[name] = _float(name, value)
        elif name == "per_model_save_load":
            facts["per_model"] = True
        else:
            unknown.append(f"--{name}" + (f" {value}" if value is not None else ""))
    if unknown:
        raise Unsupported(
            f"it was trained with {', '.join(unknown)}, which sl does not support (sl reads "
            "VW's linear models: gd and its update rules, --ftrl, --coin, --pistol, --freegrad, "
            "--oaa)"
        )
    if h.lda:
        raise Unsupported("it is an --lda model, which sl does not support")
    if h.ngram:
        learn["ngram"] = (*learn.get("ngram", ()), *h.ngram)
    if h.skips:
        learn["skips"] = (*learn.get("skips", ()), *h.skips)
    if facts["rules"]:
        if learn.get("algo", "gd") != "gd":
            raise Unsupported("its options name both an ftrl-family learner and gd's update rule")
        for rule in UPDATE_RULE:
            learn[rule] = rule in facts["rules"]
    if facts.get("per_model") and learn.get("oaa"):
        facts["models"] = learn["oaa"]
    if facts.get("per_model") and learn.get("bootstrap"):
        facts["models"] = learn["bootstrap"]
    return {"learn": learn, **facts}


def _int(name: str, value: str | None) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise Unsupported(f"--{name} {value!r} in its options is not an integer") from None


def _float(name: str, value: str | None) -> float:
    try:
        return float(value or "")
    except ValueError:
        raise Unsupported(f"--{name} {value!r} in its options is not a number") from None


def learned_weight(model, config: TrainConfig) -> float | None:  # noqa: ANN001 - a Model
    """gd's learned weight (``gstate[G_T]``) for a run of ``config`` continuing a VW model:
    VW's ``t`` less the run's ``--initial_t`` (VW's rates take ``t`` as the file has it,
    whichever ``--initial_t`` the run gives), or None for other models."""
    t = model.meta.get("vw_model", {}).get("t")
    if t is None:
        return None
    return max(0.0, float(t) - float(F32(config.initial_t)))


def gd_columns(config: TrainConfig) -> tuple[int, ...]:
    """The table columns of the floats VW keeps per slot for gd with this update rule:
    the weight, the adaptive sum (``--adaptive``), the largest |x| (``--normalized``)."""
    return (0, *((1,) if config.adaptive else ()), *((2,) if config.normalized else ()))


def decode(data: bytes) -> tuple:
    """``(config, learner, slots, state, weights, gstate, stats, meta)`` of the VW model in
    ``data``; ValueError (:class:`Unsupported` included) says what is wrong."""
    from streamlearn.learners import resolve
    from streamlearn.learners.base import (
        G_CLIP,
        G_LABEL_MAX,
        G_LABEL_MIN,
        G_N,
        G_T,
        S_FEATURES,
        S_LABEL_SQ,
        S_LABEL_SUM,
        S_LOSS,
        S_N,
        S_SHOWN_N,
        S_SHOWN_W,
        S_WEX,
        S_WLAB,
        new_stats,
    )  # fmt: skip

    h = vwmodel.read_header(data)
    opts = _options(h)
    resumed = len(data) > h.end and data[h.end] == 1
    learn = dict(opts["learn"])
    if not resumed:
        learn.pop("learning_rate", None)
        learn.pop("power_t", None)
    learn["numbers"] = "vw"  # VW's model: its inputs are read as VW reads them (io/vwfloat.py)
    config = TrainConfig(**learn)
    algo = config.algo
    if algo not in VW_LEARNERS:
        raise Unsupported(f"it is a --{algo} model, which sl does not read in VW's format")
    cols = gd_columns(config) if algo == "gd" else tuple(range(COLUMNS[algo]))
    body = vwmodel.read_body(data, h, len(cols), opts["models"])
    spec = resolve(algo, 0.0, 0.0, 1, config.oaa, config.csoaa, config.multilabel,
                   config.bootstrap, config.autolink, config.bfgs)
    r = body.resume
    if r is None:
        cols = (0,)  # the weights only
    params = config.params()
    gstate = spec.init_gstate(params).astype(np.float64)
    if config.bootstrap and opts.get("random_seed") is not None:
        from streamlearn.learners.bootstrap import set_rng

        set_rng(gstate, config.bootstrap, opts["random_seed"])
    state = np.zeros((body.slots.shape[0], spec.ncols), dtype=spec.dtype)
    for k, c in enumerate(cols):
        state[:, c] = body.values[:, k]
    stats = new_stats()
    gstate[G_CLIP] = 1.0
    gstate[G_LABEL_MIN] = h.min_label
    gstate[G_LABEL_MAX] = h.max_label
    gd_like = algo == "gd"
    if r is not None:
        # VW's t starts at --initial_t: the learned weight as the default t0 counts it (a
        # run counts it from its own t0, learned_weight, as VW's rates do)
        gstate[G_T] = max(0.0, r["t"] - (float(F32(config.initial_t)) if gd_like else 0.0))
        gstate[G_N] = float(r["example_number"])
        gstate[G_LABEL_MIN] = r["min_label"]
        gstate[G_LABEL_MAX] = r["max_label"]
        _normalizer(gstate, spec.name, r)
        stats[S_N] = stats[S_SHOWN_N] = float(r["example_number"])
        stats[S_WLAB] = r["weighted_labeled_examples"]
        stats[S_WEX] = stats[S_SHOWN_W] = stats[S_WLAB] + r["weighted_unlabeled_examples"]
        stats[S_LOSS] = r["sum_loss"]
        stats[S_LABEL_SUM] = r["weighted_labels"]
        # VW keeps no sum of squared labels: the one whose best constant's squared loss is
        # VW's, (max - c)(c - min) for c the mean label (exact for labels -1/+1)
        lo, hi = r["min_label"], r["max_label"]
        stats[S_LABEL_SQ] = r["weighted_labels"] * (hi + lo) - stats[S_WLAB] * hi * lo
        stats[S_FEATURES] = float(r["total_features"])
        if gd_like:
            from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY

            gstate[G_GRAVITY] = r["l1_state"] if "l1_state" in r else 0.0
            gstate[G_CONTRACTION] = r["l2_state"] if "l2_state" in r else 1.0
    if gd_like:
        from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY

        if opts["l1_state"] is not None:  # (VW: an option given overrides the state)
            gstate[G_GRAVITY] = opts["l1_state"]
        if opts["l2_state"] is not None:
            gstate[G_CONTRACTION] = opts["l2_state"]
    weights = np.empty(body.slots.shape[0])
    spec.current_weights(state, gstate, params, np.arange(body.slots.shape[0], dtype=np.uint32),
                         weights)
    unrecorded = [*UNRECORDED, *(() if resumed else NOT_RESUMED)]
    meta = {"vw_model": {"version": h.version, "options": h.options.strip(), "resume": resumed,
                         "unrecorded": unrecorded}}  # fmt: skip
    if opts["link"] is not None:
        meta["vw_model"]["link"] = opts["link"]
    if r is not None and gd_like:
        meta["vw_model"]["t"] = r["t"]
    if body.repeats:
        meta["vw_model"]["repeated_slots"] = body.repeats
    return config, spec.name, body.slots, state, weights, gstate, stats, meta


def _normalizer(gstate: np.ndarray, learner: str, r: dict) -> None:
    """gd's (and coin's) normalizer sums from the resume state: class c's under --oaa."""
    if learner in ("gd", "coin", "autolink_gd"):
        from streamlearn.learners.gd import G_NORM, G_TOTAL

        gstate[G_NORM] = r["norm"][0]
        gstate[G_TOTAL] = r["total_weight"][0]
    elif learner == "freegrad":  # (its sum of weights only: VW keeps no other state of it)
        from streamlearn.learners.freegrad import G_TOTAL

        gstate[G_TOTAL] = r["total_weight"][0]
    elif learner in ("oaa_gd", "csoaa_gd", "multilabel_gd", "bootstrap_gd"):
        from streamlearn.learners.oaa import G_CLASS  # (= bootstrap's G_COPY)

        for c, (n, t) in enumerate(zip(r["norm"], r["total_weight"], strict=True)):
            if G_CLASS + 2 * c + 1 < gstate.shape[0]:
                gstate[G_CLASS + 2 * c] = n
                gstate[G_CLASS + 2 * c + 1] = t


def writable(config: TrainConfig) -> str | None:
    """Why a model of ``config`` cannot be written in VW's format, or None."""
    if config.algo not in VW_LEARNERS:
        return (f"VW has no --algo {config.algo} learner: its model can only be written in "
                "sl's format (sl train -f)")  # fmt: skip
    if config.hash not in ("strings", "all"):
        return f"VW has no --hash {config.hash}"
    return None


def encode(model, weights_only: bool = False, link: str = "identity") -> list:  # noqa: ANN001
    """The VW model file of ``model`` in pieces: VW's resume state (as ``--save_resume``,
    VW 9's default) or, with ``weights_only``, its current weights (``--predict_only_model``)."""
    from streamlearn.learners.base import (
        G_CLIP,
        G_LABEL_MAX,
        G_LABEL_MIN,
        G_T,
        S_FEATURES,
        S_HO_W,
        S_LABEL_SUM,
        S_LOSS,
        S_N,
        S_SINCE_LOSS,
        S_SINCE_W,
        S_WEX,
        S_WLAB,
    )  # fmt: skip
    from streamlearn.learners.losses import LOGISTIC

    config = model.config
    why = writable(config)
    if why is not None:
        raise ValueError(why)
    gstate, stats = model.gstate, model.stats
    if gstate[G_CLIP]:
        lo, hi = float(gstate[G_LABEL_MIN]), float(gstate[G_LABEL_MAX])
    else:
        edge = 50.0 if config.loss_id == LOGISTIC else 0.0
        lo, hi = -edge, edge
    h = vwmodel.Header(id=config.model_id, min_label=lo, max_label=hi, bits=config.bits,
                       options=options_string(config, not weights_only, link,
                                              _rng_state(model)))
    _split_grams(config, h)
    algo = config.algo
    if weights_only:
        keep = model.weights != 0.0
        slots = model.slots[keep]
        values = model.weights[keep].astype(F32).reshape(-1, 1)
        return [vwmodel.encode_header(h), *vwmodel.encode_body(None, slots, values)]
    cols = gd_columns(config) if algo == "gd" else tuple(range(COLUMNS[algo]))
    values = np.ascontiguousarray(model.state[:, list(cols)], dtype=F32)
    gd_like = algo == "gd"
    if gd_like and config.adaptive and config.initial_t > 0:
        # sl keeps a fresh slot's adaptive sum as 0 (read as t0); VW stores t0 itself
        g = values[:, 1]
        g[g == 0.0] = F32(config.initial_t)
    keep = np.any(values != 0.0, axis=1)
    slots, values = model.slots[keep], values[keep]
    t0 = float(F32(config.initial_t)) if gd_like else 0.0
    norm, total = _sums(model)
    gravity, contraction = 0.0, 1.0
    if gd_like:
        from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY

        gravity, contraction = float(gstate[G_GRAVITY]), float(gstate[G_CONTRACTION])
    wlab = float(stats[S_WLAB])
    resume = {
        # VW's t counts held-out examples too (its rates subtract those of the run)
        "initial_t": t0, "norm": norm, "t": t0 + float(gstate[G_T]) + float(stats[S_HO_W]),
        "sum_loss": float(stats[S_LOSS]), "sum_loss_since_last_dump": float(stats[S_SINCE_LOSS]),
        "dump_interval": 1.0, "min_label": lo, "max_label": hi,
        "weighted_labeled_examples": wlab, "weighted_labels": float(stats[S_LABEL_SUM]),
        "weighted_unlabeled_examples": max(0.0, float(stats[S_WEX]) - wlab),
        "example_number": int(stats[S_N]), "total_features": int(stats[S_FEATURES]),
        "total_weight": total, "old_weighted_labeled_examples": wlab - float(stats[S_SINCE_W]),
        "current_pass": 1 if stats[S_N] else 0, "l1_state": gravity, "l2_state": contraction,
    }  # fmt: skip
    return [vwmodel.encode_header(h), *vwmodel.encode_body(resume, slots, values)]


def _sums(model) -> tuple[list[float], list[float]]:  # noqa: ANN001
    """The normalizer sums VW keeps (one model's: class 0's under --oaa)."""
    g = model.gstate
    if model.learner in ("gd", "coin", "autolink_gd"):
        from streamlearn.learners.gd import G_NORM, G_TOTAL

        return [float(g[G_NORM])], [float(g[G_TOTAL])]
    if model.learner in ("oaa_gd", "csoaa_gd", "multilabel_gd", "bootstrap_gd"):
        from streamlearn.learners.oaa import G_CLASS  # (= bootstrap's G_COPY)

        return [float(g[G_CLASS])], [float(g[G_CLASS + 1])]
    if model.learner == "freegrad":
        from streamlearn.learners.freegrad import G_TOTAL

        return [0.0], [float(g[G_TOTAL])]
    return [0.0], [0.0]


def _split_grams(config: TrainConfig, h: vwmodel.Header) -> None:
    """n-grams and skips go in VW's header, 3 bytes each (``2``, ``a2``, ``a10``)."""
    for attr in ("ngram", "skips"):
        values = getattr(config, attr)
        for v in values:
            if len(v.encode("latin-1", "replace")) > 3:
                raise ValueError(f"VW's header holds --{attr} values of 3 bytes at most: {v!r}")
        setattr(h, attr, tuple(values))


def _rng_state(model) -> int | None:  # noqa: ANN001
    """VW's generator's state (kept as ``--random_seed``): a ``--bootstrap`` model's."""
    if model.learner != "bootstrap_gd":
        return None
    from streamlearn.learners.bootstrap import get_rng

    return get_rng(model.gstate, model.config.bootstrap)


def options_string(config: TrainConfig, resume: bool = True, link: str | None = None,
                   random_seed: int | None = None) -> str:  # fmt: skip
    """The options VW keeps with a model of ``config`` (as VW writes them: long names,
    each with its value); ``random_seed``: the state of VW's generator, which VW keeps
    when a reduction draws from it (``--bootstrap``)."""
    words: list[str] = []
    if config.oaa:
        kind = "csoaa" if config.csoaa else "multilabel_oaa" if config.multilabel else "oaa"
        words += [f"--{kind}", str(config.oaa)]
        if config.indexing is not None:
            words += ["--indexing", str(config.indexing)]
    if config.bootstrap:
        words += ["--bootstrap", str(config.bootstrap)]
        if config.bs_type != "mean":  # (VW keeps it when it was given)
            words += ["--bs_type", config.bs_type]
    if config.autolink:
        words += ["--autolink", str(config.autolink)]
    if config.bfgs >= 0:
        words.append("--bfgs")
    if random_seed is not None:
        words += ["--random_seed", str(random_seed)]
    if config.named_labels:
        words += ["--named_labels", config.named_labels]
    for name in ("quadratic", "cubic", "interactions"):
        for v in getattr(config, name):
            words += [f"--{name}", v]
    for name in ("ignore", "ignore_linear", "keep"):
        chars = "".join(sorted(set("".join(getattr(config, name)))))
        if chars:
            words += [f"--{name}", chars]
    if not config.constant:
        words.append("--noconstant")
    if config.hash == "all":
        words += ["--hash", "all"]
    if config.hash_seed:
        words += ["--hash_seed", str(config.hash_seed)]
    if config.binary:
        words.append("--binary")
    if link not in (None, "identity"):
        words += ["--link", link]
    if config.algo in ("ftrl", "coin", "pistol", "freegrad"):
        words.append(f"--{config.algo}")
    elif resume:
        rules = [r for r in UPDATE_RULE if getattr(config, r)]
        if len(rules) < len(UPDATE_RULE):
            words += [f"--{r}" for r in rules] or ["--sgd"]
        # as VW: the rates only when they are not the defaults (0.5, or 10 for the rules
        # other than adaptive and normalized together)
        default = 0.5 if config.adaptive and config.normalized else 10.0
        if F32(config.learning_rate) != F32(default):
            words += ["--learning_rate", repr(float(F32(config.learning_rate)))]
        if F32(config.power_t) != F32(0.5):
            words += ["--power_t", repr(float(F32(config.power_t)))]
    from streamlearn.learners.initial import random_state

    state = (random_state(config.initial_weights, config.bits, config.seed)
             if config.algo == "gd" else config.seed)  # fmt: skip
    if state:  # VW keeps its random state last (advanced by --random_weights)
        words += ["--random_seed", str(state)]
    return (" " + " ".join(words)) if words else ""
