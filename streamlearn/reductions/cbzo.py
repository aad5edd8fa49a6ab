"""``--cbzo``: VW's continuous-action contextual bandit by zeroth-order optimization
(``reductions/cbzo.cc``), a base learner of its own (VW sets it up instead of gd): each
line a ``ca action:cost:pdf_value`` example (:mod:`streamlearn.io.calabels`), its
prediction a density over the actions (two spikes around the policy's action centroid).

Options (``reductions.Multiline``'s fields): ``cbzo_policy`` (``--policy constant|linear``,
linear by default), ``cbzo_radius`` (``--radius``, 0.1; VW raises a radius below 1e-3 to
1e-3 with a warning), ``no_bias`` (``--no_bias_regularization``: the constant feature
is not regularized).  The rate is ``-l`` (no schedule), the regularizers ``--l1`` and
``--l2``.  Its driver is ``run/cbzo.py`` (a loop of its own, as ``--lda``'s), its kernel
:mod:`streamlearn.learners.cbzo`.  VW keeps ``--cbzo`` and a given ``--policy`` with a
model, and, unless ``--predict_only_model``, a given ``--learning_rate``, ``--power_t``
and ``--radius``.

``--radius`` is also FreeGrad's option (``vwargs``: its ``freegrad_radius``); with
``--cbzo`` it is read here instead.
"""

from __future__ import annotations

from streamlearn.errors import VWUsage
from streamlearn.reductions.base import Reduction
from streamlearn.reductions.vwoptions import Command, VWOption, stack_field

NAME = "cbzo"

OPTIONS = (
    ("cbzo", "bool", False),  # --cbzo given (a second reduction beside it is refused)
    ("cbzo_policy", "str | None", None),  # (None: not given, linear; VW keeps it when given)
    ("cbzo_radius", "float | None", None),  # (None: not given, 0.1)
    ("no_bias", "bool", False),  # --no_bias_regularization
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""

MIN_RADIUS = 1e-3
"""VW's smallest radius (a smaller one is raised to it, with a warning)."""


def _cbzo(t: Command, name: str, value: str | None) -> None:  # noqa: ARG001
    t.multiline["cbzo"] = True
    t.multiline["reduction"] = NAME


def _policy(name: str, text: str) -> str:  # noqa: ARG001
    if text not in ("constant", "linear"):
        raise VWUsage(f"'{text}' is not a valid choice for option --policy. Please select "
                      "from {constant, linear}")  # fmt: skip
    return text


VW_OPTIONS = {
    "cbzo": VWOption(None, False, _cbzo),
    "policy": VWOption(None, True, stack_field("cbzo_policy", _policy)),
    "no_bias_regularization": VWOption(None, False, stack_field("no_bias")),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`); ``--radius`` is
read from FreeGrad's field (:func:`settle`)."""

_GD = ("adaptive", "normalized", "invariant")
_REFUSED = {
    "oaa": "--oaa", "csoaa": "--csoaa", "multilabel": "--multilabel_oaa", "stack": "a reduction",
    "initial_weight": "--initial_weight", "initial_constant": "-C/--constant",
    "initial_weights": "--random_weights/--normal_weights", "binary": "--binary",
    "affix": "--affix",
}  # fmt: skip
"""What sl does not run with ``--cbzo`` (VW: its prediction types do not match, or not
yet in sl), by the learning option that holds it."""


def settle(t: Command) -> None:
    """``--cbzo``'s options together: ``--policy`` and ``--no_bias_regularization`` need it
    (VW: unrecognised without it); gd's update rules, another learner or reduction and
    what sl does not run with it are refused in one line; ``--radius`` is its own."""
    ml, learn = t.multiline, t.learn
    if not ml.get("cbzo"):
        for key, opt in (("cbzo_policy", "--policy"), ("no_bias", "--no_bias_regularization")):
            if key in ml:
                raise VWUsage(f"{opt} is an option of --cbzo (VW: unrecognised without it; "
                              "sl takes --no_bias_regularization with --cbzo only)")  # fmt: skip
        return
    if ml.get("reduction") != NAME:
        raise VWUsage(f"--cbzo with --{ml['reduction']}: not supported (VW: its prediction "
                      "types do not match; --cbzo is a base learner)")  # fmt: skip
    if "freegrad_radius" in learn:
        ml["cbzo_radius"] = learn.pop("freegrad_radius")
    rules = [r for r in _GD if r in learn]
    if rules or learn.get("algo") not in (None, "gd"):
        what = f"--{learn['algo']}" if learn.get("algo") not in (None, "gd") else \
            "--sgd/--adaptive/--normalized/--invariant"  # fmt: skip
        raise VWUsage(f"{what} with --cbzo: VW sets up --cbzo instead of gd (unrecognised "
                      "option)")  # fmt: skip
    for key, opt in _REFUSED.items():
        if learn.get(key):
            raise VWUsage(f"{opt} with --cbzo is not supported by sl")
    if learn.get("format") not in (None, "vw", "auto"):
        raise VWUsage(f"--{learn['format']} with --cbzo is not supported by sl (VW text only)")
    if not learn.get("constant", True) and ml.get("cbzo_policy") == "constant":
        raise VWUsage("constant policy can't be learnt when --noconstant is used")
    if t.outputs.get("invert_hash") and t.inputs.get("cache"):
        raise VWUsage("invert_hash is incompatible with a cache file.  Use it in single pass "
                      "mode only.")  # fmt: skip
    if t.outputs.get("audit"):
        raise VWUsage("--audit with --cbzo is not supported by sl")
    if t.raw_predictions:
        raise VWUsage("-r with --cbzo is not supported by sl (VW writes no raw prediction of "
                      "a density)")  # fmt: skip
    if getattr(t, "link", "identity") not in (None, "identity"):
        raise VWUsage("--link with --cbzo is not supported by sl (VW's density has no link)")
    learn["numbers"] = "vw"  # (VW's decimals, a model read with -i too)


def policy(ml) -> str:  # noqa: ANN001
    """The policy (linear unless ``--policy`` says otherwise)."""
    return ml.cbzo_policy or "linear"


def radius(ml) -> tuple[float, bool]:  # noqa: ANN001
    """The exploration radius, and whether VW raised it to :data:`MIN_RADIUS`."""
    r = 0.1 if ml.cbzo_radius is None else float(ml.cbzo_radius)
    import numpy as np

    if np.float32(r) < np.float32(MIN_RADIUS):
        return MIN_RADIUS, True
    return r, False


def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001, ARG001
    """VW's header: (Enabled learners, Input label, Output pred)."""
    return "cbzo", "CONTINUOUS", "PDF"


def vw_words(ml) -> list[str]:  # noqa: ANN001
    """The options VW keeps with a model whatever the run: ``--cbzo``, a given ``--policy``."""
    words = ["--cbzo"]
    if ml.cbzo_policy is not None:
        words += ["--policy", ml.cbzo_policy]
    return words


def _learner(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
    raise VWUsage("--cbzo runs in sl vw's own loop (run/cbzo.py): not in the server or the API "
                  "yet")  # fmt: skip


REDUCTION = Reduction(NAME, "none", False, _learner, stack, vw_words, options=OPTIONS,
                      batched=False, served=False)  # fmt: skip
