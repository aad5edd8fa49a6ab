"""How much memory a multiline model's counts ask for, bounded before anything is
allocated: ``sl vw``'s options (``--cb K``, ``--bag``, ``--cover``, ...), a model's stored
ones and a bandit command's, refused with exit 8 when they pass the memory available (or
``--max-memory``).  A model's options are data: they never size an allocation unchecked.
Layer: below the model files (``model.py``, ``model_vw.py``), above ``system``."""

from __future__ import annotations

ACTION_BYTES = 64
"""The least memory one action of one example takes under ``--cb K``/``--cbify K`` (its copy
of the line's features, a feature and the constant at 13 bytes each; its row pointers; its
score, order and probability)."""
SEARCH_ACTION_BYTES = 48
"""The least memory one action of ``--search K`` takes: its class number (8 bytes) and its
model's normalizer sums (16), twice over as BILOU spans double the actions."""
SIZES = ("actions", "cbify", "bag", "rnd", "cover", "synthcoversize", "tau", "search")
"""The counts a multiline reduction's options declare (:class:`Multiline`'s fields)."""


def _pow2(n: int) -> int:
    return 1 << (n - 1).bit_length() if n > 1 else 1


def reduction_need(ml: dict) -> list[tuple[str, int]]:
    """What the counts of a multiline reduction ``ml`` (Multiline's fields: ``actions``,
    ``bag``, ``rnd``, ``cover``, ``cb_type``, ...) take at least, before the first example
    and for one example, each as (field, bytes): bagging's and rnd's sums and counters,
    cover's policies' sums (16 bytes a model, the models a power of 2, as VW's feature
    width), ``--cb K``'s K copies of a line (:data:`ACTION_BYTES` each); the legacy
    ``cb_explore``'s sums of K actions' models."""

    def n(key: str) -> int:
        v = ml.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0

    dr = 2 if ml.get("cb_type") == "dr" else 1
    two = 2 if ml.get("cb_type", "mtr") in ("mtr", "dr") else 1
    bag, rnd, cover = n("bag"), n("rnd"), n("cover")
    key = "cbify" if n("cbify") > n("actions") else "actions"
    k = n(key)
    need = [(key, k * ACTION_BYTES), ("bag", 16 * bag + 16 * bag * dr),
            ("rnd", 16 * (rnd + 1) + 16 * _pow2((rnd + 1) * dr) if rnd else 0),
            ("cover", 16 * _pow2((cover + 1) * two) if cover else 0)]  # fmt: skip
    if ml.get("legacy") and k:
        need.append((key, 16 * _pow2(2 * k * max(1, bag) * (cover + 1)) + 4 * k))
    need.append(("search", SEARCH_ACTION_BYTES * n("search")))
    return [(key, b) for key, b in need if b]


SIZE_NAMES = {"actions": "--cb", "cbify": "--cbify", "bag": "--bag", "rnd": "--rnd",
              "cover": "--cover", "search": "--search"}  # fmt: skip
"""The counts a multiline reduction declares (:func:`reduction_need`), named as options:
what ``sl vw``'s options and a model's stored ones allocate for, bounded (exit 8)."""


def check_sizes(ml: dict, names: dict[str, str], max_memory: int | None = None,
                origin: str = "") -> None:  # fmt: skip
    """Refuse (exit 8, before anything is allocated) the counts of a multiline reduction
    ``ml`` whose memory (:func:`reduction_need`) passes ``max_memory`` or the memory
    available; ``names``: each field's option as the user writes it (``{"bag": "--bag"}``),
    ``origin``: where the counts come from (``"-i m.vw: its options ask for "``)."""
    from streamlearn.system.memory import refuse_above

    parts = reduction_need(ml)
    if not parts:
        return
    total = sum(b for _, b in parts)
    key = max(parts, key=lambda p: p[1])[0]
    flag = names.get(key, f"--{key}")
    refuse_above(total, f"{origin}{flag} {ml[key]}", f"lower {flag}", max_memory)
