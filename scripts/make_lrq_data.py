#!/usr/bin/env python
"""Ratings for factorization machines (``--lrq um5``): ``rating |u uID |m mID [|c cN]``.

Each user and item has a hidden rank-``--rank`` vector; a rating is their dot product plus a
user bias, an item bias and noise, rounded to one decimal -- the shape of VW's movielens demo
(``demo/movielens``), at any size.  Users and items are Zipf-distributed (a few rate a lot).

Usage::

    python scripts/make_lrq_data.py --examples 4000000 -o /tmp/bench/ratings.vw   # ~100 MB
"""

from __future__ import annotations

import argparse

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--examples", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=50_000)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--rank", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    pu = rng.normal(0, 0.6, (a.users, a.rank))
    pm = rng.normal(0, 0.6, (a.items, a.rank))
    bu, bm = rng.normal(0, 0.5, a.users), rng.normal(0, 0.5, a.items)
    chunk = 500_000
    with open(a.output, "w") as out:
        for start in range(0, a.examples, chunk):
            n = min(chunk, a.examples - start)
            u = np.minimum(rng.zipf(1.3, n) - 1, a.users - 1)
            m = np.minimum(rng.zipf(1.2, n) - 1, a.items - 1)
            y = 3.0 + bu[u] + bm[m] + np.einsum("ij,ij->i", pu[u], pm[m]) + rng.normal(0, 0.3, n)
            y = np.clip(np.round(y, 1), 1.0, 5.0)
            c = rng.integers(0, 8, n)
            out.write("".join(f"{r} |u u{i} |m m{j} |c c{k}\n"
                              for r, i, j, k in zip(y.tolist(), u.tolist(), m.tolist(),
                                                    c.tolist(), strict=True)))  # fmt: skip


if __name__ == "__main__":
    main()
