"""Conjugate exponential families used by the variational Bayesian models.

Every function here is a pure function of arrays:

* parameters broadcast against each other over leading *batch* axes with the
  usual numpy rules; the trailing *event* axes are stated per family
  (last axis for Dirichlet / diagonal families, last two for matrices);
* logarithms are natural and every normalising constant is included, so the
  results can be added into a variational lower bound in nats;
* inputs are never modified;
* samplers take a ``numpy.random.Generator`` (or anything accepted by
  ``numpy.random.default_rng``) and a ``size``; the result has shape
  ``size + batch_shape + event_shape`` (``size=None`` means ``()``).

Parameterisations
-----------------
* ``Dir(alpha)`` over the last axis.
* ``Gamma(a, b)`` with shape ``a`` and **rate** ``b``: E[lambda] = a / b.
* ``N(mean, cov)`` with a full covariance over the last two axes, or
  ``N(mean, diag(var))`` with a vector of variances.
* ``Wishart(W, nu)`` on a D x D precision matrix with scale matrix ``W``:
  E[Lambda] = nu W, density
  ``|L|^{(nu-D-1)/2} exp(-tr(W^{-1} L)/2) / (2^{nu D/2} |W|^{nu/2} Gamma_D(nu/2))``.
* Normal-Wishart: ``mu | Lambda ~ N(m, (beta Lambda)^{-1})``,
  ``Lambda ~ Wishart(W, nu)``.
* Normal-Gamma per dimension: ``mu_d | lambda_d ~ N(m_d, 1/(beta_d lambda_d))``,
  ``lambda_d ~ Gamma(a_d, b_d)``; log densities and KLs are summed over the
  last (dimension) axis.
* ARD Gaussian: a weight vector ``w ~ N(0, diag(1/alpha))`` with
  ``alpha_j ~ Gamma(a_j, b_j)``.
"""

from dataclasses import dataclass

import numpy as np
from scipy import linalg
from scipy.special import digamma, gammaln, multigammaln, xlogy

__all__ = [
    # Dirichlet
    "log_multivariate_beta",
    "dirichlet_expected_log",
    "dirichlet_mean",
    "dirichlet_entropy",
    "dirichlet_kl",
    "dirichlet_log_pdf",
    "dirichlet_sample",
    # Gamma
    "gamma_mean",
    "gamma_expected_log",
    "gamma_entropy",
    "gamma_kl",
    "gamma_log_pdf",
    "gamma_sample",
    # Gaussian
    "gaussian_entropy",
    "gaussian_kl",
    "gaussian_log_pdf",
    "gaussian_expected_outer",
    "gaussian_sample",
    "diag_gaussian_entropy",
    "diag_gaussian_kl",
    "diag_gaussian_log_pdf",
    # Wishart
    # Normal-Wishart
    # Normal-Gamma
    # ARD
    # wrappers
]

LOG_2PI = np.log(2.0 * np.pi)
_TINY = np.finfo(float).tiny


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _f(x):
    """A float array view of ``x`` (copied only when a conversion is needed)."""
    return np.asarray(x, dtype=float)


def _rng(rng):
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def _size(size):
    if size is None:
        return ()
    if np.isscalar(size):
        return (int(size),)
    return tuple(int(s) for s in size)


def _check_square(name, M):
    if M.ndim < 2 or M.shape[-1] != M.shape[-2]:
        raise ValueError(
            f"{name} must have square matrices on its last two axes, got shape {M.shape}."
        )


def _cholesky(name, M):
    """Lower Cholesky factor over the last two axes, with a clear error."""
    _check_square(name, M)
    try:
        return np.linalg.cholesky(M)
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"{name} must be symmetric positive definite.") from exc


def _logdet_chol(L):
    """ln det(L L^T) from a (batched) lower Cholesky factor."""
    return 2.0 * np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)


def _solve_lower(L, b):
    """Solve L z = b for z, with L (..., D, D) lower triangular and b (..., D).

    A single factor is applied to all right-hand sides at once with a
    triangular solve (the common case: many rows, one covariance); batches of
    factors fall back to numpy's broadcasting solver.
    """
    D = L.shape[-1]
    if L.ndim == 2:
        flat = b.reshape(-1, D).T
        z = linalg.solve_triangular(L, flat, lower=True, check_finite=False)
        return z.T.reshape(b.shape)
    shape = np.broadcast_shapes(L.shape[:-2], b.shape[:-1])
    L = np.broadcast_to(L, shape + (D, D))
    b = np.broadcast_to(b, shape + (D,))
    return np.linalg.solve(L, b[..., None])[..., 0]


def _trace_solve(A_chol, B):
    """tr(A^{-1} B) given the lower Cholesky factor of A (both batched)."""
    shape = np.broadcast_shapes(A_chol.shape[:-2], B.shape[:-2])
    D = A_chol.shape[-1]
    L = np.broadcast_to(A_chol, shape + (D, D))
    B = np.broadcast_to(B, shape + (D, D))
    # A^{-1} B = L^{-T} L^{-1} B, tr = sum((L^{-1} B) * L^{-1}) ... use two solves
    X = np.linalg.solve(L, B)  # L^{-1} B
    Y = np.linalg.solve(np.swapaxes(L, -1, -2), X)  # L^{-T} L^{-1} B
    return np.trace(Y, axis1=-2, axis2=-1)


def _log_gamma_variates(shape, rng, out_shape):
    """ln G for G ~ Gamma(shape, 1), accurate for tiny shapes.

    Uses G = G' U^{1/shape} with G' ~ Gamma(shape + 1, 1) and U ~ U(0, 1],
    so ln G = ln G' + ln(U) / shape never underflows to -inf.
    """
    shape = np.broadcast_to(shape, out_shape)
    g = rng.standard_gamma(shape + 1.0, size=out_shape)
    u = 1.0 - rng.random(out_shape)  # in (0, 1]
    return np.log(g) + np.log(u) / shape


# ---------------------------------------------------------------------------
# Dirichlet
# ---------------------------------------------------------------------------


def log_multivariate_beta(alpha):
    """ln B(alpha) = sum_k ln Gamma(alpha_k) - ln Gamma(sum_k alpha_k) over the last axis."""
    alpha = _f(alpha)
    return np.sum(gammaln(alpha), axis=-1) - gammaln(np.sum(alpha, axis=-1))


def dirichlet_expected_log(alpha):
    """E[ln theta_k] = psi(alpha_k) - psi(sum alpha) under Dir(alpha); same shape as alpha."""
    alpha = _f(alpha)
    return digamma(alpha) - digamma(np.sum(alpha, axis=-1, keepdims=True))


def dirichlet_mean(alpha):
    """E[theta] = alpha / sum(alpha) under Dir(alpha)."""
    alpha = _f(alpha)
    return alpha / np.sum(alpha, axis=-1, keepdims=True)


def dirichlet_entropy(alpha):
    """Differential entropy of Dir(alpha) (density on the first K-1 coordinates)."""
    alpha = _f(alpha)
    K = alpha.shape[-1]
    a0 = np.sum(alpha, axis=-1)
    return (
        log_multivariate_beta(alpha)
        + (a0 - K) * digamma(a0)
        - np.sum((alpha - 1.0) * digamma(alpha), axis=-1)
    )


def dirichlet_kl(alpha_q, alpha_p):
    """KL(Dir(alpha_q) || Dir(alpha_p)), summed over the last axis."""
    alpha_q = _f(alpha_q)
    alpha_p = _f(alpha_p)
    return (
        log_multivariate_beta(alpha_p)
        - log_multivariate_beta(alpha_q)
        + np.sum((alpha_q - alpha_p) * dirichlet_expected_log(alpha_q), axis=-1)
    )


def dirichlet_log_pdf(x, alpha):
    """ln Dir(x | alpha) with respect to Lebesgue measure on the first K-1 coordinates.

    ``x`` lies on the simplex (last axis). ``0 * ln 0`` is taken as 0, so a
    zero coordinate with ``alpha_k = 1`` is allowed.
    """
    x = _f(x)
    alpha = _f(alpha)
    return np.sum(xlogy(alpha - 1.0, x), axis=-1) - log_multivariate_beta(alpha)


def dirichlet_sample(alpha, rng, size=None):
    """Draw theta ~ Dir(alpha), shape ``size + alpha.shape``.

    The Gamma variates are drawn in log space and normalised with log-sum-exp,
    so tiny concentrations (e.g. 1e-3) give valid points of the simplex; every
    coordinate is clipped to the smallest positive double (never exactly 0).
    """
    alpha = _f(alpha)
    if np.any(~(alpha > 0)):
        raise ValueError("alpha must be positive.")
    rng = _rng(rng)
    out_shape = _size(size) + alpha.shape
    log_g = _log_gamma_variates(alpha, rng, out_shape)
    log_g -= np.max(log_g, axis=-1, keepdims=True)
    log_theta = log_g - np.log(np.sum(np.exp(log_g), axis=-1, keepdims=True))
    theta = np.maximum(np.exp(log_theta), _TINY)
    return theta / np.sum(theta, axis=-1, keepdims=True)


# ---------------------------------------------------------------------------
# Gamma (shape a, rate b)
# ---------------------------------------------------------------------------


def gamma_mean(a, b):
    """E[lambda] = a / b under Gamma(shape a, rate b)."""
    return _f(a) / _f(b)


def gamma_expected_log(a, b):
    """E[ln lambda] = psi(a) - ln b under Gamma(shape a, rate b)."""
    return digamma(_f(a)) - np.log(_f(b))


def gamma_entropy(a, b):
    """Entropy a - ln b + ln Gamma(a) + (1 - a) psi(a) of Gamma(shape a, rate b)."""
    a = _f(a)
    b = _f(b)
    return a - np.log(b) + gammaln(a) + (1.0 - a) * digamma(a)


def gamma_kl(a_q, b_q, a_p, b_p):
    """KL(Gamma(a_q, b_q) || Gamma(a_p, b_p)), shape/rate parameterisation."""
    a_q, b_q, a_p, b_p = _f(a_q), _f(b_q), _f(a_p), _f(b_p)
    return (
        (a_q - a_p) * digamma(a_q)
        - gammaln(a_q)
        + gammaln(a_p)
        + a_p * (np.log(b_q) - np.log(b_p))
        + a_q * (b_p - b_q) / b_q
    )


def gamma_log_pdf(x, a, b):
    """ln Gamma(x | shape a, rate b)."""
    x, a, b = _f(x), _f(a), _f(b)
    return a * np.log(b) - gammaln(a) + xlogy(a - 1.0, x) - b * x


def gamma_sample(a, b, rng, size=None):
    """Draw lambda ~ Gamma(shape a, rate b), shape ``size + broadcast(a, b).shape``.

    Drawn in log space (accurate for tiny shapes); never exactly 0.
    """
    a, b = _f(a), _f(b)
    if np.any(~(a > 0)) or np.any(~(b > 0)):
        raise ValueError("a and b must be positive.")
    rng = _rng(rng)
    out_shape = _size(size) + np.broadcast_shapes(a.shape, b.shape)
    log_g = _log_gamma_variates(a, rng, out_shape) - np.log(b)
    return np.maximum(np.exp(log_g), _TINY)


# ---------------------------------------------------------------------------
# Gaussian, full covariance
# ---------------------------------------------------------------------------


def gaussian_entropy(cov):
    """0.5 ln det(2 pi e cov) over the last two axes."""
    cov = _f(cov)
    L = _cholesky("cov", cov)
    D = cov.shape[-1]
    return 0.5 * D * (1.0 + LOG_2PI) + 0.5 * _logdet_chol(L)


def gaussian_kl(mean_q, cov_q, mean_p, cov_p):
    """KL(N(mean_q, cov_q) || N(mean_p, cov_p))."""
    mean_q, cov_q, mean_p, cov_p = _f(mean_q), _f(cov_q), _f(mean_p), _f(cov_p)
    Lq = _cholesky("cov_q", cov_q)
    Lp = _cholesky("cov_p", cov_p)
    D = cov_q.shape[-1]
    z = _solve_lower(Lp, mean_q - mean_p)
    maha = np.sum(z * z, axis=-1)
    tr = _trace_solve(Lp, cov_q)
    return 0.5 * (tr + maha - D + _logdet_chol(Lp) - _logdet_chol(Lq))


def gaussian_log_pdf(x, mean, cov):
    """ln N(x | mean, cov); ``x`` (..., D) broadcasts against mean (..., D) and cov (..., D, D)."""
    x, mean, cov = _f(x), _f(mean), _f(cov)
    L = _cholesky("cov", cov)
    D = cov.shape[-1]
    z = _solve_lower(L, x - mean)
    return -0.5 * (D * LOG_2PI + _logdet_chol(L) + np.sum(z * z, axis=-1))


def gaussian_expected_outer(mean, cov):
    """E[x x^T] = cov + mean mean^T."""
    mean, cov = _f(mean), _f(cov)
    return cov + mean[..., :, None] * mean[..., None, :]


def gaussian_sample(mean, cov, rng, size=None):
    """Draw x ~ N(mean, cov), shape ``size + batch_shape + (D,)``."""
    mean, cov = _f(mean), _f(cov)
    L = _cholesky("cov", cov)
    rng = _rng(rng)
    D = cov.shape[-1]
    batch = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    out_shape = _size(size) + batch + (D,)
    eps = rng.standard_normal(out_shape)
    return mean + np.einsum("...ij,...j->...i", L, eps)


# ---------------------------------------------------------------------------
# Gaussian, diagonal covariance (vectors of variances, summed over last axis)
# ---------------------------------------------------------------------------


def diag_gaussian_entropy(var):
    """Entropy of N(., diag(var)), summed over the last axis."""
    var = _f(var)
    return 0.5 * np.sum(1.0 + LOG_2PI + np.log(var), axis=-1)


def diag_gaussian_kl(mean_q, var_q, mean_p, var_p):
    """KL(N(mean_q, diag(var_q)) || N(mean_p, diag(var_p))), summed over the last axis."""
    mean_q, var_q, mean_p, var_p = _f(mean_q), _f(var_q), _f(mean_p), _f(var_p)
    return 0.5 * np.sum(
        var_q / var_p + (mean_q - mean_p) ** 2 / var_p - 1.0 + np.log(var_p) - np.log(var_q),
        axis=-1,
    )


def diag_gaussian_log_pdf(x, mean, var):
    """ln N(x | mean, diag(var)), summed over the last axis."""
    x, mean, var = _f(x), _f(mean), _f(var)
    return -0.5 * np.sum(LOG_2PI + np.log(var) + (x - mean) ** 2 / var, axis=-1)
