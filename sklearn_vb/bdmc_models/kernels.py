"""Compiled likelihoods and exact tempered conditionals of the three latent-factor models
of Grosse, Ghahramani & Adams (2015) (:mod:`sklearn_vb.bdmc_models`).

Every model writes ``Y (n, D) = Z W + noise`` with spherical noise of variance
``noise_var``; the kernels take a batch of C parameter draws ``W (C, K, D)`` (chains,
particles, live points) and loop over them and over the cases, so that a scorer's
iteration costs one call whatever the batch.  ``beta (n,)`` tempers each case's
observation factor (1 keeps it, 0 drops it).  Random draws come in as arrays made by
the caller's NumPy Generator (uniforms for the discrete draws, standard normals for the
Gaussian ones), so the random streams are those of the NumPy formulation.

* clustering: one-hot latents, the labels summed over the K components;
* binary attributes: the 2^K attribute vectors of a case enumerated in the order
  ``bit k of the index = attribute k``; the means ``c A`` and their inner products with
  the case advance along that order by one row of ``A`` per configuration (the row of
  the lowest set bit), so a case costs O(2^K), not O(2^K D);
* low rank: the latent row of a case integrated (likelihood) or drawn (conditional) in
  its K-dimensional space (Woodbury and the matrix determinant lemma);
* the weights given the latents: Gaussian, one K x K precision shared by the D columns.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._core.kernels.linalg import chol_into, log_sum_exp_range, mmT
from .._core.kernels.sampling import categorical_from_logits

__all__ = ["clustering_log_likelihood", "clustering_sample_labels", "clustering_log_conditional",
           "binary_log_likelihood", "binary_sample_attributes", "binary_log_conditional",
           "low_rank_log_likelihood", "low_rank_sample_latents", "low_rank_log_conditional",
           "weights_sample", "weights_log_conditional", "complete_log_likelihood"]

LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True)
def _row_log_prob(buf, i, j):
    """``ln`` of the normalised probability of column j of row i of the logits."""
    return buf[i, j] - log_sum_exp_range(buf[i], 0, buf.shape[1])


# ---------------------------------------------------------------------- clustering
@njit(cache=True)
def _clustering_logits(means, Y, log_weights, noise_var, beta, out):
    """``ln pi_k + beta_i ln N(y_i; mu_k, noise_var I)`` into ``out`` (n, K)."""
    n, D = Y.shape
    K = means.shape[0]
    const = -0.5 * D * (LOG_2PI + math.log(noise_var))
    for i in range(n):
        for k in range(K):
            s = 0.0
            for d in range(D):
                r = Y[i, d] - means[k, d]
                s += r * r
            out[i, k] = log_weights[k] + beta[i] * (-0.5 * s / noise_var + const)


@njit(cache=True)
def clustering_log_likelihood(means, Y, log_weights, noise_var):
    """Exact ``ln p(y_i | mu)`` (labels summed out): (C, n)."""
    C, K = means.shape[:2]
    n = Y.shape[0]
    ones = np.ones(n)
    buf = np.empty((n, K))
    out = np.empty((C, n))
    for c in range(C):
        _clustering_logits(means[c], Y, log_weights, noise_var, ones, buf)
        for i in range(n):
            out[c, i] = log_sum_exp_range(buf[i], 0, buf.shape[1])
    return out


@njit(cache=True)
def clustering_sample_labels(means, Y, log_weights, noise_var, beta, uniforms):
    """Labels (C, n) from ``p(z | mu) p(Y | z, mu)^beta`` by inverting the cumulative
    distribution of each case at ``uniforms`` (C, n); returns (labels, log-probabilities
    (C, n))."""
    C, K = means.shape[:2]
    n = Y.shape[0]
    buf = np.empty((n, K))
    labels = np.empty((C, n), dtype=np.int64)
    logp = np.empty((C, n))
    for c in range(C):
        _clustering_logits(means[c], Y, log_weights, noise_var, beta, buf)
        logp[c] = categorical_from_logits(buf, uniforms[c], labels[c])
    return labels, logp


@njit(cache=True)
def clustering_log_conditional(means, labels, Y, log_weights, noise_var, beta):
    """``ln p_beta(z | mu, Y)`` of labels (C, n): (C,)."""
    C, K = means.shape[:2]
    n = Y.shape[0]
    buf = np.empty((n, K))
    out = np.zeros(C)
    for c in range(C):
        _clustering_logits(means[c], Y, log_weights, noise_var, beta, buf)
        for i in range(n):
            out[c] += _row_log_prob(buf, i, labels[c, i])
    return out


# ---------------------------------------------------------------------- binary attributes
@njit(cache=True)
def _lowest_bits(K):
    """For every configuration index > 0: its lowest set bit and the index without it."""
    M = 1 << K
    low = np.zeros(M, dtype=np.int64)
    parent = np.zeros(M, dtype=np.int64)
    for idx in range(1, M):
        k = 0
        while not (idx >> k) & 1:
            k += 1
        low[idx] = k
        parent[idx] = idx & (idx - 1)
    return low, parent


@njit(cache=True)
def _binary_tables(A, log_p, log_1mp, low, parent, prior, norms):
    """Per configuration c: ``ln p(c)`` and ``|c A|^2`` into ``prior``, ``norms`` (2^K,),
    each from the configuration without its lowest set bit."""
    K = A.shape[0]
    M = 1 << K
    G = np.empty((K, K))
    mmT(A, A, G)  # A A^T
    cross = np.empty((M, K))  # (c A) . a_j
    base = 0.0
    for k in range(K):
        base += log_1mp[k]
        cross[0, k] = 0.0
    prior[0] = base
    norms[0] = 0.0
    for idx in range(1, M):
        k, p = low[idx], parent[idx]
        prior[idx] = prior[p] + log_p[k] - log_1mp[k]
        norms[idx] = norms[p] + 2.0 * cross[p, k] + G[k, k]
        for j in range(K):
            cross[idx, j] = cross[p, j] + G[k, j]


@njit(cache=True)
def _binary_case_logits(A, y, prior, norms, noise_var, b, low, parent, proj, dots, out):
    """``ln p(c) + b ln N(y; c A, noise_var I)`` of every configuration c into ``out``."""
    K, D = A.shape
    M = 1 << K
    const = -0.5 * D * (LOG_2PI + math.log(noise_var))
    yy = 0.0
    for d in range(D):
        yy += y[d] * y[d]
    for k in range(K):
        s = 0.0
        for d in range(D):
            s += y[d] * A[k, d]
        proj[k] = s
    dots[0] = 0.0
    out[0] = prior[0] + b * (-0.5 * max(yy, 0.0) / noise_var + const)
    for idx in range(1, M):
        dots[idx] = dots[parent[idx]] + proj[low[idx]]
        sq = max(yy - 2.0 * dots[idx] + norms[idx], 0.0)
        out[idx] = prior[idx] + b * (-0.5 * sq / noise_var + const)


@njit(cache=True)
def _binary_logits(A, Y, log_p, log_1mp, noise_var, beta, low, parent, out):
    """``ln p(z_i = c) + beta_i ln p(y_i | z_i = c, A)`` for every case i and
    configuration c into ``out`` (n, 2^K)."""
    n = Y.shape[0]
    K = A.shape[0]
    M = 1 << K
    prior = np.empty(M)
    norms = np.empty(M)
    _binary_tables(A, log_p, log_1mp, low, parent, prior, norms)
    proj = np.empty(K)
    dots = np.empty(M)
    for i in range(n):
        _binary_case_logits(A, Y[i], prior, norms, noise_var, beta[i], low, parent, proj, dots,
                            out[i])


@njit(cache=True)
def _half_exps(proj, first, count, noise_var, out):
    """``exp(s . proj[first:first+count] / noise_var - max)`` over the 2^count bit
    vectors s (bit j = entry first + j) into ``out``; returns the max."""
    out[0] = 0.0
    for h in range(1, 1 << count):
        k = 0
        while not (h >> k) & 1:
            k += 1
        out[h] = out[h & (h - 1)] + proj[first + k] / noise_var
    mx = -np.inf
    for h in range(1 << count):
        if out[h] > mx:
            mx = out[h]
    for h in range(1 << count):
        out[h] = math.exp(out[h] - mx)
    return mx


@njit(cache=True)
def binary_log_likelihood(A, Y, log_p, log_1mp, noise_var):
    """Exact ``ln p(y_i | A)`` (attributes summed out by enumeration): (C, n).

    ``ln p(c) + ln N(y; c A, s I)`` splits into ``g_c = ln p(c) - |c A|^2 / 2s`` (one
    table per chain), ``y . (c A) / s`` and a term of the case alone; the middle one is a
    sum over the set bits of c, whose exponential factorises over the low and the high
    half of the bits.  So a case costs 2^(K/2 + 1) exponentials and 2^K products instead
    of 2^K exponentials; a case whose sum of products underflows (far from every
    configuration relative to the noise) is summed directly from its logits."""
    C, K = A.shape[:2]
    n, D = Y.shape
    M = 1 << K
    k_lo = K // 2
    k_hi = K - k_lo
    low, parent = _lowest_bits(K)
    prior = np.empty(M)
    norms = np.empty(M)
    eg = np.empty(M)
    e_lo = np.empty(1 << k_lo)
    e_hi = np.empty(1 << k_hi)
    proj = np.empty(K)
    dots = np.empty(M)
    row = np.empty(M)
    const = -0.5 * D * (LOG_2PI + math.log(noise_var))
    out = np.empty((C, n))
    for c in range(C):
        Ac = A[c]
        _binary_tables(Ac, log_p, log_1mp, low, parent, prior, norms)
        g_max = -np.inf
        for idx in range(M):
            eg[idx] = prior[idx] - 0.5 * norms[idx] / noise_var
            if eg[idx] > g_max:
                g_max = eg[idx]
        for idx in range(M):
            eg[idx] = math.exp(eg[idx] - g_max)
        for i in range(n):
            yy = 0.0
            for d in range(D):
                yy += Y[i, d] * Y[i, d]
            for k in range(K):
                s = 0.0
                for d in range(D):
                    s += Y[i, d] * Ac[k, d]
                proj[k] = s
            m_lo = _half_exps(proj, 0, k_lo, noise_var, e_lo)
            m_hi = _half_exps(proj, k_lo, k_hi, noise_var, e_hi)
            total = 0.0
            for h in range(1 << k_hi):
                part = 0.0
                offset = h << k_lo
                for j in range(1 << k_lo):
                    part += eg[offset + j] * e_lo[j]
                total += e_hi[h] * part
            if total > 1e-250 and total < np.inf:
                out[c, i] = (math.log(total) + g_max + m_lo + m_hi + const
                             - 0.5 * yy / noise_var)
            else:
                _binary_case_logits(Ac, Y[i], prior, norms, noise_var, 1.0, low, parent, proj,
                                    dots, row)
                out[c, i] = log_sum_exp_range(row, 0, M)
    return out


@njit(cache=True)
def binary_sample_attributes(A, Y, log_p, log_1mp, noise_var, beta, uniforms):
    """Configuration indices (C, n) from ``p(Z) p(Y | Z, A)^beta``, one uniform per case;
    returns (indices, log-probabilities (C, n)).

    Cases with ``beta_i = 0`` (not yet added, or deleted, in the sequential estimators)
    draw from the prior, whose cumulative distribution is shared: it is built once per
    call, with the same sums as :func:`categorical_from_logits`, and searched by
    bisection, so those draws are the ones the case-by-case inversion gives."""
    C, K = A.shape[:2]
    n = Y.shape[0]
    M = 1 << K
    low, parent = _lowest_bits(K)
    on = np.flatnonzero(beta != 0.0)
    off = np.flatnonzero(beta == 0.0)
    beta_on = beta[on].copy()
    Y_on = np.ascontiguousarray(Y[on])
    buf = np.empty((on.shape[0], M))
    idx = np.empty((C, n), dtype=np.int64)
    logp = np.empty((C, n))
    u_on = np.empty(on.shape[0])
    got = np.empty(on.shape[0], dtype=np.int64)
    cum = np.empty(M)
    prior = np.empty(M)
    norms = np.empty(M)
    m0, total0 = 0.0, 1.0
    if off.shape[0] > 0:
        # ln p(c): the logits of a case with beta = 0 (the sums of _binary_tables)
        _binary_tables(A[0], log_p, log_1mp, low, parent, prior, norms)
        m0 = -np.inf
        for j in range(M):
            if prior[j] > m0:
                m0 = prior[j]
        total0 = 0.0
        for j in range(M):
            total0 += np.exp(prior[j] - m0)
            cum[j] = total0
    for c in range(C):
        if on.shape[0] > 0:
            _binary_logits(A[c], Y_on, log_p, log_1mp, noise_var, beta_on, low, parent, buf)
            for r in range(on.shape[0]):
                u_on[r] = uniforms[c, on[r]]
            lp = categorical_from_logits(buf, u_on, got)
            for r in range(on.shape[0]):
                idx[c, on[r]] = got[r]
                logp[c, on[r]] = lp[r]
        for r in range(off.shape[0]):
            i = off[r]
            target = uniforms[c, i] * total0
            lo_, hi_ = 0, M - 1  # the first j with cum[j] > target (M - 1 if none)
            while lo_ < hi_:
                mid = (lo_ + hi_) // 2
                if cum[mid] > target:
                    hi_ = mid
                else:
                    lo_ = mid + 1
            idx[c, i] = lo_
            logp[c, i] = prior[lo_] - m0 - np.log(total0)
    return idx, logp


@njit(cache=True)
def binary_log_conditional(A, idx, Y, log_p, log_1mp, noise_var, beta):
    """``ln p_beta(Z | A, Y)`` of the configurations ``idx`` (C, n): (C,)."""
    C, K = A.shape[:2]
    n = Y.shape[0]
    low, parent = _lowest_bits(K)
    buf = np.empty((n, 1 << K))
    out = np.zeros(C)
    for c in range(C):
        _binary_logits(A[c], Y, log_p, log_1mp, noise_var, beta, low, parent, buf)
        for i in range(n):
            out[c] += _row_log_prob(buf, i, idx[c, i])
    return out


# ---------------------------------------------------------------------- low rank
@njit(cache=True)
def low_rank_log_likelihood(V, Y, latent_var, noise_var):
    """Exact ``ln p(y_i | V)``, ``y_i ~ N(0, latent_var V^T V + noise_var I)``, through
    ``G = V V^T + (noise_var / latent_var) I`` (K x K): (C, n)."""
    C, K, D = V.shape
    n = Y.shape[0]
    G = np.empty((K, K))
    L = np.zeros((K, K))
    s = np.empty(K)
    out = np.empty((C, n))
    for c in range(C):
        for k in range(K):
            for j in range(K):
                t = 0.0
                for d in range(D):
                    t += V[c, k, d] * V[c, j, d]
                G[k, j] = t
            G[k, k] += noise_var / latent_var
        if not chol_into(G, L, True):
            raise ValueError("V V^T + (noise/latent) I is not positive definite")
        logdet = (D - K) * math.log(noise_var) + K * math.log(latent_var)
        for k in range(K):
            logdet += 2.0 * math.log(L[k, k])
        for i in range(n):
            yy = 0.0
            for d in range(D):
                yy += Y[i, d] * Y[i, d]
            ss = 0.0
            for k in range(K):  # s = L^{-1} V y_i
                t = 0.0
                for d in range(D):
                    t += V[c, k, d] * Y[i, d]
                for m in range(k):
                    t -= L[k, m] * s[m]
                s[k] = t / L[k, k]
                ss += s[k] * s[k]
            out[c, i] = -0.5 * (yy - ss) / noise_var - 0.5 * logdet - 0.5 * D * LOG_2PI
    return out


@njit(cache=True)
def _latent_row_posterior(VVt, Vy, b, latent_var, noise_var, P, L, mean):
    """Cholesky factor ``L`` of the precision ``I / latent_var + b V V^T / noise_var``
    and mean of one case's latent row given ``V y_i`` (K,); returns sum ln L_kk."""
    K = VVt.shape[0]
    for k in range(K):
        for j in range(K):
            P[k, j] = b * VVt[k, j] / noise_var
        P[k, k] += 1.0 / latent_var
    if not chol_into(P, L, True):
        raise ValueError("latent precision is not positive definite")
    half_logdet = 0.0
    for k in range(K):  # forward then backward substitution: mean = P^{-1} b V y / noise
        t = b * Vy[k] / noise_var
        for m in range(k):
            t -= L[k, m] * mean[m]
        mean[k] = t / L[k, k]
        half_logdet += math.log(L[k, k])
    for k in range(K - 1, -1, -1):
        t = mean[k]
        for m in range(k + 1, K):
            t -= L[m, k] * mean[m]
        mean[k] = t / L[k, k]
    return half_logdet


@njit(cache=True)
def _low_rank_prepare(Vc, Y, VVt, Vy):
    mmT(Vc, Vc, VVt)  # V V^T (K, K)
    mmT(Y, Vc, Vy)  # Y V^T (n, K)


@njit(cache=True)
def low_rank_sample_latents(V, Y, latent_var, noise_var, beta, eps):
    """Rows of U (C, n, K) from ``p(U) p(Y | U, V)^beta``: ``u_i = mean_i + L_i^{-T}
    eps_i`` with ``eps`` (C, n, K) standard normal; returns (U, log-density (C,))."""
    C, K, D = V.shape
    n = Y.shape[0]
    VVt = np.empty((K, K))
    Vy = np.empty((n, K))
    P = np.empty((K, K))
    L = np.zeros((K, K))
    mean = np.empty(K)
    U = np.empty((C, n, K))
    logp = np.zeros(C)
    for c in range(C):
        _low_rank_prepare(V[c], Y, VVt, Vy)
        for i in range(n):
            hl = _latent_row_posterior(VVt, Vy[i], beta[i], latent_var, noise_var, P, L, mean)
            ee = 0.0
            for k in range(K - 1, -1, -1):  # x = L^{-T} eps
                t = eps[c, i, k]
                ee += t * t
                for m in range(k + 1, K):
                    t -= L[m, k] * U[c, i, m]
                U[c, i, k] = t / L[k, k]
            for k in range(K):
                U[c, i, k] += mean[k]
            logp[c] += -0.5 * ee + hl - 0.5 * K * LOG_2PI
    return U, logp


@njit(cache=True)
def low_rank_log_conditional(V, U, Y, latent_var, noise_var, beta):
    """``ln p_beta(U | V, Y)``: (C,)."""
    C, K, D = V.shape
    n = Y.shape[0]
    VVt = np.empty((K, K))
    Vy = np.empty((n, K))
    P = np.empty((K, K))
    L = np.zeros((K, K))
    mean = np.empty(K)
    out = np.zeros(C)
    for c in range(C):
        _low_rank_prepare(V[c], Y, VVt, Vy)
        for i in range(n):
            hl = _latent_row_posterior(VVt, Vy[i], beta[i], latent_var, noise_var, P, L, mean)
            ss = 0.0
            for k in range(K):  # L^T (u - mean) ~ N(0, I)
                t = 0.0
                for m in range(k, K):
                    t += L[m, k] * (U[c, i, m] - mean[m])
                ss += t * t
            out[c] += -0.5 * ss + hl - 0.5 * K * LOG_2PI
    return out


# ---------------------------------------------------------------------- weights given latents
@njit(cache=True)
def _weights_posterior(Z, Y, beta, weight_var, noise_var, P, L, mean):
    """Cholesky factor ``L`` of the precision ``I / weight_var + Z^T diag(beta) Z /
    noise_var`` and the mean (K, D) of W given one chain's latents ``Z`` (n, K);
    returns sum ln L_kk."""
    n, K = Z.shape
    D = Y.shape[1]
    for k in range(K):
        for j in range(K):
            P[k, j] = 0.0
        for d in range(D):
            mean[k, d] = 0.0
    for i in range(n):
        b = beta[i]
        if b == 0.0:
            continue
        for k in range(K):
            zk = b * Z[i, k]
            if zk == 0.0:
                continue
            for j in range(K):
                P[k, j] += zk * Z[i, j]
            for d in range(D):
                mean[k, d] += zk * Y[i, d]
    for k in range(K):
        for j in range(K):
            P[k, j] /= noise_var
        P[k, k] += 1.0 / weight_var
        for d in range(D):
            mean[k, d] /= noise_var
    if not chol_into(P, L, True):
        raise ValueError("weight precision is not positive definite")
    half_logdet = 0.0
    for k in range(K):
        half_logdet += math.log(L[k, k])
    for d in range(D):  # mean[:, d] = P^{-1} rhs[:, d]
        for k in range(K):
            t = mean[k, d]
            for m in range(k):
                t -= L[k, m] * mean[m, d]
            mean[k, d] = t / L[k, k]
        for k in range(K - 1, -1, -1):
            t = mean[k, d]
            for m in range(k + 1, K):
                t -= L[m, k] * mean[m, d]
            mean[k, d] = t / L[k, k]
    return half_logdet


@njit(cache=True)
def weights_sample(Z, Y, beta, weight_var, noise_var, eps):
    """W (C, K, D) from ``p(W) p(Y | Z, W)^beta``: ``mean + L^{-T} eps`` per column,
    ``eps`` (C, K, D) standard normal."""
    C, n, K = Z.shape
    D = Y.shape[1]
    P = np.empty((K, K))
    L = np.zeros((K, K))
    mean = np.empty((K, D))
    W = np.empty((C, K, D))
    for c in range(C):
        _weights_posterior(Z[c], Y, beta, weight_var, noise_var, P, L, mean)
        for d in range(D):
            for k in range(K - 1, -1, -1):
                t = eps[c, k, d]
                for m in range(k + 1, K):
                    t -= L[m, k] * W[c, m, d]
                W[c, k, d] = t / L[k, k]
            for k in range(K):
                W[c, k, d] += mean[k, d]
    return W


@njit(cache=True)
def weights_log_conditional(W, Z, Y, beta, weight_var, noise_var):
    """``ln`` of the density of :func:`weights_sample` at ``W``: (C,)."""
    C, n, K = Z.shape
    D = Y.shape[1]
    P = np.empty((K, K))
    L = np.zeros((K, K))
    mean = np.empty((K, D))
    out = np.empty(C)
    for c in range(C):
        hl = _weights_posterior(Z[c], Y, beta, weight_var, noise_var, P, L, mean)
        ss = 0.0
        for d in range(D):
            for k in range(K):
                t = 0.0
                for m in range(k, K):
                    t += L[m, k] * (W[c, m, d] - mean[m, d])
                ss += t * t
        out[c] = -0.5 * ss + D * hl - 0.5 * K * D * LOG_2PI
    return out


@njit(cache=True)
def complete_log_likelihood(Z, W, Y, noise_var):
    """``ln N(y_i; z_i W, noise_var I)``: (C, n)."""
    C, n, K = Z.shape
    D = Y.shape[1]
    const = -0.5 * D * (LOG_2PI + math.log(noise_var))
    out = np.empty((C, n))
    r = np.empty(D)
    for c in range(C):
        for i in range(n):
            for d in range(D):
                r[d] = Y[i, d]
            for k in range(K):
                z = Z[c, i, k]
                if z == 0.0:
                    continue
                for d in range(D):
                    r[d] -= z * W[c, k, d]
            s = 0.0
            for d in range(D):
                s += r[d] * r[d]
            out[c, i] = -0.5 * s / noise_var + const
    return out
