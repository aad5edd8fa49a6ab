"""Cost per example of the bandit API (docs/api.md): sl's ``Model.choose`` then
``Model.learn`` against VW's ``pyvw.Workspace("--cb_explore_adf --epsilon 0.1")``
``predict`` then ``learn`` of the same multiline example, and sl's batch form; then the
drop-in (``from streamlearn import vowpalwabbit``): the same ``Workspace`` calls through
sl, and a simple line's ``predict`` and ``learn`` through both.

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
    drop_in(exs, vw_t)


def _rounds(ws, exs: list[tuple]) -> float:  # noqa: ANN001 - a Workspace (VW's or sl's)
    t = time.perf_counter()
    for ctx, acts, k, c, p in exs:
        ws.predict(vw_lines(ctx, acts, None))
        ws.learn(vw_lines(ctx, acts, (k, c, p)))
    return (time.perf_counter() - t) / len(exs)


def cb_k_rounds(ws, n: int) -> float:  # noqa: ANN001 - a Workspace (VW's or sl's)
    """``--cb_explore 4`` (VW 9's ``--cb K``): predict an unlabeled line, learn it labeled."""
    r = random.Random(3)
    rows = [(f"| u{r.randint(0, 50)} v{r.randint(0, 9)}:0.5 t{r.randint(0, 5)}",
             r.randint(1, 4), r.choice([0.0, 1.0])) for _ in range(n)]  # fmt: skip
    t = time.perf_counter()
    for feats, a, c in rows:
        ws.predict(feats)
        ws.learn(f"{a}:{c}:0.25 {feats}")
    return (time.perf_counter() - t) / n


def drop_in(exs: list[tuple], vw_t: float) -> None:
    """The same rounds through ``streamlearn.vowpalwabbit.Workspace``; a simple line's."""
    import vowpalwabbit

    from streamlearn import vowpalwabbit as slvw

    args = "--cb_explore_adf --epsilon 0.1 --quiet"
    _rounds(slvw.Workspace(args), exs[:200])  # warm-up (the kernels load)
    ws_t = min(_rounds(slvw.Workspace(args), exs) for _ in range(3))
    vw_t = min([vw_t] + [_rounds(vowpalwabbit.Workspace(args), exs) for _ in range(2)])
    print(f"per example (Workspace predict+learn): VW {vw_t * 1e6:.1f} us, "
          f"sl's drop-in {ws_t * 1e6:.1f} us (x{ws_t / vw_t:.2f})")  # fmt: skip
    args = "--cb_explore 4 --quiet"
    cb_k_rounds(slvw.Workspace(args), 200)  # warm-up
    sl_k = min(cb_k_rounds(slvw.Workspace(args), len(exs)) for _ in range(3))
    vw_k = min(cb_k_rounds(vowpalwabbit.Workspace(args), len(exs)) for _ in range(3))
    print(f"per line (Workspace --cb_explore 4 predict+learn): VW {vw_k * 1e6:.1f} us, "
          f"sl's drop-in {sl_k * 1e6:.1f} us (x{sl_k / vw_k:.2f})")  # fmt: skip
    lines = [f"{1 if i % 3 else -1} |f a{i % 97} b{i % 13}:0.5 c{i % 7} |g x{i % 11}"
             for i in range(len(exs))]  # fmt: skip
    for name, call in (("predict", "predict"), ("learn", "learn")):
        best = {}
        for mod in (vowpalwabbit, slvw, vowpalwabbit, slvw):
            ws = mod.Workspace("--quiet")
            for line in lines[:200]:
                ws.learn(line)
            f = getattr(ws, call)
            t = time.perf_counter()
            for line in lines:
                f(line)
            dt = (time.perf_counter() - t) / len(lines)
            best[mod.__name__] = min(best.get(mod.__name__, dt), dt)
        a, b = best["vowpalwabbit"], best["streamlearn.vowpalwabbit"]
        print(f"per simple line ({name}): VW {a * 1e6:.1f} us, sl's drop-in {b * 1e6:.1f} us "
              f"(x{b / a:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
