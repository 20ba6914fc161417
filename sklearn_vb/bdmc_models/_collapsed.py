"""The weights collapsed: the latents of the cases seen so far as the whole state.

Given the latents ``Z_o`` of a set of cases ``o``, the weight matrix ``W`` of the
clustering and the binary-attribute models has a Gaussian posterior whose columns share
one covariance, so the predictive density of a further case integrates ``W`` out in
closed form:

* clustering: ``mu_k | Z_o, Y_o ~ N(m_k, s_k I)`` with ``1 / s_k = 1 / mean_var +
  n_k / noise_var`` and ``m_k = s_k S_k / noise_var`` (``n_k`` cases and their sum
  ``S_k`` in cluster k), so ``y | z = k ~ N(m_k, (noise_var + s_k) I)``;
* binary attributes: ``A | Z_o, Y_o`` has columns ``N(M_j, Sigma)`` with ``Sigma^-1 =
  I / weight_var + Z_o^T Z_o / noise_var`` and ``M = Sigma Z_o^T Y_o / noise_var``, so
  ``y | z = c ~ N(c M, (noise_var + c Sigma c^T) I)`` for each of the 2^K vectors c.

These are the incremental weights ``p(y_t | z_{1:t-1}, y_{1:t-1})`` of the sequential
Monte Carlo of Grosse, Ghahramani & Adams (2015) (§3.4, eqs. 21-22, with the posterior
proposal of eq. 18; §6.1: "the cluster centers were collapsed out", "the feature
matrix A was collapsed out"), the draw of the entering case's latents from the same
logits, and the collapsed Gibbs sweep over the latents of the cases seen so far (one
draw per case from ``p(z_i | Z_{o \\ i}, Y_o)``, which leaves ``p(Z_o | Y_o)``
invariant).  Batches of C particles; uniforms come from the caller's Generator.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._core.kernels.linalg import chol_into, log_sum_exp_range
from .._core.kernels.sampling import categorical_from_logits
from .kernels import _lowest_bits

__all__ = ["clustering_collapsed_add", "clustering_collapsed_sweep", "binary_collapsed_add",
           "binary_collapsed_sweep", "collapsed_case_logits"]

LOG_2PI = math.log(2.0 * math.pi)


# ---------------------------------------------------------------------- clustering
@njit(cache=True)
def _cluster_stats(labels, Y, included, K, counts, sums):
    n, D = Y.shape
    for k in range(K):
        counts[k] = 0.0
        for d in range(D):
            sums[k, d] = 0.0
    for i in range(n):
        if included[i]:
            k = labels[i]
            counts[k] += 1.0
            for d in range(D):
                sums[k, d] += Y[i, d]


@njit(cache=True)
def _cluster_logits(y, counts, sums, log_weights, mean_var, noise_var, out):
    """``ln pi_k + ln N(y; m_k, (noise_var + s_k) I)`` for every cluster k into ``out``."""
    K, D = sums.shape
    for k in range(K):
        s = 1.0 / (1.0 / mean_var + counts[k] / noise_var)
        v = noise_var + s
        sq = 0.0
        for d in range(D):
            r = y[d] - s * sums[k, d] / noise_var
            sq += r * r
        out[k] = log_weights[k] - 0.5 * D * (LOG_2PI + math.log(v)) - 0.5 * sq / v


@njit(cache=True)
def _cluster_buffers(K, D):
    """Counts, sums and the work space of the clustering kernels below."""
    return (np.empty(K), np.empty((K, D)), np.empty((1, K)), np.empty(1, dtype=np.int64),
            np.empty(1))


@njit(cache=True)
def clustering_collapsed_add(labels, Y, included, case, log_weights, mean_var, noise_var,
                             uniforms):
    """Add ``case`` to the cases marked in ``included`` (n,) for every particle: its
    label drawn from the collapsed posterior into ``labels`` (C, n, modified) and
    ``ln p(y_case | labels and rows of the included cases)`` returned (C,)."""
    C = labels.shape[0]
    K = log_weights.shape[0]
    counts, sums, logits, got, u = _cluster_buffers(K, Y.shape[1])
    out = np.empty(C)
    for c in range(C):
        _cluster_stats(labels[c], Y, included, K, counts, sums)
        _cluster_logits(Y[case], counts, sums, log_weights, mean_var, noise_var, logits[0])
        out[c] = log_sum_exp_range(logits[0], 0, K)
        u[0] = uniforms[c]
        categorical_from_logits(logits, u, got)
        labels[c, case] = got[0]
    return out


@njit(cache=True)
def clustering_collapsed_sweep(labels, Y, included, log_weights, mean_var, noise_var,
                               uniforms):
    """One collapsed Gibbs sweep over the included cases, in index order, for every
    particle; ``labels`` (C, n) modified, ``uniforms`` (C, n)."""
    C, n = labels.shape
    K = log_weights.shape[0]
    D = Y.shape[1]
    counts, sums, logits, got, u = _cluster_buffers(K, D)
    for c in range(C):
        _cluster_stats(labels[c], Y, included, K, counts, sums)
        for i in range(n):
            if not included[i]:
                continue
            k = labels[c, i]
            counts[k] -= 1.0
            for d in range(D):
                sums[k, d] -= Y[i, d]
            _cluster_logits(Y[i], counts, sums, log_weights, mean_var, noise_var, logits[0])
            u[0] = uniforms[c, i]
            categorical_from_logits(logits, u, got)
            k = got[0]
            labels[c, i] = k
            counts[k] += 1.0
            for d in range(D):
                sums[k, d] += Y[i, d]


# ---------------------------------------------------------------------- binary attributes
@njit(cache=True)
def _binary_stats(idx, Y, included, K, weight_var, noise_var, P, R):
    """``P = I / weight_var + Z_o^T Z_o / noise_var`` and ``R = Z_o^T Y_o / noise_var``
    of the included cases (configuration indices ``idx``, bit k = attribute k)."""
    n, D = Y.shape
    for k in range(K):
        for j in range(K):
            P[k, j] = 0.0
        P[k, k] = 1.0 / weight_var
        for d in range(D):
            R[k, d] = 0.0
    for i in range(n):
        if included[i]:
            _binary_update(idx[i], Y[i], 1.0, noise_var, P, R)


@njit(cache=True)
def _binary_update(config, y, sign, noise_var, P, R):
    """Add (``sign`` 1) or remove (-1) one case with configuration ``config``."""
    K, D = R.shape
    for k in range(K):
        if not (config >> k) & 1:
            continue
        for j in range(K):
            if (config >> j) & 1:
                P[k, j] += sign / noise_var
        for d in range(D):
            R[k, d] += sign * y[d] / noise_var


@njit(cache=True)
def _config_quadratic(G, low, parent, cross, out):
    """``c G c^T`` of every configuration c into ``out`` (2^K,), each from c without its
    lowest set bit (``cross`` (2^K, K) work space: ``c G``)."""
    K = G.shape[0]
    M = out.shape[0]
    out[0] = 0.0
    for j in range(K):
        cross[0, j] = 0.0
    for idx in range(1, M):
        k, p = low[idx], parent[idx]
        out[idx] = out[p] + 2.0 * cross[p, k] + G[k, k]
        for j in range(K):
            cross[idx, j] = cross[p, j] + G[k, j]


@njit(cache=True)
def _binary_predictive_logits(y, P, R, log_p, log_1mp, noise_var, low, parent, work, out):
    """``ln p(c) + ln N(y; c M, (noise_var + c Sigma c^T) I)`` of every configuration c
    into ``out`` (2^K,), for the posterior ``(P, R)`` of A (see the module docstring)."""
    K, D = R.shape
    M = out.shape[0]
    L = np.zeros((K, K))
    if not chol_into(P, L, True):
        raise ValueError("feature precision is not positive definite")
    S = np.zeros((K, K))  # Sigma = P^-1, column by column from L L^T
    e = np.empty(K)
    for j in range(K):
        for k in range(K):
            t = 1.0 if k == j else 0.0
            for m in range(k):
                t -= L[k, m] * e[m]
            e[k] = t / L[k, k]
        for k in range(K - 1, -1, -1):
            t = e[k]
            for m in range(k + 1, K):
                t -= L[m, k] * e[m]
            e[k] = t / L[k, k]
        for k in range(K):
            S[k, j] = e[k]
    Mean = np.zeros((K, D))  # M = Sigma R
    for k in range(K):
        for j in range(K):
            s = S[k, j]
            for d in range(D):
                Mean[k, d] += s * R[j, d]
    G = np.empty((K, K))  # M M^T
    proj = np.empty(K)  # M y
    for k in range(K):
        t = 0.0
        for d in range(D):
            t += Mean[k, d] * y[d]
        proj[k] = t
        for j in range(K):
            t = 0.0
            for d in range(D):
                t += Mean[k, d] * Mean[j, d]
            G[k, j] = t
    quad = np.empty(M)
    norms = np.empty(M)
    _config_quadratic(S, low, parent, work, quad)
    _config_quadratic(G, low, parent, work, norms)
    yy = 0.0
    for d in range(D):
        yy += y[d] * y[d]
    prior = 0.0
    for k in range(K):
        prior += log_1mp[k]
    dot = np.empty(M)
    dot[0] = 0.0
    lp = np.empty(M)
    lp[0] = prior
    for idx in range(M):
        if idx > 0:
            k, p = low[idx], parent[idx]
            dot[idx] = dot[p] + proj[k]
            lp[idx] = lp[p] + log_p[k] - log_1mp[k]
        v = noise_var + quad[idx]
        sq = max(yy - 2.0 * dot[idx] + norms[idx], 0.0)
        out[idx] = lp[idx] - 0.5 * D * (LOG_2PI + math.log(v)) - 0.5 * sq / v


@njit(cache=True)
def _binary_buffers(K, D):
    """The bit tables and work space of the binary kernels below."""
    M = 1 << K
    low, parent = _lowest_bits(K)
    return (low, parent, np.empty((K, K)), np.empty((K, D)), np.empty((M, K)),
            np.empty((1, M)), np.empty(1, dtype=np.int64), np.empty(1))


@njit(cache=True)
def binary_collapsed_add(idx, Y, included, case, log_p, log_1mp, weight_var, noise_var,
                         uniforms):
    """As :func:`clustering_collapsed_add` for the binary-attribute model:
    configuration indices ``idx`` (C, n) modified, the log predictive returned (C,)."""
    C = idx.shape[0]
    K = log_p.shape[0]
    M = 1 << K
    low, parent, P, R, work, logits, got, u = _binary_buffers(K, Y.shape[1])
    out = np.empty(C)
    for c in range(C):
        _binary_stats(idx[c], Y, included, K, weight_var, noise_var, P, R)
        _binary_predictive_logits(Y[case], P, R, log_p, log_1mp, noise_var, low, parent, work,
                                  logits[0])
        out[c] = log_sum_exp_range(logits[0], 0, M)
        u[0] = uniforms[c]
        categorical_from_logits(logits, u, got)
        idx[c, case] = got[0]
    return out


@njit(cache=True)
def binary_collapsed_sweep(idx, Y, included, log_p, log_1mp, weight_var, noise_var, uniforms):
    """One collapsed Gibbs sweep over the included cases (each case's attribute vector
    drawn jointly given the others), ``idx`` (C, n) modified, ``uniforms`` (C, n)."""
    C, n = idx.shape
    K = log_p.shape[0]
    low, parent, P, R, work, logits, got, u = _binary_buffers(K, Y.shape[1])
    for c in range(C):
        _binary_stats(idx[c], Y, included, K, weight_var, noise_var, P, R)
        for i in range(n):
            if not included[i]:
                continue
            _binary_update(idx[c, i], Y[i], -1.0, noise_var, P, R)
            _binary_predictive_logits(Y[i], P, R, log_p, log_1mp, noise_var, low, parent, work,
                                      logits[0])
            u[0] = uniforms[c, i]
            categorical_from_logits(logits, u, got)
            idx[c, i] = got[0]
            _binary_update(got[0], Y[i], 1.0, noise_var, P, R)


# ---------------------------------------------------------------------- both
def collapsed_case_logits(kind, Z, Y, included, case, **hyper):
    """The logits of :func:`clustering_collapsed_add` / :func:`binary_collapsed_add` of one
    particle's latents ``Z`` (labels (n,) or configuration indices (n,)) without drawing:
    (K,) or (2^K,).  For tests: their log-sum-exp is the log predictive density."""
    Y = np.ascontiguousarray(Y, dtype=float)
    inc = np.ascontiguousarray(included, dtype=np.bool_)
    Z = np.ascontiguousarray(Z, dtype=np.int64)
    if kind == "clustering":
        lw = np.ascontiguousarray(hyper["log_weights"], dtype=float)
        counts, sums = np.empty(lw.size), np.empty((lw.size, Y.shape[1]))
        _cluster_stats(Z, Y, inc, lw.size, counts, sums)
        out = np.empty(lw.size)
        _cluster_logits(Y[case], counts, sums, lw, float(hyper["mean_var"]),
                        float(hyper["noise_var"]), out)
        return out
    log_p = np.ascontiguousarray(hyper["log_p"], dtype=float)
    log_1mp = np.ascontiguousarray(hyper["log_1mp"], dtype=float)
    K = log_p.size
    P, R = np.empty((K, K)), np.empty((K, Y.shape[1]))
    _binary_stats(Z, Y, inc, K, float(hyper["weight_var"]), float(hyper["noise_var"]), P, R)
    low, parent = _lowest_bits(K)
    out = np.empty(1 << K)
    _binary_predictive_logits(Y[case], P, R, log_p, log_1mp, float(hyper["noise_var"]), low,
                              parent, np.empty((1 << K, K)), out)
    return out
