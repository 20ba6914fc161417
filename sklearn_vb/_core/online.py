"""Step sizes and minibatches of online (stochastic natural-gradient) variational Bayes.

Hoffman, Blei, Wang & Paisley (2013), "Stochastic variational inference", with
scikit-learn's ``LatentDirichletAllocation`` conventions (``learning_offset``,
``learning_decay``, ``n_batch_iter_`` counting from 1).  Every estimator with
``partial_fit`` / ``learning_method="online"`` takes its step sizes and minibatches from
here; the natural-gradient step itself is the model's own (``hmm._online``,
``dag._online``).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

__all__ = ["ONLINE_PARAMETER_CONSTRAINTS", "check_online_method", "minibatches", "run_epochs",
           "step_size"]

#: The constraints on the online-learning parameters every estimator with
#: ``partial_fit`` shares (scikit-learn's parameter validation), as in
#: ``LatentDirichletAllocation``.
ONLINE_PARAMETER_CONSTRAINTS: dict = {
    "learning_method": [StrOptions({"batch", "online"})],
    "learning_decay": [Interval(Real, 0.0, 1.0, closed="both")],
    "learning_offset": [Interval(Real, 0.0, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "total_samples": [Interval(Real, 0.0, None, closed="neither")],
}


def check_online_method(method, what):
    """Online learning takes natural-gradient steps on q(theta): refuse a point-estimate
    ``method`` (``what``: the argument or method asking for online learning)."""
    if method != "vb":
        raise ValueError(f"{what} needs method='vb' (natural-gradient steps on "
                         f"q(theta)); got method={method!r}.")


def step_size(learning_offset, learning_decay, n_batch_iter):
    """``rho = (learning_offset + n_batch_iter)^(-learning_decay)``.

    ``n_batch_iter`` counts from 1 (scikit-learn's ``n_batch_iter_``), so the first step
    has ``rho = (learning_offset + 1)^(-learning_decay)``, which is at most 1 for
    ``learning_offset >= 0``; ``learning_decay = 0`` gives rho = 1 at every step (then
    one step on all the data with ``total_samples`` their size is one VBEM iteration),
    and ``learning_offset = 0`` gives rho = 1 at the first step.  Hoffman et al. (2013)
    need ``learning_decay`` in (0.5, 1] for the Robbins-Monro conditions.
    """
    return float(np.power(float(learning_offset) + float(n_batch_iter), -float(learning_decay)))


def minibatches(n_items, batch_size, rng=None):
    """Consecutive minibatches of at most ``batch_size`` indices of ``n_items`` items
    (sequences, rows), in order or, with ``rng`` (a RandomState), of a random
    permutation of them."""
    order = np.arange(n_items) if rng is None else rng.permutation(n_items)
    return [order[i:i + batch_size] for i in range(0, n_items, batch_size)]


def run_epochs(est, n_items, epoch, tol_scale):
    """The epochs of ``learning_method="online"``: at most ``est.max_iter`` passes over
    ``n_items`` items (rows, sequences) in random orders, each in minibatches of
    ``est.batch_size``; ``epoch(batches)`` takes the steps of one pass and returns its
    bound estimate.  The run has converged once the estimate changes by less than
    ``est.tol * tol_scale``.  Returns the estimates and whether it converged.

    The orders continue the draws of the start's generator (``est._online_rng``, set
    by the estimator's ``_initialize``), or of ``random_state`` on a warm start; the
    step count ``n_batch_iter_`` begins at 1 on a new start.
    """
    rng = est.__dict__.pop("_online_rng", None)
    if rng is None:  # a warm start
        rng = check_random_state(est.random_state)
    if not hasattr(est, "n_batch_iter_"):
        est.n_batch_iter_ = 1
    est._run_extrapolations = None
    trace, converged = [], False
    for number in range(1, est.max_iter + 1):
        trace.append(epoch(minibatches(n_items, est.batch_size, rng)))
        if not np.isfinite(trace[-1]):
            raise FloatingPointError(
                f"{type(est).__name__}: the bound estimate is {trace[-1]} at epoch "
                f"{number}; the data or the priors are degenerate.")
        if est.verbose >= 2 and number % est.verbose_interval == 0:
            print(f"  epoch {number}: bound estimate {trace[-1]:.6f}")
        if len(trace) > 1 and abs(trace[-1] - trace[-2]) < est.tol * tol_scale:
            converged = True
            break
    return trace, converged
