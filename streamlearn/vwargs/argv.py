"""Reading a VW command line into a :class:`~streamlearn.vwargs.options.Translation`.

:func:`parse_argv` reads VW's argv with VW's grammar (long options with
underscores, its short flags, ``--name=value``, ``-b18``, options after the
data, ``-d`` repeatable, a bare file name as data), each option through its
entry of :data:`~streamlearn.vwargs.options.OPTIONS`.  :func:`model_argv` adds
the options a multiline VW model given with ``-i`` keeps, as VW merges them
(:func:`model_translation`: those alone, for ``sl serve -i``).
:func:`resolve` settles what the options mean together, as VW reads them (each
reduction's part by its module's ``settle``, when the line names an option of a reduction:
:data:`streamlearn.reductions.table.SETTLE`, or every module's when it names a single-line
reduction).

Where sl's defaults differ from VW's, the translation picks VW's: a label 0
under logistic or hinge loss is read as VW reads it (``zero_label="vw"``), and a
continued model counts this run's examples only (VW without
``--preserve_performance_counters``).
"""

from __future__ import annotations

from streamlearn.errors import VWUsage
from streamlearn.vwargs.options import (
    CORE,
    NOT_SUPPORTED,
    OTHER_VW_OPTIONS,
    SHORT,
    Translation,
    option,
)


def parse_argv(argv: list[str]) -> Translation:
    """Read VW's argv (without ``vw`` itself) into a :class:`Translation`.

    The data are ``-d``'s files (sl reads each, in turn: VW refuses ``-d`` twice), unless a
    file is given bare: then VW reads the first bare one alone, and so does sl vw.

    >>> t = parse_argv(["-d", "a.vw", "--passes=3", "-b18", "-q", "ab", "-c", "-d", "b.vw"])
    >>> t.data, t.learn["passes"], t.learn["bits"], t.learn["quadratic"], t.cache
    (['a.vw', 'b.vw'], 3, 18, ('ab',), True)
    >>> parse_argv(["-d", "a.vw", "b.vw", "c.vw"]).data
    ['b.vw']
    """
    t = Translation()
    given: dict[str, str] = {}
    bare: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok == "-" or not tok.startswith("-") or tok == "--":
            if tok != "--":
                bare.append(tok)
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
        opt = option(name)
        if opt is None:
            if name in CLUSTER:
                raise VWUsage(cluster_refusal(argv))
            if name in NOT_SUPPORTED or name in OTHER_VW_OPTIONS:
                raise VWUsage(f"--{name} is not supported by sl (nearest in sl: "
                              f"{NOT_SUPPORTED.get(name, 'none')})")  # fmt: skip
            raise VWUsage(f"--{name} is not an option of vw (nor of sl vw)")
        if opt.value and value is None:
            if i >= len(argv):
                raise VWUsage(f"--{name} needs a value")
            value = argv[i]
            i += 1
        elif not opt.value and value is not None:
            raise VWUsage(f"--{name} takes no value")
        if opt.value and not opt.repeatable:
            _agree(given, name, value)
        if name not in CORE:
            t.reductions = True
            from streamlearn.reductions.table import OWNER

            if name in OWNER:
                t.single_line.add(OWNER[name])
        opt.apply(t, name, value)
    if bare:  # (VW's positional data file: it wins over -d, and only the first is read)
        if len(bare) > 1:
            t.notes.append("[warning] Multiple data files passed as positional parameters, "
                           "only the first one will be read and the rest will be ignored.")
        t.data = bare[:1]
    return t


CLUSTER = frozenset(("span_server", "span_server_port", "total", "node", "unique_id"))
"""VW's AllReduce options (each takes a value): sl runs one ``sl train --dask`` instead."""


def cluster_refusal(argv: list[str]) -> str:
    """The one line refusing VW's AllReduce line ``argv``, with the command to run instead:
    the same options over a Dask cluster, from one place, with every node's data.

    >>> line = cluster_refusal(["-d", "part0.vw", "--span_server", "h1", "--total", "2",
    ...                         "--node", "0", "--unique_id", "7", "-f", "m.vw", "-b", "20"])
    >>> line[line.index("sl train"):line.index(" (the other")]
    'sl train --dask tcp://h1:8786 part0.vw -f m.vw -b 20'
    """
    import shlex

    host, files, rest = "HOST", [], []
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if not tok.startswith("-") or tok == "-":
            files.append(tok)  # (a bare data file)
            continue
        name, eq, _ = tok[2:].partition("=") if tok.startswith("--") else (
            SHORT.get(tok[1:2], ""), "", "")  # fmt: skip
        name = name.replace("-", "_")
        opt = None if name in CLUSTER else option(name)
        takes = name in CLUSTER or (opt is not None and opt.value)
        inline = eq or (not tok.startswith("--") and len(tok) > 2)
        value = None if inline or not takes or i >= len(argv) else argv[i]
        i += 1 if value is not None else 0
        if name == "span_server":
            host = (tok.partition("=")[2] if eq else value) or host
        elif name == "data" and value is not None:
            files.append(value)
        elif name not in CLUSTER and name not in ("cache", "kill_cache", "cache_file"):
            rest += [tok] if value is None else [tok, value]  # (a Dask run keeps no cache)
    data = files or ["FILE..."]
    line = shlex.join(["sl", "train", "--dask", f"tcp://{host}:8786", *data, *rest])
    return ("VW's AllReduce (--span_server, --total, --node, --unique_id: one process per node) "
            "is not supported by sl, which trains one model over a Dask cluster from one "
            f"command, averaging as AllReduce does: run a Dask scheduler on {host} (dask "
            f"scheduler) and a worker on each node (dask worker {host}:8786), then, once, from "
            "a machine that sees every node's files at the same paths: "
            f"{line} (the other nodes' files after {data[-1]}; docs/distributed.md)")


CB_REDUCTIONS = ("lda", "cbzo", "cats", "cats_pdf", "search", "multiworld_test", "cb_explore",
                 "cb", "cb_explore_adf", "cb_adf", "csoaa_ldf", "wap_ldf")
"""The multiline reductions a VW model may name, the one VW runs first: a model's
``--cb 4 --cb_adf --csoaa_ldf multiline`` is ``--cb 4`` to sl vw."""
IMPLIED = {"csoaa_ldf", "csoaa_rank", "cb_adf", "cb_sample"}
"""Options VW's cb reductions add below themselves (not options of sl vw's --cb_adf;
``cb_sample``: VW's --ccb_explore_adf stacks it below itself)."""
CATS_IMPLIED = {"binary", "cats_tree", "cb_explore_pdf", "get_pmf", "pmf_to_pdf", "sample_pdf",
                "tree_bandwidth"}
"""Options VW's ``--cats``/``--cats_pdf`` add below themselves, each set from theirs (the
tree's K, the smoothing in leaves from ``--bandwidth`` and the range): sl vw's ``--cats K``
stacks them itself."""


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
    from streamlearn.model_vw import legacy_cb

    names = {n for n, _ in pairs}
    top = next(r for r in CB_REDUCTIONS if r in names)
    given = _given(argv)
    legacy = legacy_cb(names)
    out: list[str] = []
    if legacy and "cb_force_legacy" not in names | given:
        out.append("--cb_force_legacy")  # (VW before 8.11 kept none: VW 9 reads it so)
    for name, value in pairs:
        if name in CB_REDUCTIONS and name != top and top != "multiworld_test":
            continue  # (the reductions VW stacks below the first; mwt's --cb: its --learn)
        if name in IMPLIED and name != top and top != "csoaa_ldf":
            continue
        if name in CATS_IMPLIED and top in ("cats", "cats_pdf"):
            continue
        if legacy and name == "csoaa":
            continue  # (the csoaa legacy cb_algs stacks below itself)
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
    t.outputs.setdefault("model_format", "vw")  # -f writes VW's model format
    if t.learn.get("test_only") and "initial_model" in t.inputs:
        # VW keeps no loss in its models: -t -i reports squared loss unless told otherwise
        t.learn.setdefault("loss", "squared")
    t.learn.setdefault("zero_label", "vw")
    if "initial_model" not in t.inputs:
        t.learn.setdefault("numbers", "vw")  # VW's decimals; a model read with -i keeps its own
    t.learn.setdefault("preserve_performance_counters", False)
    if t.reductions:  # (a line of CORE's options alone has nothing of theirs to settle)
        if t.single_line:  # (every module's: the single-line reductions' modules imported)
            from streamlearn.reductions import SETTLE
        else:
            from streamlearn.reductions.table import SETTLE
        for settle in SETTLE:
            settle(t)
