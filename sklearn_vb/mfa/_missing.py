"""Array kernels of a variational mixture of factor analysers with entries missing at
random, marginalised exactly.

Given ``x`` and ``s`` the dimensions of ``y`` are independent, so the likelihood of a
row's observed entries is the product of their factors: the posterior q(x_n | s) of a
row uses only the observed rows of ``[Λ^s, μ^s]`` and of ``Ψ``, and the update of
each row ``q`` of ``[Λ^s, μ^s]`` (and of ``ψ_q``) uses only the rows that observe
dimension ``q``.  Rows are grouped by their pattern of observed dimensions: the
factor covariance ``Σ_{s,g}`` is shared by the rows of pattern ``g``.

Shapes as in :mod:`sklearn_vb.mfa.kernels`, plus

* ``miss.observed`` (G, p) 1.0 where pattern ``g`` observes dimension ``q``
* ``miss.pattern``  (N,)   the pattern of each row
* ``miss.mask``     (N, p) 1.0 where row ``n`` observes dimension ``q``
* ``sigma``         (S, G, K, K) and ``logdet_sigma`` (S, G) per component and pattern

``Y`` holds 0.0 at the missing entries (then ``Y @ A`` sums over the observed ones).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import digamma

from .._core.kernels.constants import LOG_2PI
from .._core.kernels.linalg import spd_inverse_jittered
from ._state import DataTerms, PointEStep

__all__ = ["MissingPattern", "MissingStats", "bound_terms", "check_missing_supported", "factor_means",
           "factor_posterior", "fa_log_density", "log_weights", "missing_patterns",
           "noise_residual", "pattern_quadratic", "point_e_step", "sufficient_statistics"]


class MissingPattern(NamedTuple):
    """Which entries of the rows are observed, grouped by pattern."""

    observed: np.ndarray  # (G, p) float, 1.0 observed
    pattern: np.ndarray  # (N,) int, the pattern of each row
    mask: np.ndarray  # (N, p) float, 1.0 observed


class MissingStats(NamedTuple):
    """The expected statistics of q(s) q(x|s) with missing entries: each dimension
    counts only the rows observing it."""

    Nk: np.ndarray  # (S,) Σ_n r_ns
    W: np.ndarray  # (S, p, K+1, K+1) Σ_n r_ns m_nq E[x̃ x̃ᵀ]
    C: np.ndarray  # (S, p, K+1) Σ_n r_ns m_nq y_nq E[x̃]ᵀ
    D: np.ndarray  # (S, p) Σ_n r_ns m_nq y_nq²
    Nd: np.ndarray  # (S, p) Σ_n r_ns m_nq
    Rg: np.ndarray  # (S, G) Σ_{n in pattern g} r_ns


def missing_patterns(X):
    """``(Y, miss)``: ``X`` with 0.0 at its NaN entries and their
    :class:`MissingPattern`."""
    nan = np.isnan(X)
    observed, pattern = np.unique(~nan, axis=0, return_inverse=True)
    miss = MissingPattern(observed.astype(float), np.asarray(pattern).ravel(),
                          (~nan).astype(float))
    return np.where(nan, 0.0, X), miss


def pattern_quadratic(lam_mean, lam_cov, psi, observed):
    """``M^{s,g} = E[Λ̃_oᵀ Ψ_o⁻¹ Λ̃_o]`` over the observed rows ``o`` of pattern ``g``,
    shape (S, G, K+1, K+1)."""
    S, p, K1 = lam_mean.shape
    A = (lam_mean[:, :, :, None] * lam_mean[:, :, None, :] + lam_cov) / psi[None, :, None, None]
    M = np.matmul(observed, A.reshape(S, p, K1 * K1)).reshape(S, -1, K1, K1)
    return 0.5 * (M + np.swapaxes(M, -1, -2))


def factor_posterior(M):
    """``Σ_{s,g} = (I + M^{s,g}_xx)⁻¹`` and ``ln|Σ_{s,g}|``."""
    K = M.shape[-1] - 1
    sigma, logdet_prec = spd_inverse_jittered(np.eye(K) + M[..., :K, :K])
    return sigma, -logdet_prec


def _rows(A, pattern):
    """The (S, G, ...) array ``A`` gathered per row: (N, S, ...)."""
    return np.swapaxes(A[:, pattern], 0, 1)


def factor_means(Y, lam_mean, psi, sigma, M, miss):
    """``x̄_ns = Σ_{s,g_n} (Λ̄^sᵀ Ψ⁻¹ y_n − m^{s,g_n}_xμ)`` over the observed entries of
    row ``n``, shape (N, S, K)."""
    K = sigma.shape[-1]
    S, p = lam_mean.shape[:2]
    proj = (Y / psi) @ np.transpose(lam_mean[:, :, :K], (1, 0, 2)).reshape(p, S * K)
    proj = proj.reshape(Y.shape[0], S, K) - _rows(M[:, :, :K, K], miss.pattern)
    return np.matmul(proj[:, :, None, :], _rows(sigma, miss.pattern))[:, :, 0, :]


def log_weights(Y, xbar, sigma, logdet_sigma, lam_mean, M, psi, expected_log_pi, miss):
    """Unnormalised log responsibilities of the rows from their observed entries, with
    q(x|s) kept as given (as :func:`sklearn_vb.mfa.kernels.log_weights`)."""
    K = sigma.shape[-1]
    pat = miss.pattern
    Mxx = M[:, :, :K, :K]
    # the parts shared by the rows of a pattern, (S, G)
    shared = 0.5 * (logdet_sigma + K - np.trace(sigma, axis1=-2, axis2=-1))
    shared -= 0.5 * (np.einsum("sgkl,sglk->sg", Mxx, sigma) + M[:, :, K, K])
    shared -= 0.5 * (miss.observed @ (LOG_2PI + np.log(psi)))[None, :]
    out = expected_log_pi[None, :] + shared.T[pat]
    Yp = Y / psi
    out -= 0.5 * np.einsum("nsk,nsk->ns", xbar, xbar)
    mu = lam_mean[:, :, K]
    cross = np.einsum("nsk,nsk->ns", np.einsum("nq,sqk->nsk", Yp, lam_mean[:, :, :K]), xbar)
    cross += Yp @ mu.T
    quad = np.einsum("nsk,nsk->ns",
                     np.matmul(xbar[:, :, None, :], _rows(Mxx, pat))[:, :, 0, :], xbar)
    quad += 2.0 * np.einsum("nsk,nsk->ns", xbar, _rows(M[:, :, :K, K], pat))
    yy = np.einsum("nq,nq->n", Y, Yp)
    return out - 0.5 * (yy[:, None] - 2.0 * cross + quad)


def point_e_step(Y, weights, lam, psi, miss):
    """The exact posterior over ``(s_i, x_i)`` at the point ``(weights, lam, psi)`` from
    the observed entries of every row (``Y`` with 0.0 at the missing ones), as
    :func:`sklearn_vb.mfa._point.point_e_step` without missing entries: a
    :class:`~sklearn_vb.mfa._state.PointEStep` whose ``sigma`` (S, G, K, K) and
    ``logdet_sigma`` (S, G) are per component and pattern and whose ``stats`` are the
    :class:`MissingStats`.

    The VB computations with q(Λ̃) a point mass are exact here: q(x | s) of a row is
    then its exact posterior given the observed entries, so its log weight is
    ``ln π_s + ln N(y_o; μ_o, Λ_o Λ_oᵀ + Ψ_o)`` and ``loglik`` sums the log-sum-exps."""
    M = pattern_quadratic(lam, np.zeros(lam.shape + lam.shape[-1:]), psi, miss.observed)
    sigma, logdet = factor_posterior(M)
    xbar = factor_means(Y, lam, psi, sigma, M, miss)
    with np.errstate(divide="ignore"):
        log_w = np.log(weights)
    ell = log_weights(Y, xbar, sigma, logdet, lam, M, psi, log_w, miss)
    m = np.max(ell, axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.sum(np.exp(ell - m), axis=1))
    resp = np.exp(ell - lse[:, None])
    return PointEStep(loglik=float(np.sum(lse)), resp=resp, sigma=sigma, logdet_sigma=logdet,
                      xbar=xbar, stats=sufficient_statistics(Y, resp, xbar, sigma, miss))


def sufficient_statistics(Y, resp, xbar, sigma, miss):
    """The :class:`MissingStats` of q(s) q(x|s) on the rows ``Y``."""
    N, S = resp.shape
    K = sigma.shape[-1]
    K1 = K + 1
    G = miss.observed.shape[0]
    p = Y.shape[1]
    Nk = resp.sum(axis=0)
    Rg = np.zeros((G, S))
    np.add.at(Rg, miss.pattern, resp)
    Rg = Rg.T
    xe = np.empty((S, N, K1))
    xe[:, :, :K] = np.transpose(xbar, (1, 0, 2))
    xe[:, :, K] = 1.0
    rT = np.ascontiguousarray(resp.T)
    # Σ_n r_ns m_nq x̃̄ x̃̄ᵀ: one (p, N) by (N, K1²) product per component
    outer = (xe[:, :, :, None] * xe[:, :, None, :]).reshape(S, N, K1 * K1)
    rm = rT[:, :, None] * miss.mask[None]  # (S, N, p)
    W = np.matmul(np.swapaxes(rm, 1, 2), outer).reshape(S, p, K1, K1)
    # plus Σ_g (Σ_{n in g} r_ns m_gq) Σ_{s,g}
    W[:, :, :K, :K] += np.einsum("sg,gq,sgkl->sqkl", Rg, miss.observed, sigma)
    W = 0.5 * (W + np.swapaxes(W, -1, -2))
    C = np.transpose(np.matmul(np.transpose(xe * rT[:, :, None], (0, 2, 1)), Y), (0, 2, 1))
    D = rT @ (Y * Y)
    Nd = rT @ miss.mask
    return MissingStats(Nk, W, C, D, Nd, Rg)


def noise_residual(stats, lam, second):
    """``Σ_s Σ_n r_ns m_nq E[(y_nq − λ̃^s_q x̃_n)²]`` per dimension, shape (p,)."""
    return (stats.D.sum(axis=0) - 2.0 * np.einsum("sqk,sqk->q", lam, stats.C)
            + np.einsum("sqkl,sqlk->q", second, stats.W))


def bound_terms(resp, xbar, sigma, logdet_sigma, lam_mean, lam_cov, lam_logdet,
                alpha_hat, a_tilde, b_tilde, psi, mu_star, nu_star, stats):
    """The :class:`~sklearn_vb.mfa._state.DataTerms` of F with missing entries: the
    data terms count only the observed entries (as
    :func:`sklearn_vb.mfa.kernels.bound_terms` otherwise)."""
    p = psi.shape[0]
    K = sigma.shape[-1]
    Nk, W, C, D, Nd, Rg = stats
    elog_pi = digamma(alpha_hat) - digamma(alpha_hat.sum())
    e_nu = a_tilde / b_tilde
    elog_nu = digamma(a_tilde) - np.log(b_tilde)
    lam_sq = lam_mean[:, :, :K] ** 2 + np.diagonal(lam_cov, axis1=-2, axis2=-1)[:, :, :K]
    centre_sq = (lam_mean[:, :, K] - mu_star[None, :]) ** 2 + lam_cov[:, :, K, K]
    f_load = 0.5 * (
        np.sum(lam_logdet, axis=1) + p * (K + 1) + p * np.sum(elog_nu, axis=1)
        + np.sum(np.log(nu_star)) - np.einsum("sk,sqk->s", e_nu, lam_sq)
        - centre_sq @ nu_star
    )
    safe = np.where(resp > 0, resp, 1.0)
    f_assign = Nk * elog_pi - np.sum(resp * np.log(safe), axis=0)
    tr_sigma = np.trace(sigma, axis1=-2, axis2=-1)
    f_x = 0.5 * (np.sum(Rg * (logdet_sigma + K - tr_sigma), axis=1)
                 - np.einsum("ns,ns->s", resp, np.einsum("nsk,nsk->ns", xbar, xbar)))
    ipsi = 1.0 / psi
    second = lam_cov + lam_mean[:, :, :, None] * lam_mean[:, :, None, :]
    quad = (D @ ipsi - 2.0 * np.einsum("sqk,sqk,q->s", lam_mean, C, ipsi)
            + np.einsum("sqkl,sqlk,q->s", second, W, ipsi))
    f_lik = -0.5 * (Nd @ (LOG_2PI + np.log(psi))) - 0.5 * quad
    return DataTerms(loading=f_load, assign=f_assign, factor=f_x, lik=f_lik)


def fa_log_density(Y, means, loadings, psi, miss, dense):
    """``ln N(y_n,o | μ_s,o, Λ_s,o Λ_s,oᵀ + Ψ_o)`` over the observed entries ``o`` of
    every row, shape (N, S), by ``dense`` (the complete-data density of
    :mod:`sklearn_vb.mfa.kernels`) on the observed columns of each pattern (a row
    observing nothing has density 1)."""
    N = Y.shape[0]
    out = np.zeros((N, means.shape[0]))
    for g, obs in enumerate(miss.observed.astype(bool)):
        if not obs.any():
            continue
        rows = miss.pattern == g
        out[rows] = dense(Y[np.ix_(rows, obs)], means[:, obs], loadings[:, obs], psi[obs])
    return out


def check_missing_supported(est, what):
    """Refuse missing entries (NaN) in the X of ``what`` (``"fit"``, ``"partial_fit"``
    or ``"new data"``, the methods reading rows after a fit) under the options of
    ``est`` that do not marginalise them (online learning), with a clear ValueError."""
    if what == "new data":
        return
    why = None
    if est.learning_method == "online" or what == "partial_fit":
        why = "online learning (batch VB, fit with learning_method='batch', marginalises them)"
    if why is not None:
        raise ValueError(f"X has missing values (NaN), which {what} does not support "
                         f"with {why}.")
