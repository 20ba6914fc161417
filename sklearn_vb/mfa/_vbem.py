"""The VBEM updates of a mixture-of-factor-analysers state and its bound F.

A state is the :class:`~sklearn_vb.mfa._state.MFAState` the estimator keeps in
``_vb_`` (fitting units): q(s) ``resp``; q(x|s) ``sigma``, ``logdet_sigma``, ``xbar``;
q(Λ̃) ``lam_mean``, ``lam_cov``, ``lam_logdet`` (rows of ``[Λ^s, μ^s]``, the centre in
the last column); q(π) ``alpha_hat``; q(ν) ``a_tilde``, ``b_tilde``; the
hyperparameters ``psi``, ``mu_star``, ``nu_star``, ``a_star``, ``b_star``,
``alpha_star``; the stable component ``ids`` and ``next_id``; and, once columns are
decoupled, ``active`` (see ``compress_factors``).  ``data`` is the estimator's
``_FitData`` (``Z`` in fitting units, ``var``, ``psi_floor``, ``log_jacobian``).

Each update is an exact coordinate maximisation of F (Beal 2003, Section 4.2) and
replaces the arrays it changes rather than editing them in place: the sufficient
statistics are cached by the identity of the arrays they come from.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, logsumexp

from .._core.distributions import dirichlet_kl, gamma_kl
from . import _missing as _m
from . import kernels as _k
from ._point import noise_update
from ._state import BoundTerms, MFAPointState, MFAState, StatsCache

__all__ = [
    "n_loading_columns", "bound_terms", "component_log_densities", "component_scores",
    "decoupling_masks",
    "expected_factors", "first_updates", "initial_state", "local_updates", "loadings_from_statistics",
    "log_weights", "lower_bound", "noise_from_statistics",
    "pack_state", "plugin_log_densities", "sufficient_statistics",
    "unpack_state", "update_ard", "update_factors", "update_loadings", "update_noise",
    "update_responsibilities", "update_weights", "weights_from_statistics",
]


#: the smallest initial sensor noise, relative to the data's variance: a cluster of
#: fewer points than dimensions leaves no residual at all
_PSI_INIT_FLOOR = 1e-6


def n_loading_columns(n_factors, p):
    """The number of loading columns per component: ``n_factors``, by default ``p - 1``."""
    return max(p - 1, 0) if n_factors is None else int(n_factors)


def initial_state(data, S, K, init_params, alpha, a, b, random_state, noise_estimated=True):
    """The initial state with ``S`` components and ``K`` loading columns
    (``init_params``), before the first updates of q(x|s), q(Λ̃), q(ν) and q(π).

    When it is estimated (``noise_estimated``), the sensor noise Ψ starts at what the
    initial loadings leave unexplained: the diagonal of each cluster's covariance less
    its loadings' share, averaged over the clusters.  Started at the data's total
    variance instead, the noise swamps tight clusters and the first E step spreads every
    point over its neighbours' components, a basin the updates do not leave
    (``tests/mfa/test_mfa_initial_noise.py``).  Held fixed, Ψ stays at the data's
    variance, as ``optimize_hyperparameters`` documents."""
    Z = data.Z
    N, p = Z.shape
    if S == 1:
        labels = np.zeros(N, dtype=int)
    elif init_params == "kmeans":
        from sklearn.cluster import KMeans

        seed = random_state.randint(np.iinfo(np.int32).max)
        labels = KMeans(S, n_init=1, random_state=seed).fit(Z).labels_
    else:
        centres = Z[random_state.choice(N, S, replace=False)]
        d2 = ((Z[:, None, :] - centres[None]) ** 2).sum(-1)
        labels = np.argmin(d2, axis=1)
    resp = np.zeros((N, S))
    resp[np.arange(N), labels] = 1.0
    Nk = resp.sum(0)
    mu_star = Z.mean(axis=0)
    nu_star = 1.0 / data.var
    centres = (resp.T @ Z + mu_star[None] * 1e-3) / (Nk[:, None] + 1e-3)
    lam_mean = np.empty((S, p, K + 1))
    lam_mean[:, :, K] = centres
    # loadings: probabilistic PCA of each initial cluster (leading directions in
    # the first columns, which lets ARD prune the trailing ones quickly), with a
    # small random perturbation so that no column starts exactly degenerate.
    residual = np.zeros(p)
    for s in range(S):
        diff = Z - centres[s]
        cov = (resp[:, s, None] * diff).T @ diff / max(Nk[s], 1.0)
        evals, evecs = np.linalg.eigh(cov + 1e-9 * np.eye(p))
        evals, evecs = evals[::-1], evecs[:, ::-1]
        rest = evals[K:].mean() if K < p else 0.0
        lam_mean[s, :, :K] = evecs[:, :K] * np.sqrt(np.maximum(evals[:K] - rest, 1e-6))
        explained = np.einsum("ik,ik->i", lam_mean[s, :, :K], lam_mean[s, :, :K])
        residual += Nk[s] * (np.diag(cov) - explained)
    if noise_estimated:
        psi = np.maximum(residual / N, _PSI_INIT_FLOOR * data.var)
    else:
        psi = data.var.copy()
    lam_mean[:, :, :K] += 1e-3 * random_state.standard_normal((S, p, K))
    return MFAState(
        resp=resp,
        lam_mean=lam_mean,
        lam_cov=np.zeros((S, p, K + 1, K + 1)),
        lam_logdet=np.zeros((S, p)),
        alpha_hat=alpha / S + Nk,
        a_tilde=a + 0.5 * p,
        b_tilde=np.full((S, K), float(b)),
        psi=psi,
        mu_star=mu_star,
        nu_star=nu_star,
        a_star=float(a),
        b_star=float(b),
        alpha_star=float(alpha),
        ids=np.arange(S),
        next_id=S,
    )


def local_updates(st, data):
    """q(x|s), then q(s), of every row of ``data`` under the stored q(θ)."""
    update_factors(st, data)
    update_responsibilities(st, data)


def first_updates(st, data):
    """A consistent starting point from an initial state: q(x|s), then q(Λ̃), q(ν)
    and q(π) given the initial responsibilities, then q(x|s) again."""
    update_factors(st, data)
    update_loadings(st, data)
    update_ard(st, data)
    update_weights(st)
    update_factors(st, data)


def decoupling_masks(active):
    """``(dead1, cross)`` for the decoupled loading columns (``active`` False, shape
    (S, K)): ``dead1`` (S, K+1) marks them, the centre column never; ``cross`` (S, K+1,
    K+1) the pairs of distinct columns at least one of which is decoupled, whose
    covariances are zero."""
    S, K = active.shape
    dead1 = np.concatenate([~active, np.zeros((S, 1), dtype=bool)], axis=1)
    cross = (dead1[:, :, None] | dead1[:, None, :]) & ~np.eye(K + 1, dtype=bool)
    return dead1, cross


# ---------------------------------------------------------------- updates of q
def sufficient_statistics(st, data):
    """N_s, W_s, C_s, D_s for the stored q(s) and q(x|s), cached by the identity
    of those arrays (every update replaces them, never edits them in place; the
    cache holds references, so an identity cannot be reused while cached)."""
    cache = st.stats_cache
    if cache is not None and cache.matches(st.resp, st.xbar, st.sigma, data.Z):
        return cache.stats
    if data.missing is None:
        stats = _k.sufficient_statistics(data.Z, st.resp, st.xbar, st.sigma)
    else:
        stats = _m.sufficient_statistics(data.Z, st.resp, st.xbar, st.sigma, data.missing)
    st.stats_cache = StatsCache(st.resp, st.xbar, st.sigma, data.Z, stats)
    return stats


def update_factors(st, data):
    """q(x|s) of every row (eqs. 4.51-4.55); with entries missing, from the observed
    ones (one covariance per component and pattern)."""
    if data.missing is not None:
        st.sigma, st.logdet_sigma, st.xbar = _missing_factors(st, data.Z, data.missing)[1:]
        return
    M = _k.expected_loading_quadratic(st.lam_mean, st.lam_cov, st.psi)
    sigma, logdet = _k.factor_posterior(M)
    st.sigma, st.logdet_sigma = sigma, logdet
    st.xbar = _k.factor_means(data.Z, st.lam_mean, st.psi, sigma, M)


def _missing_factors(st, Y, miss):
    """``(M, sigma, logdet_sigma, xbar)`` of q(x|s) for the rows ``Y`` (0.0 at their
    missing entries) with the patterns ``miss``."""
    M = _m.pattern_quadratic(st.lam_mean, st.lam_cov, st.psi, miss.observed)
    sigma, logdet = _m.factor_posterior(M)
    return M, sigma, logdet, _m.factor_means(Y, st.lam_mean, st.psi, sigma, M, miss)


def _new_rows_missing(st, Y):
    """``(Y with 0.0 at NaN, patterns)`` when the rows ``Y`` (or the training data of
    the state, whose q(x|s) is then per pattern) have missing entries, else ``(Y,
    None)``."""
    if np.isnan(Y).any() or (st.sigma is not None and st.sigma.ndim == 4):
        return _m.missing_patterns(Y)
    return Y, None


def update_loadings(st, data):
    """q(Λ̃): the joint solve for each row of ``[Λ^s, μ^s]`` (eqs. 4.41-4.50)."""
    stats = sufficient_statistics(st, data)
    st.lam_mean, st.lam_cov, st.lam_logdet = loadings_from_statistics(st, stats.W, stats.C)


def loadings_from_statistics(st, W, C):
    """``(mean, cov, logdet)`` of q(Λ̃) given the statistics ``W``, ``C`` (of the data,
    or of a minibatch scaled to the data) and the state's q(ν) and hyperparameters."""
    e_nu = st.a_tilde / st.b_tilde
    return _k.loading_posterior(W, C, st.psi, e_nu, st.nu_star, st.mu_star, st.active)


def log_weights(st, Y):
    """``ln`` of the unnormalised q(s | y) of the rows ``Y``; for a point state, the
    log joint density of row and component."""
    if isinstance(st, MFAPointState):
        K = st.lam_mean.shape[-1] - 1
        means, loadings = st.lam_mean[:, :, K], st.lam_mean[:, :, :K]
        if np.isnan(Y).any():  # the density of the observed entries
            Y, miss = _m.missing_patterns(Y)
            dens = _m.fa_log_density(Y, means, loadings, st.psi, miss, _k.fa_log_density)
        else:
            dens = _k.fa_log_density(Y, means, loadings, st.psi)
        with np.errstate(divide="ignore"):
            return dens + np.log(st.weights)[None]
    elog_pi = digamma(st.alpha_hat) - digamma(st.alpha_hat.sum())
    Y, miss = _new_rows_missing(st, Y)
    if miss is not None:
        M, sigma, logdet, xbar = _missing_factors(st, Y, miss)
        return _m.log_weights(Y, xbar, sigma, logdet, st.lam_mean, M, st.psi, elog_pi, miss)
    M, xbar = expected_factors(st, Y)
    return _k.log_weights(
        Y, xbar, st.sigma, st.logdet_sigma, st.lam_mean, M, st.psi, elog_pi
    )


def expected_factors(st, Y):
    """``(M, xbar)``: ``E[Λ̃ᵀ Ψ⁻¹ Λ̃]`` of every component (S, K+1, K+1) and the factor
    means ``E[x | y, s]`` of the rows ``Y`` in every component (N, S, K) for the
    stored q(x|s) covariances (with entries missing, ``M`` per component and pattern
    of ``Y``, (S, G, K+1, K+1), and the covariances of those patterns)."""
    Y, miss = _new_rows_missing(st, Y)
    if miss is not None:
        M, _, _, xbar = _missing_factors(st, Y, miss)
        return M, xbar
    M = _k.expected_loading_quadratic(st.lam_mean, st.lam_cov, st.psi)
    return M, _k.factor_means(Y, st.lam_mean, st.psi, st.sigma, M)


def component_log_densities(st, Y):
    """``ln N(y | μ^s, Λ^s Λ^sᵀ + Ψ)`` (N, S) of the rows ``Y`` at the loading means of
    the state (of the observed entries of a row with NaN)."""
    K = st.lam_mean.shape[-1] - 1
    if np.isnan(Y).any():  # the density of the observed entries
        Y, miss = _m.missing_patterns(Y)
        return _m.fa_log_density(Y, st.lam_mean[:, :, K], st.lam_mean[:, :, :K], st.psi,
                                 miss, _k.fa_log_density)
    return _k.fa_log_density(Y, st.lam_mean[:, :, K], st.lam_mean[:, :, :K], st.psi)


def plugin_log_densities(st, Y, weights):
    """``ln Σ_s w_s N(y | μ^s, Λ^s Λ^sᵀ + Ψ)`` of the rows ``Y`` at the loading means
    of the state and the mixing proportions ``weights``."""
    return logsumexp(component_log_densities(st, Y) + np.log(weights)[None, :], axis=1)


def update_responsibilities(st, data):
    """q(s) of every row for the stored q(x|s)."""
    elog_pi = digamma(st.alpha_hat) - digamma(st.alpha_hat.sum())
    if data.missing is not None:
        M = _m.pattern_quadratic(st.lam_mean, st.lam_cov, st.psi, data.missing.observed)
        ell = _m.log_weights(data.Z, st.xbar, st.sigma, st.logdet_sigma, st.lam_mean, M,
                             st.psi, elog_pi, data.missing)
    else:
        M = _k.expected_loading_quadratic(st.lam_mean, st.lam_cov, st.psi)
        ell = _k.log_weights(
            data.Z, st.xbar, st.sigma, st.logdet_sigma, st.lam_mean, M,
            st.psi, elog_pi,
        )
    ell -= ell.max(axis=1, keepdims=True)
    r = np.exp(ell)
    r /= r.sum(axis=1, keepdims=True)
    st.resp = r


def update_weights(st):
    """q(π) = Dir(α*/S + N_s)."""
    st.alpha_hat = weights_from_statistics(st, st.resp.sum(axis=0))


def weights_from_statistics(st, Nk):
    """The Dirichlet counts ``α*/S + N_s`` of q(π) given the masses ``Nk``."""
    S = Nk.shape[0]
    return st.alpha_star / S + Nk


def update_ard(st, data):
    """q(ν^s_j) = Gamma(a* + p/2, b* + ½ Σ_q E[(Λ^s_qj)²])."""
    K = st.sigma.shape[-1]
    p = data.n_features
    st.a_tilde = st.a_star + 0.5 * p
    sq = st.lam_mean[:, :, :K] ** 2 + np.diagonal(
        st.lam_cov, axis1=-2, axis2=-1
    )[:, :, :K]
    st.b_tilde = st.b_star + 0.5 * sq.sum(axis=1)


def update_noise(st, data):
    """Ψ, never below ``data.psi_floor``."""
    st.psi = noise_from_statistics(st, sufficient_statistics(st, data), data.n_samples,
                                   data.psi_floor)


def noise_from_statistics(st, stats, n_samples, psi_floor):
    """The Ψ maximising F given q(Λ̃) and the statistics ``stats`` of ``n_samples``
    rows, never below ``psi_floor``; with entries missing, each ``ψ_q`` from the rows
    observing dimension ``q``."""
    lam, cov = st.lam_mean, st.lam_cov
    second = cov + lam[:, :, :, None] * lam[:, :, None, :]
    if isinstance(stats, _m.MissingStats):
        return np.maximum(_m.noise_residual(stats, lam, second) / stats.Nd.sum(axis=0),
                          psi_floor)
    Nk, W, C, D = stats
    return noise_update(D, C, W, lam, second, n_samples, psi_floor)


# ---------------------------------------------------------------- the bound
def bound_terms(st, data):
    """The named terms of F (eq. 4.29), a :class:`~sklearn_vb.mfa._state.BoundTerms`:
    ``pi`` (a number), per component ``nu``, ``loading``, ``assign``, ``factor`` and
    ``lik``."""
    S, K = st.b_tilde.shape
    # F_pi = -KL(Dir(alpha_hat) || Dir(alpha*/S)); F_nu = -KL(q(nu) || p(nu))
    kl_pi = dirichlet_kl(st.alpha_hat, np.full(S, st.alpha_star / S))
    f_nu = (-np.sum(gamma_kl(st.a_tilde, st.b_tilde, st.a_star, st.b_star),
                    axis=1) if K else np.zeros(S))
    if data.missing is not None:
        terms = _m.bound_terms(
            st.resp, st.xbar, st.sigma, st.logdet_sigma, st.lam_mean, st.lam_cov,
            st.lam_logdet, st.alpha_hat, st.a_tilde, st.b_tilde, st.psi, st.mu_star,
            st.nu_star, sufficient_statistics(st, data))
        return BoundTerms(-float(kl_pi), f_nu, *terms)
    terms = _k.bound_terms(
        data.Z, st.resp, st.xbar, st.sigma, st.logdet_sigma,
        st.lam_mean, st.lam_cov, st.lam_logdet, st.alpha_hat,
        st.a_tilde, st.b_tilde, st.psi, st.mu_star, st.nu_star,
        stats=sufficient_statistics(st, data),
    )
    return BoundTerms(-float(kl_pi), f_nu, *terms)


def lower_bound(st, data):
    """F of the state, with the Jacobian of the standardisation."""
    t = bound_terms(st, data)
    total = t.pi + sum(float(np.sum(v)) for v in (t.nu, t.loading, t.assign, t.factor, t.lik))
    return total + data.log_jacobian


def component_scores(st, data):
    """F_s = F_ν^s + F_Λ^s + (F_assign^s + F_x^s + F_lik^s) / N_s (eq. 4.77)."""
    t = bound_terms(st, data)
    Nk = np.maximum(st.resp.sum(axis=0), 1e-300)
    return t.nu + t.loading + (t.assign + t.factor + t.lik) / Nk


# ---------------------------------------------------------------- the state as a vector
def pack_state(st):
    """q(θ) and the re-estimated hyperparameters as one vector: the row means of
    ``[Λ^s, μ^s]``, the lower Cholesky factors of their covariances with the
    diagonal in logs, ``ln b̃``, ``ln α̂``, ``ln Ψ``, ``ln b*``, ``μ*``, ``ln ν*``,
    ``ln a*`` and ``ln α*`` (every real vector is then a valid state)."""
    K1 = st.lam_cov.shape[-1]
    L = np.linalg.cholesky(st.lam_cov)
    rows, cols = np.tril_indices(K1)
    chol = L[..., rows, cols]
    diag = rows == cols
    chol[..., diag] = np.log(chol[..., diag])
    return np.concatenate([
        st.lam_mean.ravel(), chol.ravel(), np.log(st.b_tilde).ravel(),
        np.log(st.alpha_hat), np.log(st.psi),
        [np.log(st.b_star), np.log(st.a_star), np.log(st.alpha_star)],
        st.mu_star, np.log(st.nu_star),
    ])


def unpack_state(st, vector, psi_floor):
    """Store the state of a vector made by :func:`pack_state`; False (state
    unchanged) when it is not finite or would overflow."""
    S, p, K1 = st.lam_mean.shape
    n_tri = K1 * (K1 + 1) // 2
    sizes = [S * p * K1, S * p * n_tri, S * (K1 - 1), S, p, 3, p, p]
    parts = np.split(np.asarray(vector, dtype=float), np.cumsum(sizes)[:-1])
    if not all(np.all(np.isfinite(part)) for part in parts):
        return False
    mean, chol, log_b, log_alpha, log_psi, log_scalars, mu_star, log_nu_star = parts
    if np.max(np.abs(chol)) > 700 or np.max(np.abs(np.r_[log_b, log_alpha, log_psi,
                                                          log_scalars, log_nu_star])) > 700:
        return False
    rows, cols = np.tril_indices(K1)
    diag = rows == cols
    chol = chol.reshape(S, p, n_tri)
    log_diag = chol[..., diag]
    chol = chol.copy()
    chol[..., diag] = np.exp(log_diag)
    L = np.zeros((S, p, K1, K1))
    L[..., rows, cols] = chol
    mean = mean.reshape(S, p, K1)
    if st.active is not None:
        # an extrapolation from iterates before a decoupling: keep the decoupled
        # columns decoupled (the factor of a block diagonal Γ is block diagonal)
        dead1, cross = decoupling_masks(st.active)
        L = np.where(cross[:, None], 0.0, L)
        mean = np.where(dead1[:, None, :], 0.0, mean)
    # the floor on Ψ is a constraint of its update: a point below it is moved onto it
    psi = np.maximum(np.exp(log_psi), psi_floor)
    st.lam_mean = mean
    st.lam_cov = L @ np.swapaxes(L, -1, -2)
    st.lam_logdet = 2.0 * np.sum(log_diag, axis=-1)
    st.b_tilde = np.exp(log_b).reshape(S, K1 - 1)
    st.alpha_hat = np.exp(log_alpha)
    st.psi = psi
    st.b_star, st.a_star, st.alpha_star = (float(v) for v in np.exp(log_scalars))
    st.mu_star = mu_star
    st.nu_star = np.exp(log_nu_star)
    return True
