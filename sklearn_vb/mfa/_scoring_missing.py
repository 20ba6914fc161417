"""The MFA scoring model's computations on rows with entries missing at random.

Given the component and the factors the dimensions of a row are independent, so every
quantity of :class:`~sklearn_vb.mfa.scoring_model.MFAScoringModel` is that of the
observed entries: the likelihood of a row is the factor-analyser marginal of its
observed columns (one batched evaluation per missing pattern), the E step is
:func:`sklearn_vb.mfa._missing.point_e_step` (q(x | s) per component and pattern), the
statistics of a loading row ``q`` count the rows observing dimension ``q``
(``W`` per component and dimension), and the Jacobian of the standardisation counts
the observed entries of each row.  The scoring model calls these only when its data
has missing entries, so its complete-data arithmetic is unchanged.
"""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

from .._core.kernels.constants import LOG_2PI
from ._missing import missing_patterns
from ._state import MFACompleteStats, MFAData

__all__ = ["complete_data_statistics", "complete_joint_per_case", "entropy", "gradient_gram",
           "gradient_posterior", "log_likelihood_per_case", "missing_data", "weights_gram",
           "x_and_noise_terms"]


def missing_data(Z, log_scale):
    """The :class:`~sklearn_vb.mfa._state.MFAData` of the rows ``Z`` (fitting units, NaN
    missing): 0.0 at the missing entries, their patterns and every row's Jacobian
    ``-sum_{q observed} ln feature_scale_q`` (``log_scale`` (p,))."""
    Z0, miss = missing_patterns(Z)
    return MFAData(np.ascontiguousarray(Z0), -float(np.sum(log_scale)), missing=miss,
                   row_log_jac=-(miss.mask @ log_scale))


def log_likelihood_per_case(weights, lam, psi, X, dense):
    """(C, n) ``ln p(z_i,o | theta_c)`` (user units) for a batch: ``dense`` (the
    complete-data :func:`~sklearn_vb.mfa.scoring_model.batch_log_likelihood_per_case`)
    on the observed columns of every pattern; a row observing nothing has density 1."""
    miss = X.missing
    out = np.zeros((lam.shape[0], X.Z.shape[0]))
    for g, obs in enumerate(miss.observed.astype(bool)):
        if not obs.any():
            continue
        rows = np.flatnonzero(miss.pattern == g)
        out[:, rows] = dense(weights, lam[:, :, obs], psi[obs], X.Z[np.ix_(rows, obs)])
    return out + X.row_log_jac[None]


def complete_data_statistics(e, X):
    """The :class:`~sklearn_vb.mfa._state.MFACompleteStats` of a missing-data point E
    step ``e`` on ``X``."""
    st = e.stats
    tr_sigma = np.trace(e.sigma, axis1=-2, axis2=-1)  # (S, G)
    factor_sq = (np.einsum("ns,nsk,nsk->s", e.resp, e.xbar, e.xbar)
                 + np.sum(st.Rg * tr_sigma, axis=1))
    return MFACompleteStats(Nk=st.Nk, W=st.W, C=st.C, D=st.D, n=int(X.Z.shape[0]),
                            log_jac=float(X.log_jac), resp=e.resp, Nd=st.Nd,
                            factor_sq=factor_sq, jacobian=float(np.sum(X.row_log_jac)))


def entropy(e):
    """Entropy of the exact posterior of a missing-data point E step ``e``:
    ``sum_i H[r_i] + sum_{s,g} R_sg (K/2 ln(2 pi e) + 1/2 ln|Sigma_sg|)``."""
    K = e.sigma.shape[-1]
    return float(-np.sum(xlogy(e.resp, e.resp))
                 + np.sum(e.stats.Rg * 0.5 * (K * (1.0 + LOG_2PI) + e.logdet_sigma)))


def x_and_noise_terms(stats, psi, K):
    """The theta-free parts of ``E ln p(s, x, y_obs | theta)``: the factor prior over
    every row, the noise normalisers and ``y^T Psi^-1 y`` over the observed entries,
    and the Jacobian."""
    e_x = -0.5 * (float(np.sum(stats.Nk)) * K * LOG_2PI + float(np.sum(stats.factor_sq)))
    e_y = (-0.5 * float(np.sum(stats.Nd @ (LOG_2PI + np.log(psi))))
           - 0.5 * float(np.sum(stats.D @ (1.0 / psi))))
    return e_x + e_y + stats.jacobian


def complete_joint_per_case(weights, lam, psi, labels, factors, X):
    """(C, n) ``ln p(s_i, x_i, y_i,o | theta)`` (user units) at the completion
    ``(labels, factors)``: the observed entries of every row only."""
    K = factors.shape[1]
    mask = X.missing.mask
    with np.errstate(divide="ignore"):
        out = np.log(weights[:, labels])
    out = out - 0.5 * (K * LOG_2PI + np.sum(factors**2, axis=1))[None]
    const = -0.5 * (mask @ (LOG_2PI + np.log(psi)))  # (n,)
    for s in range(lam.shape[1]):  # components, not cases
        rows = np.flatnonzero(labels == s)
        mean = (np.einsum("cqk,nk->cnq", lam[:, s, :, :K], factors[rows])
                + lam[:, s, None, :, K])
        resid = (X.Z[rows][None] - mean) * mask[rows][None]
        out[:, rows] += const[rows] - 0.5 * np.einsum("cnq,q->cn", resid**2, 1.0 / psi)
    return out + X.row_log_jac[None]


def gradient_posterior(e, completion, n, S, K):
    """``(resp, xbar, sigma)`` behind the per-case gradients: those of the exact E step
    ``e``, or at ``completion = (labels, factors)`` the indicator of every row's label,
    the completed factors in every component and no factor covariance (None)."""
    if completion is None:
        return e.resp, e.xbar, e.sigma
    labels, factors = completion
    resp = np.zeros((n, S))
    resp[np.arange(n), labels] = 1.0
    xbar = np.broadcast_to(np.asarray(factors, dtype=float)[:, None, :], (n, S, K))
    return resp, xbar, None


def weights_gram(resp, weights):
    """(n, n) inner products of the per-case gradients in the log-ratio coordinates of
    the mixing proportions, ``r_ik - pi_k`` (k < S)."""
    n, S = resp.shape
    G = np.zeros((n, n))
    if S > 1:
        A = resp[:, :S - 1] - weights[None, :S - 1]
        G += A @ A.T
    return G


def gradient_gram(weights, lam, psi, X, e=None, completion=None):
    """``J J^T`` (n, n) of the per-case gradients of ``ln p(y_i,o | theta)`` (from the
    missing-data E step ``e``) or of ``ln p(s_i, x_i, y_i,o | theta)`` at
    ``completion = (labels, factors)``, in the unconstrained basis.  Row ``i``'s gradient
    in ``[Lambda_s, mu_s]`` is ``r_is (e_is xbar~_is^T - B_s,g_i)`` with the residual
    ``e_is`` of its observed entries (0 at the missing ones) and ``B_s,g = [M_g Psi^-1
    Lambda_s Sigma_s,g, 0]`` (``M_g`` the observed dimensions of pattern ``g``); in the
    log-ratio coordinates of the weights ``r_ik - pi_k``.  Built as ``J`` itself, one
    (n, p (K+1)) block per component (the caller asks only when ``n`` does not exceed
    the dimension)."""
    Z, miss = X.Z, X.missing
    n = Z.shape[0]
    S, p, K1 = lam.shape
    K = K1 - 1
    resp, xbar, sigma = gradient_posterior(e, completion, n, S, K)
    G = weights_gram(resp, weights)
    for s in range(S):
        xt = np.ones((n, K1))
        xt[:, :K] = xbar[:, s]
        res = (Z - xt @ lam[s].T) * miss.mask / psi  # (n, p)
        J = res[:, :, None] * xt[:, None, :]  # (n, p, K1)
        if sigma is not None and K:
            # B_s,g for the pattern of every row
            B = (miss.observed[:, :, None] * (lam[s, :, :K] / psi[:, None])[None]) @ sigma[s]
            J[:, :, :K] -= B[miss.pattern]
        J = (resp[:, s][:, None] * J.reshape(n, p * K1))
        G += J @ J.T
    return G
