"""A bandit model served (:mod:`streamlearn.run.serve`): requests are examples, answered with
VW's ``-p`` text for each (:class:`BanditServed`), learned one request after another as one
``sl vw`` pass learns them.  The learner is :class:`streamlearn.run.bandit.Bandit`."""

from __future__ import annotations

import numpy as np

from streamlearn import model as model_io
from streamlearn.config import TrainConfig
from streamlearn.errors import UsageError
from streamlearn.io.batch import Block
from streamlearn.learners import cb_adf
from streamlearn.reductions import Multiline
from streamlearn.run.bandit import Bandit, is_bandit
from streamlearn.run.mlpasses import prepare


class BanditServed:
    """The server's model (:mod:`streamlearn.run.serve`) when it is a bandit: requests are
    multiline examples, each answered once its blank line has come, with VW's ``-p`` text
    for it (``--explore``: the pmf line, then a blank line, as VW's daemon answers
    ``--cb_explore_adf``), in order, per connection; learning (no ``-t``) the labeled ones.
    A malformed example is answered ``nan`` and a blank line (the connection stays)."""

    single = False
    """``--cb K``: each request line is an example, answered by one line (and a blank one)."""

    def __init__(self, m: model_io.Model | None, config: TrainConfig, opts, console,
                 bandit: dict | None = None, learner: Bandit | None = None) -> None:  # noqa: ANN001  # fmt: skip
        if learner is not None:  # (VW's model file: Bandit.from_vw)
            b = learner
        elif is_bandit(m):
            b = Bandit.from_model(m, config, bandit or {})
        elif m is not None:
            raise UsageError("the model is not a bandit's: serve it without bandit options")
        elif not bandit or not bandit.get("reduction"):
            raise UsageError("a bandit server needs --cb-adf or --csoaa-ldf (or a bandit model)")
        else:
            b = Bandit(config, Multiline(**bandit))
        if b.ml.reduction == "cb" and getattr(b.ml, "legacy", False):
            raise UsageError("serving --cb K --cb_force_legacy: not yet (VW 9's --cb K, "
                             "without it, is served)")  # fmt: skip
        self.single = b.ml.reduction == "cb"
        self.bandit = b
        self.config = b.config if learner is not None else config
        self.opts = opts
        self.console = console
        self.learner = b if opts.learn else None
        self.guard = False
        """One example's step puts back an update that leaves the model non-finite
        (``Bandit.line``'s ``guard``: a learning server's, serve_model.py)."""
        self.model = m
        self.carry: dict[str, tuple[bytes, int]] = {}
        """Per connection, the lines of an example not ended yet, and its first line."""

    def warm_up(self) -> None:
        """Compile or load the kernels with one unlabeled example (the counts put back)."""
        with self.bandit.uncounted():
            self._run(b"|s w\n" if self.single else b"shared |s w\n|a x\n|a y\n\n",
                      "<warm-up>", 1)  # fmt: skip

    def answer(self, data: bytes, source: str, first_line: int,
               long_lines: tuple = ()) -> tuple[bytes, int, int]:  # fmt: skip
        """The answers of the examples ``data`` completes (whole lines); their number and
        the malformed ones'."""
        from streamlearn.io.multiline import last_example_end

        carry, start = self.carry.pop(source, (b"", first_line))
        buf = carry + data if carry else data
        if self.single:  # (whole lines)
            end = buf.rfind(b"\n") + 1 or -1
        else:
            end = int(last_example_end(np.frombuffer(buf, dtype=np.uint8)))
        if end < 0:
            if len(buf) > self.opts.max_line_bytes * 64:
                self.console.warn_once("long example", "sl serve: a multiline example of more "
                                       "than 64 x --max-line-bytes dropped")  # fmt: skip
                return b"nan\n\n", 1, 1
            self.carry[source] = (buf, start)
            return b"", 0, 0
        done, rest = buf[:end], buf[end:]
        if rest:
            self.carry[source] = (rest, start + done.count(b"\n"))
        return self._run(done, source, start)

    def _run(self, data: bytes, source: str, start: int) -> tuple[bytes, int, int]:
        from streamlearn.io.multiline import cross_merged, merge_shared, parse_examples

        b = self.bandit
        if self.single:
            return self._lines(data, source, start)
        cfg = b.config
        m = 1
        part = None
        if data.endswith(b"\n\n") and b"\n\n" not in data[:-1]:  # (one example: one request)
            seen = b.line(data[:-1], True, start, self.guard)  # (one kernel call)
            if seen is not None:
                return "".join(b.lines(seen, vw=True)).encode(), 1, 0
            part = b.one_example(data[:-1], start)
        one = part is not None  # (its arrays kept between calls: Bandit.run's one)
        if part is None:
            block = Block(np.frombuffer(bytearray(data), dtype=np.uint8), source, start, live=True)
            ex = parse_examples(block, cfg.bits, cfg.constant, b.parse_inter, b.kind)
            m = ex.m
            if m == 0:
                return b"", 0, 0
            part = prepare(b.ml, ex, cross_merged(merge_shared(ex), b.full, cfg.bits))
        for msg in part.bad[:3]:
            self.console.warn_once(f"bad {msg}", f"sl serve: {msg}")
        step = b.run(part, one=one)
        lines = b.lines(step, vw=True)
        good = part.mg.example
        if good.shape[0] == m:
            return "".join(lines).encode(), m, 0
        # a malformed example's answer in its place
        per: list[str] = []
        at = 0
        i = 0
        for e in range(m):
            if i < good.shape[0] and good[i] == e:
                n = 1 if step.pred is None or self.bandit.ml.csoaa_rank else \
                    int(part.mg.act_ptr[i + 1] - part.mg.act_ptr[i]) + 1  # fmt: skip
                per.extend(lines[at : at + n])
                at += n
                i += 1
            else:
                per.append("nan\n\n")
        return "".join(per).encode(), m, m - good.shape[0]

    def _lines(self, data: bytes, source: str, start: int) -> tuple[bytes, int, int]:
        """``--cb K``'s requests: each non-blank line an example, answered with VW's ``-p``
        for it (the action, or with an explorer the pmf, then a blank line: VW's --cb K is
        its cb_adf), ``nan`` and a blank line for a malformed one."""
        b = self.bandit
        m = sum(1 for line in data.split(b"\n") if line.strip(b" \t\r"))
        if m == 0:
            return b"", 0, 0
        part = seen = None
        if m == 1 and data.count(b"\n") == 1 and data.endswith(b"\n"):  # (one request)
            seen = b.line(data, True, start, self.guard)  # (as run: the params say test_only)
            part = seen.part if seen is not None else b.one_example(data, start)
        one = part is not None
        if part is None:
            part = b.parse(Block(np.frombuffer(bytearray(data), dtype=np.uint8), source, start,
                                 live=True))  # fmt: skip
        for msg in part.bad[:3]:
            self.console.warn_once(f"bad {msg}", f"sl serve: {msg}")
        lines = b.lines(seen if seen is not None else b.run(part, one=one), vw=True)
        answers = ["nan\n\n"] * m
        for e, row in enumerate(part.mg.example.tolist()):
            if row < m:
                answers[row] = lines[e]
        return "".join(answers).encode(), m, m - len(lines)

    def closed(self, source: str) -> None:
        """A connection ended: an example it left unended is dropped."""
        self.carry.pop(source, None)

    def examples(self) -> int:
        return int(self.bandit.stats[cb_adf.N_EX])

    def snapshot(self) -> model_io.Model:
        return self.bandit.to_model()

    def save(self, target: str, fmt: str, link: str) -> None:  # noqa: ARG002 - Served's
        """Write the model as the command's ``-f`` does (:meth:`Bandit.save`)."""
        self.bandit.save(target, fmt)
