"""Pieces shared by the three latent-factor models of Grosse, Ghahramani & Adams (2015).

Each model writes ``Y (n, D) = Z W + noise`` with a latent matrix ``Z (n, K)`` (one-hot
for clustering, binary for binary attributes, Gaussian for low rank), a weight matrix
``W (K, D)`` with i.i.d. ``N(0, weight_sd^2)`` entries (the model's parameters) and
spherical Gaussian noise of fixed variance.  Given ``Z`` the columns of ``Y`` are
independent Gaussians, which gives the collapsed likelihood used by the exact oracles,
and every tempered conditional of ``W`` given ``Z`` is Gaussian with one covariance
shared by all columns.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_random_state

from .kernels import weights_log_conditional, weights_sample
from .._core.validation import validate_float_data
from .._core.base import VBEMEstimator

__all__ = ["LOG_2PI", "collapsed_log_likelihood", "gaussian_columns_kl", "as_case_weights",
           "sample_weights_given_latents", "log_weights_conditional",
           "FactorModelBase"]

LOG_2PI = float(np.log(2.0 * np.pi))


def collapsed_log_likelihood(Y, Z, weight_var, noise_var):
    """``ln p(Y | Z)`` with ``W`` integrated out: the columns of ``Y`` are independent
    ``N(0, weight_var Z Z^T + noise_var I)``.  ``Z`` (B, n, K); returns (B,)."""
    Y = np.asarray(Y, dtype=float)
    Z = np.asarray(Z, dtype=float)
    n, D = Y.shape
    cov = weight_var * Z @ Z.transpose(0, 2, 1) + noise_var * np.eye(n)
    L = np.linalg.cholesky(cov)
    sol = np.linalg.solve(L, np.broadcast_to(Y, (Z.shape[0], n, D)))
    logdet = 2.0 * np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
    return -0.5 * np.sum(sol * sol, axis=(1, 2)) - 0.5 * D * logdet - 0.5 * n * D * LOG_2PI


def gaussian_columns_kl(mean, cov, prior_var):
    """KL(q || p) for ``q = prod_j N(mean[:, j], cov)`` and ``p = N(0, prior_var I)``
    per column; ``mean`` (K, D), ``cov`` (K, K) shared by the D columns."""
    K, D = mean.shape
    _, logdet = np.linalg.slogdet(cov)
    return float(0.5 * (D * (np.trace(cov) / prior_var - K - logdet + K * np.log(prior_var))
                        + np.sum(mean * mean) / prior_var))


def as_case_weights(beta, n):
    """The tempering exponent of each case as an (n,) array (a scalar applies to all):
    ``beta_i = 1`` keeps case i, ``0`` drops it (the data path of sequential Monte
    Carlo), values in between temper it (the annealing path)."""
    b = np.ascontiguousarray(np.broadcast_to(np.asarray(beta, dtype=float), (n,)))
    if np.any(b < 0) or np.any(b > 1):
        raise ValueError("beta must lie in [0, 1].")
    return b


def sample_weights_given_latents(Z, Y, rng, beta, weight_var, noise_var):
    """Exact draw of ``W`` (C, K, D) from ``p(W) p(Y | Z, W)^beta`` (per-case beta): the
    precision ``I / weight_var + Z^T diag(beta) Z / noise_var`` is shared by the columns
    (compiled, one chain at a time)."""
    Z = np.ascontiguousarray(Z, dtype=float)
    eps = rng.standard_normal((Z.shape[0], Z.shape[2], Y.shape[1]))
    return weights_sample(Z, np.ascontiguousarray(Y, dtype=float), beta, float(weight_var),
                          float(noise_var), eps)


def log_weights_conditional(W, Z, Y, beta, weight_var, noise_var):
    """``ln`` of the density of :func:`sample_weights_given_latents` at ``W``; (C,)."""
    return weights_log_conditional(np.ascontiguousarray(W, dtype=float),
                                   np.ascontiguousarray(Z, dtype=float),
                                   np.ascontiguousarray(Y, dtype=float), beta,
                                   float(weight_var), float(noise_var))


class FactorModelBase(VBEMEstimator):
    """Data handling, simulation and counting shared by the three models."""

    _parameter_constraints = {
        **VBEMEstimator._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "noise_sd": [Interval(Real, 0, None, closed="neither")],
    }

    #: name of the parameter block W in the scoring layer
    weight_name = "weights"

    def _check_Y(self, X, reset):
        X = validate_float_data(self, X, reset=reset, ensure_min_samples=1)
        return X

    def _check_fit_data(self, X, **fit_params):
        if fit_params:
            raise TypeError(f"Unexpected fit parameters: {sorted(fit_params)}")
        return self._check_Y(X, reset=True)

    def _check_new_data(self, X, **fit_params):
        if fit_params:
            raise TypeError(f"Unexpected fit parameters: {sorted(fit_params)}")
        return self._check_Y(X, reset=False)

    def _n_observations(self, data):
        return data.shape[0]

    def _n_parameters(self):
        return self.n_components * self.n_features_in_

    @property
    def _noise_var(self):
        return float(self.noise_sd) ** 2

    def simulate(self, n_samples, n_features, random_state=None):
        """Exact forward simulation from the prior: ``W ~ p(W)``, latents ``~ p(Z)``,
        ``Y ~ p(Y | Z, W)``.  ``(W, Z)`` is then an exact draw from the posterior given
        ``Y`` (the starting point of reverse AIS and BDMC).

        Returns
        -------
        Y : ndarray (n_samples, n_features)
        params : dict
            ``{weight_name: W (K, D)}``, the parameters in the scoring layer's naming
            (add a leading axis for ``exact_posterior_samples=``).
        latents : ndarray
            The latent variables (model specific, see :meth:`sample`).
        """
        self._validate_params()
        rng = np.random.default_rng(check_random_state(random_state).randint(2**32 - 1))
        W = self._weight_sd() * rng.standard_normal((self.n_components, int(n_features)))
        Z = self._sample_latents_prior(rng, int(n_samples))
        Y = self._design(Z) @ W + float(self.noise_sd) * rng.standard_normal((int(n_samples), W.shape[1]))
        return Y, {self.weight_name: W}, Z

    def fit_from_latents(self, X, latents):
        """Fit by VBEM from q(Z) concentrated on ``latents`` (as :meth:`simulate` returns
        them), e.g. the latents that generated X: the "hint" of Grosse, Ghahramani &
        Adams (2015), §6.4, which tells a gap of VB to the true evidence that comes from
        the mean-field family apart from one that comes from a poor local optimum.  The
        first update is q(W) given these latents; ``n_init`` is not used.

        Returns
        -------
        self
        """
        self._validate_params()
        Y = self._check_Y(X, reset=True)
        self._set_latent_point(np.asarray(latents), Y.shape[0])
        # a warm start continues from the state just set instead of a random one
        self.lower_bound_, self.lower_bounds_ = -np.inf, np.empty(0)
        warm = self.warm_start
        self.warm_start = True
        try:
            return self.fit(X)
        finally:
            self.warm_start = warm

    def _check_latents(self, latents, n, shape):
        if latents.shape != shape:
            raise ValueError(f"latents must have shape {shape} for {n} cases, got "
                             f"{latents.shape}.")

    def sample(self, n_samples=1, random_state=None):
        """Draw ``n_samples`` rows from the fitted model at the posterior-mean weights.

        Returns
        -------
        Y : ndarray (n_samples, n_features)
        latents : ndarray
        """
        self._check_is_fitted()
        rng = np.random.default_rng(check_random_state(random_state).randint(2**32 - 1))
        Z = self._sample_latents_prior(rng, int(n_samples))
        W = self._weight_mean()
        Y = self._design(Z) @ W + float(self.noise_sd) * rng.standard_normal((int(n_samples), W.shape[1]))
        return Y, Z

    def score_samples(self, X):
        """Exact ``ln p(y_i | E_q[W])`` of each row (the latents summed or integrated out)."""
        self._check_is_fitted()
        Y = self._check_Y(X, reset=False)
        return self._log_likelihood_per_case(self._weight_mean()[None], Y)[0]

    def score(self, X, y=None):
        """Mean of :meth:`score_samples`."""
        return float(self.score_samples(X).mean())

    def _log_likelihood(self, data):
        return float(self._log_likelihood_per_case(self._weight_mean()[None], data).sum())
