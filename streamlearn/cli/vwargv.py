"""Reading a VW command line into a :class:`~streamlearn.cli.vwoptions.Translation`.

:func:`parse_argv` reads VW's argv with VW's grammar (long options with
underscores, its short flags, ``--name=value``, ``-b18``, options after the
data, ``-d`` repeatable, a bare file name as data), each option through its
entry of :data:`~streamlearn.cli.vwoptions.OPTIONS`.  :func:`model_argv` adds
the options a multiline VW model given with ``-i`` keeps, as VW merges them
(:func:`model_translation`: those alone, for ``sl serve -i``).
:func:`resolve` settles what the options mean together, as VW reads them.

Where sl's defaults differ from VW's, the translation picks VW's: a label 0
under logistic or hinge loss is read as VW reads it (``zero_label="vw"``), and a
continued model counts this run's examples only (VW without
``--preserve_performance_counters``).
"""

from __future__ import annotations

from streamlearn.cli.vwoptions import (
    NOT_SUPPORTED,
    OPTIONS,
    OTHER_VW_OPTIONS,
    REPEATABLE,
    SHORT,
    Translation,
    VWUsage,
)


def parse_argv(argv: list[str]) -> Translation:
    """Read VW's argv (without ``vw`` itself) into a :class:`Translation`.

    >>> t = parse_argv(["-d", "a.vw", "--passes=3", "-b18", "-q", "ab", "b.vw", "-c"])
    >>> t.data, t.learn["passes"], t.learn["bits"], t.learn["quadratic"], t.cache
    (['a.vw', 'b.vw'], 3, 18, ('ab',), True)
    """
    t = Translation()
    given: dict[str, str] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok == "-" or not tok.startswith("-") or tok == "--":
            if tok != "--":
                t.data.append(tok)
            continue
        value: str | None = None
        if tok.startswith("--"):
            name, eq, attached = tok[2:].partition("=")
            name = name.replace("-", "_")
            if eq:
                value = attached
        else:
            key = tok[1:2]
            if key not in SHORT:
                raise VWUsage(f"-{key} is not an option of sl vw (see sl vw --help)")
            name = SHORT[key]
            if len(tok) > 2:
                value = tok[2:]
        if name not in OPTIONS:
            if name in NOT_SUPPORTED or name in OTHER_VW_OPTIONS:
                raise VWUsage(f"--{name} is not supported by sl (nearest in sl: "
                              f"{NOT_SUPPORTED.get(name, 'none')})")  # fmt: skip
            raise VWUsage(f"--{name} is not an option of vw (nor of sl vw)")
        opt = OPTIONS[name]
        if opt.value and value is None:
            if i >= len(argv):
                raise VWUsage(f"--{name} needs a value")
            value = argv[i]
            i += 1
        elif not opt.value and value is not None:
            raise VWUsage(f"--{name} takes no value")
        if opt.value and name not in REPEATABLE:
            _agree(given, name, value)
        opt.apply(t, name, value)
    return t


CB_REDUCTIONS = ("cb_explore", "cb", "cb_explore_adf", "cb_adf", "csoaa_ldf")
"""The multiline reductions a VW model may name, the one VW runs first: a model's
``--cb 4 --cb_adf --csoaa_ldf multiline`` is ``--cb 4`` to sl vw."""
IMPLIED = {"csoaa_ldf", "csoaa_rank", "cb_adf", "cb_sample"}
"""Options VW's cb reductions add below themselves (not options of sl vw's --cb_adf;
``cb_sample``: VW's --ccb_explore_adf stacks it below itself)."""


def _given(argv: list[str]) -> set[str]:
    """The long names of the options in ``argv``."""
    names = set()
    for tok in argv:
        if tok.startswith("--") and len(tok) > 2:
            names.add(tok[2:].partition("=")[0].replace("-", "_"))
        elif tok.startswith("-") and len(tok) > 1 and tok[1:2] in SHORT:
            names.add(SHORT[tok[1:2]])
    return names


def model_argv(path: str, argv: list[str]) -> list[str]:
    """The options a multiline VW model at ``path`` keeps that ``argv`` does not give, as
    VW merges them (the command line's value wins where both give one, as suite test
    207's ``--epsilon 0.3`` over the model's); [] for other models."""
    from streamlearn.run.mlmodel import kept_options

    pairs = kept_options(path)
    if not pairs:
        return []
    names = {n for n, _ in pairs}
    top = next(r for r in CB_REDUCTIONS if r in names)
    given = _given(argv)
    out: list[str] = []
    for name, value in pairs:
        if name in CB_REDUCTIONS and name != top:
            continue  # (the reductions VW stacks below the first)
        if name in IMPLIED and name != top and top != "csoaa_ldf":
            continue
        if name in given:
            continue
        out.append(f"--{name}")
        if value is not None:
            out.append(value)
    from streamlearn.errors import OutOfMemory

    try:  # (the counts it declares, bounded before anything is allocated: exit 8)
        parse_argv(out)
    except OutOfMemory as e:
        raise OutOfMemory(f"-i {path}: from its options, {e.message}") from None
    except VWUsage:
        pass  # (said when the whole line is read)
    return out


def model_translation(path: str) -> Translation | None:
    """What ``sl vw -i PATH`` runs when PATH is VW's model of a multiline reduction: its
    kept options, translated (``sl serve -i`` of such a model); None for other models."""
    argv = model_argv(path, [])
    return parse_argv(argv) if argv else None


def _agree(given: dict[str, str], name: str, value: str) -> None:
    """Refuse an option given again with another value, as VW does ("Disagreeing option
    values"): which one the user meant is a guess."""
    if name in given and given[name] != value:
        try:
            same = float(given[name]) == float(value)
        except ValueError:
            same = False
        if not same:
            raise VWUsage(f"--{name} is given twice with different values ({given[name]!r} and "
                          f"{value!r}): give it once")  # fmt: skip
    given[name] = value


def resolve(t: Translation) -> None:
    """What the options mean together, as VW reads them."""
    rules = t.learn.pop("_rules", set())
    if rules:  # VW: --sgd or any of the three turns off those not named (gd)
        if t.learn.get("algo") is not None:
            raise VWUsage(f"--{t.learn['algo']} conflicts with "
                          "--sgd/--adaptive/--normalized/--invariant")  # fmt: skip
        for rule in ("adaptive", "normalized", "invariant"):
            t.learn[rule] = rule in rules
    if t.explorer_options and not t.exploring and "initial_model" not in t.inputs:
        # VW warns that the option depends on one not given, and runs without it
        t.multiline.pop("explore", None)
        for name in dict.fromkeys(t.explorer_options):
            t.notes.append(f"--{name}: an option of --cb_explore/--cb_explore_adf/--cbify, "
                           "ignored without them (as VW)")  # fmt: skip
    if t.rate_zero:
        t.learn["test_only"] = True  # VW: a learning rate of 0 only tests
    if t.noop:  # VW's noop learner: predicts 0 and learns nothing
        if t.inputs.get("initial_model"):
            raise VWUsage("--noop predicts 0 whatever the model: to score a model with -i, "
                          "use -t")  # fmt: skip
        t.learn["test_only"] = True
    if t.no_stdin and not t.data:  # no examples: the outputs come from the initial model
        t.data = ["/dev/null"]
        t.allow_empty = True
    if len(t.cache_files) > 1:
        raise VWUsage("sl keeps one cache: give --cache_file once")
    if t.cache_files:
        t.inputs["cache"] = t.cache_files[0]
    elif t.cache and t.data and t.data[0] != "-":
        # -c: sl's cache beside VW's <data>.cache, never VW's own file (sl cannot read
        # it, and must not replace it); a stream's cache is the run's own (a temporary file)
        t.inputs["cache"] = t.data[0] + ".cache.sl"
    if t.learn.get("multilabel") and t.link not in ("identity", "logistic"):
        raise VWUsage(f"--link {t.link}: --multilabel_oaa takes identity or logistic")
    # VW applies a link below --oaa: no effect (--multilabel_oaa's scorer does link each class)
    if t.learn.get("oaa") and t.link != "identity" and not t.learn.get("multilabel"):
        t.notes.append(f"--link {t.link}: a --oaa model predicts classes; the link changes "
                       "nothing (as in VW)")  # fmt: skip
        t.link = "identity"
    mem = t.learn.pop("bfgs_mem_given", None)
    if "bfgs" in t.learn:
        if mem is not None:
            t.learn["bfgs"] = mem
        if t.learn.get("passes", 1) < 2:
            raise VWUsage("--bfgs needs at least 2 passes (as VW)")
    elif mem is not None or "termination" in t.learn or t.learn.get("hessian_on"):
        t.notes.append("--mem, --termination and --hessian_on are options of --bfgs: ignored")
        t.learn.pop("termination", None)
        t.learn.pop("hessian_on", None)
    if t.learn.get("bootstrap") and t.raw_predictions:
        raise VWUsage("-r with --bootstrap is not supported by sl (VW writes each copy's "
                      "score, 1:s1 2:s2 ...; -p has the prediction and the copies' range)")
    for name in ("bootstrap", "autolink"):
        if t.learn.get(name) and t.outputs.get("audit"):
            raise VWUsage(f"--audit with --{name} is not supported by sl (VW audits each copy "
                          "or the added features; sl's audit shows one gd model)")  # fmt: skip
    t.outputs.setdefault("model_format", "vw")  # -f writes VW's model format
    if t.learn.get("test_only") and "initial_model" in t.inputs:
        # VW keeps no loss in its models: -t -i reports squared loss unless told otherwise
        t.learn.setdefault("loss", "squared")
    t.learn.setdefault("zero_label", "vw")
    if "initial_model" not in t.inputs:
        t.learn.setdefault("numbers", "vw")  # VW's decimals; a model read with -i keeps its own
    t.learn.setdefault("preserve_performance_counters", False)
    _legacy(t)


def _legacy(t: Translation) -> None:
    """``--cb_force_legacy`` and ``--eval``: VW's single-line cb_algs (``--eval`` runs it
    whatever else is given, as VW's cb_to_cb_adf steps aside); its cb_type defaults to dr,
    and mtr or sm become dr with VW's warning."""
    ml = t.multiline
    if not (ml.get("legacy") or ml.get("evaluate")):
        return
    if ml.get("reduction") not in ("cb", "cbify"):
        if ml.pop("evaluate", None):
            # VW warns that --eval depends on --cb, and runs without it (--cb_adf --eval is
            # --cb_adf's run)
            t.notes.append("--eval: an option of --cb K, ignored without it (as VW)")
        ml.pop("legacy", None)  # VW: without --cb/--cb_explore/--cbify it changes nothing
        return
    ml["legacy"] = True
    if t.outputs.get("final_model"):
        # (sl's legacy runs keep cb_algs' weights, which VW 9's cb_adf layout cannot hold)
        raise VWUsage("-f with --cb_force_legacy or --eval: not supported yet (VW's legacy cb "
                      "model is not written; without them --cb K writes VW 9's)")  # fmt: skip
    kind = ml.setdefault("cb_type", "dr")
    if kind in ("mtr", "sm"):
        t.notes.append(f"--cb_type {kind}: cb_type must be in {{'ips','dm','dr'}}; resetting to "
                       f"dr (as VW with --cb_force_legacy)")  # fmt: skip
        ml["cb_type"] = "dr"
