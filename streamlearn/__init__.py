"""streamlearn: a streaming learner for sparse linear models (``sl``)."""

__version__ = "0.1.0"
