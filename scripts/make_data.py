#!/usr/bin/env python
"""Generate realistic sparse data for tests, benchmarks and the shipped sample.

Features follow a Zipf law over a large vocabulary (a few very frequent
features, a long tail), each example holds about K distinct features, half of
the vocabulary is binary (written ``name``) and half real-valued (``name:1.23``,
log-normal values on a 0.01 grid).  A sparse ground-truth model (a fraction
``density`` of the vocabulary non-zero, plus a bias) gives the labels:

* ``--task logistic``: ``y = +1`` with probability ``sigmoid(w.x + b)``, else ``-1``;
* ``--task linear``: ``y = w.x + b + noise``;
* ``--task multiclass --classes K``: the class (1..K) of ``w.x + b + noise`` among K bins
  of equal counts (their edges the first chunk's quantiles), for ``--oaa K``,
  ``--log_multi K`` and the other reductions over classes.

The output is VW text (``label |f name[:value] ...``) or svmlight
(``label index:value ...``, indices sorted, as libsvm tools expect); numeric
names are the feature ids, string names are short pseudo-words derived from
them.  The same seed gives the same bytes.  Written with vectorised numpy, it
makes 100 MB in a few seconds.

Examples
--------
The shipped sample::

    python scripts/make_data.py --examples 8000 --features-per-example 12 \\
        --vocab 5000 --seed 1 -o data/sample.vw

Also importable: :func:`ground_truth` returns the model behind the labels.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

CHUNK = 8192  # examples generated at once (fixed: part of what a seed means)


@dataclass(frozen=True)
class GroundTruth:
    """The model behind the labels.

    Attributes
    ----------
    weights : float64[vocab]
        Weight of each feature id (mostly zeros).
    bias : float
        Added to every margin; learned by the constant feature.
    binary : bool[vocab]
        Whether a feature id is binary (value 1) or real-valued.
    """

    weights: np.ndarray
    bias: float
    binary: np.ndarray


def ground_truth(
    seed: int = 0, vocab: int = 1_000_000, density: float = 0.1, binary_fraction: float = 0.25
) -> GroundTruth:
    """The sparse model used by :func:`generate` with the same arguments.

    >>> gt = ground_truth(seed=3, vocab=1000, density=0.1)
    >>> int((gt.weights != 0).sum())
    100
    """
    rng = np.random.default_rng([seed, 1])
    w = np.zeros(vocab)
    nnz = max(1, int(round(density * vocab)))
    ids = rng.choice(vocab, size=nnz, replace=False)
    w[ids] = rng.normal(0.0, 1.0, size=nnz)
    binary = rng.random(vocab) < binary_fraction
    bias = float(rng.normal(-0.3, 0.2))
    return GroundTruth(w, bias, binary)


_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


def feature_names(ids: np.ndarray, names: str = "numeric") -> np.ndarray:
    """Names of feature ids as an object array of ``str``.

    ``numeric``: the id in decimal.  ``string``: a pseudo-word of 5 to 9
    lowercase letters; its length is ``5 + id % 5`` and its letters spell
    ``(id * 2654435761 + 12345) mod 26**length`` in base 26, a bijection for
    each length, so distinct ids below ``26**5`` get distinct words.

    >>> feature_names(np.array([0, 7, 7]), "string").tolist()
    ['vgsaa', 'qcvxwdi', 'qcvxwdi']
    """
    ids = np.asarray(ids, dtype=np.int64)
    if names == "numeric":
        return ids.astype(str).astype(object)
    if names != "string":
        raise ValueError(f"names must be 'numeric' or 'string', got {names!r}")
    length = 5 + ids % 5
    x = (ids * 2654435761 + 12345) % (26**length)
    out = np.zeros((ids.shape[0], 9), dtype=np.uint8)
    for pos in range(9):
        out[:, pos] = np.where(pos < length, _LETTERS[x % 26], 0)
        x //= 26
    return out.view("S9").ravel().astype(str).astype(object)


def _zipf_cdf(vocab: int, exponent: float) -> np.ndarray:
    p = 1.0 / np.arange(1, vocab + 1, dtype=np.float64) ** exponent
    c = np.cumsum(p)
    return c / c[-1]


_VALUE_STR = np.array([""] + [f":{q / 100:.2f}" for q in range(1, 10000)], dtype=object)


def generate(
    examples: int,
    features_per_example: int = 32,
    *,
    task: str = "logistic",
    names: str = "numeric",
    fmt: str = "vw",
    vocab: int = 1_000_000,
    zipf: float = 1.1,
    density: float = 0.1,
    binary_fraction: float = 0.25,
    noise: float = 0.1,
    namespace: str = "f",
    seed: int = 0,
    classes: int = 10,
) -> Iterator[bytes]:
    """Yield the data as chunks of whole lines (bytes).

    Parameters mirror the command-line options; see the module docstring.
    """
    if task not in ("logistic", "linear", "multiclass"):
        raise ValueError(f"task must be 'logistic', 'linear' or 'multiclass', got {task!r}")
    if task == "multiclass" and classes < 2:
        raise ValueError("classes >= 2 required")
    if fmt not in ("vw", "svmlight"):
        raise ValueError(f"format must be 'vw' or 'svmlight', got {fmt!r}")
    if features_per_example < 1 or vocab < 1 or examples < 0:
        raise ValueError("examples >= 0, features_per_example >= 1 and vocab >= 1 required")
    gt = ground_truth(seed, vocab, density, binary_fraction)
    rng = np.random.default_rng([seed, 2])
    cdf = _zipf_cdf(vocab, zipf)
    perm = rng.permutation(vocab)  # rank -> feature id
    name_cache: dict[int, str] = {}
    edges = None  # --task multiclass: the bins' inner edges (the first chunk's quantiles)
    k = features_per_example
    spread = k // 4
    done = 0
    while done < examples:
        m = min(CHUNK, examples - done)
        done += m
        counts = k + rng.integers(-spread, spread + 1, size=m)
        drawn = counts + counts // 2 + 2  # oversample: repeats are dropped below
        total = int(drawn.sum())
        ranks = np.searchsorted(cdf, rng.random(total), side="right")
        ids = perm[np.minimum(ranks, vocab - 1)]
        q = np.clip(np.rint(rng.lognormal(0.0, 0.75, size=total) * 100), 1, 9999).astype(np.int64)
        q[gt.binary[ids]] = 0  # 0 = binary feature (value 1)
        row = np.repeat(np.arange(m), drawn)
        # keep the first `counts` distinct features of each example, in drawn order
        key = row * np.int64(vocab) + ids
        _, first = np.unique(key, return_index=True)
        keep = np.sort(first)
        row = row[keep]
        starts = np.searchsorted(row, np.arange(m))
        keep = keep[np.arange(keep.shape[0]) - starts[row] < counts[row]]
        if fmt == "svmlight":  # libsvm tools expect increasing indices
            keep = keep[np.argsort(key[keep], kind="stable")]
        row, ids, q = key[keep] // vocab, ids[keep], q[keep]
        x = np.where(q == 0, 1.0, q / 100.0)
        margin = np.bincount(row, weights=gt.weights[ids] * x, minlength=m) + gt.bias
        if task == "logistic":
            y = np.where(rng.random(m) < 1.0 / (1.0 + np.exp(-margin)), 1, -1)
            labels = np.where(y > 0, "1", "-1").astype(object)
        elif task == "multiclass":
            y = margin + rng.normal(0.0, noise, size=m)
            if edges is None:
                edges = np.quantile(y, np.arange(1, classes) / classes)
            labels = (np.searchsorted(edges, y) + 1).astype(str).astype(object)
        else:
            y = margin + rng.normal(0.0, noise, size=m)
            labels = np.char.mod("%.4f", y).astype(object)
        uniq = np.unique(ids)
        missing = [int(i) for i in uniq if int(i) not in name_cache]
        if missing:
            if fmt == "svmlight":
                new = [str(i + 1) for i in missing]  # svmlight indices start at 1
            else:
                new = feature_names(np.array(missing, dtype=np.int64), names).tolist()
            name_cache.update(zip(missing, new, strict=True))
        tok_names = np.array([name_cache[i] for i in ids.tolist()], dtype=object)
        if fmt == "svmlight":
            vals = _VALUE_STR[q]
            vals[q == 0] = ":1"
            tokens = (tok_names + vals).tolist()
            head = [f"{lab} " for lab in labels.tolist()]
        else:
            tokens = (tok_names + _VALUE_STR[q]).tolist()
            head = [f"{lab} |{namespace} " for lab in labels.tolist()]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=m))]).tolist()
        lines = [head[i] + " ".join(tokens[bounds[i] : bounds[i + 1]]) + "\n" for i in range(m)]
        yield "".join(lines).encode()


def write(out: BinaryIO, chunks: Iterator[bytes]) -> int:
    n = 0
    for c in chunks:
        out.write(c)
        n += len(c)
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", default="-", help="path ('-' = stdout; .gz = gzip)")
    p.add_argument("--task", choices=["logistic", "linear", "multiclass"], default="logistic")
    p.add_argument("--classes", type=int, default=10, help="classes (--task multiclass)")
    p.add_argument("--names", choices=["numeric", "string"], default="numeric")
    p.add_argument("--format", choices=["vw", "svmlight"], default="vw", dest="fmt")
    p.add_argument("--examples", type=int, default=10000)
    p.add_argument("--features-per-example", type=int, default=32)
    p.add_argument("--vocab", type=int, default=1_000_000, help="number of distinct features")
    p.add_argument("--zipf", type=float, default=1.1, help="Zipf exponent of feature frequency")
    p.add_argument("--density", type=float, default=0.1, help="non-zero fraction of the model")
    p.add_argument("--binary-fraction", type=float, default=0.25, help="share of binary features")
    p.add_argument("--noise", type=float, default=0.1, help="label noise sd (--task linear)")
    p.add_argument("--namespace", default="f", help="VW namespace of the features")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    chunks = generate(
        a.examples,
        a.features_per_example,
        task=a.task,
        names=a.names,
        fmt=a.fmt,
        vocab=a.vocab,
        zipf=a.zipf,
        density=a.density,
        binary_fraction=a.binary_fraction,
        noise=a.noise,
        namespace=a.namespace,
        seed=a.seed,
        classes=a.classes,
    )
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
