"""The online learning of :class:`~sklearn_vb.hmm.VBHiddenMarkov`
(``learning_method="online"`` and ``partial_fit``): epochs of natural-gradient steps on
q(theta) from minibatches of sequences or, with ``subchain_length``, from subchains of
long sequences.

The steps themselves are :func:`~sklearn_vb.hmm._online.natural_step` and the passes of
:mod:`~sklearn_vb.hmm._subchains`; these functions run them on a fitted estimator's q(theta)
(``est``), keep the step count ``n_batch_iter_`` and the subchain buffer
``buffer_length_`` on it, and return the bound estimates the estimator records.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from .._core.distributed import is_dask_array
from .._core.online import check_online_method
from .._core.validation import check_unused_y, fitted_from_sequence_ids
from ._distributed import in_memory
from ._fitted import set_fitted_posterior
from ._online import minibatches, natural_step, step_size
from ._online_start import online_start
from ._subchains import (BUFFER_START, auto_buffer_pass, n_positions, sample_subchains,
                         window_pass)
from ._vbem import kl_terms, vbe_statistics

__all__ = ["check_online", "kl_total", "minibatch_step", "partial_fit", "partial_fit_pass",
           "run_online", "subchain_step", "subchain_steps_per_pass"]


def check_online(est, what):
    """Refuse the settings online learning (``what``: the argument or method asking for
    it) cannot combine with."""
    check_online_method(est.method, what)
    if est.optimize_prior_strengths:
        raise ValueError(f"{what} cannot be combined with optimize_prior_strengths=True "
                         "(the steps average q(theta) under one fixed prior).")


def kl_total(est):
    """KL(q(theta) || p(theta)) of the estimator's current q(theta)."""
    return sum(kl_terms(est._family, est._hyper("posterior"), est._hyper("prior")))


def _take_step(est, stats, scale):
    """The natural-gradient step of q(theta) from ``stats`` scaled by ``scale``, with
    the next step size; stores the new q(theta) and returns the step."""
    rho = step_size(est.learning_offset, est.learning_decay, est.n_batch_iter_)
    step = natural_step(est._family, est._hyper("prior"), est._hyper("posterior"), stats,
                        scale, rho)
    est._set_posterior(step.posterior)
    est.n_batch_iter_ += 1
    return step


def minibatch_step(est, data, total_samples):
    """One step from the minibatch ``data`` as a sample of ``total_samples`` sequences.
    Returns sum ln Z of the minibatch under the q(theta) before the step, and the step."""
    family, prior, posterior = est._family, est._hyper("prior"), est._hyper("posterior")
    log_norm, stats = vbe_statistics(data, family, posterior, prior.emission)
    return log_norm, _take_step(est, stats, float(total_samples) / data.n_sequences)


def subchain_step(est, data, rng):
    """One step from ``batch_size`` subchains of ``data`` drawn by ``rng``.  Returns the
    scaled estimate of sum ln Z under the q(theta) before the step, and the step."""
    family, prior, posterior = est._family, est._hyper("prior"), est._hyper("posterior")
    sub = sample_subchains(data.starts, data.lengths, est.subchain_length, est.batch_size,
                           rng)
    if est.buffer_length == "auto":
        local, est.buffer_length_ = auto_buffer_pass(
            family, posterior, prior, data, sub, getattr(est, "buffer_length_", BUFFER_START))
    else:
        local = window_pass(family, posterior, prior, data, sub, est.buffer_length)
        est.buffer_length_ = int(est.buffer_length)
    step = _take_step(est, local.stats, sub.scale)
    return sub.scale * local.log_norm, step


def subchain_steps_per_pass(est, data):
    """Steps whose subchains hold as many frames as ``data`` in expectation."""
    P = n_positions(data.lengths, est.subchain_length)
    return max(1, int(np.ceil(P / (est.batch_size * est.subchain_length))))


def run_online(est, data):
    """Epochs of steps over ``data`` in random orders (``learning_method="online"``);
    returns the per-epoch bound estimates and whether they converged."""
    rng = getattr(est, "_online_rng", None)  # the start's, set by _initialize
    if rng is None:  # a warm start
        rng = check_random_state(est.random_state)
    if not hasattr(est, "n_batch_iter_"):
        est.n_batch_iter_ = 1
    est._fresh = False
    trace, converged = [], False
    est._run_bounds = trace  # what _can_stop reads
    for epoch in range(1, est.max_iter + 1):
        log_norm = 0.0
        if est.subchain_length is not None:
            n_steps = subchain_steps_per_pass(est, data)
            for _ in range(n_steps):
                log_norm += subchain_step(est, data, rng)[0] / n_steps
        else:
            for seq in minibatches(data.n_sequences, est.batch_size, rng):
                log_norm += minibatch_step(est, data.sequences(seq, est._family),
                                           data.n_sequences)[0]
        trace.append(log_norm - kl_total(est))
        if est.verbose >= 2 and epoch % est.verbose_interval == 0:
            print(f"  epoch {epoch}: bound estimate {trace[-1]:.6f}")
        if (len(trace) > 1 and abs(trace[-1] - trace[-2]) < est.tol * data.n_frames
                and est._can_stop(epoch)):
            converged = True
            break
    return trace, converged


def partial_fit_pass(est, data, history):
    """The steps of one ``partial_fit`` call on ``data`` (minibatches of
    ``batch_size`` sequences in order, or one pass of subchains), each bound estimate
    appended to ``history``; returns the last sum ln Z estimate and step."""
    if not hasattr(est, "n_batch_iter_"):
        est.n_batch_iter_ = 1
    total = float(est.total_samples)
    if est.subchain_length is not None:
        rng = getattr(est, "_online_rng", None)
        if rng is None:
            rng = est._online_rng = check_random_state(est.random_state)
        for _ in range(subchain_steps_per_pass(est, data)):
            log_norm, step = subchain_step(est, data, rng)
            history.append(log_norm - kl_total(est))
        return log_norm, step
    for seq in minibatches(data.n_sequences, est.batch_size):
        batch = data if len(seq) == data.n_sequences else data.sequences(seq, est._family)
        log_norm, step = minibatch_step(est, batch, total)
        log_norm *= total / batch.n_sequences
        history.append(log_norm - kl_total(est))
    return log_norm, step


def first_minibatch(est, data):
    """The sequences the first ``partial_fit`` starts q(theta) from: its first
    minibatch (all of ``data`` with ``subchain_length``, whose minibatches are drawn
    from all of it), with the summary of all of ``data`` for the default priors.
    A start from the whole call would hold arrays of all its frames at once."""
    if est.subchain_length is not None or data.n_sequences <= est.batch_size:
        return data
    first = data.sequences(np.arange(est.batch_size), est._family)
    first.summary = data.summary
    return first


def partial_fit(est, X, y, lengths, sequence_ids, states):
    """:meth:`~sklearn_vb.hmm.VBHiddenMarkov.partial_fit`: the steps from the sequences
    of ``X``, from a start on them when ``est`` is not fitted yet."""
    est._validate_params()
    if est.transition_inputs is not None:
        raise ValueError("partial_fit (online VB) does not support transition_inputs; "
                         "fit the input-driven model by fit (batch VBEM).")
    check_online(est, "partial_fit")
    check_unused_y(y, X, "partial_fit")
    if hasattr(est, "lower_bound_") and est._point_fitted:
        raise ValueError("partial_fit continues q(theta); this model holds a point "
                         "estimate of an earlier fit with method='ml' or 'map'.")
    X = in_memory(X, "partial_fit")
    if is_dask_array(X):
        # a chunk of a stream (dask-ml's Incremental feeds blocks one by one): one
        # call holds its X in memory anyway
        X = X.compute()
    if not hasattr(est, "lower_bound_"):
        data = est._check_fit_data(X, lengths, sequence_ids, states)
        first_batch = first_minibatch(est, data)
        random_state = check_random_state(est.random_state)
        # the first kind of "auto" whatever learning_method is (its draws come first)
        est._initialize(first_batch, random_state, start=est._family.default_inits[0]
                        if est.init_params == "auto" else est.init_params)
        if est.init_params == "auto" and est.subchain_length is None:
            est._set_posterior(online_start(est, first_batch, random_state,
                                            float(est.total_samples) / first_batch.n_sequences,
                                            est._family.default_inits))
    else:
        if states is not None and est.subchain_length is not None:
            est._check_fit_data(X, lengths, sequence_ids, states)  # raises
        data = est._sequence_data(X, lengths, sequence_ids, reset=False, states=states)
    history = list(est.lower_bounds_) if getattr(est, "_streamed", False) else []
    log_norm, step = partial_fit_pass(est, data, history)
    est._stats_ = step.scaled_stats
    set_fitted_posterior(est, log_norm)
    est._record_stream(history)
    # the stored q(theta) has no q(s) of any fit data: a warm-started fit begins
    # with a VBE step, as after a start
    est._fresh = True
    est._fitted_from_sequence_ids = fitted_from_sequence_ids(sequence_ids)
    return est
