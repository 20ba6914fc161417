"""Numba kernels for the scoring layer: batched exact likelihoods (pure array functions)."""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def hmm_log_likelihood_batch(pi, A, B, obs, starts, ends):
    """ln p(sequence s | theta_c) for every parameter set c and sequence s.

    Scaled forward recursion on probabilities (no underflow on long sequences).

    pi (C, K), A (C, K, K), B (C, K, V) probabilities; obs (T,) int symbols;
    starts, ends (S,) sequence boundaries.  Returns (C, S).
    """
    C, K = pi.shape
    S = starts.shape[0]
    out = np.zeros((C, S))
    alpha = np.empty(K)
    new = np.empty(K)
    for c in range(C):
        for s in range(S):
            t0 = starts[s]
            total = 0.0
            norm = 0.0
            for k in range(K):
                alpha[k] = pi[c, k] * B[c, k, obs[t0]]
                norm += alpha[k]
            if norm <= 0.0:
                out[c, s] = -np.inf
                continue
            total += np.log(norm)
            for k in range(K):
                alpha[k] /= norm
            for t in range(t0 + 1, ends[s]):
                norm = 0.0
                y = obs[t]
                for j in range(K):
                    acc = 0.0
                    for i in range(K):
                        acc += alpha[i] * A[c, i, j]
                    new[j] = acc * B[c, j, y]
                    norm += new[j]
                if norm <= 0.0:
                    total = -np.inf
                    break
                total += np.log(norm)
                for j in range(K):
                    alpha[j] = new[j] / norm
            out[c, s] = total
    return out


@njit(cache=True, nogil=True)
def hmm_forward_backward(pi, A, B, obs, starts, ends):
    """Exact posterior statistics of one discrete HMM (single parameter set).

    Returns (loglik, gamma (T, K), xi_sum (K, K), init (K,)): state marginals, summed
    pairwise transition marginals and summed initial-state marginals.
    """
    T = obs.shape[0]
    K = pi.shape[0]
    alpha = np.zeros((T, K))
    beta = np.zeros((T, K))
    scale = np.zeros(T)
    gamma = np.zeros((T, K))
    xi_sum = np.zeros((K, K))
    init = np.zeros(K)
    loglik = 0.0
    for s in range(starts.shape[0]):
        t0 = starts[s]
        t1 = ends[s]
        norm = 0.0
        for k in range(K):
            alpha[t0, k] = pi[k] * B[k, obs[t0]]
            norm += alpha[t0, k]
        scale[t0] = norm
        for k in range(K):
            alpha[t0, k] /= norm
        for t in range(t0 + 1, t1):
            norm = 0.0
            for j in range(K):
                acc = 0.0
                for i in range(K):
                    acc += alpha[t - 1, i] * A[i, j]
                alpha[t, j] = acc * B[j, obs[t]]
                norm += alpha[t, j]
            scale[t] = norm
            for j in range(K):
                alpha[t, j] /= norm
        for t in range(t0, t1):
            loglik += np.log(scale[t])
        for k in range(K):
            beta[t1 - 1, k] = 1.0
        for t in range(t1 - 2, t0 - 1, -1):
            for i in range(K):
                acc = 0.0
                for j in range(K):
                    acc += A[i, j] * B[j, obs[t + 1]] * beta[t + 1, j]
                beta[t, i] = acc / scale[t + 1]
        for t in range(t0, t1):
            for k in range(K):
                gamma[t, k] = alpha[t, k] * beta[t, k]
        for k in range(K):
            init[k] += gamma[t0, k]
        for t in range(t0, t1 - 1):
            for i in range(K):
                for j in range(K):
                    xi_sum[i, j] += (
                        alpha[t, i] * A[i, j] * B[j, obs[t + 1]] * beta[t + 1, j] / scale[t + 1]
                    )
    return loglik, gamma, xi_sum, init
