"""Vowpal Wabbit's model files as sl's :class:`~streamlearn.model.Model`, and back.

Imported by :mod:`streamlearn.model` only (it is part of the model layer); the
bytes are :mod:`streamlearn.io.vwmodel`'s.  What is translated:

* **Options.** VW keeps some options with a model (its options string):
  ``--oaa K``, ``--indexing``, ``-q``/``--cubic``/``--interactions``,
  ``--ignore``/``--ignore_linear``/``--keep``, ``--noconstant``, ``--hash all``,
  ``--ngram``/``--skips`` (in the header), ``--binary``, ``--link``, the learner
  (``--ftrl``, ``--coin``, ``--pistol``, ``--freegrad``) and, in a model with its resume state,
  gd's update rule (``--sgd``, ``--adaptive``, ``--normalized``, ``--invariant``)
  and ``-l``/``--power_t``.  They become the model's
  :class:`~streamlearn.config.TrainConfig`; what VW does not keep (the loss
  function, ``--l1``, ``--l2``, ``--initial_t``; the update rule of a
  ``--predict_only_model`` model) comes from the command line, as in VW
  (:data:`UNRECORDED`: a different value is not a conflict).  Any other option
  (a reduction sl does not have) is refused, named.
* **Resume state** (VW 9's default ``--save_resume``): each slot's floats are
  the learner's own columns (gd: weight, adaptive sum, largest |x|, as many as
  the update rule keeps; ftrl: w, z, n; pistol: 4; coin, freegrad: 6); gd's normalizer sums
  (``norm``, ``total_weight``: class 0's under ``--oaa``, as VW keeps them without
  ``--per_model_save_load``), its l1 and l2 state, ``t`` and the progressive
  counters go to ``gstate`` and ``stats``.
* **Weights only** (``--predict_only_model``): the weights, every other state
  zero, as VW continues such a model.

Written models (:func:`encode`) carry the same, so that ``vw -i`` scores and
continues them as sl would.
"""

from __future__ import annotations

import numpy as np

from streamlearn.config import CLASS_FLAGS, UPDATE_RULE, TrainConfig
from streamlearn.io import vwmodel
from streamlearn.learners.stacked import CLASS_GD, STACK_OPTIONS, kept, kept_stack, without_gd
from streamlearn.model_fields import SEARCH_RUN_ONLY, SEARCH_TASK_OPTIONS, SL_FIELDS

F32 = np.float32

VW_LEARNERS = ("gd", "ftrl", "coin", "pistol", "freegrad")
"""The learners whose models sl reads and writes in VW's format (and --oaa over gd, ftrl)."""
COLUMNS = {"ftrl": 3, "pistol": 4, "coin": 6, "freegrad": 6}
"""Floats per slot in the resume state of VW's ftrl-family learners (its ``ftrl_size``) and
of ``--freegrad`` (its ``freegrad_size``), in sl's column order."""
UNRECORDED = ("loss", "sort_features", "leave_duplicate_interactions", "permutations",
              "feature_limit",
              "initial_t")  # fmt: skip
"""Options an sl model records and a VW model does not: the command line's hold (their
defaults resolved with the run's other options, as VW resolves them)."""
NOT_RESUMED = (*UPDATE_RULE, "learning_rate", "power_t")
"""What a VW model without its resume state (``--predict_only_model``) does not record
either."""

class Unsupported(ValueError):
    """A VW model sl cannot use (a reduction or option it does not have)."""


def _table(text: str, value: bool) -> dict[str, bool]:
    return dict.fromkeys(text.split(), value)


MODEL_OPTIONS: dict[str, bool] = {
    # the multiline reductions, their explorers and what they stack below themselves
    **_table("csoaa_ldf wap_ldf cb cb_explore cb_type clip_p cbify loss0 loss1 epsilon first "
             "lambda bag cover psi rnd rnd_alpha rnd_invlambda synthcoverpsi synthcoversize "
             "mellowness cb_min_cost cb_max_cost gamma_scale gamma_exponent multiplier "
             "target_rate multiworld_test policy ot warm_cb max_actions spanner_c "
             "action_cache_slack cats cats_pdf cats_tree pmf_to_pdf tree_bandwidth min_value "
             "max_value", True),
    **_table("csoaa_rank cb_adf cb_explore_adf rank_all eval cbify_cs cbify_ldf "
             "ccb_explore_adf slates cb_sample all_slots_loss ccb_no_slot_index first_only "
             "softmax greedify explore_eval squarecb elim synthcover regcb regcbopt nounif "
             "large_action_space experimental_igl cb_explore_pdf get_pmf sample_pdf "
             "flip_loss_sign", False),
    # the single-line reductions
    **_table("oaa csoaa multilabel_oaa indexing ect error mem termination "
             "named_labels classweight", True),
    **_table("hessian_on per_model_save_load cb_force_legacy cbzo", False),
    **_table("search search_task search_interpolation search_neighbor_features search_order "
             "search_history_length search_max_bias_ngram_length search_max_quad_ngram_length "
             "search_condition_feature_value search_trained_nb_policies search_total_nb_policies "
             "relation_cost entity_cost relation_none_cost skip_cost lda lda_alpha lda_rho "
             "root_label num_label transition_system", True),
    **_table("constraints one_learner cost_to_go old_style_labels", False),
    # the single-line reductions that own their options: kept as their words (config.stack)
    **STACK_OPTIONS,
    # features: crosses, namespaces, n-grams, hashing, bits
    **_table("quadratic cubic interactions ignore ignore_linear keep ngram skips hash "
             "hash_seed bit_precision feature_limit affix redefine spelling", True),
    **_table("noconstant chain_hash sort_features leave_duplicate_interactions permutations",
             False),
    # the learner: rates, update rule, regularisers, loss, link, initial state, generator
    **_table("learning_rate power_t initial_t decay_learning_rate l1 l2 loss_function "
             "quantile_tau expectile_q logistic_min logistic_max min_prediction max_prediction "
             "link ftrl_alpha ftrl_beta fepsilon flipschitz_const radius random_seed l1_state "
             "l2_state constant initial_weight", True),
    **_table("sgd adaptive normalized invariant ftrl coin pistol freegrad restart project "
             "binary random_weights normal_weights truncated_normal_weights", False),
}  # fmt: skip
"""The options sl takes from a model (VW's long names; True: it takes a value), whatever the
model's kind or format: learning and reduction options only.  A model's options are data:
anything else (an output, an input, a server, a run's mode: ``--final_regressor``,
``--data``, ``--daemon``, ``--testonly``, ``--passes``) is refused (exit 5) before any of
them is used, named as it is written (:func:`check_options`)."""

MULTILINE = ("csoaa_ldf", "cb_adf", "cb_explore_adf", "cb", "cb_explore", "wap_ldf",
             "multiworld_test", "search", "lda", "cbzo", "cats", "cats_pdf")
"""Options that make a VW model a multiline one (``sl vw -i`` reads it: run/mlmodel.py)."""
MULTILINE_REFUSED = {
    "per_model_save_load": "--per_model_save_load",
    "epsilon_decay": "--epsilon_decay", "cb_dro": "--cb_dro", "automl": "--automl",
}  # fmt: skip
"""Reductions a multiline VW model may name that sl does not run."""


INTEGERS = frozenset("cb cb_explore cbify first bag cover rnd synthcoversize oaa csoaa ect "
                     "error multilabel_oaa indexing bootstrap autolink mem bit_precision hash_seed "
                     "random_seed degree lda ot warm_cb max_actions action_cache_slack cats "
                     "cats_pdf cats_tree pmf_to_pdf tree_bandwidth"
                     .split())  # fmt: skip
"""The options of :data:`MODEL_OPTIONS` whose value is an integer."""
WORDS = frozenset("lrq lrqfa alg csoaa_ldf wap_ldf cb_type bs_type named_labels classweight "
                  "quadratic multiworld_test search_task search_interpolation "
                  "search_neighbor_features cubic interactions ignore ignore_linear keep ngram "
                  "skips hash link loss_function feature_limit kernel affix marginal redefine "
                  "spelling "
                  "policy interact".split())  # fmt: skip
"""The options of :data:`MODEL_OPTIONS` whose value is a word; the others' are numbers, read
by VW as 32-bit floats (``l1_state``, ``l2_state``: doubles)."""
F32_MAX = float(np.finfo(np.float32).max)


def _bad_value(name: str, value: str) -> str | None:
    """Why ``value`` cannot be option ``name``'s in a model, or None."""
    if name in WORDS:
        return None
    if name in INTEGERS:
        try:
            int(value)
        except ValueError:
            return "not an integer"
        return None
    try:
        x = float(value)
    except ValueError:
        return "not a number"
    if not np.isfinite(x):
        return "not a finite number"
    if abs(x) > F32_MAX and name not in ("l1_state", "l2_state"):
        return "beyond a 32-bit float (VW reads it as one)"
    return None


def _shown(spelled: str, value: str | None) -> str:
    """An option as written in a model, its value cut short for a message."""
    if value is None:
        return spelled
    return f"{spelled} {value[:60]}{'...' if len(value) > 60 else ''}"


def check_options(items: list[tuple[str, str | None, str]]) -> None:
    """Refuse (:class:`Unsupported`) a model's options (``vwmodel.option_items``) that sl
    does not take from a model (:data:`MODEL_OPTIONS`), or that are malformed: a flag with
    a value, an option without its value.  Names each as it is written (``-f``,
    ``--final_regressor``), with its value."""
    foreign = [_shown(s, v) for n, v, s in items if n not in MODEL_OPTIONS]
    if foreign:
        raise Unsupported(
            f"its options name {', '.join(dict.fromkeys(foreign))}, which sl does not take "
            "from a model: a model keeps learning and reduction options only (never an "
            "output, an input or a server), and these are not ones sl runs"
        )
    for name, value, spelled in items:
        if MODEL_OPTIONS[name] and value is None:
            raise Unsupported(f"its options give {spelled} without its value (corrupt)")
        if not MODEL_OPTIONS[name] and value is not None:
            raise Unsupported(f"its options give {_shown(spelled, value)}: {spelled} takes no "
                              "value (corrupt)")  # fmt: skip
        why = _bad_value(name, value) if value is not None else None
        if why is not None:
            raise Unsupported(f"its options give {_shown(spelled, value)}: {why} (corrupt)")


def _options(h: vwmodel.Header) -> dict:
    """The options string of header ``h`` read into TrainConfig fields and VW facts."""
    learn: dict = {"bits": h.bits}
    if h.id:
        learn["model_id"] = h.id  # VW's --id, in its header
    facts = {"rules": set(), "models": 1, "link": None, "l1_state": None, "l2_state": None}
    unknown: list[str] = []
    spelled = vwmodel.option_items(h.options)
    check_options(spelled)
    _multiline(spelled)
    items = [(n, v) for n, v, _ in spelled]
    seen: set[str] = set()
    for name, value in items:
        if name in ("quadratic", "cubic", "interactions", "ignore", "ignore_linear", "keep",
                    "ngram", "skips", "redefine", "spelling"):  # fmt: skip
            if value is None:
                raise Unsupported(f"--{name} without a value in its options")
            if name in ("quadratic", "cubic", "interactions"):  # (7.10.2: also in the header)
                if value in seen:
                    continue  # one cross, whichever option named it (as VW reads them)
                seen.add(value)
            learn[name] = (*learn.get(name, ()), value)
        elif name in ("oaa", "indexing"):
            learn[name] = _int(name, value)
        elif name in CLASS_FLAGS:  # (--csoaa K, --multilabel_oaa K, --ect K: K classes)
            learn.update({"oaa": _int(name, value), CLASS_FLAGS[name]: True})
        elif name == "error":
            learn["ect_errors"] = _int(name, value)
        elif name == "named_labels" and value:
            learn["named_labels"] = value
        elif name == "affix" and value:
            learn["affix"] = value
        elif name == "noconstant":
            learn["constant"] = False
        elif name == "hash":
            learn["hash"] = value
        elif name == "hash_seed":
            learn["hash_seed"] = _int(name, value)
        elif name == "random_seed":
            seed = _int(name, value)  # (VW's generator as it was saved: a uint64, as VW reads it)
            if not 0 <= seed < 1 << 64:
                raise Unsupported(f"--random_seed {value} in its options is not a 64-bit count")
            facts["random_seed"] = seed
        elif name == "bit_precision":
            pass  # (the bits are the header's)
        elif name in UPDATE_RULE or name == "sgd":
            facts["rules"].add(name)
        elif name in ("learning_rate", "power_t", "ftrl_alpha", "ftrl_beta"):
            learn[name] = _float(name, value)
        elif name in ("ftrl", "coin", "pistol", "freegrad"):
            learn["algo"] = name
        elif name == "binary":
            learn["binary"] = True
        elif name == "link" and value in ("identity", "logistic", "glf1", "poisson"):
            facts["link"] = value
        elif name in ("l1_state", "l2_state"):
            facts[name] = _float(name, value)
        elif name == "per_model_save_load":
            facts["per_model"] = True
        elif name in STACK_OPTIONS:
            learn["stack"] = (*learn.get("stack", ()), f"--{name}",
                              *(() if value is None else (value,)))  # fmt: skip
        else:
            unknown.append(f"--{name}" + (f" {value}" if value is not None else ""))
    stack = learn.get("stack", ())
    if "--active" in stack and "--simulation" not in stack:
        # (VW does not keep the mode; sl runs the simulation only: VW 9.11.9 cannot load its
        # own --active models, whose header says neither)
        at = stack.index("--active") + 1
        learn["stack"] = (*stack[:at], "--simulation", *stack[at:])
    if unknown:
        raise Unsupported(
            f"it was trained with {', '.join(unknown)}, which sl does not support (sl reads "
            "VW's linear models: gd and its update rules, --ftrl, --coin, --pistol, --freegrad, "
            "--oaa)"
        )
    if h.lda:
        raise Unsupported("it is an --lda model, which sl does not support")
    if h.ngram:
        learn["ngram"] = (*learn.get("ngram", ()), *h.ngram)
    if h.skips:
        learn["skips"] = (*learn.get("skips", ()), *h.skips)
    if facts["rules"]:
        if learn.get("algo", "gd") != "gd":
            raise Unsupported("its options name both an ftrl-family learner and gd's update rule")
        for rule in UPDATE_RULE:
            learn[rule] = rule in facts["rules"]
    if facts.get("per_model") and learn.get("oaa"):
        facts["models"] = learn["oaa"]
    state = kept(learn.get("stack", ()), h.bits)
    if facts.get("per_model") and state is not None and state.models > 1:
        facts["models"] = state.models
    return {"learn": learn, **facts}


def check_sl_multiline(ml: object) -> None:
    """Refuse (:class:`Unsupported`) what an sl bandit model records of its reduction when
    it is not :data:`SL_FIELDS`' fields of their types (counts at least 0, numbers finite
    and within a 32-bit float, words short)."""
    if not isinstance(ml, dict):
        raise Unsupported("its multiline options are not an object")
    for key, value in ml.items():
        if key not in SL_FIELDS:
            raise Unsupported(f"its multiline options hold {str(key)[:40]!r}, which sl does not "
                              "take from a model")  # fmt: skip
        kind = SL_FIELDS[key][1]
        shown = f"{key} {str(value)[:40]}"
        if kind is dict:  # (search_run: a run's own options, a path to read: never a model's)
            if key == "search_run" and value:
                raise Unsupported("its multiline options hold a run's own search options")
            _check_search_options(value if key == "search_options" else {})
            continue
        if value is None and kind in (float, str):  # (an optional number or word not given)
            continue
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            what = {bool: "true or false", int: "an integer", float: "a number", str: "a word"}
            raise Unsupported(f"its multiline option {shown} is not {what[kind]}")
        if kind is int and value < 0:
            raise Unsupported(f"its multiline option {shown} is negative")
        if kind is float and not (np.isfinite(value) and abs(value) <= F32_MAX):
            raise Unsupported(f"its multiline option {shown} is not a finite 32-bit float")
        if kind is str and len(value) > 40:
            raise Unsupported(f"its multiline option {key} is not a word")


def _check_search_options(options: object) -> None:
    """``--search``'s and its tasks' options an sl model records (never :data:`SEARCH_RUN_ONLY`)."""
    if not isinstance(options, dict):
        raise Unsupported("its search options are not an object")
    for key, v in options.items():
        if (not isinstance(key, str) or key in SEARCH_RUN_ONLY
                or not (key.startswith("search_") or key in SEARCH_TASK_OPTIONS)):  # fmt: skip
            raise Unsupported(f"its search options hold {str(key)[:40]!r}, which sl does not "
                              "take from a model")  # fmt: skip
        if not (isinstance(v, bool | str) and len(str(v)) <= 200 or isinstance(v, int | float)
                and np.isfinite(v) and abs(v) <= F32_MAX):  # fmt: skip
            raise Unsupported(f"its search option {key} {str(v)[:40]} is malformed")


def not_run(names: set[str]) -> str | None:
    """What of a multiline VW model (its options' ``names``) sl does not run, as "a VW model
    of ..." ends; None: sl runs it (``--cb K`` without ``cb_adf``, VW's legacy cb_algs, with
    or without ``--cb_force_legacy``: :func:`legacy_cb`)."""
    bad = [MULTILINE_REFUSED[n] for n in sorted(names & set(MULTILINE_REFUSED))]
    if bad:
        return ", ".join(bad)
    return None


def legacy_cb(names: set[str]) -> bool:
    """Whether a multiline VW model naming ``names`` is VW's legacy single-line cb
    (cb_algs over csoaa: ``--cb K`` or ``--cb_explore K`` without ``cb_adf``; VW before 8.11
    wrote no ``--cb_force_legacy`` into such a model, VW 9 reads it as one)."""
    return bool(names & {"cb", "cb_explore"}) and "cb_adf" not in names


def _multiline(items: list[tuple[str, str | None, str]]) -> None:
    """Refuse a multiline reduction's model, saying which command reads it (``sl vw -i``)
    or that sl runs none of it."""
    names = {n for n, _, _ in items}
    if not names & set(MULTILINE):
        return
    top = next(r for r in ("lda", "cbzo", "cats", "cats_pdf", "search", "multiworld_test",
                            "cb_explore", "cb", "cb_explore_adf", "cb_adf", "csoaa_ldf",
                            "wap_ldf")
               if r in names)  # (the one VW runs first)
    shown = next(_shown(s, v) for n, v, s in items if n == top)
    unrun = not_run(names)
    if unrun:
        raise Unsupported(f"it is a VW {shown} model of {unrun}, which sl does not run")
    raise Unsupported(f"it is a VW {shown} model (a multiline reduction): sl vw -i reads it "
                      "(sl vw -t -i MODEL -d DATA scores with it); sl predict, sl inspect and "
                      "sl train read VW's single-line models")  # fmt: skip


def _int(name: str, value: str | None) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise Unsupported(f"--{name} {value!r} in its options is not an integer") from None


def _float(name: str, value: str | None) -> float:
    try:
        return float(value or "")
    except ValueError:
        raise Unsupported(f"--{name} {value!r} in its options is not a number") from None


def learned_weight(model, config: TrainConfig) -> float | None:  # noqa: ANN001 - a Model
    """gd's learned weight (``gstate[G_T]``) for a run of ``config`` continuing a VW model:
    VW's ``t`` less the run's ``--initial_t`` (VW's rates take ``t`` as the file has it,
    whichever ``--initial_t`` the run gives), or None for other models."""
    t = model.meta.get("vw_model", {}).get("t")
    if t is None:
        return None
    return max(0.0, float(t) - float(F32(config.initial_t)))


def gd_columns(config: TrainConfig) -> tuple[int, ...]:
    """The table columns of the floats VW keeps per slot for gd with this update rule:
    the weight, the adaptive sum (``--adaptive``), the largest |x| (``--normalized``)."""
    return (0, *((1,) if config.adaptive else ()), *((2,) if config.normalized else ()))


def decode(data: bytes) -> tuple:
    """``(config, learner, slots, state, weights, gstate, stats, meta)`` of the VW model in
    ``data``; ValueError (:class:`Unsupported` included) says what is wrong."""
    h = vwmodel.read_header(data)
    opts = _options(h)
    learn = dict(opts["learn"])
    stack = learn.get("stack", ())
    if "--marginal" in stack and "--compete" not in stack:
        # VW keeps --marginal with a model, not --compete, whose experts' part it reads when
        # the command line gives it again: a model of --compete is one whose part reads so
        start = h.end
        try:
            return _decode(data, h, opts, learn)
        except ValueError as e:
            h.end = start
            try:
                return _decode(data, h, opts, {**learn, "stack": (*stack, "--compete")})
            except ValueError:
                raise e from None
    return _decode(data, h, opts, learn)


def _decode(data: bytes, h: vwmodel.Header, opts: dict, learn: dict) -> tuple:
    """:func:`decode` of the model's options ``learn``."""
    from streamlearn.learners import reduction_of, resolve, spec_by_name
    from streamlearn.learners.base import G_CLIP, G_LABEL_MAX, G_LABEL_MIN, G_N, G_T, new_stats

    learn = dict(learn)
    kept_state = kept(learn.get("stack", ()), h.bits)
    start = kept_state.skip(data, h.end) if kept_state is not None else h.end
    resumed = len(data) > start and data[start] == 1
    mf = "--rank" in learn.get("stack", ())  # (VW's gd_mf keeps its rates, and no resume flag)
    for key in ("learning_rate", "power_t") if not (resumed or mf) else ():
        learn.pop(key, None)
    learn["numbers"] = "vw"  # VW's model: its inputs are read as VW reads them (io/vwfloat.py)
    if mf or without_gd(learn.get("stack", ())):  # (gd_mf's, svrg's rules: none of gd's)
        learn.update(adaptive=False, normalized=False, invariant=False)
    if mf:  # (VW's gd_mf: its rate 10 and t 1 unless given)
        return _decode_mf(TrainConfig(**learn), data, h, opts)
    if "--ksvm" in learn.get("stack", ()):  # (VW's support vectors, no table)
        return _decode_ksvm(learn, data, h, opts)
    if kept_state is None and opts.get("random_seed") and "seed" not in learn:
        # VW's generator as the model keeps it (--random_seed, e.g. after --oaa_subsample's
        # order was drawn): VW reads a model's options as its own, so a run continuing it
        # draws on from there
        learn["seed"] = opts["random_seed"]
    config = TrainConfig(**learn)
    algo = config.algo
    if algo not in VW_LEARNERS:
        raise Unsupported(f"it is a --{algo} model, which sl does not read in VW's format")
    cols = gd_columns(config) if algo == "gd" else tuple(range(COLUMNS[algo]))
    params = config.params()
    state = kept(config.stack, config.bits)
    if state is not None and state.learner != "gd":  # (its table's layout: bootstrap's)
        spec = spec_by_name(state.learner)
    else:
        spec = reduction_of(config) or resolve(algo)
    gstate = _initial_gstate(state, spec, params, opts, data, h)
    body = vwmodel.read_body(data, h, len(cols), opts["models"])
    r = body.resume
    if r is None:
        cols = (0,)  # the weights only
    state = np.zeros((body.slots.shape[0], spec.ncols), dtype=spec.dtype)
    for k, c in enumerate(cols):
        state[:, c] = body.values[:, k]
    stats = new_stats()
    gstate[G_CLIP] = 1.0
    gstate[G_LABEL_MIN] = h.min_label
    gstate[G_LABEL_MAX] = h.max_label
    gd_like = algo == "gd"
    if r is not None:
        # VW's t starts at --initial_t: the learned weight as the default t0 counts it (a
        # run counts it from its own t0, learned_weight, as VW's rates do; they take out the
        # run's unlabeled weight, not a model's, whose count VW reads as 0)
        gstate[G_T] = max(0.0, r["t"] - (float(F32(config.initial_t)) if gd_like else 0.0))
        gstate[G_N] = float(r["example_number"])
        gstate[G_LABEL_MIN] = r["min_label"]
        gstate[G_LABEL_MAX] = r["max_label"]
        _normalizer(gstate, spec.name, r)
        _resume_stats(stats, r)
        if gd_like:
            from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY

            gstate[G_GRAVITY] = r["l1_state"] if "l1_state" in r else 0.0
            gstate[G_CONTRACTION] = r["l2_state"] if "l2_state" in r else 1.0
    if gd_like:
        from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY

        if opts["l1_state"] is not None:  # (VW: an option given overrides the state)
            gstate[G_GRAVITY] = opts["l1_state"]
        if opts["l2_state"] is not None:
            gstate[G_CONTRACTION] = opts["l2_state"]
    weights = np.empty(body.slots.shape[0])
    spec.current_weights(state, gstate, params, np.arange(body.slots.shape[0], dtype=np.uint32),
                         weights)
    unrecorded = [*UNRECORDED, *(() if resumed else NOT_RESUMED)]
    meta = {"vw_model": {"version": h.version, "options": h.options.strip(), "resume": resumed,
                         "unrecorded": unrecorded}}  # fmt: skip
    if opts["link"] is not None:
        meta["vw_model"]["link"] = opts["link"]
    if r is not None and gd_like:
        meta["vw_model"]["t"] = r["t"]
    if body.repeats:
        meta["vw_model"]["repeated_slots"] = body.repeats
    return config, spec.name, body.slots, state, weights, gstate, stats, meta


def _resume_stats(stats: np.ndarray, r: dict) -> None:
    """The counters of VW's resume state ``r`` in ``stats``."""
    from streamlearn.learners import base as B

    stats[B.S_N] = stats[B.S_SHOWN_N] = float(r["example_number"])
    stats[B.S_WLAB] = r["weighted_labeled_examples"]
    stats[B.S_WEX] = stats[B.S_SHOWN_W] = stats[B.S_WLAB] + r["weighted_unlabeled_examples"]
    stats[B.S_LOSS] = r["sum_loss"]
    stats[B.S_LABEL_SUM] = r["weighted_labels"]
    # VW keeps no sum of squared labels: the one whose best constant's squared loss is
    # VW's, (max - c)(c - min) for c the mean label (exact for labels -1/+1)
    lo, hi = r["min_label"], r["max_label"]
    stats[B.S_LABEL_SQ] = r["weighted_labels"] * (hi + lo) - stats[B.S_WLAB] * hi * lo
    stats[B.S_FEATURES] = float(r["total_features"])


def _decode_mf(config: TrainConfig, data: bytes, h: vwmodel.Header, opts: dict) -> tuple:
    """:func:`decode` of a ``--rank`` model (``learners.gd_mf.decode_vw``; its t0 recorded)."""
    from streamlearn.learners import gd_mf

    link = {"link": opts["link"]} if opts["link"] else {}
    meta = {"vw_model": {"version": h.version, "options": h.options.strip(), "resume": False,
                         "unrecorded": [k for k in UNRECORDED if k != "initial_t"], **link}}
    return (config, *gd_mf.decode_vw(config, data, h), meta)


def _decode_ksvm(learn: dict, data: bytes, h: vwmodel.Header, opts: dict) -> tuple:
    """:func:`decode` of a ``--ksvm`` model: its support vectors after the learner's global
    state (``learners.ksvm_state.read_vw_section``), VW's generator from its ``--random_seed``."""
    from streamlearn.learners import ksvm, ksvm_state
    from streamlearn.learners.base import G_CLIP, G_LABEL_MAX, G_LABEL_MIN, new_stats

    learn.update(loss="hinge", learning_rate=0.5, initial_t=0.0)
    config = TrainConfig(**learn)
    seed = opts.get("random_seed") or 0
    gstate = ksvm.init_gstate(config.params())
    gstate[G_CLIP], gstate[G_LABEL_MIN], gstate[G_LABEL_MAX] = 1.0, h.min_label, h.max_label
    saved = ksvm_state.read_vw_section(data, h.end, seed)
    # (its loss, rate and rules are VW's ksvm's, whatever a run's defaults: recorded)
    unrecorded = [u for u in UNRECORDED if u not in ("loss", "initial_t")]
    meta = {"vw_model": {"version": h.version, "options": h.options.strip(), "resume": False,
                         "unrecorded": unrecorded}}  # fmt: skip
    empty = np.zeros(0, dtype=np.uint32)
    return (config, "ksvm", empty, np.zeros((0, 1), dtype=np.float32), np.zeros(0),
            np.concatenate([gstate, saved]), new_stats(), meta)


def _initial_gstate(state, spec, params: np.ndarray, opts: dict, data: bytes,  # noqa: ANN001
                    h: vwmodel.Header) -> np.ndarray:  # fmt: skip
    """The global state a model starts from: ``spec``'s, or its reduction's (``state``, a
    :class:`~streamlearn.learners.stacked.Kept` of its words), with what VW keeps of it before
    gd's part (``--boosting``'s alpha and v, read past the header: ``h.end`` moves) and its
    generator's state (``--random_seed``, for ``--bootstrap``, ``--boosting`` and ``--nn``)."""
    if state is not None:  # its state (VW's save_load of it) between header and weights
        from streamlearn.system.memory import refuse_above

        # (sized by the reduction's options: a model's options are data, bounded before
        # allocating; the reduction refuses more than it runs when it is set up)
        refuse_above(8 * state.size, f"the model's {state.name}",
                     "it is not a model sl can load")  # fmt: skip
        gstate = state.init(params, opts.get("random_seed") or 0)
        h.end = state.read_section(data, h.end, gstate)
        return gstate
    return spec.init_gstate(params).astype(np.float64)


def _normalizer(gstate: np.ndarray, learner: str, r: dict) -> None:
    """gd's (and coin's) normalizer sums from the resume state: class c's under --oaa."""
    if learner in ("gd", "coin"):
        from streamlearn.learners.gd import G_NORM, G_TOTAL

        gstate[G_NORM] = r["norm"][0]
        gstate[G_TOTAL] = r["total_weight"][0]
    elif learner == "freegrad":  # (its sum of weights only: VW keeps no other state of it)
        from streamlearn.learners.freegrad import G_TOTAL

        gstate[G_TOTAL] = r["total_weight"][0]
    elif learner in CLASS_GD:
        from streamlearn.learners.oaa import G_CLASS  # (= bootstrap's G_COPY)

        for c, (n, t) in enumerate(zip(r["norm"], r["total_weight"], strict=True)):
            if G_CLASS + 2 * c + 1 < gstate.shape[0]:
                gstate[G_CLASS + 2 * c] = n
                gstate[G_CLASS + 2 * c + 1] = t


def writable(config: TrainConfig) -> str | None:
    """Why a model of ``config`` cannot be written in VW's format, or None."""
    if config.algo not in VW_LEARNERS:
        return (f"VW has no --algo {config.algo} learner: its model can only be written in "
                "sl's format (sl train -f)")  # fmt: skip
    if config.hash not in ("strings", "all"):
        return f"VW has no --hash {config.hash}"
    return None


def encode(model, weights_only: bool = False, link: str = "identity") -> list:  # noqa: ANN001
    """The VW model file of ``model`` in pieces: VW's resume state (as ``--save_resume``,
    VW 9's default) or, with ``weights_only``, its current weights (``--predict_only_model``)."""
    from streamlearn.learners.base import (
        G_CLIP,
        G_LABEL_MAX,
        G_LABEL_MIN,
        G_T,
        S_FEATURES,
        S_HO_W,
        S_LABEL_SUM,
        S_LOSS,
        S_N,
        S_SINCE_LOSS,
        S_SINCE_W,
        S_WEX,
        S_WLAB,
    )  # fmt: skip
    from streamlearn.learners.losses import LOGISTIC

    config = model.config
    why = writable(config)
    if why is not None:
        raise ValueError(why)
    gstate, stats = model.gstate, model.stats
    if gstate[G_CLIP]:
        lo, hi = float(gstate[G_LABEL_MIN]) + 0.0, float(gstate[G_LABEL_MAX]) + 0.0  # (no -0)
    else:
        edge = 50.0 if config.loss_id == LOGISTIC else 0.0
        lo, hi = 0.0 - edge, edge
    if "--rank" in config.stack:  # VW's gd_mf: its options, every row of its table
        from streamlearn.learners import gd_mf

        k = gd_mf.rank_of(config.stack)
        h = vwmodel.Header(id=config.model_id, min_label=lo, max_label=hi,
                           bits=config.bits, options=gd_mf.vw_options(config, k, link))
        _split_grams(config, h)
        return [vwmodel.encode_header(h), gd_mf.vw_rows(model.slots, model.state, config.bits, k)]
    if "--ksvm" in config.stack:  # VW's kernel svm: its support vectors, no table
        from streamlearn.learners import ksvm_state
        from streamlearn.learners.base import GSTATE_SIZE

        saved = gstate[GSTATE_SIZE:]
        seed = ksvm_state.rng_of(saved) if saved.shape[0] >= 3 else 0
        h = vwmodel.Header(version=ksvm_state.VW_VERSION, id=config.model_id, min_label=lo,
                           max_label=hi, bits=config.bits,
                           options=options_string(config.replace(seed=0), False,
                                                  link, seed or None))  # fmt: skip
        _split_grams(config, h)
        return [vwmodel.encode_header(h), ksvm_state.vw_section(saved)]
    h = vwmodel.Header(id=config.model_id, min_label=lo, max_label=hi, bits=config.bits,
                       options=options_string(config, not weights_only, link,
                                              _rng_state(model)))
    _split_grams(config, h)
    algo = config.algo
    state = kept(config.stack, config.bits)
    section = state.section(gstate) if state is not None else b""
    if state is not None and state.version:  # (--plt: VW reads its section from 9.7 on)
        h.version = state.version
    if weights_only:
        keep = model.weights != 0.0
        slots = model.slots[keep]
        values = model.weights[keep].astype(F32).reshape(-1, 1)
        return [vwmodel.encode_header(h), section, *vwmodel.encode_body(None, slots, values)]
    cols = gd_columns(config) if algo == "gd" else tuple(range(COLUMNS[algo]))
    values = np.ascontiguousarray(model.state[:, list(cols)], dtype=F32)
    gd_like = algo == "gd" and not without_gd(config.stack)  # (gd's state: its sums, l1/l2's)
    if gd_like and config.adaptive and config.initial_t > 0:
        # sl keeps a fresh slot's adaptive sum as 0 (read as t0); VW stores t0 itself
        g = values[:, 1]
        g[g == 0.0] = F32(config.initial_t)
    keep = np.any(values != 0.0, axis=1)
    slots, values = model.slots[keep], values[keep]
    t0 = float(F32(config.initial_t)) if gd_like else 0.0
    norm, total = _sums(model)
    gravity, contraction = 0.0, 1.0
    if gd_like:
        from streamlearn.learners.gd import G_CONTRACTION, G_GRAVITY

        gravity, contraction = float(gstate[G_GRAVITY]), float(gstate[G_CONTRACTION])
    wlab, held = float(stats[S_WLAB]), float(stats[S_HO_W])
    unlabeled = max(0.0, float(stats[S_WEX]) - wlab - held)  # (VW's t counts it, and held:
    uncounted = 0.0 if model.learner == "svrg" else unlabeled  # rates take them out; svrg's t too)
    resume = {"initial_t": t0, "norm": norm, "t": t0 + float(gstate[G_T]) + held + uncounted,
        "sum_loss": float(stats[S_LOSS]), "sum_loss_since_last_dump": float(stats[S_SINCE_LOSS]),
        "dump_interval": 1.0, "min_label": lo, "max_label": hi,
        "weighted_labeled_examples": wlab, "weighted_labels": float(stats[S_LABEL_SUM]),
        "weighted_unlabeled_examples": unlabeled, "example_number": int(stats[S_N]),
        "total_features": int(stats[S_FEATURES]), "total_weight": total,
        "old_weighted_labeled_examples": wlab - float(stats[S_SINCE_W]),
        "current_pass": 1 if stats[S_N] else 0, "l1_state": gravity, "l2_state": contraction,
    }  # fmt: skip
    return [vwmodel.encode_header(h), section, *vwmodel.encode_body(resume, slots, values)]


def _sums(model) -> tuple[list[float], list[float]]:  # noqa: ANN001
    """The normalizer sums VW keeps (one model's: class 0's under --oaa)."""
    g = model.gstate
    if model.learner in ("gd", "coin"):
        from streamlearn.learners.gd import G_NORM, G_TOTAL

        return [float(g[G_NORM])], [float(g[G_TOTAL])]
    if model.learner in CLASS_GD:
        from streamlearn.learners.oaa import G_CLASS  # (= bootstrap's G_COPY)

        return [float(g[G_CLASS])], [float(g[G_CLASS + 1])]
    if model.learner == "freegrad":
        from streamlearn.learners.freegrad import G_TOTAL

        return [0.0], [float(g[G_TOTAL])]
    return [0.0], [0.0]


def _split_grams(config: TrainConfig, h: vwmodel.Header) -> None:
    """n-grams and skips go in VW's header, 3 bytes each (``2``, ``a2``, ``a10``)."""
    for attr in ("ngram", "skips"):
        values = getattr(config, attr)
        for v in values:
            if len(v.encode("latin-1", "replace")) > 3:
                raise ValueError(f"VW's header holds --{attr} values of 3 bytes at most: {v!r}")
        setattr(h, attr, tuple(values))


def _rng_state(model) -> int | None:  # noqa: ANN001
    """VW's generator's state (kept as ``--random_seed``): a ``--bootstrap`` model's, a
    ``--boosting`` or ``--nn`` one's (when not 0, as VW keeps it)."""
    state = kept(model.config.stack, model.config.bits)
    if state is None:
        return None
    seed = state.rng(model.gstate)
    return seed if seed or state.keeps_seed else None


def options_string(config: TrainConfig, resume: bool = True, link: str | None = None,
                   random_seed: int | None = None) -> str:  # fmt: skip
    """The options VW keeps with a model of ``config`` (as VW writes them: long names,
    each with its value); ``random_seed``: the state of VW's generator, which VW keeps
    when a reduction draws from it (``--bootstrap``)."""
    words: list[str] = [w for kv in kept_stack(config.stack) for w in kv if w is not None]
    words += [w for n, v in config.classes_options() for w in (f"--{n}", v)]
    if random_seed is not None:
        words += ["--random_seed", str(random_seed)]
    if config.named_labels:
        words += ["--named_labels", config.named_labels]
    if config.affix:
        words += ["--affix", config.affix]
    for name in ("redefine", "spelling"):
        for v in getattr(config, name):
            words += [f"--{name}", v]
    for name in ("quadratic", "cubic", "interactions"):
        for v in getattr(config, name):
            words += [f"--{name}", v]
    for name in ("ignore", "ignore_linear", "keep"):
        chars = "".join(sorted(set("".join(getattr(config, name)))))
        if chars:
            words += [f"--{name}", chars]
    if not config.constant:
        words.append("--noconstant")
    if config.hash == "all":
        words += ["--hash", "all"]
    if config.hash_seed:
        words += ["--hash_seed", str(config.hash_seed)]
    if config.chain_hash:  # (VW keeps it whatever the input: a JSON run's hashes depend on it)
        words.append("--chain_hash")
    if config.binary:
        words.append("--binary")
    if link not in (None, "identity"):
        words += ["--link", link]
    if config.algo in ("ftrl", "coin", "pistol", "freegrad"):
        words.append(f"--{config.algo}")
    elif resume and not without_gd(config.stack):
        rules = [r for r in UPDATE_RULE if getattr(config, r)]
        if len(rules) < len(UPDATE_RULE):
            words += [f"--{r}" for r in rules] or ["--sgd"]
        # as VW: the rates only when they are not the defaults (0.5, or 10 for the rules
        # other than adaptive and normalized together)
        if F32(config.learning_rate) != F32(config.default_learning_rate):
            words += ["--learning_rate", f"{float(F32(config.learning_rate)):.15g}"]
        if F32(config.power_t) != F32(0.5):
            words += ["--power_t", f"{float(F32(config.power_t)):.15g}"]
    from streamlearn.learners.initial import random_state

    state = (random_state(config.initial_weights, config.bits, config.seed)
             if config.algo == "gd" else config.seed)  # fmt: skip
    if state and random_seed is None:  # VW keeps its random state last (--random_weights)
        words += ["--random_seed", str(state)]
    return vwmodel.vw_order(" ".join(words))
