"""Kalman filtering and smoothing of linear dynamical systems (numba kernels).

Model::

    x_0 ~ N(mu0, Sigma0),   x_t = A x_{t-1} + B us_t + w_t,  w_t ~ N(0, I_k)
    y_t = C x_t + D uo_t + v_t,                              v_t ~ N(0, diag(1/rho))

One filter, :func:`_kalman_filter`, serves two kernels:

* :func:`vb_kalman_smoother`, the VBE step of the variational Bayesian LDS: exact
  inference in a linear-Gaussian chain whose potentials are the parameter-averaged
  densities ``exp<ln p(x_t | x_{t-1})>`` and ``exp<ln p(y_t | x_t)>``.  Each is an
  ordinary Gaussian density under the posterior-mean parameters times a Gaussian
  "uncertainty penalty" from the posterior covariance of the parameters::

      exp<ln p(x_t|x_{t-1})> = N(x_t | A x_{t-1} + bu_t, I) exp{-1/2 x'S_A x - x'h_ab_t - c_ab_t}
      exp<ln p(y_t|x_t)>     = N(y_t | C x_t + Du_t, diag(1/rho))
                               exp{-1/2 x'S_C x - x'h_cd_t - c_cd_t + rho_log_gap}

  (``x`` is ``x_{t-1}`` in the first penalty and ``x_t`` in the second).  The filter
  absorbs each penalty into the current Gaussian belief (only positive semi-definite
  terms are added, every covariance comes from a Cholesky factorisation), then runs the
  predict / information-form update step.  The smoother is the RTS recursion on the
  conditionals ``q(x_{t-1} | x_t)``, whose precision is ``Sigma_{t-1}^{-1} + <A'A>``.
  With ``S_A = S_C = 0`` and ``rho_log_gap = 0`` it is an ordinary Kalman filter and RTS
  smoother and ``log_terms`` are the one-step-ahead predictive log densities.

* :func:`lds_log_likelihood_terms`, the exact ``ln p(y_t | y_{1:t-1}, theta)`` of a
  batch of parameter sets (the scoring layer's likelihood): the prediction-error
  decomposition ``sum_t ln N(y_t; C m_t + D uo_t, C P_t C' + diag(1/rho))`` with the
  predicted belief ``N(m_t, P_t)``, the same filter without penalties.

The update is done in information form (``Sigma_t = (P_t^{-1} + C' R^{-1} C)^{-1}``,
matrix determinant lemma for the innovation log-determinant), so the cost per step is
``O(k^3 + p k^2)`` and no ``p x p`` matrix is ever factorised.  All sequences are
processed in one call; the input-dependent terms (``bu_t``, ``h_ab_t``...) are computed
before the filter, which never sees the inputs.  The covariance recursion depends on
neither, so groups of equal-length, fully observed sequences can share one:
:mod:`sklearn_vb.lds.kalman_batch` runs them as matrix products over the group
(:func:`sklearn_vb.lds.inference.smooth_states` chooses).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._core.kernels.constants import LOG_2PI
from .._core.kernels.linalg import chol_into, chol_inverse_into, spd_inverse_into
from .._core.kernels.linalg import dot as _dot
from .._core.kernels.linalg import mm as _mm
from .._core.kernels.linalg import mmT as _mmT
from .._core.kernels.linalg import mv as _mv


@njit(cache=True, nogil=True, inline="always")
def _spd_inverse(M, inv, L, Linv, strict):
    """``inv = M^{-1}`` of the symmetric positive definite ``M``; returns (ok, ln|M|).

    ``strict``: a matrix that is not positive definite raises ``LinAlgError``;
    otherwise it (or an overflowing pivot) gives ok = False.
    """
    if strict:
        return True, spd_inverse_into(M, inv, L, Linv)
    if not chol_into(M, L, True):
        return False, 0.0
    return True, chol_inverse_into(L, inv, Linv)


@njit(cache=True, nogil=True, inline="always")
def _same(X, Y):
    """Whether two arrays of the same shape are bitwise equal (no NaN handling: a NaN
    compares unequal, which only ever turns the steady-state shortcut off)."""
    Xf = X.ravel()
    Yf = Y.ravel()
    for a in range(Xf.shape[0]):
        if Xf[a] != Yf[a]:
            return False
    return True


@njit(cache=True, nogil=True)
def _kalman_filter(y_res, bu, observed, obs_mask, starts, ends, A, C, rho, mu0, Sigma0,
                   penalised, h_ab, c_ab, h_cd, c_cd, S_A, S_C, S_C_d, rho_log_gap, gap_d,
                   strict, keep, smooth, log_terms, pred_mean, pred_cov, filt_mean, filt_cov,
                   ld_filt, sstar, cvec, ld_sstar, same):
    """Forward pass over all sequences; writes ``log_terms[t]`` (see the module
    docstring) and, with ``keep``, the predicted and filtered beliefs of every step.

    ``penalised``: absorb the uncertainty penalties (``h_ab`` ... ``gap_d``; ignored
    otherwise).  ``obs_mask`` (N, p) (or (0, p): every entry of an observed step is
    observed) marks the observed entries of every step; a step with some entries
    missing updates with the observed rows of C only: ``C' R^-1 C`` becomes the sum
    over its observed outputs s of ``rho_s c_s c_s'``, the observation penalty the sum
    of the per-output ``S_C_d[s]``, and the log-gap the sum of ``gap_d[s]``.  ``strict``: a covariance that is not positive definite raises;
    otherwise every row of its sequence gets ``log_terms = -inf``, as does a sequence
    whose log density stops being finite.  ``smooth`` (with ``keep``): also store the
    RTS conditionals ``sstar``, ``cvec``, ``ld_sstar`` of every step, and in
    ``same[t]`` whether the covariances of step t are those of step t - 1.  Without
    ``keep`` the belief arrays are not touched (they may be empty).

    Steady state: the covariance recursion does not depend on the observations (the
    penalties' quadratic parts ``S_A``, ``S_C`` are constant), so once the posterior
    precision of an observed step is bitwise equal to that of the step before, the
    recursion has reached a fixed point in floating point and every following
    observed step would recompute exactly the same covariances, inverses and
    log-determinants.  They are then reused until a missing observation or the end of
    the sequence, which leaves every output bitwise unchanged and removes the
    ``O(k^3)`` factorisations from the steps in between.
    """
    N, p = y_res.shape
    k = A.shape[0]
    CtR = np.empty((k, p))
    for j in range(k):
        for s in range(p):
            CtR[j, s] = C[s, j] * rho[s]
    CRC = np.empty((k, k))
    _mm(CtR, C, CRC)
    At = np.ascontiguousarray(A.T)
    AtA = np.empty((k, k))
    _mm(At, A, AtA)
    sum_log_rho = 0.0
    for s in range(p):
        sum_log_rho += np.log(rho[s])
    has_mask = obs_mask.shape[0] > 0
    # the observation model of a step with missing entries (its observed rows only)
    CRC_m = np.empty((k, k))
    S_C_m = np.empty((k, k))

    # work buffers (no allocation inside the time loop)
    mu = np.empty(k)
    Sig = np.empty((k, k))
    Sig_inv = np.empty((k, k))
    Lam1 = np.empty((k, k))
    St = np.empty((k, k))
    Lam = np.empty((k, k))
    Lam_prev = np.empty((k, k))
    Pinv = np.empty((k, k))
    Pt = np.empty((k, k))
    T1 = np.empty((k, k))
    g = np.empty(k)
    v1 = np.empty(k)
    v2 = np.empty(k)
    mut = np.empty(k)
    m = np.empty(k)
    mt = np.empty(k)
    e = np.empty(p)
    Lw = np.empty((k, k))
    Liw = np.empty((k, k))
    P = np.empty((k, k))

    for i in range(starts.shape[0]):
        mu[:] = mu0
        for a in range(k):
            for b in range(k):
                Sig[a, b] = 0.5 * (Sigma0[a, b] + Sigma0[b, a])
        ld_Sig = 0.0
        if penalised:
            ok, ld_Sig = _spd_inverse(Sig, Sig_inv, Lw, Liw, strict)
            if not ok:
                for t in range(starts[i], ends[i]):
                    log_terms[t] = -np.inf
                continue
        ok = True
        # the covariance quantities of the last step, reused in the steady state
        ld_Lam1 = 0.0
        ld_P = 0.0
        ld_prior_prec = 0.0
        ld_Lam = 0.0
        have_prev = False  # Lam_prev holds the precision of the previous observed step
        steady = False
        for t in range(starts[i], ends[i]):
            partial = False
            if has_mask and observed[t]:
                for s in range(p):
                    if not obs_mask[t, s]:
                        partial = True
            if not observed[t] or partial:
                steady = False
                have_prev = False
            if smooth:
                same[t] = steady
            if penalised:
                # 1. transition penalty on x_{t-1}: belief N(mut, St).  Steps 1 and 3 are
                # the same Gaussian-times-penalty update written twice: as a shared helper
                # (inlined or not) it cost 10-20% of this kernel's time at k <= 3.
                if not steady:
                    for a in range(k):
                        for b in range(k):
                            Lam1[a, b] = Sig_inv[a, b] + S_A[a, b]
                    ok, ld_Lam1 = _spd_inverse(Lam1, St, Lw, Liw, strict)
                    if not ok:
                        break
                _mv(S_A, mu, g)
                for a in range(k):
                    g[a] += h_ab[t, a]
                _mv(St, g, v1)
                for a in range(k):
                    mut[a] = mu[a] - v1[a]
                _mv(S_A, mu, v2)
                l_ab = (-0.5 * (ld_Lam1 + ld_Sig) - 0.5 * _dot(mu, v2) - _dot(mu, h_ab[t])
                        + 0.5 * _dot(g, v1) - c_ab[t])
                if smooth:
                    if steady:
                        sstar[t] = sstar[t - 1]
                        ld_sstar[t] = ld_sstar[t - 1]
                    else:
                        for a in range(k):
                            for b in range(k):
                                T1[a, b] = Lam1[a, b] + AtA[a, b]
                        ok, ld_inv = _spd_inverse(T1, sstar[t], Lw, Liw, strict)
                        if not ok:
                            break
                        ld_sstar[t] = -ld_inv
                    _mv(Lam1, mut, v1)
                    _mv(At, bu[t], v2)
                    for a in range(k):
                        v1[a] -= v2[a]
                    _mv(sstar[t], v1, cvec[t])
            else:
                # copies rather than aliases: an array variable reassigned inside the
                # loop costs a reference count per step
                l_ab = 0.0
                for a in range(k):
                    mut[a] = mu[a]
                if not steady:
                    for a in range(k):
                        for b in range(k):
                            St[a, b] = Sig[a, b]
            # 2. predict with the mean dynamics: m = A mut + bu, P = A St A' + I
            _mv(A, mut, m)
            for a in range(k):
                m[a] += bu[t, a]
            if not steady:
                _mm(A, St, T1)
                _mmT(T1, A, P)
                for a in range(k):
                    P[a, a] += 1.0
                for a in range(k):
                    for b in range(a):
                        val = 0.5 * (P[a, b] + P[b, a])
                        P[a, b] = val
                        P[b, a] = val
            if keep:
                pred_mean[t] = m
                pred_cov[t] = P
            if not steady:
                ok, ld_P = _spd_inverse(P, Pinv, Lw, Liw, strict)
                if not ok:
                    break
            if observed[t]:
                CRC_t = CRC
                S_C_t = S_C
                slr_t = sum_log_rho
                p_t = p
                gap_t = rho_log_gap
                if partial:
                    # the observed rows of the observation model
                    CRC_m[:, :] = 0.0
                    S_C_m[:, :] = 0.0
                    slr_t = 0.0
                    p_t = 0
                    gap_t = 0.0
                    for s in range(p):
                        if obs_mask[t, s]:
                            for a in range(k):
                                for b in range(k):
                                    CRC_m[a, b] += CtR[a, s] * C[s, b]
                                    if penalised:
                                        S_C_m[a, b] += S_C_d[s, a, b]
                            slr_t += np.log(rho[s])
                            p_t += 1
                            if penalised:
                                gap_t += gap_d[s]
                    CRC_t = CRC_m
                    S_C_t = S_C_m
                if penalised:
                    # 3. observation penalty on x_t: prior N(mt, T1^{-1}), T1 = Pinv + S_C
                    if not steady:
                        for a in range(k):
                            for b in range(k):
                                T1[a, b] = Pinv[a, b] + S_C_t[a, b]
                        ok, ld_prior_prec = _spd_inverse(T1, Pt, Lw, Liw, strict)
                        if not ok:
                            break
                    _mv(S_C_t, m, g)
                    for a in range(k):
                        g[a] += h_cd[t, a]
                    _mv(Pt, g, v1)
                    for a in range(k):
                        mt[a] = m[a] - v1[a]
                    _mv(S_C_t, m, v2)
                    l_cd = (-0.5 * (ld_prior_prec + ld_P) - 0.5 * _dot(m, v2)
                            - _dot(m, h_cd[t]) + 0.5 * _dot(g, v1) - c_cd[t])
                else:  # prior N(mt, T1^{-1}) = N(m, P)
                    l_cd = 0.0
                    ld_prior_prec = -ld_P
                    for a in range(k):
                        mt[a] = m[a]
                    if not steady:
                        for a in range(k):
                            for b in range(k):
                                T1[a, b] = Pinv[a, b]
                # 4. information-form update with the mean observation model
                if not steady:
                    for a in range(k):
                        for b in range(k):
                            Lam[a, b] = T1[a, b] + CRC_t[a, b]
                    ok, ld_Lam = _spd_inverse(Lam, Sig, Lw, Liw, strict)
                    if not ok:
                        break
                    # a bitwise repeat of the last precision: the recursion is at its
                    # fixed point, the next observed step would repeat this one
                    steady = have_prev and _same(Lam, Lam_prev)
                    Lam_prev[:, :] = Lam
                    have_prev = True
                _mv(C, mt, e)
                quad = 0.0
                for s in range(p):
                    if partial and not obs_mask[t, s]:
                        e[s] = 0.0  # a missing entry: no residual
                        continue
                    e[s] = y_res[t, s] - e[s]
                    quad += rho[s] * e[s] * e[s]
                _mv(CtR, e, v1)  # C'R^{-1} e
                _mv(Sig, v1, v2)
                for a in range(k):
                    mu[a] = mt[a] + v2[a]
                quad -= _dot(v1, v2)
                l_y = -0.5 * (p_t * LOG_2PI - slr_t - ld_prior_prec + ld_Lam + quad)
                if penalised:
                    log_terms[t] = l_ab + l_cd + l_y + gap_t
                else:
                    log_terms[t] = l_y
                if penalised:  # the next transition penalty needs the precision
                    Sig_inv[:, :] = Lam
                ld_Sig = -ld_Lam
            else:
                log_terms[t] = l_ab
                mu[:] = m
                Sig[:, :] = P
                if penalised:
                    Sig_inv[:, :] = Pinv
                ld_Sig = ld_P
            if not strict and not np.isfinite(log_terms[t]):
                ok = False
                break
            if keep:
                filt_mean[t] = mu
                filt_cov[t] = Sig
                ld_filt[t] = ld_Sig
        if not ok:
            for t in range(starts[i], ends[i]):
                log_terms[t] = -np.inf


@njit(cache=True, nogil=True)
def vb_kalman_smoother(
    y_res, bu, h_ab, c_ab, h_cd, c_cd, observed, obs_mask, starts, ends,
    A, C, rho, S_A, S_C, S_C_d, rho_log_gap, gap_d, mu0, Sigma0, smooth,
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
    obs_mask : (N, p) bool, the observed entries of every step (a missing entry's
        ``y_res`` is ignored), or (0, p) when every entry of an observed step is.
    starts, ends : (n,) row offsets of each sequence (end exclusive).
    A, C, rho : posterior means of A (k, k), C (p, k) and the noise precisions (p,).
    S_A, S_C : (k, k) positive semi-definite uncertainty penalties.
    S_C_d : (p, k, k) the observation penalty of each output alone (used at steps
        with missing entries; (0, k, k) without ``obs_mask``).
    rho_log_gap : ``sum_s(<ln rho_s> - ln rho_mean_s) / 2`` (<= 0).
    gap_d : (p,) its terms, one per output (used at steps with missing entries).
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
    same = np.zeros(N if smooth else 0, dtype=np.bool_)
    _kalman_filter(y_res, bu, observed, obs_mask, starts, ends, A, C, rho, mu0, Sigma0,
                   True, h_ab, c_ab, h_cd, c_cd, S_A, S_C, S_C_d, rho_log_gap, gap_d,
                   True, True, smooth, log_terms, pred_mean, pred_cov, filt_mean, filt_cov,
                   ld_filt, sstar, cvec, ld_sstar, same)
    if not smooth:
        return (log_terms, pred_mean, pred_cov, filt_mean, filt_cov,
                omega, ups, cross, omega0, ups0, entropy)

    h_const = 0.5 * k * (1.0 + LOG_2PI)
    At = np.ascontiguousarray(A.T)
    T1 = np.empty((k, k))
    T2 = np.empty((k, k))
    v1 = np.empty(k)
    for i in range(n_seq):
        last = ends[i] - 1
        omega[last] = filt_mean[last]
        ups[last] = filt_cov[last]
        ent = h_const + 0.5 * ld_filt[last]
        # steady state (see _kalman_filter): when step t + 1 had the forward
        # covariances of step t (same[t + 1]) and mapped Ups_{t+1} to a bitwise equal
        # Ups_t, step t maps Ups_t to the same matrix again: its covariances are copied
        steady = False
        for t in range(last, starts[i] - 1, -1):
            if t > starts[i]:
                tgt_mean = omega[t - 1]
                tgt_cov = ups[t - 1]
            else:
                tgt_mean = omega0[i]
                tgt_cov = ups0[i]
            if steady and same[t + 1]:
                # J (in T1) and Cov(x_{t-1}, x_t) are those of step t + 1
                cross[t] = cross[t + 1]
                tgt_cov[:, :] = ups[t]
            else:
                # conditional q(x_{t-1} | x_t): precision Sigma*^{-1}, mean c + J x_t
                _mm(sstar[t], At, T1)  # J
                _mm(T1, ups[t], cross[t])  # J Ups_t = Cov(x_{t-1}, x_t)
                _mmT(cross[t], T1, T2)
                for a in range(k):
                    for b in range(a + 1):
                        val = sstar[t, a, b] + 0.5 * (T2[a, b] + T2[b, a])
                        tgt_cov[a, b] = val
                        tgt_cov[b, a] = val
                steady = _same(tgt_cov, ups[t])
            _mv(T1, omega[t], v1)
            for a in range(k):
                tgt_mean[a] = cvec[t, a] + v1[a]
            ent += h_const + 0.5 * ld_sstar[t]
        entropy[i] = ent

    return (log_terms, pred_mean, pred_cov, filt_mean, filt_cov,
            omega, ups, cross, omega0, ups0, entropy)


@njit(cache=True, nogil=True)
def lds_log_likelihood_terms(A, B, C, D, rho, Y, Us, Uo, starts, ends, observed, obs_mask,
                             mu0, Sigma0, out):
    """Write ``ln p(y_t | y_{1:t-1}, theta_c)`` into ``out[c, t]``.

    Parameters
    ----------
    A : (n_theta, k, k);  B : (n_theta, k, ds);  C : (n_theta, p, k);
    D : (n_theta, p, do);  rho : (n_theta, p) output noise precisions.
    Y : (N, p) outputs;  Us : (N, ds) state inputs;  Uo : (N, do) output inputs.
    starts, ends : (n,) row offsets of the sequences (end exclusive).
    observed : (N,) bool, the steps with at least one observed output.
    obs_mask : (N, p) bool, the observed outputs of every step, or (0, p) when every
        output of an observed step is observed.  With missing outputs the terms are
        those of the observed entries (``ln p(y_t,obs | y_{1:t-1},obs, theta)``, 0 at a
        step with nothing observed); a missing entry of ``Y`` is never read.
    mu0, Sigma0 : (k,), (k, k) prior of the auxiliary state x_0 of every sequence.
    out : (n_theta, N) output.  Every row of a sequence whose filter broke down
        (non-positive-definite covariance, overflow, rho <= 0) is set to -inf.
    """
    n_theta = A.shape[0]
    N, p = Y.shape
    k = A.shape[1]
    ds = Us.shape[1]
    do = Uo.shape[1]
    # the input effects B us_t and y_t - D uo_t of parameter set c (computed once
    # when there are no inputs)
    bu = np.zeros((N, k))
    y_res = Y if do == 0 else np.empty((N, p))
    no_penalty_d = np.empty((0, k, k))
    no_penalty_rows = np.empty((0, k))
    no_penalty_terms = np.empty(0)
    no_penalty = np.empty((k, k))
    no_beliefs = np.empty((0, k, k))
    no_flags = np.empty(0, dtype=np.bool_)
    for c in range(n_theta):
        ok_theta = True
        for s in range(p):
            if not rho[c, s] > 0.0:
                ok_theta = False
        if not ok_theta:
            for i in range(starts.shape[0]):
                for t in range(starts[i], ends[i]):
                    out[c, t] = -np.inf
            continue
        for t in range(N):
            if ds > 0:
                for a in range(k):
                    acc = 0.0
                    for b in range(ds):
                        acc += B[c, a, b] * Us[t, b]
                    bu[t, a] = acc
            if do > 0:
                for s in range(p):
                    acc = 0.0
                    for b in range(do):
                        acc += D[c, s, b] * Uo[t, b]
                    y_res[t, s] = Y[t, s] - acc
        _kalman_filter(y_res, bu, observed, obs_mask, starts, ends, A[c], C[c], rho[c], mu0,
                       Sigma0, False, no_penalty_rows, no_penalty_terms, no_penalty_rows,
                       no_penalty_terms, no_penalty, no_penalty, no_penalty_d, 0.0,
                       no_penalty_terms,
                       False, False, False, out[c], no_penalty_rows, no_beliefs,
                       no_penalty_rows, no_beliefs, no_penalty_terms, no_beliefs,
                       no_penalty_rows, no_penalty_terms, no_flags)
    return out


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
