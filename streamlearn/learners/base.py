"""What every learner shares: array layouts, the kernel contract, accounting.

State of a run (all plain numpy arrays, so kernels stay cacheable):

``table``  float64[2**bits, ncols]
    Per-slot state, one row per slot (a row fits one cache line).  Column 0
    is the learner's *primary* state (the weight, or SMIDAS's dual θ).  For
    the global-schedule learners a slot whose primary state is 0 needs
    nothing settled and is not stored; the other columns hold the ledger
    that brings a weight current lazily (snapshots of global running sums at
    the slot's last touch).  The per-coordinate learners (gd, ftrl) keep
    per-slot accumulators instead, stored whenever any is non-zero.
``gstate`` float64[GSTATE_SIZE]
    Global learner state: ``G_T`` (sum of importance weights learned),
    ``G_N`` (number of examples learned), then learner-specific sums from
    ``G_USER`` on, and the prediction range (``G_CLIP``, ``G_LABEL_MIN``,
    ``G_LABEL_MAX``; see :func:`clip`) in the last three slots.
``params`` float64[PARAMS_SIZE]
    Hyperparameters resolved before the loop (see :func:`make_params`).
``stats``  float64[STATS_SIZE] and ``rows`` float64[MAX_ROWS, ROW_WIDTH]
    Progressive-validation counters and the table lines due so far (written by
    the kernel when the weighted example count reaches 1, 2, 4, ...; the
    driver prints and clears them after each batch).

Kernel contract (same names, same argument order in every learner module)::

    train_batch(table, gstate, params, loss_id,
                indptr, indices, values, labels, weights, bases, status,
                stats, rows, preds)
        For each row with status 0: bring the touched slots current, predict
        and clip (:func:`score`; the clipped prediction is stored in
        ``preds`` and scored *before* learning),
        account the loss, and -- for labeled, non-holdout rows when
        ``params[P_LEARN]`` is 1 -- take the gradient step and the
        regulariser's step of this example.  O(nnz) per example.

    current_weights(table, gstate, params, slots, out)
        ``out[k]`` = weight of ``slots[k]`` brought current through the last
        step, without changing any state (used to save and to predict).

    finish(table, gstate, params)           (optional, ``LearnerSpec.finish``)
        End of a pass: take the steps still owed (a partial mini-batch).

    rebase(table, gstate, params)
        Bring every slot current in place and reset the global sums (O(d);
        for keeping running sums in range, never per example).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from streamlearn.learners.losses import LOGISTIC, POISSON, loss32
from streamlearn.learners.losses import loss as loss_value
from streamlearn.system.jit import (
    INTERPRETED,
    jit,
    jit_inline,
    jit_noalloc,
    prefetch_row,
    trailing_zeros,
)

# ---- params layout -------------------------------------------------------
P_ETA0 = 0
P_POWER_T = 1
P_T0 = 2
P_L1 = 3
P_L2 = 4
P_THETA = 5
P_PERIOD = 6
P_P = 7
P_NORM_REFRESH = 8
P_HOLDOUT = 9  # every n-th example of a pass is held out (0 = none)
P_LEARN = 10  # 1 = learn, 0 = only predict and account
P_TOPK = 11
P_ADAPTIVE = 12  # gd: 1 = per-feature adaptive rates (VW's --adaptive)
P_NORMALIZED = 13  # gd: 1 = per-feature normalization by the largest |x| (--normalized)
P_INVARIANT = 14  # gd: 1 = importance-invariant update (--invariant)
P_FTRL_ALPHA = 15
P_FTRL_BETA = 16
P_CLIP_FIXED = 17  # 1 = predictions clipped to [P_CLIP_LO, P_CLIP_HI]; 0 = to the labels seen
P_CLIP_LO = 18
P_CLIP_HI = 19
P_MINIBATCH = 20  # learned examples per step (the mini-batch learners)
P_OAA = 21  # one-against-all: the number of classes K (0: one binary or regression problem)
P_PROBS = 22  # one-against-all: 1 = also account the multiclass log loss (--probabilities)
P_FREEGRAD_EPSILON = 23  # freegrad: initial wealth ε (--fepsilon)
P_QUANTILE_TAU = 24  # the quantile loss's level tau (VW's --quantile_tau)
P_HOLDOUT_AFTER = 25  # > 0: examples after the first n of each pass are held out (not P_HOLDOUT)
P_BINARY = 26  # 1: the progressive loss is the 0/1 loss of sign(p) (VW's --binary); 2: of +1
# (VW's --binary after a positive link, --link logistic or poisson, always predicts +1)
P_PROGRESS = 27  # table lines: 0 at 1, 2, 4, ...; f > 0 each time x f; -n every n (VW's -P)
P_FREEGRAD_LIPSCHITZ = 28  # freegrad: known bound on the gradients, 0 = none
P_FREEGRAD_RESTART = 29  # freegrad: 1 = FreeRange restarts
P_FREEGRAD_PROJECT = 30  # freegrad: 1 = project onto a ball
P_FREEGRAD_RADIUS = 31  # freegrad: the ball's radius; 0 = adaptive
P_INDEXING = 32  # one-against-all: labels 0..K-1 (0), 1..K (1), or 2: not known yet, VW's
# default, read as 1..K until a learned label 0 or K decides; the kernel writes the decision
# here (VW's runtime_state.indexing: it holds for the rest of the run, not in the model)
INDEXING_AUTO = 2.0  # params[P_INDEXING] before a label has decided
P_INDEXING_AT = 33  # one-against-all: the kernel writes 1 + the row that decided, 0 if none
P_LOGISTIC_MIN = 34  # logistic loss: the label read as "certainly -1" (VW's --logistic_min)
P_LOGISTIC_MAX = 35  # ... and as "certainly +1" (VW's --logistic_max)
P_BOOTSTRAP = 36  # --bootstrap K: the number of gd copies (0: none)
P_BS_VOTE = 37  # --bootstrap: 1 = --bs_type vote, 0 = mean
P_SEED = 38  # VW's --random_seed: the global generator's first state (--bootstrap's draws)
P_AUTOLINK = 39  # --autolink d: the degree of gd's polynomial link features (0: none)
P_BFGS_MEM = 40  # --bfgs: --mem m (the L-BFGS corrections kept)
P_BFGS_TERM = 41  # --bfgs: --termination (relative decrease of the loss that stops it)
P_BFGS_HESSIAN = 42  # --bfgs: 1 = --hessian_on (a curvature pass before each step)
P_BFGS_PASSES = 43  # --bfgs: the passes (VW's final_pass)
PARAMS_SIZE = 44

# ---- gstate layout --------------------------------------------------------
G_T = 0
G_N = 1
G_USER = 2
G_CLIP = 13  # 1 once G_LABEL_MIN/MAX hold the clipping range (0: fresh, or a model from before)
G_LABEL_MIN = 14  # smallest prediction allowed: VW's min_label (labels seen, and 0)
G_LABEL_MAX = 15  # largest prediction allowed: VW's max_label
GSTATE_SIZE = 16

# ---- stats layout ----------------------------------------------------------
S_N = 0  # examples read (usable rows, labeled or not): VW's example counter
S_WEX = 1  # weighted example sum (labeled + unlabeled)
S_WLAB = 2  # weighted labeled example sum (progressive, holdout excluded)
S_LOSS = 3  # sum of importance * loss (progressive)
S_LABEL_SUM = 4  # weighted label sum
S_LABEL_SQ = 5  # weighted sum of squared labels
S_POS_W = 6  # weight of examples with a positive label
S_FEATURES = 7  # total feature number
S_SINCE_LOSS = 8
S_SINCE_W = 9
S_NEXT_DUMP = 10
S_NROWS = 11
S_HO_LOSS = 12
S_HO_W = 13
S_HO_N = 14
S_PASS_N = 15  # usable examples seen in the current pass (holdout selection)
S_CORRECT_W = 16  # weight of labeled examples whose sign was right
S_UNLABELED = 17
S_HO_CORRECT_W = 18
S_MC_LOGLOSS = 19  # one-against-all --probabilities: Σ a · −log p_y (progressive)
S_HO_MC_LOGLOSS = 20  # the same over held-out examples
S_CLASS_MOVED = 21  # one-against-all: learned labels that are no class (K with labels 0..K-1,
# 0 with 1..K): every class learns -1 from them, as VW
S_SHOWN_N = 22  # examples the table counts: all but the held-out ones (VW's example_number)
S_SHOWN_W = 23  # their weight (VW's weighted_examples()): the table's dump points follow it
STATS_SIZE = 24
LIFETIME_STATS = np.array([S_N, S_WEX, S_WLAB, S_LOSS, S_LABEL_SUM, S_LABEL_SQ, S_POS_W,
                           S_FEATURES, S_HO_LOSS, S_HO_W, S_HO_N, S_CORRECT_W, S_UNLABELED,
                           S_HO_CORRECT_W, S_CLASS_MOVED, S_SHOWN_N, S_SHOWN_W])  # fmt: skip
"""The counters that add up over runs (a model keeps their lifetime totals)."""

MAX_ROWS = 64
ROW_WIDTH = 10  # avg loss, since last, example counter, example weight, label, predict, features,
# then the running holdout loss sum and weight (for VW's "h" lines from the second pass on),
# and (one-against-all with --probabilities) the predicted class's probability
R_PROB = 9  # rows column: the predicted class's probability (--probabilities), else NaN


def make_params(
    learning_rate: float = 0.5,
    power_t: float = 0.5,
    initial_t: float = 1.0,
    l1: float = 0.0,
    l2: float = 0.0,
    theta: float = np.inf,
    period: int = 1,
    p: float = 2.0,
    norm_refresh: int = 0,
    holdout_period: int = 0,
    learn: bool = True,
    topk: int = 0,
    adaptive: bool = True,
    normalized: bool = True,
    invariant: bool = True,
    ftrl_alpha: float = 0.5,
    ftrl_beta: float = 1.0,
    min_prediction: float | None = None,
    max_prediction: float | None = None,
    minibatch: int = 1,
    quantile_tau: float = 0.5,
    holdout_after: int = 0,
    binary: bool = False,
    progress: float = 0.0,
    oaa: int = 0,
    probabilities: bool = False,
    indexing: int | None = None,
    freegrad_epsilon: float = 1.0,
    freegrad_lipschitz: float = 0.0,
    freegrad_restart: bool = False,
    freegrad_project: bool = False,
    freegrad_radius: float | None = None,
    logistic_min: float = -1.0,
    logistic_max: float = 1.0,
    bootstrap: int = 0,
    bs_vote: bool = False,
    seed: int = 0,
    autolink: int = 0,
    bfgs: tuple = (15, 0.001, False, 1),
) -> np.ndarray:
    """Pack hyperparameters into the ``params`` array kernels read.

    Clipping of predictions (every learner, as VW): with neither
    ``min_prediction`` nor ``max_prediction`` the range is the labels learned
    so far and 0 (``[-50, 50]`` to start with for logistic loss), kept in
    ``gstate``; with either, it is fixed to ``[min_prediction or 0,
    max_prediction or 0]`` (VW's ``--min_prediction``/``--max_prediction``).
    """
    params = np.zeros(PARAMS_SIZE)
    params[P_ETA0] = learning_rate
    params[P_POWER_T] = power_t
    params[P_T0] = initial_t
    params[P_L1] = l1
    params[P_L2] = l2
    params[P_THETA] = theta
    params[P_PERIOD] = period
    params[P_P] = p
    params[P_NORM_REFRESH] = norm_refresh
    params[P_HOLDOUT] = holdout_period
    params[P_LEARN] = 1.0 if learn else 0.0
    params[P_TOPK] = topk
    params[P_ADAPTIVE] = 1.0 if adaptive else 0.0
    params[P_NORMALIZED] = 1.0 if normalized else 0.0
    params[P_INVARIANT] = 1.0 if invariant else 0.0
    params[P_FTRL_ALPHA] = ftrl_alpha
    params[P_FTRL_BETA] = ftrl_beta
    fixed = min_prediction is not None or max_prediction is not None
    params[P_CLIP_FIXED] = 1.0 if fixed else 0.0
    params[P_CLIP_LO] = min_prediction or 0.0
    params[P_CLIP_HI] = max_prediction or 0.0
    params[P_MINIBATCH] = minibatch
    params[P_QUANTILE_TAU] = quantile_tau
    params[P_LOGISTIC_MIN] = logistic_min
    params[P_LOGISTIC_MAX] = logistic_max
    params[P_HOLDOUT_AFTER] = holdout_after
    params[P_BINARY] = 1.0 if binary else 0.0
    params[P_PROGRESS] = progress
    params[P_OAA] = oaa
    params[P_PROBS] = 1.0 if probabilities else 0.0
    params[P_INDEXING] = INDEXING_AUTO if indexing is None else indexing
    params[P_FREEGRAD_EPSILON] = freegrad_epsilon
    params[P_FREEGRAD_LIPSCHITZ] = freegrad_lipschitz
    params[P_FREEGRAD_RESTART] = 1.0 if freegrad_restart else 0.0
    params[P_FREEGRAD_PROJECT] = 1.0 if freegrad_project else 0.0
    params[P_FREEGRAD_RADIUS] = freegrad_radius or 0.0
    params[P_BOOTSTRAP] = bootstrap
    params[P_BS_VOTE] = 1.0 if bs_vote else 0.0
    params[P_SEED] = seed
    params[P_AUTOLINK] = autolink
    params[P_BFGS_MEM] = bfgs[0]
    params[P_BFGS_TERM] = bfgs[1]
    params[P_BFGS_HESSIAN] = 1.0 if bfgs[2] or bfgs[0] == 0 else 0.0
    params[P_BFGS_PASSES] = bfgs[3]
    return params


def new_stats() -> np.ndarray:
    stats = np.zeros(STATS_SIZE)
    stats[S_NEXT_DUMP] = 1.0
    return stats


def new_rows() -> np.ndarray:
    return np.zeros((MAX_ROWS, ROW_WIDTH))


@dataclass(frozen=True)
class LearnerSpec:
    """A learner variant: its kernels and the per-slot state it keeps.

    ``fresh`` is the row of a slot that is current and has never been
    touched; only rows with a non-zero weight (column 0; or any non-zero
    column among the first :attr:`stored_cols`) are stored in model files,
    the others load as ``fresh``.  Every learner reads a slot's
    snapshots only while its weight is non-zero and stamps them whenever the
    slot is touched, so ``fresh`` is all zeros for all of them, which lets
    :func:`fresh_table` leave untouched pages unwritten.
    """

    name: str
    ncols: int
    fresh: tuple[float, ...]
    train_batch: Callable
    current_weights: Callable
    rebase: Callable
    init_gstate: Callable[[np.ndarray], np.ndarray]
    stamp: tuple[float, ...] = ()
    """Columns 1, 2, ... of a row whose weight is current while the global sums
    are at their initial values (``init_gstate``, or just after ``rebase``);
    zeros when empty.  A warm start (:meth:`warm_table`) writes them next to
    each weight it places."""
    dtype: type = np.float64
    """The table's element type: float32 for the learners that compute in single
    precision as VW (gd: 16-byte rows, VW's stride of 4 floats; ftrl: 12 bytes)."""
    stored_cols: int = 1
    """Model files keep the rows with a non-zero value in one of the first
    ``stored_cols`` columns.  1 for learners whose other columns matter only
    while the weight is non-zero; the per-coordinate learners (gd, ftrl)
    keep accumulators that matter whatever the weight, so every column."""
    finish: Callable | None = None
    """``finish(table, gstate, params)``, run at the end of every pass: the
    mini-batch learners take the step of the examples still pending."""
    stopped: Callable | None = None
    """``stopped(gstate)``: True when the learner has finished before the passes asked for
    (--bfgs: converged, or no curvature left; VW's ``set_done``)."""

    def warm_table(self, bits: int, slots: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """A table holding ``weights`` at ``slots``, each current at the initial global state.

        For starting this learner from another learner's weights (continuing a
        model with other regularisers): the weights are the model's, brought
        current; the ledger is what a fresh run would have after a rebase.
        """
        table = self.new_table(bits)
        table[slots, 0] = weights
        if any(self.stamp):
            table[slots[weights != 0.0], 1 : 1 + len(self.stamp)] = self.stamp
        return table

    def new_table(self, bits: int) -> np.ndarray:
        return fresh_table(bits, self.fresh, self.dtype)


def fresh_table(bits: int, fresh: tuple[float, ...], dtype=np.float64) -> np.ndarray:
    """A table of ``2**bits`` rows equal to ``fresh``, of ``dtype``.

    An all-zero row takes ``np.zeros``, whose pages the OS maps only when a
    slot is first written: a run that touches few slots of a large table
    does not pay for writing all of it (0.8 s at ``-b 26``).
    """
    from streamlearn.system.memory import zeros

    size = np.dtype(dtype).itemsize * len(fresh)
    table = zeros((1 << bits, len(fresh)), f"2^{bits} slots x {size} bytes", dtype)
    if any(fresh):
        table[:] = np.asarray(fresh)
    return table


def zero_gstate(params: np.ndarray) -> np.ndarray:
    """Initial global state for learners whose sums start at 0."""
    return np.zeros(GSTATE_SIZE)


@jit_inline
def begin_example(stats, params, y):
    """Count a usable example; return (labeled, holdout)."""
    stats[S_N] += 1.0
    stats[S_PASS_N] += 1.0
    labeled = y == y
    after = params[P_HOLDOUT_AFTER]
    if after > 0.0:
        return labeled, stats[S_PASS_N] > after
    period = params[P_HOLDOUT]
    holdout = period > 0.0 and stats[S_PASS_N] % period == 0.0
    return labeled, holdout


@jit_inline
def account(stats, rows, loss_id, p, y, a, nfeat, labeled, holdout, tau=0.5, progress=0.0):
    """Add one scored example to the progressive (or holdout) statistics.

    Called with the prediction made *before* the example is learned.  Writes a
    table line when the weighted example count reaches the next power of 2
    (or as ``progress`` says, see :func:`add_scored`).  ``tau``: the quantile
    loss's level.
    """
    lv = loss_value(loss_id, p, y, tau) if labeled else 0.0
    add_scored(stats, rows, p, y, a, nfeat, labeled, holdout, lv, progress)


@jit_inline
def binary_loss(p, y, lv):
    """VW's ``--binary`` loss: 0 when the sign of ``p`` (> 0: +1, else -1) is ``y``, 1 when
    not; a label other than -1/+1 keeps its loss ``lv``."""
    if y == 1.0 or y == -1.0:
        return 0.0 if (p > 0.0) == (y > 0.0) else 1.0
    return lv


@jit_inline
def add_scored(stats, rows, p, y, a, nfeat, labeled, holdout, lv, progress=0.0):
    """:func:`account` with the example's loss ``lv`` already computed.

    A table line is written when the weighted example count reaches the next
    dump point: 1, 2, 4, ... (``progress`` 0); with ``progress`` f > 0, 1 and
    then the count at the last line times f; with ``progress`` -n, every n
    (VW's ``-P``: a float multiplies, an integer adds).
    """
    stats[S_FEATURES] += nfeat
    stats[S_WEX] += a
    if labeled:
        right = (p > 0.0) == (y > 0.0)
        if holdout:
            stats[S_HO_LOSS] += a * lv
            stats[S_HO_W] += a
            stats[S_HO_N] += 1.0
            if right:
                stats[S_HO_CORRECT_W] += a
        else:
            stats[S_LOSS] += a * lv
            stats[S_WLAB] += a
            stats[S_SINCE_LOSS] += a * lv
            stats[S_SINCE_W] += a
            stats[S_LABEL_SUM] += a * y
            stats[S_LABEL_SQ] += a * y * y
            if y > 0.0:
                stats[S_POS_W] += a
            if right:
                stats[S_CORRECT_W] += a
    else:
        stats[S_UNLABELED] += 1.0
    table_row(stats, rows, y, p, nfeat, progress, np.nan, a, labeled and holdout)


@jit_inline
def table_row(stats, rows, y, p, nfeat, progress, prob, a, held_out):
    """Count the example just accounted (importance ``a``) for the table and write a line of
    it when the count's weight has reached the next dump point, and move that point
    (``progress``: see :func:`add_scored`); ``prob`` is the predicted class's probability
    (one-against-all with ``--probabilities``), NaN otherwise.

    As VW's table, the count, its weight and so the dump points leave out the held-out
    examples (VW's ``example_number`` and ``weighted_examples()``).
    """
    if held_out:
        return
    stats[S_SHOWN_N] += 1.0
    stats[S_SHOWN_W] += a
    seen = stats[S_SHOWN_W]
    if seen < stats[S_NEXT_DUMP]:
        return
    r = int(stats[S_NROWS])
    if r < rows.shape[0]:
        rows[r, 0] = stats[S_LOSS] / stats[S_WLAB] if stats[S_WLAB] > 0 else np.nan
        rows[r, 1] = stats[S_SINCE_LOSS] / stats[S_SINCE_W] if stats[S_SINCE_W] > 0 else np.nan
        rows[r, 2] = stats[S_SHOWN_N]
        rows[r, 3] = seen
        rows[r, 4] = y
        rows[r, 5] = p
        rows[r, 6] = nfeat
        rows[r, 7] = stats[S_HO_LOSS]
        rows[r, 8] = stats[S_HO_W]
        rows[r, R_PROB] = prob
        stats[S_NROWS] = r + 1
    stats[S_SINCE_LOSS] = 0.0
    stats[S_SINCE_W] = 0.0
    if progress < 0.0:
        stats[S_NEXT_DUMP] = seen - progress
    else:  # VW: the weight at this line times the factor (2 without -P), not the last point
        # doubled: with importance weights other than 1 the lines land on VW's examples
        stats[S_NEXT_DUMP] = seen * (progress if progress > 0.0 else 2.0)


@jit_inline
def clip(gstate, params, loss_id, p, y, extend):
    """``p`` clipped to the prediction range, as VW's ``finalize_prediction``.

    The range is ``[P_CLIP_LO, P_CLIP_HI]`` when fixed by the options;
    otherwise it lives in ``gstate``: ``[0, 0]`` (``[-50, 50]`` for logistic
    loss) at the first example, widened to each label ``y`` learned *before*
    its example is predicted (``extend``; VW's ``set_minmax`` runs ahead of
    the prediction).  NaN passes through (the driver stops the run).
    """
    if params[P_CLIP_FIXED] != 0.0:
        lo = params[P_CLIP_LO]
        hi = params[P_CLIP_HI]
    else:
        if gstate[G_CLIP] == 0.0:
            gstate[G_CLIP] = 1.0
            edge = 50.0 if loss_id == LOGISTIC or loss_id == POISSON else 0.0
            gstate[G_LABEL_MIN] = -edge
            gstate[G_LABEL_MAX] = edge
        lo = gstate[G_LABEL_MIN]
        hi = gstate[G_LABEL_MAX]
        if extend:
            if y < lo:
                lo = y
                gstate[G_LABEL_MIN] = y
            if y > hi:
                hi = y
                gstate[G_LABEL_MAX] = y
    if p > hi:
        return hi
    if p < lo:
        return lo
    return p


@jit_inline
def row_span(indptr, i):
    """Example ``i``'s features, ``indptr[i]`` to ``indptr[i + 1]``, as unsigned positions.

    A loop over an unsigned range reads ``indices[k]`` and ``values[k]``
    without numba's fix-up for negative indices (a compare and a select on
    each read: 7% of the default learner's time).  Mixed with signed
    integers the bounds would make floats; ``hi - lo`` is the count.
    """
    return np.uint64(indptr[i]), np.uint64(indptr[i + 1])


@jit_inline
def prefetch_example(table, indptr, indices, i):
    """Start loading the table rows of example ``i`` (when there is one) into the caches.

    Learners call it for the next example before working on the current one, so
    that its slots' cache misses overlap with that work; values do not change.
    """
    if i + 1 < indptr.shape[0]:
        lo, hi = row_span(indptr, i)
        for k in range(lo, hi):
            prefetch_row(table, indices[k])


@jit_inline
def write_raw(preds, indptr, i, p):
    """VW's ``-r``: row ``i``'s score before clipping and the link, at ``preds[n + i]`` when
    the caller gave ``preds`` room for it (2n entries for n rows; otherwise nothing)."""
    n = indptr.shape[0] - 1
    if preds.shape[0] > n:
        preds[n + i] = p


@jit_inline
def score(stats, rows, gstate, params, loss_id, p, y, a, nfeat):
    """Clip, count and account one scored example: (clipped prediction, learn it?).

    ``p`` is the raw prediction ``w·x + base``; what is scored, returned and
    learned from is ``p`` clipped (:func:`clip`).  An example is learned when
    it is labeled, not held out, has a non-zero importance weight, and
    ``params[P_LEARN]`` is on; its label widens the clipping range even when
    its weight is 0 (as VW).
    """
    p, labeled, holdout, learn = _counted(stats, gstate, params, loss_id, p, y)
    tau = params[P_QUANTILE_TAU]
    lv = loss_value(loss_id, p, y, tau) if labeled else 0.0
    if labeled and params[P_BINARY] != 0.0:
        lv = binary_loss(p if params[P_BINARY] == 1.0 else 1.0, y, lv)
    add_scored(stats, rows, p, y, a, nfeat, labeled, holdout, lv, params[P_PROGRESS])
    return p, learn and a != 0.0


@jit_inline
def _counted(stats, gstate, params, loss_id, p, y):
    """Count the example and clip ``p``: (clipped p, labeled?, held out?, learned from?)."""
    labeled, holdout = begin_example(stats, params, y)
    learn = labeled and not holdout and params[P_LEARN] != 0.0
    return clip(gstate, params, loss_id, p, y, learn), labeled, holdout, learn


@jit_inline
def score32(stats, rows, gstate, params, loss_id, p, y, a, nfeat):
    """:func:`score` for the single-precision learners (gd, ftrl): also the loss, in float32.

    Returns ``(clipped prediction, learn it?, loss)``.  The loss is computed
    as VW computes it (``losses.loss32`` of the float32 prediction and label),
    for the progressive statistics and for the caller (gd's zero-loss gate);
    0 for an unlabeled example.
    """
    p, labeled, holdout, learn = _counted(stats, gstate, params, loss_id, p, y)
    tau = np.float32(params[P_QUANTILE_TAU])
    lo, hi = np.float32(params[P_LOGISTIC_MIN]), np.float32(params[P_LOGISTIC_MAX])
    lv = loss32(loss_id, np.float32(p), np.float32(y), tau, lo, hi) if labeled else np.float32(0.0)
    shown = np.float64(lv)
    if labeled and params[P_BINARY] != 0.0:
        shown = binary_loss(p if params[P_BINARY] == 1.0 else 1.0, y, shown)
    add_scored(stats, rows, p, y, a, nfeat, labeled, holdout, shown, params[P_PROGRESS])
    return p, learn and a != 0.0, lv


@jit_inline
def begin_scored(stats, params, y, a):
    """Count an example before a learner that predicts differently when it learns predicts it.

    The parameter-free learners (coin, pistol, freegrad) compute a learned
    example's prediction from their state (and change that state on the way),
    but predict any other example -- unlabeled, held out, of weight 0, or with
    learning off -- as ``base + w·x`` with the stored weights, as VW's
    ``predict`` does.  Returns ``(labeled, holdout, extend, learn)``:
    ``extend`` widens the prediction range with ``y`` (:func:`clip`), ``learn``
    takes the step.  Finish with :func:`end_scored`.
    """
    labeled, holdout = begin_example(stats, params, y)
    extend = labeled and not holdout and params[P_LEARN] != 0.0
    return labeled, holdout, extend, extend and a != 0.0


@jit_inline
def end_scored(stats, rows, gstate, params, loss_id, p, y, a, nfeat, labeled, holdout, extend):
    """Clip and account a prediction begun with :func:`begin_scored` (loss in float32, as
    :func:`score32`); returns the clipped prediction as a float32."""
    pc = np.float32(clip(gstate, params, loss_id, np.float64(p), np.float64(y), extend))
    lv = loss32(loss_id, pc, np.float32(y)) if labeled else np.float32(0.0)
    add_scored(stats, rows, np.float64(pc), np.float64(y), a, nfeat, labeled, holdout,
               np.float64(lv))  # fmt: skip
    return pc


@jit_inline
def div32(a, b):
    """``a / b`` in float32 with C's semantics: inf or nan for a zero divisor.

    Compiled, numba raises ZeroDivisionError on ``a / 0.0``; the learners
    whose formulas can meet an underflowed divisor (pistol, freegrad) divide
    with this, so that a degenerate input ends as a non-finite prediction,
    which the driver reports, as VW's NaN.  The double quotient of two
    float32 rounds to the float32 quotient exactly.
    """
    return np.float32(np.divide(np.float32(a), np.float32(b)))


@jit_inline
def stored_prediction(table, indices, values, lo, hi, base):
    """``base + Σ w_j x_j`` in float32 with the weights in column 0 (VW's ``inline_predict``)."""
    p = np.float32(base)
    for k in range(lo, hi):
        p += np.float32(table[indices[k], 0]) * np.float32(values[k])
    return p


def scoring_gstate(model_gstate: np.ndarray) -> np.ndarray:
    """The global state ``sl predict`` scores with: a model's clipping range, nothing else.

    A model saved before predictions were clipped has no range
    (``G_CLIP`` = 0): its predictions are left unclipped.
    """
    gstate = np.zeros(GSTATE_SIZE)
    gstate[G_CLIP] = 1.0
    if model_gstate.shape[0] > G_LABEL_MAX and model_gstate[G_CLIP] != 0.0:
        gstate[G_LABEL_MIN] = model_gstate[G_LABEL_MIN]
        gstate[G_LABEL_MAX] = model_gstate[G_LABEL_MAX]
    else:
        gstate[G_LABEL_MIN] = -np.inf
        gstate[G_LABEL_MAX] = np.inf
    return gstate


@jit_inline
def _kept(table, j, ncols):
    for c in range(ncols):
        if table[j, c] != 0.0:
            return True
    return False


def stored_slots(table: np.ndarray, ncols: int = 1) -> np.ndarray:
    """The rows of ``table`` with a non-zero value in one of its first ``ncols`` columns.

    ``ncols`` is the learner's :attr:`LearnerSpec.stored_cols` (1: the rows
    with a non-zero primary state).  Returns uint32 slots.  Compiled, it reads
    the table in place: ``np.flatnonzero(table[:, 0])`` first copies the strided
    column, writing 8 bytes per slot (0.4 s at ``-b 26``).  Interpreted (tiny
    inputs, ``NUMBA_DISABLE_JIT``), numpy's copy is far cheaper than a Python
    loop over every row (0.9 s at ``-b 18``).
    """
    if INTERPRETED:
        return np.flatnonzero((table[:, :ncols] != 0.0).any(axis=1)).astype(np.uint32)
    marks = np.empty((table.shape[0] + 63) // 64, dtype=np.uint64)
    out = np.empty(_mark_kept(table, ncols, marks), dtype=np.uint32)
    _marked_slots(marks, out)
    return out


def final_rows(table: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Rows ``slots`` (sorted, unique) of a table that is not used again: the state of the
    model taken at the end of a run.

    When they are at least half the table, they are moved to its front in place and
    the result is a view of them: a copy would fill up to the whole table's size of
    fresh memory, whose page faults cost more than the copying (0.13 s at ``-b 22``,
    a tenth of a short ``-q tt`` run).  The view keeps the table alive, at most twice
    the rows' size.  Else (and interpreted) a copy.
    """
    n = slots.shape[0]
    if INTERPRETED or 2 * n < table.shape[0]:
        return np.take(table, slots, axis=0)
    _move_rows_forward(table, slots)
    return table[:n]


@jit_noalloc
def _move_rows_forward(table, slots):
    """``table[k] = table[slots[k]]`` for each ``k`` in order: ``slots`` ascend, so no row
    is overwritten before it is moved."""
    for k in range(slots.shape[0]):
        j = slots[k]
        if j != k:
            for c in range(table.shape[1]):
                table[k, c] = table[j, c]


@jit_noalloc
def _mark_kept(table, ncols, marks):
    """Set bit ``j % 64`` of ``marks[j // 64]`` for each kept row ``j``; return how many.

    The table is read once; the slots are then listed from the bits
    (:func:`_marked_slots`), a 128th of its size at 16 bytes a row (at ``-b 26``
    8 MB instead of a second pass over 1 GB: 0.3 s before).  Arrays come from
    Python: a cached kernel that allocates loads numba's array module with it
    (25-35 ms at the end of every run).
    """
    n = 0
    rows = table.shape[0]
    for w in range(marks.shape[0]):
        word = np.uint64(0)
        base = w * 64
        for b in range(min(64, rows - base)):
            if _kept(table, base + b, ncols):
                word |= np.uint64(1) << np.uint64(b)
                n += 1
        marks[w] = word
    return n


@jit_noalloc
def _marked_slots(marks, out):
    """The numbers of the rows marked by :func:`_mark_kept`, in order, into ``out``."""
    n = 0
    for w in range(marks.shape[0]):
        word = marks[w]
        while word != np.uint64(0):
            out[n] = np.uint32(w * 64 + np.int64(trailing_zeros(word)))
            n += 1
            word &= word - np.uint64(1)


@jit
def predict_batch(w, indptr, indices, values, bases, status, out):
    """Predictions ``w·x + base`` of current weights ``w`` (float64[d]).

    Rows with a non-zero status get NaN.
    """
    for i in range(indptr.shape[0] - 1):
        if status[i] != 0:
            out[i] = np.nan
            continue
        p = bases[i]
        for k in range(indptr[i], indptr[i + 1]):
            p += w[indices[k]] * values[k]
        out[i] = p
