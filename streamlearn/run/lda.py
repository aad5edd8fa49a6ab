"""``sl vw --lda K``: one run of VW's LDA (``reductions/lda_core.cc``), its own loop as
``--cbify``'s: documents go to the kernels (:mod:`streamlearn.learners.lda`) a minibatch at
a time, and VW counts, prints and writes them a minibatch at a time.

VW's bookkeeping, kept for its numbers (``docs/vw-compat.md``):

* a minibatch's documents are counted (examples, features, the progress row: label
  ``none``, prediction 0, the first document's features) and their ``-p`` lines written
  when it is full; its loss is the sum of ``-score`` of its documents of non-zero integer
  length;
* at the end of each pass VW learns what is left in its buffer: a partial minibatch is
  learned and counted (its ``-p`` lines never written); a buffer that is full (the pass's
  documents a multiple of ``--minibatch``, ``--minibatch 1`` always) was learned already,
  so only its documents are counted again (VW's example counts say one more per pass);
* the decay a row still owes is settled before the model is written (``end_examples``).

Models: VW's format both ways (``-f``, ``-i``, ``--readable_model``): after VW's header, each
row's index (uint64) and its K λ (float32), every row; the readable model adds ρ to each.
"""

from __future__ import annotations

import numpy as np

from streamlearn.errors import ModelError, UsageError

F32 = np.float32
MOST_BATCHES = float(1 << 24)
"""The most minibatches a run counts: a row keeps its last one as a float32 (VW's), exact
below 2^24; the kernels index the decay levels by it."""


class State:
    """One LDA run's learning state: the table, the decay levels, the topic totals, the
    kernels' scratch."""

    def __init__(self, ml, cfg, table: np.ndarray | None) -> None:  # noqa: ANN001
        from streamlearn.learners import lda

        self.k = k = int(ml.lda)
        self.bits = cfg.bits
        _bounded(cfg.bits, k)
        t0 = float(cfg.initial_t or 0.0)
        if not 0.0 <= t0 < MOST_BATCHES:
            raise UsageError(f"--initial_t {cfg.initial_t:g} with --lda: from 0 to "
                             f"{MOST_BATCHES:.0f} minibatches (a row keeps its last minibatch "
                             "as a float32)")  # fmt: skip
        self.batch = int(ml.lda_minibatch)
        self.table = table if table is not None else lda.fresh_table(cfg.bits, k, ml.lda_D, t0)
        if table is not None:
            self.table[:, k] = F32(t0)
        # (VW's -t zeroes the rate of an LDA run before --lda is read, so never: -t learns)
        rate = float(F32(cfg.learning_rate))
        from streamlearn.reductions.lda import priors

        self.conf = np.array([*priors(ml), ml.lda_D, ml.lda_epsilon, rate,
                              cfg.power_t, ml.lda_math_mode, float(1 << cfg.bits)])  # fmt: skip
        self.state = np.zeros(lda.STATE_SIZE)
        self.state[lda.S_T] = float(t0)
        self.state[lda.S_DECAYS] = 1.0
        self.decay = np.zeros(1024, dtype=F32)
        self.total: np.ndarray | None = None
        self.v = np.zeros(self.batch * k, dtype=F32)

    def room(self, batches: int) -> None:
        """Room in the decay levels for ``batches`` more minibatches."""
        from streamlearn.learners import lda

        need = int(self.state[lda.S_DECAYS]) + batches + 1
        if need > self.decay.shape[0]:
            grown = np.zeros(max(need, 2 * self.decay.shape[0]), dtype=F32)
            grown[: self.decay.shape[0]] = self.decay
            self.decay = grown

    def learn(self, indptr, slots, xs, batch: int, audit=None) -> tuple:  # noqa: ANN001
        """The whole minibatches of ``batch`` rows of ``indptr`` (``--minibatch``, or a pass's
        partial one): (γ per row, score per row, integer length per row, whether each
        minibatch had a word).  ``audit(rows, gammas)``: called after each minibatch's E
        step, before its update (VW's ``--audit``)."""
        from streamlearn.learners import lda

        n = indptr.shape[0] - 1
        nb = n // batch
        k = self.k
        if self.v.shape[0] < batch * k:
            self.v = np.zeros(batch * k, dtype=F32)
        if float(self.state[lda.S_T]) + nb >= MOST_BATCHES:  # (the kernels index by it)
            raise UsageError(f"--lda: more than {MOST_BATCHES:.0f} minibatches in one run "
                             "(each row keeps its last one as a float32): raise --minibatch "
                             "or continue the model in another run")  # fmt: skip
        if self.total is None and nb:
            self.total = lda.totals(self.table, k)
        self.room(nb)
        gammas = np.zeros((n, k), dtype=F32)
        scores = np.zeros(n, dtype=F32)
        lengths = np.zeros(n, dtype=np.int64)
        done = np.zeros(nb, dtype=np.bool_)
        args = (self.table, k, self.conf, self.state, self.decay, self.total)
        if audit is None:
            lda.learn_block(*args, indptr, slots, xs, self.v, gammas, scores, lengths, done,
                            batch)  # fmt: skip
            return gammas, scores, lengths, done
        sizes = np.diff(indptr[::batch]) if nb else np.zeros(0, dtype=np.int64)
        iwork, fwork = lda.work(k, int(sizes.max(initial=0)), int(np.diff(indptr).max(initial=0)))
        for m in range(nb):
            r0, r1 = m * batch, (m + 1) * batch
            a, b = int(indptr[r0]), int(indptr[r1])
            ptr = indptr[r0 : r1 + 1] - a
            done[m] = lda.begin_batch(*args, ptr, slots[a:b], xs[a:b], self.v, gammas[r0:r1],
                                      scores[r0:r1], lengths[r0:r1], iwork, fwork)  # fmt: skip
            if done[m]:  # (a minibatch of no word: VW's fast path, nothing audited)
                audit(range(r0, r1), gammas[r0:r1])
                lda.end_batch(self.table, k, self.state, self.total, ptr, slots[a:b], xs[a:b],
                              self.v, iwork, fwork)  # fmt: skip
        return gammas, scores, lengths, done

    def settle(self) -> None:
        """VW's ``end_examples``: the decay every row owes, settled."""
        from streamlearn.learners import lda

        lda.settle(self.table, self.k, float(self.state[lda.S_T]), self.decay,
                   int(self.state[lda.S_DECAYS]))  # fmt: skip


def _bounded(bits: int, k: int, origin: str = "") -> None:
    """Refuse (exit 8, before it is allocated) a table that passes the memory available: 2^b
    rows of 2K + 1 floats rounded up to a power of 2 (twice: a model read builds one)."""
    from streamlearn.learners import lda
    from streamlearn.system.memory import refuse_above

    refuse_above((1 << bits) * (4 << lda.stride_shift(k)) * 2, f"{origin}--lda {k} with -b {bits}",
                 "lower -b or --lda")  # fmt: skip


class Pending:
    """The documents read but not learned yet (a minibatch fills across blocks), with what
    VW prints of them."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.ptr = [np.zeros(1, dtype=np.int64)]
        self.slots: list[np.ndarray] = []
        self.xs: list[np.ndarray] = []
        self.tags: list[str] = []
        self.lines: list[bytes | None] = []
        self.n = 0
        self.nnz = 0

    def add(self, b, rows: np.ndarray, mask: int, tags: bool, audit: bool) -> None:  # noqa: ANN001 - an io.batch.Batch
        """The usable ``rows`` of parsed block ``b`` (their slots masked to the table;
        ``tags``: their tags kept, for ``-p``; ``audit``: their lines, for ``--audit``)."""
        if rows.shape[0] == b.status.shape[0]:  # (every row usable: their entries in one run)
            ptr = b.indptr.astype(np.int64)
            lens = np.diff(ptr)
            at = slice(int(ptr[0]), int(ptr[-1]))
        else:
            lo, hi = b.indptr[rows].astype(np.int64), b.indptr[rows + 1].astype(np.int64)
            lens = hi - lo
            at = np.repeat(lo - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(
                int(lens.sum()), dtype=np.int64)  # fmt: skip
        slots = b.indices[at].astype(np.int64)
        self.slots.append(np.bitwise_and(slots, mask, out=slots))
        self.xs.append(b.values[at].astype(F32))
        self.ptr.append(self.nnz + np.cumsum(lens))
        self.nnz += int(lens.sum())
        self.n += rows.shape[0]
        rl = rows.tolist()
        data = b.block.data
        self.tags += ([data[b.tag_start[r] : b.tag_end[r]].tobytes().decode(errors="replace")
                       for r in rl] if tags else [""] * len(rl))  # fmt: skip
        if audit:  # (the block split once, as the other audits read it; VW drops one \r)
            text = data.tobytes().split(b"\n")
            first = b.block.first_line
            self.lines += [text[int(b.line[r]) - first].rstrip(b"\r") for r in rl]
        else:
            self.lines += [None] * len(rl)

    def take(self, m: int) -> tuple:
        """The first ``m`` documents (CSR, tags, lines), the rest kept."""
        if m == self.n and len(self.slots) == 1 and len(self.ptr) == 2 and not self.ptr[0][0]:
            out = (np.concatenate(self.ptr), self.slots[0], self.xs[0], self.tags, self.lines)
            self.clear()  # (all of one block's documents: nothing to join, nothing kept)
            return out
        ptr = np.concatenate(self.ptr)
        slots = np.concatenate(self.slots) if self.slots else np.zeros(0, dtype=np.int64)
        xs = np.concatenate(self.xs) if self.xs else np.zeros(0, dtype=F32)
        cut = int(ptr[m])
        out = (ptr[: m + 1], slots[:cut], xs[:cut], self.tags[:m], self.lines[:m])
        rest_ptr, rest_s, rest_x = ptr[m:] - cut, slots[cut:], xs[cut:]
        tags, lines, n = self.tags[m:], self.lines[m:], self.n - m
        self.clear()
        self.ptr = [rest_ptr]
        self.slots, self.xs = [rest_s], [rest_x]
        self.tags, self.lines, self.n, self.nnz = tags, lines, n, int(rest_ptr[-1])
        return out


def run(learn: dict, ml, inputs, outputs, console) -> dict:  # noqa: ANN001
    """Train (or with ``-t`` score) ``--lda K`` over ``inputs.sources``; the summary."""
    from streamlearn.reductions.options import config_of
    from streamlearn.run import mlconsole
    from streamlearn.run.mlpasses import report_block, sources_of
    from streamlearn.run.mlsummary import summary_lines, write_text

    _refuse(outputs)
    table = None
    if inputs.initial_model:  # (its -b, unless the command line gives one: then the same)
        table, bits = read_model(inputs.initial_model, ml, learn.get("bits"))
        learn = {**learn, "bits": bits}
    cfg = config_of(learn)
    st = State(ml, cfg, table)
    quiet = getattr(outputs, "vw_quiet", False)
    say = console.say if not quiet else (lambda *a: None)
    npasses = max(1, cfg.passes)
    holdout_on = bool(cfg.effective_holdout) and npasses > 1
    sources, cache = sources_of(inputs, say, None)
    step = getattr(console, "progress", 0.0)
    if getattr(outputs, "vw_format", False) and not quiet:
        progress = mlconsole.vw_header(ml, cfg, inputs, outputs, say, step=step)
    else:  # (VW's counters, for the summary and the model)
        progress = mlconsole.Progress(say, holdout_on, quiet=quiet, step=step)
    loop = _Loop(st, progress, int(cfg.effective_holdout or 0) if holdout_on else 0,
                 bool(getattr(outputs, "audit", False)), bool(outputs.predictions))  # fmt: skip
    again = None
    kept: list | None = [] if npasses > 1 and cache.path is None and not cache.sealed else None
    used = 0
    for npass in range(npasses):
        used = npass + 1
        loop.begin_pass(npass)
        if npass == 0:
            for b in _blocks(sources, cfg, inputs, cache.tee):
                loop.malformed = report_block(b, loop.malformed, inputs.strict, say)
                loop.feed(b, npass)
                if kept is not None:  # (no cache: later passes replay the parsed blocks)
                    kept.append(b)
            again = cache.seal() if npasses > 1 else None
        else:
            for b in kept if kept is not None else _blocks(again, cfg, inputs, None):
                loop.feed(b, npass)
        loop.end_pass(npass)  # (VW's LDA never summarizes its holdout: no early stop)
    st.settle()
    if not progress.example_number and not progress.ho_w and not inputs.allow_empty:
        from streamlearn.errors import NoExamples

        raise NoExamples("no usable example in the input (nothing written)")
    if outputs.predictions:
        write_text(outputs.predictions, "".join(loop.preds))
    summary = {"examples": progress.example_number, "per_pass": progress.example_number,
               "passes": used,
               # (VW's best holdout loss starts at 0, set to FLT_MAX by gd and the others, never
               # by LDA: it is 0)
               "best_holdout": 0.0 if holdout_on else None,
               "loss": progress.sum_loss / progress.wlab if progress.wlab else None,
               "malformed": loop.malformed}  # fmt: skip
    from streamlearn.learners import cb_adf

    stats = np.zeros(cb_adf.STATS)
    summary_lines(say, summary, stats, holdout_on, progress)
    if getattr(outputs, "readable_model", None):
        write_text(outputs.readable_model, readable(st, ml, cfg, outputs))
    if outputs.final_model:
        from streamlearn.system.outputs import write_bytes

        write_bytes(str(outputs.final_model), [model_bytes(st, ml, cfg, outputs)], "model")
    return summary


def _refuse(outputs) -> None:  # noqa: ANN001
    for key in ("invert_hash", "raw_predictions"):
        if getattr(outputs, key, None):
            raise UsageError(f"--{key} with --lda: not supported by sl yet")


def _blocks(sources, cfg, inputs, tee):  # noqa: ANN001, ANN202
    """Each block of ``sources`` parsed (VW's text format; the label read and ignored), on
    a thread of its own a few blocks ahead of the learning."""
    from streamlearn.io.example_cache import tee as tee_blocks
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.parse import FMT_VW, parse_block
    from streamlearn.io.reader import iter_blocks
    from streamlearn.run.runner import prefetch

    inter = cfg.namespaces() or compile_interactions()
    blocks = iter_blocks(sources or ["-"], inputs.block_size, inputs.max_line_bytes,
                         inputs.flat_text(cfg, sources))  # (not its cache: text)  # fmt: skip
    if tee is not None:
        blocks = tee_blocks(blocks, tee)
    return prefetch(parse_block(block, FMT_VW, cfg.bits, False, inter) for block in blocks)


class _Loop:
    """VW's LDA loop over the parsed blocks of a run: minibatches learned, counted and
    printed as VW's ``learn``, ``update_stats_lda``, ``print_update_lda`` and ``end_pass``."""

    def __init__(self, st: State, progress, period: int, audit: bool, tags: bool) -> None:  # noqa: ANN001
        self.st = st
        self.tags = tags  # (-p: the documents' tags kept)
        self.progress = progress
        self.period = period  # (every period-th document of a pass held out; 0: none)
        self.audit = audit
        self.mask = (1 << st.bits) - 1
        self.pending = Pending()
        self.preds: list[str] = []
        self.malformed = 0
        self.seen = 0  # documents of this pass
        self.last: tuple | None = None  # the last full minibatch: (features, held) per doc

    def begin_pass(self, npass: int) -> None:  # noqa: ARG002
        self.seen = 0

    def feed(self, b, npass: int) -> None:  # noqa: ANN001
        rows = np.flatnonzero(b.status == 0)
        self.pending.add(b, rows, self.mask, self.tags or self.audit, self.audit)
        full = (self.pending.n // self.st.batch) * self.st.batch
        if full:
            self._learn(full, npass, whole=True)

    def _learn(self, m: int, npass: int, whole: bool) -> None:
        ptr, slots, xs, tags, lines = self.pending.take(m)
        st = self.st
        size = st.batch if whole else m  # (a partial minibatch at a pass's end: learned as one)
        audit = self._auditor(ptr, slots, xs, lines, tags) if self.audit else None
        gammas, scores, lengths, done = st.learn(ptr, slots, xs, size, audit)
        feats = np.diff(ptr).tolist()
        held = self._held(m).tolist()
        # (VW's sum_loss -= score, a document at a time in double; none for a document of
        # no integer length)
        loss = np.where(lengths > 0, -scores.astype(np.float64), 0.0).tolist()
        self._count(npass, loss, feats, held, whole, size)
        if whole:
            if self.tags:  # (a minibatch of no word: VW's fast path, no γ to print)
                for r0 in range(0, m, size):
                    shown = gammas if done[r0 // size] else gammas[:, :0]
                    self.preds.extend(_pred_line(shown[r], tags[r]) for r in range(r0, r0 + size))
            self.last = (feats[m - size :], held[m - size :])

    def _held(self, m: int) -> np.ndarray:
        from streamlearn.run.driver import holdout_flags

        flags = holdout_flags(self.seen, m, self.period)
        self.seen += m
        return flags if flags is not None else np.zeros(m, dtype=bool)

    def _count(self, npass: int, loss: list[float], feats: list[int], held: list[bool],
               show: bool, size: int) -> None:  # fmt: skip
        """VW's ``sum_loss -= score`` then ``update_stats_lda`` for each minibatch of ``size``
        documents (their losses, features and holdout flags; ``loss`` may be empty), and
        (full ones) ``print_update_lda``: one loop over the documents, the sums in locals."""
        p = self.progress
        if not p.started and not p.quiet:
            from streamlearn.run.mlconsole import TABLE_HEAD

            p.say(TABLE_HEAD)
        p.started = True
        show = show and not p.quiet
        s_loss, since, wlab, number = p.sum_loss, p.since_loss, p.wlab, p.example_number
        ho, ho_since, total = p.ho_w, p.ho_since_w, p.total_features
        for r0 in range(0, len(feats), size):
            r1 = r0 + size
            for c in loss[r0:r1]:
                s_loss += c
                since += c
            for i in range(r0, r1):
                if held[i]:
                    ho += 1
                    ho_since += 1
                else:
                    wlab += 1.0
                    number += 1
                    total += feats[i]
            if show and wlab + p.wunl >= p.dump:
                p.sum_loss, p.since_loss, p.wlab, p.example_number = s_loss, since, wlab, number
                p.ho_w, p.ho_since_w, p.total_features = ho, ho_since, total
                p._row(npass, "none", "0", feats[r0])
                s_loss, since, wlab, number = p.sum_loss, p.since_loss, p.wlab, p.example_number
                ho, ho_since, total = p.ho_w, p.ho_since_w, p.total_features
        p.sum_loss, p.since_loss, p.wlab, p.example_number = s_loss, since, wlab, number
        p.ho_w, p.ho_since_w, p.total_features = ho, ho_since, total

    def end_pass(self, npass: int) -> None:
        """VW's ``end_pass``: a partial minibatch learned and counted; a full one (learned
        already) counted again."""
        if self.pending.n:
            self._learn(self.pending.n, npass, whole=False)
        elif self.last is not None:
            feats, held = self.last
            self._count(npass, [], feats, held, False, len(feats))
        self.last = None

    def _auditor(self, ptr, slots, xs, lines, tags):  # noqa: ANN001, ANN202
        from streamlearn.io.names import vw_names
        from streamlearn.run.vwformat import general

        st = self.st
        out = _stdout()

        def audit(rows, gammas) -> None:  # noqa: ANN001, ARG001
            for r in rows:
                names = vw_names(lines[r], st.bits) if lines[r] is not None else []
                cells = []
                for i, e in enumerate(range(int(ptr[r]), int(ptr[r + 1]))):
                    name = names[i][1] if i < len(names) else str(int(slots[e]))
                    w = st.table[int(slots[e]), : st.k]
                    cells.append("\t" + ":".join([name, str(int(slots[e])), general(xs[e]),
                                                  *(general(x) for x in w)]))  # fmt: skip
                tag = f" {tags[r]}" if tags[r] else ""
                out.write(f"0{tag}\n{''.join(cells)} total of {len(cells)} features.\n".encode())
            out.flush()

        return audit


def _stdout():  # noqa: ANN202
    import sys

    return sys.stdout.buffer


def _pred_line(gamma: np.ndarray, tag: str) -> str:
    from streamlearn.run.vwformat import general

    text = " ".join(general(g) for g in gamma)
    return f"{text} {tag}\n" if tag else f"{text}\n"


# ---------------------------------------------------------------------- VW's model files


def _words(ml, cfg, outputs) -> list[str]:  # noqa: ANN001
    """The options VW keeps with the model: LDA's, the rate and its power when not VW's
    defaults (kept for resuming: not under ``--predict_only_model``), VW's generator's
    state (advanced once a row by LDA's random initial weights)."""
    from streamlearn.learners.initial import random_state
    from streamlearn.reductions.lda import vw_words

    words = vw_words(ml)
    if getattr(outputs, "model_format", "vw") != "vw_predict_only":
        for name, value in (("learning_rate", cfg.learning_rate), ("power_t", cfg.power_t)):
            if F32(value) != F32(0.5):
                words += [f"--{name}", f"{float(F32(value)):.15g}"]
    return words + ["--random_seed", str(random_state("random", cfg.bits, cfg.seed or 0))]


def _header(st: State, ml, cfg, outputs) -> bytes:  # noqa: ANN001
    from streamlearn.io import vwmodel

    h = vwmodel.Header(bits=cfg.bits, lda=st.k, options=" " + " ".join(_words(ml, cfg, outputs)))
    return vwmodel.encode_header(h)


def model_bytes(st: State, ml, cfg, outputs) -> bytes:  # noqa: ANN001
    """VW's model of the run: its header, then each row's index and K λ."""
    rows = st.table.shape[0]
    rec = np.zeros(rows, dtype=[("i", "<u8"), ("w", "<f4", (st.k,))])
    rec["i"] = np.arange(rows, dtype=np.uint64)
    rec["w"] = st.table[:, : st.k]
    return _header(st, ml, cfg, outputs) + rec.tobytes()


def readable(st: State, ml, cfg, outputs) -> str:  # noqa: ANN001
    """VW's ``--readable_model`` of the run: its header lines, then per row ``i λ+ρ ...``."""
    from streamlearn.reductions.lda import priors
    from streamlearn.run.vwformat import general
    from streamlearn.run.vwreadable import header_of

    head = header_of("", 0.0, 0.0, cfg.bits, (), (), " " + " ".join(_words(ml, cfg, outputs)),
                     lda=st.k)  # fmt: skip
    rho = F32(priors(ml)[1])
    body = [f"{i} " + "".join(general(F32(w) + rho) + " " for w in row) + "\n"
            for i, row in enumerate(st.table[:, : st.k])]
    return "".join(head.parts) + "".join(body)


def read_model(path: str, ml, bits: int | None) -> tuple[np.ndarray, int]:  # noqa: ANN001
    """``-i``: the λ of VW's LDA model at ``path`` in a fresh table (the rows it lacks
    drawn as VW's set-up draws them), and its ``-b`` (``bits``: the command line's, which
    must be the model's)."""
    from streamlearn.io import vwmodel
    from streamlearn.learners import lda

    with open(path, "rb") as f:
        data = f.read()
    try:
        h = vwmodel.read_header(data)
    except ValueError as e:
        raise ModelError(f"-i {path}: {e}") from None
    if h.lda != ml.lda:
        raise ModelError(f"-i {path}: a model of {h.lda} topics, not --lda {ml.lda}")
    if bits is not None and h.bits != bits:
        raise ModelError(f"-i {path}: a model of -b {h.bits}, not -b {bits}")
    bits = h.bits
    k = int(ml.lda)
    _bounded(bits, k, f"-i {path}: ")
    table = lda.fresh_table(bits, k, ml.lda_D)
    size = 8 + 4 * k
    body = data[h.end :]
    n = len(body) // size
    if len(body) != n * size:
        raise ModelError(f"-i {path}: its rows are cut short (not whole records of {size} bytes)")
    rec = np.frombuffer(body, dtype=[("i", "<u8"), ("w", "<f4", (k,))], count=n)
    if n and int(rec["i"].max()) >= table.shape[0]:
        raise ModelError(f"-i {path}: a row beyond the table of -b {bits}")
    table[rec["i"].astype(np.int64), :k] = rec["w"]
    return table, bits


class Topics:
    """VW's LDA over documents held in memory, for :class:`streamlearn.sklearn.SLTopicModel`:
    each document's word columns and counts (CSR: ``indptr``, ``cols``, ``counts``), column
    ``j`` the word VW reads as ``j`` in the default namespace (row ``j`` of the table).

    :meth:`learn` is one pass: ``sl vw --lda K`` over the same documents written as lines
    (``| j:count ...``) learns the same table, minibatch for minibatch, the pass's partial
    minibatch learned at its end as VW learns it.  :meth:`gammas` is each document's γ
    against the model as it stands, nothing learned: VW's E step of a new minibatch of all
    of them (what VW's ``-p`` prints for them, before the update), on copies of the rows
    they touch (O(entries), not O(table)).  :meth:`topics` is λ (ρ added, as VW's readable
    model shows it) with the decay each row owes settled, on a copy.
    """

    def __init__(self, ml, cfg) -> None:  # noqa: ANN001 - a reductions.Multiline, a TrainConfig
        self.st = State(ml, cfg, None)
        self.ml, self.cfg = ml, cfg
        self.rows = 1 << cfg.bits

    def _check(self, indptr: np.ndarray, cols: np.ndarray, counts: np.ndarray) -> tuple:
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        cols = np.ascontiguousarray(cols, dtype=np.int64)
        xs = np.ascontiguousarray(counts, dtype=F32)
        if (indptr.ndim != 1 or indptr.shape[0] < 1 or indptr[0] != 0
                or np.any(np.diff(indptr) < 0) or int(indptr[-1]) != cols.shape[0]
                or xs.shape != cols.shape):  # fmt: skip
            raise ValueError("the documents' arrays do not describe a CSR matrix")
        if cols.shape[0] and (int(cols.min()) < 0 or int(cols.max()) >= self.rows):
            raise ValueError(f"a word column outside the table of 2^{self.cfg.bits} rows")
        return indptr, cols, xs

    def learn(self, indptr: np.ndarray, cols: np.ndarray, counts: np.ndarray) -> None:
        """One pass over the documents (the class doc)."""
        indptr, cols, xs = self._check(indptr, cols, counts)
        st, n = self.st, indptr.shape[0] - 1
        whole = (n // st.batch) * st.batch
        if whole:
            cut = int(indptr[whole])
            st.learn(indptr[: whole + 1], cols[:cut], xs[:cut], st.batch)
        if n > whole:
            cut = int(indptr[whole])
            st.learn(indptr[whole:] - cut, cols[cut:], xs[cut:], n - whole)

    def gammas(self, indptr: np.ndarray, cols: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Each document's γ (n × K, float32), nothing learned (the class doc); α for each
        topic where the documents have no word."""
        from streamlearn.learners import lda

        indptr, cols, xs = self._check(indptr, cols, counts)
        st, k, n = self.st, self.st.k, indptr.shape[0] - 1
        gammas = np.full((n, k), F32(st.conf[lda.C_ALPHA]), dtype=F32)  # (α: no word's γ)
        if n == 0 or cols.shape[0] == 0:
            return gammas
        uniq, inv = np.unique(cols, return_inverse=True)
        table = st.table[uniq].copy()
        state, decay = st.state.copy(), st.decay.copy()
        need = int(state[lda.S_DECAYS]) + 2
        if decay.shape[0] < need:
            decay = np.concatenate([decay, np.zeros(need - decay.shape[0], dtype=F32)])
        total = st.total.copy() if st.total is not None else lda.totals(st.table, k)
        iwork, fwork = lda.work(k, cols.shape[0], int(np.diff(indptr).max()))
        lda.begin_batch(table, k, st.conf, state, decay, total, indptr, inv.astype(np.int64), xs,
                        np.zeros(n * k, dtype=F32), gammas, np.zeros(n, dtype=F32),
                        np.zeros(n, dtype=np.int64), iwork, fwork)  # fmt: skip
        return gammas

    def topics(self, words: int) -> np.ndarray:
        """λ + ρ of rows ``0..words-1`` (words × K, float32), each row's owed decay settled
        (the class doc)."""
        from streamlearn.learners import lda

        st = self.st
        table = st.table[:words].copy()
        lda.settle(table, st.k, float(st.state[lda.S_T]), st.decay, int(st.state[lda.S_DECAYS]))
        from streamlearn.reductions.lda import priors

        return table[:, : st.k] + F32(priors(self.ml)[1])

    def model_bytes(self) -> bytes:
        """VW's model file of the table as it stands (``sl vw -i`` and VW's ``-i`` read it),
        the decay settled on a copy."""
        from types import SimpleNamespace

        from streamlearn.learners import lda

        st = self.st
        kept = st.table
        st.table = kept.copy()
        try:
            lda.settle(st.table, st.k, float(st.state[lda.S_T]), st.decay,
                       int(st.state[lda.S_DECAYS]))  # fmt: skip
            return model_bytes(st, self.ml, self.cfg, SimpleNamespace())
        finally:
            st.table = kept
