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
    S_HO_MC_LOGLOSS,
    S_HO_N,
    S_HO_W,
    S_LABEL_SQ,
    S_LABEL_SUM,
    S_LOSS,
    S_MC_LOGLOSS,
    S_N,
    S_NROWS,
    S_POS_W,
    S_UNLABELED,
    S_WEX,
    S_WLAB,
)
from streamlearn.learners.losses import CLASSIC, SQUARED, best_constant

HEADER = (
    "average  since         example        example        current        current  current\n"
    "loss     last          counter         weight          label        predict features"
)


def _num(x: float, width: int, prec: int) -> str:
    return f"{x:>{width}.{prec}f}" if math.isfinite(x) else f"{'n.a.':>{width}}"


def table_line(row, holdout: bool = False, classes: bool = False, prob: float | None = None,
               texts: tuple[str, str] | None = None) -> str:  # fmt: skip
    """One progressive line: avg loss, since last, count, weight, label, predict, features.

    ``holdout``: the two losses are holdout losses, marked ``h`` as VW does.
    ``classes``: label and prediction are classes (``--oaa``), printed as integers, the
    prediction with its probability ``2(31%)`` when ``prob`` is given (``--probabilities``).
    ``texts``: the label and prediction columns as given (``--multilabel_oaa``'s lists,
    ``--csoaa``'s ``known``).
    """
    avg, since, n, w, label, pred, nf = row[:7]
    if texts is not None:
        lab, guess = f"{texts[0]:>14}", f"{texts[1]:>14}"
    elif classes:
        lab = f"{'unknown':>14}" if math.isnan(label) else f"{int(label):>14d}"
        shown = "n.a." if math.isnan(pred) else f"{int(pred)}"
        if prob is not None and math.isfinite(prob) and shown != "n.a.":
            shown += f"({100.0 * prob:.0f}%)"
        guess = f"{shown:>14}"
    else:
        lab = f"{'unknown':>14}" if math.isnan(label) else f"{label:>14.4f}"
        guess = _num(pred, 14, 4)
    none = "unknown" if holdout else "n.a."  # VW's words for a loss of nothing yet
    return (
        f"{_loss(avg, none)} {_loss(since, none)} {int(n):>12d} {_num(w, 14, 1)} {lab} "
        f"{guess} {int(nf):>8d}" + (" h" if holdout else "")
    )


def _loss(x: float, none: str = "n.a.") -> str:
    """A loss column: six decimals in 8 characters, cut to 8 as VW's table cuts a value
    (``10.520606`` shows as ``10.52060``)."""
    return f"{x:<8.6f}"[:8] if math.isfinite(x) else f"{none:<8}"


class ProgressTable:
    """VW's progressive table: the rows the kernels wrote, printed and kept for the report.

    On the first pass the losses are progressive (each example scored before
    it is learned).  From the second pass on, with a holdout, they are the
    holdout loss of the run so far and since the previous holdout line, marked
    ``h``, as VW prints them (training examples have been seen before by
    then).  Each row of :attr:`curve` is the printed line's seven figures
    and a holdout flag (0 or 1).
    """

    def __init__(self, say, holdout: bool, classes: bool = False,
                 probabilities: bool = False, shown=None, labels: str = "",
                 names: tuple[str, ...] = ()) -> None:  # noqa: ANN001  # fmt: skip
        """``shown``: what the "current predict" column prints of a margin (``sl vw``: VW's
        linked, ``--binary`` prediction); the curve keeps the margin.  ``labels``: the
        label kind of a reduction over classes whose columns are not numbers, as VW prints
        them: ``"cs"`` (``--csoaa``: ``known``), ``"multilabel"`` (``--multilabel_oaa``:
        the lists of classes; its kernel writes each line's example in the last column, and
        :meth:`emit` is given that example's texts).  ``names``: ``--named_labels``, the
        classes' names (VW's table prints a class by its name, ``unknown`` for one without;
        ``--csoaa``'s prediction an empty column)."""
        self.say = say
        self.shown = shown
        self.holdout = holdout
        self.classes = classes  # --oaa: label and prediction are classes
        self.labels = labels
        self.names = names
        self.probabilities = probabilities and labels != "multilabel"
        self.curve: list[list[float]] = []
        self._h = False
        self._before: np.ndarray | None = None  # the holdout sums before this run
        self._done = np.zeros(2)  # this run's holdout sums of the passes before this one
        self._last = np.zeros(2)  # this run's holdout sums at the last line

    def begin_pass(self, number: int, stats: np.ndarray) -> None:
        """Called before each pass, while ``stats`` holds the holdout sums of every pass
        so far (:class:`~streamlearn.run.passes.PassLog` sets each pass's apart)."""
        sums = np.array([stats[S_HO_LOSS], stats[S_HO_W]], dtype=np.float64)
        if self._before is None:
            self._before = sums
        self._done = sums - self._before
        self._h = self.holdout and number > 1

    def emit(self, stats: np.ndarray, rows: np.ndarray, texts=None) -> None:  # noqa: ANN001
        """Print and keep the rows written since the last call, then reset the kernels' count.

        A holdout line (``h``, after the first pass) shows, as VW's, the holdout loss of
        the run so far and since the previous holdout line (the first: since the start).
        ``texts(i)``: the label and prediction columns of the batch's example ``i`` (``labels
        "multilabel"``).
        """
        for r in range(int(stats[S_NROWS])):
            row = [float(x) for x in rows[r, :7]]
            if self._h:
                now = self._done + rows[r, 7:9]
                row[0] = _ratio(now[0], now[1])
                row[1] = _ratio(now[0] - self._last[0], now[1] - self._last[1])
                self._last = now
            self.curve.append(row + [1.0 if self._h else 0.0])
            prob = float(rows[r, 9]) if self.probabilities else None
            printed = row if self.shown is None else [*row[:5], self.shown(row[5]), row[6]]
            self.say(table_line(printed, self._h, self.classes, prob, self._texts(rows[r], texts)))
        stats[S_NROWS] = 0.0

    def _texts(self, row: np.ndarray, texts) -> tuple[str, str] | None:  # noqa: ANN001
        if self.labels == "cs":
            pred = "n.a." if math.isnan(row[5]) else self._name(row[5], str(int(row[5])))
            return ("unknown" if math.isnan(row[4]) else "known"), pred
        if self.names and self.classes and not self.probabilities:
            return self._name(row[4], "unknown"), self._name(row[5], "unknown")
        if self.labels == "multilabel" and texts is not None:
            return texts(int(row[9]))
        return None

    def _name(self, c: float, number: str) -> str:
        """Class ``c`` by its name (``number`` without ``--named_labels``; VW's table
        leaves a class without a name empty, "unknown" in the label columns)."""
        if not self.names:
            return number
        k = len(self.names)
        return self.names[int(c) - 1] if not math.isnan(c) and 1 <= c <= k else (
            "unknown" if number == "unknown" else "")


def multilabel_texts(labels: np.ndarray, preds: np.ndarray, k: int):  # noqa: ANN201
    """``--multilabel_oaa K``'s columns of a batch's example ``i``, as VW prints them: the
    classes given (``unknown``: none) and those predicted (``preds``' membership columns,
    :mod:`streamlearn.learners.multilabel`), comma-separated."""

    def texts(i: int) -> tuple[str, str]:
        m = int(labels[i, 0])
        given = ",".join(str(int(c)) for c in labels[i, 1 : 1 + m]) if m else "unknown"
        return given, ",".join(str(c) for c in range(k) if preds[i, 1 + k + c] != 0.0)

    return texts


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def summary(stats: np.ndarray, loss_id: int, nnz: int, classes: int = 0,
            probabilities: bool = False) -> dict:  # fmt: skip
    """Final figures of a run, as a dict (also the core of the JSON report).

    ``classes`` = K (``--oaa K``): the loss is the multiclass 0/1 error, and there is no
    label sum or best constant (VW prints neither); ``probabilities``: the multiclass
    log loss too (``multiclass_log_loss``, and ``holdout_multiclass_log_loss``).
    """
    if classes:
        return _multiclass_summary(stats, nnz, probabilities)
    wlab = stats[S_WLAB]
    const, const_loss = best_constant(loss_id, wlab, stats[S_LABEL_SUM], stats[S_POS_W])
    if loss_id in (SQUARED, CLASSIC) and wlab > 0:
        mean = stats[S_LABEL_SUM] / wlab
        const_loss = max(0.0, stats[S_LABEL_SQ] / wlab - mean * mean)
    out = {
        "examples": int(stats[S_N]),
        "unlabeled_examples": int(stats[S_UNLABELED]),
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
        # over every held-out example of every pass; with several passes the report's
        # holdout_* become the best pass's (PassLog.report), as the summary prints them
        pooled = {
            "holdout_examples": int(stats[S_HO_N]),
            "holdout_loss": float(stats[S_HO_LOSS] / stats[S_HO_W]),
            "holdout_accuracy": float(stats[S_HO_CORRECT_W] / stats[S_HO_W]),
        }
        out.update(pooled)
        out.update({f"pooled_{k}": v for k, v in pooled.items()})
    return out


def _multiclass_summary(stats: np.ndarray, nnz: int, probabilities: bool) -> dict:
    wlab = stats[S_WLAB]
    out = {
        "examples": int(stats[S_N]),
        "unlabeled_examples": int(stats[S_UNLABELED]),
        "weighted_example_sum": float(stats[S_WEX] - stats[S_HO_W]),
        "weighted_label_sum": 0.0,
        "average_loss": float(stats[S_LOSS] / wlab) if wlab > 0 else None,
        "accuracy": float(stats[S_CORRECT_W] / wlab) if wlab > 0 else None,
        "best_constant": None,
        "best_constant_loss": None,
        "total_features": int(stats[S_FEATURES]),
        "nonzero_weights": int(nnz),
    }
    if probabilities:
        out["multiclass_log_loss"] = float(stats[S_MC_LOGLOSS] / wlab) if wlab > 0 else None
    if stats[S_HO_N] > 0:
        out["holdout_examples"] = int(stats[S_HO_N])
        out["holdout_loss"] = float(stats[S_HO_LOSS] / stats[S_HO_W])
        out["holdout_accuracy"] = float(stats[S_HO_CORRECT_W] / stats[S_HO_W])
        if probabilities:
            out["holdout_multiclass_log_loss"] = float(stats[S_HO_MC_LOGLOSS] / stats[S_HO_W])
    return out


def train_report(stats: np.ndarray, config, learner: str, nnz: int, curve: list,
                 skipped: int, reasons: dict, first_errors: list[str],
                 final_model: str | None, initial_model: str | None,
                 probabilities: bool = False) -> dict:  # fmt: skip
    """An ``sl train`` report's common part: :func:`summary` plus what the run was and read.

    ``config`` is the run's :class:`~streamlearn.config.TrainConfig`, ``learner`` its
    kernel's name, ``curve`` the progressive table's rows.
    """
    result = summary(stats, config.loss_id, nnz, config.oaa, probabilities)
    result.update(
        config=config.to_dict(),
        learner=learner,
        curve=curve,
        skipped_lines=skipped,
        skipped_reasons=dict(reasons),
        first_errors=first_errors,
        final_model=final_model,
        initial_model=initial_model,
    )
    return result


def summary_text(s: dict, vw: bool = False) -> str:
    """VW's "finished run" block, from :func:`summary` plus the train report's keys.

    With several passes (``passes_run`` > 1) it adds VW's examples-per-pass and
    passes-used lines, and the holdout line is the best pass's (the model
    kept), not the mean over every pass's held-out examples.  ``vw``: with a
    holdout, "average loss" is that holdout loss marked ``h``, as VW prints it,
    and the progressive loss has a line of its own.
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
    average = len(lines) - 1
    if "objective" in s:  # the batch learners: the loss above is at the final weights
        end = "converged" if s["converged"] else "stopped at --passes"
        lines[-1] += " (training loss of the final weights)"
        lines.append(f"objective = {s['objective']:.9g} ({len(s['epochs'])} epochs, {end})")
    if s.get("multiclass_log_loss") is not None:
        lines.append(f"average multiclass log loss = {s['multiclass_log_loss']:.6f}")
    held = s.get("best_holdout_loss") if several else s.get("holdout_loss")
    if vw and held is not None:  # VW's words: the holdout loss is the average loss
        lines[average] = f"average loss = {held:.6f} h"
        lines.append(f"progressive loss = {f(s['average_loss'])}")
    elif several and s.get("best_pass") is not None:
        lines.append(
            f"holdout loss = {s['best_holdout_loss']:.6f} (pass {s['best_pass']}, the best: "
            "its model is the one kept)"
        )
    elif "holdout_loss" in s:
        lines.append(f"holdout loss = {s['holdout_loss']:.6f} ({s['holdout_examples']} examples)")
    if s.get("best_constant") is not None:  # (none for multiclass, as VW)
        lines += [
            f"best constant = {s['best_constant']:.6f}",
            f"best constant's loss = {s['best_constant_loss']:.6f}",
        ]
    lines += [
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
    (see :mod:`streamlearn.system.outputs`)."""
    from streamlearn.system.outputs import write_text as write

    write(str(path), text, what)


class GridTable:
    """A grid's stderr: one compact table instead of one progressive table per configuration.

    While learning, a line at the progressive table's checkpoints (examples 1, 2,
    4, ...) with each configuration's average loss (``h``: holdout, from the
    second pass on), in columns up to :data:`GRID_COLUMNS` configurations and as
    the best and worst beyond; at the end, :meth:`summary`: per configuration
    its progressive loss, holdout loss and non-zero weights, the best marked.
    ``runs`` are the driver's runs (``configuration.name``, ``progress.curve``,
    ``log.figures``, ``diverged``).
    """

    def __init__(self, say, runs: list) -> None:
        self.say = say
        self.runs = runs
        self.columns = len(runs) <= GRID_COLUMNS
        self.width = min(max(12, *(len(r.configuration.name) for r in runs)), 22)
        self._shown = 0
        self._pass = 1

    def header(self) -> str:
        if self.columns:
            w = self.width
            names = " ".join(f"{_cut(r.configuration.name, w):>{w}}" for r in self.runs)
            return f"{'example':>12} {names}\n{'counter':>12} (average loss per configuration)"
        return f"{'example':>12} {'best average loss':>30} {'worst average loss':>30}"

    def begin_pass(self, number: int) -> None:
        self._pass = number

    def emit(self) -> None:
        """Print the checkpoints the configurations reached since the last call."""
        curves = [r.progress.curve for r in self.runs]
        longest = max(len(c) for c in curves)
        for i in range(self._shown, longest):
            rows = [c[i] if i < len(c) else None for c in curves]
            first = next(r for r in rows if r is not None)
            mark = " h" if first[7] else ""
            if self.columns:
                cells = " ".join(f"{_loss(r[0]).strip() if r else '':>{self.width}}" for r in rows)
                self.say(f"{int(first[2]):>12d} {cells}{mark}")
            else:
                scored = [(r[0], k) for k, r in enumerate(rows) if r and math.isfinite(r[0])]
                if not scored:
                    continue
                lo, hi = min(scored), max(scored)
                self.say(f"{int(first[2]):>12d} {self._cell(*lo):>30} {self._cell(*hi):>30}{mark}")
        self._shown = longest

    def _cell(self, loss: float, k: int) -> str:
        return f"{_loss(loss).strip()} ({_cut(self.runs[k].configuration.name, 18)})"

    def end_pass(self, active: list) -> None:
        """After a pass of several: each configuration's holdout loss of the pass."""
        figs = [r.log.figures[-1] if r in active and r.log.figures else None for r in self.runs]
        if self.runs[0].log.passes == 1 or not any(f and f.holdout_loss is not None for f in figs):
            return
        cells = [
            f"{_cut(r.configuration.name, 18)} {f.holdout_loss:.6f}"
            for r, f in zip(self.runs, figs, strict=True)
            if f is not None and f.holdout_loss is not None
        ]
        self.say(f"pass {self._pass} holdout loss: " + ", ".join(cells))

    def summary(self, report: dict) -> str:
        """The final table (``report`` is the grid's JSON report)."""
        entries = report["configurations"]
        width = max(13, *(len(r.configuration.name) for r in self.runs))
        lines = [
            "",
            f"finished grid: {len(entries)} configurations over one parse, "
            f"{report['examples']} examples"
            + (f", up to {report['passes_run']} passes" if report["passes_run"] > 1 else ""),
            f"{'configuration':<{width}} {'average loss':>12} {'holdout loss':>12} "
            f"{'non-zero':>12} {'passes':>6}",
        ]
        front = set(report.get("pareto_front") or [])
        for k, (run, e) in enumerate(zip(self.runs, entries, strict=True)):
            name = run.configuration.name
            if "diverged" in e:
                lines.append(f"{name:<{width}} {'diverged':>12}")
                continue
            hold = holdout(e)
            marks = ("  * best" if k == report.get("best") else "") + (
                "  (Pareto front)" if k in front and k != report.get("best") else ""
            )
            lines.append(
                f"{name:<{width}} {_fmt(e.get('average_loss')):>12} {_fmt(hold):>12} "
                f"{e['nonzero_weights']:>12,} {e.get('passes_run', 1):>6}{marks}"
            )
        lines.append(f"best by {report['best_by']}; Pareto front: the configurations no other "
                     "beats on both loss and non-zero weights")  # fmt: skip
        if report.get("skipped_lines"):
            lines.append(f"skipped lines = {report['skipped_lines']} (malformed, see warnings "
                         "above)")  # fmt: skip
        return "\n".join(lines)


def holdout_kind(entries: list[dict]) -> bool:
    return all(holdout(e) is not None for e in entries if "diverged" not in e)


def grid_loss(entry: dict) -> float | None:
    """What ranks a configuration: holdout loss when it has one, else progressive loss."""
    if "diverged" in entry:
        return None
    h = holdout(entry)
    return h if h is not None else entry.get("average_loss")


GRID_COLUMNS = 6
"""Configurations shown one column each while a grid learns; more show the best and worst."""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _fmt(x) -> str:  # noqa: ANN001 - a JSON number or None
    return "n.a." if not isinstance(x, int | float) or not math.isfinite(x) else f"{x:.6f}"


def holdout(entry: dict) -> float | None:
    """The configuration's holdout loss: the best pass's over passes, else the run's."""
    for key in ("best_holdout_loss", "holdout_loss"):
        if isinstance(entry.get(key), int | float):
            return float(entry[key])
    return None


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points (non-zeros, loss) no other point beats on both, by non-zeros."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], math.inf
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front
