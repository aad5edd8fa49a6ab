"""The multiline reductions: one module each, and the one table that names them.

A reduction owns its options (its ``OPTIONS``: its fields of :data:`Multiline`, the record
assembled here from every registered reduction's),
its label kind, its learner (the kernel entry for one batch of examples, its state over a
run), its outputs (``-p``, the progress table, VW's header lines) and its part of VW's model
options; :mod:`streamlearn.reductions.base` says the shape, ``csoaa_ldf.py`` is the worked
example.  :data:`REDUCTIONS` is the registry that the drivers (``run/multiline.py`` for
``sl vw``; ``run/bandit.py`` for the API and the server), VW's header
(``run/mlconsole.py``) and VW's model files (``run/mlmodel.py``) consult: adding a
reduction is a module here and its line below.

The kernels stay in :mod:`streamlearn.learners` (their numba caches are keyed by their
files); a reduction imports them when it learns.  Layer: above ``model``/``config``/
``io``/``learners``, below ``run``.
"""

from __future__ import annotations

from streamlearn.reductions import cb_adf, ccb, csoaa_ldf
from streamlearn.reductions.base import Reduction
from streamlearn.reductions.explore import over
from streamlearn.reductions.options import assemble

REDUCTIONS: dict[str, Reduction] = {
    r.name: r
    for r in (
        csoaa_ldf.REDUCTION,
        # the contextual bandits: cb_adf's learner, an explorer over it when one is asked
        over(cb_adf.REDUCTION),
        over(cb_adf.CB),
        over(cb_adf.CBIFY),
        over(ccb.REDUCTION),
        over(ccb.SLATES),
    )
}
"""Every multiline reduction by name (``Multiline.reduction``)."""

Multiline = assemble(r.options for r in REDUCTIONS.values())
"""What a multiline reduction stack asks for (from VW's options): the stack's fields
(:data:`streamlearn.reductions.options.STACK`) and every registered reduction's
``OPTIONS``, in one record (sl's model files keep it as ``meta["multiline"]``)."""


def reduction_of(ml) -> Reduction:  # noqa: ANN001 - a reductions.options.Multiline
    """The registry's entry of ``ml``'s reduction."""
    return REDUCTIONS[ml.reduction]


__all__ = ["REDUCTIONS", "Multiline", "Reduction", "reduction_of"]
