"""The reductions over K classes at run time (``--oaa``, ``--csoaa``, ``--multilabel_oaa``;
their options: :mod:`streamlearn.reductions.classes`): VW's names of the reduction and of its
label and prediction types, the progress table's columns, the width of the kernels'
predictions, what the outputs ask of them (``--probabilities``, ``--link``), and ``sl
train``'s header line.  Here in ``run/``, not beside the options, because every single-line
run asks them: importing :mod:`streamlearn.reductions` loads the whole registry (~45 ms
of start-up measured), which a plain ``sl train`` does not need.
"""

from __future__ import annotations

from streamlearn.errors import UsageError


def check_probabilities(config, probabilities: bool, link: str = "identity") -> None:  # noqa: ANN001 - a TrainConfig
    """``--probabilities`` needs ``--oaa`` and logistic loss (VW's probabilities are
    logistic of each class's score, normalised); a link transforms a binary model's score,
    and would be ignored by a multiclass model, whose predictions are classes."""
    if config.oaa and link != "identity" and not (config.multilabel and link == "logistic"):
        raise UsageError(f"--link {link} transforms one score; this --oaa {config.oaa} "
                         "model predicts classes (--probabilities: each class's "
                         "probability)")  # fmt: skip
    if probabilities and not config.oaa:
        raise UsageError("--probabilities applies to --oaa K (multiclass) models; for a "
                         "binary model's probabilities use --link logistic")  # fmt: skip
    if probabilities and config.loss != "logistic":
        raise UsageError(f"--probabilities needs --loss logistic (this model learns {config.loss} "
                         "loss: its scores are not log-odds)")  # fmt: skip


def prediction_width(config) -> int:  # noqa: ANN001 - a TrainConfig
    """Columns of a kernel's predictions: 0 (one per row), or K + 1 with ``--oaa K``
    (``--multilabel_oaa K``: 2K + 1, :mod:`streamlearn.learners.multilabel`)."""
    if config.multilabel and "--plt" in config.stack:  # (its labels and their probabilities)
        from streamlearn.config import plt_tree

        return 2 * plt_tree(config.oaa, config.stack)[1] + 1
    if config.multilabel:
        return 2 * config.oaa + 1
    return config.oaa + 1 if config.oaa else 0


def _last(words: tuple[str, ...], flag: str) -> str:
    """The last value of ``flag`` in ``words`` ("" without one)."""
    if flag not in words:
        return ""
    at = len(words) - words[::-1].index(flag)
    return words[at] if at < len(words) else ""


def vw_name(config, outputs) -> str:  # noqa: ANN001 - a TrainConfig, run.options.Outputs
    """VW's name of the reduction in its ``Enabled learners`` line: ``csoaa``,
    ``multilabel_oaa[-prob]``, ``oaa`` with what its predictions are (``-prob``,
    ``-scores``, ``-raw`` under ``-r``); without classes, VW's ``count_label``."""
    if not config.oaa:
        return "count_label"
    if config.ect:
        return "ect"
    if "--log_multi" in config.stack:
        return "log_multi"
    if config.multilabel and "--plt" in config.stack:
        top = _last(config.stack, "--top_k").isdigit() and int(_last(config.stack, "--top_k")) > 0
        return "plt" + (" -top_k" if top else "") + (" -prob" if outputs.probabilities else "")
    if "--emt" in config.stack:
        return "emt"
    if "--memory_tree" in config.stack:
        return "memory_tree"
    if "--recall_tree" in config.stack:
        return "recall_tree"
    if config.csoaa and "--cs_active" in config.stack:  # (named where csoaa would be)
        return "cs_active-sim" if "--cs_simulation" in config.stack else "cs_active"
    if config.csoaa:
        return "csoaa"
    if config.multilabel:
        return "multilabel_oaa-prob" if outputs.probabilities else "multilabel_oaa"
    if outputs.probabilities:
        return "oaa-prob"
    if outputs.oaa_scores(config):
        return "oaa-scores"
    return "oaa-raw" if outputs.raw_predictions else "oaa"


def vw_types(config, outputs) -> list[str]:  # noqa: ANN001
    """VW's header lines of the label and prediction types."""
    if not config.oaa:  # (--top K: each group's predictions)
        return ["Input label = SIMPLE",
                f"Output pred = {'SCALARS' if '--top' in config.stack else 'SCALAR'}"]
    label = "CS" if config.csoaa else "MULTILABEL" if config.multilabel else "MULTICLASS"
    if config.csoaa and "--cs_active" in config.stack:
        return [f"Input label = {label}", "Output pred = ACTIVE_MULTICLASS"]
    if config.multilabel and "--plt" in config.stack:  # (VW's plt: its labels' probabilities)
        return [f"Input label = {label}",
                f"Output pred = {'ACTION_PROBS' if outputs.probabilities else 'MULTILABELS'}"]
    out = ("SCALARS" if outputs.probabilities or outputs.oaa_scores(config)
           else "MULTILABELS" if config.multilabel else "MULTICLASS")  # fmt: skip
    return [f"Input label = {label}", f"Output pred = {out}"]


def table_labels(config, outputs) -> str:  # noqa: ANN001
    """The progress table's label kind (:class:`~streamlearn.run.report.ProgressTable`'s
    ``labels``): VW's columns of ``--csoaa`` (``known``) and ``--multilabel_oaa`` (the
    lists of classes) under ``sl vw``; "" for numbers."""
    if not outputs.vw_format:
        return ""
    return "cs" if config.csoaa else "multilabel" if config.multilabel else ""


def header_lines(config) -> list[str]:  # noqa: ANN001
    """``sl train``'s header line of the classes."""
    if not config.oaa:
        return []
    if config.ect:
        return [f"error-correcting tournament: {config.oaa} classes (labels 1..{config.oaa}), "
                f"{config.ect_errors} errors, {config.oaa_stride} slots per feature"]
    return [f"one against all: {config.oaa} classes (labels 1..{config.oaa}), "
            f"{config.oaa_stride} slots per feature"]  # fmt: skip
