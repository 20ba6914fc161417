"""The predictions of a fitted :class:`~sklearn_vb.hmm.VBHiddenMarkov` on new
sequences: the forward pass at the plug-in parameters, the state marginals, Viterbi
paths and samples.

The plug-in parameters are the posterior means of q(theta) for a VB fit and the point
of ``method="ml"``/``"map"`` otherwise; ``est`` is the fitted estimator and ``data``
the sequence data of :meth:`~sklearn_vb.hmm.VBHiddenMarkov.check_data`.
"""

from __future__ import annotations

import numpy as np

from ._blas_threads import forward_backward_blas
from ._clamp import clamp_table
from ._inputs import (forward_backward_inputs, plugin_transitions, sample_transitions,
                      viterbi_inputs)
from ._vbem import expected_log_params, frame_marginals
from .forward_backward import forward_backward

__all__ = ["plugin_forward", "sample_sequence", "state_marginals", "viterbi_path"]


def _plugin_table_index(est, data):
    """The log emission table at the fitted parameters and the table row of every
    frame: the posterior-mean plug-in of VB, or the point of ``method="ml"/"map"``."""
    family = est._family
    if est._point_fitted:
        table = family.log_likelihood_tables(est._theta_.blocks(), data.X)[0]
        return table, np.arange(data.n_frames, dtype=np.int64)
    table = family.log_table(family.plugin_params(est._emission("posterior")), data.X)
    return table, data.index


def plugin_forward(est, data, want_posteriors=False):
    """The forward(-backward) pass at the plug-in parameters (see
    :func:`~sklearn_vb.hmm.forward_backward.forward_backward`), over the state paths
    that agree with the known states of ``data``."""
    table, index = _plugin_table_index(est, data)
    table, index, _ = clamp_table(table, index, data.known_states)
    log_A, levels = plugin_transitions(est, data.inputs)
    return forward_backward_inputs(np.log(est.startprob_), log_A, levels, table, index,
                                   data.starts, data.ends, want_posteriors)


def state_marginals(est, data):
    """q(s_t) of every frame under the current q(theta), (n_frames, K) (for a point
    fit: p(s_t | X, theta) at the point), given the known states of ``data``."""
    if est._point_fitted:
        table, index = _plugin_table_index(est, data)  # one row per frame
        table, index, _ = clamp_table(table, index, data.known_states)
        with forward_backward_blas(table, index, data.starts, data.ends):
            out = forward_backward(np.log(est.startprob_), np.log(est.transmat_), table,
                                   index, data.starts, data.ends, True)
        return out[4][index]
    return frame_marginals(est._family, est._hyper("posterior"), data)


def viterbi_path(est, data, parameters):
    """The Viterbi path through the known states of ``data`` under the plug-in
    parameters (``parameters="mean"``) or exp E[ln theta] (``"expected_log"``);
    returns (log-weight of the best paths summed, states)."""
    if parameters == "mean" or est._point_fitted:
        log_pi = np.log(est.startprob_)
        log_A, levels = plugin_transitions(est, data.inputs)
        table, index = _plugin_table_index(est, data)
    else:
        log_pi, log_A, LE = expected_log_params(est._family, est._hyper("posterior"))
        levels = data.inputs
        table, index = est._family.log_table(LE, data.X), data.index
    table, index, _ = clamp_table(table, index, data.known_states)
    path, best = viterbi_inputs(log_pi, log_A, levels, np.ascontiguousarray(table),
                                index, data.starts, data.ends)
    return float(best.sum()), path


def sample_sequence(est, n_samples, rng, inputs=None):
    """One sequence of ``n_samples`` frames from the plug-in model, with the transition
    inputs of every frame ``inputs`` (levels, or the design rows of continuous inputs)
    for a model with transition inputs; ``(X, states)``."""
    u = rng.random_sample(n_samples)
    bounds = np.array([0]), np.array([n_samples])
    states = sample_transitions(est, est.startprob_, inputs, u, *bounds)
    if est._point_fitted:
        frames = est._family.simulate(est._theta_.blocks(), states, rng)
        return (frames.reshape(-1, 1) if frames.ndim == 1 else frames), states
    return est._family.sample(est._emission("posterior"), states, rng), states
