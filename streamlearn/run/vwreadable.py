"""``--readable_model`` and ``--invert_hash`` in Vowpal Wabbit 9's layout (``sl vw``).

VW writes its model file's text twin: a header (``Version``, ``Id``, ``Min label``,
``Max label``, ``bits``, ``lda``, the n-grams and skips, the options it keeps, and a
``Checksum``: murmur3 chained over each piece of text written after the version line),
then ``:1`` and its resume state (``initial_t``, the normalizer sums, the counters of
the run, one line each; then ``slot:w`` and the learner's per-slot state, VW's
default since 9.0), or with ``--predict_only_model`` ``:0`` and ``slot:w`` lines.
``--invert_hash`` puts each slot's name before it (``ns^a*ns^b`` for a cross,
``[c]`` after the name of class c > 0 under ``--oaa``, VW's first name seen).
Every number is written as C++ streams write it (six significant digits).

What sl cannot know exactly is approximated and documented in ``docs/vw-compat.md``:
an option counts as given when it is not VW's default (``--power_t 0.5`` given
explicitly is not listed, as VW would).
"""

from __future__ import annotations

import numpy as np

from streamlearn.hashing import murmur3_32
from streamlearn.io.vwmodel import vw_order
from streamlearn.learners.initial import random_state
from streamlearn.learners.stacked import BFGS, kept, kept_stack, without_gd

VW_VERSION = "9.11.9"
"""The VW version whose layout this is (``vowpalwabbit`` 9.11.9 wrote the references)."""

F32 = np.float32


def _g(v: float) -> str:
    """A double as ``std::ostream`` writes it (``%g``)."""
    v = float(v)
    if v != v:  # (a stream writes the sign of a NaN too)
        return "-nan" if np.signbit(v) else "nan"
    return f"{v:g}" if np.isfinite(v) else ("inf" if v > 0 else "-inf")


def float_text(v: float) -> str:
    """A float (float32) as ``std::ostream`` writes it."""
    return _g(float(F32(v)))


def _f15(v: float) -> str:
    """A float option's value as VW's option serializer writes it (the float, 15 digits)."""
    return f"{float(F32(v)):.15g}"


def kept_options(config, link: str = "identity", gstate: np.ndarray | None = None,
                 resume: bool = True) -> str:  # fmt: skip
    """VW's ``options:`` text: the options VW keeps in a model, by name, then the
    namespace filters merged (each character once, sorted); ``gstate``: the model's global
    state (where a reduction keeps VW's generator); without ``resume`` (VW's
    ``--predict_only_model``) gd's update rule and rates are not kept, as VW's."""
    c = config
    opts: list[tuple[str, str | None]] = []
    rules = [r for r in ("adaptive", "normalized", "invariant") if getattr(c, r)]
    plain = without_gd(c.stack) or not resume  # (--svrg, --OjaNewton: none of gd's rules)
    if c.algo == "gd" and len(rules) < 3 and not plain:  # VW: naming any turns the others off
        opts += [(r, None) for r in rules] or [("sgd", None)]
    if c.algo in ("ftrl", "coin", "pistol", "freegrad"):
        opts.append((c.algo, None))
    if c.binary:
        opts.append(("binary", None))
    if c.hash != "strings":
        opts.append(("hash", c.hash))
    if c.hash_seed:
        opts.append(("hash_seed", str(c.hash_seed)))
    opts += c.classes_options()  # (--oaa K, --indexing; --ect K, --error E)
    opts += [(name[2:], value) for name, value in kept_stack(c.stack)]  # (reductions' words)
    if link != "identity":
        opts.append(("link", link))
    if not c.constant:
        opts.append(("noconstant", None))
    # VW keeps a rate that was given (sl: not the default), not L-BFGS's
    if c.algo == "gd" and not plain and not any(w in c.stack for w in BFGS):
        if float(F32(c.learning_rate)) != float(F32(c.default_learning_rate)):
            opts.append(("learning_rate", _f15(c.learning_rate)))
    if float(F32(c.power_t)) != float(F32(0.5)) and resume:
        opts.append(("power_t", _f15(c.power_t)))
    if c.affix:
        opts.append(("affix", c.affix))
    opts += [("quadratic", v) for v in c.quadratic]
    opts += [("cubic", v) for v in c.cubic]
    opts += [("interactions", v) for v in c.interactions]
    opts += [("redefine", v) for v in c.redefine]
    opts += [("spelling", v) for v in c.spelling]
    for name in ("ignore", "ignore_linear", "keep"):
        chars = sorted(set("".join(getattr(c, name))), key=lambda ch: ch.encode("latin-1"))
        if chars:
            opts.append((name, "".join(chars)))
    state = random_state(c.initial_weights, c.bits, c.seed) if c.algo == "gd" else c.seed
    stacked = kept(c.stack, c.bits)
    if stacked is not None and gstate is not None:  # (advanced by the reduction's draws)
        state = stacked.rng(gstate)
    if state:
        opts.append(("random_seed", str(state)))
    # VW's order: by name, then the namespace filters, then its random state
    return vw_order(" ".join(f"--{n}" + (f" {v}" if v is not None else "") for n, v in opts))


class _Text:
    """Pieces of text, and VW's checksum over them (each non-empty piece hashed with the
    previous hash as seed, from the piece after the version line)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.hash = 0
        self.hashing = False

    def add(self, text: str) -> None:
        self.parts.append(text)
        if self.hashing and text:
            b = np.frombuffer(text.encode("utf-8", "surrogateescape"), dtype=np.uint8)
            self.hash = int(murmur3_32(b, 0, b.shape[0], self.hash))


def header(model, link: str = "identity", resume: bool = True) -> _Text:
    """The header's pieces, through ``Checksum``."""
    c = model.config
    lo, hi = _label_range(model)
    return header_of("", lo, hi, c.bits, c.ngram, c.skips,
                     kept_options(c, link, model.gstate, resume))  # fmt: skip


def header_of(model_id: str, lo: float, hi: float, bits: int, ngram, skips,
              options: str, lda: int = 0) -> _Text:  # noqa: ANN001  # fmt: skip
    """The header's pieces, through ``Checksum``, of any model (``options``: the text VW
    keeps, as its binary header holds it: :func:`kept_options`, or
    :func:`streamlearn.run.mlmodel.options_string` for the multiline reductions; ``lda``:
    an ``--lda`` model's topics)."""
    t = _Text()
    t.add(f"Version {VW_VERSION}\n")
    t.hashing = True
    t.add(f"Id {model_id}\n")
    t.add(f"Min label:{float_text(lo + 0.0)}\n")  # (sl's kernels start the range at -0; VW at +0)
    t.add(f"Max label:{float_text(hi + 0.0)}\n")
    t.add(f"bits:{bits}\n")
    t.add(f"lda:{lda}\n")
    for name, values in (("ngram", ngram), ("skip", skips)):
        t.add(f"{len(values)} {name}:")
        for v in values:
            t.add(f"{v} ")
        t.add("\n")
    t.add(f"options:{options}\n")
    t.hashing = False
    t.add(f"Checksum: {t.hash}\n")
    return t


def resume_text(r: dict) -> list[str]:
    """gd's resume state as VW's text (``save_load_online_state``), from the fields VW's
    binary model holds (:func:`streamlearn.io.vwmodel.encode_body`'s ``resume``)."""
    return [
        f"initial_t {float_text(r['initial_t'])}\n",
        f"norm normalizer {_g(r['norm'][0])}\n",
        f"t {_g(r['t'])}\n",
        f"sum_loss {_g(r['sum_loss'])}\n",
        f"sum_loss_since_last_dump {_g(r['sum_loss_since_last_dump'])}\n",
        f"dump_interval {float_text(r['dump_interval'])}\n",
        f"min_label {float_text(r['min_label'] + 0.0)}\n",
        f"max_label {float_text(r['max_label'] + 0.0)}\n",
        f"weighted_labeled_examples {_g(r['weighted_labeled_examples'])}\n",
        f"weighted_labels {_g(r['weighted_labels'])}\n",
        f"weighted_unlabeled_examples {_g(r['weighted_unlabeled_examples'])}\n",
        f"example_number {int(r['example_number'])}\n",
        f"total_features {int(r['total_features'])}\n",
        f"total_weight {_g(r['total_weight'][0])}\n",
        f"sd::oec.weighted_labeled_examples {_g(r['old_weighted_labeled_examples'])}\n",
        f"current_pass {int(r['current_pass'])}\n",
        f"l1_state {_g(r['l1_state'])}\n",
        f"l2_state {_g(r['l2_state'])}\n",
    ]


def slot_lines(t: _Text, slots: np.ndarray, rows: np.ndarray, resume: bool,
               names: dict | None = None) -> None:  # fmt: skip
    """Add VW's ``slot:values`` lines (``names``: slot -> VW's invert-hash name, or None for
    ``--readable_model``) of the stored ``slots`` (ascending) and their float32 ``rows``."""
    for slot, row in zip(slots.tolist(), rows.tolist(), strict=True):
        if not any(v != 0.0 for v in row[: len(row) if resume else 1]):
            continue
        name = names.get(slot) if names is not None else None
        values = " ".join(float_text(v) for v in row)
        if names is not None and not resume:
            t.add(f"{name or ''}:{slot}:{values}\n")
        elif name is not None:
            t.add(f"{name}:{slot}:{values}\n")
        else:
            t.add(f"{slot}:{values}\n")


def _label_range(model) -> tuple[float, float]:
    """VW's ``min_label``/``max_label``: the prediction range as the run left it."""
    from streamlearn.learners.base import G_CLIP, G_LABEL_MAX, G_LABEL_MIN, P_CLIP_HI, P_CLIP_LO

    c = model.config
    if c.min_prediction is not None or c.max_prediction is not None:
        params = c.params()
        return float(params[P_CLIP_LO]), float(params[P_CLIP_HI])
    g = model.gstate
    if g.shape[0] > G_CLIP and g[G_CLIP] != 0.0:
        return float(g[G_LABEL_MIN]), float(g[G_LABEL_MAX])
    edge = 50.0 if c.loss in ("logistic", "poisson") else 0.0
    return -edge, edge


def _state_columns(model) -> list[int]:
    """Which of the model's state columns VW writes after the weight, in VW's order."""
    c = model.config
    ncols = model.state.shape[1] if model.state.ndim == 2 else 1
    if c.algo == "gd":
        cols = [0]
        if c.adaptive:
            cols.append(1)
        if c.normalized:
            cols.append(2)
        return [k for k in cols if k < ncols]
    return list(range(ncols))


def _resume_lines(model, passes: int, quiet: bool = False, held: int = 0,
                  counted: np.ndarray | None = None) -> list[str]:  # fmt: skip
    """gd's resume state, one ``name value`` line each (VW's ``save_load_online_state``).
    ``counted``: a continued model's counters, which VW does not carry into this run's
    (``t`` and the normalizer sums it does carry)."""
    from streamlearn.learners import base as B

    c = model.config
    lifetime = model.stats
    s = lifetime.copy()
    if counted is not None:
        s[B.LIFETIME_STATS] -= counted[B.LIFETIME_STATS]
    g = model.gstate
    lo, hi = _label_range(model)
    norm = total = 0.0
    gravity, contraction = 0.0, 1.0
    if c.algo == "gd":
        from streamlearn.learners import gd

        stacked = kept(c.stack, c.bits)
        if c.oaa:  # (class 0's)
            from streamlearn.learners.oaa import G_CLASS

            norm, total = g[G_CLASS], g[G_CLASS + 1]
        elif stacked is not None and stacked.sums_at is not None:  # (--bootstrap: copy 0's)
            norm, total = g[stacked.sums_at], g[stacked.sums_at + 1]
        else:
            norm, total = g[gd.G_NORM], g[gd.G_TOTAL]
        gravity, contraction = g[gd.G_GRAVITY], g[gd.G_CONTRACTION]
        if not (c.adaptive or c.normalized) and c.initial_t == 1.0:
            norm, total = norm - 1.0, total - 1.0  # sl starts them at its t0 = 1; VW at 0
    elif c.algo == "coin":
        from streamlearn.learners import coin

        norm, total = g[coin.G_NORM], g[coin.G_TOTAL]
    elif c.algo == "freegrad":
        from streamlearn.learners import freegrad

        total = g[freegrad.G_TOTAL]
    initial_t = start_t(c)
    unlabeled = max(0.0, s[B.S_WEX] - s[B.S_WLAB] - s[B.S_HO_W])
    since, dump, at_dump = s[B.S_SINCE_LOSS], s[B.S_NEXT_DUMP], s[B.S_WLAB] - s[B.S_SINCE_W]
    if quiet:  # VW's table never printed: its counters stay where they started
        since, dump, at_dump = s[B.S_LOSS], 1.0, 0.0
    return [
        f"initial_t {float_text(initial_t)}\n",
        f"norm normalizer {_g(norm)}\n",
        f"t {_g(float(F32(initial_t)) + lifetime[B.S_WEX])}\n",
        f"sum_loss {_g(s[B.S_LOSS])}\n",
        f"sum_loss_since_last_dump {_g(since)}\n",
        f"dump_interval {float_text(dump)}\n",
        f"min_label {float_text(lo + 0.0)}\n",
        f"max_label {float_text(hi + 0.0)}\n",
        f"weighted_labeled_examples {_g(s[B.S_WLAB])}\n",
        f"weighted_labels {_g(s[B.S_LABEL_SUM])}\n",
        f"weighted_unlabeled_examples {_g(unlabeled)}\n",
        f"example_number {int(s[B.S_SHOWN_N])}\n",
        f"total_features {int(s[B.S_FEATURES]) - held}\n",
        f"total_weight {_g(total)}\n",
        f"sd::oec.weighted_labeled_examples {_g(at_dump)}\n",
        f"current_pass {passes}\n",
        f"l1_state {_g(gravity)}\n",
        f"l2_state {_g(contraction)}\n",
    ]


def start_t(c) -> float:
    """VW's ``initial_t``: as given, else 0, or 1 for gd without adaptive and normalized
    (sl's configuration holds 1 for every learner but VW's default gd: read as not given)."""
    t0 = c.initial_t if c.initial_t is not None else 0.0
    if c.algo != "gd" and t0 == 1.0:
        return 0.0
    return t0


def _name(model, slot: int, rank: dict[int, int]) -> str | None:
    """VW's invert-hash name of ``slot``: the first name seen, ``[c]`` for class c > 0
    (under ``--oaa`` several feature slots share a table slot: the one seen first, by
    ``rank``, the order in which the names were met)."""
    c = model.config
    if c.oaa:
        from streamlearn.io.names import class_slots

        feature_slots, cls = class_slots(slot, c.bits, c.class_problems)
        seen = [h for h in feature_slots if model.names.get(h)]
        if not seen:
            return None
        h = min(seen, key=lambda x: rank.get(x, len(rank)))
        return model.names[h][0] + (f"[{cls}]" if cls else "")
    names = model.names.get(slot)
    return names[0] if names else None


def readable_text(model, with_names: bool, resume: bool = True, link: str = "identity",
                  passes: int = 1, quiet: bool = False, held: int = 0,
                  counted: np.ndarray | None = None) -> bytes:  # fmt: skip
    """The whole file, as VW writes it for ``model``.  ``passes``: the passes run;
    ``quiet``: VW's table was off; ``held``: the features of held-out examples (VW's
    total feature number leaves them out); ``counted``: see :func:`_resume_lines`."""
    t = header(model, link, resume)
    stacked = kept(model.config.stack, model.config.bits)
    if stacked is not None:  # the reduction's state, before gd's (VW's save_load order)
        for line in stacked.lines(model.gstate, float_text):
            t.add(line)
    t.add(f":{1 if resume else 0}\n")
    if resume:
        for line in _resume_lines(model, passes, quiet, held, counted):
            t.add(line)
    order = np.argsort(model.slots, kind="stable")
    slots = model.slots[order]
    if resume:  # the weights as stored (before l1's truncation and l2's contraction,
        # which VW writes on their own lines)
        stored = model.state[order, 0] if model.state.ndim == 2 else model.weights[order]
    else:  # VW settles them first
        stored = model.weights[order]
    cols = _state_columns(model) if resume else [0]
    rows = np.zeros((slots.shape[0], len(cols)), dtype=F32)
    rows[:, 0] = stored
    if len(cols) > 1:
        rows[:, 1:] = model.state[order][:, cols[1:]]
    t0 = start_t(model.config)
    if resume and model.config.algo == "gd" and model.config.adaptive and t0 > 0.0:
        # VW starts every slot's adaptive sum at initial_t, and writes every slot so
        every = np.zeros((1 << model.config.bits, len(cols)), dtype=F32)
        every[:, 1] = F32(t0)
        every[slots] = rows
        slots, rows = np.arange(every.shape[0]), every
    rank = {h: k for k, h in enumerate(model.names)} if with_names else {}

    class _Names:  # each stored slot's name, asked for the non-zero ones only
        def get(self, slot: int) -> str | None:
            return _name(model, slot, rank)

    slot_lines(t, slots, rows, resume, _Names() if with_names else None)
    return "".join(t.parts).encode("utf-8", "surrogateescape")


def write_readable(path: str, model, with_names: bool, resume: bool = True,
                   link: str = "identity", passes: int = 1, quiet: bool = False,
                   held: int = 0, counted: np.ndarray | None = None) -> None:  # fmt: skip
    """Write :func:`readable_text` to ``path`` (atomically, with the run's other outputs)."""
    from streamlearn.system.outputs import write_bytes

    what = "invert-hash model" if with_names else "readable model"
    write_bytes(path, readable_text(model, with_names, resume, link, passes, quiet, held, counted),
                what)
