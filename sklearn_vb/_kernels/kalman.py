"""Variational Kalman filter and RTS smoother (numba kernels).

The VBE step of the variational Bayesian linear dynamical system is exact inference in
a linear-Gaussian chain whose potentials are the parameter-averaged densities
``exp<ln p(x_t | x_{t-1})>`` and ``exp<ln p(y_t | x_t)>``.  Written as in spec/lds.md
§5.2, each is an ordinary Gaussian density under the posterior-mean parameters times a
Gaussian "uncertainty penalty"::

    exp<ln p(x_t|x_{t-1})> = N(x_t | A x_{t-1} + bu_t, I) exp{-1/2 x'S_A x - x'h_ab_t - c_ab_t}
    exp<ln p(y_t|x_t)>     = N(y_t | C x_t + Du_t, diag(1/rho))
                             exp{-1/2 x'S_C x - x'h_cd_t - c_cd_t + rho_log_gap}

(``x`` is ``x_{t-1}`` in the first penalty and ``x_t`` in the second).  The filter
absorbs each penalty into the current Gaussian belief (only positive semi-definite
terms are added, every covariance comes from a Cholesky factorisation), then runs a
textbook predict / information-form update step.  The smoother is the RTS recursion
on the conditionals ``q(x_{t-1} | x_t)``, whose precision is
``Sigma_{t-1}^{-1} + <A'A>``.

With ``S_A = S_C = 0`` and ``rho_log_gap = 0`` the kernel is an ordinary Kalman filter
and RTS smoother and ``log_terms`` are the one-step-ahead predictive log densities.

All sequences are processed in one call; the input-dependent terms (``bu_t``,
``h_ab_t``...) are computed by the caller, so the kernel never sees the inputs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

LOG_2PI = float(np.log(2.0 * np.pi))


@njit(cache=True, nogil=True)
def spd_inverse(M):
    """Inverse and log-determinant of a symmetric positive definite matrix (Cholesky)."""
    k = M.shape[0]
    S = 0.5 * (M + M.T)
    L = np.linalg.cholesky(S)
    Linv = np.zeros((k, k))
    logdet = 0.0
    for i in range(k):
        Linv[i, i] = 1.0 / L[i, i]
        logdet += 2.0 * np.log(L[i, i])
        for j in range(i):
            s = 0.0
            for m in range(j, i):
                s += L[i, m] * Linv[m, j]
            Linv[i, j] = -s / L[i, i]
    inv = Linv.T @ Linv
    return 0.5 * (inv + inv.T), logdet


@njit(cache=True, nogil=True)
def spd_logdet(M):
    S = 0.5 * (M + M.T)
    L = np.linalg.cholesky(S)
    logdet = 0.0
    for i in range(M.shape[0]):
        logdet += 2.0 * np.log(L[i, i])
    return logdet


@njit(cache=True, nogil=True)
def vb_kalman_smoother(
    y_res, bu, h_ab, c_ab, h_cd, c_cd, observed, starts, ends,
    A, C, rho, S_A, S_C, rho_log_gap, mu0, Sigma0, smooth,
):
    """Variational Kalman filter (and optionally RTS smoother) over all sequences.

    Parameters
    ----------
    y_res : (N, p) observations minus the mean input effect ``y_t - D u_t``.
    bu : (N, k) mean input drive of the states ``B u_t``.
    h_ab, c_ab : (N, k), (N,) linear and constant parts of the transition penalty on
        ``x_{t-1}`` (``S_AB u_t`` and ``u_t' S_B u_t / 2``).
    h_cd, c_cd : (N, k), (N,) same for the observation penalty on ``x_t``.
    observed : (N,) bool; a step with ``False`` has its observation treated as missing.
    starts, ends : (n,) row offsets of each sequence (end exclusive).
    A, C, rho : posterior means of A (k, k), C (p, k) and the noise precisions (p,).
    S_A, S_C : (k, k) positive semi-definite uncertainty penalties.
    rho_log_gap : ``sum_s(<ln rho_s> - ln rho_mean_s) / 2`` (<= 0).
    mu0, Sigma0 : prior of the auxiliary state ``x_0`` of every sequence.
    smooth : run the backward pass too.

    Returns
    -------
    log_terms : (N,) ``ln zeta'_t``; summed over a sequence they give ``ln Z'``.
    pred_mean, pred_cov : (N, k), (N, k, k) predicted belief ``N(m_t, P_t)`` of ``x_t``
        given ``y_{1:t-1}`` (after the transition penalty, before the observation).
    filt_mean, filt_cov : (N, k), (N, k, k) filtered beliefs.
    omega, ups : (N, k), (N, k, k) smoothed marginals of ``x_t`` (zeros if not smooth).
    cross : (N, k, k) ``Cov(x_{t-1}, x_t)`` (row of ``x_t``; for the first step of a
        sequence ``x_{t-1}`` is that sequence's ``x_0``).
    omega0, ups0 : (n, k), (n, k, k) smoothed marginal of each ``x_0``.
    entropy : (n,) entropy of ``q(x_{0:T})`` per sequence (0 if not smooth).
    """
    N, p = y_res.shape
    k = A.shape[0]
    n_seq = starts.shape[0]
    CtR = np.empty((k, p))
    for j in range(k):
        for s in range(p):
            CtR[j, s] = C[s, j] * rho[s]
    CRC = CtR @ C
    AtA = A.T @ A
    At = np.ascontiguousarray(A.T)
    sum_log_rho = 0.0
    for s in range(p):
        sum_log_rho += np.log(rho[s])
    eye = np.eye(k)

    log_terms = np.zeros(N)
    pred_mean = np.zeros((N, k))
    pred_cov = np.zeros((N, k, k))
    filt_mean = np.zeros((N, k))
    filt_cov = np.zeros((N, k, k))
    omega = np.zeros((N, k))
    ups = np.zeros((N, k, k))
    cross = np.zeros((N, k, k))
    omega0 = np.zeros((n_seq, k))
    ups0 = np.zeros((n_seq, k, k))
    entropy = np.zeros(n_seq)
    sstar = np.zeros((N, k, k)) if smooth else np.zeros((0, k, k))
    cvec = np.zeros((N, k)) if smooth else np.zeros((0, k))
    ld_sstar = np.zeros(N)
    ld_filt = np.zeros(N)
    h_const = 0.5 * k * (1.0 + LOG_2PI)

    for i in range(n_seq):
        mu = mu0.copy()
        Sig = 0.5 * (Sigma0 + Sigma0.T)
        Sig_inv, ld_Sig = spd_inverse(Sig)
        for t in range(starts[i], ends[i]):
            # 1. transition penalty on x_{t-1}
            Lam1 = Sig_inv + S_A
            St, ld_Lam1 = spd_inverse(Lam1)
            g = S_A @ mu + h_ab[t]
            Stg = St @ g
            mut = mu - Stg
            l_ab = (
                -0.5 * (ld_Lam1 + ld_Sig)
                - 0.5 * (mu @ (S_A @ mu))
                - mu @ h_ab[t]
                + 0.5 * (g @ Stg)
                - c_ab[t]
            )
            if smooth:
                Ss, ld_Ss_inv = spd_inverse(Lam1 + AtA)
                sstar[t] = Ss
                ld_sstar[t] = -ld_Ss_inv
                cvec[t] = Ss @ (Lam1 @ mut - At @ bu[t])
            # 2. predict with the mean dynamics
            m = A @ mut + bu[t]
            P = A @ St @ At + eye
            P = 0.5 * (P + P.T)
            pred_mean[t] = m
            pred_cov[t] = P
            Pinv, ld_P = spd_inverse(P)
            if observed[t]:
                # 3. observation penalty on x_t
                Lam2 = Pinv + S_C
                Pt, ld_Lam2 = spd_inverse(Lam2)
                g2 = S_C @ m + h_cd[t]
                Ptg = Pt @ g2
                mt = m - Ptg
                l_cd = (
                    -0.5 * (ld_Lam2 + ld_P)
                    - 0.5 * (m @ (S_C @ m))
                    - m @ h_cd[t]
                    + 0.5 * (g2 @ Ptg)
                    - c_cd[t]
                )
                # 4. information-form update with the mean observation model
                Lam = Lam2 + CRC
                Sig_new, ld_Lam = spd_inverse(Lam)
                e = y_res[t] - C @ mt
                CtRe = CtR @ e
                SCtRe = Sig_new @ CtRe
                mu_new = mt + SCtRe
                quad = 0.0
                for s in range(p):
                    quad += rho[s] * e[s] * e[s]
                quad -= CtRe @ SCtRe
                l_y = -0.5 * (p * LOG_2PI - sum_log_rho - ld_Lam2 + ld_Lam + quad)
                log_terms[t] = l_ab + l_cd + l_y + rho_log_gap
                Sig = Sig_new
                Sig_inv = 0.5 * (Lam + Lam.T)
                ld_Sig = -ld_Lam
                mu = mu_new
            else:
                log_terms[t] = l_ab
                mu = m
                Sig = P
                Sig_inv = Pinv
                ld_Sig = ld_P
            filt_mean[t] = mu
            filt_cov[t] = Sig
            ld_filt[t] = ld_Sig

        if not smooth:
            continue
        last = ends[i] - 1
        omega[last] = filt_mean[last]
        ups[last] = filt_cov[last]
        ent = h_const + 0.5 * ld_filt[last]
        for t in range(last, starts[i], -1):
            # conditional q(x_{t-1} | x_t): precision Sigma*^{-1}, mean c + J x_t
            J = sstar[t] @ At
            omega[t - 1] = cvec[t] + J @ omega[t]
            JU = J @ ups[t]
            U_prev = sstar[t] + JU @ J.T
            ups[t - 1] = 0.5 * (U_prev + U_prev.T)
            cross[t] = JU
            ent += h_const + 0.5 * ld_sstar[t]
        t0 = starts[i]
        J = sstar[t0] @ At
        omega0[i] = cvec[t0] + J @ omega[t0]
        JU = J @ ups[t0]
        U0 = sstar[t0] + JU @ J.T
        ups0[i] = 0.5 * (U0 + U0.T)
        cross[t0] = JU
        ent += h_const + 0.5 * ld_sstar[t0]
        entropy[i] = ent

    return (log_terms, pred_mean, pred_cov, filt_mean, filt_cov,
            omega, ups, cross, omega0, ups0, entropy)


@njit(cache=True, nogil=True)
def simulate_lds(A, bu, C, du, noise_std, x0, state_noise, obs_noise, starts, ends):
    """Simulate x_t = A x_{t-1} + bu_t + w_t, y_t = C x_t + du_t + noise_std * v_t.

    ``state_noise`` (N, k) and ``obs_noise`` (N, p) are standard normal draws, ``x0``
    (n, k) the initial auxiliary states.  Returns states (N, k) and outputs (N, p).
    """
    N = bu.shape[0]
    k = A.shape[0]
    p = C.shape[0]
    states = np.zeros((N, k))
    outputs = np.zeros((N, p))
    for i in range(starts.shape[0]):
        x = x0[i].copy()
        for t in range(starts[i], ends[i]):
            x = A @ x + bu[t] + state_noise[t]
            states[t] = x
            outputs[t] = C @ x + du[t] + noise_std * obs_noise[t]
    return states, outputs
