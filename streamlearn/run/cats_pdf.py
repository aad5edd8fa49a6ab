"""``sl vw --cats K`` and ``--cats_pdf K``: VW's continuous-action bandit over a tree of K
discrete actions (``cats.cc``, ``cats_pdf.cc``) on logged ``ca action:cost:pdf_value``
examples (:mod:`streamlearn.io.calabels`), a loop of its own as ``--cbzo``'s over the
parsed blocks: the tree, table and generator are :class:`streamlearn.run.cats.State`'s,
each block is played in one call of :func:`streamlearn.learners.cats_block.play_block`,
and this module only formats what it leaves per row (the progress table's rows, ``-p``
once per block: a ``--cats_pdf`` leaf's pdf text is made once per leaf).

* ``--cats_pdf``: each line's prediction is the pdf (the tree's action smoothed over
  ``--bandwidth``, mixed with the uniform density by ``--epsilon``); its loss is the logged
  cost; ``-p`` writes ``left-right:density,...`` and an empty line.
* ``--cats``: an action is drawn from that pdf with VW's generator (``--random_seed``); a
  learned line draws first (VW's ``cats::learn`` predicts, then learns); its loss is
  ``cost / (pdf_value · b')`` when the logged action is within the bandwidth of the drawn
  action's leaf centre (``b'`` the bandwidth cut to the range), else 0; ``-p`` writes
  ``action,density``.

A line with a test label (no action, no cost or a density of 0) is only predicted.  The
table's label is ``{action,cost,pdf_value}`` (``unknown`` for a test label) and VW's
weighted label sum counts the lines.
"""

from __future__ import annotations

import numpy as np

from streamlearn.errors import NoExamples, UsageError

F32 = np.float32


def _fmt2(x: float) -> str:
    from streamlearn.reductions.text import fmt_float

    return fmt_float(float(F32(x)), 2)


def _pdf_text(lims: np.ndarray, probs: np.ndarray, m: int, fmt) -> str:  # noqa: ANN001
    """VW's ``to_string`` of a pdf: ``left-right:value`` per segment, with ``,``."""
    return ",".join(f"{fmt(lims[i])}-{fmt(lims[i + 1])}:{fmt(probs[i])}" for i in range(m))


def shortest_texts(x: np.ndarray) -> list[str]:
    """:func:`~streamlearn.run.cbzo.shortest` of each float32 of ``x``, numpy's conversion
    of the whole array at once where it writes the same digits (``1e-4 < |x| < 1e6``, and
    0: only its ``.0`` dropped), the slow way elsewhere."""
    from streamlearn.run.cbzo import shortest

    x = np.asarray(x, dtype=np.float32)
    out = x.astype(str).tolist()
    ax = np.abs(x)
    for i in np.flatnonzero(~(((ax > F32(1e-4)) & (ax < F32(1e6))) | (x == 0))).tolist():
        out[i] = shortest(x[i])
    return [t[:-2] if t.endswith(".0") else t for t in out]


class _Pdfs:
    """The pdf of each of the tree's leaves as text (VW's ``to_string``), made once: a
    leaf's pdf depends on nothing else."""

    def __init__(self, st) -> None:  # noqa: ANN001
        self.st = st
        self.texts: dict[tuple[int, bool], str] = {}

    def text(self, leaf: int, shortest: bool) -> str:
        key = (leaf, shortest)
        if key not in self.texts:
            from streamlearn.learners.cats_tree import explore_pdf, pmf_to_pdf
            from streamlearn.run.cbzo import shortest as fmt

            st = self.st
            lims = np.zeros(8, dtype=np.float32)
            probs = np.zeros(8, dtype=np.float32)
            m = pmf_to_pdf(leaf - 1, st.k, st.lo, st.hi, st.bw, lims, probs)
            explore_pdf(probs, m, st.eps, st.lo, st.hi)
            self.texts[key] = _pdf_text(lims, probs, m, fmt if shortest else _fmt2)
        return self.texts[key]


class _Play:
    """The run's tree played over blocks (:func:`streamlearn.learners.cats_block.play_block`)."""

    def __init__(self, st, sampled: bool, learning: bool) -> None:  # noqa: ANN001
        self.st = st
        self.sampled = sampled
        self.learning = learning
        self.shape = np.array([st.lo, st.hi, st.bw, st.eps], dtype=np.float32)

    def block(self, b, lab, rows: np.ndarray) -> tuple:  # noqa: ANN001
        """Rows ``rows`` of batch ``b`` played: (loss, leaf, drawn action, density)."""
        from streamlearn.learners.cats_block import play_block

        st, m = self.st, rows.shape[0]
        loss = np.zeros(m)
        leaf = np.zeros(m, dtype=np.int64)
        drawn = np.zeros(m if self.sampled else 0, dtype=np.float32)
        density = np.zeros(m if self.sampled else 0, dtype=np.float32)
        play_block(st.table, st.gstate, st.params, st.loss_id, st.nodes, st.depth, st.counts,
                   st.width, st.small_draw, b.indptr, b.indices, b.values, rows, lab.action,
                   lab.cost, lab.pdf, lab.given, lab.test, st.k, st.tree_bw, self.shape,
                   self.sampled, self.learning, st.rng, loss, leaf, drawn, density)  # fmt: skip
        return loss, leaf, drawn, density


def run(learn: dict, ml, inputs, outputs, console) -> dict:  # noqa: ANN001
    """Train (or with ``-t`` score) ``--cats``/``--cats_pdf`` over ``inputs.sources``."""
    from streamlearn.reductions.options import config_of
    from streamlearn.run import mlconsole
    from streamlearn.run.cats import State
    from streamlearn.run.cbzo import example_blocks, shortest
    from streamlearn.run.mlpasses import report_block
    from streamlearn.run.mlsummary import write_text
    from streamlearn.run.vwconsole import vw_log
    from streamlearn.system.outputs import staging

    cfg = config_of(learn, bases=True)
    if cfg.passes > 1:
        raise UsageError("--cats/--cats_pdf with --passes: not supported by sl yet")
    st = State(ml, cfg)
    model_t = _begin(st, inputs.initial_model, ml, learn) if inputs.initial_model else None
    sampled = bool(ml.cats_k)
    quiet = getattr(outputs, "vw_quiet", False)
    say = console.say if not quiet else (lambda *a: None)
    step = getattr(console, "progress", 0.0)
    if getattr(outputs, "vw_format", False) and not quiet:
        progress = mlconsole.vw_header(ml, cfg, inputs, outputs, say, model_t, step=step)
    else:
        progress = mlconsole.Progress(say, False, quiet=quiet, step=step)
    if not st.bandwidth_given and not quiet:
        note = ("[info] Bandwidth was not supplied, setting default to half the continuous "
                f"action unit range: {shortest(st.bw)}\n")  # fmt: skip
        vw_log(note * (2 if sampled else 1))  # (cats's, then pmf_to_pdf's)
    play = _Play(st, sampled, not cfg.test_only)
    pdfs = _Pdfs(st)
    preds: list[str] = []
    malformed = read = 0
    for b, lab, own, _const in example_blocks(inputs.sources, cfg, inputs, None):
        malformed = report_block(b, malformed, inputs.strict, say)
        rows = np.flatnonzero(b.status == 0)
        m = rows.shape[0]
        if not m:
            continue
        read += m
        test = lab.test[rows]
        loss, leaf, drawn, density = play.block(b, lab, rows)
        if outputs.predictions:
            preds.append(_predictions(sampled, leaf, drawn, density, pdfs))

        def label_of(e: int, rows=rows, test=test, lab=lab) -> str:  # noqa: ANN001
            if test[e]:
                return "unknown"
            r = rows[e]
            return (f"{{{_fmt2(lab.action[r])},{_fmt2(lab.cost[r])},"
                    f"{_fmt2(lab.pdf[r])}}}")  # fmt: skip

        def pred_of(e: int, leaf=leaf, drawn=drawn, density=density) -> str:  # noqa: ANN001
            if sampled:
                return f"{_fmt2(drawn[e])},{_fmt2(density[e])}"
            return pdfs.text(int(leaf[e]), False)

        feats = own[rows]
        # (VW's cats and cats_pdf hold no line out; a test label is unlabeled, its loss
        # added all the same: FLT_MAX, or inf)
        _count(progress, ~test, loss, feats, label_of, pred_of)
    if not read and not inputs.allow_empty:
        raise NoExamples("no usable example in the input (nothing written)")
    p = progress
    summary = {"examples": p.example_number, "per_pass": p.example_number, "passes": 1,
               "best_holdout": None, "loss": p.sum_loss / p.wlab if p.wlab else None,
               "malformed": malformed, "weighted_labels": float(read)}  # fmt: skip
    with staging() as stage:
        if outputs.predictions:
            write_text(outputs.predictions, "".join(preds))
        say("")
        say("finished run")
        say(f"number of examples = {p.example_number}")
        say(f"weighted example sum = {p.wlab + p.wunl:.6f}")
        say(f"weighted label sum = {float(read):.6f}")
        say("average loss = n.a." if summary["loss"] is None
            else f"average loss = {summary['loss']:.6f}")  # fmt: skip
        say(f"total feature number = {p.total_features}")
        _models(ml, cfg, st, outputs, progress, stats=(read, p), learn=learn)
        if not quiet:
            say(st.learn_counts())
        stage.write()
        stage.commit()
    return summary


def _begin(st, path: str, ml, learn: dict) -> float | None:  # noqa: ANN001
    """``-i``: the tree's weights and gd's state from the model at ``path`` (VW's, whose
    options the run's already hold; or sl's), as VW reads them: the table, VW's t and label
    range, the first model's normalizer sums (VW keeps one pair: the tree's other nodes
    start again, as in VW), the generator's state its ``--random_seed``.  Returns VW's t of
    the model (None: a model without gd's resume state)."""
    from streamlearn.learners.csoaa_ldf import G_MODEL
    from streamlearn.run.mlmodel import start

    _, table, gstate, _, _, model_t = start(path, ml, learn)
    if table.shape != st.table.shape:
        raise UsageError(f"-i {path}: its table ({table.shape[0]} rows of {table.shape[1]}) "
                         f"is not this run's ({st.table.shape[0]} of {st.table.shape[1]})")
    st.table = table
    st.gstate[: G_MODEL + 2] = gstate[: G_MODEL + 2]
    return model_t


def _count(progress, labeled: np.ndarray, loss: np.ndarray, feats: np.ndarray, label_of,
           pred_of) -> None:  # noqa: ANN001  # fmt: skip
    """A block's rows into VW's counters and table (``mlconsole.Progress.batch``), in
    pieces that each end at a row of a huge loss: the table's sums are differences of
    running sums, and past a test label's loss (``FLT_MAX``, or inf for a density of 0)
    they would read inf - inf, or lose every digit of VW's "since last"."""
    m = loss.shape[0]
    ends = [*(np.flatnonzero(~(np.abs(loss) < 1e6)) + 1).tolist(), m]
    s = 0
    for e in ends:
        if e > s:
            progress.batch(0, labeled[s:e], np.zeros(e - s, dtype=np.bool_), loss[s:e],
                           feats[s:e], feats[s:e], lambda i, s=s: label_of(s + i),
                           lambda i, s=s: pred_of(s + i))  # fmt: skip
        s = e


def _predictions(sampled: bool, leaf: np.ndarray, drawn: np.ndarray, density: np.ndarray,
                 pdfs: _Pdfs) -> str:  # fmt: skip
    """A block's ``-p`` lines: ``action,density`` (``--cats``), or the pdf and an empty
    line (``--cats_pdf``)."""
    if not sampled:
        texts = {int(a): pdfs.text(int(a), True) + "\n\n" for a in np.unique(leaf).tolist()}
        return "".join([texts[a] for a in leaf.tolist()])
    values, at = np.unique(density, return_inverse=True)
    dens = shortest_texts(values)
    acts = shortest_texts(drawn)
    return "".join([f"{a},{dens[i]}\n" for a, i in zip(acts, at.tolist(), strict=True)])


def _models(ml, cfg, st, outputs, progress, stats: tuple, learn: dict) -> None:  # noqa: ANN001
    """``-f`` and ``--readable_model``: VW's model of the stack (gd's or the ftrl family's
    file, :mod:`streamlearn.run.mlmodel`; VW's options of every reduction of the stack, the
    generator's state as ``--random_seed``; ``--predict_only_model``: the weights alone).
    VW's resume state counts the run's examples (each of weight 1) and its label sum."""
    from streamlearn.io import vwmodel
    from streamlearn.learners import cb_adf
    from streamlearn.run import mlmodel
    from streamlearn.system.outputs import write_bytes

    final = outputs.final_model
    readable = getattr(outputs, "readable_model", None)
    if not (final or readable):
        return
    read, p = stats
    counts = np.zeros(cb_adf.STATS)
    counts[cb_adf.N_EX] = p.example_number
    counts[cb_adf.N_LAB] = p.wlab
    counts[cb_adf.LOSS] = p.sum_loss
    counts[cb_adf.FEATURES] = p.total_features
    weights_only = getattr(outputs, "model_format", "vw") == "vw_predict_only"
    for path, only in ((final, weights_only), (readable, weights_only)):
        if not path:
            continue
        m = mlmodel.model_state(ml, cfg, st.table, st.gstate, counts, None, int(st.rng[0]),
                                only)  # fmt: skip
        if m.resume is not None:
            mlmodel.table_state(m.resume, 1, progress)
            m.resume["weighted_labels"] = float(read)
            m.resume["t"] = m.resume["initial_t"] + p.example_number  # (VW's: every line)
        if path is final:
            parts = [vwmodel.encode_header(m.header),
                     *vwmodel.encode_body(m.resume, m.keep, m.values)]  # fmt: skip
            write_bytes(str(path), parts, "model")
        else:
            write_bytes(path, mlmodel.readable(m, ml), "readable model")
