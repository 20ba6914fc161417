"""Array kernels for variational Bayesian mixtures of factor analysers.

Pure functions of arrays: numpy batched linear algebra vectorised over data points and
components (matrix products go to BLAS), and a numba loop where a batch of small
matrices is factorised (the row posteriors of the loadings, one Cholesky factorisation
per component and output dimension).  Shapes:

* ``Y``          (N, p)        data (in fitting units)
* ``lam_mean``   (S, p, K+1)   rows of E[Λ̃^s] = [Λ̄^s, μ̄^s]  (bias column last)
* ``lam_cov``    (S, p, K+1, K+1) covariance Γ^s_q of each row
* ``psi``        (p,)          diagonal sensor noise Ψ
* ``resp``       (N, S)        q(s_i = s)
* ``xbar``       (N, S, K)     E[x_i | s_i = s]
* ``sigma``      (S, K, K)     Cov[x_i | s_i = s] (shared by the points)
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numba import njit
from scipy.special import digamma

from .._core.kernels.constants import LOG_2PI
from .._core.kernels.linalg import chol_into, chol_inverse_into, spd_inverse_jittered
from ._state import DataTerms, SufficientStats

__all__ = [
    "expected_loading_quadratic",
    "factor_posterior",
    "factor_means",
    "log_weights",
    "sufficient_statistics",
    "loading_posterior",
    "bound_terms",
    "fa_log_density",
    "rotation_value_grad",
    "optimise_rotations",
]


#: work arrays (temporaries of the kernels below) up to this many bytes are kept
#: between calls (per thread); larger ones are allocated afresh, so a fit on big data
#: does not hold them afterwards
_WORK_BYTES = 64 * 2**20
_work_store = threading.local()


def _work(name, shape):
    """An uninitialised float64 array of ``shape``, reused from the last call in this
    thread that asked for ``name`` with the same shape.  Every VBEM iteration needs
    temporaries of the same shapes (several per row and component); fresh arrays of a
    megabyte or more come from new memory mappings each time, and faulting their pages
    in can cost as much as the products computed in them.  A caller uses the array
    only until it returns, and never two arrays of one name at once."""
    if 8 * math.prod(shape) > _WORK_BYTES:
        return np.empty(shape)
    store = getattr(_work_store, "arrays", None)
    if store is None:
        store = _work_store.arrays = {}
    a = store.get(name)
    if a is None or a.shape != shape:
        a = store[name] = np.empty(shape)
    return a


def expected_loading_quadratic(lam_mean, lam_cov, psi):
    """M^s = E[Λ̃^{sT} Ψ^{-1} Λ̃^s] including the row covariances, shape (S, K+1, K+1)."""
    S, p, K1 = lam_mean.shape
    ipsi = 1.0 / psi
    # batched matrix products (einsum would loop over the p rows in C)
    M = np.matmul(np.swapaxes(lam_mean * ipsi[:, None], 1, 2), lam_mean)
    M += np.matmul(ipsi, np.ascontiguousarray(lam_cov).reshape(S, p, K1 * K1)).reshape(S, K1, K1)
    return 0.5 * (M + np.swapaxes(M, -1, -2))


def _project(Y, A, work=None):
    """einsum("nq,sqk->nsk", Y, A) as one matrix product (into the work array
    ``work`` of :func:`_work` when named: a temporary)."""
    S, p, K = A.shape
    B = np.transpose(A, (1, 0, 2)).reshape(p, S * K)
    if work is None:
        return (Y @ B).reshape(Y.shape[0], S, K)
    out = np.matmul(Y, B, out=_work(work, (Y.shape[0], S * K)))
    return out.reshape(Y.shape[0], S, K)


def _per_component(X, A, work=None):
    """einsum("nsk,skl->nsl", X, A): one small matrix per component (into the work
    array ``work`` when named)."""
    Xt = np.transpose(X, (1, 0, 2))
    if work is None:
        return np.transpose(np.matmul(Xt, A), (1, 0, 2))
    out = np.matmul(Xt, A, out=_work(work, (Xt.shape[0], Xt.shape[1], A.shape[-1])))
    return np.transpose(out, (1, 0, 2))


def factor_posterior(M):
    """Shared factor covariance Σ_s = (I + M_xx)^{-1} and ln|Σ_s| (the same for every point)."""
    K = M.shape[-1] - 1
    prec = np.eye(K) + M[:, :K, :K]
    sigma, logdet_prec = spd_inverse_jittered(prec)
    return sigma, -logdet_prec


def factor_means(Y, lam_mean, psi, sigma, M):
    """x̄_is = Σ_s (Λ̄^{sT} Ψ^{-1} y_i − m^s_xμ), shape (N, S, K).

    The cross-covariance term inside m_xμ = E[Λ^T Ψ^{-1} μ] (the covariance between a
    row's loadings and its centre under q) is kept: dropping it lowers the bound.
    """
    K = sigma.shape[-1]
    Yp = np.divide(Y, psi, out=_work("y/psi", Y.shape))
    proj = _project(Yp, lam_mean[:, :, :K], "projection")
    proj -= M[None, :, :K, K]
    return _per_component(proj, sigma)  # Σ_s is symmetric


def log_weights(Y, xbar, sigma, logdet_sigma, lam_mean, M, psi, expected_log_pi):
    """Unnormalised log responsibilities ℓ_is, with q(x | s) kept as given rather than
    re-optimised (the uncollapsed form).

    Valid for any (x̄, Σ): the softmax of the result maximises the bound over q(s)
    exactly with q(x|s) held fixed.
    """
    N, p = Y.shape
    K = sigma.shape[-1]
    Lx = lam_mean[:, :, :K]
    mu = lam_mean[:, :, K]
    Yp = np.divide(Y, psi, out=_work("y/psi", Y.shape))
    kl_x = 0.5 * (
        logdet_sigma[None, :]
        + K
        - np.trace(sigma, axis1=-2, axis2=-1)[None, :]
        - np.einsum("nsk,nsk->ns", xbar, xbar)
    )
    cross = np.einsum("nsk,nsk->ns", _project(Yp, Lx, "projection"), xbar)
    cross += Yp @ mu.T
    Mxx = M[:, :K, :K]
    quad = np.einsum("nsk,nsk->ns", _per_component(xbar, Mxx, "per component"), xbar)
    quad += 2.0 * np.einsum("nsk,sk->ns", xbar, M[:, :K, K])
    quad += (np.einsum("skl,slk->s", Mxx, sigma) + M[:, K, K])[None, :]
    yy = np.einsum("nq,nq->n", Y, Yp)
    lik = (
        -0.5 * p * LOG_2PI
        - 0.5 * np.sum(np.log(psi))
        - 0.5 * (yy[:, None] - 2.0 * cross + quad)
    )
    return expected_log_pi[None, :] + kl_x + lik


def sufficient_statistics(Y, resp, xbar, sigma):
    """N_s, W_s = Σ_i r_is E[x̃x̃^T], C_s = Σ_i r_is y_i x̃̄^T, D_s = Σ_i r_is y_i∘y_i."""
    N, S = resp.shape
    K = sigma.shape[-1]
    Nk = resp.sum(axis=0)
    # component-major contiguous copies: the batched products then run as S plain
    # matrix products instead of strided loops (in reused work arrays, see _work; the
    # results below are new arrays)
    xe = _work("xe", (S, N, K + 1))
    xe[:, :, :K] = np.transpose(xbar, (1, 0, 2))
    xe[:, :, K] = 1.0
    rT = _work("rT", (S, N))
    rT[...] = resp.T
    rxe = np.multiply(xe, rT[:, :, None], out=_work("rxe", (S, N, K + 1)))
    rxeT = np.transpose(rxe, (0, 2, 1))
    W = np.matmul(rxeT, xe)
    W[:, :K, :K] += Nk[:, None, None] * sigma
    W = 0.5 * (W + np.swapaxes(W, -1, -2))
    C = np.transpose(np.matmul(rxeT, Y), (0, 2, 1))
    D = rT @ np.multiply(Y, Y, out=_work("yy", Y.shape))
    return SufficientStats(Nk, W, C, D)


def loading_posterior(W, C, psi, expected_nu, nu_star, mu_star, active=None):
    """Row-wise Gaussian posterior of Λ̃^s = [Λ^s, μ^s], loadings and centre solved jointly.

    Returns ``lam_mean`` (S, p, K+1), ``lam_cov`` (S, p, K+1, K+1) and the
    log-determinants ln|Γ^s_q| (S, p).  ``W`` is (S, K+1, K+1), or (S, p, K+1, K+1)
    when each row ``q`` has its own statistics (entries missing:
    :mod:`sklearn_vb.mfa._missing`).

    ``active`` (S, K) bool: the columns of component ``s`` not marked active are
    *decoupled*: ``W_s`` and ``C_s`` have no entries between them and any other
    column (their factors' means are zero and their covariance is diagonal there).
    The row precisions are then block diagonal, and the posterior of such a column
    is ``N(0, 1/(E ν_j + W_s[j, j]/ψ_q))``, independent of the rest: each row costs
    ``O((k_s + 1)^3)`` for ``k_s`` active columns instead of ``O((K + 1)^3)``, with
    the same result as the full solve.
    """
    S, K1 = W.shape[0], W.shape[-1]
    p = psi.shape[0]
    mean = np.zeros((S, p, K1))
    cov = np.zeros((S, p, K1, K1))
    logdet = np.empty((S, p))
    W = np.ascontiguousarray(W)
    if W.ndim == 3:  # one matrix per component: every row reads it
        W = np.broadcast_to(W[:, None], (S, p, K1, K1))
    if active is None:
        active = np.ones((S, K1 - 1), dtype=np.bool_)
    ok = _loading_posterior_rows(W, np.ascontiguousarray(C), psi, np.ascontiguousarray(expected_nu),
                                 nu_star, mu_star, np.ascontiguousarray(active, dtype=np.bool_),
                                 mean, cov, logdet)
    if not ok:  # a row precision is numerically singular: factorise with jitter
        prior = np.empty((S, p, K1))
        prior[:, :, : K1 - 1] = expected_nu[:, None, :]
        prior[:, :, K1 - 1] = nu_star[None, :]
        P = W / psi[None, :, None, None]
        idx = np.arange(K1)
        P[:, :, idx, idx] += prior
        cov, logdet_prec = spd_inverse_jittered(P)
        rhs = C / psi[None, :, None]
        rhs[:, :, K1 - 1] += (nu_star * mu_star)[None, :]
        mean = np.einsum("sqkl,sql->sqk", cov, rhs)
        logdet = -logdet_prec
    return mean, cov, logdet


@njit(cache=True, nogil=True)
def _loading_posterior_rows(W, C, psi, expected_nu, nu_star, mu_star, active, mean, cov,
                            logdet):
    """Γ^s_q = (diag(E ν^s, ν*_q) + W_sq / ψ_q)^{-1} and λ̄^s_q = Γ^s_q (C_s[q] / ψ_q +
    [0, ν*_q μ*_q]) for every component and row, by Cholesky factorisations of the
    block of the active columns and the centre (the decoupled
    columns in closed form; ``mean`` and ``cov`` arrive zeroed); False as soon as
    one precision is not numerically positive definite."""
    S, K1 = W.shape[0], W.shape[-1]
    p = psi.shape[0]
    K = K1 - 1
    idx = np.empty(K1, dtype=np.int64)
    P_full = np.empty((K1, K1))
    L_full = np.zeros((K1, K1))
    Linv_full = np.zeros((K1, K1))
    inv_full = np.zeros((K1, K1))
    rhs = np.empty(K1)
    for s in range(S):
        a = 0
        for k in range(K):
            if active[s, k]:
                idx[a] = k
                a += 1
        m = a + 1
        idx[a] = K
        P = P_full[:m, :m]
        L = L_full[:m, :m]
        Linv = Linv_full[:m, :m]
        inv = inv_full[:m, :m]
        for q in range(p):
            ip = 1.0 / psi[q]
            for k in range(m):
                for l in range(m):
                    P[k, l] = W[s, q, idx[k], idx[l]] * ip
                rhs[k] = C[s, q, idx[k]] * ip
            for k in range(a):
                P[k, k] += expected_nu[s, idx[k]]
            P[a, a] += nu_star[q]
            rhs[a] += nu_star[q] * mu_star[q]
            if not chol_into(P, L, True):
                return False
            ld = -chol_inverse_into(L, inv, Linv)
            for k in range(m):
                acc = 0.0
                for l in range(m):
                    cov[s, q, idx[k], idx[l]] = inv[k, l]
                    acc += inv[k, l] * rhs[l]
                mean[s, q, idx[k]] = acc
            for j in range(K):
                if active[s, j]:
                    continue
                prec = expected_nu[s, j] + W[s, q, j, j] * ip
                if not prec > 0.0:
                    return False
                cov[s, q, j, j] = 1.0 / prec
                ld -= np.log(prec)
            logdet[s, q] = ld
    return True


def bound_terms(
    Y, resp, xbar, sigma, logdet_sigma, lam_mean, lam_cov, lam_logdet,
    alpha_hat, a_tilde, b_tilde, psi, mu_star, nu_star, stats=None, expected_log_pi=None,
):
    """The named terms of the lower bound F that involve the loadings, the factors or
    the data, valid for any q: a :class:`~sklearn_vb.mfa._state.DataTerms` of
    per-component arrays (S,) ``loading``, ``assign``, ``factor`` and ``lik``.  ``expected_log_pi`` (S,) replaces
    ``E[ln π_s]`` from ``alpha_hat`` (for a subset of the components, whose counts do
    not sum to the Dirichlet's total).

    F is their total plus ``-KL(q(pi) || p(pi))`` and ``-KL(q(nu) || p(nu))``, which the
    estimator takes from the conjugate families.
    """
    N, p = Y.shape
    K = sigma.shape[-1]
    if stats is None:
        stats = sufficient_statistics(Y, resp, xbar, sigma)
    Nk, W, C, D = stats
    if expected_log_pi is None:
        elog_pi = digamma(alpha_hat) - digamma(alpha_hat.sum())
    else:
        elog_pi = expected_log_pi
    # F_Lambda
    e_nu = a_tilde / b_tilde
    elog_nu = digamma(a_tilde) - np.log(b_tilde)
    lam_sq = lam_mean[:, :, :K] ** 2 + np.diagonal(lam_cov, axis1=-2, axis2=-1)[:, :, :K]
    centre_sq = (lam_mean[:, :, K] - mu_star[None, :]) ** 2 + lam_cov[:, :, K, K]
    f_load = 0.5 * (
        np.sum(lam_logdet, axis=1)
        + p * (K + 1)
        + p * np.sum(elog_nu, axis=1)
        + np.sum(np.log(nu_star))
        - np.einsum("sk,sqk->s", e_nu, lam_sq)
        - centre_sq @ nu_star
    )
    # F_assign
    safe = np.where(resp > 0, resp, 1.0)
    f_assign = Nk * elog_pi - np.sum(resp * np.log(safe), axis=0)
    # F_x
    tr_sigma = np.trace(sigma, axis1=-2, axis2=-1)
    f_x = 0.5 * (
        Nk * (logdet_sigma + K - tr_sigma)
        - np.einsum("ns,ns->s", resp, np.einsum("nsk,nsk->ns", xbar, xbar))
    )
    # F_lik
    M = expected_loading_quadratic(lam_mean, lam_cov, psi)
    quad = D @ (1.0 / psi) - 2.0 * np.einsum("sqk,sqk,q->s", lam_mean, C, 1.0 / psi)
    quad += np.einsum("skl,slk->s", M, W)
    f_lik = -0.5 * Nk * (p * LOG_2PI + np.sum(np.log(psi))) - 0.5 * quad
    return DataTerms(loading=f_load, assign=f_assign, factor=f_x, lik=f_lik)


def fa_log_density(Y, means, loadings, psi):
    """ln N(y_i | μ_s, Λ_sΛ_s^T + Ψ) for every row and component, shape (N, S).

    Uses the matrix inversion and determinant lemmas: O(pK^2 + K^3) per component.
    """
    S, p, K = loadings.shape
    ipsi = 1.0 / psi
    inner = np.eye(K) + np.einsum("sqk,q,sql->skl", loadings, ipsi, loadings)
    inner_inv, logdet_inner = spd_inverse_jittered(inner)
    diff = Y[:, None, :] - means[None, :, :]  # (N, S, p)
    dpsi = diff * ipsi
    maha = np.einsum("nsq,nsq->ns", dpsi, diff)
    proj = _per_component(dpsi, loadings)
    maha -= np.einsum("nsk,nsk->ns", _per_component(proj, inner_inv), proj)
    logdet = np.sum(np.log(psi)) + logdet_inner
    return -0.5 * (p * LOG_2PI + logdet[None, :] + maha)


# ---------------------------------------------------------------- rotation moves
@njit(cache=True, nogil=True)
def rotation_value_grad(R, W_xx, B, coef, a_tilde, b_star, grad):
    """The change of F under the change of basis ``R`` (K, K) of one component's
    factors (:mod:`sklearn_vb.mfa._rotate`), with ``coef = p − N_s``::

        f(R) = coef ln|det R| − ½ tr(R^{-1} W_xx R^{-T}) − ã Σ_j ln(b* + ½ r_jᵀ B r_j)

    Returns ``f(R)`` and writes its gradient
    ``coef R^{-T} + R^{-T} R^{-1} W_xx R^{-T} − ã B R diag(1/(b* + h))`` into ``grad``;
    ``-inf`` (``grad`` untouched) when ``R`` is singular or outside the domain."""
    K = R.shape[0]
    sign, logdet = np.linalg.slogdet(R)
    if sign == 0.0 or not np.isfinite(logdet):
        return -np.inf
    Rinv = np.linalg.inv(R)
    RinvT = np.ascontiguousarray(Rinv.T)
    inner = Rinv @ W_xx @ RinvT
    BR = B @ R
    value = coef * logdet
    for j in range(K):
        h = 0.0
        for i in range(K):
            h += R[i, j] * BR[i, j]
        denom = b_star + 0.5 * h
        if not denom > 0.0:
            return -np.inf
        value -= 0.5 * inner[j, j] + a_tilde * np.log(denom)
        for i in range(K):
            BR[i, j] /= denom
    g = RinvT @ inner
    for i in range(K):
        for j in range(K):
            grad[i, j] = coef * RinvT[i, j] + g[i, j] - a_tilde * BR[i, j]
    return value


@njit(cache=True, nogil=True)
def _rotation_lbfgs(W_xx, B, coef, a_tilde, b_star, max_iter, R):
    """Maximise :func:`rotation_value_grad` by L-BFGS from ``R`` (overwritten with the
    last accepted point): memory 8, two-loop recursion, backtracking Armijo line search
    (constant 1e-4, at most 30 halvings), stop when a step gains less than 1e-12 of the
    value.  Every accepted step raises the value.  Returns the values at the start
    and at the end."""
    K = R.shape[0]
    n = K * K
    memory = 8
    x = R.ravel().copy()
    grad = np.empty((K, K))
    value = rotation_value_grad(R, W_xx, B, coef, a_tilde, b_star, grad)
    start = value
    g = grad.ravel().copy()
    s_hist = np.empty((memory, n))
    y_hist = np.empty((memory, n))
    n_hist = 0
    alpha = np.empty(memory)
    rho = np.empty(memory)
    x_new = np.empty(n)
    g_new = np.empty((K, K))
    if not np.isfinite(value):
        return start, value
    for _ in range(max_iter):
        q = g.copy()
        for m in range(n_hist - 1, -1, -1):
            rho[m] = 1.0 / np.dot(y_hist[m], s_hist[m])
            alpha[m] = rho[m] * np.dot(s_hist[m], q)
            q -= alpha[m] * y_hist[m]
        gnorm = np.sqrt(np.dot(g, g))
        if n_hist > 0:
            last = n_hist - 1
            q *= np.dot(s_hist[last], y_hist[last]) / np.dot(y_hist[last], y_hist[last])
        else:
            q /= max(gnorm, 1.0)
        for m in range(n_hist):
            q += (alpha[m] - rho[m] * np.dot(y_hist[m], q)) * s_hist[m]
        slope = np.dot(g, q)
        if not slope > 0.0:
            q = g / max(gnorm, 1.0)
            slope = gnorm
            n_hist = 0
        step = 1.0
        accepted = False
        v_new = -np.inf
        for _ in range(30):
            for i in range(n):
                x_new[i] = x[i] + step * q[i]
            v_new = rotation_value_grad(x_new.reshape(K, K), W_xx, B, coef, a_tilde, b_star,
                                        g_new)
            if np.isfinite(v_new) and v_new >= value + 1e-4 * step * slope:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        gn = g_new.ravel()
        s_vec = x_new - x
        y_vec = g - gn  # curvature of the negative
        gain = v_new - value
        x[:] = x_new
        g[:] = gn
        value = v_new
        sy = np.dot(s_vec, y_vec)
        if sy > 1e-12 * np.sqrt(np.dot(s_vec, s_vec) * np.dot(y_vec, y_vec)):
            if n_hist == memory:
                for m in range(memory - 1):
                    s_hist[m] = s_hist[m + 1]
                    y_hist[m] = y_hist[m + 1]
                n_hist -= 1
            s_hist[n_hist] = s_vec
            y_hist[n_hist] = y_vec
            n_hist += 1
        if gain <= 1e-12 * max(abs(value), 1.0):
            break
    R[:, :] = x.reshape(K, K)
    return start, value


@njit(cache=True, nogil=True)
def optimise_rotations(W_xx, B, n_s, p, a_tilde, b_star, max_iter, Rs, gains):
    """The maximising change of basis of every component from the identity, into
    ``Rs`` (S, K, K), and its gain of F into ``gains`` (S,); a component that gains
    nothing keeps the identity and gain 0."""
    S, K, _ = W_xx.shape
    for s in range(S):
        R = np.eye(K)
        start, value = _rotation_lbfgs(np.ascontiguousarray(W_xx[s]), np.ascontiguousarray(B[s]),
                                       p - n_s[s], a_tilde, b_star, max_iter, R)
        if np.isfinite(value) and value > start:
            Rs[s] = R
            gains[s] = value - start
        else:
            Rs[s] = np.eye(K)
            gains[s] = 0.0
