"""Compiled draws from many small discrete distributions at once."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["categorical_from_logits", "systematic_resample"]


@njit(cache=True)
def categorical_from_logits(logits, uniforms, out):
    """One draw per row of ``logits`` (R, K), unnormalised log-probabilities, by
    inverting the cumulative distribution at ``uniforms`` (R,) in [0, 1); ``out`` (R,)
    receives the chosen column and the function returns the log-probability of each draw.
    Rows whose logits are all -inf are an error of the caller (they return column K-1)."""
    R, K = logits.shape
    logp = np.empty(R)
    e = np.empty(K)  # the exponentials of a row, computed once for both passes
    for r in range(R):
        m = -np.inf
        for k in range(K):
            if logits[r, k] > m:
                m = logits[r, k]
        total = 0.0
        for k in range(K):
            e[k] = np.exp(logits[r, k] - m)
            total += e[k]
        target = uniforms[r] * total
        acc = 0.0
        chosen = K - 1
        for k in range(K):
            acc += e[k]
            if acc > target:
                chosen = k
                break
        out[r] = chosen
        logp[r] = logits[r, chosen] - m - np.log(total)
    return logp


@njit(cache=True)
def systematic_resample(log_w, u):
    """Indices of a systematic resample of particles with log-weights ``log_w`` (K,)
    given one uniform ``u`` in [0, 1): particle k is copied ``floor`` or ``ceil`` of
    ``K w_k`` times (normalised weights), which keeps the weights' mean unbiased."""
    K = log_w.shape[0]
    m = -np.inf
    for k in range(K):
        if log_w[k] > m:
            m = log_w[k]
    total = 0.0
    for k in range(K):
        total += np.exp(log_w[k] - m)
    out = np.empty(K, dtype=np.int64)
    acc = np.exp(log_w[0] - m) / total
    j = 0
    for i in range(K):
        pos = (i + u) / K
        while pos > acc and j < K - 1:
            j += 1
            acc += np.exp(log_w[j] - m) / total
        out[i] = j
    return out
