"""streamlearn: a streaming learner for sparse linear models (``sl``).

The Python API is :class:`streamlearn.Model` (:mod:`streamlearn.api`), loaded on
first use so that the command line starts without it.
"""

from streamlearn._version import __version__

__all__ = ["Model", "__version__"]


def __getattr__(name: str):  # noqa: ANN202 - module attribute hook
    if name == "Model":
        from streamlearn.api import Model

        return Model
    raise AttributeError(f"module 'streamlearn' has no attribute {name!r}")
