"""What a single-line reduction keeps beside gd's global state, as the model files see it.

``--boosting`` (its learners' sums, α, v) and ``--nn`` (its units' sums) keep state in gd's
``gstate`` after gd's own, and VW's generator there too (VW keeps its state in a model as
``--random_seed``); boosting also writes a section of its own in VW's model file.  The model
layer (``model_vw.py``, ``run/vwreadable.py``) cannot import the reductions: it asks
:func:`kept` for the configuration's words, and gets one :class:`Kept` whatever the
reduction, instead of a branch per reduction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

BFGS = ("--bfgs", "--conjugate_gradient")
"""The words that name L-BFGS (``reductions/bfgs.py``): the learner itself, not a reduction
over gd."""
WITHOUT_GD = ("--svrg", "--ksvm", "--OjaNewton")
"""The words naming a base learner VW sets up instead of gd (``reductions/svrg.py``, with
gd's table of plain updates; ``reductions/ksvm.py``, with support vectors;
``reductions/oja_newton.py``, with its sketch beside w̄): VW keeps none of
gd's options with its model, and its rate is the one given (gd's set-up multiplies it by
t0^p)."""


CLASS_GD = ("oaa_gd", "csoaa_gd", "multilabel_gd", "bootstrap_gd", "ect_gd", "log_multi_gd",
            "recall_tree_gd", "plt_gd")
"""The learners (``LearnerSpec.name``) that keep gd's normalizer sums per problem, problem
0's where VW's model file has them (``oaa.G_CLASS``)."""


def without_gd(stack: tuple[str, ...]) -> bool:
    """Whether the words ``stack`` (``TrainConfig.stack``) name one of :data:`WITHOUT_GD`."""
    return any(w in stack for w in WITHOUT_GD)


STACK_OPTIONS: dict[str, bool] = {"lrq": True, "lrqdropout": False, "lrqfa": True,
                                   "boosting": True, "alg": True, "nn": True, "inpass": False,
                                   "dropout": False, "multitask": False, "active": False,
                                   "mellowness": True, "autolink": True, "bootstrap": True,
                                   "bs_type": True, "bfgs": False, "conjugate_gradient": False,
                                   "rank": True, "svrg": False, "ksvm": False, "OjaNewton": False,
                                   "kernel": True, "bandwidth": True, "degree": True,
                                   "marginal": True, "stage_poly": False,
                                   "confidence": False, "baseline": False, "global_only": False,
                                   "check_enabled": False, "active_cover": False,
                                   "cover": True, "cs_active": True, "log_multi": True,
                                   "recall_tree": True, "max_candidates": True,
                                   "max_depth": True, "node_only": False,
                                   "randomized_routing": False, "plt": True,
                                   "kary_tree": True, "top": True,
                                   "replay_b": True, "replay_m": True, "replay_c": True,
                                   "interact": True}
"""The options of the reductions that read their own (``streamlearn.reductions.SINGLE_LINE``):
a model's are passed to them as its words (``TrainConfig.stack``), which they check; this
list is what a model may name (a model's options are data: an allow-list, not a reader)."""

KEPT_WHEN_GIVEN = frozenset({"mellowness", "top"})
"""Options VW keeps with a model only when its run gave them (``--active``'s and
``--active_cover``'s ``--mellowness``): a model without one ran with the default, and a run
continuing it may give one; and ``--top K``, which changes what a run writes, not the
weights: a model learned without it may be continued with it (VW's suite line 34)."""


def _stack_options(stack: tuple[str, ...]) -> list[tuple[str, str | None, bool]]:
    """The options of ``stack`` (``TrainConfig.stack``) as (``--name``, value or None,
    whether VW keeps it with a model: :data:`STACK_OPTIONS`), in their order."""
    out: list[tuple[str, str | None, bool]] = []
    i = 0
    while i < len(stack):
        w = stack[i]
        name = w[2:]
        if name in STACK_OPTIONS:
            value = (stack[i + 1] if i + 1 < len(stack) else "") if STACK_OPTIONS[name] else None
            out.append((w, value, True))
        else:  # (an option VW does not keep, and its value if any: --gamma 0.2)
            has = i + 1 < len(stack) and not stack[i + 1].startswith("--")
            value = stack[i + 1] if has else None
            out.append((w, value, False))
        i += 1 if value is None else 2
    return out


def kept_stack(stack: tuple[str, ...]) -> list[tuple[str, str | None]]:
    """The words of ``stack`` VW keeps with a model, as (``--name``, value or None): those of
    :data:`STACK_OPTIONS`, in their order."""
    return [(w, v) for w, v, kept in _stack_options(stack) if kept]


def run_words(stack: tuple[str, ...]) -> list[tuple[str, str | None]]:
    """The words of ``stack`` VW does not keep with a model (a run's: ``--reprocess 5``), as
    (``--name``, value or None): :func:`kept_stack`'s others."""
    return [(w, v) for w, v, kept in _stack_options(stack) if not kept]



@dataclass(frozen=True)
class Kept:
    """A reduction's state beside gd's: its ``gstate`` size, a fresh one (``init(params,
    seed)``), VW's generator in it (``rng``), and its part of VW's model file before gd's
    (``section``, ``read_section(data, pos, gstate) -> end``, ``lines(gstate, float_text)``:
    the readable model's)."""

    name: str
    """What the model's options say of it (``--boosting 4``): its refusals name it."""
    size: int
    init: Callable[[np.ndarray, int], np.ndarray]
    rng: Callable[[np.ndarray], int]
    section: Callable[[np.ndarray], bytes]
    read_section: Callable[[bytes, int, np.ndarray], int]
    lines: Callable[[np.ndarray, Callable], list[str]]
    learner: str = "gd"
    """The learner whose table VW's model fills (sl's model files name it): ``gd``, or
    ``bootstrap_gd`` (gd's rows, a copy's in each of K slots, the copies' sums)."""
    models: int = 1
    """The models VW writes one after another under ``--per_model_save_load``."""
    sums_at: int | None = None
    """Where model 0's normalizer sums are in the global state (VW's model file keeps
    them), when not gd's own (``--bootstrap``: copy 0's)."""
    keeps_seed: bool = False
    """VW keeps ``--random_seed`` with the model even when its state is 0."""
    end: Callable[[bytes, int], int] | None = None
    """Where its part of VW's model file at ``pos`` ends, read without a state (None: it
    has no part, or a part :func:`skip` need not find)."""
    version: str | None = None
    """The VW version its model files name (None: sl's usual; ``--plt``: 9.7 and later read
    its section, older ones are refused by VW)."""

    def skip(self, data: bytes, pos: int) -> int:
        """Where gd's part of VW's model file starts, its own at ``pos``."""
        return pos if self.end is None else self.end(data, pos)


def _none_section(gstate: np.ndarray) -> bytes:  # noqa: ARG001
    return b""


def _no_read(data: bytes, pos: int, gstate: np.ndarray) -> int:  # noqa: ARG001
    return pos


def _no_lines(gstate: np.ndarray, g: Callable) -> list[str]:  # noqa: ARG001
    return []


def kept(words: tuple[str, ...], bits: int = 18) -> Kept | None:
    """The state of the reduction ``words`` (``TrainConfig.stack``) name, or None; ``bits``:
    the table's (``--marginal`` keeps an entry per slot)."""
    # each reduction's module is imported when its words are there: a run imports the
    # learners it uses (their kernels' dispatchers: ~0.3 ms a function), not all of them
    b = _boosting(words)
    if b is not None:
        from streamlearn.learners import boosting


        n, alg = b
        return Kept(
            f"--boosting {n}", boosting.rng_slot(n) + 2,
            lambda params, seed: boosting.init_gstate(n, params, seed),
            lambda g: boosting.get_rng(g, n),
            lambda g: boosting.vw_section(n, alg, g),
            lambda data, pos, g: boosting.read_vw_section(data, pos, n, alg, g),
            lambda g, text: boosting.section_lines(n, alg, g, text),
        )  # fmt: skip
    net = _nn(words)
    if net is not None:
        from streamlearn.learners import nn


        k = net[0]
        return Kept(f"--nn {k}", nn.gstate_size(k),
                    lambda params, seed: nn.init_gstate(k, params, seed),
                    lambda g: nn.get_rng(g, k), _none_section, _no_read, _no_lines)  # fmt: skip
    if "--bootstrap" in words:
        at = words.index("--bootstrap") + 1
        k = int(words[at]) if at < len(words) and words[at].isdigit() else 0
        if k >= 1:  # (otherwise the reduction refuses the words when it is set up)
            from streamlearn.learners import bootstrap

            return Kept(f"--bootstrap {k}", bootstrap.rng_slot(k) + 2,
                        lambda params, seed: _bootstrap_state(k, params, seed),
                        lambda g: bootstrap.get_rng(g, k), _none_section, _no_read, _no_lines,
                        learner="bootstrap_gd", models=k, sums_at=bootstrap.G_COPY,
                        keeps_seed=True)  # fmt: skip
    if any(w in words for w in BFGS):
        m = _bfgs_mem(words)
        if m is not None:  # (otherwise the reduction refuses the words when it is set up)
            from streamlearn.learners import bfgs

            return Kept(f"--mem {m}", bfgs.B_RHO + 2 * max(m, 1),
                        lambda params, seed: _bfgs_state(m, params), lambda g: 0,
                        _none_section, _no_read, _no_lines, learner=f"bfgs{m}")  # fmt: skip
    if "--active_cover" in words:
        n = _cover(words)
        if n is not None:  # (otherwise the reduction refuses the words when it is set up)
            from streamlearn.learners import active_cover, bootstrap

            return Kept("--active_cover", active_cover.state_size(n),
                        lambda params, seed: active_cover.init_gstate(params, n, seed),
                        lambda g: active_cover.get_rng(g, n), _none_section, _no_read,
                        _no_lines, learner="bootstrap_gd", models=n + 1,
                        sums_at=bootstrap.G_COPY)  # fmt: skip
    if "--cs_active" in words:
        at = words.index("--cs_active") + 1
        k = int(words[at]) if at < len(words) and words[at].isdigit() else 0
        if k >= 1:  # (otherwise the reduction refuses the words when it is set up)
            return Kept(f"--cs_active {k}", _cs_active_size(k),
                        lambda params, seed: _cs_active_state(params, k), lambda g: 0,
                        _none_section, _no_read, _no_lines, learner="csoaa_gd")  # fmt: skip
    if "--active" in words:
        from streamlearn.learners import active

        return Kept("--active", active.G_QUERIES + 1, active.init_gstate, active.get_rng,
                    _none_section, _no_read, _no_lines)  # fmt: skip
    if "--marginal" in words:
        at = words.index("--marginal") + 1
        named = words[at] if at < len(words) else ""
        compete = "--compete" in words
        from streamlearn.learners import marginal

        return Kept(f"--marginal {named}", marginal.state_size(bits, compete),
                    lambda params, seed: marginal.init_gstate(params, bits, compete),
                    lambda g: 0, lambda g: marginal.vw_section(g, bits, compete),
                    lambda data, pos, g: marginal.read_vw_section(data, pos, g, bits, compete),
                    lambda g, text: marginal.section_lines(g, bits, compete, text),
                    end=lambda data, pos: marginal.section_end(data, pos, compete))  # fmt: skip
    if "--OjaNewton" in words:
        from streamlearn.learners import oja_newton

        return Kept("--OjaNewton", oja_newton.STATE_SIZE, oja_newton.init_gstate,
                    oja_newton.get_rng, _none_section, oja_newton.refuse_resumed, _no_lines,
                    keeps_seed=True)
    tree_or_replay = _tree_kept(words) or _replay_kept(words)
    if tree_or_replay is not None:
        return tree_or_replay
    if "--stage_poly" in words:
        from streamlearn.learners import stage_poly

        return Kept("--stage_poly", stage_poly.state_size(bits),
                    lambda params, seed: stage_poly.init_gstate(params, bits), lambda g: 0,
                    lambda g: stage_poly.vw_section(g, bits),
                    lambda data, pos, g: stage_poly.read_vw_section(data, pos, g, bits),
                    _no_lines, end=lambda data, pos: stage_poly.section_end(data, pos, bits))
    return None


def _replay_kept(words: tuple[str, ...]) -> Kept | None:
    """:func:`kept` of the experience replays and ``--oaa_subsample``: VW's generator after
    their learner's state (their model keeps it as ``--random_seed``)."""
    replay = next((lv for lv in "bmc" if f"--replay_{lv}" in words), None)
    if replay is not None:
        learner = {"b": "gd", "m": "oaa_gd", "c": "csoaa_gd"}[replay]
        return _generator_kept(f"--replay_{replay}", learner)
    if "--oaa_subsample" in words:  # (the order of --oaa's classes drawn from it)
        return _generator_kept("--oaa_subsample", "oaa_gd")
    return None


def _generator_kept(name: str, learner: str) -> Kept:
    """The state of a reduction over ``learner`` (its ``LearnerSpec.name``) that keeps only
    VW's generator, after the learner's own (:func:`with_generator`)."""

    def init(params: np.ndarray, seed: int) -> np.ndarray:
        from streamlearn.learners import spec_by_name

        return with_generator(spec_by_name(learner).init_gstate(params), seed)

    return Kept(name, REPLAY_STATE_BOUND, init, replay_rng, _none_section, _no_read, _no_lines,
                learner=learner)  # fmt: skip


REPLAY_STATE_BOUND = 1 << 16
"""At most this many entries in a replay's global state (its learner's, ``--oaa K``'s sums
per class, and the generator): the bound a model's is read under."""


def with_generator(gstate: np.ndarray, seed: int) -> np.ndarray:
    """A replay's global state: its learner's ``gstate``, then VW's generator seeded with
    ``seed`` as two 32-bit halves (the last two entries)."""
    g = np.zeros(gstate.shape[0] + 2)
    g[: gstate.shape[0]] = gstate
    set_replay_rng(g, seed)
    return g


def replay_rng(gstate: np.ndarray) -> int:
    """A replay's generator state in ``gstate`` (:func:`with_generator`)."""
    n = gstate.shape[0]
    return (int(gstate[n - 1]) << 32) | int(gstate[n - 2])


def set_replay_rng(gstate: np.ndarray, state: int) -> None:
    n = gstate.shape[0]
    gstate[n - 2] = float(state & 0xFFFFFFFF)
    gstate[n - 1] = float((state >> 32) & 0xFFFFFFFF)


def _tree_kept(words: tuple[str, ...]) -> Kept | None:
    """:func:`kept` of the trees over classes (``--log_multi``, ``--recall_tree``,
    ``--plt``): their nodes' state after gd's, and VW's model section of it."""
    if "--log_multi" in words:
        at = words.index("--log_multi") + 1
        k = int(words[at]) if at < len(words) and words[at].isdigit() else 0
        from streamlearn.learners import log_multi

        if 2 <= k <= log_multi.MAX_CLASSES:  # (otherwise the reduction refuses the words)
            swap = swap_resistance(words)
            return Kept(f"--log_multi {k}", log_multi.layout(k)[3],
                        lambda params, seed: log_multi.init_gstate(params, k, swap),
                        lambda g: 0, lambda g: log_multi.vw_section(g, k),
                        lambda data, pos, g: log_multi.read_vw_section(data, pos, g, k),
                        lambda g, text: log_multi.section_lines(g, k, text),
                        end=lambda data, pos: log_multi.section_end(data, pos, k),
                        learner="log_multi_gd", sums_at=log_multi.G_CLASS)  # fmt: skip
    if "--recall_tree" in words:
        from streamlearn.learners import recall_tree, recall_tree_state

        tree = recall_tree.of_words(words)
        if tree is not None and 1 <= tree[0] and tree[1] <= recall_tree.MAX_DEPTH:
            k, d = tree[0], tree[1]  # (otherwise the reduction refuses the words)
            return Kept(f"--recall_tree {k}", recall_tree.layout(k, d)[3],
                        lambda params, seed: recall_tree.init_gstate(params, k, d, *tree[2:], seed),
                        lambda g: recall_tree.get_rng(g, k, d),
                        lambda g: recall_tree_state.vw_section(g, k, d),
                        lambda data, pos, g: recall_tree_state.read_vw_section(data, pos, g, k, d),
                        lambda g, text: recall_tree_state.section_lines(g, k, d),
                        end=lambda data, pos: recall_tree_state.section_end(data, pos, k, d),
                        learner="recall_tree_gd", sums_at=recall_tree.G_CLASS)  # fmt: skip
    if "--plt" in words:
        k, kary = _plt_tree(words)
        from streamlearn.learners import plt

        if k >= 2 and kary >= 2 and plt.tree_size(k, kary)[0] <= plt.MAX_NODES:
            return Kept(f"--plt {k}", plt.layout(k, kary)[4],
                        lambda params, seed: plt.init_gstate(params, k, kary), lambda g: 0,
                        lambda g: plt.vw_section(g, k, kary),
                        lambda data, pos, g: plt.read_vw_section(data, pos, g, k, kary),
                        lambda g, text: plt.section_lines(g, k, kary, text),
                        end=lambda data, pos: plt.section_end(data, pos, k, kary),
                        learner="plt_gd", sums_at=plt.G_CLASS,
                        version=plt.VW_VERSION)  # fmt: skip
    return None


def _boosting(words: tuple[str, ...]) -> tuple[int, str] | None:
    """``boosting.parse_stack``, its module imported only when ``--boosting`` is there."""
    if "--boosting" not in words:
        return None
    from streamlearn.learners import boosting

    return boosting.parse_stack(words)


def _nn(words: tuple[str, ...]) -> tuple[int, int] | None:
    """``nn.parse_stack``, its module imported only when ``--nn`` is there."""
    if "--nn" not in words:
        return None
    from streamlearn.learners import nn

    return nn.parse_stack(words)


def _plt_tree(words: tuple[str, ...]) -> tuple[int, int]:
    """``--plt K``'s K and ``--kary_tree`` (2 by default; 0 when not counts: the reduction's
    refusal)."""

    def value(flag: str, default: str) -> int:
        if flag not in words:
            return int(default)
        at = words.index(flag) + 1
        return int(words[at]) if at < len(words) and words[at].isdigit() else 0

    return value("--plt", "0"), value("--kary_tree", "2")


def swap_resistance(words: tuple[str, ...]) -> int:
    """``--log_multi``'s ``--swap_resistance`` (4 by default; a bad one: the reduction's
    refusal)."""
    if "--swap_resistance" not in words:
        return 4
    at = words.index("--swap_resistance") + 1
    return int(words[at]) if at < len(words) and words[at].isdigit() else 4


def _bootstrap_state(k: int, params: np.ndarray, seed: int) -> np.ndarray:
    """K copies' fresh global state (their sums, with ``--initial_t`` copy 0's) and VW's
    generator at ``seed``."""
    from streamlearn.learners.base import P_BOOTSTRAP

    p = params.copy()
    p[P_BOOTSTRAP] = k
    from streamlearn.learners import bootstrap

    gstate = bootstrap.gd_gstate(p)
    bootstrap.set_rng(gstate, k, seed)
    return gstate


def _cover(words: tuple[str, ...]) -> int | None:
    """``--active_cover``'s policies (``--cover``, 12 by default; none with ``--oracular``)."""
    if "--oracular" in words:
        return 0
    if "--cover" not in words:
        return 12
    at = words.index("--cover") + 1
    ok = at < len(words) and words[at].isdigit() and int(words[at]) <= 1023
    return int(words[at]) if ok else None


def _bfgs_mem(words: tuple[str, ...]) -> int | None:
    """``--bfgs``'s memory (``--mem``, 15 by default; ``--conjugate_gradient``'s 0)."""
    if "--conjugate_gradient" in words:
        return 0
    if "--mem" not in words:
        return 15
    at = words.index("--mem") + 1
    return int(words[at]) if at < len(words) and words[at].isdigit() else None


def _bfgs_state(m: int, params: np.ndarray) -> np.ndarray:
    """L-BFGS's fresh global state of ``--mem`` m for a model read (its passes: 1, the run's
    own are the run's)."""
    from streamlearn.learners.base import P_BFGS_MEM, P_BFGS_PASSES

    p = params.copy()
    p[P_BFGS_MEM] = m
    p[P_BFGS_PASSES] = 1.0
    from streamlearn.learners import bfgs

    return bfgs.init_gstate(p)


def _cs_active_size(k: int) -> int:
    from streamlearn.learners import cs_active

    return cs_active.gstate_size(k)


def _cs_active_state(params: np.ndarray, k: int) -> np.ndarray:
    from streamlearn.learners import cs_active

    return cs_active.init_gstate(params, k)
