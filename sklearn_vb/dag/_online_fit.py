"""The online learning of :class:`~sklearn_vb.dag.VBDiscreteDAG`
(``learning_method="online"`` and ``partial_fit``): natural-gradient steps on q(theta)
from minibatches of rows.

The step itself is :func:`~sklearn_vb.dag._online.natural_step`; these functions run it
on the estimator's q(theta) (``est``: the Dirichlet parameters ``_alpha_``, with
``_elog_`` and ``_kl_``), keep the step count ``n_batch_iter_`` on it, and return the
bound estimates the estimator records.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from .._core.online import minibatches, run_epochs, step_size
from ._encoding import positive_rows
from ._online import minibatch_statistics, natural_step
from .kernels import dirichlet_update
from .structure import prepare_patterns

__all__ = ["online_step", "partial_fit", "run_online", "vbm_from_counts"]


def vbm_from_counts(est, prior):
    """The VBM step of the stored counts (the first q(theta) of an online run)."""
    est._alpha_ = np.empty(est._layout.size)
    est._elog_ = np.empty(est._layout.size)
    est._kl_ = float(dirichlet_update(prior, est._counts_, est._layout.row_ptr,
                                      est._alpha_, est._elog_))
    est._fresh = False


def online_step(est, codes, weights, total_samples):
    """One natural-gradient step of q(theta) from the minibatch of rows ``codes``
    (weights ``weights``) as a sample of ``total_samples`` rows
    (:func:`~sklearn_vb.dag._online.natural_step`).  Returns the minibatch's
    statistics (sum w ln Z under the q(theta) before the step) and the step."""
    stats = minibatch_statistics(est._elog_, codes, weights, est._layout,
                                 est.max_configurations)
    rho = step_size(est.learning_offset, est.learning_decay, est.n_batch_iter_)
    step = natural_step(est._prior, est._alpha_, stats.counts,
                        float(total_samples) / stats.weight, rho, est._layout.row_ptr)
    est._alpha_, est._elog_, est._kl_ = step.alpha, step.expected_log, step.kl
    est.n_batch_iter_ += 1
    return stats, step


def run_online(est, data):
    """Epochs of minibatch steps over the rows of ``data`` in random orders
    (``learning_method="online"``); returns the per-epoch bound estimates and
    whether they converged (see ``learning_method``)."""
    if getattr(est, "_fresh", False):
        vbm_from_counts(est, data.prior)
    est._stale_counts = False
    codes, weights = data.codes, data.row_weights
    total = float(weights.sum())

    def epoch(batches):
        log_norm = 0.0
        for rows in batches:
            log_norm += online_step(est, codes[rows], weights[rows], total)[0].log_normaliser
        return log_norm - est._kl_

    return run_epochs(est, codes.shape[0], epoch, total)


def partial_fit(est, X, sample_weight):
    """:meth:`~sklearn_vb.dag.VBDiscreteDAG.partial_fit`: the steps from the rows of
    ``X``, from a start on them when ``est`` is not fitted yet."""
    est._validate_params()
    est._check_online("partial_fit")
    if hasattr(est, "lower_bound_") and not hasattr(est, "posterior_"):
        raise ValueError("partial_fit continues q(theta); this model holds a point "
                         "estimate of an earlier fit with method='ml' or 'map'.")
    if not hasattr(est, "lower_bound_"):
        data = est._check_fit_data(X, sample_weight)
        est._initialize(data, check_random_state(est.random_state))
        est.__dict__.pop("_online_rng", None)
        vbm_from_counts(est, data.prior)
        codes, weights, pdata = data.codes, data.row_weights, data.pdata
    else:
        codes, weights = positive_rows(*est._codes(X, sample_weight))
        weights = np.ones(codes.shape[0]) if weights is None else weights
        pdata = prepare_patterns(codes, weights, est._layout,
                                 max_configurations=est.max_configurations)
    if not hasattr(est, "n_batch_iter_"):
        est.n_batch_iter_ = 1
    history = list(est.lower_bounds_) if getattr(est, "_streamed", False) else []
    total = float(est.total_samples)
    for rows in minibatches(codes.shape[0], est.batch_size):
        whole = rows.shape[0] == codes.shape[0]
        stats, step = online_step(est, codes if whole else codes[rows],
                                  weights if whole else weights[rows], total)
        history.append(total / stats.weight * stats.log_normaliser - est._kl_)
    est._counts_ = step.scaled_counts
    theta = est._set_fitted_tables(est._layout, est._prior)
    est.log_likelihood_ = est._weighted_log_likelihood(pdata, theta)
    est._record_stream(history)
    # the stored counts are a scaled minibatch's, not those of any fit data: a
    # warm-started batch fit begins with a VBE step
    est._stale_counts = True
    return est
