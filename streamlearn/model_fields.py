"""What an sl bandit model records of its reduction (``meta["multiline"]``), as its reader
takes it: the allow-list of :class:`streamlearn.reductions.Multiline`'s fields, each with the VW
option it stands for and its type (:func:`streamlearn.model_vw.check_sl_multiline` refuses
anything else), and the search's options such a model may keep.  Plain data: the reductions
above add their fields here (``tests/test_model_fuzz.py`` holds every field to it)."""

from __future__ import annotations

SL_FIELDS: dict[str, tuple[str | None, type]] = {
    **{f: (o, bool) for f, o in (
        ("classifier", None), ("rank_all", "rank_all"), ("csoaa_rank", "csoaa_rank"),
        ("first_only", "first_only"), ("nounif", "nounif"), ("regcbopt", "regcbopt"),
        ("elim", "elim"), ("greedify", "greedify"), ("ope", None), ("cbify_cs", "cbify_cs"),
        ("cbify_ldf", "cbify_ldf"), ("legacy", "cb_force_legacy"), ("evaluate", "eval"),
        ("explore_eval", "explore_eval"), ("all_slots_loss", "all_slots_loss"),
        ("ccb_no_slot_index", "ccb_no_slot_index"), ("no_predict", None), ("cb_dro", None),
        ("mwt_exclude", None), ("cbzo", "cbzo"), ("no_bias", None),
        ("flip_loss_sign", "flip_loss_sign"))},
    **{f: (o, int) for f, o in (
        ("actions", "cb"), ("tau", "first"), ("bag", "bag"), ("cover", "cover"), ("rnd", "rnd"),
        ("synthcoversize", "synthcoversize"), ("cbify", "cbify"), ("mwt_learn", None),
        ("lda", "lda"), ("lda_minibatch", None), ("lda_math_mode", None))},
    **{f: (o, float) for f, o in (
        ("clip_p", "clip_p"), ("lam", "lambda"), ("psi", "psi"), ("rnd_alpha", "rnd_alpha"),
        ("rnd_invlambda", "rnd_invlambda"), ("synthcoverpsi", "synthcoverpsi"),
        ("gamma_scale", "gamma_scale"), ("gamma_exponent", "gamma_exponent"),
        ("loss0", "loss0"), ("loss1", "loss1"), ("epsilon", "epsilon"),
        ("mellowness", "mellowness"), ("cb_min_cost", "cb_min_cost"),
        ("cb_max_cost", "cb_max_cost"), ("multiplier", "multiplier"),
        ("target_rate", "target_rate"), ("cb_dro_alpha", None), ("cb_dro_tau", None),
        ("cb_dro_wmax", None), ("lda_alpha", "lda_alpha"), ("lda_rho", "lda_rho"),
        ("lda_D", None), ("lda_epsilon", None))},
    **{f: (o, str) for f, o in (("reduction", None), ("cb_type", "cb_type"), ("explore", None),
                                ("mwt", "multiworld_test"), ("search_task", "search_task"),
                                ("cbzo_policy", "policy"))},
    "cbzo_radius": (None, float),
    "search": ("search", int), "search_options": (None, dict), "search_run": (None, dict),
    # the newer reductions' records (their options: reductions/cats.py, warm_cb.py, offset_tree.py,
    # csoaa_ldf.py's --wap_ldf)
    **{f: (o, bool) for f, o in (
        ("cbify_reg", None), ("cb_discrete", None), ("warm_cb_cs", None),
        ("warm_start_update", None), ("interaction_update", None), ("sim_bandit", None),
        ("warm_corrupt_given", None))},
    **{f: (o, int) for f, o in (
        ("cats_tree", None), ("cats_k", None), ("cats_pdf", None), ("loss_option", None),
        ("loss_report", None), ("ot", "ot"), ("warm_cb", "warm_cb"), ("warm_start", None),
        ("interaction", None), ("choices_lambda", None), ("lambda_scheme", None),
        ("corrupt_type_warm_start", None), ("overwrite_label", None))},
    **{f: (o, float) for f, o in (
        ("min_value", None), ("max_value", None), ("bandwidth", None), ("loss_01_ratio", None),
        ("corrupt_prob_warm_start", None))},
    "wap": ("wap_ldf", str),
    # --large_action_space (reductions/large_action.py), --epsilon_decay (epsilon_decay.py),
    # --experimental_igl (igl.py)
    **{f: (o, bool) for f, o in (
        ("large_action_space", "large_action_space"), ("las_hint_explicit_simd", None),
        ("two_pass_svd", None), ("epsilon_decay", None), ("constant_epsilon", None),
        ("reward_as_cost", None), ("challenger_epsilon", None), ("ed_spin_off", None),
        ("igl", "experimental_igl"))},
    **{f: (o, int) for f, o in (
        ("max_actions", "max_actions"), ("action_cache_slack", "action_cache_slack"),
        ("las_thread_pool_size", None), ("las_block_size", None), ("model_count", None),
        ("min_scope", None), ("bonferroni_denominator", None), ("min_champ_examples", None),
        ("shift_model_bounds", None))},
    **{f: (o, float) for f, o in (
        ("spanner_c", "spanner_c"), ("ed_significance", None), ("initial_epsilon", None),
        ("tol_x", None))},
    **{f: (o, str) for f, o in (("ed_audit", None), ("opt_func", None))},
}  # fmt: skip
"""What an sl bandit model records of its reduction (``meta["multiline"]``: the fields of
``reductions.Multiline``), each with the VW option it stands for in
:data:`streamlearn.model_vw.MODEL_OPTIONS`
(None: sl's own word for which reduction or explorer, or an option of sl's that writes
nothing) and its type; the optional floats may be None.  Anything else is refused."""


SEARCH_TASK_OPTIONS = frozenset(
    "cost negative_weight max relation_cost entity_cost constraints relation_none_cost skip_cost "
    "root_label num_label one_learner transition_system cost_to_go old_style_labels".split())
SEARCH_RUN_ONLY = ("search_task", "search_allowed_transitions", "search_save_every_k_runs")
