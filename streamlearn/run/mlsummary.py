"""What a multiline run says when it ends: VW's summary on stderr, ``--report``'s JSON, and
``-p``/``-r`` text written (``sl vw --csoaa_ldf``, ``--cb_adf``, ``--cb_explore_adf``,
``--cb K``, ``--cbify``)."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from streamlearn.learners import cb_adf
from streamlearn.reductions import Multiline

# the runs inside reader_may_leave: True once standard output's reader went away
_GONE: ContextVar[list[bool] | None] = ContextVar("stdout_gone", default=None)


def write_text(path: str, text: str) -> None:
    """``-p``/``-r`` text to ``path`` (``-``: standard output, written at once).

    Inside :func:`reader_may_leave`, a reader of standard output that went away
    silences it and the run goes on to write its other outputs and its model."""
    if path == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            gone = _GONE.get()
            if gone is None:
                raise
            from streamlearn.system.process import silence_stdout

            silence_stdout()
            gone.append(True)
        return
    from streamlearn.system.outputs import write_bytes

    write_bytes(path, text.encode(), "predictions")


def completeness(out: dict, outputs) -> dict:  # noqa: ANN001 - run.options.Outputs
    """A report ``out`` with ``predictions_complete`` when ``-p`` or ``-r`` was asked (as
    ``sl train``'s): false once standard output's reader went away."""
    if getattr(outputs, "predictions", None) or getattr(outputs, "raw_predictions", None):
        out["predictions_complete"] = not _GONE.get()
    return out


@contextlib.contextmanager
def reader_may_leave(say: Callable[[str], None], model: str | None) -> Iterator[None]:
    """A run whose predictions on standard output may lose their reader (``| head``): as
    ``sl train``'s, it still writes its model, says so and ends with exit 141
    (:class:`~streamlearn.errors.BrokenPipe`)."""
    from streamlearn.errors import BrokenPipe
    from streamlearn.run.console import reader_left

    gone: list[bool] = []
    token = _GONE.set(gone)
    try:
        yield
    finally:
        _GONE.reset(token)
    if gone:
        say(reader_left(bool(model)))
        raise BrokenPipe("")


def report(learn: dict, ml: Multiline, fitted) -> dict:  # noqa: ANN001 - run.mlpasses.Fitted
    """The JSON ``--report`` of a multiline run: the summary's figures, the options, and
    (contextual bandits) the off-policy estimates (:mod:`streamlearn.run.offpolicy`)."""
    stats = fitted.stats
    out = summary_report(learn, ml, fitted.summary)
    out["weighted_example_sum"] = float(stats[cb_adf.N_EX])
    out["total_features"] = int(stats[cb_adf.FEATURES])
    if fitted.off_policy is not None:
        out["off_policy"] = fitted.off_policy.report()
    return out


def summary_report(learn: dict, ml: Multiline, s: dict) -> dict:
    """The report's fields that a run's summary ``s`` gives (``--cbify``'s whole report)."""
    return {
        "examples": s["examples"],
        "examples_per_pass": s["per_pass"],
        "passes_run": s["passes"],
        "average_loss": s["loss"],
        "best_holdout_loss": s["best_holdout"],
        "skipped_lines": s["malformed"],
        "config": {k: v for k, v in learn.items() if isinstance(v, str | int | float | bool)},
        "learner": ml.reduction if not ml.explore else f"cb_explore_adf ({ml.explore})",
        "multiline": dataclasses.asdict(ml),
        "curve": [],
    }


def summary_lines(say, s: dict, stats, holdout: bool, progress=None) -> None:  # noqa: ANN001
    """VW's summary; with ``progress`` (:class:`~streamlearn.run.mlconsole.Progress`) its
    counts, which leave held-out examples out as VW's."""
    examples, weighted = s["examples"], stats[cb_adf.N_EX]
    per_pass = s["per_pass"]
    if progress is not None:
        examples = progress.example_number
        weighted = progress.wlab + progress.wunl
        per_pass = examples // max(1, s["passes"])
    say("")
    say("finished run")
    if s["passes"] > 1:
        say(f"number of examples per pass = {per_pass}")
        say(f"passes used = {s['passes']}")
    else:
        say(f"number of examples = {examples}")
    say(f"weighted example sum = {weighted:.6f}")
    say(f"weighted label sum = {s.get('weighted_labels', 0.0):.6f}")
    if holdout:
        best = s["best_holdout"]
        say("average loss = undefined (no holdout)" if best is None
            else f"average loss = {best:.6f} h")  # fmt: skip
    elif s["loss"] is None:
        say("average loss = n.a.")
    else:
        say(f"average loss = {s['loss']:.6f}")
    if "log_loss" in s:  # (--csoaa_ldf --probabilities: run/mlscores.py)
        from streamlearn.run.mlscores import log_loss_line

        labeled = stats[cb_adf.N_LAB] if progress is None else progress.wlab
        say(log_loss_line(*s["log_loss"], labeled, holdout))
    total = int(stats[cb_adf.FEATURES]) if progress is None else progress.total_features
    say(f"total feature number = {total}")
