"""sl's bandit options (``sl train --cb-adf ...``, ``Model(cb_adf=True, ...)``) and the
reduction they ask for (:class:`~streamlearn.run.multiline.Multiline`'s fields): light,
no kernels imported (:mod:`streamlearn.run.bandit` runs them)."""

from __future__ import annotations

from streamlearn.errors import UsageError

CB_TYPES = ("mtr", "ips", "dm", "dr")
"""The cost types (:data:`streamlearn.learners.cb_adf.CB_TYPES`)."""

EXPLORE_NAMES = {"epsilon": "greedy", "greedy": "greedy", "first": "first",
                 "softmax": "softmax", "bag": "bag", "squarecb": "squarecb"}  # fmt: skip
"""sl's ``--explore`` names and the explorer each runs (:mod:`streamlearn.learners.explore`)."""

BANDIT_OPTIONS = ("cb_adf", "cb", "csoaa_ldf", "cb_type", "clip_p", "rank_all", "csoaa_rank",
                  "explore", "epsilon", "first_only", "tau", "lam", "bags", "greedify",
                  "gamma_scale", "gamma_exponent")  # fmt: skip
"""The options (sl's names, as ``sl train`` and ``Model(...)`` take them) of a bandit."""


def multiline_of(options: dict) -> dict:
    """:class:`~streamlearn.run.multiline.Multiline`'s fields from sl's bandit options
    (:data:`BANDIT_OPTIONS`; ``None`` values are left out)."""
    o = {k: v for k, v in options.items() if v is not None and v is not False}
    unknown = sorted(set(o) - set(BANDIT_OPTIONS))
    if unknown:
        raise UsageError(f"not a bandit option: {', '.join(unknown)}")
    red = [k for k in ("cb_adf", "cb", "csoaa_ldf") if k in o]
    if len(red) > 1:
        raise UsageError("--cb-adf, --cb and --csoaa-ldf: one at a time")
    out: dict = {}
    if "csoaa_ldf" in o:
        v = o.pop("csoaa_ldf")
        if v not in ("m", "mc", True):
            raise UsageError(f"--csoaa-ldf {v}: m (multiline) or mc (multiline classifier)")
        out["reduction"] = "csoaa_ldf"
        out["classifier"] = v == "mc"
    elif "cb" in o:
        k = int(o.pop("cb"))
        if k < 1:
            raise UsageError(f"--cb {k}: at least one action")
        out["reduction"] = "cb"
        out["actions"] = k
    elif o.pop("cb_adf", None) or "explore" in o:
        out["reduction"] = "cb_adf"
    elif o:
        raise UsageError(f"--{next(iter(o)).replace('_', '-')} needs --cb-adf, --cb K or "
                         "--csoaa-ldf")  # fmt: skip
    if "explore" in o:
        name = o.pop("explore")
        if name not in EXPLORE_NAMES:
            raise UsageError(f"--explore {name}: one of {', '.join(sorted(EXPLORE_NAMES))}")
        if out.get("reduction") != "cb_adf":
            raise UsageError("--explore needs --cb-adf (actions with features)")
        out["explore"] = EXPLORE_NAMES[name]
    if "bags" in o:
        out["bag"] = int(o.pop("bags"))
        if out.get("explore") != "bag" or out["bag"] < 1:
            raise UsageError("--bags B (at least 1) goes with --explore bag")
    if out.get("explore") == "bag" and "bag" not in out:
        raise UsageError("--explore bag needs --bags B")
    for key in ("tau", "lam", "first_only", "greedify", "gamma_scale", "gamma_exponent",
                "epsilon"):  # fmt: skip
        if key in o and "explore" not in out:
            raise UsageError(f"--{key.replace('_', '-')} needs --explore")
    out.update(o)
    if "tau" in out:
        out["tau"] = int(out["tau"])
    if out.get("cb_type", "mtr") not in CB_TYPES:
        raise UsageError(f"--cb-type {out['cb_type']}: one of {', '.join(CB_TYPES)}")
    return out
