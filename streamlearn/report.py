"""Progressive validation table, final summary and the JSON report.

The table and summary follow Vowpal Wabbit's layout, so people who read VW
output read ours; we add the number of non-zero weights (a sparse learner
shows its sparsity) and holdout figures when there are any.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from streamlearn.learners.base import (
    S_CORRECT_W,
    S_FEATURES,
    S_HO_CORRECT_W,
    S_HO_LOSS,
    S_HO_N,
    S_HO_W,
    S_LABEL_SQ,
    S_LABEL_SUM,
    S_LOSS,
    S_N,
    S_NROWS,
    S_POS_W,
    S_WEX,
    S_WLAB,
)
from streamlearn.losses import SQUARED, best_constant

HEADER = (
    "average  since         example        example        current        current  current\n"
    "loss     last          counter         weight          label        predict features"
)


def _num(x: float, width: int, prec: int) -> str:
    return f"{x:>{width}.{prec}f}" if math.isfinite(x) else f"{'n.a.':>{width}}"


def table_line(row, holdout: bool = False) -> str:
    """One progressive line: avg loss, since last, count, weight, label, predict, features.

    ``holdout``: the two losses are holdout losses, marked ``h`` as VW does.
    """
    avg, since, n, w, label, pred, nf = row[:7]
    lab = f"{'unknown':>14}" if math.isnan(label) else f"{label:>14.4f}"
    return (
        f"{_loss(avg)} {_loss(since)} {int(n):>12d} {_num(w, 14, 1)} {lab} "
        f"{_num(pred, 14, 4)} {int(nf):>8d}" + (" h" if holdout else "")
    )


def _loss(x: float) -> str:
    return f"{x:<8.6f}" if math.isfinite(x) else f"{'n.a.':<8}"


class ProgressTable:
    """VW's progressive table: the rows the kernels wrote, printed and kept for the report.

    On the first pass the losses are progressive (each example scored before
    it is learned).  From the second pass on, with a holdout, they are the
    holdout loss of this pass so far and since the previous line, marked
    ``h``, as VW prints them (training examples have been seen before by
    then).  Each row of :attr:`curve` is the printed line's seven figures
    and a holdout flag (0 or 1).
    """

    def __init__(self, say, holdout: bool) -> None:
        self.say = say
        self.holdout = holdout
        self.curve: list[list[float]] = []
        self._h = False
        self._start = (0.0, 0.0)
        self._last = (0.0, 0.0)

    def begin_pass(self, number: int, stats: np.ndarray) -> None:
        self._h = self.holdout and number > 1
        self._start = self._last = (float(stats[S_HO_LOSS]), float(stats[S_HO_W]))

    def emit(self, stats: np.ndarray, rows: np.ndarray) -> None:
        """Print and keep the rows written since the last call, then reset the kernels' count."""
        for r in range(int(stats[S_NROWS])):
            row = [float(x) for x in rows[r, :7]]
            if self._h:
                loss, w = float(rows[r, 7]), float(rows[r, 8])
                row[0] = _ratio(loss - self._start[0], w - self._start[1])
                row[1] = _ratio(loss - self._last[0], w - self._last[1])
                self._last = (loss, w)
            self.curve.append(row + [1.0 if self._h else 0.0])
            self.say(table_line(row, self._h))
        stats[S_NROWS] = 0.0


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def summary(stats: np.ndarray, loss_id: int, nnz: int) -> dict:
    """Final figures of a run, as a dict (also the core of the JSON report)."""
    wlab = stats[S_WLAB]
    const, const_loss = best_constant(loss_id, wlab, stats[S_LABEL_SUM], stats[S_POS_W])
    if loss_id == SQUARED and wlab > 0:
        mean = stats[S_LABEL_SUM] / wlab
        const_loss = max(0.0, stats[S_LABEL_SQ] / wlab - mean * mean)
    out = {
        "examples": int(stats[S_N]),
        # as VW: held-out examples are not part of the weighted example sum
        "weighted_example_sum": float(stats[S_WEX] - stats[S_HO_W]),
        "weighted_label_sum": float(stats[S_LABEL_SUM]),
        "average_loss": float(stats[S_LOSS] / wlab) if wlab > 0 else None,
        "accuracy": float(stats[S_CORRECT_W] / wlab) if wlab > 0 else None,
        "best_constant": float(const),
        "best_constant_loss": float(const_loss),
        "total_features": int(stats[S_FEATURES]),
        "nonzero_weights": int(nnz),
    }
    if stats[S_HO_N] > 0:
        out["holdout_examples"] = int(stats[S_HO_N])
        out["holdout_loss"] = float(stats[S_HO_LOSS] / stats[S_HO_W])
        out["holdout_accuracy"] = float(stats[S_HO_CORRECT_W] / stats[S_HO_W])
    return out


def summary_text(s: dict) -> str:
    """VW's "finished run" block, from :func:`summary` plus the train report's keys.

    With several passes (``passes_run`` > 1) it adds VW's examples-per-pass and
    passes-used lines, and the holdout line is the best pass's (the model
    kept), not the mean over every pass's held-out examples.
    """

    def f(x):
        return "n.a." if x is None else f"{x:.6f}"

    several = s.get("passes_run", 1) > 1
    lines = ["", "finished run", f"number of examples = {s['examples']}"]
    if several:
        lines.append(f"number of examples per pass = {s['examples_per_pass']}")
        stop = " (early termination)" if s.get("early_terminated") else ""
        lines.append(f"passes used = {s['passes_run']}{stop}")
    lines += [
        f"weighted example sum = {s['weighted_example_sum']:.6f}",
        f"weighted label sum = {s['weighted_label_sum']:.6f}",
        f"average loss = {f(s['average_loss'])}",
    ]
    if "objective" in s:  # the batch learners: the loss above is at the final weights
        end = "converged" if s["converged"] else "stopped at --passes"
        lines[-1] += " (training loss of the final weights)"
        lines.append(f"objective = {s['objective']:.9g} ({len(s['epochs'])} epochs, {end})")
    if several and s.get("best_pass") is not None:
        lines.append(
            f"holdout loss = {s['best_holdout_loss']:.6f} (pass {s['best_pass']}, the best: "
            "its model is the one kept)"
        )
    elif "holdout_loss" in s:
        lines.append(f"holdout loss = {s['holdout_loss']:.6f} ({s['holdout_examples']} examples)")
    lines += [
        f"best constant = {s['best_constant']:.6f}",
        f"best constant's loss = {s['best_constant_loss']:.6f}",
        f"total feature number = {s['total_features']}",
        f"non-zero weights = {s['nonzero_weights']}",
    ]
    if s.get("skipped_lines"):
        how = "malformed; each counted once, skipped on every pass" if several else "malformed"
        lines.append(f"skipped lines = {s['skipped_lines']} ({how}, see warnings above)")
    return "\n".join(lines)


def write_json(path: str | os.PathLike, report: dict) -> None:
    """Write the JSON report (atomically to a file; ``-`` is stdout).

    Strict JSON: a value that is not finite (the best constant of a one-class
    logistic run, an unlabeled row's loss in the curve) is written as ``null``.

    >>> json_text({"a": float("inf"), "b": [1.0, float("nan")]})
    '{\n  "a": null,\n  "b": [\n    1.0,\n    null\n  ]\n}\n'
    """
    write_text(path, json_text(report), "report")


def json_text(report: dict) -> str:
    """The report as strict JSON text (non-finite numbers as ``null``)."""
    return json.dumps(_finite(report), indent=2, sort_keys=True, allow_nan=False) + "\n"


def _finite(x):
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    if isinstance(x, np.ndarray):
        return _finite(x.tolist())
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_text(path: str | os.PathLike, text: str, what: str = "output") -> None:
    """Write a text output whole: ``-`` is stdout, a file is replaced atomically
    (see :mod:`streamlearn.outputs`)."""
    from streamlearn.outputs import write_text as write

    write(str(path), text, what)
