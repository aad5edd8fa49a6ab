#!/usr/bin/env python
"""Generate logged contextual-bandit data with a known cost model (``--cb_adf`` text or DSJSON).

A simulated system shows one of ``K`` actions for each context and logs what it chose,
with what probability, and the cost it saw:

* **Context**: ``D`` shared features ``x ~ N(0, 1)`` (namespace ``s``: ``x0 ... x{D-1}``)
  and, for each action, its id feature ``id{a}`` and ``M`` per-action features
  ``z ~ N(0, 1)`` (namespace ``a``: ``z0 ... z{M-1}``).  Written values lie on a 0.01
  grid in [-4, 4], and the costs below are computed from the written values.
* **Cost model** (known): action ``a`` in context ``(x, z)`` costs 1 with probability
  ``mu(x, a) = sigmoid(b_a + W_a . x + v . z_a)`` and 0 otherwise (think: 1 = the user
  did not click).  ``W``, ``b``, ``v`` are drawn from the seed (:func:`world`).
* **Logging policy** (known probabilities): epsilon-greedy over a *noisy* copy of the
  cost model (``W``, ``b``, ``v`` plus ``N(0, noise^2)`` each): probability
  ``1 - eps + eps/K`` on the action the noisy model thinks cheapest, ``eps/K`` on the
  others.  The logged action is drawn from that pmf and its probability written with it.

Output, one example per context: VW's ``--cb_adf`` multiline text (a ``shared`` line,
``K`` action lines, the label ``0:cost:probability`` on the chosen one, a blank line),
or with ``--format dsjson`` VW's decision-service JSON (``_label_cost``,
``_label_probability``, ``_labelIndex``, ``a``, ``p``, ``c`` with ``_multi``), which
``sl vw --dsjson`` and ``vw --dsjson`` read as the same examples.  The same arguments
give the same bytes; written with vectorised numpy, 200,000 examples with 8 actions
take a few seconds.

**True expected costs.**  ``--policy-cost NAME`` prints the expected cost of a policy
(``logging``, ``uniform``, ``optimal``, ``eps-greedy:E`` over the true model,
``noisy-greedy``: the logging policy's greedy part) over the context distribution,
estimated by averaging the exact per-context expectation over ``--mc`` fresh contexts;
``--predictions P`` prints the true expected cost, on the generated examples, of the
predictions in ``P`` (VW's ``-p`` file of ``--cb_adf``: the chosen action, or of
``--cb_explore_adf``: the pmf), i.e. ``mean_e sum_a pi_e(a) mu(x_e, a)``: what an
off-policy estimate of those predictions' cost should be close to.

Examples
--------
::

    python scripts/make_cb_data.py --examples 200000 --actions 8 --seed 1 -o cb.txt
    python scripts/make_cb_data.py --examples 2000 --seed 1 --format dsjson -o cb.json
    python scripts/make_cb_data.py --seed 1 --policy-cost optimal
    python scripts/make_cb_data.py --examples 2000 --seed 1 --log-seed 2 -o fresh.txt
    python scripts/make_cb_data.py --examples 2000 --seed 1 --predictions p.txt

Also importable: :func:`world`, :func:`contexts`, :func:`log`, :func:`true_cost`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

CHUNK = 8192  # examples generated at once (fixed: part of what a seed means)
GRID = 100  # written values are multiples of 1/GRID
LIMIT = 4.0  # ... within [-LIMIT, LIMIT]


@dataclass(frozen=True)
class World:
    """The cost model and the logging policy's model.

    Attributes
    ----------
    w : float64[K, D]
        Shared-feature weights of each action.
    b : float64[K]
        Each action's bias.
    v : float64[M]
        Weights of the per-action features (the same for every action).
    w_log, b_log, v_log
        The logging policy's noisy copies.
    epsilon : float
        The logging policy's exploration rate.
    """

    w: np.ndarray
    b: np.ndarray
    v: np.ndarray
    w_log: np.ndarray
    b_log: np.ndarray
    v_log: np.ndarray
    epsilon: float

    @property
    def actions(self) -> int:
        return self.w.shape[0]


def world(seed: int = 0, actions: int = 8, shared: int = 6, per_action: int = 3,
          epsilon: float = 0.2, noise: float = 0.5) -> World:  # fmt: skip
    """The cost model and logging model of ``seed``.

    >>> wd = world(seed=3, actions=4, shared=2, per_action=1)
    >>> wd.w.shape, wd.b.shape, wd.v.shape
    ((4, 2), (4,), (1,))
    """
    if actions < 2 or shared < 0 or per_action < 0:
        raise ValueError("actions >= 2, shared >= 0 and per_action >= 0 required")
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
    rng = np.random.default_rng([seed, 1])
    w = rng.normal(0.0, 1.0 / np.sqrt(max(shared, 1)), size=(actions, shared))
    b = rng.normal(0.0, 0.5, size=actions)
    v = rng.normal(0.0, 0.5, size=per_action)
    return World(w, b, v, w + rng.normal(0.0, noise, size=w.shape),
                 b + rng.normal(0.0, noise, size=b.shape),
                 v + rng.normal(0.0, noise, size=v.shape), float(epsilon))  # fmt: skip


def _grid(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """N(0, 1) draws as written: integers q, the value being q / GRID."""
    return np.clip(np.rint(rng.normal(0.0, 1.0, size=shape) * GRID), -LIMIT * GRID,
                   LIMIT * GRID).astype(np.int64)  # fmt: skip


def contexts(wd: World, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` contexts on the written grid: ``x`` (int64[n, D]) and ``z`` (int64[n, K, M]),
    the values being these divided by :data:`GRID`."""
    k, d = wd.w.shape
    x = _grid(rng, (n, d))
    z = _grid(rng, (n, k, wd.v.shape[0]))
    return x, z


def _sigmoid(t: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-t))


def expected_costs(wd: World, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``mu[n, K]``: each action's probability of cost 1 in each context."""
    return _sigmoid(wd.b + (x / GRID) @ wd.w.T + (z / GRID) @ wd.v)


def _greedy(scores: np.ndarray, eps: float) -> np.ndarray:
    k = scores.shape[1]
    pmf = np.full(scores.shape, eps / k)
    pmf[np.arange(scores.shape[0]), np.argmin(scores, axis=1)] += 1.0 - eps
    return pmf


def logging_pmf(wd: World, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The logging policy's pmf ``[n, K]``: epsilon-greedy over the noisy model."""
    noisy = wd.b_log + (x / GRID) @ wd.w_log.T + (z / GRID) @ wd.v_log
    return _greedy(noisy, wd.epsilon)


Policy = Callable[[World, np.ndarray, np.ndarray], np.ndarray]
"""A policy: ``(world, x, z) -> pmf[n, K]``."""


def policy(name: str) -> Policy:
    """A named policy: ``logging``, ``uniform``, ``optimal``, ``noisy-greedy``, ``eps-greedy:E``.

    >>> wd = world(1, actions=3, shared=2, per_action=1)
    >>> x, z = contexts(wd, 5, np.random.default_rng(0))
    >>> policy("eps-greedy:0.3")(wd, x, z).sum(axis=1).round(12).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    if name == "logging":
        return logging_pmf
    if name == "uniform":
        return lambda wd, x, z: np.full((x.shape[0], wd.actions), 1.0 / wd.actions)
    if name == "optimal":
        return lambda wd, x, z: _greedy(expected_costs(wd, x, z), 0.0)
    if name == "noisy-greedy":
        return lambda wd, x, z: logging_pmf(World(wd.w, wd.b, wd.v, wd.w_log, wd.b_log,
                                                  wd.v_log, 0.0), x, z)  # fmt: skip
    if name.startswith("eps-greedy:"):
        eps = float(name.split(":", 1)[1])
        if not 0.0 <= eps <= 1.0:
            raise ValueError(f"{name}: epsilon must be in [0, 1]")
        return lambda wd, x, z: _greedy(expected_costs(wd, x, z), eps)
    raise ValueError(f"unknown policy {name!r}: logging, uniform, optimal, noisy-greedy, "
                     "eps-greedy:E")  # fmt: skip


def true_cost(wd: World, pol: Policy, samples: int = 1_000_000, seed: int = 12345) -> tuple:
    """The expected cost of ``pol`` over the context distribution, and its Monte Carlo
    standard error: the mean over ``samples`` fresh contexts of ``sum_a pi(a|x) mu(x, a)``
    (exact given the context; only the average over contexts is sampled)."""
    rng = np.random.default_rng([seed, 7])
    total = total_sq = 0.0
    done = 0
    while done < samples:
        m = min(1 << 16, samples - done)
        x, z = contexts(wd, m, rng)
        v = (pol(wd, x, z) * expected_costs(wd, x, z)).sum(axis=1)
        total += float(v.sum())
        total_sq += float((v * v).sum())
        done += m
    mean = total / samples
    var = max(0.0, total_sq / samples - mean * mean)
    return mean, float(np.sqrt(var / samples))


@dataclass
class Logged:
    """A chunk of logged data: contexts, true costs, the logging pmf, what was logged."""

    x: np.ndarray  # int64[n, D] (grid units)
    z: np.ndarray  # int64[n, K, M]
    mu: np.ndarray  # float64[n, K]
    pmf: np.ndarray  # float64[n, K]
    action: np.ndarray  # int64[n]
    prob: np.ndarray  # float64[n]
    cost: np.ndarray  # int64[n], 0 or 1


def log(wd: World, examples: int, seed: int = 0) -> Iterator[Logged]:
    """The logged data of ``seed``, in chunks of :data:`CHUNK` examples."""
    rng = np.random.default_rng([seed, 2])
    done = 0
    while done < examples:
        m = min(CHUNK, examples - done)
        done += m
        x, z = contexts(wd, m, rng)
        mu = expected_costs(wd, x, z)
        pmf = logging_pmf(wd, x, z)
        u = rng.random(m)
        action = np.minimum((np.cumsum(pmf, axis=1) < u[:, None]).sum(axis=1), wd.actions - 1)
        rows = np.arange(m)
        cost = (rng.random(m) < mu[rows, action]).astype(np.int64)
        yield Logged(x, z, mu, pmf, action, pmf[rows, action], cost)


_VALUES = np.array([f"{q / GRID:.2f}".rstrip("0").rstrip(".") if q else "0"
                    for q in range(int(-LIMIT * GRID), int(LIMIT * GRID) + 1)],
                   dtype=object)  # fmt: skip


def _value(q: np.ndarray) -> np.ndarray:
    return _VALUES[q + int(LIMIT * GRID)]


def _prob_text(p: np.ndarray) -> np.ndarray:
    return np.array([f"{v:.6g}" for v in p.tolist()], dtype=object)


def text_chunks(wd: World, examples: int, seed: int = 0, fmt: str = "adf") -> Iterator[bytes]:
    """Yield the data as chunks of whole examples (bytes), ``fmt`` ``adf`` or ``dsjson``."""
    if fmt not in ("adf", "dsjson"):
        raise ValueError(f"format must be 'adf' or 'dsjson', got {fmt!r}")
    k, d = wd.w.shape
    mm = wd.v.shape[0]
    for lg in log(wd, examples, seed):
        n = lg.x.shape[0]
        xs = _value(lg.x)  # object [n, D]
        zs = _value(lg.z)  # object [n, K, M]
        if fmt == "dsjson":
            yield _dsjson(lg, xs, zs, k, d, mm)
            continue
        shared = np.full(n, "shared |s", dtype=object)
        for j in range(d):
            shared = shared + f" x{j}:" + xs[:, j]
        act = np.empty((n, k), dtype=object)
        for a in range(k):
            col = np.full(n, f"|a id{a}", dtype=object)
            for j in range(mm):
                col = col + f" z{j}:" + zs[:, a, j]
            act[:, a] = col
        rows = np.arange(n)
        act[rows, lg.action] = ("0:" + lg.cost.astype(str).astype(object) + ":"
                                + _prob_text(lg.prob) + " " + act[rows, lg.action])  # fmt: skip
        lines = np.concatenate([shared[:, None], act, np.full((n, 1), "", dtype=object)], axis=1)
        yield ("\n".join(lines.ravel().tolist()) + "\n").encode()


def _dsjson(lg: Logged, xs: np.ndarray, zs: np.ndarray, k: int, d: int, mm: int) -> bytes:
    out = []
    for e in range(lg.x.shape[0]):
        a = int(lg.action[e])
        others = [i for i in range(k) if i != a]
        ids = [a + 1] + [i + 1 for i in others]
        probs = [float(lg.pmf[e, i]) for i in [a, *others]]
        shared = "{" + ",".join(f'"x{j}":{xs[e, j]}' for j in range(d)) + "}"
        multi = ",".join(
            '{"a":{"id":"' + str(i) + '"' + "".join(f',"z{j}":{zs[e, i, j]}' for j in range(mm))
            + "}}"
            for i in range(k)
        )  # fmt: skip
        label = {"_label_cost": int(lg.cost[e]), "_label_probability": probs[0],
                 "_label_Action": a + 1, "_labelIndex": a}  # fmt: skip
        head = json.dumps({**label, "a": ids, "p": probs})
        out.append(head[:-1] + ',"c":{"s":' + shared + ',"_multi":[' + multi + "]}}")
    return ("\n".join(out) + "\n").encode()


def read_predictions(path: str, actions: int) -> np.ndarray:
    """A VW ``-p`` file of a multiline run as pmfs ``[n, K]``: ``--cb_adf``'s chosen action
    (``2``) is probability 1 on it; ``--cb_explore_adf``'s ``a:p,a:p,...`` is that pmf.
    Examples end with a blank line; a tag after the prediction is ignored."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split()
            if not line:
                continue
            pmf = np.zeros(actions)
            cells = line[0].split(",")
            if len(cells) == 1 and ":" not in cells[0]:
                pmf[int(float(cells[0]))] = 1.0
            else:
                for cell in cells:
                    a, p = cell.split(":")
                    pmf[int(a)] = float(p)
            rows.append(pmf)
    return np.array(rows).reshape(len(rows), actions)


def predictions_cost(wd: World, examples: int, seed: int, pmf: np.ndarray) -> float:
    """The true expected cost of the pmfs ``pmf[n, K]`` on the first ``n`` generated
    examples: ``mean_e sum_a pmf[e, a] mu(x_e, a)``."""
    n = pmf.shape[0]
    if n > examples:
        raise ValueError(f"{n} predictions for {examples} examples")
    mu = np.concatenate([lg.mu for lg in log(wd, n, seed)]) if n else np.zeros((0, wd.actions))
    return float((pmf * mu).sum(axis=1).mean()) if n else float("nan")


def write(out: BinaryIO, chunks: Iterator[bytes]) -> int:
    n = 0
    for c in chunks:
        out.write(c)
        n += len(c)
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", default="-", help="path ('-' = stdout; .gz = gzip)")
    p.add_argument("--format", choices=["adf", "dsjson"], default="adf", dest="fmt")
    p.add_argument("--examples", type=int, default=10000)
    p.add_argument("--actions", type=int, default=8, help="K, actions per example")
    p.add_argument("--shared-features", type=int, default=6, help="D, shared features")
    p.add_argument("--action-features", type=int, default=3, help="M, features per action")
    p.add_argument("--epsilon", type=float, default=0.2, help="logging policy's exploration")
    p.add_argument("--noise", type=float, default=0.5,
                   help="sd of the logging model's error in each weight")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="the world: cost model and logger")
    p.add_argument("--log-seed", type=int,
                   help="the logged examples (default: --seed): a new log, same world")  # fmt: skip
    p.add_argument("--policy-cost", metavar="NAME",
                   help="print this policy's true expected cost and exit: logging, uniform, "
                        "optimal, noisy-greedy, eps-greedy:E")  # fmt: skip
    p.add_argument("--mc", type=int, default=1_000_000, help="contexts for --policy-cost")
    p.add_argument("--predictions", metavar="P",
                   help="print the true expected cost of VW's -p file P on these "
                        "examples")  # fmt: skip
    a = p.parse_args(argv)
    if a.examples < 0:
        p.error("--examples must be >= 0")
    log_seed = a.seed if a.log_seed is None else a.log_seed
    try:
        wd = world(a.seed, a.actions, a.shared_features, a.action_features, a.epsilon, a.noise)
        if a.policy_cost:
            mean, se = true_cost(wd, policy(a.policy_cost), a.mc)
            print(f"{mean:.6f} (Monte Carlo standard error {se:.6f}, {a.mc} contexts)")
            return 0
        if a.predictions:
            pmf = read_predictions(a.predictions, a.actions)
            cost = predictions_cost(wd, a.examples, log_seed, pmf)
            print(f"{cost:.6f} (true expected cost of {pmf.shape[0]} predictions)")
            return 0
    except ValueError as e:
        p.error(str(e))
    chunks = text_chunks(wd, a.examples, log_seed, a.fmt)
    if a.output == "-":
        write(sys.stdout.buffer, chunks)
        sys.stdout.buffer.flush()
    elif a.output.endswith(".gz"):
        with gzip.open(a.output, "wb", compresslevel=6) as f:
            write(f, chunks)
    else:
        with open(a.output, "wb") as f:
            write(f, chunks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
