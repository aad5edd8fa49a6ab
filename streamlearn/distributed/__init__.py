"""Data-parallel training on Dask (``sl train --dask``, ``Model.fit(..., dask=)``).

* :mod:`~streamlearn.distributed.driver` -- the driver: shards dealt to ranks,
  a task per rank and sync interval, averaging, the checks that every piece of
  input was learned exactly once.
* :mod:`~streamlearn.distributed.segment` -- one rank's work between two syncs
  (runs on a Dask worker, with the ordinary parser and kernels).
* :mod:`~streamlearn.distributed.mixing` -- the rows that travel and their
  weighted average (iterative parameter mixing).

Dask itself is an optional extra (``pip install 'streamlearn[dask]'``),
imported only when a run asks for it.  This layer sits above
:mod:`streamlearn.run` and below :mod:`streamlearn.api`.
"""

from streamlearn.distributed.driver import MISSING, connect, plan, require_dask, train

__all__ = ["MISSING", "connect", "plan", "require_dask", "train"]
