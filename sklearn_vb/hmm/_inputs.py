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

Continuous inputs (``transition_inputs="continuous"``): ``U`` is a real (n_frames, P)
array and the transitions are stick-breaking logistic functions of the design rows
[u_t, 1] with Gaussian coefficients, made conjugate by the Jaakkola-Jordan bound
(:mod:`._logistic_transitions`, where the derivation is).  The frames' *transition
inputs* that the fit data carry (``_FitData.inputs``) are then that design (n_frames,
P + 1) instead of the levels, q(A) is a :class:`~._logistic_transitions.
LogisticCoefficients`, and E[ln A] becomes the moments of q(W)
(:class:`~._logistic_transitions.CoefficientMoments`), from which the functions here
make one (K, K) matrix of log-weights per frame for the levelled kernels (every frame
its own level).
"""

from __future__ import annotations

import numpy as np

from . import _logistic_transitions as lt
from ._blas_threads import forward_backward_blas
from .emissions._checks import check_dirichlet_prior
from .forward_backward import forward_backward, forward_backward_levels
from .kernels import sample_states, sample_states_levels, viterbi, viterbi_levels

__all__ = ["check_continuous_inputs", "check_levels", "forward_backward_inputs",
           "n_transition_parameters", "plugin_transitions", "sample_transitions",
           "transition_counts_from_resp", "transition_inputs_of", "transition_prior",
           "viterbi_inputs"]


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


def check_continuous_inputs(U, n_frames, n_features=None):
    """The continuous inputs ``U`` as float (n_frames, P): one row per row of X (a 1-D
    array is one input), finite, with ``n_features`` columns when given.  A clear
    ValueError naming ``U`` otherwise."""
    try:
        arr = np.asarray(U, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("U must hold real numbers (continuous transition inputs); got "
                         f"values of type {np.asarray(U).dtype}.") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != n_frames or arr.shape[1] < 1:
        raise ValueError(f"U must hold one row of inputs per row of X ({n_frames}), as "
                         f"an array of shape (n_samples, n_inputs); got shape "
                         f"{np.shape(U)}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError("U must be finite (continuous transition inputs); got NaN or "
                         "infinite values.")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"U has {arr.shape[1]} input columns, but this VBHiddenMarkov "
                         f"was fitted with {n_features} (n_input_features_).")
    return arr


def transition_inputs_of(est, U, n_frames, reset):
    """The transition inputs of ``U`` for the estimator ``est`` and its number of input
    levels: ``(None, None)`` for a plain HMM, ``(levels, L)`` for categorical inputs
    (int64 (n_frames,)), ``(design, None)`` for continuous ones (the rows [u_t, 1],
    (n_frames, P + 1)), with a clear error when ``U`` and the model disagree.  On the
    training data (``reset``) ``n_input_levels_`` or ``n_input_features_`` is set (and
    the other removed)."""
    kind = est.transition_inputs
    if reset:
        for name in ("n_input_levels_", "n_input_features_"):
            est.__dict__.pop(name, None)
    if kind is None:
        if U is not None:
            raise ValueError("U (transition inputs) was given to a VBHiddenMarkov "
                             "with transition_inputs=None; set "
                             "transition_inputs='categorical' or 'continuous' to fit "
                             "input-driven transitions.")
        return None, None
    if U is None:
        what = ("one input level per row of X" if kind == "categorical"
                else "an (n_samples, n_inputs) array of real inputs")
        raise ValueError(f"U is required: this VBHiddenMarkov has "
                         f"transition_inputs={kind!r}; give U, {what}.")
    if kind == "continuous":
        if reset:
            U = check_continuous_inputs(U, n_frames)
            est.n_input_features_ = int(U.shape[1])
            return lt.design_matrix(U), None
        n_features = getattr(est, "n_input_features_", None)
        if n_features is None:
            raise ValueError("U (continuous transition inputs) was given, but this "
                             "VBHiddenMarkov was not fitted with them; refit it with U.")
        return lt.design_matrix(check_continuous_inputs(U, n_frames, n_features)), None
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


def transition_prior(est, data):
    """The prior of the transitions of ``est`` on the fit data ``data``: Dirichlet
    counts (K, K), or (L, K, K) with categorical inputs, from ``transmat_prior``; with
    continuous inputs the Gaussian p(W) of :func:`~._logistic_transitions.
    logistic_prior`, its bias moments from the (K, K) Dirichlet ``transmat_prior`` and
    its input-coefficient variances from ``transition_coef_prior``."""
    K = est.n_components
    inputs = getattr(data, "inputs", None)  # a dask fit has no inputs
    if est.transition_inputs == "continuous":
        rows = check_dirichlet_prior(est.transmat_prior, "transmat_prior", (K, K), 1.0 / K)
        P = inputs.shape[1] - 1
        var = np.asarray(est.transition_coef_prior, dtype=float)
        if var.ndim > 1 or (var.ndim == 1 and var.shape[0] != P) \
                or not np.all(np.isfinite(var)) or np.any(var <= 0):
            raise ValueError(f"transition_coef_prior must be a positive variance or an "
                             f"array of {P} (one per input column); got "
                             f"{est.transition_coef_prior!r}.")
        return lt.logistic_prior(rows, np.broadcast_to(var, (P,)))
    shape = (K, K) if inputs is None else (data.n_levels, K, K)
    return check_dirichlet_prior(est.transmat_prior, "transmat_prior", shape, 1.0 / K)


def n_transition_parameters(est):
    """Free parameters of the fitted transitions: K (K - 1) per input level (one level
    without inputs), or per design column with continuous inputs."""
    K = est.n_components
    n_features = getattr(est, "n_input_features_", None)
    per = n_features + 1 if n_features is not None else getattr(est, "n_input_levels_", 1)
    return K * (K - 1) * per


def _kernel_transitions(log_transmat, inputs):
    """The transition log-weights as the levelled kernels take them, the level of
    every frame and the xi of the bound (None unless ``log_transmat`` is the moments of
    a logistic q(W): then one matrix per frame, at the optimal xi)."""
    if isinstance(log_transmat, lt.CoefficientMoments):
        weights, xi = lt.jj_log_weights(log_transmat.mean, log_transmat.second, inputs)
        return weights, np.arange(inputs.shape[0], dtype=np.int64), xi
    return log_transmat, inputs, None


def forward_backward_inputs(log_startprob, log_transmat, levels, log_emis, index, starts,
                            ends, want_posteriors, allow_batched=True):
    """:func:`~.forward_backward.forward_backward` for a plain HMM (``log_transmat``
    (K, K), ``levels`` None) or an input-driven one (``log_transmat`` (L, K, K), the
    frames' ``levels``); the transition counts have the shape of ``log_transmat``.
    With continuous inputs ``log_transmat`` is the :class:`~._logistic_transitions.
    CoefficientMoments` of q(W) and ``levels`` the design rows: the pass runs at the
    bound's per-frame weights (one after another: every frame has its own matrix, so
    there is no matrix-matrix work to share) and the transition statistics are the
    :class:`~._logistic_transitions.LogisticStats` of q(W).  ``allow_batched=False``
    runs the sequences one after another whatever their number (see
    :func:`~.forward_backward.forward_backward_scaled_levels`)."""
    design = levels
    log_transmat, levels, xi = _kernel_transitions(log_transmat, levels)
    if xi is not None:
        out = forward_backward_levels(log_startprob, log_transmat, levels, log_emis, index,
                                      starts, ends, want_posteriors, False)
        if not want_posteriors:
            return out
        stats = lt.LogisticStats(*lt.stats_from_pairs(out[3], xi, design))
        return out[:3] + (stats,) + out[4:]
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
    log_transmat, levels, _ = _kernel_transitions(log_transmat, levels)
    if log_transmat.ndim == 3:
        return viterbi_levels(log_startprob, log_transmat, levels, log_emis, index, starts,
                              ends)
    return viterbi(log_startprob, log_transmat, log_emis, index, starts, ends)


def transition_counts_from_resp(resp, starts, levels, n_levels):
    """The transition counts of the responsibilities ``resp`` (n_frames, K) (a start's
    labelling): (K, K) for a plain HMM (``levels`` None), else (L, K, K), the pairs of
    every level summed (one product per level, not per frame); with continuous inputs
    (``levels`` the design rows) the statistics of q(W) at xi = 0."""
    if levels is not None and levels.ndim == 2:
        return lt.stats_from_resp(resp, starts, levels)
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


def plugin_transitions(est, levels):
    """The log transition weights of the plug-in model of ``est`` (posterior means of a
    VB fit, or its point) and the frames' levels, as the kernels take them: the
    posterior-mean matrices with the frames' ``levels`` (None for a plain HMM), or with
    continuous inputs (``levels`` the design rows) the stick-breaking logistic
    log-probabilities of every frame at the posterior-mean coefficients."""
    if est.transition_inputs == "continuous":
        return (lt.stick_breaking_log_probs(est.transition_coef_, levels),
                np.arange(levels.shape[0], dtype=np.int64))
    return np.log(est.transmat_), levels


def sample_transitions(est, startprob, levels, uniforms, starts, ends):
    """State paths drawn from the plug-in transitions of ``est`` (see
    :func:`plugin_transitions`) by inversion of ``uniforms``."""
    if levels is None:
        return sample_states(startprob, est.transmat_, uniforms, starts, ends)
    log_A, levels = plugin_transitions(est, levels)
    A = np.exp(log_A) if est.transition_inputs == "continuous" else est.transmat_
    return sample_states_levels(startprob, A, levels, uniforms, starts, ends)
