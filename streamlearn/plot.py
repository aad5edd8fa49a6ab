"""``sl plot``: loss curves and loss against sparsity, from ``--report`` files.

Each report is a run (``sl train --report``); a report holding a list of
``configurations`` (a sweep) contributes one run per configuration.  The first
panel draws each run's progressive average loss against the examples seen (log
x), as the progress table prints it; holdout rows (passes after the first, with
a holdout) are drawn as a second line of the same colour with ``h`` markers.
With two runs or more, a second panel places each run's final loss (holdout when
there is one, else progressive) against its non-zero weights, and joins the
Pareto front: the runs no other run beats on both.

A contextual-bandit report (``sl vw --cb_adf/--cb_explore_adf --report``) holds
off-policy estimates instead: one panel per report draws the IPS, SNIPS and DR
estimates of the learned policy's cost against the examples seen, each with its
confidence band, beside the logging policy's observed cost, and the holdout's final
estimates as error bars at the right when there are any
(:mod:`streamlearn.run.offpolicy`).

matplotlib is an optional extra (``pip install 'streamlearn[plot]'``); it is
imported only here, with the non-interactive Agg backend.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

from streamlearn.errors import InputUnreadable, UsageError
from streamlearn.run.report import holdout, pareto
from streamlearn.system.sources import describe

FORMATS = ("png", "svg", "pdf")
# the options worth naming in a label, in this order, when they differ from the defaults
_LABEL_OPTIONS = ("l1", "l2", "learning_rate", "power_t", "top_k", "theta", "period",
                  "ftrl_alpha", "ftrl_beta", "passes")  # fmt: skip


@dataclass
class Run:
    """One training run's figures, as a report holds them."""

    name: str
    config: dict
    curve: list[list[float]]
    loss: float | None
    holdout: bool
    nonzero: int | None
    label: str = ""
    typed: dict | None = None
    """A grid's values as written on the command line (``{"l1": "1e-5"}``), when known."""
    off_policy: dict | None = None
    """A contextual-bandit run's estimates: ``{"progressive": rows, "holdout": {...}}``."""


MAX_REPORT = 64 << 20
"""The largest report read (bytes): a sweep of a thousand configurations is a few MB."""
MAX_LABEL = 80
"""Characters of a label or title drawn (a run's name may be anything)."""


def _read_report(path: str) -> object:
    """The JSON value in the report at ``path``, read to at most :data:`MAX_REPORT` bytes."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_REPORT + 1)  # a regular file: its size; a stream: at most this
    except OSError as e:
        raise InputUnreadable(f"cannot read report {path}: {describe(e)}") from None
    if len(data) > MAX_REPORT:
        raise UsageError(f"{path} is larger than {MAX_REPORT >> 20} MiB: not an sl train report")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise UsageError(f"{path} is not a JSON report (not UTF-8 at byte {e.start})") from None
    except RecursionError:
        raise UsageError(f"{path} is not an sl train report (JSON nested too deeply)") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{path} is not a JSON report ({e.msg}, line {e.lineno})") from None


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _finite(x: object) -> bool:
    return _number(x) and math.isfinite(x)


_LARGEST = 1e100
"""The largest loss drawn: matplotlib cannot lay out an axis from -1e308 to 1e308 (an
overflow), and no run's loss means anything there."""
_MOST = 2.0**63
"""The most examples (or non-zero weights) a report can count."""


def _drawable(loss: object) -> bool:
    return _finite(loss) and abs(loss) <= _LARGEST


def _curve(path: str, rows: list) -> list[list[float]]:
    """The rows of a report's curve that can be drawn: a loss within ±:data:`_LARGEST`,
    1 to :data:`_MOST` examples (a log axis).

    A row is the progress table's seven figures and the holdout flag; null
    figures (not measured yet) are allowed.  Anything else is not a report.
    """
    out = []
    for k, row in enumerate(rows):
        if (not isinstance(row, list) or len(row) < 8
                or not all(x is None or _number(x) for x in row[:8])):  # fmt: skip
            raise UsageError(f"{path} is not an sl train report (curve row {k + 1} is not "
                             "eight numbers)")  # fmt: skip
        if _drawable(row[0]) and _finite(row[2]) and 1 <= row[2] <= _MOST:
            held = 1.0 if row[7] is not None and row[7] == row[7] and row[7] != 0 else 0.0
            out.append([float(x) if x is not None else math.nan for x in row[:7]] + [held])
    return out


def _entry_value(entry: dict, key: str, path: str, ok) -> object:  # noqa: ANN001
    value = entry.get(key)
    if value is not None and not ok(value):
        raise UsageError(f"{path} is not an sl train report ({key} is {value!r})"[:200])
    return value


def load_runs(paths: list[str]) -> list[Run]:
    """The runs of the reports at ``paths`` (one per report, or per configuration of a sweep).

    Each run's ``label`` names what tells it apart from the others: the options whose
    values differ between the runs, or its file's name when none do.  Anything that is
    not what ``sl train --report`` writes is a :class:`UsageError` naming the file.
    """
    runs = []
    for path in paths:
        report = _read_report(path)
        entries = report.get("configurations") if isinstance(report, dict) else None
        entries = entries if isinstance(entries, list) else [report]
        for k, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("curve"), list):
                raise UsageError(f"{path} is not an sl train report (no 'curve'): see --report")
            name = Path(path).stem if len(entries) == 1 else f"{Path(path).stem}[{k}]"
            config = _entry_value(entry, "config", path, lambda v: isinstance(v, dict)) or {}
            learner = _entry_value(entry, "learner", path, lambda v: isinstance(v, str))
            typed = _entry_value(entry, "grid_values", path, lambda v: isinstance(v, dict))
            nonzero = _entry_value(entry, "nonzero_weights", path,
                                   lambda v: _finite(v) and 0 <= v <= _MOST
                                   and float(v).is_integer())  # (a count)  # fmt: skip
            average = _entry_value(entry, "average_loss", path, _number)
            hold = holdout(entry)
            held = hold is not None
            loss = hold if held else average
            config = dict(config, learner=learner or "?")
            off = _off_policy(path, entry.get("off_policy"))
            runs.append(Run(name, config, _curve(path, entry["curve"]),
                            loss if _drawable(loss) else None, held,
                            nonzero, typed=typed, off_policy=off))  # fmt: skip
    differ = [k for k in _LABEL_KEYS if len({repr(r.config.get(k)) for r in runs}) > 1]
    if differ and all(_finite(r.config.get(k)) for r in runs for k in differ):
        runs.sort(key=lambda r: [r.config[k] for k in differ])  # a grid, in its order
    for run in runs:
        typed = run.typed or {}
        shown = " ".join(_option(k, typed.get(k, run.config.get(k))) for k in differ)
        run.label = _text(shown or run.name)
    return runs


_OPE = (("ips", "IPS", "C0"), ("snips", "SNIPS", "C1"), ("dr", "DR", "C2"),
        ("logging", "logging policy (observed)", "0.35"))  # fmt: skip
_OPE_COLUMNS = 13  # examples, then estimate, low, high of each of _OPE


def _off_policy(path: str, section: object) -> dict | None:
    """A report's ``off_policy`` section as drawable rows (None: there is none)."""
    if section is None:
        return None
    bad = UsageError(f"{path} is not an sl report (its off_policy section is malformed)")
    if not isinstance(section, dict):
        raise bad
    out: dict = {"progressive": [], "holdout": {}}
    prog = section.get("progressive")
    if isinstance(prog, dict):
        rows = prog.get("curve")
        if not isinstance(rows, list):
            raise bad
        for row in rows:
            if (not isinstance(row, list) or len(row) != _OPE_COLUMNS
                    or not all(x is None or _number(x) for x in row)):  # fmt: skip
                raise bad
            if _finite(row[0]) and 1 <= row[0] <= _MOST:
                out["progressive"].append([float(x) if _drawable(x) else math.nan for x in row])
    held = section.get("holdout")
    if isinstance(held, dict):
        for key, _, _ in _OPE:
            e = held.get(key)
            fields = ("estimate", "low", "high")
            if isinstance(e, dict) and all(_drawable(e.get(f)) for f in fields):
                out["holdout"][key] = (e["estimate"], e["low"], e["high"])
        n = held.get("examples")
        out["holdout_examples"] = n if _finite(n) else None
    out["confidence"] = section.get("confidence") if _finite(section.get("confidence")) else None
    return out


def off_policy_figure(runs: list[Run]):  # noqa: ANN201 - a matplotlib Figure
    """One panel per run with off-policy estimates: each estimator's progressive estimate of
    the learned policy's cost over the examples (log x) inside its confidence band, the
    logging policy's observed cost, the holdout's estimates as error bars at the right."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    shown = [r for r in runs if r.off_policy is not None]
    fig = Figure(figsize=(7.5 * min(len(shown), 3), 5), layout="constrained")
    axes = fig.subplots(1, min(len(shown), 3), squeeze=False)[0]
    for ax, run in zip(axes, shown[:3], strict=False):
        off = run.off_policy
        rows = [r for r in off["progressive"] if r[0] >= 10] or off["progressive"]
        xs = [r[0] for r in rows]
        for k, (key, label, color) in enumerate(_OPE):
            est = [r[1 + 3 * k] for r in rows]
            if not any(math.isfinite(v) for v in est):
                continue
            lo = [r[2 + 3 * k] for r in rows]
            hi = [r[3 + 3 * k] for r in rows]
            ax.plot(xs, est, color=color, linestyle="--" if key == "logging" else "-",
                    label=label)  # fmt: skip
            ax.fill_between(xs, lo, hi, color=color, alpha=0.15, linewidth=0)
        if off["holdout"] and xs:
            x0 = xs[-1] * 1.15
            for j, (key, _, color) in enumerate(_OPE):
                if key in off["holdout"]:
                    v, lo, hi = off["holdout"][key]
                    ax.errorbar([x0 * 1.06**j], [v], yerr=[[v - lo], [hi - v]], fmt="s",
                                color=color, capsize=3, markersize=4)  # fmt: skip
            ax.annotate(f"holdout\n({off.get('holdout_examples')} ex.)", (x0, 0.03),
                        xycoords=("data", "axes fraction"), fontsize="x-small",
                        ha="center")  # fmt: skip
        if rows:
            # the y range of the last third (log x) and the holdout: the early bands, wide
            # as they should be, would flatten the rest
            late = [r for r in rows if r[0] >= xs[-1] ** (2 / 3)] or rows
            finite = [v for r in late for v in r[1:] if math.isfinite(v)]
            finite += [v for t in off["holdout"].values() for v in t]
            if finite:
                lo, hi = min(finite), max(finite)
                pad = 0.15 * (hi - lo or 1.0)
                ax.set_ylim(lo - pad, hi + pad)
        ax.set_xscale("log")
        ax.set_xlabel("labeled examples (progressive: each scored before it is learned)")
        ax.set_ylabel("expected cost of the learned policy")
        conf = off.get("confidence")
        band = f", {100 * conf:.0f}% intervals" if conf else ""
        ax.set_title(_text(f"off-policy estimates — {run.name} ({run.config.get('learner')})"
                           f"{band}"), fontsize="medium")  # fmt: skip
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    return fig


def _text(s: str) -> str:
    """``s`` as matplotlib draws it literally: ``$`` escaped (no mathtext), cut short."""
    s = s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")  # odd names
    s = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in s)
    s = s if len(s) <= MAX_LABEL else s[: MAX_LABEL - 1] + "…"
    return s.replace("$", r"\$")


_LABEL_KEYS = ("learner", "loss") + _LABEL_OPTIONS


def _option(key: str, value) -> str:  # noqa: ANN001 - a JSON value
    if key == "learner":
        return str(value)[:MAX_LABEL]
    if isinstance(value, float):
        value = f"{value:g}"
    return f"{key.replace('_', '-')}={str(value)[:MAX_LABEL]}"


def title(runs: list[Run]) -> str:
    """What the runs share: learner, loss, and the regularisers and passes when set."""
    common = {}
    for k in _LABEL_KEYS:
        values = {repr(r.config.get(k)) for r in runs}
        if len(values) == 1 and runs[0].config.get(k) is not None:
            common[k] = runs[0].config[k]
    parts = [str(common[k]) for k in ("learner",) if k in common]
    if "loss" in common:
        parts.append(f"{common['loss']} loss")
    parts += [_option(k, common[k]) for k in ("l1", "l2", "top_k") if common.get(k)]
    if common.get("passes", 1) != 1:
        parts.append(f"{common['passes']} passes")
    return _text(", ".join(parts))


def figure(runs: list[Run]):  # noqa: ANN201 - a matplotlib Figure
    """The figure for ``runs``: the loss curves, and loss against non-zeros for 2+ runs."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    sparsity = len(runs) > 1 and all(r.nonzero is not None and r.loss is not None for r in runs)
    fig = Figure(figsize=(12 if sparsity else 7.5, 5), layout="constrained")
    axes = fig.subplots(1, 2 if sparsity else 1, squeeze=False)[0]
    ax = axes[0]
    for k, run in enumerate(runs):
        color = f"C{k % 10}"
        for h in (False, True):
            rows = [r for r in run.curve if bool(r[7]) == h and r[0] is not None and r[2] > 0]
            if not rows:
                continue
            ax.plot([r[2] for r in rows], [r[0] for r in rows], color=color,
                    linestyle="--" if h else "-", marker="$h$" if h else "o",
                    markersize=7 if h else 3,
                    label=f"{run.label} (holdout)" if h else run.label)  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("examples seen (all passes)")
    ax.set_ylabel("average loss")
    ax.set_title(f"progressive loss — {title(runs)}".rstrip(" —"))
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # no row to draw: no legend (and no warning)
        ax.legend(fontsize="small")
    if sparsity:
        ax = axes[1]
        pts = [(float(r.nonzero), float(r.loss)) for r in runs]
        for k, (run, (x, y)) in enumerate(zip(runs, pts, strict=True)):
            ax.plot([x], [y], "o", color=f"C{k % 10}", markersize=7)
            ax.annotate(run.label, (x, y), fontsize="x-small",
                        xytext=(4, 4), textcoords="offset points")  # fmt: skip
        front = pareto(pts)
        ax.plot([pts[i][0] for i in front], [pts[i][1] for i in front], "-o", color="0.3",
                linewidth=1, markersize=13, markerfacecolor="none", label="Pareto front",
                zorder=0)  # fmt: skip
        low, high = min(p[0] for p in pts), max(p[0] for p in pts)
        ax.set_xscale("log" if low > 0 and high > 10 * max(1.0, low) else "linear")
        ax.set_xlabel("non-zero weights")
        kind = "holdout" if all(r.holdout for r in runs) else "final"
        ax.set_ylabel(f"{kind} loss")
        ax.set_title(f"{kind} loss against sparsity")
        ax.margins(x=0.15, y=0.1)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    return fig


def plot(paths: list[str], out: str) -> None:
    """Draw the reports at ``paths`` into ``out`` (its suffix names the format)."""
    fmt = Path(out).suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise UsageError(f"-o {out}: the file name must end in .{', .'.join(FORMATS)}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError("sl plot needs matplotlib: pip install 'streamlearn[plot]'") from None
    from streamlearn.system.outputs import check_outputs, write_bytes

    check_outputs([(out, "plot")], list(paths))  # e.g. -o naming one of the reports
    runs = load_runs(paths)
    buf = io.BytesIO()
    draw = off_policy_figure if any(r.off_policy is not None for r in runs) else figure
    draw(runs).savefig(buf, format=fmt, dpi=110)
    write_bytes(out, buf.getvalue(), "plot")
