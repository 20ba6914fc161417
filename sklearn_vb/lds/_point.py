"""Point-estimate (ML and MAP) EM for the linear dynamical system: the M step and the
prior density of the MAP objective.

:class:`~sklearn_vb.lds.VBLinearDynamicalSystem` with ``method="ml"`` or ``"map"``
runs these in its EM loop (E step: the exact Kalman/RTS smoother at the point, the VBE
kernel with no parameter uncertainty), and the LDS scoring adapter
(:mod:`sklearn_vb.lds.scoring_model`) runs them for its ``fit_point`` and its prior,
so each piece exists once.

Model (Beal 2003, chapter 5): ``x_t = A x_{t-1} + B u_t + w_t`` with ``w ~ N(0, I)``,
``y_t = C x_t + D u_t + v_t`` with ``v ~ N(0, diag(1/rho))``; priors: every row of
``[A B]`` is ``N(0, diag(1/prior_ab))``, every row ``s`` of ``[C D]`` is
``N(0, diag(1/(rho_s prior_cd)))`` and ``rho_s ~ Gamma(a0, b0)``.

Statistics of a q(x) (or of the exact smoother): ``W_z`` and ``R_AB`` of the dynamics
regression (``[[W_A, G_A], [G_A', U_s'U_s]]`` and ``[S_A; M]``), ``W_w`` and ``R_CD`` of
the output regression (both built by :func:`sklearn_vb.lds.inference.dynamics_moments`
and :func:`~sklearn_vb.lds.inference.output_moments`), ``YY`` the per-output sums of
squares and ``T`` the number of time steps.
"""

from __future__ import annotations

import numpy as np

from .._core.distributions import gamma_log_pdf
from .._core.kernels.constants import LOG_2PI
from ._output_rows import rows_posterior, rows_quadratic
from .inference import dynamics_moments, output_moments, output_rows

__all__ = ["fit_m_step", "point_m_step", "point_output_rows", "point_objective", "log_prior_density", "spd_solve_inv"]


def spd_solve_inv(M):
    """Inverse and log-determinant of a symmetric positive definite matrix (Cholesky)."""
    try:
        L = np.linalg.cholesky(0.5 * (M + M.T))
    except np.linalg.LinAlgError as exc:
        raise ValueError("matrix must be positive definite.") from exc
    Linv = np.linalg.inv(L)
    return Linv.T @ Linv, 2.0 * float(np.sum(np.log(np.diag(L))))


def point_m_step(W_z, R_AB, W_w, R_CD, YY, T, prior_ab, prior_cd, a0, b0, kind="map",
                 basis="softmax", rows=None):
    """The M step: ``(M_AB, M_CD, rho)`` of shapes (k, k + ds), (p, k + do), (p,).

    MAP (default): the rows of ``[A B]`` and ``[C D]`` at their conjugate posterior
    means, rho at the mode of its Gamma factor in the basis ``ln rho``
    (``basis="softmax"``, the unconstrained basis) or ``rho`` (``"natural"``).
    ``kind="ml"``: least squares and ``rho_s = T / residual sum of squares``.

    With missing outputs, ``rows`` (:class:`~sklearn_vb.lds.inference.OutputRows`)
    holds the statistics of each output over the steps where it is observed; the rows
    of ``[C D]`` and rho then come from it (:func:`point_output_rows`) and ``W_w``,
    ``R_CD``, ``YY``, ``T`` are not used.
    """
    if kind not in ("map", "ml"):
        raise ValueError(f"kind must be 'map' or 'ml', got {kind!r}.")
    if basis not in ("softmax", "natural"):
        raise ValueError(f"basis must be 'softmax' or 'natural', got {basis!r}.")
    if kind == "ml":
        M_AB = np.linalg.lstsq(W_z, R_AB, rcond=None)[0].T
    else:
        Sigma_AB, _ = spd_solve_inv(W_z + np.diag(prior_ab))
        M_AB = (Sigma_AB @ R_AB).T
    if rows is not None:
        return (M_AB, *point_output_rows(rows, prior_cd, a0, b0, kind, basis))
    if kind == "ml":
        M_CD = np.linalg.lstsq(W_w, R_CD, rcond=None)[0].T
        rss = (YY - 2.0 * np.sum(M_CD * R_CD.T, axis=1)
               + np.einsum("si,ij,sj->s", M_CD, W_w, M_CD))
        rho = T / np.maximum(rss, 1e-300)
    else:
        Lam_CD = W_w + np.diag(prior_cd)
        Sigma_CD, _ = spd_solve_inv(Lam_CD)
        M_CD = (Sigma_CD @ R_CD).T
        g = (YY - 2.0 * np.sum(M_CD * R_CD.T, axis=1)
             + np.einsum("si,ij,sj->s", M_CD, Lam_CD, M_CD))
        J = 0.0 if basis == "natural" else 1.0
        shape = a0 - 1.0 + J + 0.5 * (T + prior_cd.size)
        rho = max(shape, 1e-12) / (b0 + 0.5 * np.maximum(g, 1e-300))
    return M_AB, M_CD, rho


def point_output_rows(rows, prior_cd, a0, b0, kind="map", basis="softmax"):
    """The output part ``(M_CD, rho)`` of :func:`point_m_step` from per-output
    statistics (missing outputs): each row of ``[C D]`` and its rho from the steps where
    its output is observed, ``T_s`` of them."""
    if kind == "ml":
        M_CD = np.stack([np.linalg.lstsq(W, R, rcond=None)[0]
                         for W, R in zip(rows.W, rows.R)])
        rho = rows.T / np.maximum(rows_quadratic(rows, M_CD), 1e-300)
        return M_CD, rho
    post = rows_posterior(rows, prior_cd)
    J = 0.0 if basis == "natural" else 1.0
    shape = a0 - 1.0 + J + 0.5 * (rows.T + prior_cd.size)
    return post.M, np.maximum(shape, 1e-12) / (b0 + 0.5 * post.g)


def fit_m_step(data, stats, omega, hyper, kind):
    """The M step of the estimator's point fit: :func:`point_m_step` for its fit data
    ``data`` (with ``X0``, ``obs_mask`` and the data moments), the statistics
    ``stats`` of the exact smoother, its state means ``omega`` and the hyperparameters
    ``hyper = (alpha, beta, gamma, delta, a, b)``; with missing outputs each row of
    ``[C D]`` regresses on the steps where its output is observed."""
    W_z, R_AB = dynamics_moments(stats, data.UUs)
    W_w, R_CD = output_moments(stats, data.UUo, data.UY)
    alpha, beta, gamma, delta, a, b = hyper
    rows = (None if data.obs_mask is None
            else output_rows(stats, omega, data.X0, data.Uo, data.obs_mask))
    return point_m_step(W_z, R_AB, W_w, R_CD, data.YY, stats.T, np.concatenate([alpha, beta]),
                        np.concatenate([gamma, delta]), a, b, kind, rows=rows)


def log_prior_density(AB, CD, rho, prior_ab, prior_cd, a0, b0):
    """ln p(theta) of a batch: ``AB`` (C, k, k + ds), ``CD`` (C, p, k + do), ``rho``
    (C, p); shape (C,)."""
    k = AB.shape[1]
    dab, dcd = AB.shape[2], CD.shape[2]
    lab = k * (-0.5 * dab * LOG_2PI + 0.5 * np.sum(np.log(prior_ab)))
    out = lab - 0.5 * np.einsum("cjl,l->c", AB * AB, prior_ab)
    with np.errstate(divide="ignore", invalid="ignore"):
        lrho = np.log(rho)
        lcd = (-0.5 * dcd * LOG_2PI + 0.5 * np.sum(np.log(prior_cd)) + 0.5 * dcd * lrho
               - 0.5 * rho * np.einsum("csl,l->cs", CD * CD, prior_cd))
        lg = gamma_log_pdf(rho, a0, b0)
        ok = (rho > 0) & np.isfinite(rho) & np.isfinite(lcd)
        tot = np.where(ok, lcd + lg, -np.inf).sum(axis=1)
    return np.asarray(out + tot, dtype=float)


def point_objective(kind, loglik, q, alpha, beta, gamma, delta, a0, b0):
    """The EM objective of the point ``q`` (``M_AB``, ``M_CD``, ``rho``, ``log_rho``)
    with log-likelihood ``loglik``: ``loglik`` itself for ``kind="ml"``; for ``"map"``
    plus the log prior density under the ARD precisions ``alpha`` .. ``delta`` and the
    Gamma(a0, b0) noise prior, and the Jacobian ``sum ln rho`` (the M step maximises
    in ln rho)."""
    if kind == "ml":
        return loglik
    prior_ab, prior_cd = np.concatenate([alpha, beta]), np.concatenate([gamma, delta])
    log_prior = log_prior_density(q.M_AB[None], q.M_CD[None], q.rho[None],
                                  prior_ab, prior_cd, a0, b0)[0]
    return loglik + float(log_prior) + float(np.sum(q.log_rho))
