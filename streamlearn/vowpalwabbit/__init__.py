"""VW 9's Python package, run by sl: ``from streamlearn import vowpalwabbit``.

A script written for ``import vowpalwabbit`` runs unchanged but for its import::

    from streamlearn import vowpalwabbit

    vw = vowpalwabbit.Workspace("--cb_explore_adf -q UA --quiet --epsilon 0.2")
    pmf = vw.predict("shared |User user=Tom\\n|Action article=politics\\n|Action article=music")
    vw.learn("shared |User user=Tom\\n0:-1:0.5 |Action article=politics\\n|Action article=music")
    vw.finish()

:class:`Workspace` takes VW's command line (a string, a list, or keyword options as VW's
does: ``Workspace(quiet=True, cb_explore_adf=True, epsilon=0.2, q="UA")``), read by the
library as ``sl vw`` reads it (:mod:`streamlearn.vwargs`); its learner stays live between
calls (:class:`~streamlearn.run.resident.Resident` for single-line examples,
:class:`~streamlearn.run.bandit.Bandit` for multiline ones), so each call is one kernel
call, with VW's numbers.  Predictions come back in VW's Python types (:class:`PredictionType`):
a float, a class, or a list by action index (a pmf, or scores).  ``docs/api.md`` says what
is covered and what is not.
"""

from __future__ import annotations

from streamlearn.vowpalwabbit import pyvw
from streamlearn.vowpalwabbit.types import LabelType, PredictionType
from streamlearn.vowpalwabbit.workspace import Example, Workspace

__all__ = ["Example", "LabelType", "PredictionType", "Workspace", "pyvw"]
