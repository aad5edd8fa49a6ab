#!/usr/bin/env python
"""Write the example files the README's tour and the docs use, into ``data/``.

The repository ships ``data/sample.vw``; every other file a documented command
reads comes from here (synthetic, from :mod:`make_data`'s generator, the same
bytes for the same seed), in a few seconds::

    python scripts/tour_data.py            # data/today.vw.gz, data/clicks.vw, ...
    python scripts/tour_data.py -o /tmp/d  # elsewhere

=====================  ===========================================================
``today.vw.gz``        today's log: the sample's features, 4,000 new lines, gzipped
``logs/day1.gz`` ...   three days of such logs (``<(zcat data/logs/*.gz)``)
``events.vw``          20 lines to score as a (slow) stream
``clicks.vw``          users (``|u``), items (``|i``) and the hour (``|t``): a label
                       that depends on the user-item pair, for ``-q ui --ignore t``
``unscaled.vw``        30 real features whose scales run from 0.001 to 1,000
                       (as raw UCI data), for the default update's normalization
``train.vw``           20,000 examples of 32 features (Zipf), for grids and sweeps
``train.vw.gz``, ``test.vw``, ``day1.vw``, ``day2.vw``, ``more.vw``
                       the Python API page's files
``a.vw`` ... ``d.vw``  four shards, for ``sl train --dask``
``tagging.vw``         400 sentences of a toy tagger (determiners, nouns, verbs,
                       adjectives), a token per line, for ``sl vw --search``
``topics.vw``          600 documents of word counts drawn from three themes (sport,
                       cooking, computing), for ``sl vw --lda``
=====================  ===========================================================
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_data import generate  # noqa: E402 - beside this script


def _lines(examples: int, seed: int, features: int = 12, vocab: int = 5000) -> bytes:
    """Lines in the sample's feature space (namespace f, numeric names)."""
    return b"".join(generate(examples, features, vocab=vocab, seed=seed))


def clicks(n: int = 5000, seed: int = 8) -> bytes:
    """Users and items whose affinity (not either alone) decides the click."""
    rng = np.random.default_rng(seed)
    users, items = rng.integers(0, 200, n), rng.integers(0, 300, n)
    taste = np.random.default_rng(seed + 1).normal(size=(200, 4))
    kind = np.random.default_rng(seed + 2).normal(size=(300, 4))
    margin = np.einsum("ij,ij->i", taste[users], kind[items])
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-2 * margin)), 1, -1)
    hours = rng.integers(0, 24, n)
    return "".join(f"{y[k]} |u id{users[k]} |i id{items[k]} |t h{hours[k]}\n"
                   for k in range(n)).encode()  # fmt: skip


def unscaled(n: int = 2000, seed: int = 9) -> bytes:
    """Real features on scales from 1e-3 to 1e3 (names a0..a29), logistic labels."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 30))
    w = rng.normal(size=30) * (rng.random(30) < 0.4)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(z @ w))), 1, -1)
    scale = 10.0 ** np.linspace(-3, 3, 30)
    x = (z + 3.0) * scale  # positive, as raw measurements
    return "".join(f"{y[k]} |a " + " ".join(f"a{j}:{x[k, j]:.6g}" for j in range(30)) + "\n"
                   for k in range(n)).encode()  # fmt: skip


def tagging(n: int = 400, seed: int = 11) -> bytes:
    """Sentences of tagged tokens (1 determiner, 2 noun, 3 verb, 4 adjective), one per line
    with the word, its last two letters and its length, a blank line after each."""
    import random

    r = random.Random(seed)
    words = {1: ["the", "a", "this", "every"],
             2: ["man", "dog", "sandwich", "park", "idea", "ball"],
             3: ["ate", "saw", "liked", "threw", "found"], 4: ["big", "green", "old", "quick"]}
    out = []
    for _ in range(n):
        tags = [1, 4, 2, 3, 1, 2] if r.random() < 0.5 else [1, 2, 3, 1, 4, 4, 2]
        for t in tags[: r.randint(3, len(tags))]:
            w = r.choice(words[t])
            out.append(f"{t} | w={w} suf={w[-2:]} len={len(w)}\n")
        out.append("\n")
    return "".join(out).encode()


def topics(n: int = 600, seed: int = 5) -> bytes:
    """Documents of word counts (``|w word:count ...``), each mostly one of three themes
    (sport, cooking, computing) with a few words of the others; the theme is the tag."""
    import random

    r = random.Random(seed)
    themes = {"sport": "ball goal team match coach score league player pitch win".split(),
              "cooking": "oven salt pepper flour butter recipe bake sauce garlic onion".split(),
              "computing": "code bug kernel cache compile server memory thread disk loop".split()}
    out = []
    for _ in range(n):
        theme = r.choice(sorted(themes))
        counts: dict[str, int] = {}
        for _ in range(r.randint(30, 60)):
            pool = themes[theme] if r.random() < 0.95 else themes[r.choice(sorted(themes))]
            w = r.choice(pool)
            counts[w] = counts.get(w, 0) + 1
        out.append(f"{theme}|w " + " ".join(f"{w}:{c}" for w, c in counts.items()) + "\n")
    return "".join(out).encode()


def write(out: Path) -> list[Path]:
    files = {
        "today.vw.gz": gzip.compress(_lines(4000, 2), mtime=0),
        "logs/day1.gz": gzip.compress(_lines(2000, 3), mtime=0),
        "logs/day2.gz": gzip.compress(_lines(2000, 4), mtime=0),
        "logs/day3.gz": gzip.compress(_lines(2000, 5), mtime=0),
        "events.vw": _lines(20, 6),
        "clicks.vw": clicks(),
        "unscaled.vw": unscaled(),
        "train.vw": b"".join(generate(20000, 32, seed=1)),
        "train.vw.gz": gzip.compress(_lines(5000, 7), mtime=0),
        "test.vw": _lines(2000, 10),
        "day1.vw": _lines(1000, 11),
        "day2.vw": _lines(1000, 12),
        "more.vw": _lines(500, 13),
        **{f"{shard}.vw": _lines(2000, 20 + k) for k, shard in enumerate("abcd")},
        "tagging.vw": tagging(),
        "topics.vw": topics(),
    }
    written = []
    for name, data in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, default=Path("data"),
                    help="directory (default: data)")  # fmt: skip
    a = ap.parse_args()
    written = write(a.output)
    size = sum(p.stat().st_size for p in written)
    print(f"wrote {len(written)} files ({size / 1e6:.1f} MB) in {a.output}/", file=sys.stderr)


if __name__ == "__main__":
    main()
