"""The off-policy estimates of a contextual-bandit run (``sl vw --cb_adf``, ``--cb_explore_adf``).

For each labeled example, the policy being learned is evaluated on the logged action
*before* it learns the example (as VW's progressive loss): its probability of the
logged action (the explorer's pmf, or 1/0 for ``--cb_adf``'s greedy choice) and its
reward model, the cb_adf scores (each action's predicted cost, from the same pre-learning
weights), feed the estimators of :mod:`streamlearn.learners.ope`.

* ``progressive``: the first pass's examples that are not held out: an honest estimate
  of the cost of the successive policies the run went through (each scored on an
  example it had not seen).
* ``holdout``: the held-out examples (``--passes`` with VW's holdout) of the last pass
  run.  As VW, ``--cb_adf`` learns its held-out examples after scoring them, so from
  the second pass on these examples have been seen before: optimistic, like VW's
  holdout loss of multiline examples.

The report's ``off_policy`` section holds both (``null`` when no example counted), with
each estimator's curve; ``sl vw --ope`` also prints them on stderr after VW's summary.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.learners import ope


class OffPolicy:
    """Accumulates a run's progressive and holdout estimates batch by batch."""

    def __init__(self, confidence: float = 0.95) -> None:
        self.z = _z(confidence)
        self.progressive = ope.Accumulator(self.z)
        self.holdout = ope.Accumulator(self.z)
        self.pass_number = 0

    def begin_pass(self, number: int) -> None:
        """Before pass ``number`` (1-based): the holdout counts the last pass only."""
        self.pass_number = number
        if number > 1:
            self.holdout = ope.Accumulator(self.z, self.holdout.dr_known)

    def greedy(self, part, ho: np.ndarray, scores: np.ndarray, order: np.ndarray) -> None:  # noqa: ANN001
        """``--cb_adf``: the policy takes the top-ranked action with probability 1."""
        ptr = part.mg.act_ptr
        m = ptr.shape[0] - 1
        top = order[ptr[:-1]]
        pi = (top == part.chosen).astype(np.float64)
        direct = scores[ptr[:-1] + top].astype(np.float64)
        self._add(part, ho, pi, direct, scores, m)

    def explored(self, part, ho: np.ndarray, acts: np.ndarray, probs: np.ndarray,
                 scores: np.ndarray | None) -> None:  # noqa: ANN001  # fmt: skip
        """``--cb_explore_adf``: the explorer's pmf (``acts``, ``probs`` per row)."""
        ptr = part.mg.act_ptr
        m = ptr.shape[0] - 1
        pi = ope.pi_of_logged(ptr, acts, probs, part.chosen)
        direct = None
        if scores is not None:
            sizes = np.diff(ptr)
            start = np.repeat(ptr[:-1], sizes)
            direct = ope.policy_direct(ptr, probs, scores[start + acts])
        self._add(part, ho, pi, direct, scores, m)

    def _add(self, part, ho, pi, direct, scores, m) -> None:  # noqa: ANN001
        labeled = part.chosen >= 0
        chat = None
        if scores is not None:
            ptr = part.mg.act_ptr
            chat = scores[ptr[:-1] + np.maximum(part.chosen, 0)].astype(np.float64)
        for acc, sel in ((self.progressive, labeled & ~ho if self.pass_number <= 1 else None),
                         (self.holdout, labeled & ho)):  # fmt: skip
            if sel is None or not sel.any():
                continue
            acc.add(part.cost[sel], part.prob[sel], pi[sel],
                    None if direct is None else direct[sel],
                    None if chat is None else chat[sel])  # fmt: skip

    def report(self) -> dict:
        """The report's ``off_policy`` section."""
        out = {"confidence": _confidence(self.z),
               "interval": "normal (central limit) on the per-example terms; SNIPS by the "
                           "delta method",
               "reward_model": "the cb_adf scores before each example is learned"}  # fmt: skip
        for name, acc in (("progressive", self.progressive), ("holdout", self.holdout)):
            if acc.sums[0] > 0:
                r = acc.result()
                r["curve_columns"] = list(ope.Accumulator.CURVE_COLUMNS)
                r["curve"] = acc.curve
                out[name] = r
            else:
                out[name] = None
        return out

    def lines(self) -> list[str]:
        """``sl vw --ope``'s stderr lines (after VW's summary)."""
        rep = self.report()
        pct = f"{100 * rep['confidence']:.0f}%"
        out = []
        for name in ("progressive", "holdout"):
            r = rep[name]
            if r is None:
                continue
            out.append(f"off-policy estimates of the learned policy's cost, {name} "
                       f"({r['examples']} examples, {pct} intervals):")  # fmt: skip
            for key, what in (("ips", "IPS"), ("snips", "SNIPS"), ("dr", "DR"),
                              ("logging", "logging policy (observed)")):  # fmt: skip
                e = r[key]
                if e is None:
                    out.append(f"  {what:<26} n.a. (no reward model)")
                    continue
                out.append(f"  {what:<26} {_f(e['estimate'])} [{_f(e['low'])}, {_f(e['high'])}]")
            eff = r["effective_examples"]
            out.append(f"  largest weight {r['max_weight']:.6g}, effective examples "
                       + (f"{eff:.1f}" if eff is not None else "n.a."))  # fmt: skip
        return out


def _f(x: float) -> str:
    return f"{x:.6f}" if math.isfinite(x) else "n.a."


def _z(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence`` (bisection on erf)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    lo, hi = 0.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.erf(mid / math.sqrt(2.0)) < confidence:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _confidence(z: float) -> float:
    return math.erf(z / math.sqrt(2.0))
