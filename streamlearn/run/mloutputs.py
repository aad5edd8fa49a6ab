"""VW's diagnostic outputs of the multiline reductions (``sl vw``): ``--readable_model``,
``--invert_hash``, and which of ``--audit``, ``-r``, ``--probabilities`` a reduction writes.

The readable models are the text twin of the binary model :mod:`streamlearn.run.mlmodel`
writes (:func:`streamlearn.run.mlmodel.model_state`: one state, two encodings): VW's header
(the options string the binary header holds), the reductions' state as text (the
explorer's counter, cb_adf's ``event_sum``/``action_sum``), gd's resume state and slots
(:mod:`streamlearn.run.vwreadable`).  ``--invert_hash`` names each slot as VW's gd names
it when it first predicts or learns with it: the feature's name (``ns^f``, ``a*b`` for a
cross, ``Constant``), and ``[o]`` after it for the model at offset o (``--cb_type dr``'s
cost regressor, ``--cover``'s policies, ``--bag``'s copies): :mod:`streamlearn.run.mlnames`.

An output a reduction does not write yet is refused before any data is read
(:func:`refuse`, exit 2), never accepted and skipped.
"""

from __future__ import annotations

from streamlearn.errors import UsageError
from streamlearn.reductions.options import reduction_name

BUILT: dict[str, frozenset[str]] = {
    "readable_model": frozenset({"csoaa_ldf", "cb_adf", "cb", "ccb", "slates", "search"}),
    "invert_hash": frozenset({"csoaa_ldf", "cb_adf", "ccb", "slates"}),
    "audit": frozenset({"csoaa_ldf", "cb_adf", "ccb", "slates"}),
    "raw_predictions": frozenset({"csoaa_ldf", "cb_adf", "cb", "search"}),
    "probabilities": frozenset({"csoaa_ldf"}),
}
"""Each output's reductions (``Multiline.reduction``; ``cb_adf`` is ``--cb_adf`` and
``--cb_explore_adf``) whose runs write it as VW does; :func:`kind` says which explorers."""

NAMES = {"audit": "--audit", "raw_predictions": "-r/--raw_predictions",
         "readable_model": "--readable_model", "invert_hash": "--invert_hash",
         "probabilities": "--probabilities"}  # fmt: skip


def built(ml, attr: str) -> bool:  # noqa: ANN001
    """Whether runs of ``ml`` write output ``attr`` (an :class:`~streamlearn.run.options.Outputs`
    field) as VW does."""
    if getattr(ml, "mwt", ""):  # (run/mwt.py: -p and VW's model file)
        return False
    if ml.legacy or ml.evaluate:  # (cblegacy writes -r, and its models both ways)
        return attr in ("raw_predictions", "readable_model")
    if ml.reduction == "cbify" and attr == "raw_predictions":  # (run/cbify.py's classes)
        return not (ml.cbify_ldf or getattr(ml, "cbify_reg", False))
    return ml.reduction in BUILT[attr]


def refuse(ml, outputs, inputs=None, learn: dict | None = None) -> None:  # noqa: ANN001
    """Stop the run (exit 2) before any data is read when it asks for an output its
    reduction does not write yet (``--invert_hash``: names read again from VW text files,
    not from stdin, JSON or CSV)."""
    for attr, name in NAMES.items():
        if getattr(outputs, attr, None) and not built(ml, attr):
            raise UsageError(f"sl vw: {name} is not written for {reduction_name(ml)} yet "
                             "(sl refuses it rather than skip it)")  # fmt: skip
    if getattr(outputs, "audit", None):
        from streamlearn.run.mlaudit import check

        check(ml, learn or {})
    if getattr(outputs, "invert_hash", None) and inputs is not None:
        from streamlearn.system.sources import is_regular

        fmt = (learn or {}).get("format") or "auto"
        sources = list(inputs.sources or ["-"])
        if ml.reduction in ("ccb", "slates"):  # (named as the run meets them: any input)
            sources = []
            if ml.no_predict:
                raise UsageError("sl vw: --invert_hash with --no_predict is not written yet "
                                 "(sl refuses it rather than skip it)")  # fmt: skip
        json = fmt in ("json", "dsjson") and ml.reduction == "cb_adf"
        if (fmt not in ("auto", "vw") and not json) or not all(is_regular(s) for s in sources):
            raise UsageError(f"sl vw: --invert_hash under {reduction_name(ml)} names the "
                             "features of VW text and JSON files (-d FILE), not of stdin, a "
                             "pipe or --csv yet")  # fmt: skip


def quiet_progress(outputs):  # noqa: ANN001, ANN201
    """Under ``--quiet``, VW's counters that a readable model or VW's model file writes
    (no table printed); None when the run writes neither."""
    vw_model = getattr(outputs, "final_model", None) and getattr(
        outputs, "model_format", "sl") in ("vw", "vw_predict_only")  # fmt: skip
    if not (getattr(outputs, "readable_model", None) or getattr(outputs, "invert_hash", None)
            or vw_model):  # fmt: skip
        return None
    from streamlearn.run.mlconsole import Progress

    return Progress(lambda *a: None, False, quiet=True)


def write_readable(fitted, learn: dict, ml, outputs, progress) -> None:  # noqa: ANN001
    """Write ``--readable_model`` and ``--invert_hash`` (with the run's other outputs)."""
    from streamlearn.learners import cb_adf
    from streamlearn.reductions.options import config_of
    from streamlearn.run import mlmodel
    from streamlearn.system.outputs import write_bytes

    cfg = config_of(learn, bases=True)
    counter, sums, seed = mlmodel.reductions_state(fitted, ml)
    if ml.explore_eval and fitted.explorer is not None:
        seed = int(fitted.explorer.rng[0])  # (explore_eval's draws: VW's generator, kept)
    stats = fitted.stats.copy()
    stats[cb_adf.EVENTS], stats[cb_adf.ACTIONS] = sums
    weights_only = getattr(outputs, "model_format", "vw") == "vw_predict_only"
    m = mlmodel.model_state(ml, cfg, fitted.table, fitted.gstate, stats, counter, seed,
                            weights_only)  # fmt: skip
    if m.resume is not None:
        mlmodel.table_state(m.resume, int(fitted.summary.get("passes") or 1), progress)
    multi = bool(fitted.summary.get("ccb_seen_multi"))  # (CCB's, slates')
    if outputs.readable_model:
        top = getattr(fitted.explorer, "vw_text", str)()  # (--experimental_igl's section)
        write_bytes(outputs.readable_model, mlmodel.readable(m, ml, seen_multi=multi, top=top),
                    "readable model")  # fmt: skip
    if outputs.invert_hash:
        names = fitted.names or {}
        write_bytes(outputs.invert_hash, mlmodel.readable(m, ml, names, multi),
                    "invert-hash model")  # fmt: skip


def _lines(path: str):  # noqa: ANN202
    """The lines of a VW text file (gzip, bzip2 and xz read as the parser reads them)."""
    import bz2
    import gzip
    import lzma

    from streamlearn.system.sources import compression

    with open(path, "rb") as f:
        head = f.read(16)
    opener = {"gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open}.get(compression(head) or "",
                                                                         open)  # fmt: skip
    with opener(path, "rb") as f:
        yield from f


def _examples(paths: list[str]):  # noqa: ANN202
    """Each multiline example of the files: (its shared line or None, its other lines)."""
    lines: list[bytes] = []
    for path in paths:
        for raw in _lines(path):
            line = raw.rstrip(b"\r\n")
            if line.strip():
                lines.append(line)
                continue
            if lines:
                yield _split(lines)
            lines = []
    if lines:
        yield _split(lines)


def _json_examples(paths: list[str], dsjson: bool, learn: dict, inter, bits: int):  # noqa: ANN001, ANN202
    """Each multiline example of JSON files as :func:`feature_names` reads it: (the shared
    example's features, each action's), each feature (32-bit slot, VW's name, namespace
    byte), as VW's JSON reader names them (a line VW cannot read: none, as the run skipped
    it)."""
    from streamlearn.io.jsondecode import JsonLineError
    from streamlearn.io.names import named_with_grams
    from streamlearn.io.vwjson import JsonOptions, read_named

    opts = JsonOptions(dsjson=dsjson, chain_hash=bool(learn.get("chain_hash")), kind="cb",
                       hash_seed=int(learn.get("hash_seed") or 0))  # fmt: skip
    for path in paths:
        for raw in _lines(path):
            try:
                read = read_named(raw, opts)
            except JsonLineError:
                continue
            if not read:
                continue
            feats = [named_with_grams(named, inter, bits) for _, named in read]
            if read[0][0]:
                yield feats[0], feats[1:]
            else:
                yield [], feats


def _split(lines: list[bytes]) -> tuple[bytes | None, list[bytes]]:
    head = lines[0].split(b"|", 1)[0].split()
    if head and head[0] == b"shared":
        return lines[0], lines[1:]
    return None, lines


def feature_names(ml, learn: dict, inputs, fitted) -> dict[int, str]:  # noqa: ANN001
    """Table slot -> VW's ``--invert_hash`` name, as VW's gd records them (its first pass:
    each action line with the shared line's features appended, its constant, its crosses;
    the first name met at a slot), ``[o]`` after the name at offset o > 0 of the feature
    width (``--cb_type dr``'s cost regressor, ``--cover``'s, ``--bag``'s, ``--rnd``'s
    models)."""
    from streamlearn.hashing import CONSTANT_HASH
    from streamlearn.io.names import crossed_names, line_names, with_grams
    from streamlearn.reductions.options import config_of

    cfg = config_of(learn, bases=True)
    inter = cfg.namespaces()
    bits = cfg.bits
    mask = (1 << bits) - 1
    width = 2 if ml.cb_type == "dr" and ml.reduction != "csoaa_ldf" else 1
    xp = fitted.explorer
    if xp is not None and xp.kind in (xp.ex.COVER, xp.ex.RND, xp.ex.BAG):
        width = int(xp.width)
    found: dict[int, str] = {}
    constant = [(CONSTANT_HASH & mask, "Constant")] if cfg.constant else []

    def feats_of(line: bytes) -> list[tuple[int, str, int]]:
        return with_grams(line_names(line, 32, inter), inter, bits)

    fmt = learn.get("format") or "auto"
    if fmt in ("json", "dsjson"):
        examples = _json_examples(list(inputs.sources), fmt == "dsjson", learn, inter, bits)
    else:
        examples = ((feats_of(shared) if shared is not None else [], [feats_of(a) for a in acts])
                    for shared, acts in _examples(list(inputs.sources)))  # fmt: skip
    for common, actions in examples:
        for own in actions:
            feats = own + common
            named = [(slot, name) for slot, name, nsb in feats if inter is None
                     or not (inter.drop[nsb] or inter.drop_linear[nsb])]  # fmt: skip
            named += constant
            if inter is not None and inter.terms.shape[0]:
                named += crossed_names(feats, inter, bits)
            for slot, name in named:
                name_slot(found, slot, name, width, mask)
    return found


def name_slot(found: dict[int, str], slot: int, name: str, width: int, mask: int) -> None:
    """Name the table slots of feature ``slot`` (offsets 0..width-1 of the feature width, ``[o]``
    after the name at offset o > 0), each by the first name met there."""
    for o in range(width):
        at = (slot * width + o) & mask
        if at not in found:
            found[at] = f"{name}[{o}]" if o else name
