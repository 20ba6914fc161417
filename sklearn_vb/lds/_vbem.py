"""The VBEM updates of a linear dynamical system and its bound F.

The estimator keeps q(x) in ``_q_x`` (a :class:`~sklearn_vb.lds._state.HiddenPosterior`),
its expected statistics in ``_stats`` (:func:`sklearn_vb.lds.inference.hidden_statistics`)
and q(theta) in ``_q_theta`` (a :class:`~sklearn_vb.lds._state.ParameterPosterior`,
:func:`vbm`); ``data`` is its ``_FitData``.  Each function here computes from these
and the hyperparameters it is given, and changes nothing in place (Beal 2003,
Chapter 5).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import digamma, polygamma

from .._core.distributions import gamma_expected_log, gamma_kl
from .._core.kernels.constants import LOG_2PI
from .._core.kernels.linalg import spd_inverse
from ._hyper import (
    dynamics_evidence,
    output_evidence,
    update_dynamics_precisions,
    update_output_hyperparameters,
)
from ._state import HiddenPosterior, KLTerms, ParameterPosterior
from .inference import dynamics_moments, hidden_statistics, output_moments, output_rows

__all__ = [
    "covariance_root", "exact_hyper_update", "fixed_point_hyper_update",
    "gamma_hyper_update", "hidden_stats",
    "init_state_prior", "initial_hidden_posterior", "innovation_scale", "kl_terms",
    "lower_bound", "noise_prior_learned", "output_scale", "ridge_regression",
    "spd_inv_logdet", "vbm",
]

HYPER_CAP = 1e12
SHAPE_CAP = 1e8
SIGMA0_FLOOR = 1e-6
# the exact update drives the Gamma shape to its cap when the noise levels are tied;
# beyond ~1e6 the bound's ln G(a) terms lose ~1e-7 nats to round-off, while the
# bound lost against an infinite shape is only about p T / (4 a) nats
EXACT_SHAPE_CAP = 1e6
# the exact ARD update sets a switched-off column's precision to this cap at once (its
# optimum is infinite); 1e8 leaves the row covariances well conditioned and loses
# only about (data information) / 1e8 nats per column against infinity
EXACT_PRECISION_CAP = 1e8


def spd_inv_logdet(M):
    """Inverse and log-determinant of a symmetric positive definite matrix."""
    if M.shape[0] == 0:
        return np.zeros((0, 0)), 0.0
    # the numba routine avoids LAPACK thread start-up costs on these tiny matrices
    return spd_inverse(np.ascontiguousarray(M, dtype=np.float64))


def covariance_root(S):
    """``(L', L^-1)`` with ``L L' = S`` for a covariance S (symmetric, positive
    semi-definite): ``L = V diag(sqrt(w))`` from its eigendecomposition, with the
    inverse taken on the positive eigenvalues only (a cross-covariance with a
    null direction of S vanishes in that direction)."""
    w, V = np.linalg.eigh(0.5 * (S + S.T))
    root = np.sqrt(np.maximum(w, 0.0))
    inv = np.divide(1.0, root, out=np.zeros_like(root), where=root > 0.0)
    return root[:, None] * V.T, inv[:, None] * V.T


#: Above this condition number of ``Z'Z + diag(prior)`` a regression row is solved by QR
#: instead of the normal equations, which then lose more than 8 of 16 digits.
NORMAL_EQUATIONS_MAX_CONDITION = 1e8


def ridge_regression(designs, targets, prior):
    """Posterior of Gaussian regression rows: ``Sigma = (Z'Z + diag(prior))^-1``,
    ``M = (Sigma Z'Y)'`` and ``ln|Sigma^-1|``, for Z and Y the row blocks of
    ``designs`` and ``targets`` stacked.

    Well-conditioned problems (the usual case) use the normal equations, whose cost
    does not grow with the number of targets beyond one product ``Z'Y``.  Otherwise the
    rows are solved from a QR factorisation ``QR`` of the augmented design ``[Z;
    diag(sqrt(prior))]`` as ``R^-1 Q' [Y; 0]``: with explosive or strongly persistent dynamics the hidden
    states are nearly collinear and ``Z'Z`` can have a condition number near ``1e13``,
    for which the normal equations lose almost all digits of the coefficients along
    its small directions (and VBM steps then lower the bound by many nats); the QR
    form loses only about the square root of it (Golub and Van Loan 2013, Section 5.3).
    """
    d = prior.shape[0]
    Z = np.vstack(designs)
    Y = np.vstack(targets)
    precision = Z.T @ Z + np.diag(prior)
    eig = np.linalg.eigvalsh(precision) if np.all(np.isfinite(precision)) else [0.0]
    if eig[0] > 0.0 and eig[-1] < NORMAL_EQUATIONS_MAX_CONDITION * eig[0]:
        Sigma, logdet = spd_inv_logdet(precision)
        return (Sigma @ (Z.T @ Y)).T, Sigma, float(logdet)
    # QR of the design alone: the coefficient block of the augmented factorisation is
    # Q' [Y; 0], one product as in the normal equations, instead of a factorisation
    # whose cost grows with the square of the number of targets
    q_factor, r11 = np.linalg.qr(np.vstack([Z, np.diag(np.sqrt(prior))]), mode="reduced")
    diag = np.abs(np.diag(r11))
    if not np.all(diag > 0.0) or not np.all(np.isfinite(r11)):
        raise np.linalg.LinAlgError("the posterior precision of a regression row is singular")
    r11_inv = solve_triangular(r11, np.eye(d))
    coef = r11_inv @ (q_factor[: Z.shape[0]].T @ Y)  # (d, n_targets)
    Sigma = r11_inv @ r11_inv.T
    return coef.T, 0.5 * (Sigma + Sigma.T), float(2.0 * np.sum(np.log(diag)))


def gamma_hyper_update(mean_rho, mean_log_rho, a_start):
    """Maximise sum_s <ln Ga(rho_s | a, b)> over (a, b) (eq. 5.138, Appendix C.2):
    Newton steps in ln a on psi(a) - ln a = mean <ln rho> - ln mean <rho>, then
    b = a / mean <rho>."""
    d_bar = float(np.mean(mean_rho))
    c_bar = float(np.mean(mean_log_rho))
    target = c_bar - np.log(d_bar)  # < 0 by Jensen
    a = float(min(max(a_start, 1e-3), SHAPE_CAP))
    for _ in range(100):
        f = digamma(a) - np.log(a) - target
        fp = a * polygamma(1, a) - 1.0  # derivative w.r.t. ln a, > 0
        step = -f / fp
        step = float(np.clip(step, -5.0, 5.0))
        a_new = min(a * np.exp(step), SHAPE_CAP)
        # psi(a) - ln a loses ~1e-16 ln(a) to cancellation: 1e-10 is the attainable
        # relative accuracy for large a
        if abs(step) <= 1e-10 or a_new >= SHAPE_CAP:
            a = a_new
            break
        a = a_new
    return a, a / d_bar


def output_scale(X):
    """The mean variance of the output columns (the mean square of the values for
    constant outputs, 1 for all-zero outputs): the default rate of the noise-precision
    prior.  Every other prior of the model is scale-free (the rows of C and D are
    scaled by the noise precision, the states have unit innovation variance), so a
    rate proportional to the outputs' squared scale makes ``X * c`` give the same fit
    with C, D scaled by c and the noise precisions by 1 / c^2.  Missing entries (NaN)
    are left out."""
    if np.isnan(X).any():
        scale = float(np.mean(np.nanvar(X, axis=0)))
        if not scale > 0:
            scale = float(np.nanmean(X**2))
        return scale if scale > 0 else 1.0
    scale = float(np.mean(X.var(axis=0)))
    if not scale > 0:
        scale = float(np.mean(X**2))
    return scale if scale > 0 else 1.0


def innovation_scale(omega, Us, starts):
    """Per-dimension factors ``1 / sd(e_j)`` where ``e`` are the residuals of the
    least-squares regression of ``omega_t`` on ``[omega_{t-1}, u_t]`` (within
    sequences), floored so a factor never exceeds 10."""
    N = omega.shape[0]
    keep = np.ones(N, dtype=bool)
    keep[starts] = False
    if np.count_nonzero(keep) <= omega.shape[1] + Us.shape[1]:
        return np.ones(omega.shape[1])
    prev = np.zeros_like(omega)
    prev[1:] = omega[:-1]
    Z = np.hstack([prev, Us])[keep]
    coef, *_ = np.linalg.lstsq(Z, omega[keep], rcond=None)
    resid = omega[keep] - Z @ coef
    var = np.mean(resid**2, axis=0)
    return 1.0 / np.sqrt(np.maximum(var, 1e-2))


def initial_hidden_posterior(data, k, init_params, random_state):
    """The hidden-state posterior to start from with ``k`` states (``init_params``:
    "pca", "scaled-pca" or "random"; see the estimator's parameter): successive
    states uncorrelated, as Algorithm 5.3 step 1."""
    X = data.X
    if data.obs_mask is not None:
        # a start only: missing outputs at their column's mean
        X = np.where(data.obs_mask, data.X0, np.nanmean(data.X, axis=0))
    N = X.shape[0]
    n_seq = data.starts.shape[0]
    omega = random_state.standard_normal((N, k))
    omega0 = random_state.standard_normal((n_seq, k))
    ups_scale = 1.0
    if init_params in ("pca", "scaled-pca"):
        # unit-variance principal-component scores plus a little noise (so restarts
        # differ); of the outputs, or of their delay embedding when k exceeds their
        # rank (see delay_embedding)
        left, r = _principal_scores(X, k)
        if r < k:
            left, r = _principal_scores(delay_embedding(X, k, data.starts, data.ends), k)
        omega *= 0.1
        omega[:, :r] += np.sqrt(N) * left[:, :r]
        ups_scale = 0.1
        # "scaled-pca": with Q = I the state scale is fixed by the dynamics: a persistent
        # dimension (|a| near 1) has variance 1 / (1 - a^2), not 1.  Unit-variance
        # scores start every persistent dimension too small (and its C column too
        # large), and VBEM then spends hundreds of iterations growing the scale.
        # Rescale each score so that its one-step regression on the previous
        # scores and the state inputs leaves unit innovation variance.
        if init_params == "scaled-pca":
            scale = innovation_scale(omega, data.Us, data.starts)
            omega *= scale
            ups_scale = ups_scale * np.outer(scale, scale)
    return HiddenPosterior(
        omega=omega,
        ups=np.broadcast_to(ups_scale * np.eye(k), (N, k, k)).copy(),
        cross=np.zeros((N, k, k)),
        omega0=omega0,
        ups0=np.broadcast_to(np.eye(k), (n_seq, k, k)).copy(),
        entropy=np.zeros(n_seq),
        ln_z=np.zeros(n_seq),
    )


def _principal_scores(Z, k):
    """The left singular vectors of the centred ``Z`` and how many of them (at most
    ``k``) have a nonzero singular value."""
    left, sv, _ = np.linalg.svd(Z - Z.mean(axis=0), full_matrices=False)
    r = min(k, int(np.sum(sv > 1e-10 * max(sv[0], 1e-300))) if sv.size else 0)
    return left, r


def delay_embedding(X, k, starts, ends):
    """Each row of ``X`` followed by the rows of the previous ``L - 1`` steps of its
    sequence (the first row of the sequence standing in before its start), for a
    start with ``k`` states: ``L`` is at least 2 and ``ceil(k / p)``, and up to ``2 k``
    while the copies span at most a quarter of the shortest sequence.

    With fewer outputs than states the principal components of the outputs alone
    leave ``k - rank`` state dimensions with no signal: their loadings start at
    zero, every VBEM update keeps the reflection ``x_j -> -x_j`` of such a
    dimension a symmetry, and the fit converges to the saddle where the dimension
    stays dead (a one-output series with an oscillation is fitted by one decaying
    state).  The components of the delay embedding are the singular-spectrum
    components of the series: their leading pair of an oscillation is a sine and
    cosine of it, the two states a rotation needs."""
    p = X.shape[1]
    shortest = int(np.min(ends - starts))
    L = max(2, -(-k // p), min(2 * k, shortest // 4))
    rows = np.arange(X.shape[0])
    first = np.repeat(starts, ends - starts)
    lagged = [X[np.maximum(rows - lag, first)] for lag in range(L)]
    return np.hstack(lagged)


def hidden_stats(data, q_x):
    """Expected hidden-state statistics of ``q_x`` on ``data``."""
    return hidden_statistics(q_x.omega, q_x.ups, q_x.cross, q_x.omega0,
                             q_x.ups0, data.starts, data.ends, data.X0, data.Us, data.Uo,
                             data.obs_mask, q_x.cov_rows)


def vbm(data, stats, omega, alpha, beta, gamma, delta, noise_shape, noise_rate):
    """Optimal q(A, B) and q(C, D, rho) given the hidden statistics (thesis
    Section 5.3.1), with each row of [A B] and of [C D] solved jointly; ``omega`` are
    the state means of q(x), ``alpha`` .. ``delta`` the ARD precisions of the present
    columns and ``(noise_shape, noise_rate)`` the Gamma prior of the noise
    precisions."""
    k = alpha.shape[0]
    p = data.X.shape[1]
    ds = data.Us.shape[1]
    do = data.Uo.shape[1]
    # q(A, B): rows [a_j; b_j] ~ N(Sigma_AB r_j, Sigma_AB) with
    # Sigma_AB = (W_z + diag(prior))^-1, r_j the j-th column of [S_A; M]: the
    # expected regression of x_t on z_t = [x_{t-1}; u_t], solved as least squares
    ups_root, ups_root_inv = covariance_root(stats.ups_prev_sum)
    prior_ab = np.concatenate([alpha, beta])
    M_AB, Sigma_AB, logdet_Sigma_AB_inv = ridge_regression(
        [np.hstack([stats.prev, data.Us]),
         np.hstack([ups_root, np.zeros((k, ds))])],
        [omega, ups_root_inv @ stats.cross_sum], prior_ab)
    E_AB = M_AB.T @ M_AB + k * Sigma_AB
    # q(C, D, rho): the expected regression of y_t on w_t = [x_t; u_t]
    prior_cd = np.concatenate([gamma, delta])
    if data.obs_mask is not None:
        q_cd = _output_posterior_missing(data, stats, omega, prior_cd, noise_shape,
                                         noise_rate)
        return ParameterPosterior(M_AB=M_AB, Sigma_AB=Sigma_AB, E_AB=E_AB,
                                  logdet_Sigma_AB=-logdet_Sigma_AB_inv, **q_cd)
    ups_root, _ = covariance_root(stats.ups_sum)
    M_CD, Sigma_CD, logdet_Sigma_CD_inv = ridge_regression(
        [np.hstack([omega, data.Uo]),
         np.hstack([ups_root, np.zeros((k, do))])],
        [data.X, np.zeros((k, p))], prior_cd)  # M_CD: p x (k + do)
    # g_s = Ydd_ss - r_s' Sigma r_s, written as a sum of non-negative terms
    C_bar, D_bar = M_CD[:, :k], M_CD[:, k:]
    resid = data.X - omega @ C_bar.T - data.Uo @ D_bar.T
    g = (
        np.einsum("ts,ts->s", resid, resid)
        + np.einsum("sj,jl,sl->s", C_bar, stats.ups_sum, C_bar)
        + (M_CD**2) @ prior_cd
    )
    g = np.maximum(g, 1e-300)
    shape = noise_shape + 0.5 * stats.T
    rate = noise_rate + 0.5 * g
    rho = shape / rate
    log_rho = gamma_expected_log(shape, rate)
    E_CD = (M_CD.T * rho) @ M_CD + p * Sigma_CD
    return ParameterPosterior(
        M_AB=M_AB,
        Sigma_AB=Sigma_AB,
        M_CD=M_CD,
        Sigma_CD=Sigma_CD,
        rho=rho,
        log_rho=log_rho,
        E_AB=E_AB,
        E_CD=E_CD,
        logdet_Sigma_AB=-logdet_Sigma_AB_inv,
        logdet_Sigma_CD=-logdet_Sigma_CD_inv,
        rho_shape=shape,
        rho_rate=rate,
    )


def _output_posterior_missing(data, stats, omega, prior_cd, noise_shape, noise_rate):
    """The q(C, D, rho) fields of :func:`vbm` with missing outputs (missing at random):
    each row s of ``[C D]`` regresses ``y_ts`` on ``w_t = [x_t; uo_t]`` over the steps
    where output s is observed, so it has its own covariance ``Sigma_CD[s] / rho_s``
    (``Sigma_CD`` (p, k + do, k + do)) and its noise precision its own Gamma shape
    ``a + T_s / 2`` (``rho_shape`` (p,)).  The loop runs over the outputs."""
    X0, obs = data.X0, data.obs_mask
    k = omega.shape[1]
    p = X0.shape[1]
    w = np.hstack([omega, data.Uo])
    m_dim = w.shape[1]
    M_CD = np.empty((p, m_dim))
    Sigma_CD = np.empty((p, m_dim, m_dim))
    logdet_inv = np.empty(p)
    g = np.empty(p)
    for s in range(p):
        rows = obs[:, s]
        ups_root, _ = covariance_root(stats.ups_sum_d[s])
        M_s, Sigma_CD[s], logdet_inv[s] = ridge_regression(
            [w[rows], np.hstack([ups_root, np.zeros((k, m_dim - k))])],
            [X0[rows, s:s + 1], np.zeros((k, 1))], prior_cd)
        M_CD[s] = M_s[0]
        resid = X0[rows, s] - w[rows] @ M_CD[s]
        c = M_CD[s, :k]
        # g_s as a sum of non-negative terms, as in the complete-data update
        g[s] = resid @ resid + c @ stats.ups_sum_d[s] @ c + (M_CD[s] ** 2) @ prior_cd
    g = np.maximum(g, 1e-300)
    shape = noise_shape + 0.5 * obs.sum(axis=0)
    rate = noise_rate + 0.5 * g
    rho = shape / rate
    E_CD = (M_CD.T * rho) @ M_CD + Sigma_CD.sum(axis=0)
    return dict(M_CD=M_CD, Sigma_CD=Sigma_CD, rho=rho,
                log_rho=gamma_expected_log(shape, rate), E_CD=E_CD,
                logdet_Sigma_CD=-logdet_inv, rho_shape=shape, rho_rate=rate)


def kl_terms(q, alpha, beta, gamma, delta, noise_shape, noise_rate):
    """The KL terms of F: q(theta) (from :func:`vbm`) against the prior of the given
    hyperparameters, split into the marginals of B, rho and D and the conditionals of
    A and C."""
    k, ds, do = q.k, q.ds, q.do
    p = q.M_CD.shape[0]
    prior_ab = np.concatenate([alpha, beta])
    prior_cd = np.concatenate([gamma, delta])
    kl_ab = 0.5 * np.sum(prior_ab * np.diag(q.E_AB)) - 0.5 * k * (
        k + ds + q.logdet_Sigma_AB + np.sum(np.log(prior_ab))
    )
    # one covariance per row of [C D] with missing outputs, one shared otherwise
    per_row = np.ndim(q.Sigma_CD) == 3
    ld_cd = float(np.sum(q.logdet_Sigma_CD)) if per_row else p * q.logdet_Sigma_CD
    kl_cd = 0.5 * np.sum(prior_cd * np.diag(q.E_CD)) - 0.5 * (
        p * (k + do + np.sum(np.log(prior_cd))) + ld_cd
    )
    # split into the marginal of B (D) and the conditional of A (C)
    if ds:
        Sigma_B = q.Sigma_AB[k:, k:]
        _, ld_B_inv = spd_inv_logdet(Sigma_B)
        kl_b = 0.5 * np.sum(beta * np.diag(q.E_AB)[k:]) - 0.5 * k * (
            ds - ld_B_inv + np.sum(np.log(beta))
        )
    else:
        kl_b = 0.0
    if do and per_row:
        ld_D_inv = -np.linalg.slogdet(q.Sigma_CD[:, k:, k:])[1]
        kl_d = 0.5 * np.sum(delta * np.diag(q.E_CD)[k:]) - 0.5 * (
            p * (do + np.sum(np.log(delta))) - np.sum(ld_D_inv)
        )
    elif do:
        Sigma_D = q.Sigma_CD[k:, k:]
        _, ld_D_inv = spd_inv_logdet(Sigma_D)
        kl_d = 0.5 * np.sum(delta * np.diag(q.E_CD)[k:]) - 0.5 * p * (
            do - ld_D_inv + np.sum(np.log(delta))
        )
    else:
        kl_d = 0.0
    kl_rho = float(np.sum(gamma_kl(q.rho_shape, q.rho_rate, noise_shape, noise_rate)))
    return KLTerms(
        KL_B=float(kl_b),
        KL_A_given_B=float(kl_ab - kl_b),
        KL_rho=kl_rho,
        KL_D_given_rho=float(kl_d),
        KL_C_given_rho_D=float(kl_cd - kl_d),
    )


def lower_bound(data, q, s, qx, mu0, Sigma0, kl):
    """F for q(theta) ``q``, q(x) ``qx`` with statistics ``s``, any q(x): the expected
    complete-data log-likelihood plus the entropy of q(x) minus the KL terms ``kl``
    of q(theta) (:func:`kl_terms`; thesis Section 5.3.7 gives the form right after a
    VBE step), with the initial-state prior ``N(mu0, Sigma0)``."""
    k = q.k
    p = data.X.shape[1]
    T = s.T
    Sigma0_inv, ld_Sigma0 = spd_inv_logdet(Sigma0)
    dev = qx.omega0 - mu0
    n_seq = dev.shape[0]
    x0_term = -0.5 * n_seq * (k * LOG_2PI + ld_Sigma0) - 0.5 * (
        np.sum(Sigma0_inv * qx.ups0.sum(axis=0)) + np.sum((dev @ Sigma0_inv) * dev)
    )
    # statistics of the current q(x) (not those q(theta) was computed from).  The
    # expected squared innovations and output residuals are summed as squared
    # residuals of the means plus covariance terms, not as differences of second
    # moments: with explosive dynamics the states grow to many orders of magnitude
    # above the noise, and the differences lose whole nats to cancellation
    W_z, _ = dynamics_moments(s, data.UUs)
    W_w, _ = output_moments(s, data.UUo, data.UY)
    M_A, M_B = q.M_AB[:, :k], q.M_AB[:, k:]
    innovation = qx.omega - s.prev @ M_A.T - data.Us @ M_B.T
    A_cross = M_A @ s.cross_sum
    innovation_cov = (s.ups_sum - A_cross - A_cross.T
                      + M_A @ s.ups_prev_sum @ M_A.T)
    e_dyn = -0.5 * T * k * LOG_2PI - 0.5 * (
        np.sum(innovation * innovation) + np.trace(innovation_cov)
        + k * np.sum(q.Sigma_AB * W_z)
    )
    M_C, M_D = q.M_CD[:, :k], q.M_CD[:, k:]
    if data.obs_mask is not None:
        # the observed entries only, each output with its own design (missing at random)
        rows = output_rows(s, qx.omega, data.X0, data.Uo, data.obs_mask)
        residual = np.where(data.obs_mask, data.X0 - qx.omega @ M_C.T - data.Uo @ M_D.T, 0.0)
        residual_sq = (np.einsum("ts,ts->s", residual, residual)
                       + np.einsum("sj,sjl,sl->s", M_C, s.ups_sum_d, M_C))
        Sigma_rows = (q.Sigma_CD if np.ndim(q.Sigma_CD) == 3
                      else np.broadcast_to(q.Sigma_CD, rows.W.shape))
        e_obs = (-0.5 * np.sum(rows.T) * LOG_2PI + 0.5 * np.sum(rows.T * q.log_rho)
                 - 0.5 * (np.sum(q.rho * residual_sq) + np.sum(Sigma_rows * rows.W)))
        return float(x0_term + np.sum(qx.entropy) + e_dyn + e_obs - kl.total())
    residual = data.X - qx.omega @ M_C.T - data.Uo @ M_D.T
    residual_sq = (np.einsum("ts,ts->s", residual, residual)
                   + np.einsum("sj,jl,sl->s", M_C, s.ups_sum, M_C))
    e_obs = -0.5 * T * p * LOG_2PI + 0.5 * T * np.sum(q.log_rho) - 0.5 * (
        np.sum(q.rho * residual_sq) + p * np.sum(q.Sigma_CD * W_w)
    )
    return float(x0_term + np.sum(qx.entropy) + e_dyn + e_obs - kl.total())


def init_state_prior(omega0, ups0, form):
    """The optimal initial-state prior (mu0, Sigma0) of the form ``form`` ("diag",
    "spherical" or "full") for q(x_0) with means ``omega0`` and second central
    moments ``ups0`` (eq. 5.139 and its constrained forms)."""
    k = omega0.shape[1]
    mu0 = omega0.mean(axis=0)
    dev = omega0 - mu0
    full = ups0.mean(axis=0) + dev.T @ dev / omega0.shape[0]
    full = 0.5 * (full + full.T)
    if form == "diag":
        cov = np.diag(np.maximum(np.diag(full), SIGMA0_FLOOR))
    elif form == "spherical":
        cov = np.eye(k) * max(np.trace(full) / k, SIGMA0_FLOOR)
    else:
        w, V = np.linalg.eigh(full)
        cov = (V * np.maximum(w, SIGMA0_FLOOR)) @ V.T
        cov = 0.5 * (cov + cov.T)
    return mu0, cov


def noise_prior_learned(n_outputs):
    """Whether the Gamma prior (a, b) of the noise precisions is optimised: only with
    more than one output.  Fitted to a single precision the prior has no finite
    optimum: in the shape it collapses onto that precision (a grows without end, each
    thesis update raising it by about T/2), and with the shape held the optimal rate
    follows the residual, so the noise term loses its penalty and, where the states
    can explain the series alone, the precision grows without end.  Either way the
    bound creeps up and the fit never converges; the data-scaled default prior is
    kept instead."""
    return n_outputs > 1


def exact_hyper_update(data, s, hyper, dynamics, outputs, noise):
    """The ARD precisions of the started groups and, with ``noise``, the Gamma prior
    (a, b) of the noise precisions, each set to the exact maximiser of the bound with
    q(theta) optimised jointly for the statistics ``s`` of the current q(x)
    (``sklearn_vb.lds._hyper``); each group is kept only if that bound rises.
    ``hyper`` and the result are ``(alpha, beta, gamma, delta, a, b)``."""
    alpha, beta, gamma, delta, a, b = hyper
    k = alpha.shape[0]
    if dynamics:
        W_z, R_AB = dynamics_moments(s, data.UUs)
        lam = np.concatenate([alpha, beta])
        new = update_dynamics_precisions(W_z, R_AB, lam, np.ones(lam.size, bool),
                                         EXACT_PRECISION_CAP)
        if dynamics_evidence(W_z, R_AB, new) >= dynamics_evidence(W_z, R_AB, lam):
            alpha, beta = new[:k], new[k:]
    if outputs or noise:
        W_w, R_CD = output_moments(s, data.UUo, data.UY)
        lam = np.concatenate([gamma, delta])
        free = np.full(lam.size, bool(outputs))
        new, a_new, b_new = update_output_hyperparameters(
            W_w, R_CD, data.YY, lam, a, b, s.T, free, noise, EXACT_PRECISION_CAP,
            EXACT_SHAPE_CAP)
        T = s.T
        if (output_evidence(W_w, R_CD, data.YY, new, a_new, b_new, T)
                >= output_evidence(W_w, R_CD, data.YY, lam, a, b, T)):
            gamma, delta = new[:k], new[k:]
            a, b = a_new, b_new
    return alpha, beta, gamma, delta, a, b


def fixed_point_hyper_update(q, hyper, dynamics, outputs, noise):
    """The thesis updates (Beal 2003, eqs. 5.133-5.138) at the current q(theta) ``q``:
    with ``dynamics`` the ARD precisions of [A B], with ``outputs`` those of [C D],
    with ``noise`` the Gamma prior (a, b) of the noise precisions.  ``hyper`` and the
    result are ``(alpha, beta, gamma, delta, a, b)``."""
    alpha, beta, gamma, delta, a, b = hyper
    k = alpha.shape[0]
    p = q.M_CD.shape[0]
    if dynamics:
        diag = np.diag(q.E_AB)
        alpha = np.minimum(k / diag[:k], HYPER_CAP)
        beta = np.minimum(k / diag[k:], HYPER_CAP)
    if outputs:
        diag = np.diag(q.E_CD)
        gamma = np.minimum(p / diag[:k], HYPER_CAP)
        delta = np.minimum(p / diag[k:], HYPER_CAP)
    if noise:
        a, b = gamma_hyper_update(q.rho, q.log_rho, a)
    return alpha, beta, gamma, delta, a, b
