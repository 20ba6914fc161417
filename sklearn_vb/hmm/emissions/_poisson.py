"""Poisson emissions with a Gamma prior on every state's rates.

X is an (n_samples, n_features) array of non-negative integer counts; given state k the
features are independent, ``x_td | s_t = k ~ Poisson(lambda_kd)``, with
``lambda_kd ~ Gamma(shape a_kd, rate b_kd)``.  The Gamma is conjugate: with state
responsibilities r_tk the posterior is ``Gamma(a_kd + sum_t r_tk x_td, b_kd + sum_t r_tk)``.

Statistics: ``N`` (K,) occupancies, ``S1`` (K, D) = sum_t r_tk x_t and ``log_factorial``
(K,) = sum_t r_tk sum_d ln x_td!, the part of ln p(x | lambda) that does not depend on
the rates.

A missing count (NaN) drops out of its frame's likelihood (missing at random): it adds
nothing to ``S1`` or ``log_factorial``, and the per-dimension occupancies ``Nd`` (K, D)
count only the frames in which a feature is observed (``Nd`` is None when every count
is observed, and ``N`` then stands for every dimension).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np
from scipy.special import gammaln, polygamma

from ..._core.distributions import (
    gamma_expected_log,
    gamma_kl,
    gamma_log_pdf,
    gamma_mean,
    gamma_sample,
)
from ..._core.validation import MISSING_IN_SEQUENCES, validate_float_data
from ._base import EmissionFamily, EmissionPoint
from ._checks import check_positive_prior, init_posterior_array
from ._missing import check_observed_counts, observed_counts_and_means, observed_parts

__all__ = ["PoissonEmissions", "PoissonPrior", "PoissonPosterior", "PoissonStats",
           "PoissonSummary", "PoissonPoint"]

#: floor of the data mean in the default prior rate, so that an all-zero feature keeps
#: a proper prior (prior mean rate 1e-3 instead of 0)
_MEAN_FLOOR = 1e-3


@dataclass(eq=False)
class PoissonPrior:
    """Gamma(shape, rate) prior of every state's rates, ``lambda_kd ~ Gamma(a_kd, b_kd)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import PoissonPrior
    >>> prior = PoissonPrior(rate_shape=np.ones((2, 1)), rate_rate=np.full((2, 1), 0.5))
    >>> (prior.rate_shape / prior.rate_rate).ravel()      # prior mean rates
    array([2., 2.])
    """

    rate_shape: np.ndarray  # a, (K, D)
    rate_rate: np.ndarray  # b, (K, D)


@dataclass(eq=False)
class PoissonPosterior:
    """q(lambda_kd) = Gamma(rate_shape_kd, rate_rate_kd) of every state's rates.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import PoissonEmissions, PoissonPrior
    >>> family = PoissonEmissions()
    >>> prior = PoissonPrior(rate_shape=np.ones((2, 1)), rate_rate=np.ones((2, 1)))
    >>> resp = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> post = family.vbm(prior, family.stats(resp, np.array([[2], [3], [5]]), prior))
    >>> post.rate_shape.ravel(), post.rate_rate.ravel()   # a + sum x, b + n
    (array([3., 9.]), array([2., 3.]))
    """

    rate_shape: np.ndarray  # a + sum_t r_tk x_td, (K, D)
    rate_rate: np.ndarray  # b + sum_t r_tk, (K, D)


@dataclass(eq=False)
class PoissonStats:
    """Expected sufficient statistics of state responsibilities r_tk.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import PoissonEmissions, PoissonPrior
    >>> prior = PoissonPrior(rate_shape=np.ones((2, 1)), rate_rate=np.ones((2, 1)))
    >>> resp = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> stats = PoissonEmissions().stats(resp, np.array([[2], [3], [5]]), prior)
    >>> stats.N, stats.S1.ravel()
    (array([1., 2.]), array([2., 8.]))
    """

    N: np.ndarray  # (K,): sum_t r_tk
    S1: np.ndarray  # (K, D): sum_t r_tk x_t
    log_factorial: np.ndarray  # (K,): sum_t r_tk sum_d ln x_td!
    # (K, D): sum_t r_tk [x_td observed]; None when every count is observed (then N)
    Nd: Optional[np.ndarray] = None

    def dimension_counts(self):
        """The occupancy of every state in every dimension, (K, D)."""
        return self.N[:, None] if self.Nd is None else self.Nd


@dataclass(eq=False)
class PoissonSummary:
    """What the data-dependent default prior needs from the training frames.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import PoissonEmissions
    >>> PoissonEmissions().summarise(np.array([[0, 4], [2, 6]])).mean
    array([1., 5.])
    """

    mean: np.ndarray  # (D,): mean count of every feature


class FrameMeans(NamedTuple):
    """Number of observed counts and mean observed count of every feature of a set of
    frames (mergeable over chunks)."""

    n: np.ndarray  # (D,): frames in which every feature is observed
    mean: np.ndarray  # (D,): 0 for a feature never observed


@dataclass(eq=False)
class PoissonPoint(EmissionPoint):
    """A point estimate of every state's rates (``method="ml"`` or ``"map"``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import PoissonEmissions, PoissonPrior
    >>> family = PoissonEmissions()
    >>> prior = PoissonPrior(rate_shape=np.ones((2, 1)), rate_rate=np.ones((2, 1)))
    >>> resp = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> stats = family.stats(resp, np.array([[2], [3], [5]]), prior)
    >>> family.point_from_stats(prior, stats, kind="ml").rates.ravel()   # mean counts
    array([2., 4.])
    """

    rates: np.ndarray  # (K, D): Poisson rates lambda_kd


def _add_counts(a, b):
    """The per-dimension occupancies ``Nd`` of the statistics ``a`` and ``b`` together
    (None when neither chunk has a missing count)."""
    if a.Nd is None and b.Nd is None:
        return None
    return a.dimension_counts() + b.dimension_counts()


def _log_factorial(X):
    """sum_d ln x_td! per frame, (n_frames,) (a missing count, held as 0, adds ln 0! = 0)."""
    return gammaln(X + 1.0).sum(axis=1)


class GammaRates:
    """Independent ``lambda_kd ~ Gamma(shape a_kd, rate b_kd)`` over the block ``rates``."""

    def __init__(self, a, b):
        self.a = np.asarray(a, dtype=float)
        self.b = np.asarray(b, dtype=float)

    def log_pdf(self, params):
        rates = np.asarray(params["rates"], dtype=float)
        bad = np.any(~(rates > 0), axis=(1, 2))
        rates = np.where(bad[:, None, None], 1.0, rates)  # valid stand-in, density 0 below
        return np.where(bad, -np.inf, np.sum(gamma_log_pdf(rates, self.a, self.b), axis=(1, 2)))

    def sample(self, rng, size):
        return {"rates": gamma_sample(self.a, self.b, rng, int(size))}

    def log_pdf_gradient(self, params):
        """Gradient of :meth:`log_pdf` in ``rates``: ``(a - 1) / lambda - b``."""
        rates = np.asarray(params["rates"], dtype=float)
        return {"rates": (self.a - 1.0) / rates - self.b}

    def mean(self):
        return {"rates": gamma_mean(self.a, self.b)[None]}

    def broadened(self, dof=None, broaden=None):
        """Shapes and rates times ``broaden`` (means kept, variances over ``broaden``);
        ``dof`` does not apply."""
        if broaden is None:
            return self
        if not 0 < broaden <= 1:
            raise ValueError(f"broaden must be in (0, 1], got {broaden}.")
        return GammaRates(broaden * self.a, broaden * self.b)

    def unconstrained_sd(self):
        # ln lambda under Gamma(a, b) has variance trigamma(a)
        return np.sqrt(polygamma(1, self.a)).ravel()


class PoissonEmissions(EmissionFamily):
    """Count vectors, ``x_td | s_t = k ~ Poisson(lambda_kd)``, ``lambda_kd ~ Gamma(a, b)``.

    Hyperparameters: ``rate_shape`` (K, D) Gamma shapes a and ``rate_rate`` (K, D) Gamma
    rates b (prior mean a / b).  The estimator's ``rate_prior=(a, b)`` gives them
    (scalars or arrays broadcast to (K, D)); the default ``None`` is ``a = 1`` and
    ``b = 1 / mean(X)`` per feature: an exponential prior whose mean is the data mean
    (data-dependent, like the Gaussian default prior).  Not in the thesis: a conjugate
    exponential-family emission, so the VBEM scheme of Beal (2003), §2.4, applies.

    Examples
    --------
    The VBM step adds each state's expected counts to the Gamma shapes and its expected
    number of frames to the rates:

    >>> import numpy as np
    >>> from sklearn_vb.emissions import PoissonEmissions, PoissonPrior
    >>> family = PoissonEmissions()
    >>> prior = PoissonPrior(rate_shape=np.ones((2, 1)), rate_rate=np.ones((2, 1)))
    >>> X = np.array([[0], [1], [9], [11]])
    >>> resp = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> post = family.vbm(prior, family.stats(resp, X, prior))
    >>> family.point_estimates(post)["rates_"].ravel().tolist()      # (1 + sum) / (1 + n)
    [0.6666666666666666, 7.0]
    """

    emission = "poisson"
    hyper_names = ("rate_shape", "rate_rate")
    prior_type = PoissonPrior
    posterior_type = PoissonPosterior
    point_type = PoissonPoint
    default_inits = ("kmeans",)

    # ------------------------------------------------------------------ data
    def check_X(self, X, estimator, reset):
        X = validate_float_data(estimator, X, reset=reset, missing=MISSING_IN_SEQUENCES,
                                allow_nan=True, ensure_min_samples=1)
        X0 = np.where(np.isnan(X), 0.0, X)
        if np.any(X0 < 0) or np.any(X0 != np.round(X0)):
            raise ValueError("X must hold non-negative integer counts for Poisson emissions "
                             "(NaN marks a missing count).")
        return X

    def data_moments(self, X):
        X0, observed = observed_parts(X)
        if observed is not None:
            return FrameMeans(*observed_counts_and_means(X))
        return FrameMeans(np.full(X.shape[1], X.shape[0]), X.mean(axis=0))

    def merge_moments(self, parts):
        if len(parts) == 1:
            return parts[0]
        n = sum(part.n for part in parts)
        return FrameMeans(n, sum(part.n * part.mean for part in parts) / np.maximum(n, 1))

    def column_means_from_moments(self, moments):
        return moments.mean

    def summary_from_moments(self, moments):
        check_observed_counts(moments.n, "Poisson")
        return PoissonSummary(mean=moments.mean)

    def update_tags(self, tags):
        tags.input_tags.positive_only = True
        return tags

    # ------------------------------------------------------------------ priors
    def resolve_prior(self, estimator, summary):
        K, D = estimator.n_components, summary.mean.shape[0]
        value = estimator.rate_prior
        if value is None:
            a0, b0 = 1.0, 1.0 / np.maximum(summary.mean, _MEAN_FLOOR)
        else:
            if len(value) != 2:
                raise ValueError(f"rate_prior must be a pair (shape, rate); got {value!r}.")
            a0, b0 = value
        return PoissonPrior(
            rate_shape=check_positive_prior(a0, "rate_prior shape", (K, D)),
            rate_rate=check_positive_prior(b0, "rate_prior rate", (K, D)),
        )

    def check_init_posterior(self, init, prior, n_components):
        shape = prior.rate_shape.shape
        return PoissonPosterior(
            rate_shape=init_posterior_array(init, "rate_shape", shape, positive=True),
            rate_rate=init_posterior_array(init, "rate_rate", shape, positive=True),
        )

    # ------------------------------------------------------------------ VBEM
    def stats(self, resp, X, prior, params=None):
        X0, observed = observed_parts(X)
        return PoissonStats(
            N=resp.sum(axis=0),
            S1=resp.T @ X0,
            log_factorial=resp.T @ _log_factorial(X0),
            Nd=None if observed is None else resp.T @ observed,
        )

    def add_stats(self, a, b):
        return PoissonStats(N=a.N + b.N, S1=a.S1 + b.S1,
                            log_factorial=a.log_factorial + b.log_factorial,
                            Nd=_add_counts(a, b))

    def scale_stats(self, stats, factor):
        return PoissonStats(N=factor * stats.N, S1=factor * stats.S1,
                            log_factorial=factor * stats.log_factorial,
                            Nd=None if stats.Nd is None else factor * stats.Nd)

    def vbm(self, prior, stats):
        return PoissonPosterior(
            rate_shape=prior.rate_shape + stats.S1,
            rate_rate=prior.rate_rate + stats.dimension_counts(),
        )

    def expected_log_params(self, post):
        """E[ln lambda] and E[lambda], each (K, D)."""
        a, b = post.rate_shape, post.rate_rate
        return gamma_expected_log(a, b), gamma_mean(a, b)

    def plugin_params(self, post):
        """ln lambda and lambda at the posterior mean lambda = a / b."""
        rates = gamma_mean(post.rate_shape, post.rate_rate)
        return np.log(rates), rates

    def log_table(self, params, X):
        # sum_d x_td ln lambda_kd - lambda_kd - ln x_td!, with E[.] of both under q, over
        # the observed counts of every frame
        log_rates, rates = params
        X0, observed = observed_parts(X)
        rate_term = (rates.sum(axis=1)[None, :] if observed is None
                     else observed @ rates.T)
        return X0 @ log_rates.T - rate_term - _log_factorial(X0)[:, None]

    def expected_log_likelihood(self, stats, params, prior):
        log_rates, rates = params
        if stats.Nd is None:
            value = np.sum(stats.S1 * log_rates) - np.sum(stats.N * rates.sum(axis=1))
        else:
            value = np.sum(stats.S1 * log_rates) - np.sum(stats.Nd * rates)
        return float(value - np.sum(stats.log_factorial))

    def kl(self, post, prior):
        return float(
            np.sum(
                gamma_kl(post.rate_shape, post.rate_rate, prior.rate_shape, prior.rate_rate)
            )
        )

    def occupancy(self, stats):
        return stats.N.copy()

    def point_estimates(self, post):
        return {"rates_": gamma_mean(post.rate_shape, post.rate_rate)}

    def n_parameters(self, post):
        return int(post.rate_shape.size)

    def sample(self, post, states, rng):
        rates = gamma_mean(post.rate_shape, post.rate_rate)
        return rng.poisson(rates[states]).astype(np.int64)

    # ------------------------------------------------------------------ scoring
    def param_blocks(self, prior, n_components):
        return [("rates", prior.rate_shape.shape, "positive")]

    def param_density(self, hyper, n_components):
        return GammaRates(hyper.rate_shape, hyper.rate_rate)

    def log_likelihood_tables(self, params, X):
        rates = np.asarray(params["rates"], dtype=float)
        with np.errstate(divide="ignore"):
            log_rates = np.log(rates)
        X0, observed = observed_parts(X)
        rate_term = (rates.sum(axis=-1)[:, None, :] if observed is None
                     else np.einsum("td,ckd->ctk", observed, rates))
        return (np.einsum("td,ckd->ctk", X0, log_rates) - rate_term
                - _log_factorial(X0)[None, :, None])

    def log_emission_along(self, params, states, X):
        rates = np.asarray(params["rates"], dtype=float)[:, states]  # (C, T, D)
        with np.errstate(divide="ignore"):
            log_rates = np.log(rates)
        X0, observed = observed_parts(X)
        terms = X0 * log_rates - rates
        if observed is not None:
            terms = terms * observed
        return np.sum(terms, axis=-1) - _log_factorial(X0)

    def complete_log_likelihood(self, params, stats, prior):
        rates = np.asarray(params["rates"], dtype=float)
        with np.errstate(divide="ignore"):
            log_rates = np.log(rates)
        if stats.Nd is None:
            rate_term = np.sum(stats.N * rates.sum(axis=-1), axis=1)
        else:
            rate_term = np.sum(stats.Nd * rates, axis=(1, 2))
        value = np.sum(stats.S1 * log_rates, axis=(1, 2)) - rate_term
        return value - np.sum(stats.log_factorial)

    def complete_log_likelihood_gradient(self, params, stats, prior):
        """Gradient of :meth:`complete_log_likelihood` in ``rates`` (batch shape):
        ``S1 / lambda - N``."""
        rates = np.asarray(params["rates"], dtype=float)
        return {"rates": stats.S1 / rates - stats.dimension_counts()}

    def log_marginal_likelihood(self, prior, stats):
        a0, b0 = prior.rate_shape, prior.rate_rate
        post = self.vbm(prior, stats)
        a, b = post.rate_shape, post.rate_rate
        value = np.sum(a0 * np.log(b0) - gammaln(a0) + gammaln(a) - a * np.log(b))
        return value - np.sum(stats.log_factorial)

    def point_from_stats(self, prior, stats, kind="map", basis="softmax"):
        if kind == "ml":
            rates = np.maximum(stats.S1 / np.maximum(stats.dimension_counts(), 1e-10), 1e-10)
        else:
            post = self.vbm(prior, stats)
            a, b = post.rate_shape, post.rate_rate
            # posterior mean: the mode in ln lambda; mode: the mode in lambda
            rates = a / b if basis == "softmax" else np.maximum(a - 1.0, 1e-3) / b
        return PoissonPoint(rates=rates)

    def point_log_prior_terms(self, params, basis):
        if basis != "softmax":
            return []
        return [float(np.sum(np.log(params["rates"])))]

    def simulate(self, params, states, rng):
        rates = np.asarray(params["rates"], dtype=float)[0]
        return rng.poisson(rates[states]).astype(np.int64)

    def kernel_curvature(self, post, n_components):
        # d^2/d(ln lambda)^2 of x ln lambda - lambda is -lambda; a state sees ~n / K frames
        rates = gamma_mean(post.rate_shape, post.rate_rate)
        return {"rates": (rates / n_components).ravel()}
