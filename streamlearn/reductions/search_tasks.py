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

import numpy as np

F32 = np.float32


def _text(sch, a: int) -> None:  # noqa: ANN001
    if sch.producing:
        sch.out.append(f"{sch.pretty_label(a)} ")


class Sequence:
    """``sequence``: one decision per token, conditioned on the ``--search_history_length``
    decisions before it, Hamming loss."""

    name = "sequence"

    def initialize(self, sch, options) -> None:  # noqa: ANN001, ARG002
        sch.set_options(auto_condition=True, auto_hamming=True)

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


def condition_range(hi: int, count: int, name0: str) -> tuple[list[int], str]:
    """VW's ``predictor::set_condition_range``: the tags ``hi, hi-1, ...`` (``count`` of
    them, none below 0) named ``name0``, ``name0 + 1``, ..."""
    tags = []
    names = ""
    for i in range(count):
        if i > hi:
            break
        tags.append(hi - i)
        names += chr(ord(name0) + i)
    return tags, names


TASKS = {t.name: t for t in (Sequence, SequenceCostToGo, Argmax, SequenceSpan)}
"""The tasks sl runs, by VW's name."""
