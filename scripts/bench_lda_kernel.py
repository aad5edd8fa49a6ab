#!/usr/bin/env python
"""LDA's kernels alone (``learners/lda.py``'s ``learn_block``) over the parsed blocks of a
document file, as ``sl vw --lda K`` feeds them: the thread's CPU seconds of the kernel
calls (best and median of ``--repeat``; the parse done once, beforehand) and a digest of
every float the run gives (each row's γ and score, the settled table's λ and times, the
topic totals), so that a faster kernel can be shown to compute the same numbers::

    python scripts/bench_lda.py --mb 20                  # writes bench-data/lda-20mb.vw
    python scripts/bench_lda_kernel.py bench-data/lda-20mb.vw --repeat 5
    python scripts/bench_lda_kernel.py bench-data/lda-20mb.vw --k 20 --minibatch 256 --D 1e5

The whole minibatches of each block are learned (a block's last partial minibatch is
dropped, unlike the driver, which carries it into the next block).
"""

from __future__ import annotations

import argparse
import hashlib
import time
from types import SimpleNamespace

import numpy as np


def blocks(path: str, bits: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each block of ``path`` parsed: (indptr, slots, counts) of its usable rows."""
    from streamlearn.io.interactions import compile_interactions
    from streamlearn.io.parse import FMT_VW, parse_block
    from streamlearn.io.reader import iter_blocks

    out = []
    for block in iter_blocks([path]):
        b = parse_block(block, FMT_VW, bits, False, compile_interactions())
        rows = np.flatnonzero(b.status == 0)
        lo, hi = b.indptr[rows].astype(np.int64), b.indptr[rows + 1].astype(np.int64)
        lens = hi - lo
        at = np.repeat(lo - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(
            int(lens.sum()))  # fmt: skip
        ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        out.append((ptr, b.indices[at].astype(np.int64) & ((1 << bits) - 1),
                    b.values[at].astype(np.float32)))  # fmt: skip
    return out


def main() -> None:
    from streamlearn.run.lda import State

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--bits", "-b", type=int, default=16)
    ap.add_argument("--minibatch", type=int, default=1)
    ap.add_argument("--D", type=float, default=10000.0)
    ap.add_argument("--math-mode", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    parsed = blocks(a.path, a.bits)
    ml = SimpleNamespace(lda=a.k, lda_minibatch=a.minibatch, lda_D=a.D, lda_epsilon=0.001,
                         lda_math_mode=a.math_mode, lda_alpha=None, lda_rho=None)  # fmt: skip
    cfg = SimpleNamespace(bits=a.bits, initial_t=0.0, learning_rate=0.5, power_t=0.5)
    times = []
    for r in range(a.repeat + 1):  # (the first: the kernels loaded or compiled)
        st = State(ml, cfg, None)
        h = hashlib.sha256()
        spent = 0.0
        for ptr, slots, xs in parsed:
            whole = (ptr.shape[0] - 1) // a.minibatch * a.minibatch
            t = time.thread_time()
            gammas, scores, _, _ = st.learn(ptr[: whole + 1], slots[: ptr[whole]],
                                            xs[: ptr[whole]], a.minibatch)  # fmt: skip
            spent += time.thread_time() - t
            h.update(gammas.tobytes())
            h.update(scores.tobytes())
        st.settle()
        h.update(np.ascontiguousarray(st.table[:, : a.k + 1]).tobytes())
        h.update(st.total.tobytes() if st.total is not None else b"")
        if r:
            times.append(spent)
        print(f"run {r}: kernels {spent:.3f} s  digest {h.hexdigest()[:16]}", flush=True)
    times.sort()
    print(f"best {times[0]:.3f} s  median {times[len(times) // 2]:.3f} s")


if __name__ == "__main__":
    main()
