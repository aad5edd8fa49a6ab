"""Learning to search, as VW's ``search.cc`` runs it (``--search K --search_task T``).

An example is a sequence of lines (a blank line ends it), each a token with a class label.
The task (:mod:`streamlearn.reductions.search_tasks`) walks the tokens and asks
:meth:`Search.predict` for a decision at each; the search decides what that call does:

1. **test** (``INIT_TEST``): every decision the learned policy's; its Hamming loss (or the
   task's) is the example's progressive loss, its decisions ``-p``'s line.  Run only
   when something shows it (``-p``, ``-r``, a progress row due, a visible loss), as VW.
2. **roll-in** (``INIT_TRAIN``): each decision the reference's (the oracle) or the learned
   policy's, drawn per decision (``mix_per_state``), per run (``mix_per_roll``) or fixed
   (``ref``, ``learn``); the trajectory kept.  With ``--search_rollout none`` each
   decision is a training example at once (0 cost for the oracle's actions, 1 for the
   others).
3. **learn** (``LEARN``): for each time step chosen (all, or ``--search_subsample_time``'s
   share, in VW's "hoopla" order), each action is taken there after the roll-in's prefix
   and the sequence finished by the roll-out policy; the losses (minus the least) are the
   costs of one cost-sensitive example, learned by csoaa over gd
   (:mod:`streamlearn.learners.search`).

The policy mixes the oracle and the learned policy with β = 1 − (1 − α)^n after n
training examples (``--search_alpha``, VW's DAgger-like default), or a policy per pass
(``--search_interpolation policy``).  Decisions are conditioned on earlier ones by
features added to the token (VW's ``add_example_conditioning``: a bias per n-gram of
earlier actions, optionally its product with the token's features), and neighbours'
features can be copied in (``--search_neighbor_features``).  The learned policy's
decisions are cached per example by (tag, policy, conditioning), as VW's.

VW's randomness is reproduced draw for draw: each run reseeds its generator (merand48)
from the example's counter, as ``reset_search_structure`` does.
"""

from __future__ import annotations

import numpy as np

from streamlearn.learners.losses import c_single
from streamlearn.reductions import search_fast as fast_path
from streamlearn.reductions.search_draws import (
    F32,
    GET_TRUTH,
    INIT_TEST,
    INIT_TRAIN,
    INITIALIZE,
    LEARN,
    M64,
    MIX_PER_ROLL,
    MIX_PER_STATE,
    NO_ROLLOUT,
    ORACLE,
    POLICY,
    TABLE_HEAD,
    Options,
    Rand48,
    hoopla,
    hoopla_range,
    natural,
    safediv,
    score_text,
    short,
)
from streamlearn.system.libm import powf

FLT_MAX = float(F32(3.4028234663852886e38))
QUADRATIC_CONSTANT = 27942141
LOG_OF_2 = F32(0.6931471805599453)
_log1pf = c_single("log1pf")
_expm1f = c_single("expm1f")
_expf = c_single("expf")


class Token:
    """One line of a sequence: its label (0: none) and features (VW's order, constant
    last), with the neighbours' features the search copies in (``extra``)."""

    __slots__ = ("label", "idx", "val", "ns", "test_only", "extra_idx", "extra_val", "tag",
                 "multilabel")  # fmt: skip

    def __init__(self, label: int, idx: np.ndarray, val: np.ndarray, ns: np.ndarray,
                 test_only: bool, tag: str = "") -> None:  # fmt: skip
        self.tag = tag
        self.label = label
        self.idx = idx
        self.val = val
        self.ns = ns
        self.test_only = test_only
        self.extra_idx = None
        self.extra_val = None
        self.multilabel: list[int] = []

    def features(self) -> tuple[np.ndarray, np.ndarray]:
        if self.extra_idx is None:
            return self.idx, self.val
        return (np.concatenate([self.idx, self.extra_idx]),
                np.concatenate([self.val, self.extra_val]))  # fmt: skip


class Search:
    """One run's search (see the module): its options, state, counters and base learner.

    ``weights``: the run's (``reductions.base.Weights``); ``shows``: what the run shows
    (``quiet``, ``predictions``, ``raw``, the progress step)."""

    def __init__(self, ml, cfg, task, training: bool, shows) -> None:  # noqa: ANN001
        o = Options(ml)
        self.o = o
        self.task = task
        self.training = training
        self.shows = shows
        self.A = o.A
        self.history_length = o.history_length
        self.feature_width = 1
        self.auto_condition = False
        self.auto_hamming = False
        self.action_costs = False
        self.no_caching = o.no_caching or o.rollout == NO_ROLLOUT
        self.bits = cfg.bits
        self.said: list[str] = []
        self.out: list[str] = []
        self.producing = False
        self.ldf = False
        task.initialize(self, o.raw)
        if ml.search_run.get("search_allowed_transitions"):
            self._allowed_transitions(ml.search_run["search_allowed_transitions"])
        if self.ldf:
            self.A = 0
        if self.auto_condition and (o.history_length == 0 or o.feature_value == F32(0.0)):
            self.said.append("Turning off AUTO_CONDITION_FEATURES because settings make it "
                             "useless")  # fmt: skip
            self.auto_condition = False
        # (VW's "policy" interpolation keeps the annealed β and the current policy of
        # "data": only its passes per policy differ, so β is always annealed and the
        # current policy always allowed, below)
        self.passes_per_policy = o.passes_per_policy
        npasses = max(1, cfg.passes)
        if o.interpolation == "data":
            self.passes_per_policy = npasses
        self.beta = o.beta
        self.current_policy = 0
        if o.trained_policies:
            self.current_policy = o.trained_policies
            if o.interpolation == "data" and self.current_policy > 1:
                self.current_policy = 1
        total = max(1, o.total_policies)
        want = self.current_policy
        if training:
            want += int(np.ceil(F32(npasses) / F32(self.passes_per_policy)))
        self.total_policies = max(total, want)
        if not training and self.current_policy > 0:
            self.current_policy -= 1
        if o.xv:
            self.feature_width *= 3
        self.width = self.total_policies * self.feature_width  # search's feature width
        self.csoaa_k = max(1, self.A)  # (csoaa's classes: the task's actions)
        from streamlearn.learners.oaa import stride

        self.step = stride(self.width * self.csoaa_k)
        self.kernel_step = 1 if getattr(task, "scaled", False) else self.step
        self.classes = np.arange(1, self.A + 1, dtype=np.int64)
        self.rng = Rand48()
        # counters (VW's shared_data as the search updates it, and its own)
        self.sd_t = 0.0
        self.weighted_labeled = 0.0
        self.weighted_unlabeled = 0.0
        self.weighted_holdout = 0.0
        self.sum_loss = 0.0
        self.since_loss = 0.0
        self.old_labeled = 0.0
        self.holdout_loss = 0.0
        self.ho_since_loss = 0.0
        self.ho_since_w = 0.0
        self.example_number = 0
        self.total_features = 0
        self.dump = -shows.step if shows.step < 0.0 else 1.0
        self.printed_header = False
        self.rows: list[str] = []
        self.predictions: list[str] = []
        self.raw_lines: list[str] = []
        self.pass_no = 0
        self.passes_since_new_policy = 0
        self.total_predictions = 0
        self.total_cache_hits = 0
        self.total_examples = 0
        self.truth = ""
        self.pred = ""
        self.pass_base = 0  # VW's example_counter of this pass's first line
        self.pass_lines = 0  # the lines of the pass so far (its last example's, and a blank)
        self.cache: dict = {}
        self.learn_allowed: list[int] = []
        self.csr = None  # (this example's rows as one CSR, when its caller has them)
        self._rows = None
        self._reset_all()

    def grow(self, w) -> None:  # noqa: ANN001
        """Room in gd's global state for every sub-model's normalizer sums (policies x
        actions)."""
        from streamlearn.learners.oaa import G_CLASS

        need = G_CLASS + 2 * self.width * self.csoaa_k
        if w.gstate.shape[0] < need:
            w.gstate = np.concatenate([w.gstate, np.zeros(need - w.gstate.shape[0])])

    def _allowed_transitions(self, path: str) -> None:
        """VW's ``read_allowed_transitions``: the pairs ``from:to`` read and counted, the
        table then unused (VW 9 drops what it read: no decision is limited by it)."""
        import re

        from streamlearn.errors import UsageError

        try:
            with open(path, "rb") as f:
                text = f.read().decode(errors="replace")
        except OSError as e:
            raise UsageError(f"error: could not read file {path} ({e.strerror}); assuming all "
                             "transitions are valid") from None  # fmt: skip
        count = 0
        for m in re.finditer(r"\s*([+-]?\d+):([+-]?\d+)", text):
            a, b = int(m.group(1)), int(m.group(2))
            for v, what in ((a, "from"), (b, "to")):
                if v < 0 or v > self.A:
                    self.said.append(f"[warning] Ignoring transition {what} {v} because it's out "
                                     f"of the range [0,{self.A}]")  # fmt: skip
            count += 1
        self.said.append(f"[info] read {count} allowed transitions from {path}")

    # ------------------------------------------------------------------ the task's calls
    def set_options(self, auto_condition: bool = False, auto_hamming: bool = False,
                    action_costs: bool = False, ldf: bool = False) -> None:  # fmt: skip
        self.ldf = ldf
        self.auto_condition = auto_condition
        self.auto_hamming = auto_hamming
        self.action_costs = action_costs

    def set_feature_width(self, width: int) -> None:
        self.feature_width = width

    def say(self, line: str) -> None:
        self.said.append(line)

    def pretty_label(self, a: int) -> str:
        return str(a)

    def loss(self, value: float) -> None:
        """VW's ``search_declare_loss``."""
        self.loss_declared += 1
        if self.state == INIT_TEST:
            self.test_loss = float(F32(F32(self.test_loss) + F32(value)))
        elif self.state == INIT_TRAIN:
            self.train_loss = float(F32(F32(self.train_loss) + F32(value)))
        elif self.state == LEARN:
            if self.o.rollout_num_steps == 0 or self.loss_declared <= self.o.rollout_num_steps:
                self.learn_loss = float(F32(F32(self.learn_loss) + F32(value)))

    def predict(self, tok: Token, tag: int, oracle: list[int], cond_tags: list[int],
                cond_names: str, allowed: list[int] | None = None,
                allowed_costs: list[float] | None = None, learner_id: int = 0) -> int:  # fmt: skip
        """VW's ``search::predict``: the decision at ``tag`` (and its Hamming loss)."""
        oracle = [a for a in oracle] if oracle else []
        a = self._search_predict(tok, tag, oracle, cond_tags, cond_names, allowed or [],
                                 allowed_costs, learner_id)  # fmt: skip
        if self.state == INIT_TEST:
            self.test_actions.append(a)
        if tag != 0:
            if tag >= len(self.ptag_to_action):
                self.ptag_to_action.extend([0] * (tag + 1 - len(self.ptag_to_action)))
            self.ptag_to_action[tag] = a
        if self.auto_hamming:
            if self.action_costs:
                if allowed:
                    lv = allowed_costs[allowed.index(a)]
                else:
                    lv = allowed_costs[a - 1]
            else:
                lv = 0.0 if (not oracle or a in oracle) else 1.0
            self.loss(lv)
        return a

    # ------------------------------------------------------------------ one example
    def example(self, tokens: list[Token], test: bool, holdout: bool, w, tag: str = "",
                last_line: int = 0) -> None:  # noqa: ANN001  # fmt: skip
        """Learn (or score) one sequence (``last_line``: its last token's line in the input,
        1-based): VW's ``do_actual_learning``."""
        self.w = w
        # VW's example_counter: every line taken from the parser, blank ones too, and one
        # more at each pass's end
        self.read_example_last_id = self.pass_base + last_line - 1
        self.pass_lines = max(self.pass_lines, last_line + 1)
        setup = getattr(self.task, "setup", None)
        if setup is not None:
            setup(self, tokens)
        if self._might_print():
            if test:
                self.truth = "**test**"
            else:
                self._reset()
                self.state = GET_TRUTH
                self.producing = True
                self.out = []
                self.task.run(self, tokens)
                self.truth = "".join(self.out)
        self._add_neighbors(tokens)
        try:
            self._train(tokens, test, holdout, tag)
        finally:
            for tok in tokens:
                tok.extra_idx = tok.extra_val = None
        takedown = getattr(self.task, "takedown", None)
        if takedown is not None:
            takedown(self, tokens)
        self._print_update()

    def end_pass(self) -> None:
        """VW's ``end_pass``: the next policy when its passes are done."""
        self.pass_base += self.pass_lines + 1
        self.pass_lines = 0
        self.pass_no += 1
        self.passes_since_new_policy += 1
        if self.passes_since_new_policy >= self.passes_per_policy:
            self.passes_since_new_policy = 0
            if self.training:
                self.current_policy += 1
            if self.current_policy > self.total_policies:
                self.current_policy = self.total_policies

    # ------------------------------------------------------------------ VW's search.cc
    def _reset_all(self) -> None:
        self.state = INITIALIZE
        self.t = 0
        self.loss_declared = 0
        self.test_loss = self.learn_loss = self.train_loss = 0.0
        self.num_features = 0
        self.mix_per_roll_policy = -2
        self.ptag_to_action: list[int] = []
        self.test_actions: list[int] = []
        self.train_trajectory: list[tuple[int, float]] = []
        self.learn_t = 0
        self.learn_a_idx = 0
        self.done_with_all = False
        self.learn_tok = None
        self.learn_cond: tuple = ((), "")
        self.read_example_last_id = 0

    def _reset(self) -> None:
        """VW's ``reset_search_structure`` (not ``learn_a_idx``)."""
        self.t = 0
        self.loss_declared = 0
        self.done_with_all = False
        self.test_loss = self.learn_loss = self.train_loss = 0.0
        self.num_features = 0
        self.producing = False
        self.mix_per_roll_policy = -2
        x = F32(-_log1pf(-self.o.alpha) * F32(self.total_examples))
        beta = F32(-_expm1f(-x)) if x <= LOG_OF_2 else F32(F32(1.0) - _expf(-x))
        self.beta = min(beta, F32(1.0))
        self.ptag_to_action = []
        self.rng.s = self.rng_seed()

    def rng_seed(self) -> int:
        """The generator's state each run of the example starts from (VW's)."""
        seed = ((self.read_example_last_id * 147483 + 4831921) & 0xFFFFFFFF) * 2147483647
        return seed & 0xFFFFFFFF

    def _random(self, n: int) -> int:
        return int(F32(self.rng.next() * F32(n)))

    def _random_policy(self, allow_optimal: bool) -> int:
        """VW's ``random_policy`` with the current policy allowed (VW's search always allows
        it): the current policy, an older one, or the oracle (-1) when ``allow_optimal``."""
        cur = self.current_policy
        if self.beta >= F32(1.0):
            return cur
        valid = cur + int(allow_optimal) + 1
        if valid == 1:
            pid = 0
        elif valid == 2:
            pid = int(self.rng.next() >= self.beta)
        else:
            r = self.rng.next()
            pid = 0
            if r > self.beta:
                r = F32(r - self.beta)
                while r > F32(0.0) and pid < valid - 1:
                    pid += 1
                    r = F32(r - F32(self.beta * powf(F32(1.0) - self.beta, pid)))
        if allow_optimal and pid == valid - 1:
            return -1
        return cur - pid

    def _choose_policy(self) -> int:
        method = {INIT_TEST: POLICY, LEARN: self.o.rollout, INIT_TRAIN: self.o.rollin}[self.state]
        if method == POLICY:
            return self._random_policy(False)
        if method == ORACLE:
            return -1
        if method == MIX_PER_STATE:
            return self._random_policy(True)
        if method == MIX_PER_ROLL:
            if self.mix_per_roll_policy == -2:
                self.mix_per_roll_policy = self._random_policy(True)
            return self.mix_per_roll_policy
        raise RuntimeError("search: a roll-in or roll-out with no policy")

    def _select_learner(self, policy: int, learner_id: int, is_training: bool,
                        is_local: bool) -> int:  # fmt: skip
        if policy < 0:
            return policy
        if self.o.xv:
            learner_id *= 3
            if not is_local:
                learner_id += 1 + int(is_training ^ (self.example_number % 2 == 1))
        return policy * self.feature_width + learner_id

    def _choose_oracle(self, oracle: list[int], allowed: list[int],
                       costs: list[float] | None) -> int:  # fmt: skip
        a = -1
        if self.action_costs:
            k = self.A if not allowed else len(allowed)
            low = min(F32(c) for c in costs[:k]) if k else F32(FLT_MAX)
            if low < F32(FLT_MAX):
                count = 0
                for j in range(k):
                    if F32(costs[j]) <= low:
                        count += 1
                        if count == 1 or self.rng.next() < F32(1.0) / F32(count):
                            a = j + 1 if not allowed else allowed[j]
        if a == -1:
            if (self.o.perturb_oracle > F32(0.0) and self.state == INIT_TRAIN
                    and self.rng.next() < self.o.perturb_oracle):  # fmt: skip
                oracle = []
            if oracle:
                a = oracle[self._random(len(oracle))]
            elif allowed:
                a = allowed[self._random(len(allowed))]
            else:
                a = 1 + self._random(self.A)
        return a

    def _cond_actions(self, cond_tags: list[int]) -> list[int]:
        p2a = self.ptag_to_action
        return [p2a[t] if 1 <= t < len(p2a) else 0 for t in cond_tags]

    def _cache_key(self, tag: int, policy: int, learner_id: int, cond_tags: list[int],
                   cond_names: str, cond_acts: list[int]) -> tuple:  # fmt: skip
        # (VW keeps one byte of each: tags above 255 share entries there too)
        return (tag & 0xFF, policy & 0xFF, learner_id & 0xFF, len(cond_tags) & 0xFF,
                tuple((t & 0xFF, a & 0xFF, ord(n) & 0xFF)
                      for t, a, n in zip(cond_tags, cond_acts, cond_names, strict=False)))

    def _search_predict(self, tok: Token, tag: int, oracle: list[int], cond_tags: list[int],
                        cond_names: str, allowed: list[int], costs: list[float] | None,
                        learner_id: int) -> int:  # fmt: skip
        t = self.t
        self.t += 1
        state = self.state
        if state == GET_TRUTH:
            return self._choose_oracle(oracle, allowed, costs)
        if state == LEARN and t < self.learn_t:
            return self.train_trajectory[t][0]
        valid = len(allowed) if allowed else self.A
        if state == LEARN and t == self.learn_t:
            a = self.learn_a_idx
            self.loss_declared = 0
            self.learn_a_idx += 1
            if self.learn_a_idx >= valid:
                self.done_with_all = True
                self.learn_learner_id = learner_id
                self.learn_tok = tok
                if self.auto_condition:
                    self.learn_cond = (list(cond_tags), cond_names, self._cond_actions(cond_tags))
                if allowed:
                    self.learn_allowed = list(allowed)
            return allowed[a] if allowed else a + 1
        if (state == LEARN and t > self.learn_t and self.o.rollout_num_steps > 0
                and self.loss_declared >= self.o.rollout_num_steps):  # fmt: skip
            return allowed[0] if allowed else 1
        policy = self._choose_policy()
        a = 0
        gte_here = (state == INIT_TRAIN and self.o.rollout == NO_ROLLOUT
                    and (bool(oracle) or self.action_costs))  # fmt: skip
        a_cost = 0.0
        if policy == -1:
            a = self._choose_oracle(oracle, allowed, costs)
        if policy >= 0 or gte_here:
            learner = self._select_learner(policy, learner_id, False, state != INIT_TEST)
            acts = self._cond_actions(cond_tags)
            not_test = self.training and not tok.test_only
            key = None
            if not_test and not self.no_caching and tag != 0:
                key = self._cache_key(tag, policy, learner_id, cond_tags, cond_names, acts)
                hit = self.cache.get(key)
                if hit is not None and hit[0] != -1:
                    self.total_cache_hits += 1
                    a, a_cost = hit
                    if state == INIT_TRAIN:
                        self.train_trajectory.append((a, a_cost))
                    return a
            idx, val = self._conditioned(tok, cond_names, acts)
            if policy >= 0:
                a, a_cost = self._single_prediction(idx, val, learner, allowed, costs)
            if gte_here:
                lab = self._oracle_label(allowed, costs, oracle)
                self._learn(idx, val, lab, learner_id)
            if key is not None:
                self.cache[key] = (a, a_cost)
        if state == INIT_TRAIN:
            self.train_trajectory.append((a, a_cost))
        return a

    def _conditioned(self, tok: Token, names: str, acts: list[int]) -> tuple:
        """The token's features and VW's conditioning features on ``acts`` (named
        ``names``): a bias per n-gram of them, its products with the token's features; a
        task's interactions (``tok.crossed``) after them, as VW's gd sums them."""
        idx, val = tok.features()
        crossed = getattr(tok, "crossed", None)
        if crossed is not None:  # (its indices scaled by the feature width: so are VW's)
            n = idx.shape[0]
            idx, val = self._conditioned_linear(tok, idx, val, names, acts)
            mask = np.uint64((1 << self.bits) - 1)
            cond = (idx[n:].astype(np.uint64) * np.uint64(self.step)) & mask
            return (np.concatenate([idx[:n], cond, crossed[0]]),
                    np.concatenate([val, crossed[1]]))  # fmt: skip
        return self._conditioned_linear(tok, idx, val, names, acts)

    def _conditioned_linear(self, tok: Token, idx, val, names: str, acts: list[int]) -> tuple:  # noqa: ANN001
        if not self.auto_condition or not names:
            return idx, val
        o = self.o
        add_i: list[int] = []
        add_v: list[float] = []
        fv = float(o.feature_value)
        top = max(o.bias_n, o.quad_n)
        mask = (1 << self.bits) - 1
        n_i = len(names)
        for i in range(n_i):
            fid = 71933
            for n in range(top):
                if i + n >= n_i:
                    break
                name = ord(names[i + n])
                a = ((acts[i + n] & 0xFFFFFFFF) + 349101) & 0xFFFFFFFF  # (a uint32 sum)
                fid = (fid * 328901 + 71933 * (a * (name + 38490137))) & M64
                base = (fid * QUADRATIC_CONSTANT) & M64
                if n < o.bias_n:
                    add_i.append((base + 4398201) & mask)
                    add_v.append(fv)
                if n < o.quad_n:
                    for h, v in zip(idx.tolist(), val.tolist(), strict=True):
                        add_i.append((base + h) & mask)
                        add_v.append(float(F32(F32(fv) * F32(v))))
        if not add_i or not any(v != 0.0 for v in add_v):
            return idx, val
        return (np.concatenate([idx, np.asarray(add_i, dtype=idx.dtype)]),
                np.concatenate([val, np.asarray(add_v, dtype=val.dtype)]))  # fmt: skip

    def _add_neighbors(self, tokens: list[Token]) -> None:
        """VW's ``add_neighbor_features``: namespace ``ns`` of the token ``offset`` away
        (or a start/end marker) copied in."""
        if not self.o.neighbors:
            return
        mask = (1 << self.bits) - 1
        n_tok = len(tokens)
        for n, me in enumerate(tokens):
            add_i: list[int] = []
            add_v: list[float] = []
            for enc in self.o.neighbors:
                offset = enc >> 24
                ns = enc & 0xFF
                base = ((enc & M64) * 13748127) & M64
                if offset < 0 and n < -offset:
                    add_i.append((base + 925871901) & mask)
                    add_v.append(1.0)
                elif n + offset >= n_tok:
                    add_i.append((base + 3824917) & mask)
                    add_v.append(1.0)
                else:
                    other = tokens[n + offset]
                    sel = other.ns == ns
                    for h, v in zip(other.idx[sel].tolist(), other.val[sel].tolist(), strict=True):
                        add_i.append((base + h) & mask)
                        add_v.append(v)
            if add_i and sum(v * v for v in add_v) > 0.0:
                me.extra_idx = np.asarray(add_i, dtype=me.idx.dtype)
                me.extra_val = np.asarray(add_v, dtype=me.val.dtype)

    def _single_prediction(self, idx, val, learner: int, allowed: list[int],
                           costs: list[float] | None) -> tuple[int, float]:  # noqa: ANN001  # fmt: skip
        from streamlearn.learners import search as kernels

        w = self.w
        listed = bool(allowed) or costs is not None
        classes = np.asarray(allowed, dtype=np.int64) if allowed else self.classes
        scores = np.empty(classes.shape[0], dtype=np.float32)
        a, pp = kernels.predict(w.table, w.gstate, w.params, idx, val, self.kernel_step,
                                learner * self.csoaa_k, classes, scores)  # fmt: skip
        if self.state == INIT_TEST and self.shows.raw:
            # (VW's -r lists the label's classes: none when every class is scored)
            self.raw_lines.append(" ".join(f"{int(c)}:{score_text(s)}" for c, s in zip(
                classes, scores, strict=True)) + "\n" if listed else "\n")  # fmt: skip
        self.total_predictions += 1
        self.num_features += idx.shape[0]
        return int(a), float(pp)

    def _oracle_label(self, allowed: list[int], costs: list[float] | None,
                      oracle: list[int]) -> tuple[list[int], list[float]]:  # fmt: skip
        """VW's ``allowed_actions_to_label``: 0 for the oracle's actions, 1 for the others
        (or the task's costs)."""
        if self.action_costs:
            if not allowed:
                return list(range(1, self.A + 1)), [costs[k] for k in range(self.A)]
            return list(allowed), [costs[k] for k in range(len(allowed))]
        if not allowed:
            return (list(range(1, self.A + 1)),
                    [0.0 if (k + 1) in oracle else 1.0 for k in range(self.A)])  # fmt: skip
        return list(allowed), [0.0 if a in oracle else 1.0 for a in allowed]

    def _learn(self, idx, val, lab: tuple[list[int], list[float]],
               learner_id: int) -> None:  # noqa: ANN001  # fmt: skip
        """VW's ``generate_training_example``: the costs less the least, learned."""
        from streamlearn.learners import base
        from streamlearn.learners import search as kernels

        classes, costs = lab
        c32 = [F32(c) for c in costs]
        low = min(c32)
        costs32 = np.asarray([F32(c - low) for c in c32], dtype=np.float32)
        w = self.w
        cls = np.asarray(classes, dtype=np.int64)
        slots = np.empty(idx.shape[0], dtype=np.uint32)
        scores = np.empty(cls.shape[0], dtype=np.float32)
        n_local = 1 + int(self.o.xv)
        for is_local in range(n_local):
            learner = self._select_learner(self.current_policy, learner_id, True, is_local > 0)
            # gd's clock: VW's sd->t (this sequence counted) and the example's weight 1
            w.gstate[base.G_T] = self.sd_t + 1.0 - self.weighted_holdout - self.weighted_unlabeled
            kernels.learn(w.table, w.gstate, w.params, w.loss_id, idx, val, self.kernel_step,
                          learner * self.csoaa_k, cls, costs32, slots, scores)  # fmt: skip
        self.total_examples += 1

    def _might_print(self) -> bool:
        return (not self.shows.quiet
                and self.weighted_labeled + self.weighted_unlabeled + 1.0 >= self.dump)  # fmt: skip

    def _must_test(self, test: bool, holdout: bool) -> bool:
        s = self.shows
        return (s.predictions or self._might_print() or s.raw
                or (not s.quiet and not test
                    and (s.holdout_off or holdout or self.pass_no == 0)))  # fmt: skip

    def _update(self, holdout: bool, labeled: bool, loss: float, nfeat: int) -> None:
        """VW's ``shared_data::update`` for one sequence (weight 1)."""
        self.sd_t += 1.0
        if holdout and labeled:
            self.weighted_holdout += 1.0
            self.ho_since_w += 1.0
            self.holdout_loss += loss
            self.ho_since_loss += loss
        else:
            if labeled:
                self.weighted_labeled += 1.0
            else:
                self.weighted_unlabeled += 1.0
            self.sum_loss += loss
            self.since_loss += loss
            self.total_features += nfeat
            self.example_number += 1

    def _train(self, tokens: list[Token], test: bool, holdout: bool, tag: str) -> None:
        """VW's ``train_single_example``."""
        self.cache = {}
        ran_test = False
        if self._must_test(test, holdout):
            ran_test = True
            self._reset()
            self.state = INIT_TEST
            self.producing = (self._might_print() or self.shows.predictions
                              or self.shows.raw)  # fmt: skip
            self.out = []
            self.test_actions = []
            if not fast_path.test(self, tokens):
                self.task.run(self, tokens)
            self.pred = "".join(self.out) if self.producing else ""
            if not test:
                self._update(holdout, True, self.test_loss, self.num_features)
            if self.shows.predictions:
                self.predictions.append(self.pred + (f" {tag}" if tag else "") + "\n")
            if self.shows.raw:
                self.raw_lines.append((f" {tag}" if tag else "") + "\n")
        if not self.training or test or holdout:
            return
        self.cache = {}
        self._reset()
        self.state = INIT_TRAIN
        self.train_trajectory = []
        if fast_path.train(self, tokens, ran_test, holdout):
            return
        self.task.run(self, tokens)
        if not ran_test:
            self._update(holdout, True, self.test_loss, self.num_features)
        if self.loss_declared == 0 or self.t == 0 or self.o.rollout == NO_ROLLOUT:
            return
        self.T = self.t
        fast = fast_path.oracle_rollouts(self, tokens)
        steps = self._timesteps()
        if fast is not None and fast_path.learn_steps(self, tokens, fast, steps):
            return
        for lt in steps:
            self.learn_a_idx = 0
            self.done_with_all = False
            losses: list[tuple[int, float]] = []
            if fast is not None and fast.covers(lt):
                losses = fast.losses(self, tokens, lt)  # (and done_with_all, the token)
            while not self.done_with_all:  # (a run per action: each reseeds)
                self._reset()
                self.state = LEARN
                self.learn_t = lt
                self.task.run(self, tokens)
                losses.append((self.learn_a_idx, self.learn_loss))
            classes = [c for c, _ in losses]
            if self.learn_allowed:
                for i in range(min(len(self.learn_allowed), len(classes))):
                    classes[i] = self.learn_allowed[i]
            costs = [x for _, x in losses]
            tags, names, acts = self.learn_cond if self.auto_condition else ([], "", [])
            idx, val = self._conditioned(self.learn_tok, names, acts)
            self._learn(idx, val, (classes, costs), self.learn_learner_id)

    def _timesteps(self) -> list[int]:
        """VW's ``get_training_timesteps``: the steps to learn at, in hoopla order."""
        T = self.T
        sub = self.o.subsample
        if sub <= F32(0.0):
            steps = list(range(T))
        elif sub < F32(1.0):
            steps = [t for t in range(T) if self.rng.next() <= sub]
            if not steps:
                steps = [int(F32(self.rng.next() * F32(T)))]
        else:
            steps = []
            while len(steps) < int(sub) and len(steps) < T:
                t = int(F32(self.rng.next() * F32(T)))
                if t not in steps:
                    steps.append(t)
            steps.sort()
        if not self.o.linear_ordering:
            steps = hoopla_range(T) if sub <= F32(0.0) else hoopla(steps)
        return steps

    # ------------------------------------------------------------------ the table
    def _print_update(self) -> None:
        """VW's ``print_update_search``: the header once, a row when one is due."""
        if self.shows.quiet:
            return
        if not self.printed_header:
            self.rows.append(TABLE_HEAD)
            self.printed_header = True
        we = self.weighted_labeled + self.weighted_unlabeled
        if not we >= self.dump:
            return
        use_ho = (not self.shows.holdout_off and self.pass_no >= 1
                  and self.weighted_holdout > 0)  # fmt: skip
        if use_ho:
            avg = safediv(self.holdout_loss, self.weighted_holdout)
            since = safediv(self.ho_since_loss, self.ho_since_w)
            self.ho_since_w = 0.0
            self.ho_since_loss = 0.0
        else:
            avg = safediv(self.sum_loss, self.weighted_labeled)
            since = safediv(self.since_loss, self.weighted_labeled - self.old_labeled)
        line = (f"{avg:<10.6f} {since:<10.6f} {natural(self.example_number):>8s}  "
                f"[{short(self.truth)}] [{short(self.pred)}] {self.pass_no:>5d} "
                f"{self.current_policy:>5d}  {natural(self.total_predictions):>7s}  "
                f"{natural(self.total_cache_hits):>7s}  {natural(self.total_examples):>7s}  "
                f"{float(self.beta):<8f}")  # fmt: skip
        if use_ho:
            line += " h"
        self.rows.append(line)
        self.since_loss = 0.0
        self.old_labeled = self.weighted_labeled
        step = self.shows.step
        if step < 0.0:
            self.dump = float(F32(we - step))
        else:
            self.dump = float(F32(we * (step if step > 0.0 else 2.0)))
