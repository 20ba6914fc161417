"""Point-estimate (ML and MAP) EM for mixtures of factor analysers: the E step, the M
step pieces and the prior density of the MAP objective.

:class:`~sklearn_vb.mfa.VBMixtureFactorAnalysers` with ``method="ml"`` or ``"map"`` runs
these in its EM loop, and the MFA scoring adapter (:mod:`sklearn_vb.mfa.scoring_model`,
whose point EM keeps ``Psi`` fixed) runs the E step, the weights and loadings M steps
and the prior density for its ``fit_point`` and ``log_prior``, so each piece exists once.

Parameters: mixing proportions ``weights`` (S,), ``lam`` (S, p, K+1) holding
``[Lambda_s, mu_s]`` (loading columns, then the centre) and the shared diagonal noise
``psi`` (p,).  Model (Ghahramani & Hinton 1996; Beal 2003, section 4.2):
``y | s ~ N(mu_s, Lambda_s Lambda_s^T + Psi)``.

* E step: responsibilities ``r_is`` and the exact Gaussian factor posteriors
  ``N(x; Sigma_s Lambda_s^T Psi^-1 (y - mu_s), Sigma_s)`` with
  ``Sigma_s = (I + Lambda_s^T Psi^-1 Lambda_s)^-1``; the expected statistics
  ``N_s, W_s = sum_i r_is E[x~ x~^T], C_s = sum_i r_is y_i E[x~]^T, D_s`` of the augmented
  factors ``x~ = [x, 1]``.
* M step (an expectation-conditional maximisation, each piece an exact coordinate
  maximisation of the expected complete log-likelihood plus log prior): the weights;
  each row of ``[Lambda_s, mu_s]`` jointly (least squares on ``x~`` for ML; for MAP the
  Gaussian row posterior mean with the ARD Student-t column prior minorised at the
  current loadings by a Gaussian of precision ``(a* + p/2) / (b* + |lambda_j|^2 / 2)``,
  which never lowers ``ln p(theta) + l(theta)``); then ``Psi`` given the new loadings,
  ``diag(sum_s D_s - 2 Lambda~_s C_s^T + Lambda~_s W_s Lambda~_s^T) / N`` held above a
  floor (the constrained maximiser: the objective is unimodal in each ``psi_q``).
* Prior (MAP objective): ``pi ~ Dir(alpha*/S)``, every loading column ``~ t_{2a*}(0,
  (b*/a*) I_p)`` (the ARD precisions ``Gamma(a*, b*)`` integrated out), centres
  ``N(mu*, diag(1/nu*))``; no prior on ``Psi``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from .._core.distributions import dirichlet_log_pdf
from . import _missing as _m
from . import kernels as _k
from .._core.kernels.constants import LOG_2PI
from .._core.kernels.linalg import spd_inverse_jittered
from ._hyper import selected_hyperparameters
from ._state import MFAPointState, PointEStep

__all__ = ["factor_posterior", "point_e_step", "point_weights", "point_loadings",
           "principal_axes", "noise_residual", "noise_update", "log_prior_density",
           "check_point_options", "em_start", "em_e_step", "em_m_step", "fa_free_parameters"]


def factor_posterior(lam, psi):
    """Exact ``Sigma_s = (I + Lambda_s^T Psi^-1 Lambda_s)^-1`` (S, K, K) and
    ``ln|Sigma_s|`` (S,) at the point ``lam`` (S, p, K+1)."""
    K = lam.shape[-1] - 1
    L = lam[:, :, :K]
    M = np.eye(K) + np.einsum("sqk,q,sql->skl", L, 1.0 / psi, L)
    inv, logdet = spd_inverse_jittered(M)
    return inv, -logdet


def point_e_step(Z, weights, lam, psi):
    """The exact posterior over ``(s_i, x_i)`` at one point.

    Returns a :class:`~sklearn_vb.mfa._state.PointEStep`: ``loglik`` (``ln p(Z |
    theta)``, a float), ``resp`` (N, S), ``sigma`` (S, K, K), ``logdet_sigma`` (S,),
    ``xbar`` (N, S, K) and the statistics ``Nk``, ``W``, ``C``, ``D`` (``stats``).

    One projection ``P_is = Lambda_s^T Psi^-1 (y_i - mu_s)`` (a matrix product over every
    component) gives both the factor means ``xbar_is = Sigma_s P_is`` and, by the matrix
    inversion and determinant lemmas, the component densities:
    ``(y - mu)^T (Lambda Lambda^T + Psi)^-1 (y - mu) = (y - mu)^T Psi^-1 (y - mu) -
    P^T Sigma P`` and ``ln|Lambda Lambda^T + Psi| = sum_q ln psi_q - ln|Sigma|``.
    """
    N, p = Z.shape
    S = lam.shape[0]
    K = lam.shape[-1] - 1
    sigma, logdet_sigma = factor_posterior(lam, psi)
    ipsi = 1.0 / psi
    L, mu = lam[:, :, :K], lam[:, :, K]
    Zp = Z * ipsi
    proj = (Zp @ np.transpose(L, (1, 0, 2)).reshape(p, S * K)).reshape(N, S, K)
    proj -= np.einsum("sqk,sq->sk", L, mu * ipsi)[None]
    xbar = np.transpose(np.matmul(np.transpose(proj, (1, 0, 2)), sigma), (1, 0, 2))
    maha = (np.einsum("nq,nq->n", Zp, Z)[:, None] - 2.0 * (Zp @ mu.T)
            + np.sum(mu * mu * ipsi, axis=1)[None] - np.einsum("nsk,nsk->ns", proj, xbar))
    with np.errstate(divide="ignore"):
        lw = np.log(weights)
    ell = lw[None] - 0.5 * (p * LOG_2PI + np.sum(np.log(psi)) - logdet_sigma[None] + maha)
    m = np.max(ell, axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.sum(np.exp(ell - m), axis=1))
    resp = np.exp(ell - lse[:, None])
    return PointEStep(loglik=float(np.sum(lse)), resp=resp, sigma=sigma,
                      logdet_sigma=logdet_sigma, xbar=xbar,
                      stats=_k.sufficient_statistics(Z, resp, xbar, sigma))


def point_weights(Nk, kind, alpha0=None, basis="softmax"):
    """Mixing proportions of the M step: ``N_s`` normalised (``kind="ml"``); for
    ``"map"`` the rows ``alpha0 + N_s`` (``basis="softmax"``, the mode in the softmax
    coordinates) or ``alpha0 + N_s - 1`` (``"natural"``, the mode in ``pi``)."""
    tiny = 1e-300
    if kind == "ml":
        w = Nk + tiny
    else:
        w = alpha0 + Nk if basis == "softmax" else np.maximum(alpha0 + Nk - 1.0, tiny)
    return w / w.sum()


def point_loadings(W, C, psi, kind, lam_old=None, a_star=None, b_star=None, nu_star=None,
                   mu_star=None):
    """Rows of ``[Lambda_s, mu_s]`` (S, p, K+1) of the M step (module docstring).  ``W``
    is (S, K+1, K+1), or (S, p, K+1, K+1) with entries missing (each row of
    ``[Lambda_s, mu_s]`` from the rows observing its dimension)."""
    K1 = W.shape[-1]
    K = K1 - 1
    if kind == "ml" and W.ndim == 4:
        ridge = 1e-10 * (1.0 + np.trace(W, axis1=-2, axis2=-1))[..., None, None] * np.eye(K1)
        return np.linalg.solve(W + ridge, C[..., None])[..., 0]
    if kind == "ml":
        ridge = 1e-10 * (1.0 + np.trace(W, axis1=1, axis2=2))[:, None, None] * np.eye(K + 1)
        mean = np.linalg.solve(W + ridge, np.swapaxes(C, 1, 2))  # (S, K+1, p)
        return np.swapaxes(mean, 1, 2)
    p = psi.shape[0]
    sq = np.sum(lam_old[:, :, :K] ** 2, axis=1)
    e_nu = (a_star + 0.5 * p) / (b_star + 0.5 * sq)
    mean, _, _ = _k.loading_posterior(W, C, psi, e_nu, nu_star, mu_star)
    return mean


def principal_axes(lam):
    """Loading columns of every component rotated onto the principal axes of
    ``Lambda_s^T Lambda_s`` (S, p, K+1 in and out; the centres are untouched).

    ``Lambda_s -> Lambda_s R`` with ``R`` orthogonal leaves ``Lambda_s Lambda_s^T``, hence
    the likelihood, unchanged.  The ARD Student-t prior ``-(a* + p/2) sum_j ln(b* +
    |lambda_j|^2 / 2)`` depends only on the diagonal of ``R^T Lambda_s^T Lambda_s R``,
    which the eigenvalues majorise (Schur-Horn); the sum is concave in that diagonal, so
    the eigenvectors give its maximum over every rotation.  The rotation is therefore an
    exact maximisation of the MAP objective along the rotation ridge that EM climbs only
    slowly.  ``R`` is the eigenvector matrix with its columns permuted and signed to be
    as close to the identity as the greedy matching finds, so that loadings already on
    their axes do not move (the EM map stays continuous for the SQUAREM extrapolation).
    """
    lam = np.array(lam, dtype=float, copy=True)
    S, p, K1 = lam.shape
    K = K1 - 1
    if K < 2:
        return lam
    for s in range(S):
        L = lam[s, :, :K]
        _, vecs = np.linalg.eigh(L.T @ L)
        R = np.empty_like(vecs)
        free_rows = np.ones(K, dtype=bool)
        # columns with the clearest direction first: each takes the old axis it is
        # closest to, with the sign that keeps that axis's orientation
        order = np.argsort(-np.max(np.abs(vecs), axis=0))
        for j in order:
            mag = np.where(free_rows, np.abs(vecs[:, j]), -1.0)
            i = int(np.argmax(mag))
            free_rows[i] = False
            R[:, i] = vecs[:, j] if vecs[i, j] >= 0 else -vecs[:, j]
        lam[s, :, :K] = L @ R
    return lam


def noise_residual(D, C, W, lam, second):
    """``Σ_s Σ_i r_is E[(y_iq - λ̃^s_q x̃_i)²]`` per feature, shape (p,), summed over
    the components of the statistics given."""
    return (
        D.sum(axis=0)
        - 2.0 * np.einsum("sqk,sqk->q", lam, C)
        + np.einsum("sqkl,slk->q", second, W)
    )


def noise_update(D, C, W, lam, second, n_samples, floor):
    """``Psi`` maximising the expected complete log-likelihood given the loadings:
    ``second`` (S, p, K+1, K+1) is ``E[lambda~ lambda~^T]`` of each row (``lam lam^T``
    at a point, plus the row covariance under VB)."""
    return np.maximum(noise_residual(D, C, W, lam, second) / n_samples, floor)


def log_prior_density(w, lam, a_star, b_star, mu_star, nu_star, alpha0):
    """(C,) ``ln p(pi, Lambda~)`` of a batch: ``w`` (C, S), ``lam`` (C, S, p, K+1); the
    Dirichlet term only when S > 1."""
    C, S, p, K1 = lam.shape
    K = K1 - 1
    a, b = a_star, b_star
    out = np.zeros(C)
    if K:
        sq = np.sum(lam[..., :K] ** 2, axis=2)  # (C, S, K)
        c = gammaln(a + 0.5 * p) - gammaln(a) + a * np.log(b) - 0.5 * p * LOG_2PI
        out = out + np.sum(c - (a + 0.5 * p) * np.log(b + 0.5 * sq), axis=(1, 2))
    d = lam[..., K] - mu_star  # (C, S, p)
    out = out + S * 0.5 * np.sum(np.log(nu_star) - LOG_2PI) \
        - 0.5 * np.einsum("csq,q->c", d * d, nu_star)
    if S > 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = out + dirichlet_log_pdf(w, alpha0)
    return np.asarray(out, dtype=float)


def fa_free_parameters(n_factors, n_features):
    """Free parameters of a mixture of factor analysers sharing ``Ψ`` (thesis eq. 4.89):
    ``S - 1 + p + Σ_s [p + p k_s - k_s (k_s - 1) / 2]`` (mixing proportions, shared noise,
    and per component a centre and loadings up to rotation); the ``d`` of BIC for the
    maximum-likelihood baseline of Beal (2003), §4.6.2.

    Examples
    --------
    Two analysers with 2 and 3 factors in 10 dimensions, and one 0-factor component (a
    diagonal Gaussian) in 5:

    >>> from sklearn_vb.mfa import fa_free_parameters
    >>> fa_free_parameters([2, 3], 10), fa_free_parameters([0], 5)
    (77, 10)
    """
    k = np.asarray(n_factors, dtype=float)
    p = float(n_features)
    return int(round(len(k) - 1 + p + np.sum(p + p * k - k * (k - 1) / 2.0)))


# ---------------------------------------------------------------- the estimator's EM
# The estimator keeps a point fit in a :class:`~sklearn_vb.mfa._state.MFAPointState`:
# ``weights``, ``lam_mean`` (``[Lambda_s, mu_s]``), ``psi``, the prior's ``mu_star``,
# ``nu_star``, ``a_star``, ``b_star``, ``alpha_star``, and after an E step the
# responsibilities, the factor posteriors, the statistics of the M step, the
# log-likelihood and the EM objective.

def check_point_options(method, search, optimize_hyperparameters):
    """ValueError unless the estimator's options fit ``method``: a point fit
    (``"ml"``, ``"map"``) estimates at most Ψ, and only ``"ml"`` has a birth search (its
    births are accepted on BIC; the MAP objective has no criterion to compare numbers of
    components by).  Unknown hyperparameter names are refused for every method."""
    hyper = selected_hyperparameters(optimize_hyperparameters)
    if method == "vb":
        return
    if search and method != "ml":
        raise ValueError(f"method={method!r} fits a fixed number of components: "
                         "set search=False, or method='ml' for the birth search of the "
                         "maximum-likelihood model (births accepted on BIC).")
    if optimize_hyperparameters is not True and hyper - {"noise"}:
        raise ValueError(
            f"method={method!r} estimates only the noise Psi: "
            f"optimize_hyperparameters may select 'noise' only, got "
            f"{sorted(hyper - {'noise'})}.")


def em_start(st, a, b, alpha):
    """The point of a VBEM initial state ``st`` (its proportions, loading means and
    ``Ψ``) with the prior ``a``, ``b``, ``alpha``; a new state."""
    S, p, K1 = st.lam_mean.shape
    return MFAPointState(
        weights=st.alpha_hat / st.alpha_hat.sum(),
        lam_mean=st.lam_mean.copy(),
        lam_cov=np.zeros((S, p, K1, K1)),
        psi=st.psi.copy(),
        mu_star=st.mu_star, nu_star=st.nu_star,
        a_star=float(a), b_star=float(b),
        alpha_star=float(alpha), ids=st.ids, next_id=st.next_id,
    )


def _em_log_prior(st, kind):
    """The prior term of the EM objective (0 for ML)."""
    if kind == "ml":
        return 0.0
    S = st.weights.shape[0]
    lp = float(log_prior_density(st.weights[None], st.lam_mean[None],
                                 st.a_star, st.b_star, st.mu_star, st.nu_star,
                                 np.full(S, st.alpha_star / S))[0])
    if S > 1:  # the softmax-basis mode: its Jacobian is part of the objective
        lp += float(np.sum(np.log(st.weights)))
    return lp


def em_e_step(st, data, kind):
    """The E step at the stored point, and the log-likelihood (with the Jacobian of
    the standardisation) and EM objective there; with entries missing, from the
    observed ones (q(x | s) per component and pattern)."""
    if data.missing is not None:
        e = _m.point_e_step(data.Z, st.weights, st.lam_mean, st.psi, data.missing)
    else:
        e = point_e_step(data.Z, st.weights, st.lam_mean, st.psi)
    st.resp, st.sigma, st.logdet_sigma, st.xbar = e.resp, e.sigma, e.logdet_sigma, e.xbar
    st.stats = e.stats
    st.loglik = e.loglik + data.log_jacobian
    st.objective = st.loglik + _em_log_prior(st, kind)


def em_m_step(st, data, kind, noise):
    """The M step from the statistics of the last E step (``noise``: re-estimate Ψ;
    with entries missing each ``ψ_q`` from the rows observing dimension ``q``)."""
    stats = st.stats
    Nk, W, C, D = stats.Nk, stats.W, stats.C, stats.D
    S = Nk.shape[0]
    st.weights = point_weights(Nk, kind, np.full(S, st.alpha_star / S))
    lam = point_loadings(W, C, st.psi, kind, st.lam_mean, st.a_star,
                         st.b_star, st.nu_star, st.mu_star)
    st.lam_mean = lam
    if noise:
        second = lam[:, :, :, None] * lam[:, :, None, :]
        if isinstance(stats, _m.MissingStats):
            st.psi = np.maximum(_m.noise_residual(stats, lam, second) / stats.Nd.sum(axis=0),
                                data.psi_floor)
        else:
            st.psi = noise_update(D, C, W, lam, second, data.n_samples, data.psi_floor)
