#!/usr/bin/env python
"""Time the two ways sl reads contextual-bandit JSON records, block by block, in one process.

* **direct**: :func:`streamlearn.io.jsondirect.read_examples`, the records straight into
  the parser's rows and labels;
* **text**: :func:`streamlearn.io.vwjson.json_block` (the records as VW text) then
  :func:`streamlearn.io.multiline.parse_examples`, the path a block with a line for the
  Python reader takes.

The file is cut into blocks as ``sl`` reads it (``io/reader.py``'s ``BLOCK_SIZE``, at line
ends); each round reads every block both ways and the minimum per way is reported::

    python scripts/make_cb_data.py --examples 40000 --actions 8 --seed 1 --format dsjson -o ds.json
    python scripts/bench_json.py ds.json --rounds 8
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streamlearn.io.batch import Block  # noqa: E402
from streamlearn.io.interactions import compile_interactions  # noqa: E402
from streamlearn.io.jsondirect import read_examples  # noqa: E402
from streamlearn.io.labels import LABEL_CB  # noqa: E402
from streamlearn.io.multiline import parse_examples  # noqa: E402
from streamlearn.io.reader import BLOCK_SIZE  # noqa: E402
from streamlearn.io.vwjson import json_block  # noqa: E402


def blocks_of(data: bytes) -> list[Block]:
    """``data`` in blocks of about :data:`BLOCK_SIZE` bytes, cut at line ends."""
    out, s, line = [], 0, 1
    while s < len(data):
        e = len(data) if s + BLOCK_SIZE >= len(data) else data.rfind(b"\n", s, s + BLOCK_SIZE) + 1
        if e <= s:  # (a line longer than a block)
            e = data.find(b"\n", s) + 1 or len(data)
        n = data.count(b"\n", s, e)
        out.append(Block(np.frombuffer(data[s:e], dtype=np.uint8).copy(), "bench", line,
                         newlines=n))  # fmt: skip
        line += n
        s = e
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="a JSON or DSJSON file of contextual-bandit records")
    ap.add_argument("--json", action="store_true", help="VW's --json lines (default: --dsjson)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--bits", type=int, default=18)
    a = ap.parse_args()
    inter = dataclasses.replace(compile_interactions(vw_numbers=True), label_kind=LABEL_CB)
    dsjson = not a.json
    blocks = blocks_of(Path(a.path).read_bytes())
    best = {"direct": float("inf"), "text": float("inf")}
    direct_blocks = 0
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        got = [read_examples(b, dsjson, a.bits, True, inter) for b in blocks]
        t1 = time.perf_counter()
        for b in blocks:
            text, _ = json_block(b, dsjson, inter)
            parse_examples(text, a.bits, True, inter, LABEL_CB)
        t2 = time.perf_counter()
        best["direct"] = min(best["direct"], t1 - t0)
        best["text"] = min(best["text"], t2 - t1)
        direct_blocks = sum(g is not None for g in got)
    size = sum(b.data.shape[0] for b in blocks) / 1e6
    print(f"{a.path}: {size:.1f} MB in {len(blocks)} blocks, {direct_blocks} of them read "
          "directly (a run reads the others by the text path)")  # fmt: skip
    for way, t in best.items():
        print(f"{way:>7}: {t:.3f} s ({size / t:.0f} MB/s)")
    print(f"direct / text: {best['direct'] / best['text']:.2f}")


if __name__ == "__main__":
    main()
