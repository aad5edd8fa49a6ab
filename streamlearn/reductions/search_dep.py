"""The dependency parser of learning to search (VW's ``--search_task dep_parser``,
``search_dep_parser.cc``): a sentence's lines (``head,label`` each, a multilabel) parsed by
a transition system, one decision per transition asked of the search
(:class:`streamlearn.reductions.search_engine.Search`).

* **Systems** (``--transition_system``): 1 arc-hybrid (shift, reduce-right,
  reduce-left), 2 arc-eager (and reduce).  A reduce's arc label is a second decision
  (learners 1 and 2: the feature width 3), or, with ``--one_learner``, part of the one
  decision (actions ``1 + label`` right, ``1 + K + label`` left, ``2 + 2K`` reduce).
* **Oracle**: the dynamic oracle's costs per transition (each transition's count of gold
  arcs it makes unreachable); the gold actions are the cheapest valid ones, or, with
  ``--cost_to_go``, every valid action is given its cost (VW's action costs).
* **Loss**: 2 per wrong head, 1 per wrong label, 1 for a wrong root.
* **Features** (VW's ``extract_features``): a fresh example per decision, namespaces
  ``B``-``N`` the stack's top three, the buffer's first three and the children of the
  stack's and buffer's tops (each line's features, bar the constant, moved by an offset
  per position; a marker feature when absent), namespace ``d`` the distance, valencies and
  children's labels; then VW's 19 quadratic and 12 cubic interactions among them, kept
  after the search's conditioning features (:attr:`DepToken.crossed`), as VW's gd sums
  them.
* **Labels**: each line's ``head,label`` read from its text (:func:`label_words`);
  ``--old_style_labels``: one number, ``(head + 1) + 256 label``.
"""

from __future__ import annotations

import numpy as np

from streamlearn.errors import MalformedData
from streamlearn.reductions.search_draws import (
    GET_TRUTH,
    INIT_TRAIN,
    LEARN,
    NO_ROLLOUT,
    ORACLE,
    condition_range,
)

VAL_NS = 100  # 'd'
OFFSET_CONST = 344429
HYBRID, EAGER = 1, 2
SHIFT, REDUCE_RIGHT, REDUCE_LEFT, REDUCE = 1, 2, 3, 4
MY_NULL = 9999999
FNV = np.uint64(16777619)
U64 = np.uint64

PAIRS = ("BC", "BE", "BB", "CC", "DD", "EE", "FF", "GG", "EF", "BH", "BJ", "EL", "dB", "dC",
         "dD", "dE", "dF", "dG", "dd")  # fmt: skip
TRIPLES = ("EFG", "BEF", "BCE", "BCD", "BEL", "ELM", "BHI", "BCC", "BEJ", "BEH", "BJK", "BEN")
"""VW's interactions for the parser (they replace the run's own)."""


def _slot(ns: str) -> int:
    """A namespace's place in the decision's example: ``d`` 0, ``B``-``N`` 1-13."""
    return 0 if ns == "d" else ord(ns) - ord("A")


def _pairs(a: np.ndarray, b: np.ndarray, same: bool) -> tuple[np.ndarray, np.ndarray]:
    """VW's generation order of the pairs of ``a`` x ``b`` (j >= i within one namespace)."""
    i = np.repeat(np.arange(a.shape[0]), b.shape[0])
    j = np.tile(np.arange(b.shape[0]), a.shape[0])
    if same:
        keep = j >= i
        i, j = i[keep], j[keep]
    return i, j


def crosses(spaces: list[np.ndarray]) -> np.ndarray:
    """VW's quadratic and cubic features of one decision's example (its namespaces'
    indices ``spaces``, in :func:`_slot` order), in gd's order; every value 1."""
    out = []
    for pair in PAIRS:
        a, b = spaces[_slot(pair[0])], spaces[_slot(pair[1])]
        i, j = _pairs(a, b, pair[0] == pair[1])
        out.append((FNV * a[i]) ^ b[j])
    for tri in TRIPLES:
        a, b, c = (spaces[_slot(x)] for x in tri)
        i, j, k = np.indices((a.shape[0], b.shape[0], c.shape[0])).reshape(3, -1)
        if tri[1] == tri[2]:  # (the third runs from the second's place, as VW's)
            keep = k >= j
            i, j, k = i[keep], j[keep], k[keep]
        out.append((FNV * ((FNV * a[i]) ^ b[j])) ^ c[k])
    return np.concatenate(out) if out else np.zeros(0, dtype=np.uint64)


class DepToken:
    """One decision's example (the engine's token, duck-typed): its linear features
    (:meth:`features`) and its interactions (:attr:`crossed`, summed after the search's
    conditioning features), made when first asked."""

    __slots__ = ("task", "state", "label", "test_only", "tag", "extra_idx", "extra_val",
                 "_feats", "ns")  # fmt: skip

    def __init__(self, task, state: tuple, test_only: bool) -> None:  # noqa: ANN001
        self.task = task
        self.state = state
        self.label = 0
        self.test_only = test_only
        self.tag = ""
        self.extra_idx = None
        self.extra_val = None
        self.ns = None
        self._feats = None

    def _make(self) -> tuple:
        if self._feats is None:
            spaces = self.task.spaces(*self.state)
            lin = np.concatenate(spaces)
            cross = crosses(spaces)
            m = self.task.mask
            self._feats = (lin, np.ones(lin.shape[0]), cross & m, np.ones(cross.shape[0]))
        return self._feats

    def features(self) -> tuple[np.ndarray, np.ndarray]:
        f = self._make()
        return f[0], f[1]

    @property
    def crossed(self) -> tuple[np.ndarray, np.ndarray]:
        f = self._make()
        return f[2], f[3]


class DepParser:
    """``dep_parser`` (see the module)."""

    name = "dep_parser"
    multilabel = True  # (each line's label: a list of numbers, read from its text)
    scaled = True  # (its features' indices come scaled by the feature width, as VW's)

    def initialize(self, sch, options) -> None:  # noqa: ANN001
        self.root_label = int(options.get("root_label", 8))
        self.num_label = int(options.get("num_label", 12))
        self.sys = int(options.get("transition_system", 1))
        self.one_learner = bool(options.get("one_learner", False))
        self.cost_to_go = bool(options.get("cost_to_go", False))
        self.old_style = bool(options.get("old_style_labels", False))
        sch.set_feature_width(1 if self.one_learner else 3)
        sch.set_options(auto_condition=True, action_costs=self.cost_to_go)
        sch.no_caching = True
        if self.cost_to_go:
            least = 2 + 2 * self.num_label if self.sys == EAGER else 1 + 2 * self.num_label
            sch.A = max(sch.A, least)
        self.sch = sch

    # ------------------------------------------------------------------ features
    def begin(self, sch, tokens) -> None:  # noqa: ANN001
        """The sentence's lines' features as the parser copies them (constant left out)."""
        from streamlearn.io._scan import CONSTANT_NS

        self.mask = U64((1 << sch.bits) - 1)
        self.mult = U64(sch.step)
        self.rows = []
        for tok in tokens:
            keep = tok.ns != CONSTANT_NS if tok.ns is not None else slice(None)
            self.rows.append(np.asarray(tok.idx[keep], dtype=np.uint64) & self.mask)

    def _one(self, h: int, i: int) -> np.ndarray:
        return (U64(h + i * OFFSET_CONST) * self.mult & self.mask).reshape(1)

    def spaces(self, buf: tuple, temp: tuple) -> list[np.ndarray]:
        """The decision's namespaces: ``d`` (``temp``), then ``B``-``N`` (lines ``buf``,
        0-based, -1 for none)."""
        off = VAL_NS * OFFSET_CONST
        d = np.empty(10, dtype=np.uint64)
        for j in range(10):
            off += j * 1023
            d[j] = (U64(temp[j] + off) * self.mult) & self.mask
        out = [d]
        for i, r in enumerate(buf):
            if r < 0:
                out.append(self._one(438129041, i))
            else:
                out.append(((self.rows[r] + U64(i * OFFSET_CONST)) * self.mult) & self.mask)
        return out

    def _state(self, idx: int, n: int) -> tuple:
        stack, ch, tags = self.stack, self.children, self.tags
        empty = not stack
        last = 0 if empty else stack[-1]
        buf = [-1] * 13
        for i in range(3):
            if len(stack) > i and stack[-(i + 1)] != 0:
                buf[i] = stack[-(i + 1)] - 1
        for i in range(3, 6):
            if idx + (i - 3) - 1 < n:
                buf[i] = idx + i - 3 - 1
        for i in range(6, 10):
            if not empty and last != 0 and ch[i - 4][last] != 0:
                buf[i] = ch[i - 4][last] - 1
        for i in range(10, 12):
            if idx <= n and ch[i - 8][idx] != 0:
                buf[i] = ch[i - 8][idx] - 1
        if len(stack) > 1 and stack[-2] != 0 and ch[2][stack[-2]] != 0:
            buf[12] = ch[2][stack[-2]] - 1
        temp = [0] * 10
        temp[0] = 0 if empty else (1 if idx > n else 2 + min(5, (idx - last) & 0xFFFFFFFF))
        temp[1] = 1 if empty else 1 + min(5, ch[0][last])
        temp[2] = 1 if empty else 1 + min(5, ch[1][last])
        temp[3] = 1 if idx > n else 1 + min(5, ch[0][idx])
        for i in range(4, 8):
            temp[i] = tags[ch[i - 2][last]] if (not empty and ch[i - 2][last] != 0) else 15
        for i in range(8, 10):
            temp[i] = tags[ch[i - 6][idx]] if (idx <= n and ch[i - 6][idx] != 0) else 15
        return tuple(buf), tuple(temp)

    # ------------------------------------------------------------------ the example
    def setup(self, sch, tokens) -> None:  # noqa: ANN001, ARG002
        """Each line's gold head and label (VW's ``setup``)."""
        self.gold_heads = [0]
        self.gold_tags = [0]
        for tok in tokens:
            labels = tok.multilabel
            if self.old_style:
                label = labels[0] if labels else 0
                head = ((label & 255) - 1) & 0xFFFFFFFF
                tag = label >> 8
            else:
                head = labels[0] if labels else 0
                tag = labels[1] if len(labels) > 1 else self.root_label
            if tag > self.num_label:
                raise MalformedData(f"invalid label {tag} which is > num actions="
                                    f"{self.num_label}")  # fmt: skip
            self.gold_heads.append(head)
            self.gold_tags.append(tag)
        self.gold_heads += [0, 0]  # (VW's reads past the sentence: 0 here)
        self.gold_tags += [0, 0]

    def _gh(self, i: int) -> int:
        g = self.gold_heads
        return g[i] if 0 <= i < len(g) else 0

    def _replayed(self, sch) -> bool:  # noqa: ANN001
        """The engine's next decision replays the roll-in (VW's learning runs before the
        step learned): no oracle, no features asked."""
        return sch.state == LEARN and sch.t < sch.learn_t

    def _needs(self, sch) -> bool:  # noqa: ANN001
        """VW's ``predictNeedsExample``, where it is sure: the next decision is made
        without its features (the truth, a replay, an oracle's roll-in or roll-out)."""
        st = sch.state
        if st == GET_TRUTH or (st == LEARN and sch.t < sch.learn_t):
            return False
        if st == LEARN and sch.t > sch.learn_t and sch.o.rollout == ORACLE:
            return False
        return not (st == INIT_TRAIN and sch.o.rollin == ORACLE and sch.o.rollout != NO_ROLLOUT)

    def _valid(self, idx: int, n: int) -> list[int]:
        stack, heads = self.stack, self.heads
        depth = len(stack)
        if self.sys == HYBRID:
            out = []
            if idx <= n:
                out.append(SHIFT)
            if depth >= 2:
                out.append(REDUCE_RIGHT)
            if depth >= 1 and stack[-1] != 0 and idx <= n:
                out.append(REDUCE_LEFT)
            return out
        ok = [1, 1, 1, 1, 1]
        if idx >= n:
            ok[SHIFT] = ok[REDUCE_RIGHT] = 0
        if depth == 0:
            ok[REDUCE] = 0
        elif idx <= n + 1 and heads[stack[-1]] == MY_NULL:
            ok[REDUCE] = 0
        if depth == 0:
            ok[REDUCE_LEFT] = ok[REDUCE_RIGHT] = 0
        else:
            if heads[stack[-1]] != MY_NULL:
                ok[REDUCE_LEFT] = 0
            if idx <= n and heads[idx] != MY_NULL:
                ok[REDUCE_RIGHT] = 0
        return [i for i in range(1, 5) if ok[i]]

    def _costs(self, idx: int, n: int) -> list[int]:
        """Each transition's dynamic-oracle cost (index 1-4)."""
        stack, g = self.stack, self.gold_heads
        loss = [0] * 5
        size = len(stack)
        last = stack[-1] if size else 0
        if self.sys == HYBRID:
            if idx <= n:
                gi = g[idx]
                for s in stack[: size - 1]:
                    if g[s] == idx or gi == s:
                        loss[SHIFT] += 1
            gl = g[last]
            if size > 0 and gl == idx:
                loss[SHIFT] += 1
            later = g[idx + 1 : n + 1]
            both = 1 if (idx + 1 <= gl <= n and g[gl] == last) else 0
            loss[REDUCE_LEFT] += later.count(last) + (1 if idx + 1 <= gl <= n else 0) - both
            if size > 0 and idx <= n and g[idx] == last:
                loss[REDUCE_LEFT] += 1
            if size >= 2 and gl == stack[size - 2]:
                loss[REDUCE_LEFT] += 1
            if gl >= idx:
                loss[REDUCE_RIGHT] += 1
            loss[REDUCE_RIGHT] += g[idx : n + 1].count(last)
            return loss
        heads = self.heads
        gi = g[idx]
        for s in stack:
            if g[s] == idx and heads[s] == MY_NULL:
                loss[SHIFT] += 1
                loss[REDUCE_RIGHT] += 1
            if idx <= n and gi == s:
                if s != 0:
                    loss[SHIFT] += 1
                if s != last:
                    loss[REDUCE_RIGHT] += 1
        for i in range(idx, n + 2):
            if i <= n and g[i] == last:
                loss[REDUCE] += 1
                loss[REDUCE_LEFT] += 1
            if i != idx and g[last] == i:
                loss[REDUCE_LEFT] += 1
        if gi > idx or (gi == 0 and size > 0 and stack[0] != 0):
            loss[REDUCE_RIGHT] += 1
        return loss

    def _gold(self, idx: int, loss: list[int], valid: list[int]) -> list[int]:
        stack = self.stack
        last = stack[-1] if stack else 0
        if self.sys == HYBRID and SHIFT in valid and (not stack or self._gh(idx) == last):
            return [SHIFT]
        if self.sys == HYBRID and REDUCE_LEFT in valid and self._gh(last) == idx:
            return [REDUCE_LEFT]
        best = 1
        gold: list[int] = []
        for i in range(1, 5):
            if i == 4 and self.sys == HYBRID:
                continue
            if loss[i] < loss[best] and i in valid:
                best = i
                gold = [i]
            elif loss[i] == loss[best] and i in valid:
                gold.append(i)
        return gold

    def _ctg(self, loss: list[int], valid: list[int], left: int, right: int) -> tuple:
        """VW's ``get_cost_to_go_losses``: (actions, costs)."""
        acts: list[int] = []
        costs: list[float] = []
        k = self.num_label
        if self.one_learner:
            if SHIFT in valid:
                acts.append(SHIFT)
                costs.append(float(loss[SHIFT]))
            for i in (2, 3):
                if i in valid:
                    for j in range(1, k + 1):
                        if self.sys == EAGER or j != self.root_label:
                            acts.append(1 + j + (i - 2) * k)
                            costs.append(float(loss[i] + float(j != (left if i == REDUCE_LEFT
                                                                     else right))))  # fmt: skip
            if self.sys == EAGER and REDUCE in valid:
                acts.append(2 + k * 2)
                costs.append(float(loss[REDUCE]))
        else:
            for i in (1, 2, 3):
                if i in valid:
                    acts.append(i)
                    costs.append(float(loss[i]))
            if self.sys == EAGER and REDUCE in valid:
                acts.append(REDUCE)
                costs.append(float(loss[REDUCE]))
        return acts, costs

    def _one_learner(self, actions: list[int], left: int, right: int) -> list[int]:
        k = self.num_label
        out = []
        if SHIFT in actions:
            out.append(SHIFT)
        if self.sys == EAGER and REDUCE in actions:
            out.append(2 + 2 * k)
        if left != MY_NULL and REDUCE_RIGHT in actions:
            out.append(1 + right)
        if left != MY_NULL and REDUCE_LEFT in actions:
            out.append(1 + left + k)
        if left == MY_NULL and REDUCE_RIGHT in actions:
            out += [i + 2 for i in range(k) if i != self.root_label - 1]
        if left == MY_NULL and REDUCE_LEFT in actions:
            out += [i + 2 + k for i in range(k) if self.sys == EAGER or i != self.root_label - 1]
        return out

    def _arc(self, sch, last: int, hd: int, t_id: int, right: bool) -> None:  # noqa: ANN001
        ch = self.children
        self.heads[last] = hd
        if right:
            ch[5][hd] = ch[4][hd]
            ch[4][hd] = last
            ch[1][hd] += 1
        else:
            ch[3][hd] = ch[2][hd]
            ch[2][hd] = last
            ch[0][hd] += 1
        self.tags[last] = t_id
        gh = self._gh(last)
        sch.loss(2.0 if gh != hd else (1.0 if self._gt(last) != t_id else 0.0))

    def _gt(self, i: int) -> int:
        g = self.gold_tags
        return g[i] if 0 <= i < len(g) else 0

    def _transition(self, sch, a: int, idx: int, t_id: int, n: int) -> int:  # noqa: ANN001
        stack = self.stack
        if a == SHIFT:
            stack.append(idx)
            return idx + 1
        if self.sys == HYBRID:
            if a == REDUCE_RIGHT:
                self._arc(sch, stack[-1], stack[-2], t_id, True)
                stack.pop()
                return idx
            if a == REDUCE_LEFT:
                self._arc(sch, stack[-1], idx, t_id, False)
                stack.pop()
                return idx
        else:
            if a == REDUCE_RIGHT:
                hd = stack[-1]
                stack.append(idx)
                self._arc(sch, idx, hd, t_id, True)
                return idx + 1
            if a == REDUCE_LEFT:
                self._arc(sch, stack[-1], 0 if idx > n else idx, t_id, False)
                stack.pop()
                return idx
            if a == REDUCE:
                stack.pop()
                return idx
        raise MalformedData(f"dep_parser: transition {a} is not one of its actions")

    def run(self, sch, tokens) -> None:  # noqa: ANN001

        if getattr(self, "_rows_of", None) is not tokens:
            self.begin(sch, tokens)
            self._rows_of = tokens
        n = len(tokens)
        k = self.num_label
        hybrid = self.sys == HYBRID
        test_only = bool(tokens[0].test_only) if tokens else False
        self.stack = [0 if (self.root_label == 0 and hybrid) else 1]
        self.children = [[0] * (n + 2) for _ in range(6)]
        self.heads = [0] + [MY_NULL] * n + [0]
        self.tags = [0] + [MY_NULL] * n + [0]
        count = 1
        idx = 1 if (self.root_label == 0 and hybrid) else 2
        h = sch.history_length
        while True:
            if hybrid and len(self.stack) <= 1 and idx >= n:
                break
            if not hybrid and not self.stack and idx >= n:
                break
            tok = DepToken(self, self._state(idx, n) if self._needs(sch) else None, test_only)
            valid = self._valid(idx, n)
            loss = [0] * 5 if self._replayed(sch) else self._costs(idx, n)
            left = self._gt(self.stack[-1]) if self.stack else MY_NULL
            if hybrid:
                right = left
            else:
                right = self._gt(idx) if idx <= n else self.root_label
            t_id = 0
            if self.one_learner:
                if self.cost_to_go:
                    acts, costs = self._ctg(loss, valid, left, right)
                    a = sch.predict(tok, count, [], *condition_range(count - 1, h, "p"),
                                    allowed=acts, allowed_costs=costs)  # fmt: skip
                else:
                    gold = self._one_learner(self._gold(idx, loss, valid), left, right)
                    allowed = self._one_learner(valid, MY_NULL, MY_NULL)
                    a = sch.predict(tok, count, gold, *condition_range(count - 1, h, "p"),
                                    allowed=allowed)  # fmt: skip
                if a == SHIFT:
                    t_id = 0
                elif a == 2 * k + 2:
                    a, t_id = REDUCE, 0
                elif a > 1 and a - 1 <= k:
                    a, t_id = REDUCE_RIGHT, a - 1
                else:
                    a, t_id = REDUCE_LEFT, a - k - 1
            else:
                if self.cost_to_go:
                    acts, costs = self._ctg(loss, valid, left, right)
                    a = sch.predict(tok, count, [], *condition_range(count - 1, h, "p"),
                                    allowed=acts, allowed_costs=costs)  # fmt: skip
                else:
                    a = sch.predict(tok, count, self._gold(idx, loss, valid),
                                    *condition_range(count - 1, h, "p"), allowed=valid)  # fmt: skip
                count += 1
                if a not in (SHIFT, REDUCE):
                    if tok.state is None and self._needs(sch):
                        tok.state = self._state(idx, n)
                    want = left if a == REDUCE_LEFT else right
                    if self.cost_to_go:
                        labels = list(range(1, k + 1))
                        costs = [float(i != want) for i in labels]
                        t_id = sch.predict(tok, count, [], *condition_range(count - 1, h, "p"),
                                           allowed=labels, allowed_costs=costs,
                                           learner_id=a - 1)  # fmt: skip
                    else:
                        t_id = sch.predict(tok, count, [want],
                                           *condition_range(count - 1, h, "p"),
                                           learner_id=a - 1)  # fmt: skip
            count += 1
            idx = self._transition(sch, a, idx, t_id, n)
        if hybrid:
            top = self.stack[-1]
            self.heads[top] = 0
            self.tags[top] = self.root_label
            sch.loss(float(self._gh(top) != 0))
        if sch.producing:
            sch.out.extend(f"{self.heads[i]}:{self.tags[i]}\n" for i in range(1, n + 1))


def label_words(text: bytes) -> list[int]:
    """A line's multilabel (VW's: its first word, numbers separated by commas; a word that
    is not a number reads 0); empty for a line without a label."""
    word = text.split(b"|", 1)[0].split()
    if not word or word[0].startswith(b"'"):
        return []
    out = []
    for part in word[0].split(b","):
        digits = b""
        for ch in part.strip():
            c = bytes([ch])
            if c.isdigit() or (not digits and c in b"+-"):
                digits += c
            else:
                break
        try:
            out.append(int(digits) & 0xFFFFFFFF)
        except ValueError:
            out.append(0)
    return out
