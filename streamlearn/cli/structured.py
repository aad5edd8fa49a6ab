"""``sl train``'s options of the learners whose examples are not a line of features and a
label: topic models (``--lda K``, VW's ``--lda``) and learning to search (``--search K
--search-task T``, VW's ``--search``).

Each is one of VW's options under sl's name, applied by the reduction's own declaration
(:data:`streamlearn.reductions.lda.VW_OPTIONS`, :data:`streamlearn.reductions.search.VW_OPTIONS`)
and checked by its ``settle``: ``sl train --lda 10`` is ``sl vw --lda 10``'s learner, its
numbers and its refusals (in sl's words: a refusal names sl's option).  The run is
:func:`streamlearn.api.train_multiline`'s, with sl's outputs (``-f`` writes sl's model).
"""

from __future__ import annotations

import re

import click

from streamlearn.errors import VWUsage

# (click's name, sl's flag, VW's option, click's type, metavar, help)
_TABLE = (
    ("lda", "--lda", "lda", click.IntRange(min=1), "K",
     "Latent Dirichlet allocation with K topics (VW's --lda; Hoffman, Blei & Bach's online "
     "variational Bayes): each line a document of word:count features (a label is ignored); "
     "-p writes each document's K topic weights."),
    ("lda_alpha", "--lda-alpha", "lda_alpha", float, None,
     "--lda: the prior on a document's topic weights [0.1]."),
    ("lda_rho", "--lda-rho", "lda_rho", float, None,
     "--lda: the prior on a topic's word weights [0.1]."),
    ("lda_d", "--lda-documents", "lda_D", float, "D",
     "--lda: the number of documents the stream stands for [10000]."),
    ("lda_epsilon", "--lda-epsilon", "lda_epsilon", float, None,
     "--lda: a document's fit stops when its topic weights move less than this [0.001]."),
    ("lda_minibatch", "--lda-minibatch", "minibatch", click.IntRange(min=1), "N",
     "--lda: documents learned together [1]."),
    ("lda_math", "--lda-math", "math_mode", click.Choice(["simd", "accuracy", "fast"]), None,
     "--lda: digamma and exp as VW's SIMD approximations, in double precision, or as its "
     "scalar approximations [simd]."),
    ("search", "--search", "search", click.IntRange(min=1), "K",
     "Learning to search (VW's --search): structured "
     "prediction over K actions, each line a token, a blank line after each sequence."),
    ("search_task", "--search-task", "search_task", str, "TASK",
     "--search: sequence, sequencespan, sequence_ctg, argmax, multiclasstask, "
     "entity_relation, dep_parser or graph."),
    ("search_rollin", "--search-rollin", "search_rollin", str, "POLICY",
     "--search: how the search reaches a state: policy (learn), oracle (ref), mix_per_state "
     "or mix_per_roll (mix) [mix_per_state]."),
    ("search_rollout", "--search-rollout", "search_rollout", str, "POLICY",
     "--search: how a state's actions are costed: as --search-rollin's, or none "
     "[mix_per_state]."),
    ("search_alpha", "--search-alpha", "search_alpha", float, None,
     "--search: the interpolation rate of the mixed policies [1e-10]."),
    ("search_history_length", "--search-history-length", "search_history_length",
     click.IntRange(min=0), "N", "--search: the past decisions a token's features see [1]."),
    ("search_passes_per_policy", "--search-passes-per-policy", "search_passes_per_policy",
     click.IntRange(min=1), "N", "--search: passes before a new policy [1]."),
)  # fmt: skip

NAMES = tuple(row[0] for row in _TABLE)
"""click's parameter names of these options."""
_MATH = {"simd": "0", "accuracy": "1", "fast": "2"}


def structured_options(f):  # noqa: ANN001, ANN201
    """The options above, on a click command."""
    for dest, flag, _, kind, metavar, text in reversed(_TABLE):
        f = click.option(flag, dest, type=kind, default=None, metavar=metavar, help=text)(f)
    return f


def multiline_of(kw: dict, learn: dict) -> tuple[dict, list[str]]:
    """The options given (popped from ``kw``) as :class:`~streamlearn.reductions.Multiline`'s
    fields, and the notes their reduction has for the run; ``learn`` (the learning options)
    as the reduction settles it.  ``({}, [])`` when none is given."""
    got = {k: v for k in NAMES if (v := kw.pop(k, None)) is not None}
    if not got:
        return {}, []
    from streamlearn.reductions import lda, search
    from streamlearn.vwargs.options import Translation

    t = Translation()
    t.learn = learn
    flags = {dest: (flag, vw) for dest, flag, vw, *_ in _TABLE}
    declared = {**lda.VW_OPTIONS, **search.VW_OPTIONS}
    try:
        for dest, value in got.items():
            _, vw = flags[dest]
            text = _MATH[value] if dest == "lda_math" else str(value)
            declared[vw].apply(t, vw, text)
        lda.settle(t)
        search.settle(t)
    except VWUsage as e:
        message = e.message
        for flag, vw in flags.values():  # (in sl's words)
            message = re.sub(rf"--{vw}(?![A-Za-z_-])", flag, message)
        raise click.UsageError(message) from None
    return t.multiline, t.notes
