"""The predictive probability of new sequences under a fitted
:class:`~sklearn_vb.hmm.VBHiddenMarkov` (Beal 2003, §3.4.2).

The Bayesian predictive probability of a test sequence x' given the training data is
the likelihood averaged over the posterior, approximated by averaging over q(theta):

    p(x' | data) ~ integral q(theta) p(x' | theta) d theta            (thesis eq. 3.81)

It is intractable (a sum over state paths of products of Dirichlet integrals).
:func:`predictive_log_likelihood` offers the approximations of the thesis and two
estimates of (3.81) itself:

* ``"plugin"``: the likelihood at the posterior-mean parameters (eq. 3.85), what the
  thesis's experiments (§3.5.2) report for VB and what ``score_samples`` computes;
* ``"bound"``: the lower bound of eq. 3.84, one VBE pass on x' with q(theta) fixed;
* ``"smc"``: (3.81) by sequential Monte Carlo over the state path with the Dirichlet
  rows of q integrated out (categorical emissions; see
  :func:`~sklearn_vb.hmm.kernels.collapsed_predictive_smc`);
* ``"sample"``: (3.81) by plain Monte Carlo, parameters drawn from q and the
  likelihoods averaged.  Of use for short sequences only: on a sentence of text its
  likelihood varies by tens of nats across draws, a few draws carry the average, and
  the log of the average is far below its limit for any affordable number of draws.

Every sequence is scored on its own (q is not updated by the other test sequences).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._scoring_family import FamilyHMMScoringModel
from ._vbem import vbe
from .kernels import collapsed_predictive_smc

__all__ = ["predictive_log_likelihood", "PREDICTIVE_METHODS"]

PREDICTIVE_METHODS = ("plugin", "bound", "smc", "sample")

#: parameter draws evaluated together by ``method="sample"`` (memory: draws x the
#: parameter arrays)
_DRAW_CHUNK = 64


def predictive_log_likelihood(estimator, X, lengths=None, sequence_ids=None, *,
                              method="plugin", n_particles=100, n_draws=1000,
                              resample_below=0.5, random_state=None, U=None):
    """ln p(x_s | training data) of every sequence s of ``X`` under a fitted HMM.

    Parameters
    ----------
    estimator : VBHiddenMarkov
        Fitted.  ``method="plugin"`` also takes a point fit (``method="ml"``/``"map"``),
        which it scores at its point; the others need q(theta).
    X, lengths, sequence_ids, U
        The sequences, as in :meth:`~sklearn_vb.VBHiddenMarkov.score_samples`
        (``U``: input levels of a model with transition inputs; ``"plugin"`` and
        ``"bound"`` only).
    method : {"plugin", "bound", "smc", "sample"}, default="plugin"
        ``"plugin"``: ln p(x_s | mean of q) (Beal 2003 eq. 3.85).  ``"bound"``: the lower
        bound on ln of eq. 3.81 by one VBE pass with q(theta) fixed (eq. 3.84).
        ``"smc"``: ln of eq. 3.81, ``E_q p(x_s | theta)``, estimated by a particle filter
        over the state path with q's Dirichlet rows integrated out (categorical
        emissions).  The estimate of the probability is unbiased; its log is biased low
        (by about half its variance, which shrinks as ``n_particles`` grows), so on
        average it errs below the predictive.  ``"sample"``: ln of the average of
        p(x_s | theta_m) over ``n_draws`` draws from q (any emission family); biased
        low by far more on long sequences (see the module's notes).
    n_particles : int, default=100
        Particles of ``"smc"``.
    n_draws : int, default=1000
        Parameter draws of ``"sample"``.
    resample_below : float in (0, 1], default=0.5
        ``"smc"`` resamples when the effective number of particles falls below this
        fraction of ``n_particles`` (1: at every step).
    random_state : int, RandomState or None
        Seed of ``"smc"`` and ``"sample"``.

    Returns
    -------
    ndarray of shape (n_sequences,)
        Log predictive probability of every sequence, in nats.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.hmm import VBHiddenMarkov, predictive_log_likelihood
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randint(0, 3, size=(60, 1))
    >>> model = VBHiddenMarkov(2, n_init=1, random_state=0).fit(X, lengths=[30, 30])
    >>> plugin = predictive_log_likelihood(model, X[:20], lengths=[10, 10])
    >>> smc = predictive_log_likelihood(model, X[:20], lengths=[10, 10], method="smc",
    ...                                 n_particles=200, random_state=0)
    >>> plugin.shape, smc.shape
    ((2,), (2,))
    """
    check_is_fitted(estimator, "lower_bound_")
    if method not in PREDICTIVE_METHODS:
        raise ValueError(f"method must be one of {PREDICTIVE_METHODS}; got {method!r}.")
    fit_params = {"lengths": lengths, "sequence_ids": sequence_ids}
    if U is not None:
        fit_params["U"] = U
    if method == "plugin":
        return estimator.score_samples(X, per="sequence", **fit_params)
    if estimator._point_fitted:
        raise ValueError(f"method={method!r} needs q(theta); this model was fitted with "
                         f"method={estimator.method!r} (only method='plugin' scores it).")
    data = estimator.check_data(X, **fit_params)
    if method == "bound":
        out = vbe(estimator._family, estimator._hyper("posterior"), data,
                  want_posteriors=False)[0]
        return np.asarray(out[0], dtype=float)
    if getattr(estimator, "transition_inputs", None) is not None:
        raise NotImplementedError(f"method={method!r} does not condition on transition "
                                  "inputs; use 'plugin' or 'bound'.")
    rng = check_random_state(random_state)
    if method == "smc":
        return _smc(estimator, data, n_particles, resample_below, rng)
    return _sample(estimator, X, lengths, sequence_ids, n_draws, rng)


def _smc(estimator, data, n_particles, resample_below, rng):
    if estimator.emission != "categorical":
        raise NotImplementedError("method='smc' integrates Dirichlet emission rows out: "
                                  "categorical emissions only; use 'sample' or 'bound'.")
    if int(n_particles) < 1:
        raise ValueError(f"n_particles must be a positive integer; got {n_particles!r}.")
    if not 0 < float(resample_below) <= 1:
        raise ValueError(f"resample_below must be in (0, 1]; got {resample_below!r}.")
    as_float = lambda a: np.ascontiguousarray(a, dtype=float)  # noqa: E731
    return collapsed_predictive_smc(
        as_float(estimator.startprob_posterior_), as_float(estimator.transmat_posterior_),
        as_float(estimator.emissionprob_posterior_),
        np.ascontiguousarray(data.X, dtype=np.int64).ravel(),
        np.asarray(data.starts, dtype=np.int64), np.asarray(data.ends, dtype=np.int64),
        int(n_particles), int(rng.randint(2**31 - 1)), float(resample_below))


def _sample(estimator, X, lengths, sequence_ids, n_draws, rng):
    if int(n_draws) < 1:
        raise ValueError(f"n_draws must be a positive integer; got {n_draws!r}.")
    model = FamilyHMMScoringModel(estimator)
    q = model.variational_posterior()
    seqs = model.prepare_data(X, lengths=lengths, sequence_ids=sequence_ids)
    generator = np.random.default_rng(rng.randint(2**31 - 1))
    parts, left = [], int(n_draws)
    while left > 0:
        size = min(left, _DRAW_CHUNK)
        parts.append(model.log_likelihood_per_sequence(q.sample(generator, size), seqs))
        left -= size
    return logsumexp(np.concatenate(parts), axis=0) - np.log(int(n_draws))
