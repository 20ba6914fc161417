"""The output regressions of the LDS when outputs are missing (missing at random).

With missing outputs every row ``s`` of ``[C D]`` regresses ``y_ts`` on
``w_t = [x_t; uo_t]`` over the steps where output ``s`` is observed, so each row has
its own design: the :class:`~sklearn_vb.lds.inference.OutputRows` ``W`` (p, m, m),
``R`` (p, m), ``YY`` (p,) and ``T`` (p,) (``m = k + do``).  These functions are the
conjugate Normal-Gamma computations of those rows, shared by the point fit (the
estimator's M step and the scoring model's) and the scoring model's complete-data
evidence, VBM step and likelihood gradient.  Without missing outputs every row shares
``W`` and ``T`` and the shared-design forms of :mod:`sklearn_vb.lds._point` and
:mod:`sklearn_vb.lds.scoring_model` apply.

Prior of a row: ``rho_s ~ Ga(a, b)``, ``[c_s; d_s] | rho_s ~ N(0, (rho_s diag(lam))^-1)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import gammaln

from .._core.kernels.constants import LOG_2PI

__all__ = ["RowsPosterior", "rows_posterior", "rows_quadratic", "rows_log_evidence",
           "rows_expected_log_likelihood", "rows_gradient"]


class RowsPosterior(NamedTuple):
    """The conjugate posterior of the rows of ``[C D]`` given their statistics: row s
    is ``N(M[s], Sigma[s] / rho_s)`` given ``rho_s ~ Ga(a + T_s / 2, b + g_s / 2)``."""

    #: (p, m) the posterior means of the rows
    M: np.ndarray
    #: (p, m, m) ``(W_s + diag(lam))^-1``
    Sigma: np.ndarray
    #: (p,) ``ln|W_s + diag(lam)|``
    logdet_precision: np.ndarray
    #: (p,) ``g_s = YY_s - R_s' (W_s + diag(lam))^-1 R_s`` (floored at 1e-300)
    g: np.ndarray


def rows_posterior(rows, lam) -> RowsPosterior:
    """The :class:`RowsPosterior` of the :class:`~sklearn_vb.lds.inference.OutputRows`
    ``rows`` under the prior precisions ``lam`` (m,) of the columns."""
    Lam = rows.W + np.diag(lam)
    Lam = 0.5 * (Lam + np.swapaxes(Lam, 1, 2))
    L = np.linalg.cholesky(Lam)
    eye = np.broadcast_to(np.eye(Lam.shape[1]), Lam.shape)
    Linv = np.linalg.solve(L, eye)
    Sigma = np.swapaxes(Linv, 1, 2) @ Linv
    logdet = 2.0 * np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
    M = np.einsum("sij,sj->si", Sigma, rows.R)
    g = (rows.YY - 2.0 * np.sum(M * rows.R, axis=1) + np.einsum("si,sij,sj->s", M, Lam, M))
    return RowsPosterior(M=M, Sigma=Sigma, logdet_precision=logdet, g=np.maximum(g, 1e-300))


def rows_quadratic(rows, M):
    """(p,) ``sum_{t: s observed} <(y_ts - M_s' w_t)^2>`` for row means ``M`` (p, m)."""
    return (rows.YY - 2.0 * np.sum(M * rows.R, axis=1)
            + np.einsum("si,sij,sj->s", M, rows.W, M))


def rows_expected_log_likelihood(rows, M, rho):
    """``sum_s sum_{t: s observed} <ln N(y_ts | M_s' w_t, 1 / rho_s)>`` at the rows
    ``M`` (p, m) and precisions ``rho`` (p,)."""
    return float(np.sum(-0.5 * rows.T * LOG_2PI + 0.5 * rows.T * np.log(rho)
                        - 0.5 * rho * rows_quadratic(rows, M)))


def rows_log_evidence(rows, lam, a, b):
    """``sum_s ln int p(c_s, d_s, rho_s) exp<ln p(y_s,obs | w, c_s, d_s, rho_s)>``: the
    Normal-Gamma evidence of every row over its observed steps."""
    post = rows_posterior(rows, lam)
    c = a + 0.5 * rows.T
    return float(np.sum(-0.5 * rows.T * LOG_2PI
                        + 0.5 * (np.sum(np.log(lam)) - post.logdet_precision)
                        + a * np.log(b) - gammaln(a) + gammaln(c)
                        - c * np.log(b + 0.5 * post.g)))


def rows_gradient(rows, M, rho, lam, a, b):
    """Gradient of ``ln p(C, D, rho) + sum_s <ln p(y_s,obs | w, theta)>`` (the
    complete-data statistics held fixed) in the rows ``M`` (p, m) and in ``rho`` (p,)."""
    g_M = rho[:, None] * (rows.R - np.einsum("sij,sj->si", rows.W, M) - M * lam)
    prior_quad = np.sum(M * M * lam, axis=1)
    g_rho = (0.5 * rows.T / rho - 0.5 * rows_quadratic(rows, M) + 0.5 * lam.size / rho
             - 0.5 * prior_quad + (a - 1.0) / rho - b)
    return g_M, g_rho
