"""VW's continuous-action bandits over a tree of discrete actions: ``--cbify K
--cbify_reg`` (regression examples played as a bandit, VW's ``cbify.cc``), over CATS
(``cats.cc`` and the reductions it stacks: ``sample_pdf``, ``cats_pdf``,
``cb_explore_pdf``, ``pmf_to_pdf``, ``get_pmf``, ``cats_tree``) or, with
``--cb_discrete --cats_tree K``, over ``cb_explore``'s epsilon-greedy on the tree alone.

Options (``reductions.Multiline``'s fields): ``cbify_reg``, ``cb_discrete``, ``cats_tree``
(``--cats_tree K``), ``min_value``/``max_value`` (the action range, both needed),
``bandwidth`` (``--bandwidth``: the smoothing radius; half a leaf's width by default),
``loss_option`` (0 squared, 1 absolute, 2 zero-one), ``loss_report`` (1: the loss
reported in the label's units), ``loss_01_ratio`` (0.1); ``--epsilon`` is the explorers'
(0.05).  Its drivers are ``run/cats.py`` (``--cbify_reg``: a loop of its own, as
``--cbzo``'s, per example) and ``run/cats_pdf.py`` (``--cats``, ``--cats_pdf``: a block at
a time), its kernels :mod:`streamlearn.learners.cats_tree` and
:mod:`streamlearn.learners.cats_block`.

``--bandwidth`` is also ``--ksvm``'s option (its words in ``TrainConfig.stack``): with these
reductions it is read here instead (:func:`settle` runs before ksvm's).
"""

from __future__ import annotations

from streamlearn.errors import VWUsage
from streamlearn.reductions.base import Reduction
from streamlearn.reductions.vwoptions import Command, VWOption, count, integer, number, stack_field

NAME = "cats"

OPTIONS = (
    ("cbify_reg", "bool", False),
    ("cb_discrete", "bool", False),
    ("cats_tree", "int", 0),
    ("cats_k", "int", 0),  # --cats K
    ("cats_pdf", "int", 0),
    ("min_value", "float | None", None),
    ("max_value", "float | None", None),
    ("bandwidth", "float | None", None),
    ("loss_option", "int", 0),
    ("loss_report", "int", 0),
    ("loss_01_ratio", "float", 0.1),
)
"""Its fields of :class:`~streamlearn.reductions.Multiline`: (name, type, default)."""

_MINE = ("cbify_reg", "cb_discrete", "cats_tree", "cats_k", "cats_pdf", "min_value",
         "max_value", "bandwidth", "loss_option", "loss_report", "loss_01_ratio")  # fmt: skip


def _one_of(*allowed: int):  # noqa: ANN202
    def read(name: str, text: str) -> int:
        k = integer(name, text)
        if k not in allowed:
            raise VWUsage(f"Error: '{text}' is not a valid choice for option --{name}. Please "
                          f"select from {{{', '.join(map(str, allowed))}}}")  # fmt: skip
        return k

    return read


def _k(key: str):  # noqa: ANN202
    def apply(t: Command, name: str, value: str | None) -> None:
        t.multiline[key] = count(name, value or "", f"--{name}", "at least one action")

    return apply


VW_OPTIONS = {
    "cbify_reg": VWOption(None, False, stack_field("cbify_reg")),
    "cb_discrete": VWOption(None, False, stack_field("cb_discrete")),
    "cats_tree": VWOption(None, True, _k("cats_tree")),
    "cats": VWOption(None, True, _k("cats_k")),
    "cats_pdf": VWOption(None, True, _k("cats_pdf")),
    "min_value": VWOption(None, True, stack_field("min_value", number)),
    "max_value": VWOption(None, True, stack_field("max_value", number)),
    "loss_option": VWOption(None, True, stack_field("loss_option", _one_of(0, 1, 2))),
    "loss_report": VWOption(None, True, stack_field("loss_report", _one_of(0, 1))),
    "loss_01_ratio": VWOption(None, True, stack_field("loss_01_ratio", number)),
}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`); ``--bandwidth`` is
read from ksvm's words (:func:`settle`)."""

_REFUSED = {
    "oaa": "--oaa", "csoaa": "--csoaa", "multilabel": "--multilabel_oaa", "stack": "a reduction",
    "initial_weight": "--initial_weight", "initial_constant": "-C/--constant",
    "initial_weights": "--random_weights/--normal_weights", "binary": "--binary",
    "affix": "--affix", "quadratic": "-q", "cubic": "--cubic",
    "interactions": "--interactions",
}  # fmt: skip
"""What sl does not run with these reductions yet, by the learning option that holds it."""


def _take_bandwidth(t: Command) -> None:
    """``--bandwidth`` out of ksvm's words, into this reduction's field."""
    stack = list(t.learn.get("stack", ()))
    if "--bandwidth" not in stack:
        return
    at = stack.index("--bandwidth")
    t.multiline["bandwidth"] = number("bandwidth", str(stack[at + 1]))
    del stack[at : at + 2]
    if stack:
        t.learn["stack"] = tuple(stack)
    else:
        t.learn.pop("stack", None)


def settle(t: Command) -> None:
    """These reductions' options together; what sl does not run with them refused in one
    line, before any data is read."""
    ml, learn = t.multiline, t.learn
    mine = [k for k in _MINE if k in ml]
    stack = learn.get("stack", ())
    if not mine and "--ksvm" in stack:
        return
    if not mine:
        return
    _take_bandwidth(t)
    if not ml.get("cbify_reg"):
        _settle_cats(t)
        return
    if ml.get("reduction") != "cbify" or ml.get("cbify_cs") or ml.get("cbify_ldf"):
        raise VWUsage("--cbify_reg needs --cbify K (and neither --cbify_cs nor --cbify_ldf)")
    if ml.get("min_value") is None or ml.get("max_value") is None:
        raise VWUsage("Min and max values must be supplied with cbify_reg")
    k = ml["cbify"]
    if ml.get("cb_discrete"):
        if ml.get("cats_k"):
            raise VWUsage("Incompatible options: cb_discrete and cats")
        if ml.get("cats_tree") and ml["cats_tree"] != k:
            raise VWUsage("--cats_tree K with --cbify K --cbify_reg --cb_discrete: the same K "
                          "(sl)")  # fmt: skip
        if not ml.get("cats_tree"):  # (VW's cb_explore over cb_algs over csoaa)
            if learn.get("algo") not in (None, "gd", "coin", "ftrl", "pistol"):
                raise VWUsage(f"--{learn['algo']} with --cbify_reg --cb_discrete (without "
                              "--cats_tree) is not supported by sl yet")  # fmt: skip
            if ml.setdefault("cb_type", "dr") not in ("ips", "dm", "dr"):
                raise VWUsage(f"--cb_type {ml['cb_type']} with --cbify_reg --cb_discrete: ips, "
                              "dm or dr (sl)")  # fmt: skip
    else:
        if ml.get("cats_k") and ml["cats_k"] != k:
            raise VWUsage("Different number of actions specified for cbify and cb_continuous")
        if ml.get("cats_tree") or ml.get("cats_pdf"):
            raise VWUsage("--cats_tree/--cats_pdf with --cbify_reg (without --cb_discrete) is "
                          "not supported by sl")  # fmt: skip
        ml["cats_k"] = k
    if ml.get("cb_type") and not (ml.get("cb_discrete") and not ml.get("cats_tree")):
        raise VWUsage("--cb_type with --cbify_reg is not supported by sl (VW's cb_explore over "
                      "csoaa only: --cb_discrete without --cats_tree)")  # fmt: skip
    for key in ("bag", "cover", "first", "legacy", "rnd", "softmax", "regcb",
                "squarecb"):  # fmt: skip
        if ml.get(key):
            raise VWUsage(f"--{key} with --cbify_reg is not supported by sl")
    if ml.get("explore") not in (None, "greedy"):
        raise VWUsage(f"--{ml['explore']} with --cbify_reg is not supported by sl")
    ml.pop("explore", None)
    ml["reduction"] = NAME
    t.exploring = True  # (--epsilon is cb_explore's or cb_explore_pdf's)
    _refuse(t)
    learn["numbers"] = "vw"


def _refuse(t: Command) -> None:
    """What sl does not run with these reductions yet, one line each."""
    learn, what = t.learn, "--cbify_reg" if t.multiline.get("cbify_reg") else "--cats"
    for key, opt in _REFUSED.items():
        if learn.get(key):
            raise VWUsage(f"{opt} with {what} is not supported by sl")
    if (learn.get("passes") or 1) > 1:
        raise VWUsage(f"--passes with {what} is not supported by sl yet")
    if learn.get("loss") not in (None, "squared"):
        raise VWUsage(f"--loss_function {learn['loss']} with {what} is not supported by sl")
    if learn.get("algo") not in (None, "gd", "coin", "ftrl", "pistol"):
        raise VWUsage(f"--{learn['algo']} with {what} is not supported by sl")
    if learn.get("format") not in (None, "vw", "auto"):
        raise VWUsage(f"--{learn['format']} with {what} is not supported by sl (VW text)")
    models = ("invert_hash", "--invert_hash"), ("audit", "--audit")
    if t.multiline.get("cbify_reg"):  # (VW's cbify keeps no model of CATS: sl writes none)
        models += (("final_model", "-f"), ("readable_model", "--readable_model"))
    for key, opt in models:
        if t.outputs.get(key):
            raise VWUsage(f"{opt} with {what} is not supported by sl yet")
    if "initial_model" in t.inputs and t.multiline.get("cbify_reg"):
        raise VWUsage(f"-i with {what} is not supported by sl yet")
    if t.raw_predictions:
        raise VWUsage(f"-r with {what} is not supported by sl")


def _settle_cats(t: Command) -> None:
    """``--cats K`` or ``--cats_pdf K`` on ``ca`` examples (without ``--cbify``)."""
    ml = t.multiline
    if ml.get("cbify") or ml.get("reduction") not in (None, NAME):
        if ml.get("cats_k") or ml.get("cats_pdf") or ml.get("cats_tree"):
            raise VWUsage(f"--cats/--cats_pdf/--cats_tree with --{ml.get('reduction')} is not "
                          "supported by sl")  # fmt: skip
        return
    if ml.get("cats_tree") and not (ml.get("cats_k") or ml.get("cats_pdf")):
        raise VWUsage("--cats_tree alone (cb labels over a tree) is not supported by sl yet")
    if not (ml.get("cats_k") or ml.get("cats_pdf")):
        return  # (--min_value and the like alone: VW ignores them; so does sl)
    if ml.get("cats_k") and ml.get("cats_pdf"):
        raise VWUsage("--cats with --cats_pdf is not supported by sl (--cats stacks its own)")
    if ml.get("cats_tree") or ml.get("cb_discrete") or ml.get("loss_option") or \
            ml.get("loss_report") or "loss_01_ratio" in ml:  # fmt: skip
        raise VWUsage("--cats_tree/--cb_discrete/--loss_* are --cbify_reg's: not with --cats "
                      "or --cats_pdf (sl)")  # fmt: skip
    if ml.get("min_value") is None or ml.get("max_value") is None:
        raise VWUsage("Min and max values must be supplied with cb_continuous")
    ml["reduction"] = NAME
    t.exploring = True  # (--epsilon is cb_explore_pdf's)
    _refuse(t)
    t.learn["numbers"] = "vw"


def stack(ml, base: str) -> tuple[str, str, str]:  # noqa: ANN001
    """VW's header: (Enabled learners, Input label, Output pred)."""
    if ml.cats_pdf:
        chain = f"{base}, binary, cats_tree, get_pmf, pmf_to_pdf, cb_explore_pdf, cats_pdf"
        return chain, "CONTINUOUS", "PDF"
    if not ml.cbify_reg:
        chain = (f"{base}, binary, cats_tree, get_pmf, pmf_to_pdf, cb_explore_pdf, cats_pdf, "
                 "sample_pdf, cats")  # fmt: skip
        return chain, "CONTINUOUS", "ACTION_PDF_VALUE"
    if ml.cb_discrete and not ml.cats_tree:
        chain = f"{base}, csoaa, cb, cb_explore-greedy, cbify-reg-discrete"
    elif ml.cb_discrete:
        chain = f"{base}, binary, cats_tree, cb_explore-greedy, cbify-reg-discrete"
    else:
        chain = (f"{base}, binary, cats_tree, get_pmf, pmf_to_pdf, cb_explore_pdf, cats_pdf, "
                 "sample_pdf, cats, cbify-reg")  # fmt: skip
    return chain + ", count_label", "SIMPLE", "SCALAR"


def vw_words(ml) -> list[str]:  # noqa: ANN001
    """The options VW keeps with a ``--cats``/``--cats_pdf`` model (each reduction of the
    stack its own, the inserted ones too; ``--tree_bandwidth``: pmf_to_pdf's)."""
    import numpy as np

    from streamlearn.learners.cats_tree import tree_bandwidth

    k = str(ml.cats_k or ml.cats_pdf)
    if int(k) < 1:  # (no tree: a record the options did not settle)
        return ["--cats", k]
    lo, hi = np.float32(ml.min_value), np.float32(ml.max_value)
    half = np.float32(np.float32(np.float32(hi - lo) / np.float32(k)) / np.float32(2.0))
    bw = np.float32(ml.bandwidth) if ml.bandwidth is not None else half
    words = ["--binary", "--cats_pdf", k, "--cats_tree", k, "--cb_explore_pdf", "--get_pmf",
             "--max_value", _f15(ml.max_value), "--min_value", _f15(ml.min_value),
             "--pmf_to_pdf", k, "--tree_bandwidth",
             str(tree_bandwidth(int(k), lo, hi, bw))]  # fmt: skip
    if ml.cats_k:
        words += ["--cats", k, "--sample_pdf"]
    if ml.bandwidth is not None:
        words += ["--bandwidth", _f15(ml.bandwidth)]
    if ml.epsilon is not None:
        words += ["--epsilon", _f15(ml.epsilon)]
    return words


def _f15(x: float) -> str:
    import numpy as np

    return f"{float(np.float32(x)):.15g}"


def _learner(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
    raise VWUsage("--cbify_reg runs in sl vw's own loop (run/cats.py): not in the server or "
                  "the API yet")  # fmt: skip


REDUCTION = Reduction(NAME, "none", False, _learner, stack, vw_words, options=OPTIONS,
                      batched=False, served=False)  # fmt: skip
