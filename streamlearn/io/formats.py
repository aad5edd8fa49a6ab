"""The input formats: the code each has in a batch (``Batch.fmt``) and its name.

The block dispatcher (:func:`streamlearn.io.parse.parse_block_parts`) picks a parser by
code: the text kernels for VW, svmlight and CSV (:mod:`streamlearn.io.textparse`), the
JSON translator for JSON and DSJSON (:mod:`streamlearn.io.vwjson`).
"""

from __future__ import annotations

FMT_VW = 0
FMT_SVMLIGHT = 1
FMT_CSV = 2
FMT_JSON = 3
FMT_DSJSON = 4
FORMATS = {"vw": FMT_VW, "svmlight": FMT_SVMLIGHT, "csv": FMT_CSV, "json": FMT_JSON,
           "dsjson": FMT_DSJSON}
"""Input formats by name; JSON lines are translated into VW text (:mod:`streamlearn.io.vwjson`)."""
