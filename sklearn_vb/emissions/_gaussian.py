"""Gaussian emissions: Normal-Wishart (full covariance) or per-dimension Normal-Gamma
(diagonal covariance) priors on every state's mean and precision.

Hyperparameters (Beal 2003, section 3.7; Bishop 2006, section 10.2):

* ``means`` m (D,) or (K, D) and ``beta`` scalar or (K,): mu | Lambda ~ N(m, (beta Lambda)^-1);
* ``dof`` nu and ``scale`` S = W^-1: Lambda ~ Wishart(W, nu) (full, S (D, D) or (K, D, D)),
  or, per dimension, lambda_d ~ Gamma(shape nu/2, rate S_d/2) (diagonal, S (D,) or (K, D)).

Statistics are centred at the prior mean m0 so that the conjugate update needs no
large cancellations: ``N`` (K,) occupancies, ``S1`` (K, D) = sum_t r_tk (x_t - m0) and
``S2`` = sum_t r_tk (x_t - m0)(x_t - m0)^T ((K, D, D), full) or its diagonal ((K, D)).
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma
from sklearn.utils.validation import validate_data

from .._distributions import normal_gamma_kl, normal_wishart_kl
from .._kernels import hmm as _k
from .._kernels._constants import LOG_2PI
from ._base import EmissionFamily
from ._checks import init_posterior_array

__all__ = ["GaussianFullEmissions", "GaussianDiagEmissions"]


class _GaussianEmissions(EmissionFamily):
    """What the full- and diagonal-covariance families share."""

    emission = "gaussian"
    covariance_type = ""
    hyper_names = ("means", "beta", "dof", "scale")
    default_init = "kmeans"

    # ------------------------------------------------------------------ data
    def check_X(self, X, estimator, reset):
        return validate_data(estimator, X, reset=reset, dtype=np.float64, ensure_min_samples=1)

    def summarise(self, X):
        mean = X.mean(axis=0)
        if X.shape[0] > 1:
            var = X.var(axis=0)
            cov = np.atleast_2d(np.cov(X, rowvar=False, bias=True))
        else:
            var = np.zeros(X.shape[1])
            cov = np.zeros((X.shape[1], X.shape[1]))
        # a floor keeps the default prior proper for constant or tiny data sets
        floor = 1e-6 * max(1.0, float(np.max(var)))
        return {"mean": mean, "var": np.maximum(var, floor), "cov": cov + floor * np.eye(X.shape[1])}

    # ------------------------------------------------------------------ priors
    def resolve_prior(self, estimator, summary):
        D = summary["mean"].shape[0]
        full = self.covariance_type == "full"
        if estimator.means_prior is None:
            m0 = summary["mean"].copy()
        else:
            m0 = np.asarray(estimator.means_prior, dtype=float)
            if not np.all(np.isfinite(m0)):
                raise ValueError("means_prior must be finite.")
            try:
                m0 = np.broadcast_to(m0, (D,)).copy()
            except ValueError:
                raise ValueError(
                    f"means_prior has shape {m0.shape}; expected a scalar or ({D},)."
                ) from None
        dof_prior = estimator.dof_prior
        nu0 = float(dof_prior) if dof_prior is not None else (D + 1.0 if full else 2.0)
        if full and nu0 <= D - 1:
            raise ValueError(f"dof_prior must exceed n_features - 1 = {D - 1}; got {nu0}.")
        if estimator.scale_prior is None:
            s0 = nu0 * (summary["cov"] if full else summary["var"])
        else:
            s0 = self._check_scale_prior(np.asarray(estimator.scale_prior, dtype=float), D)
        return {
            "means": m0,
            "beta": float(estimator.beta_prior),
            "dof": nu0,
            "scale": np.array(s0, dtype=float),
        }

    def check_init_posterior(self, init, prior, n_components):
        K, D = n_components, prior["means"].shape[-1]
        post = {
            "means": init_posterior_array(init, "means", (K, D)),
            "beta": init_posterior_array(init, "beta", (K,), positive=True),
            "dof": init_posterior_array(init, "dof", (K,), positive=True),
        }
        post["scale"] = self._check_init_scale(init, K, D)
        return post

    # ------------------------------------------------------------------ VBEM
    def stats(self, resp, X, prior):
        Xc = X - prior["means"]
        return {"N": resp.sum(axis=0), "S1": resp.T @ Xc, "S2": self._second_moments(resp, Xc)}

    def vbm(self, prior, stats):
        N, S1, S2 = stats["N"], stats["S1"], stats["S2"]
        beta = prior["beta"] + N
        return {
            "means": prior["means"] + S1 / beta[:, None],
            "beta": beta,
            "dof": prior["dof"] + N,
            "scale": self._scale_update(prior["scale"], S1, S2, beta),
        }

    def expected_log_params(self, post):
        """Per state: ``const_k``, the precision factor of the quadratic term and the mean,
        with E[ln N(x | mu_k, Lambda_k)] = const_k - 0.5 (x - m_k)^T E[Lambda_k] (x - m_k)."""
        D = post["means"].shape[1]
        e_logdet, precision = self._expected_logdet_and_precision(post["dof"], post["scale"])
        const = 0.5 * e_logdet - 0.5 * D * LOG_2PI - 0.5 * D / post["beta"]
        return const, precision, post["means"].copy()

    def plugin_params(self, post):
        """``const_k``, precision factor and mean at the posterior mean (means_, covars_)."""
        D = post["means"].shape[1]
        logdet, precision = self._mean_logdet_and_precision(post["dof"], post["scale"])
        return 0.5 * logdet - 0.5 * D * LOG_2PI, precision, post["means"].copy()

    def expected_log_likelihood(self, stats, params, prior):
        const, precision, means = params
        N = stats["N"]
        quad_term = self._expected_quadratic(stats, precision, means - prior["means"])
        return float(np.sum(N * const - 0.5 * quad_term))

    def occupancy(self, stats):
        return stats["N"].copy()

    def n_parameters(self, post):
        K, D = post["means"].shape
        return K * (D + self._n_precision_parameters(D))


class GaussianFullEmissions(_GaussianEmissions):
    """Full-covariance Gaussian states with Normal-Wishart priors.

    Hyperparameters: ``means`` (K, D), ``beta`` (K,), ``dof`` (K,), ``scale`` (K, D, D)
    (the prior: (D,), scalar, scalar, (D, D)).
    """

    covariance_type = "full"

    @staticmethod
    def _check_scale_prior(s0, D):
        if s0.ndim == 0:
            s0 = s0 * np.eye(D)
        if s0.shape != (D, D) or not np.all(np.isfinite(s0)):
            raise ValueError(f"scale_prior must be a scalar or a finite ({D}, {D}) matrix.")
        if not np.allclose(s0, s0.T) or np.any(np.linalg.eigvalsh(s0) <= 0):
            raise ValueError("scale_prior must be symmetric positive definite.")
        return s0

    @staticmethod
    def _check_init_scale(init, K, D):
        scale = init_posterior_array(init, "scale", (K, D, D))
        if np.any(np.linalg.eigvalsh(scale) <= 0):
            raise ValueError("init_posterior['scale'] must be positive definite.")
        return scale

    @staticmethod
    def _second_moments(resp, Xc):
        return np.einsum("nk,ni,nj->kij", resp, Xc, Xc, optimize=True)

    @staticmethod
    def _scale_update(scale0, S1, S2, beta):
        scale = scale0 + S2 - S1[:, :, None] * S1[:, None, :] / beta[:, None, None]
        return 0.5 * (scale + np.swapaxes(scale, 1, 2))

    @staticmethod
    def _expected_logdet_and_precision(nu, scale):
        """E[ln|Lambda|] and the Cholesky factor of E[Lambda] = nu W under Wishart(W = S^-1, nu)."""
        D = scale.shape[-1]
        chol_s = np.linalg.cholesky(scale)
        logdet_s = 2.0 * np.log(np.diagonal(chol_s, axis1=1, axis2=2)).sum(axis=1)
        e_logdet = digamma(0.5 * (nu[:, None] - np.arange(D))).sum(axis=1) + D * np.log(2.0) - logdet_s
        return e_logdet, GaussianFullEmissions._mean_precision_cholesky(nu, scale)

    @staticmethod
    def _mean_precision_cholesky(nu, scale):
        prec = nu[:, None, None] * np.linalg.inv(scale)
        prec = 0.5 * (prec + np.swapaxes(prec, 1, 2))
        return np.linalg.cholesky(prec)

    @staticmethod
    def _mean_logdet_and_precision(nu, scale):
        chol = GaussianFullEmissions._mean_precision_cholesky(nu, scale)
        logdet = 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)
        return logdet, chol

    def log_table(self, params, X):
        const, precision, means = params
        return _k.gaussian_full_log_weights(X, means, np.ascontiguousarray(precision), const)

    @staticmethod
    def _expected_quadratic(stats, precision, delta):
        """sum_t r_tk E[(x_t - mu_k)^T Lambda_k (x_t - mu_k)] without the 1/beta part,
        from the centred statistics; ``delta`` = m_k - m0."""
        N, S1, S2 = stats["N"], stats["S1"], stats["S2"]
        prec = precision @ np.swapaxes(precision, 1, 2)
        scatter = (
            S2
            - S1[:, :, None] * delta[:, None, :]
            - delta[:, :, None] * S1[:, None, :]
            + N[:, None, None] * delta[:, :, None] * delta[:, None, :]
        )
        return np.einsum("kij,kji->k", prec, scatter)

    def kl(self, post, prior):
        return float(
            np.sum(
                normal_wishart_kl(
                    post["means"], post["beta"], np.linalg.inv(post["scale"]), post["dof"],
                    prior["means"], prior["beta"], np.linalg.inv(prior["scale"]), prior["dof"],
                )
            )
        )

    def point_estimates(self, post):
        return {
            "means_": post["means"].copy(),
            "covars_": post["scale"] / post["dof"][:, None, None],
        }

    @staticmethod
    def _n_precision_parameters(D):
        return D * (D + 1) // 2

    def sample(self, post, states, rng):
        covars = post["scale"] / post["dof"][:, None, None]
        z = rng.standard_normal((states.shape[0], covars.shape[-1]))
        L = np.linalg.cholesky(covars)
        return post["means"][states] + np.einsum("nij,nj->ni", L[states], z)


class GaussianDiagEmissions(_GaussianEmissions):
    """Diagonal-covariance Gaussian states with per-dimension Normal-Gamma priors.

    Hyperparameters: ``means`` (K, D), ``beta`` (K,), ``dof`` (K,) = twice the Gamma
    shapes, ``scale`` (K, D) = twice the Gamma rates (the prior: (D,), scalar, scalar, (D,)).
    """

    covariance_type = "diag"

    @staticmethod
    def _check_scale_prior(s0, D):
        try:
            s0 = np.broadcast_to(s0, (D,)).copy()
        except ValueError:
            raise ValueError(f"scale_prior must be a scalar or of shape ({D},).") from None
        if not np.all(np.isfinite(s0)) or np.any(s0 <= 0):
            raise ValueError("scale_prior must contain positive finite values.")
        return s0

    @staticmethod
    def _check_init_scale(init, K, D):
        return init_posterior_array(init, "scale", (K, D), positive=True)

    @staticmethod
    def _second_moments(resp, Xc):
        return resp.T @ (Xc * Xc)

    @staticmethod
    def _scale_update(scale0, S1, S2, beta):
        return scale0 + np.maximum(S2 - S1 * S1 / beta[:, None], 0.0)

    @staticmethod
    def _expected_logdet_and_precision(nu, scale):
        """sum_d E[ln lambda_d] and E[lambda] (K, D) under Gamma(nu/2, rate scale/2)."""
        a = 0.5 * nu
        b = 0.5 * scale
        e_logdet = (digamma(a)[:, None] - np.log(b)).sum(axis=1)
        return e_logdet, a[:, None] / b

    @staticmethod
    def _mean_logdet_and_precision(nu, scale):
        prec = nu[:, None] / scale
        return np.log(prec).sum(axis=1), prec

    def log_table(self, params, X):
        const, precision, means = params
        return _k.gaussian_diag_log_weights(X, means, precision, const)

    @staticmethod
    def _expected_quadratic(stats, precision, delta):
        N, S1, S2 = stats["N"], stats["S1"], stats["S2"]
        return np.sum(precision * (S2 - 2.0 * S1 * delta + N[:, None] * delta**2), axis=1)

    def kl(self, post, prior):
        return float(
            np.sum(
                normal_gamma_kl(
                    post["means"], post["beta"][:, None], 0.5 * post["dof"][:, None],
                    0.5 * post["scale"],
                    prior["means"], prior["beta"], 0.5 * prior["dof"], 0.5 * prior["scale"],
                )
            )
        )

    def point_estimates(self, post):
        return {"means_": post["means"].copy(), "covars_": post["scale"] / post["dof"][:, None]}

    @staticmethod
    def _n_precision_parameters(D):
        return D

    def sample(self, post, states, rng):
        covars = post["scale"] / post["dof"][:, None]
        z = rng.standard_normal((states.shape[0], covars.shape[-1]))
        return post["means"][states] + np.sqrt(covars[states]) * z
