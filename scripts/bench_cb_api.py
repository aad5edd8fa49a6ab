"""Cost per example of the bandit API (docs/api.md): sl's ``Model.choose`` then
``Model.learn`` against VW's ``pyvw.Workspace("--cb_explore_adf --epsilon 0.1")``
``predict`` then ``learn`` of the same multiline example, and sl's batch form.

Usage: python scripts/bench_cb_api.py [N]    (N examples, default 2000)
"""

from __future__ import annotations

import random
import sys
import time


def examples(n: int) -> list[tuple]:
    r = random.Random(1)
    out = []
    for _ in range(n):
        ctx = f"|s u{r.randint(0, 50)} v{r.randint(0, 9)}:0.5 t{r.randint(0, 5)}"
        acts = [f"|a f{r.randint(0, 30)} g{r.randint(0, 30)} a{k}" for k in range(4)]
        out.append((ctx, acts, r.randrange(4), r.choice([0.0, 1.0]), 0.25))
    return out


def vw_lines(ctx: str, acts: list[str], label: tuple | None) -> list[str]:
    lines = ["shared " + ctx, *acts]
    if label is not None:
        k, c, p = label
        lines[1 + k] = f"0:{c}:{p} " + acts[k]
    return lines


def main() -> None:
    from vowpalwabbit import pyvw

    from streamlearn import api

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    exs = examples(n)
    vw = pyvw.Workspace("--cb_explore_adf --epsilon 0.1 --quiet")
    m = api.Model(cb_adf=True, explore="epsilon", epsilon=0.1)
    for ctx, acts, k, c, p in exs[:200]:  # warm-up (sl: the kernels load)
        vw.predict(vw_lines(ctx, acts, None))
        vw.learn(vw_lines(ctx, acts, (k, c, p)))
        m.choose(ctx, acts)
        m.learn(ctx, acts, k, c, p)
    vw.finish()
    vw = pyvw.Workspace("--cb_explore_adf --epsilon 0.1 --quiet")
    t = time.perf_counter()
    for ctx, acts, k, c, p in exs:
        vw.predict(vw_lines(ctx, acts, None))
        vw.learn(vw_lines(ctx, acts, (k, c, p)))
    vw_t = (time.perf_counter() - t) / n
    vw.finish()
    m = api.Model(cb_adf=True, explore="epsilon", epsilon=0.1)
    t = time.perf_counter()
    for ctx, acts, k, c, p in exs:
        m.choose(ctx, acts)
        m.learn(ctx, acts, k, c, p)
    sl_t = (time.perf_counter() - t) / n
    cols = list(zip(*exs, strict=True))
    b = api.Model(cb_adf=True, explore="epsilon", epsilon=0.1)
    t = time.perf_counter()
    b.choose(list(cols[0]), list(cols[1]))
    b.learn(list(cols[0]), list(cols[1]), list(cols[2]), list(cols[3]), list(cols[4]))
    b_t = (time.perf_counter() - t) / n
    print(f"per example (choose+learn): VW pyvw {vw_t * 1e6:.1f} us, sl {sl_t * 1e6:.1f} us "
          f"(x{sl_t / vw_t:.2f}), sl batch {b_t * 1e6:.1f} us (x{b_t / vw_t:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
