"""VW's model files for the multiline reductions (``--csoaa_ldf``, ``--cb_adf``,
``--cb_explore_adf`` and what VW 9 runs on them: ``--cb K``, ``--cb_explore K``): bytes only.

Facts read from VW 9.11's reductions' ``save_load`` (each reduction writes its part, the
top of the stack first, gd last) and ``vw_versions.h``; little-endian throughout::

    header                 io/vwmodel.py (its options: " --cb_adf --cb_explore_adf ...")
    u8                     --ccb_explore_adf's has_seen_multi_slot_example (CCB and slates
                           models: options naming ccb_explore_adf); from 8.9.0
    u64                    the explorer's counter, only under --first (tau: learned examples
                           still to explore) or --squarecb (examples learned); from 8.11.0
    u64 u64                cb_adf's mtr sums (event_sum, action_sum), under --cb_adf
                           (whatever --cb_type); from 8.3.2
    gd                     io/vwmodel.py: read_body (resume flag, state, slot records)

``--csoaa_ldf`` and the greedy, softmax and bagging explorers write nothing of their own
(bagging's copies are interleaved in gd's slots; its generator's state is the header's
``--random_seed``).  Every field is checked against the bytes that remain before it is
read; nothing is allocated from a count the file gives.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from streamlearn.io import vwmodel

FIRST_COUNTER = (8, 11, 0)
"""The first version whose --first and --squarecb models hold the explorer's counter."""
COVER_COUNTER = (8, 9, 0)
"""The first version whose --cover models hold its counter (VW's
VERSION_FILE_WITH_CCB_MULTI_SLOTS_SEEN_FLAG)."""
CB_ADF_SUMS = (8, 3, 2)
"""The first version whose --cb_adf models hold mtr's sums."""
CCB_SEEN_FLAG = (8, 9, 0)
"""The first version whose --ccb_explore_adf models hold has_seen_multi_slot_example (VW's
VERSION_FILE_WITH_CCB_MULTI_SLOTS_SEEN_FLAG)."""
MAX_COUNT = 1 << 53
"""The largest counter or sum taken (a float64 counts exactly below it)."""

_U64 = struct.Struct("<Q")
_F32X2 = struct.Struct("<ff")


@dataclass
class CbBody:
    """The reductions' part of a multiline model and gd's body after it."""

    counter: int | None
    """The explorer's counter (None: the file keeps none)."""
    event_sum: int | None
    action_sum: int | None
    body: vwmodel.Body
    costs: tuple[float, float] | None = None
    """--synthcover's lowest and highest costs seen (None: the file keeps none)."""
    seen_multi: bool | None = None
    """--ccb_explore_adf's has_seen_multi_slot_example (None: the file keeps none)."""


def layout(h: vwmodel.Header, explorer: str, cb_adf: bool,
           legacy: bool = False) -> tuple[bool, bool]:  # fmt: skip
    """(counter, sums): which of the reductions' fields a model of header ``h`` holds,
    for ``explorer`` (first, squarecb, greedy, ...; "" for none) and ``cb_adf``;
    ``legacy``: VW's single-line ``cb_explore`` keeps its counter (cover's, 0 for the
    others) under every explorer, from 8.9.0, and no sums."""
    ver = h.version_tuple
    if legacy:
        return bool(explorer) and ver >= CCB_SEEN_FLAG, False
    counter = (explorer in ("first", "squarecb", "regcb") and ver >= FIRST_COUNTER) or (
        explorer == "cover" and ver >= COVER_COUNTER
    )
    sums = cb_adf and ver >= CB_ADF_SUMS
    return counter, sums


def has_costs(h: vwmodel.Header, explorer: str) -> bool:
    """Whether a model of header ``h`` keeps ``--synthcover``'s lowest and highest costs
    seen (two float32 where the others keep a counter; from 8.9.0)."""
    return explorer == "synthcover" and h.version_tuple >= COVER_COUNTER


def has_ccb_flag(h: vwmodel.Header) -> bool:
    """Whether a model of header ``h`` keeps --ccb_explore_adf's has_seen_multi_slot_example
    (VW reads it when the model's options name ccb_explore_adf: CCB's and slates' models)."""
    names = {w[2:] for w in h.options.split() if w.startswith("--")}
    return "ccb_explore_adf" in names and h.version_tuple >= CCB_SEEN_FLAG


def read_cb_body(data: bytes, h: vwmodel.Header, counter: bool, sums: bool, cols: int,
                 models: int = 1, costs: bool = False, ccb: bool = False) -> CbBody:  # fmt: skip
    """The part after header ``h``: CCB's flag (if ``ccb``), the counter (if ``counter``) or
    --synthcover's costs (if ``costs``), mtr's sums (if ``sums``), then gd's body of ``cols``
    floats per slot (:func:`streamlearn.io.vwmodel.read_body`)."""
    pos = h.end
    seen = None
    if ccb:
        if pos + 1 > len(data):
            raise ValueError("it ends inside --ccb_explore_adf's flag (truncated)")
        if data[pos] > 1:
            raise ValueError(f"its --ccb_explore_adf flag is {data[pos]} (corrupt)")
        seen = bool(data[pos])
        pos += 1
    low_high = None
    if costs:
        if pos + 8 > len(data):
            raise ValueError("it ends inside --synthcover's costs (truncated)")
        low_high = _F32X2.unpack_from(data, pos)
        if not all(math.isfinite(c) for c in low_high):
            raise ValueError(f"its --synthcover costs are {low_high} (corrupt)")
        pos += 8
    fields = []
    for what, present in (("explorer's counter", counter), ("cb_adf's event sum", sums),
                          ("cb_adf's action sum", sums)):  # fmt: skip
        if not present:
            fields.append(None)
            continue
        if pos + 8 > len(data):
            raise ValueError(f"it ends inside its {what} (truncated)")
        (v,) = _U64.unpack_from(data, pos)
        if v > MAX_COUNT:
            raise ValueError(f"its {what} is {v} (corrupt)")
        fields.append(v)
        pos += 8
    gd_h = vwmodel.Header(**{**h.__dict__, "end": pos})
    body = vwmodel.read_body(data, gd_h, cols, models)
    return CbBody(fields[0], fields[1], fields[2], body, low_high, seen)


def encode_cb_body(counter: int | None, sums: tuple[int, int] | None, gd_parts: list,
                   costs: tuple[float, float] | None = None,
                   seen_multi: bool | None = None) -> list:  # fmt: skip
    """The bytes after the header: CCB's flag, the counter or --synthcover's costs, and mtr's
    sums (each when not None), then gd's parts (:func:`streamlearn.io.vwmodel.encode_body`)."""
    head = b"" if seen_multi is None else bytes([int(bool(seen_multi))])
    if costs is not None:
        head += _F32X2.pack(*costs)
    if counter is not None:
        head += _U64.pack(int(counter))
    if sums is not None:
        head += _U64.pack(int(sums[0])) + _U64.pack(int(sums[1]))
    return [head, *gd_parts] if head else list(gd_parts)
