"""Low-rank factorisation ``Y = U V + noise``.

``u_ik ~ N(0, latent_sd^2)``, ``v_kj ~ N(0, component_sd^2)``,
``y_ij ~ N(u_i^T v_j, noise_sd^2)``, every hyperparameter fixed (the low-rank model of
Grosse, Ghahramani & Adams 2015, §6, roughly probabilistic matrix factorisation).  Rows
of Y are the cases: V are the parameters, U the latent variables.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval

from .kernels import (
    low_rank_log_conditional,
    low_rank_log_likelihood,
    low_rank_sample_latents,
)
from .._core.base import Step
from ._common import LOG_2PI, FactorModelBase, as_case_weights, gaussian_columns_kl

__all__ = ["BayesianLowRank", "low_rank_log_likelihood_per_case"]


def low_rank_log_likelihood_per_case(V, Y, latent_var, noise_var):
    """Exact ``ln p(y_i | V)`` with ``u_i`` integrated out: ``y_i ~ N(0, latent_var V^T V
    + noise_var I)``, by the matrix determinant lemma and Woodbury's identity in the
    K-dimensional space.  ``V`` (C, K, D); returns (C, n)."""
    return low_rank_log_likelihood(np.ascontiguousarray(V, dtype=float),
                                   np.ascontiguousarray(Y, dtype=float), float(latent_var),
                                   float(noise_var))


def sample_latent_rows(V, Y, rng, latent_var, noise_var, beta=1.0):
    """Exact draw of U (C, n, K) from ``p(U) p(Y | U, V)^beta`` and its log-density (C,):
    each row Gaussian with precision ``I / latent_var + beta_i V V^T / noise_var``."""
    V = np.ascontiguousarray(V, dtype=float)
    b = as_case_weights(beta, Y.shape[0])
    eps = rng.standard_normal((V.shape[0], Y.shape[0], V.shape[1]))
    return low_rank_sample_latents(V, np.ascontiguousarray(Y, dtype=float), float(latent_var),
                                   float(noise_var), b, eps)


def log_latent_rows_conditional(V, U, Y, latent_var, noise_var, beta=1.0):
    """``ln p_beta(U | V, Y)``: (C,)."""
    return low_rank_log_conditional(np.ascontiguousarray(V, dtype=float),
                                    np.ascontiguousarray(U, dtype=float),
                                    np.ascontiguousarray(Y, dtype=float), float(latent_var),
                                    float(noise_var), as_case_weights(beta, Y.shape[0]))


class BayesianLowRank(FactorModelBase):
    """Variational Bayesian low-rank factorisation ``Y = U V + noise``.

    Parameters
    ----------
    n_components : int, default=5
        The rank K.
    latent_sd : float, default=1.0
        Prior standard deviation of every entry of U (the per-row latents).
    component_sd : float, default=1.0
        Prior standard deviation of every entry of V (the parameters).
    noise_sd : float, default=1.0
    max_iter, tol, n_init, init_params, random_state, warm_start, verbose,
    verbose_interval, bound_check
        See :class:`~sklearn_vb.base.VBEMEstimator`.  ``init_params="random"``: q(U)
        means drawn from the prior.

    Attributes
    ----------
    latent_means_ : ndarray (n_samples, n_components)
    latent_covariance_ : ndarray (n_components, n_components)
        Posterior covariance of every row of U (shared).
    components_ : ndarray (n_components, n_features)
        Posterior mean of V.
    component_covariance_ : ndarray (n_components, n_components)
        Posterior covariance of every column of V (shared).
    lower_bound_ : float

    Notes
    -----
    The low-rank approximation of Grosse, Ghahramani & Adams (2015), §6 (V the
    parameters, U the latents, all variances fixed); variational Bayes is their §5.1.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.bdmc_models import BayesianLowRank
    >>> model = BayesianLowRank(n_components=2, random_state=0)
    >>> Y, params, U = model.simulate(20, 5, random_state=0)
    >>> Y.shape, params["components"].shape, U.shape
    ((20, 5), (2, 5), (20, 2))
    >>> model.fit(Y).components_.shape
    (2, 5)
    >>> bool(np.all(np.diff(model.lower_bounds_) > -1e-9))
    True
    """

    _parameter_constraints = {
        **FactorModelBase._parameter_constraints,
        "latent_sd": [Interval(Real, 0, None, closed="neither")],
        "component_sd": [Interval(Real, 0, None, closed="neither")],
    }

    weight_name = "components"

    def __init__(self, n_components=5, *, latent_sd=1.0, component_sd=1.0, noise_sd=1.0,
                 max_iter=500, tol=1e-8, n_init=5, init_params="random", random_state=None,
                 warm_start=False, verbose=0, verbose_interval=10, bound_check="raise"):
        super().__init__(max_iter=max_iter, tol=tol, n_init=n_init, init_params=init_params,
                         random_state=random_state, warm_start=warm_start, verbose=verbose,
                         verbose_interval=verbose_interval, bound_check=bound_check)
        self.n_components = n_components
        self.latent_sd = latent_sd
        self.component_sd = component_sd
        self.noise_sd = noise_sd

    def _weight_sd(self):
        return float(self.component_sd)

    def _sample_latents_prior(self, rng, n):
        return float(self.latent_sd) * rng.standard_normal((n, self.n_components))

    def _design(self, Z):
        return np.asarray(Z, dtype=float)

    def _weight_mean(self):
        return self.components_

    def _log_likelihood_per_case(self, W, Y):
        return low_rank_log_likelihood_per_case(W, Y, float(self.latent_sd) ** 2, self._noise_var)

    # ------------------------------------------------------------------ VBEM
    def _initialize(self, data, random_state):
        if self.init_params != "random":
            raise ValueError(f"init_params must be 'random'; got {self.init_params!r}.")
        K = self.n_components
        self.latent_means_ = float(self.latent_sd) * random_state.standard_normal((data.shape[0], K))
        self.latent_covariance_ = float(self.latent_sd) ** 2 * np.eye(K)

    def _set_latent_point(self, latents, n):
        self._check_latents(latents, n, (n, self.n_components))
        self.latent_means_ = latents.astype(float)
        self.latent_covariance_ = np.zeros((self.n_components, self.n_components))

    def _iteration_steps(self):
        return (Step("components", self._step_components), Step("latents", self._step_latents))

    def _step_components(self, data, iteration):
        n = data.shape[0]
        M = self.latent_means_
        EUU = M.T @ M + n * self.latent_covariance_
        P = np.eye(self.n_components) / float(self.component_sd) ** 2 + EUU / self._noise_var
        S = np.linalg.inv(P)
        self.component_covariance_ = 0.5 * (S + S.T)
        self.components_ = self.component_covariance_ @ M.T @ data / self._noise_var

    def _step_latents(self, data, iteration):
        D = data.shape[1]
        V = self.components_
        EVV = V @ V.T + D * self.component_covariance_
        P = np.eye(self.n_components) / float(self.latent_sd) ** 2 + EVV / self._noise_var
        S = np.linalg.inv(P)
        self.latent_covariance_ = 0.5 * (S + S.T)
        self.latent_means_ = data @ V.T @ self.latent_covariance_ / self._noise_var

    def _lower_bound(self, data):
        n, D = data.shape
        M, V = self.latent_means_, self.components_
        EUU = M.T @ M + n * self.latent_covariance_
        EVV = V @ V.T + D * self.component_covariance_
        sq = np.sum(data * data) - 2.0 * np.sum((M @ V) * data) + np.sum(EUU * EVV)
        ell = -0.5 * n * D * (LOG_2PI + np.log(self._noise_var)) - 0.5 * sq / self._noise_var
        kl_u = gaussian_columns_kl(M.T, self.latent_covariance_, float(self.latent_sd) ** 2)
        kl_v = gaussian_columns_kl(V, self.component_covariance_, float(self.component_sd) ** 2)
        return float(ell - kl_u - kl_v)
