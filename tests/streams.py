"""Random sparse streams and a driver for lazy kernels, shared by the learner tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.learners.base import LearnerSpec, new_rows, new_stats
from streamlearn.run.runner import run_kernel


@dataclass
class Stream:
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    bases: np.ndarray
    status: np.ndarray
    d: int

    @property
    def n(self) -> int:
        return self.labels.shape[0]

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.indptr[i], self.indptr[i + 1]
        return self.indices[lo:hi], self.values[lo:hi]

    def slice(self, a: int, b: int) -> Stream:
        lo, hi = self.indptr[a], self.indptr[b]
        return Stream(
            self.indptr[a : b + 1] - lo, self.indices[lo:hi], self.values[lo:hi],
            self.labels[a:b], self.weights[a:b], self.bases[a:b], self.status[a:b], self.d,
        )


def random_stream(
    seed: int,
    n: int = 300,
    bits: int = 6,
    nnz: int = 5,
    classification: bool = True,
    importance: bool = True,
    duplicates: bool = True,
    unlabeled: bool = True,
) -> Stream:
    """A stream over ``2**bits`` slots where some slots are hot and others rare.

    Rows may repeat a slot (duplicates count twice), carry importance weights,
    bases, and a few rows are unlabeled or malformed (status != 0).
    """
    rng = np.random.default_rng(seed)
    d = 1 << bits
    counts = rng.integers(1, nnz + 1, size=n)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    total = int(indptr[-1])
    # Zipf-like popularity: low slots hot, high slots rare.
    ranks = np.minimum(rng.zipf(1.3, size=total) - 1, d - 1)
    perm = rng.permutation(d)
    indices = perm[ranks].astype(np.uint32)
    if duplicates and total > 2:
        dup = rng.random(total) < 0.05
        indices[1:][dup[1:]] = indices[:-1][dup[1:]]
    values = rng.normal(size=total) * rng.choice([0.1, 1.0, 3.0], size=total)
    if classification:
        labels = rng.choice([-1.0, 1.0], size=n)
    else:
        labels = rng.normal(size=n) * 2.0
    if unlabeled:
        labels[rng.random(n) < 0.03] = np.nan
    weights = rng.choice([0.5, 1.0, 2.0], size=n) if importance else np.ones(n)
    bases = np.where(rng.random(n) < 0.1, rng.normal(size=n) * 0.1, 0.0)
    status = np.where(rng.random(n) < 0.02, 6, 0).astype(np.int32)
    return Stream(indptr, indices, values, labels, weights, bases, status, d)


def run_lazy(
    spec: LearnerSpec, params: np.ndarray, stream: Stream, loss_id: int, chunks: int = 3
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train a lazy kernel over ``stream`` in a few batches.

    Returns (weights brought current over every slot, predictions, stats).
    """
    bits = int(np.log2(stream.d))
    table = spec.new_table(bits)
    gstate = spec.init_gstate(params)
    stats = new_stats()
    rows = new_rows()
    preds = np.empty(stream.n)
    cuts = np.linspace(0, stream.n, chunks + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        s = stream.slice(a, b)
        preds[a:b] = run_kernel(spec.train_batch, table, gstate, params, loss_id, s, stats, rows)
    if spec.finish is not None:
        spec.finish(table, gstate, params)
    w = np.empty(stream.d)
    spec.current_weights(table, gstate, params, np.arange(stream.d, dtype=np.uint32), w)
    return w, preds, stats


def resume_is_exact(spec: LearnerSpec, params: np.ndarray, stream: Stream, loss_id: int,
                    config) -> None:  # noqa: ANN001 - a TrainConfig
    """Learning ``stream`` in one run equals learning its first half, saving the model
    (through the model file's bytes), loading it and learning the second half: the
    same predictions and the same table, bit for bit."""
    from streamlearn import model as model_io

    bits = int(np.log2(stream.d))
    half = stream.n // 2

    def fresh():
        return spec.new_table(bits), spec.init_gstate(params), new_stats(), new_rows()

    table, gstate, stats, rows = fresh()
    whole = run_kernel(spec.train_batch, table, gstate, params, loss_id, stream, stats, rows)
    t1, g1, s1, r1 = fresh()
    first = run_kernel(spec.train_batch, t1, g1, params, loss_id, stream.slice(0, half), s1, r1)
    saved = model_io.from_training(config, spec, t1, g1, s1, params)
    m = model_io.decode(model_io._encode(saved))
    t2, g2 = m.table(spec.fresh, spec.dtype), m.gstate.copy()
    second = run_kernel(spec.train_batch, t2, g2, params, loss_id, stream.slice(half, stream.n),
                        m.stats.copy(), new_rows())  # fmt: skip
    np.testing.assert_array_equal(np.concatenate([first, second]), whole)
    np.testing.assert_array_equal(t2, table)
    np.testing.assert_array_equal(g2, gstate)
