"""The online learning of :class:`~sklearn_vb.mfa.VBMixtureFactorAnalysers`
(``learning_method="online"`` and ``partial_fit``, with ``search=False``):
natural-gradient steps on q(θ) from minibatches of rows.

The step itself is :func:`~sklearn_vb.mfa._online.natural_step`; these functions run it
on the estimator's state (``est._vb_``), keep the step count ``n_batch_iter_`` on the
estimator, and return the bound estimates it records.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from .._core.online import minibatches, run_epochs, step_size
from .._core.validation import validate_float_data
from ._hyper import selected_hyperparameters
from ._missing import check_missing_supported
from ._online import natural_step
from ._vbem import bound_terms, local_updates

__all__ = ["partial_fit", "run_online"]


def _global_hyper_steps(est):
    """The updates of the selected hyperparameters other than Ψ, which read only
    q(θ): the steps of the batch iteration, as callables of a minibatch."""
    names = {"mean_prior", "ard_rate", "ard_prior", "alpha_prior"}
    return [lambda batch, run=step.run: run(batch, 0)
            for step in est._iteration_steps() if step.name in names]


def _online_step(est, batch, total_samples):
    """One natural-gradient step from the minibatch ``batch`` (fit data of its rows)
    as a sample of ``total_samples`` rows (:func:`~sklearn_vb.mfa._online.natural_step`)."""
    rho = step_size(est.learning_offset, est.learning_decay, est.n_batch_iter_)
    noise = "noise" in selected_hyperparameters(est.optimize_hyperparameters)
    step = natural_step(est._vb_, batch, float(total_samples) / batch.n_samples, rho,
                        noise, _global_hyper_steps(est))
    est.n_batch_iter_ += 1
    return step


def _global_terms(st, batch):
    """The terms of F that do not sum over rows (-KL of q(π), q(ν) and q(Λ̃))."""
    t = bound_terms(st, batch)
    return float(t.pi + np.sum(t.nu) + np.sum(t.loading))


def run_online(est, data):
    """Epochs of minibatch steps over the rows of ``data`` in random orders
    (``learning_method="online"``); returns the per-epoch bound estimates and
    whether they converged (see ``learning_method``)."""
    def epoch(batches):
        local = 0.0
        for rows in batches:
            batch = replace(data, Z=data.Z[rows])
            local += _online_step(est, batch, data.n_samples).data_terms
        return local + _global_terms(est._vb_, batch) + data.log_jacobian

    return run_epochs(est, data.n_samples, epoch, data.n_samples)


def partial_fit(est, X):
    """:meth:`~sklearn_vb.mfa.VBMixtureFactorAnalysers.partial_fit`: the steps from the
    rows of ``X``, from a start on them when ``est`` is not fitted yet."""
    est._validate_params()
    est._check_online("partial_fit")
    if hasattr(est, "lower_bound_") and est._point_fitted:
        raise ValueError("partial_fit continues q(θ); this model holds a point estimate "
                         "of an earlier fit with method='ml' or 'map'.")
    with threadpool_limits(limits=1, user_api="blas"):
        if not hasattr(est, "lower_bound_"):
            data = est._check_fit_data(X)
            est._initialize(data, check_random_state(est.random_state))
            est.__dict__.pop("_online_rng", None)
        else:
            X = validate_float_data(est, X, reset=False, allow_nan=True)
            if np.isnan(X).any():
                check_missing_supported(est, "partial_fit")
            data = replace(est._units_, Z=(X - est._units_.shift) / est._units_.scale)
        if not hasattr(est, "n_batch_iter_"):
            est.n_batch_iter_ = 1
        history = list(est.lower_bounds_) if getattr(est, "_streamed", False) else []
        total = float(est.total_samples)
        for rows in minibatches(data.n_samples, est.batch_size):
            whole = rows.shape[0] == data.n_samples
            batch = data if whole else replace(data, Z=data.Z[rows])
            step = _online_step(est, batch, total)
            history.append(step.scale * (step.data_terms + batch.log_jacobian)
                           + _global_terms(est._vb_, batch))
        if est.learning_method != "online":  # (_finalize's own pass otherwise)
            local_updates(est._vb_, data)
        est._finalize(data)
    est._record_stream(history)
    # the stored q(s), q(x|s) are those of this X: a warm-started fit on other
    # data begins with a local pass
    est._stale_locals = True
    return est
