""":class:`Workspace`: VW 9's ``vowpalwabbit.Workspace``, over sl's live learners.

What a call costs: one parse of the example's text and one kernel call (its learner stays
live between calls: :class:`~streamlearn.run.resident.Resident` for single-line examples,
:class:`~streamlearn.run.bandit.Bandit` for multiline ones), as VW's own workspace does.
``predict`` scores without learning (VW's ``predict``: the example counted, nothing
learned); ``learn`` learns, as a line of ``vw`` learns it.
"""

from __future__ import annotations

import shlex

from streamlearn.errors import UsageError
from streamlearn.vowpalwabbit.types import LabelType, PredictionType


class Example:
    """One parsed example line (VW's ``Example`` wraps its C++ example; sl keeps the text,
    parsed when it is learned or predicted)."""

    def __init__(self, vw: Workspace | None = None, initStringOrDict: str | None = None,  # noqa: N803 - VW's name
                 labelType: int | None = None) -> None:  # noqa: N803  # fmt: skip
        if not isinstance(initStringOrDict, str):
            raise TypeError("sl's Example takes an example's VW text (a dict of namespaces: "
                            "not yet)")  # fmt: skip
        self.vw = vw
        self.text = initStringOrDict
        self.labelType = labelType  # noqa: N815 - VW's name

    def __repr__(self) -> str:
        return f"Example({self.text!r})"


def command_line(arg_str: str | None, arg_list: list[str] | None, kw: dict) -> list[str]:
    """VW's argv from a ``Workspace``'s arguments, as VW's package makes it: a keyword
    ``True`` is a flag, ``False``/None is left out, a list repeats the option, a one-letter
    name is a short option (``q="UA"``: ``-q UA``)."""
    argv = shlex.split(arg_str) if arg_str else []
    argv += [str(a) for a in (arg_list or [])]
    for key, value in kw.items():
        for v in value if isinstance(value, list | tuple) else [value]:
            if v is False or v is None:
                continue
            flag = f"-{key}" if len(key) == 1 else f"--{key}"
            argv += [flag] if v is True else [flag, str(v)]
    return argv


class Workspace:
    """VW's workspace: its command line's learner, live between calls (see the module)."""

    def __init__(self, arg_str: str | None = None, enable_logging: bool = False,  # noqa: ARG002 - VW's
                 arg_list: list[str] | None = None, **kw: object) -> None:  # fmt: skip
        from streamlearn.vwargs import model_argv, parse_argv, resolve

        self._argv = command_line(arg_str, arg_list, kw)
        try:
            t = parse_argv(self._argv)
            if t.inputs.get("initial_model"):
                kept = model_argv(t.inputs["initial_model"], self._argv)
                if kept:
                    t = parse_argv([*kept, *self._argv])
            resolve(t)
            _refuse(t)
            if t.outputs.get("final_model"):  # (refused now, not after the learning)
                from streamlearn.run.options import Inputs, Outputs, check

                check(Inputs(initial_model=t.inputs.get("initial_model")),
                      Outputs(final_model=t.outputs["final_model"],
                              model_format=t.outputs.get("model_format", "vw")))  # fmt: skip
        except UsageError as e:
            raise ValueError(e.message) from None
        self._final = t.outputs.get("final_model")
        self._format = t.outputs.get("model_format", "vw")
        self._finished = False
        if t.multiline:
            from streamlearn.vowpalwabbit.live import multiline_live

            self._live = multiline_live(t)
        else:
            from streamlearn.vowpalwabbit.live import LineLive

            self._live = LineLive(t)

    # -- examples ---------------------------------------------------------------------------

    def parse(self, str_ex: str | list[str],
              labelType: int | None = None) -> Example | list[Example]:  # noqa: N803  # fmt: skip
        """``str_ex`` as examples: a list of them for a multiline learner (one per line),
        else one."""
        if self._live.multiline:
            lines = str_ex.split("\n") if isinstance(str_ex, str) else list(str_ex)
            return [Example(self, line, labelType) for line in lines if line.strip()]
        if not isinstance(str_ex, str):
            raise TypeError("a single-line learner parses one line (a str)")
        return Example(self, str_ex, labelType)

    def finish_example(self, ex: Example | list[Example]) -> None:  # noqa: ARG002 - VW's
        """Nothing to give back: sl's examples are their text."""

    def learn(self, ec: Example | list[Example] | str | list[str]) -> None:
        """Learn one example (a line, or a multiline example: a list or a text of lines)."""
        self._live.step(_text(ec), learn=True)

    def predict(self, ec: Example | list[Example] | str | list[str],
                prediction_type: int | None = None) -> object:  # noqa: ARG002 - VW's  # fmt: skip
        """The prediction for one example, nothing learned: a float (simple labels), a class
        (``--oaa``), or a list by action index (``--cb_explore_adf``: the pmf;
        ``--cb_adf``: the scores)."""
        return self._live.step(_text(ec), learn=False)

    # -- the model --------------------------------------------------------------------------

    def save(self, filename: str) -> None:
        """VW's model file at ``filename`` (``vw -i`` and ``sl vw -i`` read it)."""
        self._live.save(filename, "vw")

    def finish(self) -> None:
        """The end of the run: ``-f``'s model written, once."""
        if self._finished:
            return
        self._finished = True
        if self._final:
            self._live.save(self._final, self._format)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def __del__(self) -> None:  # VW's workspace finishes when it is collected
        try:
            if not self._finished and getattr(self, "_live", None) is not None:
                self.finish()
        except Exception:  # noqa: BLE001, S110 - nothing may escape a finaliser
            pass

    # -- what scripts ask of it -------------------------------------------------------------

    def get_prediction_type(self) -> PredictionType:
        return self._live.prediction_type

    def get_label_type(self) -> LabelType:
        return self._live.label_type

    def num_weights(self) -> int:
        return 1 << self._live.bits

    def get_weight(self, index: int, offset: int = 0) -> float:
        return self._live.weight((index + offset) & ((1 << self._live.bits) - 1))

    def get_sum_loss(self) -> float:
        return self._live.sum_loss()

    def get_weighted_examples(self) -> float:
        return self._live.weighted_examples()

    def get_arguments(self) -> list[str]:
        return list(self._argv)


def _text(ec: object) -> str:
    """An example's text: its lines joined (a multiline example ends with a blank line)."""
    if isinstance(ec, Example):
        return ec.text
    if isinstance(ec, str):
        return ec
    if isinstance(ec, list | tuple):
        return "\n".join(e.text if isinstance(e, Example) else str(e) for e in ec)
    raise TypeError(f"an example is a str, an Example or a list of them, not {type(ec).__name__}")


def _refuse(t) -> None:  # noqa: ANN001 - a vwargs.Translation
    """What a workspace does not do (yet), said at once."""
    if t.data or t.daemon:
        raise UsageError("a Workspace learns the examples it is given: -d and --daemon "
                         "are sl vw's (sl vw -d FILE ...)")  # fmt: skip
    for what, given in (("-p", t.predictions), ("-r", t.raw_predictions),
                        ("--readable_model", t.outputs.get("readable_model")),
                        ("--invert_hash", t.outputs.get("invert_hash")),
                        ("--audit", t.outputs.get("audit"))):  # fmt: skip
        if given:
            raise UsageError(f"{what} in a Workspace: not yet (predict returns the prediction)")
    passes = t.learn.get("passes", 1)
    if passes and passes > 1:
        raise UsageError("--passes in a Workspace: not yet (one pass, as each call is learned)")

