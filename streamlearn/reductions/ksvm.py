"""Kernel SVM, VW's ``--ksvm`` (``--kernel linear|rbf|poly``, ``--bandwidth``, ``--degree``,
``--reprocess``, ``--pool_size``): the base learner VW sets up instead of gd, in the
single-line reductions' shape (:mod:`streamlearn.reductions.lrq` is the worked example).
:mod:`streamlearn.learners.ksvm` is the kernel and says how.

What it owns: its words in ``TrainConfig.stack`` (``("--ksvm", "--kernel", "rbf")``); its VW
options, their refusals and defaults (the hinge loss, λ = ``--l2`` or 1); its learner
(:func:`spec`: an entry that keeps the support vectors between batches, grows their arrays,
prints VW's trace line every 1000 examples, and hands the model files its support vectors);
its header lines and VW's lines after the summary.  The model files keep the support
vectors after the learner's global state (``learners/ksvm_state.State.dump``; VW's file:
its ``save_load``, ``learners/ksvm_state.vw_section``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import UsageError, VWUsage
from streamlearn.reductions.classes import FIELDS
from streamlearn.reductions.singleline import configured
from streamlearn.reductions.trainoptions import TrainOption
from streamlearn.reductions.vwoptions import Command, VWOption, count, integer, number

NAME = "ksvm"
"""Its name in VW's ``Enabled learners`` line, where the base learner's would be."""
BASE = True
"""VW names it instead of gd (it is the learner, not a reduction over gd)."""
KERNELS = ("linear", "rbf", "poly")
AVERAGED = False
"""Its model (support vectors) is not a table Dask's workers could average (``--dask``
refuses it)."""


@dataclass(frozen=True)
class Options:
    kernel: str = "linear"
    bandwidth: float = 1.0
    degree: int = 2
    reprocess: int = 1
    pool_size: int = 1


_VALUED = ("--kernel", "--bandwidth", "--degree", "--reprocess", "--pool_size", "--subsample")


def read(words: tuple[str, ...]) -> Options | None:
    """The options in a configuration's ``stack`` words; None when they name no ``--ksvm``."""
    if "--ksvm" not in words:
        return None
    given: dict = {}
    for i, w in enumerate(words):
        if w not in _VALUED:
            continue
        text = words[i + 1] if i + 1 < len(words) else ""
        if w == "--kernel":
            if text not in KERNELS:
                raise UsageError(f"--kernel {text}: one of {', '.join(KERNELS)}")
            given["kernel"] = text
        elif w == "--bandwidth":
            try:
                given["bandwidth"] = float(np.float32(float(text)))
            except ValueError:
                raise UsageError(f"--bandwidth {text}: a number") from None
        elif w == "--degree":
            if not text.lstrip("-").isdigit() or not -(2**31) <= int(text) < 2**31:
                raise UsageError(f"--degree {text}: an integer of 32 bits (VW's int)")
            given["degree"] = int(text)
        elif w in ("--reprocess", "--pool_size"):
            if not text.isdigit() or (w == "--pool_size" and int(text) < 1):
                raise UsageError(f"{w} {text}: a count" + (" of at least 1" * (w == "--pool_size")))
            given[w[2:]] = int(text)
    return Options(**given)


def _word(kind):  # noqa: ANN001, ANN202 - (name, text) -> the word kept
    def apply(t: Command, name: str, value: str | None) -> None:
        words = ("--" + name,) if kind is None else ("--" + name, kind(name, value or ""))
        t.learn["stack"] = (*t.learn.get("stack", ()), *words)

    return apply


def _kernel(name: str, text: str) -> str:
    if text not in KERNELS:
        raise VWUsage(f"--kernel {text}: not one of {', '.join(KERNELS)} (as VW)")
    return text


def vw_float(x: float) -> str:
    """A float32 as VW writes it in a model's options (15 digits: ``0.699999988079071``): the
    word kept for ``--bandwidth``, whoever gives it (``sl vw``, ``sl train``, the estimator)."""
    return f"{float(np.float32(x)):.15g}"


def _float(name: str, text: str) -> str:
    return vw_float(number(name, text))


def _int(name: str, text: str) -> str:
    k = integer(name, text)
    if not -(2**31) <= k < 2**31:
        raise VWUsage(f"--{name} {text}: an integer of 32 bits (VW's int)")
    return str(k)


def _count(name: str, text: str) -> str:
    return str(count(name, text, f"--{name}", "a count of at least 1"))


def _uint(name: str, text: str) -> str:
    if not text.isdigit():
        raise VWUsage(f"--{name} {text}: a count")
    return text


VW_OPTIONS = {
    "ksvm": VWOption(None, False, _word(None)),
    "kernel": VWOption(None, True, _word(_kernel)),
    "bandwidth": VWOption(None, True, _word(_float)),
    "degree": VWOption(None, True, _word(_int)),
    "reprocess": VWOption(None, True, _word(_uint)),
    "pool_size": VWOption(None, True, _word(_count)),
    "subsample": VWOption(None, True, _word(_count)),
    "pool_greedy": VWOption(None, False, _word(None)),
    "para_active": VWOption(None, False, _word(None)),
}
"""VW's options of the learner (``--pool_greedy`` and ``--subsample`` act under VW's
``--active`` only, which sl does not stack over it: kept, no effect; ``--para_active``, VW's
cluster learning, refused)."""

TRAIN_OPTIONS = (
    TrainOption(("--ksvm",), "ksvm", "Kernel SVM (VW's --ksvm: LaSVM over support vectors, "
                "the hinge loss, lambda = --l2 or 1)."),
    TrainOption(("--ksvm-kernel",), "ksvm_kernel", "--ksvm: the kernel [default: linear].",
                kind="choice", choices=KERNELS),
    TrainOption(("--ksvm-bandwidth",), "ksvm_bandwidth", "--ksvm --ksvm-kernel rbf: the "
                "bandwidth [default: 1].", kind="float"),
    TrainOption(("--ksvm-degree",), "ksvm_degree", "--ksvm --ksvm-kernel poly: the degree "
                "[default: 2].", kind="int"),
    TrainOption(("--ksvm-reprocess",), "ksvm_reprocess", "--ksvm: reprocess steps after each "
                "example [default: 1].", kind="int", low=0),
)  # fmt: skip
"""``sl train --ksvm [--ksvm-kernel K ...]``."""

TRAIN_DEFAULTS = {"adaptive": False, "normalized": False, "invariant": False,
                  "learning_rate": 0.5, "initial_t": 0.0, "loss": "hinge"}
"""``sl train --ksvm``: none of gd's rules (VW sets up no gd: its header's rate is 0.5 and
its initial t 0), the hinge loss (another one given is refused: :func:`spec`)."""
FIXED = {"loss": "hinge"}
"""What a model of it always runs with (VW's set-up forces the hinge loss): a run that
continues or scores one."""


def train_words(values: dict) -> tuple[str, ...]:
    words: list[str] = []
    for key, word in (("ksvm_kernel", "--kernel"), ("ksvm_bandwidth", "--bandwidth"),
                      ("ksvm_degree", "--degree"), ("ksvm_reprocess", "--reprocess")):
        if values.get(key) is not None:
            if not values.get("ksvm"):
                raise UsageError(f"--{key.replace('_', '-')} is an option of --ksvm")
            value = values[key]
            words += [word, vw_float(value) if key == "ksvm_bandwidth" else str(value)]
    return ("--ksvm", *words) if values.get("ksvm") else ()


def settle(t: Command) -> None:
    """VW's set-up of ``--ksvm`` with the rest of a command line: its refusals (one line,
    exit 2) and its defaults (the hinge loss; none of gd's rules)."""
    stack = t.learn.get("stack", ())
    if "--ksvm" not in stack:
        for w in (*_VALUED, "--pool_greedy", "--para_active"):
            if w in stack:
                raise VWUsage(f"{w} is an option of --ksvm")
        return
    if "--para_active" in stack:
        raise VWUsage("--para_active is VW's cluster learning over --ksvm: not supported by sl")
    refuse(t.learn, t.outputs)
    loss = t.learn.get("loss")
    if loss not in (None, "hinge"):
        t.notes.append(f"--loss_function {loss}: --ksvm learns with the hinge loss (as VW)")
    t.learn["loss"] = "hinge"
    for key, value in TRAIN_DEFAULTS.items():
        t.learn.setdefault(key, value)
    # VW's holdout summary and early termination are gd's end of pass: without gd no pass
    # ends a run early, the last pass's model is kept, and the summary's loss is 0 h
    t.learn["early_terminate"] = t.learn.get("passes", 1) + 1


def refuse(learn: dict, outputs: dict) -> None:
    """What sl's ``--ksvm`` does not run with, one line each."""
    if any(learn.get(k) for k in FIELDS) or learn.get("algo", "gd") != "gd":
        raise VWUsage("--ksvm runs alone (VW's ksvm is a base learner): not with another "
                      "learner or reduction")  # fmt: skip
    for key in ("adaptive", "normalized", "invariant"):
        if learn.get(key):
            raise VWUsage(f"--{key} is gd's update rule: --ksvm has none (VW runs it "
                          "without gd)")  # fmt: skip
    if learn.get("l1"):
        raise VWUsage("--l1 is gd's: --ksvm's only regularizer is --l2 (its lambda)")
    if learn.get("minibatch", 1) > 1:
        raise VWUsage("--ksvm learns one example at a time: not with --minibatch")
    if learn.get("initial_weights", "zero") != "zero" or learn.get("initial_weight"):
        raise VWUsage("--ksvm has no weights to start from: not --random_weights or "
                      "--initial_weight")  # fmt: skip
    for key in ("audit", "invert_hash", "readable_model"):
        if outputs.get(key):
            raise VWUsage(f"--{key} with --ksvm is not supported by sl (VW writes no readable "
                          "model of it)")  # fmt: skip


def _general(x: float) -> str:
    return f"{x:g}"


def header_lines(opts: Options, config=None) -> list[str]:  # noqa: ANN001 - a TrainConfig
    """VW's lines at its set-up (after the outputs' lines)."""
    lam = float(np.float32(config.l2)) if config is not None and config.l2 else 1.0
    lines = [f"Lambda = {_general(lam)}", f"Kernel = {opts.kernel}"]
    if opts.kernel == "rbf":
        lines.append(f"bandwidth = {_general(opts.bandwidth)}")
    elif opts.kernel == "poly":
        lines.append(f"degree = {opts.degree}")
    return lines


def summary_lines(opts: Options, gstate: np.ndarray) -> list[str]:  # noqa: ARG001
    """VW's lines at the end of a run (its ``finish``): the entry's counts in ``gstate``."""
    from streamlearn.learners.base import G_USER

    n, evals, cache, loss = (gstate[G_USER + k] for k in range(4))
    return [f"Num support = {int(n)}",
            f"Number of kernel evaluations = {int(evals)} Number of cache queries = {int(cache)}",
            f"Total loss = {loss:.6f}"]  # fmt: skip


class Entry:
    """The kernel entry of one run: the support vectors and their arrays between batches,
    their tags, VW's counters (in the run's ``gstate`` after each batch, for the summary;
    VW's example counter counts its end-of-pass example), VW's trace line every 1000
    examples, and the model files' support vectors (:meth:`saved`, :meth:`restore`)."""

    def __init__(self, opts: Options, lam: float, seed: int) -> None:
        from streamlearn.learners import ksvm as K

        kp = np.zeros(K.NK)
        kp[K.K_TYPE] = K.KERNELS[opts.kernel]
        kp[K.K_BANDWIDTH] = float(np.float32(opts.bandwidth))
        kp[K.K_DEGREE] = opts.degree
        kp[K.K_LAMBDA] = float(np.float32(lam)) or 1.0
        kp[K.K_REPROCESS] = opts.reprocess
        kp[K.K_POOL] = opts.pool_size
        kp[K.K_MAXCACHE] = K.MAXCACHE
        from streamlearn.learners.ksvm_state import State

        self.state = State(kp, seed)
        self.in_pass = 0.0  # (the drivers count a pass's examples from 0 at each pass)

    wants_batch = True
    """The driver passes the batch too (its tags, which VW keeps with a support vector)."""

    def __call__(self, table, gstate, params, loss_id, indptr, indices, values, labels,  # noqa: ANN001, ANN204
                 weights, bases, status, stats, rows, preds, batch=None):  # fmt: skip
        from streamlearn.learners import ksvm as K
        from streamlearn.learners.base import G_USER, P_LEARN, S_PASS_N

        st = self.state
        if stats[S_PASS_N] < self.in_pass:  # a new pass: VW's end-of-pass example counted
            st.ints[K.COUNTER] += 1
        start = 0
        while True:
            nxt = int(K.train_batch(table, gstate, params, loss_id, indptr, indices, values,
                                    labels, weights, bases, status, stats, rows, preds, start,
                                    *st.arrays()))  # fmt: skip
            self._tell()
            st.take_tags(batch)
            if nxt < 0:
                break
            st.make_room(int(indptr[nxt + 1] - indptr[nxt]), params[P_LEARN] != 0.0)
            start = nxt
        self.in_pass = float(stats[S_PASS_N])
        ints = st.ints
        gstate[G_USER : G_USER + 4] = (ints[K.N_SUPPORT], ints[K.EVALS], ints[K.CACHE],
                                       st.kp[K.K_LOSS_SUM])  # fmt: skip

    def _tell(self) -> None:
        """VW's trace line of each 1000th example the batch learned (its ``trace_message``:
        the console's stderr), printed after the batch's kernel, before its table lines."""
        from streamlearn.learners import ksvm as K
        from streamlearn.system import notices

        st = self.state
        for k in range(int(st.ints[K.N_EVENTS])):
            n, evals, cache, loss, a1, a2 = st.events[k]
            notices.tell(f"Number of support vectors = {int(n)}")
            notices.tell(f"Number of kernel evaluations = {int(evals)} Number of cache queries "
                         f"= {int(cache)} loss sum = {loss:g} {a1:g} {a2:g}")
        st.ints[K.N_EVENTS] = 0

    def saved(self) -> np.ndarray:
        """The support vectors (and VW's generator) as the model files keep them."""
        return self.state.dump()

    def restore(self, gstate: np.ndarray) -> np.ndarray:
        """A model's global state: its support vectors (after the learner's own slots) into
        this run's; the learner's own slots returned."""
        from streamlearn.learners.base import GSTATE_SIZE

        if gstate.shape[0] > GSTATE_SIZE:
            self.state.load(gstate[GSTATE_SIZE:])
        return gstate[:GSTATE_SIZE].copy()


def spec(config):  # noqa: ANN001, ANN201 - a TrainConfig -> a LearnerSpec
    """The kernel SVM with the run's kernel, λ and generator."""
    import dataclasses

    from streamlearn.learners import ksvm

    opts = configured(config, read, refuse)
    if config.loss != "hinge":
        raise UsageError(f"--ksvm learns with the hinge loss, not --loss {config.loss}")
    return dataclasses.replace(ksvm.spec(), train_batch=Entry(opts, config.l2, config.seed))
