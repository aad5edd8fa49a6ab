"""Learner registry: an algorithm name and its options resolve to one variant.

Each module in this package exposes the same kernels (see
:mod:`streamlearn.learners.base`) and a :class:`~streamlearn.learners.base.LearnerSpec`.
The driver resolves the variant once, before the loop, and never branches on
the algorithm inside it.
"""

from __future__ import annotations

from streamlearn.learners.base import LearnerSpec

ALGORITHMS = ("sgd", "tg")


def resolve(algo: str, l1: float = 0.0, l2: float = 0.0) -> LearnerSpec:
    """The kernel variant that runs ``algo`` with these regularisers."""
    if algo == "sgd":
        if l1 == 0.0 and l2 == 0.0:
            from streamlearn.learners import sgd

            return sgd.SPEC
        if l2 == 0.0:
            # ℓ1-clipped SGD is truncated gradient with K = 1 and θ = ∞
            # (the caller sets period and theta accordingly).
            from streamlearn.learners import truncated

            return truncated.SPEC
        raise ValueError("sgd with --l2 is not available yet")
    if algo == "tg":
        from streamlearn.learners import truncated

        return truncated.SPEC
    raise ValueError(f"unknown algorithm {algo!r}")
