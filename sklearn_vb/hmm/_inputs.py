"""Input-driven transitions with categorical inputs (an input-output HMM, Bengio &
Frasconi 1995, with conjugate Dirichlet priors).

Every frame t carries an input level u_t in [0, L), given as ``U`` to the estimator's
methods, and the transition into frame t is drawn from the row s_{t-1} of the matrix
A[u_t] of its level: p(s_t = j | s_{t-1} = i, u_t = l) = A[l, i, j].  Every row of every
level has its own Dirichlet prior, so q(A) stays a product of L * K Dirichlet rows, the
VBE step is the forward-backward pass with the per-step matrix exp E[ln A[u_t]], and the
expected transition counts come out per level (the kernels of
:mod:`.forward_backward` take the matrices (L, K, K) and the frames' levels).  The input
of the first frame of a sequence is not used: its state is drawn from the initial
distribution.

A plain HMM is the case L = 1, and its arrays are the same with the level axis dropped:
the functions here take either form, a (K, K) matrix without levels or (L, K, K) with.
"""

from __future__ import annotations

import numpy as np

from ._blas_threads import forward_backward_blas
from .forward_backward import forward_backward, forward_backward_levels
from .kernels import viterbi, viterbi_levels

__all__ = ["check_levels", "forward_backward_inputs", "input_levels",
           "transition_counts_from_resp", "viterbi_inputs"]


def check_levels(U, n_frames, n_levels=None):
    """The input levels ``U`` as int64 (n_frames,): one integer level per row of X (a
    column vector is accepted), in [0, n_levels) when ``n_levels`` is given (else
    non-negative).  A clear ValueError naming ``U`` otherwise."""
    arr = np.asarray(U)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != n_frames:
        raise ValueError(f"U must hold one input level per row of X ({n_frames}); got "
                         f"shape {np.shape(U)}.")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError("U must hold integer input levels (categorical transition "
                             "inputs); got non-integer or non-finite values.")
    elif arr.dtype.kind not in "iub":
        raise ValueError(f"U must hold integer input levels (categorical transition "
                         f"inputs); got dtype {arr.dtype}.")
    arr = arr.astype(np.int64)
    if arr.size and arr.min() < 0:
        raise ValueError(f"U must hold input levels >= 0; got {arr.min()}.")
    if n_levels is not None and arr.size and arr.max() >= n_levels:
        raise ValueError(f"U holds input level {arr.max()}, outside the model's levels "
                         f"[0, {n_levels}) (n_input_levels_).")
    return arr


def input_levels(est, U, n_frames, reset):
    """The input levels of ``U`` for the estimator ``est`` (None for a plain HMM) and
    the number of levels, with a clear error when ``U`` and the model disagree; on the
    training data (``reset``) that number is set as ``n_input_levels_``."""
    if est.transition_inputs is None:
        if U is not None:
            raise ValueError("U (transition inputs) was given to a VBHiddenMarkov "
                             "with transition_inputs=None; set "
                             "transition_inputs='categorical' to fit input-driven "
                             "transitions.")
        if reset:
            est.__dict__.pop("n_input_levels_", None)
        return None, None
    if U is None:
        raise ValueError("U is required: this VBHiddenMarkov has "
                         f"transition_inputs={est.transition_inputs!r}; give U, one "
                         "input level per row of X.")
    if reset:
        levels = check_levels(U, n_frames, est.n_input_levels)
        est.n_input_levels_ = int(est.n_input_levels if est.n_input_levels is not None
                                   else levels.max(initial=0) + 1)
        return levels, est.n_input_levels_
    n_levels = getattr(est, "n_input_levels_", None)
    if n_levels is None:
        raise ValueError("U (transition inputs) was given, but this VBHiddenMarkov was "
                         "fitted without them; refit it with U.")
    return check_levels(U, n_frames, n_levels), n_levels


def forward_backward_inputs(log_startprob, log_transmat, levels, log_emis, index, starts,
                            ends, want_posteriors, allow_batched=True):
    """:func:`~.forward_backward.forward_backward` for a plain HMM (``log_transmat``
    (K, K), ``levels`` None) or an input-driven one (``log_transmat`` (L, K, K), the
    frames' ``levels``); the transition counts have the shape of ``log_transmat``.
    ``allow_batched=False`` runs the sequences one after another whatever their number
    (see :func:`~.forward_backward.forward_backward_scaled_levels`)."""
    with forward_backward_blas(log_emis, index, starts, ends):
        if log_transmat.ndim == 3:
            return forward_backward_levels(log_startprob, log_transmat, levels, log_emis,
                                           index, starts, ends, want_posteriors,
                                           allow_batched)
        return forward_backward(log_startprob, log_transmat, log_emis, index, starts, ends,
                                want_posteriors, allow_batched)


def viterbi_inputs(log_startprob, log_transmat, levels, log_emis, index, starts, ends):
    """:func:`~.kernels.viterbi` for a plain HMM or an input-driven one (as
    :func:`forward_backward_inputs`)."""
    if log_transmat.ndim == 3:
        return viterbi_levels(log_startprob, log_transmat, levels, log_emis, index, starts,
                              ends)
    return viterbi(log_startprob, log_transmat, log_emis, index, starts, ends)


def transition_counts_from_resp(resp, starts, levels, n_levels):
    """The transition counts of the responsibilities ``resp`` (n_frames, K) (a start's
    labelling): (K, K) for a plain HMM (``levels`` None), else (L, K, K), the pairs of
    every level summed (one product per level, not per frame)."""
    inner = np.ones(resp.shape[0], dtype=bool)
    inner[starts] = False
    idx = np.flatnonzero(inner)
    if levels is None:
        return resp[idx - 1].T @ resp[idx]
    K = resp.shape[1]
    out = np.zeros((n_levels, K, K))
    for lv in range(n_levels):
        at = idx[levels[idx] == lv]
        out[lv] = resp[at - 1].T @ resp[at]
    return out
