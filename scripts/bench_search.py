#!/usr/bin/env python
"""Learning to search beside VW: ``sl vw --search K --search_task sequence`` against
``vw`` (the ``vowpalwabbit`` package's command line) on the same sequence file, whole
process each, best of ``--repeat`` interleaved pairs; the ratio and whether their
average losses agree.

The file (``--mb`` MB of sentences, written once into ``bench-data/`` unless ``--data``
is given): tokens of ten tags over a vocabulary of 5,000 words, each tag following from
its word six times in ten, sentences of 5 to 25 tokens, a blank line after each::

    python scripts/bench_search.py --mb 100            # the docs' figure
    python scripts/bench_search.py --mb 1 --repeat 3   # a quick look
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_pair import main  # noqa: E402 - beside this script


def write(path: Path, mb: float, seed: int = 0) -> None:
    r = random.Random(seed)
    want = int(mb * 1e6)
    size = 0
    with open(path, "w") as f:
        while size < want:
            lines = []
            for _ in range(r.randint(5, 25)):
                y = r.randint(1, 10)
                tag = y if r.random() < 0.6 else r.randint(1, 10)
                lines.append(f"{y} | w{r.randrange(5000)} p{tag} s{r.randrange(50)} "
                             f"c{r.randrange(20)}\n")  # fmt: skip
            lines.append("\n")
            text = "".join(lines)
            f.write(text)
            size += len(text)


if __name__ == "__main__":
    main(__doc__, write, "search", "--search 10 --search_task sequence")
