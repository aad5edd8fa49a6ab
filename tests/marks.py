"""Which cases of a long parametrization the quick set runs (issue 45).

``python -m pytest`` (the README's line) runs ``-m 'not slow'``; CI runs the slow ones
too.  :func:`slow_except` keeps a few cases of a parametrization in the quick set and
marks the others slow, so that each behaviour keeps a quick test; the case ids do not
change.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

SLOW = pytest.mark.slow
_PARAM = type(pytest.param())


def slow_except(cases: Iterable, *keep: int, unpack: bool = False) -> list:
    """``cases`` with every case but those at the indices ``keep`` marked slow.

    ``unpack``: each case is a tuple of several arguments (a parametrization of more than
    one name); a case that is already a ``pytest.param`` keeps its marks and id."""
    out = []
    for i, case in enumerate(cases):
        if i in keep:
            out.append(case)
        elif isinstance(case, _PARAM):
            out.append(pytest.param(*case.values, marks=(*case.marks, SLOW), id=case.id))
        else:
            out.append(pytest.param(*(case if unpack else (case,)), marks=SLOW))
    return out
