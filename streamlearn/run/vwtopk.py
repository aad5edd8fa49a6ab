"""``sl vw --top K``: VW's topk over gd, its groups of examples, its ``-p`` and its table.

gd learns each example as a run without ``--top`` would, in the file's order; the examples
come in groups separated by empty lines (several in a row make no empty group; the last group
ends with the input).  A line of blanks is not one: VW reads it as an example with no
features (its count and table show it), sl's parser as no example at all, in every run.
Once a group is learned:

* ``-p`` gets the group's K highest predictions, lowest first, each ``prediction`` (six
  decimals) then a space, `` tag`` when the example has one, and `` `` and a newline; then
  an empty line (VW's ``std::multimap`` keeps the first of equal predictions: a later one
  replaces the lowest only when it is higher);
* the table gets a line when VW's does (its weighted examples past ``-P``'s point): the
  losses as every table's, the examples so far, then the group's labels and predictions
  comma-separated with at most two decimals (``3,0,2``; an unlabeled example's label is
  VW's FLT_MAX, ``340282346...``: a column longer than 14 characters ends in ``...``) and
  the group's features.

The kernel learns a group's examples one call each, each with gd's ``t`` as the group began
(VW counts a group's examples once it is learned: its rates under ``--normalized`` or
``--invariant`` alone, which decay with ``t``, depend on it), with the kernel's own table
lines turned off (:data:`~streamlearn.learners.base.S_NEXT_DUMP` never reached: the
largest float, so the counters stay finite); the summary is every run's.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from streamlearn.learners.base import (
    G_T,
    S_FEATURES,
    S_LOSS,
    S_NEXT_DUMP,
    S_SHOWN_N,
    S_SHOWN_W,
    S_SINCE_LOSS,
    S_SINCE_W,
    S_WLAB,
)
from streamlearn.run.report import table_line
from streamlearn.run.vwaudit import row_batch
from streamlearn.run.vwformat import link32

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)
WIDTH = 14
"""VW's label and prediction columns: a longer text is cut to 11 characters and ``...``."""


def fmt2(x: float) -> str:
    """VW's ``fmt_float(x, 2)``: two decimals, then trailing zeros and the point dropped."""
    text = f"{x:.2f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _cut(text: str) -> str:
    return text if len(text) <= WIDTH else text[: WIDTH - 3] + "..."


class TopK:
    """The groups of a run of ``--top k``: learned by ``learn(rows)`` (the run's kernel
    over a batch of rows, returning their predictions), written to ``write`` (bytes, or
    None without ``-p``), their table lines said with ``say``; ``stats`` the learner's,
    ``progress`` the console's ``-P`` (:func:`streamlearn.run.console.progress_step`),
    ``link`` and ``binary`` what VW's scorer applies to a prediction."""

    def __init__(self, k: int, stats: np.ndarray, gstate: np.ndarray, say, write,
                 progress: float, link: str = "identity", binary: bool = False,
                 curve=None) -> None:  # noqa: ANN001  # fmt: skip
        self.k = k
        self.stats = stats
        self.gstate = gstate  # (gd's: its t at G_T)
        self.t_gained = 0.0  # the open group's examples' part of t, counted at its end
        self.say = say
        self.write = write
        self.progress = progress
        self.link, self.binary = link, binary
        self.curve = curve
        self.next_row = float(stats[S_SHOWN_W]) - progress if progress < 0 else 1.0
        stats[S_NEXT_DUMP] = np.finfo(np.float64).max  # (the kernel writes no lines of its own)
        self._open()
        self.gap = False  # an empty line since the last example
        self.last_loss, self.last_w = float(stats[S_LOSS]), float(stats[S_WLAB])

    def _open(self) -> None:
        self.labels: list[float] = []
        self.preds: list[float] = []
        self.top: list[tuple[float, int, bytes]] = []
        self.features = float(self.stats[S_FEATURES])

    def run(self, learn, batch) -> np.ndarray:  # noqa: ANN001 - (rows) -> predictions, a Batch
        """The examples of ``batch``, group by group; the predictions of the batch (NaN for
        a malformed line, as every run's)."""
        preds = np.full(batch.n, np.nan)
        data = batch.block.data.tobytes()
        lines = data.split(b"\n")
        if data.endswith(b"\n"):
            lines.pop()  # (the block's last newline ends a line: no empty line after it)
        first = batch.block.first_line
        cursor = 0  # the block's next line not yet looked at
        start = 0  # the first example of the group's part in this batch
        for i in range(batch.n):
            if batch.status[i] != 0:
                continue
            at = int(batch.line[i]) - first
            if any(not ln for ln in lines[cursor:at]):
                self.gap = True
            cursor = at + 1
            if self.gap:
                self._learn(learn, batch, start, i, preds)
                self._close()
                start = i
                self.gap = False
        self._learn(learn, batch, start, batch.n, preds)
        if any(not ln for ln in lines[cursor:]):
            self.gap = True
        return preds

    def _learn(self, learn, batch, lo: int, hi: int, preds: np.ndarray) -> None:  # noqa: ANN001
        if hi <= lo:
            return
        # VW counts a group's examples (its t, which gd's rate decays with) once the whole
        # group is learned: each example learns with the t the group started with
        g = self.gstate
        t0 = g[G_T]
        for j in range(lo, hi):
            g[G_T] = t0
            preds[j] = np.asarray(learn(row_batch(batch, j)))[0]
            self.t_gained += g[G_T] - t0
        g[G_T] = t0
        out = preds[lo:hi]
        shown = link32(out.astype(np.float64), self.link, self.binary)
        data = batch.block.data
        for j in range(lo, hi):
            if batch.status[j] != 0:
                continue
            label = float(batch.labels[j])
            p = float(F32(shown[j - lo])) + 0.0  # (VW's clip gives 0, not -0)
            self.labels.append(label if label == label else FLT_MAX)
            self.preds.append(p)
            a, b = int(batch.tag_start[j]), int(batch.tag_end[j])
            self._rank(p, data[a:b].tobytes() if b > a else b"")

    def _rank(self, p: float, tag: bytes) -> None:
        """VW's priority queue: the k highest, the first of equal ones kept."""
        item = (p, len(self.preds), tag)
        if len(self.top) < self.k:
            bisect.insort_right(self.top, item, key=lambda t: t[:2])
        elif self.top and self.top[0][0] < p:
            self.top.pop(0)
            bisect.insort_right(self.top, item, key=lambda t: t[:2])

    def _close(self) -> None:
        """A group is over: its examples counted in t, its ``-p`` lines and, when due, its
        table line."""
        self.gstate[G_T] += self.t_gained
        self.t_gained = 0.0
        if not self.preds:
            return
        if self.write is not None:
            text = "".join(f"{p:.6f} " + (" " + tag.decode("utf-8", "surrogateescape")
                                          if tag else "") + " \n"
                           for p, _, tag in self.top)  # fmt: skip
            self.write((text + "\n").encode("utf-8", "surrogateescape"))
        s = self.stats
        if float(s[S_SHOWN_W]) >= self.next_row:
            wlab = float(s[S_WLAB])
            avg = float(s[S_LOSS]) / wlab if wlab > 0 else math.nan
            since_w = wlab - self.last_w
            since = (float(s[S_LOSS]) - self.last_loss) / since_w if since_w > 0 else math.nan
            row = [avg, since, float(s[S_SHOWN_N]), float(s[S_SHOWN_W]), math.nan, math.nan,
                   float(s[S_FEATURES]) - self.features]  # fmt: skip
            texts = (_cut(",".join(map(fmt2, self.labels))),
                     _cut(",".join(map(fmt2, self.preds))))  # fmt: skip
            self.say(table_line(row, texts=texts))
            if self.curve is not None:
                self.curve.append([*row, 0.0])
            self.last_loss, self.last_w = float(s[S_LOSS]), wlab
            s[S_SINCE_LOSS] = s[S_SINCE_W] = 0.0
            w = F32(s[S_SHOWN_W])
            p = self.progress
            self.next_row = float(w - F32(p)) if p < 0 else float(w * F32(p or 2.0))
        self._open()

    def end(self) -> None:
        """The input is over: its last group."""
        self._close()
