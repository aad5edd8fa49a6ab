"""``sl inspect``: what a model file holds, for people and for scripts."""

from __future__ import annotations

import json

import numpy as np

from streamlearn import model as model_io
from streamlearn.io.names import slot_names
from streamlearn.learners.base import G_N, G_T
from streamlearn.run.report import summary
from streamlearn.system.text import printable


def inspect_model(path: str, top: int = 20, as_json: bool = False) -> str:
    """What the model at ``path`` holds, as text (names escaped, see
    :func:`~streamlearn.system.text.printable`) or as JSON."""
    m = model_io.load(path)
    c = m.config
    order = np.argsort(-np.abs(m.weights), kind="stable")[: max(top, 0)]
    largest = []
    for k in order:
        if m.weights[k] == 0:
            break
        slot = int(m.slots[k])
        names = slot_names(m.names, slot, c.bits, c.class_problems)
        largest.append({"slot": slot, "weight": float(m.weights[k]), "names": names})
    info = {
        "model": path,
        "learner": m.learner,
        "options": c.to_dict(),
        "learned_examples": int(m.gstate[G_N]),
        "learned_weight": float(m.gstate[G_T]),
        "stored_slots": int(m.slots.shape[0]),
        "table_size": 1 << c.bits,
        "counters": summary(m.stats, c.loss_id, m.nnz, c.oaa),
        "largest_weights": largest,
    }
    vw = m.meta.get("vw_model")
    if vw is not None:  # read from VW's format: what its file said
        info["vw_model"] = vw
    if as_json:
        return json.dumps(info, indent=2, sort_keys=True)
    s = info["counters"]
    lines = [
        f"model {printable(path)}",
        f"  algo {c.algo} ({m.learner} kernel), loss {c.loss}, bits {c.bits}"
        + (f", {'a tournament' if c.ect else 'one against all'} over {c.oaa} classes"
           if c.oaa else ""),  # fmt: skip
        "  options "
        + " ".join(
            f"{k}={v}" for k, v in info["options"].items()
            if k not in ("algo", "loss", "bits") and not _unset(k, v)
        ),
        *([_vw_line(vw)] if vw else []),
        f"  examples {s['examples']} (learned {info['learned_examples']}), "
        f"average {'multiclass 0/1 ' if c.oaa else ''}loss {_fmt(s['average_loss'])}",
        f"  non-zero weights {m.nnz} of {info['table_size']} "
        f"({100.0 * m.nnz / info['table_size']:.3f}%)",
        f"  largest weights (top {len(largest)}):",
    ]
    for e in largest:
        names = f"  {printable(', '.join(e['names']))}" if e["names"] else ""
        lines.append(f"    {e['slot']:>10d} {e['weight']:>+14.6g}{names}")
    return "\n".join(lines)


def _vw_line(vw: dict) -> str:
    kind = "with its resume state" if vw["resume"] else "weights only"
    return (f"  a VW {vw['version']} model ({kind}); VW's options: "
            f"{printable(vw['options']) or 'none'}; not recorded: {', '.join(vw['unrecorded'])}")


def _unset(key: str, value) -> bool:  # noqa: ANN001 - an option's JSON value
    """Options of other learners, left at their defaults: not shown in the text (the JSON has
    every option)."""
    return (key.startswith(("ftrl_", "freegrad_")) and value in (None, False)) or (
        key == "oaa" and value == 0
    )


def _fmt(x: float | None) -> str:
    return "n.a." if x is None else f"{x:.6f}"
