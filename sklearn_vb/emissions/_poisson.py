"""Poisson emissions with a Gamma prior on every state's rates.

X is an (n_samples, n_features) array of non-negative integer counts; given state k the
features are independent, ``x_td | s_t = k ~ Poisson(lambda_kd)``, with
``lambda_kd ~ Gamma(shape a_kd, rate b_kd)``.  The Gamma is conjugate: with state
responsibilities r_tk the posterior is ``Gamma(a_kd + sum_t r_tk x_td, b_kd + sum_t r_tk)``.

Statistics: ``N`` (K,) occupancies, ``S1`` (K, D) = sum_t r_tk x_t and ``log_factorial``
(K,) = sum_t r_tk sum_d ln x_td!, the part of ln p(x | lambda) that does not depend on
the rates.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln
from sklearn.utils.validation import validate_data

from .._distributions import gamma_expected_log, gamma_kl, gamma_mean
from ._base import EmissionFamily
from ._checks import check_positive_prior, init_posterior_array

__all__ = ["PoissonEmissions"]

#: floor of the data mean in the default prior rate, so that an all-zero feature keeps
#: a proper prior (prior mean rate 1e-3 instead of 0)
_MEAN_FLOOR = 1e-3


def _log_factorial(X):
    """sum_d ln x_td! per frame, (n_frames,)."""
    return gammaln(X + 1.0).sum(axis=1)


class PoissonEmissions(EmissionFamily):
    """Count vectors, ``x_td | s_t = k ~ Poisson(lambda_kd)``, ``lambda_kd ~ Gamma(a, b)``.

    Hyperparameters: ``rate_shape`` (K, D) Gamma shapes a and ``rate_rate`` (K, D) Gamma
    rates b (prior mean a / b).  The estimator's ``rate_prior=(a, b)`` gives them
    (scalars or arrays broadcast to (K, D)); the default ``None`` is ``a = 1`` and
    ``b = 1 / mean(X)`` per feature: an exponential prior whose mean is the data mean
    (data-dependent, like the Gaussian default prior).
    """

    emission = "poisson"
    hyper_names = ("rate_shape", "rate_rate")
    default_init = "kmeans"

    # ------------------------------------------------------------------ data
    def check_X(self, X, estimator, reset):
        X = validate_data(estimator, X, reset=reset, dtype=np.float64, ensure_min_samples=1)
        if np.any(X < 0) or np.any(X != np.round(X)):
            raise ValueError("X must hold non-negative integer counts for Poisson emissions.")
        return X

    def summarise(self, X):
        return {"mean": X.mean(axis=0)}

    def update_tags(self, tags):
        tags.input_tags.positive_only = True
        return tags

    # ------------------------------------------------------------------ priors
    def resolve_prior(self, estimator, summary):
        K, D = estimator.n_components, summary["mean"].shape[0]
        value = estimator.rate_prior
        if value is None:
            a0, b0 = 1.0, 1.0 / np.maximum(summary["mean"], _MEAN_FLOOR)
        else:
            if len(value) != 2:
                raise ValueError(f"rate_prior must be a pair (shape, rate); got {value!r}.")
            a0, b0 = value
        return {
            "rate_shape": check_positive_prior(a0, "rate_prior shape", (K, D)),
            "rate_rate": check_positive_prior(b0, "rate_prior rate", (K, D)),
        }

    def check_init_posterior(self, init, prior, n_components):
        shape = prior["rate_shape"].shape
        return {
            name: init_posterior_array(init, name, shape, positive=True)
            for name in self.hyper_names
        }

    # ------------------------------------------------------------------ VBEM
    def stats(self, resp, X, prior):
        return {
            "N": resp.sum(axis=0),
            "S1": resp.T @ X,
            "log_factorial": resp.T @ _log_factorial(X),
        }

    def vbm(self, prior, stats):
        return {
            "rate_shape": prior["rate_shape"] + stats["S1"],
            "rate_rate": prior["rate_rate"] + stats["N"][:, None],
        }

    def expected_log_params(self, post):
        """E[ln lambda] and E[lambda], each (K, D)."""
        a, b = post["rate_shape"], post["rate_rate"]
        return gamma_expected_log(a, b), gamma_mean(a, b)

    def plugin_params(self, post):
        """ln lambda and lambda at the posterior mean lambda = a / b."""
        rates = gamma_mean(post["rate_shape"], post["rate_rate"])
        return np.log(rates), rates

    def log_table(self, params, X):
        # sum_d x_td ln lambda_kd - lambda_kd - ln x_td!, with E[.] of both under q
        log_rates, rates = params
        return X @ log_rates.T - rates.sum(axis=1)[None, :] - _log_factorial(X)[:, None]

    def expected_log_likelihood(self, stats, params, prior):
        log_rates, rates = params
        value = np.sum(stats["S1"] * log_rates) - np.sum(stats["N"] * rates.sum(axis=1))
        return float(value - np.sum(stats["log_factorial"]))

    def kl(self, post, prior):
        return float(
            np.sum(
                gamma_kl(post["rate_shape"], post["rate_rate"], prior["rate_shape"], prior["rate_rate"])
            )
        )

    def occupancy(self, stats):
        return stats["N"].copy()

    def point_estimates(self, post):
        return {"rates_": gamma_mean(post["rate_shape"], post["rate_rate"])}

    def n_parameters(self, post):
        return int(post["rate_shape"].size)

    def sample(self, post, states, rng):
        rates = gamma_mean(post["rate_shape"], post["rate_rate"])
        return rng.poisson(rates[states]).astype(np.int64)
