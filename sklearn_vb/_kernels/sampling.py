"""Compiled draws from many small discrete distributions at once."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["categorical_from_logits"]


@njit(cache=True)
def categorical_from_logits(logits, uniforms, out):
    """One draw per row of ``logits`` (R, K), unnormalised log-probabilities, by
    inverting the cumulative distribution at ``uniforms`` (R,) in [0, 1); ``out`` (R,)
    receives the chosen column and the function returns the log-probability of each draw.
    Rows whose logits are all -inf are an error of the caller (they return column K-1)."""
    R, K = logits.shape
    logp = np.empty(R)
    for r in range(R):
        m = -np.inf
        for k in range(K):
            if logits[r, k] > m:
                m = logits[r, k]
        total = 0.0
        for k in range(K):
            total += np.exp(logits[r, k] - m)
        target = uniforms[r] * total
        acc = 0.0
        chosen = K - 1
        for k in range(K):
            acc += np.exp(logits[r, k] - m)
            if acc > target:
                chosen = k
                break
        out[r] = chosen
        logp[r] = logits[r, chosen] - m - np.log(total)
    return logp
