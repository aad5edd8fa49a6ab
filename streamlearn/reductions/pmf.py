"""What an exploring reduction shows of a batch: ``-p``'s pmf of each example
(:func:`pmf_lines`, VW's ``a:p,a:p[ tag]``) and VW's progress table (:func:`progress_rows`:
the pmf's first action and probability; an example's loss its pmf's weight on the logged
action times that action's cost over its probability).  Shared by ``--cb_explore_adf``'s
explorers (:mod:`streamlearn.reductions.explore`), ``--epsilon_decay`` and ``--experimental_igl``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from streamlearn.reductions.cb_adf import label_of, labeled_of
from streamlearn.reductions.text import fmt_float

if TYPE_CHECKING:
    from streamlearn.io.examples import Part


def pmf_lines(part: Part, acts: np.ndarray, probs: np.ndarray, out: list[str],
              end: str = "\n\n") -> None:  # fmt: skip
    """Each example's pmf as ``-p`` writes it: ``a:p,a:p[ tag]``, then ``end``."""
    from streamlearn.learners.explore import prob_text

    # as explore.pmf_text, each distinct probability's text made once per batch (the
    # pmfs take few values): 200k examples x 8 actions took 2.3 s one by one
    ptr = part.mg.act_ptr
    tags = part.tags
    tagged = bool(np.any(tags.end > tags.start))
    if acts.shape[0] <= 16:  # (one example: its cells as they are, no table of texts)
        cells = [f"{a}:{prob_text(p)}" for a, p in zip(acts.tolist(), probs.tolist(), strict=True)]
        rows = _rows(cells, ptr.tolist())
    else:
        rows = _distinct_rows(ptr, acts, probs)
    if not tagged:
        out.extend(r + end for r in rows)
        return
    for e, body in enumerate(rows):
        tag = tags[e].decode("utf-8", "replace")
        out.append(f"{body} {tag}{end}" if tag else body + end)


def _rows(cells: list[str], ptr: list[int]) -> list[str]:
    return [",".join(cells[ptr[e] : ptr[e + 1]]) for e in range(len(ptr) - 1)]


def _distinct_rows(ptr: np.ndarray, acts: np.ndarray, probs: np.ndarray) -> list[str]:
    """Each example's ``a:p,a:p`` of a batch, each distinct text made once.

    The pmfs take few values and, where the examples have as many actions, few distinct
    rows (epsilon-greedy's: one per best action): 40,000 examples x 8 actions one cell at
    a time took ~75 ms of a dsjson run's ~0.8 s.
    """
    from streamlearn.learners.explore import prob_text

    uniq, inv = np.unique(probs, return_inverse=True)
    inv = inv.reshape(-1)
    ptext = [prob_text(float(p)) for p in uniq]
    sizes = np.diff(ptr)
    m = sizes.shape[0]
    cells = int(acts.max()) * len(uniq) + len(uniq)  # (the cells' codes: a * len(uniq) + i)
    k = int(sizes[0]) if m else 0
    if m > 1 and k > 0 and (sizes == k).all() and k * math.log2(max(cells, 2)) < 62:
        codes = acts.astype(np.int64) * len(uniq) + inv
        key = codes.reshape(m, k) @ (cells ** np.arange(k, dtype=np.int64))  # (one per row)
        distinct, first, which = np.unique(key, return_index=True, return_inverse=True)
        if distinct.shape[0] * 4 <= m:
            texts = [",".join(f"{a}:{ptext[i]}" for a, i in zip(acts[k * e : k * e + k].tolist(),
                                                               inv[k * e : k * e + k].tolist(),
                                                               strict=True))
                     for e in first.tolist()]  # fmt: skip
            return [texts[i] for i in which.tolist()]
    atext = [f"{a}:" for a in range(int(acts.max()) + 1)]
    return _rows([atext[a] + ptext[i] for a, i in zip(acts.tolist(), inv.tolist(), strict=True)],
                 ptr.tolist())  # fmt: skip


def progress_rows(progress, npass: int, part: Part, acts, probs, ho,  # noqa: ANN001
                  known: bool = False) -> None:  # fmt: skip
    """VW's table for cb_explore_adf: the pmf's first action and its probability; the loss
    of an example is the pmf's weight on the logged action times its cost over its
    probability (float32, as VW's).  ``known``: a labeled example's label shows as
    ``known`` (--explore_eval's table)."""
    ptr = part.mg.act_ptr
    m = ptr.shape[0] - 1
    labeled = labeled_of(part)
    ex_of_row = np.repeat(np.arange(m), np.diff(ptr))
    hit = acts == part.chosen[ex_of_row]
    ips = (part.cost.astype(np.float32) / part.prob.astype(np.float32)).astype(np.float32)
    contrib = (ips[ex_of_row[hit]] * probs[hit].astype(np.float32)).astype(np.float32)
    loss = np.zeros(m)
    loss[ex_of_row[hit]] = contrib
    loss = np.where(labeled, loss, 0.0)

    def pred(e: int) -> str:
        return f"{int(acts[ptr[e]])}:{fmt_float(float(probs[ptr[e]]))}"

    label = label_of(part, labeled)
    if known:
        label = lambda e: "known" if labeled[e] else "unknown"  # noqa: E731
    progress.batch(npass, labeled, ho, loss, part.feat_row, part.feat_total, label, pred)
