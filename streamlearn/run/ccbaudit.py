"""``--audit`` and ``--invert_hash``'s names under ``--ccb_explore_adf`` and ``--slates``
(``sl vw``), as VW 9.11's gd writes them.

VW plays a CCB example slot by slot (``conditional_contextual_bandit.cc``): slot ``k``'s
``cb_explore_adf`` example is the shared line with the slot's features injected (its
default namespace as ``CCB_SLOT_NAMESPACE``, its other namespaces appended to the
shared line's of the same name) and, once the run augments its slots, the index feature
``_ccb_slot_index^index<k>`` (namespace ``CCB_ID_NAMESPACE``), over the actions earlier
slots left.  The shared line's tag is the slot's while the slot plays (VW swaps them:
a ``seed=`` tag samples).  gd audits each action line of that example as
``--cb_explore_adf`` audits its own (:class:`streamlearn.run.mlaudit.Audit`), with the
weights the earlier slots left; ``--invert_hash`` names each slot the first time a line
of the run carries it.

The kernel plays a whole example in one call (:func:`streamlearn.learners.ccb.run_slots`):
the weights before slot ``k`` are those a replay of the example's first ``k`` slots
leaves, from a snapshot of the run's state put back after (an audited run is a small one:
every feature of every line is printed).
"""

from __future__ import annotations

import numpy as np

from streamlearn.io.shared import DEFAULT_NS, ID_NS, SLOT_NS
from streamlearn.run.mlaudit import TWICE, Audit, Frozen

F32 = np.float32
ID_AUDIT = "_ccb_slot_index"


class SlotAudit(Audit):
    """The audit (``out`` set) or the ``--invert_hash`` names (``names`` set) of a CCB
    run's slots; ``user`` and ``with_index``: the run's interactions without and with
    VW's slot index's (:func:`streamlearn.io.interactions.with_ccb_slot_index`)."""

    def __init__(self, ml, cfg, user, with_index, audit: bool, names: bool) -> None:  # noqa: ANN001
        super().__init__(ml, cfg)
        self.user = user
        self.with_index = with_index
        self.audit = audit
        self.names: dict[int, str] | None = {} if names else None
        self.width = 2 if ml.cb_type == "dr" else 1

    # -- the text of a batch's rows

    def row_text(self, b, r: int) -> bytes:  # noqa: ANN001 - an io.batch.Batch
        return self._line_text(b.block.data, b.block.first_line, b.line[r])

    def _tag_of(self, b, r: int) -> bytes:  # noqa: ANN001
        a, z = int(b.tag_start[r]), int(b.tag_end[r])
        return (b" " + b.block.data[a:z].tobytes()) if z > a else b""

    def slot_common(self, b, shared: int, slot: int, k: int, id_hash: int) -> list:  # noqa: ANN001
        """The features slot ``k`` (row ``slot``) gives the shared line (row ``shared``):
        the shared line's, the slot's (VW's ``inject_slot_features``) and, ``id_hash`` not
        -1, the slot's index feature (``inject_slot_id``)."""
        common = self._feats(self.row_text(b, shared))
        common += [(h, name, SLOT_NS if nsb == DEFAULT_NS else nsb, x)
                   for h, name, nsb, x in self._feats(self.row_text(b, slot))]  # fmt: skip
        if id_hash >= 0:
            common.append((id_hash, f"{ID_AUDIT}^index{k}", ID_NS, 1.0))
        return common

    # -- one slot

    def slot(self, b, act_rows: list[int], common: list, augmented: bool,  # noqa: ANN001
             slot_row: int, logged: int, scores: list, table, gstate: np.ndarray) -> None:  # noqa: ANN001  # fmt: skip
        """Audit (or name) one slot's example: the action rows ``act_rows`` (those it
        offers, in order) merged with ``common``; ``logged``: the position of the logged
        action among them when the slot learns it (-1: none); ``scores``: gd's raw scores
        of the rows (the kernel's order of features); ``table``, ``gstate``: the weights
        and state before the slot."""
        self.inter = self.with_index if augmented else self.user
        rows = [self._merged(self.row_text(b, r), None, common) for r in act_rows]
        if self.names is not None:
            self._name(rows)
        if not self.audit or not rows:
            return
        tags = [self._tag_of(b, r) for r in act_rows]
        tags[0] = self._tag_of(b, slot_row)  # (VW swaps the shared line's tag for the slot's)
        lo, hi = self._range(gstate)
        predict = [self._line(table, gstate, rows[j], self._clip(scores[j], lo, hi), tags[j])
                   for j in range(len(rows))]  # fmt: skip
        out = list(predict)
        if self.learning:
            if self.ml.explore in TWICE and logged >= 0:
                out += predict  # (VW predicts, then its learn predicts again)
            if logged >= 0:
                out.append(self._line(table, gstate, rows[logged],
                                      self._clip(scores[logged], lo, hi), tags[logged]))
            elif self.ml.explore:
                out += predict  # (cb_explore_adf's learn predicts an unlabeled example again)
        self.write(out)

    def _name(self, rows: list) -> None:
        from streamlearn.run.mloutputs import name_slot

        for row in rows:
            for h, name, _ in row:
                name_slot(self.names, h, name, self.width, self.mask)

    def frozen(self, table: np.ndarray, indices: np.ndarray) -> Frozen:
        """The weights at ``indices`` as they are now."""
        return Frozen(table, indices.astype(np.int64) & self.mask, self.whole)


__all__ = ["SlotAudit"]
