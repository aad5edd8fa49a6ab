"""Text that came from input, shown on a terminal: every byte visible, none obeyed.

A malformed line's excerpt, a feature name, a file name reach stderr or stdout
inside messages; a line holding ``ESC]0;...`` would set the terminal's title,
``ESC[2J`` clear it, a carriage return overwrite the message, U+202E reverse
what follows.  :func:`printable` shows such characters escaped (``\\x1b``,
``\\r``, ``\\u202e``), and bytes that are not UTF-8 as ``\\xff``.
"""

from __future__ import annotations

import re

_HIDDEN = re.compile(r"[^\S ]|[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e"
                     r"\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]")  # fmt: skip
"""Characters a terminal may act on or not show: control and format characters, every
whitespace but the space, surrogates (undecodable bytes)."""


def _escape(m: re.Match) -> str:
    c = m.group()
    if "\udc80" <= c <= "\udcff":  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{ord(c) - 0xDC00:02x}"
    return c.encode("unicode_escape", "backslashreplace").decode("ascii")


def printable(text: str, keep: str = "") -> str:
    """``text`` with the characters a terminal would act on escaped; ``keep``: leave these.

    >>> printable("a\\x1b]0;owned\\x07b\\tc")
    'a\\\\x1b]0;owned\\\\x07b\\\\tc'
    >>> printable("two\\nlines", keep="\\n")
    'two\\nlines'
    """
    if text.isprintable():
        return text
    if keep:
        return keep[0].join(printable(part, keep[1:]) for part in text.split(keep[0]))
    return _HIDDEN.sub(_escape, text)


def shown_bytes(data: bytes) -> str:
    """Input bytes as text for a message: UTF-8 where they are, ``\\xNN`` where not, escaped.

    >>> shown_bytes(b"caf\\xc3\\xa9 \\xff\\x1b[2J")
    'café \\\\xff\\\\x1b[2J'
    """
    return printable(data.decode("utf-8", "surrogateescape"))
