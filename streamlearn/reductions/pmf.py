"""What an exploring reduction shows of a batch: ``-p``'s pmf of each example
(:func:`pmf_lines`, VW's ``a:p,a:p[ tag]``) and VW's progress table (:func:`progress_rows`:
the pmf's first action and probability; an example's loss its pmf's weight on the logged
action times that action's cost over its probability).  Shared by ``--cb_explore_adf``'s
explorers (:mod:`streamlearn.reductions.explore`), ``--epsilon_decay`` and ``--experimental_igl``.
"""

from __future__ import annotations

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
        rows = _batch_rows(ptr, acts, probs)
    if not tagged:
        out.extend(r + end for r in rows)
        return
    for e, body in enumerate(rows):
        tag = tags[e].decode("utf-8", "replace")
        out.append(f"{body} {tag}{end}" if tag else body + end)


def _rows(cells: list[str], ptr: list[int]) -> list[str]:
    return [",".join(cells[ptr[e] : ptr[e + 1]]) for e in range(len(ptr) - 1)]


def _batch_rows(ptr: np.ndarray, acts: np.ndarray, probs: np.ndarray) -> list[str]:
    """Each example's ``a:p,a:p`` of a batch, each distinct probability's text made once
    (the pmfs take few values) and, where the cells are few, the rows gathered from a table
    of each cell's text (:func:`_gathered_rows`)."""
    from streamlearn.learners.explore import prob_text

    uniq, inv = _few_values(probs)
    ptext = [prob_text(float(p)) for p in uniq]
    sizes = np.diff(ptr)
    cells = (int(acts.max()) + 1) * len(uniq)  # (a cell's code: a * len(uniq) + i)
    if sizes.shape[0] and cells <= max(4096, ptr[-1] // 4) and (sizes > 0).all():
        return _gathered_rows(ptr, acts.astype(np.int64) * len(uniq) + inv, cells, ptext,
                              len(uniq))  # fmt: skip
    atext = [f"{a}:" for a in range(int(acts.max()) + 1)]
    return _rows([atext[a] + ptext[i] for a, i in zip(acts.tolist(), inv.tolist(), strict=True)],
                 ptr.tolist())  # fmt: skip


def _few_values(x: np.ndarray, most: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(x, return_inverse=True)``, by a pass per value when ``x`` takes at most
    ``most`` (a pmf's: epsilon-greedy's two), not a sort of the whole batch."""
    values = []
    nan = np.isnan(x)
    rest = x[~nan]
    while rest.shape[0] and len(values) < most:
        values.append(rest[0])
        rest = rest[rest != rest[0]]
    if rest.shape[0]:
        uniq, inv = np.unique(x, return_inverse=True)
        return uniq, inv.reshape(-1)
    if nan.any():
        values.append(np.nan)
    uniq = np.sort(np.array(values, dtype=x.dtype))
    return uniq, np.searchsorted(uniq, x)


def _gathered_rows(ptr: np.ndarray, codes: np.ndarray, cells: int, ptext: list[str],
                   n_probs: int) -> list[str]:  # fmt: skip
    """The rows of cells ``codes`` (``action * n_probs + probability's index``) from a table
    of each cell's text, followed by ``,`` or, last in its row, a newline: the batch's text
    gathered with numpy in one piece, then split at the newlines.  Each example's own
    order of actions makes most rows distinct (epsilon-greedy over 8 actions: 40,000 rows
    of 40,000 examples), where a string per cell took ~0.1 s of a dsjson run's ~0.7 s."""
    texts = [f"{c // n_probs}:{ptext[c % n_probs]}".encode() for c in range(cells)]
    table = b"".join(t + sep for t in texts for sep in (b",", b"\n"))
    size = np.array([len(t) + 1 for t in texts for _ in (0, 1)], dtype=np.int64)
    offset = np.cumsum(size) - size
    last = np.zeros(codes.shape[0], dtype=np.int64)
    last[ptr[1:] - 1] = 1
    which = codes * 2 + last
    n = size[which]
    start = np.cumsum(n) - n
    src = np.repeat(offset[which] - start, n) + np.arange(int(n.sum()), dtype=np.int64)
    text = np.frombuffer(table, dtype=np.uint8)[src].tobytes().decode("ascii")
    return text.split("\n")[:-1]


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
