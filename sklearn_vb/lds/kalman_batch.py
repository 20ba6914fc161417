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
from .kalman import _same, vb_kalman_smoother

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

    The steady state is detected as in the per-sequence kernel (a filtered
    precision bitwise equal to the previous one; a smoothed covariance mapped to
    itself): the following steps are copies, bitwise what recomputing them gives.
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
    same = np.zeros(T, dtype=np.bool_)

    Sig = np.empty((k, k))
    Sig_inv = np.empty((k, k))
    Lam1 = np.empty((k, k))
    St = np.empty((k, k))
    Lam = np.empty((k, k))
    Lam_prev = np.empty((k, k))
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
    steady = False
    for t in range(T):
        if steady:
            same[t] = True
            StT[t] = StT[t - 1]
            Lam1T[t] = Lam1T[t - 1]
            sstar[t] = sstar[t - 1]
            sstarT[t] = sstarT[t - 1]
            PtT[t] = PtT[t - 1]
            SigT[t] = SigT[t - 1]
            pred_cov[t] = pred_cov[t - 1]
            filt_cov[t] = filt_cov[t - 1]
            const_ab[t] = const_ab[t - 1]
            const_cd[t] = const_cd[t - 1]
            ld_prior[t] = ld_prior[t - 1]
            ld_lam[t] = ld_lam[t - 1]
            ld_sstar[t] = ld_sstar[t - 1]
            continue
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
        steady = t > 0 and _same(Lam, Lam_prev)
        Lam_prev[:, :] = Lam
        Sig_inv[:, :] = Lam
        ld_Sig = -ld_Lam
        StT[t] = St.T
        Lam1T[t] = Lam1.T
        PtT[t] = Pt.T
        SigT[t] = Sig.T
        if smooth:
            sstarT[t] = sstar[t].T

    JT = np.empty((T if smooth else 0, k, k))
    ups = np.zeros((T if smooth else 0, k, k))
    cross = np.zeros((T if smooth else 0, k, k))
    ups0 = np.zeros((k, k))
    entropy = 0.0
    if smooth:
        h_const = 0.5 * k * (1.0 + LOG_2PI)
        J = np.empty((k, k))
        T2 = np.empty((k, k))
        ups[T - 1] = filt_cov[T - 1]
        entropy = h_const + 0.5 * (-ld_lam[T - 1])
        steady = False
        for t in range(T - 1, -1, -1):
            tgt = ups[t - 1] if t > 0 else ups0
            if steady and same[t + 1]:
                JT[t] = JT[t + 1]
                cross[t] = cross[t + 1]
                tgt[:, :] = ups[t]
            else:
                _mm(sstar[t], At, J)
                _mm(J, ups[t], cross[t])
                _mmT(cross[t], J, T2)
                for a in range(k):
                    for b in range(a + 1):
                        val = sstar[t, a, b] + 0.5 * (T2[a, b] + T2[b, a])
                        tgt[a, b] = val
                        tgt[b, a] = val
                JT[t] = J.T
                steady = _same(tgt, ups[t])
            entropy += h_const + 0.5 * ld_sstar[t]
    return (StT, Lam1T, sstarT, PtT, SigT, JT, pred_cov, filt_cov, ups, cross,
            const_ab, const_cd, ld_prior, ld_lam, ups0, entropy)


@njit(cache=True, nogil=True, inline="always")
def _row_terms(x, Sx, h, rows, t, g, v, c, out):
    """``out[s] += -x_s'Sx_s / 2 - x_s'h_s + g_s'v_s / 2 - c_s`` for every sequence
    ``s`` (``h``, ``c`` read at row ``rows[s] + t``): the sequence-dependent part of a
    penalty's log term."""
    S, k = x.shape
    for s in range(S):
        r = rows[s] + t
        q = 0.0
        lin = 0.0
        gv = 0.0
        for a in range(k):
            q += x[s, a] * Sx[s, a]
            lin += x[s, a] * h[r, a]
            gv += g[s, a] * v[s, a]
        out[s] += -0.5 * q - lin + 0.5 * gv - c[r]


@njit(cache=True, nogil=True)
def batched_means(seq_starts, y_res, bu, h_ab, c_ab, h_cd, c_cd, A, C, rho, S_A, S_C,
                  rho_log_gap, mu0, StT, Lam1T, sstarT, PtT, SigT, JT, const_ab,
                  const_cd, ld_prior, ld_lam, smooth, log_terms, pred_mean, filt_mean,
                  omega, omega0):
    """The mean recursions of the ``S`` sequences starting at rows ``seq_starts`` (S,),
    all of length ``T``, which share the covariance recursion of
    :func:`covariance_pass` (whose per-step outputs are passed on).

    ``y_res`` ... ``c_cd`` are the (N, ...) per-row terms of
    :func:`~sklearn_vb.lds.kalman.vb_kalman_smoother`; the rows of these sequences of
    ``log_terms``, ``pred_mean``, ``filt_mean`` and (with ``smooth``) ``omega`` are
    written, and ``omega0`` (S, k) gets the smoothed means of their ``x_0``.  The
    means of step t are held as (S, k) blocks, so every map is one BLAS product.
    """
    S = seq_starts.shape[0]
    T = const_ab.shape[0]
    p = y_res.shape[1]
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

    cvec = np.empty((T if smooth else 0, S, k))
    mu = np.empty((S, k))
    for s in range(S):
        mu[s] = mu0
    Sx = np.empty((S, k))
    g = np.empty((S, k))
    v1 = np.empty((S, k))
    v2 = np.empty((S, k))
    mut = np.empty((S, k))
    m = np.empty((S, k))
    mt = np.empty((S, k))
    bt = np.empty((S, k))
    Atb = np.empty((S, k))
    e = np.empty((S, p))
    lt = np.empty(S)
    for t in range(T):
        for s in range(S):
            lt[s] = const_ab[t] + const_cd[t] + rho_log_gap
            r = seq_starts[s] + t
            for a in range(k):
                bt[s, a] = bu[r, a]
        # 1. transition penalty on x_{t-1}: mut = mu - St (S_A mu + h_ab)
        np.dot(mu, S_AT, Sx)
        for s in range(S):
            r = seq_starts[s] + t
            for a in range(k):
                g[s, a] = Sx[s, a] + h_ab[r, a]
        np.dot(g, StT[t], v1)
        for s in range(S):
            for a in range(k):
                mut[s, a] = mu[s, a] - v1[s, a]
        _row_terms(mu, Sx, h_ab, seq_starts, t, g, v1, c_ab, lt)
        if smooth:  # the RTS conditional's offset c = sstar (Lam1 mut - A' bu)
            np.dot(mut, Lam1T[t], v1)
            np.dot(bt, A, Atb)  # rows bu' A = (A' bu)'
            for s in range(S):
                for a in range(k):
                    v1[s, a] -= Atb[s, a]
            np.dot(v1, sstarT[t], cvec[t])
        # 2. predict: m = A mut + bu
        np.dot(mut, AT, m)
        for s in range(S):
            r = seq_starts[s] + t
            for a in range(k):
                m[s, a] += bt[s, a]
                pred_mean[r, a] = m[s, a]
        # 3. observation penalty on x_t: mt = m - Pt (S_C m + h_cd)
        np.dot(m, S_CT, Sx)
        for s in range(S):
            r = seq_starts[s] + t
            for a in range(k):
                g[s, a] = Sx[s, a] + h_cd[r, a]
        np.dot(g, PtT[t], v1)
        for s in range(S):
            for a in range(k):
                mt[s, a] = m[s, a] - v1[s, a]
        _row_terms(m, Sx, h_cd, seq_starts, t, g, v1, c_cd, lt)
        # 4. update: e = y - C mt, mu = mt + Sig C'R^-1 e
        np.dot(mt, CT, e)
        for s in range(S):
            r = seq_starts[s] + t
            quad = 0.0
            for j in range(p):
                d = y_res[r, j] - e[s, j]
                e[s, j] = d
                quad += rho[j] * d * d
            lt[s] += -0.5 * quad
        np.dot(e, CtRT, v1)
        np.dot(v1, SigT[t], v2)
        for s in range(S):
            r = seq_starts[s] + t
            q = 0.0
            for a in range(k):
                val = mt[s, a] + v2[s, a]
                mu[s, a] = val
                filt_mean[r, a] = val
                q += v1[s, a] * v2[s, a]
            log_terms[r] = lt[s] + const_y - 0.5 * (-ld_prior[t] + ld_lam[t] - q)
    if smooth:
        # mu holds the last filtered means, the last smoothed ones
        for t in range(T - 1, -1, -1):
            np.dot(mu, JT[t], v2)
            for s in range(S):
                r = seq_starts[s] + t
                for a in range(k):
                    omega[r, a] = mu[s, a]
                    v2[s, a] += cvec[t, s, a]
            mu[:, :] = v2
        omega0[:, :] = mu


@njit(cache=True, nogil=True)
def _scatter_covariances(seq_starts, pred_cov, filt_cov, ups, cross, P, Sig, U, X, smooth):
    """Copy the shared per-step covariances to the rows of every sequence."""
    T = P.shape[0]
    for s in range(seq_starts.shape[0]):
        for t in range(T):
            r = seq_starts[s] + t
            pred_cov[r] = P[t]
            filt_cov[r] = Sig[t]
            if smooth:
                ups[r] = U[t]
                cross[r] = X[t]

#: The batched path runs for groups of at least this many equal-length, fully observed
#: sequences, with at least ``BATCH_MIN_STATES`` states: with two sequences the
#: per-sequence kernel is about as fast, from four on the batched path is faster (the
#: ``machine-kalman-batch-crossover`` rows of benchmarks/results/machine.md).  Below
#: eight states the per-sequence kernel is kept, although the batched path pays there
#: too from four sequences on.
BATCH_MIN_SEQUENCES = 4
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
    # the number of rows of each sequence with something missing
    missing = np.concatenate([[0], np.cumsum(~full)])
    gaps = missing[ends] - missing[starts]
    eligible = np.flatnonzero((gaps == 0) & (lengths > 0))
    if eligible.size < min_sequences:
        return []
    by_length = np.unique(lengths[eligible], return_inverse=True)[1]
    groups = [eligible[by_length == g] for g in range(int(by_length.max()) + 1)]
    return [grp for grp in groups if grp.size >= min_sequences]


def vb_kalman_smoother_grouped(y_res, bu, h_ab, c_ab, h_cd, c_cd, observed, obs_mask,
                               starts, ends, A, C, rho, S_A, S_C, S_C_d, rho_log_gap,
                               gap_d, mu0, Sigma0, smooth, groups=None, shared=False):
    """:func:`~sklearn_vb.lds.kalman.vb_kalman_smoother` (same arguments and results)
    with the sequences of ``groups`` (default :func:`batch_groups`) run through the
    batched path and every other sequence through the per-sequence kernel.  Without
    a group it is that kernel's call itself.

    A twelfth result, ``cov_rows``, is None unless ``shared`` and a group ran: the
    four covariance results (``pred_cov``, ``filt_cov``, ``ups``, ``cross``) are then
    tables (M, k, k) holding each distinct covariance once, row ``t``'s at
    ``cov_rows[t]`` (copying a group's shared covariances to all its rows is what
    the batched path spends most of its time on otherwise).
    """
    k = A.shape[0]
    if groups is None:
        groups = batch_groups(observed, obs_mask, starts, ends, k)
    if not groups:
        return vb_kalman_smoother(y_res, bu, h_ab, c_ab, h_cd, c_cd, observed, obs_mask,
                                  starts, ends, A, C, rho, S_A, S_C, S_C_d, rho_log_gap,
                                  gap_d, mu0, Sigma0, smooth) + (None,)
    N, p = y_res.shape
    n_seq = starts.shape[0]
    rest = np.ones(n_seq, dtype=bool)
    for grp in groups:
        rest[grp] = False
    rest = np.flatnonzero(rest)
    rest_lengths = ends[rest] - starts[rest]
    # the covariance results: one row per row, or (shared) a table of the rest's rows
    # followed by each group's steps
    n_cov = N
    cov_rows = None
    if shared:
        n_cov = int(rest_lengths.sum()) + sum(int(ends[g[0]] - starts[g[0]]) for g in groups)
        cov_rows = np.empty(N, dtype=np.int64)
    # every row is written below (the smoothed moments only with ``smooth``)
    alloc = np.empty if smooth else np.zeros
    log_terms = np.empty(N)
    pred_mean = np.empty((N, k))
    pred_cov = np.empty((n_cov, k, k))
    filt_mean = np.empty((N, k))
    filt_cov = np.empty((n_cov, k, k))
    omega = alloc((N, k))
    ups = alloc((n_cov, k, k))
    cross = alloc((n_cov, k, k))
    omega0 = alloc((n_seq, k))
    ups0 = alloc((n_seq, k, k))
    entropy = alloc(n_seq)

    offset = 0
    if rest.size:
        sub_ends = np.cumsum(rest_lengths)
        rows = np.arange(sub_ends[-1]) + np.repeat(starts[rest] - (sub_ends - rest_lengths),
                                                   rest_lengths)
        mask = obs_mask[rows] if obs_mask.shape[0] else obs_mask
        out = vb_kalman_smoother(
            y_res[rows], bu[rows], h_ab[rows], c_ab[rows], h_cd[rows], c_cd[rows],
            observed[rows], np.ascontiguousarray(mask), sub_ends - rest_lengths, sub_ends,
            A, C, rho, S_A, S_C, S_C_d, rho_log_gap, gap_d, mu0, Sigma0, smooth)
        for dest, src in zip((log_terms, pred_mean, filt_mean, omega),
                             (out[0], out[1], out[3], out[5])):
            dest[rows] = src
        if shared:
            offset = rows.size
            cov_rows[rows] = np.arange(offset)
            for dest, src in zip((pred_cov, filt_cov, ups, cross),
                                 (out[2], out[4], out[6], out[7])):
                dest[:offset] = src
        else:
            for dest, src in zip((pred_cov, filt_cov, ups, cross),
                                 (out[2], out[4], out[6], out[7])):
                dest[rows] = src
        omega0[rest], ups0[rest], entropy[rest] = out[8], out[9], out[10]

    for grp in groups:
        T = int(ends[grp[0]] - starts[grp[0]])
        seq_starts = np.ascontiguousarray(starts[grp], dtype=np.int64)
        (StT, Lam1T, sstarT, PtT, SigT, JT, P, Sig, U, X, const_ab, const_cd, ld_prior,
         ld_lam, U0, ent) = covariance_pass(T, A, C, rho, S_A, S_C, Sigma0, smooth)
        om0 = np.zeros((grp.size, k))
        batched_means(seq_starts, y_res, bu, h_ab, c_ab, h_cd, c_cd, A, C, rho, S_A, S_C,
                      rho_log_gap, mu0, StT, Lam1T, sstarT, PtT, SigT, JT, const_ab,
                      const_cd, ld_prior, ld_lam, smooth, log_terms, pred_mean, filt_mean,
                      omega, om0)
        if shared:
            cov_rows[seq_starts[None, :] + np.arange(T)[:, None]] = (
                offset + np.arange(T)[:, None])
            for dest, src in zip((pred_cov, filt_cov, ups, cross), (P, Sig, U, X)):
                if src.shape[0]:
                    dest[offset:offset + T] = src
            offset += T
        else:
            _scatter_covariances(seq_starts, pred_cov, filt_cov, ups, cross, P, Sig, U, X,
                                 smooth)
        if smooth:
            omega0[grp] = om0
            ups0[grp] = U0
            entropy[grp] = ent
    return (log_terms, pred_mean, pred_cov, filt_mean, filt_cov, omega, ups, cross,
            omega0, ups0, entropy, cov_rows)
