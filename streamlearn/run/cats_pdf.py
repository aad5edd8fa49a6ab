"""``sl vw --cats K`` and ``--cats_pdf K``: VW's continuous-action bandit over a tree of K
discrete actions (``cats.cc``, ``cats_pdf.cc``) on logged ``ca action:cost:pdf_value``
examples (:mod:`streamlearn.io.calabels`), a loop of its own as ``--cbzo``'s; the stack is
:class:`streamlearn.run.cats.State`'s.

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


def _loss(st, action: np.float32, lab_action: float, cost: float, pdf: float) -> float:  # noqa: ANN001
    """VW's ``cats::get_loss`` of the drawn ``action`` against the logged label."""
    k, lo, hi, bw = st.k, st.lo, st.hi, st.bw
    unit = F32(F32(hi - lo) / F32(k))
    ac = F32(F32(action - lo) / unit)
    seg = min(k - 1, int(np.floor(ac)))
    centre = F32(F32(lo + F32(F32(seg) * unit)) + F32(unit / F32(2.0)))
    logged = F32(lab_action)
    if F32(logged - centre) <= bw and F32(centre - logged) <= bw:
        actual_b = F32(min(hi, F32(centre + bw)) - max(lo, F32(centre - bw)))
        with np.errstate(all="ignore"):  # (a test label's: FLT_MAX / 0, as VW's inf)
            return float(F32(F32(cost) / F32(F32(pdf) * actual_b)))
    return 0.0


def run(learn: dict, ml, inputs, outputs, console) -> dict:  # noqa: ANN001
    """Train (or with ``-t`` score) ``--cats``/``--cats_pdf`` over ``inputs.sources``."""
    from streamlearn.learners.base import G_N
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
    sampled = bool(ml.cats_k)
    quiet = getattr(outputs, "vw_quiet", False)
    say = console.say if not quiet else (lambda *a: None)
    step = getattr(console, "progress", 0.0)
    if getattr(outputs, "vw_format", False) and not quiet:
        progress = mlconsole.vw_header(ml, cfg, inputs, outputs, say, step=step)
    else:
        progress = mlconsole.Progress(say, False, quiet=quiet, step=step)
    if not st.bandwidth_given and not quiet:
        note = ("[info] Bandwidth was not supplied, setting default to half the continuous "
                f"action unit range: {shortest(st.bw)}\n")  # fmt: skip
        vw_log(note * (2 if sampled else 1))  # (cats's, then pmf_to_pdf's)
    training = not cfg.test_only
    preds: list[str] = []
    malformed = read = 0
    for b, lab, own, _const in example_blocks(inputs.sources, cfg, inputs, None):
        malformed = report_block(b, malformed, inputs.strict, say)
        rows = np.flatnonzero(b.status == 0)
        m = rows.shape[0]
        if not m:
            continue
        read += m
        slots = np.empty(b.indices.shape[0], dtype=np.uint32)
        loss = np.zeros(m)
        test = lab.test[rows]
        shown: list[str] = []
        for e, r in enumerate(rows.tolist()):
            lo, hi = int(b.indptr[r]), int(b.indptr[r + 1])
            learns = training and not test[e]
            a, c, p = float(lab.action[r]), float(lab.cost[r]), float(lab.pdf[r])
            if sampled:
                action, pdf = st.sample(b, lo, hi)
                if lab.given[r]:
                    loss[e] = _loss(st, F32(action), a, c, p)
                shown.append(f"{_fmt2(action)},{_fmt2(pdf)}")
                if outputs.predictions:
                    preds.append(f"{shortest(action)},{shortest(pdf)}\n")
            else:
                n_seg = st.pdf(b, lo, hi)
                loss[e] = c if lab.given[r] else 0.0
                shown.append(_pdf_text(st.lims, st.probs, n_seg, _fmt2))
                if outputs.predictions:
                    preds.append(_pdf_text(st.lims, st.probs, n_seg, shortest) + "\n\n")
            if learns:
                st.learn_label(b, lo, hi, slots, F32(a), F32(c), F32(p))
            st.gstate[G_N] += 1.0

        def label_of(e: int, rows=rows, test=test, lab=lab) -> str:  # noqa: ANN001
            if test[e]:
                return "unknown"
            r = rows[e]
            return (f"{{{_fmt2(lab.action[r])},{_fmt2(lab.cost[r])},"
                    f"{_fmt2(lab.pdf[r])}}}")  # fmt: skip

        feats = own[rows]
        # (VW's cats and cats_pdf hold no line out; a test label is unlabeled, its loss
        # added all the same: FLT_MAX, or inf)
        progress.batch(0, ~test, np.zeros(m, dtype=np.bool_), loss, feats, feats, label_of,
                       lambda e, shown=shown: shown[e])  # fmt: skip
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
