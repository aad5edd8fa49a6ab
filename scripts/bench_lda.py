#!/usr/bin/env python
"""LDA beside VW: ``sl vw --lda K`` against ``vw`` (the ``vowpalwabbit`` package's command
line) on the same document file, whole process each, best of ``--repeat`` interleaved pairs;
the ratio and whether their average losses agree.

The file (``--mb`` MB of documents, written once into ``bench-data/`` unless ``--data`` is
given): word counts over a vocabulary of 20,000 words drawn from 50 hidden topics (Zipf
within each), 20 to 200 distinct words a document, ``| id:count ...`` as VW's wiki files::

    python scripts/bench_lda.py --mb 100               # the docs' figure
    python scripts/bench_lda.py --mb 1 --repeat 3      # a quick look
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_pair import main  # noqa: E402 - beside this script


def write(path: Path, mb: float, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    vocab, topics = 20000, 50
    perms = [rng.permutation(vocab) for _ in range(topics)]
    want = int(mb * 1e6)
    size = 0
    with open(path, "w") as f:
        while size < want:
            lines = []
            for _ in range(200):
                mix = rng.dirichlet(np.full(topics, 0.1))
                n = int(rng.integers(20, 200))
                picks = rng.choice(topics, size=n * 3, p=mix)
                words = np.array([perms[t][min(int(rng.zipf(1.3)) - 1, vocab - 1)]
                                  for t in picks])  # fmt: skip
                ids, counts = np.unique(words, return_counts=True)
                pairs = zip(ids, counts, strict=True)
                lines.append("| " + " ".join(f"{i}:{c}" for i, c in pairs) + "\n")
            text = "".join(lines)
            f.write(text)
            size += len(text)


if __name__ == "__main__":
    main(__doc__, write, "lda", "--lda 20 --lda_D 100000 --minibatch 256 -b 16")
