"""``sl vw --print``: VW's print learner, which writes each example and learns nothing.

VW's ``print`` is a learner at the bottom of the stack in gd's place (``Enabled
learners: print, scorer-identity, count_label``): it predicts 0 whatever the weights and
the example's initial value, and writes the example on stderr each time it is called: when
VW predicts, and again when it learns a labeled example (so a labeled example twice, an
unlabeled one, or any under ``-t``, once).  A line is the label (float, six significant
digits), then the importance weight and the initial value when either is not the default,
each followed by a space; ``'tag`` when there is one; ``| ``; then each feature's slot
(masked to the table, as parsed) and ``:value`` when the value is not 1, each followed by a
space, namespace by namespace in the order each first appears, and VW's constant
(11650396, unmasked) last.  ``--quiet`` writes none of it.  The table and the summary are
the usual ones, of predictions that are all 0.

The examples go one at a time through the learner's kernel with learning off and the
initial values left out (VW's print adds none), so that the table's lines come between
them as VW's do.  Interactions, n-grams and the other feature options VW's print would
show in its own way, a model (``-i``, ``-f``, the readable ones), passes and the reductions
are refused before any data is read (:func:`refusal`).
"""

from __future__ import annotations

import numpy as np

from streamlearn.hashing import CONSTANT_HASH
from streamlearn.learners.base import P_LEARN
from streamlearn.run.vwaudit import row_batch

F32 = np.float32


def refusal(config, inputs, outputs) -> str | None:  # noqa: ANN001 - TrainConfig, Inputs, Outputs
    """Why ``--print`` cannot run with these options (None: it can)."""
    c = config
    if c.oaa or c.csoaa or c.multilabel or c.stack:
        return "a reduction (--oaa, --csoaa, ...): --print prints simple labels"
    if c.quadratic or c.cubic or c.interactions or c.ngram or c.skips or c.affix:
        return "interactions, n-grams or --affix: not yet (VW prints their features its own way)"
    if (c.ignore or c.ignore_linear or c.keep or c.hash != "strings" or c.chain_hash
            or c.sort_features or c.feature_limit or c.format not in ("vw", "auto")):  # fmt: skip
        return ("--ignore, --keep, --hash all, --chain_hash, --sort_features, --feature_limit "
                "or another format than VW's text: not yet")
    if c.named_labels or c.binary or c.min_prediction is not None \
            or c.max_prediction is not None:  # fmt: skip
        return "--named_labels, --binary, --min_prediction or --max_prediction: not yet"
    if (c.passes or 1) > 1:
        return "--passes: not yet (one pass)"
    if getattr(outputs, "link", "identity") != "identity":
        # (VW's table then shows, for some unlabeled examples, the link of a prediction its
        # print learner never made: a value left over from an earlier example)
        return f"--link {outputs.link}: not yet"
    if getattr(inputs, "initial_model", None):
        return "-i: VW's print learner keeps no weights"
    for name, flag in (("final_model", "-f"), ("readable_model", "--readable_model"),
                       ("invert_hash", "--invert_hash"), ("audit", "--audit"),
                       ("raw_predictions", "-r")):  # fmt: skip
        if getattr(outputs, name, None):
            return f"{flag}: VW's print learner keeps no weights"
    return None


def _number(x: float) -> str:
    """A float32 as C++'s ``ostream << float`` writes it (six significant digits)."""
    return format(float(F32(x)), "g")


class Printer:
    """Writes each example of a run of ``config`` as VW's print learner does, with ``say``
    (the table's writer: stderr, nothing under ``--quiet``)."""

    def __init__(self, config, say) -> None:  # noqa: ANN001 - a TrainConfig, str -> None
        self.config = config
        self.say = say
        self.twice = not config.test_only  # (a labeled example: at predict, then at learn)
        self.constant = f"{CONSTANT_HASH} " if config.constant else ""

    def text(self, line: bytes, label: float, weight: float, base: float, tag: bytes) -> str:
        """The line VW's print learner writes for one example (without its newline)."""
        from streamlearn.io.names import vw_names

        head = ""
        if label == label:  # (an unlabeled example: no label, weight or initial value)
            head = _number(label) + " "
            if weight != 1.0 or base != 0.0:
                head += _number(weight) + " "
                if base != 0.0:
                    head += _number(base) + " "
        if tag:
            head += "'" + tag.decode("utf-8", "replace")
        values: list[float] = []
        feats = vw_names(line, self.config.bits, False, values, self.config.hash_seed)
        groups: dict[int, list[str]] = {}
        for (slot, _, nsb), v in zip(feats, values, strict=True):
            if v == 0.0:
                continue  # (VW's parser drops a feature of value 0)
            groups.setdefault(nsb, []).append(f"{slot}" if v == 1.0 else f"{slot}:{_number(v)}")
        body = "".join(f + " " for fs in groups.values() for f in fs)
        return head + "| " + body + self.constant

    def run(self, kernel_call, params: np.ndarray, batch, progress, stats, rows) -> np.ndarray:  # noqa: ANN001
        """``kernel_call(params, one)`` over each example of ``batch`` in turn (learning
        off, no initial value), each written before it is scored and the table's lines
        (``progress``) after it; the predictions of the batch (all 0)."""
        quiet = params.copy()
        quiet[P_LEARN] = 0.0
        lines = batch.block.data.tobytes().split(b"\n")
        first = batch.block.first_line
        data = batch.block.data
        preds = []
        for i in range(batch.n):
            if batch.status[i] == 0:
                a, b = int(batch.tag_start[i]), int(batch.tag_end[i])
                label = float(batch.labels[i])
                text = self.text(lines[int(batch.line[i]) - first], label,
                                 float(batch.weights[i]), float(batch.bases[i]),
                                 data[a:b].tobytes())  # fmt: skip
                for _ in range(2 if self.twice and label == label else 1):
                    self.say(text)
            one = row_batch(batch, i)
            one.bases = np.zeros(1)  # (VW's print adds no initial value)
            preds.append(kernel_call(quiet, one))
            progress.emit(stats, rows)
        return np.concatenate(preds) if preds else np.zeros(0)
