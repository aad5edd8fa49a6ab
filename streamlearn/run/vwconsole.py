"""``sl vw``'s stderr as Vowpal Wabbit 9 prints it: the header before the table, and the
summary after it (``Outputs.vw_format``; ``sl train`` prints sl's own).

The header is VW's lines in VW's order: the feature options (``creating quadratic
features for pairs: ...``, the namespace filters), ``only testing``, the l1/l2 lines,
the output files, the learner's own lines (FTRL, FreeGrad), the cache and data files,
``Num weight bits`` to ``power_t`` (``decay_learning_rate`` with several passes),
``Enabled learners``, ``Input label``, ``Output pred``.  sl's cache is its own file
(``DATA.cache.sl``): the cache lines name it.

The summary counts as VW counts (:class:`Tally` holds what the kernels do not count:
the features of held-out examples, the labels VW's ``count_label`` observed), and
prints only VW's lines, plus ``skipped lines`` when lines were skipped (VW is silent
about them).
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.stacked import without_gd
from streamlearn.run.classes import vw_name, vw_types
from streamlearn.run.vwformat import general
from streamlearn.system.libm import powf

F32 = np.float32


class Tally:
    """What VW counts that sl's kernels do not, from the batches as they are learned.

    ``period``/``after``: the holdout rule in force (:class:`~streamlearn.config.TrainConfig`'s
    ``effective_holdout`` and ``holdout_after``), as the kernels apply it.
    """

    def __init__(self, period: int, after: int) -> None:
        self.period = period
        self.after = after
        self.held_features = 0
        """Features of labeled held-out examples: VW's total feature number leaves them out."""
        self.labels: list[float] = []
        """The first two labels learned, as VW's ``count_label`` keeps them."""
        self.more_than_two = False
        self.lists_labeled = True
        """Rows of label lists count as labeled (``--memory_tree --oas``'s do not: VW counts
        its examples as a scalar's, never labeled)."""
        self.held_labeled = True
        """Held-out rows with a label count as labeled (``--oaa_subsample``'s do not: VW
        counts every example of it as unlabeled, its held-out ones' features too)."""

    def observe(self, batch, pass_n_after: float, pass_no: int) -> None:
        """A batch just learned (or scored); ``pass_n_after``: the kernel's example count of
        the pass.  Labels are observed on the first pass, held-out examples left out (VW's
        ``count_label`` sees them under ``-t`` too)."""
        idx = np.flatnonzero(batch.status == 0)
        if idx.size == 0:
            return
        seen = pass_n_after - idx.size + 1 + np.arange(idx.size)
        if self.after > 0:
            held = seen > self.after
        elif self.period > 0:
            held = seen % self.period == 0
        else:
            held = np.zeros(idx.size, dtype=bool)
        # (VW counts an unlabeled held-out example as any other: only labeled ones are left out)
        labels = batch.labels[idx]
        labeled = ~np.isnan(labels) if labels.ndim == 1 else self.lists_labeled  # (lists: all)
        labeled = labeled & self.held_labeled
        self.held_features += int(np.diff(batch.indptr)[idx][held & labeled].sum())
        if pass_no != 1 or self.more_than_two:
            return
        labels = batch.labels[idx][~held]
        for y in np.unique(F32(labels[~np.isnan(labels)])).tolist():
            if y in self.labels:
                continue
            if len(self.labels) < 2:
                self.labels.append(y)
            else:
                self.more_than_two = True
                return


DUPLICATES_NOTE = ("[info] Any duplicate namespace interactions will be removed\n"
                   "You can use --leave_duplicate_interactions to disable this behaviour.\n")
SAVE_NOTE = ("[info] VW 9.0.0 introduced a change to the default model save behavior. Please use "
             "'--predict_only_model' when using either '--invert_hash' or '--readable_model' to "
             "get the old behavior. Details: https://vowpalwabbit.org/link/1\n")


def say_notes(config, outputs) -> None:  # noqa: ANN001 - a TrainConfig, run.options.Outputs
    """VW's informational lines at set-up, which its logger writes on standard output (not
    with the header on standard error; none under ``--quiet``): the n-grams and skips made
    (each as given), wildcard interactions lose their duplicates, and which interactions did
    or were sorted; a readable model holds the resume state unless ``--predict_only_model``."""
    from streamlearn.io.interactions import rewritten

    notes = [_gram_note(g, what) for what, given in (("grams", config.ngram),
                                                     ("skips", config.skips)) for g in given]
    leave = config.leave_duplicate_interactions
    if not leave and generates_interactions(config):
        notes.append(DUPLICATES_NOTE)
    try:
        removed, ordered = rewritten(config.quadratic, config.cubic, config.interactions, leave)
    except ValueError:  # (the run refuses the spec in its own words)
        removed, ordered = 0, 0
    if removed:
        notes.append(f"[warning] Duplicate namespace interactions were found. Removed: "
                     f"{removed}.\nYou can use --leave_duplicate_interactions to disable this "
                     "behaviour.\n")  # fmt: skip
    if ordered:
        notes.append("[warning] Some interactions contain duplicate characters and their "
                     f"characters order has been changed. Interactions affected: {ordered}.\n")
    for spec in config.redefine:  # (VW names the target by its byte's number)
        at = spec.find(":=")
        if at >= 2:
            target = ord(spec[0]) if len(spec) > at + 2 else 32
            notes.append("[warning] Multiple namespaces are used in target part of --redefine "
                         f"argument. Only first one ('{target}') will be used as target "
                         "namespace.\n")  # fmt: skip
    readable = getattr(outputs, "invert_hash", None) or getattr(outputs, "readable_model", None)
    if readable and getattr(outputs, "model_format", "sl") != "vw_predict_only":
        notes.append(SAVE_NOTE)
    reduction = _single_line(config)  # (what a reduction says as VW sets it up)
    if reduction is not None and hasattr(reduction[0], "stdout_lines"):
        notes += [line + "\n" for line in reduction[0].stdout_lines(reduction[1])]
    if notes:
        vw_log("".join(notes))


def _gram_note(spec: str, what: str) -> str:
    """VW's line for one ``--ngram``/``--skips`` spec (``N``: every namespace; ``aN``)."""
    import re

    every = spec[:1].isdigit()
    n = int(re.match(r"\d*", spec if every else spec[1:]).group() or 0)  # (C's atoi)
    where = "all" if every else spec[0]
    return f"[info] Generating {n}-{what} for {where} namespaces.\n"


LOG_TO = {"stream": "stdout"}
"""Where :func:`vw_log` writes (``sl vw --log_output stderr``: ``"stderr"``)."""


def log_to(stream: str) -> None:
    """VW's ``--log_output``: ``stderr`` sends VW's info and warning lines to standard
    error, ``compat`` and ``stdout`` to standard output (VW's default)."""
    LOG_TO["stream"] = "stderr" if stream == "stderr" else "stdout"


def vw_log(text: str) -> None:
    """Write ``text`` (whole lines) where VW's logger writes its info and warning lines:
    standard output unless ``--log_output stderr`` (a reader gone: nothing more said)."""
    import sys

    out = sys.stderr if LOG_TO["stream"] == "stderr" else sys.stdout
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        pass


def header(config, inputs, outputs, cache: tuple[str, bool] | None, model_t: float | None,
           sources: list[str]) -> str:  # fmt: skip
    """VW's lines before the table.  ``cache``: (path, reused) when a cache was asked for;
    ``model_t``: a continued model's example count (VW's ``initial_t`` line shows it)."""
    c = config
    lines = []
    if c.quadratic:
        lines.append(f"creating quadratic features for pairs: {' '.join(c.quadratic)}")
    if c.cubic:
        lines.append(f"creating cubic features for triples: {' '.join(c.cubic)}")
    if c.interactions:
        lines.append(f"creating features for following interactions: {' '.join(c.interactions)}")
    for name, words in (("ignore", "ignoring namespaces beginning with:"),
                        ("ignore_linear", "ignoring linear terms for namespaces beginning with:"),
                        ("keep", "using namespaces beginning with:")):  # fmt: skip
        chars = sorted(set("".join(getattr(c, name))), key=lambda ch: ch.encode("latin-1"))
        if chars:
            lines.append(words + "".join(f" {ch}" for ch in chars))
    if c.test_only:
        lines.append("only testing")
    if c.named_labels:
        from streamlearn.io.named import NamedLabels

        lines.append(f"parsed {NamedLabels.of(c.named_labels).k} named labels")
    if c.l1:
        lines.append(f"using l1 regularization = {general(c.l1)}")
    if c.l2:
        lines.append(f"using l2 regularization = {general(c.l2)}")
    if outputs.final_model:
        lines.append(f"final_regressor = {outputs.final_model}")
    if outputs.predictions:
        lines.append(f"predictions = {_vw_path(outputs.predictions)}")
    if outputs.raw_predictions:
        lines.append(f"raw predictions = {_vw_path(outputs.raw_predictions)}")
    reduction = _single_line(c)
    if reduction is not None:
        lines += reduction[0].header_lines(reduction[1], c)
    lines += _learner_lines(c)
    if cache is None:
        lines.append("using no cache")
    elif cache[1]:
        lines += [f"using cache_file = {cache[0]}", "ignoring text input in favor of cache input"]
    else:
        lines.append(f"creating cache_file = {cache[0]}")
    if cache is None or not cache[1]:
        lines += [f"Reading datafile = {'' if s == '-' else s}" for s in sources]
    lines.append(f"num sources = {len(sources)}")
    t0 = model_t if model_t is not None else start_t(c)
    lines += [
        f"Num weight bits = {c.bits}",
        f"learning rate = {general(_eta(c))}",
        f"initial_t = {general(t0)}",
        f"power_t = {general(c.power_t)}",
    ]
    if c.passes > 1:
        lines.append(f"decay_learning_rate = {general(c.decay_learning_rate)}")
    if not getattr(outputs, "audit_regressor", None):  # (VW's audit_regressor leaves it out)
        lines.append("Enabled learners: " + ", ".join(_learners(c, outputs)))
    lines += vw_types(c, outputs)
    return "\n".join(lines)


def _vw_path(path: str) -> str:
    return "stdout" if path == "-" else path


FTRL_NAMES = {"ftrl": "Proximal-FTRL", "coin": "Coin Betting", "pistol": "PiSTOL"}


def _learner_lines(c) -> list[str]:
    if c.algo in FTRL_NAMES:
        return ["Enabling FTRL based optimization", f"Algorithm used: {FTRL_NAMES[c.algo]}",
                f"ftrl_alpha = {general(c.ftrl_alpha)}", f"ftrl_beta = {general(c.ftrl_beta)}"]
    if c.algo == "freegrad":
        return ["Enabling FreeGrad based optimization", "Algorithm used: FreeGrad"]
    return []


def generates_interactions(c) -> bool:  # noqa: ANN001 - a TrainConfig
    """Whether VW stacks ``generate_interactions`` just above its base learner: an
    interaction with a wildcard (``-q ::``, ``--cubic a::``)."""
    return any(":" in v for v in (*c.quadratic, *c.cubic, *c.interactions))


def with_generator(chain: str, c) -> str:  # noqa: ANN001 - a TrainConfig
    """A multiline run's ``Enabled learners`` chain with VW's ``generate_interactions`` after
    its base learner, where :func:`generates_interactions` says VW stacks it."""
    if not generates_interactions(c) or "generate_interactions" in chain:
        return chain
    first, _, rest = chain.partition(", ")
    return f"{first}, generate_interactions, {rest}"


def _learners(c, outputs) -> list[str]:  # noqa: ANN001
    base = f"ftrl-{FTRL_NAMES[c.algo]}" if c.algo in FTRL_NAMES else c.algo
    if getattr(outputs, "print_examples", False):
        base = "print"  # (VW's print learner in the base learner's place: run/vwprint.py)
    reduction = _single_line(c)
    name, above, on_top = None, False, False
    if reduction is not None:
        module, opts = reduction
        name = module.stack_name(opts) if hasattr(module, "stack_name") else module.NAME
        above = getattr(module, "ABOVE_SCORER", False)
        if hasattr(module, "above_classes") and module.above_classes(opts):
            name, on_top = None, name  # (--replay_c: above csoaa)
        if getattr(module, "BASE", False):  # (--bfgs: VW names it instead of gd)
            base, name = name, None
    out = [base, *([name] if name and not above else []), f"scorer-{outputs.link}",
           *([name] if name and above else [])]
    if generates_interactions(c):
        out.insert(1, "generate_interactions")
    if c.binary:
        out.append("binary")
    multi = c.oaa and not (c.csoaa or c.multilabel)  # (--classweight: VW's, over its type)
    if c.classweight and not c.oaa:
        out.append("classweight-scalar")
    out.append(vw_name(c, outputs))
    if on_top:
        out.append(on_top)
    if c.classweight and multi:
        out.append("classweight-multi")
    return out


def _single_line(c):  # noqa: ANN001, ANN202 - (module, options) | None
    """The reduction of :data:`streamlearn.reductions.SINGLE_LINE` the run stacks, if any."""
    if not c.stack:
        return None
    from streamlearn.reductions import single_line

    return single_line(c)


def start_t(c) -> float:
    """VW's ``sd->t`` at the start: ``--initial_t``, else 0 (1 for gd without adaptive and
    normalized; sl's configuration holds 1 for every other learner too: read as 0)."""
    t0 = c.initial_t if c.initial_t is not None else 0.0
    return 0.0 if c.algo != "gd" and t0 == 1.0 else t0


def _eta(c) -> float:
    """VW's ``learning rate`` line: gd without adaptive and normalized multiplies the rate
    by t0^power_t (float32); a base learner VW sets up instead of gd does not."""
    eta = F32(c.learning_rate)
    if c.algo == "gd" and not (c.adaptive or c.normalized) and not without_gd(c.stack):
        eta = F32(eta * powf(start_t(c), c.power_t))
    return float(eta)


def summary(s: dict, stats: np.ndarray, config, tally: Tally | None, holdout: bool,
            probabilities: bool, earlier_passes: int = 0,
            gstate: np.ndarray | None = None, best_constant: bool = True) -> str:  # fmt: skip
    """VW's "finished run" block.  ``s``: the run's report; ``stats``: the kernel's
    counters over the whole run; ``holdout``: VW's holdout is on (several passes without
    ``--holdout_off``, or ``--holdout_after``); ``earlier_passes``: the passes of a model
    continued with its counters (``--preserve_performance_counters``), which VW adds;
    ``gstate``: the learner's global state (a reduction's summary lines read it);
    ``best_constant``: False without the best constant's lines (``--dont_output_best_constant``)."""
    from streamlearn.learners import base as B

    def f6(x: float) -> str:
        return f"{x:.6f}"

    passes = s.get("passes_run", 1) + earlier_passes
    shown = int(stats[B.S_SHOWN_N])
    lines = ["", "finished run"]
    if passes <= 1:
        lines.append(f"number of examples = {shown}")
    else:
        lines += [f"number of examples per pass = {shown // passes}", f"passes used = {passes}"]
    wlab = stats[B.S_WLAB]
    lines += [f"weighted example sum = {f6(stats[B.S_SHOWN_W])}",
              f"weighted label sum = {f6(0.0 if config.oaa else stats[B.S_LABEL_SUM])}"]
    held = s.get("best_holdout_loss") if passes > 1 else s.get("holdout_loss")
    if not holdout:
        avg = f6(stats[B.S_LOSS] / wlab) if wlab > 0 else "n.a."
    else:
        # (after passes VW keeps the best pass's holdout loss as a float: its this_loss)
        shown_loss = float(np.float32(held)) if held is not None and passes > 1 else held
        avg = "undefined (no holdout)" if held is None else f"{f6(shown_loss)} h"
        if without_gd(config.stack):  # (VW's best holdout loss is gd's: 0 without gd)
            avg = f"{f6(0.0)} h"
    lines.append(f"average loss = {avg}")
    if config.oaa and probabilities and not config.multilabel:  # (VW's oaa's, not multilabel's)
        if not holdout:
            lines.append(f"average multiclass log loss = {f6(stats[B.S_MC_LOGLOSS] / wlab)}")
        else:
            lines.append(f"average multiclass log loss = {f6(stats[B.S_HO_MC_LOGLOSS] / wlab)} h")
    if not config.oaa and tally is not None and best_constant:
        lines += _best_constant(s, config, tally, stats)
    features = int(stats[B.S_FEATURES]) - (tally.held_features if tally is not None else 0)
    lines.append(f"total feature number = {features}")
    reduction = _single_line(config)
    if reduction is not None and gstate is not None and hasattr(reduction[0], "summary_lines"):
        lines += reduction[0].summary_lines(reduction[1], gstate)
    if s.get("skipped_lines"):
        how = "malformed; each counted once, skipped on every pass" if passes > 1 else "malformed"
        lines.append(f"skipped lines = {s['skipped_lines']} ({how}, see warnings above)")
    return "\n".join(lines)


def _best_constant(s: dict, config, tally: Tally, stats: np.ndarray) -> list[str]:
    """VW's best-constant lines (``get_best_constant``): from the first two labels it
    observed, in float32, when it has a formula for the loss."""
    from streamlearn.learners import base as B

    if not tally.labels:
        return []
    l1 = F32(tally.labels[0])
    l2 = F32(tally.labels[1]) if len(tally.labels) > 1 else F32(0.0)
    if l1 == l2:
        return []
    lo, hi = min(l1, l2), max(l1, l2)
    wl, wlab = float(stats[B.S_LABEL_SUM]), float(stats[B.S_WLAB])
    lo_cnt = F32((wl - float(hi) * wlab) / float(lo - hi))
    hi_cnt = F32(F32(wlab) - lo_cnt)
    if lo_cnt + hi_cnt <= F32(0.0):
        return []
    loss = config.loss
    if loss in ("squared", "classic"):
        best = F32(F32(wl) / F32(wlab))
    elif tally.more_than_two:
        return []
    elif loss == "hinge":
        best = F32(-1.0) if hi_cnt <= lo_cnt else F32(1.0)
    elif loss == "logistic":
        lo, hi = F32(-1.0), F32(1.0)
        if lo_cnt <= 0:
            best = F32(1.0)
        elif hi_cnt <= 0:
            best = F32(-1.0)
        else:
            best = F32(np.log(F32(hi_cnt / lo_cnt)))
    elif loss == "quantile":
        q = F32(F32(config.quantile_tau) * F32(lo_cnt + hi_cnt))
        best = hi if q < hi_cnt else lo
    else:
        return []
    out = [f"best constant = {float(best):.6f}"]
    if not tally.more_than_two:
        total = F32(0.0)
        for y, cnt in ((lo, lo_cnt), (hi, hi_cnt)):
            if cnt > 0:
                total = F32(total + F32(_loss(loss, best, y, config.quantile_tau) * cnt))
        out.append(f"best constant's loss = {float(F32(total / F32(lo_cnt + hi_cnt))):.6f}")
    return out


def _loss(loss: str, p: np.float32, y: np.float32, tau: float) -> np.float32:
    """VW's ``get_loss`` of the losses with a best constant, in float32."""
    if loss in ("squared", "classic"):
        return F32((p - y) * (p - y))
    if loss == "hinge":
        e = F32(F32(1.0) - y * p)
        return e if e > 0 else F32(0.0)
    if loss == "logistic":
        std = F32((y + F32(1.0)) / F32(2.0))

        def sub(label: float) -> np.float32:
            e = F32(np.exp(float(F32(-label * p))))
            return F32(np.log(float(F32(F32(1.0) + e))))

        return F32(std * sub(1.0) + F32(F32(1.0) - std) * sub(-1.0))
    e = F32(y - p)  # quantile
    return F32(F32(tau) * e) if e > 0 else F32(-F32(F32(1.0) - F32(tau)) * e)
