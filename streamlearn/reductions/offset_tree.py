"""``--ot K`` (VW's ``offset_tree.cc``): K actions of a contextual bandit as a tree of
two-action bandits, each VW's legacy ``--cb_explore 2`` (epsilon-greedy) over ``--cb 2``.

VW's set-up inserts ``--cb_explore 2`` (unless given) and ``--cb_force_legacy``, so the
run is the legacy cb driver's (``run/cblegacy.py``: cb labels, one line an example, ``-p``
the pmf over the K actions, VW's cb_explore loss and progress rows) with the offset tree's
kernel (:mod:`streamlearn.learners.offset_tree`, which says what it computes) in place of
cb_algs'.  Its model is VW's: the options ``--cb 2 --cb_explore 2 --cb_force_legacy
--cb_type T --csoaa 2 --ot K`` and cb_explore's counter.

Refused, one line each before any data is read: K below 2 (VW's tree of one leaf learns at
an offset before the first), another number of actions for the two-action problems
(``--cb``/``--cb_explore`` other than 2), another explorer than epsilon-greedy, ``--eval``,
other reductions, a base learner other than gd, ``-r`` and ``--audit``.  A line whose
label is not one ``a:c:p`` (or none) is malformed (VW's tree reads only the first entry,
and learns on an action alone).
"""

from __future__ import annotations

from streamlearn.errors import VWUsage
from streamlearn.reductions.vwoptions import Command, VWOption, count

OPTIONS = (("ot", "int", 0),)  # --ot K: the offset tree's actions (run/cblegacy.py)
"""Its field of :class:`~streamlearn.reductions.Multiline` (on ``--cb K``'s record)."""


def _ot(t: Command, name: str, value: str) -> None:
    t.multiline["ot"] = count(name, value, "--ot", "an offset tree needs at least one action")


VW_OPTIONS = {"ot": VWOption(None, True, _ot)}
"""The VW options it takes (:mod:`streamlearn.reductions.vwoptions`)."""


def settle(t: Command) -> None:
    """``--ot K``: legacy ``--cb_explore 2`` below it (VW's set-up); what sl does not run
    with it, one line each."""
    asked = t.multiline
    k = asked.get("ot")
    if not k:
        return
    if k < 2:
        raise VWUsage(f"--ot {k} is not supported by sl (a tree of one action: VW learns "
                      "outside its weights)")  # fmt: skip
    if asked.get("reduction") not in (None, "cb") or asked.get("mwt"):
        raise VWUsage("--ot with another multiline reduction is not supported by sl")
    if asked.get("actions", 2) != 2:
        raise VWUsage(f"--ot with --cb/--cb_explore {asked['actions']} is not supported by sl "
                      "(each node of the tree is a bandit of 2 actions)")  # fmt: skip
    if asked.get("explore", "greedy") != "greedy":
        raise VWUsage(f"--ot with --{asked['explore']} is not supported by sl (epsilon-greedy "
                      "only)")  # fmt: skip
    if asked.get("evaluate"):
        raise VWUsage("--ot with --eval is not supported by sl")
    for key, flag in (("oaa", "--oaa/--csoaa/--ect"), ("stack", "a single-line reduction")):
        if t.learn.get(key):
            raise VWUsage(f"--ot with {flag} is not supported by sl")
    if t.learn.get("algo", "gd") != "gd":
        raise VWUsage(f"--ot runs over gd in sl, not --{t.learn['algo']}")
    if t.raw_predictions:
        raise VWUsage("--ot with -r is not supported by sl (VW's tree writes none)")
    if t.outputs.get("audit"):
        raise VWUsage("--ot with --audit is not supported by sl")
    t.exploring = True
    asked.update(reduction="cb", actions=2, legacy=True, explore="greedy")


def stack(ml) -> tuple[str, str, str]:  # noqa: ANN001, ARG001
    """VW's header: (Enabled learners, Input label, Output pred)."""
    return "gd, scorer-identity, csoaa, cb, cb_explore-greedy, ot", "CB", "ACTION_PROBS"
