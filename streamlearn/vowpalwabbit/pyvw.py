"""VW 9's ``vowpalwabbit.pyvw``, the module its older scripts and tutorials import
(``from vowpalwabbit import pyvw``; ``pyvw.Workspace(...)``): the same names as the package's
own, and ``vw``, VW 8's name of the workspace, which VW 9 keeps with a deprecation warning.
"""

from __future__ import annotations

import warnings

from streamlearn.vowpalwabbit.types import LabelType, PredictionType
from streamlearn.vowpalwabbit.workspace import Example, Workspace

__all__ = ["Example", "LabelType", "PredictionType", "Workspace", "vw"]


class vw(Workspace):  # noqa: N801 - VW's name
    """VW 8's name of :class:`Workspace` (deprecated in VW 9, as here)."""

    def __init__(self, *args: object, **kw: object) -> None:
        warnings.warn("vw has been renamed to Workspace, the alias will be removed in the "
                      "future", DeprecationWarning, stacklevel=2)  # fmt: skip
        super().__init__(*args, **kw)
