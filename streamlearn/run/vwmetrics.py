"""VW's ``--extra_metrics FILE``: a run's counters as one JSON object.

VW 9.11 writes the file when the run ends: its ``metrics`` reduction counts the calls
of ``learn`` and ``predict`` at the top of the stack (``"extra_metrics":
{"total_learn_calls", "total_predict_calls"}``), and each reduction below adds its own
object (``shared_feature_merger``, ``cb_explore_adf_*``), as does ``--dsjson``'s parser
and the logger (``total_log_calls``).  VW writes no fixed schema; sl writes the keys
it knows -- the call counts -- with VW's numbers and in VW's order (each object's
integers, then floats, strings and objects, each group sorted by key).

What VW counts (checked against VW 9.11.9):

* a single-line run learns each labeled example that is not held out, unless it only
  tests (``-t``); every other example is a ``predict`` call.  A reduction whose
  ``learn`` does not return its prediction (``--oaa``) is also asked to ``predict``
  each example it learns.
* a multiline run (``--cb_adf``, ``--cb_explore_adf``, ``--csoaa_ldf``, ``--cb K``)
  calls ``learn`` on every example of every pass when it trains, labeled or not, held
  out or not; ``--cb_explore_adf`` and ``--csoaa_ldf`` ``predict`` each one first.
"""

from __future__ import annotations

import json

from streamlearn.system.outputs import write_text


def single_line(report: dict, *, test_only: bool, oaa: bool, csoaa: bool) -> dict:
    """The calls of a single-line run, from its report (:func:`run.report.summary`)."""
    n = int(report.get("examples", 0))
    learned = 0
    if not test_only:
        learned = n - int(report.get("unlabeled_examples", 0))
        learned -= int(report.get("pooled_holdout_examples", report.get("holdout_examples", 0)))
    predicted = n - learned + (learned if oaa and not csoaa else 0)
    return {"extra_metrics": {"total_learn_calls": learned, "total_predict_calls": predicted}}


def multiline(summary: dict, *, test_only: bool, predicts_first: bool) -> dict:
    """The calls of a multiline run, from its summary (:func:`run.multiline.run`)."""
    n = int(summary.get("examples", 0))
    learned = 0 if test_only else n
    predicted = n if (test_only or predicts_first) else 0
    return {"extra_metrics": {"total_learn_calls": learned, "total_predict_calls": predicted}}


def _ordered(obj: dict) -> dict:
    """VW's order: integers, floats, strings, booleans, then objects, each sorted by key."""

    def group(v) -> int:  # noqa: ANN001
        if isinstance(v, bool):
            return 3
        if isinstance(v, int):
            return 0
        if isinstance(v, float):
            return 1
        if isinstance(v, str):
            return 2
        return 4

    keys = sorted(obj, key=lambda k: (group(obj[k]), k))
    return {k: _ordered(obj[k]) if isinstance(obj[k], dict) else obj[k] for k in keys}


def text(metrics: dict) -> str:
    """The file's text: compact JSON as VW's writer makes it (no newline at the end).

    >>> text({"extra_metrics": {"total_predict_calls": 0, "total_learn_calls": 3}})
    '{"extra_metrics":{"total_learn_calls":3,"total_predict_calls":0}}'
    """
    return json.dumps(_ordered(metrics), separators=(",", ":"))


def write(path: str, metrics: dict) -> None:
    """Write the metrics file (atomically; the path was checked with the run's outputs)."""
    write_text(path, text(metrics), "extra metrics")
