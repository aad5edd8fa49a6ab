"""One run of a multiline reduction (``sl vw --csoaa_ldf m|mc``, ``--cb_adf``,
``--cb_explore_adf``, ``--cb K``, ``--cbify``, ``--ccb_explore_adf``, ``--slates``): checks
before any data, the model locked and read, VW's header, the passes, then every output
written staged, the model last.

The parts: the passes (:mod:`streamlearn.run.mlpasses`; ``--ccb_explore_adf`` and
``--slates``: :mod:`streamlearn.run.ccb`; ``--cbify``: :mod:`streamlearn.run.cbify`), each
reduction's learner and outputs (:mod:`streamlearn.reductions`), the model files
(:mod:`streamlearn.run.mlmodel`), VW's stderr (:mod:`streamlearn.run.mlconsole`,
:mod:`streamlearn.run.mlsummary`) and the other outputs (:mod:`streamlearn.run.mloutputs`).
"""

from __future__ import annotations

from streamlearn.errors import NoExamples, UsageError
from streamlearn.learners import cb_adf, csoaa_ldf
from streamlearn.reductions import Multiline, reduction_of
from streamlearn.reductions.options import config_of
from streamlearn.run.mlmodel import check_finite, save, start
from streamlearn.run.mlpasses import (
    Fitted,
    Wants,
    cover_cb_type,
    passes,
    sources_of,
    weights,
)
from streamlearn.run.mlsummary import (
    completeness,
    reader_may_leave,
    report,
    summary_lines,
    summary_report,
    write_text,
)

__all__ = ["Fitted", "Multiline", "fit", "run"]


def run(learn: dict, ml: Multiline, inputs, outputs, console) -> dict:  # noqa: ANN001
    """Train (or with ``-t`` score) a multiline reduction, write its outputs; the summary.

    An input that cannot be read midway (a truncated gzip stream or flatbuffer file) is
    :class:`~streamlearn.errors.InputUnreadable`: one line, exit 3, nothing written."""
    from streamlearn.errors import InputUnreadable
    from streamlearn.system.sources import SourceError

    try:
        # -p - into `| head`: the model still written, exit 141 with a note (sl train's)
        with reader_may_leave(console.say, outputs.final_model):
            return _run(learn, ml, inputs, outputs, console)
    except SourceError as e:
        raise InputUnreadable(str(e)) from None


def _run(learn: dict, ml: Multiline, inputs, outputs, console) -> dict:  # noqa: ANN001
    from streamlearn.run.options import check
    from streamlearn.system.locks import model_lock
    from streamlearn.system.outputs import same_file, staging
    from streamlearn.system.process import committing

    say = console.say if not getattr(outputs, "vw_quiet", False) else (lambda *a: None)
    if getattr(outputs, "audit_regressor", None):
        raise UsageError(f"--audit_regressor with {ml.reduction}: not yet (sl writes the "
                         "audit of a single-line model: gd, --ftrl, --oaa, --csoaa, ...)")
    if getattr(outputs, "print_examples", False):
        raise UsageError(f"--print with {ml.reduction}: not yet (VW's print learner prints "
                         "simple labels: sl runs it in gd's place for a plain run)")  # fmt: skip
    # the single-line runs' rules (run/train.py): unreadable inputs and outputs that would
    # destroy an input, the initial model or another output refused before any work
    check(inputs, outputs, int(learn.get("passes") or 1))
    # a model continued in place is locked from reading -i to writing -f (the loops of
    # their own too: LDA's, --cbify's)
    first = inputs.initial_model
    in_place = outputs.final_model if (
        first and outputs.final_model and same_file(outputs.final_model, first)) else None
    if ml.reduction == "lda":  # (a loop of its own: documents go by minibatches)
        from streamlearn.run import lda

        with model_lock(first, in_place, outputs.lock_timeout, console.say):
            return lda.run(learn, ml, inputs, outputs, console)
    if ml.reduction == "cbzo":  # (a loop of its own: a density per line, VW's model format)
        from streamlearn.run import cbzo

        with model_lock(first, in_place, outputs.lock_timeout, console.say):
            return cbzo.run(learn, ml, inputs, outputs, console)
    if ml.reduction == "cats":  # (--cbify_reg, --cats, --cats_pdf: loops of their own)
        from streamlearn.run import cats, cats_pdf

        return (cats if ml.cbify_reg else cats_pdf).run(learn, ml, inputs, outputs, console)
    from streamlearn.run import mloutputs

    mloutputs.refuse(ml, outputs, inputs, learn)  # (exit 2: an output not written yet)
    if ml.reduction == "warm_cb":  # (a loop of its own: the phases and the lambdas)
        from streamlearn.run import warm_cb

        with model_lock(first, in_place, outputs.lock_timeout, console.say):
            return warm_cb.run(learn, ml, inputs, outputs, console)
    if ml.reduction == "cbify":
        from streamlearn.run import cbify

        play = cbify.run_legacy if ml.legacy else cbify.run_ldf if ml.cbify_ldf else cbify.run
        with model_lock(first, in_place, outputs.lock_timeout, console.say):
            summary = play(learn, ml, inputs, outputs, console)
        if getattr(outputs, "report", None):
            from streamlearn.run.report import write_json

            write_json(outputs.report, completeness(summary_report(learn, ml, summary), outputs))
        return summary
    if ml.legacy or ml.evaluate:
        from streamlearn.run import cblegacy

        cblegacy.check(ml)
    _check_base(learn, ml)
    with model_lock(first, in_place, outputs.lock_timeout, console.say):
        # a VW model is read before the header, which says its t (VW's "initial_t")
        begun = start(first, ml, learn) if first else None
        progress = None  # (VW's table: not made under --quiet, where nothing shows it)
        if getattr(outputs, "vw_format", False) and not getattr(outputs, "vw_quiet", False):
            from streamlearn.run.mlconsole import vw_header

            progress = vw_header(ml, config_of(learn, bases=True), inputs, outputs, say,
                                 begun[5] if begun else None, console.progress)  # fmt: skip
        elif getattr(outputs, "vw_quiet", False):
            progress = mloutputs.quiet_progress(outputs)  # (VW's counters a readable model says)
        elif not getattr(outputs, "vw_format", False):  # (sl train's: its summary says the loss)
            from streamlearn.run.mlconsole import Progress

            progress = Progress(lambda *a: None, False, quiet=True)
        # the off-policy estimates cost a fifth of the learner's time: made when shown
        fitted = fit(learn, ml, inputs, console, predictions=bool(outputs.predictions),
                     progress=progress, raw=bool(getattr(outputs, "raw_predictions", None)),
                     off_policy=bool(ml.ope or getattr(outputs, "report", None)),
                     begun=begun, audit=bool(getattr(outputs, "audit", False)),
                     probabilities=bool(getattr(outputs, "probabilities", False)),
                     names=bool(getattr(outputs, "invert_hash", None)),
                     vw_log=bool(getattr(outputs, "vw_format", False)
                                 and not getattr(outputs, "vw_quiet", False)))  # fmt: skip
        if fitted.summary.get("config") is not None:
            learn = fitted.summary.pop("config")
        if getattr(outputs, "invert_hash", None) and fitted.names is None:
            fitted.names = mloutputs.feature_names(ml, learn, inputs, fitted)
        if not fitted.summary.get("read", fitted.summary.get("examples")) \
                and not inputs.allow_empty:  # fmt: skip
            raise NoExamples("no usable multiline example in the input (nothing written)")
        with staging() as stage:  # every output written in full before any is visible
            _write_outputs(fitted, learn, ml, outputs, console, say, progress)
            stage.write()
            with committing():
                stage.commit()  # the model last: a failure before leaves the old one
    return fitted.summary


def _write_outputs(fitted: Fitted, learn: dict, ml: Multiline, outputs, console, say,
                   progress) -> None:  # noqa: ANN001  # fmt: skip
    """The run's predictions, summary lines, report and model (the model last)."""
    if outputs.final_model:
        check_finite(fitted, outputs.final_model)  # a diverged run writes nothing (exit 6)
    if outputs.predictions:
        write_text(outputs.predictions, "".join(fitted.predictions))
    if fitted.raw is not None and getattr(outputs, "raw_predictions", None):
        write_text(outputs.raw_predictions, "".join(fitted.raw))
    summary_lines(say, fitted.summary, fitted.stats, fitted.holdout, progress)
    if fitted.explorer is not None and progress is not None:
        for line in fitted.explorer.closing_lines():
            say(line)
    if fitted.off_policy is not None:
        if ml.ope:
            for line in fitted.off_policy.lines():
                console.say(line)
        fitted.summary["off_policy"] = fitted.off_policy.report()
    if getattr(outputs, "report", None):
        from streamlearn.run.report import write_json

        write_json(outputs.report, completeness(report(learn, ml, fitted), outputs))
    if getattr(outputs, "readable_model", None) or getattr(outputs, "invert_hash", None):
        from streamlearn.run import mloutputs

        mloutputs.write_readable(fitted, learn, ml, outputs, progress)
    if outputs.final_model:
        save(fitted, ml, learn, outputs.final_model, getattr(outputs, "model_format", "sl"),
             progress)  # fmt: skip


def _check_base(learn: dict, ml: Multiline) -> None:
    """The reductions and explorers that run on the ftrl family's learners (``--ftrl``,
    ``--coin``, ``--pistol``, as VW's), and one line for those that do not yet."""
    algo = learn.get("algo") or "gd"
    if algo == "gd":
        return
    if algo not in csoaa_ldf.BASES:
        config_of(learn, bases=True)  # (its message)
    what = None
    if ml.legacy or ml.evaluate:
        what = "--cb_force_legacy/--eval"
    elif ml.reduction in ("ccb", "slates"):
        what = f"--{ml.reduction}"
    elif ml.explore in ("regcb", "regcbopt") or (ml.explore == "squarecb" and ml.elim):
        what = "--regcb/--regcbopt/--squarecb --elim (VW's sensitivity of the ftrl family)"
    elif algo == "pistol" and ml.explore == "cover":
        # (pistol's learn returns its prediction, from its state: VW's cover then ranks by
        # the predictions its learn made, where sl's kernel scores the stored weights)
        what = "--cover"
    if what:
        raise UsageError(f"--{algo} under {what}: not supported yet (sl runs these on gd, "
                         "VW's default learner)")  # fmt: skip


def fit(learn: dict, ml: Multiline, inputs, console, predictions: bool = False,
        progress=None, raw: bool = False, off_policy: bool = True, begun=None,
        audit: bool = False, probabilities: bool = False, names: bool = False,
        vw_log: bool = False) -> Fitted:  # noqa: ANN001  # fmt: skip
    """Learn from ``inputs.sources`` (every pass); see :func:`run`.  ``progress``: a
    :class:`streamlearn.run.mlconsole.Progress` fed each batch (VW's table);
    ``off_policy``: make the off-policy estimates (:mod:`streamlearn.run.offpolicy`);
    ``begun``: what :func:`~streamlearn.run.mlmodel.start` read of ``inputs.initial_model``
    already; ``audit``: write VW's ``--audit`` (:mod:`streamlearn.run.mlaudit`);
    ``probabilities``, ``raw``: VW's ``--probabilities`` and ``-r``
    (:mod:`streamlearn.run.mlscores`); ``names``: ``--invert_hash``'s names of the features
    as the run meets them (CCB's and slates': ``Fitted.names``; the others' are read from
    the files after); ``vw_log``: VW's warnings about examples on standard output (``sl
    vw`` without ``--quiet``)."""
    if ml.cb_type not in cb_adf.CB_TYPES:
        raise UsageError(f"--cb_type {ml.cb_type}: sl takes mtr, ips, dm, dr, sm")
    cover_cb_type(ml, console.say)
    got = begun
    if got is None and inputs.initial_model:
        got = start(inputs.initial_model, ml, learn)
    cfg = config_of(got[0] if got else learn, bases=True)
    w, counter = weights(ml, cfg, got)
    say = console.say
    sources, cache = sources_of(inputs, say, progress)
    wants = Wants(predictions, progress, raw, off_policy, audit, probabilities, vw_log)
    try:
        if not reduction_of(ml).batched:  # (CCB's and slates' slots: their own loop)
            from streamlearn.run import ccb

            return ccb.passes(ml, cfg, inputs, say, sources, cache, predictions, w.params,
                              w.table, w.tables, w.step, w.gstate, w.stats, w.dr_prev, progress,
                              counter, (audit, names), vw_log)  # fmt: skip
        return passes(ml, cfg, inputs, say, sources, cache, w, wants, counter)
    except BaseException:
        cache.drop()
        raise
    finally:
        cache.seal()  # (a one-pass run's cache is committed here)
        cache.release()
