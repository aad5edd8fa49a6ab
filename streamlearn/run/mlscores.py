"""``sl vw``'s ``-r`` and ``--probabilities`` under the multiline reductions, as VW 9.11.9
writes them (``csoaa_ldf.cc``, ``cb_explore_adf_common.h``, ``explore_eval.cc``).

``-r`` (:class:`Raw`), one call per batch, after the kernel scored it:

* ``--csoaa_ldf``: a line per line of the example, the shared line included: each of
  its label's classes as ``class:score`` (the line's raw score before it learned for the
  first class, 0 for the others; the shared line is class 0), then the line's tag.  No
  empty line between examples.
* ``--cb_explore_adf`` (every explorer) and ``--explore_eval``: the label of the
  example's first line (the shared one, if any) as ``action:0`` per label token (VW's
  hashed action name: ``shared`` is 357971040; a JSON example's first line is always
  VW's shared one), then its tag; then a line with the tag alone.  ``--cb_explore K``:
  VW's copies carry no label: the tag, twice.
* ``--cb_adf``, ``--cb K``: nothing (VW opens the file and writes nothing).

``--probabilities`` with ``--csoaa_ldf`` (:class:`Probabilities`, VW's ``csoaa_ldf-prob``):
each line's ``1/(1 + e^score)``, the example's normalised to sum 1 (float32, the C
library's ``expf``), written one per line in ``-p`` with the example's tag, an empty
line after.  The predicted class is the line of the highest probability, counted over
VW's sequence *with* the shared line first: with a shared line, probability i names line
i - 1's class and the first one the shared line's class 0 (VW 9.11.9's indexing, kept).
The example's loss is that class's cost; its multiclass log loss ``-log p`` of the
first line of least cost (with a shared line, always the first action's), 999 for a
probability of 0, summed over every example (labeled or not), apart those VW tests (held
out, or whose first line has a test label), and divided by the labeled examples in the
summary.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.run.vwformat import fixed, general

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)
SHARED = 357971040
"""VW's action of a ``shared`` label (its ``hashstring``, as ``-r`` writes it)."""


def _decode(b: bytes) -> str:
    return b.decode("utf-8", "replace")


class _Lines:
    """The text lines of the blocks a run reads (one split per block)."""

    def __init__(self) -> None:
        self._key: int | None = None
        self._lines: list[bytes] = []

    def text(self, src, line: int) -> bytes:  # noqa: ANN001 - an io.examples.Source
        if self._key != id(src.data):
            self._key = id(src.data)
            self._lines = src.data.tobytes().split(b"\n")
        return self._lines[int(line) - src.first_line].rstrip(b"\r")


def label_words(line: bytes, tagged: bool) -> list[bytes]:
    """The label words of a VW text line: the words before its first ``|``, its tag (the
    last of them, when the line has one) left out."""
    words = line.split(b"|", 1)[0].split()
    return words[:-1] if tagged and words else words


def _tag(tag: bytes) -> str:
    return " " + _decode(tag) if tag else ""


class Raw:
    """The ``-r`` lines of a multiline run (:attr:`lines`, in the order VW writes them)."""

    def __init__(self, ml, json: bool = False) -> None:  # noqa: ANN001 - a reductions.Multiline
        self.ml = ml
        self.json = json  # (VW's JSON examples begin with a shared line: "shared" the label)
        self.lines: list[str] = []
        self._text = _Lines()

    def ldf(self, part, scores: np.ndarray) -> None:  # noqa: ANN001 - an io.examples.Part
        """``--csoaa_ldf``: each line's classes with its score (before it learned)."""
        from streamlearn.hashing import hashstring_py

        src = part.src
        ptr = part.mg.act_ptr
        out = self.lines
        for e in range(ptr.shape[0] - 1):
            r0, r1 = int(ptr[e]), int(ptr[e + 1])
            if int(src.head_line[e]) != int(src.row_line[r0]):
                out.append("0:0" + _tag(part.tags[e]) + "\n")  # (the shared line: class 0)
            for r in range(r0, r1):
                a, b = int(src.tag_start[r]), int(src.tag_end[r])
                words = label_words(self._text.text(src, src.row_line[r]), b > a)
                cells = []
                for i, w in enumerate(words):
                    name = [t for t in w.split(b":") if t]
                    cls = hashstring_py(name[0]) if name else 0
                    cells.append(f"{cls}:{general(scores[r]) if i == 0 else '0'}")
                tag = src.data[a:b].tobytes() if b > a else b""
                out.append(" ".join(cells) + _tag(tag) + "\n")

    def cb(self, part) -> None:  # noqa: ANN001
        """``--cb_explore_adf``, ``--explore_eval``, ``--cb_explore K`` (nothing for
        ``--cb_adf``, ``--cb K``)."""
        from streamlearn.hashing import hashstring_py

        ml = self.ml
        if not ml.explore:
            return
        m = part.mg.act_ptr.shape[0] - 1
        out = self.lines
        src = part.src
        for e in range(m):
            tag = _tag(part.tags[e])
            text = ""
            if self.json:
                text = f"{SHARED}:0"
            elif ml.reduction != "cb" and src is not None:
                words = label_words(self._text.text(src, src.head_line[e]), bool(tag))
                cells = []
                for w in words:
                    name = [t for t in w.split(b":") if t]
                    cells.append(f"{hashstring_py(name[0]) if name else 0}:0")
                text = " ".join(cells)
            out.append(text + tag + "\n" + tag + "\n")


class Probabilities:
    """``--csoaa_ldf``'s ``--probabilities`` (VW's ``csoaa_ldf-prob``) over a run's batches:
    the ``-p`` lines, each example's predicted class, and the multiclass log loss."""

    def __init__(self) -> None:
        from streamlearn.learners.losses import c_single

        self.expf = c_single("expf")
        self.logf = c_single("logf")
        self.log_loss = 0.0  # VW's multiclass_log_loss (double), held-out examples apart
        self.ho_log_loss = 0.0

    def probabilities(self, scores: np.ndarray) -> list[F32]:
        """VW's ``convert_to_probabilities`` of one example's raw scores."""
        one = F32(1.0)
        probs = [one / (one + self.expf(F32(s))) for s in scores]
        total = F32(0.0)
        for p in probs:
            total = F32(total + p)
        return [F32(p / total) for p in probs]

    def batch(self, part, scores: np.ndarray, pred: np.ndarray, ho: np.ndarray,
              stats: np.ndarray, pred_lines: list[str] | None) -> np.ndarray:  # noqa: ANN001  # fmt: skip
        """One batch the kernel scored (``scores``, its classes ``pred``): the -p lines,
        each example's class as VW's csoaa_ldf-prob predicts it (returned), the loss in
        ``stats`` moved from the kernel's class to it."""
        from streamlearn.learners import cb_adf

        src = part.src
        ptr = part.mg.act_ptr
        m = ptr.shape[0] - 1
        cls, n_lab, cost = part.lab_cls, part.lab_n, part.lab_cost
        out = np.zeros(m, dtype=np.int64)
        moved = 0.0
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            for e in range(m):
                r0, r1 = int(ptr[e]), int(ptr[e + 1])
                probs = self.probabilities(scores[r0:r1])
                shared = src is not None and int(src.head_line[e]) != int(src.row_line[r0])
                best = 0
                for i in range(1, len(probs)):
                    if probs[best] < probs[i]:  # (std::max_element: the first highest)
                        best = i
                at = best - 1 if shared else best  # (VW's index counts the shared line)
                out[e] = int(cls[r0 + at]) if at >= 0 and n_lab[r0 + at] > 0 else 0
                # the log loss: the first line of least cost (the shared line's -FLT_MAX)
                k = 0
                if not shared:
                    low = FLT_MAX
                    for i in range(r1 - r0):
                        c = cost[r0 + i] if n_lab[r0 + i] > 0 and cost[r0 + i] == cost[r0 + i] \
                            else FLT_MAX  # fmt: skip
                        if F32(c) < F32(low):
                            low, k = c, i
                p = probs[k]
                mll = float(-self.logf(p)) if p > F32(0.0) else 999.0
                # (VW's test_only: held out, or the first line's label a test one)
                first_test = not shared and (n_lab[r0] == 0 or cost[r0] != cost[r0])
                if ho[e] or first_test:
                    self.ho_log_loss += mll
                else:
                    self.log_loss += mll
                if not _test(n_lab, cost, r0, r1):
                    moved += _cost_of(cls, n_lab, cost, r0, r1, int(out[e]))
                    moved -= _cost_of(cls, n_lab, cost, r0, r1, int(pred[e]), kernel=True)
                if pred_lines is not None:
                    tag = _tag(part.tags[e])
                    pred_lines.append("".join(fixed(p) + tag + "\n" for p in probs) + "\n")
        stats[cb_adf.LOSS] += moved
        return out


def _test(n_lab: np.ndarray, cost: np.ndarray, r0: int, r1: int) -> bool:
    """csoaa_ldf's test_ldf_sequence (the kernel's): not every line one cost, or a mix."""
    nan0 = cost[r0] != cost[r0]
    if n_lab[r0] != 1 or nan0:
        return True
    return any(n_lab[r] != 1 or (cost[r] != cost[r]) != nan0 for r in range(r0, r1))


def _cost_of(cls: np.ndarray, n_lab: np.ndarray, cost: np.ndarray, r0: int, r1: int, c: int,
             kernel: bool = False) -> float:  # fmt: skip
    """The cost of class ``c`` in lines ``r0:r1`` (its first line), 0 when none has it;
    ``kernel``: as the csoaa_ldf kernel looks it up (any line of that class)."""
    for r in range(r0, r1):
        if cls[r] == c and (kernel or n_lab[r] > 0):
            return float(cost[r])
    return 0.0


def log_loss_line(log_loss: float, ho_log_loss: float, labeled: float, holdout: bool) -> str:
    """VW's summary line ``average multiclass log loss = ...`` (`` h``: over the held-out
    examples, as VW's ``print_summary``)."""
    total = ho_log_loss if holdout else log_loss
    if labeled > 0:
        v = total / labeled
    else:
        v = math.inf if total > 0 else (-math.inf if total < 0 else float("-nan"))
    text = "-nan" if v != v else ("inf" if v == math.inf else "-inf" if v == -math.inf
                                  else f"{v:.6f}")  # fmt: skip
    return f"average multiclass log loss = {text}" + (" h" if holdout else "")
