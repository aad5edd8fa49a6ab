"""One run: a training or scoring run over parsed batches, from options to outputs.

* :mod:`~streamlearn.run.options` -- the parts of a run's options that are not
  learning options: what to read (:class:`~streamlearn.run.options.Inputs`),
  where results go (:class:`~streamlearn.run.options.Outputs`).
* :mod:`~streamlearn.run.console` -- how progress is shown (stderr, the bar).
* :mod:`~streamlearn.run.driver` -- the one loop of every run's passes (a source of
  batches, a learning, a pass's end), VW's multiline holdout rule.
* :mod:`~streamlearn.run.train` -- ``sl train``'s driver: learners, passes, saving;
  :mod:`~streamlearn.run.learner` (the learner and its table),
  :mod:`~streamlearn.run.online` (the online passes), :mod:`~streamlearn.run.finite`
  (a diverged model refused).
* :mod:`~streamlearn.run.predict` -- ``sl predict``: scoring with a model.
* :mod:`~streamlearn.run.runner` -- what both share: batch checks, the parser
  thread, predictions files, one kernel call.
* :mod:`~streamlearn.run.passes` -- several passes over the input (the parsed
  cache, holdout, early termination).
* :mod:`~streamlearn.run.grid` -- a grid of configurations over one parse.
* :mod:`~streamlearn.run.fit` -- the batch learners' driver (cd, scd): the input
  in memory as columns, then epochs.
* :mod:`~streamlearn.run.report` -- the progressive table, the summary, the JSON report.
* :mod:`~streamlearn.run.inspect` -- ``sl inspect``: what a model file holds.
* VW's formats, for ``sl vw`` (``Outputs.vw_format``):
  :mod:`~streamlearn.run.vwformat` (``-p``, ``-r``, VW's numbers),
  :mod:`~streamlearn.run.vwreadable` (``--readable_model``, ``--invert_hash``),
  :mod:`~streamlearn.run.vwconsole` (stderr: the header and the summary),
  :mod:`~streamlearn.run.vwaudit` (``--audit``).
* Multiline examples (contextual bandits, cost-sensitive LDF), each reduction's learner
  and outputs being :mod:`streamlearn.reductions`' (the registry):
  :mod:`~streamlearn.run.multiline` (``sl vw``'s run: checks, model, outputs),
  :mod:`~streamlearn.run.mlpasses` (its passes: batches to the reduction's learner),
  :mod:`~streamlearn.run.mlsummary` (VW's summary, ``--report``),
  :mod:`~streamlearn.run.bandit` (``sl train --cb-adf``, the API's ``choose``/``learn``,
  the server's bandit), :mod:`~streamlearn.run.bandit_options`,
  :mod:`~streamlearn.run.cbify`, :mod:`~streamlearn.run.cblegacy`, :mod:`~streamlearn.run.mwt`
  (``--multiworld_test``, over the legacy driver), :mod:`~streamlearn.run.ccb` (its
  ``Live``: one CCB learner kept between calls, for the server and the API);
  VW's outputs for them: :mod:`~streamlearn.run.mlconsole` (stderr),
  :mod:`~streamlearn.run.mlmodel` (model files), :mod:`~streamlearn.run.mloutputs`
  (readable models, and the refusal of an output not written yet),
  :mod:`~streamlearn.run.mlaudit` (``--audit``), :mod:`~streamlearn.run.mlscores`
  (``--probabilities``, ``-r``), :mod:`~streamlearn.run.offpolicy` (``--ope``).
* :mod:`~streamlearn.run.serve` -- the server (VW's daemon protocol):
  :mod:`~streamlearn.run.serve_options`, :mod:`~streamlearn.run.serve_socket` (sockets,
  signals, the request protocol), :mod:`~streamlearn.run.serve_model` (the served model),
  :mod:`~streamlearn.run.serve_saves` (saves and reloads);
  :mod:`~streamlearn.run.resident` -- the API's live learner.

This layer uses :mod:`streamlearn.reductions`, :mod:`streamlearn.io`,
:mod:`streamlearn.learners`, :mod:`streamlearn.model` and :mod:`streamlearn.config` below it; the
distributed driver, the Python API and the CLI sit above it.
"""
