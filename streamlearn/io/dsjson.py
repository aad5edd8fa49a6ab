"""DSJSON, the decision service's records (``--dsjson``): their fields around VW's JSON.

A record's context is under ``c``, read as a ``--json`` line is
(:class:`~streamlearn.io.jsonreader.JsonReader`); its other fields are the decision's:
top-level ``_label_*``, ``_labelIndex``, ``a`` (the actions taken, required), ``p``,
``pdrop`` (the example's weight becomes ``1/(1 - pdrop)``; 1 is refused),
``_skipLearn`` (the line is dropped), ``_outcomes`` (the slots' outcomes of a CCB or
slates record), ``EventId``, ``Timestamp``.  Lines not starting with ``{`` are passed
over silently, as VW does (:func:`streamlearn.io.vwjson.read_record`).
"""

from __future__ import annotations

from streamlearn.io.jsondecode import JsonLineError, JsonObject, number_f32
from streamlearn.io.jsonreader import F32, JsonReader


def read_dsjson(doc: JsonObject, rd: JsonReader) -> float | None:
    """Read the DSJSON record ``doc`` into ``rd``: the examples' importance weight, or
    ``None`` for a record VW reads on past (``_skipLearn``, no actions taken).

    Raises :class:`~streamlearn.io.jsondecode.JsonLineError` for a record VW refuses.
    """
    actions: list = []
    skip = False
    outcomes = None
    pdrop = 0.0
    seen_c = False
    for key, v in doc:
        if key == "c":
            if not isinstance(v, JsonObject):
                raise JsonLineError("'c' must be an object")
            rd.root(v)
            seen_c = True
        elif key == "a":
            actions = v if isinstance(v, list) else [v]
        elif key == "pdrop":
            if isinstance(v, int | float) and not isinstance(v, bool):
                pdrop = number_f32(v)
        elif key == "_skipLearn":
            skip = v is True
        elif key == "_outcomes" and rd.kind in ("ccb", "slates"):
            outcomes = v
        elif key.startswith("_label"):
            if len(key) >= 7 and key[6] == "_":
                if isinstance(v, JsonObject):
                    rd.label_object(v)
                else:
                    rd.label_property(key[7:], v)
            elif len(key) == 6:
                rd.label(v)
            elif key.lower() == "_labelindex":
                rd.label_index_value(v)
    if pdrop == 1.0:
        raise JsonLineError("examples with pdrop==1 are not supported")
    if skip or (not actions and rd.kind == "cb"):
        return None  # VW reads on: _skipLearn, or a record without actions taken
    if not seen_c:
        raise JsonLineError("a DSJSON record without its context 'c'")
    if outcomes is not None:
        _outcomes(rd, outcomes)
    if rd.kind == "slates" and rd.found_cb:  # (a _label_cost after 'c')
        rd.slates_cost()
    taken = any(ex.out_actions and ex.out_probs for ex in rd.examples if ex.role == "slot")
    if rd.kind == "slates":
        # VW's slates reader: the slots are labeled when the record has a _label_cost
        taken = rd.examples[0].labeled
    if rd.kind in ("ccb", "slates") and not actions and not taken:
        # VW reads on past a record without actions taken: for CCB and slates
        # records, the first action of each slot's outcome (or 'a')
        return None
    if pdrop != 0.0 and rd.kind in ("ccb", "slates"):
        raise JsonLineError("pdrop with --ccb_explore_adf/--slates: not supported yet")
    return float(F32(1.0) / (F32(1.0) - F32(pdrop)))


def _outcomes(rd: JsonReader, v: object) -> None:
    """DSJSON ``_outcomes``: the n-th object is the n-th slot's outcome."""
    if not isinstance(v, list):
        raise JsonLineError("_outcomes must be an array of objects")
    slots = [ex for ex in rd.examples if ex.role == "slot"]
    if not slots:
        raise JsonLineError("_outcomes without _slots")
    for k, item in enumerate(x for x in v if x is not None):
        if not isinstance(item, JsonObject):
            raise JsonLineError("_outcomes must be an array of objects")
        if k >= len(slots):
            raise JsonLineError("more _outcomes than _slots")
        saved = rd.ex
        rd.ex = slots[k]
        for key, val in item:
            if key.lower() == "_label_cost":
                rd.label_property("cost", val)
            elif key in ("_a", "_p"):
                rd.outcome_part(key, val)
            elif key == "_inc" and rd.kind == "ccb":
                rd.ex.include = rd.uints(val, key)
        rd.ex = saved
