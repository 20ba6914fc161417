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
  The KLs also come parameterised by the inverse scale ``S = W^{-1}``
  (:func:`wishart_kl_inverse_scale`, :func:`normal_wishart_kl_inverse_scale`),
  the form conjugate updates produce; they work from Cholesky factors of ``S``
  and never invert it, so they stay accurate when ``S`` is ill-conditioned.
* Normal-Gamma per dimension: ``mu_d | lambda_d ~ N(m_d, 1/(beta_d lambda_d))``,
  ``lambda_d ~ Gamma(a_d, b_d)``; log densities and KLs are summed over the
  last (dimension) axis.
* ARD Gaussian: a weight vector ``w ~ N(0, diag(1/alpha))`` with
  ``alpha_j ~ Gamma(a_j, b_j)``.
"""

from dataclasses import dataclass

import numpy as np
from scipy import linalg
from scipy.special import digamma, gammaln, xlogy

from .kernels.constants import LOG_2PI

__all__ = [
    "as_generator",
    "cholesky_of_inverse",
    "log_multigamma",
    "wishart_expected_logdet_terms",
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
    "wishart_expected_precision",
    "wishart_expected_logdet",
    "wishart_log_normaliser",
    "wishart_entropy",
    "wishart_kl",
    "wishart_kl_inverse_scale",
    "wishart_log_pdf",
    "wishart_sample",
    # Normal-Wishart
    "normal_wishart_kl",
    "normal_wishart_kl_inverse_scale",
    "normal_wishart_log_pdf",
    "normal_wishart_sample",
    "normal_wishart_expected_log_likelihood",
    # Normal-Gamma
    "normal_gamma_kl",
    "normal_gamma_log_pdf",
    "normal_gamma_sample",
    "normal_gamma_expected_log_likelihood",
    # ARD
    "ard_expected_sq",
    "ard_expected_log_prior",
    "ard_gamma_posterior",
    # wrappers
    "Dirichlet",
    "Gamma",
    "Gaussian",
    "Wishart",
    "NormalWishart",
    "NormalGamma",
]

_TINY = np.finfo(float).tiny


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _f(x):
    """A float array view of ``x`` (copied only when a conversion is needed)."""
    return np.asarray(x, dtype=float)


def as_generator(rng):
    """``rng`` itself when it is a numpy Generator, else ``np.random.default_rng(rng)``."""
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


def cholesky_of_inverse(S):
    """(F, ln|S|): the lower Cholesky factor F of S^{-1} (F F^T = S^{-1}), without forming S^{-1}.

    With S = U U^T, U upper triangular (the Cholesky factor of S with its axes
    reversed), S^{-1} = U^{-T} U^{-1} and U^{-T} is lower triangular: one triangular
    solve.  An explicit inverse carries errors of cond(S) * eps times the largest
    eigenvalue of S^{-1} into every entry, which for an ill-conditioned S swamps the
    small ones in quadratic forms x^T S^{-1} x along its large eigenvectors.
    """
    S = _f(S)
    U = np.linalg.cholesky(S[..., ::-1, ::-1])[..., ::-1, ::-1]
    # LU of an upper triangular matrix needs no pivoting: this is back substitution
    U_inv = np.linalg.solve(U, np.broadcast_to(np.eye(S.shape[-1]), S.shape))
    return np.swapaxes(U_inv, -1, -2), _logdet_chol(U)


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
    if np.prod(L.shape[:-2]) < np.prod(shape):
        # fewer factors than right-hand sides (e.g. K components, n rows):
        # solve once per factor for the identity, then apply to every row
        L_inv = np.linalg.solve(L, np.broadcast_to(np.eye(D), L.shape))
        return np.einsum("...ij,...j->...i", L_inv, b)
    L = np.broadcast_to(L, shape + (D, D))
    b = np.broadcast_to(b, shape + (D,))
    return np.linalg.solve(L, b[..., None])[..., 0]


def _trace_solve(A_chol, B):
    """tr(A^{-1} B) given the lower Cholesky factor of A (both batched)."""
    shape = np.broadcast_shapes(A_chol.shape[:-2], B.shape[:-2])
    D = A_chol.shape[-1]
    L = np.broadcast_to(A_chol, shape + (D, D))
    B = np.broadcast_to(B, shape + (D, D))
    # A^{-1} B = L^{-T} (L^{-1} B): two triangular-system solves, no inverse
    X = np.linalg.solve(L, B)
    Y = np.linalg.solve(np.swapaxes(L, -1, -2), X)
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
    rng = as_generator(rng)
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


#: smallest Gamma shape drawn directly; below it the variates are drawn in log space
_DIRECT_GAMMA_SHAPE = 0.5


def gamma_sample(a, b, rng, size=None):
    """Draw lambda ~ Gamma(shape a, rate b), shape ``size + broadcast(a, b).shape``.

    One standard-Gamma variate per draw when every shape is at least 0.5; otherwise
    drawn in log space, which stays accurate for tiny shapes (a draw of Gamma(1e-3)
    is often below the smallest double).  Never exactly 0.
    """
    a, b = _f(a), _f(b)
    if np.any(~(a > 0)) or np.any(~(b > 0)):
        raise ValueError("a and b must be positive.")
    rng = as_generator(rng)
    out_shape = _size(size) + np.broadcast_shapes(a.shape, b.shape)
    if np.all(a >= _DIRECT_GAMMA_SHAPE):
        return np.maximum(rng.standard_gamma(np.broadcast_to(a, out_shape), size=out_shape) / b,
                          _TINY)
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
    rng = as_generator(rng)
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


# ---------------------------------------------------------------------------
# Wishart(W scale, nu dof) on D x D precision matrices
# ---------------------------------------------------------------------------


def log_multigamma(a, D):
    """ln Gamma_D(a) = D(D-1)/4 ln pi + sum_{i=1}^D ln Gamma(a + (1 - i)/2), vectorised over a.

    Same value as ``scipy.special.multigammaln`` (checked in the tests), which
    does not broadcast over arrays of ``a`` and raises instead of returning inf.
    """
    a = _f(a)
    i = np.arange(D)
    return 0.25 * D * (D - 1) * np.log(np.pi) + np.sum(gammaln(a[..., None] - 0.5 * i), axis=-1)


def _wishart_logdet_terms(W, nu, name="W"):
    """(D, nu, Cholesky of W, ln|W|) with validation; ``name`` labels ``W`` in the error
    message (the inverse-scale functions pass their ``S = W^{-1}`` here)."""
    W = _f(W)
    nu = _f(nu)
    LW = _cholesky(name, W)
    D = W.shape[-1]
    if np.any(~(nu > D - 1)):
        raise ValueError(f"nu must exceed D - 1 = {D - 1}, got {nu}.")
    return D, nu, LW, _logdet_chol(LW)


def wishart_expected_precision(W, nu):
    """E[Lambda] = nu W."""
    W = _f(W)
    return _f(nu)[..., None, None] * W


def wishart_expected_logdet_terms(D, nu, logdet_W):
    """E[ln|Lambda|] of Wishart(W, nu) from ``ln|W|`` (batched over ``nu``)."""
    i = np.arange(D)
    return np.sum(digamma(0.5 * (nu[..., None] - i)), axis=-1) + D * np.log(2.0) + logdet_W


def wishart_expected_logdet(W, nu):
    """E[ln|Lambda|] = sum_{i=1}^D psi((nu + 1 - i)/2) + D ln 2 + ln|W|."""
    D, nu, _, logdet_W = _wishart_logdet_terms(W, nu)
    return wishart_expected_logdet_terms(D, nu, logdet_W)


def _log_normaliser(D, nu, logdet_W):
    return -0.5 * nu * logdet_W - 0.5 * nu * D * np.log(2.0) - log_multigamma(0.5 * nu, D)


def wishart_log_normaliser(W, nu):
    """ln B(W, nu) = -(nu/2) ln|W| - (nu D/2) ln 2 - ln Gamma_D(nu/2).

    This is *minus* the log of the normalising constant
    ``2^{nu D/2} |W|^{nu/2} Gamma_D(nu/2)``, so that
    ``ln Wishart(L | W, nu) = ln B + (nu-D-1)/2 ln|L| - tr(W^{-1} L)/2``.
    """
    D, nu, _, logdet_W = _wishart_logdet_terms(W, nu)
    return _log_normaliser(D, nu, logdet_W)


def wishart_entropy(W, nu):
    """Entropy -ln B - (nu-D-1)/2 E[ln|Lambda|] + nu D/2."""
    D, nu, _, logdet_W = _wishart_logdet_terms(W, nu)
    return (
        -_log_normaliser(D, nu, logdet_W)
        - 0.5 * (nu - D - 1.0) * wishart_expected_logdet_terms(D, nu, logdet_W)
        + 0.5 * nu * D
    )


def _wishart_kl(D, nu_q, logdet_q, nu_p, logdet_p, trace):
    """KL between Wisharts from ln|W_q|, ln|W_p| and ``trace`` = tr(W_p^{-1} W_q)."""
    return (
        _log_normaliser(D, nu_q, logdet_q)
        - _log_normaliser(D, nu_p, logdet_p)
        + 0.5 * (nu_q - nu_p) * wishart_expected_logdet_terms(D, nu_q, logdet_q)
        - 0.5 * nu_q * D
        + 0.5 * nu_q * trace
    )


def _check_same_dimension(D, Dp, names):
    if Dp != D:
        raise ValueError(f"{names[0]} and {names[1]} have different dimensions ({D} and {Dp}).")


def wishart_kl(W_q, nu_q, W_p, nu_p):
    """KL(Wishart(W_q, nu_q) || Wishart(W_p, nu_p))."""
    D, nu_q, _, logdet_q = _wishart_logdet_terms(W_q, nu_q)
    Dp, nu_p, Lp, logdet_p = _wishart_logdet_terms(W_p, nu_p)
    _check_same_dimension(D, Dp, ("W_q", "W_p"))
    return _wishart_kl(D, nu_q, logdet_q, nu_p, logdet_p, _trace_solve(Lp, _f(W_q)))


def _wishart_kl_inverse_scale_terms(S_q, nu_q, S_p, nu_p):
    """(KL, D, nu_q, Cholesky factor of S_q) for :func:`wishart_kl_inverse_scale`."""
    D, nu_q, Lq, logdet_Sq = _wishart_logdet_terms(S_q, nu_q, "S_q")
    Dp, nu_p, Lp, logdet_Sp = _wishart_logdet_terms(S_p, nu_p, "S_p")
    _check_same_dimension(D, Dp, ("S_q", "S_p"))
    shape = np.broadcast_shapes(Lq.shape, Lp.shape)
    # tr(W_p^{-1} W_q) = tr(S_q^{-1} S_p) = ||L_q^{-1} L_p||_F^2: a sum of squares after
    # one triangular solve, where forming S^{-1} would lose cond(S) * eps of the
    # largest eigenvalue of W in every entry
    Y = np.linalg.solve(np.broadcast_to(Lq, shape), np.broadcast_to(Lp, shape))
    trace = np.sum(Y * Y, axis=(-2, -1))
    return _wishart_kl(D, nu_q, -logdet_Sq, nu_p, -logdet_Sp, trace), D, nu_q, Lq


def wishart_kl_inverse_scale(S_q, nu_q, S_p, nu_p):
    """KL(Wishart(S_q^{-1}, nu_q) || Wishart(S_p^{-1}, nu_p)) from the inverse scales.

    Equals ``wishart_kl(inv(S_q), nu_q, inv(S_p), nu_p)`` but uses only Cholesky
    factors of ``S_q`` and ``S_p``, so it keeps its accuracy when they are
    ill-conditioned.
    """
    return _wishart_kl_inverse_scale_terms(S_q, nu_q, S_p, nu_p)[0]


def wishart_log_pdf(L, W, nu, cholesky=False):
    """ln Wishart(L | W, nu) for a precision matrix L (last two axes).

    With ``cholesky=True``, ``L`` is the lower Cholesky factor of the precision matrix
    (positive diagonal) and is used as it is: the density is still that of the matrix,
    without the Jacobian of the factorisation, and nothing is refactorised (so a factor
    whose product is numerically singular still gets its density).
    """
    L = _f(L)
    D, nu, LW, logdet_W = _wishart_logdet_terms(W, nu)
    if cholesky:
        LL, L = L, L @ np.swapaxes(L, -1, -2)
    else:
        LL = _cholesky("L", L)
    return (
        _log_normaliser(D, nu, logdet_W)
        + 0.5 * (nu - D - 1.0) * _logdet_chol(LL)
        - 0.5 * _trace_solve(LW, L)
    )


def _bartlett_factor(LW, nu, rng, out_shape, D):
    """Lower factor C with C C^T ~ Wishart(LW LW^T, nu), shape out_shape + (D, D)."""
    A = np.tril(rng.standard_normal(out_shape + (D, D)), k=-1)
    df = np.broadcast_to(nu[..., None] - np.arange(D), out_shape + (D,))
    idx = np.arange(D)
    A[..., idx, idx] = np.sqrt(rng.chisquare(df))
    return LW @ A


def wishart_sample(W, nu, rng, size=None, cholesky=False):
    """Draw Lambda ~ Wishart(W, nu) (Bartlett decomposition), shape ``size + batch + (D, D)``.

    With ``cholesky=True`` the lower Cholesky factor of each draw is returned instead
    (the Bartlett factor itself, exact and without a factorisation).
    """
    D, nu, LW, _ = _wishart_logdet_terms(W, nu)
    rng = as_generator(rng)
    out_shape = _size(size) + np.broadcast_shapes(LW.shape[:-2], nu.shape)
    C = _bartlett_factor(LW, nu, rng, out_shape, D)
    return C if cholesky else C @ np.swapaxes(C, -1, -2)


# ---------------------------------------------------------------------------
# Normal-Wishart: mu | Lambda ~ N(m, (beta Lambda)^{-1}), Lambda ~ Wishart(W, nu)
# ---------------------------------------------------------------------------


def normal_wishart_kl(m_q, beta_q, W_q, nu_q, m_p, beta_p, W_p, nu_p):
    """KL(NW(m_q, beta_q, W_q, nu_q) || NW(m_p, beta_p, W_p, nu_p))."""
    m_q, beta_q, W_q, nu_q = _f(m_q), _f(beta_q), _f(W_q), _f(nu_q)
    m_p, beta_p = _f(m_p), _f(beta_p)
    D = W_q.shape[-1]
    diff = m_q - m_p
    # E_q[(m_q - m_p)^T Lambda (m_q - m_p)] with E[Lambda] = nu_q W_q
    quad = nu_q * np.einsum("...i,...ij,...j->...", diff, W_q, diff)
    return _normal_wishart_mean_kl(D, beta_q, beta_p, quad) + wishart_kl(W_q, nu_q, W_p, nu_p)


def _normal_wishart_mean_kl(D, beta_q, beta_p, quad):
    """E_q[KL(q(mu | Lambda) || p(mu | Lambda))] from ``quad`` = E_q[(m_q - m_p)^T Lambda (m_q - m_p)]."""
    ratio = beta_p / beta_q
    return 0.5 * (D * (ratio - 1.0 - np.log(ratio)) + beta_p * quad)


def normal_wishart_kl_inverse_scale(m_q, beta_q, S_q, nu_q, m_p, beta_p, S_p, nu_p):
    """KL(NW(m_q, beta_q, S_q^{-1}, nu_q) || NW(m_p, beta_p, S_p^{-1}, nu_p)).

    :func:`normal_wishart_kl` with the Wisharts given by their inverse scales
    ``S = W^{-1}`` (what the conjugate update produces), evaluated from Cholesky
    factors only, as :func:`wishart_kl_inverse_scale`.
    """
    m_q, beta_q, m_p, beta_p = _f(m_q), _f(beta_q), _f(m_p), _f(beta_p)
    kl_wishart, D, nu_q, Lq = _wishart_kl_inverse_scale_terms(S_q, nu_q, S_p, nu_p)
    # (m_q - m_p)^T S_q^{-1} (m_q - m_p) = ||L_q^{-1} (m_q - m_p)||^2
    z = _solve_lower(Lq, m_q - m_p)
    quad = nu_q * np.sum(z * z, axis=-1)
    return _normal_wishart_mean_kl(D, beta_q, beta_p, quad) + kl_wishart


def normal_wishart_log_pdf(mu, L, m, beta, W, nu, cholesky=False):
    """ln N(mu | m, (beta L)^{-1}) + ln Wishart(L | W, nu).

    With ``cholesky=True``, ``L`` is the lower Cholesky factor of the precision matrix
    (see :func:`wishart_log_pdf`).
    """
    mu, L, m, beta = _f(mu), _f(L), _f(m), _f(beta)
    D = L.shape[-1]
    diff = mu - m
    if cholesky:
        LL = L
        u = np.einsum("...ij,...i->...j", LL, diff)  # LL^T diff
        quad = np.sum(u * u, axis=-1)
    else:
        LL = _cholesky("L", L)
        quad = np.einsum("...i,...ij,...j->...", diff, L, diff)
    log_gauss = 0.5 * (D * np.log(beta) + _logdet_chol(LL) - D * LOG_2PI - beta * quad)
    return log_gauss + wishart_log_pdf(L, W, nu, cholesky=cholesky)


def normal_wishart_sample(m, beta, W, nu, rng, size=None, cholesky=False):
    """Draw (mu, Lambda) from NW(m, beta, W, nu); shapes ``size + batch + (D,)`` and ``+ (D, D)``.

    With ``cholesky=True`` the second output is the lower Cholesky factor of Lambda.
    """
    m, beta = _f(m), _f(beta)
    D, nu, LW, _ = _wishart_logdet_terms(W, nu)
    rng = as_generator(rng)
    batch = np.broadcast_shapes(m.shape[:-1], beta.shape, LW.shape[:-2], nu.shape)
    out_shape = _size(size) + batch
    C = _bartlett_factor(LW, nu, rng, out_shape, D)  # Lambda = C C^T
    z = rng.standard_normal(out_shape + (D,))
    # mu - m = beta^{-1/2} C^{-T} z has covariance (beta Lambda)^{-1}
    y = np.linalg.solve(np.swapaxes(C, -1, -2), z[..., None])[..., 0]
    mu = m + y / np.sqrt(beta)[..., None]
    return mu, (C if cholesky else C @ np.swapaxes(C, -1, -2))


def normal_wishart_expected_log_likelihood(x, m, beta, W, nu):
    """E_q[ln N(x | mu, Lambda^{-1})] under (mu, Lambda) ~ NW(m, beta, W, nu).

    ``x`` (..., D) broadcasts against the parameters, e.g. ``x (n, D)`` with a
    single component gives ``(n,)`` and ``x[:, None, :]`` with ``m (K, D)``,
    ``W (K, D, D)`` gives ``(n, K)``. Equals
    ``0.5 E ln|Lambda| - D/2 ln 2 pi - 0.5 (D / beta + nu (x-m)^T W (x-m))``.
    """
    x, m, beta = _f(x), _f(m), _f(beta)
    D, nu, _, logdet_W = _wishart_logdet_terms(W, nu)
    W = _f(W)
    diff = x - m
    quad = np.einsum("...i,...ij,...j->...", diff, W, diff)
    return 0.5 * (
        wishart_expected_logdet_terms(D, nu, logdet_W) - D * LOG_2PI - D / beta - nu * quad
    )


# ---------------------------------------------------------------------------
# Normal-Gamma per dimension: mu_d | lam_d ~ N(m_d, 1/(beta_d lam_d)), lam_d ~ Gamma(a_d, b_d)
# Everything is summed over the last (dimension) axis.
# ---------------------------------------------------------------------------


def normal_gamma_kl(m_q, beta_q, a_q, b_q, m_p, beta_p, a_p, b_p):
    """KL between products of per-dimension Normal-Gamma distributions, summed over the last axis."""
    m_q, beta_q, a_q, b_q = _f(m_q), _f(beta_q), _f(a_q), _f(b_q)
    m_p, beta_p, a_p, b_p = _f(m_p), _f(beta_p), _f(a_p), _f(b_p)
    ratio = beta_p / beta_q
    kl_mean = 0.5 * (ratio - 1.0 - np.log(ratio) + beta_p * (m_q - m_p) ** 2 * a_q / b_q)
    kl = kl_mean + gamma_kl(a_q, b_q, a_p, b_p)
    shape = np.broadcast_shapes(m_q.shape, beta_q.shape, a_q.shape, b_q.shape,
                                m_p.shape, beta_p.shape, a_p.shape, b_p.shape)
    return np.sum(np.broadcast_to(kl, shape), axis=-1)


def normal_gamma_log_pdf(mu, lam, m, beta, a, b):
    """sum_d [ln N(mu_d | m_d, 1/(beta_d lam_d)) + ln Gamma(lam_d | a_d, b_d)]."""
    mu, lam, m, beta = _f(mu), _f(lam), _f(m), _f(beta)
    prec = beta * lam
    lp = 0.5 * (np.log(prec) - LOG_2PI - prec * (mu - m) ** 2) + gamma_log_pdf(lam, a, b)
    shape = np.broadcast_shapes(mu.shape, lam.shape, m.shape, beta.shape, np.shape(a), np.shape(b))
    return np.sum(np.broadcast_to(lp, shape), axis=-1)


def normal_gamma_sample(m, beta, a, b, rng, size=None):
    """Draw (mu, lam) from the per-dimension Normal-Gamma; both of shape ``size + batch``."""
    m, beta, a, b = _f(m), _f(beta), _f(a), _f(b)
    rng = as_generator(rng)
    out_shape = _size(size) + np.broadcast_shapes(m.shape, beta.shape, a.shape, b.shape)
    lam = gamma_sample(np.broadcast_to(a, out_shape), b, rng)
    mu = m + rng.standard_normal(out_shape) / np.sqrt(beta * lam)
    return mu, lam


def normal_gamma_expected_log_likelihood(x, m, beta, a, b):
    """E_q[sum_d ln N(x_d | mu_d, 1/lam_d)], summed over the last (dimension) axis.

    Per dimension: ``0.5 (psi(a) - ln b) - 0.5 ln 2 pi - 0.5 (1/beta + (a/b)(x-m)^2)``.
    ``x (n, D)`` gives ``(n,)``; use ``x[:, None, :]`` with ``(K, D)`` parameters for ``(n, K)``.
    """
    x, m, beta, a, b = _f(x), _f(m), _f(beta), _f(a), _f(b)
    ell = 0.5 * (
        gamma_expected_log(a, b) - LOG_2PI - 1.0 / beta - gamma_mean(a, b) * (x - m) ** 2
    )
    shape = np.broadcast_shapes(x.shape, m.shape, beta.shape, a.shape, b.shape)
    return np.sum(np.broadcast_to(ell, shape), axis=-1)


# ---------------------------------------------------------------------------
# ARD Gaussian: w ~ N(0, diag(1/alpha)), alpha_j ~ Gamma(a_j, b_j)
# ---------------------------------------------------------------------------


def ard_expected_sq(mean_w, cov_w=None):
    """E[w_j^2] = mean_j^2 + cov_jj for q(w) = N(mean_w, cov_w), shape of ``mean_w`` (broadcast).

    ``cov_w`` is the full covariance (..., J, J) of each weight vector; ``None``
    means a point mass at ``mean_w``.
    """
    mean_w = _f(mean_w)
    if cov_w is None:
        return mean_w**2
    cov_w = _f(cov_w)
    _check_square("cov_w", cov_w)
    return mean_w**2 + np.diagonal(cov_w, axis1=-2, axis2=-1)


def ard_expected_log_prior(mean_w, cov_w, a_alpha, b_alpha):
    """E_{q(w) q(alpha)}[ln N(w | 0, diag(1/alpha))] for each weight vector (summed over its J entries).

    ``mean_w`` (..., J), ``cov_w`` (..., J, J) (or ``None``), ``a_alpha``, ``b_alpha``
    (..., J) broadcast; equals
    ``sum_j [0.5 E ln alpha_j - 0.5 ln 2 pi - 0.5 E[alpha_j] E[w_j^2]]``.
    """
    ew2 = ard_expected_sq(mean_w, cov_w)
    a_alpha, b_alpha = _f(a_alpha), _f(b_alpha)
    term = 0.5 * (
        gamma_expected_log(a_alpha, b_alpha) - LOG_2PI - gamma_mean(a_alpha, b_alpha) * ew2
    )
    shape = np.broadcast_shapes(ew2.shape, a_alpha.shape, b_alpha.shape)
    return np.sum(np.broadcast_to(term, shape), axis=-1)


def _sum_to_shape(x, shape):
    """Sum ``x`` over the axes along which ``shape`` was broadcast to ``x.shape``."""
    lead = x.ndim - len(shape)
    x = np.sum(x, axis=tuple(range(lead))) if lead > 0 else x
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and x.shape[i] != 1)
    return np.sum(x, axis=axes, keepdims=True) if axes else x


def ard_gamma_posterior(a, b, mean_w, cov_w=None):
    """Optimal q(alpha) = Gamma(a_new, b_new) given q(w) = N(mean_w, cov_w).

    Each precision alpha (the parameters ``a``, ``b``) is shared by every weight
    entry it broadcasts against: ``a_new = a + (number of entries)/2`` and
    ``b_new = b + 0.5 * sum E[w^2]`` over those entries. For example with
    ``a, b`` of shape (J,) and weights ``mean_w`` (P, J) (P rows sharing one
    precision per column) the sums run over the P rows; for per-component
    precisions use ``a, b`` of shape (K, 1, J) with ``mean_w`` (K, P, J).
    Returns ``(a_new, b_new)`` of shape ``broadcast(a, b)``.
    """
    a, b = _f(a), _f(b)
    ew2 = ard_expected_sq(mean_w, cov_w)
    target = np.broadcast_shapes(a.shape, b.shape)
    try:
        full = np.broadcast_shapes(target, ew2.shape)
    except ValueError:
        full = None
    if full != ew2.shape:
        raise ValueError(
            f"a and b of shape {target} do not broadcast against the weights of shape {ew2.shape}."
        )
    counts = _sum_to_shape(np.ones(ew2.shape), target)
    sums = _sum_to_shape(ew2, target)
    return a + 0.5 * counts, b + 0.5 * sums


# ---------------------------------------------------------------------------
# Thin dataclass wrappers over the functions above
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Dirichlet:
    """Dir(alpha) over the last axis of ``alpha``."""

    alpha: np.ndarray

    def mean(self):
        return dirichlet_mean(self.alpha)

    def expected_log(self):
        return dirichlet_expected_log(self.alpha)

    def entropy(self):
        return dirichlet_entropy(self.alpha)

    def kl(self, other):
        return dirichlet_kl(self.alpha, other.alpha)

    def log_pdf(self, x):
        return dirichlet_log_pdf(x, self.alpha)

    def sample(self, rng, size=None):
        return dirichlet_sample(self.alpha, rng, size)


@dataclass(frozen=True)
class Gamma:
    """Gamma with shape ``a`` and rate ``b``."""

    a: np.ndarray
    b: np.ndarray

    def mean(self):
        return gamma_mean(self.a, self.b)

    def expected_log(self):
        return gamma_expected_log(self.a, self.b)

    def entropy(self):
        return gamma_entropy(self.a, self.b)

    def kl(self, other):
        return gamma_kl(self.a, self.b, other.a, other.b)

    def log_pdf(self, x):
        return gamma_log_pdf(x, self.a, self.b)

    def sample(self, rng, size=None):
        return gamma_sample(self.a, self.b, rng, size)


@dataclass(frozen=True)
class Gaussian:
    """N(mean, cov) with a full covariance matrix."""

    mean: np.ndarray
    cov: np.ndarray

    def expected_outer(self):
        return gaussian_expected_outer(self.mean, self.cov)

    def entropy(self):
        return gaussian_entropy(self.cov)

    def kl(self, other):
        return gaussian_kl(self.mean, self.cov, other.mean, other.cov)

    def log_pdf(self, x):
        return gaussian_log_pdf(x, self.mean, self.cov)

    def sample(self, rng, size=None):
        return gaussian_sample(self.mean, self.cov, rng, size)


@dataclass(frozen=True)
class Wishart:
    """Wishart(W, nu) on precision matrices, E[Lambda] = nu W."""

    W: np.ndarray
    nu: np.ndarray

    def expected_precision(self):
        return wishart_expected_precision(self.W, self.nu)

    def expected_logdet(self):
        return wishart_expected_logdet(self.W, self.nu)

    def log_normaliser(self):
        return wishart_log_normaliser(self.W, self.nu)

    def entropy(self):
        return wishart_entropy(self.W, self.nu)

    def kl(self, other):
        return wishart_kl(self.W, self.nu, other.W, other.nu)

    def log_pdf(self, L):
        return wishart_log_pdf(L, self.W, self.nu)

    def sample(self, rng, size=None):
        return wishart_sample(self.W, self.nu, rng, size)


@dataclass(frozen=True)
class NormalWishart:
    """mu | Lambda ~ N(m, (beta Lambda)^{-1}), Lambda ~ Wishart(W, nu)."""

    m: np.ndarray
    beta: np.ndarray
    W: np.ndarray
    nu: np.ndarray

    def kl(self, other):
        return normal_wishart_kl(
            self.m, self.beta, self.W, self.nu, other.m, other.beta, other.W, other.nu
        )

    def log_pdf(self, mu, L):
        return normal_wishart_log_pdf(mu, L, self.m, self.beta, self.W, self.nu)

    def sample(self, rng, size=None):
        return normal_wishart_sample(self.m, self.beta, self.W, self.nu, rng, size)

    def expected_log_likelihood(self, x):
        return normal_wishart_expected_log_likelihood(x, self.m, self.beta, self.W, self.nu)


@dataclass(frozen=True)
class NormalGamma:
    """Per-dimension mu_d | lam_d ~ N(m_d, 1/(beta_d lam_d)), lam_d ~ Gamma(a_d, b_d)."""

    m: np.ndarray
    beta: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def kl(self, other):
        return normal_gamma_kl(
            self.m, self.beta, self.a, self.b, other.m, other.beta, other.a, other.b
        )

    def log_pdf(self, mu, lam):
        return normal_gamma_log_pdf(mu, lam, self.m, self.beta, self.a, self.b)

    def sample(self, rng, size=None):
        return normal_gamma_sample(self.m, self.beta, self.a, self.b, rng, size)

    def expected_log_likelihood(self, x):
        return normal_gamma_expected_log_likelihood(x, self.m, self.beta, self.a, self.b)
