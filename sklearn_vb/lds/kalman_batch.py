"""The VB Kalman smoother of many equal-length, fully observed sequences at once.

In :func:`~sklearn_vb.lds.kalman.vb_kalman_smoother` the covariance recursion (the
predicted, filtered and smoothed covariances, the gains and every log-determinant)
depends on the parameters' expected statistics and on which outputs are observed, never
on the observations or the inputs.  Sequences of the same length whose every output is
observed therefore share one covariance recursion; only their means differ, and the
mean recursions of ``S`` such sequences are affine maps of ``(S, k)`` blocks: one
``(S, k) x (k, k)`` matrix product per map and time step instead of ``S``
matrix-vector products, and the ``O(k^3)`` factorisations once per step instead of
once per sequence and step.

* :func:`covariance_pass` runs the shared recursion of a group of length ``T``: the
  same steps, in the same order and with the same helpers, as the per-sequence kernel,
  so its covariances and log-determinants are bitwise those of that kernel;
* :func:`batched_means` runs the mean recursions of the group's sequences on it, with
  every map applied as one BLAS product (``np.dot`` of two 2-D arrays, which numba
  hands to BLAS); it differs from the per-sequence kernel only in the order of the
  sums inside those products (round-off).

Sequences with missing outputs or unobserved steps keep the per-sequence kernel (their
covariance recursion depends on their own pattern).  The dispatch is in
:func:`sklearn_vb.lds.inference.smooth_states`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._core.kernels.constants import LOG_2PI
from .._core.kernels.linalg import mm as _mm
from .._core.kernels.linalg import mmT as _mmT
from .._core.kernels.linalg import spd_inverse_into

__all__ = ["batched_means", "covariance_pass"]


@njit(cache=True, nogil=True)
def covariance_pass(T, A, C, rho, S_A, S_C, Sigma0, smooth):
    """The covariance recursion of :func:`~sklearn_vb.lds.kalman.vb_kalman_smoother`
    for ``T`` fully observed steps (shared by every sequence of that length).

    Returns, per step ``t`` (arrays of length ``T``), the transposes of the maps the
    mean recursions apply (``StT``: ``Lam1^-1``, ``Lam1T``, ``sstarT``, ``PtT``,
    ``SigT``: the filtered covariance, ``JT``: the smoother gain ``sstar A'``), the
    covariances ``pred_cov``, ``filt_cov``, ``ups``, ``cross``, the step's constant
    parts of the log terms ``const_ab``, ``const_cd`` and ``ld_prior_prec``,
    ``ld_Lam``, and the smoothed covariance of ``x_0`` and the entropy of
    ``q(x_{0:T})`` (zeros unless ``smooth``).
    """
    k = A.shape[0]
    p = C.shape[0]
    CtR = np.empty((k, p))
    for j in range(k):
        for s in range(p):
            CtR[j, s] = C[s, j] * rho[s]
    CRC = np.empty((k, k))
    _mm(CtR, C, CRC)
    At = np.ascontiguousarray(A.T)
    AtA = np.empty((k, k))
    _mm(At, A, AtA)

    StT = np.empty((T, k, k))
    Lam1T = np.empty((T, k, k))
    sstar = np.empty((T, k, k))
    sstarT = np.empty((T, k, k))
    PtT = np.empty((T, k, k))
    SigT = np.empty((T, k, k))
    pred_cov = np.empty((T, k, k))
    filt_cov = np.empty((T, k, k))
    const_ab = np.empty(T)
    const_cd = np.empty(T)
    ld_prior = np.empty(T)
    ld_lam = np.empty(T)
    ld_sstar = np.empty(T)

    Sig = np.empty((k, k))
    Sig_inv = np.empty((k, k))
    Lam1 = np.empty((k, k))
    St = np.empty((k, k))
    Lam = np.empty((k, k))
    Pinv = np.empty((k, k))
    Pt = np.empty((k, k))
    T1 = np.empty((k, k))
    P = np.empty((k, k))
    Lw = np.empty((k, k))
    Liw = np.empty((k, k))
    for a in range(k):
        for b in range(k):
            Sig[a, b] = 0.5 * (Sigma0[a, b] + Sigma0[b, a])
    ld_Sig = spd_inverse_into(Sig, Sig_inv, Lw, Liw)
    for t in range(T):
        # 1. transition penalty on x_{t-1}
        for a in range(k):
            for b in range(k):
                Lam1[a, b] = Sig_inv[a, b] + S_A[a, b]
        ld_Lam1 = spd_inverse_into(Lam1, St, Lw, Liw)
        const_ab[t] = -0.5 * (ld_Lam1 + ld_Sig)
        if smooth:
            for a in range(k):
                for b in range(k):
                    T1[a, b] = Lam1[a, b] + AtA[a, b]
            ld_sstar[t] = -spd_inverse_into(T1, sstar[t], Lw, Liw)
        # 2. predict: P = A St A' + I
        _mm(A, St, T1)
        _mmT(T1, A, P)
        for a in range(k):
            P[a, a] += 1.0
        for a in range(k):
            for b in range(a):
                val = 0.5 * (P[a, b] + P[b, a])
                P[a, b] = val
                P[b, a] = val
        pred_cov[t] = P
        ld_P = spd_inverse_into(P, Pinv, Lw, Liw)
        # 3. observation penalty on x_t
        for a in range(k):
            for b in range(k):
                T1[a, b] = Pinv[a, b] + S_C[a, b]
        ld_prior_prec = spd_inverse_into(T1, Pt, Lw, Liw)
        const_cd[t] = -0.5 * (ld_prior_prec + ld_P)
        ld_prior[t] = ld_prior_prec
        # 4. information-form update
        for a in range(k):
            for b in range(k):
                Lam[a, b] = T1[a, b] + CRC[a, b]
        ld_Lam = spd_inverse_into(Lam, Sig, Lw, Liw)
        ld_lam[t] = ld_Lam
        filt_cov[t] = Sig
        Sig_inv[:, :] = Lam
        ld_Sig = -ld_Lam
        StT[t] = St.T
        Lam1T[t] = Lam1.T
        PtT[t] = Pt.T
        SigT[t] = Sig.T
        if smooth:
            sstarT[t] = sstar[t].T

    JT = np.empty((T if smooth else 0, k, k))
    ups = np.zeros((T, k, k))
    cross = np.zeros((T, k, k))
    ups0 = np.zeros((k, k))
    entropy = 0.0
    if smooth:
        h_const = 0.5 * k * (1.0 + LOG_2PI)
        J = np.empty((k, k))
        T2 = np.empty((k, k))
        ups[T - 1] = filt_cov[T - 1]
        entropy = h_const + 0.5 * (-ld_lam[T - 1])
        for t in range(T - 1, -1, -1):
            tgt = ups[t - 1] if t > 0 else ups0
            _mm(sstar[t], At, J)
            _mm(J, ups[t], cross[t])
            _mmT(cross[t], J, T2)
            for a in range(k):
                for b in range(a + 1):
                    val = sstar[t, a, b] + 0.5 * (T2[a, b] + T2[b, a])
                    tgt[a, b] = val
                    tgt[b, a] = val
            JT[t] = J.T
            entropy += h_const + 0.5 * ld_sstar[t]
    return (StT, Lam1T, sstarT, PtT, SigT, JT, pred_cov, filt_cov, ups, cross,
            const_ab, const_cd, ld_prior, ld_lam, ups0, entropy)


@njit(cache=True, nogil=True, inline="always")
def _row_terms(x, Sx, h, g, v, c, out):
    """``out[s] += -x_s'Sx_s / 2 - x_s'h_s + g_s'v_s / 2 - c_s`` for every row ``s``:
    the sequence-dependent part of a penalty's log term."""
    S, k = x.shape
    for s in range(S):
        q = 0.0
        lin = 0.0
        gv = 0.0
        for a in range(k):
            q += x[s, a] * Sx[s, a]
            lin += x[s, a] * h[s, a]
            gv += g[s, a] * v[s, a]
        out[s] += -0.5 * q - lin + 0.5 * gv - c[s]


@njit(cache=True, nogil=True)
def batched_means(y_res, bu, Atbu, h_ab, c_ab, h_cd, c_cd, A, C, rho, S_A, S_C,
                  rho_log_gap, mu0, StT, Lam1T, sstarT, PtT, SigT, JT, const_ab,
                  const_cd, ld_prior, ld_lam, smooth):
    """The mean recursions of ``S`` sequences of length ``T`` sharing the covariance
    recursion of :func:`covariance_pass` (whose per-step outputs are passed on).

    ``y_res`` (T, S, p), ``bu``, ``h_ab``, ``h_cd`` (T, S, k), ``c_ab``, ``c_cd`` (T, S)
    are the per-step terms of :func:`~sklearn_vb.lds.kalman.vb_kalman_smoother` by
    time step and sequence; ``Atbu`` (T, S, k) holds ``A' bu_t`` (rows ``bu_t' A``).
    Returns ``log_terms`` (T, S), ``pred_mean``, ``filt_mean``, ``omega`` (T, S, k) and
    ``omega0`` (S, k) (``omega`` zeros unless ``smooth``).
    """
    T, S, p = y_res.shape
    k = A.shape[0]
    AT = np.ascontiguousarray(A.T)
    CT = np.ascontiguousarray(C.T)
    S_AT = np.ascontiguousarray(S_A.T)
    S_CT = np.ascontiguousarray(S_C.T)
    CtRT = np.empty((p, k))  # (C' R^-1)' = R^-1 C
    for s in range(p):
        for j in range(k):
            CtRT[s, j] = C[s, j] * rho[s]
    sum_log_rho = 0.0
    for s in range(p):
        sum_log_rho += np.log(rho[s])
    const_y = -0.5 * (p * LOG_2PI - sum_log_rho)

    log_terms = np.zeros((T, S))
    pred_mean = np.empty((T, S, k))
    filt_mean = np.empty((T, S, k))
    omega = np.zeros((T, S, k))
    omega0 = np.zeros((S, k))
    cvec = np.empty((T if smooth else 0, S, k))
    mu = np.empty((S, k))
    for s in range(S):
        mu[s] = mu0
    Sx = np.empty((S, k))
    g = np.empty((S, k))
    v1 = np.empty((S, k))
    v2 = np.empty((S, k))
    mut = np.empty((S, k))
    mt = np.empty((S, k))
    e = np.empty((S, p))
    lt = np.empty(S)
    for t in range(T):
        for s in range(S):
            lt[s] = const_ab[t] + const_cd[t] + rho_log_gap
        # 1. transition penalty on x_{t-1}: mut = mu - St (S_A mu + h_ab)
        np.dot(mu, S_AT, Sx)
        for s in range(S):
            for a in range(k):
                g[s, a] = Sx[s, a] + h_ab[t, s, a]
        np.dot(g, StT[t], v1)
        for s in range(S):
            for a in range(k):
                mut[s, a] = mu[s, a] - v1[s, a]
        _row_terms(mu, Sx, h_ab[t], g, v1, c_ab[t], lt)
        if smooth:  # the RTS conditional's offset c = sstar (Lam1 mut - A' bu)
            np.dot(mut, Lam1T[t], v1)
            for s in range(S):
                for a in range(k):
                    v1[s, a] -= Atbu[t, s, a]
            np.dot(v1, sstarT[t], cvec[t])
        # 2. predict: m = A mut + bu
        m = pred_mean[t]
        np.dot(mut, AT, m)
        for s in range(S):
            for a in range(k):
                m[s, a] += bu[t, s, a]
        # 3. observation penalty on x_t: mt = m - Pt (S_C m + h_cd)
        np.dot(m, S_CT, Sx)
        for s in range(S):
            for a in range(k):
                g[s, a] = Sx[s, a] + h_cd[t, s, a]
        np.dot(g, PtT[t], v1)
        for s in range(S):
            for a in range(k):
                mt[s, a] = m[s, a] - v1[s, a]
        _row_terms(m, Sx, h_cd[t], g, v1, c_cd[t], lt)
        # 4. update: e = y - C mt, mu = mt + Sig C'R^-1 e
        np.dot(mt, CT, e)
        for s in range(S):
            quad = 0.0
            for j in range(p):
                d = y_res[t, s, j] - e[s, j]
                e[s, j] = d
                quad += rho[j] * d * d
            lt[s] += -0.5 * quad
        np.dot(e, CtRT, v1)
        np.dot(v1, SigT[t], v2)
        mu_t = filt_mean[t]
        for s in range(S):
            q = 0.0
            for a in range(k):
                mu_t[s, a] = mt[s, a] + v2[s, a]
                q += v1[s, a] * v2[s, a]
            log_terms[t, s] = lt[s] + const_y - 0.5 * (-ld_prior[t] + ld_lam[t] - q)
        mu[:, :] = mu_t
    if smooth:
        omega[T - 1] = filt_mean[T - 1]
        for t in range(T - 1, -1, -1):
            tgt = omega[t - 1] if t > 0 else omega0
            np.dot(omega[t], JT[t], tgt)
            for s in range(S):
                for a in range(k):
                    tgt[s, a] += cvec[t, s, a]
    return log_terms, pred_mean, filt_mean, omega, omega0


#: The batched path runs for groups of at least this many equal-length, fully observed
#: sequences, with at least ``BATCH_MIN_STATES`` states (below either, the per-sequence
#: kernel is as fast or faster: see benchmarks/results/kalman_batch.md).
BATCH_MIN_SEQUENCES = 8
BATCH_MIN_STATES = 8


def batch_groups(observed, obs_mask, starts, ends, k, min_sequences=None, min_states=None):
    """The groups of sequences the batched path takes: a list of index arrays (into
    ``starts``), each of at least ``min_sequences`` fully observed sequences of one
    length (empty when ``k < min_states``)."""
    min_sequences = BATCH_MIN_SEQUENCES if min_sequences is None else min_sequences
    min_states = BATCH_MIN_STATES if min_states is None else min_states
    n = starts.shape[0]
    if k < min_states or n < min_sequences:
        return []
    lengths = ends - starts
    full = np.asarray(observed, dtype=np.bool_)
    if obs_mask.shape[0]:
        full = full & obs_mask.all(axis=1)
    # the number of rows of each sequence with something missing (sequences are
    # non-empty and stored in order, as the estimator's validation makes them)
    if not np.all(lengths > 0):
        return []
    gaps = np.add.reduceat((~full).astype(np.int64), starts) if full.size else np.zeros(n)
    eligible = np.flatnonzero(gaps == 0)
    if eligible.size < min_sequences:
        return []
    by_length = np.unique(lengths[eligible], return_inverse=True)[1]
    groups = [eligible[by_length == g] for g in range(int(by_length.max()) + 1)]
    return [grp for grp in groups if grp.size >= min_sequences]


def vb_kalman_smoother_grouped(y_res, bu, h_ab, c_ab, h_cd, c_cd, observed, obs_mask,
                               starts, ends, A, C, rho, S_A, S_C, S_C_d, rho_log_gap,
                               gap_d, mu0, Sigma0, smooth, groups=None):
    """:func:`~sklearn_vb.lds.kalman.vb_kalman_smoother` (same arguments and results)
    with the sequences of ``groups`` (default :func:`batch_groups`) run through the
    batched path and every other sequence through the per-sequence kernel.  Without
    a group it is that kernel's call itself."""
    from .kalman import vb_kalman_smoother

    k = A.shape[0]
    if groups is None:
        groups = batch_groups(observed, obs_mask, starts, ends, k)
    if not groups:
        return vb_kalman_smoother(y_res, bu, h_ab, c_ab, h_cd, c_cd, observed, obs_mask,
                                  starts, ends, A, C, rho, S_A, S_C, S_C_d, rho_log_gap,
                                  gap_d, mu0, Sigma0, smooth)
    N, p = y_res.shape
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
    full = (log_terms, pred_mean, pred_cov, filt_mean, filt_cov, omega, ups, cross)

    rest = np.ones(n_seq, dtype=bool)
    for grp in groups:
        rest[grp] = False
    rest = np.flatnonzero(rest)
    if rest.size:
        lengths = ends[rest] - starts[rest]
        rows = np.concatenate([np.arange(starts[i], ends[i]) for i in rest])
        sub_ends = np.cumsum(lengths)
        mask = obs_mask[rows] if obs_mask.shape[0] else obs_mask
        out = vb_kalman_smoother(
            y_res[rows], bu[rows], h_ab[rows], c_ab[rows], h_cd[rows], c_cd[rows],
            observed[rows], np.ascontiguousarray(mask), sub_ends - lengths, sub_ends,
            A, C, rho, S_A, S_C, S_C_d, rho_log_gap, gap_d, mu0, Sigma0, smooth)
        for dest, src in zip(full, out[:8]):
            dest[rows] = src
        omega0[rest], ups0[rest], entropy[rest] = out[8], out[9], out[10]

    At_rows = np.ascontiguousarray(A)  # rows bu_t' A are (A' bu_t)'
    for grp in groups:
        T = int(ends[grp[0]] - starts[grp[0]])
        idx = starts[grp][None, :] + np.arange(T)[:, None]  # (T, S) rows
        (StT, Lam1T, sstarT, PtT, SigT, JT, P, Sig, U, X, const_ab, const_cd, ld_prior,
         ld_lam, U0, ent) = covariance_pass(T, A, C, rho, S_A, S_C, Sigma0, smooth)
        bu_g = bu[idx]
        lt, pm, fm, om, om0 = batched_means(
            y_res[idx], bu_g, bu_g @ At_rows, h_ab[idx], c_ab[idx], h_cd[idx], c_cd[idx],
            A, C, rho, S_A, S_C, rho_log_gap, mu0, StT, Lam1T, sstarT, PtT, SigT, JT,
            const_ab, const_cd, ld_prior, ld_lam, smooth)
        log_terms[idx], pred_mean[idx], filt_mean[idx] = lt, pm, fm
        pred_cov[idx] = P[:, None]
        filt_cov[idx] = Sig[:, None]
        if smooth:
            omega[idx] = om
            ups[idx] = U[:, None]
            cross[idx] = X[:, None]
            omega0[grp] = om0
            ups0[grp] = U0
            entropy[grp] = ent
    return (log_terms, pred_mean, pred_cov, filt_mean, filt_cov, omega, ups, cross,
            omega0, ups0, entropy)
