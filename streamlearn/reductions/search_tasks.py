"""The tasks of learning to search (VW's ``--search_task``): each a plain loop over one
sequence's tokens that asks the search (:class:`streamlearn.reductions.search_engine.Search`)
for a decision per token, as VW's ``search_sequencetask.cc``.

A task has ``initialize(sch, options)`` (its search options, and the actions it decides
among: VW's ``num_actions``, which BILOU changes), ``run(sch, tokens)`` (one pass over the
sequence: its decisions, its loss, its output text), and optionally ``setup``/``takedown``
around an example (BILOU's relabelling).  A token is the engine's: ``label`` (the line's
class, 0 for none), its features.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn.reductions.search_dep import DepParser
from streamlearn.reductions.search_draws import condition_range
from streamlearn.reductions.search_graph import Graph

F32 = np.float32


def _text(sch, a: int) -> None:  # noqa: ANN001
    if sch.producing:
        sch.out.append(f"{sch.pretty_label(a)} ")


class Sequence:
    """``sequence``: one decision per token, conditioned on the ``--search_history_length``
    decisions before it, Hamming loss."""

    name = "sequence"
    hamming_only = True  # (its learning runs are known without playing them: OracleRollouts)

    def initialize(self, sch, options) -> None:  # noqa: ANN001, ARG002
        sch.set_options(auto_condition=True, auto_hamming=True)

    def conditions(self, sch, i: int) -> tuple[list[int], str]:  # noqa: ANN001
        """Token ``i``'s conditioning: the tags and names of the decisions before it."""
        return condition_range(i, sch.history_length, "p")

    def run(self, sch, tokens) -> None:  # noqa: ANN001
        h = sch.history_length
        for i, tok in enumerate(tokens):
            a = sch.predict(tok, i + 1, [tok.label], *condition_range(i, h, "p"))
            _text(sch, a)


class SequenceCostToGo:
    """``sequence_ctg``: as ``sequence``, the oracle given as each action's cost (0 for the
    label, 1 for the others)."""

    name = "sequence_ctg"

    def initialize(self, sch, options) -> None:  # noqa: ANN001, ARG002
        sch.set_options(auto_condition=True, auto_hamming=True, action_costs=True)
        self.k = sch.A

    def run(self, sch, tokens) -> None:  # noqa: ANN001
        h = sch.history_length
        k = self.k
        for i, tok in enumerate(tokens):
            costs = [1.0] * k
            if 0 < tok.label <= k:
                costs[tok.label - 1] = 0.0
            a = sch.predict(tok, i + 1, [], *condition_range(i, h, "p"),
                            allowed_costs=costs)  # fmt: skip
            _text(sch, a)


class Argmax:
    """``argmax``: each token predicts 1 or 2; the sequence's output is the largest
    prediction, its loss ``--cost`` (over ``--negative_weight``) for a missed 2, 1 for a
    false one; ``--max``: every token's oracle is the sequence's largest label, no
    conditioning."""

    name = "argmax"

    def initialize(self, sch, options) -> None:  # noqa: ANN001
        self.cost = float(F32(options.get("cost", 10.0)))
        self.negative_weight = float(F32(options.get("negative_weight", 1.0)))
        self.max = bool(options.get("max", False))
        sch.set_options(auto_condition=not self.max)

    def run(self, sch, tokens) -> None:  # noqa: ANN001
        max_label = max([1] + [t.label for t in tokens])
        max_pred = 1
        for i, tok in enumerate(tokens):
            oracle = max_label if self.max else tok.label
            a = sch.predict(tok, i + 1, [oracle], [i], "p")
            max_pred = max(max_pred, a)
        loss = 0.0
        if max_label > max_pred:
            loss = float(F32(F32(self.cost) / F32(self.negative_weight)))
        elif max_pred > max_label:
            loss = 1.0
        sch.loss(loss)
        if sch.producing:
            sch.out.append(f"{max_pred}")


BIO, BILOU = 0, 1


def _bilou_to_bio(y: int) -> int:
    return y // 2 + 1


class SequenceSpan:
    """``sequencespan``: spans labelled BIO (1 out, 2n begin, 2n+1 in), decisions limited
    to the transitions BIO allows; ``--search_span_bilou`` learns them as BILOU (the labels
    rewritten for the example, the output in BIO); ``--search_span_multipass N``: the
    sequence labelled N times, the later passes conditioned on the earlier's decisions."""

    name = "sequencespan"

    def initialize(self, sch, options) -> None:  # noqa: ANN001
        self.multipass = int(options.get("search_span_multipass", 1))
        self.encoding = BILOU if options.get("search_span_bilou") else BIO
        if self.encoding == BILOU:
            sch.say("switching to BILOU encoding for sequence span labeling")
            sch.A = sch.A * 2 - 1
        a = sch.A
        if self.encoding == BIO:
            self.allowed = [1, *range(2, a, 2), 1]
        else:
            self.allowed = [1]
            for ell in range(2, a, 4):
                self.allowed += [ell, ell + 1]
        sch.set_options(auto_condition=True, auto_hamming=True)
        sch.set_feature_width(a)

    def setup(self, sch, tokens) -> None:  # noqa: ANN001, ARG002
        if self.encoding != BILOU:
            return
        n = len(tokens)
        for i, tok in enumerate(tokens):
            y = tok.label
            nexty = 0 if i == n - 1 else tokens[i + 1].label
            if y == 1:
                continue
            if y % 2 == 0:
                tok.label = (y // 2 - 1) * 4 + (2 if nexty != y + 1 else 3)
            else:
                tok.label = (y - 1) * 2 + (1 if nexty != y else 0)

    def takedown(self, sch, tokens) -> None:  # noqa: ANN001, ARG002
        if self.encoding == BILOU:
            for tok in tokens:
                tok.label = _bilou_to_bio(tok.label)

    def run(self, sch, tokens) -> None:  # noqa: ANN001
        h = sch.history_length
        allowed = self.allowed
        for pas in range(1, self.multipass + 1):
            last = 1
            for i, tok in enumerate(tokens):
                oracle = tok.label
                if self.encoding == BIO:
                    if last == 1:
                        use = allowed[:-1]
                    else:
                        allowed[-1] = last + 1 if last % 2 == 0 else last
                        use = list(allowed)
                    if oracle > 1 and oracle % 2 == 1 and last != oracle and last != oracle - 1:
                        oracle = 1
                else:
                    if last == 1 or (last - 2) % 4 == 0 or (last - 2) % 4 == 3:
                        use = list(allowed)
                        if oracle > 1 and (oracle - 2) % 4 in (2, 3):
                            oracle = 1
                    else:
                        other = last + 2 if (last - 2) % 4 == 1 else last
                        use = [last + 1, other]
                        if oracle not in (last + 1, other):
                            oracle = other
                tags, names = condition_range(i, h, "p")
                if pas > 1:
                    t2, n2 = condition_range(i + 1 + h, h + 1, "a")
                    tags, names = tags + t2, names + n2
                last = sch.predict(tok, i + 1, [oracle], tags, names, allowed=use,
                                   learner_id=pas - 1)  # fmt: skip
                if pas == self.multipass and sch.producing:
                    out = last if self.encoding == BIO else _bilou_to_bio(last)
                    sch.out.append(f"{out} ")


class Multiclass:
    """``multiclasstask``: the first line's class found by ⌈log2 K⌉ binary decisions down a
    tree, a learner per node (VW's ``search_multiclasstask.cc``); 0/1 loss."""

    name = "multiclasstask"

    def initialize(self, sch, options) -> None:  # noqa: ANN001, ARG002
        sch.set_options()
        ceil = 1
        while ceil < sch.A:
            ceil *= 2
        sch.set_feature_width(ceil)
        self.max_label = sch.A
        self.levels = int(math.ceil(math.log(sch.A) / math.log(2)))

    def run(self, sch, tokens) -> None:  # noqa: ANN001
        tok = tokens[0]
        gold = tok.label
        label = 0
        learner = 0
        for i in range(self.levels):
            mask = 1 << (self.levels - i - 1)
            size = 2 if label + mask + 1 <= self.max_label else 1
            oracle = int(((gold - 1) & mask) > 0) + 1
            a = sch.predict(tok, 0, [oracle], [], "", allowed=[1, 2][:size], learner_id=learner)
            learner = (learner << 1) + a
            if a == 2:
                label += mask
        label += 1
        sch.loss(0.0 if label == gold else 1.0)
        if sch.producing:
            sch.out.append(f"{label} ")


R_NONE = 10
LABEL_SKIP = 11


class EntityRelation:
    """``entity_relation``: a sentence's entities (lines tagged ``E_i``, classes 1-4) and
    the relations between them (``R_i_j``, classes 5-10, 10 for none), with
    ``--constraints`` the relations an entity pair allows; ``--search_order`` 0 entities
    first, 1 mixed, 2 with skips (VW's ``search_entityrelationtask.cc``)."""

    name = "entity_relation"
    needs_tags = True  # (each line's tag names its entities: E_i, R_i_j)
    VALID1 = (2, 3, 4, 2, 2)
    VALID2 = (4, 4, 4, 3, 2)

    def initialize(self, sch, options) -> None:  # noqa: ANN001
        self.relation_cost = F32(options.get("relation_cost", 1.0))
        self.entity_cost = F32(options.get("entity_cost", 1.0))
        self.constraints = bool(options.get("constraints", False))
        self.relation_none_cost = F32(options.get("relation_none_cost", 0.5))
        self.skip_cost = F32(options.get("skip_cost", 0.01))
        self.order = int(options.get("search_order", 0))
        self.entities = [1, 2, 3, 4]
        self.relations = [5, 6, 7, 8, 9, 10]
        self.allow_skip = False
        if self.order in (3, 4):
            sch.set_options(ldf=True)
        else:
            sch.set_options()
        if self.order == 2 and sch.A < LABEL_SKIP:
            sch.A = LABEL_SKIP
        sch.set_feature_width(3 if self.order >= 2 else 2)

    def _valid(self, e1: int, e2: int, rel: int) -> bool:
        if rel - 5 == 5:
            return True
        return self.VALID1[rel - 5] == e1 and self.VALID2[rel - 5] == e2

    def _entity(self, sch, tok, tag: int) -> int:  # noqa: ANN001
        if self.allow_skip:
            a = sch.predict(tok, tag, [tok.label, LABEL_SKIP], [], "",
                            allowed=[*self.entities, LABEL_SKIP], learner_id=1)  # fmt: skip
        else:
            a = sch.predict(tok, tag, [tok.label], [], "", allowed=self.entities, learner_id=0)
        loss = F32(0.0)
        if a == LABEL_SKIP:
            loss = self.skip_cost
        elif a != tok.label:
            loss = self.entity_cost
        sch.loss(float(loss))
        return a

    def _relation(self, sch, tok, tag: int, preds: list[int]) -> int:  # noqa: ANN001
        id1, id2 = _relation_ids(tok.tag)
        if self.constraints and preds[id1] != 0 and preds[id2] != 0:
            h0, h1 = preds[id1], preds[id2]
        else:
            h0 = h1 = 0
        allowed = [r for r in self.relations
                   if not self.constraints or h0 == 0 or self._valid(h0, h1, r)]  # fmt: skip
        if self.allow_skip:
            a = sch.predict(tok, tag, [tok.label, LABEL_SKIP], [id1, id2], "ab",
                            allowed=[*allowed, LABEL_SKIP], learner_id=2)  # fmt: skip
        else:
            a = sch.predict(tok, tag, [tok.label], [], "", allowed=allowed, learner_id=1)
        loss = F32(0.0)
        if a == LABEL_SKIP:
            loss = self.skip_cost
        elif a != tok.label:
            loss = self.relation_none_cost if tok.label == R_NONE else self.relation_cost
        sch.loss(float(loss))
        return a

    def run(self, sch, tokens) -> None:  # noqa: ANN001
        n = len(tokens)
        preds = [0] * n
        n_ent = int(int(math.sqrt(n * 8 + 1) - 1) // 2)
        if self.order == 0:
            for i in range(n):
                if i < n_ent:
                    preds[i] = self._entity(sch, tokens[i], i)
                else:
                    preds[i] = self._relation(sch, tokens[i], i, preds)
        elif self.order == 1:
            n_ent = int((math.sqrt(n * 8 + 1) - 1) / 2)
            # (as VW's loop: a relation's break leaves its inner loop only, so the next
            # entity is decided at the same step too)
            for t in range(n):
                count = 0
                for i in range(n_ent):
                    if count == t:
                        preds[i] = self._entity(sch, tokens[i], i)
                        break
                    count += 1
                    for j in range(i):
                        if count == t:
                            r = n_ent + (2 * n_ent - j - 1) * j // 2 + i - j - 1
                            preds[r] = self._relation(sch, tokens[r], r, preds)
                            break
                        count += 1
        elif self.order == 2:
            self._skip_decoding(sch, tokens, preds, n_ent)
        else:
            sch.say(f"[error] search order {self.order} is undefined")
        if sch.producing:
            sch.out.append("".join(f"{p} " for p in preds))

    def _skip_decoding(self, sch, tokens, preds: list[int], n_ent: int) -> None:  # noqa: ANN001
        n = len(tokens)
        must = False
        done = 0
        before = 0
        self.allow_skip = True
        t = 0
        while done != n:
            i = t % n
            if preds[i] == 0:
                if must:
                    self.allow_skip = False
                if i < n_ent:
                    a = self._entity(sch, tokens[i], i)
                else:
                    a = self._relation(sch, tokens[i], i, preds)
                if a != LABEL_SKIP:
                    preds[i] = a
                    done += 1
                if must:
                    self.allow_skip = True
                    must = False
            if i == n - 1:
                if done == before:
                    must = True
                before = done
            t = (t + 1) & 0xFFFFFFFF
        self.allow_skip = False


def _relation_ids(tag: str) -> tuple[int, int]:
    """VW's ``decode_tag`` of a relation's tag ``R_i_j``: (i, j)."""
    parts = tag[2:].split("_")
    return _atoi(parts[0] if parts else ""), _atoi(parts[1] if len(parts) > 1 else "")


def _atoi(text: str) -> int:
    digits = ""
    for ch in text.strip():
        if ch.isdigit() or (not digits and ch in "+-"):
            digits += ch
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return 0


TASKS = {t.name: t for t in (Sequence, SequenceCostToGo, Argmax, SequenceSpan, Multiclass,
                              EntityRelation, DepParser, Graph)}
"""The tasks sl runs, by VW's name."""
