"""Generated logged-bandit and cost-sensitive data in VW's multiline text format (tests)."""

from __future__ import annotations

import random


def adf_log(seed: int, n: int = 200, kmin: int = 2, kmax: int = 8, cs: bool = False,
            unlabeled: float = 0.1) -> str:  # fmt: skip
    """``n`` examples: a shared line (80%) in namespace ``s``, 2..8 action lines in ``a``
    (and ``b`` half the time), one logged ``a:c:p`` (or ``k:cost`` on every line with
    ``cs``), a blank line after each."""
    r = random.Random(seed)
    out = []
    for _ in range(n):
        k = r.randint(kmin, kmax)
        if r.random() < 0.8:
            feats = " ".join(f"u{r.randint(0, 20)}:{r.choice([1, 0.5, 2, 1.25])}"
                             for _ in range(r.randint(1, 4)))  # fmt: skip
            out.append("shared |s " + feats)
        chosen = r.randrange(k) if r.random() > unlabeled else -1
        for a in range(k):
            feats = " ".join(f"f{r.randint(0, 30)}" for _ in range(r.randint(1, 4)))
            extra = f" |b g{r.randint(0, 5)}" if r.random() < 0.5 else ""
            if cs:
                lab = f"{a + 1}:{r.choice([0, 0.25, 1, 2])} "
            elif a == chosen:
                lab = f"{a}:{r.choice([0, 0.5, 1, -1, 2.5])}:{r.choice([0.1, 0.25, 0.5, 0.9, 1])} "
            else:
                lab = ""
            out.append(f"{lab}|a {feats} a{a}{extra}")
        out.append("")
    return "\n".join(out) + "\n"


def cb_log(seed: int, k: int, n: int = 300) -> str:
    """``n`` single-line ``--cb K`` examples (10% unlabeled)."""
    r = random.Random(seed)
    out = []
    for _ in range(n):
        a = r.randint(1, k)
        lab = (
            f"{a}:{r.choice([0, 1, 0.5, 2])}:{r.choice([0.25, 0.5, 1])} "
            if r.random() < 0.9
            else ""
        )
        g = f" |g y{r.randint(0, 3)}:{r.choice([0.5, 2])}" if r.random() < 0.5 else ""
        out.append(
            f"{lab}|f " + " ".join(f"x{r.randint(0, 40)}" for _ in range(r.randint(1, 5))) + g
        )
    return "\n".join(out) + "\n"
