"""One JSON line decoded as VW's JSON reader (rapidjson) takes it, within sl's limits.

:func:`decode_line` gives the line's value, objects as :class:`JsonObject` (their pairs
in order, duplicates kept), or raises :class:`JsonLineError` with the reason VW's reader
refuses the line for, or sl's: nested deeper than :data:`MAX_DEPTH` objects and arrays
(checked before Python's recursive reader runs), a ``\\u`` escape of a lone UTF-16
surrogate, ``NaN``/``Infinity``, a number beyond a double (:func:`number_f32`).  Bytes
that are not UTF-8 stay bytes in names and values (:func:`string_bytes`), as in VW.
The translation of the value into VW text is :mod:`streamlearn.io.vwjson`'s.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

_F32_INF = 2.0**128 - 2.0**103  # the least double that float32 rounds to infinity
_DBL_MAX = float(np.finfo(np.float64).max)


class JsonLineError(ValueError):
    """A JSON line VW's reader refuses; the message is the reason."""


class JsonObject(tuple):
    """A JSON object as its (key, value) pairs, in order, duplicates kept."""

    __slots__ = ()


MAX_DEPTH = 100
"""The deepest nesting of objects and arrays read (the line itself is depth 1); a
deeper line is refused (VW reads any depth)."""

_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_ESCAPE_SEQ = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def _depth_over(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether ``raw`` nests objects and arrays deeper than ``limit`` (strings skipped).

    Its memory is ~2 bytes per byte of ``raw`` plus 8 per ``"`` and bracket.
    """
    if raw.count(b"{") + raw.count(b"[") <= limit:
        return False
    b = np.frombuffer(raw, dtype=np.uint8)
    quotes = np.flatnonzero(b == 0x22)
    if quotes.size and b"\\" in raw:  # a quote after an odd run of backslashes is escaped
        after = quotes[quotes > 0]
        after = after[b[after - 1] == 0x5C]
        escaped = [q for q in after.tolist() if _odd_run(raw, q)]
        if escaped:
            quotes = np.setdiff1d(quotes, np.array(escaped, dtype=np.int64), assume_unique=True)
    opening = (b == 0x5B) | (b == 0x7B)
    at = np.flatnonzero(opening | (b == 0x5D) | (b == 0x7D))
    at = at[(np.searchsorted(quotes, at) & 1) == 0]  # outside strings: after an even count
    steps = np.where(opening[at], 1, -1).astype(np.int32)
    return steps.size > 0 and int(np.cumsum(steps, dtype=np.int32).max()) > limit


def _odd_run(raw: bytes, q: int) -> bool:
    """Whether an odd number of backslashes comes just before ``raw[q]``."""
    k = q - 1
    while k >= 0 and raw[k] == 0x5C:
        k -= 1
    return (q - 1 - k) % 2 == 1


def _lone_surrogate(raw: bytes) -> bool:
    """Whether a ``\\u`` escape of ``raw`` is a UTF-16 surrogate without its other half."""
    if _SURROGATE.search(raw) is None:
        return False
    pending = -1  # where a high surrogate's escape ended, waiting for its low half
    for m in _ESCAPE_SEQ.finditer(raw):
        cp = int(m.group(1), 16) if m.group(1) else -1
        if pending >= 0:
            if m.start() != pending or not 0xDC00 <= cp <= 0xDFFF:
                return True
            pending = -1
        elif 0xD800 <= cp <= 0xDBFF:
            pending = m.end()
        elif 0xDC00 <= cp <= 0xDFFF:
            return True
    return pending >= 0


def _refuse_constant(name: str) -> object:
    raise JsonLineError(f"{name} is not a JSON value")


def _loads(text: str) -> object:
    return json.loads(text, object_pairs_hook=JsonObject, parse_constant=_refuse_constant)


def decode_line(raw: bytes) -> object:
    """The JSON value of one line, as VW's reader takes it (:class:`JsonLineError` if not)."""
    if _depth_over(raw):
        raise JsonLineError(f"nested deeper than {MAX_DEPTH} objects and arrays")
    if _lone_surrogate(raw):
        raise JsonLineError("a lone surrogate (\\uD800-\\uDFFF escape without its pair)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "surrogateescape")  # bytes are bytes, as in VW
    try:
        return _loads(text)
    except JsonLineError:
        raise
    except (ValueError, RecursionError) as e:
        raise JsonLineError(f"not JSON ({printable(str(e))})") from None


def string_bytes(s: str) -> bytes:
    """A JSON string's bytes (a line that was not UTF-8 keeps its own bytes)."""
    return s.encode("utf-8", "surrogateescape")


def printable(s: str) -> str:
    """``s`` for a message: what UTF-8 cannot hold (a byte that was not UTF-8) escaped."""
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


def number_f32(v: object) -> float:
    """A JSON number as VW keeps it: ``static_cast<float>`` of rapidjson's value.

    A number beyond a double (``1e999``, 400 digits) is refused, as by rapidjson.
    """
    if -_F32_INF < v < _F32_INF or v != v:
        return float(np.float32(v))
    if isinstance(v, float) and math.isinf(v) or abs(v) > _DBL_MAX:
        raise JsonLineError("a number too big to be stored in a double")
    return math.copysign(math.inf, v)  # (what float32 gives, without numpy's warning)
