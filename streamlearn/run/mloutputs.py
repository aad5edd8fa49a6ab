"""VW's diagnostic outputs of the multiline reductions (``sl vw``): ``--readable_model``,
``--invert_hash``, and which of ``--audit``, ``-r``, ``--probabilities`` a reduction writes.

The readable models are the text twin of the binary model :mod:`streamlearn.run.mlmodel`
writes (:func:`streamlearn.run.mlmodel.model_state`: one state, two encodings): VW's header
(the options string the binary header holds), the reductions' state as text (the
explorer's counter, cb_adf's ``event_sum``/``action_sum``), gd's resume state and slots
(:mod:`streamlearn.run.vwreadable`).  ``--invert_hash`` names each slot as VW's gd names
it when it first predicts or learns with it: the feature's name (``ns^f``, ``a*b`` for a
cross, ``Constant``), and ``[o]`` after it for the model at offset o (``--cb_type dr``'s
cost regressor, ``--cover``'s policies, ``--bag``'s copies): :mod:`streamlearn.run.mlnames`.

An output a reduction does not write yet is refused before any data is read
(:func:`refuse`, exit 2), never accepted and skipped.
"""

from __future__ import annotations

from streamlearn.errors import UsageError

BUILT: dict[str, frozenset[str]] = {
    "readable_model": frozenset({"csoaa_ldf", "cb_adf", "cb"}),
    "invert_hash": frozenset(),
    "audit": frozenset(),
    "raw_predictions": frozenset(),
    "probabilities": frozenset(),
}
"""Each output's reductions (``Multiline.reduction``; ``cb_adf`` is ``--cb_adf`` and
``--cb_explore_adf``) whose runs write it as VW does; :func:`kind` says which explorers."""

NAMES = {"audit": "--audit", "raw_predictions": "-r/--raw_predictions",
         "readable_model": "--readable_model", "invert_hash": "--invert_hash",
         "probabilities": "--probabilities"}  # fmt: skip


def reduction_name(ml) -> str:  # noqa: ANN001 - a run.multiline.Multiline
    """The reduction as the user named it (``--cb_explore_adf --cover``, ``--cb 4``, ...)."""
    if ml.reduction == "cbify":
        return "--cbify"
    if ml.reduction in ("ccb", "slates"):
        return "--ccb_explore_adf" if ml.reduction == "ccb" else "--slates"
    if ml.reduction == "csoaa_ldf":
        return "--csoaa_ldf"
    if ml.legacy:
        return "--cb_force_legacy"
    base = "--cb" if ml.reduction == "cb" else "--cb_adf"
    if ml.explore:
        base = "--cb_explore" if ml.reduction == "cb" else "--cb_explore_adf"
        if ml.explore_eval:
            base = "--explore_eval"
        elif ml.explore != "greedy":
            base += f" --{ml.explore}"
    return base


def built(ml, attr: str) -> bool:  # noqa: ANN001
    """Whether runs of ``ml`` write output ``attr`` (an :class:`~streamlearn.run.options.Outputs`
    field) as VW does."""
    if ml.legacy or ml.evaluate:
        return attr == "raw_predictions"  # (cblegacy writes -r)
    return ml.reduction in BUILT[attr]


def refuse(ml, outputs) -> None:  # noqa: ANN001
    """Stop the run (exit 2) before any data is read when it asks for an output its
    reduction does not write yet."""
    for attr, name in NAMES.items():
        if getattr(outputs, attr, None) and not built(ml, attr):
            raise UsageError(f"sl vw: {name} is not written for {reduction_name(ml)} yet "
                             "(sl refuses it rather than skip it)")  # fmt: skip


def quiet_progress(outputs):  # noqa: ANN001, ANN201
    """Under ``--quiet``, VW's counters that a readable model writes (no table printed);
    None when the run writes no readable model."""
    if not (getattr(outputs, "readable_model", None) or getattr(outputs, "invert_hash", None)):
        return None
    from streamlearn.run.mlconsole import Progress

    return Progress(lambda *a: None, False, quiet=True)


def write_readable(fitted, learn: dict, ml, outputs, progress) -> None:  # noqa: ANN001
    """Write ``--readable_model`` and ``--invert_hash`` (with the run's other outputs)."""
    from streamlearn.learners import cb_adf
    from streamlearn.run import mlmodel
    from streamlearn.run.multiline import _config, _explorer_state
    from streamlearn.system.outputs import write_bytes

    cfg = _config(learn, bases=True)
    counter, sums, seed = _explorer_state(fitted, ml)
    if ml.explore_eval and fitted.explorer is not None:
        seed = int(fitted.explorer.rng[0])  # (explore_eval's draws: VW's generator, kept)
    stats = fitted.stats.copy()
    stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS] = sums
    weights_only = getattr(outputs, "model_format", "vw") == "vw_predict_only"
    m = mlmodel.model_state(ml, cfg, fitted.table, fitted.gstate, stats, counter, seed,
                            weights_only)  # fmt: skip
    if m.resume is not None:
        # VW's table moves these as it prints (never under --quiet)
        m.resume["sum_loss_since_last_dump"] = m.resume["sum_loss"]
        if m.resume["example_number"]:
            m.resume["current_pass"] = int(fitted.summary.get("passes") or 1)
        if progress is not None:
            m.resume["total_features"] = progress.total_features
            # (held-out examples count apart: neither examples nor unlabeled ones)
            m.resume["example_number"] = progress.example_number
            m.resume["weighted_unlabeled_examples"] = progress.wunl
            if not progress.quiet:
                m.resume["sum_loss_since_last_dump"] = progress.since_loss
                m.resume["dump_interval"] = progress.dump
                m.resume["old_weighted_labeled_examples"] = progress.old_wlab
    if outputs.readable_model:
        write_bytes(outputs.readable_model, mlmodel.readable(m, ml), "readable model")
    if outputs.invert_hash:
        names = fitted.names if getattr(fitted, "names", None) is not None else {}
        write_bytes(outputs.invert_hash, mlmodel.readable(m, ml, names), "invert-hash model")
