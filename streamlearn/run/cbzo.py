"""``sl vw --cbzo``: one run of VW's continuous-action bandit by zeroth-order optimization
(``reductions/cbzo.cc``), its own loop as ``--lda``'s: each block parsed with its
continuous-action labels (:mod:`streamlearn.io.calabels`), its rows predicted and learned
by the kernel (:mod:`streamlearn.learners.cbzo`), counted and printed as VW's
``update_stats_cbzo`` and ``print_update_cbzo`` do.

VW's bookkeeping, kept for its numbers (``docs/vw-compat.md``):

* an example is *test only* when held out or when its label is a test label (no action,
  no cost, a density of 0): it is predicted, not learned;
* the loss is the logged cost; a labeled test-only example (an action given) counts as
  held out (its cost in the holdout sums, not in the examples), an unlabeled one as an
  example of no loss; the weighted label sum counts every example (weight 1 each);
* the progress row's label is ``{action,cost,pdf_value}`` (``unknown`` for a test-only
  example), its prediction the density with two decimals; ``-p`` writes it with nine;
* no end of pass: no holdout summary (VW's best holdout loss stays 0), no rate decay.

Models: VW's format both ways (``-f``, ``-i``, ``--readable_model``, ``--invert_hash``):
after VW's header (the label range the run left), a record per non-zero weight (u32 slot,
f32 weight), no resume state; ``--predict_only_model`` only changes the options kept.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streamlearn.errors import ModelError, NoExamples

F32 = np.float32
LABEL_CA = 3
"""The parse options' label kind of ``--cbzo`` runs: the parse kernel leaves the label part
to :func:`streamlearn.io.calabels.read_ca_labels` (any kind but 0 does)."""


class State:
    """A run's table (a float32 per slot), label range and kernel options."""

    def __init__(self, ml, cfg, table: np.ndarray | None, label_range: tuple | None) -> None:  # noqa: ANN001
        from streamlearn.learners import cbzo
        from streamlearn.reductions.cbzo import policy, radius

        self.bits = cfg.bits
        if table is None:
            from streamlearn.system.memory import refuse_above

            refuse_above(4 << cfg.bits, f"--cbzo's table of -b {cfg.bits}", "lower -b")
            table = np.zeros(1 << cfg.bits, dtype=F32)
        self.table = table
        self.state = np.zeros(cbzo.STATE_SIZE)
        if label_range is not None:
            self.state[:] = label_range
        lo_fixed, hi_fixed = cfg.min_prediction is not None, cfg.max_prediction is not None
        if lo_fixed:
            self.state[cbzo.S_MIN] = float(F32(cfg.min_prediction))
        if hi_fixed:
            self.state[cbzo.S_MAX] = float(F32(cfg.max_prediction))
        self.policy = policy(ml)
        self.radius, self.raised = radius(ml)
        self.no_bias = bool(ml.no_bias)
        self.conf = cbzo.conf(self.policy, cfg.learning_rate, cfg.l1, cfg.l2, self.no_bias,
                              lo_fixed, hi_fixed, cfg.bits)  # fmt: skip

    def run(self, b, rows: np.ndarray, learn: np.ndarray, lab, const_at: np.ndarray) -> np.ndarray:  # noqa: ANN001
        """The kernel over the usable ``rows`` of batch ``b`` (``const_at``: each row's entry
        of the constant feature): each row's clamped centroid."""
        from streamlearn.learners import cbzo

        out = np.zeros(rows.shape[0], dtype=F32)
        cbzo.train_examples(self.table, self.conf, self.state, b.indptr, b.indices, b.values,
                            rows, const_at, lab.action, lab.cost, learn, out)  # fmt: skip
        return out


def _fmt(x: float, places: int) -> str:
    """VW's ``fmt_float`` of a float32: ``places`` decimals, trailing zeros and point cut;
    ``nan``/``-nan`` and ``inf``/``-inf`` as its ``fmt`` writes them."""
    from streamlearn.reductions.text import fmt_float

    if x != x:
        return "-nan" if np.signbit(x) else "nan"
    return fmt_float(x, places)


def _pdf_text(cols: tuple, e: int, places: int) -> str:
    """VW's text of the density of example ``e`` (:func:`streamlearn.learners.cbzo.density`'s
    columns): ``left-right:pdf_value`` of each spike, ``places`` decimals."""
    l1, r1, p1, l2, r2, p2 = (_fmt(c[e], places) for c in cols)
    return f"{l1}-{r1}:{p1},{l2}-{r2}:{p2}"


def run(learn: dict, ml, inputs, outputs, console) -> dict:  # noqa: ANN001
    """Train (or with ``-t`` score) ``--cbzo`` over ``inputs.sources``; the summary."""
    from streamlearn.reductions.options import config_of
    from streamlearn.run import mlconsole
    from streamlearn.run.mlpasses import sources_of
    from streamlearn.run.mlsummary import summary_lines, write_text
    from streamlearn.run.vwconsole import vw_log
    from streamlearn.system.outputs import staging, write_bytes
    from streamlearn.system.process import committing

    table, label_range = None, None
    if inputs.initial_model:  # (its -b, unless the command line gives one: then the same)
        table, bits, label_range = read_model(inputs.initial_model, learn.get("bits"))
        learn = {**learn, "bits": bits}
    cfg = config_of(learn)
    st = State(ml, cfg, table, label_range)
    quiet = getattr(outputs, "vw_quiet", False)
    say = console.say if not quiet else (lambda *a: None)
    npasses = max(1, cfg.passes)
    holdout_on = bool(cfg.effective_holdout or cfg.holdout_after) and npasses > 1
    sources, cache = sources_of(inputs, say, None)
    step = getattr(console, "progress", 0.0)
    if getattr(outputs, "vw_format", False) and not quiet:
        progress = mlconsole.vw_header(ml, cfg, inputs, outputs, say, step=step)
    else:  # (VW's counters, for the summary)
        progress = mlconsole.Progress(say, holdout_on, quiet=quiet, step=step)
    progress.holdout_on = holdout_on  # (--holdout_after's too)
    if st.raised and not quiet:  # (VW's logger: standard output, after its notes)
        vw_log(f"[warning] --radius {shortest(ml.cbzo_radius)} is below minimum 0.001. "
               "Clamping to 0.001 for numerical stability.\n")  # fmt: skip
    loop = _Loop(st, cfg, progress, cfg.effective_holdout if npasses > 1 else 0,
                 bool(outputs.predictions), bool(getattr(outputs, "invert_hash", None)),
                 inputs.strict, say)  # fmt: skip
    kept: list | None = [] if npasses > 1 and cache.path is None and not cache.sealed else None
    again = None
    try:
        for npass in range(npasses):
            loop.seen = 0
            if npass == 0:
                for b in example_blocks(sources, cfg, inputs, cache.tee):
                    loop.feed(b, npass)
                    if kept is not None:  # (no cache: later passes replay the parsed blocks)
                        kept.append(b)
                again = cache.seal() if npasses > 1 else None
            else:
                for b in kept if kept is not None else example_blocks(again, cfg, inputs, None):
                    loop.feed(b, npass)
    except BaseException:
        cache.drop()
        raise
    finally:
        cache.seal()
        cache.release()
    if not loop.read and not inputs.allow_empty:
        raise NoExamples("no usable example in the input (nothing written)")
    p = progress
    summary = {"examples": p.example_number, "per_pass": p.example_number // npasses,
               "passes": npasses, "best_holdout": 0.0 if holdout_on else None,
               "loss": p.sum_loss / p.wlab if p.wlab else None, "malformed": loop.malformed,
               "weighted_labels": float(loop.read)}  # fmt: skip
    with staging() as stage:  # every output written in full before any is visible
        if outputs.final_model and not np.isfinite(st.table).all():
            from streamlearn.errors import Diverged

            raise Diverged("--cbzo: the weights are not finite (nothing written): lower -l")
        if outputs.predictions:
            write_text(outputs.predictions, "".join(loop.preds))
        from streamlearn.learners import cb_adf

        summary_lines(say, summary, np.zeros(cb_adf.STATS), holdout_on, progress)
        resume = getattr(outputs, "model_format", "vw") != "vw_predict_only"
        options = kept_options(ml, learn, cfg, resume)
        for path, names in ((getattr(outputs, "readable_model", None), None),
                            (getattr(outputs, "invert_hash", None), loop.names)):  # fmt: skip
            if path:
                what = "invert-hash model" if names is not None else "readable model"
                write_bytes(path, readable(st, cfg, options, names).encode("utf-8",
                                                                          "surrogateescape"),
                            what)  # fmt: skip
        if outputs.final_model:
            write_bytes(str(outputs.final_model), [model_bytes(st, cfg, options)], "model")
        stage.write()
        with committing():
            stage.commit()  # the model last: a failure before leaves the old one
    return summary


def shortest(x: float | None) -> str:
    """A float32 as VW's ``fmt`` writes it (``{}``: its shortest digits, in scientific
    notation below 1e-4 and from 1e16).

    >>> shortest(0.0001), shortest(1e-05), shortest(-1.0), shortest(-1e20)
    ('0.0001', '1e-05', '-1', '-1e+20')
    """
    v = F32(0.1 if x is None else x)
    if v != 0 and (abs(v) < F32(1e-4) or abs(v) >= F32(1e16)):
        return np.format_float_scientific(v, unique=True, trim="-")
    return np.format_float_positional(v, unique=True, trim="-")


def example_blocks(sources, cfg, inputs, tee):  # noqa: ANN001, ANN202
    """Each block of ``sources`` parsed (VW's text format, the label part left to the
    continuous-action reader: :func:`_parsed`), on a thread of its own a few blocks ahead
    of the learning."""
    from streamlearn.io.example_cache import tee as tee_blocks
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.reader import iter_blocks
    from streamlearn.run.runner import prefetch

    inter = dataclasses.replace(cfg.namespaces() or compile_interactions(), f32=True,
                                vw_numbers=True, label_kind=LABEL_CA)  # fmt: skip
    blocks = iter_blocks(sources or ["-"], inputs.block_size, inputs.max_line_bytes,
                         inputs.flat_text(cfg, sources))  # fmt: skip
    if tee is not None:
        blocks = tee_blocks(blocks, tee)
    return prefetch(_parsed(block, cfg, inter) for block in blocks)


def _parsed(block, cfg, inter):  # noqa: ANN001, ANN202
    """A block parsed: (the batch, its labels, each row's features as VW counts them, each
    row's entry of the constant feature or -1).  VW counts an example's own features (the
    constant's too) but not its crosses, which the batch appends after them: with
    interactions the block is parsed a second time without them for those counts."""
    from streamlearn.io.calabels import read_ca_labels
    from streamlearn.io.parse import FMT_VW, parse_block

    b = parse_block(block, FMT_VW, cfg.bits, cfg.constant, inter)
    lab = read_ca_labels(b, vw_numbers=True)
    own = b
    if inter.terms.shape[0]:
        linear = dataclasses.replace(inter, terms=inter.terms[:0], lengths=inter.lengths[:0])
        own = parse_block(block, FMT_VW, cfg.bits, cfg.constant, linear)
    feats = np.diff(own.indptr)
    const_at = np.full(b.n, -1, dtype=np.int64)
    if own.ns is not None:
        at = np.flatnonzero(own.ns == 128)
        row = np.searchsorted(own.indptr, at, side="right") - 1
        const_at[row] = at - own.indptr[row]
    return b, lab, feats, const_at


class _Loop:
    """VW's loop over the parsed blocks of a run: each example predicted, learned unless
    test only, counted and printed (``update_stats_cbzo``, ``print_update_cbzo``)."""

    def __init__(self, st: State, cfg, progress, period: int, preds: bool, names: bool,
                 strict: bool, say) -> None:  # noqa: ANN001  # fmt: skip
        self.st = st
        self.cfg = cfg
        self.training = not cfg.test_only
        self.progress = progress
        self.period = period  # (every period-th example of a pass held out; 0: none)
        self.after = int(cfg.holdout_after or 0)
        self.want_preds = preds
        self.preds: list[str] = []
        self.names: dict[int, str] | None = {} if names else None
        self.strict = strict
        self.say = say
        self.malformed = 0
        self.seen = 0  # examples of this pass
        self.read = 0  # examples of every pass (VW's weighted label sum)

    def feed(self, parsed, npass: int) -> None:  # noqa: ANN001
        from streamlearn.learners.cbzo import density
        from streamlearn.run.mlpasses import report_block

        b, lab, own, const_at = parsed
        if npass == 0:
            self.malformed = report_block(b, self.malformed, self.strict, self.say)
        rows = np.flatnonzero(b.status == 0)
        m = rows.shape[0]
        held = self._held(b, rows)
        if not m:
            return
        test = lab.test[rows] | held
        learn = ~test & self.training
        centroid = self.st.run(b, rows, learn, lab, const_at)
        self.read += m
        if self.names is not None and npass == 0:
            self._name(b, rows)
        cols = density(centroid, self.st.radius)
        labeled = lab.labeled[rows]
        loss = np.where(lab.given[rows], lab.cost[rows], 0.0)
        feats = own[rows]

        def label_of(e: int) -> str:
            from streamlearn.reductions.text import fmt_float

            if test[e]:
                return "unknown"
            r = rows[e]
            return (f"{{{fmt_float(lab.action[r], 6)},{fmt_float(lab.cost[r], 6)},"
                    f"{fmt_float(lab.pdf[r], 6)}}}")  # fmt: skip

        self.progress.batch(npass, labeled, test, loss, feats, feats, label_of,
                            lambda e: _pdf_text(cols, e, 2))  # fmt: skip
        if self.want_preds:
            data = b.block.data
            for e in range(m):
                r = rows[e]
                tag = data[b.tag_start[r] : b.tag_end[r]].tobytes()
                t = (" " + tag.decode("utf-8", "surrogateescape")) if tag else ""
                self.preds.append(_pdf_text(cols, e, 9) + t + "\n")

    def _held(self, b, rows: np.ndarray) -> np.ndarray:  # noqa: ANN001
        """The held-out examples among ``rows`` of batch ``b`` (VW's holdout, several passes
        only): every ``period``-th line of the pass, or those after ``--holdout_after``.  VW
        counts the pass's lines as it parses them, blank ones (which it then drops) too."""
        block = b.block
        data = block.data
        lines = block.newlines if block.newlines >= 0 else int(np.count_nonzero(data == 10))
        if data.shape[0] and data[-1] != 10:
            lines += 1
        seen = self.seen + (b.line[rows] - block.first_line + 1)
        self.seen += lines
        if self.period:
            return seen % self.period == 0
        if self.after and self.cfg.passes > 1:
            return seen > self.after
        return np.zeros(rows.shape[0], dtype=np.bool_)

    def _name(self, b, rows: np.ndarray) -> None:  # noqa: ANN001
        """``--invert_hash``: the first name met at each slot (VW's audit of each example)."""
        from streamlearn.hashing import CONSTANT_HASH
        from streamlearn.io.names import crossed_names, line_names, with_grams

        cfg = self.cfg
        inter = cfg.namespaces()
        mask = (1 << cfg.bits) - 1
        data = b.block.data
        assert self.names is not None
        for r in rows.tolist():
            s = int(b.line_start[r])
            end = s
            n = data.shape[0]
            while end < n and data[end] != 10:
                end += 1
            line = data[s:end].tobytes().rstrip(b"\r")
            feats = with_grams(line_names(line, 32, inter), inter, cfg.bits)
            named = [(slot, name) for slot, name, nsb in feats if inter is None
                     or not (inter.drop[nsb] or inter.drop_linear[nsb])]  # fmt: skip
            if cfg.constant:
                named.append((CONSTANT_HASH, "Constant"))
            if inter is not None and inter.terms.shape[0]:
                named += crossed_names(feats, inter, cfg.bits)
            for slot, name in named:
                self.names.setdefault(int(slot) & mask, name)


# ---------------------------------------------------------------------- VW's model files


def _f15(v: float) -> str:
    return f"{float(F32(v)):.15g}"


def kept_options(ml, learn: dict, cfg, resume: bool) -> str:  # noqa: ANN001
    """VW's ``options:`` text of a ``--cbzo`` model: ``--cbzo``, a given ``--policy``, the
    feature options given, and (``resume``: not ``--predict_only_model``) a given rate,
    power and radius; VW's order (by name, the namespace filters, the generator last)."""
    from streamlearn.io.vwmodel import vw_order
    from streamlearn.reductions.cbzo import vw_words

    words = vw_words(ml)
    if resume:
        for key, name in (("learning_rate", "learning_rate"), ("power_t", "power_t")):
            if learn.get(key) is not None:
                words += [f"--{name}", _f15(learn[key])]
        if ml.cbzo_radius is not None:
            words += ["--radius", _f15(ml.cbzo_radius)]
    if cfg.hash != "strings":
        words += ["--hash", cfg.hash]
    if cfg.hash_seed:
        words += ["--hash_seed", str(cfg.hash_seed)]
    if not cfg.constant:
        words.append("--noconstant")
    for name in ("quadratic", "cubic", "interactions"):
        for v in getattr(cfg, name):
            words += [f"--{name}", v]
    for name in ("ignore", "ignore_linear", "keep"):
        chars = sorted(set("".join(getattr(cfg, name))), key=lambda ch: ch.encode("latin-1"))
        if chars:
            words += [f"--{name}", "".join(chars)]
    if learn.get("seed") is not None:
        words += ["--random_seed", str(learn["seed"])]
    return vw_order(" ".join(words))


def _header(st: State, cfg, options: str):  # noqa: ANN001, ANN202
    from streamlearn.io import vwmodel
    from streamlearn.learners.cbzo import S_MAX, S_MIN

    return vwmodel.Header(id=cfg.model_id or "", min_label=float(st.state[S_MIN]),
                          max_label=float(st.state[S_MAX]), bits=cfg.bits,
                          ngram=tuple(cfg.ngram), skips=tuple(cfg.skips), options=options)


def model_bytes(st: State, cfg, options: str) -> bytes:  # noqa: ANN001
    """VW's model of the run: its header, then a (u32 slot, f32 weight) record per non-zero
    weight, in slot order."""
    from streamlearn.io import vwmodel

    slots = np.flatnonzero(st.table != 0.0)
    rec = np.zeros(slots.shape[0], dtype=[("i", "<u4"), ("w", "<f4")])
    rec["i"] = slots
    rec["w"] = st.table[slots]
    return vwmodel.encode_header(_header(st, cfg, options)) + rec.tobytes()


def readable(st: State, cfg, options: str, names: dict | None) -> str:  # noqa: ANN001
    """VW's ``--readable_model`` (``names`` None) or ``--invert_hash`` text of the run: the
    header's lines, then ``slot:w`` (``name:slot:w``; ``:slot:w`` for a slot never named)
    per non-zero weight."""
    from streamlearn.learners.cbzo import S_MAX, S_MIN
    from streamlearn.run.vwreadable import float_text, header_of

    head = header_of(cfg.model_id or "", float(st.state[S_MIN]), float(st.state[S_MAX]),
                     cfg.bits, cfg.ngram, cfg.skips, options)  # fmt: skip
    slots = np.flatnonzero(st.table != 0.0).tolist()
    if names is None:
        body = [f"{s}:{float_text(st.table[s])}\n" for s in slots]
    else:
        body = [f"{names.get(s, '')}:{s}:{float_text(st.table[s])}\n" for s in slots]
    return "".join(head.parts) + "".join(body)


def read_model(path: str, bits: int | None) -> tuple[np.ndarray, int, tuple[float, float]]:
    """``-i``: the weights of VW's ``--cbzo`` model at ``path`` in a fresh table, its ``-b``
    (``bits``: the command line's, which must be the model's) and its label range."""
    from streamlearn.io import vwmodel

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ModelError(f"-i {path}: {e.strerror or e}") from None
    if not vwmodel.sniff(data[:64]):
        raise ModelError(f"-i {path}: not VW's model (sl vw --cbzo reads VW's --cbzo models)")
    try:
        h = vwmodel.read_header(data)
    except ValueError as e:
        raise ModelError(f"-i {path}: {e}") from None
    if "cbzo" not in {n for n, _ in vwmodel.split_options(h.options)}:
        raise ModelError(f"-i {path}: not a --cbzo model (its options: {h.options.strip()!r})")
    if bits is not None and h.bits != bits:
        raise ModelError(f"-i {path}: a model of -b {h.bits}, not -b {bits}")
    if h.bits > 30:
        raise ModelError(f"-i {path}: it has {h.bits} bits (sl's tables have 30 at most)")
    body = data[h.end :]
    if len(body) % 8:
        raise ModelError(f"-i {path}: its weights end inside a record (truncated)")
    rec = np.frombuffer(body, dtype=[("i", "<u4"), ("w", "<f4")])
    if rec.shape[0] and int(rec["i"].max()) >= 1 << h.bits:
        raise ModelError(f"-i {path}: a slot beyond the table of -b {h.bits} (corrupt)")
    from streamlearn.system.memory import refuse_above

    refuse_above(4 << h.bits, f"-i {path}: --cbzo's table of -b {h.bits}", "lower -b")
    table = np.zeros(1 << h.bits, dtype=F32)
    table[rec["i"].astype(np.int64)] = rec["w"]
    return table, h.bits, (float(F32(h.min_label)), float(F32(h.max_label)))
