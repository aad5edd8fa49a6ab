"""VW's ``--interact ab``: gd learns namespace a's features times namespace b's, matched by
their names (:mod:`streamlearn.learners.interact` is its kernel and says how), in the
single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the worked example): its
option is its own words in ``TrainConfig.stack`` (``("--interact", "ab")``), kept in a model's
options as VW keeps it; it keeps no state beyond gd's.  VW stacks it above its scorer
(``gd, scorer-identity, interact, count_label``) and says ``[info] Interacting namespaces a
and b`` on standard output as it sets it up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.singleline import refuse_over_gd
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption

NAME = "interact"
"""Its name in VW's ``Enabled learners`` line (above the scorer)."""
ABOVE_SCORER = True


@dataclass(frozen=True)
class Options:
    """The two namespaces' bytes."""

    n1: int
    n2: int


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no interact."""
    if "--interact" not in words:
        return None
    at = words.index("--interact") + 1
    value = words[at] if at < len(words) else ""
    return Options(*check(value, UsageError))


def check(value: str, error: type[UsageError] = UsageError) -> tuple[int, int]:
    """The two namespace bytes of ``--interact``'s value (``error``: one line otherwise)."""
    raw = value.encode("utf-8", "surrogateescape")
    if len(raw) != 2:
        raise error(f"--interact {value!r}: two namespace characters are expected (VW: "
                    "\"Need two namespace arguments to interact\")")  # fmt: skip
    if raw[0] == raw[1]:
        raise error(f"--interact {value}: a namespace with itself (VW reads past its features)")
    return raw[0], raw[1]


def _word(t: Command, _: str, value: str | None) -> None:
    check(value or "", VWUsage)
    t.learn["stack"] = (*t.learn.get("stack", ()), "--interact", value)


VW_OPTIONS = {"interact": VWOption(None, True, _word)}
"""VW's option of the reduction."""

TRAIN_OPTIONS = (
    TrainOption(("--interact",), "interact", "Namespace A's features times namespace B's, "
                "matched by name, each namespace led by an anchor of value 1; B's features "
                "leave the example (VW's --interact AB).", kind="str", metavar="AB"),
)  # fmt: skip
"""``sl train``'s option of the reduction (:mod:`streamlearn.reductions.trainoptions`)."""


def train_words(values: dict) -> tuple[str, ...]:
    """The words of ``sl train --interact AB`` (VW's spelling)."""
    v = values.get("interact")
    if not v:
        return ()
    check(v)
    return ("--interact", v)


def settle(t: Command) -> None:
    """What ``--interact`` refuses with the rest of a VW command line (one line, exit 2)."""
    if "--interact" in t.learn.get("stack", ()):
        refuse(t.learn, t.outputs)


def refuse(learn: dict, outputs: dict) -> None:
    """:func:`~streamlearn.reductions.singleline.refuse_over_gd`'s refusals, crosses (VW
    crosses the products), ``--minibatch``, and VW text only (namespaces by their bytes)."""
    refuse_over_gd(learn, outputs, "--interact", "VW's products have no names")
    for key in ("quadratic", "cubic", "interactions"):
        if learn.get(key):
            raise VWUsage("--interact with -q, --cubic or --interactions is not supported by "
                          "sl (VW crosses the products)")  # fmt: skip
    if learn.get("minibatch", 1) > 1:
        raise VWUsage("--interact with --minibatch is not supported by sl")


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001, ARG001 - a TrainConfig
    """VW says nothing of interact among its stderr lines."""
    return []


def stdout_lines(opts: Options) -> list[str]:
    """VW's line on standard output as it sets the reduction up."""
    return [f"[info] Interacting namespaces {chr(opts.n1)} and {chr(opts.n2)}"]


class Entry:
    """The kernel entry of one run (:mod:`streamlearn.learners.interact`)."""

    wants_ns = True

    def __init__(self, opts: Options, bits: int, stride_shift: int) -> None:
        # VW matches the offsets under its weights' mask, 2^b floats times the stride
        self.conf = np.array([opts.n1, opts.n2, ((1 << bits) << stride_shift) - 1],
                             dtype=np.int64)  # fmt: skip

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds, ns):  # fmt: skip
        from streamlearn.learners import interact

        if ns is None:  # (svmlight: one namespace, nothing to interact)
            ns = np.full(indices.shape[0], 32, dtype=np.uint8)
        interact.train_batch(table, gstate, params, loss_id, indptr, indices, values, labels,
                             weights, bases, status, stats, rows, preds, ns, self.conf)  # fmt: skip

    def spec(self):  # noqa: ANN201 - a LearnerSpec
        """gd's table, state and name, with this entry (a model of it is a gd model whose
        options name ``--interact``)."""
        import dataclasses

        from streamlearn.learners import gd

        return dataclasses.replace(gd.SPEC, train_batch=self)


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """gd over the interacted examples: the run's learner."""
    try:
        opts = read(config.stack)
        refuse(config.to_dict(), {})
    except VWUsage as e:  # (sl train's, the API's: not a VW command line's)
        raise UsageError(e.message) from None
    # (VW's gd keeps one float a slot under -t: its mask of offsets is then 2^b − 1)
    return Entry(opts, config.bits, 0 if config.test_only else config.stride_shift).spec()
