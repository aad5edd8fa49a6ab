"""``sl vw``'s stderr for multiline reductions as VW 9 prints it: the header, the
progress rows and the counts of the summary (``--cb_adf``, ``--cb_explore_adf``, ``--cb K``,
``--cb_explore K``, ``--csoaa_ldf``).

The header is :func:`streamlearn.run.vwconsole.header`'s with the reduction's lines
(``cb_type``, ``Enabled learners``, ``Input label``, ``Output pred``).  The rows are
printed where VW prints them (weighted examples reaching the dump interval, doubled
after each row), each example's figures given per batch as arrays, so the work per
batch is numpy's and the Python per row only (a row per doubling).

VW's counts of features (``current features``, ``total feature number``):

* the row column counts each action line with the shared line's features but its
  constant (``print_update_cb``, ``cs_count_features``): the merged rows' entries;
* the summary of ``--cb_adf`` (``cb_adf::update_statistics``) counts each line once, the
  shared line with its constant; ``--cb_explore_adf``, ``--cb K`` and ``--csoaa_ldf``
  count as the column;
* interactions add each example's crossed features to both (VW counts the crosses of the
  merged action lines).
"""

from __future__ import annotations

import numpy as np

from streamlearn.reductions import reduction_of

F32 = np.float32


def learners(ml, algo: str = "gd") -> tuple[str, str, str]:  # noqa: ANN001
    """(Enabled learners, Input label, Output pred) of VW's header for ``ml`` over the base
    learner ``algo``."""
    from streamlearn.run.vwconsole import FTRL_NAMES

    base = f"ftrl-{FTRL_NAMES[algo]}" if algo in FTRL_NAMES else "gd"
    base += ", scorer-identity"
    if getattr(ml, "legacy", False):
        from streamlearn.run.cblegacy import learners as legacy

        return legacy(ml)
    return reduction_of(ml).stack(ml, base)


def header(ml, config, inputs, outputs, cache: tuple[str, bool] | None,
           sources: list[str], model_t: float | None = None) -> str:  # noqa: ANN001  # fmt: skip
    """VW's lines before the table for a multiline run (``model_t``: the t of VW's model
    continued, which VW's "initial_t" line says)."""
    from streamlearn.run.vwconsole import header as single
    from streamlearn.run.vwconsole import with_generator

    lines = single(config, inputs, outputs, cache, model_t, sources).split("\n")
    while lines and not lines[-1].startswith("Enabled learners"):
        lines.pop()
    lines.pop()
    chain, label, pred = learners(ml, config.algo)
    chain = with_generator(chain, config)
    # what a reduction says as it is set up: before the data's lines
    at = next((i for i, ln in enumerate(lines) if ln.startswith(
        ("using ", "creating cache", "Reading datafile"))), len(lines))  # fmt: skip
    if getattr(ml, "explore", None) == "synthcover":
        lines[at:at] = ["Using synthcover for CB exploration",
                        f"synthcoversize = {ml.synthcoversize}",
                        f"synthcoverpsi = {float(F32(ml.synthcoverpsi)):g}"]  # fmt: skip
    if getattr(ml, "cb_dro", False):  # (named above cb_adf or its explorer)
        from streamlearn.reductions import cb_dro

        lines[at:at] = cb_dro.header_lines(ml)
        chain = cb_dro.chain(ml, chain)
    if getattr(ml, "large_action_space", False):
        from streamlearn.reductions import large_action

        chain = large_action.chain(ml, chain)
    if reduction_of(ml).cb and not getattr(ml, "mwt", ""):
        lines.append(f"cb_type = {ml.cb_type}")  # (--multiworld_test runs no cb learner)
    elif getattr(outputs, "probabilities", False) and not ml.csoaa_rank:
        # VW's csoaa_ldf-prob (its --csoaa_rank wins); VW's warnings go to its stdout (not
        # written, as its other warnings)
        chain, pred = chain.replace(", csoaa_ldf,", ", csoaa_ldf-prob,"), "SCALARS"
    elif getattr(outputs, "link", "identity") != "identity":
        chain = chain.replace("scorer-identity", f"scorer-{outputs.link}")  # (VW's scorer)
    lines += [f"Enabled learners: {chain}", f"Input label = {label}", f"Output pred = {pred}"]
    return "\n".join(lines)


def vw_header(ml, cfg, inputs, outputs, say, model_t: float | None = None,
              step: float = 0.0) -> Progress:  # noqa: ANN001  # fmt: skip
    """Say VW's header of a multiline run of configuration ``cfg`` (its notes, then
    :func:`header`, the cache as ``-c`` finds it; ``model_t``: the t of VW's model
    continued); the progress table to fill (``step``: ``-P``'s)."""
    import os

    from streamlearn.io.example_cache import is_cache
    from streamlearn.run import vwconsole

    vwconsole.say_notes(cfg, outputs)
    cache = None
    if inputs.cache:
        reused = (os.path.exists(inputs.cache) and not inputs.rebuild_cache
                  and is_cache(inputs.cache))  # fmt: skip
        cache = (inputs.cache, reused)
    say(header(ml, cfg, inputs, outputs, cache, list(inputs.sources or ["-"]), model_t))
    holdout_on = bool(cfg.effective_holdout) and max(1, cfg.passes) > 1
    return Progress(say, holdout_on, step=step)


TABLE_HEAD = (
    "average  since         example        example        current        current  current\n"
    "loss     last          counter         weight          label        predict features"
)


def _cell(text: str, width: int) -> str:
    """A right-aligned label/predict cell, cut with ``...`` as VW's when too wide."""
    if len(text) > width:
        text = text[: width - 3] + "..."
    return f"{text:>{width}}"


class Progress:
    """VW's shared_data counters over a multiline run, and its progress rows.

    :meth:`batch` takes one batch's examples in order (each of weight 1): whether each
    is labeled, held out, its loss and feature counts, and two callables that give an
    example's label and prediction text (asked only for the rows printed).
    """

    def __init__(self, say, holdout_on: bool, quiet: bool = False,  # noqa: ANN001
                 step: float = 0.0) -> None:  # fmt: skip
        self.say = say
        self.step = step  # -P (run.console.progress_step): 0 doubles, f > 1 multiplies, -n adds
        self.holdout_on = holdout_on
        self.quiet = quiet
        self.sum_loss = 0.0
        self.since_loss = 0.0
        self.wlab = 0.0
        self.wunl = 0.0
        self.old_wlab = 0.0
        self.ho_loss = 0.0
        self.ho_w = 0.0
        self.ho_since_loss = 0.0
        self.ho_since_w = 0.0
        self.example_number = 0
        self.total_features = 0
        self.dump = -step if step < 0.0 else 1.0
        self.started = False

    def batch(self, npass: int, labeled: np.ndarray, held: np.ndarray, loss: np.ndarray,
              row_features: np.ndarray, total_features: np.ndarray, label_of,
              pred_of) -> None:  # noqa: ANN001  # fmt: skip
        m = labeled.shape[0]
        if m == 0:
            return
        if not self.started and not self.quiet:
            self.say(TABLE_HEAD)
        self.started = True
        ho = held & labeled  # VW's holdout: test_only and labeled
        normal = ~ho
        c_lab = np.cumsum(labeled & normal)
        c_unl = np.cumsum(~labeled & normal)
        c_loss = np.cumsum(np.where(normal, loss, 0.0))
        c_hol = np.cumsum(np.where(ho, loss, 0.0))
        c_how = np.cumsum(ho)
        c_n = np.cumsum(normal)
        base = (self.wlab, self.wunl, self.sum_loss, self.since_loss, self.ho_loss, self.ho_w,
                self.ho_since_loss, self.ho_since_w, self.example_number)  # fmt: skip
        done = (0.0, 0.0, 0.0, 0.0, 0)  # lab, unl, loss, hol, how at the last row in this batch
        start = 0
        while not self.quiet:
            we0 = self.wlab + self.wunl
            # the first example at which the weighted examples reach the dump interval
            need = self.dump - we0
            target = c_lab + c_unl - (done[0] + done[1])
            idx = np.searchsorted(target[start:], need, side="left") + start if need > 0 else start
            if need <= 0:
                idx = start
            if idx >= m:
                break
            e = int(idx)
            lab, unl, ls, hl, hw = (float(c_lab[e]), float(c_unl[e]), float(c_loss[e]),
                                    float(c_hol[e]), float(c_how[e]))  # fmt: skip
            self.wlab += lab - done[0]
            self.wunl += unl - done[1]
            self.sum_loss += ls - done[2]
            self.since_loss += ls - done[2]
            self.ho_loss += hl - done[3]
            self.ho_since_loss += hl - done[3]
            self.ho_w += hw - done[4]
            self.ho_since_w += hw - done[4]
            self.example_number = base[8] + int(c_n[e])
            done = (lab, unl, ls, hl, hw)
            self._row(npass, label_of(e), pred_of(e), int(row_features[e]))
            start = e + 1
        self.wlab += float(c_lab[-1]) - done[0]
        self.wunl += float(c_unl[-1]) - done[1]
        self.sum_loss += float(c_loss[-1]) - done[2]
        self.since_loss += float(c_loss[-1]) - done[2]
        self.ho_loss += float(c_hol[-1]) - done[3]
        self.ho_since_loss += float(c_hol[-1]) - done[3]
        self.ho_w += float(c_how[-1]) - done[4]
        self.ho_since_w += float(c_how[-1]) - done[4]
        self.example_number = base[8] + int(c_n[-1])
        self.total_features += int(np.sum(total_features[normal]))

    def _row(self, npass: int, label: str, pred: str, features: int) -> None:
        holding = self.holdout_on and npass >= 1
        if holding:
            avg = ("unknown" if self.ho_loss == 0.0 and self.ho_w == 0.0
                   else f"{self.ho_loss / self.ho_w:.6f}")  # fmt: skip
            since = ("unknown" if self.ho_since_loss == 0.0 and self.ho_since_w == 0.0
                     else f"{self.ho_since_loss / self.ho_since_w:.6f}")  # fmt: skip
            self.ho_since_loss = 0.0
            self.ho_since_w = 0.0
        else:
            avg = f"{self.sum_loss / self.wlab:.6f}" if self.wlab > 0 else "n.a."
            since = ("n.a." if self.wlab == self.old_wlab
                     else f"{self.since_loss / (self.wlab - self.old_wlab):.6f}")  # fmt: skip
        we = self.wlab + self.wunl
        line = (f"{avg[:8]:<8} {since[:8]:<8} {self.example_number:>12d} {we:>14.1f} "
                f"{_cell(label, 14)} {_cell(pred, 14)} {features:>8d}")  # fmt: skip
        if holding:
            line += " h"
        self.say(line)
        self.since_loss = 0.0
        self.old_wlab = self.wlab
        if self.step < 0.0:
            self.dump = float(F32(we - self.step))
        else:
            self.dump = float(F32(we * (self.step if self.step > 0.0 else 2.0)))
