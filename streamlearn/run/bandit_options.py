"""sl's bandit options (``sl train --cb-adf ...``, ``Model(cb_adf=True, ...)``) and the
reduction they ask for (:class:`~streamlearn.reductions.Multiline`'s fields): light,
no kernels imported (:mod:`streamlearn.run.bandit` runs them)."""

from __future__ import annotations

from streamlearn.errors import UsageError

CB_TYPES = ("mtr", "ips", "dm", "dr")
"""The cost types (:data:`streamlearn.learners.cb_adf.CB_TYPES`)."""

EXPLORE_NAMES = {"epsilon": "greedy", "greedy": "greedy", "first": "first",
                 "softmax": "softmax", "bag": "bag", "squarecb": "squarecb", "cover": "cover",
                 "regcb": "regcb", "synthcover": "synthcover", "rnd": "rnd"}  # fmt: skip
"""sl's ``--explore`` names and the explorer each runs (:mod:`streamlearn.learners.explore`)."""

BANDIT_OPTIONS = ("cb_adf", "cb", "csoaa_ldf", "cb_type", "clip_p", "rank_all", "csoaa_rank",
                  "explore", "epsilon", "first_only", "tau", "lam", "bags", "greedify",
                  "gamma_scale", "gamma_exponent", "elim", "cover_policies", "psi", "nounif",
                  "regcbopt", "mellowness", "cb_min_cost", "cb_max_cost", "synthcover_psi",
                  "synthcover_size", "rnd_models", "rnd_alpha", "rnd_invlambda")  # fmt: skip
"""The options (sl's names, as ``sl train`` and ``Model(...)`` take them) of a bandit."""


_OWN = (("cover_policies", "cover", ("cover",)), ("psi", "psi", ("cover",)),
        ("nounif", "nounif", ("cover",)), ("regcbopt", "regcbopt", ("regcb",)),
        ("elim", "elim", ("squarecb",)), ("mellowness", "mellowness", ("regcb", "squarecb")),
        ("cb_min_cost", "cb_min_cost", ("regcb", "squarecb")),
        ("cb_max_cost", "cb_max_cost", ("regcb", "squarecb")),
        ("synthcover_psi", "synthcoverpsi", ("synthcover",)),
        ("synthcover_size", "synthcoversize", ("synthcover",)),
        ("rnd_models", "rnd", ("rnd",)), ("rnd_alpha", "rnd_alpha", ("rnd",)),
        ("rnd_invlambda", "rnd_invlambda", ("rnd",)))  # fmt: skip


def multiline_of(options: dict) -> dict:
    """:class:`~streamlearn.reductions.Multiline`'s fields from sl's bandit options
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
    # each explorer's own options, VW's names: (sl's name, Multiline's, explorers it goes with)
    for key, field, kinds in _OWN:
        if key in o:
            if out.get("explore") not in kinds:
                raise UsageError(f"--{key.replace('_', '-')} goes with --explore "
                                 f"{' or '.join(kinds)}")  # fmt: skip
            out[field] = o.pop(key)
    if out.get("explore") == "cover" and int(out.get("cover", 0)) < 1:
        raise UsageError("--explore cover needs --cover-policies N (at least 1)")
    if out.get("explore") == "rnd":
        out.setdefault("rnd", 1)  # (VW's --rnd's default)
        if int(out["rnd"]) < 1:
            raise UsageError("--rnd-models R: at least 1")
    for key in ("tau", "lam", "first_only", "greedify", "gamma_scale", "gamma_exponent",
                "epsilon"):  # fmt: skip
        if key in o and "explore" not in out:
            raise UsageError(f"--{key.replace('_', '-')} needs --explore")
    out.update(o)
    if "tau" in out:
        out["tau"] = int(out["tau"])
    if out.get("cb_type", "mtr") not in CB_TYPES:
        raise UsageError(f"--cb-type {out['cb_type']}: one of {', '.join(CB_TYPES)}")
    for key, v in out.items():  # (the explorers take them as float32, as VW reads them)
        if isinstance(v, float) and not abs(v) <= _F32_MAX:
            name = {"lam": "lambda"}.get(key, key).replace("_", "-")
            raise UsageError(f"--{name} {v}: not a number a float32 holds (at most 3.4e38)")
    return out


_F32_MAX = 3.4028234663852886e38
