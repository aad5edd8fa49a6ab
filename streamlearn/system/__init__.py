"""Plumbing: what every layer may use, and nothing that knows about learning.

* :mod:`~streamlearn.system.sources` -- what an input is before a byte of it
  is parsed (a file, stdin, a pipe or FIFO, its compression); no numba.
* :mod:`~streamlearn.system.outputs` -- atomic writes (temp file + rename),
  devices and FIFOs written through, the checks that no output destroys an input.
* :mod:`~streamlearn.system.locks` -- the lock of a model continued in place.
* :mod:`~streamlearn.system.process` -- signals, exit codes, closed standard streams.
* :mod:`~streamlearn.system.memory` -- tables that fail with a message, not an abort.
* :mod:`~streamlearn.system.text` -- input text shown on a terminal, escaped.
* :mod:`~streamlearn.system.jit`, :mod:`~streamlearn.system.jit_numba`,
  :mod:`~streamlearn.system.pages` -- the one place that decides numba's
  options, its disk cache and the quick loader of cached kernels;
  :mod:`~streamlearn.system.prebuilt` -- the kernels shipped compiled
  (``prebuilt/``, built by ``scripts/build_kernels.py``), loaded before
  anything is compiled; :mod:`~streamlearn.system.notices` -- who hears that a
  kernel is being compiled.

Modules here import only :mod:`streamlearn.errors` and each other.  This
``__init__`` imports nothing, so the CLI can look at its inputs before numba
is loaded.
"""
